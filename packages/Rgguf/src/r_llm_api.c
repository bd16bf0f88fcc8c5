/* r_llm_api.c: Rgguf's function table of the core's GGML subsystem
 * (inst/include/Rgguf_llm.h), filled from the list that clients' forwarders
 * are made from; registered in R_init_Rgguf. */
#include <R.h>
#include <Rinternals.h>

#include <Rgguf_llm.h>

#include "r_calls.h"

static const Rgguf_llm_api llm_api = {
    RGGUF_LLM_VERSION, RGGUF_LLM_N,
#define FM_LLM_FN(ret, name, params, args) name,
#define FM_LLM_VOID(name, params, args) name,
#include <Rgguf_llm_list.h>
#undef FM_LLM_FN
#undef FM_LLM_VOID
};

const Rgguf_llm_api *rgguf_llm_api(void) { return &llm_api; }
