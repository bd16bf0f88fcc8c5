/* fused_pool.c: the worker threads of one fused product (fused_pool.h),
 * on POSIX threads with one mutex and two condition variables. */
#define _POSIX_C_SOURCE 200809L /* pthread_sigmask, sigfillset, sigsetjmp */
#include "fused_pool.h"

#include "fm/fm_fault.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

struct fused_pool {
  pthread_mutex_t mu;
  pthread_cond_t start; /* a new task (generation moved) or quit */
  pthread_cond_t done;  /* pending reached 0 */
  unsigned long generation;
  int pending; /* workers still running the current task */
  int quit;
  fm_fault_info fault; /* the first SIGBUS a thread took in a mapping; path NULL: none */
  fused_task task;
  void *arg;
  int size;           /* threads, the caller included */
  pthread_t *threads; /* size - 1 workers */
  struct worker_arg {
    fused_pool *pool;
    int tid;
  } *args;
};

/* task(arg, tid) behind a jump point of this thread (fm_fault.h): a SIGBUS
 * in a registered mapping ends this thread's share of the task and is noted
 * for fused_pool_fault. Tasks allocate nothing and take no lock. */
static void run_task(fused_pool *pool, fused_task task, void *arg, int tid) {
  fm_fault_jmp j;
  fm_fault_push(&j);
  if (sigsetjmp(j.jb, 0) != 0) {
    fm_fault_pop(&j);
    pthread_mutex_lock(&pool->mu);
    if (!pool->fault.path) pool->fault = j.info;
    pthread_mutex_unlock(&pool->mu);
    return;
  }
  task(arg, tid);
  fm_fault_pop(&j);
}

static void *worker_main(void *p) {
  const struct worker_arg *wa = p;
  fused_pool *pool = wa->pool;
  unsigned long seen = 0;
  pthread_mutex_lock(&pool->mu);
  for (;;) {
    while (pool->generation == seen && !pool->quit) pthread_cond_wait(&pool->start, &pool->mu);
    if (pool->quit) break;
    seen = pool->generation;
    const fused_task task = pool->task;
    void *arg = pool->arg;
    pthread_mutex_unlock(&pool->mu);
    run_task(pool, task, arg, wa->tid);
    pthread_mutex_lock(&pool->mu);
    if (--pool->pending == 0) pthread_cond_signal(&pool->done);
  }
  pthread_mutex_unlock(&pool->mu);
  return NULL;
}

fused_pool *fused_pool_start(int n_threads) {
  if (n_threads < 1) n_threads = 1;
  fused_pool *pool = calloc(1, sizeof *pool);
  if (!pool) return NULL;
  pool->size = 1;
  if (n_threads > 1) {
    pool->threads = calloc((size_t)n_threads - 1, sizeof *pool->threads);
    pool->args = calloc((size_t)n_threads - 1, sizeof *pool->args);
    if (!pool->threads || !pool->args) {
      free(pool->threads);
      free(pool->args);
      free(pool);
      return NULL;
    }
  }
  pthread_mutex_init(&pool->mu, NULL);
  pthread_cond_init(&pool->start, NULL);
  pthread_cond_init(&pool->done, NULL);
  if (n_threads > 1) {
    sigset_t all, old;
    sigfillset(&all);
    /* but SIGBUS: a blocked SIGBUS from a fault kills the process at once,
     * an unblocked one reaches fm_fault's handler (a truncated mapping) */
    sigdelset(&all, SIGBUS);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* inherited by the workers */
    for (int t = 1; t < n_threads; t++) {
      pool->args[t - 1].pool = pool;
      pool->args[t - 1].tid = t;
      if (pthread_create(&pool->threads[t - 1], NULL, worker_main, &pool->args[t - 1]) != 0)
        break; /* run with the threads we have */
      pool->size++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  return pool;
}

int fused_pool_size(const fused_pool *pool) { return pool->size; }

const fm_fault_info *fused_pool_fault(fused_pool *pool) {
  pthread_mutex_lock(&pool->mu);
  const fm_fault_info *f = pool->fault.path ? &pool->fault : NULL;
  pthread_mutex_unlock(&pool->mu);
  return f;
}

void fused_pool_run(fused_pool *pool, fused_task task, void *arg) {
  if (pool->size > 1) {
    pthread_mutex_lock(&pool->mu);
    pool->task = task;
    pool->arg = arg;
    pool->pending = pool->size - 1;
    pool->generation++;
    pthread_cond_broadcast(&pool->start);
    pthread_mutex_unlock(&pool->mu);
  }
  run_task(pool, task, arg, 0);
  if (pool->size > 1) {
    pthread_mutex_lock(&pool->mu);
    while (pool->pending > 0) pthread_cond_wait(&pool->done, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
  }
}

void fused_pool_stop(fused_pool *pool) {
  if (!pool) return;
  pthread_mutex_lock(&pool->mu);
  pool->quit = 1;
  pthread_cond_broadcast(&pool->start);
  pthread_mutex_unlock(&pool->mu);
  for (int t = 0; t < pool->size - 1; t++) pthread_join(pool->threads[t], NULL);
  pthread_cond_destroy(&pool->done);
  pthread_cond_destroy(&pool->start);
  pthread_mutex_destroy(&pool->mu);
  free(pool->threads);
  free(pool->args);
  free(pool);
}
