/* stats_ldpred2_impl.h: what the LDpred2 modules share (stats_ldpred2.c):
 * the checks and scaling of the inputs, the band's column kernels, the
 * random draws beyond fm_rng's (gamma, beta), and the task runner that
 * spreads sets or chains over POSIX threads while the calling thread polls
 * cancellation and reports progress. Private to core/src/stats/. */
#ifndef FM_STATS_LDPRED2_IMPL_H
#define FM_STATS_LDPRED2_IMPL_H

#include "fm/fm_rng.h"
#include "fm/fm_stats_ldpred2.h"

#include <math.h>
#include <stdatomic.h>
#if defined(__SSE2__)
#include <emmintrin.h> /* baseline on x86-64 */
#endif

/* Check the band (unit diagonal, increasing rows), the data and shrink;
 * `what` names the caller in messages. */
fm_status ldp_check(const fm_band *ld, const fm_ldpred2_data *d, double shrink,
                    const char *what, fm_err *err);

/* scale_j = sqrt(n_j se_j^2 + beta_j^2), beta_hat_j = beta_j / scale_j
 * (m doubles each, caller-allocated). */
void ldp_scale(const fm_ldpred2_data *d, double *scale, double *beta_hat);

/* xs[k] += coef * v[k] for k < len: with SSE2 (every x86-64), two doubles
 * an instruction, four a step; the same products and sums as the scalar
 * loop (no fused multiply-add), so results do not depend on the path. The
 * sampler's time goes here when many effects are nonzero. */
static inline void ldp_axpy_f64(double *xs, const double *v, int64_t len, double coef) {
  int64_t k = 0;
#if defined(__SSE2__)
  const __m128d c = _mm_set1_pd(coef);
  for (; k + 4 <= len; k += 4) {
    const __m128d a = _mm_add_pd(_mm_loadu_pd(xs + k), _mm_mul_pd(c, _mm_loadu_pd(v + k)));
    const __m128d b = _mm_add_pd(_mm_loadu_pd(xs + k + 2), _mm_mul_pd(c, _mm_loadu_pd(v + k + 2)));
    _mm_storeu_pd(xs + k, a);
    _mm_storeu_pd(xs + k + 2, b);
  }
#endif
  for (; k < len; k++) xs[k] += coef * v[k];
}

static inline void ldp_axpy_f32(double *xs, const float *v, int64_t len, double coef) {
  int64_t k = 0;
#if defined(__SSE2__)
  const __m128d c = _mm_set1_pd(coef);
  for (; k + 4 <= len; k += 4) {
    const __m128 f = _mm_loadu_ps(v + k);
    const __m128d lo = _mm_cvtps_pd(f), hi = _mm_cvtps_pd(_mm_movehl_ps(f, f));
    _mm_storeu_pd(xs + k, _mm_add_pd(_mm_loadu_pd(xs + k), _mm_mul_pd(c, lo)));
    _mm_storeu_pd(xs + k + 2, _mm_add_pd(_mm_loadu_pd(xs + k + 2), _mm_mul_pd(c, hi)));
  }
#endif
  for (; k < len; k++) xs[k] += coef * (double)v[k];
}

/* x += coef * R[, j] (the column's stored entries). A window's rows are
 * usually one consecutive run (first .. last): then the update runs over a
 * plain slice of x (ldp_axpy_*) and reads no row index. */
static inline void ldp_axpy_col(const fm_band *b, int64_t j, double coef, double *x) {
  const int64_t lo = b->colptr[j], hi = b->colptr[j + 1], len = hi - lo;
  if (len <= 0) return;
  const int32_t *ri = b->rowidx;
  if ((int64_t)ri[hi - 1] - ri[lo] == len - 1) {
    if (b->dtype == FM_BAND_F32)
      ldp_axpy_f32(x + ri[lo], (const float *)b->values + lo, len, coef);
    else
      ldp_axpy_f64(x + ri[lo], (const double *)b->values + lo, len, coef);
  } else if (b->dtype == FM_BAND_F32) {
    const float *v = b->values;
    for (int64_t k = lo; k < hi; k++) x[ri[k]] += coef * (double)v[k];
  } else {
    const double *v = b->values;
    for (int64_t k = lo; k < hi; k++) x[ri[k]] += coef * v[k];
  }
}

/* sum_k v[k] xs[k] over k < len in four interleaved partial sums (k mod 4),
 * added as (s0 + s1) + (s2 + s3), then the tail: four independent
 * additions in flight instead of one chain (the chain's latency, not memory,
 * bounded the band product). */
#define LDP_DOT4(V, XS, LEN, OUT)                                            \
  do {                                                                        \
    double s0_ = 0, s1_ = 0, s2_ = 0, s3_ = 0;                                \
    int64_t k_ = 0;                                                           \
    for (; k_ + 4 <= (LEN); k_ += 4) {                                        \
      s0_ += (double)(V)[k_] * (XS)[k_];                                      \
      s1_ += (double)(V)[k_ + 1] * (XS)[k_ + 1];                              \
      s2_ += (double)(V)[k_ + 2] * (XS)[k_ + 2];                              \
      s3_ += (double)(V)[k_ + 3] * (XS)[k_ + 3];                              \
    }                                                                         \
    double t_ = (s0_ + s1_) + (s2_ + s3_);                                    \
    for (; k_ < (LEN); k_++) t_ += (double)(V)[k_] * (XS)[k_];                \
    (OUT) = t_;                                                               \
  } while (0)

/* R[, j]' x: a consecutive run of rows as LDP_DOT4, other columns in stored
 * order; the same sum for every thread count. */
static inline double ldp_dot_col(const fm_band *b, int64_t j, const double *x) {
  const int64_t lo = b->colptr[j], hi = b->colptr[j + 1], len = hi - lo;
  const int32_t *ri = b->rowidx;
  double s = 0;
  if (len > 0 && (int64_t)ri[hi - 1] - ri[lo] == len - 1) {
    const double *xs = x + ri[lo];
    if (b->dtype == FM_BAND_F32) {
      const float *v = (const float *)b->values + lo;
      LDP_DOT4(v, xs, len, s);
    } else {
      const double *v = (const double *)b->values + lo;
      LDP_DOT4(v, xs, len, s);
    }
  } else if (b->dtype == FM_BAND_F32) {
    const float *v = b->values;
    for (int64_t k = lo; k < hi; k++) s += (double)v[k] * x[ri[k]];
  } else {
    const double *v = b->values;
    for (int64_t k = lo; k < hi; k++) s += v[k] * x[ri[k]];
  }
  return s;
}

/* The per-variant constants of the conditional draw of effect j when its
 * prior variance is c_j / n_j (c_j = h2 n_j / (m p) times the MLE's
 * frequency factor): C2 = c_j / (1 + c_j) shrinks the residual r_j to the
 * conditional mean C2 r_j (whose variance is C2 / n_j), K = (1 - p) / p
 * sqrt(1 + c_j) and h = C2 n_j / 2 give the posterior probability of being
 * causal 1 / q with q = 1 + K exp(-h r_j^2) (bigsnpr's
 * 1 / (1 + (1 - p) / p sqrt(1 + C1) exp(-C3^2 / C4 / 2)) rearranged).
 * Computed once per grid set or auto sweep, so that the sweep needs one exp
 * a variant, and a division only where the probability is averaged: the
 * draw "causal with probability 1 / q" is u q < 1 for a uniform u, and the
 * sparse rule 1 / q < p is p q > 1. */
typedef struct ldp_coef {
  double *C2, *K, *h; /* m each */
} ldp_coef;

static inline void ldp_coef_fill(const ldp_coef *c, int64_t j, double C1, double nj,
                                 double inv_odd) {
  const double C2 = C1 / (1 + C1);
  c->C2[j] = C2;
  c->K[j] = inv_odd * sqrt(1 + C1);
  c->h[j] = C2 * nj / 2;
}

/* A Gamma(shape, 1) draw for shape >= 1 (Marsaglia and Tsang 2000, ACM TOMS
 * 26:363-372), and a Beta(a, b) draw as X / (X + Y) for a, b >= 1. */
double ldp_rgamma(fm_rng *r, double shape);
double ldp_rbeta(fm_rng *r, double a, double b);

/* The stream of set or chain k: fm_rng seeded with seed, k jumps. */
void ldp_rng_stream(fm_rng *r, uint64_t seed, int64_t k);

/* ---- tasks on threads ---------------------------------------------------- */

typedef struct ldp_runner ldp_runner;

/* Run task k for k = 0 .. n_tasks-1; tid in 0 .. threads-1 indexes the
 * caller's per-thread scratch. Returns FM_OK or an error status (its message
 * in err, the task's own). A task polls ldp_poll once per sweep. */
typedef fm_status (*ldp_task_fn)(void *ud, int64_t k, int tid, ldp_runner *run, fm_err *err);

struct ldp_runner {
  ldp_task_fn fn;
  void *ud;
  int64_t n_tasks;
  int threads;       /* workers (1: the calling thread runs every task) */
  atomic_llong next; /* next task to hand out */
  atomic_int stop;   /* set on cancel or on a task's error */
  atomic_llong done; /* progress units done */
  double total;      /* progress units in all */
  const fm_ctl *ctl;
};

/* Threads to use for n_tasks tasks under ctl (1 .. min(n_tasks, fm_threads)). */
int ldp_threads(const fm_ctl *ctl, int64_t n_tasks);

/* Run every task; `total` progress units. The first error (or
 * FM_ECANCELLED) wins; tasks not started are skipped after it. */
fm_status ldp_run(ldp_task_fn fn, void *ud, int64_t n_tasks, int threads, double total,
                  const fm_ctl *ctl, const char *what, fm_err *err);

/* Called by a task once per unit of work: counts it, and returns nonzero
 * when the task should stop (cancelled or another task failed). On a
 * single thread it polls ctl itself (at most every 50 ms). */
int ldp_poll(ldp_runner *run, int tid);

#endif
