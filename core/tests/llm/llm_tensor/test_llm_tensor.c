/* fm_llm_tensor.h: GGUF tensor views decoded by GGML, whole-tensor
 * dequantization and the GGML backend.
 *  - quant zoo ($RFMALLOC_FIXTURES/gguf/derived/quant-zoo-stories260K.gguf,
 *    one 128 x 256 tensor of each of 13 types and an F32 input x, 4 x 256):
 *    fm_panel_decode of a view, on tiles down to 1 x 1 that cross block
 *    boundaries and under a budget of one double, equals GGML's whole-tensor
 *    to_float (called here directly) bit for bit, as does
 *    fm_llm_tensor_dequantize; the backend's W x agrees with the reference
 *    path (decode + dgemm) within the quantization error of x (the bound of
 *    fm_llm_tensor.h), and the difference is real for the quantized
 *    vec_dot types; the thread count does not change the result;
 *  - hand-built files (no fixtures needed): Q4_0 and Q8_0 blocks with values
 *    worked out from the block layout (nibble order), a 3-D F32 tensor's
 *    stacked view and R-orientation array, an I32 tensor GGML cannot
 *    decode (FM_EUNSUPPORTED), argument errors; a file truncated under an
 *    open view (FM_EFORMAT from the decoder, the backend, view, dequantize);
 *  - declines: t(X) B, column subsets, transforms, NaN/Inf/huge operands,
 *    other codecs; cancellation. */
#define _GNU_SOURCE
#include "fm/fm_backend.h"
#include "fm/fm_gguf.h"
#include "fm/fm_llm_tensor.h"
#include "fm/fm_panel.h"
#include "fm_test.h"
#include "fm_test_files.h"

#include <ggml.h>
#include <string.h>
#include <unistd.h>

static char zoo_path[1200];
static int have_zoo;

static const char *const zoo_types[] = {"F32",  "F16",  "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
                                        "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"};
static const char *const zoo_vdt[] = {"f32",  "f16",  "bf16", "q8_0", "q8_1", "q8_0", "q8_1",
                                      "q8_0", "q8_K", "q8_K", "q8_K", "q8_K", "q8_K"};
#define N_ZOO 13
#define ZOO_ROWS 128
#define ZOO_COLS 256
#define X_ROWS 4

static const fm_gguf_tensor *tensor_named(const fm_gguf *g, const char *name) {
  int64_t i = fm_gguf_find_tensor(g, name);
  return i < 0 ? NULL : fm_gguf_tensor_at(g, i);
}

static int same_bits(const double *a, const double *b, size_t n) {
  return memcmp(a, b, n * sizeof(double)) == 0;
}

/* GGML's whole-tensor to_float, widened, in the R orientation (ne1 x ne0). */
static void whole_to_float(const fm_gguf *g, const fm_gguf_tensor *t, double *out) {
  const int64_t ne0 = t->ne[0], ne1 = t->ne[1], n = ne0 * ne1;
  float *buf = malloc((size_t)n * sizeof(float));
  const uint8_t *data = fm_gguf_tensor_data(g, t);
  if (t->type == GGML_TYPE_F32)
    memcpy(buf, data, (size_t)n * sizeof(float));
  else
    ggml_get_type_traits((enum ggml_type)t->type)->to_float(data, buf, n);
  for (int64_t i = 0; i < ne1; i++)
    for (int64_t j = 0; j < ne0; j++) out[i + j * ne1] = (double)buf[j + i * ne0];
  free(buf);
}

/* Decode x on a grid of tiles of (rs, cs) through fm_panel_decode. */
static int decode_tiled(const fm_mat *x, const fm_affine *aff, int64_t rs, int64_t cs,
                        double *out) {
  fm_err err;
  double *tile = malloc((size_t)(rs * cs) * sizeof(double));
  int ok = 1;
  for (int64_t r0 = 0; r0 < x->n_rows; r0 += rs) {
    const int64_t nr = r0 + rs <= x->n_rows ? rs : x->n_rows - r0;
    for (int64_t c0 = 0; c0 < x->n_cols; c0 += cs) {
      const int64_t nc = c0 + cs <= x->n_cols ? cs : x->n_cols - c0;
      if (fm_panel_decode(x, aff, r0, nr, c0, nc, tile, nr, &err) != FM_OK) {
        fprintf(stderr, "  decode %lld+%lld x %lld+%lld: %s\n", (long long)r0, (long long)nr,
                (long long)c0, (long long)nc, err.msg);
        ok = 0;
        goto out;
      }
      for (int64_t j = 0; j < nc; j++)
        for (int64_t i = 0; i < nr; i++) out[(r0 + i) + (c0 + j) * x->n_rows] = tile[i + j * nr];
    }
  }
out:
  free(tile);
  return ok;
}

static void zoo_panel_decode(void) {
  if (!have_zoo) return;
  fm_gguf *g = NULL;
  fm_err err;
  CHECK_OK(fm_gguf_open(zoo_path, &g, &err), &err);
  if (!g) return;
  CHECK(fm_gguf_n_tensors(g) == N_ZOO + 1);
  const size_t n = (size_t)ZOO_ROWS * ZOO_COLS;
  double *whole = malloc(n * sizeof(double)), *deq = malloc(n * sizeof(double)),
         *tiled = malloc(n * sizeof(double)), *f32 = malloc(n * sizeof(double));
  static const int64_t steps[][2] = {{128, 256}, {37, 45}, {1, 7}, {128, 1}, {5, 300}, {1, 1}};
  for (int k = 0; k < N_ZOO; k++) {
    char name[32], codec_name[40];
    snprintf(name, sizeof name, "w.%s", zoo_types[k]);
    const fm_gguf_tensor *t = tensor_named(g, name);
    CHECK(t != NULL);
    if (!t) continue;
    fm_mat x;
    CHECK_OK(fm_llm_tensor_view(g, t, &x, &err), &err);
    CHECK(x.codec == FM_CODEC_EXT && x.n_rows == ZOO_ROWS && x.n_cols == ZOO_COLS);
    CHECK(x.ext == fm_llm_tensor_codec(t->type));
    CHECK(fm_llm_tensor_codec_type(x.ext) == (int)t->type);
    snprintf(codec_name, sizeof codec_name, "gguf %s", ggml_type_name((enum ggml_type)t->type));
    CHECK(x.ext && strcmp(x.ext->name, codec_name) == 0);
    CHECK(x.data == fm_gguf_tensor_data(g, t)); /* zero copy */
    CHECK(x.col_stride * ZOO_ROWS == (int64_t)t->n_bytes);
    whole_to_float(g, t, whole);
    CHECK_OK(fm_llm_tensor_dequantize(g, t, deq, (int64_t)n, &err), &err);
    CHECK(same_bits(deq, whole, n));
    int bad = 0;
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
      memset(tiled, 0, n * sizeof(double));
      if (!decode_tiled(&x, NULL, steps[s][0], steps[s][1], tiled) || !same_bits(tiled, whole, n)) {
        fprintf(stderr, "  %s: tiles %lld x %lld differ from to_float\n", zoo_types[k],
                (long long)steps[s][0], (long long)steps[s][1]);
        bad++;
      }
    }
    CHECK(bad == 0);
    /* a column index crossing blocks backwards, decoded a column at a time */
    int64_t idx[5] = {199, 1, 2, 3, 255};
    fm_mat sub = x;
    sub.col_index = idx;
    sub.n_cols = 5;
    double got[ZOO_ROWS * 5];
    CHECK(decode_tiled(&sub, NULL, 7, 1, got));
    for (int j = 0; j < 5; j++)
      CHECK(same_bits(got + j * ZOO_ROWS, whole + idx[j] * ZOO_ROWS, ZOO_ROWS));
    /* the panel plan of a one-double budget decodes 1 x 1 panels */
    fm_panel_plan plan = fm_panel_plan_for(&x, 8);
    CHECK(plan.rows * plan.cols == 1);
    if (k == 0) memcpy(f32, whole, n * sizeof(double));
    double maxerr = 0;
    for (size_t e = 0; e < n; e++) {
      CHECK(isfinite(whole[e]));
      if (fabs(whole[e] - f32[e]) > maxerr) maxerr = fabs(whole[e] - f32[e]);
    }
    /* F32 is the source; every other type approximates it */
    CHECK(k == 0 ? maxerr == 0 : maxerr > 0 && maxerr < 0.5);
  }
  free(whole);
  free(deq);
  free(tiled);
  free(f32);
  fm_gguf_close(g);
}

/* Bound on |b - q(b)| of each element of B (ne0 x k) quantized to vdt
 * (fm_llm_tensor.h). */
static void act_error(const double *b, int64_t ne0, int64_t k, const char *vdt, double *e) {
  const int blk = !strcmp(vdt, "q8_0") || !strcmp(vdt, "q8_1") ? 32 : !strcmp(vdt, "q8_K") ? 256 : 1;
  if (blk == 1) {
    const double rel = !strcmp(vdt, "f16") ? ldexp(1, -11) : !strcmp(vdt, "bf16") ? ldexp(1, -8) : 0;
    const double abs_ = !strcmp(vdt, "f16") ? ldexp(1, -24) : 0;
    for (int64_t l = 0; l < ne0 * k; l++) e[l] = fabs(b[l]) * rel + abs_;
    return;
  }
  const double f = blk == 256 ? 0.5 + 1e-4 : 0.5 + 127 * ldexp(1, -11) + 1e-4;
  for (int64_t c = 0; c < k; c++)
    for (int64_t b0 = 0; b0 < ne0; b0 += blk) {
      double m = 0;
      for (int64_t l = b0; l < b0 + blk; l++) m = fmax(m, fabs(b[l + c * ne0]));
      for (int64_t l = b0; l < b0 + blk; l++) e[l + c * ne0] = m / 127 * f;
    }
}

static void zoo_backend(void) {
  if (!have_zoo) return;
  fm_gguf *g = NULL;
  fm_err err;
  CHECK_OK(fm_gguf_open(zoo_path, &g, &err), &err);
  if (!g) return;
  const fm_gguf_tensor *tx = tensor_named(g, "x");
  CHECK(tx && tx->ne[0] == ZOO_COLS && tx->ne[1] == X_ROWS);
  if (!tx) goto out;
  const int64_t n = ZOO_ROWS, p = ZOO_COLS, k = X_ROWS;
  double xr[X_ROWS * ZOO_COLS], b[ZOO_COLS * X_ROWS], e[ZOO_COLS * X_ROWS];
  CHECK_OK(fm_llm_tensor_dequantize(g, tx, xr, k * p, &err), &err);
  for (int64_t c = 0; c < k; c++) /* B = t(x): column c is GGML row c of x */
    for (int64_t l = 0; l < p; l++) b[l + c * p] = xr[c + l * k];
  double *w = malloc((size_t)(n * p) * sizeof(double));
  double y[ZOO_ROWS * X_ROWS], y2[ZOO_ROWS * X_ROWS], yref[ZOO_ROWS * X_ROWS];
  const fm_ctl one = {.threads = 1}, two = {.threads = 2}, forked = {.threads = 2, .forked = 1};
  double worst = 0;
  for (int t_ = 0; t_ < N_ZOO; t_++) {
    char name[32];
    snprintf(name, sizeof name, "w.%s", zoo_types[t_]);
    const fm_gguf_tensor *t = tensor_named(g, name);
    fm_mat x;
    CHECK_OK(fm_llm_tensor_view(g, t, &x, &err), &err);
    const char *vdt = fm_llm_tensor_vec_dot_type(t->type);
    CHECK(vdt && strcmp(vdt, zoo_vdt[t_]) == 0);
    if (!vdt) continue;
    CHECK_OK(fm_llm_tensor_dequantize(g, t, w, n * p, &err), &err);
    fm_product pr = {FM_OP_XB, &x, NULL, b, p, k, y, n};
    CHECK_OK(fm_llm_tensor_backend(NULL, &pr, &one, &err), &err);
    pr.y = y2;
    CHECK_OK(fm_llm_tensor_backend(NULL, &pr, &two, &err), &err);
    CHECK(same_bits(y, y2, (size_t)(n * k))); /* thread count invariance */
    CHECK_OK(fm_llm_tensor_backend(NULL, &pr, &forked, &err), &err); /* one thread */
    CHECK(same_bits(y, y2, (size_t)(n * k)));
    pr.y = yref;
    CHECK_OK(fm_backend_reference(&pr, NULL, &err), &err);
    act_error(b, p, k, vdt, e);
    const int q8_1 = strcmp(vdt, "q8_1") == 0;
    double maxdiff = 0;
    int over = 0;
    for (int64_t c = 0; c < k; c++)
      for (int64_t i = 0; i < n; i++) {
        double tol = 0;
        for (int64_t l = 0; l < p; l++) {
          const double aw = fabs(w[i + l * n]);
          tol += aw * e[l + c * p] + ldexp(1, -16) * aw * fabs(b[l + c * p]);
        }
        if (q8_1) /* f16-rounded block sums of the q8_1 types */
          for (int64_t b0 = 0; b0 < p; b0 += 32) {
            double mw = 0, sx = 0, mx = 0;
            for (int64_t l = b0; l < b0 + 32; l++) {
              mw = fmax(mw, fabs(w[i + l * n]));
              sx += fabs(b[l + c * p]);
              mx = fmax(mx, fabs(b[l + c * p]));
            }
            tol += mw * (sx + 16 * mx / 127) * ldexp(1, -10);
          }
        const double d = fabs(y[i + c * n] - yref[i + c * n]);
        if (!(d <= tol)) over++;
        if (d > maxdiff) maxdiff = d;
        if (tol > 0 && d / tol > worst) worst = d / tol;
      }
    if (over) fprintf(stderr, "  %s: %d products beyond the bound\n", zoo_types[t_], over);
    CHECK(over == 0);
    /* a quantized operand really changes the result (the test has teeth) */
    if (vdt[0] == 'q') CHECK(maxdiff > 1e-6);
    if (!strcmp(vdt, "f32")) CHECK(maxdiff < 1e-4);
  }
  printf("  backend vs reference: worst difference %.3f of the bound\n", worst);
  CHECK(worst <= 1);
  free(w);
out:
  fm_gguf_close(g);
}

static int cancel_always(void *ud) {
  (void)ud;
  return 1;
}

static void zoo_declines(void) {
  if (!have_zoo) return;
  fm_gguf *g = NULL;
  fm_err err;
  CHECK_OK(fm_gguf_open(zoo_path, &g, &err), &err);
  if (!g) return;
  fm_mat x;
  CHECK_OK(fm_llm_tensor_view(g, tensor_named(g, "w.Q4_0"), &x, &err), &err);
  const int64_t n = ZOO_ROWS, p = ZOO_COLS;
  double *b = calloc((size_t)p * 2, sizeof(double)), *y = malloc((size_t)p * 2 * sizeof(double));
  for (int64_t l = 0; l < 2 * p; l++) b[l] = sin((double)l);
  fm_product pr = {FM_OP_XB, &x, NULL, b, p, 2, y, n};
  y[0] = 12345;
  pr.op = FM_OP_XTB;
  pr.ldb = n;
  pr.ldy = p;
  CHECK(fm_llm_tensor_backend(NULL, &pr, NULL, &err) == FM_EUNSUPPORTED);
  pr.op = FM_OP_XB;
  pr.ldb = p;
  pr.ldy = n;
  int64_t idx[ZOO_COLS];
  for (int64_t j = 0; j < p; j++) idx[j] = p - 1 - j;
  fm_mat sub = x;
  sub.col_index = idx;
  pr.x = &sub;
  CHECK(fm_llm_tensor_backend(NULL, &pr, NULL, &err) == FM_EUNSUPPORTED);
  pr.x = &x;
  double ctr[ZOO_COLS] = {0};
  fm_affine aff = {.center = ctr};
  pr.aff = &aff;
  CHECK(fm_llm_tensor_backend(NULL, &pr, NULL, &err) == FM_EUNSUPPORTED);
  pr.aff = NULL;
  const double bad[] = {NAN, INFINITY, -INFINITY, 1e39};
  for (int v = 0; v < 4; v++) {
    b[17] = bad[v];
    CHECK(fm_llm_tensor_backend(NULL, &pr, NULL, &err) == FM_EUNSUPPORTED);
  }
  b[17] = 0.5;
  CHECK(y[0] == 12345); /* declines write nothing */
  /* another codec */
  double dense[4] = {1, 2, 3, 4};
  fm_mat d;
  CHECK_OK(fm_mat_init(&d, FM_CODEC_F64, dense, 2, 2, 16, &err), &err);
  fm_product pd = {FM_OP_XB, &d, NULL, dense, 2, 1, y, 2};
  CHECK(fm_llm_tensor_backend(NULL, &pd, NULL, &err) == FM_EUNSUPPORTED);
  /* cancellation is not a decline */
  fm_ctl ctl = {.cancel = cancel_always};
  CHECK(fm_llm_tensor_backend(NULL, &pr, &ctl, &err) == FM_ECANCELLED);
  /* registered: fm_backend_run picks it for X B, the reference for X' B */
  CHECK_OK(fm_backend_register("ggml", fm_llm_tensor_backend, NULL, &err), &err);
  const char *used = NULL;
  CHECK_OK(fm_backend_run(&pr, NULL, &used, &err), &err);
  CHECK(used && strcmp(used, "ggml") == 0);
  pr.op = FM_OP_XTB;
  pr.ldb = n;
  pr.ldy = p;
  CHECK_OK(fm_backend_run(&pr, NULL, &used, &err), &err);
  CHECK(used && strcmp(used, "reference") == 0);
  CHECK(fm_backend_unregister("ggml"));
  free(b);
  free(y);
  fm_gguf_close(g);
}

/* ---- hand-built files ------------------------------------------------------ */

typedef struct buf {
  uint8_t d[8192];
  size_t n;
} buf;

static void put(buf *b, const void *p, size_t n) {
  memcpy(b->d + b->n, p, n);
  b->n += n;
}
static void put_u32(buf *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b->d[b->n++] = (uint8_t)(v >> (8 * i));
}
static void put_u64(buf *b, uint64_t v) {
  for (int i = 0; i < 8; i++) b->d[b->n++] = (uint8_t)(v >> (8 * i));
}

/* A GGUF v3 file with one tensor "t" of type `type`, dims ne[0..n_dims),
 * and the given data bytes (alignment 32). */
static void one_tensor_file(buf *b, uint32_t type, uint32_t n_dims, const int64_t *ne,
                            const void *data, size_t n_data) {
  b->n = 0;
  put(b, "GGUF", 4);
  put_u32(b, 3);
  put_u64(b, 1); /* tensors */
  put_u64(b, 0); /* kv */
  put_u64(b, 1);
  put(b, "t", 1);
  put_u32(b, n_dims);
  for (uint32_t d = 0; d < n_dims; d++) put_u64(b, (uint64_t)ne[d]);
  put_u32(b, type);
  put_u64(b, 0);
  while (b->n % 32) b->d[b->n++] = 0;
  put(b, data, n_data);
}

static uint16_t f16_bits(double v) { /* exact for the values used here */
  ggml_fp16_t h = ggml_fp32_to_fp16((float)v);
  uint16_t u;
  memcpy(&u, &h, 2);
  return u;
}

static void decode_all(const fm_gguf *g, double *out) {
  fm_mat x;
  fm_err err;
  CHECK_OK(fm_llm_tensor_view(g, fm_gguf_tensor_at(g, 0), &x, &err), &err);
  CHECK(decode_tiled(&x, NULL, 1, 1, out));
}

/* Q4_0: d (f16), 16 bytes; element j < 16 is (low nibble of byte j) - 8,
 * element j >= 16 the high nibble of byte j - 16, times d.
 * Q8_0: d (f16), 32 int8; element j is q[j] d. */
static void hand_blocks(void) {
  uint8_t blk[64];
  buf b;
  fm_gguf *g = NULL;
  fm_err err;
  double got[32], want[32];
  /* Q4_0 with d = 0.5: byte j holds low nibble j % 16, high nibble 15 - j % 16 */
  uint16_t d = f16_bits(0.5);
  memcpy(blk, &d, 2);
  for (int j = 0; j < 16; j++) blk[2 + j] = (uint8_t)((j & 15) | ((15 - j) << 4));
  for (int j = 0; j < 32; j++) want[j] = 0.5 * ((j < 16 ? j : 15 - (j - 16)) - 8);
  const int64_t ne[1] = {32};
  one_tensor_file(&b, GGML_TYPE_Q4_0, 1, ne, blk, 18);
  CHECK_OK(fm_gguf_parse(b.d, b.n, "hand-q4_0", &g, &err), &err);
  if (g) {
    decode_all(g, got);
    CHECK(memcmp(got, want, sizeof want) == 0);
    fm_gguf_close(g);
  }
  /* Q8_0 with d = 0.25: q[j] = j - 16 */
  d = f16_bits(0.25);
  memcpy(blk, &d, 2);
  for (int j = 0; j < 32; j++) {
    blk[2 + j] = (uint8_t)(int8_t)(j - 16);
    want[j] = 0.25 * (j - 16);
  }
  one_tensor_file(&b, GGML_TYPE_Q8_0, 1, ne, blk, 34);
  CHECK_OK(fm_gguf_parse(b.d, b.n, "hand-q8_0", &g, &err), &err);
  if (g) {
    decode_all(g, got);
    CHECK(memcmp(got, want, sizeof want) == 0);
    double deq[32];
    CHECK_OK(fm_llm_tensor_dequantize(g, fm_gguf_tensor_at(g, 0), deq, 32, &err), &err);
    CHECK(memcmp(deq, want, sizeof want) == 0);
    fm_gguf_close(g);
  }
}

/* ne = (4, 2, 3) F32 with value 100 s + 10 i + j at GGML (j, i, s): a 6 x 4
 * stacked view; dequantized, the R array dim c(2, 4, 3). */
static void stacked_f32(void) {
  float v[24];
  for (int s = 0; s < 3; s++)
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 4; j++) v[j + 4 * i + 8 * s] = (float)(100 * s + 10 * i + j);
  const int64_t ne[3] = {4, 2, 3};
  buf b;
  one_tensor_file(&b, GGML_TYPE_F32, 3, ne, v, sizeof v);
  fm_gguf *g = NULL;
  fm_err err;
  CHECK_OK(fm_gguf_parse(b.d, b.n, "hand-3d", &g, &err), &err);
  if (!g) return;
  const fm_gguf_tensor *t = fm_gguf_tensor_at(g, 0);
  fm_mat x;
  CHECK_OK(fm_llm_tensor_view(g, t, &x, &err), &err);
  CHECK(x.n_rows == 6 && x.n_cols == 4 && x.col_stride == 16);
  double got[24], arr[24];
  CHECK(decode_tiled(&x, NULL, 4, 3, got));
  for (int r = 0; r < 6; r++) /* row r = plane r / 2, GGML row r % 2 */
    for (int j = 0; j < 4; j++) CHECK(got[r + 6 * j] == 100 * (r / 2) + 10 * (r % 2) + j);
  CHECK(fm_llm_tensor_n_elements(t) == 24);
  CHECK_OK(fm_llm_tensor_dequantize(g, t, arr, 24, &err), &err);
  for (int s = 0; s < 3; s++)
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 4; j++) CHECK(arr[i + 2 * j + 8 * s] == 100 * s + 10 * i + j);
  /* a product through the backend on the stacked rows */
  double bv[4] = {1, -1, 0.5, 2}, y[6], yref[6];
  fm_product pr = {FM_OP_XB, &x, NULL, bv, 4, 1, y, 6};
  CHECK_OK(fm_llm_tensor_backend(NULL, &pr, NULL, &err), &err);
  pr.y = yref;
  CHECK_OK(fm_backend_reference(&pr, NULL, &err), &err);
  for (int r = 0; r < 6; r++) CHECK(y[r] == yref[r]); /* small integers: exact in f32 */
  CHECK(fm_llm_tensor_dequantize(g, t, arr, 23, &err) == FM_EARG);
  fm_gguf_close(g);
}

/* A view whose file is truncated under the open handle: the panel decoder,
 * the backend, a new view and fm_llm_tensor_dequantize return FM_EFORMAT
 * ("shrank") instead of touching the pages past the new end (SIGBUS). */
static void truncated_file(void) {
  char dir[64], path[128];
  if (!fm_test_tmpdir(dir, sizeof dir, "fm_llm_tensor_")) {
    CHECK(0);
    return;
  }
  snprintf(path, sizeof path, "%s/t.gguf", dir);
  /* 64 rows of one Q8_0 block: row r has d = 1, q[j] = (r + j) % 50 - 25 */
  static uint8_t data[64 * 34];
  const uint16_t d = f16_bits(1.0);
  for (int r = 0; r < 64; r++) {
    memcpy(data + 34 * r, &d, 2);
    for (int j = 0; j < 32; j++) data[34 * r + 2 + j] = (uint8_t)(int8_t)((r + j) % 50 - 25);
  }
  const int64_t ne[2] = {32, 64};
  static buf b;
  one_tensor_file(&b, GGML_TYPE_Q8_0, 2, ne, data, sizeof data);
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(b.d, 1, b.n, f) == b.n);
  if (f) fclose(f);
  fm_gguf *g = NULL;
  fm_err err;
  CHECK_OK(fm_gguf_open(path, &g, &err), &err);
  if (g) {
    const fm_gguf_tensor *t = fm_gguf_tensor_at(g, 0);
    fm_mat x;
    CHECK_OK(fm_llm_tensor_view(g, t, &x, &err), &err);
    double out[64 * 32], bv[32], y[64];
    CHECK_OK(fm_panel_decode(&x, NULL, 0, 64, 0, 32, out, 64, &err), &err);
    CHECK(out[0] == -25 && out[63 + 64 * 31] == (63 + 31) % 50 - 25);
    for (int j = 0; j < 32; j++) bv[j] = 1;
      fm_product pr = {FM_OP_XB, &x, NULL, bv, 32, 1, y, 64};
    CHECK_OK(fm_llm_tensor_backend(NULL, &pr, NULL, &err), &err);
    CHECK(truncate(path, 100) == 0);
    y[0] = 12345;
    CHECK(fm_panel_decode(&x, NULL, 63, 1, 0, 32, out, 1, &err) == FM_EFORMAT &&
          strstr(err.msg, "shrank from") && strstr(err.msg, "to 100 bytes"));
    CHECK(fm_llm_tensor_backend(NULL, &pr, NULL, &err) == FM_EFORMAT && strstr(err.msg, "shrank"));
    CHECK(y[0] == 12345); /* nothing computed */
    CHECK(fm_llm_tensor_view(g, t, &x, &err) == FM_EFORMAT && strstr(err.msg, "shrank"));
    CHECK(fm_llm_tensor_dequantize(g, t, out, 64 * 32, &err) == FM_EFORMAT &&
          strstr(err.msg, path));
    fm_gguf_close(g);
  }
  fm_test_rmtree(dir);
}

static void errors(void) {
  int32_t iv[4] = {1, 2, 3, 4};
  const int64_t ne[1] = {4};
  buf b;
  one_tensor_file(&b, GGML_TYPE_I32, 1, ne, iv, sizeof iv);
  fm_gguf *g = NULL;
  fm_err err;
  CHECK_OK(fm_gguf_parse(b.d, b.n, "hand-i32", &g, &err), &err);
  if (!g) return;
  const fm_gguf_tensor *t = fm_gguf_tensor_at(g, 0);
  fm_mat x;
  x.n_rows = 99;
  CHECK(fm_llm_tensor_view(g, t, &x, &err) == FM_EUNSUPPORTED);
  CHECK(strstr(err.msg, "hand-i32") && strstr(err.msg, "i32"));
  CHECK(x.n_rows == 0 && x.data == NULL); /* out cleared */
  double out[4];
  CHECK(fm_llm_tensor_dequantize(g, t, out, 4, &err) == FM_EUNSUPPORTED);
  CHECK(fm_llm_tensor_codec(GGML_TYPE_I32) == NULL);
  CHECK(fm_llm_tensor_codec(GGML_TYPE_COUNT) == NULL);
  CHECK(fm_llm_tensor_codec(1u << 30) == NULL);
  CHECK(fm_llm_tensor_codec(GGML_TYPE_Q4_K) != NULL);
  CHECK(fm_llm_tensor_codec_type(NULL) == -1);
  fm_ext_codec other = {"x", NULL, NULL};
  CHECK(fm_llm_tensor_codec_type(&other) == -1);
  CHECK(fm_llm_tensor_vec_dot_type(GGML_TYPE_I32) == NULL);
  CHECK(fm_llm_tensor_vec_dot_type(1u << 30) == NULL);
  CHECK(fm_llm_tensor_view(NULL, t, &x, &err) == FM_EARG);
  CHECK(fm_llm_tensor_view(g, NULL, &x, &err) == FM_EARG);
  CHECK(fm_llm_tensor_view(g, t, NULL, &err) == FM_EARG);
  CHECK(fm_llm_tensor_dequantize(g, t, NULL, 4, &err) == FM_EARG);
  CHECK(fm_llm_tensor_n_elements(NULL) == -1);
  fm_gguf_close(g);
}

int main(void) {
  have_zoo =
      fm_test_fixture(zoo_path, sizeof zoo_path, "gguf/derived/quant-zoo-stories260K.gguf", NULL);
  if (!have_zoo)
    printf("SKIP: quant-zoo fixture not found at %s (set RFMALLOC_FIXTURES); zoo cases skipped\n",
           zoo_path);
  FM_RUN(zoo_panel_decode);
  FM_RUN(zoo_backend);
  FM_RUN(zoo_declines);
  FM_RUN(hand_blocks);
  FM_RUN(stacked_f32);
  FM_RUN(truncated_file);
  FM_RUN(errors);
  FM_TEST_END();
}
