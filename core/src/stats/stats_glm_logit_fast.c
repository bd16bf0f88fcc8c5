/* stats_glm_logit_fast.c: the plain logistic fit of one variant with the
 * covariates' block of the information held fixed (glm_logit_fit_fast).
 *
 * Newton's step for beta = (a, b) solves I s = g with
 *   I = [A  bc; bc' dxx],  A = C'WC,  bc = C'Wx,  dxx = x'Wx,  g = X'(y - p).
 * A costs n q^2 / 2 multiply-adds per evaluation, the rest n q. Across the
 * variants of a GWAS the genotype's effect is small, so W stays near W0 of
 * the covariates-only fit (the start), and A near A0 = C'W0C, computed and
 * factored once per phenotype. Each step here solves with
 *   I~ = [A0 bc; bc' dxx]   (bc, dxx, g exact at the current beta)
 * through the Schur complement S = dxx - bc' A0^-1 bc. I~ is positive
 * definite while S > 0, so the step is an ascent direction, guarded by the
 * same halving as the full iteration; it converges to the same maximum
 * (g = 0 there), linearly at a rate of about |A - A0| / |A| (steps shrink
 * by 1e-5 to 1e-3 each on typical variants). It stops when a step is below
 * tol, as the full iteration does, or when the next step, predicted from
 * the last two (rho = their ratio, below 0.1), is below tol / 100: the
 * prediction can be an order of magnitude low, and beta + step is then
 * still within tol of the maximum. The reported se is exact:
 * se(b)^2 = 1 / (dxx - bc' A^-1 bc) with A = C'WC at the last evaluated
 * beta (once per fit).
 *
 * Work per fit: at the start p, w and the covariates' sums are the null
 * fit's (logit_kern.start adds the genotype's, no exp), a row with a missing
 * call leaves A0, C'C, C'r0 and the log-likelihood by a downdate; each
 * step's evaluation is one pass over the rows (logit_kern.pass), O(n q),
 * where the full iteration's is O(n q^2). Where this iteration stops short
 * (S not positive, no ascent, max_iter steps) the full Newton iteration of
 * stats_glm_logit.c takes over, so what plink2 would call a failure to
 * converge is still decided there. */
#include <math.h>
#include <string.h>

#include "stats_glm_impl.h"
#include "stats_glm_logit_kern.h"

int glm_logit_pre_rows(int64_t n, int64_t q, const double *c, double *cr, double *cc,
                       double *lcc) {
  const int64_t qp = glm_round4(q);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < qp; j++) cr[i * qp + j] = j < q ? c[j * n + i] : 0;
  logit_kern_get()->cross(n, q, qp, cr, cr, cc);
  memcpy(lcc, cc, (size_t)(q * q) * sizeof *lcc);
  return glm_chol(lcc, q, 0.0) ? 0 : -1;
}

size_t glm_logit_pre_doubles(int64_t n, int64_t q) {
  return 3 * (size_t)n + (size_t)glm_round4(q) + 2 * (size_t)(q * q);
}

void glm_logit_pre_place(glm_logit_pre *pre, double *mem) {
  pre->w0 = mem;
  pre->r0 = pre->w0 + pre->n;
  pre->l0 = pre->r0 + pre->n;
  pre->g0 = pre->l0 + pre->n;
  pre->a0 = pre->g0 + pre->qp;
  pre->f0 = pre->a0 + pre->q * pre->q;
}

int glm_logit_pre_start(glm_logit_pre *pre, const double *y, const double *start, double *ws) {
  const int64_t n = pre->n, q = pre->q, qp = pre->qp;
  const logit_kern *kern = logit_kern_get();
  double *x = ws, *acc = x + n, *beta = acc + 2 * qp + 2;
  for (int64_t i = 0; i < n; i++) x[i] = 0;
  for (int64_t j = 0; j <= qp; j++) beta[j] = j < q ? start[j] : 0;
  pre->ll0 = kern->pass(n, qp, pre->cr, x, y, beta, pre->w0, acc, NULL);
  memcpy(pre->g0, acc, (size_t)qp * sizeof *pre->g0);
  /* per row, for the rows a missing call leaves out */
  for (int64_t i = 0; i < n; i++) {
    const double e = glm_dot(pre->cr + i * qp, beta, q), t = exp(-fabs(e)), u = 1 / (1 + t);
    pre->r0[i] = y[i] - (e >= 0 ? u : t * u);
    pre->l0[i] = y[i] * e - fmax(e, 0) - log1p(t);
  }
  kern->wcross(n, q, qp, pre->cr, pre->w0, pre->a0);
  memcpy(pre->f0, pre->a0, (size_t)(q * q) * sizeof *pre->f0);
  return glm_chol(pre->f0, q, 0.0) ? 0 : -1;
}

/* a = a_all less the rows with x NaN (weights f, or 1 with f NULL), and its
 * factor l. 0, or -1 when it is not numerically positive definite. */
static int downdate(int64_t n, int64_t q, int64_t qp, const double *cr, const double *x,
                    const double *f, const double *a_all, double *a, double *l) {
  memcpy(a, a_all, (size_t)(q * q) * sizeof *a);
  for (int64_t i = 0; i < n; i++) {
    if (!isnan(x[i])) continue;
    const double *ci = cr + i * qp, fi = f ? f[i] : 1;
    for (int64_t s = 0; s < q; s++)
      for (int64_t t = s; t < q; t++) a[s * q + t] -= fi * ci[s] * ci[t];
  }
  memcpy(l, a, (size_t)(q * q) * sizeof *l);
  return glm_chol(l, q, 0.0) ? 0 : -1;
}

int glm_logit_fit_fast(const glm_logit_pre *pre, const double *y, const double *x,
                       const double *start, int max_iter, double tol, double *ws, glm_fit *out) {
  const int64_t n = pre->n, q = pre->q, qp = pre->qp, k = q + 1;
  const logit_kern *kern = logit_kern_get();
  double *w = ws, *acc = w + n, *cx = acc + 2 * qp + 2;
  double *beta = cx + qp, *beta_old = beta + qp + 1, *step = beta_old + qp + 1;
  double *a = step + k, *l = a + q * q, *lc = l + q * q, *z = lc + q * q, *h = z + q;
  const double *gc = acc, *bc = acc + qp, *gx = acc + 2 * qp, *dxx = acc + 2 * qp + 1;

  /* at the start: the null fit's rows less those of the missing calls */
  const double *f0 = pre->f0, *lcc = pre->lcc;
  kern->start(n, qp, pre->cr, x, pre->w0, pre->r0, w, acc, cx);
  memcpy(acc, pre->g0, (size_t)qp * sizeof *acc);
  double ll = pre->ll0;
  if (out->obs_ct < n) {
    if (downdate(n, q, qp, pre->cr, x, NULL, pre->cc, a, lc) != 0) return 0;
    lcc = lc;
    if (downdate(n, q, qp, pre->cr, x, pre->w0, pre->a0, a, l) != 0) return 0;
    f0 = l;
    for (int64_t i = 0; i < n; i++) {
      if (!isnan(x[i])) continue;
      for (int64_t j = 0; j < q; j++) acc[j] -= pre->r0[i] * pre->cr[i * qp + j];
      ll -= pre->l0[i];
    }
  }
  for (int64_t j = 0; j <= qp; j++) beta[j] = j < q ? start[j] : 0;

  /* plink2's --vif test (stats_glm_logit.c): the residual sum of squares of
   * x on C is x'x - |Lcc^-1 C'x|^2, 1 - R^2 = RSS / TSS. */
  double mean = 0, xx = 0, tss = 0;
  for (int64_t i = 0; i < n; i++)
    if (!isnan(x[i])) mean += x[i], xx += x[i] * x[i];
  mean /= (double)out->obs_ct;
  for (int64_t i = 0; i < n; i++)
    if (!isnan(x[i])) tss += (x[i] - mean) * (x[i] - mean);
  memcpy(z, cx, (size_t)q * sizeof *z);
  glm_chol_forward(lcc, q, z);
  if ((xx - glm_dot(z, z, q)) * GLM_VIF_MAX < tss) {
    out->code = FM_GLM_RANK_DEFICIENT;
    return 1;
  }

  int converged = 0;
  double s_prev = 0; /* the last full step's max |step| (0 after a halving) */
  for (int it = 0; it < max_iter && !converged; it++) {
    memcpy(z, bc, (size_t)q * sizeof *z);
    memcpy(h, gc, (size_t)q * sizeof *h);
    glm_chol_forward(f0, q, z);
    glm_chol_forward(f0, q, h);
    const double s_schur = *dxx - glm_dot(z, z, q);
    if (!(s_schur > 0)) return 0;
    step[q] = (*gx - glm_dot(z, h, q)) / s_schur;
    for (int64_t j = 0; j < q; j++) h[j] -= z[j] * step[q];
    glm_chol_backward(f0, q, h);
    memcpy(step, h, (size_t)q * sizeof *step);
    double smax = 0;
    for (int64_t j = 0; j < k; j++) smax = fmax(smax, fabs(step[j]));
    if (!isfinite(smax)) return 0;
    /* Converged when this step, or the next one predicted from the
     * contraction rho of the last two, is below tol: the steps shrink by
     * rho < 0.1 each, so beta + step is then within rho smax / (1 - rho)
     * < tol of the maximum, as a step below tol leaves it. */
    const double rho = s_prev > 0 ? smax / s_prev : 1;
    if (smax < tol || (rho < 0.1 && rho * smax < 0.01 * tol)) {
      converged = 1;
      break;
    }
    memcpy(beta_old, beta, (size_t)(qp + 1) * sizeof *beta);
    const double slack = 1e-12 * (1 + fabs(ll));
    double c = 1, ll_new;
    for (int half = 0;; half++) {
      for (int64_t j = 0; j < q; j++) beta[j] = beta_old[j] + c * step[j];
      beta[qp] = beta_old[qp] + c * step[q];
      ll_new = kern->pass(n, qp, pre->cr, x, y, beta, w, acc, NULL);
      if (ll_new >= ll - slack) break;
      if (half == GLM_MAX_HALVINGS) return 0;
      c *= 0.5;
    }
    s_prev = c == 1 ? smax : 0;
    ll = ll_new;
  }
  if (!converged) return 0;

  /* se at the last evaluated beta, with A = C'WC there */
  kern->wcross(n, q, qp, pre->cr, w, a);
  memcpy(l, a, (size_t)(q * q) * sizeof *l);
  if (!glm_chol(l, q, 0.0)) return 0;
  memcpy(z, bc, (size_t)q * sizeof *z);
  glm_chol_forward(l, q, z);
  const double s_exact = *dxx - glm_dot(z, z, q);
  if (!(s_exact > 0)) return 0;
  out->beta = beta[qp] + step[q];
  out->se = 1 / sqrt(s_exact);
  out->stat = out->beta / out->se;
  return 1;
}
