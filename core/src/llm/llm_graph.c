/* llm_graph.c: the reusable lowerings that need the runtime's state
 * (inputs, masks, the cache's attention, experts, pooling, output rows),
 * and evaluation (graph build by the program's lowering, llm_program.c;
 * allocation by ggml_gallocr into one reused compute buffer, inputs,
 * compute on the model's backend: GGML's CPU backend, or a device's, where
 * the whole graph runs and only inputs and the result cross to and from
 * host memory).
 *
 * Attention follows what llama.cpp builds (without flash attention, its
 * default through node-llama-cpp), so results agree to rounding: keys
 * stored F16 in the cache and values stored transposed,
 * softmax(K^T Q * scale + mask) with ggml_soft_max_ext, V x probabilities,
 * heads merged; or flash attention for batches of LLM_FA_MIN_TOKENS.
 * Methods: Vaswani et al. 2017 (attention), Ainslie et al. 2023
 * (grouped-query attention), Dao et al. 2022 (flash attention), Shazeer et
 * al. 2017 (mixtures of experts). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llm_impl.h"

/* ---- inputs ---------------------------------------------------------------- */

struct ggml_tensor *llm_build_inp_pos(llm_build *b) {
  if (!b->inp_pos) {
    b->inp_pos = ggml_new_tensor_1d(b->ctx, GGML_TYPE_I32, b->n_tokens);
    ggml_set_name(b->inp_pos, "inp_pos");
    ggml_set_input(b->inp_pos);
  }
  return b->inp_pos;
}

struct ggml_tensor *llm_build_mask(llm_build *b, int kind, int f16) {
  if (kind <= LLM_MASK_DEFAULT || kind >= LLM_MASK_COUNT)
    kind = b->m->hp.causal ? LLM_MASK_CAUSAL : LLM_MASK_FULL;
  struct ggml_tensor **t = f16 ? &b->mask16[kind] : &b->mask[kind];
  if (!*t) {
    *t = ggml_new_tensor_2d(b->ctx, f16 ? GGML_TYPE_F16 : GGML_TYPE_F32, b->n_kv, b->n_tokens);
    ggml_set_input(*t);
  }
  return *t;
}

struct ggml_tensor *llm_build_k_idx(llm_build *b) {
  if (!b->inp_k_idx) {
    b->inp_k_idx = ggml_new_tensor_1d(b->ctx, GGML_TYPE_I64, b->n_tokens);
    ggml_set_input(b->inp_k_idx);
  }
  return b->inp_k_idx;
}

struct ggml_tensor *llm_build_v_idx(llm_build *b, int64_t ev) {
  int i = 0;
  for (; i < 8 && b->inp_v_idx[i]; i++)
    if (b->v_idx_ev[i] == ev) return b->inp_v_idx[i];
  struct ggml_tensor *t = ggml_new_tensor_1d(b->ctx, GGML_TYPE_I64, ev * b->n_tokens);
  ggml_set_input(t);
  if (i < 8) {
    b->inp_v_idx[i] = t;
    b->v_idx_ev[i] = ev;
  }
  return t;
}

struct ggml_tensor *llm_pool(llm_build *b, struct ggml_tensor *x, fm_llm_pooling pooling) {
  struct ggml_context *ctx = b->ctx;
  if (pooling == FM_LLM_POOL_MEAN) {
    b->inp_pool = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, x->ne[1], 1);
    ggml_set_input(b->inp_pool);
    return ggml_mul_mat(ctx, ggml_cont(ctx, ggml_transpose(ctx, x)), b->inp_pool);
  }
  b->inp_pool = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 1);
  ggml_set_input(b->inp_pool);
  return ggml_get_rows(ctx, x, b->inp_pool);
}

struct ggml_tensor *llm_select_outputs(llm_build *b, struct ggml_tensor *x) {
  return b->inp_out_ids ? ggml_get_rows(b->ctx, x, b->inp_out_ids) : x;
}

/* ---- lowerings ------------------------------------------------------------- */

/* Attention by GGML's operators: flash attention (b->flash_attn) or
 * explicit scores, softmax and product with V. q [hk, nh, n], kk [hk,
 * n_kv, nkv] and vv [n_kv, hv, nkv] views of the cache; [hv * nh, n]. */
static struct ggml_tensor *attn_ggml(llm_build *b, struct ggml_tensor *q, struct ggml_tensor *kk,
                                     struct ggml_tensor *vv, int mk, float scale) {
  struct ggml_context *ctx = b->ctx;
  const int64_t hk = kk->ne[0], hv = vv->ne[1], nh = q->ne[1], n = q->ne[2];
  struct ggml_tensor *qp = ggml_permute(ctx, q, 0, 2, 1, 3); /* [hk, n, nh] */
  struct ggml_tensor *cur;
  if (kk->type == GGML_TYPE_F16 && (b->flash_attn || hk < 32)) {
    /* F16 keys as F32 copies and queries rounded to F16, as GGML's F16
     * product rounds them: the same scores, from F32 arithmetic. Flash
     * attention needs it to accumulate in F32 on every path it may take;
     * the explicit path for small heads, where GGML's F16 dot product of
     * fewer than 32 elements runs a scalar loop converting each element.
     * The copies are linear in n_kv, against quadratic work. */
    kk = ggml_cast(ctx, kk, GGML_TYPE_F32);
    qp = ggml_cast(ctx, ggml_cast(ctx, qp, GGML_TYPE_F16), GGML_TYPE_F32);
  }
  if (b->flash_attn) {
    /* Flash attention (online softmax over tiles of cells): the n_kv x n x
     * nh scores are never stored. Values go in as an F32 copy too, so the
     * two paths differ only in the order of F32 sums (and, with an F16
     * cache, in the explicit path's F16 rounding of probabilities). */
    vv = ggml_cast(ctx, ggml_permute(ctx, vv, 1, 0, 2, 3), GGML_TYPE_F32); /* [hv, n_kv, nkv] */
    /* On the CPU, value heads padded with zeros to GGML's SIMD width, so
     * that its tiled kernel takes them (stories260K's 8 with AVX-512: 3.8x
     * faster); the padded outputs are zeros, dropped. */
    const int64_t lanes = b->m->dev ? 1 : llm_ggml_f32_lanes(), hvp = (hv + lanes - 1) / lanes * lanes;
    if (hvp != hv) vv = ggml_pad(ctx, vv, (int)(hvp - hv), 0, 0, 0);
    cur = ggml_flash_attn_ext(ctx, qp, kk, vv, llm_build_mask(b, mk, 1), scale, 0.0f, 0.0f);
    ggml_flash_attn_ext_set_prec(cur, GGML_PREC_F32);
    if (hvp != hv) /* the result is [hvp, nh, n] */
      cur = ggml_cont(ctx, ggml_view_3d(ctx, cur, hv, nh, n, cur->nb[1], cur->nb[2], 0));
    cur = ggml_reshape_2d(ctx, cur, hv * nh, n);
  } else {
    struct ggml_tensor *kq = ggml_mul_mat(ctx, kk, qp); /* [n_kv, n, nh] */
    kq = ggml_soft_max_ext(ctx, kq, llm_build_mask(b, mk, 0), scale, 0.0f);
    struct ggml_tensor *kqv = ggml_mul_mat(ctx, vv, kq);                      /* [hv, n, nh] */
    cur = ggml_cont_2d(ctx, ggml_permute(ctx, kqv, 0, 2, 1, 3), hv * nh, n); /* [hv*nh, n] */
  }
  return cur;
}

struct ggml_tensor *llm_attend(llm_build *b, int64_t il, struct ggml_tensor *q, struct ggml_tensor *k,
                               struct ggml_tensor *v, int mk, float scale) {
  struct ggml_context *ctx = b->ctx;
  const int64_t hk = q->ne[0], nkv = k->ne[1], n = q->ne[2];
  const int64_t hv = ggml_nelements(v) / (nkv * n);
  /* Store this batch's keys and values at cells n_past .. n_past + n - 1
   * (rows named by index inputs, so the graph does not depend on n_past).
   * V is stored transposed: element (c, t) goes to cell c * n_cells + p_t
   * of the cache viewed as one-element rows. */
  struct ggml_tensor *kc = b->cache->k[il], *vc = b->cache->v[il];
  int64_t ek = hk * nkv, ev = hv * nkv;
  ggml_build_forward_expand(b->gf, ggml_set_rows(ctx, kc, ggml_reshape_2d(ctx, k, ek, n),
                                                 llm_build_k_idx(b)));
  struct ggml_tensor *vflat = ggml_reshape_2d(ctx, vc, 1, ggml_nelements(vc));
  ggml_build_forward_expand(b->gf, ggml_set_rows(ctx, vflat, ggml_reshape_2d(ctx, v, 1, ev * n),
                                                 llm_build_v_idx(b, ev)));

  /* Attention over the n_kv cells. */
  struct ggml_tensor *kk = ggml_view_3d(ctx, kc, hk, b->n_kv, nkv, ggml_row_size(kc->type, ek),
                                        ggml_row_size(kc->type, hk), 0); /* [hk, n_kv, nkv] */
  struct ggml_tensor *vv =
      ggml_view_3d(ctx, vc, b->n_kv, hv, nkv, vc->nb[1], vc->nb[1] * (size_t)hv, 0); /* [n_kv, hv, nkv] */
  if (b->flash_attn && llm_attn_small_applies(b, hk, hv))
    /* small heads on the CPU: our kernel, vectorized along the keys
     * (llm_attn.h), on the operands of GGML's flash attention */
    return llm_attn_small(b, q, kk, vv, llm_build_mask(b, mk, 0), scale, kc->type == GGML_TYPE_F16);
  return attn_ggml(b, q, kk, vv, mk, scale);
}

struct ggml_tensor *llm_moe_experts(llm_build *b, struct ggml_tensor *x, struct ggml_tensor *router,
                                    struct ggml_tensor *probs_b, struct ggml_tensor *gate_exps,
                                    struct ggml_tensor *up_exps, struct ggml_tensor *down_exps,
                                    int64_t nu, const llm_moe_opts *o) {
  struct ggml_context *ctx = b->ctx;
  const int64_t E = x->ne[0], ne = router->ne[1], n = x->ne[1];

  struct ggml_tensor *logits = llm_mm(b, router, x); /* [ne, n] */
  struct ggml_tensor *probs = o->gating_sigmoid ? ggml_sigmoid(ctx, logits) : ggml_soft_max(ctx, logits);
  struct ggml_tensor *sel = probs;
  if (probs_b) sel = ggml_add(ctx, probs, probs_b);
  struct ggml_tensor *ids = ggml_top_k(ctx, sel, (int)nu); /* [nu, n] I32 */
  struct ggml_tensor *w = ggml_get_rows(ctx, ggml_reshape_3d(ctx, probs, 1, ne, n), ids); /* [1, nu, n] */
  if (o->norm_weights) {
    struct ggml_tensor *w2 = ggml_reshape_2d(ctx, w, nu, n);
    w2 = ggml_div(ctx, w2, ggml_sum_rows(ctx, w2));
    w = ggml_reshape_3d(ctx, w2, 1, nu, n);
  }
  if (o->weights_scale != 0.0f) w = ggml_scale(ctx, w, o->weights_scale);

  struct ggml_tensor *x3 = ggml_reshape_3d(ctx, x, E, 1, n);
  struct ggml_tensor *up = ggml_mul_mat_id(ctx, up_exps, x3, ids);     /* [ff, nu, n] */
  struct ggml_tensor *gate = ggml_mul_mat_id(ctx, gate_exps, x3, ids); /* [ff, nu, n] */
  struct ggml_tensor *h = o->act == LLM_FFN_GEGLU ? ggml_geglu_split(ctx, gate, up)
                                                  : ggml_swiglu_split(ctx, gate, up);
  struct ggml_tensor *ex = ggml_mul_mat_id(ctx, down_exps, h, ids); /* [E, nu, n] */
  ex = ggml_mul(ctx, ex, w);
  struct ggml_tensor *out = NULL;
  for (int64_t i = 0; i < nu; i++) {
    struct ggml_tensor *e = ggml_view_2d(ctx, ex, E, n, ex->nb[2], (size_t)i * ex->nb[1]);
    out = out ? ggml_add(ctx, out, e) : e;
  }
  if (nu == 1) out = ggml_cont(ctx, out);
  return out;
}

/* ---- evaluation ------------------------------------------------------------ */

static double now_s(void);

/* GGML's abort hook, called between operators: polls the caller's cancel
 * callback on the calling thread only (R's interrupt check must not run on a
 * worker), every FM_LLM_POLL_OPS-th call, so that where a run stops depends
 * on the graph, never on the clock (callers that find polling costly throttle
 * inside their callback, as the R glue does). */
#define FM_LLM_POLL_OPS 64
static bool abort_cb(void *data) {
  llm_model *m = data;
  if (!m->ctl || !m->ctl->cancel) return false;
  if (!pthread_equal(pthread_self(), m->caller)) return false;
  if (++m->poll_count % FM_LLM_POLL_OPS != 0) return false;
  return fm_ctl_cancelled(m->ctl) != 0;
}

/* Row i (query at position n_past + i) of a mask of kind: 0 where the
 * query sees cell j, -Inf elsewhere. */
static void fill_mask_row(const llm_build *b, int kind, int64_t i, float *row) {
  const llm_hparams *hp = &b->m->hp;
  const int64_t pi = b->n_past + i;
  for (int64_t j = 0; j < b->n_kv; j++) {
      int vis;
      switch (kind) {
      case LLM_MASK_FULL: vis = 1; break;
      case LLM_MASK_SWA_CAUSAL: vis = j <= pi && pi - j < hp->n_swa; break;
      case LLM_MASK_SWA_SYM: vis = (pi - j <= hp->n_swa / 2) && (j - pi <= hp->n_swa / 2); break;
      default: vis = j <= pi; break;
      }
      row[j] = (vis && j < b->n_past + b->n_tokens) ? 0.0f : -INFINITY;
  }
}

/* Host memory to write input t into: t's own where its buffer is host
 * memory (the CPU backend: filled in place), else the model's staging
 * area, which inp_commit() uploads to the device. NULL when out of memory. */
static void *inp_begin(llm_model *m, const struct ggml_tensor *t) {
  if (ggml_backend_buffer_is_host(t->buffer)) return t->data;
  size_t n = ggml_nbytes(t);
  if (n > m->inp_scratch_size) {
    void *p = realloc(m->inp_scratch, n);
    if (!p) return NULL;
    m->inp_scratch = p;
    m->inp_scratch_size = n;
  }
  return m->inp_scratch;
}

static void inp_commit(struct ggml_tensor *t, const void *host) {
  if (host != t->data) ggml_backend_tensor_set(t, host, 0, ggml_nbytes(t));
}

#define INP_BEGIN(var, type, t)                                                        \
  type *var = inp_begin(m, (t));                                                     \
  if (!var) return fm_err_set(err, FM_ENOMEM, "out of memory staging a graph input")

/* Fill the mask inputs of the graph, F32 and F16 (through one F32 row). */
static fm_status fill_masks(llm_model *m, const llm_build *b, fm_err *err) {
  float *tmp = NULL;
  for (int k = 0; k < LLM_MASK_COUNT; k++) {
    if (b->mask[k] && b->mask[k]->data) {
      float *d = inp_begin(m, b->mask[k]);
      if (!d) goto nomem;
      for (int64_t i = 0; i < b->n_tokens; i++) fill_mask_row(b, k, i, d + i * b->n_kv);
      inp_commit(b->mask[k], d);
    }
    if (b->mask16[k] && b->mask16[k]->data) {
      if (!tmp && !(tmp = malloc((size_t)b->n_kv * sizeof *tmp))) goto nomem;
      ggml_fp16_t *d = inp_begin(m, b->mask16[k]);
      if (!d) goto nomem;
      for (int64_t i = 0; i < b->n_tokens; i++) {
        fill_mask_row(b, k, i, tmp);
        ggml_fp32_to_fp16_row(tmp, d + i * b->n_kv, b->n_kv);
      }
      inp_commit(b->mask16[k], d);
    }
  }
  free(tmp);
  return FM_OK;
nomem:
  free(tmp);
  return fm_err_set(err, FM_ENOMEM, "out of memory for an attention mask");
}

/* Products on a device accumulate in F32, as GGML's CPU products do.
 * GGML's default precision lets its Vulkan backend accumulate in F16 on
 * devices with F16 arithmetic (and keep F32 x F32 tiles in F16): measured
 * on lavapipe, stories260K F16 weights, 100 tokens: 8.5 nats from the
 * CPU's log-softmax (12 on the explicit attention path) where F32
 * accumulation keeps it within the rounding bound. The CPU ignores the
 * setting; flash attention asks for F32 where it is built (llm_attn). */
static void device_precision(struct ggml_cgraph *gf) {
  for (int i = 0; i < ggml_graph_n_nodes(gf); i++) {
    struct ggml_tensor *t = ggml_graph_node(gf, i);
    if (t->op == GGML_OP_MUL_MAT) ggml_mul_mat_set_prec(t, GGML_PREC_F32);
    /* mul_mat_id reads its precision from the same parameter (no setter) */
    if (t->op == GGML_OP_MUL_MAT_ID) t->op_params[0] = GGML_PREC_F32;
  }
}

/* On a device every operator of the graph must run there (no operator
 * falls back to the CPU): the first one it cannot run is named. */
static fm_status check_device_ops(const llm_model *m, struct ggml_cgraph *gf, fm_err *err) {
  for (int i = 0; i < ggml_graph_n_nodes(gf); i++) {
    struct ggml_tensor *t = ggml_graph_node(gf, i);
    if (!ggml_backend_supports_op(m->backend, t))
      return fm_err_set(err, FM_EUNSUPPORTED,
                        "%s cannot run GGML operator %s (result %s [%lld, %lld, %lld], sources %s "
                        "and %s) of the %s graph",
                        ggml_backend_name(m->backend), ggml_op_desc(t), ggml_type_name(t->type),
                        (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                        t->src[0] ? ggml_type_name(t->src[0]->type) : "-",
                        t->src[1] ? ggml_type_name(t->src[1]->type) : "-", m->arch_name);
  }
  return FM_OK;
}

/* Outputs of a whole-sequence evaluation (fm_llm_run): n of the program's
 * outputs, idx[k] copied to dst[k]; res has room for n tensors; the
 * values of the program's mask input (NULL: all 1). */
typedef struct run_want {
  const float *mask;
  int64_t n;
  const int64_t *idx;
  float *const *dst;
  struct ggml_tensor **res;
} run_want;

/* Build (or reuse), allocate, fill and compute the graph of one batch:
 * logits of the last n_out tokens, or (embed) the pooled embedding, or
 * (want) outputs of the program, built for this call only. Copies the
 * result (F32, contiguous) to dst (want: each to its dst) and advances
 * c->n_past. */
static fm_status run_graph(llm_model *m, fm_llm_cache *c, const int32_t *tokens, const float *seq,
                           int64_t n, int64_t n_out, int embed, fm_llm_pooling pooling, float *dst,
                           const run_want *want, const fm_ctl *ctl, fm_err *err) {
  fm_status st = FM_OK;
  int64_t n_kv = (c->n_past + n + LLM_KV_PAD - 1) / LLM_KV_PAD * LLM_KV_PAD;
  if (n_kv > c->n_cells) n_kv = c->n_cells;
  int fa = m->flash_attn && n >= LLM_FA_MIN_TOKENS;
  int64_t key[8] = {c->serial, n,  n_kv, embed ? n : n_out, embed, seq ? -8 : embed ? (int64_t)pooling : -9,
                    fa,         m->fused_gemm && llm_gemm_kernel(GGML_TYPE_F32)};
  llm_build *b = m->gb;
  if (!b || want || memcmp(key, m->gkey, sizeof key) != 0) {
    if (m->gctx) ggml_free(m->gctx);
    m->gctx = NULL;
    memset(m->gkey, 0, sizeof m->gkey);
    if (!b) b = m->gb = malloc(sizeof *b);
    if (!b) return fm_err_set(err, FM_ENOMEM, "out of memory for a graph");
    memset(b, 0, sizeof *b);
    struct ggml_init_params ip = {m->graph_mem_size, m->graph_mem, true};
    struct ggml_context *ctx = ggml_init(ip);
    if (!ctx) return fm_err_set(err, FM_ENOMEM, "out of memory for a graph");
    m->gctx = ctx;
    b->m = m;
    b->cache = c;
    b->ctx = ctx;
    b->gf = ggml_new_graph_custom(ctx, (size_t)m->graph_size, false);
    b->n_tokens = n;
    b->n_past = c->n_past;
    b->n_kv = n_kv;
    b->n_outputs = embed ? n : n_out;
    b->want_pool = embed;
    b->flash_attn = fa;
    b->pooling = pooling;
    b->inp_tokens = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n);
    ggml_set_name(b->inp_tokens, "inp_tokens");
    ggml_set_input(b->inp_tokens);
    if (seq) {
      b->inp_seq = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, llm_program_seq_channels(m), n);
      ggml_set_input(b->inp_seq);
    }
    if (!embed && !want && n_out < n) {
      b->inp_out_ids = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n_out);
      ggml_set_input(b->inp_out_ids);
    }
    if (want) {
      b->n_want = want->n;
      b->want = want->idx;
      b->results = want->res;
    }
    st = llm_program_build(b, err);
    if (st != FM_OK) goto fail;
    /* the program's result: logits, its embedding, or its final states
     * pooled; or the wanted outputs */
    for (int64_t k = 0; want && k < want->n; k++) {
      ggml_set_output(want->res[k]);
      ggml_build_forward_expand(b->gf, want->res[k]);
    }
    struct ggml_tensor *res = want ? want->res[0]
                              : !embed ? b->logits : b->embedding ? b->embedding : llm_pool(b, b->hidden, pooling);
    ggml_set_output(res);
    ggml_build_forward_expand(b->gf, res);
    b->result = res;
    if (m->dev) {
      device_precision(b->gf);
      st = check_device_ops(m, b->gf, err);
      if (st != FM_OK) goto fail;
    }
    /* A new graph gets a new allocation plan: GGML reuses the last one
     * when node counts match and sizes fit, whatever the nodes are (two
     * whole-sequence graphs differing only in their outputs crashed in
     * ggml_gallocr_alloc_graph; llama.cpp issue 28448) */
    if (!ggml_gallocr_reserve(m->galloc, b->gf) || !ggml_gallocr_alloc_graph(m->galloc, b->gf)) {
      st = fm_err_set(err, FM_ENOMEM, "out of memory for the compute buffer");
      goto fail;
    }
    if (!want) memcpy(m->gkey, key, sizeof key); /* a want's graph is not reused */
  }
  b->n_past = c->n_past;
  struct ggml_tensor *res = b->result;

  /* Inputs: written in place in the CPU backend's buffers, staged and
   * uploaded to a device's (inp_begin, inp_commit). */
  if (b->inp_tokens->data) { /* a whole-sequence evaluation has none: ids 0 */
    INP_BEGIN(d, int32_t, b->inp_tokens);
    if (tokens) memcpy(d, tokens, (size_t)n * sizeof(int32_t));
    else memset(d, 0, (size_t)n * sizeof(int32_t));
    inp_commit(b->inp_tokens, d);
  }
  for (int k = 0; k < b->n_ne_id; k++) {
    if (!b->inp_ne_id[k]->data) continue;
    INP_BEGIN(d, float, b->inp_ne_id[k]);
    for (int64_t i = 0; i < n; i++) d[i] = tokens && tokens[i] == b->ne_id[k] ? 0.0f : 1.0f;
    inp_commit(b->inp_ne_id[k], d);
  }
  if (b->inp_mask && b->inp_mask->data) {
    INP_BEGIN(d, float, b->inp_mask);
    for (int64_t i = 0; i < n; i++) d[i] = want && want->mask ? want->mask[i] : 1.0f;
    inp_commit(b->inp_mask, d);
  }
  if (seq && b->inp_seq->data) {
    INP_BEGIN(d, float, b->inp_seq);
    memcpy(d, seq, ggml_nbytes(b->inp_seq));
    inp_commit(b->inp_seq, d);
  }
  if (b->inp_pos && b->inp_pos->data) {
    INP_BEGIN(d, int32_t, b->inp_pos);
    for (int64_t i = 0; i < n; i++) d[i] = (int32_t)(b->n_past + i);
    inp_commit(b->inp_pos, d);
  }
  st = fill_masks(m, b, err);
  if (st != FM_OK) return st;
  if (b->inp_out_ids && b->inp_out_ids->data) {
    INP_BEGIN(d, int32_t, b->inp_out_ids);
    for (int64_t i = 0; i < n_out; i++) d[i] = (int32_t)(n - n_out + i);
    inp_commit(b->inp_out_ids, d);
  }
  if (b->inp_k_idx && b->inp_k_idx->data) {
    INP_BEGIN(d, int64_t, b->inp_k_idx);
    for (int64_t i = 0; i < n; i++) d[i] = b->n_past + i;
    inp_commit(b->inp_k_idx, d);
  }
  for (int j = 0; j < 8 && b->inp_v_idx[j]; j++) {
    if (!b->inp_v_idx[j]->data) continue;
    int64_t ev = b->v_idx_ev[j];
    INP_BEGIN(d, int64_t, b->inp_v_idx[j]);
    for (int64_t t = 0; t < n; t++)
      for (int64_t ch = 0; ch < ev; ch++) d[ch + t * ev] = ch * c->n_cells + b->n_past + t;
    inp_commit(b->inp_v_idx[j], d);
  }
  if (b->inp_pool && b->inp_pool->data) {
    INP_BEGIN(d, void, b->inp_pool);
    if (pooling == FM_LLM_POOL_MEAN)
      for (int64_t i = 0; i < n; i++) ((float *)d)[i] = 1.0f / (float)n;
    else
      ((int32_t *)d)[0] = pooling == FM_LLM_POOL_CLS ? 0 : (int32_t)(n - 1);
    inp_commit(b->inp_pool, d);
  }
  enum ggml_status gs;
  if (m->dev) {
    /* A device's backend has no abort hook: cancellation is polled here,
     * before each micro-batch. */
    if (fm_ctl_cancelled(ctl)) return fm_err_set(err, FM_ECANCELLED, "evaluation cancelled");
    gs = ggml_backend_graph_compute(m->backend, b->gf);
  } else {
    /* 2026-11-30: a batch of under ~4 MFLOP (the decode step of a tiny model)
     * runs on one thread: each of its ~30 nodes per layer is microseconds of
     * work, and a thread barrier per node costs more than the split saves
     * (stories260K decode on 2 cores: ~3,800 tokens/s on one thread, at best
     * ~1,600 on two). Results do not depend on the thread count. */
    int nt = fm_llm_threads_for(m, ctl);
    if (2.0 * (double)m->info.n_params * (double)n < 4e6) nt = 1;
    ggml_backend_cpu_set_n_threads(m->backend, nt);
    if ((st = llm_gemm_reserve(m, nt, err)) != FM_OK) return st;
    m->ctl = ctl;
    m->caller = pthread_self();
    m->poll_count = 0;
    ggml_backend_cpu_set_abort_callback(m->backend, abort_cb, m);
    gs = ggml_backend_graph_compute(m->backend, b->gf);
    m->ctl = NULL;
  }
  if (gs == GGML_STATUS_ABORTED) return fm_err_set(err, FM_ECANCELLED, "evaluation cancelled");
  if (gs != GGML_STATUS_SUCCESS)
    return fm_err_set(err, FM_EINTERNAL, "GGML graph computation failed on %s (status %d)",
                      ggml_backend_name(m->backend), (int)gs);
  for (int64_t k = 0; k < (want ? want->n : 1); k++) {
    struct ggml_tensor *r = want ? want->res[k] : res;
    if (r->type != GGML_TYPE_F32 || !ggml_is_contiguous(r))
      return fm_err_set(err, FM_EINTERNAL, "graph result is not contiguous F32");
    ggml_backend_tensor_get(r, want ? want->dst[k] : dst, 0, ggml_nbytes(r));
  }
  c->n_past += n;
  return FM_OK;
fail:
  if (m->gctx) ggml_free(m->gctx);
  m->gctx = NULL;
  memset(m->gkey, 0, sizeof m->gkey);
  return st;
}

/* Token ids index the embedding's rows (the vocabulary of the logits
 * when the program embeds none). */
static fm_status check_tokens(const llm_model *m, const int32_t *tokens, int64_t n, fm_err *err) {
  if (n < 1) return fm_err_set(err, FM_EARG, "at least one token is needed, got %lld", (long long)n);
  if (!tokens) return fm_err_set(err, FM_EARG, "NULL tokens");
  const int64_t rows = m->tok_embd ? m->tok_embd->ne[1] : m->hp.n_vocab;
  for (int64_t i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= rows)
      return fm_err_set(err, FM_EARG, "token %lld is %d, outside the vocabulary [0, %lld)",
                        (long long)(i + 1), tokens[i], (long long)rows);
  return FM_OK;
}

/* The recurrent state of every layer of c (lfm2's convolution windows),
 * copied to one heap block (*out; NULL when c has none), and back. */
static fm_status state_save(const fm_llm_cache *c, void **out, fm_err *err) {
  size_t total = 0;
  *out = NULL;
  for (int64_t il = 0; il < c->m->hp.n_layer; il++)
    if (c->s[il]) total += ggml_nbytes(c->s[il]);
  if (total == 0) return FM_OK;
  char *p = *out = malloc(total);
  if (!p) return fm_err_set(err, FM_ENOMEM, "out of memory saving the recurrent state");
  for (int64_t il = 0; il < c->m->hp.n_layer; il++)
    if (c->s[il]) {
      ggml_backend_tensor_get(c->s[il], p, 0, ggml_nbytes(c->s[il]));
      p += ggml_nbytes(c->s[il]);
    }
  return FM_OK;
}

static void state_restore(fm_llm_cache *c, const void *saved) {
  const char *p = saved;
  if (!p) return;
  for (int64_t il = 0; il < c->m->hp.n_layer; il++)
    if (c->s[il]) {
      ggml_backend_tensor_set(c->s[il], p, 0, ggml_nbytes(c->s[il]));
      p += ggml_nbytes(c->s[il]);
    }
}

fm_status fm_llm_eval(fm_llm_model *m, fm_llm_cache *c, const int32_t *tokens, int64_t n_tokens,
                      fm_llm_out out, float *logits, const fm_ctl *ctl, fm_err *err) {
  fm_status st;
  if (!m) return fm_err_set(err, FM_EARG, "NULL model");
  st = check_tokens(m, tokens, n_tokens, err);
  if (st != FM_OK) return st;
  if (out != FM_LLM_OUT_NONE && out != FM_LLM_OUT_LAST && out != FM_LLM_OUT_ALL)
    return fm_err_set(err, FM_EARG, "unknown output choice %d", (int)out);
  if (out != FM_LLM_OUT_NONE && !logits) return fm_err_set(err, FM_EARG, "NULL logits");
  if (fm_ctl_cancelled(ctl)) return fm_err_set(err, FM_ECANCELLED, "evaluation cancelled");
  fm_llm_cache *tmp = NULL;
  if (!c) {
    st = fm_llm_cache_new(m, n_tokens, FM_LLM_KV_F16, NULL, 0, &tmp, err);
    if (st != FM_OK) return st;
    c = tmp;
  }
  if (c->m != m) {
    st = fm_err_set(err, FM_EMISMATCH, "the cache belongs to another model");
    goto done;
  }
  if (n_tokens > c->n_ctx - c->n_past) {
    st = fm_err_set(err, FM_ENOSPC,
                    "the cache holds %lld of %lld positions; %lld more token(s) do not fit",
                    (long long)c->n_past, (long long)c->n_ctx, (long long)n_tokens);
    goto done;
  }
  int64_t n_out = out == FM_LLM_OUT_ALL ? n_tokens : 1;
  float *dst = logits, *scratch = NULL;
  if (out == FM_LLM_OUT_NONE) {
    scratch = malloc((size_t)m->hp.n_vocab * sizeof(float));
    if (!scratch) {
      st = fm_err_set(err, FM_ENOMEM, "out of memory for logits");
      goto done;
    }
    dst = scratch;
  }
  /* Micro-batches: with the last-token output, every one writes its logits
   * to dst and the last one's stay. A failure after the first leaves the
   * cache as it was: n_past, and the recurrent state, saved first. */
  int64_t n_past0 = c->n_past;
  void *saved = NULL;
  if (n_tokens > FM_LLM_UBATCH) {
    st = state_save(c, &saved, err);
    if (st != FM_OK) goto free_scratch;
  }
  for (int64_t i = 0; i < n_tokens && st == FM_OK; i += FM_LLM_UBATCH) {
    int64_t nb = n_tokens - i < FM_LLM_UBATCH ? n_tokens - i : FM_LLM_UBATCH;
    float *d = n_out == 1 ? dst : dst + (size_t)i * (size_t)m->hp.n_vocab;
    st = run_graph(m, c, tokens + i, NULL, nb, n_out == 1 ? 1 : nb, 0, FM_LLM_POOL_NONE, d, NULL, ctl, err);
  }
  if (st != FM_OK) {
    c->n_past = n_past0;
    state_restore(c, saved);
  }
  free(saved);
free_scratch:
  free(scratch);
done:
  fm_llm_cache_free(tmp);
  return st;
}

fm_status fm_llm_embed(fm_llm_model *m, const int32_t *tokens, int64_t n_tokens,
                       fm_llm_pooling pooling, float *out, const fm_ctl *ctl, fm_err *err) {
  fm_status st;
  if (!m) return fm_err_set(err, FM_EARG, "NULL model");
  st = check_tokens(m, tokens, n_tokens, err);
  if (st != FM_OK) return st;
  if (!out) return fm_err_set(err, FM_EARG, "NULL output");
  if (pooling == FM_LLM_POOL_UNSPECIFIED)
    pooling = m->hp.pooling >= FM_LLM_POOL_MEAN && m->hp.pooling <= FM_LLM_POOL_LAST
                  ? (fm_llm_pooling)m->hp.pooling
                  : FM_LLM_POOL_MEAN;
  if (pooling != FM_LLM_POOL_MEAN && pooling != FM_LLM_POOL_CLS && pooling != FM_LLM_POOL_LAST)
    return fm_err_set(err, FM_EARG, "pooling %d is not mean (1), cls (2) or last (3)", (int)pooling);
  if (fm_ctl_cancelled(ctl)) return fm_err_set(err, FM_ECANCELLED, "evaluation cancelled");
  fm_llm_cache *c = NULL;
  st = fm_llm_cache_new(m, n_tokens, FM_LLM_KV_F32, NULL, 0, &c, err);
  if (st != FM_OK) return st;
  st = run_graph(m, c, tokens, NULL, n_tokens, n_tokens, 1, pooling, out, NULL, ctl, err);
  fm_llm_cache_free(c);
  return st;
}

fm_status fm_llm_run(fm_llm_model *m, const int32_t *tokens, const float *x, const float *mask, int64_t n, int64_t n_want,
                     const int64_t *want, float *const *out, const int64_t *cap, int64_t (*ne)[3],
                     const fm_ctl *ctl, fm_err *err) {
  if (!m || !want || !out || !cap || !ne || n_want < 1)
    return fm_err_set(err, FM_EARG, "fm_llm_run: NULL argument or no output wanted");
  const int64_t ch = llm_program_seq_channels(m);
  if (ch ? !x : !tokens)
    return fm_err_set(err, FM_EUNSUPPORTED, "program '%s' takes %s", m->arch_name,
                      ch ? "a sequence (x), not token ids" : "token ids, not a sequence");
  for (int64_t il = 0; il < m->hp.n_layer; il++)
    if (m->hp.n_head_kv[il] > 0 || llm_program_state_elems(m, il) > 0)
      return fm_err_set(err, FM_EUNSUPPORTED, "program '%s' keeps cache state, which a whole-sequence "
                        "evaluation does not (fm_llm_eval; rllm_logits() in R)", m->arch_name);
  if (n < 1 || n > INT32_MAX) return fm_err_set(err, FM_EARG, "a sequence of %lld positions", (long long)n);
  fm_status st = ch ? FM_OK : check_tokens(m, tokens, n, err);
  if (st == FM_OK && mask && !llm_program_has_mask(m))
    st = fm_err_set(err, FM_EARG, "program '%s' has no mask input, but a mask was given", m->arch_name);
  int64_t ones = 0;
  for (int64_t i = 0; st == FM_OK && mask && i < n; i++) {
    if (mask[i] != 0.0f && mask[i] != 1.0f)
      st = fm_err_set(err, FM_EARG, "mask[%lld] is %g; a mask holds 0 and 1", (long long)i, (double)mask[i]);
    ones += mask[i] == 1.0f;
  }
  if (st == FM_OK && mask && ones == 0) st = fm_err_set(err, FM_EARG, "the mask has no position at 1");
  for (int64_t k = 0; k < n_want && st == FM_OK; k++) {
    if (!out[k]) return fm_err_set(err, FM_EARG, "fm_llm_run: NULL buffer for output %lld", (long long)want[k]);
    st = fm_llm_output_shape(m, want[k], n, ne[k], NULL, err);
    if (st == FM_OK && cap[k] < ne[k][0] * ne[k][1] * ne[k][2])
      st = fm_err_set(err, FM_EARG, "output %lld needs %lld x %lld x %lld floats, its buffer holds %lld",
                      (long long)want[k], (long long)ne[k][0], (long long)ne[k][1], (long long)ne[k][2],
                      (long long)cap[k]);
  }
  if (st != FM_OK) return st;
  if (fm_ctl_cancelled(ctl)) return fm_err_set(err, FM_ECANCELLED, "evaluation cancelled");
  struct ggml_tensor **res = calloc((size_t)n_want, sizeof *res);
  if (!res) return fm_err_set(err, FM_ENOMEM, "out of memory for %lld outputs", (long long)n_want);
  run_want w = {mask, n_want, want, out, res};
  fm_llm_cache *c = NULL;
  st = fm_llm_cache_new(m, n, FM_LLM_KV_F32, NULL, 0, &c, err); /* nothing to hold: positions */
  if (st == FM_OK) st = run_graph(m, c, ch ? NULL : tokens, ch ? x : NULL, n, n, 0, FM_LLM_POOL_NONE, NULL, &w,
                                  ctl, err);
  fm_llm_cache_free(c);
  free(res);
  return st;
}

/* ---- generation ------------------------------------------------------------ */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

fm_status fm_llm_generate(fm_llm_model *m, fm_llm_cache *c, const int32_t *prompt,
                          int64_t n_prompt, int64_t n_new, fm_llm_sampler *s, const int32_t *stop,
                          int64_t n_stop, int32_t *tokens_out, int64_t *n_out, fm_llm_timings *t,
                          const fm_ctl *ctl, fm_err *err) {
  fm_status st;
  if (n_out) *n_out = 0;
  if (t) memset(t, 0, sizeof *t);
  if (!m || !c || !s || !n_out) return fm_err_set(err, FM_EARG, "fm_llm_generate: NULL argument");
  if (n_prompt < 1) return fm_err_set(err, FM_EARG, "the prompt has no tokens");
  if (n_new < 0) return fm_err_set(err, FM_EARG, "n_new must be >= 0, got %lld", (long long)n_new);
  if (n_new > 0 && !tokens_out) return fm_err_set(err, FM_EARG, "NULL tokens_out");
  if (c->m != m) return fm_err_set(err, FM_EMISMATCH, "the cache belongs to another model");
  int64_t need = n_prompt + (n_new > 0 ? n_new - 1 : 0);
  if (need > c->n_ctx - c->n_past)
    return fm_err_set(err, FM_ENOSPC,
                      "the cache holds %lld of %lld positions; the prompt (%lld) and %lld new "
                      "tokens need %lld more",
                      (long long)c->n_past, (long long)c->n_ctx, (long long)n_prompt,
                      (long long)n_new, (long long)need);
  float *logits = malloc((size_t)m->hp.n_vocab * sizeof(float));
  if (!logits) return fm_err_set(err, FM_ENOMEM, "out of memory for logits");
  double t0 = now_s(), t1 = t0, t_first = t0;
  int64_t n = 0;
  st = fm_llm_eval(m, c, prompt, n_prompt, FM_LLM_OUT_LAST, logits, ctl, err);
  if (st != FM_OK) goto done;
  t1 = t_first = now_s();
  for (; n < n_new; n++) {
    int64_t tok = fm_llm_sampler_next(s, logits);
    if (tok < 0) {
      st = fm_err_set(err, FM_EDEGENERATE, "every logit is NaN or -Inf at generated token %lld",
                      (long long)(n + 1));
      goto done;
    }
    tokens_out[n] = (int32_t)tok;
    if (n == 0) t_first = now_s();
    int is_stop = 0;
    for (int64_t k = 0; k < n_stop; k++)
      if (stop[k] == tok) is_stop = 1;
    if (is_stop || n == n_new - 1) {
      n++;
      break;
    }
    int32_t one = (int32_t)tok;
    st = fm_llm_eval(m, c, &one, 1, FM_LLM_OUT_LAST, logits, ctl, err);
    if (st != FM_OK) {
      n++;
      goto done;
    }
    if (t) t->n_decode++;
  }
done:
  if (t) {
    double t2 = now_s();
    t->n_prefill = n_prompt;
    t->n_threads = fm_llm_threads_for(m, ctl);
    t->prefill_s = (n > 0 ? t_first : t1) - t0;
    t->decode_s = t2 - (n > 0 ? t_first : t1);
    if (st != FM_OK && n == 0) t->prefill_s = t2 - t0;
  }
  *n_out = n;
  free(logits);
  return st;
}
