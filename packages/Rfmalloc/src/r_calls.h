/* r_calls.h: the .Call tables of Rfmalloc's glue modules. Each module
 * defines its own NULL-terminated table at its end, so adding an entry point
 * touches that module only; r_init.c joins the tables and registers them.
 * The convention of every package's glue: routines <prefix>_<name> (fmr_,
 * rpg_, rgguf_, rllm_), called from R as C_<routine> (useDynLib(.fixes =
 * "C_")), errors raised through Rfmalloc's one converter. */
#ifndef R_CALLS_H
#define R_CALLS_H

#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

#define FMR_CALLDEF(name, n) {#name, (DL_FUNC)&name, n}

extern const R_CallMethodDef fmr_runtime_calls[]; /* r_runtime.c */
extern const R_CallMethodDef fmr_altrep_calls[]; /* r_altrep.c */
extern const R_CallMethodDef fmr_codec_calls[]; /* r_codec.c */
extern const R_CallMethodDef fmr_mat_calls[]; /* r_mat.c */
extern const R_CallMethodDef fmr_panel_calls[]; /* r_panel.c */
extern const R_CallMethodDef fmr_settings_calls[]; /* r_settings.c */
extern const R_CallMethodDef fmr_backend_calls[]; /* r_backend.c */
extern const R_CallMethodDef fmr_ext_calls[]; /* r_ext.c */
extern const R_CallMethodDef fmr_alp_calls[]; /* r_alp.c */
extern const R_CallMethodDef fmr_stats_calls[]; /* r_stats.c */
extern const R_CallMethodDef fmr_parallel_calls[]; /* r_parallel.c */

#endif
