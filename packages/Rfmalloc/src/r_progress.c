/* r_progress.c: an fm_ctl whose progress callback calls an R function (a cli
 * progress bar) from the main thread, on top of fmr_ctl()'s interrupt check. */
#include "r_progress.h"

typedef struct call_args {
  SEXP fn;
  double done, total;
} call_args;

static void eval_progress(void *data) {
  call_args *a = data;
  SEXP call = PROTECT(Rf_lang3(a->fn, Rf_ScalarReal(a->done), Rf_ScalarReal(a->total)));
  Rf_eval(call, R_GlobalEnv);
  UNPROTECT(1);
}

static int progress_cancel(void *ud) {
  fmr_progress *p = ud;
  return p->base.cancel ? p->base.cancel(p->base.ud) : 0;
}

/* Report whole units only, so R is called a few hundred times at most. An
 * error inside the R function cannot longjmp over core frames
 * (R_ToplevelExec); it only stops further reports. */
static void progress_report(void *ud, double done, double total) {
  fmr_progress *p = ud;
  if (p->failed || (done < p->last + 1 && done < total)) return;
  p->last = done;
  call_args a = {p->fn, done, total};
  if (!R_ToplevelExec(eval_progress, &a)) p->failed = 1;
}

fm_ctl fmr_progress_ctl(fmr_progress *p, SEXP fn) {
  p->base = fmr_ctl();
  p->fn = fn;
  p->last = -1;
  p->failed = 0;
  fm_ctl ctl = {progress_cancel, Rf_isFunction(fn) ? progress_report : NULL, p};
  return ctl;
}
