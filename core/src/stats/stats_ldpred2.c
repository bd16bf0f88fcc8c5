/* stats_ldpred2.c: the parts of LDpred2 (fm_stats_ldpred2.h) that inf,
 * grid and auto share: input checks, bigsnpr's scaling of the summary
 * statistics, random draws, and the runner of sets and chains on POSIX
 * threads (stats_ldpred2_impl.h). */
#define _POSIX_C_SOURCE 200809L /* pthread_sigmask, sigsetjmp, clock_gettime */
#include "stats_ldpred2_impl.h"

#include "fm/fm_fault.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

fm_status ldp_check(const fm_band *ld, const fm_ldpred2_data *d, double shrink,
                    const char *what, fm_err *err) {
  if (!ld || !d || !ld->colptr || !ld->rowidx || !ld->values || !d->beta || !d->beta_se ||
      !d->n_eff)
    return fm_err_set(err, FM_EARG, "%s: the LD band and the summary statistics are required",
                      what);
  const int64_t m = ld->n;
  if (m < 1) return fm_err_set(err, FM_EARG, "%s: the LD band has no variant", what);
  if (d->n != m)
    return fm_err_set(err, FM_EARG, "%s: %lld summary statistics for an LD band of %lld variants",
                      what, (long long)d->n, (long long)m);
  if (!(shrink > 0 && shrink <= 1))
    return fm_err_set(err, FM_EARG, "%s: shrink is %g, it must lie in (0, 1]", what, shrink);
  for (int64_t j = 0; j < m; j++) {
    if (!isfinite(d->beta[j]))
      return fm_err_set(err, FM_EARG, "%s: beta[%lld] is not finite", what, (long long)j + 1);
    if (!(isfinite(d->beta_se[j]) && d->beta_se[j] > 0))
      return fm_err_set(err, FM_EARG, "%s: beta_se[%lld] is %g, it must be finite and > 0", what,
                        (long long)j + 1, d->beta_se[j]);
    if (!(isfinite(d->n_eff[j]) && d->n_eff[j] > 0))
      return fm_err_set(err, FM_EARG, "%s: n_eff[%lld] is %g, it must be finite and > 0", what,
                        (long long)j + 1, d->n_eff[j]);
  }
  for (int64_t j = 0; j < m; j++) {
    const int64_t lo = ld->colptr[j], hi = ld->colptr[j + 1];
    if (lo > hi || lo < 0)
      return fm_err_set(err, FM_EFORMAT, "%s: LD band colptr decreases at column %lld", what,
                        (long long)j + 1);
    int has_diag = 0;
    for (int64_t k = lo; k < hi; k++) {
      const int32_t i = ld->rowidx[k];
      if (i < 0 || i >= m || (k > lo && i <= ld->rowidx[k - 1]))
        return fm_err_set(err, FM_EFORMAT,
                          "%s: LD band column %lld: row indices must increase within 0..%lld",
                          what, (long long)j + 1, (long long)m - 1);
      if (i == j) {
        const double v = fm_band_value(ld, k);
        if (!(fabs(v - 1) <= 1e-6))
          return fm_err_set(err, FM_EFORMAT,
                            "%s: LD band diagonal entry %lld is %g; a correlation matrix has 1",
                            what, (long long)j + 1, v);
        has_diag = 1;
      }
    }
    if (!has_diag)
      return fm_err_set(err, FM_EFORMAT, "%s: LD band column %lld does not store its diagonal",
                        what, (long long)j + 1);
  }
  return FM_OK;
}

void ldp_scale(const fm_ldpred2_data *d, double *scale, double *beta_hat) {
  for (int64_t j = 0; j < d->n; j++) {
    const double b = d->beta[j], se = d->beta_se[j];
    scale[j] = sqrt(d->n_eff[j] * se * se + b * b);
    beta_hat[j] = b / scale[j];
  }
}

double fm_stats_ldpred2_mean_ld(const fm_band *ld) {
  if (!ld || ld->n < 1) return NAN;
  double s = 0;
  for (int64_t k = 0; k < ld->colptr[ld->n]; k++) {
    const double v = fm_band_value(ld, k);
    s += v * v;
  }
  return s / (double)ld->n;
}

/* ---- random draws ---------------------------------------------------------- */

double ldp_rgamma(fm_rng *r, double shape) {
  const double dd = shape - 1.0 / 3.0, c = 1 / sqrt(9 * dd);
  for (;;) {
    double x, v;
    do {
      x = fm_rng_norm(r);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = fm_rng_unif(r);
    if (u < 1 - 0.0331 * x * x * x * x) return dd * v;
    if (u > 0 && log(u) < 0.5 * x * x + dd * (1 - v + log(v))) return dd * v;
  }
}

double ldp_rbeta(fm_rng *r, double a, double b) {
  const double x = ldp_rgamma(r, a), y = ldp_rgamma(r, b);
  return x / (x + y);
}

void ldp_rng_stream(fm_rng *r, uint64_t seed, int64_t k) {
  fm_rng_seed(r, seed);
  for (int64_t i = 0; i < k; i++) fm_rng_jump(r);
}

/* ---- tasks on threads ---------------------------------------------------- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int ldp_threads(const fm_ctl *ctl, int64_t n_tasks) {
  int nt = fm_threads(ctl);
  if (n_tasks < nt) nt = (int)(n_tasks > 0 ? n_tasks : 1);
  return nt;
}

typedef struct ldp_shared {
  ldp_runner run;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int finished;      /* workers done */
  fm_status st;      /* the first error */
  fm_err err;        /* its message */
  double last_poll;  /* single-thread mode: time of the last ctl poll */
} ldp_shared;

static void note_error(ldp_shared *sh, fm_status st, const fm_err *e, int locked) {
  if (!locked) pthread_mutex_lock(&sh->mu);
  if (sh->st == FM_OK) {
    sh->st = st;
    sh->err = *e;
  }
  if (!locked) pthread_mutex_unlock(&sh->mu);
  atomic_store(&sh->run.stop, 1);
}

/* Task k behind a jump point of this thread: a SIGBUS in a mapped band
 * (a file truncated under it) becomes FM_EIO. */
static fm_status guarded(ldp_shared *sh, int64_t k, int tid, fm_err *e) {
  fm_fault_jmp j;
  fm_fault_push(&j);
  if (sigsetjmp(j.jb, 0) != 0) return fm_fault_caught(&j, e);
  const fm_status st = sh->run.fn(sh->run.ud, k, tid, &sh->run, e);
  fm_fault_pop(&j);
  return st;
}

static void work(ldp_shared *sh, int tid) {
  for (;;) {
    if (atomic_load(&sh->run.stop)) return;
    const long long k = atomic_fetch_add(&sh->run.next, 1);
    if (k >= sh->run.n_tasks) return;
    fm_err e;
    fm_err_clear(&e);
    const fm_status st = guarded(sh, k, tid, &e);
    if (st != FM_OK) {
      note_error(sh, st, &e, 0);
      return;
    }
  }
}

typedef struct ldp_worker {
  ldp_shared *sh;
  int tid;
} ldp_worker;

static void *worker_main(void *arg) {
  const ldp_worker *w = arg;
  sigset_t all;
  sigfillset(&all);
  sigdelset(&all, SIGBUS); /* a fault in a mapping stays ours (fm_fault.h) */
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  work(w->sh, w->tid);
  pthread_mutex_lock(&w->sh->mu);
  w->sh->finished++;
  pthread_cond_signal(&w->sh->cv);
  pthread_mutex_unlock(&w->sh->mu);
  return NULL;
}

int ldp_poll(ldp_runner *run, int tid) {
  atomic_fetch_add(&run->done, 1);
  if (run->threads == 1 && tid == 0) {
    ldp_shared *sh = (ldp_shared *)run; /* run is the first member */
    const double t = now_s();
    if (t - sh->last_poll >= 0.05) {
      sh->last_poll = t;
      if (fm_ctl_cancelled(run->ctl)) atomic_store(&run->stop, 1);
      fm_ctl_progress(run->ctl, (double)atomic_load(&run->done), run->total);
    }
  }
  return atomic_load(&run->stop);
}

fm_status ldp_run(ldp_task_fn fn, void *ud, int64_t n_tasks, int threads, double total,
                  const fm_ctl *ctl, const char *what, fm_err *err) {
  ldp_shared sh;
  sh.run.fn = fn;
  sh.run.ud = ud;
  sh.run.n_tasks = n_tasks;
  sh.run.threads = threads < 1 ? 1 : threads;
  atomic_init(&sh.run.next, 0);
  atomic_init(&sh.run.stop, 0);
  atomic_init(&sh.run.done, 0);
  sh.run.total = total;
  sh.run.ctl = ctl;
  sh.finished = 0;
  sh.st = FM_OK;
  fm_err_clear(&sh.err);
  sh.last_poll = -1; /* the first sweep polls */
  if (pthread_mutex_init(&sh.mu, NULL) != 0)
    return fm_err_set(err, FM_ENOMEM, "%s: cannot create a mutex", what);
  if (pthread_cond_init(&sh.cv, NULL) != 0) {
    pthread_mutex_destroy(&sh.mu);
    return fm_err_set(err, FM_ENOMEM, "%s: cannot create a condition variable", what);
  }
  int cancelled = 0;
  if (sh.run.threads == 1) {
    work(&sh, 0);
    cancelled = sh.st == FM_OK && atomic_load(&sh.run.stop);
  } else {
    pthread_t tid[FM_THREADS_MAX];
    ldp_worker w[FM_THREADS_MAX];
    int started = 0;
    for (int t = 0; t < sh.run.threads; t++) {
      w[t] = (ldp_worker){&sh, t};
      if (pthread_create(&tid[t], NULL, worker_main, &w[t]) != 0) break;
      started++;
    }
    if (started == 0) { /* no thread could start: run here */
      sh.run.threads = 1;
      work(&sh, 0);
      cancelled = sh.st == FM_OK && atomic_load(&sh.run.stop);
    } else {
      pthread_mutex_lock(&sh.mu);
      while (sh.finished < started) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50000000L;
        if (ts.tv_nsec >= 1000000000L) {
          ts.tv_sec++;
          ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&sh.cv, &sh.mu, &ts);
        if (sh.finished >= started) break;
        pthread_mutex_unlock(&sh.mu);
        if (!cancelled && fm_ctl_cancelled(ctl)) {
          cancelled = 1;
          atomic_store(&sh.run.stop, 1);
        }
        fm_ctl_progress(ctl, (double)atomic_load(&sh.run.done), total);
        pthread_mutex_lock(&sh.mu);
      }
      pthread_mutex_unlock(&sh.mu);
      for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    }
  }
  pthread_cond_destroy(&sh.cv);
  pthread_mutex_destroy(&sh.mu);
  if (sh.st != FM_OK) {
    if (err) *err = sh.err;
    return sh.st;
  }
  if (cancelled) return fm_err_set(err, FM_ECANCELLED, "%s: cancelled", what);
  fm_ctl_progress(ctl, total, total);
  return FM_OK;
}
