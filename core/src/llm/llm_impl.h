/* llm_impl.h (private): the model runtime's internals, shared by
 * llm_model.c (loading), llm_cache.c, llm_graph.c (reusable lowerings and
 * evaluation), llm_sample.c and the architecture files llm_arch_<name>.c.
 *
 * HOW TO ADD AN ARCHITECTURE
 *   1. Write core/src/llm/llm_arch_<name>.c defining
 *        const llm_arch llm_arch_<name> = {"<general.architecture>", load, build, ...};
 *      (see llm_arch_llama.c, the reference). Every .c file of core/src/llm
 *      is compiled (CMake and Rgguf both take the folder).
 *   2. Add one line LLM_ARCH(<name>) to core/src/llm/llm_arch_list.h.
 *   load(m, err): runs after llm_load_common() has read the common
 *      hyperparameters (m->hp, every per-layer array filled) and bound
 *      token_embd, output_norm and output (tied to token_embd when absent).
 *      Read further keys with llm_kv_*(), bind each layer's tensors with
 *      llm_bind() (name, expected shape, required or optional) into
 *      m->layers[il] (named fields, or extra[] for anything else). Every
 *      shape that the graph relies on must be checked here, so GGML's asserts
 *      never fire on a malformed file. Set m->hp flags (rope_neox, causal,
 *      kq_scale, ...) as llama.cpp does for this architecture.
 *   build(b, err): from b->inp_embd-producing helpers, compose lowerings
 *      (llm_build_inp_embd, llm_norm, llm_attn, llm_ffn, llm_moe,
 *      llm_select_outputs, ...) and set b->hidden to the final normed states
 *      ([n_embd, n_outputs]); optionally set b->logits (else
 *      mul_mat(output, hidden) is applied) or, for embedding models,
 *      pool_proj (applied to the pooled vector).
 *      Most decoder-only models need only llm_build_decoder() with options,
 *      or llm_build_llama_decoder() itself as build, with a load that sets
 *      the RoPE mode and calls llm_bind_decoder_layers_need() (see
 *      llm_arch_qwen3.c).
 *   state_elems(m, il): F32 elements of recurrent per-layer state kept in the
 *      cache (convolution tails, SSM states); NULL or 0 for none. The cache
 *      gives them to the graph as b->cache->s[il] (zeroed on clear).
 *   Layers with n_head_kv[il] > 0 get a K and a V cache buffer.
 *
 * Shapes follow GGML: ne[0] is the contiguous dimension. A [n_embd, n_tokens]
 * activation is n_tokens columns of n_embd floats. */
#ifndef FM_LLM_IMPL_H
#define FM_LLM_IMPL_H

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>
#include <pthread.h>

#include "fm/fm_gguf.h"
#include "fm/fm_llm.h"
#include "fm/fm_llm_program.h"
#include "llm_gemm.h"

#define LLM_EXTRA_TENSORS 16

/* Weights of one layer; NULL when the file has no such tensor. */
typedef struct llm_layer {
  struct ggml_tensor *attn_norm, *attn_norm_b;     /* [n_embd] */
  struct ggml_tensor *wq, *wk, *wv, *wo;           /* [n_embd, n_head*hd_k] ... */
  struct ggml_tensor *bq, *bk, *bv, *bo;           /* optional biases */
  struct ggml_tensor *attn_q_norm, *attn_k_norm;   /* [hd_k]: per-head RMS norm */
  struct ggml_tensor *attn_post_norm;              /* [n_embd]: post-branch norm */
  struct ggml_tensor *ffn_norm, *ffn_norm_b;       /* [n_embd] */
  struct ggml_tensor *ffn_gate, *ffn_up, *ffn_down; /* [n_embd, n_ff], [n_ff, n_embd] */
  struct ggml_tensor *ffn_gate_b, *ffn_up_b, *ffn_down_b;
  struct ggml_tensor *ffn_post_norm;               /* [n_embd] */
  /* mixture of experts */
  struct ggml_tensor *ffn_gate_inp;                /* [n_embd, n_expert] router */
  struct ggml_tensor *ffn_gate_exps, *ffn_up_exps; /* [n_embd, n_ff_exp, n_expert] */
  struct ggml_tensor *ffn_down_exps;               /* [n_ff_exp, n_embd, n_expert] */
  struct ggml_tensor *ffn_exp_probs_b;             /* [n_expert] selection bias */
  struct ggml_tensor *ffn_gate_shexp, *ffn_up_shexp, *ffn_down_shexp; /* shared expert */
  struct ggml_tensor *ffn_gate_inp_shexp;
  struct ggml_tensor *extra[LLM_EXTRA_TENSORS]; /* architecture-specific */
} llm_layer;

/* Hyperparameters. Per-layer arrays have n_layer entries. */
typedef struct llm_hparams {
  int64_t n_vocab, n_embd, n_layer, n_ctx_train;
  int64_t n_embd_head_k, n_embd_head_v, n_rot;
  int64_t *n_head, *n_head_kv, *n_ff; /* per layer */
  int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
  double norm_rms_eps, norm_eps;
  float rope_freq_base, rope_freq_scale;
  int64_t n_ctx_orig;
  int rope_neox;
  int causal;
  int pooling;
  float kq_scale;            /* 0: 1/sqrt(n_embd_head_k) */
  int64_t n_swa;             /* sliding window (0: none) */
  unsigned char *swa_layer;  /* per layer: 1 if the layer uses the window */
  float attn_softcap, final_softcap; /* 0: none */
  float embd_scale;          /* 0: none; multiplies the token embeddings */
} llm_hparams;

typedef struct fm_llm_model llm_model;
typedef struct llm_build llm_build;

typedef struct llm_arch {
  const char *name; /* general.architecture */
  fm_status (*load)(llm_model *m, fm_err *err);
  fm_status (*build)(llm_build *b, fm_err *err);
  int64_t (*state_elems)(const llm_model *m, int64_t il);
} llm_arch;

struct fm_llm_model {
  const fm_gguf *g;        /* borrowed */
  const llm_arch *arch;
  fm_llm_info info;
  llm_hparams hp;
  char arch_name[64];
  char name[128];
  char path[256]; /* for messages: the file's name or "model" */
  struct ggml_context *wctx;    /* tensor metadata of bound weights (no data) */
  struct ggml_tensor **bound;   /* per GGUF tensor index, NULL until bound */
  ggml_backend_t backend;       /* CPU, or the device's (dev) */
  ggml_backend_dev_t dev;       /* NULL on the CPU; else the registry's device */
  ggml_backend_buffer_t wbuf;   /* wraps the file's mapping (read-only use), or
                                   holds the weights' copy in device memory */
  ggml_gallocr_t galloc;        /* compute buffer, reused between evaluations */
  void *inp_scratch;            /* host staging of inputs for a device (llm_graph.c) */
  size_t inp_scratch_size;
  void *graph_mem;              /* metadata arena for per-evaluation contexts */
  size_t graph_mem_size;
  int64_t graph_size;           /* max nodes of one graph */
  int n_threads;
  int flash_attn;               /* 1: batches of >= LLM_FA_MIN_TOKENS use flash attention */
  int fused_gemm;               /* 1: products through llm_mm's kernels where they apply */
  int64_t gemm_scratch_k;       /* longest row of a graph's products that need scratch (llm_gemm.c) */
  float *gemm_scratch;          /* their per-thread panels: gemm_scratch_threads slices */
  size_t gemm_scratch_per;      /* of this many floats */
  int gemm_scratch_threads;
  struct ggml_context *rctx;    /* repacked weights (llm_repack.c): metadata */
  ggml_backend_buffer_t rbuf;   /* and data, or NULL */
  size_t repacked_bytes;
  int repack_done;              /* fm_llm_model_repack was called */
  struct ggml_tensor *tok_embd;   /* [n_embd, n_vocab] */
  struct ggml_tensor *output_norm, *output_norm_b; /* [n_embd] */
  struct ggml_tensor *output;     /* [n_embd, n_vocab] (== tok_embd when tied) */
  struct ggml_tensor *extra[LLM_EXTRA_TENSORS]; /* architecture-specific globals */
  llm_layer *layers; /* n_layer */
  void *arch_data;   /* owned by the architecture; free()d with the model */
  /* The last graph, reused while its key matches (decode steps of one
   * cache share a graph for every 32 positions; see llm_graph.c). */
  struct ggml_context *gctx; /* metadata of that graph (in graph_mem) */
  llm_build *gb;             /* its inputs and result */
  int64_t gkey[8]; /* cache serial, n_tokens, n_kv, n_out, embed, pooling, flash, fused */
  /* during one evaluation */
  const fm_ctl *ctl;
  pthread_t caller;
  uint64_t poll_count; /* abort-hook calls on the calling thread in this evaluation */
};

/* Cells of a cache are allocated, and attended over, in multiples of this
 * (as llama.cpp pads its non-flash-attention cache), so one graph serves
 * LLM_KV_PAD consecutive decode steps. */
#define LLM_KV_PAD 32

/* Batches of at least this many tokens attend through GGML's flash
 * attention (its tiled CPU kernel takes 64 query rows at a time); smaller
 * ones, decode steps included, through explicit scores and softmax as
 * llama.cpp without flash attention. */
#define LLM_FA_MIN_TOKENS 64

/* Products of a weight matrix with batches of at least this many tokens
 * go through the fused kernels (llm_gemm.h) where they apply: F16 and F32
 * from 1 (one column: a one-row GEMV that reads memory faster than GGML's;
 * 2 tokens: 1.3x faster than GGML, llama85m F16); Q8_0, through
 * decoded panels, from 16 (llama85m, 1 thread: 16 tokens 51-53 ms against
 * GGML's 57-79, 32 tokens 67-85 against 108-145). */
#define LLM_GEMM_MIN_TOKENS 1
#define LLM_GEMM_Q8_MIN_TOKENS 16
/* Quantized types go through decoded panels of this many rows, for
 * batches of at least LLM_GEMM_DEQ_MIN_TOKENS tokens (Q8_0:
 * LLM_GEMM_Q8_MIN_TOKENS; the decoding is paid once per panel, whatever
 * the batch). */
#define LLM_GEMM_DEQ_ROWS 16
#define LLM_GEMM_DEQ_MIN_TOKENS 32

struct fm_llm_cache {
  const fm_llm_model *m; /* borrowed */
  int64_t n_ctx, n_past;
  int64_t n_cells;    /* n_ctx rounded up to LLM_KV_PAD: cells allocated */
  int64_t serial;     /* unique per cache and per rebase: keys reused graphs */
  fm_llm_kv_type type;
  struct ggml_context *ctx; /* tensor metadata */
  ggml_backend_buffer_t buf; /* wraps heap or caller memory, or (on_device) owns device memory */
  int on_device;      /* 1: buf is the model device's memory (base, heap NULL) */
  void *heap;         /* owned memory or NULL */
  void *base;         /* aligned start of the cache memory */
  size_t n_bytes;     /* bytes used from base */
  size_t mem_off;     /* base - the caller's buffer (caller memory only) */
  struct ggml_tensor **k; /* per layer [n_embd_k_gqa, n_cells] or NULL */
  struct ggml_tensor **v; /* per layer [n_cells, n_embd_v_gqa] (transposed) or NULL */
  struct ggml_tensor **s; /* per layer [state_elems] F32 or NULL */
};

/* Attention masks, one input tensor each, built when first asked for. */
/* DEFAULT: CAUSAL when hp.causal, else FULL. SWA_CAUSAL: causal and
 * p_query - p_key < n_swa; SWA_SYM: |p_query - p_key| <= n_swa / 2. */
enum {
  LLM_MASK_DEFAULT = 0,
  LLM_MASK_CAUSAL,
  LLM_MASK_FULL,
  LLM_MASK_SWA_CAUSAL,
  LLM_MASK_SWA_SYM,
  LLM_MASK_COUNT
};

/* One graph: an evaluation of n_tokens tokens at positions n_past.. against
 * the first n_kv cells of the cache (n_past + n_tokens rounded up to
 * LLM_KV_PAD; cells past n_past + n_tokens are masked). The graph's
 * structure depends on n_tokens and n_kv only, never on n_past: positions,
 * masks and the cells written are inputs, so the graph is reused. */
struct llm_build {
  llm_model *m;
  struct fm_llm_cache *cache;
  struct ggml_context *ctx;
  struct ggml_cgraph *gf;
  int64_t n_tokens, n_past, n_kv;
  int64_t n_outputs;                  /* columns of hidden/logits */
  int want_pool;                      /* embedding: pool all tokens */
  int flash_attn;                     /* attention through ggml_flash_attn_ext */
  fm_llm_pooling pooling;
  struct ggml_tensor *inp_tokens;     /* I32 [n_tokens] */
  struct ggml_tensor *inp_pos;        /* I32 [n_tokens] (created on demand) */
  struct ggml_tensor *inp_out_ids;    /* I32 [n_outputs] or NULL (all tokens) */
  struct ggml_tensor *mask[LLM_MASK_COUNT]; /* F32 [n_kv, n_tokens] */
  struct ggml_tensor *mask16[LLM_MASK_COUNT]; /* F16 copies for flash attention */
  struct ggml_tensor *inp_pool;       /* F32 [n_tokens, 1] mean weights, or I32 row */
  struct ggml_tensor *inp_k_idx;      /* I64 [n_tokens]: cache rows of the new keys */
  struct ggml_tensor *inp_v_idx[8];   /* I64 [ev * n_tokens]: cells of the new values */
  int64_t v_idx_ev[8];                /* the ev of each inp_v_idx */
  struct ggml_tensor *hidden;         /* set by build: [n_embd, n_outputs] */
  struct ggml_tensor *logits;         /* optionally set by build */
  struct ggml_tensor *embedding;      /* optionally set by build: the pooled embedding */
  struct ggml_tensor *result;         /* the graph output (logits or embedding) */
  struct ggml_tensor *(*pool_proj)(llm_build *b, struct ggml_tensor *pooled);
};

/* ---- metadata (llm_model.c) ---------------------------------------------- */

/* Integer / float / string / bool value of key "<arch>.<suffix>" (or the
 * literal key when suffix starts with '='). Missing and required:
 * FM_EFORMAT naming the key; missing and optional: *out = def. A wrong type
 * is FM_EFORMAT naming the key and the type found. */
fm_status llm_kv_i64(const llm_model *m, const char *suffix, int required, int64_t def,
                     int64_t *out, fm_err *err);
fm_status llm_kv_f64(const llm_model *m, const char *suffix, int required, double def,
                     double *out, fm_err *err);
fm_status llm_kv_bool(const llm_model *m, const char *suffix, int required, int def, int *out,
                      fm_err *err);
/* Per-layer integers: a scalar (broadcast) or an array of n_layer values. */
fm_status llm_kv_layers_i64(const llm_model *m, const char *suffix, int required, int64_t def,
                            int64_t *out, fm_err *err);
/* String value (borrowed, not NUL-terminated); *s = NULL when absent. */
fm_status llm_kv_str(const llm_model *m, const char *suffix, const char **s, size_t *len,
                     fm_err *err);

/* Bind tensor `name` (printf format, e.g. "blk.%d.attn_q.weight") expecting
 * shape ne[0..n_dims) (-1: any extent); *out = NULL when absent and not
 * required. Checks dims, that a matrix weight's type has a CPU dot product
 * (LLM_T_MATMUL), that a norm/bias is F32 (LLM_T_F32), or that rows can be
 * dequantized (LLM_T_ROWS). Errors: FM_EFORMAT naming the tensor. */
enum { LLM_T_ANY = 0, LLM_T_MATMUL = 1, LLM_T_F32 = 2, LLM_T_ROWS = 3 };
fm_status llm_bind(llm_model *m, struct ggml_tensor **out, int required, int kind,
                   int64_t ne0, int64_t ne1, int64_t ne2, fm_err *err, const char *fmt, ...)
    FM_PRINTF(9, 10);

/* llm_bind of the file's tensor number idx (0-based; FM_EARG out of
 * range), its shape checked against want[0..4) (-1: any) unless want is
 * NULL. */
fm_status llm_bind_at(llm_model *m, int64_t idx, int kind, const int64_t *want,
                      struct ggml_tensor **out, fm_err *err);

/* n_embd_k_gqa / n_embd_v_gqa of layer il. */
static inline int64_t llm_n_embd_k_gqa(const llm_hparams *hp, int64_t il) {
  return hp->n_embd_head_k * hp->n_head_kv[il];
}
static inline int64_t llm_n_embd_v_gqa(const llm_hparams *hp, int64_t il) {
  return hp->n_embd_head_v * hp->n_head_kv[il];
}

/* Move the matrix weights GGML has interleaved CPU kernels for into its
 * repack buffer (llm_repack.c; fm_llm_model_repack); a no-op where GGML
 * repacks nothing. */
fm_status llm_repack(llm_model *m, fm_err *err);

/* Drop GGML's log lines below warnings (its per-tensor repack and
 * per-buffer debug lines) for the rest of the process (llm_ggml.c). Called
 * before GGML first repacks or its backend registry is first used. */
void llm_ggml_quiet(void);

/* Floats per SIMD step of GGML's CPU build (its GGML_F32_EPR: 16 with
 * AVX-512, 8 with AVX, 4 with SSE or NEON; 16 where unknown, a multiple of
 * the others). Its tiled flash-attention kernel runs only for value heads
 * a multiple of it; other heads take a scalar path several times slower. */
int64_t llm_ggml_f32_lanes(void);

/* ---- fused batch products (llm_gemm.c) ------------------------------------ */

/* w x ([ne1(w), ne1(x)] F32), as ggml_mul_mat(w, x): through the tiled
 * kernels of llm_gemm.h when m->fused_gemm and they take it (w a mapped
 * 2-D matrix: F16 or F32 with x of >= LLM_GEMM_MIN_TOKENS columns; a
 * quantized type with one column (GGML's one-row product, prefetched), Q8_0
 * (decoded panels) with >= LLM_GEMM_Q8_MIN_TOKENS,
 * another quantized type with >= LLM_GEMM_DEQ_MIN_TOKENS; x contiguous
 * F32; the kernels run on this CPU), else ggml_mul_mat. Use it for every
 * product with a 2-D weight matrix. */
struct ggml_tensor *llm_mm(llm_build *b, struct ggml_tensor *w, struct ggml_tensor *x);
/* The kernel of a type at the ISA level fm_cpu_isa() allows: NULL for
 * types other than F16 and F32, and on CPUs (or caps) without AVX2,
 * FMA and F16C. */
llm_gemm_fn llm_gemm_kernel(enum ggml_type type);
/* Before computing a graph on n_threads threads: the scratch of its
 * decoded-panel products and of its one-column F16 products. FM_ENOMEM. */
fm_status llm_gemm_reserve(llm_model *m, int n_threads, fm_err *err);

/* ---- small-head attention (llm_attn.c) ----------------------------------- */

/* 1 when llm_attn_small() runs for heads of hk and hv elements: the
 * model's fused kernels on (m->fused_gemm), on the CPU, heads of at most
 * LLM_ATTN_MAX_HEAD, and the kernels run on this CPU (AVX2, FMA and F16C;
 * FM_ISA and the test cap apply). */
int llm_attn_small_applies(const llm_build *b, int64_t hk, int64_t hv);
/* Flash attention of queries q ([hk, nh, n] F32; rounded to F16 first
 * when round_q, as GGML's F16 products round them) over keys k ([hk, n_kv,
 * nkv], F16 or F32, any strides) and values v ([n_kv, hv, nkv], the
 * cache's transposed layout), with mask ([n_kv, n] F32) and scale, by the
 * kernels of llm_attn.h: [hv * nh, n] F32, heads merged. */
struct ggml_tensor *llm_attn_small(llm_build *b, struct ggml_tensor *q, struct ggml_tensor *k,
                                   struct ggml_tensor *v, struct ggml_tensor *mask, float scale,
                                   int round_q);

/* ---- lowerings (llm_graph.c) --------------------------------------------- */

/* get_rows(token_embd, tokens) (times hp.embd_scale when set): [n_embd, n_tokens]. */
struct ggml_tensor *llm_build_inp_embd(llm_build *b);
/* Positions n_past.. as an I32 input [n_tokens]. */
struct ggml_tensor *llm_build_inp_pos(llm_build *b);
/* Index inputs of the cache writes (filled per evaluation). */
struct ggml_tensor *llm_build_k_idx(llm_build *b);
struct ggml_tensor *llm_build_v_idx(llm_build *b, int64_t ev);
/* The mask input of a kind (LLM_MASK_*): F32, or F16 (f16 = 1) as
 * flash attention takes it. */
struct ggml_tensor *llm_build_mask(llm_build *b, int kind, int f16);

enum { LLM_NORM_RMS = 0, LLM_NORM_LAYER = 1 };
/* norm(x) * w + bias (w, bias may be NULL), over ne[0]. */
struct ggml_tensor *llm_norm(llm_build *b, struct ggml_tensor *x, struct ggml_tensor *w,
                             struct ggml_tensor *bias, int kind);

typedef struct llm_attn_opts {
  int mask;      /* LLM_MASK_* (0: DEFAULT; per layer, hp.swa_layer picks SWA) */
  int no_rope;   /* 1: no rotary embedding */
  float kq_scale; /* 0: hp.kq_scale, else 1/sqrt(hd_k) */
} llm_attn_opts;
/* Self-attention of layer il on normed input x [n_embd, n_tokens]:
 * Q/K/V projections (+ biases), per-head Q/K RMS norm when the layer has
 * attn_q_norm/attn_k_norm, RoPE (hp.rope_neox), store K/V in the cache,
 * softmax(K^T Q * scale + mask) over n_kv cells, V, merged heads, wo (+ bo).
 * Returns [n_embd, n_tokens]. opts may be NULL. */
struct ggml_tensor *llm_attn(llm_build *b, int64_t il, struct ggml_tensor *x,
                             const llm_attn_opts *opts);

enum { LLM_FFN_SWIGLU = 0, LLM_FFN_GEGLU = 1, LLM_FFN_GELU = 2, LLM_FFN_SILU = 3 };
/* Feed-forward of layer il: gated (SWIGLU: silu(gate x) * up x; GEGLU:
 * gelu(gate x) * up x) or not (GELU/SILU: act(up x)), then down (+ biases).
 * Returns [n_embd, n]. */
struct ggml_tensor *llm_ffn(llm_build *b, int64_t il, struct ggml_tensor *x, int kind);

typedef struct llm_moe_opts {
  int gating_sigmoid; /* 0: softmax over experts (then top-k); 1: sigmoid */
  int norm_weights;   /* renormalize the selected weights to sum 1 */
  float weights_scale; /* 0: none */
  int act;             /* LLM_FFN_SWIGLU or LLM_FFN_GEGLU */
} llm_moe_opts;
/* Mixture of experts of layer il (ffn_gate_inp, ffn_{gate,up,down}_exps,
 * n_expert_used per token via ggml_mul_mat_id), plus the shared expert when
 * bound. Returns [n_embd, n]. */
struct ggml_tensor *llm_moe(llm_build *b, int64_t il, struct ggml_tensor *x,
                            const llm_moe_opts *opts);

/* The experts of llm_moe without the layer: router [E, n_expert], the
 * selection bias probs_b (or NULL), the stacked gate/up [E, ff, n_expert]
 * and down [ff, E, n_expert] matrices, nu experts per token. [E, n]. */
struct ggml_tensor *llm_moe_experts(llm_build *b, struct ggml_tensor *x, struct ggml_tensor *router,
                                    struct ggml_tensor *probs_b, struct ggml_tensor *gate_exps,
                                    struct ggml_tensor *up_exps, struct ggml_tensor *down_exps,
                                    int64_t nu, const llm_moe_opts *o);

/* Attention of layer il's cache slot: stores the batch's keys k [hk, nkv,
 * n] and values v (hv * nkv x n elements, positions last) in the cache,
 * then attends with queries q [hk, nh, n] over the n_kv cells with mask
 * kind mk (LLM_MASK_*, not DEFAULT) and scale: our small-head kernel,
 * GGML's flash attention or the explicit path, as b and the heads allow.
 * [hv * nh, n]. */
struct ggml_tensor *llm_attend(llm_build *b, int64_t il, struct ggml_tensor *q, struct ggml_tensor *k,
                               struct ggml_tensor *v, int mk, float scale);

/* x [a, n] pooled to one column [a, 1]: mean, the first or the last
 * position (the evaluation fills b->inp_pool, one per graph, by the
 * call's pooling). */
struct ggml_tensor *llm_pool(llm_build *b, struct ggml_tensor *x, fm_llm_pooling pooling);

/* Keep only the output rows (b->inp_out_ids) of x; identity when all. */
struct ggml_tensor *llm_select_outputs(llm_build *b, struct ggml_tensor *x);

/* The standard pre-norm decoder (llama, qwen2, qwen3, mistral, ...):
 * embd -> n_layer x [x + attn(norm(x)); x + ffn(norm(x))] -> norm. With
 * post_norms, branch outputs pass attn_post_norm/ffn_post_norm (gemma2/3).
 * Sets b->hidden. */
typedef struct llm_decoder_opts {
  int norm;          /* LLM_NORM_RMS or LLM_NORM_LAYER */
  int ffn;           /* LLM_FFN_* (ignored for MoE layers) */
  llm_moe_opts moe;  /* used on layers with ffn_gate_inp */
  llm_attn_opts attn;
} llm_decoder_opts;
fm_status llm_build_decoder(llm_build *b, const llm_decoder_opts *o, fm_err *err);

/* llm_build_decoder() as llama builds it: RMSNorm, SwiGLU feed-forward, and
 * on expert layers softmax routing with the top n_expert_used weights
 * renormalized to sum 1 and SwiGLU experts (llama, Mixtral, qwen2, qwen3,
 * qwen3moe). An llm_arch's build. */
fm_status llm_build_llama_decoder(llm_build *b, fm_err *err);

/* ---- architectures (llm_arch_*.c) ------------------------------------------ */

/* Binds the standard decoder layer tensors (attn_norm, attn_q/k/v/output
 * with optional biases and q/k norms, ffn_norm, dense or MoE FFN, post
 * norms when present) with shapes from m->hp. The dense FFN is gated
 * (ffn_up, ffn_gate and ffn_down all required) and output_norm.weight must
 * be present, so that a file lacking any tensor the graph uses is refused
 * at load (FM_EFORMAT naming it). */
fm_status llm_bind_decoder_layers(llm_model *m, fm_err *err);

/* llm_bind_decoder_layers(), then FM_EFORMAT (naming the layer, the tensor
 * and m->arch_name) unless every layer has what need (LLM_NEED_* flags)
 * asks; LLM_NEED_MOE also requires <arch>.expert_count and
 * expert_used_count >= 1 (checked before binding). */
enum {
  LLM_NEED_QKV_BIAS = 1u, /* attn_{q,k,v}.bias */
  LLM_NEED_QK_NORM = 2u,  /* attn_{q,k}_norm.weight */
  LLM_NEED_DENSE = 4u,    /* no ffn_gate_inp (experts) */
  LLM_NEED_MOE = 8u       /* ffn_gate_inp and the expert tensors */
};
fm_status llm_bind_decoder_layers_need(llm_model *m, unsigned need, fm_err *err);

const llm_arch *llm_arch_find(const char *name, size_t len);

/* ---- bound programs (llm_program.c) ------------------------------------------ */

/* Check and bind program p (fm_llm_program.h) into m: m->arch_data holds
 * it, m->hp the cache slots and sizes derived from its nodes. */
fm_status llm_program_load(llm_model *m, const fm_llm_program *p, fm_err *err);
/* The slots of a program's parameters that only products read (matmul
 * weights, experts), as llm_repack moves them (out may be NULL: count). */
int64_t llm_program_matrix_slots(llm_model *m, struct ggml_tensor ***out);
/* The architecture of every program model: its build lowers the nodes. */
extern const llm_arch llm_arch_program;

#endif
