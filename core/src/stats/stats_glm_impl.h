/* stats_glm_impl.h (private): the pieces of fm_stats_glm.h shared by its
 * modules: stats_glm.c (validation, phenotype groups, the streamed block
 * loop, the linear statistics) and stats_glm_logit.c (one logistic or
 * Firth fit per variant and phenotype). */
#ifndef FM_STATS_GLM_IMPL_H
#define FM_STATS_GLM_IMPL_H

#include "fm/fm_stats_glm.h"

#define GLM_MAX_ITER_DEFAULT 25
#define GLM_TOL_DEFAULT 1e-10

/* The result of one fit (one variant, one phenotype). */
typedef struct glm_fit {
  double beta, se, stat; /* of the genotype's coefficient; NaN unless code is OK
                            or UNFINISHED */
  int64_t obs_ct;        /* rows used */
  int code;              /* fm_glm_code */
  int firth;             /* 1 when the reported fit is Firth's */
} glm_fit;

/* Doubles of workspace glm_logit_fit and glm_logit_null need for n rows and q
 * covariates. */
size_t glm_logit_ws_doubles(int64_t n, int64_t q);

/* The covariates-only logistic fit over n rows (the start of every variant's
 * fit): beta_out (q) maximizes the likelihood of y (0/1) given c (n x q,
 * column-major, leading dimension n). Returns 0 on convergence, nonzero when
 * it did not converge (beta_out then holds the last iterate). ws: at least
 * glm_logit_ws_doubles(n, q) doubles. */
int glm_logit_null(int64_t n, int64_t q, const double *c, const double *y, int max_iter,
                   double tol, double *beta_out, double *ws);

/* One fit: logit P(y_i = 1) = c_i' a + x_i b over the rows i < n with x[i]
 * not NaN (the others are left out: a missing call). c: n x q column-major
 * (leading dimension n), y: n values 0/1, x: n values, start: the q
 * coefficients of glm_logit_null (b starts at 0). firth: fm_glm_firth.
 * Writes *out (obs_ct = rows used; code and firth as fm_stats_glm.h and
 * plink2's --glm rules: a constant x is FM_GLM_CONST_OMITTED_ALLELE; with
 * FM_GLM_FIRTH_FALLBACK, Firth is used where plink2 uses it). Reads only
 * its inputs; ws: at least glm_logit_ws_doubles(n, q) doubles. Thread-safe
 * with distinct ws and out. */
void glm_logit_fit(int64_t n, int64_t q, const double *c, const double *y, const double *x,
                   const double *start, int firth, int max_iter, double tol, double *ws,
                   glm_fit *out);

#endif
