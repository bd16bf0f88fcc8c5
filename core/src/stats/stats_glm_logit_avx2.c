/* stats_glm_logit_avx2.c: the row kernels of stats_glm_logit.c
 * (stats_glm_logit_kern.h) for x86-64 CPUs with AVX2 and FMA. Only these
 * functions carry the target attribute (no global -mavx2), and
 * logit_kern_get hands them out only when fm_cpu_isa() says the CPU runs
 * them. Four doubles of a row per vector; the sums over rows keep the rows'
 * order, each product added with one rounding (FMA). Elsewhere this file
 * defines nothing. */
#include "stats_glm_logit_kern.h"

#if LOGIT_HAVE_AVX2
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define ATTR __attribute__((target("avx2,fma")))
#define INL __attribute__((target("avx2,fma"), always_inline)) static inline

/* Rows' sum of wx_ia x_i' for the four columns a0 ... a0 + 3 against the
 * nb vectors of x from vector bv0 (nb constant after inlining), into
 * info's lower triangle; with w not NULL, of wx_ia w_i x_i' (wx then is
 * xr itself). */
INL void cross_tile(int64_t m, int64_t k, int64_t kp, const double *xr, const double *wx,
                    const double *w, int64_t a0, int64_t bv0, int nb, double *info) {
  __m256d acc0[3], acc1[3], acc2[3], acc3[3];
#pragma GCC unroll 4
  for (int v = 0; v < nb; v++)
    acc0[v] = acc1[v] = acc2[v] = acc3[v] = _mm256_setzero_pd();
  const double *xp = xr + 4 * bv0, *wp = wx + a0;
  for (int64_t i = 0; i < m; i++, xp += kp, wp += kp) {
    const __m256d w0 = _mm256_broadcast_sd(wp), w1 = _mm256_broadcast_sd(wp + 1);
    const __m256d w2 = _mm256_broadcast_sd(wp + 2), w3 = _mm256_broadcast_sd(wp + 3);
    const __m256d wi = w ? _mm256_broadcast_sd(w + i) : _mm256_setzero_pd();
#pragma GCC unroll 4
    for (int v = 0; v < nb; v++) {
      const __m256d xv =
          w ? _mm256_mul_pd(wi, _mm256_loadu_pd(xp + 4 * v)) : _mm256_loadu_pd(xp + 4 * v);
      acc0[v] = _mm256_fmadd_pd(w0, xv, acc0[v]);
      acc1[v] = _mm256_fmadd_pd(w1, xv, acc1[v]);
      acc2[v] = _mm256_fmadd_pd(w2, xv, acc2[v]);
      acc3[v] = _mm256_fmadd_pd(w3, xv, acc3[v]);
    }
  }
  double t[4][12];
#pragma GCC unroll 4
  for (int v = 0; v < nb; v++) {
    _mm256_storeu_pd(t[0] + 4 * v, acc0[v]);
    _mm256_storeu_pd(t[1] + 4 * v, acc1[v]);
    _mm256_storeu_pd(t[2] + 4 * v, acc2[v]);
    _mm256_storeu_pd(t[3] + 4 * v, acc3[v]);
  }
  for (int a = 0; a < 4 && a0 + a < k; a++)
    for (int j = 0; j < 4 * nb; j++) {
      const int64_t b = 4 * bv0 + j;
      if (b >= a0 + a && b < k) info[(a0 + a) * k + b] = t[a][j];
    }
}

INL void cross_w(int64_t m, int64_t k, int64_t kp, const double *xr, const double *wx,
                 const double *w, double *info) {
  const int64_t nv = kp / 4;
  for (int64_t a0 = 0; a0 < k; a0 += 4)
    for (int64_t bv0 = a0 / 4; bv0 < nv; bv0 += 3) {
      const int nb = nv - bv0 < 3 ? (int)(nv - bv0) : 3;
      if (nb == 3)
        cross_tile(m, k, kp, xr, wx, w, a0, bv0, 3, info);
      else if (nb == 2)
        cross_tile(m, k, kp, xr, wx, w, a0, bv0, 2, info);
      else
        cross_tile(m, k, kp, xr, wx, w, a0, bv0, 1, info);
    }
}

ATTR static void cross_avx2(int64_t m, int64_t k, int64_t kp, const double *xr, const double *wx,
                            double *info) {
  cross_w(m, k, kp, xr, wx, NULL, info);
}

ATTR static void wcross_avx2(int64_t m, int64_t k, int64_t kp, const double *xr, const double *w,
                             double *info) {
  cross_w(m, k, kp, xr, xr, w, info);
}

INL double hsum(__m256d v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

/* score with nv = kp / 4 vectors a row (constant after inlining). */
INL void score_nv(int64_t m, int nv, const double *xr, const double *y, const double *p,
                  const double *w, const double *linvt, double *grad) {
  const int64_t kp = 4 * nv;
  __m256d g[4];
#pragma GCC unroll 4
  for (int v = 0; v < nv; v++) g[v] = _mm256_setzero_pd();
  for (int64_t i = 0; i < m; i++) {
    const double *xi = xr + i * kp;
    double r;
    if (linvt) {
      __m256d z[4];
#pragma GCC unroll 4
      for (int v = 0; v < nv; v++) z[v] = _mm256_setzero_pd();
#pragma GCC unroll 4
      for (int bv = 0; bv < nv; bv++)
#pragma GCC unroll 4
        for (int l = 0; l < 4; l++) {
          const int b = 4 * bv + l;
          const __m256d xb = _mm256_broadcast_sd(xi + b);
#pragma GCC unroll 4
          for (int v = bv; v < nv; v++)
            z[v] = _mm256_fmadd_pd(xb, _mm256_loadu_pd(linvt + b * kp + 4 * v), z[v]);
        }
      __m256d s = _mm256_mul_pd(z[0], z[0]);
#pragma GCC unroll 4
      for (int v = 1; v < nv; v++) s = _mm256_fmadd_pd(z[v], z[v], s);
      r = logit_firth_r(y[i], p[i], w[i], hsum(s));
    } else {
      r = y[i] - p[i];
    }
    const __m256d rv = _mm256_set1_pd(r);
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) g[v] = _mm256_fmadd_pd(rv, _mm256_loadu_pd(xi + 4 * v), g[v]);
  }
  for (int v = 0; v < nv; v++) _mm256_storeu_pd(grad + 4 * v, g[v]);
}

ATTR static void score_avx2(int64_t m, int64_t kp, const double *xr, const double *y,
                            const double *p, const double *w, const double *linvt, double *grad) {
  switch (kp / 4) {
  case 1: score_nv(m, 1, xr, y, p, w, linvt, grad); break;
  case 2: score_nv(m, 2, xr, y, p, w, linvt, grad); break;
  case 3: score_nv(m, 3, xr, y, p, w, linvt, grad); break;
  case 4: score_nv(m, 4, xr, y, p, w, linvt, grad); break;
  default: logit_kern_portable.score(m, kp, xr, y, p, w, linvt, grad); break;
  }
}

/* e^x for x <= 0, four at a time: x = n ln2 + r, |r| <= ln2/2, e^r by
 * its Taylor polynomial of degree 13 (truncation below 1e-17), scaled by
 * 2^n in two factors so that subnormal results come out too; x below -746
 * gives 0 as exp does. About 1 ulp against libm's correctly rounded exp. */
INL __m256d exp_neg(__m256d x) {
  x = _mm256_max_pd(x, _mm256_set1_pd(-746.0));
  const __m256d n = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634074)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(6.93147180369123816490e-01), x);
  r = _mm256_fnmadd_pd(n, _mm256_set1_pd(1.90821492927058770002e-10), r);
  static const double c[14] = {1.0,
                               1.0,
                               1.0 / 2,
                               1.0 / 6,
                               1.0 / 24,
                               1.0 / 120,
                               1.0 / 720,
                               1.0 / 5040,
                               1.0 / 40320,
                               1.0 / 362880,
                               1.0 / 3628800,
                               1.0 / 39916800,
                               1.0 / 479001600,
                               1.0 / 6227020800.0};
  /* Estrin's scheme: pairs c_j + c_j+1 r, then combined by r^2, r^4, r^8,
   * four multiply-adds deep instead of Horner's 13 (the loops that call
   * this are bound by its latency) */
  __m256d pr[7];
#pragma GCC unroll 7
  for (int j = 0; j < 7; j++)
    pr[j] = _mm256_fmadd_pd(_mm256_set1_pd(c[2 * j + 1]), r, _mm256_set1_pd(c[2 * j]));
  const __m256d r2 = _mm256_mul_pd(r, r), r4 = _mm256_mul_pd(r2, r2), r8 = _mm256_mul_pd(r4, r4);
  const __m256d q0 = _mm256_fmadd_pd(pr[1], r2, pr[0]), q1 = _mm256_fmadd_pd(pr[3], r2, pr[2]);
  const __m256d q2 = _mm256_fmadd_pd(pr[5], r2, pr[4]);
  const __m256d o0 = _mm256_fmadd_pd(q1, r4, q0), o1 = _mm256_fmadd_pd(pr[6], r4, q2);
  const __m256d s = _mm256_fmadd_pd(o1, r8, o0);
  /* 2^n = 2^n1 2^n2, n1 = floor(n / 2), both >= -539 */
  const __m128i ni = _mm256_cvtpd_epi32(n);
  const __m128i n1 = _mm_srai_epi32(ni, 1), n2 = _mm_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi64x(1023);
  const __m256d f1 = _mm256_castsi256_pd(
      _mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(n1), bias), 52));
  const __m256d f2 = _mm256_castsi256_pd(
      _mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(n2), bias), 52));
  return _mm256_mul_pd(_mm256_mul_pd(s, f1), f2);
}

/* The dot products of four rows (nv vectors each, row r at x4 + r 4 nv)
 * with beta (bv), one per lane. */
INL __m256d dot4(const double *x4, int nv, const __m256d *bv) {
  const int64_t kp = 4 * nv;
  __m256d s[4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; r++) {
    s[r] = _mm256_mul_pd(_mm256_loadu_pd(x4 + r * kp), bv[0]);
#pragma GCC unroll 4
    for (int v = 1; v < nv; v++)
      s[r] = _mm256_fmadd_pd(_mm256_loadu_pd(x4 + r * kp + 4 * v), bv[v], s[r]);
  }
  const __m256d h01 = _mm256_hadd_pd(s[0], s[1]), h23 = _mm256_hadd_pd(s[2], s[3]);
  return _mm256_add_pd(_mm256_permute2f128_pd(h01, h23, 0x20),
                       _mm256_permute2f128_pd(h01, h23, 0x31));
}

/* rows with nv = kp / 4 vectors a row, four rows at a time (constant nv
 * after inlining); the last rows of m % 4 come from a zero-padded copy. */
INL double rows_nv(int64_t m, int nv, const double *xr, const double *y, const double *beta,
                   double *p, double *w, double *wx) {
  const int64_t kp = 4 * nv;
  __m256d bv[4];
#pragma GCC unroll 4
  for (int v = 0; v < nv; v++) bv[v] = _mm256_loadu_pd(beta + 4 * v);
  __m256d sum = _mm256_setzero_pd(), logs = _mm256_setzero_pd(), prod = _mm256_set1_pd(1);
  const __m256d one = _mm256_set1_pd(1), zero = _mm256_setzero_pd();
  const __m256d sign = _mm256_set1_pd(-0.0);
  double tail[4 * 16] = {0}, ty[4] = {0}, tp[4], tw[4];
  for (int64_t i0 = 0; i0 < m; i0 += 4) {
    const double *x4 = xr + i0 * kp, *y4 = y + i0;
    const int full = i0 + 4 <= m;
    if (!full) {
      for (int64_t r = 0; r < m - i0; r++) {
        for (int64_t j = 0; j < kp; j++) tail[r * kp + j] = x4[r * kp + j];
        ty[r] = y4[r];
      }
      x4 = tail, y4 = ty;
    }
    const __m256d e = dot4(x4, nv, bv);
    const __m256d t = exp_neg(_mm256_or_pd(e, sign)); /* e^-|e| */
    const __m256d opt = _mm256_add_pd(one, t);
    const __m256d u = _mm256_div_pd(one, opt), tu = _mm256_mul_pd(t, u);
    const __m256d wv = _mm256_mul_pd(tu, u);
    const __m256d pv = _mm256_blendv_pd(tu, u, _mm256_cmp_pd(e, zero, _CMP_GE_OQ));
    const __m256d yv = _mm256_loadu_pd(y4);
    sum = _mm256_add_pd(sum, _mm256_sub_pd(_mm256_mul_pd(yv, e), _mm256_max_pd(e, zero)));
    if (!full) { /* the padding rows' factors are 1 + 1, their terms 0 */
      const __m256i lane = _mm256_set_epi64x(3, 2, 1, 0);
      const __m256d keep =
          _mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_set1_epi64x(m - i0), lane));
      prod = _mm256_mul_pd(prod, _mm256_blendv_pd(one, opt, keep));
    } else {
      prod = _mm256_mul_pd(prod, opt);
    }
    if ((i0 / 4 + 1) % (LOGIT_LOG_CHUNK / 4) == 0 || i0 + 4 >= m) {
      double pr[4];
      _mm256_storeu_pd(pr, prod);
      logs = _mm256_add_pd(logs, _mm256_set_pd(log(pr[3]), log(pr[2]), log(pr[1]), log(pr[0])));
      prod = one;
    }
    double *p4 = full ? p + i0 : tp, *w4 = full ? w + i0 : tw;
    _mm256_storeu_pd(p4, pv);
    _mm256_storeu_pd(w4, wv);
    const int64_t nr = full ? 4 : m - i0;
    for (int64_t r = 0; r < nr; r++) {
      const __m256d wr = _mm256_broadcast_sd(w4 + r);
#pragma GCC unroll 4
      for (int v = 0; v < nv; v++)
        _mm256_storeu_pd(wx + (i0 + r) * kp + 4 * v,
                         _mm256_mul_pd(wr, _mm256_loadu_pd(x4 + r * kp + 4 * v)));
      if (!full) p[i0 + r] = tp[r], w[i0 + r] = tw[r];
    }
  }
  return hsum(_mm256_sub_pd(sum, logs));
}

ATTR static double rows_avx2(int64_t m, int64_t kp, const double *xr, const double *y,
                             const double *beta, double *p, double *w, double *wx) {
  switch (kp / 4) {
  case 1: return rows_nv(m, 1, xr, y, beta, p, w, wx);
  case 2: return rows_nv(m, 2, xr, y, beta, p, w, wx);
  case 3: return rows_nv(m, 3, xr, y, beta, p, w, wx);
  case 4: return rows_nv(m, 4, xr, y, beta, p, w, wx);
  default: return logit_kern_portable.rows(m, kp, xr, y, beta, p, w, wx);
  }
}

/* acc += sum_i f_i c_i over m rows of c (nv vectors each, constant after
 * inlining), in two sets of sums, even and odd rows, added at the end: a
 * single chain of dependent multiply-adds would wait on each one's
 * latency. */
INL void rows_axpy(int64_t m, int nv, const double *c, const double *f, __m256d *acc) {
  const int64_t kp = 4 * nv;
  __m256d a0[4], a1[4];
#pragma GCC unroll 4
  for (int v = 0; v < nv; v++) a0[v] = acc[v], a1[v] = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 2 <= m; i += 2, c += 2 * kp) {
    const __m256d f0 = _mm256_broadcast_sd(f + i), f1 = _mm256_broadcast_sd(f + i + 1);
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) {
      a0[v] = _mm256_fmadd_pd(f0, _mm256_loadu_pd(c + 4 * v), a0[v]);
      a1[v] = _mm256_fmadd_pd(f1, _mm256_loadu_pd(c + kp + 4 * v), a1[v]);
    }
  }
  if (i < m) {
    const __m256d f0 = _mm256_broadcast_sd(f + i);
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) a0[v] = _mm256_fmadd_pd(f0, _mm256_loadu_pd(c + 4 * v), a0[v]);
  }
#pragma GCC unroll 4
  for (int v = 0; v < nv; v++) acc[v] = _mm256_add_pd(a0[v], a1[v]);
}

/* Rows per chunk of pass_nv: its covariate rows (at most 16 doubles each)
 * stay in L1 between the chunk's two loops. */
#define PASS_CHUNK 256

/* pass with nv = qp / 4 vectors a covariate row, in chunks of rows, each
 * in two loops: the first, four rows at a time (a lane per row), computes
 * eta, p, w and the residual, the second sums the rows' multiples into
 * C'r, C'(w x) (and C'x). The first loop's iterations are independent, so
 * the vector exp's latency overlaps. A row whose x is NaN (the padding of
 * the last n % 4 rows too) is masked out of every sum. */
INL double pass_nv(int64_t n, int nv, const double *cr, const double *x, const double *y,
                   const double *beta, double *w, double *acc, double *cx) {
  const int64_t qp = 4 * nv;
  __m256d bv[4], gc[4], bc[4], xc[4];
#pragma GCC unroll 4
  for (int v = 0; v < nv; v++) {
    bv[v] = _mm256_loadu_pd(beta + 4 * v);
    gc[v] = bc[v] = xc[v] = _mm256_setzero_pd();
  }
  const __m256d bx = _mm256_set1_pd(beta[qp]);
  const __m256d one = _mm256_set1_pd(1), zero = _mm256_setzero_pd();
  const __m256d sign = _mm256_set1_pd(-0.0);
  __m256d sum = zero, logs = zero, prod = one, gx = zero, dxx = zero;
  double tail[4 * 16] = {0}, tx[4], ty[4] = {0};
  double ra[PASS_CHUNK], wa[PASS_CHUNK], xa[PASS_CHUNK], wt[PASS_CHUNK];
  for (int64_t j0 = 0; j0 < n; j0 += PASS_CHUNK) {
    const int64_t nc = n - j0 < PASS_CHUNK ? n - j0 : PASS_CHUNK;
    for (int64_t i = 0; i < nc; i += 4) {
      const int64_t i0 = j0 + i;
      const double *c4 = cr + i0 * qp, *x4 = x + i0, *y4 = y + i0;
      if (i0 + 4 > n) {
        for (int64_t r = 0; r < 4; r++) {
          const int in = r < n - i0;
          for (int64_t j = 0; j < qp; j++) tail[r * qp + j] = in ? c4[r * qp + j] : 0;
          tx[r] = in ? x4[r] : NAN;
          ty[r] = in ? y4[r] : 0;
        }
        c4 = tail, x4 = tx, y4 = ty;
      }
      const __m256d xv = _mm256_loadu_pd(x4);
      const __m256d keep = _mm256_cmp_pd(xv, xv, _CMP_ORD_Q);
      const __m256d xz = _mm256_and_pd(xv, keep);
      const __m256d e = _mm256_fmadd_pd(xz, bx, dot4(c4, nv, bv));
      const __m256d t = exp_neg(_mm256_or_pd(e, sign)); /* e^-|e| */
      const __m256d opt = _mm256_add_pd(one, t);
      const __m256d u = _mm256_div_pd(one, opt), tu = _mm256_mul_pd(t, u);
      const __m256d wv = _mm256_and_pd(_mm256_mul_pd(tu, u), keep);
      const __m256d pv = _mm256_blendv_pd(tu, u, _mm256_cmp_pd(e, zero, _CMP_GE_OQ));
      const __m256d yv = _mm256_loadu_pd(y4);
      sum = _mm256_add_pd(
          sum, _mm256_and_pd(_mm256_sub_pd(_mm256_mul_pd(yv, e), _mm256_max_pd(e, zero)), keep));
      prod = _mm256_mul_pd(prod, _mm256_blendv_pd(one, opt, keep));
      if ((i0 / 4 + 1) % (LOGIT_LOG_CHUNK / 4) == 0 || i0 + 4 >= n) {
        double pr[4];
        _mm256_storeu_pd(pr, prod);
        logs = _mm256_add_pd(logs, _mm256_set_pd(log(pr[3]), log(pr[2]), log(pr[1]), log(pr[0])));
        prod = one;
      }
      const __m256d rv = _mm256_and_pd(_mm256_sub_pd(yv, pv), keep);
      const __m256d wxv = _mm256_mul_pd(wv, xz);
      gx = _mm256_fmadd_pd(rv, xz, gx);
      dxx = _mm256_fmadd_pd(wxv, xz, dxx);
      _mm256_storeu_pd(ra + i, rv);
      _mm256_storeu_pd(wa + i, wxv);
      _mm256_storeu_pd(xa + i, xz);
      _mm256_storeu_pd(wt + i, wv);
    }
    memcpy(w + j0, wt, (size_t)nc * sizeof *w);
    const double *c = cr + j0 * qp;
    rows_axpy(nc, nv, c, ra, gc);
    rows_axpy(nc, nv, c, wa, bc);
    if (cx) rows_axpy(nc, nv, c, xa, xc);
  }
  for (int v = 0; v < nv; v++) {
    _mm256_storeu_pd(acc + 4 * v, gc[v]);
    _mm256_storeu_pd(acc + qp + 4 * v, bc[v]);
    if (cx) _mm256_storeu_pd(cx + 4 * v, xc[v]);
  }
  acc[2 * qp] = hsum(gx);
  acc[2 * qp + 1] = hsum(dxx);
  return hsum(_mm256_sub_pd(sum, logs));
}

/* start with nv = qp / 4 vectors a covariate row, in chunks as pass_nv. */
INL void start_nv(int64_t n, int nv, const double *cr, const double *x, const double *w0,
                  const double *r0, double *w, double *acc, double *cx) {
  const int64_t qp = 4 * nv;
  __m256d bc[4], xc[4];
#pragma GCC unroll 4
  for (int v = 0; v < nv; v++) bc[v] = xc[v] = _mm256_setzero_pd();
  __m256d gx = _mm256_setzero_pd(), dxx = _mm256_setzero_pd();
  double wa[PASS_CHUNK], xa[PASS_CHUNK], tx[4], tw[4], tr[4];
  for (int64_t j0 = 0; j0 < n; j0 += PASS_CHUNK) {
    const int64_t nc = n - j0 < PASS_CHUNK ? n - j0 : PASS_CHUNK;
    for (int64_t i = 0; i < nc; i += 4) {
      const int64_t i0 = j0 + i;
      const double *x4 = x + i0, *w4 = w0 + i0, *r4 = r0 + i0;
      if (i0 + 4 > n) {
        for (int64_t r = 0; r < 4; r++) {
          const int in = r < n - i0;
          tx[r] = in ? x4[r] : NAN;
          tw[r] = in ? w4[r] : 0;
          tr[r] = in ? r4[r] : 0;
        }
        x4 = tx, w4 = tw, r4 = tr;
      }
      const __m256d xv = _mm256_loadu_pd(x4);
      const __m256d keep = _mm256_cmp_pd(xv, xv, _CMP_ORD_Q);
      const __m256d xz = _mm256_and_pd(xv, keep);
      const __m256d wv = _mm256_and_pd(_mm256_loadu_pd(w4), keep);
      const __m256d wxv = _mm256_mul_pd(wv, xz);
      gx = _mm256_fmadd_pd(_mm256_loadu_pd(r4), xz, gx);
      dxx = _mm256_fmadd_pd(wxv, xz, dxx);
      _mm256_storeu_pd(wa + i, wxv);
      _mm256_storeu_pd(xa + i, xz);
      if (i0 + 4 <= n) {
        _mm256_storeu_pd(w + i0, wv);
      } else {
        _mm256_storeu_pd(tw, wv);
        for (int64_t r = 0; r < n - i0; r++) w[i0 + r] = tw[r];
      }
    }
    rows_axpy(nc, nv, cr + j0 * qp, wa, bc);
    rows_axpy(nc, nv, cr + j0 * qp, xa, xc);
  }
  for (int v = 0; v < nv; v++) {
    _mm256_storeu_pd(acc + qp + 4 * v, bc[v]);
    _mm256_storeu_pd(cx + 4 * v, xc[v]);
  }
  acc[2 * qp] = hsum(gx);
  acc[2 * qp + 1] = hsum(dxx);
}

ATTR static void start_avx2(int64_t n, int64_t qp, const double *cr, const double *x,
                            const double *w0, const double *r0, double *w, double *acc,
                            double *cx) {
  switch (qp / 4) {
  case 1: start_nv(n, 1, cr, x, w0, r0, w, acc, cx); break;
  case 2: start_nv(n, 2, cr, x, w0, r0, w, acc, cx); break;
  case 3: start_nv(n, 3, cr, x, w0, r0, w, acc, cx); break;
  case 4: start_nv(n, 4, cr, x, w0, r0, w, acc, cx); break;
  default: logit_kern_portable.start(n, qp, cr, x, w0, r0, w, acc, cx); break;
  }
}

ATTR static double pass_avx2(int64_t n, int64_t qp, const double *cr, const double *x,
                             const double *y, const double *beta, double *w, double *acc,
                             double *cx) {
  switch (qp / 4) {
  case 1: return pass_nv(n, 1, cr, x, y, beta, w, acc, cx);
  case 2: return pass_nv(n, 2, cr, x, y, beta, w, acc, cx);
  case 3: return pass_nv(n, 3, cr, x, y, beta, w, acc, cx);
  case 4: return pass_nv(n, 4, cr, x, y, beta, w, acc, cx);
  default: return logit_kern_portable.pass(n, qp, cr, x, y, beta, w, acc, cx);
  }
}

const logit_kern logit_kern_avx2 = {rows_avx2, cross_avx2, wcross_avx2,
                                    score_avx2, pass_avx2,  start_avx2};
#else
typedef int logit_avx2_unused; /* ISO C: no empty translation unit */
#endif
