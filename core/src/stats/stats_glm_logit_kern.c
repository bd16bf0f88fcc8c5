/* stats_glm_logit_kern.c: the portable row kernels of stats_glm_logit.c
 * (stats_glm_logit_kern.h) and the choice of a level's kernels. */
#include "stats_glm_logit_kern.h"

#include <math.h>

#include "fm/fm_cpu.h"

static double rows_portable(int64_t m, int64_t kp, const double *xr, const double *y,
                            const double *beta, double *p, double *w, double *wx) {
  double sum = 0, logs = 0, prod = 1;
  for (int64_t i = 0; i < m; i++) {
    const double *xi = xr + i * kp;
    double e0 = 0, e1 = 0, e2 = 0, e3 = 0; /* kp is a multiple of 4 */
    for (int64_t j = 0; j < kp; j += 4) {
      e0 += beta[j] * xi[j];
      e1 += beta[j + 1] * xi[j + 1];
      e2 += beta[j + 2] * xi[j + 2];
      e3 += beta[j + 3] * xi[j + 3];
    }
    const double e = (e0 + e1) + (e2 + e3);
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

const logit_kern logit_kern_portable = {rows_portable, cross_portable, score_portable};

const logit_kern *logit_kern_get(void) {
#if LOGIT_HAVE_AVX2
  if (fm_cpu_isa() >= FM_ISA_AVX2) return &logit_kern_avx2;
#endif
  return &logit_kern_portable;
}
