/* llm_impl.h (private): the model runtime's internals, shared by
 * llm_model.c (the model), llm_program.c (a bound program: checks, the
 * runtime facts derived from it, its lowering), llm_cache.c, llm_graph.c
 * (lowerings that need the runtime's state, and evaluation), llm_gemm.c,
 * llm_attn.c, llm_repack.c and llm_sample.c.
 *
 * A model is a bound architecture program (fm_llm_program.h): the runtime
 * knows operators, never model families. Cache slots with n_head_kv[il] >
 * 0 get a K and a V buffer; llm_program_state_elems() gives the F32
 * elements of a slot's recurrent state (a convolution's last inputs),
 * which the graph sees as b->cache->s[il] (zeroed on clear).
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

/* The runtime's facts about a model, derived from its program's nodes
 * (llm_program.c); per-slot arrays have n_layer entries (the cache slots).
 * The rest is reported (fm_llm_info). */
typedef struct llm_hparams {
  int64_t n_vocab, n_embd, n_layer, n_ctx_train;
  int64_t n_embd_head_k, n_embd_head_v, n_rot;
  int64_t *n_head, *n_head_kv, *n_ff; /* per slot */
  int64_t n_expert, n_expert_used, n_ff_exp;
  double norm_rms_eps;
  float rope_freq_base;
  int rope_neox;
  int causal;
  int pooling;
  int64_t n_swa;             /* sliding window (0: none) */
  unsigned char *swa_layer;  /* per slot: 1 if its attention uses the window */
} llm_hparams;

typedef struct fm_llm_model llm_model;
typedef struct llm_build llm_build;
typedef struct llm_program llm_program;

struct fm_llm_model {
  const fm_gguf *g;        /* borrowed */
  llm_program *prog;       /* the bound program (llm_program.c), owned */
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
  struct ggml_tensor *tok_embd;   /* the first embedding's rows, or NULL (info) */
  struct ggml_tensor *output;     /* the logits product's matrix, or NULL (info: tied) */
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
/* Distinct token ids a program compares the tokens with (NE_ID, token
 * dropout): each a host input of the graph. */
#define LLM_MAX_ID_MASKS 8

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
  struct ggml_tensor *inp_seq;        /* F32 [channels, n_tokens] (fm_llm_run), or NULL */
  struct ggml_tensor *inp_pos;        /* I32 [n_tokens] (created on demand) */
  struct ggml_tensor *inp_out_ids;    /* I32 [n_outputs] or NULL (all tokens) */
  struct ggml_tensor *mask[LLM_MASK_COUNT]; /* F32 [n_kv, n_tokens] */
  struct ggml_tensor *mask16[LLM_MASK_COUNT]; /* F16 copies for flash attention */
  struct ggml_tensor *inp_pool;       /* F32 [n_tokens, 1] mean weights, or I32 row */
  struct ggml_tensor *inp_k_idx;      /* I64 [n_tokens]: cache rows of the new keys */
  struct ggml_tensor *inp_v_idx[8];   /* I64 [ev * n_tokens]: cells of the new values */
  int64_t v_idx_ev[8];                /* the ev of each inp_v_idx */
  struct ggml_tensor *hidden;         /* set by build: the final states [n_embd, n], pooled by an
                                         embedding of a program without an embedding output */
  struct ggml_tensor *logits;         /* set by build: [n_vocab, n_outputs] */
  struct ggml_tensor *embedding;      /* set by build: the program's pooled embedding, or NULL */
  struct ggml_tensor *result;         /* the graph output (logits or embedding) */
  int64_t n_want;                     /* fm_llm_run: its wanted outputs (0: none) */
  const int64_t *want;                /* their indices in the program's outputs */
  struct ggml_tensor **results;       /* set by build: their values */
  struct ggml_tensor *inp_mask;       /* F32 [1, n_tokens]: the program's mask input (created on demand) */
  struct ggml_tensor *inp_ne_id[LLM_MAX_ID_MASKS]; /* F32 [1, n_tokens]: 1 where the token is not ne_id[k] */
  int32_t ne_id[LLM_MAX_ID_MASKS];
  int n_ne_id;
};

/* ---- weights (llm_model.c) ------------------------------------------------ */

/* Bind the file's tensor number idx (0-based; FM_EARG out of range) as a
 * GGML tensor on the mapping (or, on a device, to be uploaded), once per
 * tensor: its type checked for kind (LLM_T_MATMUL: a type with a GGML CPU
 * dot product; LLM_T_F32; LLM_T_ROWS: rows GGML can dequantize; LLM_T_ANY)
 * and its extents against want[0..4) (-1: any) unless want is NULL.
 * Errors: FM_EFORMAT naming the tensor; FM_EUNSUPPORTED for a type this
 * GGML does not know. */
enum { LLM_T_ANY = 0, LLM_T_MATMUL = 1, LLM_T_F32 = 2, LLM_T_ROWS = 3 };
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

/* ---- direct convolution (llm_conv.c) -------------------------------------- */

/* conv1d (fm_llm_program.h) of x [I, T] (contiguous) with w [k, I, O] F32,
 * bias [O] F32 or NULL, dilation d, by the kernels of llm_conv.h, at
 * output positions o0 .. o0 + n - 1 only: [O, n]; NULL where they do not
 * apply (fused kernels off, a device, O not a multiple of the lanes, no
 * AVX2), for the im2col path. */
struct ggml_tensor *llm_conv1d_direct(llm_build *b, struct ggml_tensor *x, struct ggml_tensor *w,
                                      struct ggml_tensor *bias, int d, int64_t o0, int64_t n);

/* ---- lowerings (llm_graph.c) --------------------------------------------- */

/* Positions n_past.. as an I32 input [n_tokens]. */
struct ggml_tensor *llm_build_inp_pos(llm_build *b);
/* Index inputs of the cache writes (filled per evaluation). */
struct ggml_tensor *llm_build_k_idx(llm_build *b);
struct ggml_tensor *llm_build_v_idx(llm_build *b, int64_t ev);
/* The mask input of a kind (LLM_MASK_*): F32, or F16 (f16 = 1) as
 * flash attention takes it. */
struct ggml_tensor *llm_build_mask(llm_build *b, int kind, int f16);

enum { LLM_FFN_SWIGLU = 0, LLM_FFN_GEGLU = 1 };
typedef struct llm_moe_opts {
  int gating_sigmoid; /* 0: softmax over experts (then top-k); 1: sigmoid */
  int norm_weights;   /* renormalize the selected weights to sum 1 */
  float weights_scale; /* 0: none */
  int act;             /* LLM_FFN_SWIGLU or LLM_FFN_GEGLU */
} llm_moe_opts;
/* A mixture of experts per position (ggml_mul_mat_id): router [E,
 * n_expert] (softmax, or sigmoid), the selection bias probs_b (or NULL),
 * the stacked gate/up [E, ff, n_expert] and down [ff, E, n_expert]
 * matrices, the nu most probable experts per token (their weights
 * renormalized when o->norm_weights). [E, n]. */
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

/* ---- bound programs (llm_program.c) ------------------------------------------ */

/* Check and bind program p (fm_llm_program.h) into m: m->prog holds it,
 * m->hp the cache slots and sizes derived from its nodes. */
fm_status llm_program_load(llm_model *m, const fm_llm_program *p, fm_err *err);
/* The graph of b (b->logits, or b->embedding / b->hidden for an
 * embedding evaluation, or b->results for b->want): the program's nodes
 * lowered. */
fm_status llm_program_build(llm_build *b, fm_err *err);
/* The channels of the program's sequence input (0: none). */
int64_t llm_program_seq_channels(const llm_model *m);
int llm_program_has_mask(const llm_model *m); /* a mask input (FM_LLM_IN_MASK) */
/* An encoder without cache slots (attention maps, ESM-2): its layers,
 * heads and head size in *in, from its attention_probs nodes. */
void llm_program_encoder_info(const llm_model *m, fm_llm_info *in);
/* F32 elements of cache slot il's recurrent state (0: none). */
int64_t llm_program_state_elems(const llm_model *m, int64_t il);
/* The slots of a program's parameters that only products read (matmul
 * weights, experts), as llm_repack moves them (out may be NULL: count). */
int64_t llm_program_matrix_slots(llm_model *m, struct ggml_tensor ***out);

#endif
