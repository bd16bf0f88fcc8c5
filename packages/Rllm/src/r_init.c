/* r_init.c: registers the .Call entry points of Rllm. Each glue module
 * exports its own NULL-terminated table (r_calls.h), so modules add entry
 * points without touching this file. */
#include <Rgguf_llm.h>

#include <Rfmalloc_calls.h>

#include "r_calls.h"

static const R_CallMethodDef *const module_tables[] = {rllm_tok_calls, rllm_model_calls, rllm_pt_calls};

void R_init_Rllm(DllInfo *dll) {
  Rfmalloc_core_init();
  Rgguf_llm_init();
  Rfmalloc_register_calls(dll, module_tables,
                          (int)(sizeof module_tables / sizeof module_tables[0]));
}
