/* stats_par.h (private): a parallel loop and page release for the
 * statistics modules.
 *
 * stats_par_for(fn, ud, nb, nt) calls fn(ud, b, t) once for every item
 * b < nb on up to nt threads (t the thread's number, 0 the caller's), items
 * dealt round-robin; it returns when all are done. Threads live for the
 * call only (no thread outlives it, a forked child inherits none) and block
 * every signal, so R's interrupt reaches the calling thread. Items of a
 * thread that fails to start run on the caller's. fn must not read a
 * registered mapping (a SIGBUS there has no jump point on a worker): the
 * callers decode in the calling thread and hand workers heap memory. */
#ifndef STATS_PAR_H
#define STATS_PAR_H

#include <stddef.h>
#include <stdint.h>

typedef void (*stats_par_fn)(void *ud, int64_t b, int t);

void stats_par_for(stats_par_fn fn, void *ud, int64_t nb, int nt);


#endif
