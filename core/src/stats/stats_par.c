/* stats_par.c: stats_par_for (POSIX threads started and joined within
 * each call; stats_par.h). */
#define _POSIX_C_SOURCE 200809L /* pthread_sigmask */
#include "stats_par.h"

#include "fm/fm_base.h"

#include <pthread.h>
#include <signal.h>

typedef struct par_arg {
  stats_par_fn fn;
  void *ud;
  int64_t nb;
  int t, nt;
} par_arg;

static void *par_main(void *arg) {
  const par_arg *p = arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals stay with the caller's thread */
  for (int64_t b = p->t; b < p->nb; b += p->nt) p->fn(p->ud, b, p->t);
  return NULL;
}

void stats_par_for(stats_par_fn fn, void *ud, int64_t nb, int nt) {
  if (nt > nb) nt = (int)nb;
  if (nt <= 1) {
    for (int64_t b = 0; b < nb; b++) fn(ud, b, 0);
    return;
  }
  pthread_t tid[FM_THREADS_MAX];
  par_arg par[FM_THREADS_MAX];
  int started = 0;
  for (int t = 1; t < nt; t++) {
    par[t] = (par_arg){fn, ud, nb, t, nt};
    if (pthread_create(&tid[t], NULL, par_main, &par[t]) != 0) break;
    started = t;
  }
  /* items of threads that failed to start run here (t > started) */
  const int ran = started + 1;
  for (int64_t b = 0; b < nb; b++) {
    const int owner = (int)(b % nt);
    if (owner == 0 || owner >= ran) fn(ud, b, 0);
  }
  for (int t = 1; t <= started; t++) pthread_join(tid[t], NULL);
}
