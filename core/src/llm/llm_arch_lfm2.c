/* llm_arch_lfm2.c: the lfm2 architecture (Liquid LFM2), a hybrid of
 * gated short convolutions and grouped-query attention:
 *   - layers with <arch>.attention.head_count_kv[il] = 0 are short
 *     convolution blocks: [B; C; X] = in_proj x (3 n_embd rows, in that
 *     order), y = C * conv(B * X), out = out_proj y, where conv is a causal
 *     depthwise convolution over time of width L = <arch>.shortconv.l_cache
 *     (kernel shortconv.conv [L, n_embd]: out[t] = sum_k kernel[k] *
 *     in[t - (L - 1) + k]). The last L - 1 inputs of the convolution are the
 *     layer's recurrent state, kept in the cache (zeros at the start);
 *   - the other layers are attention with per-head Q/K RMSNorm and NEOX
 *     RoPE (standard sliding window when <arch>.attention.sliding_window is
 *     set);
 *   - every layer: x + block(RMSNorm(x)), then x + SwiGLU(RMSNorm(x));
 *   - final RMSNorm from token_embd_norm.weight (the name LFM2 GGUFs use),
 *     tied or untied output.
 * Source: Liquid AI's LFM2 technical report (2025) and the GGUF keys and
 * tensor names llama.cpp reads for "lfm2". Tested against llama.cpp on a
 * random-weight model (packages/Rllm/tests/testthat/test-arch.R). */
#include <stdlib.h>

#include "llm_impl.h"

typedef struct lfm2_data {
  int64_t l_cache; /* convolution width L */
} lfm2_data;

/* extra[] slots of a convolution layer. */
enum { CONV_KERNEL = 0, CONV_IN = 1, CONV_OUT = 2 };

#define TRY(x)                                                                   \
  do {                                                                           \
    st = (x);                                                                    \
    if (st != FM_OK) return st;                                                  \
  } while (0)

static fm_status load(llm_model *m, fm_err *err) {
  fm_status st;
  llm_hparams *hp = &m->hp;
  const int64_t E = hp->n_embd, hk = hp->n_embd_head_k, hv = hp->n_embd_head_v;
  hp->rope_neox = 1;
  int64_t L;
  TRY(llm_kv_i64(m, "shortconv.l_cache", 1, 0, &L, err));
  if (L < 2 || L > 64)
    return fm_err_set(err, FM_EFORMAT, "metadata key 'lfm2.shortconv.l_cache' is %lld, expected 2..64",
                      (long long)L);
  lfm2_data *d = calloc(1, sizeof *d);
  if (!d) return fm_err_set(err, FM_ENOMEM, "out of memory");
  d->l_cache = L;
  m->arch_data = d;

  for (int64_t il = 0; il < hp->n_layer; il++) {
    llm_layer *l = &m->layers[il];
    int i = (int)il;
    int64_t nh = hp->n_head[il], nkv = hp->n_head_kv[il];
    TRY(llm_bind(m, &l->attn_norm, 1, LLM_T_F32, E, 1, 1, err, "blk.%d.attn_norm.weight", i));
    if (nkv == 0) {
      hp->swa_layer[il] = 0;
      TRY(llm_bind(m, &l->extra[CONV_KERNEL], 1, LLM_T_F32, L, E, 1, err,
                   "blk.%d.shortconv.conv.weight", i));
      TRY(llm_bind(m, &l->extra[CONV_IN], 1, LLM_T_MATMUL, E, 3 * E, 1, err,
                   "blk.%d.shortconv.in_proj.weight", i));
      TRY(llm_bind(m, &l->extra[CONV_OUT], 1, LLM_T_MATMUL, E, E, 1, err,
                   "blk.%d.shortconv.out_proj.weight", i));
    } else {
      if (nh < 1)
        return fm_err_set(err, FM_EFORMAT, "layer %lld has %lld heads and %lld KV heads",
                          (long long)il, (long long)nh, (long long)nkv);
      hp->swa_layer[il] = hp->n_swa > 0;
      TRY(llm_bind(m, &l->wq, 1, LLM_T_MATMUL, E, hk * nh, 1, err, "blk.%d.attn_q.weight", i));
      TRY(llm_bind(m, &l->wk, 1, LLM_T_MATMUL, E, hk * nkv, 1, err, "blk.%d.attn_k.weight", i));
      TRY(llm_bind(m, &l->wv, 1, LLM_T_MATMUL, E, hv * nkv, 1, err, "blk.%d.attn_v.weight", i));
      TRY(llm_bind(m, &l->wo, 1, LLM_T_MATMUL, hv * nh, E, 1, err, "blk.%d.attn_output.weight", i));
      TRY(llm_bind(m, &l->attn_q_norm, 1, LLM_T_F32, hk, 1, 1, err, "blk.%d.attn_q_norm.weight", i));
      TRY(llm_bind(m, &l->attn_k_norm, 1, LLM_T_F32, hk, 1, 1, err, "blk.%d.attn_k_norm.weight", i));
    }
    TRY(llm_bind(m, &l->ffn_norm, 1, LLM_T_F32, E, 1, 1, err, "blk.%d.ffn_norm.weight", i));
    int64_t ff = hp->n_ff[il] > 0 ? hp->n_ff[il] : -1;
    TRY(llm_bind(m, &l->ffn_up, 1, LLM_T_MATMUL, E, ff, 1, err, "blk.%d.ffn_up.weight", i));
    ff = l->ffn_up->ne[1];
    TRY(llm_bind(m, &l->ffn_gate, 1, LLM_T_MATMUL, E, ff, 1, err, "blk.%d.ffn_gate.weight", i));
    TRY(llm_bind(m, &l->ffn_down, 1, LLM_T_MATMUL, ff, E, 1, err, "blk.%d.ffn_down.weight", i));
  }
  /* The final norm: token_embd_norm.weight in LFM2 files. */
  if (!m->output_norm)
    TRY(llm_bind(m, &m->output_norm, 1, LLM_T_F32, E, 1, 1, err, "token_embd_norm.weight"));
  return FM_OK;
}

/* Recurrent state of a convolution layer: its last L - 1 inputs,
 * [L - 1, n_embd] F32 (time contiguous). */
static int64_t state_elems(const llm_model *m, int64_t il) {
  const lfm2_data *d = m->arch_data;
  if (!d || m->hp.n_head_kv[il] != 0) return 0;
  return (d->l_cache - 1) * m->hp.n_embd;
}

static struct ggml_tensor *shortconv(llm_build *b, int64_t il, struct ggml_tensor *x) {
  llm_model *m = b->m;
  const llm_layer *l = &m->layers[il];
  const lfm2_data *d = m->arch_data;
  struct ggml_context *ctx = b->ctx;
  const int64_t E = m->hp.n_embd, n = b->n_tokens, dc = d->l_cache - 1;

  struct ggml_tensor *bcx = llm_mm(b, l->extra[CONV_IN], x); /* [3E, n] */
  size_t es = ggml_element_size(bcx);
  struct ggml_tensor *bg = ggml_view_2d(ctx, bcx, E, n, bcx->nb[1], 0);
  struct ggml_tensor *cg = ggml_view_2d(ctx, bcx, E, n, bcx->nb[1], (size_t)E * es);
  struct ggml_tensor *xv = ggml_view_2d(ctx, bcx, E, n, bcx->nb[1], (size_t)(2 * E) * es);
  struct ggml_tensor *bx = ggml_transpose(ctx, ggml_mul(ctx, bg, xv)); /* [n, E] */

  /* Prepend the state (the previous dc inputs), keep the last dc as the
   * new state. */
  struct ggml_tensor *s = b->cache->s[il];
  struct ggml_tensor *state = ggml_reshape_2d(ctx, s, dc, E);     /* [dc, E] */
  struct ggml_tensor *cat = ggml_concat(ctx, state, bx, 0);        /* [dc + n, E] */
  struct ggml_tensor *last = ggml_view_2d(ctx, cat, dc, E, cat->nb[1], (size_t)n * es);
  ggml_build_forward_expand(b->gf, ggml_cpy(ctx, last, state));

  struct ggml_tensor *conv =
      ggml_ssm_conv(ctx, ggml_reshape_3d(ctx, cat, dc + n, E, 1), l->extra[CONV_KERNEL]); /* [E, n, 1] */
  struct ggml_tensor *y = ggml_mul(ctx, cg, ggml_reshape_2d(ctx, conv, E, n));
  return llm_mm(b, l->extra[CONV_OUT], y);
}

static fm_status build(llm_build *b, fm_err *err) {
  (void)err;
  llm_model *m = b->m;
  const llm_hparams *hp = &m->hp;
  struct ggml_context *ctx = b->ctx;
  struct ggml_tensor *x = llm_build_inp_embd(b);
  for (int64_t il = 0; il < hp->n_layer; il++) {
    const llm_layer *l = &m->layers[il];
    struct ggml_tensor *res = x;
    struct ggml_tensor *cur = llm_norm(b, x, l->attn_norm, NULL, LLM_NORM_RMS);
    cur = hp->n_head_kv[il] == 0 ? shortconv(b, il, cur) : llm_attn(b, il, cur, NULL);
    if (il == hp->n_layer - 1) {
      cur = llm_select_outputs(b, cur);
      res = llm_select_outputs(b, res);
    }
    x = ggml_add(ctx, res, cur);
    cur = llm_norm(b, x, l->ffn_norm, NULL, LLM_NORM_RMS);
    cur = llm_ffn(b, il, cur, LLM_FFN_SWIGLU);
    x = ggml_add(ctx, x, cur);
  }
  b->hidden = llm_norm(b, x, m->output_norm, NULL, LLM_NORM_RMS);
  return FM_OK;
}

const llm_arch llm_arch_lfm2 = {"lfm2", load, build, state_elems};
