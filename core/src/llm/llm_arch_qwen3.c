/* llm_arch_qwen3.c: the qwen3 architecture (dense Qwen3). The llama
 * pre-norm decoder with a per-head RMSNorm on queries and keys after their
 * projections and before RoPE (blk.N.attn_{q,k}_norm, [head_dim]), NEOX
 * RoPE over the whole head, no projection biases; the head size
 * (<arch>.attention.key_length) may differ from n_embd / n_head; SwiGLU
 * feed-forward, tied or untied output.
 * Source: Qwen3 technical report (Yang et al. 2025) and the GGUF keys and
 * tensor names llama.cpp reads for "qwen3". Tested against llama.cpp on a
 * random-weight model (packages/Rllm/tests/testthat/test-arch.R). */
#include "llm_impl.h"

static fm_status load(llm_model *m, fm_err *err) {
  m->hp.rope_neox = 1;
  return llm_bind_decoder_layers_need(m, LLM_NEED_QK_NORM | LLM_NEED_DENSE, err);
}

const llm_arch llm_arch_qwen3 = {"qwen3", load, llm_build_llama_decoder, NULL};
