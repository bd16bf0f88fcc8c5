/* r_settings.c: the settings of the whole stack (Rfmalloc, Rpgen, Rgguf,
 * Rllm), read in one function into each call's fm_ctl: the thread count
 * (option fmalloc.threads), the panel byte budget (fmalloc.panel_bytes), a
 * forced backend (fmalloc.backend) and whether this process is a forked
 * child. The core keeps no process-wide copy of any of them; the other
 * packages' calls get the same ctl through the C callable Rfmalloc_ctl. The
 * last control block made is kept for fmalloc_backend_info(). */
#include "r_backend.h"
#include "r_calls.h"
#include "r_glue.h"

#include "fm/fm_panel.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* GNU OpenMP's pool (GGML's threads) does not survive fork(): after one,
 * every call's ctl says so (fm_ctl.forked). One handler for the stack. */
static volatile sig_atomic_t forked_child;
static void on_fork_child(void) { forked_child = 1; }

void fmr_settings_init(void) {
  static int done;
  if (!done && pthread_atfork(NULL, NULL, on_fork_child) == 0) done = 1;
}

/* A whole number in [0, max] from option `name`; 0 when unset (or NA, where
 * na_ok). The one validity rule of each setting: the R setters set the
 * option, read it back through here and restore it when refused. */
static double option_count(const char *name, double max, int na_ok) {
  SEXP v = Rf_GetOption1(Rf_install(name));
  if (Rf_isNull(v)) return 0;
  const char *what = na_ok ? "NULL, NA or one whole number" : "NULL or one whole number";
  /* a classed value (a factor's codes) is not a count */
  const int type_ok = !OBJECT(v) && (TYPEOF(v) == REALSXP || TYPEOF(v) == INTSXP ||
                                     (TYPEOF(v) == LGLSXP && na_ok && XLENGTH(v) == 1 &&
                                      LOGICAL(v)[0] == NA_LOGICAL));
  if (!type_ok || XLENGTH(v) != 1)
    fmr_stop(FM_EARG, "option %s must be %s from 0 to %.0f, not %s %s of length %lld", name, what,
             max, OBJECT(v) ? "a classed" : "a", Rf_type2char(TYPEOF(v)), (long long)XLENGTH(v));
  const double x = Rf_asReal(v);
  if (ISNA(x) && na_ok) return 0;
  if (ISNAN(x)) fmr_stop(FM_EARG, "option %s must be %s from 0 to %.0f, not %s", name, what, max,
                         ISNA(x) ? "NA" : "NaN");
  if (!(x >= 0 && x <= max && x == (double)(int64_t)x))
    fmr_stop(FM_EARG, "option %s must be %s from 0 to %.0f, not %.15g", name, what, max, x);
  return x;
}

static size_t budget_setting(void) {
  return (size_t)option_count("fmalloc.panel_bytes", 0x1p53, 0);
}

/* The thread count of option fmalloc.threads; when unset, 0 (the core's
 * default, the CPUs available), or at most 2 under R CMD check, which asks
 * packages to use no more through _R_CHECK_LIMIT_CORES_. */
static int threads_setting(void) {
  const int n = (int)option_count("fmalloc.threads", FM_THREADS_MAX, 1);
  if (n > 0) return n;
  const char *lim = getenv("_R_CHECK_LIMIT_CORES_");
  if (lim && lim[0] && strcmp(lim, "false") != 0 && strcmp(lim, "FALSE") != 0)
    return fm_threads(NULL) < 2 ? fm_threads(NULL) : 2;
  return 0;
}

static fm_ctl last; /* the settings of the last control block made */

void fmr_settings_into(fm_ctl *ctl) {
  ctl->backend = fmr_backend_option();
  ctl->threads = threads_setting();
  ctl->panel_bytes = budget_setting();
  ctl->forked = forked_child != 0;
  last = (fm_ctl){.threads = ctl->threads, .panel_bytes = ctl->panel_bytes, .forked = ctl->forked};
}

/* The C callable Rfmalloc_settings (Rfmalloc.h): the thread count, panel
 * budget and fork state in effect now, in a control block without
 * callbacks, for a package that reports them. No core call follows, so
 * neither the interrupt state nor last_call changes, and the backend (a
 * choice made at each product) is not read. */
fm_ctl Rfmalloc_settings(void) {
  return (fm_ctl){.threads = threads_setting(), .panel_bytes = budget_setting(),
                  .forked = forked_child != 0};
}

static SEXP settings_list(const fm_ctl *c) {
  const char *nm[] = {"threads", "panel_bytes", "forked", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
  SET_VECTOR_ELT(out, 0, Rf_ScalarInteger(fm_threads(c)));
  SET_VECTOR_ELT(out, 1, Rf_ScalarReal((double)fm_panel_budget(c)));
  SET_VECTOR_ELT(out, 2, Rf_ScalarLogical(c->forked));
  UNPROTECT(1);
  return out;
}

/* .Call(fmr_setting, name): one setting in effect now, the default
 * resolved, reading (and validating) that option alone, so an unusable
 * option raises only where it is asked for: "threads" (integer),
 * "panel_bytes" (double, bytes), "forked" (logical); or "last_call",
 * list(threads, panel_bytes, forked) of the last control block made by any
 * package's call (the defaults before the first). */
SEXP fmr_setting(SEXP s_name) {
  if (TYPEOF(s_name) != STRSXP || XLENGTH(s_name) != 1) fmr_stop(FM_EARG, "a setting's name");
  const char *name = CHAR(STRING_ELT(s_name, 0));
  if (strcmp(name, "threads") == 0)
    return Rf_ScalarInteger(fm_threads(&(fm_ctl){.threads = threads_setting()}));
  if (strcmp(name, "panel_bytes") == 0)
    return Rf_ScalarReal((double)fm_panel_budget(&(fm_ctl){.panel_bytes = budget_setting()}));
  if (strcmp(name, "forked") == 0) return Rf_ScalarLogical(forked_child != 0);
  if (strcmp(name, "last_call") == 0) return settings_list(&last);
  fmr_stop(FM_EARG, "no setting named '%s'", name);
}

/* This module's .Call entry points (r_calls.h; r_init.c registers them). */
const R_CallMethodDef fmr_settings_calls[] = {
    FMR_CALLDEF(fmr_setting, 1),
    {NULL, NULL, 0}};
