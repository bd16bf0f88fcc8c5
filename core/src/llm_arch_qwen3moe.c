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
  if (m->hp.n_expert < 1 || m->hp.n_expert_used < 1)
    return fm_err_set(err, FM_EFORMAT,
                      "metadata keys 'qwen3moe.expert_count' (%lld) and 'qwen3moe.expert_used_count' "
                      "(%lld) must be >= 1",
                      (long long)m->hp.n_expert, (long long)m->hp.n_expert_used);
  fm_status st = llm_bind_decoder_layers(m, err);
  if (st != FM_OK) return st;
  for (int64_t il = 0; il < m->hp.n_layer; il++) {
    const llm_layer *l = &m->layers[il];
    if (!l->attn_q_norm || !l->attn_k_norm)
      return fm_err_set(err, FM_EFORMAT, "tensor 'blk.%lld.attn_%s_norm.weight' is missing (architecture qwen3moe)",
                        (long long)il, !l->attn_q_norm ? "q" : "k");
    if (!l->ffn_gate_inp)
      return fm_err_set(err, FM_EFORMAT, "tensor 'blk.%lld.ffn_gate_inp.weight' is missing (architecture qwen3moe)",
                        (long long)il);
  }
  return FM_OK;
}

static fm_status build(llm_build *b, fm_err *err) {
  llm_decoder_opts o = {0};
  o.norm = LLM_NORM_RMS;
  o.ffn = LLM_FFN_SWIGLU;
  o.moe.gating_sigmoid = 0;
  o.moe.norm_weights = 1;
  o.moe.act = LLM_FFN_SWIGLU;
  return llm_build_decoder(b, &o, err);
}

const llm_arch llm_arch_qwen3moe = {"qwen3moe", load, build, NULL};
