/* test_llm_program.c: bound programs (fm_llm_program.h) on stories260K
 * (../shared/fixtures/gguf; skipped with a message when absent).
 *  - A program of embedding rows, RMS norm, a norm weight and the output
 *    product, evaluated for all positions and for the last, against a
 *    double-precision reference from the file's F32 weights: within
 *    gamma(n_embd + 2) of the sum of |terms| per logit (F32 sums), the last
 *    column computed alone equal to the whole batch's within the same.
 *  - Every refusal names the node and its operator: an operator outside
 *    the vocabulary, a later or missing argument, too many arguments, a
 *    shape that breaks the rule (a product of mismatched widths, rows
 *    outside the input), a type class out of range, a tensor index outside
 *    the file, two attentions on one cache slot, attributes out of range,
 *    cropped positions into an operator that reads positions, another
 *    vocabulary version, a logits node outside the program.
 *  - The version 2 operators through fm_llm_run: token dropout, attention
 *    maps of 64 heads of size 1 (so that head_mix can weigh them with the
 *    file's 64 F32 output_norm weights), attend, exact GELU, concat of
 *    activations and of maps, pair_crop, symmetrize, APC, head_mix and the
 *    sigmoid against double precision within 1e-4 of each output's scale
 *    (F32 sums of at most 64 terms: 64 u = 4e-6 relative, twice, through
 *    a softmax); and fm_llm_run's refusals.
 *  - The version 3 operators (padding) through fm_llm_run, against double
 *    precision within the same bounds: a mask input, ne_id, a mask
 *    times an activation and times another mask, token dropout over the
 *    unmasked positions, attention maps with a key mask (exactly 0 at
 *    masked keys), pair_mask; refusals of mask values other than 0 and 1
 *    and of ne_id on the positions; the info of an encoder (its
 *    attention_probs nodes as layers). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_gguf.h"
#include "fm/fm_llm_program.h"
#include "fm_test.h"
#include "fm_test_files.h"

static fm_gguf *g;

static int open_story(void) {
  if (g) return 1;
  char path[1024];
  if (!fm_test_fixture(path, sizeof path, "gguf/stories260K.gguf", NULL)) {
    fprintf(stderr, "stories260K.gguf not found (RFMALLOC_FIXTURES): program cases skipped\n");
    return 0;
  }
  fm_err err;
  CHECK_OK(fm_gguf_open(path, &g, &err), &err);
  return g != NULL;
}

static int64_t tensor(const char *name) {
  const int64_t i = fm_gguf_find_tensor(g, name);
  CHECK(i >= 0);
  return i;
}

static fm_llm_node node(int op, int a0, int a1) {
  fm_llm_node n;
  memset(&n, 0, sizeof n);
  n.op = op;
  for (int k = 0; k < FM_LLM_MAX_ARGS; k++) n.args[k] = -1;
  n.args[0] = a0;
  n.args[1] = a1;
  n.layer = -1;
  return n;
}

static fm_llm_node input(int kind) {
  fm_llm_node n = node(FM_LLM_OP_INPUT, -1, -1);
  n.tensor = kind;
  return n;
}

static fm_llm_node param(const char *name, int type_class) {
  fm_llm_node n = node(FM_LLM_OP_PARAM, -1, -1);
  n.tensor = tensor(name);
  n.type_class = type_class;
  return n;
}

enum { N_HEAD_NODES = 8 };

/* Embedding rows, RMS norm times output_norm, the output product. */
static void head_program(fm_llm_node *nd) {
  nd[0] = input(FM_LLM_IN_TOKENS);
  nd[1] = param("token_embd.weight", FM_LLM_PARAM_ROWS);
  nd[2] = node(FM_LLM_OP_GET_ROWS, 0, 1);
  nd[3] = node(FM_LLM_OP_RMS_NORM, 2, -1);
  nd[3].fa[0] = 1e-5;
  nd[4] = param("output_norm.weight", FM_LLM_PARAM_F32);
  nd[5] = node(FM_LLM_OP_MUL, 3, 4);
  nd[6] = param("output.weight", FM_LLM_PARAM_MATMUL);
  nd[7] = node(FM_LLM_OP_MATMUL, 5, 6);
}

static const float *f32_of(const char *name) {
  return (const float *)(const void *)(fm_gguf_bytes(g) + fm_gguf_tensor_at(g, tensor(name))->data_offset);
}

static void test_head(void) {
  if (!open_story()) return;
  enum { N = 5 };
  fm_llm_node nd[N_HEAD_NODES];
  head_program(nd);
  fm_llm_program p = {"head", FM_LLM_VOCABULARY, N_HEAD_NODES, nd, 7, 0, -1, 0, NULL};
  fm_llm_model *m = NULL;
  fm_err err;
  CHECK_OK(fm_llm_model_new_program(g, &p, 1, FM_LLM_DEVICE_CPU, 0, &m, &err), &err);
  if (!m) return;
  const fm_llm_info *in = fm_llm_model_info(m);
  const int64_t V = in->n_vocab, E = in->n_embd;
  CHECK(V == 512 && E == 64);
  const int32_t ids[N] = {1, 403, 407, 261, 378};
  float *all = malloc((size_t)(N * V) * sizeof *all), *last = malloc((size_t)V * sizeof *last);
  CHECK(all && last);
  if (!all || !last) goto done;
  CHECK_OK(fm_llm_eval(m, NULL, ids, N, FM_LLM_OUT_ALL, all, NULL, &err), &err);
  CHECK_OK(fm_llm_eval(m, NULL, ids, N, FM_LLM_OUT_LAST, last, NULL, &err), &err);
  const float *emb = f32_of("token_embd.weight"), *nw = f32_of("output_norm.weight"),
              *out = f32_of("output.weight");
  const double u = ldexp(1.0, -24), gam = (E + 2) * u / (1 - (E + 2) * u);
  int bad = 0;
  for (int t = 0; t < N; t++) {
    const float *x = emb + (size_t)ids[t] * E;
    double ss = 0, h[64];
    for (int e = 0; e < E; e++) ss += (double)x[e] * x[e];
    const double r = 1.0 / sqrt(ss / E + 1e-5);
    for (int e = 0; e < E; e++) h[e] = x[e] * r * nw[e];
    for (int64_t v = 0; v < V; v++) {
      double s = 0, a = 0;
      for (int e = 0; e < E; e++) {
        s += out[v * E + e] * h[e];
        a += fabs(out[v * E + e] * h[e]);
      }
      /* the norm's own rounding (a relative few u per element) is inside
       * the product's gamma(E + 2) */
      if (fabs(all[t * V + v] - s) > 2 * gam * a) bad++;
      if (t == N - 1 && fabs(last[v] - s) > 2 * gam * a) bad++;
    }
  }
  CHECK(bad == 0);
done:
  free(all);
  free(last);
  fm_llm_model_free(m);
}

/* The version 2 operators on the embedding rows x [64, n] of stories260K:
 * maps = softmax_keys(x_k x_q / 2) per row (64 heads of size 1),
 * a = gelu_erf(attend(maps, token_dropout(x))), c = concat(x, x),
 * cm = concat(maps, maps), k = sigmoid(head_mix(apc(symmetrize(
 * pair_crop(maps))))) with the output_norm weights. */
enum { N_V2 = 17 };

/* Attention maps of x over itself, 64 heads of size 1, scale 1/2, at
 * positions pos, mask kind, keys masked by key_mask (-1: none). */
static fm_llm_node probs(int x, int pos, int key_mask, int kind) {
  fm_llm_node n = node(FM_LLM_OP_ATTENTION_PROBS, x, x);
  n.args[2] = pos;
  n.args[3] = key_mask;
  n.ia[0] = n.ia[1] = 64;
  n.ia[2] = kind;
  n.fa[0] = 0.5;
  return n;
}

static void v2_program(fm_llm_node *nd) {
  nd[0] = input(FM_LLM_IN_TOKENS);
  nd[1] = input(FM_LLM_IN_POSITIONS);
  nd[2] = param("token_embd.weight", FM_LLM_PARAM_ROWS);
  nd[3] = node(FM_LLM_OP_GET_ROWS, 0, 2);
  nd[4] = probs(3, 1, -1, FM_LLM_MASK_FULL);
  nd[5] = node(FM_LLM_OP_TOKEN_DROPOUT, 3, 0);
  nd[5].ia[0] = 403;
  nd[5].fa[0] = 0.12;
  nd[6] = node(FM_LLM_OP_ATTEND, 4, 5);
  nd[6].ia[0] = 64;
  nd[7] = node(FM_LLM_OP_GELU_ERF, 6, -1);
  nd[8] = node(FM_LLM_OP_CONCAT, 3, 3);
  nd[9] = node(FM_LLM_OP_CONCAT, 4, 4);
  nd[10] = node(FM_LLM_OP_PAIR_CROP, 4, -1);
  nd[10].ia[0] = 1;
  nd[10].ia[1] = 1;
  nd[11] = node(FM_LLM_OP_SYMMETRIZE, 10, -1);
  nd[12] = node(FM_LLM_OP_APC, 11, -1);
  nd[13] = param("output_norm.weight", FM_LLM_PARAM_F32);
  nd[14] = node(FM_LLM_OP_CONCAT, 3, 3); /* unused: nothing needs it */
  nd[15] = node(FM_LLM_OP_HEAD_MIX, 12, 13);
  nd[16] = node(FM_LLM_OP_SIGMOID, 15, -1);
}

/* x[e, t] (double) of the embedding rows of ids. */
static double emb_at(const int32_t *ids, int e, int t) { return f32_of("token_embd.weight")[(size_t)ids[t] * 64 + (size_t)e]; }

static double max_abs_diff(const float *got, const double *want, int64_t len, double *scale) {
  double d = 0, s = 1;
  for (int64_t i = 0; i < len; i++) {
    if (fabs(got[i] - want[i]) > d) d = fabs(got[i] - want[i]);
    if (fabs(want[i]) > s) s = fabs(want[i]);
  }
  *scale = s;
  return d;
}

static void test_v2_ops(void) {
  if (!open_story()) return;
  enum { N = 6, H = 64 };
  fm_llm_node nd[N_V2];
  v2_program(nd);
  /* outputs 0: maps (4), 1: a (7), 2: c (8), 3: k (16), 4: a parameter
   * (13, not an output kind), 5: cm (9) */
  const int64_t outs[6] = {4, 7, 8, 16, 13, 9};
  fm_llm_program p = {"v2", FM_LLM_VOCABULARY, N_V2, nd, -1, 0, -1, 6, outs}; /* outputs only */
  fm_llm_model *m = NULL;
  fm_err err;
  CHECK_OK(fm_llm_model_new_program(g, &p, 1, FM_LLM_DEVICE_CPU, 0, &m, &err), &err);
  if (!m) return;
  const int32_t ids[N] = {1, 403, 407, 403, 378, 10};
  static float maps[N * N * H], a[H * N], c[2 * H * N], k[(N - 2) * (N - 2)], cm[2 * N * N * H];
  float *out[5] = {maps, a, c, k, cm};
  const int64_t want[5] = {0, 1, 2, 3, 5}, cap[5] = {N * N * H, H * N, 2 * H * N, (N - 2) * (N - 2), 2 * N * N * H};
  int64_t ne[5][3];
  CHECK_OK(fm_llm_run(m, ids, NULL, NULL, N, 5, want, out, cap, ne, NULL, &err), &err);
  CHECK(ne[4][2] == 2 * H && memcmp(cm, maps, sizeof maps) == 0 && memcmp(cm + N * N * H, maps, sizeof maps) == 0);
  CHECK(ne[0][0] == N && ne[0][1] == N && ne[0][2] == H && ne[1][0] == H && ne[1][1] == N && ne[1][2] == 1);
  CHECK(ne[2][0] == 2 * H && ne[3][0] == N - 2 && ne[3][1] == N - 2 && ne[3][2] == 1);
  /* the reference, in doubles */
  static double rmaps[N * N * H], ra[H * N], rc[2 * H * N], rk[(N - 2) * (N - 2)];
  const double keep = (1 - 0.12) / (1 - 2.0 / N); /* two of the six ids are 403 */
  for (int h = 0; h < H; h++)
    for (int q = 0; q < N; q++) {
      double mx = -INFINITY, sum = 0, acc = 0;
      for (int t = 0; t < N; t++) mx = fmax(mx, 0.5 * emb_at(ids, h, t) * emb_at(ids, h, q));
      for (int t = 0; t < N; t++) sum += exp(0.5 * emb_at(ids, h, t) * emb_at(ids, h, q) - mx);
      for (int t = 0; t < N; t++) {
        const double pr = exp(0.5 * emb_at(ids, h, t) * emb_at(ids, h, q) - mx) / sum;
        rmaps[(size_t)h * N * N + (size_t)q * N + t] = pr;
        acc += pr * (ids[t] == 403 ? 0 : emb_at(ids, h, t) * keep);
      }
      ra[(size_t)q * H + h] = acc * 0.5 * (1 + erf(acc / sqrt(2.0)));
    }
  for (int t = 0; t < N; t++)
    for (int e = 0; e < 2 * H; e++) rc[(size_t)t * 2 * H + e] = emb_at(ids, e % H, t);
  const float *w = f32_of("output_norm.weight");
  const int M = N - 2;
  for (int i = 0; i < M * M; i++) rk[i] = 0;
  for (int ch = 0; ch < H; ch++) {
    const double *x = rmaps + (size_t)ch * N * N;
    double sym[(N - 2) * (N - 2)], r[N - 2] = {0}, col[N - 2] = {0}, tot = 0;
    for (int i = 0; i < M; i++)
      for (int j = 0; j < M; j++) sym[j * M + i] = x[(j + 1) * N + i + 1] + x[(i + 1) * N + j + 1];
    for (int i = 0; i < M; i++)
      for (int j = 0; j < M; j++) {
        r[i] += sym[j * M + i];
        col[j] += sym[j * M + i];
        tot += sym[j * M + i];
      }
    for (int i = 0; i < M; i++)
      for (int j = 0; j < M; j++) rk[j * M + i] += w[ch] * (sym[j * M + i] - r[i] * col[j] / tot);
  }
  for (int i = 0; i < M * M; i++) rk[i] = 1 / (1 + exp(-rk[i]));
  double sc;
  CHECK(max_abs_diff(maps, rmaps, N * N * H, &sc) <= 1e-4 * sc);
  CHECK(max_abs_diff(a, ra, H * N, &sc) <= 1e-4 * sc);
  CHECK(max_abs_diff(c, rc, 2 * H * N, &sc) == 0);
  CHECK(max_abs_diff(k, rk, M * M, &sc) <= 1e-4 * sc);
  /* refusals */
  int64_t bad_cap[4] = {N * N * H - 1, H * N, 2 * H * N, M * M}, four = 4;
  fm_err_clear(&err);
  CHECK(fm_llm_run(m, ids, NULL, NULL, N, 4, want, out, bad_cap, ne, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "output 0 needs 6 x 6 x 64 floats") != NULL);
  CHECK(fm_llm_run(m, ids, NULL, NULL, N, 1, &four, out, cap, ne, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "output 4 (node 13) is not an activation") != NULL);
  const int64_t six = 6;
  CHECK(fm_llm_run(m, ids, NULL, NULL, N, 1, &six, out, cap, ne, NULL, &err) == FM_EARG);
  CHECK(fm_llm_run(m, NULL, maps, NULL, N, 1, want, out, cap, ne, NULL, &err) == FM_EUNSUPPORTED);
  CHECK(fm_llm_eval(m, NULL, ids, N, FM_LLM_OUT_ALL, a, NULL, &err) == FM_EUNSUPPORTED);
  const float ones[N] = {1, 1, 1, 1, 1, 1};
  CHECK(fm_llm_run(m, ids, NULL, ones, N, 1, want, out, cap, ne, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "has no mask input") != NULL);
  const int32_t outside[2] = {1, 9999};
  CHECK(fm_llm_run(m, outside, NULL, NULL, 2, 1, want, out, cap, ne, NULL, &err) == FM_EARG);
  fm_llm_model_free(m);
  /* with node 7 as its logits, fm_llm_eval reaches the maps and refuses */
  p.logits = 7;
  CHECK_OK(fm_llm_model_new_program(g, &p, 1, FM_LLM_DEVICE_CPU, 0, &m, &err), &err);
  if (!m) return;
  const int32_t small[3] = {1, 5, 7}; /* within its 64 "vocabulary" rows */
  CHECK(fm_llm_eval(m, NULL, small, 3, FM_LLM_OUT_ALL, a, NULL, &err) == FM_EUNSUPPORTED);
  CHECK(strstr(err.msg, "reads the whole sequence at once") != NULL);
  fm_llm_model_free(m);
}

/* Version 3 (padding) on the embedding rows x [64, n]: mask input m,
 * e = ne_id(tokens, 407), me = m e, d = token_dropout(x, tokens, m) at
 * 403, maps = softmax over the unmasked keys of x_k x_q / 2 (64 heads of
 * size 1), pm = pair_mask(maps, me), xm = x m. */
enum { N_V3 = 13 };
static void v3_program(fm_llm_node *nd) {
  nd[0] = input(FM_LLM_IN_TOKENS);
  nd[1] = input(FM_LLM_IN_POSITIONS);
  nd[2] = input(FM_LLM_IN_MASK);
  nd[3] = param("token_embd.weight", FM_LLM_PARAM_ROWS);
  nd[4] = node(FM_LLM_OP_GET_ROWS, 0, 3);
  nd[5] = node(FM_LLM_OP_NE_ID, 0, -1);
  nd[5].ia[0] = 407;
  nd[6] = node(FM_LLM_OP_MUL, 2, 5);
  nd[7] = node(FM_LLM_OP_TOKEN_DROPOUT, 4, 0);
  nd[7].args[2] = 2;
  nd[7].ia[0] = 403;
  nd[7].fa[0] = 0.12;
  nd[8] = probs(4, 1, 2, FM_LLM_MASK_FULL);
  nd[9] = node(FM_LLM_OP_PAIR_MASK, 8, 6);
  nd[10] = node(FM_LLM_OP_MUL, 4, 2);
  nd[11] = probs(4, 1, 2, FM_LLM_MASK_CAUSAL);
  nd[12] = probs(4, 1, -1, FM_LLM_MASK_FULL); /* no key mask: unused, a layer for the info */
}

/* Softmax over the keys t allowed (mask m, causal: t <= q) of x_t x_q / 2
 * for head h: p[t], 0 where not allowed. */
static void ref_maps(const int32_t *ids, const float *m, int n, int h, int q, int causal, double *p) {
  double mx = -INFINITY, sum = 0;
  for (int t = 0; t < n; t++)
    if (m[t] != 0 && (!causal || t <= q)) mx = fmax(mx, 0.5 * emb_at(ids, h, t) * emb_at(ids, h, q));
  for (int t = 0; t < n; t++) {
    p[t] = m[t] != 0 && (!causal || t <= q) ? exp(0.5 * emb_at(ids, h, t) * emb_at(ids, h, q) - mx) : 0;
    sum += p[t];
  }
  for (int t = 0; t < n; t++) p[t] /= sum;
}

static void test_v3_padding(void) {
  if (!open_story()) return;
  enum { N = 8, H = 64 };
  fm_llm_node nd[N_V3];
  v3_program(nd);
  const int64_t outs[7] = {5, 6, 7, 8, 9, 10, 11};
  fm_llm_program p = {"v3", FM_LLM_VOCABULARY, N_V3, nd, -1, 0, -1, 7, outs};
  fm_llm_model *m = NULL;
  fm_err err;
  CHECK_OK(fm_llm_model_new_program(g, &p, 1, FM_LLM_DEVICE_CPU, 0, &m, &err), &err);
  if (!m) return;
  /* an encoder's info: its attention_probs nodes are its layers */
  const fm_llm_info *inf = fm_llm_model_info(m);
  CHECK(inf->n_layer == 3 && inf->n_head == 64 && inf->n_head_kv == 64 && inf->n_embd_head_k == 1);
  /* six tokens, then two of padding */
  const int32_t ids[N] = {1, 403, 407, 403, 378, 10, 5, 7};
  const float mask[N] = {1, 1, 1, 1, 1, 1, 0, 0}, ones[N] = {1, 1, 1, 1, 1, 1, 1, 1};
  static float e[N], me[N], d[H * N], maps[N * N * H], pm[N * N * H], xm[H * N], cz[N * N * H];
  float *out[7] = {e, me, d, maps, pm, xm, cz};
  const int64_t want[7] = {0, 1, 2, 3, 4, 5, 6};
  const int64_t cap[7] = {N, N, H * N, N * N * H, N * N * H, H * N, N * N * H};
  int64_t ne[7][3];
  CHECK_OK(fm_llm_run(m, ids, NULL, mask, N, 7, want, out, cap, ne, NULL, &err), &err);
  CHECK(ne[0][0] == 1 && ne[0][1] == N && ne[3][0] == N && ne[3][2] == H);
  static double rd[H * N], rmaps[N * N * H], rpm[N * N * H], rcz[N * N * H];
  double pr[N];
  int exact = 1;
  for (int t = 0; t < N; t++) {
    exact &= e[t] == (ids[t] != 407) && me[t] == mask[t] * (ids[t] != 407);
    for (int h = 0; h < H; h++) exact &= xm[t * H + h] == (float)(emb_at(ids, h, t) * mask[t]);
  }
  CHECK(exact);
  const double keep = (1 - 0.12) / (4.0 / 6); /* of the six unmasked ids, two are 403 */
  for (int h = 0; h < H; h++)
    for (int q = 0; q < N; q++) {
      rd[(size_t)q * H + h] = ids[q] == 403 || mask[q] == 0 ? 0 : emb_at(ids, h, q) * keep;
      ref_maps(ids, mask, N, h, q, 0, pr);
      for (int t = 0; t < N; t++) {
        const size_t at = (size_t)h * N * N + (size_t)q * N + t;
        rmaps[at] = pr[t];
        rpm[at] = pr[t] * mask[t] * (ids[t] != 407) * mask[q] * (ids[q] != 407);
        exact &= mask[t] != 0 || maps[at] == 0.0f; /* masked keys: exactly 0 */
      }
      ref_maps(ids, mask, N, h, q, 1, pr);
      for (int t = 0; t < N; t++) rcz[(size_t)h * N * N + (size_t)q * N + t] = pr[t];
    }
  CHECK(exact);
  double sc;
  CHECK(max_abs_diff(d, rd, H * N, &sc) <= 1e-5 * sc);
  CHECK(max_abs_diff(maps, rmaps, N * N * H, &sc) <= 1e-4 * sc);
  CHECK(max_abs_diff(pm, rpm, N * N * H, &sc) <= 1e-4 * sc);
  CHECK(max_abs_diff(cz, rcz, N * N * H, &sc) <= 1e-4 * sc);
  /* no mask given: all 1, as an explicit one */
  static float maps1[N * N * H], maps2[N * N * H];
  float *o1[1] = {maps1}, *o2[1] = {maps2};
  const int64_t w3 = 3;
  CHECK_OK(fm_llm_run(m, ids, NULL, NULL, N, 1, &w3, o1, &cap[3], ne, NULL, &err), &err);
  CHECK_OK(fm_llm_run(m, ids, NULL, ones, N, 1, &w3, o2, &cap[3], ne, NULL, &err), &err);
  CHECK(memcmp(maps1, maps2, sizeof maps1) == 0);
  /* refusals */
  const float half[N] = {1, 1, 0.5f, 1, 1, 1, 0, 0};
  fm_err_clear(&err);
  CHECK(fm_llm_run(m, ids, NULL, half, N, 1, &w3, o1, &cap[3], ne, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "mask[2] is 0.5") != NULL);
  const float none[N] = {0};
  CHECK(fm_llm_run(m, ids, NULL, none, N, 1, &w3, o1, &cap[3], ne, NULL, &err) == FM_EARG);
  CHECK(strstr(err.msg, "no position at 1") != NULL);
  fm_llm_model_free(m);
  m = NULL;
  nd[5].args[0] = 1; /* ne_id of the positions */
  CHECK(fm_llm_model_new_program(g, &p, 1, FM_LLM_DEVICE_CPU, 0, &m, &err) == FM_EARG);
  CHECK(strstr(err.msg, "node 5 (ne_id): expected the token input") != NULL);
  v3_program(nd);
  nd[9].args[1] = 4; /* pair_mask by an activation of 64 rows */
  CHECK(fm_llm_model_new_program(g, &p, 1, FM_LLM_DEVICE_CPU, 0, &m, &err) == FM_EARG);
  CHECK(strstr(err.msg, "node 9 (pair_mask)") != NULL);
  CHECK(m == NULL);
}

/* The program of head_program with one change, expected refused with
 * status st and a message holding want. */
static void refused(void (*change)(fm_llm_node *nd, fm_llm_program *p), fm_status st, const char *want) {
  fm_llm_node nd[N_HEAD_NODES + 4];
  head_program(nd);
  fm_llm_program p = {"bad", FM_LLM_VOCABULARY, N_HEAD_NODES, nd, 7, 0, -1, 0, NULL};
  change(nd, &p);
  fm_llm_model *m = NULL;
  fm_err err;
  fm_err_clear(&err);
  CHECK(fm_llm_model_new_program(g, &p, 1, FM_LLM_DEVICE_CPU, 0, &m, &err) == st);
  CHECK(m == NULL);
  if (!strstr(err.msg, want)) fprintf(stderr, "  expected \"%s\" in: %s\n", want, err.msg);
  CHECK(strstr(err.msg, want) != NULL);
}

static void op_outside(fm_llm_node *nd, fm_llm_program *p) { (void)p; nd[3].op = FM_LLM_OP_COUNT; }
static void later_arg(fm_llm_node *nd, fm_llm_program *p) { (void)p; nd[3].args[0] = 5; }
static void missing_arg(fm_llm_node *nd, fm_llm_program *p) { (void)p; nd[7].args[1] = -1; }
static void extra_arg(fm_llm_node *nd, fm_llm_program *p) { (void)p; nd[3].args[1] = 2; }
static void width(fm_llm_node *nd, fm_llm_program *p) { (void)p; nd[7].args[0] = 0; }
static void mismatch(fm_llm_node *nd, fm_llm_program *p) {
  (void)p;
  nd[4] = param("blk.0.ffn_up.weight", FM_LLM_PARAM_MATMUL); /* [64, 172]: fine, */
  nd[5] = node(FM_LLM_OP_MATMUL, 3, 4);                       /* then [172, T] x output [64, ..] */
}
static void type_class(fm_llm_node *nd, fm_llm_program *p) {
  (void)p;
  nd[4] = param("output_norm.weight", FM_LLM_PARAM_MATMUL);
  nd[4].type_class = 7;
}
static void no_tensor(fm_llm_node *nd, fm_llm_program *p) { (void)p; nd[6].tensor = 1 << 20; }
static void eps(fm_llm_node *nd, fm_llm_program *p) { (void)p; nd[3].fa[0] = 2.0; }
static void cropped(fm_llm_node *nd, fm_llm_program *p) {
  (void)p;
  nd[3] = node(FM_LLM_OP_CROP, 2, -1);
  nd[3].ia[0] = 1;
  nd[3].ia[1] = 1;
  nd[7] = node(FM_LLM_OP_POOL, 5, -1);
  nd[7].ia[0] = 1;
}
static void version(fm_llm_node *nd, fm_llm_program *p) { (void)nd; p->vocabulary = 99; }
static void logits(fm_llm_node *nd, fm_llm_program *p) { (void)nd; p->logits = 8; }
static void rows(fm_llm_node *nd, fm_llm_program *p) {
  (void)p;
  nd[5] = node(FM_LLM_OP_ROWS, 3, -1);
  nd[5].ia[0] = 60;
  nd[5].ia[1] = 8;
}
/* two attentions on slot 0 (queries, keys and values the normed
 * embedding, 8 heads of 8) */
static void slots(fm_llm_node *nd, fm_llm_program *p) {
  nd[4] = input(FM_LLM_IN_POSITIONS);
  for (int k = 5; k <= 6; k++) {
    nd[k] = node(FM_LLM_OP_ATTENTION, 3, 3);
    nd[k].args[2] = 3;
    nd[k].args[3] = 4;
    nd[k].ia[0] = 8;
    nd[k].ia[1] = 8;
    nd[k].fa[0] = 0.35;
    nd[k].layer = 0;
  }
  nd[7] = node(FM_LLM_OP_ADD, 5, 6);
  nd[8] = param("output.weight", FM_LLM_PARAM_MATMUL);
  nd[9] = node(FM_LLM_OP_MATMUL, 7, 8);
  p->n_nodes = 10;
  p->logits = 9;
}
static void mask(fm_llm_node *nd, fm_llm_program *p) {
  slots(nd, p);
  nd[6].layer = 1;
  nd[6].ia[2] = 9;
}

static void test_refusals(void) {
  if (!open_story()) return;
  refused(op_outside, FM_EARG, "program node 3: operator");
  refused(later_arg, FM_EARG, "program node 3 (rms_norm): argument 1 is node 5, not an earlier node");
  refused(missing_arg, FM_EARG, "program node 7 (matmul): argument 2 is missing");
  refused(extra_arg, FM_EARG, "program node 3 (rms_norm): argument 2 is node 2, but the operator takes fewer");
  refused(width, FM_EARG, "program node 7 (matmul): expected x [k, T] and a parameter [k, m], got I32 [1, T]");
  refused(mismatch, FM_EARG, "program node 7 (matmul): expected x [k, T] and a parameter [k, m], got [172, T]");
  refused(type_class, FM_EARG, "program node 4 (param): type class 7");
  refused(no_tensor, FM_EARG, "program node 6 (param): tensor index 1048576 is not in the file");
  refused(eps, FM_EARG, "program node 3 (rms_norm): eps 2 is not in [0, 1)");
  refused(cropped, FM_EARG, "program node 7 (pool): its input is cropped (2 positions), which it cannot take");
  refused(version, FM_EARG, "vocabulary is version 99");
  refused(logits, FM_EARG, "the outputs are nodes 8 (logits) and -1 (embedding)");
  refused(rows, FM_EARG, "program node 5 (rows): rows 60 .. 67 are not within [64, T]");
  refused(slots, FM_EARG, "program node 6 (attention): cache slot 0 is another operator's");
  refused(mask, FM_EARG, "program node 6 (attention): mask 9");
  fm_llm_model *m = NULL;
  fm_err err;
  CHECK(fm_llm_model_new_program(g, NULL, 1, FM_LLM_DEVICE_CPU, 0, &m, &err) == FM_EARG);
  CHECK(fm_llm_op_find("attention") == FM_LLM_OP_ATTENTION);
  CHECK(fm_llm_op_find("no_such_op") == -1);
  CHECK(strcmp(fm_llm_op_name(FM_LLM_OP_SOFTMAX), "softmax") == 0);
  CHECK(fm_llm_op_name(FM_LLM_OP_COUNT) == NULL);
}

int main(void) {
  FM_RUN(test_head);
  FM_RUN(test_refusals);
  FM_RUN(test_v2_ops);
  FM_RUN(test_v3_padding);
  fm_gguf_close(g);
  FM_TEST_END();
}
