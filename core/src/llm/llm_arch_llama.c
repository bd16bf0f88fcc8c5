/* llm_arch_llama.c: the llama architecture (also the reference for adding
 * one; see llm_impl.h). Pre-norm decoder with RMSNorm, normal (adjacent
 * pair) RoPE, grouped-query attention, SwiGLU feed-forward (or, for
 * llama-family mixtures of experts such as Mixtral, softmax routing over
 * ffn_*_exps with the top n_expert_used renormalized), tied or untied output.
 * Source: Touvron et al. 2023 (LLaMA) and llama.cpp's handling of the GGUF
 * keys (docs: ggml's docs/gguf.md, "LLaMA" section). */
#include "llm_impl.h"

static fm_status load(llm_model *m, fm_err *err) {
  m->hp.rope_neox = 0;
  return llm_bind_decoder_layers(m, err);
}

const llm_arch llm_arch_llama = {"llama", load, llm_build_llama_decoder, NULL};
