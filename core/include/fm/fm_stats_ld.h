/* fm_stats_ld.h: linkage disequilibrium (LD) as a band of Pearson
 * correlations between the genotype columns of a window, computed in
 * bounded panels into the CSC layout of fm_band.h.
 *
 * Windows: variant j's upper window is the columns j+1 .. win_end[j]-1
 * (win_end nondecreasing, j < win_end[j] <= n); its lower window follows
 * by symmetry (the k < j with win_end[k] > j). The caller makes win_end
 * from what it has (a count of variants, base pairs or centimorgans within
 * one chromosome), so the band covers exactly the pairs it asked for.
 *
 * Correlation r of columns x, y (values after the view's transform; a
 * missing value is any NaN, FM_CODEC_BED2's code 01):
 *   FM_LD_PAIRWISE  over the samples observed in both (plink 1.9 --r/--r2):
 *                   r = (n Sxy - Sx Sy) / sqrt((n Sxx - Sx^2)(n Syy - Sy^2)),
 *                   the sums over those n samples;
 *   FM_LD_MEAN      each missing value replaced by its column's mean over
 *                   its observed samples, then Pearson over all samples
 *                   (bigsnpr::snp_cor after mean imputation).
 * Samples: with opts->sample_mask only the samples it selects exist for
 * the computation; the others are never read into a sum, a count or a
 * column mean (as plink 1.9 --keep, or bigsnpr's ind.row): the band is the
 * band of the selected rows of x. Hardcalls AND the mask into their bit
 * planes; decoded codecs keep only the selected rows of each chunk.
 * A pair whose correlation is undefined (a column with zero variance over
 * the samples used, or fewer than two of them) gets r = 0; the diagonal is
 * always 1. Values are clamped to [-1, 1] (rounding only).
 * Exactness: 2-bit hardcalls (FM_CODEC_BED2 with an identity transform) are
 * counted with bit planes and popcounts, so every sum is an exact integer
 * and r is correctly rounded from exact sums (a few ulp); other codecs are
 * decoded (fm_panel_decode), centred by their column mean first so that
 * the sums do not cancel, and summed in double.
 *
 * Storing: pairs with r^2 >= r2_min are stored (r2_min 0: every pair of the
 * window, zeros included); the diagonal always is. Two calls make a band:
 * fm_stats_ld_count gives each column's stored entries (without computing
 * anything when r2_min is 0), the caller allocates, and fm_stats_ld_fill
 * writes rowidx and values column by column, in order, so the output can
 * be a file mapping written once front to back (release_output then drops
 * its finished pages from the resident set). With r2_min > 0 the
 * correlations are computed twice (once per call), identically.
 *
 * Work: each upper pair once, summed over row chunks; a block of columns
 * and its windows is held as bit planes (3 bits per call) or decoded
 * doubles within fm_panel_budget(ctl), plus 6 doubles per pair of the
 * block. Pairs are spread over fm_threads(ctl) threads; results do not
 * depend on the thread count or the panel budget (each pair's sums are in
 * a fixed order). The popcount kernel runs at the level fm_cpu_isa() names
 * (POPCNT from the AVX2 level up; portable C below), same integers either
 * way. Cancellation is polled and progress reported (columns done of n)
 * once per block; consumed input columns are evicted (fm_mat_evict_stream).
 * Thread safety: reentrant; x is only read.
 * Sources: Pearson correlation of allele counts as plink 1.9's --r2 (Chang
 * et al. 2015, GigaScience 4:7, www.cog-genomics.org/plink/1.9/ld);
 * bigsnpr::snp_cor (Prive et al. 2018, Bioinformatics 34:2781). Oracles:
 * core/tests/stats/stats_ld/ (a direct two-pass in long double), plink1.9
 * and bigsnpr in RfmallocStatgen's tests. */
#ifndef FM_STATS_LD_H
#define FM_STATS_LD_H

#include "fm_band.h"
#include "fm_base.h"
#include "fm_panel.h"

typedef enum fm_ld_missing { FM_LD_PAIRWISE = 1, FM_LD_MEAN = 2 } fm_ld_missing;

typedef struct fm_ld_opts {
  fm_ld_missing missing;
  double r2_min;        /* in [0, 1]; 0 stores every pair of the window */
  fm_band_dtype dtype;  /* of the values fm_stats_ld_fill writes */
  int release_output;   /* nonzero: rowidx and values are a file mapping
                           whose written pages may be dropped (madvise) */
  const uint64_t *sample_mask; /* NULL: every sample (row of x); else
                           (x->n_rows + 63) / 64 words, sample r used when
                           bit r % 64 of word r / 64 is set (see Samples) */
} fm_ld_opts;

/* Stored entries of each column (its lower and upper window entries that
 * are kept, plus the diagonal).
 * Shape:  win_end has x->n_cols entries; count_out x->n_cols int64.
 * Errors: FM_EARG (NULL x, opts or an output with columns; win_end not
 *         nondecreasing within (j, n]; r2_min outside [0, 1]; an unknown
 *         missing rule or dtype; a column with more than INT32_MAX rows);
 *         FM_ENOMEM; FM_ECANCELLED (count_out unspecified); those of
 *         fm_panel_decode (FM_EIO when a mapped file shrank).
 * Owns:   borrows everything; writes only count_out. */
FM_NODISCARD fm_status fm_stats_ld_count(const fm_mat *x, const fm_affine *aff,
                                         const int64_t *win_end, const fm_ld_opts *opts,
                                         int64_t *count_out, const fm_ctl *ctl, fm_err *err);

/* The band: rowidx and values of every column, at colptr (the cumulative
 * sums of fm_stats_ld_count's counts, colptr[0] = 0, n + 1 entries).
 * Shape:  rowidx colptr[n] int32; values colptr[n] doubles or floats
 *         (opts->dtype).
 * Errors: those of fm_stats_ld_count; FM_EARG when colptr disagrees with
 *         the counts (a column whose entries do not fit its range).
 * Owns:   borrows everything; writes only rowidx and values. */
FM_NODISCARD fm_status fm_stats_ld_fill(const fm_mat *x, const fm_affine *aff,
                                        const int64_t *win_end, const fm_ld_opts *opts,
                                        const int64_t *colptr, int32_t *rowidx, void *values,
                                        const fm_ctl *ctl, fm_err *err);

#endif
