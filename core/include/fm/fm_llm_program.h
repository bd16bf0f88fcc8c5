/* fm_llm_program.h: models given as bound architecture programs.
 *
 * An architecture program (Rllm's R language, docs/programs.md) is data: a
 * graph of operators of a versioned vocabulary over inputs and named
 * parameters. Bound to a GGUF file (loops unrolled, conditions decided,
 * attribute expressions evaluated, parameter names resolved to the file's
 * tensors), it reaches the core as a flat array of nodes in topological
 * order, each naming earlier nodes as its arguments. The core checks every
 * node against its operator's shape rule, binds the parameters zero-copy to
 * the mapping, and lowers the nodes to GGML operators, one graph per batch
 * shape, reused. It knows operators, never model families.
 *
 * Vocabulary version 1; shapes are GGML's [ne0, ne1],
 * ne1 the positions (T, the batch's tokens) of an activation; parameters
 * have the file's shape. Attributes: ia[] integers, fa[] reals.
 *   INPUT       tensor = FM_LLM_IN_TOKENS (token ids, I32 [T]),
 *               FM_LLM_IN_POSITIONS (I32 [T], n_past + 0, 1, ...) or
 *               FM_LLM_IN_SEQUENCE (F32 [ia[0] channels, T]: fm_llm_run);
 *               version 3: FM_LLM_IN_MASK (F32 [1, T], 0 or 1 per
 *               position: fm_llm_run's mask, all 1 where none is given)
 *   PARAM       tensor = the file's tensor index (0-based); type_class:
 *               FM_LLM_PARAM_* (the types its consumer accepts)
 *   GET_ROWS    (ids, w [E, V]) -> [E, T]
 *   MATMUL      (x [k, T], w [k, m]) -> [m, T] (w x, F32 accumulation)
 *   ADD, MUL    (x [a, T], y) -> [a, T]; y absent (-1: x passes), [a, T],
 *               or an F32 parameter [g] with g dividing a (each group of
 *               g rows of every column); version 3: y [1, T] (each
 *               column by its one value: a mask)
 *   SCALE       (x) fa[0] = s
 *   RMS_NORM    (x) fa[0] = eps, ia[0] = group (0: the column)
 *   LAYER_NORM  (x) fa[0] = eps
 *   ROPE        (x [nh hd, T], pos) ia[0] = nh, ia[1] = n_rot (even,
 *               <= hd), ia[2] = mode (0 adjacent pairs, 2 NEOX), fa[0] =
 *               base
 *   ATTENTION   (q [nh hk, T], k [nkv hk, T], v [nkv hv, T], pos) ia[0] =
 *               nh, ia[1] = nkv (dividing nh), ia[2] = mask
 *               (FM_LLM_MASK_*), ia[3] = window, fa[0] = scale; layer =
 *               its cache slot (one attention per slot) -> [nh hv, T]
 *   SILU, GELU, SOFTMAX (x); LEAKY_RELU (x) fa[0] = slope
 *   SWIGLU, GEGLU (gate, up: equal shapes)
 *   MOE         (x [E, T], router [E, n], gate, up [E, ff, n], down [ff,
 *               E, n], optional selection bias [n] F32) ia[0] = experts per
 *               position, ia[1] = renormalize, ia[2] = gating (1 softmax,
 *               2 sigmoid: llama.cpp's expert_gating_func); the bias is
 *               added to the probabilities for the choice only
 *   ROWS        (x [a, T]) ia[0] = start, ia[1] = count -> [count, T]
 *   POOL        (x [a, T]) -> [a, 1]: the evaluation's pooling (fm_llm_embed;
 *               by default ia[0]: 1 mean, 2 the first position, 3 the last)
 *   CONV_CAUSAL (x [C, T], kernel [L, C] F32): y[c, t] = sum_k kernel[k, c]
 *               x[c, t - (L - 1) + k], the L - 1 inputs before the batch
 *               kept in the cache slot layer (zeros at the start)
 *   CONV1D      (x [I, T], w [k, I, O] F32, optional bias [O] F32) ia[0] =
 *               dilation d, k odd: y[o, t] = b[o] + sum_{i, j} w[j, i, o]
 *               x[i, t + d (j - (k - 1) / 2)], zeros outside (same length)
 *   BATCHNORM   (x [C, T], mean, var, w, b: F32 [C]) fa[0] = eps:
 *               (x - mean) / sqrt(var + eps) w + b, folded per evaluation
 *               into one scale and one shift per channel
 *   CROP        (x [C, T]) ia[0] = left, ia[1] = right -> [C, T - left -
 *               right] (the positions of a later node are those of its
 *               inputs: crops add up; nodes over positions that mix them
 *               (attention, rope) need uncropped inputs)
 * Version 2 adds (a version 1 program is a version 2 program):
 *   GELU_ERF, SIGMOID (x: an activation or pair maps)
 *   TOKEN_DROPOUT (x [E, T], ids) ia[0] = mask id, fa[0] = ratio: columns
 *               at the mask id zeroed, all scaled by (1 - ratio) / (the
 *               fraction of other ids) (ESM-2's inference-time rescaling)
 *   ATTENTION_PROBS (q [nh hk, T], k [nkv hk, T], pos) ia and fa as
 *               ATTENTION's; no cache: the batch attends to itself, so
 *               only a whole-sequence evaluation (fm_llm_run) takes it ->
 *               pair maps [T keys, T queries, nh] (softmax over the keys)
 *   ATTEND      (p pair maps [T, T, nh], v [nkv hv, T]) ia[0] = nkv ->
 *               [nh hv, T]
 *   CONCAT      (x, y) two activations of equal positions -> rows of x
 *               then y; two pair maps of equal positions -> channels
 *   PAIR_CROP   (p [T, T, c]) ia[0] = left, ia[1] = right: positions
 *               dropped at both ends of both axes
 *   SYMMETRIZE  (p) each map plus its transpose
 *   APC         (p) each map minus (row sums x column sums) / total
 *   HEAD_MIX    (p [T, T, c], w F32 [c], optional b F32 [1]) -> [T, T, 1]:
 *               sum_c w[c] p[, , c] + b
 * Version 3 adds padding (a version 2 program is a version 3 program):
 *   INPUT       FM_LLM_IN_MASK (above)
 *   NE_ID       (ids: the token input) ia[0] = id -> F32 [1, T]: 1 where
 *               the token is not id, 0 where it is
 *   PAIR_MASK   (p [T, T, c], m [1, T]) -> p[key, query, ] m[key] m[query]
 *   TOKEN_DROPOUT takes an optional third argument, m [1, T]: the
 *               fraction is over the positions where m is 1, and the
 *               columns where m is 0 are zeroed (ESM-2's padding)
 *   ATTENTION_PROBS takes an optional fourth argument, m [1, T]: keys
 *               where m is 0 are left out (a key padding mask)
 *
 * Outputs: logits (fm_llm_eval) and a pooled embedding (fm_llm_embed);
 * at least one. A program without an embedding output embeds by pooling
 * the input of its logits product (the final states), as the built-in
 * architectures do. Evaluating for the last tokens only (decode, a
 * prompt's last logits), every position-wise node after the last operator
 * that mixes positions (attention) computes those rows only.
 *
 * Errors (fm_llm_model_new_program): FM_EARG for a malformed program (an
 * operator out of the vocabulary, an argument that is not an earlier node,
 * a missing argument, an attribute out of range, a shape that breaks the
 * operator's rule), naming the node's index and operator and, for
 * parameters, the tensor; FM_EFORMAT for a parameter whose type its
 * consumer cannot take.
 *
 * Thread safety: as fm_llm.h's models. */
#ifndef FM_LLM_PROGRAM_H
#define FM_LLM_PROGRAM_H

#include <stdint.h>

#include "fm/fm_gguf.h"
#include "fm/fm_llm.h"

#define FM_LLM_VOCABULARY 3
#define FM_LLM_MAX_ARGS 6

typedef enum fm_llm_op {
  FM_LLM_OP_INPUT = 0,
  FM_LLM_OP_PARAM,
  FM_LLM_OP_GET_ROWS,
  FM_LLM_OP_MATMUL,
  FM_LLM_OP_ADD,
  FM_LLM_OP_MUL,
  FM_LLM_OP_SCALE,
  FM_LLM_OP_RMS_NORM,
  FM_LLM_OP_LAYER_NORM,
  FM_LLM_OP_ROPE,
  FM_LLM_OP_ATTENTION,
  FM_LLM_OP_SILU,
  FM_LLM_OP_GELU,
  FM_LLM_OP_SWIGLU,
  FM_LLM_OP_GEGLU,
  FM_LLM_OP_POOL,
  FM_LLM_OP_MOE,
  FM_LLM_OP_ROWS,
  FM_LLM_OP_CONV_CAUSAL,
  FM_LLM_OP_CONV1D,
  FM_LLM_OP_BATCHNORM,
  FM_LLM_OP_LEAKY_RELU,
  FM_LLM_OP_CROP,
  FM_LLM_OP_SOFTMAX,
  FM_LLM_OP_GELU_ERF,
  FM_LLM_OP_SIGMOID,
  FM_LLM_OP_TOKEN_DROPOUT,
  FM_LLM_OP_ATTENTION_PROBS,
  FM_LLM_OP_ATTEND,
  FM_LLM_OP_CONCAT,
  FM_LLM_OP_PAIR_CROP,
  FM_LLM_OP_SYMMETRIZE,
  FM_LLM_OP_APC,
  FM_LLM_OP_HEAD_MIX,
  FM_LLM_OP_NE_ID,
  FM_LLM_OP_PAIR_MASK,
  FM_LLM_OP_COUNT
} fm_llm_op;

enum { FM_LLM_IN_TOKENS = 0, FM_LLM_IN_POSITIONS = 1, FM_LLM_IN_SEQUENCE = 2, FM_LLM_IN_MASK = 3 };
enum { FM_LLM_PARAM_ANY = 0, FM_LLM_PARAM_MATMUL = 1, FM_LLM_PARAM_F32 = 2, FM_LLM_PARAM_ROWS = 3 };
enum { FM_LLM_MASK_CAUSAL = 0, FM_LLM_MASK_FULL = 1, FM_LLM_MASK_SWA_CAUSAL = 2, FM_LLM_MASK_SWA_SYM = 3 };

typedef struct fm_llm_node {
  int32_t op;                    /* fm_llm_op */
  int32_t args[FM_LLM_MAX_ARGS]; /* earlier nodes' indices; -1: none */
  int64_t tensor;                /* INPUT: FM_LLM_IN_*; PARAM: the tensor's index */
  int32_t type_class;            /* PARAM: FM_LLM_PARAM_* */
  int32_t layer;                 /* ATTENTION: the cache slot */
  int64_t ia[4];
  double fa[2];
} fm_llm_node;

typedef struct fm_llm_program {
  const char *name;       /* the model's architecture label (info.arch) */
  int32_t vocabulary;     /* 1 .. FM_LLM_VOCABULARY */
  int64_t n_nodes;
  const fm_llm_node *nodes; /* copied by fm_llm_model_new_program */
  int64_t logits;         /* the node of the logits output [n_vocab, T], or -1 */
  int64_t n_ctx_train;    /* the training context (info only; 0: unknown) */
  int64_t embedding;      /* the node of the pooled embedding [n, 1] (fm_llm_embed), or -1 */
  int64_t n_outputs;      /* nodes fm_llm_run can return (named outputs and taps), or 0 */
  const int64_t *outputs; /* their node indices (copied) */
} fm_llm_program;

/* The values of wanted outputs (indices into the program's outputs) for
 * one whole sequence, in one graph, nothing cached: tokens (n ids; a
 * program with a token input) or x (C x n floats, channel fastest; a
 * program with a sequence input); mask (n values, 0 or 1: the program's
 * mask input, e.g. 0 at padding), or NULL for all 1. out[k] receives output want[k], cap[k]
 * floats at most, as ne[k][0] x ne[k][1] x ne[k][2] floats in GGML order:
 * an activation [rows, positions, 1], pair maps [positions, positions,
 * channels] (positions net of the program's crops). Programs with cache
 * state (attention, convolution state) are evaluated by fm_llm_eval.
 * Errors: FM_EUNSUPPORTED for a program with cache state or without the
 * input given; FM_EARG for a want outside [0, n_outputs), an output that
 * is not an activation or pair maps (a pooled column), n < 1, tokens
 * outside the vocabulary, a mask value other than 0 and 1 or no 1, a sequence shorter than the crops, a cap below
 * the output's size (naming it), NULL buffers; FM_ECANCELLED; FM_ENOMEM. */
/* Output k's extents for a sequence of n positions (as fm_llm_run's ne),
 * and (pairs, unless NULL) whether it is pair maps (1) or an activation.
 * Errors: FM_EARG as fm_llm_run's for that output. */
FM_NODISCARD fm_status fm_llm_output_shape(const fm_llm_model *m, int64_t k, int64_t n, int64_t ne[3], int *pairs,
                                           fm_err *err);

FM_NODISCARD fm_status fm_llm_run(fm_llm_model *m, const int32_t *tokens, const float *x, const float *mask, int64_t n,
                                  int64_t n_want, const int64_t *want, float *const *out, const int64_t *cap,
                                  int64_t (*ne)[3], const fm_ctl *ctl, fm_err *err);

/* The operator of a vocabulary name ("matmul", ...; "input", "param"), or
 * -1; and the name of an operator (NULL out of range). */
int fm_llm_op_find(const char *name);
const char *fm_llm_op_name(int op);

/* A model that evaluates program p on file g.
 * n_threads: GGML worker threads of its evaluations, or 0 for each call's
 *         (fm_threads(ctl): the stack's one setting); see
 *         fm_llm_threads_for.
 * device, index: FM_LLM_DEVICE_CPU (index unused): the weights stay on the
 *         mapping. On a device (FM_LLM_DEVICE_VULKAN, device index of its
 *         registry) every bound weight is copied once, at load, into one
 *         buffer of the device's memory (the mapping is then no longer
 *         read), KV caches and recurrent state are allocated in device
 *         memory (fm_llm_cache_new), and every evaluation runs the whole
 *         graph there: inputs (tokens, positions, masks, cache indices)
 *         are uploaded, only the logits or the embedding are read back. No
 *         operator falls back to the CPU: a graph with an operator the
 *         device cannot run is refused (FM_EUNSUPPORTED naming it) before
 *         it runs. The CPU-only paths do not apply there: the fused kernels
 *         (fm_llm_model_set_fused_gemm) and repacking (fm_llm_model_repack)
 *         are no-ops, the thread count is unused, and cancellation (ctl) is
 *         polled between micro-batches only.
 * Owns:   the result (free with fm_llm_model_free); copies p; borrows g,
 *         which must stay open (and its mapping alive) until the model is
 *         freed.
 * Errors: those of the program (above); FM_EARG for n_threads < 0 or a
 *         device index outside [0, the device count); FM_EUNSUPPORTED when
 *         the linked GGML has no Vulkan backend (fm_llm_ggml_has_vulkan) or
 *         it registered no device; FM_ENOMEM (also when the device has no
 *         room for the weights). */
FM_NODISCARD fm_status fm_llm_model_new_program(const fm_gguf *g, const fm_llm_program *p,
                                                int n_threads, fm_llm_device device, int index,
                                                fm_llm_model **out, fm_err *err);

#endif
