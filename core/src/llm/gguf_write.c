/* gguf_write.c: GGUF files through GGML's own GGUF writer (fm_gguf_write.h).
 *
 * Three passes: check the whole description against everything GGML would
 * assert on (no GGML state, no file yet); build GGML's GGUF context with the
 * metadata and a no-alloc tensor of each shape, and let GGML write header,
 * metadata and directory; then encode and write each tensor's bytes at the
 * offset GGML assigned, a chunk of whole rows at a time. GGML's quantizers
 * work row by row (and block by block within a row) without an importance
 * matrix, so chunking by rows gives the bytes one call on the whole tensor
 * gives. */
#define _POSIX_C_SOURCE 200809L /* fmemopen */
#include "fm/fm_gguf_write.h"

#include <ggml.h>
#include <gguf.h>

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes of float32 values (and of encoded output) per chunk of rows; a
 * single longer row is one chunk. */
#define CHUNK_BYTES ((size_t)1 << 22)

static const char *tname(uint32_t type) { return ggml_type_name((enum ggml_type)type); }

static int is_int_type(uint32_t t) {
  return t == GGML_TYPE_I8 || t == GGML_TYPE_I16 || t == GGML_TYPE_I32;
}

/* Types encoded from numbers here: the float types, the integer types, and
 * the quantized types GGML quantizes without an importance matrix. */
static int from_numbers(uint32_t t) {
  switch (t) {
  case GGML_TYPE_F32: case GGML_TYPE_F16: case GGML_TYPE_BF16:
  case GGML_TYPE_I8: case GGML_TYPE_I16: case GGML_TYPE_I32:
  case GGML_TYPE_Q4_0: case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1:
  case GGML_TYPE_Q8_0: case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_Q4_K:
  case GGML_TYPE_Q5_K: case GGML_TYPE_Q6_K:
    return 1;
  default:
    return 0;
  }
}

/* ---- checks ------------------------------------------------------------- */

static fm_status check_kv(const fm_gguf_wkv *kv, int64_t i, fm_err *err) {
  if (!kv->key || !kv->key[0])
    return fm_err_set(err, FM_EARG, "metadata entry %lld has no key (keys are non-empty strings)",
                      (long long)i + 1);
  const char *key = kv->key;
  if (!strcmp(key, GGUF_KEY_GENERAL_ALIGNMENT))
    return fm_err_set(err, FM_EARG, "metadata must not set general.alignment; use the alignment argument");
  if ((int)kv->type < 0 || (int)kv->type >= GGUF_TYPE_COUNT || kv->type == FM_GGUF_ARRAY)
    return fm_err_set(err, FM_EARG, "metadata '%s': unknown GGUF value type %d", key, (int)kv->type);
  if (!kv->is_array && kv->n != 1)
    return fm_err_set(err, FM_EARG, "metadata '%s': a scalar needs exactly one value, got %llu", key,
                      (unsigned long long)kv->n);
  if (kv->n > 0 && !kv->values)
    return fm_err_set(err, FM_EARG, "metadata '%s': %llu values expected, got none", key,
                      (unsigned long long)kv->n);
  for (uint64_t j = 0; j < kv->n; j++) {
    if (kv->type == FM_GGUF_STRING && !((const char *const *)kv->values)[j])
      return fm_err_set(err, FM_EARG, "metadata '%s': element %llu is NULL, not a string", key,
                        (unsigned long long)j + 1);
    if (kv->type == FM_GGUF_BOOL && ((const uint8_t *)kv->values)[j] > 1)
      return fm_err_set(err, FM_EARG, "metadata '%s': element %llu is %u, not a bool (0 or 1)", key,
                        (unsigned long long)j + 1, ((const uint8_t *)kv->values)[j]);
  }
  return FM_OK;
}

int fm_gguf_wrange_of(uint32_t type, fm_gguf_wrange *r) {
  if (!from_numbers(type)) return 0;
  double hi = 65504.0; /* F16's largest: the quantized types' block scales */
  switch (type) {
  case GGML_TYPE_I8: *r = (fm_gguf_wrange){-128.0, 127.0, 1, 1}; return 1;
  case GGML_TYPE_I16: *r = (fm_gguf_wrange){-32768.0, 32767.0, 1, 1}; return 1;
  case GGML_TYPE_I32: *r = (fm_gguf_wrange){-2147483648.0, 2147483647.0, 1, 1}; return 1;
  case GGML_TYPE_F32: hi = FLT_MAX; break;
  case GGML_TYPE_BF16: hi = 0x1.fep127; break;
  default: break;
  }
  const int is_float = type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16;
  *r = (fm_gguf_wrange){-hi, hi, 0, !is_float};
  return 1;
}

int64_t fm_gguf_wrange_first_bad(const fm_gguf_wrange *r, fm_gguf_wsrc src, const void *data,
                                 int64_t n) {
  for (int64_t j = 0; j < n; j++) {
    double x = src == FM_GGUF_WSRC_F64 ? ((const double *)data)[j] : (double)((const int32_t *)data)[j];
    if (isnan(x) || isinf(x) ? r->finite
                             : x < r->lo || x > r->hi || (r->whole && x != (double)(int64_t)x))
      return j;
  }
  return -1;
}

void fm_gguf_wrange_text(uint32_t type, char *buf, size_t n) {
  fm_gguf_wrange r;
  if (!n) return;
  if (!fm_gguf_wrange_of(type, &r)) {
    snprintf(buf, n, "type %u is not encoded from numbers", type);
    return;
  }
  char name[16];
  size_t k = 0;
  for (const char *c = tname(type); *c && k + 1 < sizeof name; c++) name[k++] = (char)toupper((unsigned char)*c);
  name[k] = 0;
  const char *what = r.whole    ? "whole numbers"
                     : r.finite ? "finite numbers"
                                : "numbers";
  const char *note = r.whole    ? ""
                     : r.finite ? " (its blocks' scales are F16; a larger value, NaN or Inf corrupts its block)"
                                : " (a larger value would become Inf), NaN and Inf";
  snprintf(buf, n, "%s takes %s from %.10g to %.10g%s", name, what, r.lo, r.hi, note);
}

/* Numbers for tensor w: in its type's range. */
static fm_status check_values(const fm_gguf_wtensor *w, fm_err *err) {
  fm_gguf_wrange r;
  if (!fm_gguf_wrange_of(w->type, &r))
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "tensor '%s': type %s cannot be encoded from numbers here; give its encoded bytes",
                      w->name, tname(w->type));
  int64_t j = fm_gguf_wrange_first_bad(&r, w->src, w->data, w->n);
  if (j < 0) return FM_OK;
  double x = w->src == FM_GGUF_WSRC_F64 ? ((const double *)w->data)[j]
                                        : (double)((const int32_t *)w->data)[j];
  char range[160];
  fm_gguf_wrange_text(w->type, range, sizeof range);
  return fm_err_set(err, FM_EARG, "tensor '%s': value %lld (GGML order) is %.17g, but %s", w->name,
                    (long long)j + 1, x, range);
}

/* Check tensor w (index i); *n_bytes gets its encoded size. */
static fm_status check_tensor(const fm_gguf_wtensor *w, int64_t i, size_t *n_bytes, fm_err *err) {
  if (!w->name || !w->name[0])
    return fm_err_set(err, FM_EARG, "tensor %lld has no name (names are non-empty strings)",
                      (long long)i + 1);
  const char *name = w->name;
  size_t len = strlen(name);
  if (len > FM_GGUF_WRITE_MAX_NAME)
    return fm_err_set(err, FM_EARG, "tensor name '%.40s...' is %zu bytes long; GGUF readers allow %d",
                      name, len, FM_GGUF_WRITE_MAX_NAME);
  enum ggml_type type = (enum ggml_type)w->type;
  if (w->type >= GGML_TYPE_COUNT || ggml_blck_size(type) <= 0 || ggml_type_size(type) == 0)
    return fm_err_set(err, FM_EARG, "tensor '%s': unknown GGML type id %u", name, w->type);
  if (w->n_dims < 1 || w->n_dims > FM_GGUF_MAX_DIMS)
    return fm_err_set(err, FM_EARG, "tensor '%s': needs 1 to %d dimensions, got %d", name,
                      FM_GGUF_MAX_DIMS, w->n_dims);
  int64_t ne[FM_GGUF_MAX_DIMS], n_el = 1;
  for (int k = 0; k < FM_GGUF_MAX_DIMS; k++) {
    ne[k] = k < w->n_dims ? w->ne[k] : 1;
    if (ne[k] < 1)
      return fm_err_set(err, FM_EARG, "tensor '%s': dimension %d must be a whole number >= 1", name, k + 1);
    if (!fm_mul_ok(n_el, ne[k], &n_el) || n_el > INT64_MAX / 8)
      return fm_err_set(err, FM_EARG, "tensor '%s': too many elements (more than 2^60)", name);
  }
  int64_t blck = ggml_blck_size(type);
  if (ne[0] % blck != 0)
    return fm_err_set(err, FM_EARG, "tensor '%s': type %s stores rows in blocks of %lld values, but ne[0] is %lld",
                      name, tname(w->type), (long long)blck, (long long)ne[0]);
  *n_bytes = ggml_row_size(type, ne[0]) * (size_t)(n_el / ne[0]);
  if (w->n > 0 && !w->data)
    return fm_err_set(err, FM_EARG, "tensor '%s': no data", name);
  switch (w->src) {
  case FM_GGUF_WSRC_BYTES:
    if (w->n < 0 || (uint64_t)w->n != *n_bytes)
      return fm_err_set(err, FM_EARG, "tensor '%s': %s of shape %lld x %lld x %lld x %lld takes %zu bytes, got %lld bytes",
                        name, tname(w->type), (long long)ne[0], (long long)ne[1], (long long)ne[2],
                        (long long)ne[3], *n_bytes, (long long)w->n);
    return FM_OK;
  case FM_GGUF_WSRC_F64:
  case FM_GGUF_WSRC_I32:
    if (from_numbers(w->type) && w->n != n_el)
      return fm_err_set(err, FM_EARG, "tensor '%s': shape holds %lld values, got %lld", name,
                        (long long)n_el, (long long)w->n);
    return check_values(w, err);
  default:
    return fm_err_set(err, FM_EARG, "tensor '%s': unknown data source %d", name, (int)w->src);
  }
}

typedef struct named {
  const char *name;
  int64_t i;
} named;

static int named_cmp(const void *a, const void *b) {
  const named *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* FM_EARG naming the first name (in sorted order) given twice; what says
 * whose ("metadata key" or "tensor"). names holds n checked names. */
static fm_status check_unique(named *names, int64_t n, const char *what, fm_err *err) {
  qsort(names, (size_t)n, sizeof *names, named_cmp);
  for (int64_t i = 1; i < n; i++)
    if (!strcmp(names[i - 1].name, names[i].name))
      return fm_err_set(err, FM_EARG, "%s '%s' is given twice (entries %lld and %lld)", what,
                        names[i].name, (long long)names[i - 1].i + 1, (long long)names[i].i + 1);
  return FM_OK;
}

/* ---- GGML's context ------------------------------------------------------ */

/* An empty GGUF context whose alignment is `align`. GGML's writer pads
 * tensors and the data section to the context's alignment, which only its
 * reader sets (from general.alignment; gguf_set_val_u32 stores the key but
 * leaves the padding at 32), so the context comes from GGML reading a
 * header of no tensors and that one key, from memory. NULL on failure. */
static struct gguf_context *aligned_context(uint32_t align) {
  static const char key[] = GGUF_KEY_GENERAL_ALIGNMENT;
  /* the header (57 bytes) padded to the data section, which is empty */
  size_t size = ((57 + (size_t)align - 1) / (size_t)align) * (size_t)align;
  unsigned char *buf = calloc(size, 1);
  if (!buf) return NULL;
  size_t n = 0;
  uint32_t u32;
  uint64_t u64;
  memcpy(buf + n, GGUF_MAGIC, 4), n += 4;
  u32 = GGUF_VERSION, memcpy(buf + n, &u32, 4), n += 4;
  u64 = 0, memcpy(buf + n, &u64, 8), n += 8; /* tensors */
  u64 = 1, memcpy(buf + n, &u64, 8), n += 8; /* key-value pairs */
  u64 = sizeof key - 1, memcpy(buf + n, &u64, 8), n += 8;
  memcpy(buf + n, key, sizeof key - 1), n += sizeof key - 1;
  u32 = GGUF_TYPE_UINT32, memcpy(buf + n, &u32, 4), n += 4;
  u32 = align, memcpy(buf + n, &u32, 4);
  FILE *f = fmemopen(buf, size, "rb");
  if (!f) {
    free(buf);
    return NULL;
  }
  struct gguf_init_params p = {true, NULL};
  struct gguf_context *gg = gguf_init_from_file_ptr(f, p);
  fclose(f);
  free(buf);
  if (gg && gguf_get_alignment(gg) != (size_t)align) {
    gguf_free(gg);
    gg = NULL;
  }
  return gg;
}

/* Set one checked metadata entry on gg. */
static void set_kv(struct gguf_context *gg, const fm_gguf_wkv *kv) {
  const char *k = kv->key;
  const void *v = kv->values;
  if (kv->is_array) {
    if (kv->type == FM_GGUF_STRING) gguf_set_arr_str(gg, k, (const char **)v, (size_t)kv->n);
    else gguf_set_arr_data(gg, k, (enum gguf_type)kv->type, v, (size_t)kv->n);
    return;
  }
  switch (kv->type) {
  case FM_GGUF_U8: { uint8_t x; memcpy(&x, v, 1); gguf_set_val_u8(gg, k, x); break; }
  case FM_GGUF_I8: { int8_t x; memcpy(&x, v, 1); gguf_set_val_i8(gg, k, x); break; }
  case FM_GGUF_U16: { uint16_t x; memcpy(&x, v, 2); gguf_set_val_u16(gg, k, x); break; }
  case FM_GGUF_I16: { int16_t x; memcpy(&x, v, 2); gguf_set_val_i16(gg, k, x); break; }
  case FM_GGUF_U32: { uint32_t x; memcpy(&x, v, 4); gguf_set_val_u32(gg, k, x); break; }
  case FM_GGUF_I32: { int32_t x; memcpy(&x, v, 4); gguf_set_val_i32(gg, k, x); break; }
  case FM_GGUF_F32: { float x; memcpy(&x, v, 4); gguf_set_val_f32(gg, k, x); break; }
  case FM_GGUF_U64: { uint64_t x; memcpy(&x, v, 8); gguf_set_val_u64(gg, k, x); break; }
  case FM_GGUF_I64: { int64_t x; memcpy(&x, v, 8); gguf_set_val_i64(gg, k, x); break; }
  case FM_GGUF_F64: { double x; memcpy(&x, v, 8); gguf_set_val_f64(gg, k, x); break; }
  case FM_GGUF_BOOL: { uint8_t x; memcpy(&x, v, 1); gguf_set_val_bool(gg, k, x != 0); break; }
  case FM_GGUF_STRING: gguf_set_val_str(gg, k, ((const char *const *)v)[0]); break;
  default: break; /* FM_GGUF_ARRAY: refused by check_kv */
  }
}

/* ---- tensor bytes -------------------------------------------------------- */

typedef struct writer {
  FILE *f;
  const char *path;
  uint64_t pos;          /* bytes written */
  float *f32;            /* scratch: a chunk of values as float32 */
  unsigned char *out;    /* scratch: the chunk encoded */
  double done, total;    /* tensor bytes, for progress */
  const fm_ctl *ctl;
} writer;

static fm_status put(writer *wr, const void *p, size_t n, fm_err *err) {
  if (n && fwrite(p, 1, n, wr->f) != n)
    return fm_err_set(err, FM_EIO, "could not write GGUF file '%s': %s", wr->path, strerror(errno));
  wr->pos += n;
  return FM_OK;
}

/* Zeros up to offset `to` (GGML's padding). */
static fm_status pad_to(writer *wr, uint64_t to, fm_err *err) {
  static const unsigned char zeros[4096];
  fm_status st = FM_OK;
  while (st == FM_OK && wr->pos < to) {
    uint64_t n = to - wr->pos;
    st = put(wr, zeros, n < sizeof zeros ? (size_t)n : sizeof zeros, err);
  }
  return st;
}

/* Rows [r0, r0 + n) of numeric tensor w, encoded into wr->out. */
static void encode_rows(writer *wr, const fm_gguf_wtensor *w, int64_t r0, int64_t n) {
  const int64_t ne0 = w->ne[0], k = n * ne0, e0 = r0 * ne0;
  const double *d = w->src == FM_GGUF_WSRC_F64 ? (const double *)w->data + e0 : NULL;
  const int32_t *i32 = w->src == FM_GGUF_WSRC_I32 ? (const int32_t *)w->data + e0 : NULL;
  if (is_int_type(w->type)) { /* checked whole and in range */
    for (int64_t j = 0; j < k; j++) {
      int32_t x = d ? (int32_t)d[j] : i32[j];
      if (w->type == GGML_TYPE_I8) ((int8_t *)wr->out)[j] = (int8_t)x;
      else if (w->type == GGML_TYPE_I16) ((int16_t *)wr->out)[j] = (int16_t)x;
      else ((int32_t *)wr->out)[j] = x;
    }
    return;
  }
  float *f32 = w->type == GGML_TYPE_F32 ? (float *)wr->out : wr->f32;
  for (int64_t j = 0; j < k; j++) f32[j] = d ? (float)d[j] : (float)i32[j];
  if (w->type == GGML_TYPE_F16) ggml_fp32_to_fp16_row(f32, (ggml_fp16_t *)wr->out, k);
  else if (w->type == GGML_TYPE_BF16) ggml_fp32_to_bf16_row_ref(f32, (ggml_bf16_t *)wr->out, k);
  else if (w->type != GGML_TYPE_F32)
    ggml_quantize_chunk((enum ggml_type)w->type, f32, wr->out, 0, n, ne0, NULL);
}

/* Rows of tensor w per chunk. */
static int64_t chunk_rows(const fm_gguf_wtensor *w, int64_t n_rows) {
  int64_t r = (int64_t)(CHUNK_BYTES / sizeof(float)) / w->ne[0];
  return r < 1 ? 1 : r < n_rows ? r : n_rows;
}

static fm_status cancelled(const writer *wr, fm_err *err) {
  return fm_ctl_cancelled(wr->ctl)
             ? fm_err_set(err, FM_ECANCELLED, "writing GGUF file '%s' was cancelled", wr->path)
             : FM_OK;
}

/* The bytes of checked tensor w (n_bytes of them), at the current offset. */
static fm_status write_tensor(writer *wr, const fm_gguf_wtensor *w, size_t n_bytes, fm_err *err) {
  fm_status st = FM_OK;
  if (w->src == FM_GGUF_WSRC_BYTES) {
    for (size_t off = 0; st == FM_OK && off < n_bytes; off += CHUNK_BYTES) {
      size_t n = n_bytes - off < CHUNK_BYTES ? n_bytes - off : CHUNK_BYTES;
      if (!(st = cancelled(wr, err)) && !(st = put(wr, (const unsigned char *)w->data + off, n, err)))
        fm_ctl_progress(wr->ctl, wr->done += (double)n, wr->total);
    }
    return st;
  }
  const size_t row_bytes = ggml_row_size((enum ggml_type)w->type, w->ne[0]);
  const int64_t n_rows = (int64_t)(n_bytes / row_bytes), step = chunk_rows(w, n_rows);
  for (int64_t r = 0; st == FM_OK && r < n_rows; r += step) {
    int64_t n = n_rows - r < step ? n_rows - r : step;
    if ((st = cancelled(wr, err))) break;
    encode_rows(wr, w, r, n);
    if (!(st = put(wr, wr->out, (size_t)n * row_bytes, err)))
      fm_ctl_progress(wr->ctl, wr->done += (double)n * (double)row_bytes, wr->total);
  }
  return st;
}

/* ---- the writer ---------------------------------------------------------- */

fm_status fm_gguf_write(const char *path, const fm_gguf_wkv *kv, int64_t n_kv,
                        const fm_gguf_wtensor *tensors, int64_t n_tensors, uint32_t alignment,
                        const fm_ctl *ctl, fm_err *err) {
  if (!path || !path[0]) return fm_err_set(err, FM_EARG, "fm_gguf_write: no path");
  if (n_kv < 0 || n_tensors < 0 || (n_kv > 0 && !kv) || (n_tensors > 0 && !tensors))
    return fm_err_set(err, FM_EARG, "fm_gguf_write: %lld metadata entries and %lld tensors at %p and %p",
                      (long long)n_kv, (long long)n_tensors, (const void *)kv, (const void *)tensors);
  if (alignment < 1 || alignment > FM_GGUF_WRITE_MAX_ALIGNMENT || (alignment & (alignment - 1)))
    return fm_err_set(err, FM_EARG, "alignment must be a power of two from 1 to %d, got %u",
                      FM_GGUF_WRITE_MAX_ALIGNMENT, alignment);

  fm_status st = FM_OK;
  struct ggml_context *gctx = NULL;
  struct gguf_context *gg = NULL;
  writer wr = {NULL, path, 0, NULL, NULL, 0, 0, ctl};
  int64_t n_names = n_kv > n_tensors ? n_kv : n_tensors;
  named *names = malloc((size_t)(n_names > 0 ? n_names : 1) * sizeof *names);
  size_t *n_bytes = malloc((size_t)(n_tensors > 0 ? n_tensors : 1) * sizeof *n_bytes);
  if (!names || !n_bytes) {
    st = fm_err_set(err, FM_ENOMEM, "fm_gguf_write: out of memory for %lld names", (long long)n_names);
    goto done;
  }
  for (int64_t i = 0; i < n_kv && !st; i++) {
    st = check_kv(&kv[i], i, err);
    names[i] = (named){kv[i].key, i};
  }
  if (st || (st = check_unique(names, n_kv, "metadata key", err))) goto done;
  size_t max_chunk = 0; /* floats in the largest chunk of rows */
  for (int64_t i = 0; i < n_tensors && !st; i++) {
    const fm_gguf_wtensor *w = &tensors[i];
    st = check_tensor(w, i, &n_bytes[i], err);
    names[i] = (named){w->name, i};
    if (st) break;
    wr.total += (double)n_bytes[i];
    if (w->src == FM_GGUF_WSRC_BYTES) continue;
    const size_t floats = (size_t)(chunk_rows(w, w->n / w->ne[0]) * w->ne[0]);
    if (floats > max_chunk) max_chunk = floats;
  }
  if (st || (st = check_unique(names, n_tensors, "tensor", err))) goto done;

  /* No GGML call below can assert: everything it checks was checked. */
  wr.f32 = malloc(max_chunk > 0 ? max_chunk * sizeof(float) : 1);
  wr.out = malloc(max_chunk > 0 ? max_chunk * sizeof(float) : 1); /* encodings take <= 4 bytes a value */
  struct ggml_init_params ip = {(size_t)(n_tensors + 1) * ggml_tensor_overhead(), NULL, true};
  if (!wr.f32 || !wr.out || !(gctx = ggml_init(ip)) ||
      !(gg = alignment == GGUF_DEFAULT_ALIGNMENT ? gguf_init_empty() : aligned_context(alignment))) {
    st = fm_err_set(err, FM_ENOMEM, "fm_gguf_write: out of memory for GGML's context and %zu floats",
                    max_chunk);
    goto done;
  }
  for (int64_t i = 0; i < n_kv; i++) set_kv(gg, &kv[i]);
  for (int64_t i = 0; i < n_tensors; i++) {
    const fm_gguf_wtensor *w = &tensors[i];
    struct ggml_tensor *t = ggml_new_tensor(gctx, (enum ggml_type)w->type, w->n_dims, w->ne);
    ggml_set_name(t, w->name);
    gguf_add_tensor(gg, t);
  }

  if (!(wr.f = fopen(path, "wb"))) {
    st = fm_err_set(err, FM_EIO, "could not write GGUF file '%s': %s", path, strerror(errno));
    goto done;
  }
  if (!gguf_write_to_file_ptr(gg, wr.f, true)) {
    st = fm_err_set(err, FM_EIO, "could not write GGUF file '%s': GGML's writer failed on the header", path);
    goto done;
  }
  const uint64_t data_offset = gguf_get_meta_size(gg);
  wr.pos = data_offset;
  for (int64_t i = 0; i < n_tensors && !st; i++) {
    if (!(st = pad_to(&wr, data_offset + gguf_get_tensor_offset(gg, i), err)))
      st = write_tensor(&wr, &tensors[i], n_bytes[i], err);
  }
  if (!st) st = pad_to(&wr, (wr.pos + alignment - 1) / alignment * alignment, err);
  if (!st && fflush(wr.f) != 0)
    st = fm_err_set(err, FM_EIO, "could not write GGUF file '%s': %s", path, strerror(errno));

done:
  if (wr.f && fclose(wr.f) != 0 && !st)
    st = fm_err_set(err, FM_EIO, "could not write GGUF file '%s': %s", path, strerror(errno));
  if (wr.f && st) unlink(path); /* a partial file is no GGUF file */
  if (gg) gguf_free(gg);
  if (gctx) ggml_free(gctx);
  free(wr.f32);
  free(wr.out);
  free(names);
  free(n_bytes);
  return st;
}
