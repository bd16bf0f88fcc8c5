/* Tests for fm_band_matmul (generated bands). Oracle: the dense product of
 * the same symmetric matrix, summed in the band's row order. The budget:
 * a band in a shared file mapping is dropped from memory after a product
 * only when it is larger than the budget. */
#define _DEFAULT_SOURCE /* mkstemp, MAP_SHARED */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fm/fm_band.h"
#include "fm/fm_base.h"
#include "fm_test.h"
#include "fm_test_files.h"

enum { N = 700, K = 3 };

static double R[N * N];
static int64_t colptr[N + 1];
static int32_t rowidx[N * 40];
static double vals[N * 40];
static float fvals[N * 40];

/* A symmetric band with variable half-widths 0..12, some stored zeros. */
static void make_band(void) {
  uint64_t s = 7;
  int64_t w[N];
  for (int64_t j = 0; j < N; j++) w[j] = (int64_t)(fm_test_rng_next(&s) % 13);
  for (int64_t j = 0; j < N; j++)
    for (int64_t i = j; i < N && i <= j + w[j]; i++) {
      const double v = i == j ? 1 : (double)(fm_test_rng_next(&s) % 2001) / 1000 - 1;
      R[i + j * N] = R[j + i * N] = v;
    }
  int64_t q = 0;
  for (int64_t j = 0; j < N; j++) {
    colptr[j] = q;
    for (int64_t i = 0; i < N; i++) {
      const int in = (i >= j && i <= j + w[j]) || (i < j && j <= i + w[i]);
      if (!in) continue;
      rowidx[q] = (int32_t)i, vals[q] = R[i + j * N], fvals[q] = (float)vals[q];
      q++;
    }
  }
  colptr[N] = q;
}

static void test_product(void) {
  static double B[N * K], Y[N * K], Y3[N * K];
  uint64_t s = 3;
  for (int64_t i = 0; i < N * K; i++) B[i] = (double)(fm_test_rng_next(&s) % 1000) / 100 - 5;
  B[17] = NAN; /* reaches the outputs whose rows use row 17 of column 0 */
  for (int dt = FM_BAND_F64; dt <= FM_BAND_F32; dt++) {
    const fm_band b = {N, colptr, rowidx, dt == FM_BAND_F32 ? (void *)fvals : (void *)vals,
                       (fm_band_dtype)dt};
    fm_err err;
    fm_err_clear(&err);
    fm_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.threads = 1;
    CHECK_OK(fm_band_matmul(&b, B, K, N, Y, N, FM_BAND_RESIDENT, &ctl, &err), &err);
    ctl.threads = 3;
    CHECK_OK(fm_band_matmul(&b, B, K, N, Y3, N, FM_BAND_RESIDENT, &ctl, &err), &err);
    CHECK(memcmp(Y, Y3, sizeof Y) == 0);
    for (int64_t c = 0; c < K; c++)
      for (int64_t i = 0; i < N; i++) {
        double want = 0;
        for (int64_t r = 0; r < N; r++) {
          const double v = dt == FM_BAND_F32 ? (double)(float)R[r + i * N] : R[r + i * N];
          if (v != 0 || (c == 0 && r == 17 && colptr[i + 1] > colptr[i])) {
            int stored = 0;
            for (int64_t q = colptr[i]; q < colptr[i + 1]; q++) stored |= rowidx[q] == r;
            if (stored) want += v * B[r + c * N];
          }
        }
        if (isnan(want))
          CHECK(isnan(Y[i + c * N]));
        else
          CHECK(fabs(Y[i + c * N] - want) <= 1e-12 * (1 + fabs(want)));
      }
  }
}

static void test_edges(void) {
  const fm_band b = {N, colptr, rowidx, vals, FM_BAND_F64};
  fm_err err;
  fm_err_clear(&err);
  double y[N];
  CHECK_OK(fm_band_matmul(&b, NULL, 0, N, y, N, FM_BAND_RESIDENT, NULL, &err), &err); /* k = 0 */
  CHECK(fm_band_matmul(&b, y, 1, N - 1, y, N, FM_BAND_RESIDENT, NULL, &err) == FM_EARG);
  CHECK(fm_band_matmul(NULL, y, 1, N, y, N, FM_BAND_RESIDENT, NULL, &err) == FM_EARG);
}

/* The band copied into a MAP_SHARED file mapping: row indices on the first
 * pages, values from the next page boundary. */
static void test_budget(void) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t nnz = (size_t)colptr[N];
  const size_t voff = (nnz * 4 + page - 1) / page * page, len = voff + nnz * 8;
  unsigned char *m = fm_test_map_tmp(len, NULL);
  CHECK(m != NULL);
  if (!m) return;
  memcpy(m, rowidx, nnz * 4);
  memcpy(m + voff, vals, nnz * 8);
  const fm_band heap = {N, colptr, rowidx, vals, FM_BAND_F64};
  const fm_band b = {N, colptr, (const int32_t *)m, m + voff, FM_BAND_F64};
  CHECK(fm_band_bytes(&b) == nnz * 12);
  const fm_band b32 = {N, colptr, rowidx, fvals, FM_BAND_F32};
  CHECK(fm_band_bytes(&b32) == nnz * 8);
  CHECK(fm_band_budget_auto() >= ((uint64_t)1 << 20));
  static double B[N], Y0[N], Y[N];
  for (int64_t i = 0; i < N; i++) B[i] = (double)(i % 7) - 3;
  fm_err err;
  fm_err_clear(&err);
  CHECK_OK(fm_band_matmul(&heap, B, 1, N, Y0, N, FM_BAND_RESIDENT, NULL, &err), &err);
  const size_t all = (len + page - 1) / page;
  const uint64_t budgets[] = {FM_BAND_RESIDENT, FM_BAND_BUDGET_AUTO, nnz * 12, nnz * 12 - 1, 1};
  for (size_t t = 0; t < sizeof budgets / sizeof budgets[0]; t++) {
    memset(Y, 0, sizeof Y);
    CHECK_OK(fm_band_matmul(&b, B, 1, N, Y, N, budgets[t], NULL, &err), &err);
    CHECK(memcmp(Y, Y0, sizeof Y) == 0);
    const size_t rss = fm_test_rss_pages(m, page);
    if (rss == (size_t)-1) continue; /* no /proc: the values were checked */
    if (budgets[t] >= nnz * 12 || budgets[t] == FM_BAND_BUDGET_AUTO)
      CHECK(rss == all); /* within the budget: the band stays resident */
    else
      CHECK(rss <= 2); /* over it: all but the partial pages at the ends go */
    /* touch every page again for the next budget */
    volatile unsigned char sink = 0;
    for (size_t o = 0; o < len; o += page) sink ^= m[o];
    (void)sink;
  }
  CHECK(memcmp(m + voff, vals, nnz * 8) == 0); /* dropped pages read back */
  munmap(m, len);
}

int main(void) {
  make_band();
  FM_RUN(test_product);
  FM_RUN(test_edges);
  FM_RUN(test_budget);
  FM_TEST_END();
}
