/* r_backend.c: the built-in product backends (registered at load, in the
 * order of one table), the option fmalloc.backend that forces one of them
 * (or the reference path), backend introspection
 * (the backend of the last computation, the kernels' instruction set), and
 * the test backends and test hooks of the suite.
 *
 * Forcing (note of 2026-11-30): every .Call that runs products reads the
 * option at its start (fmr_backend_option) and puts the name in the
 * backend field of the fm_ctl it passes to the core, which relays it to the
 * products it runs itself (fm_stats_rpca). The setting belongs to the call,
 * not to the process: no global to re-sync, nothing left behind by an
 * error, and a forked child or another thread cannot see a stale one. */
#include "r_backend.h"
#include "r_calls.h"
#include "r_parallel.h"

#include "fm/fm_backend_alp.h"
#include "fm/fm_cpu.h"
#include "fm/fm_fused.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The built-in backends, tried in this order before any other package's.
 * A new one is one line here (its sources in core/src/backend/). */
static const struct builtin_backend {
  const char *name;
  fm_backend_fn fn;
} builtin_backends[] = {
    {FM_FUSED_BACKEND_NAME, fm_fused_backend},
    {FM_BACKEND_ALP_NAME, fm_backend_alp},
    {FMR_MIRAI_BACKEND, fmr_mirai_backend}, /* only when a call forces it (fmalloc.parallel) */
};

static int is_registered(const char *name) {
  for (int i = 0; i < fm_backend_count(); i++)
    if (strcmp(fm_backend_name(i), name) == 0) return 1;
  return 0;
}

void fmr_backends_register_builtin(void) {
  for (size_t i = 0; i < sizeof builtin_backends / sizeof builtin_backends[0]; i++) {
    const struct builtin_backend *b = &builtin_backends[i];
    fm_err err;
    if (is_registered(b->name)) continue; /* registered once per process, keeping the order */
    if (fm_backend_register(b->name, b->fn, NULL, &err) != FM_OK)
      Rf_warning("Rfmalloc: backend '%s' is not available: %s", b->name, err.msg);
  }
}

/* Option fmalloc.parallel: NULL or "none" (nothing), or "mirai" (the
 * mirai backend, when no backend is forced). */
static int parallel_option(void) {
  SEXP opt = Rf_GetOption1(Rf_install("fmalloc.parallel"));
  if (Rf_isNull(opt)) return 0;
  if (TYPEOF(opt) == STRSXP && XLENGTH(opt) == 1 && STRING_ELT(opt, 0) != NA_STRING) {
    if (strcmp(CHAR(STRING_ELT(opt, 0)), "none") == 0) return 0;
    if (strcmp(CHAR(STRING_ELT(opt, 0)), "mirai") == 0) return 1;
  }
  fmr_stop(FM_EARG, "option fmalloc.parallel must be NULL, \"none\" or \"mirai\"");
}

const char *fmr_backend_option(void) {
  SEXP opt = Rf_GetOption1(Rf_install("fmalloc.backend"));
  if (Rf_isNull(opt)) return parallel_option() ? FMR_MIRAI_BACKEND : NULL;
  if (TYPEOF(opt) != STRSXP || XLENGTH(opt) != 1 || STRING_ELT(opt, 0) == NA_STRING ||
      !CHAR(STRING_ELT(opt, 0))[0])
    fmr_stop(FM_EARG, "option fmalloc.backend must be NULL or one backend name (see "
                      "fmalloc_backends())");
  const char *name = CHAR(STRING_ELT(opt, 0));
  fm_err err;
  if (fm_backend_check(name, &err) != FM_OK)
    fmr_stop(err.code, "option fmalloc.backend: %s", err.msg);
  const size_t len = strlen(name); /* <= FM_BACKEND_NAME_MAX: registered or "reference" */
  char *copy = R_alloc(len + 1, 1);
  memcpy(copy, name, len + 1);
  return copy;
}

SEXP fmr_backends(void) {
  int n = fm_backend_count();
  SEXP out = PROTECT(Rf_allocVector(STRSXP, n + 1));
  for (int i = 0; i < n; i++) SET_STRING_ELT(out, i, Rf_mkChar(fm_backend_name(i)));
  SET_STRING_ELT(out, n, Rf_mkChar("reference"));
  UNPROTECT(1);
  return out;
}

/* The last product's or statistic's backend (fmr_backend_note); "" before
 * the first. Main thread only, like every .Call. */
static char last_backend[(FM_BACKEND_MAX + 1) * (FM_BACKEND_NAME_MAX + 1)];

void fmr_backend_note(const char *name) {
  snprintf(last_backend, sizeof last_backend, "%s", name && name[0] ? name : "none");
}

/* fmalloc_last_backend(): a string, or NULL before the first computation. */
SEXP fmr_last_backend(void) { return last_backend[0] ? Rf_mkString(last_backend) : R_NilValue; }

/* The instruction-set level of the kernels (fm_cpu.h): "avx512", "avx2" or
 * "portable". */
SEXP fmr_cpu_isa(void) { return Rf_mkString(fm_cpu_isa_name(fm_cpu_isa())); }

/* Whether the environment variable FM_ISA named a level (or was unset). */
SEXP fmr_cpu_env_valid(void) { return Rf_ScalarLogical(fm_cpu_env_valid()); }

/* Test hook: cap the kernel level (fm_cpu_cap: the fused products and the
 * .bed genotype counts) at "portable", "avx2" or "avx512" ("auto" removes
 * the cap); returns the level then in use. */
SEXP fmr_test_cpu_cap(SEXP s_isa) {
  const char *isa = CHAR(STRING_ELT(s_isa, 0));
  fm_cpu_cap(strcmp(isa, "portable") == 0 ? FM_ISA_PORTABLE
             : strcmp(isa, "avx2") == 0   ? FM_ISA_AVX2
                                          : FM_ISA_AVX512);
  return Rf_mkString(fm_cpu_isa_name(fm_cpu_isa()));
}

/* Test backends, registered only by the test suite (.test_backend):
 * "decline_all" declines every product; "xb_k1" computes only X %*% b with
 * one column, element by element, and declines everything else. */
static fm_status decline_all(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ud; (void)p; (void)ctl;
  return fm_err_set(err, FM_EUNSUPPORTED, "decline_all declines every product");
}

static fm_status xb_k1(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ud; (void)ctl;
  if (p->op != FM_OP_XB || p->k != 1)
    return fm_err_set(err, FM_EUNSUPPORTED, "xb_k1 only computes X %%*%% b with one column");
  const fm_mat *x = p->x;
  double *col = malloc(sizeof(double) * (size_t)(x->n_rows > 0 ? x->n_rows : 1));
  if (!col) return fm_err_set(err, FM_ENOMEM, "xb_k1 could not allocate a column");
  for (int64_t i = 0; i < x->n_rows; i++) p->y[i] = 0;
  for (int64_t j = 0; j < x->n_cols; j++) {
    fm_status st = fm_panel_decode(x, p->aff, 0, x->n_rows, j, 1, col, x->n_rows, err);
    if (st != FM_OK) { free(col); return st; }
    for (int64_t i = 0; i < x->n_rows; i++) p->y[i] += col[i] * p->b[j];
  }
  free(col);
  return FM_OK;
}

SEXP fmr_test_backend(SEXP s_name, SEXP s_on) {
  const char *name = CHAR(STRING_ELT(s_name, 0));
  fm_backend_fn fn = strcmp(name, "decline_all") == 0 ? decline_all
                     : strcmp(name, "xb_k1") == 0     ? xb_k1
                                                      : NULL;
  if (!fn) fmr_stop(FM_EARG, "unknown test backend '%s'", name);
  fm_backend_unregister(name);
  if (Rf_asLogical(s_on)) {
    fm_err err;
    if (fm_backend_register(name, fn, NULL, &err) != FM_OK) fmr_raise(&err);
  }
  return R_NilValue;
}

/* This module's .Call entry points (r_calls.h; r_init.c registers them). */
const R_CallMethodDef fmr_backend_calls[] = {
    FMR_CALLDEF(fmr_backends, 0),
    FMR_CALLDEF(fmr_cpu_isa, 0),
    FMR_CALLDEF(fmr_cpu_env_valid, 0),
    FMR_CALLDEF(fmr_last_backend, 0),
    FMR_CALLDEF(fmr_test_cpu_cap, 1),
    FMR_CALLDEF(fmr_test_backend, 2),
    {NULL, NULL, 0}};
