/* stats_glm_logit_kern.h (private): the row kernels of stats_glm_logit.c
 * and stats_glm_logit_fast.c, one set per instruction-set level (fm_cpu.h):
 * plain C in stats_glm_logit_kern.c, AVX2 + FMA in stats_glm_logit_avx2.c
 * (x86-64 with GCC or Clang only; the target attribute, no global flags).
 *
 * The design is held row-major: row i of X = [C x] is xr + i * kp, k values
 * then zeros up to kp, k rounded up to a multiple of 4. Each kernel sums
 * over the rows in an order fixed by their positions, so its result
 * depends only on the rows' values and the level (FMA rounds once where
 * plain C rounds twice), never on the threads. */
#ifndef FM_STATS_GLM_LOGIT_KERN_H
#define FM_STATS_GLM_LOGIT_KERN_H

#include <stdint.h>

typedef struct logit_kern {
  /* Per row: eta_i = x_i'beta (beta: kp values, zero beyond k),
   * t = e^-|eta|, p_i = 1/(1 + e^-eta), w_i = p_i(1 - p_i) = t/(1 + t)^2
   * (both in the forms that keep their precision where p is near 0 or 1),
   * wx_i = w_i x_i; returns the log-likelihood
   * sum y_i eta_i - max(eta_i, 0) - log(1 + t). */
  double (*rows)(int64_t m, int64_t kp, const double *xr, const double *y, const double *beta,
                 double *p, double *w, double *wx);
  /* The lower triangle of sum_i wx_i x_i' (wx row-major like xr) into
   * info (k x k, column-major: info[a * k + b], b >= a). */
  void (*cross)(int64_t m, int64_t k, int64_t kp, const double *xr, const double *wx,
                double *info);
  /* The same sum with wx_i = w_i x_i formed on the fly (w: m weights). */
  void (*wcross)(int64_t m, int64_t k, int64_t kp, const double *xr, const double *w,
                 double *info);
  /* grad = X'r, r_i = y_i - p_i, or with linvt (the inverse Cholesky
   * factor of the information, transposed: linvt[b * kp + a] = (L^-1)_ab,
   * zero above... i.e. for a < b, and padded with zeros) Firth's
   * r_i = y_i - p_i + h_i (1/2 - p_i), h_i = w_i ||L^-1 x_i||^2. */
  void (*score)(int64_t m, int64_t kp, const double *xr, const double *y, const double *p,
                const double *w, const double *linvt, double *grad);
  /* The pass of the fixed-covariate-information fit
   * (stats_glm_logit_fast.c), over rows i < n of the covariates alone (cr:
   * row-major, qp values a row, zeros beyond q) and a genotype x whose NaN
   * rows are left out: eta_i = c_i'beta_c + x_i beta_x (beta: qp values,
   * then beta_x at beta[qp]), p_i and w_i as in rows, w[i] = w_i (0 where
   * x_i is NaN), and into acc (2 qp + 2 values, overwritten) the sums
   * gc = C'r and bc = C'(w x) (qp each, r_i = y_i - p_i), then gx = x'r and
   * dxx = x'(w x); with cx not NULL also cx = C'x (qp). Returns the
   * log-likelihood over the rows used. */
  double (*pass)(int64_t n, int64_t qp, const double *cr, const double *x, const double *y,
                 const double *beta, double *w, double *acc, double *cx);
  /* pass at the covariates-only fit (beta_x = 0), where every row's p and
   * w are the null fit's (w0 and r0 = y - p0 given): w[i] = w0[i] (0 where
   * x_i is NaN) and acc's bc, gx and dxx as pass (its gc not written), cx
   * = C'x; no log-likelihood. */
  void (*start)(int64_t n, int64_t qp, const double *cr, const double *x, const double *w0,
                const double *r0, double *w, double *acc, double *cx);
} logit_kern;

extern const logit_kern logit_kern_portable;
#if defined(__x86_64__) && defined(__GNUC__)
#define LOGIT_HAVE_AVX2 1
extern const logit_kern logit_kern_avx2;
#else
#define LOGIT_HAVE_AVX2 0
#endif

/* The kernels of the level fm_cpu_isa() names. */
const logit_kern *logit_kern_get(void);

/* Rows whose factors 1 + t (each in [1, 2]) are multiplied before one log
 * (per lane with AVX2): the product stays below 2^64, and its relative
 * rounding error (at most about 2 * 64 ulp) is far below the slack of the
 * step acceptance in stats_glm_logit.c. */
#define LOGIT_LOG_CHUNK 64

/* Firth's residual from the hat term hh = ||L^-1 x_i||^2 (one rounding
 * sequence for every level). */
static inline double logit_firth_r(double y, double p, double w, double hh) {
  return (y - p) + w * hh * (0.5 - p);
}

#endif
