/* r_init.c: registers the .Call entry points and C callables of Rgguf.
 * Each glue module exports its own NULL-terminated table (r_calls.h), so
 * modules add entry points without touching this file. */
#include <string.h>

#include "r_calls.h"

static const R_CallMethodDef *const module_tables[] = {rgguf_file_calls, rgguf_tensor_calls,
                                                       rgguf_write_calls};

void R_init_Rgguf(DllInfo *dll) {
  static R_CallMethodDef all[128];
  size_t n = 0;
  for (size_t t = 0; t < sizeof module_tables / sizeof module_tables[0]; t++)
    for (const R_CallMethodDef *m = module_tables[t]; m->name; m++)
      if (n + 1 < sizeof all / sizeof all[0]) all[n++] = *m;
  memset(&all[n], 0, sizeof all[n]);
  R_registerRoutines(dll, NULL, all, NULL, NULL);
  R_useDynamicSymbols(dll, FALSE);
  R_forceSymbols(dll, TRUE);
  rgguf_init_callables();
  rgguf_tensor_init();
}

/* Runs when the DLL is unloaded: the GGML backend leaves Rfmalloc's registry
 * (its code is about to go) and every open GGUF mapping is closed. */
void R_unload_Rgguf(DllInfo *dll) {
  (void)dll;
  rgguf_tensor_unload();
  rgguf_close_all();
}
