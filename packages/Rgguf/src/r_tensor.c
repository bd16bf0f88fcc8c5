/* r_tensor.c: tensor views (external codecs of Rfmalloc decoded through
 * GGML's type traits), whole-tensor dequantization, and the GGML backend in
 * Rfmalloc's backend registry.
 *
 * Orientation. A GGML tensor with ne[0] (contiguous) and ne[1] is an R
 * matrix of ne[1] rows and ne[0] columns: R row i is GGML row i, so
 * W %*% x with x of ne[0] rows is GGML's mul_mat(W, x). Higher dimensions
 * (ne[2], ne[3]) are stacked as further rows in a view.
 *
 * Decoding (codec "gguf <type>"): the panel rows [r0, r0+n) x columns
 * [c0, c0+m) decode, row by row, only the blocks that hold columns
 * c0..c0+m-1, through ggml_get_type_traits(type)->to_float on whole blocks.
 * GGML's quantized formats decode each block independently, so a panel
 * equals the matching part of the whole tensor's to_float bit for bit.
 *
 * The GGML backend computes X %*% B for a view: the view's blocks stay in
 * the file's mapping (the GGML tensor's data pointer is the mapping), B is
 * converted to F32 and GGML's CPU mul_mat quantizes it to the type's
 * vec_dot type (Q8_0/Q8_1/Q8_K for the quantized types, F16 for F16, BF16
 * for BF16, F32 for F32). It declines (FM_EUNSUPPORTED) every other
 * product: t(X) %*% B, column subsets, affine transforms, operands with
 * non-finite values (the reference path propagates NA as base R does),
 * types without a CPU vec_dot, and products too large for one GGML context.
 *
 * The decoder runs on any thread (no R API, stack scratch only); the
 * backend runs on the calling thread and lets GGML use rgguf_n_threads. */
#include "r_calls.h"

#include "fm/fm_backend.h"
#include "fm/fm_gguf.h"
#include "fm/fm_panel.h"

#include <Rfmalloc.h>

#include <ggml-cpu.h>
#include <ggml.h>

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Per GGML type: what the decoder needs, and the codec that names it. */
typedef struct type_info {
  enum ggml_type type;
  int64_t blck;      /* elements per block */
  size_t type_size;  /* bytes per block */
  ggml_to_float_t to_float;
  char name[40];     /* "gguf q4_K" */
} type_info;

static type_info infos[GGML_TYPE_COUNT];
static fm_ext_codec codecs[GGML_TYPE_COUNT];
static int rgguf_n_threads = 1;
static const char backend_name[] = "ggml";

/* Floats decoded per to_float call (whole blocks; >= the largest block). */
#define DECODE_CHUNK 4096

static fm_status ggml_panel_decode(const fm_mat *x, int64_t r0, int64_t n_rows, int64_t c0,
                                   int64_t n_cols, double *out, int64_t ld, fm_err *err) {
  const type_info *ti = (const type_info *)x->ext->ud;
  if (!ti || !ti->to_float || ti->blck < 1 || ti->blck > DECODE_CHUNK)
    return fm_err_set(err, FM_EINTERNAL, "gguf decode: no decoder for this codec");
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

/* ---- the GGML backend ---------------------------------------------------- */

static int aff_identity(const fm_affine *aff) {
  return !aff || (!aff->center && !aff->scale && !aff->fill);
}

static fm_status ggml_backend(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ud;
  (void)ctl;
  const fm_mat *x = p->x;
  if (x->codec != FM_CODEC_EXT || !x->ext || x->ext->decode != ggml_panel_decode)
    return fm_err_set(err, FM_EUNSUPPORTED, "ggml: not a GGUF tensor view");
  if (p->op != FM_OP_XB)
    return fm_err_set(err, FM_EUNSUPPORTED, "ggml: only X %%*%% B (not t(X) %%*%% B)");
  if (x->col_index)
    return fm_err_set(err, FM_EUNSUPPORTED, "ggml: a column subset of a tensor");
  if (!aff_identity(p->aff))
    return fm_err_set(err, FM_EUNSUPPORTED, "ggml: a transformed tensor");
  const type_info *ti = (const type_info *)x->ext->ud;
  const struct ggml_type_traits_cpu *cpu = ggml_get_type_traits_cpu(ti->type);
  if (!cpu || !cpu->vec_dot)
    return fm_err_set(err, FM_EUNSUPPORTED, "ggml: type %s has no CPU dot product",
                      ggml_type_name(ti->type));
  const int64_t ne0 = x->n_cols, n_rows = x->n_rows, k = p->k;
  if (ne0 < 1 || n_rows < 1 || (size_t)x->col_stride != ggml_row_size(ti->type, ne0))
    return fm_err_set(err, FM_EUNSUPPORTED, "ggml: rows are not contiguous GGML rows");
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
  struct ggml_tensor *w = ggml_new_tensor_2d(ctx, ti->type, ne0, n_rows);
  w->data = (void *)(uintptr_t)x->data; /* read only: mul_mat never writes src0 */
  ggml_set_no_alloc(ctx, false);
  struct ggml_tensor *b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ne0, k);
  float *bd = (float *)b->data;
  for (int64_t c = 0; c < k; c++)
    for (int64_t j = 0; j < ne0; j++) bd[j + c * ne0] = (float)p->b[j + c * p->ldb];
  struct ggml_tensor *y = ggml_mul_mat(ctx, w, b);
  struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, n_graph, false);
  ggml_build_forward_expand(gf, y);
  struct ggml_cplan plan = ggml_graph_plan(gf, rgguf_n_threads, NULL);
  if (plan.work_size > 0) {
    work = malloc(plan.work_size);
    if (!work) {
      st = fm_err_set(err, FM_ENOMEM, "ggml: cannot allocate a %zu-byte work buffer",
                      plan.work_size);
      goto done;
    }
  }
  plan.work_data = work;
  if (ggml_graph_compute(gf, &plan) != GGML_STATUS_SUCCESS) {
    st = fm_err_set(err, FM_EINTERNAL, "ggml: graph computation failed");
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

/* GGML has no to_float for F32 (it is the identity). */
static void f32_to_float(const void *restrict src, float *restrict dst, int64_t k) {
  memcpy(dst, src, (size_t)k * sizeof(float));
}

void rgguf_tensor_init(void) {
  ggml_cpu_init();
  for (int t = 0; t < GGML_TYPE_COUNT; t++) {
    const struct ggml_type_traits *tr = ggml_get_type_traits((enum ggml_type)t);
    type_info *ti = &infos[t];
    memset(ti, 0, sizeof *ti);
    ti->type = (enum ggml_type)t;
    ggml_to_float_t to_float = t == GGML_TYPE_F32 ? f32_to_float : tr ? tr->to_float : NULL;
    if (!tr || !to_float || tr->blck_size < 1 || tr->blck_size > DECODE_CHUNK ||
        tr->type_size == 0)
      continue;
    ti->blck = tr->blck_size;
    ti->type_size = tr->type_size;
    ti->to_float = to_float;
    snprintf(ti->name, sizeof ti->name, "gguf %s", tr->type_name ? tr->type_name : "?");
    codecs[t].name = ti->name;
    codecs[t].decode = ggml_panel_decode;
    codecs[t].ud = ti;
  }
}

/* Before the DLL goes: views made over our codecs forget them (they raise
 * fm_error_eclosed instead of calling unloaded code or reading a closed
 * mapping), and the backend leaves the registry. */
void rgguf_tensor_unload(void) {
  for (int t = 0; t < GGML_TYPE_COUNT; t++)
    if (codecs[t].decode) (void)Rfmalloc_ext_release(&codecs[t]);
  Rfmalloc_backend_unregister(backend_name);
}

SEXP rgguf_backend_register(SEXP s_on) {
  Rfmalloc_backend_unregister(backend_name);
  if (Rf_asLogical(s_on) == TRUE) Rfmalloc_backend_register(backend_name, ggml_backend, NULL);
  return R_NilValue;
}

SEXP rgguf_threads(SEXP s_n) {
  if (!Rf_isNull(s_n)) {
    int n = Rf_asInteger(s_n);
    if (n == NA_INTEGER || n < 1 || n > 512)
      rgguf_stop(FM_EARG, "the number of threads must be a whole number in 1..512");
    rgguf_n_threads = n;
  }
  return Rf_ScalarInteger(rgguf_n_threads);
}

/* ---- tensors by name ----------------------------------------------------- */

static const fm_gguf_tensor *find_tensor(const fm_gguf *g, SEXP s_name) {
  if (TYPEOF(s_name) != STRSXP || XLENGTH(s_name) != 1 || STRING_ELT(s_name, 0) == NA_STRING)
    rgguf_stop(FM_EARG, "name must be a single string");
  const char *name = Rf_translateCharUTF8(STRING_ELT(s_name, 0));
  const int64_t i = fm_gguf_find_tensor(g, name);
  const char *path = fm_gguf_path(g);
  if (i < 0)
    rgguf_stop(FM_EARG, "GGUF file '%s' has no tensor named '%s'", path ? path : "?", name);
  return fm_gguf_tensor_at(g, i);
}

/* The decoder of t's type, checked against what the reader parsed. */
static const type_info *decoder_for(const fm_gguf *g, const fm_gguf_tensor *t) {
  const char *path = fm_gguf_path(g);
  const char *tn = fm_gguf_type_name(t->type);
  if (t->type >= GGML_TYPE_COUNT || !infos[t->type].to_float)
    rgguf_stop(FM_EUNSUPPORTED, "tensor '%.*s' of '%s' has type %s, which GGML cannot decode",
               (int)t->name_len, t->name, path ? path : "?", tn ? tn : "?");
  const type_info *ti = &infos[t->type];
  if (ti->blck != fm_gguf_type_block(t->type) || (int64_t)ti->type_size != fm_gguf_type_size(t->type))
    rgguf_stop(FM_EINTERNAL, "type %s: GGML's block (%lld elements, %zu bytes) differs from the "
               "reader's", tn ? tn : "?", (long long)ti->blck, ti->type_size);
  return ti;
}

SEXP rgguf_tensor_view(SEXP x, SEXP s_name, SEXP s_source) {
  const fm_gguf *g = rgguf_file_of(x);
  const fm_gguf_tensor *t = find_tensor(g, s_name);
  const type_info *ti = decoder_for(g, t);
  const int64_t ne0 = t->ne[0];
  const double n_rows = (double)t->ne[1] * (double)t->ne[2] * (double)t->ne[3];
  const size_t row_bytes = ggml_row_size(ti->type, ne0);
  if ((double)row_bytes * n_rows != (double)t->n_bytes)
    rgguf_stop(FM_EFORMAT, "tensor '%.*s': %llu bytes for %.0f rows of %zu bytes",
               (int)t->name_len, t->name, (unsigned long long)t->n_bytes, n_rows, row_bytes);
  return Rfmalloc_ext_matrix(&codecs[ti->type], fm_gguf_tensor_data(g, t), n_rows, (double)ne0,
                             (double)row_bytes, (double)t->n_bytes, x, R_NilValue,
                             CHAR(STRING_ELT(s_source, 0)));
}

/* The whole tensor through one to_float call, as R doubles: a vector for a
 * 1-D tensor, an ne1 x ne0 matrix for 2-D, an (ne1, ne0, ne2[, ne3]) array
 * above (R's [i, j, k, l] is GGML's element (j, i, k, l)). */
SEXP rgguf_tensor_numeric(SEXP x, SEXP s_name) {
  const fm_gguf *g = rgguf_file_of(x);
  const fm_gguf_tensor *t = find_tensor(g, s_name);
  const type_info *ti = decoder_for(g, t);
  const double n_el = (double)t->ne[0] * (double)t->ne[1] * (double)t->ne[2] * (double)t->ne[3];
  if (n_el > (double)R_XLEN_T_MAX || n_el > 4e15)
    rgguf_stop(FM_EUNSUPPORTED, "tensor '%.*s' has too many elements for an R vector",
               (int)t->name_len, t->name);
  const int64_t n = (int64_t)n_el;
  int nprot = 0;
  SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)n)); nprot++;
  float *buf = (float *)R_alloc((size_t)(n > 0 ? n : 1), sizeof(float));
  ti->to_float(fm_gguf_tensor_data(g, t), buf, n);
  double *o = REAL(out);
  const int64_t ne0 = t->ne[0], ne1 = t->ne[1], plane = ne0 * ne1, n_planes = t->ne[2] * t->ne[3];
  if (t->n_dims <= 1) {
    for (int64_t e = 0; e < n; e++) o[e] = (double)buf[e];
  } else {
    for (int64_t s = 0; s < n_planes; s++) {
      const float *src = buf + s * plane;
      double *dst = o + s * plane;
      for (int64_t i = 0; i < ne1; i++)
        for (int64_t j = 0; j < ne0; j++) dst[i + j * ne1] = (double)src[j + i * ne0];
    }
    int nd = t->n_dims > 4 ? 4 : (int)t->n_dims;
    SEXP dim = PROTECT(Rf_allocVector(REALSXP, nd)); nprot++;
    REAL(dim)[0] = (double)ne1;
    REAL(dim)[1] = (double)ne0;
    for (int d = 2; d < nd; d++) REAL(dim)[d] = (double)t->ne[d];
    if (ne0 <= INT_MAX && ne1 <= INT_MAX && t->ne[2] <= INT_MAX && t->ne[3] <= INT_MAX)
      dim = Rf_coerceVector(dim, INTSXP);
    PROTECT(dim); nprot++;
    Rf_setAttrib(out, R_DimSymbol, dim);
  }
  UNPROTECT(nprot);
  return out;
}

/* For tests: GGML's name of the vec_dot type of a type id (the type the
 * backend quantizes the operand to), or NA. */
SEXP rgguf_vec_dot_type(SEXP s_type) {
  int t = Rf_asInteger(s_type);
  if (t == NA_INTEGER || t < 0 || t >= GGML_TYPE_COUNT) return Rf_ScalarString(NA_STRING);
  const struct ggml_type_traits_cpu *cpu = ggml_get_type_traits_cpu((enum ggml_type)t);
  if (!cpu || !cpu->vec_dot) return Rf_ScalarString(NA_STRING);
  return Rf_mkString(ggml_type_name(cpu->vec_dot_type));
}

const R_CallMethodDef rgguf_tensor_calls[] = {
    {"rgguf_tensor_view", (DL_FUNC)&rgguf_tensor_view, 3},
    {"rgguf_tensor_numeric", (DL_FUNC)&rgguf_tensor_numeric, 2},
    {"rgguf_backend_register", (DL_FUNC)&rgguf_backend_register, 1},
    {"rgguf_threads", (DL_FUNC)&rgguf_threads, 1},
    {"rgguf_vec_dot_type", (DL_FUNC)&rgguf_vec_dot_type, 1},
    {NULL, NULL, 0}};
