/* fm_band.h: a banded symmetric matrix (an LD matrix) as the core reads it.
 *
 * An LD matrix R of n variants is symmetric with a variable band: variant j
 * is correlated with the variants of its window (a run of consecutive
 * variants around j, on j's chromosome) and with no other. The core stores
 * it column by column, both triangles and the diagonal (compressed sparse
 * column, CSC):
 *
 *   column j holds rows rowidx[colptr[j] .. colptr[j+1]) (0-based, strictly
 *   increasing, j itself among them) with values values[same range];
 *   R[i, j] == R[j, i] for every stored pair, and a pair that is not stored
 *   is 0.
 *
 * Storing both triangles costs twice the bytes of one, and buys what the
 * consumers need: a whole column of R in one contiguous run (a Gibbs sweep
 * updates R beta by a column at a time; y = R b is one dot product per
 * column, each column read once, in order, on any number of threads).
 *
 * Values are doubles (FM_BAND_F64) or floats (FM_BAND_F32, half the bytes:
 * a correlation stored to about 6e-8 relative). The diagonal of a column
 * with zero variance is 1 and its other entries 0 (fm_stats_ld.h), so every
 * value is finite and |value| <= 1.
 *
 * In R the three arrays are mapped vectors of an Rfmalloc runtime
 * (RfmallocStatgen's statgen_ld objects): colptr as doubles (exact below
 * 2^53), rowidx as integers, values as doubles or as raw bytes holding the
 * floats; the glue converts colptr to int64 once per call.
 *
 * Ownership: fm_band borrows all three arrays; nothing here allocates. */
#ifndef FM_BAND_H
#define FM_BAND_H

#include "fm_base.h"

typedef enum fm_band_dtype { FM_BAND_F64 = 1, FM_BAND_F32 = 2 } fm_band_dtype;

typedef struct fm_band {
  int64_t n;             /* variants: R is n x n */
  const int64_t *colptr; /* n + 1 offsets, colptr[0] == 0, nondecreasing */
  const int32_t *rowidx; /* colptr[n] row indices */
  const void *values;    /* colptr[n] doubles or floats, as dtype says */
  fm_band_dtype dtype;
} fm_band;

/* Y = R B: for each of the k columns of B, y_i = sum over the stored rows
 * r of column i of R[r, i] b_r (R is symmetric, so column i is row i).
 * Shape:  B is n x k, column-major, ld ldb >= n; Y likewise (ldy >= n);
 *         k >= 0. B and Y must not overlap.
 * Work:   one read of the band per call (each column once, in order),
 *         2 k flops per stored value; columns spread over fm_threads(ctl)
 *         threads, each output element summed by one thread in the stored
 *         order: the same bits for every thread count. A non-finite entry
 *         of B reaches exactly the outputs whose rows use it (IEEE).
 *         budget: whether the band's pages are dropped from memory once
 *         read (madvise; fm_band_bytes), so that a band larger than memory
 *         streams through it while a smaller one stays resident between
 *         products (each product would otherwise fault all of it back in
 *         from the page cache):
 *           FM_BAND_RESIDENT   never drop (a band on the heap or in
 *                              private memory must pass it: dropping
 *                              would lose its contents);
 *           FM_BAND_BUDGET_AUTO (0)  the default budget, a quarter of the
 *                              physical memory (fm_band_budget_auto);
 *           any other value    a budget in bytes;
 *         the pages are dropped when fm_band_bytes(b) exceeds the budget.
 *         Only a band whose arrays are a read-only or shared file mapping
 *         may pass a budget other than FM_BAND_RESIDENT.
 * Errors: FM_EARG (NULL arguments with n, k > 0; ld too small),
 *         FM_ECANCELLED (Y unspecified). The band must follow the layout
 *         (row indices in 0..n-1): its maker or reader checks it (in R,
 *         stg_band_check does once per band).
 * Progress: columns done of n, polled with cancel every 4096 columns. */
FM_NODISCARD fm_status fm_band_matmul(const fm_band *b, const double *B, int64_t k, int64_t ldb,
                                      double *Y, int64_t ldy, uint64_t budget, const fm_ctl *ctl,
                                      fm_err *err);

#define FM_BAND_RESIDENT UINT64_MAX
#define FM_BAND_BUDGET_AUTO 0u

/* Bytes of the band's row indices and values (colptr[n] * (4 + 8 or 4)):
 * what a product reads and what fm_band_matmul compares with its budget. */
uint64_t fm_band_bytes(const fm_band *b);

/* The default budget: a quarter of the physical memory (sysconf
 * _SC_PHYS_PAGES; 1 GiB when it cannot be read). A band of at most this
 * many bytes stays resident across products. */
uint64_t fm_band_budget_auto(void);

/* Value k (0 <= k < colptr[n]) of b as a double. */
static inline double fm_band_value(const fm_band *b, int64_t k) {
  return b->dtype == FM_BAND_F32 ? (double)((const float *)b->values)[k]
                                 : ((const double *)b->values)[k];
}

#endif
