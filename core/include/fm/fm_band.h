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

/* Value k (0 <= k < colptr[n]) of b as a double. */
static inline double fm_band_value(const fm_band *b, int64_t k) {
  return b->dtype == FM_BAND_F32 ? (double)((const float *)b->values)[k]
                                 : ((const double *)b->values)[k];
}

#endif
