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

/* A whole number in [0, max] from option `name`; 0 when unset or NA. */
static double option_count(const char *name, double max) {
  SEXP v = Rf_GetOption1(Rf_install(name));
  if (Rf_isNull(v)) return 0;
  if ((TYPEOF(v) != REALSXP && TYPEOF(v) != INTSXP && TYPEOF(v) != LGLSXP) || XLENGTH(v) != 1)
    fmr_stop(FM_EARG, "option %s must be NULL, NA or one whole number from 0 to %.15g", name, max);
  const double x = Rf_asReal(v);
  if (ISNA(x)) return 0;
  if (!(x >= 0 && x <= max && x == (double)(int64_t)x))
    fmr_stop(FM_EARG, "option %s must be NULL, NA or one whole number from 0 to %.15g, not %.15g",
             name, max, x);
  return x;
}

/* The thread count of option fmalloc.threads; when unset, 0 (the core's
 * default, the CPUs available), or at most 2 under R CMD check, which asks
 * packages to use no more through _R_CHECK_LIMIT_CORES_. */
static int threads_setting(void) {
  const int n = (int)option_count("fmalloc.threads", FM_THREADS_MAX);
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
  ctl->panel_bytes = (size_t)option_count("fmalloc.panel_bytes", 0x1p53);
  ctl->forked = forked_child != 0;
  last = (fm_ctl){.threads = ctl->threads, .panel_bytes = ctl->panel_bytes, .forked = ctl->forked};
}

/* list(threads, panel_bytes, forked) with the defaults resolved: the
 * settings in effect now (last FALSE), or those of the last control block
 * made, by any package's call (last TRUE; the defaults before the first). */
SEXP fmr_settings(SEXP s_last) {
  fm_ctl now = last;
  if (Rf_asLogical(s_last) != TRUE) {
    now.threads = threads_setting();
    now.panel_bytes = (size_t)option_count("fmalloc.panel_bytes", 0x1p53);
    now.forked = forked_child != 0;
  }
  const char *nm[] = {"threads", "panel_bytes", "forked", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
  SET_VECTOR_ELT(out, 0, Rf_ScalarInteger(fm_threads(&now)));
  SET_VECTOR_ELT(out, 1, Rf_ScalarReal((double)fm_panel_budget(&now)));
  SET_VECTOR_ELT(out, 2, Rf_ScalarLogical(now.forked));
  UNPROTECT(1);
  return out;
}

/* This module's .Call entry points (r_calls.h; r_init.c registers them). */
const R_CallMethodDef fmr_settings_calls[] = {
    FMR_CALLDEF(fmr_settings, 1),
    {NULL, NULL, 0}};
