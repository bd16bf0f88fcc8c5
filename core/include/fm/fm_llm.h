/* fm_llm.h: the model runtime. A model is an architecture program
 * (fm_llm_program.h: Rllm's programs, bound to a GGUF file) run as GGML
 * graphs over weights that stay, quantized, inside the file's read-only
 * mapping.
 *
 * Pieces:
 *   fm_llm_model  a bound program (fm_llm_model_new_program) and one GGML
 *                 tensor per weight whose data pointer lies in the file's
 *                 mapping (zero-copy; GGML never writes weights), or, for a
 *                 model on a device (Vulkan), one copy of them
 *                 in the device's memory. Also owns the backend (CPU or the
 *                 device's), the graph allocator and the thread count.
 *   fm_llm_cache  the KV cache of one sequence: per attention layer a K
 *                 buffer (n_embd_k_gqa x n_ctx, position-major) and a V buffer
 *                 stored transposed (n_ctx x n_embd_v_gqa), F16 by default as
 *                 llama.cpp's default cache type, plus recurrent state for
 *                 programs that keep some (convolutions). Memory is the heap
 *                 or a caller's buffer (an Rfmalloc runtime allocation).
 *   fm_llm_eval   evaluates a batch of tokens at positions
 *                 n_past .. n_past + n - 1 and returns logits as float.
 *   sampling      greedy (ties to the lowest token id) or temperature,
 *                 top-k and top-p with the core's xoshiro256** (docs/rng.md).
 *
 * Shapes: logits are column-major (n_vocab, n_out): column j holds the
 * logits of output token j; embeddings are (n_embd_out).
 * Token ids are 0-based, exactly as llama.cpp numbers them.
 *
 * Numerics (see core/tests/llm/llm/ and packages/Rllm/tests/testthat/
 * test-model.R): on CPU the logits of a batch do not depend on whether the
 * cache was fresh, cleared or absent, nor on the thread count (bit-identical
 * for the same batch); caches are attended in blocks of 32 cells, masked
 * past the sequence, so evaluating a prefix whole or one token at a time
 * differs only through GEMM vs GEMV kernels: max abs difference 0 measured
 * on stories260K F32 and Q8_0 (tests allow 1e-4). Against llama.cpp
 * (node-llama-cpp 3.21.1, F16 cache, no flash attention) the log-softmax
 * differs by at most 8e-5 (F32), 6.7e-3 (F16) and 2e-6 (Q8_0, Q4_0,
 * Q4_K_M) on stories260K, with the same greedy tokens.
 *
 * Errors: a program or file that does not fit is refused at load
 * (fm_llm_model_new_program) naming the node or tensor, so GGML's own
 * asserts never fire.
 *
 * Thread safety: a model and its caches are used by one thread at a time
 * (evaluation itself runs on n_threads GGML worker threads).
 *
 * Adding an architecture: write its program in R (Rllm, docs/programs.md);
 * the runtime needs no change unless it needs an operator the vocabulary
 * lacks (one shape rule and one lowering in core/src/llm/llm_program.c). */
#ifndef FM_LLM_H
#define FM_LLM_H

#include "fm_base.h"
#include "fm_gguf.h"

typedef struct fm_llm_model fm_llm_model;
typedef struct fm_llm_cache fm_llm_cache;

/* Pooling of token states into one embedding (llama.cpp's numbering, which
 * is also that of the <arch>.pooling_type metadata key). */
typedef enum fm_llm_pooling {
  FM_LLM_POOL_UNSPECIFIED = -1, /* use the model's <arch>.pooling_type, else MEAN */
  FM_LLM_POOL_NONE = 0,         /* not an embedding: refused by fm_llm_embed */
  FM_LLM_POOL_MEAN = 1,
  FM_LLM_POOL_CLS = 2, /* the first token's state */
  FM_LLM_POOL_LAST = 3 /* the last token's state */
} fm_llm_pooling;

/* Element type of KV cache entries (values are ggml type ids). */
typedef enum fm_llm_kv_type { FM_LLM_KV_F32 = 0, FM_LLM_KV_F16 = 1 } fm_llm_kv_type;

/* Which logits fm_llm_eval returns. */
typedef enum fm_llm_out {
  FM_LLM_OUT_NONE = 0, /* only fill the cache */
  FM_LLM_OUT_LAST = 1, /* the last token's logits: n_vocab floats */
  FM_LLM_OUT_ALL = 2   /* every token's: n_vocab x n_tokens floats */
} fm_llm_out;

/* Hyperparameters as read from the metadata (borrowed from the model). */
typedef struct fm_llm_info {
  const char *arch; /* general.architecture, NUL-terminated */
  const char *name; /* general.name or "" */
  int64_t n_vocab;  /* rows of token_embd */
  int64_t n_embd;
  int64_t n_embd_out; /* length of an embedding from fm_llm_embed */
  int64_t n_layer;
  int64_t n_head;        /* of the first attention layer */
  int64_t n_head_kv;     /* of the first attention layer */
  int64_t n_embd_head_k; /* key/query head size */
  int64_t n_embd_head_v;
  int64_t n_ff;  /* of the first layer (0 when absent) */
  int64_t n_rot; /* rotary dimensions */
  int64_t n_ctx_train;
  int64_t n_expert, n_expert_used; /* 0 when not a mixture of experts */
  double rope_freq_base;
  double norm_eps; /* RMS (or layer) norm epsilon */
  int rope_neox;   /* 1: NEOX rotation (pairs i, i + n_rot/2); 0: adjacent pairs */
  int causal;      /* <arch>.attention.causal (default 1) */
  int pooling;     /* fm_llm_pooling from <arch>.pooling_type, -1 when absent */
  int tied_output; /* 1 when output.weight is absent and token_embd is reused */
  int64_t n_params;      /* elements of all bound weights */
  uint64_t n_weight_bytes; /* bytes of all bound weights (in the mapping) */
} fm_llm_info;

/* Models are made by fm_llm_model_new_program (fm_llm_program.h). */
void fm_llm_model_free(fm_llm_model *m); /* NULL is allowed */

/* Where a model's weights live and its graphs run. */
typedef enum fm_llm_device {
  FM_LLM_DEVICE_CPU = 0,   /* weights on the file's mapping, GGML's CPU backend */
  FM_LLM_DEVICE_VULKAN = 1 /* GGML's Vulkan backend (device `index` of its registry) */
} fm_llm_device;

/* The GGML device of m's graphs ("CPU", "Vulkan0", ...). Never NULL. */
const char *fm_llm_model_device(const fm_llm_model *m);

const fm_llm_info *fm_llm_model_info(const fm_llm_model *m); /* borrowed */

/* The model's own thread count for the next evaluations, 0 for each call's
 * (as at creation). FM_EARG if < 0. */
FM_NODISCARD fm_status fm_llm_model_set_threads(fm_llm_model *m, int n_threads, fm_err *err);
int fm_llm_model_threads(const fm_llm_model *m); /* the value set: 0 means each call's */

/* Attention of batches of at least 64 tokens (a prompt's prefill, an
 * embedding): on (1, the default) through GGML's flash attention, which
 * never stores the n_kv x n_tokens scores of a head, or off (0) through
 * explicit scores and softmax, the path decode steps always take (as
 * llama.cpp without flash attention). The two agree to rounding: both
 * compute the same scores (queries rounded to F16 with an F16 cache); the
 * explicit path then rounds the softmax probabilities to F16 for the
 * product with V (an F16 cache), flash attention keeps them F32, and the
 * order of F32 sums differs. FM_EARG for other values. */
FM_NODISCARD fm_status fm_llm_model_set_flash_attn(fm_llm_model *m, int on, fm_err *err);
int fm_llm_model_flash_attn(const fm_llm_model *m);

/* Products of weight matrices kept on the mapping with batches of tokens
 * (prefill, embeddings): on (1, the default) through the project's tiled
 * kernels (core/src/llm/llm_gemm.h; AVX2 or portable C, chosen at run time
 * by fm_cpu_isa), off (0) through GGML's product. F16 and F32 (batches of
 * 2 or more) and Q8_0 matrices (16 or more) have kernels of their own: they code the
 * activations as GGML does (Q8_0 quantization, F16 rounding, or none) and
 * compute every block's integer dot product exactly, so they differ from
 * GGML's only in the order of F32 sums. Every other quantized type
 * (batches of 32 or more) is decoded by GGML's own to_float in panels of
 * rows and multiplied in F32 with the unrounded activations, where GGML
 * rounds them to 8 bits: more accurate, and different by that rounding.
 * Single-token steps (decode) use GGML's product either way, so a batch
 * and the same tokens one at a time agree to rounding, not bit for bit.
 * The same switch governs flash attention for heads of at most 32
 * elements (core/src/llm/llm_attn.h: vectorized along the keys, where
 * GGML's kernel vectorizes along the head), which agrees with GGML's to
 * the order of F32 sums and its exponential's rounding.
 * FM_EARG for other values. */
FM_NODISCARD fm_status fm_llm_model_set_fused_gemm(fm_llm_model *m, int on, fm_err *err);
/* The setting in effect: always 0 for a model on a device (the kernels are
 * CPU code; its products are GGML's there). */
int fm_llm_model_fused_gemm(const fm_llm_model *m);

/* Move the layer matrices (Q/K/V/output projections, feed-forward and
 * expert matrices) and the output matrix that GGML multiplies with
 * interleaved kernels of its own (its CPU "repack" buffer; on x86 with
 * AVX2: Q4_0, Q4_K and IQ4_NL matrices whose row count is a multiple of 8)
 * into memory GGML owns, in that layout, as llama.cpp does by default. A
 * tied output is copied (the embedding stays mapped for its row lookups).
 * Faster products for those types (prefill of a Q4_0 model 1.7-2x here),
 * at the cost of a heap copy of them: the mapping's pages are read once,
 * then no longer used. Every other weight stays zero-copy on the mapping.
 * Once per model: later calls are no-ops (after an error too: every weight
 * is then either repacked or mapped, and the model usable). A no-op where
 * the linked GGML repacks nothing (built without GGML_USE_CPU_REPACK, or
 * without kernels for this CPU: fm_llm_ggml_has_repack). Results agree
 * with the unpacked products to rounding (the same quantization of
 * activations; another accumulation order).
 * Errors: FM_EARG (NULL), FM_ENOMEM, FM_EINTERNAL when GGML refuses. */
FM_NODISCARD fm_status fm_llm_model_repack(fm_llm_model *m, fm_err *err);
size_t fm_llm_model_repacked_bytes(const fm_llm_model *m); /* 0 when nothing was */
/* 1 when the linked GGML repacks Q4_0 matrices (a repack buffer with
 * kernels for its build's instruction set). */
int fm_llm_ggml_has_repack(void);

/* GGML worker threads of an evaluation of m with control block ctl: 1 when
 * ctl->forked (GNU OpenMP's pool, behind GGML, does not survive fork()),
 * else the model's own count when set (at most FM_THREADS_MAX), else
 * fm_threads(ctl). An upper bound: a batch of under ~4 MFLOP (2 x
 * parameters x tokens; the decode step of a tiny model) runs on one thread,
 * where synchronizing threads per operator would cost more than it saves. Results do not depend on the
 * thread count. */
int fm_llm_threads_for(const fm_llm_model *m, const fm_ctl *ctl);

/* Bytes of cache memory for n_ctx positions of type kv (including 64 bytes
 * of slack for aligning a caller's buffer); 0 if n_ctx < 1 or on overflow. */
size_t fm_llm_cache_bytes(const fm_llm_model *m, int64_t n_ctx, fm_llm_kv_type kv);

/* A KV cache of n_ctx positions for model m.
 * mem: NULL to allocate (and own) heap memory, or a caller's buffer of
 *      n_bytes >= fm_llm_cache_bytes(m, n_ctx, kv) (borrowed: must outlive
 *      the cache; it is zeroed here). For a model on a device
 *      (a device model), mem must be NULL: the cache is allocated,
 *      zeroed, in the device's memory.
 * Owns:   the result (fm_llm_cache_free); borrows m (must outlive it).
 * Errors: FM_EARG (n_ctx < 1, a buffer too small, unknown kv, a caller's
 *         buffer for a model on a device), FM_ENOMEM. */
FM_NODISCARD fm_status fm_llm_cache_new(const fm_llm_model *m, int64_t n_ctx, fm_llm_kv_type kv,
                                        void *mem, size_t n_bytes, fm_llm_cache **out,
                                        fm_err *err);
void fm_llm_cache_free(fm_llm_cache *c); /* NULL is allowed */
/* A caller's buffer moved (a runtime's mapping was remapped, contents
 * kept): point the cache at mem (n_bytes). No-op when mem is where it was.
 * Errors: FM_EARG for a heap or device cache, a buffer too small, or one whose
 * alignment relative to 64 bytes changed (the contents would be shifted). */
FM_NODISCARD fm_status fm_llm_cache_rebase(fm_llm_cache *c, void *mem, size_t n_bytes,
                                           fm_err *err);
/* Forget every position (n_past = 0; recurrent state zeroed). */
void fm_llm_cache_clear(fm_llm_cache *c);
int64_t fm_llm_cache_n_past(const fm_llm_cache *c);
int64_t fm_llm_cache_n_ctx(const fm_llm_cache *c);
fm_llm_kv_type fm_llm_cache_type(const fm_llm_cache *c);

/* Evaluate tokens[0..n_tokens) at positions n_past .. n_past + n_tokens - 1
 * of cache c (then n_past += n_tokens), or, with c == NULL, from position 0
 * in a transient F16 heap cache of n_tokens positions. A batch goes through
 * the model in micro-batches of at most FM_LLM_UBATCH tokens (each attends
 * to the cells before it, as llama.cpp's n_ubatch): the activations are
 * bounded by that size; what grows with the context (n_kv cells) is the
 * attention's inputs, of FM_LLM_UBATCH x n_kv per micro-batch. ctl's cancel is
 * polled before starting and, on the calling thread, between every 64th
 * operator (a count, not a clock: where a run stops is reproducible).
 * Shape:  logits (written unless out == FM_LLM_OUT_NONE; may then be NULL)
 *         is n_vocab x 1 for LAST, n_vocab x n_tokens for ALL, col-major.
 * Errors: FM_EARG (n_tokens < 1, a token id outside [0, n_vocab), NULL
 *         logits); FM_ENOSPC when n_past + n_tokens > n_ctx (the cache is
 *         unchanged); FM_EMISMATCH when c belongs to another model;
 *         FM_ECANCELLED when ctl asked to stop (the cache's n_past is then
 *         unchanged, its contents past n_past undefined); FM_ENOMEM;
 *         FM_EINTERNAL when GGML fails. */
FM_NODISCARD fm_status fm_llm_eval(fm_llm_model *m, fm_llm_cache *c, const int32_t *tokens,
                                   int64_t n_tokens, fm_llm_out out, float *logits,
                                   const fm_ctl *ctl, fm_err *err);

/* 256: small enough that a causal batch wastes little attention on masked
 * cells (2,000-token prefill of stories260K, 1 thread: 0.72 s with 512,
 * 0.63 s with 256, 0.60 s with 128), large enough that weight matrices are
 * streamed once per 256 tokens. */
#define FM_LLM_UBATCH 256

/* Pooled embedding of tokens[0..n_tokens): the hidden states after the
 * final norm (and any projection the architecture adds), evaluated in one
 * batch from position 0 with the model's own attention (causal or not per
 * <arch>.attention.causal) in a transient F32 cache, then pooled.
 * Shape:  out is n_embd_out floats (fm_llm_info). No normalization.
 * Errors: FM_EARG (n_tokens < 1, a bad token id, pooling NONE or unknown),
 *         FM_ENOMEM, FM_ECANCELLED, FM_EINTERNAL. */
FM_NODISCARD fm_status fm_llm_embed(fm_llm_model *m, const int32_t *tokens, int64_t n_tokens,
                                    fm_llm_pooling pooling, float *out, const fm_ctl *ctl,
                                    fm_err *err);

/* Index of the largest of x[0..n) (NaN never wins); the lowest index among
 * equal maxima. -1 when n < 1 or every value is NaN. */
int64_t fm_llm_argmax(const float *x, int64_t n);

/* Sampling parameters. temperature <= 0 means greedy (fm_llm_argmax).
 * Otherwise, in this order: logits / temperature; keep the top_k largest
 * (top_k <= 0 or >= n: all; ties at the boundary broken by lower id); the
 * smallest prefix of those, by descending probability (softmax of the
 * scaled logits), whose mass reaches top_p (top_p >= 1: all; at least one
 * token); renormalize and draw one token with a uniform from the core's
 * xoshiro256** stream seeded with `seed` (docs/rng.md). */
typedef struct fm_llm_sampling {
  double temperature;
  int64_t top_k;
  double top_p;
  uint64_t seed;
} fm_llm_sampling;

typedef struct fm_llm_sampler fm_llm_sampler;

/* Owns: the result (fm_llm_sampler_free). Errors: FM_EARG (NaN
 * temperature, top_p outside (0, 1] or NaN, n_vocab < 1), FM_ENOMEM. */
FM_NODISCARD fm_status fm_llm_sampler_new(const fm_llm_sampling *s, int64_t n_vocab,
                                          fm_llm_sampler **out, fm_err *err);
void fm_llm_sampler_free(fm_llm_sampler *s); /* NULL is allowed */
/* Next token from logits[0..n_vocab) (not modified); -1 when every logit
 * is NaN or -Inf. Advances the sampler's generator (not when greedy). */
int64_t fm_llm_sampler_next(fm_llm_sampler *s, const float *logits);

/* Timings of fm_llm_generate, in seconds of wall-clock time. */
typedef struct fm_llm_timings {
  double prefill_s; /* evaluating the prompt (and sampling the first token) */
  double decode_s;  /* evaluating the generated tokens after the first */
  int64_t n_prefill;
  int64_t n_decode; /* tokens evaluated in decode (n_out - 1, or 0) */
  int n_threads;    /* fm_llm_threads_for(m, ctl): the evaluations' bound */
} fm_llm_timings;

/* Generate up to n_new tokens after prompt[0..n_prompt) in cache c (whose
 * n_past may be > 0: the prompt then continues what it holds).
 * Each generated token is sampled from the previous logits with s, then
 * evaluated (one at a time), except the last one which is not evaluated.
 * Generation stops early after emitting a token listed in stop[0..n_stop).
 * Shape:  tokens_out holds n_new ids; *n_out gets the count written.
 * Errors: those of fm_llm_eval (FM_ENOSPC when the cache is too short for
 *         n_prompt + n_new - 1 more positions, checked before starting);
 *         FM_EARG (n_prompt < 1, n_new < 0). On FM_ECANCELLED the tokens
 *         generated so far are in tokens_out and *n_out. */
FM_NODISCARD fm_status fm_llm_generate(fm_llm_model *m, fm_llm_cache *c, const int32_t *prompt,
                                       int64_t n_prompt, int64_t n_new, fm_llm_sampler *s,
                                       const int32_t *stop, int64_t n_stop, int32_t *tokens_out,
                                       int64_t *n_out, fm_llm_timings *t, const fm_ctl *ctl,
                                       fm_err *err);

#endif
