/* Tests for fm_stats_clump (generated data only).
 * Oracles: clumping and pruning written directly on a dense r^2 matrix
 * (every pair, no band), the band under test built from the same matrix
 * (f64 r, f32 r, f64 r^2, and with the pairs below a threshold left out);
 * the haplotype r^2 against the likelihood maximised over a fine grid and
 * against exact frequencies when no genotype is ambiguous. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_band.h"
#include "fm/fm_base.h"
#include "fm/fm_stats_clump.h"
#include "fm_test.h"
#include "fm_test_band.h"

/* Correlations of m samples x n generated genotype columns, each a noisy
 * copy of its left neighbour (so that neighbours are in LD), one constant. */
static double *gen_corr(int64_t m, int64_t n, uint64_t seed, double *maf, uint8_t *constant) {
  double *X = malloc((size_t)(m * n) * sizeof *X);
  for (int64_t j = 0; j < n; j++)
    for (int64_t s = 0; s < m; s++) {
      if (j == 3) X[s + j * m] = 1;
      else if (j > 0 && j != 4 && fm_test_rng_unif(&seed) < 0.8) X[s + j * m] = X[s + (j - 1) * m];
      else X[s + j * m] = (double)(fm_test_rng_next(&seed) % 3);
    }
  double *D = malloc((size_t)(n * n) * sizeof *D);
  double *mu = calloc((size_t)n, sizeof *mu), *sd = calloc((size_t)n, sizeof *sd);
  for (int64_t j = 0; j < n; j++) {
    for (int64_t s = 0; s < m; s++) mu[j] += X[s + j * m];
    mu[j] /= (double)m;
    for (int64_t s = 0; s < m; s++) sd[j] += (X[s + j * m] - mu[j]) * (X[s + j * m] - mu[j]);
    sd[j] = sqrt(sd[j]);
    const double af = mu[j] / 2;
    maf[j] = af < 0.5 ? af : 1 - af;
    constant[j] = sd[j] == 0;
  }
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      double c = 0;
      for (int64_t s = 0; s < m; s++) c += (X[s + i * m] - mu[i]) * (X[s + j * m] - mu[j]);
      D[i + j * n] = i == j ? 1 : (sd[i] > 0 && sd[j] > 0 ? c / (sd[i] * sd[j]) : 0);
    }
  free(X);
  free(mu);
  free(sd);
  return D;
}

/* Clumping as the header states it, on the dense matrix: clump_out, the
 * index variants in order and their 6 counts (rows of 6 here). */
static int64_t ref_clump(const double *D, int64_t n, const double *p, const int32_t *chr,
                         const double *pos, const fm_clump_opts *o, int32_t *out,
                         int64_t *index, int32_t (*counts)[6]) {
  int64_t n_index = 0;
  for (int64_t j = 0; j < n; j++) out[j] = -1;
  for (;;) {
    int64_t best = -1; /* the smallest p (then first) unclaimed candidate */
    for (int64_t j = 0; j < n; j++)
      if (out[j] < 0 && p[j] <= o->p1 && (best < 0 || p[j] < p[best])) best = j;
    if (best < 0) break;
    out[best] = (int32_t)best;
    index[n_index] = best;
    int32_t *cnt = counts[n_index++];
    memset(cnt, 0, 6 * sizeof *cnt);
    for (int64_t j = 0; j < n; j++) {
      const double r = D[best + j * n];
      if (j == best || isnan(p[j]) || chr[j] != chr[best] ||
          fabs(pos[j] - pos[best]) > o->window_bp || r * r < o->r2)
        continue;
      if (p[j] <= o->p2 && out[j] >= 0) continue;
      if (p[j] <= o->p2) out[j] = (int32_t)best;
      cnt[0]++;
      cnt[p[j] > 0.05 ? 1 : p[j] > 0.01 ? 2 : p[j] > 0.001 ? 3 : p[j] > 1e-4 ? 4 : 5]++;
    }
  }
  return n_index;
}

static void ref_prune(const double *D, int64_t n, const double *maf, const int32_t *chr,
                      const int64_t *win_end, int64_t step, double r2, const uint8_t *cst,
                      uint8_t *keep) {
  for (int64_t j = 0; j < n; j++) keep[j] = 1;
  for (int64_t c0 = 0; c0 < n;) {
    int64_t c1 = c0;
    while (c1 < n && chr[c1] == chr[c0]) c1++;
    for (int64_t s = c0; s < c1; s += step) {
      const int64_t e = win_end[s];
      for (int64_t i = s; i < e && e - s >= 2; i++)
        if (cst[i]) keep[i] = 0;
      for (int64_t i = s; i < e; i++)
        for (int64_t j = i + 1; keep[i] && j < e; j++) {
          const double r = D[i + j * n];
          if (!keep[j] || !(r * r > r2)) continue;
          if (maf[i] < maf[j]) keep[i] = 0;
          else keep[j] = 0;
        }
      if (e == c1) break;
    }
    c0 = c1;
  }
}

enum { M = 120, N = 40 };

static void test_clump_matches_reference(void) {
  double maf[N];
  uint8_t cst[N];
  double *D = gen_corr(M, N, 7, maf, cst);
  double p[N], pos[N];
  int32_t chr[N];
  uint64_t seed = 99;
  for (int64_t j = 0; j < N; j++) {
    p[j] = fm_test_rng_unif(&seed) * (j % 3 ? 0.02 : 0.2);
    chr[j] = j < 25 ? 1 : 2;
    pos[j] = 1000.0 * (double)j;
  }
  p[5] = p[9]; /* a tie: variant order decides */
  p[12] = NAN;
  const fm_clump_opts opts[] = {{0.01, 0.02, 0.3, 5000}, {0.005, 0.01, 0.1, 2500},
                                {0.02, 0.02, 0.0, 100000}, {1, 1, 1, 0}};
  for (size_t q = 0; q < sizeof opts / sizeof opts[0]; q++) {
    int32_t want[N], got[N], want_cnt[N][6], got_cnt[6 * N];
    int64_t want_idx[N], got_idx[N];
    const int64_t nw = ref_clump(D, N, p, chr, pos, &opts[q], want, want_idx, want_cnt);
    int64_t n_cand = 0;
    for (int64_t j = 0; j < N; j++) n_cand += p[j] <= opts[q].p1;
    for (int v = 0; v < 4; v++) {
      test_band t;
      const int square = v == 2;
      band_make(&t, D, N, v == 3 ? 6 : N, v == 3 ? 0.05 : 0, square,
                v == 1 ? FM_BAND_F32 : FM_BAND_F64);
      int64_t ng = -1;
      fm_err err;
      CHECK_OK(fm_stats_clump(&t.b, square, p, chr, pos, &opts[q], got, got_idx, got_cnt, &ng,
                              NULL, &err), &err);
      if (v == 3 && opts[q].window_bp > 5000) {
        band_free(&t);
        continue; /* the narrow band lacks pairs the window asks for */
      }
      CHECK(ng == nw);
      CHECK(memcmp(got, want, sizeof want) == 0);
      for (int64_t c = 0; c < nw && ng == nw; c++) {
        CHECK(got_idx[c] == want_idx[c]);
        for (int k = 0; k < 6; k++) CHECK(got_cnt[c + k * n_cand] == want_cnt[c][k]);
      }
      band_free(&t);
    }
  }
  free(D);
}

static void test_clump_toy_by_hand(void) {
  /* 4 variants: 0 and 1 in LD (r = 0.9), 2 weakly with 1 (r = 0.5), 3 far */
  const double D[16] = {1, 0.9, 0, 0, 0.9, 1, 0.5, 0, 0, 0.5, 1, 0, 0, 0, 0, 1};
  const double p[4] = {1e-3, 1e-6, 1e-5, 1e-3};
  const int32_t chr[4] = {1, 1, 1, 1};
  const double pos[4] = {0, 100, 200, 1e6};
  test_band t;
  band_make(&t, D, 4, 4, 0, 0, FM_BAND_F64);
  int32_t got[4], cnt[24];
  int64_t ng = 0, idx[4];
  fm_err err;
  fm_clump_opts o = {1e-2, 1e-2, 0.5, 250e3};
  CHECK_OK(fm_stats_clump(&t.b, 0, p, chr, pos, &o, got, idx, cnt, &ng, NULL, &err), &err);
  /* 1 is the strongest: claims 0 (0.81); 2 (0.25) is its own; 3 too far */
  CHECK(ng == 3 && got[0] == 1 && got[1] == 1 && got[2] == 2 && got[3] == 3);
  /* clumps in p order: 1 (p 1e-6), 2, 3; 1 counts 0 (p 1e-3: bin S001) */
  CHECK(idx[0] == 1 && idx[1] == 2 && idx[2] == 3);
  CHECK(cnt[0] == 1 && cnt[4 * 4] == 1 && cnt[1] == 0 && cnt[2] == 0);
  o.r2 = 0.2; /* now 1 also claims 2 */
  CHECK_OK(fm_stats_clump(&t.b, 0, p, chr, pos, &o, got, idx, cnt, &ng, NULL, &err), &err);
  CHECK(ng == 2 && got[2] == 1);
  o.p1 = o.p2 = 1e-4; /* 0 and 3 (p 1e-3) now take part in no clump */
  CHECK_OK(fm_stats_clump(&t.b, 0, p, chr, pos, &o, got, idx, cnt, &ng, NULL, &err), &err);
  CHECK(ng == 1 && got[0] == -1 && got[1] == 1 && got[2] == 1 && got[3] == -1);
  /* 0 (p 1e-3 > p2, r^2 0.81) is counted though not claimed, as plink does */
  CHECK(cnt[0] == 2 && cnt[2 * 2] == 0 && cnt[4 * 2] == 1 && cnt[5 * 2] == 1);
  /* bad input */
  o.p1 = 0;
  CHECK(fm_stats_clump(&t.b, 0, p, chr, pos, &o, got, idx, cnt, &ng, NULL, &err) == FM_EARG);
  o = (fm_clump_opts){1e-2, 1e-3, 0.5, 1};
  CHECK(fm_stats_clump(&t.b, 0, p, chr, pos, &o, got, idx, cnt, &ng, NULL, &err) == FM_EARG);
  o = (fm_clump_opts){1e-2, 1e-2, 0.5, 1};
  const double bad_p[4] = {2, 0, 0, 0};
  CHECK(fm_stats_clump(&t.b, 0, bad_p, chr, pos, &o, got, idx, cnt, &ng, NULL, &err) == FM_EARG);
  t.rowidx[1] = 7;
  CHECK(fm_stats_clump(&t.b, 0, p, chr, pos, &o, got, idx, cnt, &ng, NULL, &err) == FM_EARG);
  band_free(&t);
  fm_band empty = {0, NULL, NULL, NULL, FM_BAND_F64};
  CHECK_OK(fm_stats_clump(&empty, 0, NULL, NULL, NULL, &o, NULL, NULL, NULL, &ng, NULL, &err),
           &err);
  CHECK(ng == 0);
}

static void test_prune_matches_reference(void) {
  double maf[N];
  uint8_t cst[N];
  double *D = gen_corr(M, N, 11, maf, cst);
  CHECK(cst[3]);
  int32_t chr[N];
  for (int64_t j = 0; j < N; j++) chr[j] = j < 17 ? 1 : 2;
  const int64_t widths[] = {1, 2, 5, 10, 50};
  const int64_t steps[] = {1, 2, 5};
  const double thr[] = {0.05, 0.2, 0.5};
  for (size_t a = 0; a < 5; a++)
    for (size_t s = 0; s < 3; s++)
      for (size_t r = 0; r < 3; r++) {
        int64_t win_end[N];
        for (int64_t j = 0; j < N; j++) {
          const int64_t ce = j < 17 ? 17 : N;
          win_end[j] = j + widths[a] < ce ? j + widths[a] : ce;
        }
        uint8_t want[N], got[N];
        ref_prune(D, N, maf, chr, win_end, steps[s], thr[r], cst, want);
        for (int v = 0; v < 3; v++) {
          test_band t;
          /* v 2: only the pairs above the threshold are stored */
          band_make(&t, D, N, N, v == 2 ? thr[r] : 0, v == 1, FM_BAND_F64);
          int64_t nk = -1;
          fm_err err;
          CHECK_OK(fm_stats_prune(&t.b, v == 1, maf, chr, win_end, steps[s], thr[r], cst, got,
                                  &nk, NULL, &err), &err);
          CHECK(memcmp(got, want, sizeof want) == 0);
          int64_t k = 0;
          for (int64_t j = 0; j < N; j++) k += want[j];
          CHECK(nk == k);
          band_free(&t);
        }
      }
  free(D);
}

static void test_prune_toy_and_errors(void) {
  /* 0-1 r^2 0.81: the lower MAF (1) goes; 2 constant goes; 3 stays */
  const double D[16] = {1, 0.9, 0, 0, 0.9, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  const double maf[4] = {0.3, 0.2, 0, 0.4};
  const int32_t chr[4] = {1, 1, 1, 1};
  const uint8_t cst[4] = {0, 0, 1, 0};
  int64_t win_end[4] = {2, 3, 4, 4};
  test_band t;
  band_make(&t, D, 4, 4, 0, 0, FM_BAND_F64);
  uint8_t keep[4];
  int64_t nk = 0;
  fm_err err;
  CHECK_OK(fm_stats_prune(&t.b, 0, maf, chr, win_end, 1, 0.5, cst, keep, &nk, NULL, &err), &err);
  CHECK(nk == 2 && keep[0] && !keep[1] && !keep[2] && keep[3]);
  /* windows of one variant each: nothing is compared, the constant stays */
  const int64_t alone[4] = {1, 2, 3, 4};
  CHECK_OK(fm_stats_prune(&t.b, 0, maf, chr, alone, 1, 0.5, cst, keep, &nk, NULL, &err), &err);
  CHECK(nk == 4);
  CHECK(fm_stats_prune(&t.b, 0, maf, chr, win_end, 0, 0.5, cst, keep, &nk, NULL, &err) == FM_EARG);
  CHECK(fm_stats_prune(&t.b, 0, maf, chr, win_end, 1, 1.5, cst, keep, &nk, NULL, &err) == FM_EARG);
  win_end[1] = 1;
  CHECK(fm_stats_prune(&t.b, 0, maf, chr, win_end, 1, 0.5, cst, keep, &nk, NULL, &err) == FM_EARG);
  win_end[1] = 3;
  const int32_t split[4] = {1, 2, 1, 2};
  CHECK(fm_stats_prune(&t.b, 0, maf, split, win_end, 1, 0.5, cst, keep, &nk, NULL, &err) ==
        FM_EARG);
  band_free(&t);
}

/* Likelihood of f_AB given a 3 x 3 genotype table, for the grid oracle. */
static double grid_r2(double t[3][3]) {
  double n = 0;
  for (int u = 0; u < 3; u++)
    for (int v = 0; v < 3; v++) n += t[u][v];
  const double N = 2 * n;
  const double x0 = 2 * t[2][2] + t[2][1] + t[1][2], x1 = 2 * t[2][0] + t[2][1] + t[1][0];
  const double x2 = 2 * t[0][2] + t[0][1] + t[1][2], x3 = 2 * t[0][0] + t[0][1] + t[1][0];
  const double h = t[1][1], pa = (x0 + x1 + h) / N, pb = (x0 + x2 + h) / N;
  double best = -INFINITY, fbest = 0;
  for (int g = 0; g <= 200000; g++) {
    const double f = (x0 + h * g / 200000.0) / N;
    const double f1 = pa - f, f2 = pb - f, f3 = 1 - pa - pb + f;
    if (f1 < 0 || f2 < 0 || f3 < 0) continue;
    const double ll = (x0 ? x0 * log(f) : 0) + (x1 ? x1 * log(f1) : 0) +
                      (x2 ? x2 * log(f2) : 0) + (x3 ? x3 * log(f3) : 0) +
                      (h ? h * log(f * f3 + f1 * f2) : 0);
    if (ll > best) {
      best = ll;
      fbest = f;
    }
  }
  const double d = fbest - pa * pb;
  return d * d / (pa * (1 - pa) * pb * (1 - pb));
}

static void test_hap_r2(void) {
  enum { S = 300, K = 6 };
  uint64_t seed = 5;
  double ga[S], G[S * K];
  /* haplotype pairs drawn with LD, then unphased */
  for (int s = 0; s < S; s++) {
    int a = 0, bsum[K] = {0};
    for (int hh = 0; hh < 2; hh++) {
      const int al = fm_test_rng_unif(&seed) < 0.4;
      a += al;
      for (int c = 0; c < K; c++) {
        const double keep = 0.15 * c;
        bsum[c] += fm_test_rng_unif(&seed) < keep ? (fm_test_rng_unif(&seed) < 0.3) : al;
      }
    }
    ga[s] = a;
    for (int c = 0; c < K; c++) G[s + c * S] = bsum[c];
  }
  ga[7] = NAN;
  G[9 + 2 * S] = NAN;
  double r2[K];
  fm_err err;
  CHECK_OK(fm_stats_ld_hap_r2(ga, G, S, K, S, r2, &err), &err);
  for (int c = 0; c < K; c++) {
    double t[3][3] = {{0}};
    for (int s = 0; s < S; s++)
      if (!isnan(ga[s]) && !isnan(G[s + c * S])) t[(int)ga[s]][(int)G[s + c * S]] += 1;
    CHECK(fabs(r2[c] - grid_r2(t)) < 1e-4);
    CHECK(r2[c] >= 0 && r2[c] <= 1);
  }
  CHECK(fabs(r2[0] - 1) < 1e-12); /* column 0 copies variant a */
  /* no double heterozygote: frequencies are counted, r^2 exact */
  const double a2[4] = {0, 2, 0, 2}, b2[4] = {0, 2, 2, 0};
  CHECK_OK(fm_stats_ld_hap_r2(a2, b2, 4, 1, 4, r2, &err), &err);
  CHECK(fabs(r2[0]) < 1e-15);
  const double c2[4] = {0, 0, 0, 0}; /* monomorphic */
  CHECK_OK(fm_stats_ld_hap_r2(a2, c2, 4, 1, 4, r2, &err), &err);
  CHECK(r2[0] == 0);
  /* a maximum on the boundary (no aa/bb haplotype class: f_ab = 0), where
   * rounding must not turn a frequency negative */
  {
    const double tab[3][3] = {{0, 0, 385}, {0, 409, 116}, {141, 57, 18}};
    double *ta = malloc(1126 * sizeof *ta), *tb = malloc(1126 * sizeof *tb);
    int s = 0;
    for (int u = 0; u < 3; u++)
      for (int v = 0; v < 3; v++)
        for (int c = 0; c < (int)tab[u][v]; c++, s++) {
          ta[s] = u;
          tb[s] = v;
        }
    CHECK(s == 1126);
    double tt[3][3];
    memcpy(tt, tab, sizeof tt);
    CHECK_OK(fm_stats_ld_hap_r2(ta, tb, s, 1, s, r2, &err), &err);
    CHECK(fabs(r2[0] - grid_r2(tt)) < 1e-4);
    CHECK(fabs(r2[0] - 0.672995) < 1e-5); /* plink 1.9 --r2 dprime's R2 of these counts */
    free(ta);
    free(tb);
  }
  const double bad[4] = {0, 0.5, 0, 0};
  CHECK(fm_stats_ld_hap_r2(a2, bad, 4, 1, 4, r2, &err) == FM_EARG);
  CHECK(fm_stats_ld_hap_r2(a2, b2, 4, 1, 3, r2, &err) == FM_EARG);
}

int main(void) {
  FM_RUN(test_clump_matches_reference);
  FM_RUN(test_clump_toy_by_hand);
  FM_RUN(test_prune_matches_reference);
  FM_RUN(test_prune_toy_and_errors);
  FM_RUN(test_hap_r2);
  FM_TEST_END();
}
