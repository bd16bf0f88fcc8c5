/* r_err.c: the one converter from (fm_status, fm_err) to an R condition, and
 * the cancel callback that lets core loops poll R interrupts safely.
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
#include "r_glue.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

void fmr_raise(const fm_err *err) {
  char msg[sizeof err->msg];
  fm_status code = err ? err->code : FM_EINTERNAL;
  if (err && err->msg[0]) {
    memcpy(msg, err->msg, sizeof msg);
    msg[sizeof msg - 1] = '\0';
  } else {
    snprintf(msg, sizeof msg, "fmalloc error (%s)", fm_status_name(code));
  }
  raise_named(code, msg);
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

/* ---- interrupts --------------------------------------------------------- */

static void check_interrupt(void *unused) {
  (void)unused;
  R_CheckUserInterrupt();
}

/* Nonzero when the user interrupted: R_ToplevelExec returns FALSE when the
 * interrupt longjmp'd out of check_interrupt, and never longjmps past us. */
static int cancel_cb(void *ud) {
  (void)ud;
  return R_ToplevelExec(check_interrupt, NULL) == FALSE;
}

fm_ctl fmr_ctl(void) {
  fm_ctl ctl;
  ctl.cancel = cancel_cb;
  ctl.progress = NULL;
  ctl.ud = NULL;
  return ctl;
}
