/* llm_arch_gemma_embedding.c: the gemma-embedding architecture
 * (EmbeddingGemma), an encoder built from Gemma 3 blocks:
 *   - token embeddings scaled by sqrt(n_embd);
 *   - per layer: RMSNorm, Q/K/V projections, per-head Q/K RMSNorm, NEOX
 *     RoPE, bidirectional (non-causal) grouped-query attention with scale
 *     1/sqrt(head_dim), RMSNorm of the branch output (post_attention_norm)
 *     before the residual add; RMSNorm, GELU-gated feed-forward
 *     (gelu(gate x) * up x, GGML's tanh GELU), RMSNorm of the branch output
 *     (post_ffw_norm) before the residual add;
 *   - a symmetric sliding window on all layers but every
 *     <arch>.attention.sliding_window_pattern-th (default 6: layers 5, 11,
 *     ... attend to everything): a token sees keys whose position differs by
 *     at most sliding_window / 2; windowed layers rotate with
 *     <arch>.rope.freq_base_swa (default 10000), the others with
 *     <arch>.rope.freq_base;
 *   - final RMSNorm; pooling by <arch>.pooling_type (mean by default); when
 *     the file has the sentence-transformers dense head (dense_2.weight
 *     [n_embd, d], optional dense_2.bias, dense_3.weight [d, n_embd]), the
 *     pooled vector passes both projections (no activation), as llama.cpp
 *     applies them after pooling.
 * Gemma stores RMSNorm weights with their +1 folded in (the GGUF converter
 * does it), so every norm is x / rms(x) * w.
 * Source: Vera et al. 2025 (EmbeddingGemma), Gemma 3 technical report
 * (2025), and the GGUF keys and tensor names llama.cpp reads for
 * "gemma-embedding". Tested against llama.cpp's pooled embeddings on a
 * random-weight model (packages/Rllm/tests/testthat/test-arch.R). */
#include <math.h>
#include <stdlib.h>

#include "llm_impl.h"

typedef struct gemma_embd_data {
  float rope_base_swa; /* RoPE base of the windowed layers */
} gemma_embd_data;

static fm_status load(llm_model *m, fm_err *err) {
  fm_status st;
  llm_hparams *hp = &m->hp;
  hp->rope_neox = 1;
  hp->causal = 0; /* an encoder: every token attends both ways */
  hp->embd_scale = sqrtf((float)hp->n_embd);
  hp->kq_scale = 1.0f / sqrtf((float)hp->n_embd_head_k);
  if (hp->n_swa < 1)
    return fm_err_set(err, FM_EFORMAT,
                      "metadata key 'gemma-embedding.attention.sliding_window' is missing or < 1");
  int64_t pattern;
  st = llm_kv_i64(m, "attention.sliding_window_pattern", 0, 6, &pattern, err);
  if (st != FM_OK) return st;
  if (pattern < 0 || pattern > 4096)
    return fm_err_set(err, FM_EFORMAT,
                      "metadata key 'gemma-embedding.attention.sliding_window_pattern' is %lld, "
                      "expected 0..4096",
                      (long long)pattern);
  /* Pattern p: layers il with il % p < p - 1 are windowed (p = 0: all). */
  for (int64_t il = 0; il < hp->n_layer; il++)
    hp->swa_layer[il] = pattern == 0 || il % pattern < pattern - 1;
  double base_swa;
  st = llm_kv_f64(m, "rope.freq_base_swa", 0, 10000.0, &base_swa, err);
  if (st != FM_OK) return st;
  if (!(base_swa > 0))
    return fm_err_set(err, FM_EFORMAT, "metadata key 'gemma-embedding.rope.freq_base_swa' is %g, expected > 0",
                      base_swa);
  gemma_embd_data *d = calloc(1, sizeof *d);
  if (!d) return fm_err_set(err, FM_ENOMEM, "out of memory");
  d->rope_base_swa = (float)base_swa;
  m->arch_data = d;

  st = llm_bind_decoder_layers(m, err);
  if (st != FM_OK) return st;
  for (int64_t il = 0; il < hp->n_layer; il++) {
    const llm_layer *l = &m->layers[il];
    const char *missing = !l->attn_q_norm      ? "attn_q_norm"
                          : !l->attn_k_norm    ? "attn_k_norm"
                          : !l->attn_post_norm ? "post_attention_norm"
                          : !l->ffn_post_norm  ? "post_ffw_norm"
                          : !l->ffn_gate       ? "ffn_gate"
                                               : NULL;
    if (missing)
      return fm_err_set(err, FM_EFORMAT, "tensor 'blk.%lld.%s.weight' is missing (architecture gemma-embedding)",
                        (long long)il, missing);
    if (l->ffn_gate_inp)
      return fm_err_set(err, FM_EFORMAT, "layer %lld has experts; gemma-embedding is dense",
                        (long long)il);
  }
  if (!m->output_norm)
    return fm_err_set(err, FM_EFORMAT, "tensor 'output_norm.weight' is missing (architecture gemma-embedding)");

  /* Optional sentence-transformers dense head, applied after pooling. */
  struct ggml_tensor **d2 = &m->extra[0], **d2b = &m->extra[1], **d3 = &m->extra[2];
  st = llm_bind(m, d2, 0, LLM_T_MATMUL, hp->n_embd, -1, 1, err, "dense_2.weight");
  if (st != FM_OK) return st;
  if (*d2) {
    int64_t dd = (*d2)->ne[1];
    st = llm_bind(m, d2b, 0, LLM_T_F32, dd, 1, 1, err, "dense_2.bias");
    if (st == FM_OK) st = llm_bind(m, d3, 1, LLM_T_MATMUL, dd, -1, 1, err, "dense_3.weight");
    if (st != FM_OK) return st;
    m->info.n_embd_out = (*d3)->ne[1];
  }
  return FM_OK;
}

static struct ggml_tensor *dense_head(llm_build *b, struct ggml_tensor *pooled) {
  llm_model *m = b->m;
  struct ggml_tensor *y = llm_mm(b, m->extra[0], pooled);
  if (m->extra[1]) y = ggml_add(b->ctx, y, m->extra[1]);
  return llm_mm(b, m->extra[2], y);
}

static fm_status build(llm_build *b, fm_err *err) {
  (void)err;
  llm_model *m = b->m;
  llm_hparams *hp = &m->hp;
  const gemma_embd_data *d = m->arch_data;
  struct ggml_context *ctx = b->ctx;
  /* The rotation base differs between windowed and full layers; GGML takes
   * it when an operator is created, so it is switched per layer here. */
  const float base_full = hp->rope_freq_base;
  struct ggml_tensor *x = llm_build_inp_embd(b);
  for (int64_t il = 0; il < hp->n_layer; il++) {
    const llm_layer *l = &m->layers[il];
    struct ggml_tensor *res = x;
    struct ggml_tensor *cur = llm_norm(b, x, l->attn_norm, NULL, LLM_NORM_RMS);
    hp->rope_freq_base = hp->swa_layer[il] ? d->rope_base_swa : base_full;
    cur = llm_attn(b, il, cur, NULL);
    hp->rope_freq_base = base_full;
    if (il == hp->n_layer - 1) {
      cur = llm_select_outputs(b, cur);
      res = llm_select_outputs(b, res);
    }
    cur = llm_norm(b, cur, l->attn_post_norm, NULL, LLM_NORM_RMS);
    struct ggml_tensor *sa = ggml_add(ctx, cur, res);
    cur = llm_norm(b, sa, l->ffn_norm, NULL, LLM_NORM_RMS);
    cur = llm_ffn(b, il, cur, LLM_FFN_GEGLU);
    cur = llm_norm(b, cur, l->ffn_post_norm, NULL, LLM_NORM_RMS);
    x = ggml_add(ctx, cur, sa);
  }
  b->hidden = llm_norm(b, x, m->output_norm, NULL, LLM_NORM_RMS);
  if (m->extra[0]) b->pool_proj = dense_head;
  return FM_OK;
}

const llm_arch llm_arch_gemma_embedding = {"gemma-embedding", load, build, NULL};
