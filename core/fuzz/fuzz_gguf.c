/* fuzz_gguf.c: libFuzzer target for the GGUF reader (fm_gguf.h:
 * fm_gguf_parse and every accessor).
 *
 * Input encoding: the bytes are the GGUF file itself, parsed in place from
 * the fuzzer's buffer, which ends exactly at the file's end, so any read past
 * it is an AddressSanitizer report.
 *
 * On a rejected file: the status is FM_EFORMAT or FM_EUNSUPPORTED with a
 * non-empty message and no result. On an accepted file, the invariants the
 * reader promises are checked independently:
 *  - every metadata entry's value lies inside the file; every string (scalar
 *    or array element, through the O(1) index) lies inside the file; scalar
 *    and element getters agree with their types (get_i64 refuses floats,
 *    get_f64 accepts every numeric type, out-of-range indices fail);
 *  - keys and tensor names are well-formed UTF-8 without NUL, unique, and
 *    found again by fm_gguf_find_*;
 *  - general.alignment, if present, is a uint32 power of two and is the
 *    reader's alignment; the data section is aligned and inside the file;
 *  - each tensor has 1..4 positive dims, a known type, rows a whole number of
 *    blocks, n_bytes = elements / block * type size, data aligned, inside
 *    the file and not overlapping any other tensor (checked pairwise);
 *  - every data byte is read once (so ASan sees a bad range).
 *
 * Seeds (core/fuzz/corpus/fuzz_gguf/): small valid files (every value type,
 * string arrays, quantized and plain tensors, alignment 32 and 64, no
 * tensors), and cut, misaligned and overflowing variants. */
#include "fm/fm_gguf.h"

#include <string.h>

#include "fuzz_util.h"

static int inside(const uint8_t *base, size_t size, const void *p, uint64_t n) {
  const uint8_t *q = p;
  return q >= base && (uint64_t)(q - base) <= size && n <= size - (uint64_t)(q - base);
}

static volatile uint8_t sink;

/* Well-formed UTF-8 without NUL (RFC 3629: shortest forms, no surrogates,
 * nothing above U+10FFFF), written apart from the reader's own check. */
static int utf8_name_ok(const uint8_t *s, size_t n) {
  for (size_t i = 0; i < n;) {
    uint32_t c = s[i], need, min;
    if (c == 0) return 0;
    if (c < 0x80) { i++; continue; }
    if ((c & 0xE0) == 0xC0) { need = 1; min = 0x80; c &= 0x1F; }
    else if ((c & 0xF0) == 0xE0) { need = 2; min = 0x800; c &= 0x0F; }
    else if ((c & 0xF8) == 0xF0) { need = 3; min = 0x10000; c &= 0x07; }
    else return 0;
    if (n - i - 1 < need) return 0;
    for (uint32_t k = 1; k <= need; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return 0;
      c = (c << 6) | (s[i + k] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    i += need + 1;
  }
  return 1;
}

static void check_kv(const fm_gguf *g, const uint8_t *data, size_t size, int64_t i) {
  const fm_gguf_kv *kv = fm_gguf_kv_at(g, i);
  FUZZ_ASSERT(kv != NULL);
  FUZZ_ASSERT(inside(data, size, kv->key, kv->key_len));
  FUZZ_ASSERT(kv->type <= FM_GGUF_F64 && kv->elem_type <= FM_GGUF_F64);
  FUZZ_ASSERT(kv->elem_type != FM_GGUF_ARRAY);
  FUZZ_ASSERT(kv->type == FM_GGUF_ARRAY || (kv->n == 1 && kv->elem_type == kv->type));
  size_t esz = fm_gguf_vtype_size(kv->elem_type);
  if (kv->elem_type != FM_GGUF_STRING) FUZZ_ASSERT(esz > 0 && inside(data, size, kv->value, kv->n * esz));
  FUZZ_ASSERT(utf8_name_ok((const uint8_t *)kv->key, kv->key_len));
  if (kv->key_len < 256) {
    char key[256];
    memcpy(key, kv->key, kv->key_len);
    key[kv->key_len] = 0;
    FUZZ_ASSERT(fm_gguf_find_kv(g, key) == i);
  }
  uint64_t lim = kv->n < 64 ? kv->n : 64;
  for (uint64_t j = 0; j < lim; j++) {
    int64_t iv;
    uint64_t uv;
    double dv;
    const char *s;
    size_t len;
    int ri = fm_gguf_get_i64(kv, j, &iv), ru = fm_gguf_get_u64(kv, j, &uv);
    int rf = fm_gguf_get_f64(kv, j, &dv), rs = fm_gguf_get_str(kv, j, &s, &len);
    switch (kv->elem_type) {
    case FM_GGUF_STRING:
      FUZZ_ASSERT(rs == 0 && ri && ru && rf && inside(data, size, s, len));
      if (len) sink ^= (uint8_t)(s[0] ^ s[len - 1]);
      break;
    case FM_GGUF_F32:
    case FM_GGUF_F64: FUZZ_ASSERT(rf == 0 && ri && ru && rs); break;
    case FM_GGUF_BOOL:
      FUZZ_ASSERT(ri == 0 && (iv == 0 || iv == 1) && ru == 0 && rf == 0 && rs);
      break;
    default:
      FUZZ_ASSERT(rf == 0 && rs);
      if (ri == 0) FUZZ_ASSERT(dv == (double)iv);
      if (ru == 0) FUZZ_ASSERT(dv == (double)uv);
      FUZZ_ASSERT(ri == 0 || ru == 0);
      if (ri == 0 && ru == 0) FUZZ_ASSERT(iv >= 0 && (uint64_t)iv == uv);
    }
  }
  /* Out of range, and the last element. */
  const char *s;
  size_t len;
  int64_t iv;
  FUZZ_ASSERT(fm_gguf_get_i64(kv, kv->n, &iv) != 0 && fm_gguf_get_str(kv, kv->n, &s, &len) != 0);
  if (kv->elem_type == FM_GGUF_STRING && kv->n > 0)
    FUZZ_ASSERT(fm_gguf_get_str(kv, kv->n - 1, &s, &len) == 0 && inside(data, size, s, len));
}

static void check_tensors(const fm_gguf *g, const uint8_t *data, size_t size) {
  uint64_t a = fm_gguf_alignment(g);
  int64_t n = fm_gguf_n_tensors(g);
  for (int64_t i = 0; i < n; i++) {
    const fm_gguf_tensor *t = fm_gguf_tensor_at(g, i);
    FUZZ_ASSERT(t && inside(data, size, t->name, t->name_len) && t->name_len <= 63);
    FUZZ_ASSERT(t->n_dims >= 1 && t->n_dims <= FM_GGUF_MAX_DIMS);
    int64_t blk = fm_gguf_type_block(t->type), tsz = fm_gguf_type_size(t->type);
    FUZZ_ASSERT(blk > 0 && tsz > 0 && fm_gguf_type_name(t->type) != NULL);
    int64_t el = 1;
    for (int d = 0; d < FM_GGUF_MAX_DIMS; d++) {
      FUZZ_ASSERT(t->ne[d] >= 1 && (d < (int)t->n_dims || t->ne[d] == 1));
      FUZZ_ASSERT(fm_mul_ok(el, t->ne[d], &el));
    }
    FUZZ_ASSERT(t->ne[0] % blk == 0);
    int64_t nb;
    FUZZ_ASSERT(fm_mul_ok(el / blk, tsz, &nb) && (uint64_t)nb == t->n_bytes);
    FUZZ_ASSERT(t->data_offset % a == 0 && t->data_offset >= fm_gguf_data_offset(g));
    FUZZ_ASSERT(t->data_offset <= size && t->n_bytes <= size - t->data_offset);
    const uint8_t *d = fm_gguf_tensor_data(g, t);
    FUZZ_ASSERT(d == data + t->data_offset);
    for (uint64_t k = 0; k < t->n_bytes; k++) sink ^= d[k];
    FUZZ_ASSERT(utf8_name_ok((const uint8_t *)t->name, t->name_len));
    {
      char name[64];
      memcpy(name, t->name, t->name_len);
      name[t->name_len] = 0;
      FUZZ_ASSERT(fm_gguf_find_tensor(g, name) == i);
    }
    for (int64_t j = 0; j < i; j++) {
      const fm_gguf_tensor *u = fm_gguf_tensor_at(g, j);
      FUZZ_ASSERT(t->name_len != u->name_len || memcmp(t->name, u->name, t->name_len) != 0);
      FUZZ_ASSERT(t->data_offset + t->n_bytes <= u->data_offset ||
                  u->data_offset + u->n_bytes <= t->data_offset);
    }
  }
  FUZZ_ASSERT(fm_gguf_tensor_at(g, n) == NULL && fm_gguf_tensor_at(g, -1) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fm_gguf *g = NULL;
  fm_err err = {FM_OK, ""};
  fm_status st = fm_gguf_parse(data, size, "fuzz.gguf", &g, &err);
  if (st != FM_OK) {
    FUZZ_ASSERT(g == NULL && err.code == st && err.msg[0] != 0);
    FUZZ_ASSERT(st == FM_EFORMAT || st == FM_EUNSUPPORTED);
    return 0;
  }
  FUZZ_ASSERT(g && fm_gguf_bytes(g) == data && fm_gguf_size(g) == size);
  FUZZ_ASSERT(fm_gguf_version(g) == 2 || fm_gguf_version(g) == 3);
  uint32_t a = fm_gguf_alignment(g);
  FUZZ_ASSERT(a && (a & (a - 1)) == 0);
  FUZZ_ASSERT(fm_gguf_data_offset(g) <= size);
  int64_t k = fm_gguf_find_kv(g, "general.alignment");
  if (k >= 0) {
    const fm_gguf_kv *kv = fm_gguf_kv_at(g, k);
    uint64_t v;
    FUZZ_ASSERT(kv->type == FM_GGUF_U32 && fm_gguf_get_u64(kv, 0, &v) == 0 && v == a);
  } else {
    FUZZ_ASSERT(a == FM_GGUF_DEFAULT_ALIGNMENT);
  }
  for (int64_t i = 0; i < fm_gguf_n_kv(g); i++) check_kv(g, data, size, i);
  FUZZ_ASSERT(fm_gguf_kv_at(g, fm_gguf_n_kv(g)) == NULL);
  check_tensors(g, data, size);
  fm_err e2;
  FUZZ_ASSERT(fm_gguf_check(g, &e2) == FM_OK);
  fm_gguf_close(g);
  return 0;
}
