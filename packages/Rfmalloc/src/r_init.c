/* r_init.c: registration of every .Call entry point (one table, grouped by
 * glue module; add a new module as a new commented group of prototypes and
 * CALLDEF lines), the ALTREP classes, the built-in product backends (first
 * in the registry; their table is in r_backend.c), the C callables of
 * inst/include/Rfmalloc.h, and unload. Dynamic symbol lookup is off: an entry
 * point missing from the table cannot be called. */
#include "r_runtime.h"
#include "r_backend.h"
#include "r_ext.h"

#include <R_ext/Rdynload.h>

/* r_runtime.c: runtime handles and the name directory */
SEXP fmr_runtime_open(SEXP path, SEXP cap_bytes, SEXP mode, SEXP read_only);
SEXP fmr_runtime_close(SEXP rt, SEXP sync);
SEXP fmr_runtime_sync(SEXP rt);
SEXP fmr_runtime_check(SEXP rt);
SEXP fmr_runtime_state(SEXP rt);
SEXP fmr_runtime_info(SEXP rt);
SEXP fmr_runtime_dir(SEXP rt);
SEXP fmr_runtime_delete(SEXP rt, SEXP name);

/* r_altrep.c: mapped vectors (ALTREP) */
SEXP fmr_altrep_new(SEXP rt, SEXP type, SEXP length, SEXP dim, SEXP dimnames);
SEXP fmr_altrep_save(SEXP x, SEXP name, SEXP rt);
SEXP fmr_altrep_get(SEXP rt, SEXP name);
SEXP fmr_altrep_set_attrs(SEXP x, SEXP attrs);
SEXP fmr_altrep_is_mapped(SEXP x);
SEXP fmr_altrep_runtime(SEXP x);
SEXP fmr_altrep_describe(SEXP x);
SEXP fmr_altrep_write_cols(SEXP x, SEXP j, SEXP values);
SEXP fmr_altrep_elt(SEXP x, SEXP i);
SEXP fmr_altrep_region(SEXP x, SEXP i, SEXP n);

/* r_codec.c: genotype codecs and borrowed file views */
SEXP fmr_bed2_encode(SEXP g, SEXP out);
SEXP fmr_dos8_encode(SEXP x, SEXP out);
SEXP fmr_hap1_encode(SEXP h, SEXP out);
SEXP fmr_hap1_row_bytes(SEXP n_haps);
SEXP fmr_hap1_rows(SEXP storage, SEXP n_haps, SEXP n_loci, SEXP l0, SEXP n);
SEXP fmr_fileview_open(SEXP path);
SEXP fmr_fileview_alive(SEXP ptr);
SEXP fmr_fileview_size(SEXP ptr);
SEXP fmr_fileview_close(SEXP ptr);
SEXP fmr_bed2_check(SEXP ptr, SEXP n, SEXP m, SEXP what);
SEXP fmr_bed2_counts(SEXP h);

/* r_mat.c: matrix views (handles) */
SEXP fmr_view_new(SEXP storage, SEXP spec, SEXP cols, SEXP transform);
SEXP fmr_view_alive(SEXP h);
SEXP fmr_view_of_slots(SEXP h, SEXP storage, SEXP spec, SEXP cols, SEXP transform);
SEXP fmr_codec_ids(void);

/* r_panel.c: products through the backend registry, Gram matrices, gathers */
SEXP fmr_product(SEXP h, SEXP op, SEXP b, SEXP na_fill);
SEXP fmr_gram(SEXP h, SEXP kind);
SEXP fmr_gather(SEXP h, SEXP rows, SEXP cols);
SEXP fmr_gather_cells(SEXP h, SEXP rows, SEXP cols);

/* r_backend.c: built-in backends, forcing, test backends and hooks */
SEXP fmr_backends(void);
SEXP fmr_cpu_isa(void);
SEXP fmr_cpu_env_valid(void);
SEXP fmr_last_backend(void);
SEXP fmr_test_cpu_cap(SEXP isa);
SEXP fmr_test_backend(SEXP name, SEXP on);

/* r_ext.c: external codecs, backend registration for other packages */
SEXP fmr_ext_info(SEXP storage);
SEXP fmr_test_ext_matrix(SEXP tm, SEXP nrow, SEXP ncol);
SEXP fmr_test_ext_backend(SEXP on);
SEXP fmr_test_ext_release(void);

/* r_alp.c: ALP-compressed double matrices */
SEXP fmr_alp_encode(SEXP x);
SEXP fmr_alp_store(SEXP ptr, SEXP storage);
SEXP fmr_alp_info(SEXP h);
SEXP fmr_alp_backend(SEXP on);

/* r_init.c: the package's clean-up before its namespace goes */
static SEXP fmr_unload(void);

/* r_stats.c: streamed statistics and PCA */
SEXP fmr_colvar(SEXP h);
SEXP fmr_rpca(SEXP h, SEXP center, SEXP div, SEXP fill, SEXP opts, SEXP progress, SEXP dimnames,
              SEXP v_out);

/* r_api.c: C callables for other packages (inst/include/Rfmalloc.h) */
SEXP Rfmalloc_vec_alloc(SEXP rt, int dtype, double length);
void *Rfmalloc_vec_ptr(SEXP x, int *dtype_out, double *n_bytes_out);
SEXP Rfmalloc_vec_runtime(SEXP x);
const unsigned long long *Rfmalloc_hap1_row(const void *data, double n_haps, double locus);
/* the core's function table (inst/include/Rfmalloc_core.h) */
const struct Rfmalloc_core_api *Rfmalloc_core_api_get(void);

/* r_settings.c: the stack's settings (threads, panel budget, fork) */
SEXP fmr_settings(SEXP last);

/* r_err.c: the error converter and the callbacks of core calls as C callables */
void Rfmalloc_raise(int status, const char *msg) __attribute__((noreturn));
fm_ctl Rfmalloc_ctl(SEXP progress);
void Rfmalloc_ctl_finish(int status, const fm_err *err, const char *what);

#define CALLDEF(name, n) {#name, (DL_FUNC)&name, n}

static const R_CallMethodDef call_methods[] = {
    /* r_runtime.c: runtime handles and the name directory */
    CALLDEF(fmr_runtime_open, 4),
    CALLDEF(fmr_runtime_close, 2),
    CALLDEF(fmr_runtime_sync, 1),
    CALLDEF(fmr_runtime_check, 1),
    CALLDEF(fmr_runtime_state, 1),
    CALLDEF(fmr_runtime_info, 1),
    CALLDEF(fmr_runtime_dir, 1),
    CALLDEF(fmr_runtime_delete, 2),

    /* r_altrep.c: mapped vectors (ALTREP) */
    CALLDEF(fmr_altrep_new, 5),
    CALLDEF(fmr_altrep_save, 3),
    CALLDEF(fmr_altrep_get, 2),
    CALLDEF(fmr_altrep_set_attrs, 2),
    CALLDEF(fmr_altrep_is_mapped, 1),
    CALLDEF(fmr_altrep_runtime, 1),
    CALLDEF(fmr_altrep_describe, 1),
    CALLDEF(fmr_altrep_write_cols, 3),
    CALLDEF(fmr_altrep_elt, 2),
    CALLDEF(fmr_altrep_region, 3),

    /* r_codec.c: genotype codecs and borrowed file views */
    CALLDEF(fmr_bed2_encode, 2),
    CALLDEF(fmr_dos8_encode, 2),
    CALLDEF(fmr_hap1_encode, 2),
    CALLDEF(fmr_hap1_row_bytes, 1),
    CALLDEF(fmr_hap1_rows, 5),
    CALLDEF(fmr_fileview_open, 1),
    CALLDEF(fmr_fileview_alive, 1),
    CALLDEF(fmr_fileview_size, 1),
    CALLDEF(fmr_fileview_close, 1),
    CALLDEF(fmr_bed2_check, 4),
    CALLDEF(fmr_bed2_counts, 1),

    /* r_mat.c: matrix views */
    CALLDEF(fmr_view_new, 4),
    CALLDEF(fmr_view_alive, 1),
    CALLDEF(fmr_view_of_slots, 5),
    CALLDEF(fmr_codec_ids, 0),

    /* r_panel.c: products, Gram matrices, gathers */
    CALLDEF(fmr_product, 4),
    CALLDEF(fmr_gram, 2),
    CALLDEF(fmr_gather, 3),
    CALLDEF(fmr_gather_cells, 3),

    /* r_settings.c */
    CALLDEF(fmr_settings, 1),
    /* r_backend.c: built-in backends, forcing, test backends and hooks */
    CALLDEF(fmr_backends, 0),
    CALLDEF(fmr_cpu_isa, 0),
    CALLDEF(fmr_cpu_env_valid, 0),
    CALLDEF(fmr_last_backend, 0),
    CALLDEF(fmr_test_cpu_cap, 1),
    CALLDEF(fmr_test_backend, 2),

    /* r_ext.c: external codecs, backend registration for other packages */
    CALLDEF(fmr_ext_info, 1),
    CALLDEF(fmr_test_ext_matrix, 3),
    CALLDEF(fmr_test_ext_backend, 1),
    CALLDEF(fmr_test_ext_release, 0),

    /* r_alp.c: ALP-compressed double matrices */
    CALLDEF(fmr_alp_encode, 1),
    CALLDEF(fmr_alp_store, 2),
    CALLDEF(fmr_alp_info, 1),
    CALLDEF(fmr_alp_backend, 1),

    /* r_init.c: the package's clean-up before its namespace goes */
    CALLDEF(fmr_unload, 0),

    /* r_stats.c: streamed statistics and PCA */
    CALLDEF(fmr_colvar, 1),
    CALLDEF(fmr_rpca, 8),

    {NULL, NULL, 0}};

void R_init_Rfmalloc(DllInfo *dll) {
  R_registerRoutines(dll, NULL, call_methods, NULL, NULL);
  R_useDynamicSymbols(dll, FALSE);
  fmr_altrep_init(dll);
  fmr_settings_init();
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
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_raise", (DL_FUNC)&Rfmalloc_raise);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_ctl", (DL_FUNC)&Rfmalloc_ctl);
  R_RegisterCCallable("Rfmalloc", "Rfmalloc_ctl_finish", (DL_FUNC)&Rfmalloc_ctl_finish);
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
