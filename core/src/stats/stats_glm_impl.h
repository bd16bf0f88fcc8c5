/* stats_glm_impl.h (private): the pieces of fm_stats_glm.h shared by its
 * modules: stats_glm.c (validation, phenotype groups, the streamed block
 * loop, the linear statistics) and stats_glm_logit.c (one logistic or
 * Firth fit per variant and phenotype). */
#ifndef FM_STATS_GLM_IMPL_H
#define FM_STATS_GLM_IMPL_H

#include "fm/fm_stats_glm.h"
#include "stats_par.h"

#define GLM_MAX_ITER_DEFAULT 25
#define GLM_TOL_DEFAULT 1e-10
/* Firth's iteration converges linearly (about 17 steps to 1e-10 on the
 * 1kg fixture, a few past 25): it gets this many times max_iter. */
#define GLM_FIRTH_ITER_FACTOR 4

/* k rounded up to a multiple of 4 (the row kernels' vector width). */
static inline int64_t glm_round4(int64_t k) { return (k + 3) / 4 * 4; }

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

/* What every variant's fit of one phenotype shares, for the fixed
 * covariate information fit (stats_glm_logit_fast.c): over the group's n
 * rows, the covariates row-major (cr: n x qp, qp = q rounded up to a
 * multiple of 4, zeros beyond q), cc = C'C and its Cholesky factor lcc, and
 * at the covariates-only fit (the start): per row the weight w0, the
 * residual r0 = y - p0 and the log-likelihood term l0 (n each), their sums
 * g0 = C'r0 (qp) and ll0, a0 = C'W0C and its factor f0 (q x q each, lower
 * triangle, column-major). */
typedef struct glm_logit_pre {
  int64_t n, q, qp;
  const double *cr, *cc, *lcc;
  double *w0, *r0, *l0, *g0, *a0, *f0;
  double ll0;
} glm_logit_pre;

/* Doubles of glm_logit_pre's per-phenotype arrays (w0 ... f0). */
size_t glm_logit_pre_doubles(int64_t n, int64_t q);

/* Points pre's per-phenotype arrays into mem (glm_logit_pre_doubles). */
void glm_logit_pre_place(glm_logit_pre *pre, double *mem);

/* The group's part: cr, cc and lcc (q * q each) from c (n x q,
 * column-major). 0, or -1 when C'C is not numerically positive definite. */
int glm_logit_pre_rows(int64_t n, int64_t q, const double *c, double *cr, double *cc,
                       double *lcc);

/* The phenotype's part at beta = start (w0 ... f0 and ll0, into the
 * arrays glm_logit_pre_place set), given pre's n, q, qp and cr. 0, or -1
 * when a0 is not numerically positive definite. ws: at least
 * glm_logit_ws_doubles(n, q) doubles. */
int glm_logit_pre_start(glm_logit_pre *pre, const double *y, const double *start, double *ws);

/* The plain fit by the fixed covariate information (stats_glm_logit_fast.c)
 * for glm_logit_fit, which has made its checks (more rows than q + 1, x not
 * constant, no allele absent from a class). Returns 1 with *out complete
 * (the estimate, or FM_GLM_RANK_DEFICIENT), or 0: the full Newton
 * iteration is to decide (out's estimate not set). */
int glm_logit_fit_fast(const glm_logit_pre *pre, const double *y, const double *x,
                       const double *start, int max_iter, double tol, double *ws, glm_fit *out);

/* plink2's --vif default. */
#define GLM_VIF_MAX 50.0
/* Halvings before a step is given up (2^-30 of a Newton step). */
#define GLM_MAX_HALVINGS 30

/* One fit: logit P(y_i = 1) = c_i' a + x_i b over the rows i < n with x[i]
 * not NaN (the others are left out: a missing call). c: n x q column-major
 * (leading dimension n), y: n values 0/1, x: n values, start: the q
 * coefficients of glm_logit_null (b starts at 0). firth: fm_glm_firth.
 * pre: NULL, or the same rows' glm_logit_pre, which lets a plain fit take
 * glm_logit_fit_fast first (the same estimate within the stopping rule's
 * tol).
 * Writes *out (obs_ct = rows used; code and firth as fm_stats_glm.h and
 * plink2's --glm rules: a constant x is FM_GLM_CONST_OMITTED_ALLELE; with
 * FM_GLM_FIRTH_FALLBACK, Firth is used where plink2 uses it). Reads only
 * its inputs; ws: at least glm_logit_ws_doubles(n, q) doubles. Thread-safe
 * with distinct ws and out. */
void glm_logit_fit(int64_t n, int64_t q, const double *c, const double *y, const double *x,
                   const double *start, const glm_logit_pre *pre, int firth, int max_iter,
                   double tol, double *ws, glm_fit *out);

/* ---- stats_glm.c: shared by the methods -------------------------------- */

/* Cholesky factor L of the m x m matrix a (its lower triangle, column-major,
 * a[i + j * m] for i >= j), in place; 0 when a pivot is not above min_pivot
 * or not finite (not numerically positive definite), else 1. */
int glm_chol(double *a, int64_t m, double min_pivot);

/* v = (L L')^-1 v in place, L from glm_chol: v = L^-1 v
 * (glm_chol_forward), then v = L'^-1 v (glm_chol_backward). */
void glm_chol_solve(const double *l, int64_t m, double *v);
void glm_chol_forward(const double *l, int64_t m, double *v);
void glm_chol_backward(const double *l, int64_t m, double *v);

/* a'b over m values, in order. */
double glm_dot(const double *a, const double *b, int64_t m);

/* Phenotypes with the same used rows (pheno not NaN) form a group. */
typedef struct glm_groups {
  int64_t n_groups;
  int32_t *group_of;     /* per phenotype: its group */
  int64_t *g_off;        /* n_groups + 1 offsets into g_rows */
  int64_t *g_rows;       /* each group's rows, ascending */
  unsigned char *in;     /* n_rows x n_groups, row-major: row i is in group h */
} glm_groups;

/* The checks every method makes (fm_stats_glm.h's FM_EARG cases common to
 * both), naming what in messages. */
fm_status glm_check(const char *what, const fm_mat *x, const fm_glm_design *d,
                    const fm_glm_opts *opts, const fm_glm_out *out, fm_err *err);
fm_status glm_groups_make(const fm_glm_design *d, glm_groups *g, fm_err *err);
void glm_groups_free(glm_groups *g);


/* Columns per block of glm_stream: a block holds at most the panel budget
 * (capped at 8 MB) of decoded doubles, or without decode of 2-bit codes (so
 * each product over a block has thousands of columns), at least one. */
int64_t glm_block_cols(const fm_mat *x, int decode, const fm_ctl *ctl);

/* The streamed pass: for each block of x's columns, blk (a view of them:
 * logical columns c0 ... c0 + blk->n_cols - 1 of x) and, with decode,
 * panel (their decoded values, n_rows x blk->n_cols, missing NaN, no
 * transform; NULL without decode); polls ctl, reports progress in columns
 * and evicts each block. */
typedef fm_status (*glm_block_fn)(void *ud, const fm_mat *blk, int64_t c0, const double *panel,
                                  fm_err *err);
fm_status glm_stream(const fm_mat *x, const fm_ctl *ctl, const char *what, int decode,
                     glm_block_fn fn, void *ud, fm_err *err);

/* out's row (variant j of p, phenotype c) from f. */
void glm_put(const fm_glm_out *out, int64_t p, int64_t j, int64_t c, const glm_fit *f);

/* out->allele_ct (when set) of the block's columns c0 ... c0 + nb - 1 of
 * x's p columns from their decoded panel (fm_glm_out's definition). */
void glm_allele_cts(const double *panel, int64_t n, int64_t nb, int64_t c0, int64_t p,
                    const fm_glm_design *d, const fm_glm_out *out);

/* Per column of a panel, the mean of its observed values (0 when none). */
void glm_column_means(const double *panel, int64_t n, int64_t nb, double *mean);

/* FM_EARG naming the variant (c0 + column, 1-based) and row of an infinite
 * genotype in the panel. */
fm_status glm_check_finite(const double *panel, int64_t n, int64_t nb, int64_t c0, fm_err *err);

#endif
