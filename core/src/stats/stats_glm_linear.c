/* stats_glm_linear.c: linear regression of fm_stats_glm.h by
 * Frisch-Waugh-Lovell.
 *
 * Per phenotype group (its rows G), once: Q, an orthonormal basis of the
 * covariates over G (Householder QR, LAPACK dgeqrf/dorgqr), and for each
 * phenotype of the group its residual r = y - Q Q'y (projected twice, so r
 * stays orthogonal to Q to rounding) and r'r. Both are stored over all n
 * rows (zero outside G) as columns of B = [Q_1 ... Q_G, r_1 ... r_k], each
 * row times the row's genotype scale s_i.
 *
 * Per block of columns: the product X'B (op XTB; missing calls as 0, or as
 * the column's mean with impute_mean) gives, per column x and group,
 * a = Q'x and x'r; one pass over the decoded column gives x'x, sum x and the
 * group's rows with a missing call (S). Without S:
 *   x'Mx = x'x - a'a,   x'My = x'r,   y'My = r'r.
 * With S (those rows leave the fit), over I = G \ S, with A = I - Q_S'Q_S
 * (Q_I'Q_I: the basis is no longer orthonormal there), v = A^-1 a and
 * u = Q_S' r_S:
 *   x'Mx = x'x - a'v,   x'My = x'r + v'u,   y'My = r'r - r_S'r_S - u'A^-1 u,
 * the exact least-squares quantities over I (M_I y_I = r_I + Q_I A^-1 u,
 * since Q'r = 0 over G), for |S| q^2 work instead of a refit.
 * Then b = x'My / x'Mx, RSS = y'My - b x'My, se = sqrt(RSS / df / x'Mx)
 * with df = |I| - q - 1, and t = b / se.
 *
 * Hardcalls (BED2) without a genotype scale are never decoded: a column's
 * counts of 0, 1 and 2 copies over all rows (fm_codec_bed2_col_counts),
 * less those of the rows outside a group, give its x'x and sum x there
 * exactly, and the rows of its missing calls come from a scan of the codes:
 * the sums and rows the decoding path forms, bit for bit (with impute_mean,
 * the imputed calls add a multiple of the mean rather than its copies).
 *
 * Error codes (fm_glm_code): |I| <= q + 1 is SAMPLE_CT<=PREDICTOR_CT; a
 * genotype whose decoded values (before the genotype scale) are all equal
 * over I is CONST_OMITTED_ALLELE; one whose part outside the
 * covariates' span is below 1e-9 of its centred sum of squares, or whose
 * downdated A is not positive definite, is RANK_DEFICIENT. */
#define _POSIX_C_SOURCE 200809L /* fm_fault.h */
#include "stats_glm_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/blas.h"
#include "fm/fm_backend.h"
#include "fm/fm_codec_bed2.h"
#include "fm/fm_fault.h"

/* The fused backend takes at most 64 columns of B per product. */
#define GLM_PRODUCT_COLS 64

typedef struct lin_job {
  const fm_glm_design *d;
  const fm_glm_opts *o;
  const fm_glm_out *out;
  const glm_groups *g;
  const fm_ctl *ctl;
  int64_t n, q, k, K, p;
  double *basis;     /* n x (G q + k): [Q_1 ... Q_G, r_1 ... r_k], unscaled */
  double *b;         /* the same times geno_scale per row (== basis without one) */
  double *rr;        /* k: r'r */
  double *z;         /* block x K: X'B */
  double *fill;      /* block: column means (impute_mean), else NULL */
  double *scratch;   /* per thread: scratch_len doubles */
  size_t scratch_len;
  int64_t nb, c0;
  const double *panel;
  int nt;
  int bed2;          /* moments from the codes (see the header) */
  int64_t *ex_off;   /* G + 1 offsets into ex_rows */
  int64_t *ex_rows;  /* per group, the rows outside it, ascending */
  int64_t *counts;   /* block x 4: counts of 0, 1, 2 copies and missing, all rows */
  int64_t *gcounts;  /* block x G x 4: the same over each group's rows */
  int64_t *miss_off; /* block + 1 offsets into miss_rows */
  int64_t *miss_rows; /* each column's rows with a missing call, ascending */
  int64_t miss_cap;   /* entries miss_rows holds */
} lin_job;

/* fm_codec_bed2_col_counts's bin of each 2-bit code (00 two copies, 01
 * missing, 10 one copy, 11 none). */
static const int bin_of_code[4] = {2, 3, 1, 0};

/* The block's rows with a missing call and its counts over each group, from
 * its codes, after fm_codec_bed2_col_counts filled j->counts (the caller
 * guards the reads: a truncated mapping faults here). */
static void bed2_scan(lin_job *j, const fm_mat *blk) {
  const glm_groups *g = j->g;
  const int64_t n = j->n, nb = blk->n_cols, G = g->n_groups, bytes = (n + 3) / 4;
  int64_t m = 0;
  for (int64_t b = 0; b < nb; b++) {
    const uint8_t *col = (const uint8_t *)blk->data + blk->col_index[b] * blk->col_stride;
    j->miss_off[b] = m;
    if (j->counts[4 * b + 3] > 0)
      for (int64_t k = 0; k < bytes; k++) {
        const unsigned v = col[k], miss = v & 0x55u & ~(v >> 1);
        if (miss)
          for (int s = 0; s < 4; s++)
            if ((miss >> (2 * s)) & 1u && 4 * k + s < n) j->miss_rows[m++] = 4 * k + s;
      }
    for (int64_t h = 0; h < G; h++) {
      int64_t *gc = j->gcounts + 4 * (b * G + h);
      memcpy(gc, j->counts + 4 * b, 4 * sizeof *gc);
      for (int64_t e = j->ex_off[h]; e < j->ex_off[h + 1]; e++) {
        const int64_t i = j->ex_rows[e];
        gc[bin_of_code[(col[i >> 2] >> (2 * (i & 3))) & 3]]--;
      }
    }
  }
  j->miss_off[nb] = m;
}

static void put_code(const lin_job *j, int64_t col, int64_t c, int code, int64_t obs) {
  const glm_fit f = {NAN, NAN, NAN, obs, code, 0};
  glm_put(j->out, j->p, col, c, &f);
}

/* Column b of the block: its moments per group, then every phenotype. */
static void lin_col(void *ud, int64_t b, int t) {
  const lin_job *j = ud;
  const glm_groups *g = j->g;
  const int64_t n = j->n, q = j->q, G = g->n_groups, nb = j->nb, col_j = j->c0 + b;
  const double *x = j->panel ? j->panel + b * n : NULL, *s = j->d->geno_scale;
  double *a = j->scratch + (size_t)t * j->scratch_len; /* q */
  double *A = a + q, *v = A + q * q, *u = v + q, *w = u + q;
  int64_t *miss = (int64_t *)(w + q); /* n */
  const double m = j->fill ? j->fill[b] : NAN;
  for (int64_t h = 0; h < G; h++) {
    const int64_t off = g->g_off[h], ng = g->g_off[h + 1] - off;
    double xx = 0.0, sx = 0.0, x0 = NAN; /* x0: the first value used */
    int64_t nobs = 0, ns = 0, same = 0;   /* same: values equal to x0 */
    if (j->bed2) {
      const int64_t *gc = j->gcounts + 4 * (b * G + h);
      nobs = gc[0] + gc[1] + gc[2];
      sx = (double)(gc[1] + 2 * gc[2]);
      xx = (double)(gc[1] + 4 * gc[2]);
      const int distinct = (gc[0] > 0) + (gc[1] > 0) + (gc[2] > 0);
      const double v0 = gc[2] > 0 ? 2.0 : gc[1] > 0 ? 1.0 : 0.0;
      if (j->fill) {
        sx += (double)gc[3] * m;
        xx += (double)gc[3] * m * m;
        same = distinct <= 1 && (gc[3] == 0 || nobs == 0 || m == v0) ? nobs + gc[3] : 0;
        nobs += gc[3];
      } else {
        same = distinct <= 1 ? nobs : 0;
        for (int64_t e = j->miss_off[b]; e < j->miss_off[b + 1]; e++)
          if (g->in[j->miss_rows[e] * G + h]) miss[ns++] = j->miss_rows[e];
      }
    }
    for (int64_t r = 0; !j->bed2 && r < ng; r++) {
      const int64_t i = g->g_rows[off + r];
      double xi = x[i];
      if (isnan(xi)) {
        if (!j->fill) {
          miss[ns++] = i;
          continue;
        }
        xi = m;
      }
      if (nobs == 0) x0 = xi;
      same += xi == x0;
      if (s) xi *= s[i];
      sx += xi;
      xx += xi * xi;
      nobs++;
    }
    const double *Q = j->basis + (size_t)h * (size_t)q * (size_t)n;
    int code = FM_GLM_OK;
    if (nobs <= q + 1) code = FM_GLM_SAMPLE_CT_LE_PREDICTOR;
    else if (same == nobs) code = FM_GLM_CONST_OMITTED_ALLELE;
    for (int64_t l = 0; l < q; l++) a[l] = j->z[b + (h * q + l) * nb];
    double xmx;
    if (code == FM_GLM_OK && ns > 0) {
      for (int64_t c1 = 0; c1 < q; c1++)
        for (int64_t r1 = c1; r1 < q; r1++) {
          double acc = r1 == c1 ? 1.0 : 0.0;
          for (int64_t e = 0; e < ns; e++) acc -= Q[miss[e] + r1 * n] * Q[miss[e] + c1 * n];
          A[r1 + c1 * q] = acc;
        }
      /* A = I - Q_S'Q_S has a unit scale */
      if (!glm_chol(A, q, 1e-12)) code = FM_GLM_RANK_DEFICIENT;
      memcpy(v, a, (size_t)q * sizeof *v);
      if (code == FM_GLM_OK) glm_chol_solve(A, q, v);
      xmx = xx - glm_dot(a, v, q);
    } else {
      xmx = xx - glm_dot(a, a, q);
    }
    if (code == FM_GLM_OK && !(xmx > 1e-9 * (xx - sx * sx / (double)nobs)))
      code = FM_GLM_RANK_DEFICIENT;
    for (int64_t c = 0; c < j->k; c++) {
      if (g->group_of[c] != h) continue;
      if (code != FM_GLM_OK) {
        put_code(j, col_j, c, code, nobs);
        continue;
      }
      const double *rc = j->basis + (size_t)(G * q + c) * (size_t)n;
      const double xr = j->z[b + (G * q + c) * nb];
      double xmy = xr, ymy = j->rr[c];
      if (ns > 0) {
        double rs = 0.0;
        for (int64_t l = 0; l < q; l++) u[l] = 0.0;
        for (int64_t e = 0; e < ns; e++) {
          const double ri = rc[miss[e]];
          rs += ri * ri;
          for (int64_t l = 0; l < q; l++) u[l] += Q[miss[e] + l * n] * ri;
        }
        memcpy(w, u, (size_t)q * sizeof *w);
        glm_chol_solve(A, q, w);
        xmy += glm_dot(v, u, q);
        ymy -= rs + glm_dot(u, w, q);
      }
      const double beta = xmy / xmx;
      double rss = ymy - beta * xmy;
      if (rss < 0.0) rss = 0.0;
      const double df = (double)(nobs - q - 1);
      const double se = sqrt(rss / df / xmx);
      const glm_fit f = {beta, se, beta / se, nobs, FM_GLM_OK, 0};
      glm_put(j->out, j->p, col_j, c, &f);
    }
  }
}

/* The codes' moments of a block (its counts, then bed2_scan, each behind a
 * SIGBUS jump point; the missing rows' buffer grows between them),
 * with the imputation means and the allele counts they give. */
static fm_status bed2_block(lin_job *j, const fm_mat *blk, int64_t c0, fm_err *err) {
  const int64_t n = j->n, nb = blk->n_cols;
  fm_fault_jmp jp;
  fm_fault_push(&jp);
  if (sigsetjmp(jp.jb, 0) != 0) return fm_fault_caught(&jp, err);
  fm_codec_bed2_col_counts(blk->data, n, blk->col_stride, blk->col_index, nb, j->counts);
  fm_fault_pop(&jp);
  int64_t missing = 0; /* the scan's buffer is sized here, outside the guard */
  for (int64_t b = 0; b < nb; b++) missing += j->counts[4 * b + 3];
  if (missing > j->miss_cap) {
    int64_t *grown = realloc(j->miss_rows, (size_t)missing * sizeof *grown);
    if (!grown)
      return fm_err_set(err, FM_ENOMEM, "fm_stats_glm_linear: cannot list %lld missing calls",
                        (long long)missing);
    j->miss_rows = grown;
    j->miss_cap = missing;
  }
  fm_fault_push(&jp);
  if (sigsetjmp(jp.jb, 0) != 0) return fm_fault_caught(&jp, err);
  bed2_scan(j, blk);
  fm_fault_pop(&jp);
  for (int64_t b = 0; b < nb; b++) {
    const int64_t *ct = j->counts + 4 * b, obs = n - ct[3], alleles = ct[1] + 2 * ct[2];
    if (j->fill) j->fill[b] = obs > 0 ? (double)alleles / (double)obs : 0.0;
    if (j->out->allele_ct) {
      j->out->allele_ct[c0 + b] = (double)alleles;
      j->out->allele_ct[c0 + b + j->p] = 2.0 * (double)obs;
    }
  }
  return FM_OK;
}

static fm_status lin_block(void *ud, const fm_mat *blk, int64_t c0, const double *panel,
                           fm_err *err) {
  lin_job *j = ud;
  const int64_t nb = blk->n_cols;
  fm_status st = FM_OK;
  if (j->bed2) {
    st = bed2_block(j, blk, c0, err);
  } else {
    st = glm_check_finite(panel, blk->n_rows, nb, c0, err);
    if (st == FM_OK) glm_allele_cts(panel, blk->n_rows, blk->n_cols, c0, j->p, j->d, j->out);
    if (j->fill) glm_column_means(panel, blk->n_rows, nb, j->fill);
  }
  if (st != FM_OK) return st;
  fm_affine aff = {0};
  if (j->fill) {
    aff.fill = j->fill;
  } else {
    aff.fill_all_set = 1; /* a missing call adds nothing to x'B */
    aff.fill_all = 0.0;
  }
  /* The block's products report no progress of their own: the pass does. */
  const fm_ctl inner = fm_ctl_relay(j->ctl, j->ctl ? j->ctl->cancel : NULL, NULL,
                                    j->ctl ? j->ctl->ud : NULL);
  for (int64_t k0 = 0; k0 < j->K; k0 += GLM_PRODUCT_COLS) {
    const int64_t kk = j->K - k0 < GLM_PRODUCT_COLS ? j->K - k0 : GLM_PRODUCT_COLS;
    const fm_product pr = {FM_OP_XTB, blk, &aff, j->b + k0 * j->n, j->n, kk, j->z + k0 * nb, nb};
    st = fm_backend_run(&pr, &inner, NULL, err);
    if (st != FM_OK) return st;
  }
  j->nb = nb;
  j->c0 = c0;
  j->panel = panel;
  stats_par_for(lin_col, j, nb, j->nt);
  return FM_OK;
}

/* The basis and residuals of group h over its ng rows (see the header). */
static fm_status lin_basis(lin_job *j, int64_t h, double *cg, double *tau, double *work,
                           fm_blas_int lwork, fm_err *err) {
  const glm_groups *g = j->g;
  const fm_glm_design *d = j->d;
  const int64_t n = j->n, q = j->q, G = g->n_groups, off = g->g_off[h];
  const int64_t ng = g->g_off[h + 1] - off;
  for (int64_t l = 0; l < q; l++)
    for (int64_t r = 0; r < ng; r++) cg[r + l * ng] = d->covar[g->g_rows[off + r] + l * n];
  int64_t first_c = 0;
  while (g->group_of[first_c] != h) first_c++;
  if (ng < q)
    return fm_err_set(err, FM_EARG,
                      "fm_stats_glm_linear: phenotype %lld has %lld samples for %lld covariate "
                      "columns",
                      (long long)first_c + 1, (long long)ng, (long long)q);
  double *norms = work + lwork; /* q */
  for (int64_t l = 0; l < q; l++) {
    const fm_blas_int nn = (fm_blas_int)ng, one = 1;
    norms[l] = dnrm2_(&nn, cg + l * ng, &one);
  }
  const fm_blas_int m = (fm_blas_int)ng, nq = (fm_blas_int)q;
  fm_blas_int info = 0;
  dgeqrf_(&m, &nq, cg, &m, tau, work, &lwork, &info);
  if (info != 0)
    return fm_err_set(err, FM_EINTERNAL, "fm_stats_glm_linear: dgeqrf failed (info %d)", info);
  for (int64_t l = 0; l < q; l++)
    if (!(fabs(cg[l + l * ng]) > 1e-9 * norms[l]))
      return fm_err_set(err, FM_EARG,
                        "fm_stats_glm_linear: covariate column %lld is constant or collinear "
                        "with the columns before it over the %lld samples of phenotype %lld",
                        (long long)l + 1, (long long)ng, (long long)first_c + 1);
  dorgqr_(&m, &nq, &nq, cg, &m, tau, work, &lwork, &info);
  if (info != 0)
    return fm_err_set(err, FM_EINTERNAL, "fm_stats_glm_linear: dorgqr failed (info %d)", info);
  double *Q = j->basis + (size_t)h * (size_t)q * (size_t)n;
  for (int64_t l = 0; l < q; l++)
    for (int64_t r = 0; r < ng; r++) Q[g->g_rows[off + r] + l * n] = cg[r + l * ng];
  for (int64_t c = 0; c < j->k; c++) {
    if (g->group_of[c] != h) continue;
    double *rc = j->basis + (size_t)(G * q + c) * (size_t)n;
    for (int64_t r = 0; r < ng; r++) {
      const int64_t i = g->g_rows[off + r];
      rc[i] = d->pheno[i + c * n];
    }
    for (int pass = 0; pass < 2; pass++)
      for (int64_t l = 0; l < q; l++) {
        const double *ql = Q + l * n;
        double th = 0.0;
        for (int64_t r = 0; r < ng; r++) th += ql[g->g_rows[off + r]] * rc[g->g_rows[off + r]];
        for (int64_t r = 0; r < ng; r++) rc[g->g_rows[off + r]] -= th * ql[g->g_rows[off + r]];
      }
    double rr = 0.0;
    for (int64_t r = 0; r < ng; r++) rr += rc[g->g_rows[off + r]] * rc[g->g_rows[off + r]];
    j->rr[c] = rr;
  }
  return FM_OK;
}

fm_status fm_stats_glm_linear(const fm_mat *x, const fm_glm_design *d, const fm_glm_opts *opts,
                              const fm_glm_out *out, const fm_ctl *ctl, fm_err *err) {
  const char *what = "fm_stats_glm_linear";
  fm_status st = glm_check(what, x, d, opts, out, err);
  if (st != FM_OK) return st;
  if (!fm_blas_dim_ok(x->n_rows))
    return fm_err_set(err, FM_EARG, "%s: %lld samples exceed the BLAS's integers", what,
                      (long long)x->n_rows);
  glm_groups g;
  st = glm_groups_make(d, &g, err);
  if (st != FM_OK) return st;
  const int64_t n = d->n_rows, q = d->n_covar, k = d->n_pheno, G = g.n_groups;
  const int nt = fm_threads(ctl);
  lin_job j = {.d = d, .o = opts, .out = out, .g = &g, .ctl = ctl, .n = n, .q = q, .k = k,
               .K = G * q + k, .p = x->n_cols, .nt = nt};
  const size_t nn = (size_t)(n > 0 ? n : 1);
  const int bed2 = x->codec == FM_CODEC_BED2 && !d->geno_scale && !d->haploid;
  const size_t zrows = (size_t)glm_block_cols(x, !bed2, ctl); /* the largest block */
  const fm_blas_int lwork = (fm_blas_int)(64 * q);
  double *cg = malloc(nn * (size_t)q * sizeof *cg);
  double *tau = malloc((size_t)q * sizeof *tau);
  double *work = malloc(((size_t)lwork + (size_t)q) * sizeof *work);
  j.basis = calloc(nn * (size_t)j.K, sizeof *j.basis);
  j.b = d->geno_scale ? malloc(nn * (size_t)j.K * sizeof *j.b) : j.basis;
  j.rr = malloc((size_t)k * sizeof *j.rr);
  j.scratch_len = (size_t)(q * q + 4 * q) + nn; /* a, A, v, u, w; the missing rows */
  j.scratch = malloc(j.scratch_len * (size_t)nt * sizeof *j.scratch);
  j.fill = opts->impute_mean ? malloc(zrows * sizeof *j.fill) : NULL;
  if (!cg || !tau || !work || !j.basis || !j.b || !j.rr || !j.scratch ||
      (opts->impute_mean && !j.fill)) {
    st = fm_err_set(err, FM_ENOMEM, "%s: cannot allocate the design's work space", what);
    goto done;
  }
  for (int64_t h = 0; h < G && st == FM_OK; h++) st = lin_basis(&j, h, cg, tau, work, lwork, err);
  if (st != FM_OK) goto done;
  if (d->geno_scale)
    for (int64_t l = 0; l < j.K; l++)
      for (int64_t i = 0; i < n; i++) j.b[i + l * n] = j.basis[i + l * n] * d->geno_scale[i];
  /* X'B of a block */
  j.z = malloc(zrows * (size_t)j.K * sizeof *j.z);
  if (!j.z) {
    st = fm_err_set(err, FM_ENOMEM, "%s: cannot allocate the products", what);
    goto done;
  }
  j.bed2 = bed2;
  if (j.bed2) {
    const int64_t G = g.n_groups, out_rows = G * n - g.g_off[G];
    j.ex_off = malloc((size_t)(G + 1) * sizeof *j.ex_off);
    j.ex_rows = malloc((size_t)(out_rows > 0 ? out_rows : 1) * sizeof *j.ex_rows);
    j.counts = malloc(zrows * 4 * sizeof *j.counts);
    j.gcounts = malloc(zrows * (size_t)G * 4 * sizeof *j.gcounts);
    j.miss_off = malloc((zrows + 1) * sizeof *j.miss_off);
    if (!j.ex_off || !j.ex_rows || !j.counts || !j.gcounts || !j.miss_off) {
      st = fm_err_set(err, FM_ENOMEM, "%s: cannot allocate the code counts", what);
      goto done;
    }
    for (int64_t h = 0, e = 0; h < G; h++) {
      j.ex_off[h] = e;
      for (int64_t i = 0; i < n; i++)
        if (!g.in[i * G + h]) j.ex_rows[e++] = i;
      j.ex_off[h + 1] = e;
    }
  }
  st = glm_stream(x, ctl, what, !j.bed2, lin_block, &j, err);
done:
  free(cg);
  free(tau);
  free(work);
  if (j.b != j.basis) free(j.b);
  free(j.basis);
  free(j.rr);
  free(j.scratch);
  free(j.fill);
  free(j.z);
  free(j.ex_off);
  free(j.ex_rows);
  free(j.counts);
  free(j.gcounts);
  free(j.miss_off);
  free(j.miss_rows);
  glm_groups_free(&g);
  return st;
}
