/* fm_test_band.h: a CSC LD band (fm_band.h) built from a dense n x n
 * matrix, for the tests of the modules that read bands. Header-only. */
#ifndef FM_TEST_BAND_H
#define FM_TEST_BAND_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_band.h"

typedef struct test_band {
  fm_band b;
  int64_t *colptr;
  int32_t *rowidx;
  double *v64;
  float *v32;
} test_band;

/* The pairs of dense D (n x n) with |i - j| <= w and (i == j or
 * D[i, j]^2 >= keep_min), as r (square = 0) or as D^2 (square = 1). */
static inline void band_make(test_band *t, const double *D, int64_t n, int64_t w, double keep_min,
                             int square, fm_band_dtype dtype) {
  memset(t, 0, sizeof *t);
  t->colptr = calloc((size_t)n + 1, sizeof *t->colptr);
  size_t cap = (size_t)(n * n + 1);
  t->rowidx = malloc(cap * sizeof *t->rowidx);
  t->v64 = malloc(cap * sizeof *t->v64);
  t->v32 = malloc(cap * sizeof *t->v32);
  int64_t k = 0;
  for (int64_t j = 0; j < n; j++) {
    for (int64_t i = 0; i < n; i++) {
      const double r = D[i + j * n];
      if (llabs(i - j) > w || (i != j && r * r < keep_min)) continue;
      t->rowidx[k] = (int32_t)i;
      t->v64[k] = square ? r * r : r;
      t->v32[k] = (float)t->v64[k];
      k++;
    }
    t->colptr[j + 1] = k;
  }
  t->b.n = n;
  t->b.colptr = t->colptr;
  t->b.rowidx = t->rowidx;
  t->b.dtype = dtype;
  t->b.values = dtype == FM_BAND_F32 ? (const void *)t->v32 : (const void *)t->v64;
}

static inline void band_free(test_band *t) {
  free(t->colptr);
  free(t->rowidx);
  free(t->v64);
  free(t->v32);
}

#endif
