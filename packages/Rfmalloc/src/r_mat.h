/* r_mat.h: turning the R description of a matrix over typed storage into a
 * core fm_mat view (and an fm_affine), shared by the codec, product and
 * statistics entry points. */
#ifndef R_MAT_H
#define R_MAT_H

#include "r_glue.h"
#include "fm/fm_panel.h"

/* Fill *x from
 *   storage: a raw, double, integer or logical vector (plain or fmalloc
 *            ALTREP), or an external pointer made by fmr_fileview_open;
 *   spec:    double c(codec, n_rows, n_cols, byte_offset, col_stride), codec as
 *            in fm_codec_id;
 *   cols:    NULL, or 1-based stored column numbers of each logical column.
 * Raises fm_error_earg when the view would read outside storage. Scratch
 * memory for the column index comes from R_alloc. x->flags has
 * FM_MAT_EVICTABLE when the bytes are a file mapping (a file view, or an
 * fmalloc vector), so streamed passes drop the pages they consumed. */
void fmr_mat_from(SEXP storage, SEXP spec, SEXP cols, fm_mat *x);

/* Fill *aff from list(center =, scale =, fill =), each NULL or a double
 * vector of length n_cols; R_NilValue gives the identity (NULL pointers). */
void fmr_affine_from(SEXP aff_list, int64_t n_cols, fm_affine *aff);

#endif
