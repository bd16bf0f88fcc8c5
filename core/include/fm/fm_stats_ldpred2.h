/* fm_stats_ldpred2.h: LDpred2 polygenic scores from GWAS summary statistics
 * and an LD band (fm_band.h): the infinitesimal model (inf), the Gibbs
 * sampler over a grid of (p, h2, sparse) (grid) and the automatic model that
 * samples p, h2 and alpha as well (auto), as bigsnpr 1.12 defines them.
 *
 * Model (Privé, Arbel and Vilhjálmsson 2020): on the scale of standardized
 * genotypes, each effect is 0 with probability 1 - p, otherwise
 * N(0, h2 / (m p)) (auto with use_mle: N(0, sigma2 (S_j^2)^(alpha + 1)),
 * Privé et al. 2023). The data of variant j are the marginal effect beta_j,
 * its standard error se_j and the sample size n_j (n_eff), turned into
 *   scale_j    = sqrt(n_j se_j^2 + beta_j^2)     (sd(y) / sd(G_j), up to sd(y))
 *   beta_hat_j = beta_j / scale_j                (a marginal correlation)
 * and every effect returned is on the allele scale again (times scale_j).
 * S_j^2 = 1 / scale_j^2 (log_var_j = -2 log scale_j) in auto's MLE.
 *
 * Shapes: m = ld->n variants; every per-variant array has m entries, in the
 * band's order; per-set and per-chain results are m x K, column-major.
 * The band must have a unit diagonal (|R_jj - 1| <= 1e-6, every column
 * storing its diagonal) and strictly increasing row indices per column;
 * symmetry is the caller's (fm_band.h). shrink (0 < shrink <= 1) replaces
 * R by shrink R + (1 - shrink) I: off-diagonal entries times shrink
 * (bigsnpr's shrink_corr).
 *
 * inf:  (shrink R + (1 - shrink) I + diag(m / (h2 n_j))) x = beta_hat,
 *       effects x_j scale_j. Solved by Jacobi-preconditioned conjugate
 *       gradients, one band product per iteration; stops when
 *       ||b - A x||_2 <= tol ||b||_2 (default tol 1e-12: the solution is
 *       then within cond(A) 1e-12 of the exact one, 1e-10 of a dense
 *       solve() on windows of the fixture's kind). A curvature p'Ap <= 0
 *       means A is not positive definite: FM_EDEGENERATE naming shrink.
 * grid: per set (p, h2, sparse) a Gibbs sampler from beta = 0, sweeping
 *       j = 0 .. m-1: r_j = beta_hat_j - shrink (R beta - beta_j)_j,
 *       C1 = h2 n_j / (m p), C2 = 1 / (1 + 1 / C1), mu = C2 r_j,
 *       v = C2 / n_j, post_j = 1 / (1 + (1 - p) / p sqrt(1 + C1)
 *       exp(-mu^2 / (2 v))); sparse and post_j < p: beta_j = 0 (adds 0 to
 *       the mean); else beta_j ~ N(mu, v) with probability post_j (else 0)
 *       and the posterior mean post_j mu is averaged over the num_iter
 *       sweeps after burn_in.
 * auto: one chain per p_init, as grid with C1 = sigma2 (S_j^2)^(alpha+1) n_j
 *       (sigma2 = h2 / (m p), alpha + 1 = 0 without use_mle); after each
 *       sweep, p ~ Beta(1 + k / L, 1 + (m - k) / L) (k sampled nonzero
 *       effects, L the mean LD score sum_i R_ij^2 over j) within p_bounds;
 *       h2 = max(beta' R_shrunk beta, 1e-3); with use_mle, (alpha + 1,
 *       sigma2) minimise sum_k [(alpha + 1) a_k + log sigma2 +
 *       b_k exp(-(alpha + 1) a_k) / sigma2] over a bootstrap resample of the
 *       k nonzero effects (a = log_var, b = beta^2) with alpha within
 *       alpha_bounds and sigma2 within a factor 2 of its previous value
 *       (bigsnpr: L-BFGS-B; here the exact minimiser: the objective is
 *       convex in (alpha + 1, log sigma2), minimised over sigma2 in closed
 *       form and over alpha by safeguarded Newton), else sigma2 = h2/(m p).
 *       allow_jump_sign = 0: a draw of the other sign than the current
 *       effect sets it to 0. Outputs per chain: the posterior means of the
 *       effects, of the probability of being causal and of (R_shrunk beta)_j
 *       ("corr_est", used by the chain filter), over the num_iter sweeps
 *       after burn_in; the paths of p, h2 and alpha over every sweep, and
 *       their means over the last num_iter.
 *
 * Divergence: a set or chain whose sampled effects in one sweep have a sum
 * of squares above 2 sum beta_hat^2 (bigsnpr's rule) or are not finite is
 * stopped there: its status says which (fm_ldpred2_status), diverged_at
 * the 1-based sweep (burn-in included), and its effects and later path
 * entries are NaN (never partial results).
 *
 * Random numbers: fm_rng (fm_rng.h) seeded with opts->seed; set or chain k
 * uses that stream advanced by k jumps (fm_rng_jump), so each result depends
 * on (seed, k) only: identical for every thread count. bigsnpr draws from
 * R's generator, so results agree with it in distribution, not draw by draw.
 * Threads: sets and chains run on fm_threads(ctl) POSIX threads (at most one
 * per set or chain); the inf band product on as many, by column ranges
 * (each entry one column's sum in a fixed order: bit-identical for every count).
 * Cancellation and progress: ctl is polled from the calling thread at least
 * every 50 ms; progress counts sweeps (grid, auto: (burn_in + num_iter) per
 * set or chain) or CG iterations (inf, against max_iter).
 * Errors: FM_EARG (a NULL array, m < 1, the data's m not the band's, a
 * beta not finite, se_j or n_j not finite and > 0, h2 or p outside (0, 1]
 * (h2 > 0 only), shrink outside (0, 1], burn_in < 0, num_iter < 1, bounds
 * out of order, naming the argument and the index), FM_EFORMAT (a column
 * without its diagonal, a diagonal not 1, row indices not increasing),
 * FM_EDEGENERATE (inf: the system is not positive definite, or CG did not
 * reach tol in max_iter iterations), FM_ENOMEM, FM_ECANCELLED, FM_EIO (the
 * file under a mapped band was truncated during the call).
 * Ownership: every input is borrowed and only read; outputs are written.
 * Thread safety: reentrant.
 * Sources: Privé, Arbel and Vilhjálmsson (2020) Bioinformatics 36:5424-5431
 * (LDpred2); Privé et al. (2022) HGG Adv 3:100136 (allow_jump_sign,
 * shrink_corr); Privé et al. (2023) AJHG 110:2042-2055 (the MLE of alpha,
 * the chain filter); bigsnpr 1.12.21 (snp_ldpred2_inf/grid/auto, their
 * defaults). Oracles: core/tests/stats/stats_ldpred2/ (dense Cholesky),
 * RfmallocStatgen's tests against values bigsnpr computed
 * (tools/oracle-ldpred2.R). */
#ifndef FM_STATS_LDPRED2_H
#define FM_STATS_LDPRED2_H

#include "fm_band.h"
#include "fm_base.h"

/* Summary statistics of the band's m variants, in its order. */
typedef struct fm_ldpred2_data {
  int64_t n;             /* m: must equal the band's n */
  const double *beta;    /* m marginal effects (allele scale), finite */
  const double *beta_se; /* m standard errors, finite and > 0 */
  const double *n_eff;   /* m sample sizes, finite and > 0 */
} fm_ldpred2_data;

/* Why a set or chain stopped. */
typedef enum fm_ldpred2_status {
  FM_LDPRED2_OK = 0,
  FM_LDPRED2_EXPLODED = 1, /* sum of squared sampled effects > 2 sum beta_hat^2 */
  FM_LDPRED2_NONFINITE = 2 /* a sampled effect or the h2 estimate not finite */
} fm_ldpred2_status;

typedef struct fm_ldpred2_inf_opts {
  double shrink;    /* off-diagonal multiplier, (0, 1]; 0: 1 */
  double tol;       /* relative residual to reach; 0: 1e-12 */
  int64_t max_iter; /* CG iterations; 0: 1000 */
} fm_ldpred2_inf_opts;

typedef struct fm_ldpred2_inf_info {
  int64_t iterations;  /* CG iterations run */
  double rel_residual; /* ||b - A x|| / ||b|| at the end (recomputed) */
} fm_ldpred2_inf_info;

/* LDpred2-inf: effects of the infinitesimal model with heritability h2 > 0.
 * Shape:  beta_out m doubles (allele scale). info may be NULL.
 * Errors: see the module comment. */
FM_NODISCARD fm_status fm_stats_ldpred2_inf(const fm_band *ld, const fm_ldpred2_data *d,
                                            double h2, const fm_ldpred2_inf_opts *opts,
                                            double *beta_out, fm_ldpred2_inf_info *info,
                                            const fm_ctl *ctl, fm_err *err);

/* Settings of the Gibbs samplers. */
typedef struct fm_ldpred2_gibbs_opts {
  int64_t burn_in;  /* sweeps discarded, >= 0 (bigsnpr: grid 50, auto 500) */
  int64_t num_iter; /* sweeps averaged, >= 1 (bigsnpr: grid 100, auto 200) */
  double shrink;    /* off-diagonal multiplier, (0, 1]; 0: 1 */
  uint64_t seed;    /* fm_rng seed */
} fm_ldpred2_gibbs_opts;

/* One column per set or chain: m x K results and K codes. */
typedef struct fm_ldpred2_grid_out {
  double *beta;         /* m x K effects (allele scale); NaN columns where diverged */
  int32_t *status;      /* K fm_ldpred2_status */
  int64_t *diverged_at; /* K: the 1-based sweep where it stopped, 0 if it did not */
} fm_ldpred2_grid_out;

/* LDpred2-grid: K = n_sets models (p[k], h2[k], sparse[k]).
 * p in (0, 1], h2 > 0. Errors: see the module comment. */
FM_NODISCARD fm_status fm_stats_ldpred2_grid(const fm_band *ld, const fm_ldpred2_data *d,
                                             int64_t n_sets, const double *p, const double *h2,
                                             const int32_t *sparse,
                                             const fm_ldpred2_gibbs_opts *opts,
                                             const fm_ldpred2_grid_out *out, const fm_ctl *ctl,
                                             fm_err *err);

typedef struct fm_ldpred2_auto_opts {
  int64_t n_chains;      /* K >= 1 */
  const double *p_init;  /* K initial p, clamped into p_bounds */
  double h2_init;        /* > 0 (bigsnpr: from LD score regression) */
  int allow_jump_sign;   /* bigsnpr's default 1; its tutorial uses 0 */
  int use_mle;           /* estimate alpha and sigma2 (bigsnpr's default 1) */
  double p_bounds[2];    /* 0 < lo <= hi <= 1 (bigsnpr: 1e-5, 1) */
  double alpha_bounds[2]; /* lo <= hi (bigsnpr: -1.5, 0.5) */
} fm_ldpred2_auto_opts;

typedef struct fm_ldpred2_auto_out {
  double *beta;         /* m x K posterior mean effects (allele scale) */
  double *postp;        /* m x K posterior probabilities of being causal */
  double *corr_est;     /* m x K posterior means of (R_shrunk beta)_j */
  double *path_p;       /* (burn_in + num_iter) x K, NaN after divergence */
  double *path_h2;      /* likewise */
  double *path_alpha;   /* likewise; NaN throughout without use_mle */
  double *p_est;        /* K means of the last num_iter path entries */
  double *h2_est;       /* K */
  double *alpha_est;    /* K */
  int32_t *status;      /* K fm_ldpred2_status */
  int64_t *diverged_at; /* K: 1-based sweep, 0 if the chain did not diverge */
} fm_ldpred2_auto_out;

/* LDpred2-auto: K chains. Errors: see the module comment. */
FM_NODISCARD fm_status fm_stats_ldpred2_auto(const fm_band *ld, const fm_ldpred2_data *d,
                                             const fm_ldpred2_auto_opts *aopts,
                                             const fm_ldpred2_gibbs_opts *opts,
                                             const fm_ldpred2_auto_out *out, const fm_ctl *ctl,
                                             fm_err *err);

/* The mean LD score of the band: sum over stored entries of R_ij^2, over m
 * (auto's L; shrink does not enter, as in bigsnpr). */
double fm_stats_ldpred2_mean_ld(const fm_band *ld);

#endif
