/* llm_test_program.h: the decoder programs of the runtime's C tests, bound
 * by hand to a GGUF file (the package ships them as R programs,
 * packages/Rllm/R/programs_llama.R and programs_lfm2.R, and binds them in
 * R; these build the same nodes, so that the runtime is tested without R).
 *
 * llm_test_decoder(g, &prog, &nodes): from the file's metadata
 * (<arch>.block_count, embedding_length, attention.head_count,
 * head_count_kv (a number or one per layer), rope.freq_base,
 * attention.layer_norm_rms_epsilon, shortconv.l_cache): per layer RMSNorm,
 * then attention (Q/K/V, per-head Q/K RMSNorm when the file has
 * attn_q_norm, RoPE adjacent pairs for llama, NEOX otherwise; causal) or,
 * on a layer without KV heads, LFM2's gated short convolution; residual;
 * RMSNorm, SwiGLU feed-forward, residual; the final norm (output_norm, or
 * token_embd_norm), the output product (output.weight or the tied
 * embedding). Free nodes with free(). 0 when a key or tensor is missing. */
#ifndef LLM_TEST_PROGRAM_H
#define LLM_TEST_PROGRAM_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_gguf.h"
#include "fm/fm_llm_program.h"

typedef struct llm_tp {
  const fm_gguf *g;
  fm_llm_node *nd;
  int64_t n, cap;
  int ok;
  char arch[32];
} llm_tp;

static inline int32_t llm_tp_add(llm_tp *t, int op, int a0, int a1, int a2, int a3) {
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 256;
    fm_llm_node *p = realloc(t->nd, (size_t)t->cap * sizeof *p);
    if (!p) {
      t->ok = 0;
      return -1;
    }
    t->nd = p;
  }
  fm_llm_node *n = &t->nd[t->n];
  memset(n, 0, sizeof *n);
  n->op = op;
  const int a[FM_LLM_MAX_ARGS] = {a0, a1, a2, a3, -1, -1};
  for (int k = 0; k < FM_LLM_MAX_ARGS; k++) n->args[k] = a[k];
  n->layer = -1;
  return (int32_t)t->n++;
}

/* A parameter node for tensor fmt (with the layer); -1 when absent
 * (required: the program is then refused, t->ok = 0). */
static inline int32_t llm_tp_param(llm_tp *t, int type_class, int required, const char *fmt, int il) {
  char name[128];
  snprintf(name, sizeof name, fmt, il);
  const int64_t i = fm_gguf_find_tensor(t->g, name);
  if (i < 0) {
    if (required) t->ok = 0;
    return -1;
  }
  const int32_t k = llm_tp_add(t, FM_LLM_OP_PARAM, -1, -1, -1, -1);
  if (k >= 0) {
    t->nd[k].tensor = i;
    t->nd[k].type_class = type_class;
  }
  return k;
}

static inline double llm_tp_kv(llm_tp *t, const char *suffix, int64_t il, double def) {
  char key[128];
  snprintf(key, sizeof key, "%s.%s", t->arch, suffix);
  const int64_t i = fm_gguf_find_kv(t->g, key);
  if (i < 0) return def;
  const fm_gguf_kv *kv = fm_gguf_kv_at(t->g, i);
  int64_t v;
  double d;
  const uint64_t e = kv->n > 1 ? (uint64_t)il : 0;
  if (fm_gguf_get_i64(kv, e, &v) == 0) return (double)v;
  if (fm_gguf_get_f64(kv, e, &d) == 0) return d;
  return def;
}

/* RMSNorm of x times the weight fmt. */
static inline int32_t llm_tp_rms(llm_tp *t, int32_t x, double eps, const char *fmt, int il) {
  const int32_t r = llm_tp_add(t, FM_LLM_OP_RMS_NORM, x, -1, -1, -1);
  if (r >= 0) t->nd[r].fa[0] = eps;
  return llm_tp_add(t, FM_LLM_OP_MUL, r, llm_tp_param(t, FM_LLM_PARAM_F32, 1, fmt, il), -1, -1);
}

static inline int32_t llm_tp_mm(llm_tp *t, int32_t x, const char *fmt, int il) {
  return llm_tp_add(t, FM_LLM_OP_MATMUL, x, llm_tp_param(t, FM_LLM_PARAM_MATMUL, 1, fmt, il), -1, -1);
}

static inline int32_t llm_tp_rope(llm_tp *t, int32_t x, int32_t pos, int64_t nh, int64_t n_rot, int neox,
                                  double base) {
  const int32_t r = llm_tp_add(t, FM_LLM_OP_ROPE, x, pos, -1, -1);
  if (r >= 0) {
    t->nd[r].ia[0] = nh;
    t->nd[r].ia[1] = n_rot;
    t->nd[r].ia[2] = neox ? 2 : 0;
    t->nd[r].fa[0] = base;
    t->nd[r].fa[1] = 1.0;
  }
  return r;
}

static inline int llm_test_decoder(const fm_gguf *g, fm_llm_program *prog, fm_llm_node **nodes) {
  llm_tp t = {g, NULL, 0, 0, 1, {0}};
  const char *s;
  size_t len;
  const int64_t ia = fm_gguf_find_kv(g, "general.architecture");
  if (ia < 0 || fm_gguf_get_str(fm_gguf_kv_at(g, ia), 0, &s, &len) != 0 || len >= sizeof t.arch) return 0;
  memcpy(t.arch, s, len);
  const int neox = strcmp(t.arch, "llama") != 0;
  const int64_t L = (int64_t)llm_tp_kv(&t, "block_count", 0, 0), E = (int64_t)llm_tp_kv(&t, "embedding_length", 0, 0);
  const double eps = llm_tp_kv(&t, "attention.layer_norm_rms_epsilon", 0, 1e-5);
  const double base = llm_tp_kv(&t, "rope.freq_base", 0, 10000);
  const int32_t tok = llm_tp_add(&t, FM_LLM_OP_INPUT, -1, -1, -1, -1);
  const int32_t pos = llm_tp_add(&t, FM_LLM_OP_INPUT, -1, -1, -1, -1);
  if (pos >= 0) t.nd[pos].tensor = FM_LLM_IN_POSITIONS;
  int32_t h = llm_tp_add(&t, FM_LLM_OP_GET_ROWS, tok, llm_tp_param(&t, FM_LLM_PARAM_ROWS, 1, "token_embd.weight", 0),
                         -1, -1);
  for (int il = 0; il < L && t.ok; il++) {
    const int64_t nh = (int64_t)llm_tp_kv(&t, "attention.head_count", il, 0);
    const int64_t nkv = (int64_t)llm_tp_kv(&t, "attention.head_count_kv", il, (double)nh);
    const int64_t hd = nh > 0 ? E / nh : 0;
    const int32_t x = llm_tp_rms(&t, h, eps, "blk.%d.attn_norm.weight", il);
    int32_t b;
    if (nkv > 0) {
      int32_t q = llm_tp_mm(&t, x, "blk.%d.attn_q.weight", il), k = llm_tp_mm(&t, x, "blk.%d.attn_k.weight", il);
      const int32_t v = llm_tp_mm(&t, x, "blk.%d.attn_v.weight", il);
      const int32_t qn = llm_tp_param(&t, FM_LLM_PARAM_F32, 0, "blk.%d.attn_q_norm.weight", il);
      if (qn >= 0) { /* per-head RMSNorm of queries and keys */
        int32_t r = llm_tp_add(&t, FM_LLM_OP_RMS_NORM, q, -1, -1, -1);
        t.nd[r].fa[0] = eps;
        t.nd[r].ia[0] = hd;
        q = llm_tp_add(&t, FM_LLM_OP_MUL, r, qn, -1, -1);
        r = llm_tp_add(&t, FM_LLM_OP_RMS_NORM, k, -1, -1, -1);
        t.nd[r].fa[0] = eps;
        t.nd[r].ia[0] = hd;
        k = llm_tp_add(&t, FM_LLM_OP_MUL, r, llm_tp_param(&t, FM_LLM_PARAM_F32, 1, "blk.%d.attn_k_norm.weight", il),
                       -1, -1);
      }
      q = llm_tp_rope(&t, q, pos, nh, hd, neox, base);
      k = llm_tp_rope(&t, k, pos, nkv, hd, neox, base);
      const int32_t a = llm_tp_add(&t, FM_LLM_OP_ATTENTION, q, k, v, pos);
      if (a >= 0) {
        t.nd[a].ia[0] = nh;
        t.nd[a].ia[1] = nkv;
        t.nd[a].ia[2] = FM_LLM_MASK_CAUSAL;
        t.nd[a].fa[0] = 1.0 / sqrt((double)hd);
        t.nd[a].layer = il;
      }
      b = llm_tp_mm(&t, a, "blk.%d.attn_output.weight", il);
    } else { /* LFM2's gated short convolution: [B; C; X] = in_proj x */
      const int32_t bcx = llm_tp_mm(&t, x, "blk.%d.shortconv.in_proj.weight", il);
      int32_t part[3];
      for (int r = 0; r < 3; r++) {
        part[r] = llm_tp_add(&t, FM_LLM_OP_ROWS, bcx, -1, -1, -1);
        t.nd[part[r]].ia[0] = r * E;
        t.nd[part[r]].ia[1] = E;
      }
      const int32_t bx = llm_tp_add(&t, FM_LLM_OP_MUL, part[0], part[2], -1, -1);
      const int32_t c = llm_tp_add(&t, FM_LLM_OP_CONV_CAUSAL, bx,
                                   llm_tp_param(&t, FM_LLM_PARAM_F32, 1, "blk.%d.shortconv.conv.weight", il), -1, -1);
      if (c >= 0) t.nd[c].layer = il;
      b = llm_tp_mm(&t, llm_tp_add(&t, FM_LLM_OP_MUL, part[1], c, -1, -1), "blk.%d.shortconv.out_proj.weight", il);
    }
    h = llm_tp_add(&t, FM_LLM_OP_ADD, h, b, -1, -1);
    const int32_t f = llm_tp_rms(&t, h, eps, "blk.%d.ffn_norm.weight", il);
    const int32_t sw = llm_tp_add(&t, FM_LLM_OP_SWIGLU, llm_tp_mm(&t, f, "blk.%d.ffn_gate.weight", il),
                                  llm_tp_mm(&t, f, "blk.%d.ffn_up.weight", il), -1, -1);
    h = llm_tp_add(&t, FM_LLM_OP_ADD, h, llm_tp_mm(&t, sw, "blk.%d.ffn_down.weight", il), -1, -1);
  }
  const char *norm = fm_gguf_find_tensor(g, "output_norm.weight") >= 0 ? "output_norm.weight" : "token_embd_norm.weight";
  h = llm_tp_rms(&t, h, eps, norm, 0);
  const char *out = fm_gguf_find_tensor(g, "output.weight") >= 0 ? "output.weight" : "token_embd.weight";
  const int32_t logits = llm_tp_mm(&t, h, out, 0);
  if (!t.ok || logits < 0) {
    free(t.nd);
    return 0;
  }
  static char name[32]; /* the program's name: the architecture (tests run on one thread) */
  memcpy(name, t.arch, sizeof name);
  *nodes = t.nd;
  *prog = (fm_llm_program){name, FM_LLM_VOCABULARY, t.n, t.nd, logits,
                           (int64_t)llm_tp_kv(&t, "context_length", 0, 0), -1, 0, NULL};
  return 1;
}

#endif
