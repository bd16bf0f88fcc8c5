/* llm_arch_qwen3moe.c: the qwen3moe architecture (Qwen3 mixture of
 * experts, e.g. Qwen3-30B-A3B). Attention as qwen3 (per-head Q/K RMSNorm,
 * NEOX RoPE); every layer's feed-forward is a mixture of experts: router
 * logits = ffn_gate_inp x, probabilities softmax over the n_expert experts,
 * the n_expert_used most probable selected (ties: GGML's top-k order), their
 * probabilities renormalized to sum 1 and used to weight the selected
 * experts' SwiGLU outputs (ffn_{gate,up,down}_exps, [n_embd, n_ff_exp,
 * n_expert] and [n_ff_exp, n_embd, n_expert]) through ggml_mul_mat_id.
 * Source: Qwen3 technical report (Yang et al. 2025); switch-style routing
 * (Shazeer et al. 2017, Fedus et al. 2021); the GGUF keys llama.cpp reads
 * for "qwen3moe" (<arch>.expert_count, expert_used_count,
 * expert_feed_forward_length). Tested against llama.cpp on a random-weight
 * model (packages/Rllm/tests/testthat/test-arch.R). */
#include "llm_impl.h"

static fm_status load(llm_model *m, fm_err *err) {
  m->hp.rope_neox = 1;
  return llm_bind_decoder_layers_need(m, LLM_NEED_QK_NORM | LLM_NEED_MOE, err);
}

const llm_arch llm_arch_qwen3moe = {"qwen3moe", load, llm_build_llama_decoder, NULL};
