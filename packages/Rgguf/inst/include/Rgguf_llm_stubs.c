/* Rgguf_llm_stubs.c: include this file in exactly one source file of a
 * package that calls the core's GGML subsystem, after
 * <Rfmalloc_core_stubs.c> (see Rgguf_llm.h), and call Rgguf_llm_init()
 * from its R_init_<pkg>. It defines a hidden forwarder into Rgguf's table
 * for every function of Rgguf_llm_list.h. */
#include <Rgguf_llm.h>

static const Rgguf_llm_api *rgguf_llm;

FM_STUB void Rgguf_llm_init(void) {
  rgguf_llm = (const Rgguf_llm_api *)Rfmalloc_table("Rgguf", "Rgguf_llm_api", RGGUF_LLM_VERSION,
                                                     RGGUF_LLM_N);
}

#define FM_LLM_FN(ret, name, params, args)                                                         \
  FM_STUB ret name params { return rgguf_llm->name args; }
#define FM_LLM_VOID(name, params, args)                                                            \
  FM_STUB void name params { rgguf_llm->name args; }
#include <Rgguf_llm_list.h>
#undef FM_LLM_FN
#undef FM_LLM_VOID
