/* llm_tensor.c: GGUF tensor views decoded by GGML, whole-tensor
 * dequantization and the GGML backend (fm_llm_tensor.h).
 *
 * GGML is the authority on its block formats: every decode goes through
 * ggml_get_type_traits(type)->to_float and every product through
 * ggml_mul_mat on GGML's CPU backend. This module only decides which blocks
 * a panel needs, checks what GGML would assert on before calling it, and
 * converts between GGML's row-major floats and column-major doubles. */
#include "fm/fm_llm_tensor.h"

#include <ggml-cpu.h>
#include <ggml.h>

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per GGML type: what the decoder needs, and the codec that names it. */
typedef struct type_info {
  enum ggml_type type;
  int64_t blck;     /* elements per block */
  size_t type_size; /* bytes per block */
  ggml_to_float_t to_float;
  char name[40]; /* "gguf q4_K" */
} type_info;

static type_info infos[GGML_TYPE_COUNT];
static fm_ext_codec codecs[GGML_TYPE_COUNT];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Floats decoded per to_float call in a panel (whole blocks; >= the largest
 * block, 256): 16 KiB of stack. */
#define DECODE_CHUNK 4096

static fm_status panel_decode(const fm_mat *x, int64_t r0, int64_t n_rows, int64_t c0,
                              int64_t n_cols, double *out, int64_t ld, fm_err *err);

/* GGML has no to_float for F32 (it is the identity). */
static void f32_to_float(const void *restrict src, float *restrict dst, int64_t k) {
  memcpy(dst, src, (size_t)k * sizeof(float));
}

/* Types whose GGML block traits agree with the reader's table get a codec;
 * the others (integer types, ids GGML removed) stay without. */
static void init_tables(void) {
  ggml_cpu_init(); /* fp16 tables and CPU feature detection for the kernels */
  for (int t = 0; t < GGML_TYPE_COUNT; t++) {
    const struct ggml_type_traits *tr = ggml_get_type_traits((enum ggml_type)t);
    type_info *ti = &infos[t];
    ti->type = (enum ggml_type)t;
    if (!tr) continue;
    ggml_to_float_t to_float = t == GGML_TYPE_F32 ? f32_to_float : tr->to_float;
    if (!to_float || tr->blck_size < 1 || tr->blck_size > DECODE_CHUNK || tr->type_size == 0)
      continue;
    if (tr->blck_size != fm_gguf_type_block((uint32_t)t) ||
        (int64_t)tr->type_size != fm_gguf_type_size((uint32_t)t))
      continue;
    ti->blck = tr->blck_size;
    ti->type_size = tr->type_size;
    ti->to_float = to_float;
    snprintf(ti->name, sizeof ti->name, "gguf %s", tr->type_name ? tr->type_name : "?");
    codecs[t].name = ti->name;
    codecs[t].decode = panel_decode;
    codecs[t].ud = ti;
  }
}

static void ensure_init(void) { (void)pthread_once(&init_once, init_tables); }

const fm_ext_codec *fm_llm_tensor_codec(uint32_t type) {
  ensure_init();
  if (type >= GGML_TYPE_COUNT || !codecs[type].decode) return NULL;
  return &codecs[type];
}

int fm_llm_tensor_codec_type(const fm_ext_codec *codec) {
  if (!codec || codec->decode != panel_decode) return -1;
  const type_info *ti = (const type_info *)codec->ud;
  return ti ? (int)ti->type : -1;
}

const char *fm_llm_tensor_vec_dot_type(uint32_t type) {
  ensure_init();
  if (type >= GGML_TYPE_COUNT || ggml_blck_size((enum ggml_type)type) == 0) return NULL;
  const struct ggml_type_traits_cpu *cpu = ggml_get_type_traits_cpu((enum ggml_type)type);
  if (!cpu || !cpu->vec_dot) return NULL;
  return ggml_type_name(cpu->vec_dot_type);
}

/* ---- panel decode ------------------------------------------------------------ */

/* Rows [r0, r0+n_rows) x columns [c0, c0+n_cols): per row, the blocks
 * b_first..b_last that hold those columns, DECODE_CHUNK floats per to_float
 * call, and the wanted columns of each chunk copied out. The core has
 * checked the panel against the view (fm_panel.h). */
static fm_status panel_decode(const fm_mat *x, int64_t r0, int64_t n_rows, int64_t c0,
                              int64_t n_cols, double *out, int64_t ld, fm_err *err) {
  const type_info *ti = x->ext ? (const type_info *)x->ext->ud : NULL;
  if (!ti || !ti->to_float || ti->blck < 1 || ti->blck > DECODE_CHUNK)
    return fm_err_set(err, FM_EINTERNAL, "gguf decode: no decoder for this codec");
  /* The file behind the bytes has not shrunk (one fstat a panel). */
  fm_status st = fm_gguf_check_addr(x->data, err);
  if (st != FM_OK) return st;
  float tmp[DECODE_CHUNK];
  const int64_t blck = ti->blck;
  const int64_t per_call = DECODE_CHUNK / blck; /* blocks per to_float call */
  const int64_t b_first = c0 / blck, b_last = (c0 + n_cols - 1) / blck;
  const uint8_t *base = (const uint8_t *)x->data;
  for (int64_t i = 0; i < n_rows; i++) {
    const uint8_t *row = base + (r0 + i) * x->col_stride;
    double *o = out + i;
    for (int64_t b = b_first; b <= b_last; b += per_call) {
      const int64_t nb = b_last - b + 1 < per_call ? b_last - b + 1 : per_call;
      ti->to_float(row + (size_t)b * ti->type_size, tmp, nb * blck);
      /* columns [e0, e1) of this chunk that the panel wants */
      int64_t e0 = b * blck, e1 = (b + nb) * blck;
      if (e0 < c0) e0 = c0;
      if (e1 > c0 + n_cols) e1 = c0 + n_cols;
      for (int64_t e = e0; e < e1; e++) o[(e - c0) * ld] = (double)tmp[e - b * blck];
    }
  }
  return FM_OK;
}

/* ---- views and whole tensors ------------------------------------------------- */

int64_t fm_llm_tensor_n_elements(const fm_gguf_tensor *t) {
  if (!t) return -1;
  int64_t n = 1;
  for (int d = 0; d < FM_GGUF_MAX_DIMS; d++)
    if (!fm_mul_ok(n, t->ne[d], &n)) return -1;
  return n;
}

/* The decoder of t's type, checked against what the reader parsed. */
static fm_status decoder_for(const fm_gguf *g, const fm_gguf_tensor *t, const type_info **out,
                             fm_err *err) {
  ensure_init();
  *out = NULL;
  const char *path = fm_gguf_path(g);
  const char *tn = fm_gguf_type_name(t->type);
  if (t->type < GGML_TYPE_COUNT && !infos[t->type].to_float) {
    const struct ggml_type_traits *tr = ggml_get_type_traits((enum ggml_type)t->type);
    if (tr && tr->blck_size > 0 &&
        (tr->blck_size != fm_gguf_type_block(t->type) ||
         (int64_t)tr->type_size != fm_gguf_type_size(t->type)))
      return fm_err_set(err, FM_EINTERNAL,
                        "type %s: GGML's block (%lld elements, %zu bytes) differs from the "
                        "reader's (%lld elements, %lld bytes)",
                        tn ? tn : "?", (long long)tr->blck_size, tr->type_size,
                        (long long)fm_gguf_type_block(t->type),
                        (long long)fm_gguf_type_size(t->type));
  }
  if (t->type >= GGML_TYPE_COUNT || !infos[t->type].to_float)
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "tensor '%.*s' of '%s' has type %s, which GGML cannot decode", (int)t->name_len,
                      t->name, path ? path : "?", tn ? tn : "?");
  *out = &infos[t->type];
  return FM_OK;
}

fm_status fm_llm_tensor_view(const fm_gguf *g, const fm_gguf_tensor *t, fm_mat *out, fm_err *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!g || !t || !out) return fm_err_set(err, FM_EARG, "fm_llm_tensor_view: NULL argument");
  const type_info *ti;
  fm_status st = decoder_for(g, t, &ti, err);
  if (st != FM_OK) return st;
  if ((st = fm_gguf_check(g, err)) != FM_OK) return st;
  const int64_t ne0 = t->ne[0];
  int64_t n_rows = 1;
  for (int d = 1; d < FM_GGUF_MAX_DIMS; d++)
    if (!fm_mul_ok(n_rows, t->ne[d], &n_rows))
      return fm_err_set(err, FM_EFORMAT, "tensor '%.*s': its row count overflows",
                        (int)t->name_len, t->name);
  const size_t row_bytes = ggml_row_size(ti->type, ne0);
  if (ne0 % ti->blck != 0 || (double)row_bytes * (double)n_rows != (double)t->n_bytes)
    return fm_err_set(err, FM_EFORMAT, "tensor '%.*s': %llu bytes for %lld rows of %zu bytes",
                      (int)t->name_len, t->name, (unsigned long long)t->n_bytes,
                      (long long)n_rows, row_bytes);
  /* What fm_mat_init_ext would set (its checks hold by construction); set
   * here so that packages linking this module need not compile panel.c. */
  out->codec = FM_CODEC_EXT;
  out->data = fm_gguf_tensor_data(g, t);
  out->n_rows = n_rows;
  out->n_cols = ne0;
  out->col_stride = (int64_t)row_bytes;
  out->ext = &codecs[ti->type];
  out->n_stored_cols = ne0;
  return FM_OK;
}

fm_status fm_llm_tensor_dequantize(const fm_gguf *g, const fm_gguf_tensor *t, double *out,
                                   int64_t n, fm_err *err) {
  if (!g || !t || (!out && n > 0))
    return fm_err_set(err, FM_EARG, "fm_llm_tensor_dequantize: NULL argument");
  const type_info *ti;
  fm_status st = decoder_for(g, t, &ti, err);
  if (st != FM_OK) return st;
  const int64_t n_el = fm_llm_tensor_n_elements(t);
  if (n_el != n)
    return fm_err_set(err, FM_EARG, "tensor '%.*s' has %lld elements, not %lld", (int)t->name_len,
                      t->name, (long long)n_el, (long long)n);
  if (n == 0) return FM_OK;
  if ((st = fm_gguf_check(g, err)) != FM_OK) return st;
  if ((uint64_t)n > SIZE_MAX / sizeof(float))
    return fm_err_set(err, FM_ENOMEM, "tensor '%.*s': %lld floats do not fit in memory",
                      (int)t->name_len, t->name, (long long)n);
  float *buf = malloc((size_t)n * sizeof(float));
  if (!buf)
    return fm_err_set(err, FM_ENOMEM, "tensor '%.*s': cannot allocate %lld floats",
                      (int)t->name_len, t->name, (long long)n);
  ti->to_float(fm_gguf_tensor_data(g, t), buf, n); /* one call on all blocks */
  const int64_t ne0 = t->ne[0], ne1 = t->ne[1], plane = ne0 * ne1, n_planes = n / plane;
  if (t->n_dims <= 1) {
    for (int64_t e = 0; e < n; e++) out[e] = (double)buf[e];
  } else {
    for (int64_t s = 0; s < n_planes; s++) {
      const float *src = buf + s * plane;
      double *dst = out + s * plane;
      for (int64_t i = 0; i < ne1; i++)
        for (int64_t j = 0; j < ne0; j++) dst[i + j * ne1] = (double)src[j + i * ne0];
    }
  }
  free(buf);
  return FM_OK;
}

/* ---- the GGML backend -------------------------------------------------------- */

/* GGML's compute-abort hook: runs on the thread that called
 * ggml_graph_compute (GGML's thread 0), between graph nodes. */
static bool abort_hook(void *data) { return fm_ctl_cancelled((const fm_ctl *)data) != 0; }

fm_status fm_llm_tensor_backend(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ud;
  if (!p || !p->x) return fm_err_set(err, FM_EUNSUPPORTED, "ggml: no product");
  const fm_mat *x = p->x;
  const int type = x->codec == FM_CODEC_EXT ? fm_llm_tensor_codec_type(x->ext) : -1;
  if (type < 0) return fm_err_set(err, FM_EUNSUPPORTED, "ggml: not a GGUF tensor view");
  if (p->op != FM_OP_XB)
    return fm_err_set(err, FM_EUNSUPPORTED, "ggml: only X %%*%% B (not t(X) %%*%% B)");
  if (x->col_index)
    return fm_err_set(err, FM_EUNSUPPORTED, "ggml: a column subset of a tensor");
  if (!fm_affine_is_identity(p->aff))
    return fm_err_set(err, FM_EUNSUPPORTED, "ggml: a transformed tensor");
  ensure_init();
  const enum ggml_type gtype = (enum ggml_type)type;
  const struct ggml_type_traits_cpu *cpu = ggml_get_type_traits_cpu(gtype);
  if (!cpu || !cpu->vec_dot)
    return fm_err_set(err, FM_EUNSUPPORTED, "ggml: type %s has no CPU dot product",
                      ggml_type_name(gtype));
  const int64_t ne0 = x->n_cols, n_rows = x->n_rows, k = p->k;
  if (ne0 < 1 || n_rows < 1 || ne0 % ggml_blck_size(gtype) != 0 ||
      (size_t)x->col_stride != ggml_row_size(gtype, ne0) || x->n_stored_cols != ne0)
    return fm_err_set(err, FM_EUNSUPPORTED, "ggml: rows are not contiguous GGML rows");
  if (k < 1 || !p->b || !p->y || p->ldb < ne0 || p->ldy < n_rows)
    return fm_err_set(err, FM_EUNSUPPORTED, "ggml: operands do not describe X %%*%% B");
  /* One context holds B, Y (F32) and a small graph: refuse sizes that
   * overflow or that GGML's int-indexed kernels might not take. */
  if (ne0 > INT_MAX || n_rows > INT_MAX || k > INT_MAX || (double)ne0 * (double)k > 1e9 ||
      (double)n_rows * (double)k > 1e9)
    return fm_err_set(err, FM_EUNSUPPORTED, "ggml: product too large for one GGML context");
  for (int64_t c = 0; c < k; c++) {
    const double *bc = p->b + c * p->ldb;
    for (int64_t j = 0; j < ne0; j++)
      if (!isfinite(bc[j]) || fabs(bc[j]) > 3.0e38)
        return fm_err_set(err, FM_EUNSUPPORTED,
                          "ggml: the operand has NA, NaN, Inf or values beyond float range");
  }
  if (fm_ctl_cancelled(ctl))
    return fm_err_set(err, FM_ECANCELLED, "ggml: cancelled before the product");
  /* The file behind the view has not shrunk since it was opened. */
  fm_status cst = fm_gguf_check_addr(x->data, err);
  if (cst != FM_OK) return cst;
  /* GNU OpenMP's pool (GGML's threads) does not survive fork() */
  const int n_threads = ctl && ctl->forked ? 1 : fm_threads(ctl);

  const size_t n_graph = 8;
  const size_t ctx_bytes = 4 * ggml_tensor_overhead() + ggml_graph_overhead_custom(n_graph, false) +
                           (size_t)ne0 * (size_t)k * sizeof(float) +
                           (size_t)n_rows * (size_t)k * sizeof(float) + 4096;
  struct ggml_init_params ip = {ctx_bytes, NULL, false};
  struct ggml_context *ctx = ggml_init(ip);
  if (!ctx) return fm_err_set(err, FM_ENOMEM, "ggml: cannot allocate %zu bytes", ctx_bytes);
  uint8_t *work = NULL;
  fm_status st = FM_OK;

  ggml_set_no_alloc(ctx, true);
  struct ggml_tensor *w = ggml_new_tensor_2d(ctx, gtype, ne0, n_rows);
  w->data = (void *)(uintptr_t)x->data; /* read only: mul_mat never writes src0 */
  ggml_set_no_alloc(ctx, false);
  struct ggml_tensor *b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ne0, k);
  float *bd = (float *)b->data;
  for (int64_t c = 0; c < k; c++)
    for (int64_t j = 0; j < ne0; j++) bd[j + c * ne0] = (float)p->b[j + c * p->ldb];
  struct ggml_tensor *y = ggml_mul_mat(ctx, w, b);
  struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, n_graph, false);
  ggml_build_forward_expand(gf, y);
  struct ggml_cplan plan = ggml_graph_plan(gf, n_threads, NULL);
  if (plan.work_size > 0) {
    work = malloc(plan.work_size);
    if (!work) {
      st = fm_err_set(err, FM_ENOMEM, "ggml: cannot allocate a %zu-byte work buffer",
                      plan.work_size);
      goto done;
    }
  }
  plan.work_data = work;
  if (ctl && ctl->cancel) {
    plan.abort_callback = abort_hook;
    plan.abort_callback_data = (void *)(uintptr_t)ctl;
  }
  enum ggml_status gs = ggml_graph_compute(gf, &plan);
  if (gs == GGML_STATUS_ABORTED) {
    st = fm_err_set(err, FM_ECANCELLED, "ggml: cancelled during the product");
    goto done;
  }
  if (gs != GGML_STATUS_SUCCESS) {
    st = fm_err_set(err, FM_EINTERNAL, "ggml: graph computation failed (status %d)", (int)gs);
    goto done;
  }
  const float *yd = (const float *)y->data;
  for (int64_t c = 0; c < k; c++)
    for (int64_t i = 0; i < n_rows; i++) p->y[i + c * p->ldy] = (double)yd[i + c * n_rows];
done:
  free(work);
  ggml_free(ctx);
  return st;
}
