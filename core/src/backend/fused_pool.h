/* fused_pool.h (private): the worker threads of one fused product.
 *
 * A pool lives for one product (so no thread outlives a call and a forked
 * child never inherits one): fused_pool_run runs task(arg, tid) once on each
 * of its threads, the calling thread being tid 0, and returns when all have
 * finished. Workers block every signal but SIGBUS, so signals (R's
 * interrupt) reach the calling thread only. Each thread runs the task
 * behind a jump point of its own (fm_fault.h): a SIGBUS reading a
 * registered mapping (its file truncated from outside) ends that thread's
 * share and is kept for fused_pool_fault. Not itself thread-safe: one
 * caller per pool. */
#ifndef FM_FUSED_POOL_H
#define FM_FUSED_POOL_H

struct fm_fault_info; /* fm_fault.h */

typedef void (*fused_task)(void *arg, int tid);

typedef struct fused_pool fused_pool;

/* A pool of up to n_threads threads (fewer when the system refuses to start
 * more: the caller's thread always counts). NULL when out of memory. */
fused_pool *fused_pool_start(int n_threads);

/* Threads in the pool, >= 1. */
int fused_pool_size(const fused_pool *pool);

void fused_pool_run(fused_pool *pool, fused_task task, void *arg);

/* The first fault a thread of the pool took in a run (then the task's
 * outputs are incomplete), or NULL; it stays set. Valid until
 * fused_pool_stop. */
const struct fm_fault_info *fused_pool_fault(fused_pool *pool);

/* Join and free; NULL is fine. */
void fused_pool_stop(fused_pool *pool);

#endif
