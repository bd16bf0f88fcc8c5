/* llm_program.c: bound architecture programs (fm_llm_program.h): each
 * node checked against its operator's shape rule at load, the parameters
 * bound zero-copy, the model's runtime facts (cache slots, head sizes, the
 * vocabulary) derived from the nodes; at evaluation one lowering per
 * operator to GGML, reusing the runtime's (llm_mm, llm_attend,
 * llm_moe_experts). The program lives in m->prog, one allocation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_llm_program.h"
#include "llm_impl.h"

static const char *const op_names[FM_LLM_OP_COUNT] = {
    "input",     "param",  "get_rows",   "matmul",   "add",       "mul",     "scale",
    "rms_norm",  "layer_norm", "rope",   "attention", "silu",     "gelu",    "swiglu",
    "geglu",     "pool",   "moe",        "rows",     "conv_causal", "conv1d", "batchnorm",
    "leaky_relu", "crop",  "softmax",    "gelu_erf", "sigmoid",   "token_dropout", "attention_probs",
    "attend",    "concat", "pair_crop",  "symmetrize", "apc",     "head_mix", "ne_id",  "pair_mask"};

/* Arguments (required, then optional), and whether column j of the result
 * depends on column j of the position-wise arguments only (so that a batch
 * whose outputs are its last rows computes those rows only). */
static const struct {
  int8_t n_req, n_opt, rowwise;
} op_info[FM_LLM_OP_COUNT] = {
    [FM_LLM_OP_INPUT] = {0, 0, 0},      [FM_LLM_OP_PARAM] = {0, 0, 0},
    [FM_LLM_OP_GET_ROWS] = {2, 0, 0},   [FM_LLM_OP_MATMUL] = {2, 0, 1},
    [FM_LLM_OP_ADD] = {1, 1, 1},        [FM_LLM_OP_MUL] = {1, 1, 1},
    [FM_LLM_OP_SCALE] = {1, 0, 1},      [FM_LLM_OP_RMS_NORM] = {1, 0, 1},
    [FM_LLM_OP_LAYER_NORM] = {1, 0, 1}, [FM_LLM_OP_ROPE] = {2, 0, 0},
    [FM_LLM_OP_ATTENTION] = {4, 0, 0},  [FM_LLM_OP_SILU] = {1, 0, 1},
    [FM_LLM_OP_GELU] = {1, 0, 1},       [FM_LLM_OP_SWIGLU] = {2, 0, 1},
    [FM_LLM_OP_GEGLU] = {2, 0, 1},      [FM_LLM_OP_POOL] = {1, 0, 0},
    [FM_LLM_OP_MOE] = {5, 1, 1},        [FM_LLM_OP_ROWS] = {1, 0, 1},
    [FM_LLM_OP_CONV_CAUSAL] = {2, 0, 0}, [FM_LLM_OP_CONV1D] = {2, 1, 0},
    [FM_LLM_OP_BATCHNORM] = {5, 0, 1},  [FM_LLM_OP_LEAKY_RELU] = {1, 0, 1},
    [FM_LLM_OP_CROP] = {1, 0, 0},       [FM_LLM_OP_SOFTMAX] = {1, 0, 1},
    [FM_LLM_OP_GELU_ERF] = {1, 0, 1},   [FM_LLM_OP_SIGMOID] = {1, 0, 1},
    [FM_LLM_OP_TOKEN_DROPOUT] = {2, 1, 0}, [FM_LLM_OP_ATTENTION_PROBS] = {3, 1, 0},
    [FM_LLM_OP_ATTEND] = {2, 0, 0},     [FM_LLM_OP_CONCAT] = {2, 0, 0},
    [FM_LLM_OP_PAIR_CROP] = {1, 0, 0},  [FM_LLM_OP_SYMMETRIZE] = {1, 0, 0},
    [FM_LLM_OP_APC] = {1, 0, 0},        [FM_LLM_OP_HEAD_MIX] = {2, 1, 0},
    [FM_LLM_OP_NE_ID] = {1, 0, 0},      [FM_LLM_OP_PAIR_MASK] = {2, 0, 0}};

int fm_llm_op_find(const char *name) {
  for (int i = 0; name && i < FM_LLM_OP_COUNT; i++)
    if (strcmp(name, op_names[i]) == 0) return i;
  return -1;
}

const char *fm_llm_op_name(int op) { return op >= 0 && op < FM_LLM_OP_COUNT ? op_names[op] : NULL; }

/* A node's value at load: a parameter's shape, an activation's rows
 * (ne[0]; its columns are the positions) and element type, or pair maps'
 * channels (ne[0]; [positions, positions, channels] in GGML). */
enum { PS_PARAM = 0, PS_POS = 1, PS_POOLED = 2, PS_PAIRS = 3 };
typedef struct pshape {
  int64_t ne[3];
  int64_t off;    /* over the positions: T + off of them (crops) */
  int8_t per_pos; /* PS_*: an activation over the positions, one pooled column, pair maps, or a parameter */
  int8_t ids;     /* I32 (token ids, positions) */
} pshape;

typedef struct llm_program {
  int64_t n, logits, embedding;
  int64_t n_outputs, *outputs; /* the nodes fm_llm_run returns */
  int64_t seq_channels; /* the channels of its sequence input (0: none) */
  int has_mask;         /* a mask input */
  int32_t ids[LLM_MAX_ID_MASKS]; /* the token ids NE_ID and TOKEN_DROPOUT compare with */
  int n_ids;
  int64_t n_probs, probs_ia[3]; /* ATTENTION_PROBS nodes (an encoder's layers); the first's nh, nkv, hk */
  fm_llm_node *nodes;
  pshape *shape;
  struct ggml_tensor **w; /* PARAM nodes: the bound tensor (repacking may swap it) */
  int64_t *conv_of;       /* per cache slot: its CONV_CAUSAL node, or -1 */
} llm_program;

#define NODE_ERR(st, i, node, ...)                                                                 \
  node_err(err, st, i, node, __VA_ARGS__)

static fm_status node_err(fm_err *err, fm_status st, int64_t i, const fm_llm_node *node,
                          const char *fmt, ...) FM_PRINTF(5, 6);
static fm_status node_err(fm_err *err, fm_status st, int64_t i, const fm_llm_node *node,
                          const char *fmt, ...) {
  char msg[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *op = fm_llm_op_name(node->op);
  return fm_err_set(err, st, "program node %lld (%s): %s", (long long)i, op ? op : "?", msg);
}

static const pshape *arg_shape(const llm_program *P, const fm_llm_node *node, int k) {
  return node->args[k] >= 0 ? &P->shape[node->args[k]] : NULL;
}

/* An activation argument of ne0 rows (-1: any), or a parameter of the
 * given dims (-1: any; 0 past its last dim). */
static int is_act(const pshape *s, int64_t ne0) {
  return s && (s->per_pos == PS_POS || s->per_pos == PS_POOLED) && !s->ids && (ne0 < 0 || s->ne[0] == ne0);
}
static int is_pairs(const pshape *s) { return s && s->per_pos == PS_PAIRS; }
/* A mask: one value per position, [1, T], of off positions (crops). */
static int is_mask(const pshape *s, int64_t off) { return is_act(s, 1) && s->per_pos == PS_POS && s->off == off; }
/* Argument k is the token input (a comparison with token ids reads the
 * tokens the host writes). */
static int is_tokens(const llm_program *P, const fm_llm_node *nd, int k) {
  const int32_t a = nd->args[k];
  return a >= 0 && P->nodes[a].op == FM_LLM_OP_INPUT && P->nodes[a].tensor == FM_LLM_IN_TOKENS;
}

/* A token id compared with the tokens: one host input per distinct id. */
static fm_status note_id(llm_program *P, int64_t i, const fm_llm_node *nd, fm_err *err) {
  const int32_t id = (int32_t)nd->ia[0];
  for (int k = 0; k < P->n_ids; k++)
    if (P->ids[k] == id) return FM_OK;
  if (P->n_ids == LLM_MAX_ID_MASKS)
    return NODE_ERR(FM_EARG, i, nd, "a program compares the tokens with %d distinct ids at most", LLM_MAX_ID_MASKS);
  P->ids[P->n_ids++] = id;
  return FM_OK;
}
/* One column (a pooled vector) or positions: products and elementwise
 * operators take both; operators over positions only per_pos == 1. */
static int is_param(const pshape *s, int64_t ne0, int64_t ne1, int64_t ne2) {
  if (!s || s->per_pos) return 0;
  const int64_t want[3] = {ne0, ne1, ne2};
  for (int d = 0; d < 3; d++)
    if (want[d] >= 0 && s->ne[d] != (want[d] == 0 ? 1 : want[d])) return 0;
  return 1;
}

static int is_f32_vec(const llm_program *P, const fm_llm_node *nd, int k, int64_t n) {
  return is_param(arg_shape(P, nd, k), n, 0, 0) && P->w[nd->args[k]]->type == GGML_TYPE_F32;
}

static const char *shape_str(const pshape *s, char *buf, size_t n) {
  if (!s) snprintf(buf, n, "absent");
  else if (s->per_pos == PS_PAIRS) snprintf(buf, n, "pair maps [T, T, %lld]", (long long)s->ne[0]);
  else if (s->per_pos) snprintf(buf, n, "%s[%lld, T]", s->ids ? "I32 " : "", (long long)s->ne[0]);
  else snprintf(buf, n, "parameter [%lld, %lld, %lld]", (long long)s->ne[0], (long long)s->ne[1], (long long)s->ne[2]);
  return buf;
}

/* The shape rule of node i: its result in *out, or an error naming the
 * node and the argument at fault. */
static fm_status infer(llm_model *m, llm_program *P, int64_t i, fm_err *err) {
  const fm_llm_node *nd = &P->nodes[i];
  pshape *o = &P->shape[i];
  const pshape *a = arg_shape(P, nd, 0), *b = arg_shape(P, nd, 1);
  char s0[96], s1[96];
  memset(o, 0, sizeof *o);
  o->per_pos = 1;
  switch (nd->op) {
  case FM_LLM_OP_INPUT:
    if (nd->tensor == FM_LLM_IN_SEQUENCE) {
      if (nd->ia[0] < 1 || nd->ia[0] > 65536 || (P->seq_channels && P->seq_channels != nd->ia[0]))
        return NODE_ERR(FM_EARG, i, nd, "a sequence of %lld channels (1 to 65536; one sequence input)",
                        (long long)nd->ia[0]);
      P->seq_channels = nd->ia[0];
      o->ne[0] = nd->ia[0];
      return FM_OK;
    }
    if (nd->tensor == FM_LLM_IN_MASK) {
      if (P->has_mask) return NODE_ERR(FM_EARG, i, nd, "a second mask input (one per program)");
      P->has_mask = 1;
      o->ne[0] = 1;
      return FM_OK;
    }
    if (nd->tensor != FM_LLM_IN_TOKENS && nd->tensor != FM_LLM_IN_POSITIONS)
      return NODE_ERR(FM_EARG, i, nd, "input kind %lld is not tokens (0), positions (1), a sequence (2) or a "
                      "mask (3)", (long long)nd->tensor);
    o->ne[0] = 1;
    o->ids = 1;
    return FM_OK;
  case FM_LLM_OP_PARAM: {
    static const int kinds[] = {LLM_T_ANY, LLM_T_MATMUL, LLM_T_F32, LLM_T_ROWS};
    if (nd->type_class < 0 || nd->type_class > 3)
      return NODE_ERR(FM_EARG, i, nd, "type class %d is not 0..3", (int)nd->type_class);
    struct ggml_tensor *t = NULL;
    fm_err e;
    fm_status st = llm_bind_at(m, nd->tensor, kinds[nd->type_class], NULL, &t, &e);
    if (st != FM_OK) return NODE_ERR(st, i, nd, "%s", e.msg);
    if (t->ne[3] != 1) return NODE_ERR(FM_EARG, i, nd, "tensor '%s' has 4 dimensions", ggml_get_name(t));
    P->w[i] = t;
    o->per_pos = 0;
    for (int d = 0; d < 3; d++) o->ne[d] = t->ne[d];
    return FM_OK;
  }
  case FM_LLM_OP_GET_ROWS:
    if (!a || !a->ids || !is_param(b, -1, -1, 0))
      return NODE_ERR(FM_EARG, i, nd, "expected token ids and a matrix, got %s and %s", shape_str(a, s0, 96),
                      shape_str(b, s1, 96));
    o->ne[0] = b->ne[0];
    return FM_OK;
  case FM_LLM_OP_MATMUL:
    if (!is_act(a, -1) || !is_param(b, a->ne[0], -1, 0))
      return NODE_ERR(FM_EARG, i, nd, "expected x [k, T] and a parameter [k, m], got %s and %s",
                      shape_str(a, s0, 96), shape_str(b, s1, 96));
    o->ne[0] = b->ne[1];
    return FM_OK;
  case FM_LLM_OP_ADD:
  case FM_LLM_OP_MUL:
    if (!is_act(a, -1) || (b && b->per_pos && b->off != a->off) ||
        (b && !is_act(b, a->ne[0]) && !(is_mask(b, b->off) && a->per_pos == PS_POS) &&
         !(is_param(b, -1, 0, 0) && b->ne[0] > 0 && a->ne[0] % b->ne[0] == 0 &&
           P->w[nd->args[1]]->type == GGML_TYPE_F32)))
      return NODE_ERR(FM_EARG, i, nd, "expected x [a, T] and y [a, T], a mask [1, T] or an F32 parameter [g] "
                      "with g dividing a, got %s and %s", shape_str(a, s0, 96), shape_str(b, s1, 96));
    o->ne[0] = a->ne[0];
    return FM_OK;
  case FM_LLM_OP_RMS_NORM:
    if (is_act(a, -1) && (nd->ia[0] < 0 || (nd->ia[0] > 0 && a->ne[0] % nd->ia[0] != 0)))
      return NODE_ERR(FM_EARG, i, nd, "group %lld does not divide the %lld rows", (long long)nd->ia[0],
                      (long long)a->ne[0]);
    /* fall through */
  case FM_LLM_OP_LAYER_NORM:
    if (!(nd->fa[0] >= 0 && nd->fa[0] < 1))
      return NODE_ERR(FM_EARG, i, nd, "eps %g is not in [0, 1)", nd->fa[0]);
    /* fall through */
  case FM_LLM_OP_SCALE:
  case FM_LLM_OP_SILU:
  case FM_LLM_OP_GELU:
  case FM_LLM_OP_SOFTMAX:
  case FM_LLM_OP_LEAKY_RELU:
    if (!is_act(a, -1)) return NODE_ERR(FM_EARG, i, nd, "expected an activation, got %s", shape_str(a, s0, 96));
    if (!isfinite(nd->fa[0])) return NODE_ERR(FM_EARG, i, nd, "its attribute is not finite");
    o->ne[0] = a->ne[0];
    return FM_OK;
  case FM_LLM_OP_SWIGLU:
  case FM_LLM_OP_GEGLU:
    if (!is_act(a, -1) || !is_act(b, a->ne[0]) || a->off != b->off)
      return NODE_ERR(FM_EARG, i, nd, "expected gate and up of equal shapes, got %s and %s",
                      shape_str(a, s0, 96), shape_str(b, s1, 96));
    o->ne[0] = a->ne[0];
    return FM_OK;
  case FM_LLM_OP_ROPE: {
    const int64_t nh = nd->ia[0], nrot = nd->ia[1];
    if (!is_act(a, -1) || !b || !b->ids)
      return NODE_ERR(FM_EARG, i, nd, "expected x [heads x head size, T] and positions, got %s and %s",
                      shape_str(a, s0, 96), shape_str(b, s1, 96));
    if (nh < 1 || a->ne[0] % nh != 0 || nrot < 0 || nrot % 2 != 0 || nrot > a->ne[0] / nh ||
        (nd->ia[2] != 0 && nd->ia[2] != GGML_ROPE_TYPE_NEOX) || !(nd->fa[0] > 0 && nd->fa[0] <= 1e30) ||
        !(nd->fa[1] > 0 && nd->fa[1] <= 1e30))
      return NODE_ERR(FM_EARG, i, nd, "%lld heads, n_rot %lld, mode %lld, base %g, scale %g do not fit "
                      "%lld rows (heads dividing them, n_rot even and at most the head size, mode 0 or 2, "
                      "base and scale positive)", (long long)nh, (long long)nrot, (long long)nd->ia[2],
                      nd->fa[0], nd->fa[1], (long long)a->ne[0]);
    o->ne[0] = a->ne[0];
    return FM_OK;
  }
  case FM_LLM_OP_ATTENTION: {
    const pshape *v = arg_shape(P, nd, 2), *pos = arg_shape(P, nd, 3);
    const int64_t nh = nd->ia[0], nkv = nd->ia[1];
    if (nh < 1 || nkv < 1 || nh % nkv != 0 || !is_act(a, -1) || a->ne[0] % nh != 0 || !is_act(b, a->ne[0] / nh * nkv) ||
        !is_act(v, -1) || v->ne[0] % nkv != 0 || !pos || !pos->ids)
      return NODE_ERR(FM_EARG, i, nd, "%lld heads on %lld KV heads do not fit q %s, k %s, v %s "
                      "(KV heads dividing heads, equal key sizes)", (long long)nh, (long long)nkv,
                      shape_str(a, s0, 96), shape_str(b, s1, 96), v ? "[.., T]" : "absent");
    if (nd->ia[2] < FM_LLM_MASK_CAUSAL || nd->ia[2] > FM_LLM_MASK_SWA_SYM || nd->ia[3] < 0 ||
        nd->ia[3] > INT32_MAX || !(nd->fa[0] > 0 && isfinite(nd->fa[0])))
      return NODE_ERR(FM_EARG, i, nd, "mask %lld, window %lld or scale %g out of range", (long long)nd->ia[2],
                      (long long)nd->ia[3], nd->fa[0]);
    if (nd->layer < 0 || nd->layer >= 4096 || nd->layer >= P->n)
      return NODE_ERR(FM_EARG, i, nd, "cache slot %d is not in 0..4095 (nor below the node count)",
                      (int)nd->layer);
    o->ne[0] = v->ne[0] / nkv * nh;
    return FM_OK;
  }
  case FM_LLM_OP_MOE: {
    const pshape *g = arg_shape(P, nd, 2), *u = arg_shape(P, nd, 3), *d = arg_shape(P, nd, 4),
                 *bias = arg_shape(P, nd, 5);
    const int64_t E = a && a->per_pos ? a->ne[0] : -1, ne = b && !b->per_pos ? b->ne[1] : -1;
    if (!is_act(a, -1) || !is_param(b, E, -1, 0) || !is_param(g, E, -1, ne) ||
        !is_param(u, E, g->ne[1], ne) || !is_param(d, g->ne[1], E, ne) || nd->ia[0] < 1 || nd->ia[0] > ne ||
        (nd->ia[1] != 0 && nd->ia[1] != 1) || (nd->ia[2] != 1 && nd->ia[2] != 2) ||
        (bias && (!is_param(bias, ne, 0, 0) || P->w[nd->args[5]]->type != GGML_TYPE_F32)))
      return NODE_ERR(FM_EARG, i, nd, "expected x [E, T], router [E, n], gate and up [E, ff, n], down "
                      "[ff, E, n], an F32 bias [n] or none, 1..n experts per position and gating 1 or 2; "
                      "x is %s, router %s", shape_str(a, s0, 96), shape_str(b, s1, 96));
    o->ne[0] = E;
    return FM_OK;
  }
  case FM_LLM_OP_ROWS:
    if (!is_act(a, -1) || nd->ia[0] < 0 || nd->ia[1] < 1 || nd->ia[0] + nd->ia[1] > a->ne[0])
      return NODE_ERR(FM_EARG, i, nd, "rows %lld .. %lld are not within %s", (long long)nd->ia[0],
                      (long long)(nd->ia[0] + nd->ia[1] - 1), shape_str(a, s0, 96));
    o->ne[0] = nd->ia[1];
    return FM_OK;
  case FM_LLM_OP_POOL:
    if (!is_act(a, -1) || nd->ia[0] < 1 || nd->ia[0] > 3)
      return NODE_ERR(FM_EARG, i, nd, "expected an activation and pooling 1 (mean), 2 (first) or 3 (last), "
                      "got %s and %lld", shape_str(a, s0, 96), (long long)nd->ia[0]);
    o->ne[0] = a->ne[0];
    o->per_pos = 2; /* one column */
    return FM_OK;
  case FM_LLM_OP_CONV_CAUSAL:
    if (!is_act(a, -1) || !is_param(b, -1, a->ne[0], 0) || b->ne[0] < 2 || b->ne[0] > 64 ||
        P->w[nd->args[1]]->type != GGML_TYPE_F32)
      return NODE_ERR(FM_EARG, i, nd, "expected x [C, T] and an F32 kernel [L, C] with L in 2..64, got %s "
                      "and %s", shape_str(a, s0, 96), shape_str(b, s1, 96));
    if (nd->layer < 0 || nd->layer >= 4096 || nd->layer >= P->n)
      return NODE_ERR(FM_EARG, i, nd, "cache slot %d is not in 0..4095 (nor below the node count)",
                      (int)nd->layer);
    o->ne[0] = a->ne[0];
    return FM_OK;
  case FM_LLM_OP_CONV1D: {
    const pshape *bias = arg_shape(P, nd, 2);
    if (!is_act(a, -1) || !is_param(b, -1, a->ne[0], -1) || b->ne[0] % 2 != 1 || P->w[nd->args[1]]->type != GGML_TYPE_F32 ||
        (bias && (!is_param(bias, b->ne[2], 0, 0) || P->w[nd->args[2]]->type != GGML_TYPE_F32)) || nd->ia[0] < 1 ||
        nd->ia[0] > 65536)
      return NODE_ERR(FM_EARG, i, nd, "expected x [I, T], an F32 kernel [k, I, O] with k odd, an F32 bias [O] or "
                      "none and a dilation in 1..65536; got %s, %s, dilation %lld", shape_str(a, s0, 96),
                      shape_str(b, s1, 96), (long long)nd->ia[0]);
    o->ne[0] = b->ne[2];
    o->off = a->off;
    return FM_OK;
  }
  case FM_LLM_OP_BATCHNORM:
    for (int k = 1; k < 5; k++) {
      const pshape *v = arg_shape(P, nd, k);
      if (!is_act(a, -1) || !is_param(v, a->ne[0], 0, 0) || P->w[nd->args[k]]->type != GGML_TYPE_F32)
        return NODE_ERR(FM_EARG, i, nd, "expected x [C, T] and F32 mean, var, weight and bias [C]; argument %d "
                        "is %s", k + 1, shape_str(v, s0, 96));
    }
    if (!(nd->fa[0] > 0 && nd->fa[0] < 1))
      return NODE_ERR(FM_EARG, i, nd, "eps %g is not in (0, 1)", nd->fa[0]);
    o->ne[0] = a->ne[0];
    return FM_OK;
  case FM_LLM_OP_GELU_ERF:
  case FM_LLM_OP_SIGMOID:
    if (!is_act(a, -1) && !is_pairs(a))
      return NODE_ERR(FM_EARG, i, nd, "expected an activation or pair maps, got %s", shape_str(a, s0, 96));
    *o = *a;
    return FM_OK;
  case FM_LLM_OP_TOKEN_DROPOUT:
    if (!is_act(a, -1) || a->per_pos != PS_POS || !is_tokens(P, nd, 1) || nd->ia[0] < 0 || nd->ia[0] > INT32_MAX ||
        !(nd->fa[0] >= 0 && nd->fa[0] < 1) || (nd->args[2] >= 0 && !is_mask(arg_shape(P, nd, 2), 0)))
      return NODE_ERR(FM_EARG, i, nd, "expected x [E, T], the token input, a mask id >= 0, a ratio in [0, 1) "
                      "and a mask [1, T] or none, got %s, %s, %lld and %g", shape_str(a, s0, 96),
                      shape_str(b, s1, 96), (long long)nd->ia[0], nd->fa[0]);
    o->ne[0] = a->ne[0];
    return note_id(P, i, nd, err);
  case FM_LLM_OP_NE_ID:
    if (!is_tokens(P, nd, 0) || nd->ia[0] < 0 || nd->ia[0] > INT32_MAX)
      return NODE_ERR(FM_EARG, i, nd, "expected the token input and an id >= 0, got %s and %lld",
                      shape_str(a, s0, 96), (long long)nd->ia[0]);
    o->ne[0] = 1;
    return note_id(P, i, nd, err);
  case FM_LLM_OP_PAIR_MASK:
    if (!is_pairs(a) || !is_mask(b, a->off))
      return NODE_ERR(FM_EARG, i, nd, "expected pair maps and a mask [1, T] over the same positions, got %s "
                      "and %s", shape_str(a, s0, 96), shape_str(b, s1, 96));
    *o = *a;
    return FM_OK;
  case FM_LLM_OP_ATTENTION_PROBS: {
    const pshape *pos = arg_shape(P, nd, 2);
    const int64_t nh = nd->ia[0], nkv = nd->ia[1];
    if (nh < 1 || nkv < 1 || nh % nkv != 0 || !is_act(a, -1) || a->per_pos != PS_POS || a->ne[0] % nh != 0 ||
        !is_act(b, a->ne[0] / nh * nkv) || b->per_pos != PS_POS || !pos || !pos->ids ||
        (nd->args[3] >= 0 && !is_mask(arg_shape(P, nd, 3), 0)))
      return NODE_ERR(FM_EARG, i, nd, "%lld heads on %lld KV heads do not fit q %s and k %s (KV heads "
                      "dividing heads, equal key sizes) with positions and a key mask [1, T] or none",
                      (long long)nh, (long long)nkv, shape_str(a, s0, 96), shape_str(b, s1, 96));
    if (nd->ia[2] < FM_LLM_MASK_CAUSAL || nd->ia[2] > FM_LLM_MASK_SWA_SYM || nd->ia[3] < 0 ||
        nd->ia[3] > INT32_MAX || !(nd->fa[0] > 0 && isfinite(nd->fa[0])))
      return NODE_ERR(FM_EARG, i, nd, "mask %lld, window %lld or scale %g out of range", (long long)nd->ia[2],
                      (long long)nd->ia[3], nd->fa[0]);
    o->ne[0] = nh;
    o->per_pos = PS_PAIRS;
    return FM_OK;
  }
  case FM_LLM_OP_ATTEND:
    if (!is_pairs(a) || a->off != 0 || nd->ia[0] < 1 || a->ne[0] % nd->ia[0] != 0 || !is_act(b, -1) ||
        b->per_pos != PS_POS || b->ne[0] % nd->ia[0] != 0)
      return NODE_ERR(FM_EARG, i, nd, "expected uncropped pair maps [T, T, nh], v [nkv hv, T] and nkv %lld "
                      "dividing nh; got %s and %s", (long long)nd->ia[0], shape_str(a, s0, 96), shape_str(b, s1, 96));
    o->ne[0] = b->ne[0] / nd->ia[0] * a->ne[0];
    return FM_OK;
  case FM_LLM_OP_CONCAT:
    if (!b || a->per_pos != b->per_pos || a->off != b->off || a->ids || b->ids ||
        !(a->per_pos == PS_POS || a->per_pos == PS_PAIRS))
      return NODE_ERR(FM_EARG, i, nd, "expected two activations or two pair maps over the same positions, "
                      "got %s and %s", shape_str(a, s0, 96), shape_str(b, s1, 96));
    *o = *a;
    o->ne[0] = a->ne[0] + b->ne[0];
    return FM_OK;
  case FM_LLM_OP_PAIR_CROP:
    if (!is_pairs(a) || nd->ia[0] < 0 || nd->ia[1] < 0 || nd->ia[0] > INT32_MAX || nd->ia[1] > INT32_MAX)
      return NODE_ERR(FM_EARG, i, nd, "expected pair maps and crops >= 0, got %s, %lld and %lld",
                      shape_str(a, s0, 96), (long long)nd->ia[0], (long long)nd->ia[1]);
    *o = *a;
    o->off = a->off - nd->ia[0] - nd->ia[1];
    return FM_OK;
  case FM_LLM_OP_SYMMETRIZE:
  case FM_LLM_OP_APC:
    if (!is_pairs(a)) return NODE_ERR(FM_EARG, i, nd, "expected pair maps, got %s", shape_str(a, s0, 96));
    *o = *a;
    return FM_OK;
  case FM_LLM_OP_HEAD_MIX:
    if (!is_pairs(a) || !is_f32_vec(P, nd, 1, a->ne[0]) || (nd->args[2] >= 0 && !is_f32_vec(P, nd, 2, 1)))
      return NODE_ERR(FM_EARG, i, nd, "expected pair maps [T, T, c], F32 weights [c] and an F32 bias [1] or "
                      "none, got %s and %s", shape_str(a, s0, 96), shape_str(b, s1, 96));
    *o = *a;
    o->ne[0] = 1;
    return FM_OK;
  case FM_LLM_OP_CROP:
    if (!is_act(a, -1) || nd->ia[0] < 0 || nd->ia[1] < 0 || nd->ia[0] > INT32_MAX || nd->ia[1] > INT32_MAX)
      return NODE_ERR(FM_EARG, i, nd, "expected an activation and crops >= 0, got %s, %lld and %lld",
                      shape_str(a, s0, 96), (long long)nd->ia[0], (long long)nd->ia[1]);
    o->ne[0] = a->ne[0];
    o->off = a->off - nd->ia[0] - nd->ia[1];
    return FM_OK;
  case FM_LLM_OP_COUNT: break;
  }
  return NODE_ERR(FM_EARG, i, nd, "not an operator"); /* refused before: out of range */
}

/* The runtime facts the cache and the evaluation read (m->hp), from the
 * nodes. */
static fm_status derive(llm_model *m, const llm_program *P, const fm_llm_program *p, fm_err *err) {
  llm_hparams *hp = &m->hp;
  int64_t slots = 1;
  for (int64_t i = 0; i < P->n; i++)
    if ((P->nodes[i].op == FM_LLM_OP_ATTENTION || P->nodes[i].op == FM_LLM_OP_CONV_CAUSAL) &&
        P->nodes[i].layer + 1 > slots)
      slots = P->nodes[i].layer + 1;
  hp->n_layer = slots;
  hp->n_head = calloc((size_t)slots, sizeof *hp->n_head);
  hp->n_head_kv = calloc((size_t)slots, sizeof *hp->n_head_kv);
  hp->n_ff = calloc((size_t)slots, sizeof *hp->n_ff);
  hp->swa_layer = calloc((size_t)slots, 1);
  if (!hp->n_head || !hp->n_head_kv || !hp->n_ff || !hp->swa_layer)
    return fm_err_set(err, FM_ENOMEM, "out of memory for %lld cache slots", (long long)slots);
  hp->rope_freq_base = 10000.0f;
  hp->pooling = -1;
  hp->n_ctx_train = p->n_ctx_train > 0 ? p->n_ctx_train : 0;
  for (int64_t i = 0; i < P->n; i++) {
    const fm_llm_node *nd = &P->nodes[i];
    if (nd->op == FM_LLM_OP_GET_ROWS && !m->tok_embd) {
      m->tok_embd = P->w[nd->args[1]];
      hp->n_embd = P->shape[i].ne[0];
    } else if (nd->op == FM_LLM_OP_RMS_NORM && hp->norm_rms_eps == 0) {
      hp->norm_rms_eps = nd->fa[0];
    } else if (nd->op == FM_LLM_OP_ROPE && hp->n_rot == 0) {
      hp->n_rot = nd->ia[1];
      hp->rope_neox = nd->ia[2] == GGML_ROPE_TYPE_NEOX;
      hp->rope_freq_base = (float)nd->fa[0];
    } else if (nd->op == FM_LLM_OP_CONV_CAUSAL) {
      if (hp->n_head_kv[nd->layer] != 0 || P->conv_of[nd->layer] >= 0)
        return NODE_ERR(FM_EARG, i, nd, "cache slot %d is another operator's", (int)nd->layer);
      P->conv_of[nd->layer] = i;
    } else if (nd->op == FM_LLM_OP_POOL && hp->pooling < 0) {
      hp->pooling = (int)nd->ia[0];
    } else if ((nd->op == FM_LLM_OP_SWIGLU || nd->op == FM_LLM_OP_GEGLU) && hp->n_ff[0] == 0) {
      hp->n_ff[0] = P->shape[i].ne[0];
    } else if (nd->op == FM_LLM_OP_MOE && hp->n_expert == 0) {
      hp->n_expert = P->shape[nd->args[1]].ne[1];
      hp->n_expert_used = nd->ia[0];
      hp->n_ff_exp = P->shape[nd->args[2]].ne[1];
    } else if (nd->op == FM_LLM_OP_ATTENTION) {
      const int64_t il = nd->layer, nh = nd->ia[0], nkv = nd->ia[1];
      const int64_t hk = P->shape[nd->args[0]].ne[0] / nh, hv = P->shape[nd->args[2]].ne[0] / nkv;
      if (hp->n_head_kv[il] != 0 || P->conv_of[il] >= 0)
        return NODE_ERR(FM_EARG, i, nd, "cache slot %lld is another operator's", (long long)il);
      if (hp->n_embd_head_k == 0) {
        hp->n_embd_head_k = hk;
        hp->n_embd_head_v = hv;
      } else if (hp->n_embd_head_k != hk || hp->n_embd_head_v != hv)
        return NODE_ERR(FM_EARG, i, nd, "head sizes %lld / %lld differ from an earlier attention's %lld / "
                        "%lld (one size per model)", (long long)hk, (long long)hv,
                        (long long)hp->n_embd_head_k, (long long)hp->n_embd_head_v);
      hp->n_head[il] = nh;
      hp->n_head_kv[il] = nkv;
      const int swa = nd->ia[2] == FM_LLM_MASK_SWA_CAUSAL || nd->ia[2] == FM_LLM_MASK_SWA_SYM;
      if (swa && hp->n_swa != 0 && hp->n_swa != nd->ia[3])
        return NODE_ERR(FM_EARG, i, nd, "window %lld differs from an earlier one, %lld (one per model)",
                        (long long)nd->ia[3], (long long)hp->n_swa);
      if (swa) hp->n_swa = nd->ia[3];
      hp->swa_layer[il] = (unsigned char)swa;
      if (nd->ia[2] == FM_LLM_MASK_CAUSAL || nd->ia[2] == FM_LLM_MASK_SWA_CAUSAL) hp->causal = 1;
    }
  }
  if (P->logits >= 0) {
    const fm_llm_node *ln = &P->nodes[P->logits];
    if (P->shape[P->logits].per_pos != 1 || P->shape[P->logits].ids)
      return NODE_ERR(FM_EARG, P->logits, ln, "the logits output is not an activation over the positions");
    hp->n_vocab = P->shape[P->logits].ne[0];
    if (ln->op == FM_LLM_OP_MATMUL) {
      m->output = P->w[ln->args[1]];
      if (!hp->n_embd) hp->n_embd = P->shape[ln->args[0]].ne[0];
      m->info.tied_output = m->tok_embd && m->output == m->tok_embd;
    }
  }
  if (P->embedding >= 0) {
    if (P->shape[P->embedding].per_pos != 2)
      return NODE_ERR(FM_EARG, P->embedding, &P->nodes[P->embedding], "the embedding output is not one "
                      "pooled column");
    m->info.n_embd_out = P->shape[P->embedding].ne[0];
    hp->causal = 0; /* an encoder: its masks are those of its attention nodes */
  }
  if (hp->n_vocab == 0 && m->tok_embd) hp->n_vocab = m->tok_embd->ne[1];
  if (!hp->n_embd) hp->n_embd = hp->n_vocab;
  return FM_OK;
}

fm_status llm_program_load(llm_model *m, const fm_llm_program *p, fm_err *err) {
  if (!p || !p->nodes || p->n_nodes < 1 || p->n_nodes > (INT64_C(1) << 24))
    return fm_err_set(err, FM_EARG, "a program needs 1 to 2^24 nodes");
  if (p->vocabulary < 1 || p->vocabulary > FM_LLM_VOCABULARY)
    return fm_err_set(err, FM_EARG, "the program's operator vocabulary is version %d; this runtime "
                      "lowers versions 1 to %d", (int)p->vocabulary, FM_LLM_VOCABULARY);
  if (p->n_outputs < 0 || p->n_outputs > p->n_nodes || (p->n_outputs > 0 && !p->outputs))
    return fm_err_set(err, FM_EARG, "%lld outputs of a program of %lld nodes", (long long)p->n_outputs,
                      (long long)p->n_nodes);
  for (int64_t k = 0; k < p->n_outputs; k++)
    if (p->outputs[k] < 0 || p->outputs[k] >= p->n_nodes)
      return fm_err_set(err, FM_EARG, "output %lld is node %lld, not one of the %lld nodes", (long long)k,
                        (long long)p->outputs[k], (long long)p->n_nodes);
  if (p->logits < -1 || p->logits >= p->n_nodes || p->embedding < -1 || p->embedding >= p->n_nodes ||
      (p->logits < 0 && p->embedding < 0 && p->n_outputs < 1))
    return fm_err_set(err, FM_EARG, "the outputs are nodes %lld (logits) and %lld (embedding): at least "
                      "one of the %lld nodes (-1: none), or outputs for fm_llm_run", (long long)p->logits,
                      (long long)p->embedding, (long long)p->n_nodes);
  const size_t n = (size_t)p->n_nodes;
  llm_program *P = calloc(1, sizeof *P + n * (sizeof *P->nodes + sizeof *P->shape + sizeof *P->w +
                                              sizeof *P->conv_of) + (size_t)p->n_outputs * sizeof *P->outputs);
  if (!P) return fm_err_set(err, FM_ENOMEM, "out of memory for a program of %zu nodes", n);
  m->prog = P;
  P->n = p->n_nodes;
  P->logits = p->logits;
  P->embedding = p->embedding;
  P->nodes = (fm_llm_node *)(void *)(P + 1);
  P->shape = (pshape *)(void *)(P->nodes + n);
  P->w = (struct ggml_tensor **)(void *)(P->shape + n);
  P->conv_of = (int64_t *)(void *)(P->w + n); /* per slot (at most n of them) */
  for (size_t i = 0; i < n; i++) P->conv_of[i] = -1;
  memcpy(P->nodes, p->nodes, n * sizeof *P->nodes);
  P->n_outputs = p->n_outputs;
  P->outputs = P->conv_of + n;
  if (p->n_outputs > 0) memcpy(P->outputs, p->outputs, (size_t)p->n_outputs * sizeof *P->outputs);
  for (int64_t i = 0; i < P->n; i++) {
    const fm_llm_node *nd = &P->nodes[i];
    if (nd->op < 0 || nd->op >= FM_LLM_OP_COUNT)
      return fm_err_set(err, FM_EARG, "program node %lld: operator %d is not in vocabulary %d",
                        (long long)i, (int)nd->op, FM_LLM_VOCABULARY);
    const int req = op_info[nd->op].n_req, max = req + op_info[nd->op].n_opt;
    for (int k = 0; k < FM_LLM_MAX_ARGS; k++) {
      const int32_t a = nd->args[k];
      if (k < req && a < 0) return NODE_ERR(FM_EARG, i, nd, "argument %d is missing", k + 1);
      if (a >= 0 && (k >= max || a >= i))
        return NODE_ERR(FM_EARG, i, nd, "argument %d is node %d, %s", k + 1, (int)a,
                        k >= max ? "but the operator takes fewer arguments" : "not an earlier node");
      if (a < -1) return NODE_ERR(FM_EARG, i, nd, "argument %d is %d (-1: none)", k + 1, (int)a);
    }
    fm_status st = infer(m, P, i, err);
    if (st != FM_OK) return st;
    if (nd->op == FM_LLM_OP_ATTENTION_PROBS && P->n_probs++ == 0) { /* an encoder's layers, for its info */
      P->probs_ia[0] = nd->ia[0];
      P->probs_ia[1] = nd->ia[1];
      P->probs_ia[2] = P->shape[nd->args[0]].ne[0] / nd->ia[0];
    }
    /* position-wise operators keep a pooled column one column, and the
     * crops of their input */
    if (op_info[nd->op].rowwise && P->shape[nd->args[0]].per_pos == PS_POOLED) P->shape[i].per_pos = PS_POOLED;
    if (op_info[nd->op].rowwise) P->shape[i].off = P->shape[nd->args[0]].off;
    /* operators that read positions (or the cache) need them uncropped */
    if ((nd->op == FM_LLM_OP_ROPE || nd->op == FM_LLM_OP_ATTENTION || nd->op == FM_LLM_OP_CONV_CAUSAL ||
         nd->op == FM_LLM_OP_GET_ROWS || nd->op == FM_LLM_OP_POOL || nd->op == FM_LLM_OP_TOKEN_DROPOUT ||
         nd->op == FM_LLM_OP_ATTENTION_PROBS) && P->shape[nd->args[0]].off != 0)
      return NODE_ERR(FM_EARG, i, nd, "its input is cropped (%lld positions), which it cannot take",
                      (long long)-P->shape[nd->args[0]].off);
  }
  return derive(m, P, p, err);
}

int64_t llm_program_seq_channels(const llm_model *m) { return m->prog->seq_channels; }
int llm_program_has_mask(const llm_model *m) { return m->prog->has_mask; }

void llm_program_encoder_info(const llm_model *m, fm_llm_info *in) {
  const llm_program *P = m->prog;
  if (in->n_head > 0 || P->n_probs == 0) return;
  in->n_layer = P->n_probs;
  in->n_head = P->probs_ia[0];
  in->n_head_kv = P->probs_ia[1];
  in->n_embd_head_k = in->n_embd_head_v = P->probs_ia[2];
}

fm_status fm_llm_output_shape(const fm_llm_model *m, int64_t k, int64_t n, int64_t ne[3], int *pairs, fm_err *err) {
  const llm_program *P = m->prog;
  if (k < 0 || k >= P->n_outputs)
    return fm_err_set(err, FM_EARG, "output %lld is not one of the program's %lld", (long long)k,
                      (long long)P->n_outputs);
  const pshape *s = &P->shape[P->outputs[k]];
  const int64_t t = n + s->off;
  if (s->ids || (s->per_pos != PS_POS && s->per_pos != PS_PAIRS))
    return fm_err_set(err, FM_EARG, "output %lld (node %lld) is not an activation over the positions or pair "
                      "maps", (long long)k, (long long)P->outputs[k]);
  if (t < 1)
    return fm_err_set(err, FM_EARG, "output %lld drops %lld positions (crops), which leaves none of a sequence of "
                      "%lld", (long long)k, (long long)-s->off, (long long)n);
  ne[0] = s->per_pos == PS_PAIRS ? t : s->ne[0];
  ne[1] = t;
  ne[2] = s->per_pos == PS_PAIRS ? s->ne[0] : 1;
  if (pairs) *pairs = s->per_pos == PS_PAIRS;
  return FM_OK;
}

int64_t llm_program_matrix_slots(llm_model *m, struct ggml_tensor ***out) {
  llm_program *P = m->prog;
  unsigned char *only = calloc((size_t)P->n, 1); /* 1: a matrix operand so far; 2: also else */
  if (!only) return 0;
  for (int64_t i = 0; i < P->n; i++) {
    const fm_llm_node *nd = &P->nodes[i];
    for (int k = 0; k < FM_LLM_MAX_ARGS; k++) {
      const int32_t a = nd->args[k];
      if (a < 0 || P->nodes[a].op != FM_LLM_OP_PARAM) continue;
      const int matrix = (nd->op == FM_LLM_OP_MATMUL && k == 1) || (nd->op == FM_LLM_OP_MOE && k >= 1);
      only[a] = matrix && only[a] != 2 ? 1 : 2;
    }
  }
  int64_t n = 0;
  for (int64_t i = 0; i < P->n; i++)
    if (only[i] == 1) {
      if (out) out[n] = &P->w[i];
      n++;
    }
  free(only);
  return n;
}

/* ---- lowering ------------------------------------------------------------- */

static struct ggml_tensor *grouped(llm_build *b, struct ggml_tensor *x, struct ggml_tensor *y, int mul) {
  struct ggml_context *ctx = b->ctx;
  if (!y) return x;
  /* y [a, T], [1, T] (a mask, broadcast) or [a]: GGML broadcasts */
  if (y->ne[0] == x->ne[0] || y->ne[0] == 1 || ggml_nelements(y) == ggml_nelements(x))
    return mul ? ggml_mul(ctx, x, y) : ggml_add(ctx, x, y);
  struct ggml_tensor *x3 = ggml_reshape_3d(ctx, x, y->ne[0], x->ne[0] / y->ne[0], x->ne[1]);
  x3 = mul ? ggml_mul(ctx, x3, y) : ggml_add(ctx, x3, y);
  return ggml_reshape_2d(ctx, x3, x->ne[0], x->ne[1]);
}

/* Causal depthwise convolution of x [C, n] with kernel [L, C], the state
 * s holding the L - 1 inputs before the batch [L - 1, C] (time
 * contiguous): the state is prepended, the last L - 1 inputs kept as the
 * new state, and GGML's ssm_conv slides the kernel. */
static struct ggml_tensor *conv_causal(llm_build *b, struct ggml_tensor *x, struct ggml_tensor *kernel,
                                       struct ggml_tensor *s) {
  struct ggml_context *ctx = b->ctx;
  const int64_t C = x->ne[0], n = x->ne[1], dc = kernel->ne[0] - 1;
  struct ggml_tensor *state = ggml_reshape_2d(ctx, s, dc, C);
  struct ggml_tensor *cat = ggml_concat(ctx, state, ggml_transpose(ctx, x), 0); /* [dc + n, C] */
  struct ggml_tensor *last = ggml_view_2d(ctx, cat, dc, C, cat->nb[1], (size_t)n * ggml_element_size(cat));
  ggml_build_forward_expand(b->gf, ggml_cpy(ctx, last, state));
  struct ggml_tensor *y = ggml_ssm_conv(ctx, ggml_reshape_3d(ctx, cat, dc + n, C, 1), kernel); /* [C, n, 1] */
  return ggml_reshape_2d(ctx, y, C, n);
}

/* Columns c0 .. c0 + nc - 1 of x [rows, T] (a contiguous view). */
static struct ggml_tensor *columns(llm_build *b, struct ggml_tensor *x, int64_t c0, int64_t nc) {
  if (c0 == 0 && nc == x->ne[1]) return x;
  return ggml_view_2d(b->ctx, x, x->ne[0], nc, x->nb[1], (size_t)c0 * x->nb[1]);
}

/* 1-D convolution of x [I, T] with kernel w [k, I, O] (dilation d, "same"
 * zero padding) and bias [O] (or NULL) at output positions o0 .. o0 + n -
 * 1: our direct kernel where it applies (llm_conv.h), else GGML's im2col
 * in F32 (positions [T, I] in, columns [I k, T] out) and one product with
 * the kernel as an [I k, O] matrix (llm_mm), which gives [O, T], of which
 * those columns. */
static struct ggml_tensor *conv1d(llm_build *b, struct ggml_tensor *x, struct ggml_tensor *w,
                                  struct ggml_tensor *bias, int d, int64_t o0, int64_t n) {
  struct ggml_tensor *direct = llm_conv1d_direct(b, x, w, bias, d, o0, n);
  if (direct) return direct;
  struct ggml_context *ctx = b->ctx;
  const int64_t k = w->ne[0], I = w->ne[1], O = w->ne[2], T = x->ne[1];
  struct ggml_tensor *xt = ggml_cont(ctx, ggml_transpose(ctx, x)); /* [T, I] */
  struct ggml_tensor *cols = ggml_im2col(ctx, w, ggml_reshape_3d(ctx, xt, T, I, 1), 1, 0, d * (int)(k - 1) / 2, 0, d, 0,
                                         false, GGML_TYPE_F32); /* [I k, T, 1] */
  struct ggml_tensor *y = llm_mm(b, ggml_reshape_2d(ctx, w, k * I, O), ggml_reshape_2d(ctx, cols, k * I, T));
  y = ggml_cont(ctx, columns(b, bias ? ggml_add(ctx, y, bias) : y, o0, n));
  return y;
}

static const int mask_kind[4] = {LLM_MASK_CAUSAL, LLM_MASK_FULL, LLM_MASK_SWA_CAUSAL, LLM_MASK_SWA_SYM};

/* [1, n]: 1 where the token is not id, 0 where it is: a host input
 * written with the tokens (llm_graph.c), one per distinct id. */
static struct ggml_tensor *ne_id(llm_build *b, int32_t id) {
  for (int k = 0; k < b->n_ne_id; k++)
    if (b->ne_id[k] == id) return b->inp_ne_id[k];
  struct ggml_tensor *t = ggml_new_tensor_2d(b->ctx, GGML_TYPE_F32, 1, b->n_tokens);
  ggml_set_input(t);
  b->ne_id[b->n_ne_id] = id; /* at most LLM_MAX_ID_MASKS: counted at load */
  b->inp_ne_id[b->n_ne_id++] = t;
  return t;
}

/* The program's mask input [1, n] (fm_llm_run's mask; 1 elsewhere). */
static struct ggml_tensor *inp_mask(llm_build *b) {
  if (!b->inp_mask) {
    b->inp_mask = ggml_new_tensor_2d(b->ctx, GGML_TYPE_F32, 1, b->n_tokens);
    ggml_set_input(b->inp_mask);
  }
  return b->inp_mask;
}

/* Columns of x [E, n] at the mask id zeroed, and those where m [1, n] (or
 * NULL: all 1) is 0, all scaled by (1 - ratio) / (the fraction of the
 * positions of m that are not the mask id). */
static struct ggml_tensor *token_dropout(llm_build *b, struct ggml_tensor *x, int32_t mask_id, float ratio,
                                         struct ggml_tensor *m) {
  struct ggml_context *ctx = b->ctx;
  const int64_t n = x->ne[1];
  struct ggml_tensor *keep = ne_id(b, mask_id);
  if (m) keep = ggml_mul(ctx, keep, m);
  struct ggml_tensor *kept = ggml_mul(ctx, x, keep);
  struct ggml_tensor *frac = ggml_sum(ctx, ggml_reshape_2d(ctx, keep, n, 1)); /* [1]: kept positions */
  frac = m ? ggml_div(ctx, frac, ggml_sum(ctx, ggml_reshape_2d(ctx, m, n, 1))) : ggml_scale(ctx, frac, 1.0f / (float)n);
  return ggml_scale(ctx, ggml_div(ctx, kept, frac), 1.0f - ratio);
}

/* Attention maps of q [nh hk, n] over k [nkv hk, n] of the same batch
 * (n_past 0): softmax over the keys of K'Q scale + mask, [n keys, n
 * queries, nh] (GGML broadcasts the KV heads over the groups); keys where
 * km [1, n] (or NULL: none) is 0 get -1e30 added, which leaves them a
 * weight of exactly 0 (exp underflows) while a key remains. */
static struct ggml_tensor *attention_probs(llm_build *b, struct ggml_tensor *q, struct ggml_tensor *k, int64_t nh,
                                           int64_t nkv, int mk, float scale, struct ggml_tensor *km) {
  struct ggml_context *ctx = b->ctx;
  const int64_t hk = q->ne[0] / nh, n = q->ne[1];
  struct ggml_tensor *qp = ggml_permute(ctx, ggml_reshape_3d(ctx, q, hk, nh, n), 0, 2, 1, 3); /* [hk, n, nh] */
  struct ggml_tensor *kp = ggml_permute(ctx, ggml_reshape_3d(ctx, k, hk, nkv, n), 0, 2, 1, 3);
  struct ggml_tensor *kq = ggml_mul_mat(ctx, kp, qp); /* [n, n, nh] */
  struct ggml_tensor *mask = NULL;
  if (mk != LLM_MASK_FULL) { /* [n_kv, n]: the first n cells are the batch's */
    mask = llm_build_mask(b, mk, 0);
    mask = ggml_cont(ctx, ggml_view_2d(ctx, mask, n, n, mask->nb[1], 0));
  }
  if (km) {
    struct ggml_tensor *keys = ggml_scale_bias(ctx, ggml_reshape_2d(ctx, km, n, 1), 1e30f, -1e30f); /* [n, 1] */
    mask = mask ? ggml_add(ctx, mask, keys) : ggml_repeat(ctx, keys, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, n));
  }
  return ggml_soft_max_ext(ctx, kq, mask, scale, 0.0f);
}

/* p [n, n, c] times m[key] m[query], m [1, n]. */
static struct ggml_tensor *pair_mask(llm_build *b, struct ggml_tensor *p, struct ggml_tensor *m) {
  struct ggml_context *ctx = b->ctx;
  struct ggml_tensor *outer = ggml_mul_mat(ctx, m, m); /* [n, n]: m[i] m[j] */
  return ggml_mul(ctx, p, outer);
}

/* The values v [nkv hv, n] weighted by maps p [n, n, nh]: [nh hv, n]. */
static struct ggml_tensor *attend(llm_build *b, struct ggml_tensor *p, struct ggml_tensor *v, int64_t nkv) {
  struct ggml_context *ctx = b->ctx;
  const int64_t n = p->ne[0], nh = p->ne[2], hv = v->ne[0] / nkv;
  struct ggml_tensor *vt = ggml_cont(ctx, ggml_permute(ctx, ggml_reshape_3d(ctx, v, hv, nkv, n), 1, 2, 0, 3));
  struct ggml_tensor *o = ggml_mul_mat(ctx, vt, p); /* [hv, n, nh] */
  o = ggml_cont(ctx, ggml_permute(ctx, o, 0, 2, 1, 3)); /* [hv, nh, n] */
  return ggml_reshape_2d(ctx, o, hv * nh, n);
}

/* Average product correction of each map x [n, n, c]: x - r c' / total,
 * r and c its sums along each axis. */
static struct ggml_tensor *apc(llm_build *b, struct ggml_tensor *x) {
  struct ggml_context *ctx = b->ctx;
  struct ggml_tensor *s0 = ggml_sum_rows(ctx, x); /* [1, n, c]: over ne0 */
  struct ggml_tensor *s1 = ggml_sum_rows(ctx, ggml_cont(ctx, ggml_transpose(ctx, x))); /* over ne1 */
  struct ggml_tensor *outer = ggml_mul_mat(ctx, s1, s0); /* [n, n, c]: s1[i] s0[j] */
  struct ggml_tensor *total = ggml_sum_rows(ctx, ggml_reshape_3d(ctx, s0, x->ne[1], 1, x->ne[2])); /* [1, 1, c] */
  return ggml_sub(ctx, x, ggml_div(ctx, outer, total));
}

/* sum_c w[c] x[, , c] (+ b): x [n, n, c] -> [n, n, 1]. */
static struct ggml_tensor *head_mix(llm_build *b, struct ggml_tensor *x, struct ggml_tensor *w, struct ggml_tensor *bias) {
  struct ggml_context *ctx = b->ctx;
  const int64_t n0 = x->ne[0], n1 = x->ne[1], c = x->ne[2];
  struct ggml_tensor *xt = ggml_cont(ctx, ggml_permute(ctx, x, 1, 2, 0, 3)); /* [c, n0, n1] */
  struct ggml_tensor *y = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, xt, c, n0 * n1), ggml_reshape_2d(ctx, w, c, 1));
  y = ggml_reshape_3d(ctx, y, n0, n1, 1);
  return bias ? ggml_add(ctx, y, bias) : y;
}

static struct ggml_tensor *lower(llm_build *b, const llm_program *P, int64_t i, struct ggml_tensor **in) {
  struct ggml_context *ctx = b->ctx;
  const fm_llm_node *nd = &P->nodes[i];
  struct ggml_tensor *x = in[0];
  switch (nd->op) {
  case FM_LLM_OP_INPUT:
    return nd->tensor == FM_LLM_IN_TOKENS ? b->inp_tokens : nd->tensor == FM_LLM_IN_SEQUENCE ? b->inp_seq
                                                        : nd->tensor == FM_LLM_IN_MASK   ? inp_mask(b)
                                                                                         : llm_build_inp_pos(b);
  case FM_LLM_OP_PARAM: return P->w[i];
  case FM_LLM_OP_GET_ROWS: return ggml_get_rows(ctx, in[1], x);
  case FM_LLM_OP_MATMUL: return llm_mm(b, in[1], x);
  case FM_LLM_OP_ADD: return grouped(b, x, in[1], 0);
  case FM_LLM_OP_MUL: return grouped(b, x, in[1], 1);
  case FM_LLM_OP_SCALE: return ggml_scale(ctx, x, (float)nd->fa[0]);
  case FM_LLM_OP_RMS_NORM: {
    const int64_t g = nd->ia[0] > 0 ? nd->ia[0] : x->ne[0];
    struct ggml_tensor *y = ggml_rms_norm(ctx, ggml_reshape_3d(ctx, x, g, x->ne[0] / g, x->ne[1]), (float)nd->fa[0]);
    return ggml_reshape_2d(ctx, y, x->ne[0], x->ne[1]);
  }
  case FM_LLM_OP_LAYER_NORM: return ggml_norm(ctx, x, (float)nd->fa[0]);
  case FM_LLM_OP_ROPE: {
    const int64_t nh = nd->ia[0];
    struct ggml_tensor *y = ggml_rope_ext(ctx, ggml_reshape_3d(ctx, x, x->ne[0] / nh, nh, x->ne[1]), in[1], NULL,
                                          (int)nd->ia[1], (int)nd->ia[2], (int)b->m->hp.n_ctx_train,
                                          (float)nd->fa[0], (float)nd->fa[1], 0.0f, 1.0f, 32.0f, 1.0f);
    return ggml_reshape_2d(ctx, y, x->ne[0], x->ne[1]);
  }
  case FM_LLM_OP_ATTENTION: {
    const int64_t nh = nd->ia[0], nkv = nd->ia[1], hk = x->ne[0] / nh;
    return llm_attend(b, nd->layer, ggml_reshape_3d(ctx, x, hk, nh, x->ne[1]),
                      ggml_reshape_3d(ctx, in[1], hk, nkv, in[1]->ne[1]), in[2], mask_kind[nd->ia[2]],
                      (float)nd->fa[0]);
  }
  case FM_LLM_OP_SILU: return ggml_silu(ctx, x);
  case FM_LLM_OP_GELU: return ggml_gelu(ctx, x);
  case FM_LLM_OP_SOFTMAX: return ggml_soft_max(ctx, x);
  case FM_LLM_OP_LEAKY_RELU: return ggml_leaky_relu(ctx, x, (float)nd->fa[0], false);
  case FM_LLM_OP_SWIGLU: return ggml_swiglu_split(ctx, x, in[1]);
  case FM_LLM_OP_GEGLU: return ggml_geglu_split(ctx, x, in[1]);
  case FM_LLM_OP_MOE: {
    llm_moe_opts o = {nd->ia[2] == 2, (int)nd->ia[1], 0.0f, LLM_FFN_SWIGLU};
    return llm_moe_experts(b, x, in[1], in[5], in[2], in[3], in[4], nd->ia[0], &o);
  }
  case FM_LLM_OP_ROWS:
    return ggml_cont(ctx, ggml_view_2d(ctx, x, nd->ia[1], x->ne[1], x->nb[1], (size_t)nd->ia[0] * x->nb[0]));
  case FM_LLM_OP_POOL: return llm_pool(b, x, b->pooling);
  case FM_LLM_OP_CONV1D: return conv1d(b, x, in[1], in[2], (int)nd->ia[0], 0, x->ne[1]);
  case FM_LLM_OP_BATCHNORM: {
    /* scale = w / sqrt(var + eps), shift = b - mean scale: [C] each */
    struct ggml_tensor *sc = ggml_div(ctx, in[3], ggml_sqrt(ctx, ggml_scale_bias(ctx, in[2], 1.0f, (float)nd->fa[0])));
    struct ggml_tensor *sh = ggml_sub(ctx, in[4], ggml_mul(ctx, in[1], sc));
    return ggml_add(ctx, ggml_mul(ctx, x, sc), sh);
  }
  case FM_LLM_OP_CROP:
    return ggml_cont(ctx, ggml_view_2d(ctx, x, x->ne[0], x->ne[1] - nd->ia[0] - nd->ia[1], x->nb[1],
                                       (size_t)nd->ia[0] * x->nb[1]));
  case FM_LLM_OP_CONV_CAUSAL: return conv_causal(b, x, in[1], b->cache->s[nd->layer]);
  case FM_LLM_OP_GELU_ERF: return ggml_gelu_erf(ctx, x);
  case FM_LLM_OP_SIGMOID: return ggml_sigmoid(ctx, x);
  case FM_LLM_OP_TOKEN_DROPOUT: return token_dropout(b, x, (int32_t)nd->ia[0], (float)nd->fa[0], in[2]);
  case FM_LLM_OP_ATTENTION_PROBS:
    return attention_probs(b, x, in[1], nd->ia[0], nd->ia[1], mask_kind[nd->ia[2]], (float)nd->fa[0], in[3]);
  case FM_LLM_OP_NE_ID: return ne_id(b, (int32_t)nd->ia[0]);
  case FM_LLM_OP_PAIR_MASK: return pair_mask(b, x, in[1]);
  case FM_LLM_OP_ATTEND: return attend(b, x, in[1], nd->ia[0]);
  case FM_LLM_OP_CONCAT: return ggml_concat(ctx, x, in[1], P->shape[i].per_pos == PS_PAIRS ? 2 : 0);
  case FM_LLM_OP_PAIR_CROP: {
    const int64_t n = x->ne[0] - nd->ia[0] - nd->ia[1];
    const size_t at = (size_t)nd->ia[0] * (x->nb[0] + x->nb[1]);
    return ggml_cont(ctx, ggml_view_3d(ctx, x, n, n, x->ne[2], x->nb[1], x->nb[2], at));
  }
  case FM_LLM_OP_SYMMETRIZE: return ggml_add(ctx, x, ggml_cont(ctx, ggml_transpose(ctx, x)));
  case FM_LLM_OP_APC: return apc(b, x);
  case FM_LLM_OP_HEAD_MIX: return head_mix(b, x, in[1], in[2]);
  case FM_LLM_OP_COUNT: break;
  }
  return NULL; /* refused at load */
}

/* need[]: 0 unused, 1 the output rows only, 2 every position. */
enum { NEED_NONE = 0, NEED_OUT = 1, NEED_ALL = 2 };

/* Positions [lo, hi) of the input sequence. */
typedef struct prange {
  int64_t lo, hi;
} prange;

/* A whole-sequence run of a program of position-wise operators, conv1d
 * and crop over a sequence input (OpenSpliceAI): the positions each
 * needed node computes, want[i], for the wanted outputs' (nat[i]: all of
 * its positions, crops applied). A convolution reaches d (k - 1) / 2
 * positions each way, so behind a crop the late layers compute fewer
 * positions than the early ones (a 10,000 nt flank crops 10,000 of the
 * 12,000 positions of a 2,000 nt sequence; the last layers' reach is
 * 500 each). 0 (every node computes nat[i]) for other programs. */
static int position_ranges(const llm_build *b, const unsigned char *need, prange *nat, prange *want) {
  const llm_program *P = b->m->prog;
  if (!b->n_want || !b->inp_seq) return 0;
  for (int64_t i = 0; i < P->n; i++) {
    const fm_llm_node *nd = &P->nodes[i];
    if (!need[i] || P->shape[i].per_pos != PS_POS || P->shape[i].ids) continue;
    if (nd->op == FM_LLM_OP_INPUT) nat[i] = (prange){0, b->n_tokens};
    else if (nd->op == FM_LLM_OP_CROP) nat[i] = (prange){nat[nd->args[0]].lo + nd->ia[0], nat[nd->args[0]].hi - nd->ia[1]};
    else if (nd->op == FM_LLM_OP_CONV1D || op_info[nd->op].rowwise) nat[i] = nat[nd->args[0]];
    else return 0;
    want[i] = (prange){INT64_MAX, INT64_MIN};
  }
  for (int64_t k = 0; k < b->n_want; k++) {
    const int64_t o = P->outputs[b->want[k]];
    if (P->shape[o].per_pos != PS_POS) return 0;
    want[o] = nat[o];
  }
  for (int64_t i = P->n - 1; i >= 0; i--) {
    const fm_llm_node *nd = &P->nodes[i];
    if (!need[i] || P->shape[i].per_pos != PS_POS || P->shape[i].ids) continue;
    if (want[i].lo >= want[i].hi) want[i] = nat[i];
    const int64_t reach = nd->op == FM_LLM_OP_CONV1D ? nd->ia[0] * ((P->shape[nd->args[1]].ne[0] - 1) / 2) : 0;
    for (int k = 0; k < FM_LLM_MAX_ARGS; k++) {
      const int32_t a = nd->args[k];
      if (a < 0 || P->shape[a].per_pos != PS_POS || P->shape[a].ids) continue;
      prange r = {want[i].lo - reach, want[i].hi + reach};
      if (r.lo < nat[a].lo) r.lo = nat[a].lo;
      if (r.hi > nat[a].hi) r.hi = nat[a].hi;
      if (r.lo < want[a].lo) want[a].lo = r.lo;
      if (r.hi > want[a].hi) want[a].hi = r.hi;
    }
  }
  for (int64_t i = 0; i < P->n; i++) /* inputs come whole */
    if (need[i] && P->nodes[i].op == FM_LLM_OP_INPUT && P->shape[i].per_pos == PS_POS) want[i] = nat[i];
  return 1;
}

fm_status llm_program_build(llm_build *b, fm_err *err) {
  const llm_program *P = b->m->prog;
  const int64_t n = P->n;
  unsigned char *need = calloc((size_t)n, 1);
  struct ggml_tensor **val = calloc((size_t)n * 2, sizeof *val), **sel = val + n;
  prange *nat = calloc((size_t)n * 2, sizeof *nat), *want = nat + n;
  if (!need || !val || !nat) {
    free(need);
    free(val);
    free(nat);
    return fm_err_set(err, FM_ENOMEM, "out of memory building a program's graph");
  }
  /* Backwards: which nodes are used, and which compute the output rows
   * only (a position-wise node all of whose uses need those rows). */
  /* the output this evaluation asks for (fm_llm_run: its wanted ones) */
  const int64_t out = b->n_want ? -1 : b->want_pool && P->embedding >= 0 ? P->embedding : P->logits;
  if (b->n_want) {
    for (int64_t k = 0; k < b->n_want; k++) need[P->outputs[b->want[k]]] = NEED_ALL;
  } else if (out < 0) {
    free(need);
    free(val);
    free(nat);
    return fm_err_set(err, FM_EUNSUPPORTED, "program '%s' has no %s output", b->m->arch_name,
                      b->want_pool ? "embedding" : "logits");
  }
  if (out >= 0) need[out] = b->inp_out_ids && out == P->logits ? NEED_OUT : NEED_ALL;
  for (int64_t i = n - 1; i >= 0; i--) {
    if (!need[i]) continue;
    const fm_llm_node *nd = &P->nodes[i];
    if (need[i] == NEED_OUT && (!op_info[nd->op].rowwise || P->shape[i].per_pos == PS_PAIRS)) need[i] = NEED_ALL;
    for (int k = 0; k < FM_LLM_MAX_ARGS; k++) {
      const int32_t a = nd->args[k];
      if (a < 0) continue;
      const int req = need[i] == NEED_OUT && P->shape[a].per_pos == PS_POS ? NEED_OUT : NEED_ALL;
      if (need[a] < req) need[a] = (unsigned char)req;
    }
  }
  const int ranged = position_ranges(b, need, nat, want);
  for (int64_t i = 0; i < n; i++) {
    if (!need[i]) continue;
    const fm_llm_node *nd = &P->nodes[i];
    if (nd->op == FM_LLM_OP_INPUT && nd->tensor == FM_LLM_IN_SEQUENCE && !b->inp_seq) {
      free(need);
      free(val);
      free(nat);
      return fm_err_set(err, FM_EUNSUPPORTED, "program '%s' takes a sequence: evaluate it whole (fm_llm_run; rllm_run() in R)",
                        b->m->arch_name);
    }
    if ((nd->op == FM_LLM_OP_ATTENTION_PROBS || nd->op == FM_LLM_OP_TOKEN_DROPOUT) && !b->n_want) {
      free(need);
      free(val);
      free(nat);
      return fm_err_set(err, FM_EUNSUPPORTED, "program '%s': node %lld (%s) reads the whole sequence at once: "
                        "evaluate it whole (fm_llm_run; rllm_run() in R)", b->m->arch_name, (long long)i, op_names[nd->op]);
    }
    if (nd->op == FM_LLM_OP_POOL && !b->want_pool) {
      free(need);
      free(val);
      free(nat);
      return fm_err_set(err, FM_EUNSUPPORTED, "program '%s': node %lld pools the positions, which only an "
                        "embedding evaluation does", b->m->arch_name, (long long)i);
    }
    struct ggml_tensor *in[FM_LLM_MAX_ARGS] = {0};
    for (int k = 0; k < FM_LLM_MAX_ARGS; k++) {
      const int32_t a = nd->args[k];
      if (a < 0) continue;
      in[k] = val[a];
      /* a node computing the output rows of an argument computed at every
       * position: that argument's rows, selected once */
      if (need[i] == NEED_OUT && need[a] == NEED_ALL && P->shape[a].per_pos == PS_POS) {
        if (!sel[a]) sel[a] = llm_select_outputs(b, val[a]);
        in[k] = sel[a];
      }
    }
    if (ranged && P->shape[i].per_pos == PS_POS && !P->shape[i].ids && nd->op != FM_LLM_OP_INPUT) {
      /* this node's positions want[i]: its arguments' columns there (a
       * convolution reads its input's whole window) */
      const int64_t w0 = want[i].lo, wn = want[i].hi - want[i].lo;
      for (int k = 0; k < FM_LLM_MAX_ARGS; k++) {
        const int32_t a = nd->args[k];
        if (a >= 0 && P->shape[a].per_pos == PS_POS && !P->shape[a].ids && !(nd->op == FM_LLM_OP_CONV1D && k == 0))
          in[k] = columns(b, val[a], w0 - want[a].lo, wn);
      }
      if (nd->op == FM_LLM_OP_CROP) val[i] = in[0];
      else if (nd->op == FM_LLM_OP_CONV1D)
        val[i] = conv1d(b, in[0], in[1], in[2], (int)nd->ia[0], w0 - want[nd->args[0]].lo, wn);
      else val[i] = lower(b, P, i, in);
      continue;
    }
    val[i] = lower(b, P, i, in);
  }
  if (b->n_want) {
    for (int64_t k = 0; k < b->n_want; k++) {
      struct ggml_tensor *t = val[P->outputs[b->want[k]]];
      b->results[k] = ggml_is_contiguous(t) ? t : ggml_cont(b->ctx, t);
    }
  } else if (out == P->embedding) {
    b->embedding = val[out];
  } else {
    b->logits = need[out] == NEED_ALL ? llm_select_outputs(b, val[out]) : val[out];
    /* the final states, pooled for an embedding: the input of the logits
     * product */
    const fm_llm_node *ln = &P->nodes[out];
    b->hidden = ln->op == FM_LLM_OP_MATMUL ? val[ln->args[0]] : b->logits;
  }
  free(need);
  free(val);
  free(nat);
  return FM_OK;
}

/* A cache slot's recurrent state: a convolution's L - 1 inputs. */
int64_t llm_program_state_elems(const llm_model *m, int64_t il) {
  const llm_program *P = m->prog;
  const int64_t c = il < P->n ? P->conv_of[il] : -1;
  if (c < 0) return 0;
  const fm_llm_node *nd = &P->nodes[c];
  return (P->shape[nd->args[1]].ne[0] - 1) * P->shape[nd->args[0]].ne[0];
}
