/* fm_gram.h: Gram matrices of a matrix view in one streamed pass.
 *
 * With X the n x p logical matrix of x after its affine transform:
 *   FM_GRAM_CROSS   out (p x p) = X' X: row panels R (rows x all columns)
 *                   are decoded in turn and out += R' R;
 *   FM_GRAM_TCROSS  out (n x n) = X X': column panels C (all rows x
 *                   columns) are decoded in turn and out += C C'.
 * Either way every byte of x is decoded once, whatever the panel budget
 * (fm_panel_budget(ctl): a panel of doubles and its transposed copy, each
 * within half of it; a panel holds at least one row or column). Each panel
 * goes to BLAS dsyrk on the lower triangle: 'N' for a panel of finite
 * values, 'T' (every product summed) for one with NaN or Inf, so that, as
 * in base R's crossprod(), a missing value that the transform leaves NaN
 * makes every entry it takes part in NaN, also against a zero; the upper
 * triangle is mirrored at the end, so out is exactly symmetric. Consumed columns of an evictable file
 * mapping are dropped from the resident set (fm_mat_evict_stream) once a
 * pass no longer needs them.
 * Shape:  out is p x p (CROSS) or n x n (TCROSS), column-major with
 *         leading dimension ld >= that size; n, p may be 0 (nothing
 *         written).
 * Errors: FM_EARG (NULL x or out, unknown kind, ld too small, a size above
 *         BLAS integers); FM_ENOMEM (panels); FM_ECANCELLED (ctl->cancel,
 *         polled before each panel; out then unspecified); those of
 *         fm_panel_decode.
 * Owns:   borrows x, aff and ctl; writes only out; allocates its panels.
 * Progress: fm_ctl_progress(ctl, panels done, panels in all).
 * Threads: the calling thread (BLAS may use its own).
 * Source: the normal-equations Gram matrix X'X / kernel XX' (Golub and Van
 *         Loan, Matrix Computations, 4th ed., 2013); BLAS dsyrk. */
#ifndef FM_GRAM_H
#define FM_GRAM_H

#include "fm_base.h"
#include "fm_panel.h"

typedef enum fm_gram_kind { FM_GRAM_CROSS = 1, FM_GRAM_TCROSS = 2 } fm_gram_kind;

FM_NODISCARD fm_status fm_gram(const fm_mat *x, const fm_affine *aff, fm_gram_kind kind,
                               double *out, int64_t ld, const fm_ctl *ctl, fm_err *err);

#endif
