/* r_init.c: registration of every .Call entry point (each glue module's
 * table, r_calls.h, joined here), the ALTREP classes, the built-in product
 * backends (first in the registry; their table is in r_backend.c), the C
 * callables of inst/include/Rfmalloc.h and Rfmalloc_core.h, and unload.
 * Dynamic symbol lookup is off: an entry point missing from the tables
 * cannot be called. */
#include "r_runtime.h"
#include "r_backend.h"
#include <Rfmalloc_calls.h>

#include "r_calls.h"
#include "r_ext.h"
#include "r_mat.h" /* fmr_view_get, the callable Rfmalloc_view_get */
#include "r_parallel.h"

/* r_api.c: C callables for other packages (inst/include/Rfmalloc.h) */
SEXP Rfmalloc_vec_alloc(SEXP rt, int dtype, double length);
void *Rfmalloc_vec_ptr(SEXP x, int *dtype_out, double *n_bytes_out);
SEXP Rfmalloc_vec_runtime(SEXP x);
const unsigned long long *Rfmalloc_hap1_row(const void *data, double n_haps, double locus);
/* the core's function table (inst/include/Rfmalloc_core.h) */
const struct Rfmalloc_core_api *Rfmalloc_core_api_get(void);

/* r_err.c: the error converter and the callbacks of core calls as C callables */
void Rfmalloc_raise(int status, const char *msg) __attribute__((noreturn));
fm_ctl Rfmalloc_ctl(SEXP progress);
void Rfmalloc_ctl_finish(int status, const fm_err *err, const char *what);
/* r_settings.c */
fm_ctl Rfmalloc_settings(void);

static SEXP fmr_unload(void);

static const R_CallMethodDef init_calls[] = {FMR_CALLDEF(fmr_unload, 0), {NULL, NULL, 0}};

static const R_CallMethodDef *const module_tables[] = {fmr_runtime_calls, fmr_altrep_calls, fmr_codec_calls, fmr_mat_calls, fmr_panel_calls, fmr_settings_calls, fmr_backend_calls, fmr_ext_calls, fmr_alp_calls, fmr_stats_calls,
                                                       fmr_parallel_calls, init_calls};

void R_init_Rfmalloc(DllInfo *dll) {
  Rfmalloc_register_calls(dll, module_tables,
                          (int)(sizeof module_tables / sizeof module_tables[0]));
  fmr_altrep_init(dll);
  fmr_settings_init();
  fmr_parallel_init();
  fmr_backends_register_builtin();
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_vec_alloc", (DL_FUNC)&Rfmalloc_vec_alloc);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_vec_ptr", (DL_FUNC)&Rfmalloc_vec_ptr);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_vec_runtime", (DL_FUNC)&Rfmalloc_vec_runtime);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_hap1_row", (DL_FUNC)&Rfmalloc_hap1_row);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_ext_matrix", (DL_FUNC)&Rfmalloc_ext_matrix);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_backend_register",
                      (DL_FUNC)&Rfmalloc_backend_register);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_backend_unregister",
                      (DL_FUNC)&Rfmalloc_backend_unregister);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_ext_release", (DL_FUNC)&Rfmalloc_ext_release);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_view_get", (DL_FUNC)&fmr_view_get);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_file_add", (DL_FUNC)&Rfmalloc_file_add);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_file_remove", (DL_FUNC)&Rfmalloc_file_remove);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_raise", (DL_FUNC)&Rfmalloc_raise);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_ctl", (DL_FUNC)&Rfmalloc_ctl);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_ctl_finish", (DL_FUNC)&Rfmalloc_ctl_finish);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_settings", (DL_FUNC)&Rfmalloc_settings);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_core_api", (DL_FUNC)&Rfmalloc_core_api_get);
}

/* The clean-up before the namespace goes: close every runtime this process
 * still holds, so that no mapping or file lock outlives the package (a new
 * session or a reloaded namespace can open the same files); vectors over
 * them raise fm_error_eclosed afterwards. Idempotent and never raises.
 * Called by .onUnload (R/Rfmalloc-package.R) through fmr_unload: with
 * dynamic symbol lookup off R never finds R_unload_Rfmalloc, which stays
 * for loaders that do. The DLL itself stays loaded (see .onUnload). */
static SEXP fmr_unload(void) {
  fmr_runtime_close_all_c();
  return R_NilValue;
}

void R_unload_Rfmalloc(DllInfo *dll) {
  (void)dll;
  fmr_unload();
}
