/* r_init.c: registers the .Call entry points and C callables of Rgguf.
 * Each glue module exports its own NULL-terminated table (r_calls.h), so
 * modules add entry points without touching this file. */
#include <Rfmalloc_core.h>

#include <Rfmalloc_calls.h>

#include "r_calls.h"

static SEXP rgguf_unload(void);

static const R_CallMethodDef init_calls[] = {{"rgguf_unload", (DL_FUNC)&rgguf_unload, 0},
                                             {NULL, NULL, 0}};

static const R_CallMethodDef *const module_tables[] = {rgguf_file_calls, rgguf_tensor_calls,
                                                       rgguf_write_calls, init_calls};

void R_init_Rgguf(DllInfo *dll) {
  Rfmalloc_core_init();
  Rfmalloc_register_calls(dll, module_tables,
                          (int)(sizeof module_tables / sizeof module_tables[0]));
  rgguf_init_callables();
  rgguf_tensor_init();
}

/* Before the DLL goes: views forget our codecs, the GGML backend leaves
 * Rfmalloc's registry (its code is about to go) and every open GGUF mapping
 * is closed. Idempotent. Called by .onUnload (R/tensor.R) through
 * rgguf_unload: with dynamic symbol lookup off, R does not find
 * R_unload_Rgguf itself, which stays for loaders that do. */
static SEXP rgguf_unload(void) {
  rgguf_tensor_unload();
  rgguf_close_all();
  return R_NilValue;
}

void R_unload_Rgguf(DllInfo *dll) {
  (void)dll;
  rgguf_unload();
}
