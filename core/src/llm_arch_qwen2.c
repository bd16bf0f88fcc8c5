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
  fm_status st = llm_bind_decoder_layers(m, err);
  if (st != FM_OK) return st;
  for (int64_t il = 0; il < m->hp.n_layer; il++) {
    const llm_layer *l = &m->layers[il];
    if (!l->bq || !l->bk || !l->bv)
      return fm_err_set(err, FM_EFORMAT,
                        "tensor 'blk.%lld.attn_%s.bias' is missing (architecture qwen2 has "
                        "Q, K and V biases)",
                        (long long)il, !l->bq ? "q" : !l->bk ? "k" : "v");
    if (l->ffn_gate_inp)
      return fm_err_set(err, FM_EFORMAT,
                        "layer %lld has experts (ffn_gate_inp); qwen2 is a dense architecture",
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

const llm_arch llm_arch_qwen2 = {"qwen2", load, build, NULL};
