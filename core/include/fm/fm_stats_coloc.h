/* fm_stats_coloc.h: Bayesian colocalisation of two traits (coloc's
 * approximate Bayes factor model) for every pair of signals at once.
 *
 * Input: log Bayes factors L1 (n1 signals x m SNPs) of trait 1 and L2
 * (n2 x m) of trait 2 over the same m SNPs, in the same order (the caller
 * matches SNPs by name). A "signal" is one row: the per-SNP log ABFs of a
 * whole data set (coloc.abf), of one SuSiE single effect (lbf_variable of
 * a credible set), or of one conditional analysis. For each pair (i, j),
 * with the per-SNP priors p1, p2 (a SNP is causal for trait 1 only, 2 only)
 * and p12 (causal for both), the five hypotheses of Giambartolomei et al.
 * have the log numerators (coloc's combine.abf)
 *   lH0 = 0
 *   lH1 = log p1 + lse_k L1_ik
 *   lH2 = log p2 + lse_k L2_jk
 *   lH3 = log p1 + log p2 + log sum_{k != l} exp(L1_ik + L2_jl)
 *       = log p1 + log p2 + logdiff(lse L1_i + lse L2_j, lse_k (L1_ik + L2_jk))
 *   lH4 = log p12 + lse_k (L1_ik + L2_jk)
 * (lse: log-sum-exp; natural logs) and the posteriors PP.Hh = exp(lHh -
 * lse(lH0..lH4)).
 *
 * The coupling lse_k (L1_ik + L2_jk) of all pairs is one matrix product:
 * with a_i = max_k L1_ik, b_j = max_k L2_jk, E1 = exp(L1 - a), E2 =
 * exp(L2 - b) (entries in [0, 1], each row's largest 1) and S = E1 E2',
 *   lse_k (L1_ik + L2_jk) = a_i + b_j + log S_ij.
 * S is computed by BLAS dgemm over bounded panels of signals (E1 and E2 are
 * never held whole). With T1_i = sum_k E1_ik and T2_j = sum_k E2_jk (each
 * in [1, m]), the H3 sum is D_ij = T1_i T2_j - S_ij, times exp(a_i + b_j).
 * Two soundness rules send a pair to an exact per-pair computation in the
 * log domain (max-shifted, O(m) each):
 *   - S_ij < 1e-250 (underflow could matter): lse_k (L1_ik + L2_jk) is
 *     recomputed from the log BFs. Above that threshold, every product term
 *     that underflowed or lost digits as a subnormal carries an absolute
 *     error below DBL_MIN (2.3e-308), at most m of them, so their relative
 *     effect on S is below m 2.3e-308 / 1e-250 (< 1e-48 for m < 2^31).
 *   - S_ij > (15/16) T1_i T2_j (the signals share their mass at the same
 *     SNPs, so D is a difference of nearly equal numbers): log D_ij is
 *     recomputed as lse_k (L1_ik + log sum_{l != k} exp(L2_jl)), where the
 *     inner sums never cancel by more than a factor 2. Below that threshold
 *     the subtraction T1 T2 - S loses at most a factor 16.
 * Accuracy: a sum above carries a relative error of order (m + |x|) u
 * (u = 2^-53; x the shifted exponent L - a of its leading terms, under 600
 * in size outside the exact paths: dgemm's m u and the rounding of L - a
 * before exp), so each log numerator has an absolute error of that order,
 * times at most 16 for lH3 (about 1e-12 for m of a few thousand; the C
 * tests hold every pair to 1e-11 of a long double reference). With a
 * single SNP (m = 1) there is no pair of distinct SNPs: lH3 = -Inf and
 * PP.H3 = 0 (coloc's logdiff gives NaN or a rounding residue there).
 * Determinism: results do not depend on the panel budget except through
 * the BLAS's summation order inside dgemm (the reference BLAS sums in a
 * fixed order; a threaded BLAS may differ in the last bits).
 * Cancellation and progress: ctl->cancel is polled once per block of pairs;
 * ctl->progress reports pairs done of n1 n2.
 * Thread safety: reentrant; the inputs are only read.
 * Source: Giambartolomei et al. (2014) PLoS Genet 10:e1004383 (the model and
 * its priors); Wallace (2020) PLoS Genet 16:e1008720 and Wallace (2021)
 * PLoS Genet 17:e1009440 (coloc 5: per-signal Bayes factors, coloc.bf_bf,
 * coloc.susie). Oracles: core/tests/stats/stats_coloc/ (per-pair long
 * double from the definitions above); coloc::coloc.abf and coloc.bf_bf in R
 * (packages/RfmallocStatgen/tests/testthat/test-coloc.R). */
#ifndef FM_STATS_COLOC_H
#define FM_STATS_COLOC_H

#include "fm_base.h"

/* The posteriors and log numerators of coloc's five hypotheses for every
 * pair of signals.
 * Shape:  l1 is n1 x m (ld1 >= max(1, n1)), l2 is n2 x m (ld2 >= max(1,
 *         n2)), column-major: row = signal, column = SNP. pp_out and lh_out
 *         (may be NULL) are n1 x n2 x 5 arrays, column-major (entry (i, j,
 *         h) at i + n1 (j + n2 h); h = 0..4 for H0..H4, as R's
 *         array(dim = c(n1, n2, 5))). n_exact_out (may be NULL) gets 2
 *         counts: pairs whose coupling was recomputed because S_ij <
 *         1e-250, and pairs whose H3 sum was recomputed because S_ij >
 *         (15/16) T1_i T2_j.
 * Units:  natural-log Bayes factors in; probabilities in (0, 1] for p1, p2,
 *         p12; lh_out in natural logs (lH0 = 0; lH3 = -Inf when m = 1).
 * Errors: FM_EARG (a NULL array with entries, n1 or n2 negative, m < 1,
 *         ld1 or ld2 too small, a prior outside (0, 1] or not finite, a
 *         NaN or infinite log BF, naming the matrix, row and column, all
 *         1-based as R shows them), FM_EUNSUPPORTED (m or a panel beyond a
 *         BLAS integer), FM_ENOMEM, FM_ECANCELLED (outputs then partly
 *         written).
 * Owns:   borrows l1, l2 and ctl; writes only the outputs. */
FM_NODISCARD fm_status fm_stats_coloc_pairs(const double *l1, int64_t n1, int64_t ld1,
                                            const double *l2, int64_t n2, int64_t ld2,
                                            int64_t m, double p1, double p2, double p12,
                                            double *pp_out, double *lh_out,
                                            int64_t *n_exact_out, const fm_ctl *ctl,
                                            fm_err *err);

#endif
