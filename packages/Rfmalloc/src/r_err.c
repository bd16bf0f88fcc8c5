/* r_err.c: the one converter from (fm_status, fm_err) to an R condition, and
 * the callbacks that let core loops poll R (interrupts, setTimeLimit) and
 * report progress to an R function safely; other packages use both through
 * C callables (Rfmalloc_raise, Rfmalloc_ctl, Rfmalloc_ctl_finish).
 *
 * Conditions are built and signalled by the R function .fm_raise in the
 * package namespace (R/errors.R), so their classes are
 * c("fm_error_<status name>", "fm_error", "error", "condition"), and the
 * message is copied into R before anything longjmps. The namespace is looked
 * up in R_NamespaceRegistry on each raise (no cached SEXP that a reload could
 * leave dangling); when the namespace is gone (after unload) the error is a
 * plain R error with the same text. Other packages raise through the C
 * callable Rfmalloc_raise (inst/include/Rfmalloc.h), so there is one copy of
 * this code. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "r_progress.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void raise_named(fm_status code, const char *msg) __attribute__((noreturn));

static void raise_named(fm_status code, const char *msg) {
  if (code == FM_OK) code = FM_EINTERNAL;
  SEXP ns = Rf_findVarInFrame(R_NamespaceRegistry, Rf_install("Rfmalloc"));
  if (ns == R_UnboundValue || TYPEOF(ns) != ENVSXP) Rf_error("%s", msg);
  SEXP fun = Rf_findVarInFrame(ns, Rf_install(".fm_raise"));
  if (fun == R_UnboundValue) Rf_error("%s", msg);
  int nprot = 0;
  SEXP s_code = PROTECT(Rf_mkString(fm_status_name(code)));
  nprot++;
  SEXP s_msg = PROTECT(Rf_mkString(msg));
  nprot++;
  SEXP call = PROTECT(Rf_lang3(fun, s_code, s_msg));
  nprot++;
  Rf_eval(call, ns);
  UNPROTECT(nprot);
  /* .fm_raise never returns; keep the noreturn contract if it somehow does. */
  Rf_error("%s", msg);
}

static void raise_err(const fm_err *err, const char *what) __attribute__((noreturn));

static void raise_err(const fm_err *err, const char *what) {
  char text[sizeof err->msg], msg[sizeof text + 260];
  fm_status code = err ? err->code : FM_EINTERNAL;
  if (err && err->msg[0]) {
    memcpy(text, err->msg, sizeof text);
    text[sizeof text - 1] = '\0';
  } else {
    snprintf(text, sizeof text, "fmalloc error (%s)", fm_status_name(code));
  }
  if (what && what[0]) snprintf(msg, sizeof msg, "%.255s: %s", what, text);
  else snprintf(msg, sizeof msg, "%s", text);
  raise_named(code, msg);
}

static void finish(fm_status st, const fm_err *err, const char *what);

void fmr_raise(const fm_err *err) {
  if (err && err->code == FM_ECANCELLED) finish(FM_ECANCELLED, err, NULL);
  raise_err(err, NULL);
}

void fmr_stop(fm_status code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  raise_named(code, msg);
}

/* The C callable Rfmalloc_raise (inst/include/Rfmalloc.h): the same
 * condition for other packages' glue. msg is copied first, so it may point
 * into memory that R's allocation could free. */
void Rfmalloc_raise(int status, const char *msg) {
  char copy[1024];
  snprintf(copy, sizeof copy, "%s", msg ? msg : "");
  if (!copy[0]) snprintf(copy, sizeof copy, "fmalloc error (%s)", fm_status_name((fm_status)status));
  raise_named((fm_status)status, copy);
}

/* ---- callbacks of core calls ----------------------------------------------
 * A core loop polls cancel once per block and may report progress; both run
 * R code from inside the core, where R must not longjmp over C frames. The
 * R code runs under R_UnwindProtect with the caller's condition handlers and
 * restarts in place (so tryCatch(error = ) around the call catches the error
 * of setTimeLimit() with its own message, calling handlers see cli's
 * progress messages, and a restart invoked from a handler works). A jump out
 * of that R code is intercepted by the unwind cleanup, which longjmps back
 * into the callback (R_ContinueUnwind's documented use): the callback then
 * reports cancel, the core cleans up and returns, and finish() continues the
 * jump. A user interrupt inside that R code is caught (R_tryCatch, class
 * "interrupt") and becomes fm_error_ecancelled, raised after the core
 * returned, like any cancellation.
 *
 * The state is global (main thread only): after a callback caught a jump or
 * an interrupt no more R code runs until the glue raises it, so at most one
 * is pending, and a nested core call (made by R code a callback runs)
 * finishes before its caller's callback returns. A pending jump is continued
 * only by finish() right after the core call whose callback caught it (a
 * jump whose target context was left would crash R), hence:
 *   - fmr_ctl() drops a stale one (its core call returned without finishing
 *     it), and finish() is reached only with FM_ECANCELLED from a core call
 *     (fmr_raise) or from Rfmalloc_ctl_finish right after one;
 *   - a callback that ran R code overwrites the flags when that code returns,
 *     so a nested call's stale flags never become its own.
 *
 * R_tryCatch evaluates R's tryCatch() (tens of microseconds), so cancel
 * polls R at most every POLL_SECONDS; the poll after a progress report runs
 * at once (its R code may have seen an interrupt, e.g. Ctrl-C during the
 * bar update). */

#define POLL_SECONDS 0.01

static SEXP unwind_token = NULL; /* preserved R_MakeUnwindCont(), reused */
static int pending_jump;         /* a jump out of a callback's R code awaits continuation */
static int pending_interrupt;    /* a user interrupt was caught */
static int poll_now;             /* R code ran since the last poll */
static double next_poll;         /* CLOCK_MONOTONIC seconds */

typedef struct r_code {
  void (*fn)(void *);
  void *data;
} r_code;

static SEXP code_body(void *p) {
  const r_code *c = p;
  c->fn(c->data);
  return R_NilValue;
}

static SEXP on_interrupt(SEXP cond, void *got) {
  (void)cond;
  *(volatile int *)got = 1;
  return R_NilValue;
}

typedef struct guarded_args {
  r_code code;
  volatile int *interrupted;
} guarded_args;

static SEXP guarded(void *p) {
  guarded_args *g = p;
  SEXP classes = PROTECT(Rf_mkString("interrupt"));
  R_tryCatch(code_body, &g->code, classes, on_interrupt, (void *)g->interrupted, NULL, NULL);
  UNPROTECT(1);
  return R_NilValue;
}

static void unwind_cleanup(void *jb, Rboolean jump) {
  if (jump) longjmp(*(jmp_buf *)jb, 1);
}

/* Run fn(data) as R code of the caller (see above). Nonzero when a jump or
 * an interrupt is pending afterwards; then no R code runs until finish(). */
static int run_r(void (*fn)(void *), void *data) {
  if (pending_jump || pending_interrupt) return 1;
  if (!unwind_token) {
    unwind_token = R_MakeUnwindCont();
    R_PreserveObject(unwind_token);
  }
  volatile int interrupted = 0;
  guarded_args g = {{fn, data}, &interrupted};
  jmp_buf jb;
  if (setjmp(jb)) {
    pending_jump = 1;
    pending_interrupt = 0;
    return 1;
  }
  R_UnwindProtect(guarded, &g, unwind_cleanup, &jb, unwind_token);
  pending_jump = 0;
  pending_interrupt = interrupted;
  return interrupted;
}

static void check_interrupt(void *unused) {
  (void)unused;
  R_CheckUserInterrupt();
}

static double monotonic_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cancel_cb(void *ud) {
  (void)ud;
  if (pending_jump || pending_interrupt) return 1;
  const double now = monotonic_seconds();
  if (!poll_now && now < next_poll) return 0;
  poll_now = 0;
  next_poll = now + POLL_SECONDS;
  return run_r(check_interrupt, NULL);
}

fm_ctl fmr_ctl(void) {
  pending_jump = 0;
  pending_interrupt = 0;
  fm_ctl ctl = {.cancel = cancel_cb};
  fmr_settings_into(&ctl);
  return ctl;
}

typedef struct progress_args {
  SEXP fn;
  double done, total;
} progress_args;

static void eval_progress(void *data) {
  progress_args *a = data;
  SEXP done = PROTECT(Rf_ScalarReal(a->done));
  SEXP total = PROTECT(Rf_ScalarReal(a->total));
  SEXP call = PROTECT(Rf_lang3(a->fn, done, total));
  Rf_eval(call, R_GlobalEnv);
  UNPROTECT(3);
}

static int progress_cancel(void *ud) {
  (void)ud;
  return cancel_cb(NULL);
}

/* Whole units only, and the first report of done == total (a cli bar ends
 * itself there and fails a second one), so R is called a few hundred times
 * at most for a bar; done and total are passed as given. */
static void progress_report(void *ud, double done, double total) {
  fmr_progress *p = ud;
  if (pending_jump || pending_interrupt) return;
  if (!(done >= p->last + 1 || (done >= total && done > p->last))) return;
  p->last = done;
  progress_args a = {p->fn, done, total};
  run_r(eval_progress, &a);
  poll_now = 1;
}

fm_ctl fmr_progress_ctl(fmr_progress *p, SEXP fn) {
  fm_ctl ctl = fmr_ctl();
  p->fn = fn;
  p->last = -INFINITY;
  ctl.cancel = progress_cancel;
  ctl.progress = Rf_isFunction(fn) ? progress_report : NULL;
  ctl.ud = p;
  return ctl;
}

/* After a core call with a control block of fmr_ctl() / fmr_progress_ctl():
 * continue a jump its callbacks caught, raise a caught interrupt as
 * fm_error_ecancelled, else raise err unless st is FM_OK. */
static void finish(fm_status st, const fm_err *err, const char *what) {
  if (pending_jump) {
    pending_jump = 0;
    pending_interrupt = 0;
    R_ContinueUnwind(unwind_token);
  }
  if (pending_interrupt) {
    pending_interrupt = 0;
    if (st == FM_ECANCELLED) raise_err(err, what);
    raise_named(FM_ECANCELLED, "interrupted");
  }
  if (st != FM_OK) raise_err(err, what);
}

void fmr_finish(fm_status st, const fm_err *err) { finish(st, err, NULL); }

/* The C callables Rfmalloc_ctl and Rfmalloc_ctl_finish (Rfmalloc.h). The
 * progress state lives in R_alloc memory, freed when the calling .Call
 * returns. */
fm_ctl Rfmalloc_ctl(SEXP progress) {
  if (!Rf_isFunction(progress)) return fmr_ctl();
  fmr_progress *p = (fmr_progress *)R_alloc(1, sizeof *p);
  return fmr_progress_ctl(p, progress);
}

void Rfmalloc_ctl_finish(int status, const fm_err *err, const char *what) {
  finish((fm_status)status, err, what);
}
