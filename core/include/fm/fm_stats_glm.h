/* fm_stats_glm.h: streamed association tests (GWAS). Every column (variant)
 * of a samples x variants genotype matrix is tested against one or more
 * phenotypes, adjusted for covariates, in one pass over the matrix:
 *
 *   linear    y = C a + x b + e          (least squares; t test on b)
 *   logistic  logit P(y = 1) = C a + x b (maximum likelihood by Newton's
 *             method; Wald test on b), with Firth's penalized likelihood
 *             always, never, or as a fallback when the plain fit fails
 *
 * C holds the covariates with the intercept column (the caller adds it);
 * x is the column's decoded value (allele count or dosage of the counted
 * allele, times the row's genotype scale when one is given). Output per
 * variant and phenotype: b, its standard error, the test statistic (t or z),
 * the number of samples used (OBS_CT) and an error code (fm_glm_code, the
 * ERRCODE vocabulary of plink2 --glm). P values are left to the caller
 * (t on obs_ct - n_covar - 1 degrees of freedom for linear, normal for
 * logistic), where a trusted distribution function is at hand.
 *
 * Samples: phenotype c uses the rows whose pheno[., c] is not NaN (its
 * covariates must then be finite). A row whose genotype is missing is left
 * out of that variant's fit (plink2's rule), unless impute_mean is set: it
 * then takes the column's mean over every row of x with an observed value.
 * Phenotypes with the same missing rows form a group that shares the work
 * that depends only on rows (the covariate basis, the null logistic fit).
 *
 * Linear: Frisch-Waugh-Lovell. Per group, an orthonormal basis Q of the
 * covariates over its rows (Householder QR) and each phenotype's residual
 * r = y - Q Q'y are made once; per column, the product X'[Q R] (fm_backend.h
 * op XTB, missing calls as 0: a backend such as "fused" computes it from the
 * stored codes) gives a = Q'x and x'r, and one decode of the column gives
 * the rows of its missing calls and sum x^2. Then
 *   x'Mx = x'x - a'a,  b = x'r / x'Mx,  RSS = r'r - b x'r,
 *   se = sqrt(RSS / (n - q - 1) / x'Mx),  t = b / se,
 * with, for a column with missing calls S, the exact downdate of the basis
 * (A = I - Q_S'Q_S, solved by Cholesky) instead of a refit.
 * Logistic: per variant and phenotype, Newton-Raphson from the group's
 * covariates-only fit; se from the inverse information at the estimate.
 * Firth (1993): the score gains h_i (1/2 - p_i) (h the hat diagonal of
 * W^1/2 X); se = sqrt(diag((X'WX)^-1)) at the penalized estimate and a Wald
 * z, as plink2 reports them (not logistf's profile-likelihood P).
 *
 * Determinism: each (variant, phenotype) result depends only on its column,
 * the design and the product backend's arithmetic: bit-identical for every
 * panel budget (block size) and thread count when the backend's product is
 * (fused: always; the reference path: when the BLAS's dot order does not
 * depend on the panel's width, as the reference BLAS's).
 * Errors, cancellation, progress: ctl->cancel is polled once per column
 * block; progress reports columns done of x->n_cols; each block is evicted
 * once consumed (fm_mat_evict_stream).
 * Thread safety: reentrant; x and the design are only read.
 * Sources: Frisch and Waugh (1933), Lovell (1963); Firth (1993) Biometrika
 * 80:27-38; Heinze and Schemper (2002) Stat Med 21:2409-2419; Chang et al.
 * (2015) GigaScience 4:7 (plink2 --glm, its output and ERRCODE values,
 * www.cog-genomics.org/plink/2.0/assoc#glm). */
#ifndef FM_STATS_GLM_H
#define FM_STATS_GLM_H

#include "fm_base.h"
#include "fm_panel.h"

/* ERRCODE of a (variant, phenotype) row; names as plink2 writes them
 * (fm_glm_code_name). Statistics of a row with a code other than
 * FM_GLM_OK are NaN, except FM_GLM_UNFINISHED's (the last iterate). */
typedef enum fm_glm_code {
  FM_GLM_OK = 0,                     /* "." */
  FM_GLM_CONST_OMITTED_ALLELE = 1,   /* the genotype is constant over the samples used */
  FM_GLM_SAMPLE_CT_LE_PREDICTOR = 2, /* "SAMPLE_CT<=PREDICTOR_CT": too few samples */
  FM_GLM_RANK_DEFICIENT = 3,         /* the genotype lies in the covariates' span */
  FM_GLM_SEPARATION = 4,             /* logistic without Firth: the counted allele is
                                        absent from the cases or from the controls
                                        ("SEPARATION,ALT1": the stack counts ALT) */
  FM_GLM_LOGISTIC_CONVERGE_FAIL = 5, /* logistic without Firth: no convergence */
  FM_GLM_FIRTH_CONVERGE_FAIL = 6,    /* Firth: no convergence */
  FM_GLM_UNFINISHED = 7,             /* the iteration limit was reached near a solution */
  FM_GLM_SEPARATION_REF = 8          /* as FM_GLM_SEPARATION for the other allele
                                        ("SEPARATION,REF") */
} fm_glm_code;

#define FM_GLM_CODE_COUNT 9

/* plink2's ERRCODE text of code ("." for FM_GLM_OK); "?" when unknown. */
const char *fm_glm_code_name(int code);

/* Firth's penalized likelihood in logistic regression. */
typedef enum fm_glm_firth {
  FM_GLM_FIRTH_NEVER = 0,    /* plink2 no-firth */
  FM_GLM_FIRTH_FALLBACK = 1, /* plink2 firth-fallback (its default) */
  FM_GLM_FIRTH_ALWAYS = 2    /* plink2 firth */
} fm_glm_firth;

/* What is tested against what. */
typedef struct fm_glm_design {
  int64_t n_rows;           /* samples: must equal x->n_rows */
  int64_t n_covar;          /* q >= 1 columns of covar, the intercept included */
  const double *covar;      /* n_rows x n_covar, column-major; finite on every
                               row that some phenotype uses */
  int64_t n_pheno;          /* k >= 1 */
  const double *pheno;      /* n_rows x n_pheno, column-major; NaN: the sample
                               is not in that phenotype's analysis; logistic:
                               0 (control) or 1 (case) */
  const double *geno_scale; /* NULL, or n_rows finite multipliers of the
                               decoded genotype (0.5 on chrX males to count
                               their calls 0/1) */
  const unsigned char *haploid; /* NULL, or n_rows flags: nonzero for rows
                               whose calls are hemizygous and stored as 0/2
                               (chrX males): out->allele_ct counts them once */
} fm_glm_design;

typedef struct fm_glm_opts {
  int impute_mean; /* 0: a missing call drops the sample from that variant's
                      fit (plink2); 1: it takes the column's mean */
  int firth;       /* fm_glm_firth (logistic only) */
  int max_iter;    /* logistic iterations per plain fit (after which
                      firth-fallback turns to Firth); 0: the default (25, as
                      plink2); a Firth fit gets 4 times as many */
  double tol;      /* logistic convergence: max |step| on the coefficients;
                      0: the default (1e-10) */
} fm_glm_opts;

/* Results, each n_cols x n_pheno column-major (leading dimension x->n_cols:
 * row j is variant j, column c phenotype c). */
typedef struct fm_glm_out {
  double *beta;     /* effect of one unit of x (one copy of the counted
                       allele); logistic: log odds ratio */
  double *se;       /* its standard error */
  double *stat;     /* beta / se: t (linear) or z (logistic) */
  int64_t *obs_ct;  /* samples used */
  int32_t *code;    /* fm_glm_code */
  int32_t *firth;   /* logistic: 1 where the row was fitted by Firth's
                       method, else 0; may be NULL (linear: not written) */
  double *allele_ct; /* NULL, or n_cols x 2 (leading dimension n_cols): the
                       counted allele's count over every row of x with an
                       observed call (whatever the phenotypes use), and the
                       alleles observed there: 2 per row, a haploid row
                       adding x / 2 of 1 allele (plink2 --freq's counts,
                       from which it picks its default A1) */
} fm_glm_out;

/* Linear regression of every phenotype on covariates + each column of x.
 * Errors: FM_EARG (NULL or inconsistent arguments, naming them; a
 *         non-finite covariate on a used row, naming row and column; a
 *         phenotype with no usable row; covariates of rank below n_covar
 *         over a phenotype's rows, naming the phenotype), FM_ENOMEM,
 *         FM_ECANCELLED (out then partly written), FM_EIO (the file under
 *         x truncated during the call), and the product backend's errors.
 * Owns:   borrows everything; writes only out's arrays. */
FM_NODISCARD fm_status fm_stats_glm_linear(const fm_mat *x, const fm_glm_design *d,
                                           const fm_glm_opts *opts, const fm_glm_out *out,
                                           const fm_ctl *ctl, fm_err *err);

/* Logistic regression of every 0/1 phenotype on covariates + each column of
 * x (Firth as opts->firth says). Errors as fm_stats_glm_linear, plus
 * FM_EARG for a phenotype value other than 0, 1 or NaN, or a phenotype
 * with a single class over its rows (naming it). */
FM_NODISCARD fm_status fm_stats_glm_logistic(const fm_mat *x, const fm_glm_design *d,
                                             const fm_glm_opts *opts, const fm_glm_out *out,
                                             const fm_ctl *ctl, fm_err *err);

#endif
