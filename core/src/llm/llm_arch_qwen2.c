/* llm_arch_qwen2.c: the qwen2 architecture (Qwen2, Qwen2.5). The llama
 * pre-norm decoder with biases on the Q, K and V projections (none on the
 * output projection), NEOX RoPE (rotation of pairs i, i + n_rot/2), RMSNorm,
 * grouped-query attention, SwiGLU feed-forward, tied or untied output.
 * Source: Qwen2 technical report (Yang et al. 2024) and the GGUF keys and
 * tensor names llama.cpp reads for "qwen2" (<arch>.rope.freq_base,
 * blk.N.attn_{q,k,v}.bias). Tested against llama.cpp on a random-weight
 * model (packages/Rllm/tests/testthat/test-arch.R). */
#include "llm_impl.h"

static fm_status load(llm_model *m, fm_err *err) {
  m->hp.rope_neox = 1;
  return llm_bind_decoder_layers_need(m, LLM_NEED_QKV_BIAS | LLM_NEED_DENSE, err);
}

const llm_arch llm_arch_qwen2 = {"qwen2", load, llm_build_llama_decoder, NULL};
