/* r_core.c: the core functions this package calls, as forwarders into the
 * function tables of Rfmalloc (tokenizer, GGUF reader; Rfmalloc_core.h) and
 * Rgguf (models, caches, samplers; Rgguf_llm.h). Rllm compiles no core. */
#include <Rfmalloc_core_stubs.c>
#include <Rgguf_llm_stubs.c>
