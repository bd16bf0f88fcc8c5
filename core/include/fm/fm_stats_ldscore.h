/* fm_stats_ldscore.h: LD scores of a banded LD matrix (fm_band.h).
 *
 * The LD score of variant j is the sum of its squared correlations with the
 * variants of its window, itself included (Bulik-Sullivan et al. 2015, Nat
 * Genet 47:291, "LD Score regression distinguishes confounding from
 * polygenicity in genome-wide association studies"):
 *
 *   l_j = sum over the stored rows k of column j of f(R[k, j]),
 *   f(r) = r^2                          (n_samples == 0: bigsnpr's
 *                                        snp_ld_scores(), the default),
 *   f(r) = r^2 - (1 - r^2) / (n - 2)    (n_samples = n > 2: the approximately
 *                                        unbiased r^2 of the LDSC software,
 *                                        applied to every entry; the diagonal
 *                                        stays 1).
 *
 * A pair that is not stored counts 0, so the score is that of the band's
 * window. A variant of zero variance (diagonal 1, other entries 0 in the
 * band) scores 1, as in bigsnpr, where its NaN correlations are skipped and
 * every score starts at 1 (with the adjustment, each stored 0 counts
 * -1/(n - 2), as every stored entry does in the LDSC software).
 *
 * Each column is summed on its own, in storage order, in double (f32 values
 * are widened first), so the result does not depend on blocking; there is
 * one pass over the band, on the calling thread (a column costs a few
 * hundred flops; threads would not pay for their start at the sizes of an
 * LD band column). ctl->cancel is polled and ctl->progress told (columns
 * done of b->n) once per block of about 2^20 stored values.
 * Thread safety: reentrant; b is only read.
 * Oracle: core/tests/stats/stats_ldscore/ (a dense matrix, squared and
 * summed directly); bigsnpr::snp_ld_scores() on the 1kg fixture
 * (packages/RfmallocStatgen/tests/testthat/test-ldsc.R). */
#ifndef FM_STATS_LDSCORE_H
#define FM_STATS_LDSCORE_H

#include "fm_band.h"
#include "fm_base.h"

/* LD score of every variant (column) of b.
 * Shape:  scores_out has length b->n.
 * Units:  a sum of squared correlations (dimensionless, >= 1 when
 *         n_samples == 0 and the diagonal is stored as 1).
 * Errors: FM_EARG (b or scores_out NULL with b->n > 0, b->n negative,
 *         a NULL array, dtype unknown, colptr not starting at 0 or
 *         decreasing, n_samples in 1..2 or negative, a stored value that is
 *         not finite or outside [-1, 1], naming its column), FM_ECANCELLED
 *         (scores_out then partly written).
 * Owns:   borrows b and ctl; writes only scores_out. */
FM_NODISCARD fm_status fm_stats_ldscore(const fm_band *b, int64_t n_samples, double *scores_out,
                                        const fm_ctl *ctl, fm_err *err);

#endif
