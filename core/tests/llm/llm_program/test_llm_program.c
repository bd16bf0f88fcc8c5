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
 *    vocabulary version, a logits node outside the program. */
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

static fm_llm_node param(const char *name, int type_class) {
  fm_llm_node n = node(FM_LLM_OP_PARAM, -1, -1);
  n.tensor = tensor(name);
  n.type_class = type_class;
  return n;
}

enum { N_HEAD_NODES = 8 };

/* Embedding rows, RMS norm times output_norm, the output product. */
static void head_program(fm_llm_node *nd) {
  nd[0] = node(FM_LLM_OP_INPUT, -1, -1);
  nd[0].tensor = FM_LLM_IN_TOKENS;
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
  fm_llm_program p = {"head", FM_LLM_VOCABULARY, N_HEAD_NODES, nd, 7, 0, -1};
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

/* The program of head_program with one change, expected refused with
 * status st and a message holding want. */
static void refused(void (*change)(fm_llm_node *nd, fm_llm_program *p), fm_status st, const char *want) {
  fm_llm_node nd[N_HEAD_NODES + 4];
  head_program(nd);
  fm_llm_program p = {"bad", FM_LLM_VOCABULARY, N_HEAD_NODES, nd, 7, 0, -1};
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
  nd[4] = node(FM_LLM_OP_INPUT, -1, -1);
  nd[4].tensor = FM_LLM_IN_POSITIONS;
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
  fm_gguf_close(g);
  FM_TEST_END();
}
