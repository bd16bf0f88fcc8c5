/* stats_glm_logit_kern.c: the portable row kernels of stats_glm_logit.c
 * (stats_glm_logit_kern.h) and the choice of a level's kernels. */
#include "stats_glm_logit_kern.h"

#include <math.h>

#include "fm/fm_cpu.h"

/* x_i'beta over kp values (a multiple of 4), in four interleaved sums. */
static double row_dot(int64_t kp, const double *xi, const double *beta) {
  double e0 = 0, e1 = 0, e2 = 0, e3 = 0;
  for (int64_t j = 0; j < kp; j += 4) {
    e0 += beta[j] * xi[j];
    e1 += beta[j + 1] * xi[j + 1];
    e2 += beta[j + 2] * xi[j + 2];
    e3 += beta[j + 3] * xi[j + 3];
  }
  return (e0 + e1) + (e2 + e3);
}

static double rows_portable(int64_t m, int64_t kp, const double *xr, const double *y,
                            const double *beta, double *p, double *w, double *wx) {
  double sum = 0, logs = 0, prod = 1;
  for (int64_t i = 0; i < m; i++) {
    const double *xi = xr + i * kp;
    const double e = row_dot(kp, xi, beta);
    const double t = exp(-fabs(e)), u = 1 / (1 + t), wi = t * u * u;
    sum += y[i] * e - fmax(e, 0);
    prod *= 1 + t;
    if ((i + 1) % LOGIT_LOG_CHUNK == 0) logs += log(prod), prod = 1;
    p[i] = e >= 0 ? u : t * u;
    w[i] = wi;
    double *wxi = wx + i * kp;
    for (int64_t j = 0; j < kp; j++) wxi[j] = wi * xi[j];
  }
  return sum - (logs + log(prod));
}

/* In tiles of 2 x 4 entries whose eight sums stay in registers over all
 * rows (each sum runs over the rows in order, as the header requires); a
 * tile reaching above the diagonal computes a few entries it does not store. */
static void cross_portable(int64_t m, int64_t k, int64_t kp, const double *xr, const double *wx,
                           double *info) {
  for (int64_t a = 0; a < k; a += 2) {
    const int64_t a2 = a + 1 < k ? 2 : 1;
    for (int64_t b = a - a % 4; b < k; b += 4) { /* kp >= b + 4: rows are padded */
      double s[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
      for (int64_t i = 0; i < m; i++) {
        const double *xi = xr + i * kp + b, *wi = wx + i * kp + a;
        const double w0 = wi[0], w1 = a2 > 1 ? wi[1] : 0;
        s[0][0] += w0 * xi[0], s[0][1] += w0 * xi[1], s[0][2] += w0 * xi[2], s[0][3] += w0 * xi[3];
        s[1][0] += w1 * xi[0], s[1][1] += w1 * xi[1], s[1][2] += w1 * xi[2], s[1][3] += w1 * xi[3];
      }
      for (int64_t r = 0; r < a2; r++)
        for (int64_t c = 0; c < 4 && b + c < k; c++)
          if (b + c >= a + r) info[(a + r) * k + b + c] = s[r][c];
    }
  }
}

/* cross with wx_i = w_i x_i: row by row into the triangle. */
static void wcross_portable(int64_t m, int64_t k, int64_t kp, const double *xr, const double *w,
                            double *info) {
  for (int64_t a = 0; a < k; a++)
    for (int64_t b = a; b < k; b++) info[a * k + b] = 0;
  for (int64_t i = 0; i < m; i++) {
    const double *xi = xr + i * kp;
    for (int64_t a = 0; a < k; a++) {
      const double wa = w[i] * xi[a];
      for (int64_t b = a; b < k; b++) info[a * k + b] += wa * xi[b];
    }
  }
}

static void score_portable(int64_t m, int64_t kp, const double *xr, const double *y,
                           const double *p, const double *w, const double *linvt, double *grad) {
  for (int64_t j = 0; j < kp; j++) grad[j] = 0;
  double z[64];
  for (int64_t i = 0; i < m; i++) {
    const double *xi = xr + i * kp;
    double r;
    if (linvt) {
      double hh = 0;
      for (int64_t a0 = 0; a0 < kp; a0 += 64) { /* z = L^-1 x_i, 64 at a time */
        const int64_t a1 = a0 + 64 < kp ? a0 + 64 : kp;
        for (int64_t a = a0; a < a1; a++) z[a - a0] = 0;
        for (int64_t b = 0; b < a1; b++) {
          const double xb = xi[b], *lb = linvt + b * kp;
          for (int64_t a = b > a0 ? b : a0; a < a1; a++) z[a - a0] += xb * lb[a];
        }
        for (int64_t a = a0; a < a1; a++) hh += z[a - a0] * z[a - a0];
      }
      r = logit_firth_r(y[i], p[i], w[i], hh);
    } else {
      r = y[i] - p[i];
    }
    for (int64_t j = 0; j < kp; j++) grad[j] += r * xi[j];
  }
}

static double pass_portable(int64_t n, int64_t qp, const double *cr, const double *x,
                            const double *y, const double *beta, double *w, double *acc,
                            double *cx) {
  double *gc = acc, *bc = acc + qp, gx = 0, dxx = 0, sum = 0, logs = 0, prod = 1;
  const double bx = beta[qp];
  for (int64_t j = 0; j < qp; j++) {
    gc[j] = bc[j] = 0;
    if (cx) cx[j] = 0;
  }
  for (int64_t i = 0, used = 0; i < n; i++) {
    const double xi = x[i], *ci = cr + i * qp;
    if (isnan(xi)) {
      w[i] = 0;
      continue;
    }
    const double e = row_dot(qp, ci, beta) + xi * bx;
    const double t = exp(-fabs(e)), u = 1 / (1 + t), wi = t * u * u;
    sum += y[i] * e - fmax(e, 0);
    prod *= 1 + t;
    if (++used % LOGIT_LOG_CHUNK == 0) logs += log(prod), prod = 1;
    const double r = y[i] - (e >= 0 ? u : t * u), wxi = wi * xi;
    w[i] = wi;
    gx += r * xi;
    dxx += wxi * xi;
    for (int64_t j = 0; j < qp; j++) {
      gc[j] += r * ci[j];
      bc[j] += wxi * ci[j];
      if (cx) cx[j] += xi * ci[j];
    }
  }
  acc[2 * qp] = gx;
  acc[2 * qp + 1] = dxx;
  return sum - (logs + log(prod));
}

static void start_portable(int64_t n, int64_t qp, const double *cr, const double *x,
                           const double *w0, const double *r0, double *w, double *acc,
                           double *cx) {
  double *bc = acc + qp, gx = 0, dxx = 0;
  for (int64_t j = 0; j < qp; j++) bc[j] = cx[j] = 0;
  for (int64_t i = 0; i < n; i++) {
    const double xi = x[i], *ci = cr + i * qp;
    w[i] = isnan(xi) ? 0 : w0[i];
    if (isnan(xi)) continue;
    const double wxi = w0[i] * xi;
    gx += r0[i] * xi;
    dxx += wxi * xi;
    for (int64_t j = 0; j < qp; j++) {
      bc[j] += wxi * ci[j];
      cx[j] += xi * ci[j];
    }
  }
  acc[2 * qp] = gx;
  acc[2 * qp + 1] = dxx;
}

const logit_kern logit_kern_portable = {rows_portable,  cross_portable, wcross_portable,
                                        score_portable, pass_portable,  start_portable};

const logit_kern *logit_kern_get(void) {
#if LOGIT_HAVE_AVX2
  if (fm_cpu_isa() >= FM_ISA_AVX2) return &logit_kern_avx2;
#endif
  return &logit_kern_portable;
}
