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
  fm_status st = llm_bind_decoder_layers(m, err);
  if (st != FM_OK) return st;
  for (int64_t il = 0; il < m->hp.n_layer; il++) {
    const llm_layer *l = &m->layers[il];
    if (!l->attn_q_norm || !l->attn_k_norm)
      return fm_err_set(err, FM_EFORMAT, "tensor 'blk.%lld.attn_%s_norm.weight' is missing (architecture qwen3)",
                        (long long)il, !l->attn_q_norm ? "q" : "k");
    if (l->ffn_gate_inp)
      return fm_err_set(err, FM_EFORMAT,
                        "layer %lld has experts (ffn_gate_inp); use architecture qwen3moe",
                        (long long)il);
  }
  return FM_OK;
}

static fm_status build(llm_build *b, fm_err *err) {
  llm_decoder_opts o = {0};
  o.norm = LLM_NORM_RMS;
  o.ffn = LLM_FFN_SWIGLU;
  return llm_build_decoder(b, &o, err);
}

const llm_arch llm_arch_qwen3 = {"qwen3", load, build, NULL};
