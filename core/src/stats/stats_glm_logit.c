/* stats_glm_logit.c: one logistic regression per (variant, phenotype) for
 * fm_stats_glm_logistic, by maximum likelihood or by Firth's penalized
 * likelihood, with plink2 --glm's choice between them and its error codes.
 *
 * Model: logit P(y_i = 1) = c_i'a + x_i b over the rows with x_i not NaN.
 * X = [C x] (k = q + 1 columns, x last), p = logistic(X beta), w = p(1 - p),
 * information I = X'WX, factored I = LL' (Cholesky).
 *
 *   plain   Newton-Raphson: beta += I^-1 X'(y - p), from (a = the
 *           covariates-only fit, b = 0).
 *   Firth   maximizes l(beta) + 1/2 log det I (Firth 1993, eq. 3 for the
 *           canonical link): the score becomes U* = X'(y - p + h(1/2 - p)),
 *           h_i = w_i x_i'I^-1 x_i the hat diagonal, and the step I^-1 U*
 *           (Heinze and Schemper 2002, sect. 2), scaled by a secant estimate
 *           of the curvature the penalty adds (see newton) and capped at 5
 *           in max-norm as logistf's maxstep.
 *   Both halve the step while the (penalized) log-likelihood would drop and
 *   stop when max |step| < tol. A plain fit first tries the same iteration
 *   with the covariates' information fixed at the null fit's
 *   (stats_glm_logit_fast.c: O(n q) a step instead of O(n q^2)), and comes
 *   here where that stops short. se(b) = sqrt([I^-1]_bb) at the estimate,
 *   which with x last is 1 / L_kk; stat = b / se (Wald z). For Firth too
 *   this is plink2's se (not logistf's profile likelihood).
 *
 * plink2 --glm rules (v2.00a3.5, plink2_glm.cc GlmLogisticThread and
 * plink2_glm_logistic.cc GlmLogisticThreadF/D in later versions), in order:
 *   SAMPLE_CT<=PREDICTOR_CT  rows with an observed genotype <= q + 1;
 *   CONST_OMITTED_ALLELE     the genotype is constant over those rows;
 *   (VIF_TOO_HIGH / CORR_TOO_HIGH in plink2)  the genotype's variance
 *                            inflation factor 1/(1 - R^2) on the covariates
 *                            exceeds 50 (--vif) -- a |correlation| above
 *                            0.999 (--max-corr) with a covariate implies it
 *                            -- reported here as RANK_DEFICIENT; plink2 also
 *                            applies the limits to the covariates' own VIFs,
 *                            which the caller checks once per phenotype;
 *   SEPARATION               no Firth, and an allele's dosage is zero over
 *                            the cases or over the controls: x = 0 (no A1,
 *                            plink2's "SEPARATION,ALT1") or x = 2 (no other
 *                            allele, "SEPARATION,REF") on every case or every
 *                            control (plink2 skips the fit rather than wait
 *                            for it to diverge);
 *   firth-fallback           uses Firth on exactly those rows, and on rows
 *                            whose plain fit fails to converge (there plain
 *                            is LOGISTIC_CONVERGE_FAIL without Firth);
 *   FIRTH_CONVERGE_FAIL      the Firth fit failed (the row still counts as
 *                            Firth's: plink2's FIRTH? is Y there);
 *   UNFINISHED               the iteration limit came first, but near a
 *                            solution (last max |step| < sqrt(tol)): the last
 *                            iterate is reported. plink2's float iteration
 *                            stops on loose criteria (1e-4 plain, 1e-5
 *                            Firth); ours, in double to tol, converges where
 *                            plink2 reports UNFINISHED for Firth.
 * plink2 tests dosage sums (zero, or the allele count) where this tests the
 * values, the same for dosages in [0, 2]. It judges a genotype scaled by
 * geno_scale (chrX males 0.5) before scaling, so there a variant constant or
 * absent from a class only before scaling is not seen as such here.
 *
 * Sources: Firth D (1993) Biometrika 80:27-38; Heinze G, Schemper M (2002)
 * Stat Med 21:2409-2419; plink2 --glm documentation
 * (www.cog-genomics.org/plink/2.0/assoc#glm) and its source, read, not
 * copied. */
#include <math.h>
#include <string.h>

#include "stats_glm_impl.h"
#include "stats_glm_logit_kern.h"

/* logistf's maxstep: bounds the first Firth steps, which start far from a
 * separated solution. */
#define FIRTH_MAX_STEP 5.0
/* Bounds of the Firth step's secant scale (newton). */
#define FIRTH_MAX_SCALE 10.0
/* The rows of one fit: X = [C x] row-major (xr, row i at xr + i * kp, k
 * values and zeros up to kp), x and y of the rows used. x is NULL for the
 * covariates-only fit (k = q). */
typedef struct design {
  int64_t m, q, k, kp;
  const double *xr;
  const double *x, *y;
  const logit_kern *kern;
} design;

/* Workspace of one fit (glm_logit_ws_doubles). */
typedef struct work {
  double *p, *w;         /* m each: probability, weight */
  double *wx;            /* m x kp: the rows of X scaled by w */
  double *info, *l;      /* k x k, lower triangle, column-major: I, L */
  double *linvt;         /* kp x kp: L^-1 transposed, zeros elsewhere */
  double *beta, *beta_old, *grad, *step, *step_prev; /* kp each */
} work;

size_t glm_logit_ws_doubles(int64_t n, int64_t q) {
  size_t nn = (size_t)n, kp = (size_t)glm_round4(q + 1);
  /* compacted x, y; row-major X; p, w; wx; info, l, linvt; five kp-vectors */
  return 2 * nn + nn * kp + 2 * nn + nn * kp + 3 * kp * kp + 5 * kp;
}

static work work_at(double *ws, int64_t m, int64_t kp) {
  work wk;
  double *t = ws;
  wk.p = t, t += m;
  wk.w = t, t += m;
  wk.wx = t, t += m * kp;
  wk.info = t, t += kp * kp;
  wk.l = t, t += kp * kp;
  wk.linvt = t, t += kp * kp;
  wk.beta = t, t += kp;
  wk.beta_old = t, t += kp;
  wk.grad = t, t += kp;
  wk.step = t, t += kp;
  wk.step_prev = t;
  for (int64_t j = 0; j < kp; j++) wk.beta[j] = 0;
  return wk;
}

/* info = LL' (lower triangles, column-major): glm_chol on a copy. 0, or -1
 * when info is not numerically positive definite. */
static int cholesky(int64_t k, const double *info, double *l) {
  memcpy(l, info, (size_t)(k * k) * sizeof *l);
  return glm_chol(l, k, 0.0) ? 0 : -1;
}

/* s = (LL')^-1 g. */
static void chol_solve(int64_t k, const double *l, const double *g, double *s) {
  memcpy(s, g, (size_t)k * sizeof *s);
  glm_chol_solve(l, k, s);
}

/* linvt[b * kp + a] = (L^-1)_ab for a >= b, 0 elsewhere (kp x kp): column
 * b of L^-1 solves L v = e_b. */
static void chol_inverse_t(int64_t k, int64_t kp, const double *l, double *linvt) {
  for (int64_t b = 0; b < kp; b++) {
    double *v = linvt + b * kp;
    for (int64_t a = 0; a < kp; a++) v[a] = 0;
    if (b >= k) continue;
    for (int64_t a = b; a < k; a++) {
      double t = a == b ? 1 : 0;
      for (int64_t p = b; p < a; p++) t -= l[p * k + a] * v[p];
      v[a] = t / l[a * k + a];
    }
  }
}

/* p, w, the information and its factor at beta; *ll = the log-likelihood,
 * plus 1/2 log det I = sum log L_jj with firth. -1 when I is singular.
 * With t = exp(-|eta|), p, w = t/(1+t)^2 and log(1 + e^eta) keep their
 * precision where p is near 0 or 1, unlike p(1 - p). One pass over the
 * rows, then the information from the weighted rows. */
static int evaluate(const design *d, const double *beta, int firth, work *wk, double *ll) {
  const int64_t m = d->m, k = d->k, kp = d->kp;
  double sum = d->kern->rows(m, kp, d->xr, d->y, beta, wk->p, wk->w, wk->wx);
  d->kern->cross(m, k, kp, d->xr, wk->wx, wk->info);
  if (cholesky(k, wk->info, wk->l) != 0) return -1;
  if (firth)
    for (int64_t j = 0; j < k; j++) sum += log(wk->l[j * k + j]);
  if (!isfinite(sum)) return -1;
  *ll = sum;
  return 0;
}

/* grad = X'(y - p) or, with firth, X'(y - p + h(1/2 - p)), with
 * h_i = w_i ||L^-1 x_i||^2. */
static void score(const design *d, int firth, work *wk) {
  if (firth) chol_inverse_t(d->k, d->kp, wk->l, wk->linvt);
  d->kern->score(d->m, d->kp, d->xr, d->y, wk->p, wk->w, firth ? wk->linvt : NULL, wk->grad);
}

enum { FIT_CONVERGED, FIT_UNFINISHED, FIT_FAILED };

/* Newton iterations from wk->beta; on return wk->l factors the information
 * at (within tol of) wk->beta.
 * Firth's step I^-1 U* leaves out the penalty's curvature, so alone it
 * converges only linearly, and along a nearly separated genotype (where
 * that curvature is about I's) it cycles between two points. The step is
 * therefore scaled by 1/a, a the secant estimate of the curvature along
 * it relative to I: after a step c s, the next raw step is s' ~ (1 - c a) s,
 * so a = (1 - s's / s's) / c. It stays an ascent direction, and the
 * halving below still guards it. */
static int newton(const design *d, int firth, int max_iter, double tol, work *wk) {
  int64_t k = d->k;
  double ll, last = INFINITY, c_prev = 0;
  if (evaluate(d, wk->beta, firth, wk, &ll) != 0) return FIT_FAILED;
  for (int it = 0; it < max_iter; it++) {
    score(d, firth, wk);
    chol_solve(k, wk->l, wk->grad, wk->step);
    double smax = 0;
    for (int64_t j = 0; j < k; j++) smax = fmax(smax, fabs(wk->step[j]));
    if (!isfinite(smax)) return FIT_FAILED;
    if (smax < tol) {
      for (int64_t j = 0; j < k; j++) wk->beta[j] += wk->step[j];
      return FIT_CONVERGED;
    }
    double c = 1;
    if (firth && c_prev > 0) {
      double ss = 0, sp = 0;
      for (int64_t j = 0; j < k; j++) {
        ss += wk->step[j] * wk->step_prev[j];
        sp += wk->step_prev[j] * wk->step_prev[j];
      }
      double a = (1 - ss / sp) / c_prev;
      c = a > 1.0 / FIRTH_MAX_SCALE ? fmin(1 / a, FIRTH_MAX_SCALE) : FIRTH_MAX_SCALE;
      c = fmax(c, 1.0 / FIRTH_MAX_SCALE);
    }
    if (firth && c * smax > FIRTH_MAX_STEP) c = FIRTH_MAX_STEP / smax;
    memcpy(wk->beta_old, wk->beta, (size_t)k * sizeof *wk->beta);
    /* Near the optimum the change in ll is below its rounding error: the
     * slack lets those last, tiny steps through. */
    double slack = 1e-12 * (1 + fabs(ll)), ll_new = -INFINITY;
    for (int half = 0;; half++) {
      for (int64_t j = 0; j < k; j++) wk->beta[j] = wk->beta_old[j] + c * wk->step[j];
      if (evaluate(d, wk->beta, firth, wk, &ll_new) == 0 && ll_new >= ll - slack) break;
      if (half == GLM_MAX_HALVINGS) return FIT_FAILED;
      c *= 0.5;
    }
    memcpy(wk->step_prev, wk->step, (size_t)k * sizeof *wk->step);
    c_prev = c;
    ll = ll_new;
    last = c * smax;
  }
  return last < sqrt(tol) ? FIT_UNFINISHED : FIT_FAILED;
}

/* Row-major X = [C x] of the rows with x not NaN (all rows when x is
 * NULL) into xr (kp per row), their x and y into xc and yc (when not
 * NULL). */
static void rows_make(int64_t n, int64_t q, int64_t kp, const double *c, const double *y,
                      const double *x, double *xr, double *xc, double *yc) {
  for (int64_t i = 0, t = 0; i < n; i++) {
    if (x && isnan(x[i])) continue;
    double *r = xr + t * kp;
    for (int64_t j = 0; j < q; j++) r[j] = c[j * n + i];
    int64_t j = q;
    if (x) r[j++] = x[i];
    for (; j < kp; j++) r[j] = 0;
    if (xc) xc[t] = x[i], yc[t] = y[i];
    t++;
  }
}

int glm_logit_null(int64_t n, int64_t q, const double *c, const double *y, int max_iter,
                   double tol, double *beta_out, double *ws) {
  const int64_t kp = glm_round4(q);
  double *xr = ws + 2 * n;
  rows_make(n, q, kp, c, y, NULL, xr, NULL, NULL);
  design d = {n, q, q, kp, xr, NULL, y, logit_kern_get()};
  work wk = work_at(xr + n * kp, n, kp);
  double cases = 0;
  for (int64_t i = 0; i < n; i++) cases += y[i];
  if (!(cases > 0 && cases < (double)n)) return -1;
  /* Start at the intercept-only fit (the first covariate is the
   * intercept); Newton takes the rest from there. */
  wk.beta[0] = log(cases / ((double)n - cases));
  int st = newton(&d, 0, max_iter, tol, &wk);
  memcpy(beta_out, wk.beta, (size_t)q * sizeof *beta_out);
  return st == FIT_CONVERGED ? 0 : -1;
}

/* plink2's multicollinearity test of the genotype: VIF = 1/(1 - R^2) of x
 * on the covariates (unweighted, over the rows used) above GLM_VIF_MAX. The
 * squared last diagonal of the Cholesky factor of X'X is the residual sum of
 * squares of x on C, and C holds the intercept, so 1 - R^2 = RSS / TSS. */
static int collinear(const design *d, work *wk) {
  int64_t m = d->m, k = d->k;
  d->kern->cross(m, k, d->kp, d->xr, d->xr, wk->info);
  if (cholesky(k, wk->info, wk->l) != 0) return 1;
  double mean = 0, tss = 0, lkk = wk->l[(k - 1) * k + (k - 1)];
  for (int64_t i = 0; i < m; i++) mean += d->x[i];
  mean /= (double)m;
  for (int64_t i = 0; i < m; i++) tss += (d->x[i] - mean) * (d->x[i] - mean);
  return lkk * lkk * GLM_VIF_MAX < tss;
}

/* One look at the rows used (x not NaN): their count, whether x is
 * constant over them, and plink2's separation test: some allele is absent
 * from the cases or from the controls, i.e. x is 0 (no counted allele:
 * FM_GLM_SEPARATION) or 2 (no other allele: FM_GLM_SEPARATION_REF) on every
 * case or on every control (*absent FM_GLM_OK when neither). */
typedef struct rows_seen {
  int64_t m;
  int constant, absent;
} rows_seen;

static rows_seen rows_look(int64_t n, const double *x, const double *y) {
  int not0[2] = {0, 0}, not2[2] = {0, 0}, varies = 0;
  int64_t m = 0;
  double first = NAN;
  for (int64_t i = 0; i < n; i++) {
    const double v = x[i];
    if (isnan(v)) continue;
    if (m++ == 0) first = v;
    varies |= v != first;
    const int cls = y[i] != 0;
    not0[cls] |= v != 0;
    not2[cls] |= v != 2;
  }
  rows_seen r = {m, !varies, FM_GLM_OK};
  if (!not0[0] || !not0[1])
    r.absent = FM_GLM_SEPARATION;
  else if (!not2[0] || !not2[1])
    r.absent = FM_GLM_SEPARATION_REF;
  return r;
}

void glm_logit_fit(int64_t n, int64_t q, const double *c, const double *y, const double *x,
                   const double *start, const glm_logit_pre *pre, int firth, int max_iter,
                   double tol, double *ws, glm_fit *out) {
  const int64_t k = q + 1;
  out->beta = out->se = out->stat = NAN;
  out->firth = 0;
  out->code = FM_GLM_OK;
  if (max_iter <= 0) max_iter = GLM_MAX_ITER_DEFAULT;
  if (!(tol > 0)) tol = GLM_TOL_DEFAULT;
  const rows_seen seen = rows_look(n, x, y);
  const int64_t m = seen.m;
  out->obs_ct = m;
  if (m <= k) {
    out->code = FM_GLM_SAMPLE_CT_LE_PREDICTOR;
    return;
  }
  if (seen.constant) {
    out->code = FM_GLM_CONST_OMITTED_ALLELE;
    return;
  }
  int use_firth = firth == FM_GLM_FIRTH_ALWAYS;
  const int absent = use_firth ? FM_GLM_OK : seen.absent;
  if (pre && !use_firth && absent == FM_GLM_OK &&
      glm_logit_fit_fast(pre, y, x, start, max_iter, tol, ws, out))
    return;
  const int64_t kp = glm_round4(k);
  double *xc = ws, *yc = xc + n, *xr = yc + n;
  rows_make(n, q, kp, c, y, x, xr, xc, yc);
  design d = {m, q, k, kp, xr, xc, yc, logit_kern_get()};
  work wk = work_at(xr + n * kp, m, kp);
  if (collinear(&d, &wk)) {
    out->code = FM_GLM_RANK_DEFICIENT;
    return;
  }
  if (absent != FM_GLM_OK) {
    if (firth == FM_GLM_FIRTH_NEVER) {
      out->code = absent;
      return;
    }
    use_firth = 1;
  }
  memcpy(wk.beta, start, (size_t)q * sizeof *wk.beta);
  wk.beta[q] = 0;
  int st = FIT_FAILED;
  if (!use_firth) {
    st = newton(&d, 0, max_iter, tol, &wk);
    if (st == FIT_FAILED) {
      if (firth == FM_GLM_FIRTH_NEVER) {
        out->code = FM_GLM_LOGISTIC_CONVERGE_FAIL;
        return;
      }
      use_firth = 1;
      memcpy(wk.beta, start, (size_t)q * sizeof *wk.beta);
      wk.beta[q] = 0;
    }
  }
  if (use_firth) {
    out->firth = 1;
    st = newton(&d, 1, GLM_FIRTH_ITER_FACTOR * max_iter, tol, &wk);
    if (st == FIT_FAILED) {
      out->code = FM_GLM_FIRTH_CONVERGE_FAIL;
      return;
    }
  }
  out->beta = wk.beta[q];
  out->se = 1 / wk.l[q * k + q];
  out->stat = out->beta / out->se;
  if (st == FIT_UNFINISHED) out->code = FM_GLM_UNFINISHED;
}
