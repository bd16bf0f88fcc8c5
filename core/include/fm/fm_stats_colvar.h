/* fm_stats_colvar.h: streamed column means and variances over any fm_mat.
 *
 * Missing values (NaN/NA for F64, INT32_MIN for I32, code 01 for BED2, 255
 * for DOS8) are excluded: each column's mean and variance use its observed
 * values only, and the variance has denominator n_obs - 1 (as var()).
 * A column with no observed value has mean NaN; fewer than two, variance NaN.
 * Infinite F64 values are observed values (mean +-Inf, variance NaN, as R).
 * Every column is reduced on its own, so results are bit-identical for any
 * block size (the panel budget only bounds the work between cancel polls):
 *   F64, I32: corrected two-pass in double straight from storage
 *     (m = sum/n; mean = m + sum(x - m)/n; ss = sum((x - m)^2) - sum(x - m)^2/n);
 *   BED2: exact from fm_codec_bed2_col_counts (integer moments);
 *   DOS8: exact in the quantized values q/127 from a per-column histogram;
 *   EXT (external codecs, e.g. GGUF tensor views) and ALP (compressed
 *     doubles, fm_codec_alp.h): the F64 two-pass on the
 *     doubles of fm_panel_decode, in bounded panels (a column taller than
 *     one panel is decoded once per pass), bit-identical to F64 storage of
 *     the decoded values; a missing value is any NaN the codec gives.
 * The results are those of a dense two-pass over fm_panel_decode's output
 * (no affine), to within a few ulp (exactly, for F64, EXT and ALP).
 * Cancellation and progress: ctl->cancel is polled once per column block;
 * ctl->progress reports columns done out of x->n_cols. Each block is passed
 * to fm_mat_evict_stream once consumed (bounded residency on file mappings).
 * Thread safety: reentrant; x is only read.
 * Source: Chan, Golub and LeVeque (1983) on the two-pass algorithm. Oracle:
 * core/tests/stats/stats_colvar/ (long-double two-pass); apply(X, 2, var) in R;
 * plink2 --freq for allele frequencies. */
#ifndef FM_STATS_COLVAR_H
#define FM_STATS_COLVAR_H

#include "fm_base.h"
#include "fm_panel.h"

/* Per-column mean, variance and count of observed values of x (col_index honoured).
 * Shape:  mean_out, var_out (may be NULL) and n_obs_out (may be NULL) have
 *         length x->n_cols (logical columns).
 * Units:  those of the decoded values (allele count, dosage, ...).
 * Errors: FM_EARG (x NULL, mean_out NULL with n_cols > 0, unknown codec,
 *         an external codec without a decoder, stride too small, negative
 *         col_index entry, for EXT and ALP one not below n_stored_cols),
 *         FM_ECANCELLED (outputs then partly written), FM_ENOMEM, and an
 *         external codec's own decode errors.
 * Owns:   borrows x and ctl; writes only the outputs. */
FM_NODISCARD fm_status fm_stats_colvar(const fm_mat *x, double *mean_out, double *var_out,
                                       int64_t *n_obs_out, const fm_ctl *ctl, fm_err *err);

/* Per-column genotype counts of a BED2 matrix (col_index honoured): the
 * counts fm_codec_bed2_col_counts gives, streamed in column blocks as
 * fm_stats_colvar streams them (cancel, progress, eviction, and a file
 * truncated during the call reported, not fatal).
 * Shape:  counts_out is 4 x x->n_cols int64, per column (0 copies, 1 copy,
 *         2 copies of the counted allele, missing).
 * Errors: FM_EARG (x not BED2, counts_out NULL with columns, a negative
 *         col_index entry), FM_ENOMEM, FM_ECANCELLED (counts_out then partly
 *         written), FM_EIO naming the file when its mapping shrank during
 *         the call (fm_fault.h).
 * Owns:   borrows x and ctl; writes only counts_out. */
FM_NODISCARD fm_status fm_stats_bed2_counts(const fm_mat *x, int64_t *counts_out,
                                            const fm_ctl *ctl, fm_err *err);

#endif
