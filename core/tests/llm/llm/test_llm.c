/* test_llm.c: the model runtime (fm_llm.h) on the real stories260K model
 * (../shared/fixtures/gguf; cases that need it say so and pass when it is
 * absent) and on a random-weight lfm2 written here, each through its
 * decoder program (../llm_test_program.h, the nodes of Rllm's programs).
 * Invariants: logits finite and shaped; a cached evaluation from a cleared
 * cache equals an uncached one bit for bit; whole-prefix versus
 * token-by-token logits within 1e-4 absolute (measured: about 1e-6);
 * greedy tie-break to the lowest id; seeded sampling deterministic. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fm/fm_cpu.h"
#include "fm/fm_gguf.h"
#include "fm/fm_gguf_write.h"
#include "fm/fm_llm.h"
#include "fm/fm_llm_ggml.h"
#include "fm_test.h"
#include "fm_test_files.h"
#include "../llm_test_program.h"

static char model_path[1024];

/* A model of g through its decoder program (../llm_test_program.h) on a
 * device (FM_LLM_DEVICE_CPU: the CPU). */
static fm_status new_model_on(const fm_gguf *g, int threads, fm_llm_device dev, int index, fm_llm_model **m,
                              fm_err *err) {
  fm_llm_program p;
  fm_llm_node *nodes = NULL;
  *m = NULL;
  if (!llm_test_decoder(g, &p, &nodes)) return fm_err_set(err, FM_EFORMAT, "not a decoder these tests build");
  const fm_status st = fm_llm_model_new_program(g, &p, threads, dev, index, m, err);
  free(nodes);
  return st;
}

static fm_status new_model(const fm_gguf *g, int threads, fm_llm_model **m, fm_err *err) {
  return new_model_on(g, threads, FM_LLM_DEVICE_CPU, 0, m, err);
}

static fm_gguf *g_story;
static fm_llm_model *m_story;

static int open_story(void) {
  if (m_story) return 1;
  if (!fm_test_fixture(model_path, sizeof model_path, "gguf/stories260K.gguf", NULL)) {
    fprintf(stderr, "stories260K.gguf not found (RFMALLOC_FIXTURES): model cases skipped\n");
    return 0;
  }
  fm_err err;
  CHECK_OK(fm_gguf_open(model_path, &g_story, &err), &err);
  if (!g_story) return 0;
  CHECK_OK(new_model(g_story, 2, &m_story, &err), &err);
  return m_story != NULL;
}

static const int32_t prompt[] = {1, 403, 407, 261, 378, 423, 406}; /* <s> and 6 story tokens */
#define N_PROMPT 7

static void test_info(void) {
  if (!open_story()) return;
  const fm_llm_info *in = fm_llm_model_info(m_story);
  CHECK(strcmp(in->arch, "llama") == 0);
  CHECK(in->n_vocab == 512);
  CHECK(in->n_embd == 64);
  CHECK(in->n_layer == 5);
  CHECK(in->n_head == 8);
  CHECK(in->n_head_kv == 4);
  CHECK(in->n_ff == 172);
  CHECK(in->n_rot == 8);
  CHECK(in->n_ctx_train == 2048);
  CHECK(in->rope_neox == 0);
  CHECK(in->causal == 1);
  CHECK(in->n_params == 292800);
}

static void test_logits_and_cache(void) {
  if (!open_story()) return;
  fm_err err;
  int64_t V = 512;
  float *a = malloc(sizeof(float) * V * N_PROMPT), *b = malloc(sizeof(float) * V * N_PROMPT);
  float *t = malloc(sizeof(float) * V * N_PROMPT);
  /* Uncached (transient cache). */
  CHECK_OK(fm_llm_eval(m_story, NULL, prompt, N_PROMPT, FM_LLM_OUT_ALL, a, NULL, &err), &err);
  for (int64_t i = 0; i < V * N_PROMPT; i++) CHECK(isfinite(a[i]));
  /* Cached, twice with a clear between: bit-identical to uncached. */
  fm_llm_cache *c = NULL;
  CHECK_OK(fm_llm_cache_new(m_story, 64, FM_LLM_KV_F16, NULL, 0, &c, &err), &err);
  if (!c) return;
  for (int rep = 0; rep < 2; rep++) {
    fm_llm_cache_clear(c);
    CHECK_OK(fm_llm_eval(m_story, c, prompt, N_PROMPT, FM_LLM_OUT_ALL, b, NULL, &err), &err);
    CHECK(memcmp(a, b, sizeof(float) * V * N_PROMPT) == 0);
    CHECK(fm_llm_cache_n_past(c) == N_PROMPT);
  }
  /* Token by token: within tolerance of the whole-prefix logits, with
   * GGML's products for both (the batch's fused kernels sum in another
   * order, and a key rounded to the F16 cache may then flip one step:
   * test_fused_gemm bounds that with an F32 cache). */
  CHECK_OK(fm_llm_model_set_fused_gemm(m_story, 0, &err), &err);
  CHECK_OK(fm_llm_eval(m_story, NULL, prompt, N_PROMPT, FM_LLM_OUT_ALL, a, NULL, &err), &err);
  fm_llm_cache_clear(c);
  double maxd = 0;
  for (int i = 0; i < N_PROMPT; i++) {
    CHECK_OK(fm_llm_eval(m_story, c, prompt + i, 1, FM_LLM_OUT_LAST, t + V * i, NULL, &err), &err);
  }
  for (int64_t i = 0; i < V * N_PROMPT; i++) maxd = fmax(maxd, fabs((double)t[i] - a[i]));
  fprintf(stderr, "whole vs token-by-token: max abs diff %.3g\n", maxd);
  CHECK(maxd < 1e-4);
  /* LAST equals the last column of ALL for the same batch. */
  fm_llm_cache_clear(c);
  CHECK_OK(fm_llm_eval(m_story, c, prompt, N_PROMPT, FM_LLM_OUT_LAST, b, NULL, &err), &err);
  maxd = 0;
  for (int64_t i = 0; i < V; i++) maxd = fmax(maxd, fabs((double)b[i] - a[V * (N_PROMPT - 1) + i]));
  CHECK(maxd < 1e-4);
  /* Errors: full cache, bad token. */
  fm_llm_cache *small = NULL;
  CHECK_OK(fm_llm_cache_new(m_story, 4, FM_LLM_KV_F16, NULL, 0, &small, &err), &err);
  CHECK(fm_llm_eval(m_story, small, prompt, N_PROMPT, FM_LLM_OUT_LAST, b, NULL, &err) == FM_ENOSPC);
  CHECK(fm_llm_cache_n_past(small) == 0);
  int32_t bad[2] = {1, 512};
  CHECK(fm_llm_eval(m_story, c, bad, 2, FM_LLM_OUT_LAST, b, NULL, &err) == FM_EARG);
  fm_llm_cache_free(small);
  /* A caller's buffer (as an Rfmalloc runtime gives) behaves as the heap. */
  size_t nb = fm_llm_cache_bytes(m_story, 64, FM_LLM_KV_F16);
  CHECK(nb > 0);
  char *mem = malloc(nb + 3);
  fm_llm_cache *cm = NULL;
  CHECK(fm_llm_cache_new(m_story, 64, FM_LLM_KV_F16, mem + 3, nb - 1, &cm, &err) == FM_EARG);
  CHECK_OK(fm_llm_cache_new(m_story, 64, FM_LLM_KV_F16, mem + 3, nb, &cm, &err), &err);
  CHECK_OK(fm_llm_eval(m_story, cm, prompt, N_PROMPT, FM_LLM_OUT_ALL, b, NULL, &err), &err);
  CHECK(memcmp(a, b, sizeof(float) * V * N_PROMPT) == 0);
  fm_llm_cache_free(cm);
  free(mem);
  CHECK_OK(fm_llm_model_set_fused_gemm(m_story, 1, &err), &err);
  fm_llm_cache_free(c);
  free(a);
  free(b);
  free(t);
}

static int cancel_after_calls;
static int cancel_calls;
static int cancel_cb(void *ud) {
  (void)ud;
  cancel_calls++;
  return --cancel_after_calls < 0;
}

static void test_cancel(void) {
  if (!open_story()) return;
  fm_err err;
  fm_llm_cache *c = NULL;
  CHECK_OK(fm_llm_cache_new(m_story, 64, FM_LLM_KV_F16, NULL, 0, &c, &err), &err);
  float lg[512];
  fm_ctl ctl = {.cancel = cancel_cb};
  cancel_after_calls = 0; /* the poll before starting stops it */
  CHECK(fm_llm_eval(m_story, c, prompt, N_PROMPT, FM_LLM_OUT_LAST, lg, &ctl, &err) == FM_ECANCELLED);
  CHECK(fm_llm_cache_n_past(c) == 0);
  /* Generation stops between tokens, keeping what it made: count the polls
   * of the whole run (polling is by operator count, so the count repeats),
   * then stop halfway through them. */
  fm_llm_sampling greedy = {0, 40, 0.95, 1};
  fm_llm_sampler *s = NULL;
  CHECK_OK(fm_llm_sampler_new(&greedy, 512, &s, &err), &err);
  int32_t out[16];
  int64_t n = -1;
  cancel_after_calls = 1 << 30;
  cancel_calls = 0;
  CHECK_OK(fm_llm_generate(m_story, c, prompt, N_PROMPT, 16, s, NULL, 0, out, &n, NULL, &ctl, &err),
           &err);
  CHECK(n == 16 && cancel_calls >= 16);
  fm_llm_cache_clear(c);
  cancel_after_calls = cancel_calls / 2;
  n = -1;
  CHECK(fm_llm_generate(m_story, c, prompt, N_PROMPT, 16, s, NULL, 0, out, &n, NULL, &ctl, &err) ==
        FM_ECANCELLED);
  CHECK(n >= 1 && n < 16);
  fm_llm_sampler_free(s);
  fm_llm_cache_free(c);

  /* A prompt of two micro-batches (256 + 44 tokens) cancelled in the
   * second: the polls of the first alone are counted on a 256-token
   * prompt, then the stop comes at the next poll. The cache keeps the n_past
   * it had (the first micro-batch's cells are forgotten), and evaluating
   * the prompt again gives the logits of a fresh cache. */
  enum { N = 300 };
  int32_t ids[N];
  float a[512], b[512];
  ids[0] = 1;
  for (int i = 1; i < N; i++) ids[i] = 3 + (i * 7919) % 509;
  CHECK_OK(fm_llm_cache_new(m_story, N, FM_LLM_KV_F32, NULL, 0, &c, &err), &err);
  cancel_after_calls = 1 << 30;
  cancel_calls = 0;
  CHECK_OK(fm_llm_eval(m_story, c, ids, FM_LLM_UBATCH, FM_LLM_OUT_LAST, a, &ctl, &err), &err);
  int first = cancel_calls;
  fm_llm_cache_clear(c);
  CHECK_OK(fm_llm_eval(m_story, c, ids, N, FM_LLM_OUT_LAST, a, NULL, &err), &err);
  fm_llm_cache_clear(c);
  cancel_after_calls = first; /* the first poll of the second micro-batch stops it */
  CHECK(fm_llm_eval(m_story, c, ids, N, FM_LLM_OUT_LAST, b, &ctl, &err) == FM_ECANCELLED);
  CHECK(fm_llm_cache_n_past(c) == 0);
  CHECK_OK(fm_llm_eval(m_story, c, ids, N, FM_LLM_OUT_LAST, b, NULL, &err), &err);
  CHECK(memcmp(a, b, sizeof a) == 0);
  fm_llm_cache_free(c);
}

/* The tensors of a model being written: names, values and descriptions. */
typedef struct w_tensors {
  fm_gguf_wtensor t[64];
  char name[64][64];
  double *v[64];
  int n;
  uint64_t rs;
} w_tensors;

/* Adds an F32 tensor (GGML type 0) named by fmt: a norm (ne1 0) of values
 * about 1, else an ne0 x ne1 matrix, uniform with sd about scale /
 * sqrt(ne0). */
static void w_add(w_tensors *w, int64_t ne0, int64_t ne1, double scale, const char *fmt, int il) {
  const int i = w->n++;
  snprintf(w->name[i], sizeof w->name[i], fmt, il);
  const int64_t n = ne0 * (ne1 > 0 ? ne1 : 1);
  w->v[i] = malloc((size_t)n * sizeof(double));
  for (int64_t e = 0; e < n; e++)
    w->v[i][e] = ne1 > 0 ? (fm_test_rng_unif(&w->rs) - 0.5) * 3.4 * scale / sqrt((double)ne0)
                         : 1.0 + (fm_test_rng_unif(&w->rs) - 0.5) * 0.35;
  w->t[i] = (fm_gguf_wtensor){w->name[i], 0, ne1 > 0 ? 2 : 1, {ne0, ne1 > 0 ? ne1 : 1},
                              FM_GGUF_WSRC_F64, w->v[i], n};
}

/* A random-weight lfm2 model (n_embd 64; layers 0, 1 and 3 short
 * convolutions of width 3, layer 2 attention with 4 heads / 2 KV heads of
 * 16; tied output) written to path with F32 weights: the names and keys
 * Rllm's lfm2 program reads. 1 when written. */
static int write_lfm2(const char *path) {
  enum { E = 64, V = 512, FF = 128, L = 3, NL = 4, HD = 16 };
  static const int32_t kv_heads[NL] = {0, 0, 2, 0};
  const char *arch = "lfm2";
  const uint32_t ctx = 1024, emb = E, nl = NL, ff = FF, nh = 4, lc = L;
  const float base = 1e6f, eps = 1e-5f;
  const fm_gguf_wkv kv[] = {{"general.architecture", FM_GGUF_STRING, 0, 1, &arch},
                            {"lfm2.context_length", FM_GGUF_U32, 0, 1, &ctx},
                            {"lfm2.embedding_length", FM_GGUF_U32, 0, 1, &emb},
                            {"lfm2.block_count", FM_GGUF_U32, 0, 1, &nl},
                            {"lfm2.feed_forward_length", FM_GGUF_U32, 0, 1, &ff},
                            {"lfm2.attention.head_count", FM_GGUF_U32, 0, 1, &nh},
                            {"lfm2.attention.head_count_kv", FM_GGUF_I32, 1, NL, kv_heads},
                            {"lfm2.rope.freq_base", FM_GGUF_F32, 0, 1, &base},
                            {"lfm2.attention.layer_norm_rms_epsilon", FM_GGUF_F32, 0, 1, &eps},
                            {"lfm2.shortconv.l_cache", FM_GGUF_U32, 0, 1, &lc}};
  w_tensors *w = calloc(1, sizeof *w);
  if (!w) return 0;
  w->rs = 11;
  w_add(w, E, V, 0.3 * sqrt((double)E), "token_embd.weight", 0); /* logits of a few nats */
  for (int il = 0; il < NL; il++) {
    w_add(w, E, 0, 1, "blk.%d.attn_norm.weight", il);
    if (kv_heads[il] == 0) {
      w_add(w, L, E, 1, "blk.%d.shortconv.conv.weight", il);
      w_add(w, E, 3 * E, 1, "blk.%d.shortconv.in_proj.weight", il);
      w_add(w, E, E, 1, "blk.%d.shortconv.out_proj.weight", il);
    } else {
      w_add(w, E, 4 * HD, 1, "blk.%d.attn_q.weight", il);
      w_add(w, E, kv_heads[il] * HD, 1, "blk.%d.attn_k.weight", il);
      w_add(w, E, kv_heads[il] * HD, 1, "blk.%d.attn_v.weight", il);
      w_add(w, HD, 0, 1, "blk.%d.attn_q_norm.weight", il);
      w_add(w, HD, 0, 1, "blk.%d.attn_k_norm.weight", il);
      w_add(w, 4 * HD, E, 1, "blk.%d.attn_output.weight", il);
    }
    w_add(w, E, 0, 1, "blk.%d.ffn_norm.weight", il);
    w_add(w, E, FF, 1, "blk.%d.ffn_gate.weight", il);
    w_add(w, E, FF, 1, "blk.%d.ffn_up.weight", il);
    w_add(w, FF, E, 1, "blk.%d.ffn_down.weight", il);
  }
  w_add(w, E, 0, 1, "token_embd_norm.weight", 0);
  fm_err err;
  const fm_status st = fm_gguf_write(path, kv, (int64_t)(sizeof kv / sizeof kv[0]), w->t, w->n,
                                     FM_GGUF_DEFAULT_ALIGNMENT, NULL, &err);
  CHECK_OK(st, &err);
  for (int i = 0; i < w->n; i++) free(w->v[i]);
  free(w);
  return st == FM_OK;
}

/* lfm2's convolution layers carry a recurrent state in the cache: a
 * prompt cancelled in its second micro-batch leaves n_past and that state
 * as they were before the call (after a 20-token prefix), so evaluating
 * the rest again gives the logits of an uninterrupted run bit for bit. */
static void test_cancel_recurrent(void) {
  char dir[256];
  if (!fm_test_tmpdir(dir, sizeof dir, "fm_lfm2")) {
    CHECK(0 && "no temporary directory");
    return;
  }
  const char *path = fm_test_path_in(dir, "lfm2.gguf");
  fm_gguf *g = NULL;
  fm_llm_model *m = NULL;
  fm_llm_cache *c = NULL;
  fm_err err;
  if (!write_lfm2(path)) goto done;
  CHECK_OK(fm_gguf_open(path, &g, &err), &err);
  if (g) CHECK_OK(new_model(g, 1, &m, &err), &err);
  if (!m) goto done;
  CHECK(strcmp(fm_llm_model_info(m)->arch, "lfm2") == 0);
  enum { P = 20, N = 300 };
  int32_t ids[P + N];
  float a[512], b[512];
  ids[0] = 1;
  for (int i = 1; i < P + N; i++) ids[i] = 3 + (i * 7919) % 509;
  fm_ctl ctl = {.cancel = cancel_cb};
  CHECK_OK(fm_llm_cache_new(m, P + N, FM_LLM_KV_F32, NULL, 0, &c, &err), &err);
  if (!c) goto done;
  CHECK_OK(fm_llm_eval(m, c, ids, P, FM_LLM_OUT_LAST, a, NULL, &err), &err);
  CHECK_OK(fm_llm_eval(m, c, ids + P, N, FM_LLM_OUT_LAST, a, NULL, &err), &err);
  /* the polls of one micro-batch after the prefix */
  fm_llm_cache_clear(c);
  CHECK_OK(fm_llm_eval(m, c, ids, P, FM_LLM_OUT_LAST, b, NULL, &err), &err);
  cancel_after_calls = 1 << 30;
  cancel_calls = 0;
  CHECK_OK(fm_llm_eval(m, c, ids + P, FM_LLM_UBATCH, FM_LLM_OUT_LAST, b, &ctl, &err), &err);
  const int first = cancel_calls;
  fm_llm_cache_clear(c);
  CHECK_OK(fm_llm_eval(m, c, ids, P, FM_LLM_OUT_LAST, b, NULL, &err), &err);
  cancel_after_calls = first; /* the first poll of the second micro-batch stops it */
  CHECK(fm_llm_eval(m, c, ids + P, N, FM_LLM_OUT_LAST, b, &ctl, &err) == FM_ECANCELLED);
  CHECK(fm_llm_cache_n_past(c) == P);
  CHECK_OK(fm_llm_eval(m, c, ids + P, N, FM_LLM_OUT_LAST, b, NULL, &err), &err);
  CHECK(memcmp(a, b, sizeof a) == 0);
done:
  fm_llm_cache_free(c);
  fm_llm_model_free(m);
  fm_gguf_close(g);
  fm_test_rmtree(dir);
}

static void test_generate(void) {
  if (!open_story()) return;
  fm_err err;
  fm_llm_cache *c = NULL;
  CHECK_OK(fm_llm_cache_new(m_story, 128, FM_LLM_KV_F16, NULL, 0, &c, &err), &err);
  fm_llm_sampling greedy = {0, 40, 0.95, 1};
  fm_llm_sampler *s = NULL;
  CHECK_OK(fm_llm_sampler_new(&greedy, 512, &s, &err), &err);
  int32_t out1[32], out2[32];
  int64_t n1 = 0, n2 = 0;
  fm_llm_timings tm;
  CHECK_OK(fm_llm_generate(m_story, c, prompt, N_PROMPT, 32, s, NULL, 0, out1, &n1, &tm, NULL, &err),
           &err);
  CHECK(n1 == 32);
  CHECK(fm_llm_cache_n_past(c) == N_PROMPT + 31);
  CHECK(tm.n_decode == 31);
  CHECK(tm.n_threads == 2); /* the model's own count */
  /* Greedy equals the argmax chain of uncached evaluations. */
  int32_t seq[64];
  memcpy(seq, prompt, sizeof prompt);
  float *lg = malloc(sizeof(float) * 512);
  for (int i = 0; i < 4; i++) {
    CHECK_OK(fm_llm_eval(m_story, NULL, seq, N_PROMPT + i, FM_LLM_OUT_LAST, lg, NULL, &err), &err);
    seq[N_PROMPT + i] = (int32_t)fm_llm_argmax(lg, 512);
    CHECK(seq[N_PROMPT + i] == out1[i]);
  }
  free(lg);
  fm_llm_sampler_free(s);
  /* Seeded sampling is deterministic. */
  fm_llm_sampling samp = {0.8, 40, 0.95, 42};
  for (int rep = 0; rep < 2; rep++) {
    CHECK_OK(fm_llm_sampler_new(&samp, 512, &s, &err), &err);
    fm_llm_cache_clear(c);
    CHECK_OK(fm_llm_generate(m_story, c, prompt, N_PROMPT, 32, s, NULL, 0, rep ? out2 : out1,
                             rep ? &n2 : &n1, NULL, NULL, &err),
             &err);
    fm_llm_sampler_free(s);
  }
  CHECK(n1 == n2 && memcmp(out1, out2, sizeof(int32_t) * (size_t)n1) == 0);
  /* Stop tokens end generation after emitting one. */
  int32_t stop = out1[3];
  CHECK_OK(fm_llm_sampler_new(&samp, 512, &s, &err), &err);
  fm_llm_cache_clear(c);
  CHECK_OK(fm_llm_generate(m_story, c, prompt, N_PROMPT, 32, s, &stop, 1, out2, &n2, NULL, NULL, &err),
           &err);
  CHECK(n2 <= 4 && out2[n2 - 1] == stop);
  fm_llm_sampler_free(s);
  /* Too long for the cache: refused before starting. */
  CHECK_OK(fm_llm_sampler_new(&greedy, 512, &s, &err), &err);
  fm_llm_cache_clear(c);
  CHECK(fm_llm_generate(m_story, c, prompt, N_PROMPT, 200, s, NULL, 0, out2, &n2, NULL, NULL, &err) ==
        FM_ENOSPC);
  fm_llm_sampler_free(s);
  fm_llm_cache_free(c);
}

/* Threads of an evaluation: the model's own count when set, else the
 * call's (fm_threads(ctl)), and one in a forked child. */
static void test_threads(void) {
  if (!open_story()) return;
  fm_err err;
  const fm_ctl three = {.threads = 3}, forked = {.threads = 3, .forked = 1};
  CHECK(fm_llm_model_threads(m_story) == 2);
  CHECK(fm_llm_threads_for(m_story, &three) == 2);
  CHECK(fm_llm_threads_for(m_story, &forked) == 1);
  CHECK_OK(fm_llm_model_set_threads(m_story, 0, &err), &err);
  CHECK(fm_llm_threads_for(m_story, &three) == 3);
  CHECK(fm_llm_threads_for(m_story, NULL) == fm_threads(NULL));
  CHECK(fm_llm_threads_for(m_story, &forked) == 1);
  CHECK(fm_llm_model_set_threads(m_story, -1, &err) == FM_EARG);
  fm_llm_cache *c = NULL;
  CHECK_OK(fm_llm_cache_new(m_story, 64, FM_LLM_KV_F16, NULL, 0, &c, &err), &err);
  fm_llm_sampling greedy = {0, 40, 0.95, 1};
  fm_llm_sampler *s = NULL;
  CHECK_OK(fm_llm_sampler_new(&greedy, 512, &s, &err), &err);
  int32_t out[4];
  int64_t n = 0;
  fm_llm_timings tm;
  CHECK_OK(fm_llm_generate(m_story, c, prompt, N_PROMPT, 4, s, NULL, 0, out, &n, &tm, &three, &err),
           &err);
  CHECK(n == 4 && tm.n_threads == 3);
  fm_llm_sampler_free(s);
  fm_llm_cache_free(c);
  CHECK_OK(fm_llm_model_set_threads(m_story, 2, &err), &err);
}

/* Flash attention (batches of >= 64 tokens) against the explicit path,
 * both with an F32 cache and F32 weights: only the order of F32 sums
 * differs (relative error <= n_kv 2^-24 per sum), so the logits agree to
 * 1e-4 as token-by-token and whole-prefix evaluation do. 600 tokens: three
 * micro-batches (256 + 256 + 88); the last-token output equals the last column. */
static void test_flash_attn(void) {
  if (!open_story()) return;
  enum { N = 600, V = 512 };
  fm_err err;
  CHECK(fm_llm_model_flash_attn(m_story) == 1);
  CHECK(fm_llm_model_set_flash_attn(m_story, 2, &err) == FM_EARG);
  CHECK(fm_llm_model_set_flash_attn(NULL, 1, &err) == FM_EARG);
  int32_t *ids = malloc(N * sizeof *ids);
  float *a = malloc((size_t)N * V * sizeof *a), *b = malloc((size_t)N * V * sizeof *b);
  float last[V];
  CHECK(ids && a && b);
  if (!ids || !a || !b) goto done;
  ids[0] = 1;
  for (int i = 1; i < N; i++) ids[i] = 3 + (i * 7919) % 509;
  for (int on = 1; on >= 0; on--) {
    fm_llm_cache *c = NULL;
    CHECK_OK(fm_llm_model_set_flash_attn(m_story, on, &err), &err);
    CHECK_OK(fm_llm_cache_new(m_story, N, FM_LLM_KV_F32, NULL, 0, &c, &err), &err);
    CHECK_OK(fm_llm_eval(m_story, c, ids, N, FM_LLM_OUT_ALL, on ? a : b, NULL, &err), &err);
    CHECK(fm_llm_cache_n_past(c) == N);
    fm_llm_cache_clear(c);
    CHECK_OK(fm_llm_eval(m_story, c, ids, N, FM_LLM_OUT_LAST, last, NULL, &err), &err);
    /* the last layer's feed-forward and the output product of one row take
     * GGML's product, the batch's the fused kernels: F32 sums in another
     * order, an F32 cache */
    double dl = 0;
    for (int i = 0; i < V; i++) dl = fmax(dl, fabs((double)last[i] - (on ? a : b)[(size_t)(N - 1) * V + i]));
    CHECK(dl < 1e-4);
    fm_llm_cache_free(c);
  }
  double d = 0;
  for (size_t i = 0; i < (size_t)N * V; i++) d = fmax(d, fabs((double)a[i] - b[i]));
  CHECK(d < 1e-4);
  CHECK_OK(fm_llm_model_set_flash_attn(m_story, 1, &err), &err);
done:
  free(ids);
  free(a);
  free(b);
}

/* fm_llm_model_repack on stories260K (F32: GGML repacks no F32 matrix):
 * a no-op that leaves every logit as it was; NULL is refused. */
static void test_repack(void) {
  if (!open_story()) return;
  fm_err err;
  float a[512], b[512];
  CHECK(fm_llm_model_repack(NULL, &err) == FM_EARG);
  CHECK_OK(fm_llm_eval(m_story, NULL, prompt, N_PROMPT, FM_LLM_OUT_LAST, a, NULL, &err), &err);
  CHECK_OK(fm_llm_model_repack(m_story, &err), &err);
  CHECK_OK(fm_llm_model_repack(m_story, &err), &err);
  CHECK(fm_llm_model_repacked_bytes(m_story) == 0);
  CHECK_OK(fm_llm_eval(m_story, NULL, prompt, N_PROMPT, FM_LLM_OUT_LAST, b, NULL, &err), &err);
  CHECK(memcmp(a, b, sizeof a) == 0);
}

/* fm_llm_model_set_fused_gemm: checked; on stories260K (F32 weights) with
 * an F32 cache the fused and GGML's products differ only in the order of
 * F32 sums (at most gamma(n + 4) ~ 3e-5 relative to the sum of |terms| per
 * product, n <= 512 terms), and so do the two flash attentions (100
 * tokens: ours for its heads of 8, with an exponential within 3 u): logits
 * within 1e-4, the bound the whole-prefix test uses for the same kind of
 * difference (measured 1e-5). Under a portable cap the graph keeps GGML's
 * products and attention: the same bits. The kernels themselves:
 * test_llm_gemm, test_llm_attn; the other weight types against GGML's and
 * llama.cpp: Rllm's test-model.R. */
static void test_fused_gemm(void) {
  if (!open_story()) return;
  enum { N = 100, V = 512 };
  fm_err err;
  int32_t ids[N];
  float *a = malloc((size_t)N * V * sizeof *a), *b = malloc((size_t)N * V * sizeof *b);
  CHECK(a && b);
  if (!a || !b) goto done;
  ids[0] = 1;
  for (int i = 1; i < N; i++) ids[i] = 3 + (i * 7919) % 509;
  CHECK(fm_llm_model_fused_gemm(m_story) == 1);
  CHECK(fm_llm_model_set_fused_gemm(m_story, 2, &err) == FM_EARG);
  CHECK(fm_llm_model_set_fused_gemm(NULL, 1, &err) == FM_EARG);
  for (int pass = 0; pass < 3; pass++) {
    const int on = pass > 0;
    fm_llm_cache *c = NULL;
    CHECK_OK(fm_llm_model_set_fused_gemm(m_story, on, &err), &err);
    CHECK(fm_llm_model_fused_gemm(m_story) == on);
    fm_cpu_cap(pass == 1 ? FM_ISA_PORTABLE : FM_ISA_AVX512);
    CHECK_OK(fm_llm_cache_new(m_story, N, FM_LLM_KV_F32, NULL, 0, &c, &err), &err);
    CHECK_OK(fm_llm_eval(m_story, c, ids, N, FM_LLM_OUT_ALL, on ? a : b, NULL, &err), &err);
    fm_llm_cache_free(c);
    if (!on) continue;
    double d = 0;
    for (size_t i = 0; i < (size_t)N * V; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    fprintf(stderr, "fused (%s) vs GGML's products: max abs diff %.3g\n",
            pass == 1 ? "portable cap" : "best ISA", d);
    CHECK(pass == 1 ? d == 0 : d < 1e-4);
  }
  fm_cpu_cap(FM_ISA_AVX512);
  CHECK_OK(fm_llm_model_set_fused_gemm(m_story, 1, &err), &err);
done:
  free(a);
  free(b);
}

/* Models on a device and the device listing (fm_llm_ggml.h). On the CPU
 * device the same logits as the default model, bit for bit. A device kind the
 * linked GGML lacks is FM_EUNSUPPORTED naming the remedy; a Vulkan build
 * with devices (`make test-vulkan`'s library; not ctest's, which links the
 * project's CPU build) also runs the model there: finite logits, caches in
 * device memory that refuse a caller's buffer and never move. The logits
 * against the CPU's and llama.cpp's: Rllm's test-device.R. */
static void test_device(void) {
  if (!open_story()) return;
  fm_err err;
  float a[512], b[512];
  fm_llm_model *m = NULL;
  CHECK(strcmp(fm_llm_model_device(m_story), "CPU") == 0);
  CHECK(strcmp(fm_llm_model_device(NULL), "CPU") == 0);
  CHECK_OK(new_model_on(g_story, 1, FM_LLM_DEVICE_CPU, 0, &m, &err), &err);
  CHECK_OK(fm_llm_eval(m_story, NULL, prompt, N_PROMPT, FM_LLM_OUT_LAST, a, NULL, &err), &err);
  CHECK_OK(fm_llm_eval(m, NULL, prompt, N_PROMPT, FM_LLM_OUT_LAST, b, NULL, &err), &err);
  CHECK(memcmp(a, b, sizeof a) == 0);
  fm_llm_model_free(m);
  m = NULL;
  CHECK(new_model_on(g_story, 1, (fm_llm_device)7, 0, &m, &err) == FM_EARG && !m);

  fm_llm_device_info d;
  const int n = fm_llm_ggml_n_devices("Vulkan");
  CHECK(n >= 0);
  CHECK(fm_llm_ggml_n_devices(NULL) == 0 && fm_llm_ggml_n_devices("NoSuchBackend") == 0);
  CHECK(fm_llm_ggml_device("Vulkan", n, &d) == FM_EARG && d.name == NULL);
  CHECK(fm_llm_ggml_device("Vulkan", -1, &d) == FM_EARG);
  for (int i = 0; i < n; i++) {
    CHECK(fm_llm_ggml_device("Vulkan", i, &d) == FM_OK);
    CHECK(d.name && strncmp(d.name, "Vulkan", 6) == 0 && d.description && d.type);
    CHECK(d.memory_free <= d.memory_total);
  }
  if (!fm_llm_ggml_has_vulkan()) {
    CHECK(n == 0);
    CHECK(new_model_on(g_story, 1, FM_LLM_DEVICE_VULKAN, 0, &m, &err) == FM_EUNSUPPORTED);
    CHECK(!m && strstr(err.msg, "Vulkan is not in this GGML build") && strstr(err.msg, "make vulkan"));
    printf("GGML without Vulkan: device cases checked as refusals\n");
    return;
  }
  if (n == 0) {
    CHECK(new_model_on(g_story, 1, FM_LLM_DEVICE_VULKAN, 0, &m, &err) == FM_EUNSUPPORTED);
    CHECK(!m && strstr(err.msg, "found no device"));
    return;
  }
  CHECK(new_model_on(g_story, 1, FM_LLM_DEVICE_VULKAN, n, &m, &err) == FM_EARG && !m);
  fm_status st = new_model_on(g_story, 1, FM_LLM_DEVICE_VULKAN, 0, &m, &err);
  if (st == FM_EUNSUPPORTED) { /* a driver GGML refuses (push constants) */
    CHECK(!m && strstr(err.msg, "push constants"));
    printf("Vulkan device 0 refused: %s\n", err.msg);
    return;
  }
  CHECK_OK(st, &err);
  if (!m) return;
  CHECK(strncmp(fm_llm_model_device(m), "Vulkan", 6) == 0);
  CHECK(fm_llm_model_fused_gemm(m) == 0);
  CHECK_OK(fm_llm_model_repack(m, &err), &err);
  CHECK(fm_llm_model_repacked_bytes(m) == 0);
  fm_llm_cache *c = NULL;
  char mem[256];
  CHECK(fm_llm_cache_new(m, 16, FM_LLM_KV_F16, mem, sizeof mem, &c, &err) == FM_EARG && !c);
  CHECK_OK(fm_llm_cache_new(m, 16, FM_LLM_KV_F16, NULL, 0, &c, &err), &err);
  CHECK(fm_llm_cache_rebase(c, mem, sizeof mem, &err) == FM_EARG);
  CHECK_OK(fm_llm_eval(m, c, prompt, N_PROMPT, FM_LLM_OUT_LAST, b, NULL, &err), &err);
  int finite = 1;
  for (int i = 0; i < 512; i++) finite &= isfinite(b[i]) != 0;
  CHECK(finite);
  fm_llm_cache_free(c);
  fm_llm_model_free(m);
}

static void test_embed(void) {
  if (!open_story()) return;
  fm_err err;
  float e[64], e2[64];
  CHECK_OK(fm_llm_embed(m_story, prompt, N_PROMPT, FM_LLM_POOL_MEAN, e, NULL, &err), &err);
  CHECK_OK(fm_llm_embed(m_story, prompt, N_PROMPT, FM_LLM_POOL_MEAN, e2, NULL, &err), &err);
  CHECK(memcmp(e, e2, sizeof e) == 0);
  double ss = 0;
  for (int i = 0; i < 64; i++) ss += (double)e[i] * e[i];
  CHECK(ss > 0 && isfinite(ss));
  /* LAST pooling of a one-token sequence equals MEAN pooling of it. */
  CHECK_OK(fm_llm_embed(m_story, prompt, 1, FM_LLM_POOL_LAST, e, NULL, &err), &err);
  CHECK_OK(fm_llm_embed(m_story, prompt, 1, FM_LLM_POOL_MEAN, e2, NULL, &err), &err);
  for (int i = 0; i < 64; i++) CHECK_CLOSE(e[i], e2[i], 1e-5);
  CHECK(fm_llm_embed(m_story, prompt, 1, FM_LLM_POOL_NONE, e, NULL, &err) == FM_EARG);
}

static void test_argmax_sampler(void) {
  float x[6] = {1.0f, 3.0f, NAN, 3.0f, -INFINITY, 2.0f};
  CHECK(fm_llm_argmax(x, 6) == 1);
  float y[3] = {NAN, NAN, NAN};
  CHECK(fm_llm_argmax(y, 3) == -1);
  CHECK(fm_llm_argmax(x, 0) == -1);
  fm_err err;
  fm_llm_sampler *s = NULL;
  fm_llm_sampling g = {0, 0, 1, 0};
  CHECK_OK(fm_llm_sampler_new(&g, 6, &s, &err), &err);
  CHECK(fm_llm_sampler_next(s, x) == 1);
  fm_llm_sampler_free(s);
  /* top_k = 1 samples the argmax, ties to the lower id. */
  fm_llm_sampling k1 = {1.0, 1, 1, 7};
  CHECK_OK(fm_llm_sampler_new(&k1, 6, &s, &err), &err);
  for (int i = 0; i < 20; i++) CHECK(fm_llm_sampler_next(s, x) == 1);
  fm_llm_sampler_free(s);
  /* A tiny top_p keeps only the most probable token. */
  fm_llm_sampling p1 = {1.0, 0, 1e-6, 7};
  CHECK_OK(fm_llm_sampler_new(&p1, 6, &s, &err), &err);
  for (int i = 0; i < 20; i++) CHECK(fm_llm_sampler_next(s, x) == 1);
  fm_llm_sampler_free(s);
  /* Frequencies follow softmax(x / T) over {1, 3, 3, 2} (NaN and -Inf out). */
  fm_llm_sampling all = {1.0, 0, 1, 123};
  CHECK_OK(fm_llm_sampler_new(&all, 6, &s, &err), &err);
  int cnt[6] = {0};
  for (int i = 0; i < 20000; i++) cnt[fm_llm_sampler_next(s, x)]++;
  double z = exp(1.0) + 2 * exp(3.0) + exp(2.0);
  CHECK(cnt[2] == 0 && cnt[4] == 0);
  CHECK(fabs(cnt[1] / 20000.0 - exp(3.0) / z) < 0.02);
  CHECK(fabs(cnt[0] / 20000.0 - exp(1.0) / z) < 0.02);
  fm_llm_sampler_free(s);
  CHECK(fm_llm_sampler_new(&(fm_llm_sampling){1.0, 0, 0.0, 1}, 6, &s, &err) == FM_EARG);
  CHECK(fm_llm_sampler_new(&(fm_llm_sampling){NAN, 0, 1.0, 1}, 6, &s, &err) == FM_EARG);
}

int main(void) {
  FM_RUN(test_info);
  FM_RUN(test_logits_and_cache);
  FM_RUN(test_generate);
  FM_RUN(test_cancel);
  FM_RUN(test_cancel_recurrent);
  FM_RUN(test_threads);
  FM_RUN(test_flash_attn);
  FM_RUN(test_repack);
  FM_RUN(test_fused_gemm);
  FM_RUN(test_embed);
  FM_RUN(test_device);
  FM_RUN(test_argmax_sampler);
  fm_llm_model_free(m_story);
  fm_gguf_close(g_story);
  FM_TEST_END();
}
