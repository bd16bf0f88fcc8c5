/* fm_gguf_write.h: files written here read back through our reader
 * (fm_gguf_open) and GGML's (gguf_init_from_file), with exact types and
 * values; equal byte for byte to what GGML's own gguf_write_to_file writes
 * for the same tensors (also tensors of several chunks of rows); and every
 * refusal names what it refuses, leaves no file behind and never reaches a
 * GGML assertion. All data is generated here. */
#define _POSIX_C_SOURCE 200809L
#include "fm/fm_gguf_write.h"
#include "fm_test.h"
#include "fm_test_files.h"

#include <ggml.h>
#include <gguf.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

static char g_dir[64];

static void path_of(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", g_dir, name); }

static int exists(const char *path) { return access(path, F_OK) == 0; }

/* The entry of key in g, or NULL. */
static const fm_gguf_kv *kv_of(const fm_gguf *g, const char *key) {
  return fm_gguf_kv_at(g, fm_gguf_find_kv(g, key));
}

/* ---- metadata ------------------------------------------------------------ */

static void metadata_types(void) {
  char path[128];
  path_of(path, sizeof path, "meta.gguf");
  const uint8_t u8 = 255, b1 = 1, bools[3] = {1, 0, 1};
  const int8_t i8 = -128, i8s[3] = {-1, 0, 1};
  const uint16_t u16 = 65535;
  const int16_t i16 = -32768;
  const uint32_t u32 = 4294967295u, u32s[3] = {1, 2, 3};
  const int32_t i32 = INT32_MIN;
  const float f32 = 0.1f;
  const uint64_t u64 = UINT64_MAX;
  const int64_t i64 = INT64_MIN;
  const double f64 = 0.1;
  const char *str[] = {"h\xc3\xa9llo"};
  const char *strs[] = {"<unk>", "", "\xe2\x96\x81" "a"};
  const fm_gguf_wkv kv[] = {
      {"general.architecture", FM_GGUF_STRING, 0, 1, str},
      {"v.u8", FM_GGUF_U8, 0, 1, &u8},       {"v.i8", FM_GGUF_I8, 0, 1, &i8},
      {"v.u16", FM_GGUF_U16, 0, 1, &u16},    {"v.i16", FM_GGUF_I16, 0, 1, &i16},
      {"v.u32", FM_GGUF_U32, 0, 1, &u32},    {"v.i32", FM_GGUF_I32, 0, 1, &i32},
      {"v.f32", FM_GGUF_F32, 0, 1, &f32},    {"v.u64", FM_GGUF_U64, 0, 1, &u64},
      {"v.i64", FM_GGUF_I64, 0, 1, &i64},    {"v.f64", FM_GGUF_F64, 0, 1, &f64},
      {"v.bool", FM_GGUF_BOOL, 0, 1, &b1},   {"v.au32", FM_GGUF_U32, 1, 3, u32s},
      {"v.ai8", FM_GGUF_I8, 1, 3, i8s},      {"v.abool", FM_GGUF_BOOL, 1, 3, bools},
      {"v.astr", FM_GGUF_STRING, 1, 3, strs}, {"v.aone", FM_GGUF_F32, 1, 1, &f32},
      {"v.aempty", FM_GGUF_I32, 1, 0, NULL},
  };
  const int64_t n_kv = (int64_t)(sizeof kv / sizeof kv[0]);
  fm_err err;
  CHECK_OK(fm_gguf_write(path, kv, n_kv, NULL, 0, 32, NULL, &err), &err);

  fm_gguf *g = NULL;
  CHECK_OK(fm_gguf_open(path, &g, &err), &err);
  if (!g) return;
  CHECK(fm_gguf_version(g) == 3 && fm_gguf_alignment(g) == 32 && fm_gguf_n_tensors(g) == 0);
  CHECK(fm_gguf_n_kv(g) == n_kv); /* no general.alignment at the default */
  for (int64_t i = 0; i < n_kv && i < fm_gguf_n_kv(g); i++) {
    const fm_gguf_kv *r = fm_gguf_kv_at(g, i);
    CHECK(r->key_len == strlen(kv[i].key) && !memcmp(r->key, kv[i].key, r->key_len));
    CHECK(r->type == (kv[i].is_array ? FM_GGUF_ARRAY : kv[i].type) && r->elem_type == kv[i].type);
    CHECK(r->n == kv[i].n);
    if (kv[i].type != FM_GGUF_STRING && kv[i].n > 0) /* numbers: the bytes given */
      CHECK(!memcmp(r->value, kv[i].values, kv[i].n * fm_gguf_vtype_size(kv[i].type)));
  }
  const char *s;
  size_t len;
  CHECK(!fm_gguf_get_str(kv_of(g, "general.architecture"), 0, &s, &len) && len == 6 &&
        !memcmp(s, "h\xc3\xa9llo", 6));
  CHECK(!fm_gguf_get_str(kv_of(g, "v.astr"), 1, &s, &len) && len == 0);
  CHECK(!fm_gguf_get_str(kv_of(g, "v.astr"), 2, &s, &len) && len == 4 && !memcmp(s, strs[2], 4));
  fm_gguf_close(g);

  /* GGML's reader sees the same values */
  struct gguf_init_params p = {true, NULL};
  struct gguf_context *ctx = gguf_init_from_file(path, p);
  CHECK(ctx != NULL);
  if (!ctx) return;
  CHECK(gguf_get_n_kv(ctx) == n_kv);
  CHECK(gguf_get_val_u8(ctx, gguf_find_key(ctx, "v.u8")) == 255);
  CHECK(gguf_get_val_i16(ctx, gguf_find_key(ctx, "v.i16")) == -32768);
  CHECK(gguf_get_val_u32(ctx, gguf_find_key(ctx, "v.u32")) == 4294967295u);
  CHECK(gguf_get_val_i32(ctx, gguf_find_key(ctx, "v.i32")) == INT32_MIN);
  CHECK(gguf_get_val_f32(ctx, gguf_find_key(ctx, "v.f32")) == 0.1f);
  CHECK(gguf_get_val_u64(ctx, gguf_find_key(ctx, "v.u64")) == UINT64_MAX);
  CHECK(gguf_get_val_i64(ctx, gguf_find_key(ctx, "v.i64")) == INT64_MIN);
  CHECK(gguf_get_val_f64(ctx, gguf_find_key(ctx, "v.f64")) == 0.1);
  CHECK(gguf_get_val_bool(ctx, gguf_find_key(ctx, "v.bool")));
  CHECK(!strcmp(gguf_get_val_str(ctx, gguf_find_key(ctx, "general.architecture")), "h\xc3\xa9llo"));
  int64_t k = gguf_find_key(ctx, "v.abool");
  CHECK(gguf_get_arr_type(ctx, k) == GGUF_TYPE_BOOL && gguf_get_arr_n(ctx, k) == 3 &&
        !memcmp(gguf_get_arr_data(ctx, k), bools, 3));
  k = gguf_find_key(ctx, "v.astr");
  CHECK(gguf_get_arr_n(ctx, k) == 3 && !strcmp(gguf_get_arr_str(ctx, k, 0), "<unk>"));
  k = gguf_find_key(ctx, "v.aempty");
  CHECK(gguf_get_arr_type(ctx, k) == GGUF_TYPE_INT32 && gguf_get_arr_n(ctx, k) == 0);
  gguf_free(ctx);
}

/* ---- tensors ------------------------------------------------------------- */

/* Whether tensor name of g decodes, through GGML's to_float (F32:
 * copied), to want[0..n) rounded to float32. */
static int decodes_to(const fm_gguf *g, const char *name, const double *want, int64_t n) {
  const fm_gguf_tensor *t = fm_gguf_tensor_at(g, fm_gguf_find_tensor(g, name));
  float f[256];
  if (!t || n > 256) return 0;
  const uint8_t *d = fm_gguf_tensor_data(g, t);
  if (t->type == GGML_TYPE_F32) memcpy(f, d, (size_t)n * sizeof(float));
  else ggml_get_type_traits((enum ggml_type)t->type)->to_float(d, f, n);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) bad += f[i] != (float)want[i];
  return bad == 0;
}

static void tensors_round_trip(uint32_t alignment) {
  char path[128];
  snprintf(path, sizeof path, "%s/t%u.gguf", g_dir, alignment);
  double w32[3 * 64], w16[2 * 64], wbf[64], q8[2 * 32], a3[32 * 4 * 2];
  int32_t i32[3] = {-3, 0, 70000}, vi[5] = {1, -2, 3, -4, 5};
  double i8[4] = {-128, 127, 0, -1};
  for (int i = 0; i < 3 * 64; i++) w32[i] = (i - 96) / 1024.0;
  for (int i = 0; i < 2 * 64; i++) w16[i] = (i - 64) / 64.0;   /* half: exact */
  for (int i = 0; i < 64; i++) wbf[i] = (i - 32) / 16.0;       /* bfloat16: exact */
  /* Q8_0 blocks whose largest |value| is 127 have scale 1: integers exact */
  for (int i = 0; i < 64; i++) q8[i] = i == 0 ? -127 : i == 31 ? 127 : i < 32 ? i - 16 : -127 + (i - 32);
  for (int i = 0; i < 32 * 4 * 2; i++) a3[i] = i + 1;
  uint8_t raw_q8[34] = {0x00, 0x3c}; /* one Q8_0 block: d = 1 (f16 0x3c00), q = 1..32 */
  for (int i = 0; i < 32; i++) raw_q8[2 + i] = (uint8_t)(i + 1);
  const char *arch[] = {"demo"};
  const fm_gguf_wkv kv[] = {{"general.architecture", FM_GGUF_STRING, 0, 1, arch}};
  const fm_gguf_wtensor ts[] = {
      {"w32", GGML_TYPE_F32, 2, {64, 3}, FM_GGUF_WSRC_F64, w32, 3 * 64},
      {"w16", GGML_TYPE_F16, 2, {64, 2}, FM_GGUF_WSRC_F64, w16, 2 * 64},
      {"wbf", GGML_TYPE_BF16, 2, {64, 1}, FM_GGUF_WSRC_F64, wbf, 64},
      {"q8", GGML_TYPE_Q8_0, 2, {32, 2}, FM_GGUF_WSRC_F64, q8, 64},
      {"a3", GGML_TYPE_F32, 3, {32, 4, 2}, FM_GGUF_WSRC_F64, a3, 256},
      {"ids", GGML_TYPE_I32, 1, {3}, FM_GGUF_WSRC_I32, i32, 3},
      {"i8", GGML_TYPE_I8, 1, {4}, FM_GGUF_WSRC_F64, i8, 4},
      {"vi", GGML_TYPE_F32, 1, {5}, FM_GGUF_WSRC_I32, vi, 5},
      {"raw", GGML_TYPE_Q8_0, 1, {32}, FM_GGUF_WSRC_BYTES, raw_q8, 34},
  };
  const int64_t n_t = (int64_t)(sizeof ts / sizeof ts[0]);
  fm_err err;
  CHECK_OK(fm_gguf_write(path, kv, 1, ts, n_t, alignment, NULL, &err), &err);

  fm_gguf *g = NULL;
  CHECK_OK(fm_gguf_open(path, &g, &err), &err);
  if (!g) return;
  CHECK(fm_gguf_alignment(g) == alignment && fm_gguf_n_tensors(g) == n_t);
  const fm_gguf_kv *ka = kv_of(g, "general.alignment");
  int64_t v;
  if (alignment == 32) CHECK(ka == NULL);
  else CHECK(ka && fm_gguf_kv_at(g, 0) == ka && ka->type == FM_GGUF_U32 && !fm_gguf_get_i64(ka, 0, &v) &&
             v == alignment);
  static const uint32_t n_dims[] = {2, 2, 1, 2, 3, 1, 1, 1, 1}; /* wbf: 64 x 1 is 1-D */
  static const uint64_t bytes[] = {768, 256, 128, 68, 1024, 12, 4, 20, 34};
  for (int64_t i = 0; i < n_t; i++) {
    const fm_gguf_tensor *t = fm_gguf_tensor_at(g, i);
    CHECK(t->name_len == strlen(ts[i].name) && !memcmp(t->name, ts[i].name, t->name_len));
    CHECK(t->type == ts[i].type && t->n_dims == n_dims[i] && t->n_bytes == bytes[i]);
    CHECK(t->data_offset % alignment == 0);
    for (int k = 0; k < ts[i].n_dims; k++) CHECK(t->ne[k] == ts[i].ne[k]);
  }
  double vid[5], raw_values[32];
  for (int i = 0; i < 5; i++) vid[i] = vi[i];
  for (int i = 0; i < 32; i++) raw_values[i] = i + 1;
  CHECK(decodes_to(g, "w32", w32, 192) && decodes_to(g, "w16", w16, 128) &&
        decodes_to(g, "wbf", wbf, 64) && decodes_to(g, "q8", q8, 64) && decodes_to(g, "a3", a3, 256) &&
        decodes_to(g, "vi", vid, 5) && decodes_to(g, "raw", raw_values, 32));
  const fm_gguf_tensor *t = fm_gguf_tensor_at(g, fm_gguf_find_tensor(g, "ids"));
  CHECK(t && !memcmp(fm_gguf_tensor_data(g, t), i32, sizeof i32));
  t = fm_gguf_tensor_at(g, fm_gguf_find_tensor(g, "i8"));
  CHECK(t && !memcmp(fm_gguf_tensor_data(g, t), (const int8_t[]){-128, 127, 0, -1}, 4));

  /* GGML's reader: same directory, and the tensor bytes it loads */
  struct ggml_context *dctx = NULL;
  struct gguf_init_params p = {false, &dctx};
  struct gguf_context *ctx = gguf_init_from_file(path, p);
  CHECK(ctx && dctx);
  if (ctx && dctx) {
    CHECK(gguf_get_alignment(ctx) == alignment && gguf_get_n_tensors(ctx) == n_t);
    CHECK(gguf_get_data_offset(ctx) == fm_gguf_data_offset(g));
    for (int64_t i = 0; i < n_t; i++) {
      const fm_gguf_tensor *x = fm_gguf_tensor_at(g, i);
      const struct ggml_tensor *y = ggml_get_tensor(dctx, ts[i].name);
      CHECK(y && ggml_nbytes(y) == x->n_bytes && !memcmp(y->data, fm_gguf_tensor_data(g, x), x->n_bytes));
      CHECK(x->data_offset == gguf_get_data_offset(ctx) + gguf_get_tensor_offset(ctx, i));
    }
  }
  if (ctx) gguf_free(ctx);
  if (dctx) ggml_free(dctx);
  fm_gguf_close(g);
}

static void tensors_aligned(void) {
  tensors_round_trip(32);
  tensors_round_trip(1);
  tensors_round_trip(64);
  tensors_round_trip(4096);
}

/* ---- the same file as GGML's own writer ---------------------------------- */

/* Tensors of several chunks of rows (4 MiB of float32 each) as well as
 * small ones, from numbers: our file against GGML's gguf_write_to_file of a
 * context whose tensors GGML encoded whole (one ggml_quantize_chunk call). */
static void same_as_ggml(uint32_t alignment) {
  static const struct { const char *name; enum ggml_type type; int64_t ne0, ne1; } spec[] = {
      {"big.f32", GGML_TYPE_F32, 1024, 1100}, {"big.q8_0", GGML_TYPE_Q8_0, 32, 33000},
      {"q4_k", GGML_TYPE_Q4_K, 256, 3},
      {"q4_0", GGML_TYPE_Q4_0, 64, 3},       {"q4_1", GGML_TYPE_Q4_1, 64, 3},
      {"q5_0", GGML_TYPE_Q5_0, 64, 3},       {"q5_1", GGML_TYPE_Q5_1, 64, 3},
      {"q8_0", GGML_TYPE_Q8_0, 64, 3},       {"q2_k", GGML_TYPE_Q2_K, 256, 2},
      {"q3_k", GGML_TYPE_Q3_K, 256, 2},      {"q5_k", GGML_TYPE_Q5_K, 256, 2},
      {"q6_k", GGML_TYPE_Q6_K, 512, 2},      {"f16", GGML_TYPE_F16, 96, 5},
      {"bf16", GGML_TYPE_BF16, 96, 5},       {"i16", GGML_TYPE_I16, 7, 3},
  };
  enum { N = sizeof spec / sizeof spec[0] };
  char ours[128], theirs[128];
  snprintf(ours, sizeof ours, "%s/ours%u.gguf", g_dir, alignment);
  snprintf(theirs, sizeof theirs, "%s/ggml%u.gguf", g_dir, alignment);
  uint64_t rng = 42;
  double *vals[N] = {0};
  fm_gguf_wtensor ts[N];
  for (int i = 0; i < N; i++) {
    int64_t n = spec[i].ne0 * spec[i].ne1;
    vals[i] = malloc((size_t)n * sizeof(double));
    for (int64_t j = 0; j < n; j++)
      vals[i][j] = spec[i].type == GGML_TYPE_I16 ? (double)(int)(fm_test_rng_next(&rng) % 60001) - 30000
                                                 : 4 * fm_test_rng_unif(&rng) - 2;
    ts[i] = (fm_gguf_wtensor){spec[i].name, spec[i].type, 2, {spec[i].ne0, spec[i].ne1},
                              FM_GGUF_WSRC_F64, vals[i], n};
  }
  const uint32_t layers = 2;
  const char *arch[] = {"demo"};
  const fm_gguf_wkv kv[] = {{"general.architecture", FM_GGUF_STRING, 0, 1, arch},
                            {"demo.block_count", FM_GGUF_U32, 0, 1, &layers}};
  fm_err err;
  CHECK_OK(fm_gguf_write(ours, kv, 2, ts, N, alignment, NULL, &err), &err);

  /* GGML's context at this alignment: its reader's, of a file of ours
   * holding only general.alignment */
  struct gguf_context *ctx = NULL;
  if (alignment == GGUF_DEFAULT_ALIGNMENT) {
    ctx = gguf_init_empty();
  } else {
    CHECK_OK(fm_gguf_write(theirs, NULL, 0, NULL, 0, alignment, NULL, &err), &err);
    struct gguf_init_params p = {true, NULL};
    ctx = gguf_init_from_file(theirs, p);
  }
  size_t mem = 1 << 20;
  for (int i = 0; i < N; i++)
    mem += ggml_row_size(spec[i].type, spec[i].ne0) * (size_t)spec[i].ne1 + ggml_tensor_overhead();
  struct ggml_init_params ip = {mem, NULL, false};
  struct ggml_context *mctx = ggml_init(ip);
  CHECK(ctx && mctx);
  if (ctx && mctx) {
    gguf_set_val_str(ctx, "general.architecture", "demo");
    gguf_set_val_u32(ctx, "demo.block_count", layers);
    for (int i = 0; i < N; i++) {
      int64_t n = spec[i].ne0 * spec[i].ne1;
      struct ggml_tensor *t = ggml_new_tensor_2d(mctx, spec[i].type, spec[i].ne0, spec[i].ne1);
      ggml_set_name(t, spec[i].name);
      float *f = malloc((size_t)n * sizeof(float));
      for (int64_t j = 0; j < n; j++) f[j] = (float)vals[i][j];
      if (spec[i].type == GGML_TYPE_F32) memcpy(t->data, f, (size_t)n * sizeof(float));
      else if (spec[i].type == GGML_TYPE_F16) ggml_fp32_to_fp16_row(f, t->data, n);
      else if (spec[i].type == GGML_TYPE_BF16) ggml_fp32_to_bf16_row_ref(f, t->data, n);
      else if (spec[i].type == GGML_TYPE_I16)
        for (int64_t j = 0; j < n; j++) ((int16_t *)t->data)[j] = (int16_t)vals[i][j];
      else ggml_quantize_chunk(spec[i].type, f, t->data, 0, spec[i].ne1, spec[i].ne0, NULL);
      free(f);
      gguf_add_tensor(ctx, t);
    }
    CHECK(gguf_write_to_file(ctx, theirs, false));
    size_t na = 0, nb = 0;
    uint8_t *a = fm_test_read_file(ours, &na), *b = fm_test_read_file(theirs, &nb);
    CHECK(a && b && na == nb && na > (size_t)4 << 20);
    if (a && b && na == nb) {
      size_t first = 0;
      while (first < na && a[first] == b[first]) first++;
      if (first < na) fprintf(stderr, "  alignment %u: files of %zu bytes differ from byte %zu\n", alignment, na, first);
      CHECK(first == na);
    }
    free(a);
    free(b);
  }
  if (ctx) gguf_free(ctx);
  if (mctx) ggml_free(mctx);
  for (int i = 0; i < N; i++) free(vals[i]);
}

static void same_bytes_as_ggml(void) {
  same_as_ggml(32);
  same_as_ggml(128);
}

/* ---- refusals ------------------------------------------------------------ */

/* fm_gguf_write of one metadata entry or one tensor must fail with want and
 * a message holding `says`, creating no file. */
static void refused(const fm_gguf_wkv *kv, const fm_gguf_wtensor *t, uint32_t alignment, fm_status want,
                    const char *says) {
  char path[128];
  path_of(path, sizeof path, "refused.gguf");
  fm_err err;
  fm_status st = fm_gguf_write(path, kv, kv ? 1 : 0, t, t ? 1 : 0, alignment, NULL, &err);
  if (st != want || !strstr(err.msg, says))
    fprintf(stderr, "  wanted %s '%s', got %s '%s'\n", fm_status_name(want), says, fm_status_name(st), err.msg);
  CHECK(st == want && err.code == want && strstr(err.msg, says));
  CHECK(!exists(path));
}

static void bad_metadata(void) {
  const uint32_t one = 1;
  const uint8_t two = 2;
  const char *nul[] = {NULL};
  fm_gguf_wkv kv = {"a", FM_GGUF_ARRAY, 0, 1, &one};
  refused(&kv, NULL, 32, FM_EARG, "metadata 'a': unknown GGUF value type 9");
  kv.type = (fm_gguf_vtype)13;
  refused(&kv, NULL, 32, FM_EARG, "metadata 'a': unknown GGUF value type 13");
  kv = (fm_gguf_wkv){"a", FM_GGUF_U32, 0, 2, &one};
  refused(&kv, NULL, 32, FM_EARG, "metadata 'a': a scalar needs exactly one value, got 2");
  kv = (fm_gguf_wkv){"a", FM_GGUF_BOOL, 0, 1, &two};
  refused(&kv, NULL, 32, FM_EARG, "metadata 'a': element 1 is 2, not a bool");
  kv = (fm_gguf_wkv){"a", FM_GGUF_STRING, 1, 1, nul};
  refused(&kv, NULL, 32, FM_EARG, "metadata 'a': element 1 is NULL");
  kv = (fm_gguf_wkv){"a", FM_GGUF_U32, 1, 3, NULL};
  refused(&kv, NULL, 32, FM_EARG, "metadata 'a': 3 values expected, got none");
  kv = (fm_gguf_wkv){"", FM_GGUF_U32, 0, 1, &one};
  refused(&kv, NULL, 32, FM_EARG, "metadata entry 1 has no key");
  kv = (fm_gguf_wkv){"general.alignment", FM_GGUF_U32, 0, 1, &one};
  refused(&kv, NULL, 32, FM_EARG, "must not set general.alignment");

  char path[128];
  path_of(path, sizeof path, "refused.gguf");
  fm_err err;
  const fm_gguf_wkv dup[] = {{"x", FM_GGUF_U32, 0, 1, &one}, {"b", FM_GGUF_U32, 0, 1, &one},
                             {"x", FM_GGUF_U8, 0, 1, &two}};
  CHECK(fm_gguf_write(path, dup, 3, NULL, 0, 32, NULL, &err) == FM_EARG &&
        strstr(err.msg, "metadata key 'x' is given twice (entries 1 and 3)"));
  CHECK(!exists(path));
}

static void bad_tensors(void) {
  double v[64] = {0};
  uint8_t raw[3] = {0};
  fm_gguf_wtensor t = {"w", GGML_TYPE_Q8_0, 1, {30}, FM_GGUF_WSRC_F64, v, 30};
  refused(NULL, &t, 32, FM_EARG, "tensor 'w': type q8_0 stores rows in blocks of 32 values, but ne[0] is 30");
  t = (fm_gguf_wtensor){"w", GGML_TYPE_Q8_0, 1, {32}, FM_GGUF_WSRC_BYTES, raw, 3};
  refused(NULL, &t, 32, FM_EARG, "tensor 'w': q8_0 of shape 32 x 1 x 1 x 1 takes 34 bytes, got 3 bytes");
  t = (fm_gguf_wtensor){"w", GGML_TYPE_F32, 2, {8, 8}, FM_GGUF_WSRC_F64, v, 63};
  refused(NULL, &t, 32, FM_EARG, "tensor 'w': shape holds 64 values, got 63");
  t = (fm_gguf_wtensor){"w", GGML_TYPE_IQ2_XXS, 1, {256}, FM_GGUF_WSRC_F64, v, 256};
  refused(NULL, &t, 32, FM_EUNSUPPORTED, "tensor 'w': type iq2_xxs cannot be encoded from numbers");
  t = (fm_gguf_wtensor){"w", 4, 1, {32}, FM_GGUF_WSRC_BYTES, raw, 3}; /* Q4_2, removed from GGML */
  refused(NULL, &t, 32, FM_EARG, "tensor 'w': unknown GGML type id 4");
  t.type = 999;
  refused(NULL, &t, 32, FM_EARG, "tensor 'w': unknown GGML type id 999");
  t = (fm_gguf_wtensor){"w", GGML_TYPE_F32, 5, {1, 1, 1, 1}, FM_GGUF_WSRC_F64, v, 1};
  refused(NULL, &t, 32, FM_EARG, "tensor 'w': needs 1 to 4 dimensions, got 5");
  t.n_dims = 0;
  refused(NULL, &t, 32, FM_EARG, "tensor 'w': needs 1 to 4 dimensions, got 0");
  t = (fm_gguf_wtensor){"w", GGML_TYPE_F32, 2, {4, 0}, FM_GGUF_WSRC_F64, v, 0};
  refused(NULL, &t, 32, FM_EARG, "tensor 'w': dimension 2 must be a whole number >= 1");
  t = (fm_gguf_wtensor){"w", GGML_TYPE_F32, 4, {INT64_C(1) << 20, INT64_C(1) << 20, INT64_C(1) << 20, 2},
                        FM_GGUF_WSRC_F64, v, 1};
  refused(NULL, &t, 32, FM_EARG, "tensor 'w': too many elements");
  double big[2] = {1, 1099511627776.0}, half[2] = {1, 1.5}, i8[2] = {127, 128};
  t = (fm_gguf_wtensor){"w", GGML_TYPE_I32, 1, {2}, FM_GGUF_WSRC_F64, big, 2};
  refused(NULL, &t, 32, FM_EARG,
          "tensor 'w': value 2 (GGML order) is 1099511627776, but I32 takes whole numbers from -2147483648 to 2147483647");
  t.data = half;
  refused(NULL, &t, 32, FM_EARG, "tensor 'w': value 2 (GGML order) is 1.5, but I32 takes whole numbers");
  t = (fm_gguf_wtensor){"w", GGML_TYPE_I8, 1, {2}, FM_GGUF_WSRC_F64, i8, 2};
  refused(NULL, &t, 32, FM_EARG, "value 2 (GGML order) is 128, but I8 takes whole numbers from -128 to 127");
  int32_t i16[1] = {40000};
  t = (fm_gguf_wtensor){"w", GGML_TYPE_I16, 1, {1}, FM_GGUF_WSRC_I32, i16, 1};
  refused(NULL, &t, 32, FM_EARG, "value 1 (GGML order) is 40000, but I16 takes whole numbers from -32768 to 32767");
  t = (fm_gguf_wtensor){"w", GGML_TYPE_F32, 1, {1}, (fm_gguf_wsrc)7, v, 1};
  refused(NULL, &t, 32, FM_EARG, "tensor 'w': unknown data source 7");
  t = (fm_gguf_wtensor){"w", GGML_TYPE_F32, 1, {1}, FM_GGUF_WSRC_F64, NULL, 1};
  refused(NULL, &t, 32, FM_EARG, "tensor 'w': no data");
  char long_name[80];
  memset(long_name, 'n', 64);
  long_name[64] = 0;
  t = (fm_gguf_wtensor){long_name, GGML_TYPE_F32, 1, {1}, FM_GGUF_WSRC_F64, v, 1};
  refused(NULL, &t, 32, FM_EARG, "is 64 bytes long; GGUF readers allow 63");
  t.name = "";
  refused(NULL, &t, 32, FM_EARG, "tensor 1 has no name");

  char path[128];
  path_of(path, sizeof path, "refused.gguf");
  fm_err err;
  const fm_gguf_wtensor dup[] = {{"w", GGML_TYPE_F32, 1, {1}, FM_GGUF_WSRC_F64, v, 1},
                                 {"w", GGML_TYPE_F32, 1, {2}, FM_GGUF_WSRC_F64, v, 2}};
  CHECK(fm_gguf_write(path, NULL, 0, dup, 2, 32, NULL, &err) == FM_EARG &&
        strstr(err.msg, "tensor 'w' is given twice (entries 1 and 2)"));
  CHECK(!exists(path));
}

/* Numbers beyond a float type's largest value would become Inf, and a
 * quantized block with a NaN, an Inf or a value beyond F16 (its scale's
 * type) decodes to NaN or Inf: refused, naming the value and the range.
 * At the range's ends every type decodes finite values; F32, F16 and BF16
 * keep NaN and Inf given as such. */
static void float_ranges(void) {
  double v[256];
  for (int i = 0; i < 256; i++) v[i] = i % 2 ? 1 : -1;
  v[0] = 1e10;
  fm_gguf_wtensor t = {"h", GGML_TYPE_F16, 1, {32}, FM_GGUF_WSRC_F64, v, 32};
  refused(NULL, &t, 32, FM_EARG,
          "tensor 'h': value 1 (GGML order) is 10000000000, but F16 takes numbers from -65504 to 65504 "
          "(a larger value would become Inf), NaN and Inf");
  t = (fm_gguf_wtensor){"q", GGML_TYPE_Q4_0, 1, {32}, FM_GGUF_WSRC_F64, v, 32};
  refused(NULL, &t, 32, FM_EARG, "tensor 'q': value 1 (GGML order) is 10000000000, but Q4_0 takes finite numbers");
  v[0] = NAN;
  refused(NULL, &t, 32, FM_EARG, "tensor 'q': value 1 (GGML order) is nan, but Q4_0 takes finite numbers");
  v[0] = 1e39;
  t = (fm_gguf_wtensor){"f", GGML_TYPE_F32, 1, {32}, FM_GGUF_WSRC_F64, v, 32};
  refused(NULL, &t, 32, FM_EARG, "F32 takes numbers from -3.402823466e+38 to 3.402823466e+38");
  t.type = GGML_TYPE_BF16;
  refused(NULL, &t, 32, FM_EARG, "BF16 takes numbers from -3.389531389e+38 to 3.389531389e+38");
  int32_t big[32] = {70000};
  t = (fm_gguf_wtensor){"h", GGML_TYPE_F16, 1, {32}, FM_GGUF_WSRC_I32, big, 32};
  refused(NULL, &t, 32, FM_EARG, "tensor 'h': value 1 (GGML order) is 70000, but F16");

  const uint32_t quant[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
                            GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K,
                            GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_F16, GGML_TYPE_BF16};
  for (int i = 0; i < 256; i++) v[i] = i % 3 == 0 ? 65504.0 : i % 3 == 1 ? -65504.0 : i;
  char path[128];
  path_of(path, sizeof path, "ends.gguf");
  fm_err err;
  for (size_t q = 0; q < sizeof quant / sizeof quant[0]; q++) {
    t = (fm_gguf_wtensor){"e", quant[q], 1, {256}, FM_GGUF_WSRC_F64, v, 256};
    CHECK_OK(fm_gguf_write(path, NULL, 0, &t, 1, 32, NULL, &err), &err);
    fm_gguf *g = NULL;
    CHECK_OK(fm_gguf_open(path, &g, &err), &err);
    if (!g) continue;
    float f[256];
    ggml_get_type_traits((enum ggml_type)quant[q])->to_float(fm_gguf_tensor_data(g, fm_gguf_tensor_at(g, 0)), f, 256);
    int finite = 1;
    for (int i = 0; i < 256; i++) finite &= isfinite(f[i]) != 0;
    if (!finite) fprintf(stderr, "  %s: values of +-65504 decode to NaN or Inf\n", ggml_type_name((enum ggml_type)quant[q]));
    CHECK(finite);
    fm_gguf_close(g);
  }
  double special[32] = {NAN, INFINITY, -INFINITY, 65504.0};
  t = (fm_gguf_wtensor){"s", GGML_TYPE_F16, 1, {32}, FM_GGUF_WSRC_F64, special, 32};
  CHECK_OK(fm_gguf_write(path, NULL, 0, &t, 1, 32, NULL, &err), &err);
  fm_gguf *g = NULL;
  CHECK_OK(fm_gguf_open(path, &g, &err), &err);
  if (!g) return;
  float f[32];
  ggml_get_type_traits(GGML_TYPE_F16)->to_float(fm_gguf_tensor_data(g, fm_gguf_tensor_at(g, 0)), f, 32);
  CHECK(isnan(f[0]) && f[1] == INFINITY && f[2] == -INFINITY && f[3] == 65504.0f);
  fm_gguf_close(g);
}

static void bad_arguments(void) {
  refused(NULL, NULL, 48, FM_EARG, "alignment must be a power of two from 1 to 65536, got 48");
  refused(NULL, NULL, 0, FM_EARG, "alignment must be a power of two from 1 to 65536, got 0");
  refused(NULL, NULL, 131072, FM_EARG, "got 131072");
  fm_err err;
  CHECK(fm_gguf_write(NULL, NULL, 0, NULL, 0, 32, NULL, &err) == FM_EARG);
  CHECK(fm_gguf_write("x.gguf", NULL, -1, NULL, 0, 32, NULL, &err) == FM_EARG);
  CHECK(fm_gguf_write("x.gguf", NULL, 1, NULL, 0, 32, NULL, &err) == FM_EARG);
  CHECK(!exists("x.gguf"));
  /* a file that cannot be created: the OS's reason, naming the path */
  char path[128];
  path_of(path, sizeof path, "no-such-dir/x.gguf");
  CHECK(fm_gguf_write(path, NULL, 0, NULL, 0, 32, NULL, &err) == FM_EIO);
  CHECK(strstr(err.msg, path) && strstr(err.msg, "No such file or directory"));
  path_of(path, sizeof path, "");
  CHECK(fm_gguf_write(path, NULL, 0, NULL, 0, 32, NULL, &err) == FM_EIO); /* a directory */
  CHECK(strstr(err.msg, "could not write GGUF file"));
}

/* ---- cancel and progress ------------------------------------------------- */

typedef struct watch {
  int polls, stop_at;
  double done, total;
} watch;

static int cancel_at(void *ud) {
  watch *w = ud;
  return ++w->polls >= w->stop_at;
}

static void progress(void *ud, double done, double total) {
  watch *w = ud;
  CHECK(done > w->done && done <= total);
  w->done = done;
  w->total = total;
}

static void cancel_and_progress(void) {
  const int64_t ne0 = 1024, ne1 = 2100; /* 3 chunks of 4 MiB of float32 */
  double *v = calloc((size_t)(ne0 * ne1), sizeof(double));
  uint8_t raw[68] = {0};
  const fm_gguf_wtensor ts[] = {{"big", GGML_TYPE_F32, 2, {ne0, ne1}, FM_GGUF_WSRC_F64, v, ne0 * ne1},
                                {"raw", GGML_TYPE_Q8_0, 2, {32, 2}, FM_GGUF_WSRC_BYTES, raw, 68}};
  char path[128];
  path_of(path, sizeof path, "cancel.gguf");
  fm_err err;
  watch w = {0, 1000, 0, 0};
  fm_ctl ctl = {cancel_at, progress, &w, NULL, 0, 0, 0};
  CHECK_OK(fm_gguf_write(path, NULL, 0, ts, 2, 32, &ctl, &err), &err);
  CHECK(w.polls == 4 && w.total == (double)(ne0 * ne1 * 4 + 68) && w.done == w.total);
  CHECK(exists(path));
  w = (watch){0, 2, 0, 0}; /* stop before the second chunk */
  CHECK(fm_gguf_write(path, NULL, 0, ts, 2, 32, &ctl, &err) == FM_ECANCELLED);
  CHECK(strstr(err.msg, path) != NULL);
  CHECK(!exists(path));
  free(v);
}

int main(void) {
  if (!fm_test_tmpdir(g_dir, sizeof g_dir, "fm_gguf_write_")) return 1;
  FM_RUN(metadata_types);
  FM_RUN(tensors_aligned);
  FM_RUN(same_bytes_as_ggml);
  FM_RUN(bad_metadata);
  FM_RUN(bad_tensors);
  FM_RUN(float_ranges);
  FM_RUN(bad_arguments);
  FM_RUN(cancel_and_progress);
  fm_test_rmtree(g_dir);
  FM_TEST_END();
}
