/* Tests for fm_stats_ld_count / fm_stats_ld_fill (generated data only).
 * Oracle: each pair's correlation by its definition (fm_stats_ld.h), a
 * two-pass over the samples the rule uses, from the genotype values before
 * encoding; every band is also checked for its layout (rows increasing, the
 * diagonal 1, both triangles bit-identical). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_base.h"
#include "fm/fm_codec_bed2.h"
#include "fm/fm_cpu.h"
#include "fm/fm_panel.h"
#include "fm/fm_stats_ld.h"
#include "fm_test.h"

enum { N = 203, P = 48 }; /* N not a multiple of 64: the last word is partial */

static int32_t G[N * P]; /* genotype counts, INT32_MIN missing */
static double D[N * P];  /* the same as doubles, NaN missing */
static uint8_t BED[P * ((N + 3) / 4)];
static int64_t WIN[P];

/* Columns in LD: each copies its left neighbour with some calls redrawn;
 * column 5 constant, column 9 all missing, column 13 with one observed call,
 * about 4% missing calls elsewhere; windows of 1 to 9 variants. */
static void make_data(void) {
  uint64_t s = 42;
  for (int64_t j = 0; j < P; j++) {
    for (int64_t i = 0; i < N; i++) {
      int32_t g = (int32_t)(fm_test_rng_next(&s) % 3);
      if (j > 0 && fm_test_rng_next(&s) % 4 != 0 && G[i + (j - 1) * N] != INT32_MIN)
        g = G[i + (j - 1) * N];
      if (j == 5) g = 1;
      if (j == 9 || (j == 13 && i != 7) || (j % 3 == 0 && fm_test_rng_next(&s) % 25 == 0))
        g = INT32_MIN;
      G[i + j * N] = g;
      D[i + j * N] = g == INT32_MIN ? NAN : (double)g;
    }
  }
  fm_err err;
  fm_err_clear(&err);
  CHECK_OK(fm_codec_bed2_encode(G, N, P, N, BED, &err), &err);
  int64_t e = 1;
  for (int64_t j = 0; j < P; j++) {
    const int64_t want = j + 1 + (int64_t)(fm_test_rng_next(&s) % 9);
    if (want > e) e = want;
    if (e > P) e = P;
    if (e <= j) e = j + 1;
    WIN[j] = e;
  }
}

/* The samples the oracle uses: NULL (all) or a mask as fm_ld_opts's. */
static const uint64_t *OSEL;
#define OSKIP(i) (OSEL && !((OSEL[(i) / 64] >> ((i) % 64)) & 1u))

/* The definition, from the doubles. */
static double oracle_r(int64_t j, int64_t k, fm_ld_missing rule) {
  const double *x = D + j * N, *y = D + k * N;
  double mx = 0, my = 0, n = 0, cx = 0, cy = 0;
  for (int64_t i = 0; i < N; i++) {
    if (OSKIP(i)) continue;
    if (rule == FM_LD_PAIRWISE) {
      if (isnan(x[i]) || isnan(y[i])) continue;
      mx += x[i], my += y[i], n += 1;
    } else {
      if (!isnan(x[i])) mx += x[i], cx += 1;
      if (!isnan(y[i])) my += y[i], cy += 1;
    }
  }
  if (rule == FM_LD_PAIRWISE) {
    if (n < 2) return 0;
    mx /= n, my /= n;
  } else {
    if (cx < 1 || cy < 1) return 0;
    mx /= cx, my /= cy;
  }
  double sxy = 0, sxx = 0, syy = 0;
  for (int64_t i = 0; i < N; i++) {
    if (OSKIP(i)) continue;
    double a = x[i], b = y[i];
    if (rule == FM_LD_PAIRWISE && (isnan(a) || isnan(b))) continue;
    a = isnan(a) ? 0 : a - mx;
    b = isnan(b) ? 0 : b - my;
    sxy += a * b, sxx += a * a, syy += b * b;
  }
  if (!(sxx > 0 && syy > 0)) return 0;
  return sxy / sqrt(sxx * syy);
}

typedef struct band {
  int64_t colptr[P + 1];
  int32_t *rowidx;
  void *values;
} band;

static fm_status make_band(const fm_mat *x, const fm_ld_opts *o, const fm_ctl *ctl, band *b,
                           fm_err *err) {
  int64_t count[P];
  fm_status st = fm_stats_ld_count(x, NULL, WIN, o, count, ctl, err);
  if (st != FM_OK) return st;
  b->colptr[0] = 0;
  for (int64_t j = 0; j < P; j++) b->colptr[j + 1] = b->colptr[j] + count[j];
  b->rowidx = malloc((size_t)b->colptr[P] * 4);
  b->values = malloc((size_t)b->colptr[P] * 8);
  return fm_stats_ld_fill(x, NULL, WIN, o, b->colptr, b->rowidx, b->values, ctl, err);
}

static double val(const band *b, const fm_ld_opts *o, int64_t k) {
  return o->dtype == FM_BAND_F32 ? (double)((float *)b->values)[k] : ((double *)b->values)[k];
}

/* Layout, symmetry and values of b against the oracle; the stored pairs are
 * exactly those of the windows with r^2 >= r2_min. */
static void check_band(const band *b, const fm_ld_opts *o, double tol) {
  for (int64_t j = 0; j < P; j++) {
    int64_t k = b->colptr[j];
    for (int64_t q = 0; q < P; q++) {
      const int in_win = (q > j && q < WIN[j]) || (q < j && WIN[q] > j);
      const double r = q == j ? 1 : in_win ? oracle_r(q < j ? q : j, q < j ? j : q, o->missing) : 0;
      const int want = q == j || (in_win && r * r >= o->r2_min - 1e-12);
      const int have = k < b->colptr[j + 1] && b->rowidx[k] == q;
      if (want != have && fabs(r * r - o->r2_min) > 1e-9) {
        fprintf(stderr, "pair (%lld, %lld): stored %d, expected %d (r = %g)\n", (long long)q,
                (long long)j, have, want, r);
        CHECK(0);
        return;
      }
      if (!have) continue;
      CHECK(fabs(val(b, o, k) - r) <= tol);
      CHECK(isfinite(val(b, o, k)));
      /* the mirror entry holds the same bits */
      for (int64_t m = b->colptr[q]; m < b->colptr[q + 1]; m++)
        if (b->rowidx[m] == j) CHECK(val(b, o, m) == val(b, o, k));
      k++;
    }
    CHECK(k == b->colptr[j + 1]);
  }
}

static void free_band(band *b) { free(b->rowidx), free(b->values); }

static fm_mat bed_mat(void) {
  fm_mat x;
  fm_err err;
  fm_err_clear(&err);
  CHECK_OK(fm_mat_init(&x, FM_CODEC_BED2, BED, N, P, (N + 3) / 4, &err), &err);
  return x;
}

static fm_mat f64_mat(void) {
  fm_mat x;
  fm_err err;
  fm_err_clear(&err);
  CHECK_OK(fm_mat_init(&x, FM_CODEC_F64, D, N, P, N * 8, &err), &err);
  return x;
}

/* Hardcalls (bit planes at every level the CPU runs) and doubles, both
 * rules, every pair and a threshold, f64 and f32 values. */
static void test_against_definition(void) {
  const fm_isa levels[] = {FM_ISA_PORTABLE, FM_ISA_AVX2, FM_ISA_AVX512};
  for (int lv = 0; lv < 3; lv++) {
    if (levels[lv] > fm_cpu_detect()) continue;
    fm_cpu_cap(levels[lv]);
    for (int codec = 0; codec < 2; codec++)
      for (int rule = FM_LD_PAIRWISE; rule <= FM_LD_MEAN; rule++)
        for (int thr = 0; thr < 2; thr++)
          for (int dt = FM_BAND_F64; dt <= FM_BAND_F32; dt++) {
            fm_mat x = codec ? f64_mat() : bed_mat();
            fm_ld_opts o = {(fm_ld_missing)rule, thr ? 0.1 : 0, (fm_band_dtype)dt, 0, NULL};
            fm_err err;
            fm_err_clear(&err);
            band b;
            CHECK_OK(make_band(&x, &o, NULL, &b, &err), &err);
            check_band(&b, &o, dt == FM_BAND_F32 ? 1e-7 : 1e-13);
            free_band(&b);
          }
  }
  fm_cpu_cap(FM_ISA_AVX512);
}

/* Panel budgets small enough to split rows into chunks and the columns into
 * one-column blocks, and 1 or 3 threads: hardcalls give the same bits. */
static void test_geometry_invariance(void) {
  fm_mat x = bed_mat();
  fm_ld_opts o = {FM_LD_PAIRWISE, 0, FM_BAND_F64, 0, NULL};
  fm_err err;
  fm_err_clear(&err);
  band ref, b;
  CHECK_OK(make_band(&x, &o, NULL, &ref, &err), &err);
  const size_t budgets[] = {1, 4096, 100000};
  for (int i = 0; i < 3; i++)
    for (int th = 1; th <= 3; th += 2) {
      fm_ctl ctl;
      memset(&ctl, 0, sizeof ctl);
      ctl.panel_bytes = budgets[i], ctl.threads = th;
      CHECK_OK(make_band(&x, &o, &ctl, &b, &err), &err);
      CHECK(memcmp(b.colptr, ref.colptr, sizeof ref.colptr) == 0);
      CHECK(memcmp(b.rowidx, ref.rowidx, (size_t)ref.colptr[P] * 4) == 0);
      CHECK(memcmp(b.values, ref.values, (size_t)ref.colptr[P] * 8) == 0);
      free_band(&b);
    }
  /* doubles: row chunks change only the rounding */
  fm_mat y = f64_mat();
  fm_ctl ctl;
  memset(&ctl, 0, sizeof ctl);
  ctl.panel_bytes = 4096;
  CHECK_OK(make_band(&y, &o, &ctl, &b, &err), &err);
  for (int64_t k = 0; k < ref.colptr[P]; k++)
    CHECK(fabs(((double *)b.values)[k] - ((double *)ref.values)[k]) <= 1e-13);
  free_band(&b);
  free_band(&ref);
}

/* A column subset (col_index) is the band of those columns. */
static void test_col_index(void) {
  static int64_t idx[P];
  for (int64_t j = 0; j < P; j++) idx[j] = j;
  fm_mat x = bed_mat();
  x.col_index = idx;
  fm_ld_opts o = {FM_LD_MEAN, 0, FM_BAND_F64, 0, NULL};
  fm_err err;
  fm_err_clear(&err);
  band b;
  CHECK_OK(make_band(&x, &o, NULL, &b, &err), &err);
  check_band(&b, &o, 1e-13);
  free_band(&b);
}

/* Zero variance and no data give 0 off the diagonal, 1 on it. */
static void test_degenerate_columns(void) {
  fm_mat x = bed_mat();
  fm_ld_opts o = {FM_LD_PAIRWISE, 0, FM_BAND_F64, 0, NULL};
  fm_err err;
  fm_err_clear(&err);
  band b;
  CHECK_OK(make_band(&x, &o, NULL, &b, &err), &err);
  const int64_t cols[] = {5, 9, 13};
  for (int c = 0; c < 3; c++) {
    const int64_t j = cols[c];
    for (int64_t k = b.colptr[j]; k < b.colptr[j + 1]; k++)
      CHECK(((double *)b.values)[k] == (b.rowidx[k] == j ? 1.0 : 0.0));
  }
  free_band(&b);
}

/* A sample mask: the band of the selected samples, as the oracle over them
 * (hardcalls and doubles, both rules, a threshold), bit-identical for
 * hardcalls to the band of a matrix holding only those samples, and
 * independent of the panel budget and the threads. */
static void test_sample_mask(void) {
  static uint64_t mask[(N + 63) / 64 + 1];
  static int32_t Gs[N * P];
  static uint8_t BEDS[P * ((N + 3) / 4)];
  uint64_t s = 99;
  int64_t ns = 0;
  memset(mask, 0, sizeof mask);
  for (int64_t i = 0; i < N; i++)
    if (fm_test_rng_next(&s) % 5 < 3 || i == 7) mask[i / 64] |= 1ULL << (i % 64);
  mask[(N - 1) / 64] |= ~0ULL << (N % 64); /* bits past the samples are ignored */
  for (int64_t j = 0; j < P; j++) {
    int64_t m = 0;
    for (int64_t i = 0; i < N; i++)
      if ((mask[i / 64] >> (i % 64)) & 1u) Gs[m++ + j * N] = G[i + j * N];
    ns = m;
  }
  for (int64_t j = 1; j < P; j++) memmove(Gs + j * ns, Gs + j * N, (size_t)ns * sizeof *Gs);
  fm_err err;
  fm_err_clear(&err);
  CHECK_OK(fm_codec_bed2_encode(Gs, ns, P, ns, BEDS, &err), &err);
  fm_mat xs;
  CHECK_OK(fm_mat_init(&xs, FM_CODEC_BED2, BEDS, ns, P, (ns + 3) / 4, &err), &err);
  OSEL = mask;
  for (int codec = 0; codec < 2; codec++)
    for (int rule = FM_LD_PAIRWISE; rule <= FM_LD_MEAN; rule++)
      for (int thr = 0; thr < 2; thr++) {
        fm_mat x = codec ? f64_mat() : bed_mat();
        fm_ld_opts o = {(fm_ld_missing)rule, thr ? 0.1 : 0, FM_BAND_F64, 0, mask};
        band b, ref;
        CHECK_OK(make_band(&x, &o, NULL, &b, &err), &err);
        check_band(&b, &o, 1e-13);
        if (!codec) {
          fm_ld_opts all = o;
          all.sample_mask = NULL;
          CHECK_OK(make_band(&xs, &all, NULL, &ref, &err), &err);
          CHECK(memcmp(b.colptr, ref.colptr, sizeof ref.colptr) == 0);
          CHECK(memcmp(b.values, ref.values, (size_t)ref.colptr[P] * 8) == 0);
          free_band(&ref);
        }
        for (int th = 1; th <= 3; th += 2) { /* chunks of 64 rows, one-column blocks */
          fm_ctl ctl;
          memset(&ctl, 0, sizeof ctl);
          ctl.panel_bytes = 1, ctl.threads = th;
          CHECK_OK(make_band(&x, &o, &ctl, &ref, &err), &err);
          CHECK(memcmp(b.colptr, ref.colptr, sizeof ref.colptr) == 0);
          for (int64_t k = 0; k < ref.colptr[P]; k++) {
            const double d = ((double *)b.values)[k] - ((double *)ref.values)[k];
            CHECK(codec ? fabs(d) <= 1e-13 : d == 0);
          }
          free_band(&ref);
        }
        free_band(&b);
      }
  OSEL = NULL;
}

static void test_errors(void) {
  fm_mat x = bed_mat();
  fm_err err;
  fm_err_clear(&err);
  int64_t count[P], bad[P];
  memcpy(bad, WIN, sizeof bad);
  bad[10] = 10; /* not after its variant */
  fm_ld_opts o = {FM_LD_PAIRWISE, 0, FM_BAND_F64, 0, NULL};
  CHECK(fm_stats_ld_count(&x, NULL, bad, &o, count, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "win_end[10]") != NULL);
  memcpy(bad, WIN, sizeof bad);
  bad[20] = WIN[19] - 1 > 20 ? WIN[19] - 1 : 21;
  if (bad[20] < WIN[19]) CHECK(fm_stats_ld_count(&x, NULL, bad, &o, count, NULL, &err) == FM_EARG);
  o.r2_min = 1.5;
  CHECK(fm_stats_ld_count(&x, NULL, WIN, &o, count, NULL, &err) == FM_EARG);
  o.r2_min = NAN;
  CHECK(fm_stats_ld_count(&x, NULL, WIN, &o, count, NULL, &err) == FM_EARG);
  o.r2_min = 0.1;
  /* a colptr for every pair of the window does not fit the thresholded band */
  int64_t colptr[P + 1];
  o.r2_min = 0;
  CHECK_OK(fm_stats_ld_count(&x, NULL, WIN, &o, count, NULL, &err), &err);
  colptr[0] = 0;
  for (int64_t j = 0; j < P; j++) colptr[j + 1] = colptr[j] + count[j];
  int32_t *ri = malloc((size_t)colptr[P] * 4);
  double *v = malloc((size_t)colptr[P] * 8);
  o.r2_min = 0.1;
  CHECK(fm_stats_ld_fill(&x, NULL, WIN, &o, colptr, ri, v, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "colptr") != NULL);
  free(ri), free(v);
}

int main(void) {
  make_data();
  FM_RUN(test_against_definition);
  FM_RUN(test_geometry_invariance);
  FM_RUN(test_col_index);
  FM_RUN(test_degenerate_columns);
  FM_RUN(test_sample_mask);
  FM_RUN(test_errors);
  FM_TEST_END();
}
