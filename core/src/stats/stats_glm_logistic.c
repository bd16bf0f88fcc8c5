/* stats_glm_logistic.c: logistic regression of fm_stats_glm.h: the
 * phenotype checks, each group's covariate rows and each phenotype's
 * covariates-only fit (the start of every variant's fit, with the parts
 * of stats_glm_logit_fast.c's fit it fixes), then one
 * glm_logit_fit (stats_glm_logit.c) per variant and phenotype, threaded
 * over the columns of each streamed block. */
#include "stats_glm_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct logit_job {
  const fm_glm_design *d;
  const fm_glm_opts *o;
  const fm_glm_out *out;
  const glm_groups *g;
  const double *cg;      /* per group: its rows' covariates, n_g x q (offset q * g_off[h]) */
  const double *yc;      /* per phenotype: its rows' values (offset ypos[c]) */
  const int64_t *ypos;
  const double *start;   /* per phenotype: q coefficients of the null fit */
  const glm_logit_pre *pre; /* per phenotype: the fast fit's shared parts, or n = 0 */
  double *xg;            /* per thread: n_max gathered genotypes */
  double *ws;            /* per thread: ws_len doubles */
  size_t ws_len;
  int64_t n_max, p, c0;
  const double *panel;
  const double *fill;    /* per block column: the mean (impute) or NULL */
  int nt;                /* worker threads */
} logit_job;

static void logit_col(void *ud, int64_t b, int t) {
  logit_job *j = ud;
  const fm_glm_design *d = j->d;
  const glm_groups *g = j->g;
  const int64_t n = d->n_rows, q = d->n_covar;
  const double *col = j->panel + b * n;
  glm_allele_cts(col, n, 1, j->c0 + b, j->p, d, j->out);
  double *xg = j->xg + (size_t)t * (size_t)j->n_max;
  double *ws = j->ws + (size_t)t * j->ws_len;
  int64_t gathered = -1;
  for (int64_t c = 0; c < d->n_pheno; c++) {
    const int64_t h = g->group_of[c], off = g->g_off[h], ng = g->g_off[h + 1] - off;
    if (gathered != h) {
      for (int64_t r = 0; r < ng; r++) {
        const int64_t i = g->g_rows[off + r];
        double v = col[i];
        if (isnan(v) && j->fill) v = j->fill[b];
        xg[r] = d->geno_scale ? v * d->geno_scale[i] : v;
      }
      gathered = h;
    }
    glm_fit f;
    glm_logit_fit(ng, q, j->cg + q * off, j->yc + j->ypos[c], xg, j->start + q * c,
                  j->pre[c].n ? j->pre + c : NULL, j->o->firth,
                  j->o->max_iter > 0 ? j->o->max_iter : GLM_MAX_ITER_DEFAULT,
                  j->o->tol > 0 ? j->o->tol : GLM_TOL_DEFAULT, ws, &f);
    glm_put(j->out, j->p, j->c0 + b, c, &f);
  }
}

static fm_status logit_block(void *ud, const fm_mat *blk, int64_t c0, const double *panel,
                             fm_err *err) {
  logit_job *j = ud;
  double *fill = (double *)j->fill;
  if (fill) glm_column_means(panel, blk->n_rows, blk->n_cols, fill);
  fm_status st = glm_check_finite(panel, blk->n_rows, blk->n_cols, c0, err);
  if (st != FM_OK) return st;
  j->panel = panel;
  j->c0 = c0;
  stats_par_for(logit_col, j, blk->n_cols, j->nt);
  return FM_OK;
}

fm_status fm_stats_glm_logistic(const fm_mat *x, const fm_glm_design *d, const fm_glm_opts *opts,
                                const fm_glm_out *out, const fm_ctl *ctl, fm_err *err) {
  const char *what = "fm_stats_glm_logistic";
  fm_status st = glm_check(what, x, d, opts, out, err);
  if (st != FM_OK) return st;
  const int64_t n = d->n_rows, q = d->n_covar, k = d->n_pheno;
  for (int64_t c = 0; c < k; c++) {
    int64_t cls[2] = {0, 0};
    for (int64_t i = 0; i < n; i++) {
      const double v = d->pheno[i + c * n];
      if (isnan(v)) continue;
      if (v != 0.0 && v != 1.0)
        return fm_err_set(err, FM_EARG,
                          "%s: phenotype %lld is %g at row %lld; a case/control phenotype is "
                          "0 (control) or 1 (case)",
                          what, (long long)c + 1, v, (long long)i + 1);
      cls[(int)v]++;
    }
    if (!cls[0] || !cls[1])
      return fm_err_set(err, FM_EARG, "%s: phenotype %lld has only %s", what, (long long)c + 1,
                        cls[0] ? "controls" : "cases");
  }
  glm_groups g;
  st = glm_groups_make(d, &g, err);
  if (st != FM_OK) return st;
  logit_job j = {0};
  const int nt = fm_threads(ctl);
  int64_t n_max = 0;
  for (int64_t h = 0; h < g.n_groups; h++) {
    const int64_t ng = g.g_off[h + 1] - g.g_off[h];
    if (ng > n_max) n_max = ng;
  }
  const int64_t block_max = glm_block_cols(x, 1, ctl);
  j.ws_len = glm_logit_ws_doubles(n_max, q);
  double *cg = malloc((size_t)(g.g_off[g.n_groups] > 0 ? g.g_off[g.n_groups] : 1) * (size_t)q *
                      sizeof *cg);
  int64_t *ypos = malloc((size_t)k * sizeof *ypos);
  double *yc = malloc((size_t)(n_max > 0 ? n_max : 1) * (size_t)k * sizeof *yc);
  double *start = malloc((size_t)q * (size_t)k * sizeof *start);
  double *xg = malloc((size_t)(n_max > 0 ? n_max : 1) * (size_t)nt * sizeof *xg);
  double *ws = malloc(j.ws_len * (size_t)nt * sizeof *ws);
  double *fill = opts->impute_mean ? malloc((size_t)block_max * sizeof *fill) : NULL;
  /* the fast fit's parts (glm_logit_pre): per group n_g x qp + 2 q^2
   * doubles, per phenotype glm_logit_pre_doubles */
  const int64_t qp = glm_round4(q), n_all = g.g_off[g.n_groups];
  glm_logit_pre *pre = calloc((size_t)(k > 0 ? k : 1), sizeof *pre);
  const size_t pre_len = (size_t)n_all * (size_t)qp + (size_t)g.n_groups * 2 * (size_t)(q * q) +
                         (size_t)k * glm_logit_pre_doubles(n_max, q);
  double *pre_mem = malloc((pre_len > 0 ? pre_len : 1) * sizeof *pre_mem);
  if (!cg || !ypos || !yc || !start || !xg || !ws || (opts->impute_mean && !fill) || !pre ||
      !pre_mem) {
    st = fm_err_set(err, FM_ENOMEM, "%s: cannot allocate the design's work space", what);
    goto done;
  }
  for (int64_t h = 0; h < g.n_groups; h++) {
    const int64_t off = g.g_off[h], ng = g.g_off[h + 1] - off;
    for (int64_t l = 0; l < q; l++)
      for (int64_t r = 0; r < ng; r++)
        cg[q * off + r + l * ng] = d->covar[g.g_rows[off + r] + l * n];
  }
  for (int64_t c = 0; c < k; c++) {
    const int64_t h = g.group_of[c], off = g.g_off[h], ng = g.g_off[h + 1] - off;
    ypos[c] = c * n_max;
    for (int64_t r = 0; r < ng; r++) yc[ypos[c] + r] = d->pheno[g.g_rows[off + r] + c * n];
    const int mi = opts->max_iter > 0 ? opts->max_iter : GLM_MAX_ITER_DEFAULT;
    if (glm_logit_null(ng, q, cg + q * off, yc + ypos[c], mi,
                       opts->tol > 0 ? opts->tol : GLM_TOL_DEFAULT, start + q * c, ws) != 0) {
      st = fm_err_set(err, FM_EARG,
                      "%s: the covariates-only fit of phenotype %lld does not converge (do the "
                      "covariates separate cases from controls?)",
                      what, (long long)c + 1);
      goto done;
    }
  }
  /* a group (or phenotype) whose covariate information is not numerically
   * positive definite goes without: the full iteration says what fails */
  double *pm = pre_mem;
  for (int64_t h = 0; h < g.n_groups; h++) {
    const int64_t off = g.g_off[h], ng = g.g_off[h + 1] - off;
    double *cr = pm, *cc = cr + ng * qp, *lcc = cc + q * q;
    pm = lcc + q * q;
    if (glm_logit_pre_rows(ng, q, cg + q * off, cr, cc, lcc) != 0) continue;
    for (int64_t c = 0; c < k; c++) {
      if (g.group_of[c] != h) continue;
      glm_logit_pre p = {.n = ng, .q = q, .qp = qp, .cr = cr, .cc = cc, .lcc = lcc};
      glm_logit_pre_place(&p, pm);
      pm += glm_logit_pre_doubles(ng, q);
      if (glm_logit_pre_start(&p, yc + ypos[c], start + q * c, ws) == 0) pre[c] = p;
    }
  }
  j = (logit_job){d, opts, out, &g, cg, yc, ypos, start, pre, xg, ws, j.ws_len, n_max,
                  x->n_cols, 0, NULL, fill, nt};
  st = glm_stream(x, ctl, what, 1, logit_block, &j, err);
done:
  free(cg);
  free(ypos);
  free(yc);
  free(start);
  free(xg);
  free(ws);
  free(fill);
  free(pre);
  free(pre_mem);
  glm_groups_free(&g);
  return st;
}
