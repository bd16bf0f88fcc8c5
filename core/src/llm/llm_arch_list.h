/* llm_arch_list.h (private): the architectures the runtime knows, one
 * LLM_ARCH(<name>) line each; <name> is the suffix of the descriptor
 * `const llm_arch llm_arch_<name>` defined in core/src/llm/llm_arch_<name>.c.
 * Included twice by llm_model.c (declarations, then the table). */
LLM_ARCH(llama)
LLM_ARCH(qwen2)
LLM_ARCH(qwen3)
LLM_ARCH(qwen3moe)
LLM_ARCH(gemma_embedding)
LLM_ARCH(lfm2)
