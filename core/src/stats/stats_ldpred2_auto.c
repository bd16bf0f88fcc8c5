/* stats_ldpred2_auto.c: LDpred2-auto (fm_stats_ldpred2.h): one Gibbs chain
 * per initial p, each on its own random stream, chains spread over threads
 * (stats_ldpred2.c's runner). After each sweep the chain draws p, takes
 * h2 = beta' R_shrunk beta (kept up to date as effects change) and, with
 * use_mle, re-estimates (alpha + 1, sigma2) on a bootstrap resample of its
 * nonzero effects (mle_step). */
#include "stats_ldpred2_impl.h"

#include <math.h>
#include <stdlib.h>

#define LDP_MIN_H2 1e-3 /* bigsnpr's MIN_H2 */

typedef struct auto_ctx {
  const fm_band *ld;
  int64_t m;
  const double *beta_hat, *scale, *n_eff, *log_var; /* m each */
  const fm_ldpred2_auto_opts *a;
  const fm_ldpred2_gibbs_opts *o;
  double shrink, gap0, mean_ld;
  double *work;     /* threads x 7m: effects, R times them, bootstrap a and b, ldp_coef */
  int32_t *causal;  /* threads x m: the nonzero effects of the sweep */
  const fm_ldpred2_auto_out *out;
} auto_ctx;

static double clamp(double x, double lo, double hi) { return x < lo ? lo : (x > hi ? hi : x); }

/* One re-estimate of (alpha + 1, sigma2): the exact minimiser of
 *   f(x, s) = x sum_k a_k + nb log s + sum_k b_k exp(-x a_k) / s
 * over x in [lo, hi], s in [s0 / 2, 2 s0] (bigsnpr's box around the current
 * s0), on nb draws with replacement from the nonzero effects. f is convex in
 * (x, log s); for each x the best s is sum_k c_k / nb clamped into its box
 * (c_k = b_k exp(-x a_k)), and the profile over x is convex with derivative
 * sum a - sum a_k c_k / s: safeguarded Newton on it. nb = 0: unchanged. */
static void mle_step(double *ap1, double *sigma2, const int32_t *causal, int64_t nb,
                     const double *log_var, const double *curr, const double bounds[2],
                     fm_rng *rng, double *a, double *b) {
  if (nb == 0) return;
  double sum_a = 0;
  for (int64_t k = 0; k < nb; k++) {
    int64_t k2 = (int64_t)((double)nb * fm_rng_unif(rng));
    if (k2 >= nb) k2 = nb - 1;
    const int32_t j = causal[k2];
    a[k] = log_var[j];
    b[k] = curr[j] * curr[j];
    sum_a += a[k];
  }
  const double s_lo = *sigma2 / 2, s_hi = *sigma2 * 2, dnb = (double)nb;
  double L = bounds[0], H = bounds[1], x = clamp(*ap1, L, H), s = *sigma2;
  for (int iter = 0; iter < 200; iter++) {
    double C = 0, A = 0, B = 0;
    for (int64_t k = 0; k < nb; k++) {
      const double ck = b[k] * exp(-x * a[k]);
      C += ck;
      A += a[k] * ck;
      B += a[k] * a[k] * ck;
    }
    const double s_free = C / dnb;
    double g1, g2;
    if (s_free > s_lo && s_free < s_hi) {
      s = s_free;
      g1 = sum_a - dnb * A / C;
      g2 = dnb * (B * C - A * A) / (C * C);
    } else {
      s = clamp(s_free, s_lo, s_hi);
      g1 = sum_a - A / s;
      g2 = B / s;
    }
    if (L >= H) break;
    if (g1 > 0) {
      H = x;
    } else if (g1 < 0) {
      L = x;
    } else {
      break;
    }
    double nx = g2 > 0 ? x - g1 / g2 : NAN;
    if (!(nx > L && nx < H)) nx = 0.5 * (L + H);
    const int last = fabs(nx - x) <= 1e-12 * (1 + fabs(x)) || H - L <= 1e-12 * (1 + fabs(x));
    x = nx;
    if (last) {
      double C2 = 0;
      for (int64_t k = 0; k < nb; k++) C2 += b[k] * exp(-x * a[k]);
      s = clamp(C2 / dnb, s_lo, s_hi);
      break;
    }
  }
  *ap1 = x;
  *sigma2 = s;
}

static void fill_nan(double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) x[i] = NAN;
}

static fm_status auto_task(void *ud, int64_t k, int tid, ldp_runner *run, fm_err *err) {
  (void)err;
  const auto_ctx *c = ud;
  const fm_ldpred2_auto_opts *a = c->a;
  const fm_ldpred2_auto_out *out = c->out;
  const int64_t m = c->m, burn_in = c->o->burn_in, total = burn_in + c->o->num_iter;
  double *curr = c->work + (size_t)tid * 7 * (size_t)m, *dp = curr + m, *ba = dp + m, *bb = ba + m;
  const ldp_coef cf = {bb + m, bb + 2 * m, bb + 3 * m};
  int32_t *causal = c->causal + (size_t)tid * (size_t)m;
  double *avg_beta = out->beta + (size_t)k * (size_t)m;
  double *avg_postp = out->postp + (size_t)k * (size_t)m;
  double *avg_corr = out->corr_est + (size_t)k * (size_t)m;
  double *path_p = out->path_p + (size_t)k * (size_t)total;
  double *path_h2 = out->path_h2 + (size_t)k * (size_t)total;
  double *path_alpha = out->path_alpha + (size_t)k * (size_t)total;
  for (int64_t j = 0; j < m; j++) curr[j] = dp[j] = avg_beta[j] = avg_postp[j] = avg_corr[j] = 0;
  fill_nan(path_p, total);
  fill_nan(path_h2, total);
  fill_nan(path_alpha, total);
  out->status[k] = FM_LDPRED2_OK;
  out->diverged_at[k] = 0;
  fm_rng rng;
  ldp_rng_stream(&rng, c->o->seed, k);
  const double shrink = c->shrink;
  double h2 = a->h2_init > LDP_MIN_H2 ? a->h2_init : LDP_MIN_H2;
  double p = clamp(a->p_init[k], a->p_bounds[0], a->p_bounds[1]);
  double ap1 = 0, sigma2 = h2 / ((double)m * p), cur_h2 = 0;
  const double abounds[2] = {a->alpha_bounds[0] + 1, a->alpha_bounds[1] + 1};
  for (int64_t it = 0; it < total; it++) {
    const int keep = it >= burn_in;
    const double inv_odd = (1 - p) / p;
    if (a->use_mle) {
      for (int64_t j = 0; j < m; j++)
        ldp_coef_fill(&cf, j, exp(ap1 * c->log_var[j]) * sigma2 * c->n_eff[j], c->n_eff[j],
                      inv_odd);
    } else {
      for (int64_t j = 0; j < m; j++)
        ldp_coef_fill(&cf, j, sigma2 * c->n_eff[j], c->n_eff[j], inv_odd);
    }
    double gap = 0;
    int64_t nb = 0;
    for (int64_t j = 0; j < m; j++) {
      const double dot = dp[j], prev = curr[j];
      const double res = c->beta_hat[j] - shrink * (dot - prev);
      const double C3 = cf.C2[j] * res;
      const double q = 1 + cf.K[j] * exp(-cf.h[j] * res * res); /* 1 / P(causal) */
      const double dot_shrunk = shrink * dot + (1 - shrink) * prev;
      if (keep) {
        const double postp = 1 / q;
        avg_postp[j] += postp;
        avg_beta[j] += C3 * postp;
        avg_corr[j] += dot_shrunk;
      }
      double diff = -prev;
      if (fm_rng_unif(&rng) * q < 1) {
        const double s = C3 + fm_rng_norm(&rng) * sqrt(cf.C2[j] / c->n_eff[j]);
        if (!a->allow_jump_sign && s * prev < 0) {
          curr[j] = 0;
        } else {
          curr[j] = s;
          diff += s;
          causal[nb++] = (int32_t)j;
          gap += s * s;
        }
      } else {
        curr[j] = 0;
      }
      if (diff != 0) {
        cur_h2 += diff * (2 * dot_shrunk + diff);
        ldp_axpy_col(c->ld, j, diff, dp);
      }
    }
    const int bad = !(gap <= c->gap0) || !isfinite(cur_h2);
    if (bad) {
      out->status[k] = isfinite(gap) && isfinite(cur_h2) ? FM_LDPRED2_EXPLODED
                                                          : FM_LDPRED2_NONFINITE;
      out->diverged_at[k] = it + 1;
      fill_nan(avg_beta, m);
      fill_nan(avg_postp, m);
      fill_nan(avg_corr, m);
      out->p_est[k] = out->h2_est[k] = out->alpha_est[k] = NAN;
      return FM_OK;
    }
    p = ldp_rbeta(&rng, 1 + (double)nb / c->mean_ld, 1 + (double)(m - nb) / c->mean_ld);
    p = clamp(p, a->p_bounds[0], a->p_bounds[1]);
    h2 = cur_h2 > LDP_MIN_H2 ? cur_h2 : LDP_MIN_H2;
    if (a->use_mle) {
      mle_step(&ap1, &sigma2, causal, nb, c->log_var, curr, abounds, &rng, ba, bb);
    } else {
      sigma2 = h2 / ((double)m * p);
    }
    path_p[it] = p;
    path_h2[it] = h2;
    if (a->use_mle) path_alpha[it] = ap1 - 1;
    if (ldp_poll(run, tid)) return FM_OK; /* ldp_run reports why */
  }
  const double ni = (double)c->o->num_iter;
  for (int64_t j = 0; j < m; j++) {
    avg_beta[j] = avg_beta[j] / ni * c->scale[j];
    avg_postp[j] /= ni;
    avg_corr[j] /= ni;
  }
  double sp = 0, sh = 0, sa = 0;
  for (int64_t it = burn_in; it < total; it++) {
    sp += path_p[it];
    sh += path_h2[it];
    sa += path_alpha[it];
  }
  out->p_est[k] = sp / ni;
  out->h2_est[k] = sh / ni;
  out->alpha_est[k] = a->use_mle ? sa / ni : NAN;
  return FM_OK;
}

fm_status fm_stats_ldpred2_auto(const fm_band *ld, const fm_ldpred2_data *d,
                                const fm_ldpred2_auto_opts *aopts,
                                const fm_ldpred2_gibbs_opts *opts,
                                const fm_ldpred2_auto_out *out, const fm_ctl *ctl, fm_err *err) {
  static const char *what = "LDpred2-auto";
  if (!opts || !aopts) return fm_err_set(err, FM_EARG, "%s: opts is NULL", what);
  const double shrink = opts->shrink != 0 ? opts->shrink : 1;
  fm_status st = ldp_check(ld, d, shrink, what, err);
  if (st != FM_OK) return st;
  const fm_ldpred2_auto_opts *a = aopts;
  const int64_t K = a->n_chains;
  if (K < 1 || !a->p_init)
    return fm_err_set(err, FM_EARG, "%s: at least one chain (p_init) is needed", what);
  if (!out || !out->beta || !out->postp || !out->corr_est || !out->path_p || !out->path_h2 ||
      !out->path_alpha || !out->p_est || !out->h2_est || !out->alpha_est || !out->status ||
      !out->diverged_at)
    return fm_err_set(err, FM_EARG, "%s: an output array is NULL", what);
  if (opts->burn_in < 0 || opts->num_iter < 1)
    return fm_err_set(err, FM_EARG, "%s: burn_in is %lld and num_iter %lld; they must be >= 0 "
                      "and >= 1", what, (long long)opts->burn_in, (long long)opts->num_iter);
  if (!(isfinite(a->h2_init) && a->h2_init > 0))
    return fm_err_set(err, FM_EARG, "%s: h2_init is %g, it must be finite and > 0", what,
                      a->h2_init);
  if (!(a->p_bounds[0] > 0 && a->p_bounds[0] <= a->p_bounds[1] && a->p_bounds[1] <= 1))
    return fm_err_set(err, FM_EARG, "%s: p_bounds (%g, %g) must satisfy 0 < lo <= hi <= 1", what,
                      a->p_bounds[0], a->p_bounds[1]);
  if (!(isfinite(a->alpha_bounds[0]) && isfinite(a->alpha_bounds[1]) &&
        a->alpha_bounds[0] <= a->alpha_bounds[1]))
    return fm_err_set(err, FM_EARG, "%s: alpha_bounds (%g, %g) must be finite, lo <= hi", what,
                      a->alpha_bounds[0], a->alpha_bounds[1]);
  for (int64_t k = 0; k < K; k++)
    if (!(a->p_init[k] > 0 && a->p_init[k] <= 1))
      return fm_err_set(err, FM_EARG, "%s: p_init[%lld] is %g, it must lie in (0, 1]", what,
                        (long long)k + 1, a->p_init[k]);
  const int64_t m = ld->n;
  const int nt = ldp_threads(ctl, K);
  double *vec = malloc((size_t)m * 3 * sizeof *vec);
  double *work = malloc((size_t)m * 7 * (size_t)nt * sizeof *work);
  int32_t *causal = malloc((size_t)m * (size_t)nt * sizeof *causal);
  if (!vec || !work || !causal) {
    st = fm_err_set(err, FM_ENOMEM, "%s: cannot allocate %d x 8 vectors of %lld", what, nt,
                    (long long)m);
    goto done;
  }
  auto_ctx c = {ld, m, vec + m, vec, d->n_eff, vec + 2 * m, a, opts, shrink, 0,
                fm_stats_ldpred2_mean_ld(ld), work, causal, out};
  ldp_scale(d, vec, vec + m);
  for (int64_t j = 0; j < m; j++) {
    c.gap0 += vec[m + j] * vec[m + j];
    vec[2 * m + j] = -2 * log(vec[j]); /* log_var: log(1 / scale^2) */
  }
  c.gap0 *= 2;
  st = ldp_run(auto_task, &c, K, nt, (double)K * (double)(opts->burn_in + opts->num_iter), ctl,
               what, err);
done:
  free(vec);
  free(work);
  free(causal);
  return st;
}
