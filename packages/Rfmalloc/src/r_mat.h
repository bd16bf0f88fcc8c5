/* r_mat.h: turning the R description of a matrix over typed storage into a
 * core fm_mat view (and an fm_affine), shared by the codec, product and
 * statistics entry points. */
#ifndef R_MAT_H
#define R_MAT_H

#include "r_glue.h"
#include "fm/fm_panel.h"

/* ---- views: a matrix as a handle ------------------------------------------
 * A codec matrix holds an external pointer (class "fmalloc_view") to a view
 * validated once, where the R object is made (fmr_view_new: the storage's
 * bounds, the codec, the column index, an ALP blob's structure, the
 * transform's lengths); every .Call that computes on the matrix takes the
 * handle. The view keeps what it was made from (storage, spec, cols,
 * transform) reachable, through a weak reference keyed on itself, and owns a
 * 0-based copy of the column index. External pointers do not
 * survive saveRDS(): the R side makes the view again from the object's
 * slots when the handle is dead (.view() in R/codec_matrix.R). */

/* .Call(fmr_view_new, storage, spec, cols, transform): a new handle, or
 * fm_error_earg (a view that would read outside storage, a transform part
 * that is not a double vector of n_cols), fm_error_emismatch (an ALP blob
 * of another shape), or the storage's errors. storage: a raw, double,
 * integer or logical vector (plain or fmalloc ALTREP), or an external
 * pointer of a file view or an external codec; spec: double c(codec,
 * n_rows, n_cols, byte_offset, col_stride); cols: NULL or 1-based stored
 * columns; transform: NULL or list(center, scale, fill). */
SEXP fmr_view_new(SEXP storage, SEXP spec, SEXP cols, SEXP transform);

/* .Call(fmr_view_alive, h): TRUE while h is a live handle. */
SEXP fmr_view_alive(SEXP h);

/* .Call(fmr_view_of_slots, h, storage, spec, cols, transform): TRUE when h
 * is live and was made from these very objects (pointer comparisons: an
 * object whose slots were assigned by hand is not taken for its source). */
SEXP fmr_view_of_slots(SEXP h, SEXP storage, SEXP spec, SEXP cols, SEXP transform);

/* The matrix behind handle h for one call, after the checks that must run
 * at each use (the runtime holding the storage is open and its file not
 * truncated, a mapped file not shrunk, an external codec not released; all
 * O(1)): *x, and *aff (may be NULL) with the view's transform. Raises
 * fm_error_earg for anything that is not a handle, fm_error_eclosed for a
 * dead one or closed storage. Valid until the .Call returns. */
void fmr_view_get(SEXP h, fm_mat *x, fm_affine *aff);

#endif
