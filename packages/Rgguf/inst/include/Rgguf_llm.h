/* Rgguf_llm.h: the core's GGML subsystem (core/src/llm: GGUF tensors as
 * codecs, the model runtime, KV caches, samplers), reached from other
 * packages (Rllm) through Rgguf's function table.
 *
 * GGML is linked into one package, Rgguf, and so is every core source that
 * calls it; the rest of the core is Rfmalloc's (Rfmalloc_core.h). A client:
 *   DESCRIPTION: LinkingTo: Rfmalloc, Rgguf; Imports (or Depends): Rgguf
 *   one source file:  #include <Rfmalloc_core_stubs.c>
 *                     #include <Rgguf_llm_stubs.c>
 *   R_init_<pkg>():   Rfmalloc_core_init(); Rgguf_llm_init();
 * then calls fm_llm_* by their core names (hidden forwarders). */
#ifndef RGGUF_LLM_H
#define RGGUF_LLM_H

#include <Rfmalloc_core.h>

#include "fm/fm_llm.h"
#include "fm/fm_llm_ggml.h"
#include "fm/fm_llm_program.h"
#include "fm/fm_llm_tensor.h"

/* Bump when Rgguf_llm_list.h or a struct of fm_llm*.h changes. */
#define RGGUF_LLM_VERSION 9

typedef struct Rgguf_llm_api {
  int version;     /* RGGUF_LLM_VERSION of the Rgguf that filled it */
  int n_functions; /* the lines of Rgguf_llm_list.h */
#define FM_LLM_FN(ret, name, params, args) ret(*name) params;
#define FM_LLM_VOID(name, params, args) void(*name) params;
#include "Rgguf_llm_list.h"
#undef FM_LLM_FN
#undef FM_LLM_VOID
} Rgguf_llm_api;

enum {
  RGGUF_LLM_N = 0
#define FM_LLM_FN(ret, name, params, args) +1
#define FM_LLM_VOID(name, params, args) +1
#include "Rgguf_llm_list.h"
#undef FM_LLM_FN
#undef FM_LLM_VOID
};

/* Defined by Rgguf_llm_stubs.c: look Rgguf's table up (from R_init_<pkg>,
 * after Rfmalloc_core_init()). */
void Rgguf_llm_init(void);

#endif
