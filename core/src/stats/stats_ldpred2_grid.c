/* stats_ldpred2_grid.c: LDpred2-grid (fm_stats_ldpred2.h): one Gibbs
 * sampler per (p, h2, sparse), each on its own random stream, sets spread
 * over threads (stats_ldpred2.c's runner).
 *
 * The sampler keeps R beta up to date instead of recomputing it: when
 * beta_j changes by diff, R beta += diff R[, j] (one column of the band),
 * so a sweep costs m conditional draws plus one column per effect that
 * changed, as in bigsnpr (its SFBM incr_mult_col). */
#include "stats_ldpred2_impl.h"

#include <math.h>
#include <stdlib.h>

typedef struct grid_ctx {
  const fm_band *ld;
  int64_t m;
  const double *beta_hat, *scale, *n_eff; /* m each */
  const double *p, *h2;
  const int32_t *sparse;
  const fm_ldpred2_gibbs_opts *o;
  double shrink, gap0;
  double *work; /* threads x 5m: the current effects, R times them, ldp_coef */
  const fm_ldpred2_grid_out *out;
} grid_ctx;

static fm_status grid_task(void *ud, int64_t k, int tid, ldp_runner *run, fm_err *err) {
  (void)err;
  const grid_ctx *c = ud;
  const int64_t m = c->m, total = c->o->burn_in + c->o->num_iter;
  double *curr = c->work + (size_t)tid * 5 * (size_t)m, *dp = curr + m;
  const ldp_coef cf = {dp + m, dp + 2 * m, dp + 3 * m};
  double *avg = c->out->beta + (size_t)k * (size_t)m;
  for (int64_t j = 0; j < m; j++) curr[j] = dp[j] = avg[j] = 0;
  fm_rng rng;
  ldp_rng_stream(&rng, c->o->seed, k);
  const double p = c->p[k], h2_per_var = c->h2[k] / ((double)m * p), inv_odd = (1 - p) / p;
  const int sparse = c->sparse[k] != 0;
  const double shrink = c->shrink;
  for (int64_t j = 0; j < m; j++)
    ldp_coef_fill(&cf, j, h2_per_var * c->n_eff[j], c->n_eff[j], inv_odd);
  c->out->status[k] = FM_LDPRED2_OK;
  c->out->diverged_at[k] = 0;
  for (int64_t it = 0; it < total; it++) {
    const int keep = it >= c->o->burn_in;
    double gap = 0;
    for (int64_t j = 0; j < m; j++) {
      const double res = c->beta_hat[j] - shrink * (dp[j] - curr[j]);
      const double C3 = cf.C2[j] * res;
      const double q = 1 + cf.K[j] * exp(-cf.h[j] * res * res); /* 1 / P(causal) */
      double diff = -curr[j];
      if (sparse && p * q > 1) {
        curr[j] = 0;
      } else {
        if (fm_rng_unif(&rng) * q < 1) {
          curr[j] = C3 + fm_rng_norm(&rng) * sqrt(cf.C2[j] / c->n_eff[j]);
          diff += curr[j];
          gap += curr[j] * curr[j];
        } else {
          curr[j] = 0;
        }
        if (keep) avg[j] += C3 / q;
      }
      if (diff != 0) ldp_axpy_col(c->ld, j, diff, dp);
    }
    if (!(gap <= c->gap0)) {
      c->out->status[k] = isfinite(gap) ? FM_LDPRED2_EXPLODED : FM_LDPRED2_NONFINITE;
      c->out->diverged_at[k] = it + 1;
      for (int64_t j = 0; j < m; j++) avg[j] = NAN;
      return FM_OK;
    }
    if (ldp_poll(run, tid)) return FM_OK; /* ldp_run reports why */
  }
  for (int64_t j = 0; j < m; j++) avg[j] = avg[j] / (double)c->o->num_iter * c->scale[j];
  return FM_OK;
}

fm_status fm_stats_ldpred2_grid(const fm_band *ld, const fm_ldpred2_data *d, int64_t n_sets,
                                const double *p, const double *h2, const int32_t *sparse,
                                const fm_ldpred2_gibbs_opts *opts, const fm_ldpred2_grid_out *out,
                                const fm_ctl *ctl, fm_err *err) {
  static const char *what = "LDpred2-grid";
  if (!opts) return fm_err_set(err, FM_EARG, "%s: opts is NULL", what);
  const double shrink = opts->shrink != 0 ? opts->shrink : 1;
  fm_status st = ldp_check(ld, d, shrink, what, err);
  if (st != FM_OK) return st;
  if (n_sets < 1 || !p || !h2 || !sparse)
    return fm_err_set(err, FM_EARG, "%s: the grid needs at least one set of p, h2 and sparse",
                      what);
  if (!out || !out->beta || !out->status || !out->diverged_at)
    return fm_err_set(err, FM_EARG, "%s: an output array is NULL", what);
  if (opts->burn_in < 0 || opts->num_iter < 1)
    return fm_err_set(err, FM_EARG, "%s: burn_in is %lld and num_iter %lld; they must be >= 0 "
                      "and >= 1", what, (long long)opts->burn_in, (long long)opts->num_iter);
  for (int64_t k = 0; k < n_sets; k++) {
    if (!(p[k] > 0 && p[k] <= 1))
      return fm_err_set(err, FM_EARG, "%s: p[%lld] is %g, it must lie in (0, 1]", what,
                        (long long)k + 1, p[k]);
    if (!(isfinite(h2[k]) && h2[k] > 0))
      return fm_err_set(err, FM_EARG, "%s: h2[%lld] is %g, it must be finite and > 0", what,
                        (long long)k + 1, h2[k]);
  }
  const int64_t m = ld->n;
  const int nt = ldp_threads(ctl, n_sets);
  double *vec = malloc((size_t)m * 2 * sizeof *vec);
  double *work = malloc((size_t)m * 5 * (size_t)nt * sizeof *work);
  if (!vec || !work) {
    st = fm_err_set(err, FM_ENOMEM, "%s: cannot allocate %d x 5 vectors of %lld", what, nt,
                    (long long)m);
    goto done;
  }
  grid_ctx c = {ld, m, vec + m, vec, d->n_eff, p, h2, sparse, opts, shrink, 0, work, out};
  ldp_scale(d, vec, vec + m);
  for (int64_t j = 0; j < m; j++) c.gap0 += vec[m + j] * vec[m + j];
  c.gap0 *= 2;
  st = ldp_run(grid_task, &c, n_sets, nt, (double)n_sets * (double)(opts->burn_in + opts->num_iter),
               ctl, what, err);
done:
  free(vec);
  free(work);
  return st;
}
