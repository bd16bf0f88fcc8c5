/* Rfmalloc_calls.h: registering a package's .Call entry points, the way
 * every package of the stack does (Rfmalloc itself included).
 *
 * The glue convention of every package of the stack: each glue module
 * src/r_<module>.c ends with its NULL-terminated table of .Call entry
 * points (<prefix>_<module>_calls, declared in src/r_calls.h), routines are
 * named <prefix>_<name> (fmr_, rpg_, rgguf_, rllm_) and called from R as
 * C_<routine> (useDynLib(<Pkg>, .registration = TRUE, .fixes = "C_")),
 * and errors go through Rfmalloc's one converter (fmr_stop / fmr_raise in
 * Rfmalloc; Rfmalloc_raise and its wrappers of Rfmalloc.h elsewhere). R_init_<pkg> registers the n tables with this, which
 * also turns dynamic lookup off and forces symbols. R copies what it
 * registers, so the joined table is freed at once. */
#ifndef RFMALLOC_CALLS_H
#define RFMALLOC_CALLS_H

#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

#include <stdlib.h>

static inline void Rfmalloc_register_calls(DllInfo *dll, const R_CallMethodDef *const *tables,
                                           int n) {
  size_t total = 0;
  for (int t = 0; t < n; t++)
    for (const R_CallMethodDef *m = tables[t]; m->name; m++) total++;
  R_CallMethodDef *all = (R_CallMethodDef *)calloc(total + 1, sizeof *all);
  if (!all) Rf_error("cannot allocate the table of %d .Call entry points", (int)total);
  size_t k = 0;
  for (int t = 0; t < n; t++)
    for (const R_CallMethodDef *m = tables[t]; m->name; m++) all[k++] = *m;
  R_registerRoutines(dll, NULL, all, NULL, NULL);
  free(all);
  R_useDynamicSymbols(dll, FALSE);
  R_forceSymbols(dll, TRUE);
}

#endif
