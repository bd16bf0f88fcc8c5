/* stats_glm.c: the streamed GWAS driver of fm_stats_glm.h: argument checks,
 * phenotype groups (phenotypes with the same samples share their rows'
 * work), the block loop over the genotype columns and the logistic pass;
 * the linear statistics are in stats_glm_linear.c, one logistic fit in
 * stats_glm_logit.c.
 *
 * The block loop decodes each block of columns once (fm_panel_decode, in
 * the calling thread: reads of a mapping stay behind the core's SIGBUS
 * guard) and hands the panel to the method, which spreads its columns over
 * worker threads. A column's results depend only on that column, so the
 * block geometry and the thread count change nothing in them. */
#include "stats_glm_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Target bytes of one decoded block (as fm_stats_colvar's blocks): cancel
 * polls stay well under 100 ms apart, and the block's panel stays in cache
 * for the product that follows. */
#define GLM_BLOCK_BYTES ((size_t)8 << 20)

const char *fm_glm_code_name(int code) {
  static const char *const names[FM_GLM_CODE_COUNT] = {
      ".",
      "CONST_OMITTED_ALLELE",
      "SAMPLE_CT<=PREDICTOR_CT",
      "RANK_DEFICIENT",
      "SEPARATION,ALT1",
      "LOGISTIC_CONVERGE_FAIL",
      "FIRTH_CONVERGE_FAIL",
      "UNFINISHED",
      "SEPARATION,REF"};
  return code >= 0 && code < FM_GLM_CODE_COUNT ? names[code] : "?";
}

int glm_chol(double *a, int64_t m, double min_pivot) {
  for (int64_t j = 0; j < m; j++) {
    double s = a[j + j * m];
    for (int64_t l = 0; l < j; l++) s -= a[j + l * m] * a[j + l * m];
    if (!(s > min_pivot) || !isfinite(s)) return 0;
    const double ljj = sqrt(s);
    a[j + j * m] = ljj;
    for (int64_t i = j + 1; i < m; i++) {
      double t = a[i + j * m];
      for (int64_t l = 0; l < j; l++) t -= a[i + l * m] * a[j + l * m];
      a[i + j * m] = t / ljj;
    }
  }
  return 1;
}

void glm_chol_forward(const double *l, int64_t m, double *v) {
  for (int64_t i = 0; i < m; i++) {
    double s = v[i];
    for (int64_t t = 0; t < i; t++) s -= l[i + t * m] * v[t];
    v[i] = s / l[i + i * m];
  }
}

void glm_chol_backward(const double *l, int64_t m, double *v) {
  for (int64_t i = m - 1; i >= 0; i--) {
    double s = v[i];
    for (int64_t t = i + 1; t < m; t++) s -= l[t + i * m] * v[t];
    v[i] = s / l[i + i * m];
  }
}

void glm_chol_solve(const double *l, int64_t m, double *v) {
  glm_chol_forward(l, m, v);
  glm_chol_backward(l, m, v);
}

double glm_dot(const double *a, const double *b, int64_t m) {
  double s = 0;
  for (int64_t i = 0; i < m; i++) s += a[i] * b[i];
  return s;
}

void glm_groups_free(glm_groups *g) {
  free(g->group_of);
  free(g->g_off);
  free(g->g_rows);
  free(g->in);
  memset(g, 0, sizeof *g);
}

/* Rows phenotype c uses: pheno not NaN. */
static int uses(const fm_glm_design *d, int64_t c, int64_t i) {
  return !isnan(d->pheno[i + c * d->n_rows]);
}

fm_status glm_check(const char *what, const fm_mat *x, const fm_glm_design *d,
                    const fm_glm_opts *opts, const fm_glm_out *out, fm_err *err) {
  if (!x || !d || !opts || !out)
    return fm_err_set(err, FM_EARG, "%s: x, the design, the options and out must not be NULL",
                      what);
  if (x->n_rows < 0 || x->n_cols < 0)
    return fm_err_set(err, FM_EARG, "%s: x has negative dimensions", what);
  if (d->n_rows != x->n_rows)
    return fm_err_set(err, FM_EARG, "%s: the design has %lld rows but x has %lld", what,
                      (long long)d->n_rows, (long long)x->n_rows);
  if (d->n_covar < 1 || !d->covar)
    return fm_err_set(err, FM_EARG, "%s: the design needs at least one covariate column "
                      "(the intercept)", what);
  if (d->n_pheno < 1 || !d->pheno)
    return fm_err_set(err, FM_EARG, "%s: the design has no phenotype", what);
  if (x->n_cols > 0 && (!out->beta || !out->se || !out->stat || !out->obs_ct || !out->code))
    return fm_err_set(err, FM_EARG, "%s: out->beta, se, stat, obs_ct and code are required",
                      what);
  if (opts->firth < FM_GLM_FIRTH_NEVER || opts->firth > FM_GLM_FIRTH_ALWAYS)
    return fm_err_set(err, FM_EARG, "%s: opts->firth = %d is not an fm_glm_firth", what,
                      opts->firth);
  if (opts->max_iter < 0 || !(opts->tol >= 0) || !isfinite(opts->tol))
    return fm_err_set(err, FM_EARG, "%s: opts->max_iter and opts->tol must be >= 0", what);
  const int64_t n = d->n_rows;
  for (int64_t i = 0; d->geno_scale && i < n; i++)
    if (!isfinite(d->geno_scale[i]))
      return fm_err_set(err, FM_EARG, "%s: geno_scale[%lld] is not finite", what, (long long)i);
  for (int64_t c = 0; c < d->n_pheno; c++) {
    int64_t used = 0;
    for (int64_t i = 0; i < n; i++) {
      const double v = d->pheno[i + c * n];
      if (isnan(v)) continue;
      if (!isfinite(v))
        return fm_err_set(err, FM_EARG, "%s: phenotype %lld is infinite at row %lld", what,
                          (long long)c + 1, (long long)i + 1);
      used++;
      for (int64_t l = 0; l < d->n_covar; l++)
        if (!isfinite(d->covar[i + l * n]))
          return fm_err_set(err, FM_EARG,
                            "%s: covariate %lld is not finite at row %lld, which phenotype "
                            "%lld uses",
                            what, (long long)l + 1, (long long)i + 1, (long long)c + 1);
    }
    if (used == 0)
      return fm_err_set(err, FM_EARG, "%s: phenotype %lld has no sample", what,
                        (long long)c + 1);
  }
  return FM_OK;
}

fm_status glm_groups_make(const fm_glm_design *d, glm_groups *g, fm_err *err) {
  const int64_t n = d->n_rows, k = d->n_pheno;
  memset(g, 0, sizeof *g);
  g->group_of = malloc((size_t)k * sizeof *g->group_of);
  int64_t *first = malloc((size_t)k * sizeof *first); /* a phenotype of each group */
  if (!g->group_of || !first) goto nomem;
  for (int64_t c = 0; c < k; c++) {
    int64_t found = -1;
    for (int64_t h = 0; h < g->n_groups && found < 0; h++) {
      int64_t i = 0;
      while (i < n && uses(d, c, i) == uses(d, first[h], i)) i++;
      if (i == n) found = h;
    }
    if (found < 0) {
      found = g->n_groups++;
      first[found] = c;
    }
    g->group_of[c] = (int32_t)found;
  }
  const int64_t G = g->n_groups;
  g->g_off = malloc((size_t)(G + 1) * sizeof *g->g_off);
  g->in = calloc((size_t)(n > 0 ? n : 1) * (size_t)G, 1);
  if (!g->g_off || !g->in) goto nomem;
  int64_t total = 0;
  for (int64_t h = 0; h < G; h++) {
    g->g_off[h] = total;
    for (int64_t i = 0; i < n; i++)
      if (uses(d, first[h], i)) {
        g->in[i * G + h] = 1;
        total++;
      }
  }
  g->g_off[G] = total;
  g->g_rows = malloc((size_t)(total > 0 ? total : 1) * sizeof *g->g_rows);
  if (!g->g_rows) goto nomem;
  for (int64_t h = 0, t = 0; h < G; h++)
    for (int64_t i = 0; i < n; i++)
      if (g->in[i * G + h]) g->g_rows[t++] = i;
  free(first);
  return FM_OK;
nomem:
  free(first);
  glm_groups_free(g);
  return fm_err_set(err, FM_ENOMEM, "fm_stats_glm: cannot allocate the phenotype groups");
}

/* ---- the block loop -------------------------------------------------------- */

int64_t glm_block_cols(const fm_mat *x, int decode, const fm_ctl *ctl) {
  size_t target = fm_panel_budget(ctl);
  if (target > GLM_BLOCK_BYTES) target = GLM_BLOCK_BYTES;
  /* a decoded double, or a stored code (a quarter byte: only BED2 streams
   * undecoded) per row */
  const double col_bytes = (decode ? 8.0 : 0.25) * (double)(x->n_rows > 0 ? x->n_rows : 1);
  int64_t block = (int64_t)((double)target / col_bytes);
  if (block < 1) block = 1;
  if (block > x->n_cols) block = x->n_cols > 0 ? x->n_cols : 1;
  return block;
}

fm_status glm_stream(const fm_mat *x, const fm_ctl *ctl, const char *what, int decode,
                     glm_block_fn fn, void *ud, fm_err *err) {
  const int64_t n = x->n_rows, p = x->n_cols, block = glm_block_cols(x, decode, ctl);
  fm_status st = FM_OK;
  int64_t *idx = malloc((size_t)block * sizeof *idx);
  double *panel = decode ? malloc((size_t)(n > 0 ? n : 1) * (size_t)block * sizeof *panel) : NULL;
  if (!idx || (decode && !panel)) {
    st = fm_err_set(err, FM_ENOMEM, "%s: cannot allocate a %lld x %lld panel", what,
                    (long long)n, (long long)block);
    goto done;
  }
  for (int64_t c0 = 0; c0 < p; c0 += block) {
    if (fm_ctl_cancelled(ctl)) {
      st = fm_err_set(err, FM_ECANCELLED, "%s: cancelled after %lld of %lld variants", what,
                      (long long)c0, (long long)p);
      goto done;
    }
    const int64_t nb = c0 + block <= p ? block : p - c0;
    for (int64_t b = 0; b < nb; b++) idx[b] = x->col_index ? x->col_index[c0 + b] : c0 + b;
    fm_mat blk = *x;
    blk.col_index = idx;
    blk.n_cols = nb;
    if (decode && n > 0) {
      st = fm_panel_decode(&blk, NULL, 0, n, 0, nb, panel, n, err);
      if (st != FM_OK) goto done;
    }
    st = fn(ud, &blk, c0, panel, err);
    if (st != FM_OK) goto done;
    fm_mat_evict_stream(x, c0, nb);
    fm_ctl_progress(ctl, (double)(c0 + nb), (double)p);
  }
done:
  free(idx);
  free(panel);
  return st;
}

void glm_put(const fm_glm_out *out, int64_t p, int64_t j, int64_t c, const glm_fit *f) {
  const size_t at = (size_t)j + (size_t)c * (size_t)p;
  out->beta[at] = f->beta;
  out->se[at] = f->se;
  out->stat[at] = f->stat;
  out->obs_ct[at] = f->obs_ct;
  out->code[at] = f->code;
  if (out->firth) out->firth[at] = f->firth;
}

void glm_allele_cts(const double *panel, int64_t n, int64_t nb, int64_t c0, int64_t p,
                    const fm_glm_design *d, const fm_glm_out *out) {
  if (!out->allele_ct) return;
  for (int64_t b = 0; b < nb; b++) {
    const double *col = panel + b * n;
    double alleles = 0.0, ploidy = 0.0;
    for (int64_t i = 0; i < n; i++) {
      if (isnan(col[i])) continue;
      const int hap = d->haploid && d->haploid[i];
      alleles += hap ? 0.5 * col[i] : col[i];
      ploidy += hap ? 1.0 : 2.0;
    }
    out->allele_ct[c0 + b] = alleles;
    out->allele_ct[c0 + b + p] = ploidy;
  }
}

void glm_column_means(const double *panel, int64_t n, int64_t nb, double *mean) {
  for (int64_t b = 0; b < nb; b++) {
    const double *col = panel + b * n;
    double s = 0.0;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
      if (!isnan(col[i])) {
        s += col[i];
        m++;
      }
    mean[b] = m > 0 ? s / (double)m : 0.0;
  }
}

fm_status glm_check_finite(const double *panel, int64_t n, int64_t nb, int64_t c0, fm_err *err) {
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < n; i++)
      if (isinf(panel[i + b * n]))
        return fm_err_set(err, FM_EARG,
                          "fm_stats_glm: the genotype of variant %lld is infinite at row %lld",
                          (long long)(c0 + b + 1), (long long)i + 1);
  return FM_OK;
}

