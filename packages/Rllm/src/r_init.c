/* r_init.c: registers the .Call entry points of Rllm. Each glue module
 * exports its own NULL-terminated table (r_calls.h), so modules add entry
 * points without touching this file. */
#include <stdlib.h>
#include <string.h>

#include <Rgguf_llm.h>

#include "r_calls.h"

static const R_CallMethodDef *const module_tables[] = {rllm_tok_calls, rllm_model_calls};

void R_init_Rllm(DllInfo *dll) {
  Rfmalloc_core_init();
  Rgguf_llm_init();
  static R_CallMethodDef all[256];
  size_t n = 0;
  for (size_t t = 0; t < sizeof module_tables / sizeof module_tables[0]; t++)
    for (const R_CallMethodDef *m = module_tables[t]; m->name; m++)
      if (n + 1 < sizeof all / sizeof all[0]) all[n++] = *m;
  memset(&all[n], 0, sizeof all[n]);
  R_registerRoutines(dll, NULL, all, NULL, NULL);
  R_useDynamicSymbols(dll, FALSE);
  R_forceSymbols(dll, TRUE);
}
