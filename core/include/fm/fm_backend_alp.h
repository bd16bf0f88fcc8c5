/* fm_backend_alp.h: the fused product backend for ALP matrices
 * (FM_CODEC_ALP, fm_codec_alp.h), registered under the name "alp".
 *
 * It computes FM_OP_XB (y = X b) and FM_OP_XTB (y = X' b) for a matrix made
 * by fm_mat_init_alp, with its column index and affine transform, by
 * decoding one vector (at most FM_ALP_VECTOR_MAX rows) of up to 8 columns
 * at a time into a stack buffer (8 KiB a column) and consuming it at once;
 * no double panel is ever built. Loops: column tiles of 256 columns, then
 * vectors (row blocks), then groups of 8 columns, so that for XB the block
 * of y and for XTB the block of b stays in cache across a tile; XB updates
 * y 256 rows at a time, so that those rows of the 8 columns and of y stay
 * in L1. It declines
 * (FM_EUNSUPPORTED, before writing y) every other codec and every other op,
 * including ops added to fm_op later.
 *
 * Accuracy: the decoded values are those of fm_panel_decode (the same
 * decoder and affine arithmetic), and each y entry sums the same products
 * x_il * b_lc as the reference path (fm_backend_reference), in another
 * order. So, for finite results, |y_alp - y_ref| <= 2 gamma_m sum_l
 * |x_il b_lc| with m the inner dimension, gamma_m = m u / (1 - m u) and
 * u = 2^-53 (Higham, Accuracy and Stability of Numerical Algorithms, 2nd
 * ed., section 4.2); tests use 1e-12 of sum_l |x_il b_lc|. Missing values
 * (NaN) left by the transform propagate as NaN, also through b = 0.
 * The result does not depend on the panel budget.
 *
 * Cancellation and progress: ctl->cancel is polled once per (tile, vector)
 * block, at most 256 x 1024 values apart; progress counts those blocks.
 * Thread safety: reentrant (single-threaded inside). */
#ifndef FM_BACKEND_ALP_H
#define FM_BACKEND_ALP_H

#include "fm_backend.h"

#define FM_BACKEND_ALP_NAME "alp"

/* An fm_backend_fn: register it with
 *   fm_backend_register(FM_BACKEND_ALP_NAME, fm_backend_alp, NULL, err).
 * Shape:  as fm_product (fm_backend.h); y rows beyond its logical rows are
 *         never written.
 * Errors: FM_EUNSUPPORTED (a decline: not an ALP matrix, or an op other
 *         than FM_OP_XB / FM_OP_XTB; y untouched); FM_EARG (k < 1, ldb or
 *         ldy below the rows of b or y, NULL b or y, a col_index entry
 *         outside the blob's columns, more rows than the blob);
 *         FM_ECANCELLED (y then partly written).
 * Owns:   ud unused (pass NULL); borrows p and everything it points to;
 *         writes only p->y. */
FM_NODISCARD fm_status fm_backend_alp(void *ud, const fm_product *p, const fm_ctl *ctl,
                                      fm_err *err);

#endif
