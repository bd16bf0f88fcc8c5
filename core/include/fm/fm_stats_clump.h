/* fm_stats_clump.h: clumping of association results and LD pruning on a
 * banded LD matrix (fm_band.h).
 *
 * Clumping (plink 1.9 --clump; Purcell et al. 2007, Am J Hum Genet 81:559;
 * Chang et al. 2015, GigaScience 4:7; docs at
 * https://www.cog-genomics.org/plink/1.9/postproc#clump): the variants with
 * p <= p1 are taken in ascending p (ties in variant order); each one not yet
 * claimed becomes an index variant and claims every unclaimed variant j of
 * its chromosome with |pos_j - pos_i| <= window_bp, p_j <= p2 and
 * r^2(i, j) >= r2. A claimed variant never becomes an index variant and
 * joins one clump only. Like plink, each clump also counts the variants
 * that pass the window and r^2 but have p > p2 (never claimed, counted in
 * every clump they pass), in its TOTAL and p-value bins.
 *
 * Pruning (plink2 --indep-pairwise <window> <step> <r2>, docs at
 * https://www.cog-genomics.org/plink/2.0/ld#indep): on each chromosome a
 * window starts at its first variant and moves by `step` variants until it
 * reaches the chromosome's last variant. Within a window, in variant order,
 * each variant i still kept is compared with each later kept variant j of
 * the window; when r^2(i, j) > r2 the one of smaller minor allele frequency
 * goes (i when maf_i < maf_j, else j), and when i goes its comparisons stop.
 * A variant of zero variance is removed by any window of two or more
 * variants that holds it (plink2 puts it in .prune.out; one alone in all
 * its windows, e.g. with no other variant within a kb window, stays, as in
 * plink2). This reproduces plink2's .prune.in exactly on the 1kg
 * fixture (packages/RfmallocStatgen/tests/testthat/test-clump.R).
 *
 * r^2 comes from the band: column i's stored rows and values (a pair that
 * is not stored has r^2 = 0). values_are_r2 = 0: the values are
 * correlations r (statgen_ld), squared here; 1: they are r^2 already (for
 * example the haplotype-frequency r^2 of fm_stats_ld_hap_r2 below, which is
 * what plink 1.9 --clump uses). Only the columns of the variants that can
 * act (index candidates for clumping, every kept variant for pruning) are
 * read, and each in full, so a band whose other columns are empty is
 * accepted (the symmetry of fm_band.h is not needed).
 *
 * Thread safety: reentrant; inputs are only read. Work: clumping reads each
 * candidate's column once (plus a sort of the candidates); pruning reads
 * column i once per window holding i. Oracle:
 * core/tests/stats/stats_clump/ (a dense r^2 matrix and the rules above
 * written directly). */
#ifndef FM_STATS_CLUMP_H
#define FM_STATS_CLUMP_H

#include "fm_band.h"
#include "fm_base.h"

typedef struct fm_clump_opts {
  double p1;        /* index variants: p <= p1, in (0, 1] */
  double p2;        /* clumped variants: p <= p2, in [p1, 1] */
  double r2;        /* clumped variants: r^2 >= r2, in [0, 1] */
  double window_bp; /* clumped variants: |pos difference| <= window_bp, >= 0 */
} fm_clump_opts;

/* Clump the n = b->n variants of b.
 * Shape:  p, chr, pos and clump_out have length n; index_out has room for
 *         n_cand entries and counts_out is n_cand x 6, column-major, where
 *         n_cand is the number of variants with p <= p1 (an upper bound on
 *         the clumps).
 * Units:  p a p-value in [0, 1] or NaN (never index nor member, nor
 *         counted); chr a chromosome code (equal codes = same chromosome);
 *         pos in base pairs.
 * Output: clump_out[j] = the index variant (0-based) of j's clump, j itself
 *         for an index variant, -1 for a variant in no clump;
 *         index_out[c] the index variant of clump c (0-based), clumps in
 *         the order formed (ascending p, ties in variant order);
 *         counts_out[c + k n_cand], k = 0..5, plink's TOTAL, NSIG, S05,
 *         S01, S001, S0001 of clump c: the variants it claimed plus those
 *         with p > p2 that pass its window and r^2, all (TOTAL) and by p
 *         (NSIG p > 0.05; S05 0.01 < p <= 0.05; S01 0.001 < p <= 0.01;
 *         S001 1e-4 < p <= 0.001; S0001 p <= 1e-4); *n_index_out the
 *         number of clumps.
 * Errors: FM_EARG (NULL arguments with n > 0; an option out of range; a
 *         p outside [0, 1]; a row index outside 0..n-1; a stored value that
 *         is not finite or outside [-1, 1]), FM_ECANCELLED (outputs partly
 *         written).
 * Owns:   borrows everything; writes the outputs only; allocates n_cand
 *         candidates of scratch (FM_ENOMEM). */
FM_NODISCARD fm_status fm_stats_clump(const fm_band *b, int values_are_r2, const double *p,
                                      const int32_t *chr, const double *pos,
                                      const fm_clump_opts *opts, int32_t *clump_out,
                                      int64_t *index_out, int32_t *counts_out,
                                      int64_t *n_index_out, const fm_ctl *ctl, fm_err *err);

/* Prune the n = b->n variants of b as plink2 --indep-pairwise.
 * Shape:  maf, chr, win_end, is_constant and keep_out have length n.
 * Units:  maf the minor allele frequency in [0, 0.5]; chr a chromosome code,
 *         variants of one chromosome consecutive; win_end[i] the end
 *         (exclusive, 0-based) of the window that starts at i, with
 *         i < win_end[i] <= the end of i's chromosome (a window of w
 *         variants: min(i + w, chromosome end); in kb: the first variant
 *         beyond pos_i + kb * 1000); step >= 1 variants; r2 in [0, 1]
 *         (pairs with r^2 > r2 are pruned); is_constant nonzero for a
 *         variant of zero variance (NULL: none).
 * Output: keep_out[j] = 1 for a variant kept (plink's .prune.in), else 0;
 *         *n_kept_out their number.
 * Errors: FM_EARG (NULL arguments with n > 0, step < 1, r2 outside [0, 1],
 *         a win_end out of range, chromosomes not grouped, a row index
 *         outside 0..n-1, a stored value not finite or outside [-1, 1]),
 *         FM_ECANCELLED (outputs partly written).
 * Owns:   borrows everything; writes keep_out and *n_kept_out only. */
FM_NODISCARD fm_status fm_stats_prune(const fm_band *b, int values_are_r2, const double *maf,
                                      const int32_t *chr, const int64_t *win_end, int64_t step,
                                      double r2, const uint8_t *is_constant, uint8_t *keep_out,
                                      int64_t *n_kept_out, const fm_ctl *ctl, fm_err *err);

/* Haplotype-frequency r^2 of variant a with each of k variants, from
 * unphased allele counts: the maximum-likelihood frequency of the
 * haplotype carrying both counted alleles given the 3 x 3 table of
 * genotype pairs (only the double heterozygotes are ambiguous; the
 * likelihood's stationary points are the roots of a cubic, Hill 1974,
 * Heredity 33:229), then r^2 = D^2 / (pA (1 - pA) pB (1 - pB)), D = f_AB -
 * pA pB. This is plink 1.9's --r2 dprime R2 and the r^2 of its --clump
 * (not --r2's squared allele-count correlation); samples missing at either
 * variant are left out of the pair; a pair with a monomorphic variant over
 * those samples has r^2 = 0.
 * Shape:  ga has n_samples values; G is n_samples x k, column-major,
 *         ldg >= n_samples; r2_out has k.
 * Units:  counts 0, 1, 2 of one allele, NaN missing.
 * Errors: FM_EARG (NULL arguments, ldg too small, a value other than 0, 1,
 *         2 or NaN, naming it).
 * Owns:   borrows ga and G; writes only r2_out. */
FM_NODISCARD fm_status fm_stats_ld_hap_r2(const double *ga, const double *G, int64_t n_samples,
                                          int64_t k, int64_t ldg, double *r2_out, fm_err *err);

#endif
