/* Tests for fm_gguf.h: the validating GGUF reader.
 *
 * Hand-built files come from a small byte builder below (the layout of
 * ggml's docs/gguf.md, written out field by field); every parse reads from a
 * heap buffer of exactly the file's size, so a read past the end is an ASan
 * report. The fixtures in $RFMALLOC_FIXTURES/gguf (else
 * ../../../shared/fixtures/gguf from the build directory) are parsed and
 * checked against the counts and types their README states; without them
 * those cases are skipped with a message. */
#define _GNU_SOURCE
#include "fm/fm_gguf.h"
#include "fm/fm_fileview.h"
#include "fm_test.h"
#include "fm_test_files.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a GGUF byte builder ------------------------------------------------------- */

typedef struct buf {
  uint8_t *p;
  size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n) {
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n) cap *= 2;
    uint8_t *q = realloc(b->p, cap);
    if (!q) abort();
    b->p = q;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, src, n);
  b->n += n;
}
static void put_u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void put_u32(buf *b, uint32_t v) {
  uint8_t x[4];
  for (int i = 0; i < 4; i++) x[i] = (uint8_t)(v >> (8 * i));
  put(b, x, 4);
}
static void put_u64(buf *b, uint64_t v) {
  uint8_t x[8];
  for (int i = 0; i < 8; i++) x[i] = (uint8_t)(v >> (8 * i));
  put(b, x, 8);
}
static void put_str(buf *b, const char *s) {
  put_u64(b, strlen(s));
  put(b, s, strlen(s));
}
static void put_header(buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
  put(b, "GGUF", 4);
  put_u32(b, version);
  put_u64(b, n_tensors);
  put_u64(b, n_kv);
}
static void kv_head(buf *b, const char *key, uint32_t type) {
  put_str(b, key);
  put_u32(b, type);
}
static void kv_u32(buf *b, const char *key, uint32_t v) {
  kv_head(b, key, FM_GGUF_U32);
  put_u32(b, v);
}
static void kv_str(buf *b, const char *key, const char *v) {
  kv_head(b, key, FM_GGUF_STRING);
  put_str(b, v);
}
static void tensor_info(buf *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                        uint64_t off) {
  put_str(b, name);
  put_u32(b, n_dims);
  for (uint32_t d = 0; d < n_dims; d++) put_u64(b, ne[d]);
  put_u32(b, type);
  put_u64(b, off);
}
static void pad_to(buf *b, size_t a) {
  while (b->n % a) put_u8(b, 0);
}

/* Parse b's bytes from a heap copy of exactly b->n bytes; the result
 * borrows the copy, so release it with close_parsed. */
static fm_status parse_buf(const buf *b, fm_gguf **g, fm_err *err) {
  uint8_t *copy = malloc(b->n ? b->n : 1);
  if (!copy) abort();
  if (b->n) memcpy(copy, b->p, b->n);
  fm_status st = fm_gguf_parse(b->n ? copy : NULL, b->n, "t.gguf", g, err);
  if (st != FM_OK) free(copy);
  return st;
}

static void close_parsed(fm_gguf *g) {
  if (!g) return;
  uint8_t *p = (uint8_t *)fm_gguf_bytes(g);
  fm_gguf_close(g);
  free(p);
}

static int has(const char *msg, const char *what) {
  if (strstr(msg, what)) return 1;
  fprintf(stderr, "  message '%s' lacks '%s'\n", msg, what);
  return 0;
}

/* ---- a valid file with every value type ------------------------------------------ */

#define T0_BYTES (2 * 18 * 2) /* q4_0, 64 x 2: 2 blocks of 18 bytes a row */
#define T1_BYTES (3 * 4)       /* f32, 3 */

/* The valid file: 15 metadata entries, tensors "w" (q4_0, 64 x 2, at data
 * offset 64) and "b" (f32, 3, at 0), alignment 64; it ends exactly at the end
 * of w's data, so every shorter prefix is invalid. */
static void build_valid(buf *b) {
  memset(b, 0, sizeof *b);
  put_header(b, 3, 2, 15);
  kv_str(b, "general.architecture", "llama");
  kv_head(b, "u8", FM_GGUF_U8), put_u8(b, 200);
  kv_head(b, "i8", FM_GGUF_I8), put_u8(b, (uint8_t)-5);
  kv_head(b, "u16", FM_GGUF_U16), put_u8(b, 0x34), put_u8(b, 0x12);
  kv_head(b, "i16", FM_GGUF_I16), put_u8(b, 0xfe), put_u8(b, 0xff);
  kv_u32(b, "general.alignment", 64);
  kv_head(b, "i32", FM_GGUF_I32), put_u32(b, (uint32_t)-70000);
  float f = 1.5f;
  uint32_t fb;
  memcpy(&fb, &f, 4);
  kv_head(b, "f32", FM_GGUF_F32), put_u32(b, fb);
  kv_head(b, "bool", FM_GGUF_BOOL), put_u8(b, 1);
  kv_head(b, "u64", FM_GGUF_U64), put_u64(b, UINT64_C(18446744073709551615));
  kv_head(b, "i64", FM_GGUF_I64), put_u64(b, (uint64_t)INT64_MIN);
  double d = -0.25;
  uint64_t db;
  memcpy(&db, &d, 8);
  kv_head(b, "f64", FM_GGUF_F64), put_u64(b, db);
  kv_head(b, "tokens", FM_GGUF_ARRAY), put_u32(b, FM_GGUF_STRING), put_u64(b, 4);
  put_str(b, "<unk>"), put_str(b, ""), put_str(b, "h\xc3\xa9llo"), put_str(b, "z");
  kv_head(b, "scores", FM_GGUF_ARRAY), put_u32(b, FM_GGUF_I32), put_u64(b, 3);
  put_u32(b, 7), put_u32(b, (uint32_t)-1), put_u32(b, 0x7fffffff);
  kv_head(b, "flags", FM_GGUF_ARRAY), put_u32(b, FM_GGUF_BOOL), put_u64(b, 2);
  put_u8(b, 0), put_u8(b, 1);
  uint64_t ne0[2] = {64, 2}, ne1[1] = {3};
  tensor_info(b, "w", 2, ne0, 2, 64);
  tensor_info(b, "b", 1, ne1, 0, 0);
  pad_to(b, 64);
  size_t data = b->n;
  for (int i = 0; i < 64; i++) put_u8(b, i < T1_BYTES ? (uint8_t)(i + 1) : 0);
  for (int i = 0; i < T0_BYTES; i++) put_u8(b, (uint8_t)(i * 7));
  (void)data;
}

static void valid_file_reads(void) {
  buf b;
  build_valid(&b);
  fm_gguf *g = NULL;
  fm_err err;
  CHECK_OK(parse_buf(&b, &g, &err), &err);
  if (!g) goto out;
  CHECK(fm_gguf_version(g) == 3);
  CHECK(fm_gguf_alignment(g) == 64);
  CHECK(fm_gguf_n_kv(g) == 15 && fm_gguf_n_tensors(g) == 2);
  CHECK(fm_gguf_size(g) == b.n);
  CHECK(fm_gguf_data_offset(g) % 64 == 0 && fm_gguf_data_offset(g) + 64 + T0_BYTES == b.n);
  CHECK(strcmp(fm_gguf_path(g), "t.gguf") == 0);
  CHECK(fm_gguf_kv_at(g, -1) == NULL && fm_gguf_kv_at(g, 15) == NULL);
  CHECK(fm_gguf_tensor_at(g, 2) == NULL);
  CHECK(fm_gguf_find_kv(g, "nope") == -1 && fm_gguf_find_kv(g, "u") == -1);
  CHECK(fm_gguf_find_kv(g, "general.architecture") == 0);

  const char *s;
  size_t len;
  int64_t i64;
  uint64_t u64;
  double f64;
  const fm_gguf_kv *kv = fm_gguf_kv_at(g, 0);
  CHECK(kv->type == FM_GGUF_STRING && kv->n == 1 && kv->key_len == 20);
  CHECK(fm_gguf_get_str(kv, 0, &s, &len) == 0 && len == 5 && memcmp(s, "llama", 5) == 0);
  CHECK(fm_gguf_get_str(kv, 1, &s, &len) != 0);
  CHECK(fm_gguf_get_i64(kv, 0, &i64) != 0 && fm_gguf_get_f64(kv, 0, &f64) != 0);

  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "u8"));
  CHECK(fm_gguf_get_i64(kv, 0, &i64) == 0 && i64 == 200);
  CHECK(fm_gguf_get_u64(kv, 0, &u64) == 0 && u64 == 200);
  CHECK(fm_gguf_get_str(kv, 0, &s, &len) != 0);
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "i8"));
  CHECK(fm_gguf_get_i64(kv, 0, &i64) == 0 && i64 == -5);
  CHECK(fm_gguf_get_u64(kv, 0, &u64) != 0); /* negative */
  CHECK(fm_gguf_get_f64(kv, 0, &f64) == 0 && f64 == -5.0);
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "u16"));
  CHECK(fm_gguf_get_i64(kv, 0, &i64) == 0 && i64 == 0x1234);
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "i16"));
  CHECK(fm_gguf_get_i64(kv, 0, &i64) == 0 && i64 == -2);
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "general.alignment"));
  CHECK(kv->type == FM_GGUF_U32 && fm_gguf_get_u64(kv, 0, &u64) == 0 && u64 == 64);
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "i32"));
  CHECK(fm_gguf_get_i64(kv, 0, &i64) == 0 && i64 == -70000);
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "f32"));
  CHECK(fm_gguf_get_f64(kv, 0, &f64) == 0 && f64 == 1.5);
  CHECK(fm_gguf_get_i64(kv, 0, &i64) != 0 && fm_gguf_get_u64(kv, 0, &u64) != 0);
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "bool"));
  CHECK(fm_gguf_get_i64(kv, 0, &i64) == 0 && i64 == 1);
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "u64"));
  CHECK(fm_gguf_get_u64(kv, 0, &u64) == 0 && u64 == UINT64_MAX);
  CHECK(fm_gguf_get_i64(kv, 0, &i64) != 0); /* beyond int64 */
  CHECK(fm_gguf_get_f64(kv, 0, &f64) == 0 && f64 == 18446744073709551615.0);
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "i64"));
  CHECK(fm_gguf_get_i64(kv, 0, &i64) == 0 && i64 == INT64_MIN);
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "f64"));
  CHECK(fm_gguf_get_f64(kv, 0, &f64) == 0 && f64 == -0.25);
  CHECK(fm_gguf_get_i64(kv, 0, &i64) != 0);

  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "tokens"));
  CHECK(kv->type == FM_GGUF_ARRAY && kv->elem_type == FM_GGUF_STRING && kv->n == 4);
  CHECK(fm_gguf_get_str(kv, 0, &s, &len) == 0 && len == 5 && memcmp(s, "<unk>", 5) == 0);
  CHECK(fm_gguf_get_str(kv, 1, &s, &len) == 0 && len == 0);
  CHECK(fm_gguf_get_str(kv, 2, &s, &len) == 0 && len == 6 && memcmp(s, "h\xc3\xa9llo", 6) == 0);
  CHECK(fm_gguf_get_str(kv, 3, &s, &len) == 0 && len == 1 && s[0] == 'z');
  CHECK(fm_gguf_get_str(kv, 4, &s, &len) != 0);
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "scores"));
  CHECK(kv->elem_type == FM_GGUF_I32 && kv->n == 3);
  CHECK(fm_gguf_get_i64(kv, 1, &i64) == 0 && i64 == -1);
  CHECK(fm_gguf_get_i64(kv, 2, &i64) == 0 && i64 == 0x7fffffff);
  CHECK(fm_gguf_get_i64(kv, 3, &i64) != 0);
  CHECK(fm_gguf_get_f64(kv, 0, &f64) == 0 && f64 == 7.0);
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "flags"));
  CHECK(fm_gguf_get_i64(kv, 0, &i64) == 0 && i64 == 0);
  CHECK(fm_gguf_get_i64(kv, 1, &i64) == 0 && i64 == 1);

  int64_t wi = fm_gguf_find_tensor(g, "w"), bi = fm_gguf_find_tensor(g, "b");
  CHECK(wi == 0 && bi == 1 && fm_gguf_find_tensor(g, "ww") == -1);
  const fm_gguf_tensor *w = fm_gguf_tensor_at(g, wi), *t = fm_gguf_tensor_at(g, bi);
  CHECK(w->n_dims == 2 && w->ne[0] == 64 && w->ne[1] == 2 && w->ne[2] == 1 && w->ne[3] == 1);
  CHECK(w->type == 2 && w->n_bytes == T0_BYTES && w->name_len == 1);
  CHECK(w->data_offset == fm_gguf_data_offset(g) + 64);
  CHECK(t->type == 0 && t->n_bytes == 12 && t->data_offset == fm_gguf_data_offset(g));
  const uint8_t *tb = fm_gguf_tensor_data(g, t);
  CHECK(tb == fm_gguf_bytes(g) + fm_gguf_data_offset(g) && tb[0] == 1 && tb[11] == 12);
  CHECK(fm_gguf_tensor_data(g, w)[1] == 7);
  close_parsed(g);
out:
  free(b.p);
}

/* Every prefix of the valid file shorter than the whole fails cleanly. */
static void every_cut_fails(void) {
  buf b;
  build_valid(&b);
  size_t full = b.n;
  int bad = 0;
  for (size_t n = 0; n < full; n++) {
    b.n = n;
    fm_gguf *g = NULL;
    fm_err err = {FM_OK, ""};
    fm_status st = parse_buf(&b, &g, &err);
    if (st != FM_EFORMAT || g != NULL || err.code != st || !err.msg[0]) {
      if (bad++ < 5) fprintf(stderr, "  cut at %zu: status %d, msg '%s'\n", n, (int)st, err.msg);
    }
    close_parsed(g);
  }
  CHECK(bad == 0);
  b.n = full;
  fm_gguf *g = NULL;
  fm_err err;
  CHECK_OK(parse_buf(&b, &g, &err), &err);
  close_parsed(g);
  free(b.p);
}

/* ---- bad files -------------------------------------------------------------------- */

/* A minimal file: header, the given kv bytes, one f32 tensor "t" of ne
 * elements at offset 0, padding to 32, then data of data_bytes bytes. */
static fm_status one_tensor(uint32_t version, const buf *kvs, uint64_t n_kv, uint32_t n_dims,
                            const uint64_t *ne, uint32_t type, uint64_t off, size_t data_bytes,
                            fm_err *err) {
  buf b = {0};
  put_header(&b, version, 1, n_kv);
  if (kvs) put(&b, kvs->p, kvs->n);
  tensor_info(&b, "t", n_dims, ne, type, off);
  pad_to(&b, 32);
  for (size_t i = 0; i < data_bytes; i++) put_u8(&b, 0);
  fm_gguf *g = NULL;
  fm_status st = parse_buf(&b, &g, err);
  close_parsed(g);
  free(b.p);
  return st;
}

static void header_errors(void) {
  fm_err err;
  fm_gguf *g = NULL;
  buf b = {0};
  /* empty and short */
  CHECK(fm_gguf_parse(NULL, 0, "e.gguf", &g, &err) == FM_EFORMAT && g == NULL);
  CHECK(has(err.msg, "e.gguf") && has(err.msg, "0 bytes"));
  CHECK(fm_gguf_parse("GG", 2, NULL, &g, &err) == FM_EFORMAT);
  CHECK(fm_gguf_parse("GGUF", 4, "x", NULL, &err) == FM_EARG);
  /* bad magic */
  put(&b, "GGML", 4), put_u32(&b, 3), put_u64(&b, 0), put_u64(&b, 0);
  CHECK(parse_buf(&b, &g, &err) == FM_EFORMAT && has(err.msg, "t.gguf") && has(err.msg, "magic"));
  free(b.p);
  /* versions */
  uint32_t versions[] = {0, 1, 4, 0x03000000u};
  fm_status want[] = {FM_EFORMAT, FM_EUNSUPPORTED, FM_EUNSUPPORTED, FM_EUNSUPPORTED};
  const char *words[] = {"version 0", "version 1", "version 4", "big-endian"};
  for (int i = 0; i < 4; i++) {
    memset(&b, 0, sizeof b);
    put_header(&b, versions[i], 0, 0);
    CHECK(parse_buf(&b, &g, &err) == want[i] && has(err.msg, words[i]));
    free(b.p);
  }
  /* version 2 with nothing else is valid */
  memset(&b, 0, sizeof b);
  put_header(&b, 2, 0, 0);
  CHECK_OK(parse_buf(&b, &g, &err), &err);
  if (g) {
    CHECK(fm_gguf_n_kv(g) == 0 && fm_gguf_n_tensors(g) == 0 && fm_gguf_alignment(g) == 32);
    CHECK(fm_gguf_data_offset(g) == 24); /* padding past the end is clamped */
  }
  close_parsed(g);
  free(b.p);
  /* counts against the remaining bytes */
  memset(&b, 0, sizeof b);
  put_header(&b, 3, 0, UINT64_C(1) << 62);
  CHECK(parse_buf(&b, &g, &err) == FM_EFORMAT && has(err.msg, "4611686018427387904 metadata"));
  free(b.p);
  memset(&b, 0, sizeof b);
  put_header(&b, 3, UINT64_MAX, 0);
  CHECK(parse_buf(&b, &g, &err) == FM_EFORMAT && has(err.msg, "18446744073709551615 tensors"));
  free(b.p);
  /* 3 tensors claimed, room for one entry */
  memset(&b, 0, sizeof b);
  put_header(&b, 3, 3, 0);
  uint64_t ne[1] = {8};
  tensor_info(&b, "a", 1, ne, 0, 0);
  CHECK(parse_buf(&b, &g, &err) == FM_EFORMAT && has(err.msg, "3 tensors"));
  free(b.p);
}

static void metadata_errors(void) {
  fm_err err;
  uint64_t ne[1] = {8};
  buf kv = {0};
  /* An array claiming 2^62 elements: fails before anything is allocated. */
  kv_head(&kv, "tokenizer.ggml.tokens", FM_GGUF_ARRAY);
  put_u32(&kv, FM_GGUF_STRING), put_u64(&kv, UINT64_C(1) << 62);
  put_str(&kv, "a");
  CHECK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err) == FM_EFORMAT);
  CHECK(has(err.msg, "'tokenizer.ggml.tokens'") && has(err.msg, "4611686018427387904 elements of 8+ bytes") &&
        has(err.msg, "at byte 24"));
  free(kv.p);
  memset(&kv, 0, sizeof kv);
  kv_head(&kv, "scores", FM_GGUF_ARRAY);
  put_u32(&kv, FM_GGUF_F32), put_u64(&kv, UINT64_C(1) << 62);
  CHECK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "of 4 bytes"));
  free(kv.p);
  /* a string value claiming more than the file */
  memset(&kv, 0, sizeof kv);
  kv_head(&kv, "name", FM_GGUF_STRING);
  put_u64(&kv, UINT64_C(1) << 40);
  CHECK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "'name'") &&
        has(err.msg, "1099511627776 bytes"));
  free(kv.p);
  /* a key length past the end */
  memset(&kv, 0, sizeof kv);
  put_u64(&kv, 1000);
  put(&kv, "key", 3);
  CHECK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "metadata key at byte 24"));
  free(kv.p);
  /* unknown value types, nested arrays, bad bools */
  memset(&kv, 0, sizeof kv);
  kv_head(&kv, "k", 13), put_u32(&kv, 0);
  CHECK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "value type 13"));
  free(kv.p);
  memset(&kv, 0, sizeof kv);
  kv_head(&kv, "k", FM_GGUF_ARRAY), put_u32(&kv, 99), put_u64(&kv, 0);
  CHECK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "element type 99"));
  free(kv.p);
  memset(&kv, 0, sizeof kv);
  kv_head(&kv, "nest", FM_GGUF_ARRAY), put_u32(&kv, FM_GGUF_ARRAY), put_u64(&kv, 1);
  put_u32(&kv, FM_GGUF_U8), put_u64(&kv, 1), put_u8(&kv, 1);
  CHECK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err) == FM_EUNSUPPORTED && has(err.msg, "array of arrays"));
  free(kv.p);
  memset(&kv, 0, sizeof kv);
  kv_head(&kv, "flag", FM_GGUF_BOOL), put_u8(&kv, 2);
  CHECK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "is 2, expected 0 or 1"));
  free(kv.p);
  memset(&kv, 0, sizeof kv);
  kv_head(&kv, "flags", FM_GGUF_ARRAY), put_u32(&kv, FM_GGUF_BOOL), put_u64(&kv, 3);
  put_u8(&kv, 1), put_u8(&kv, 0), put_u8(&kv, 255);
  CHECK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "is 255"));
  free(kv.p);
  /* duplicate keys */
  memset(&kv, 0, sizeof kv);
  kv_u32(&kv, "a.b", 1);
  kv_u32(&kv, "a.c", 1);
  kv_u32(&kv, "a.b", 2);
  CHECK(one_tensor(3, &kv, 3, 1, ne, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "'a.b'") &&
        has(err.msg, "repeats key 0"));
  free(kv.p);
}

/* Keys and tensor names: UTF-8 text without NUL, else FM_EFORMAT naming the
 * string's byte and the bad byte's. Key bytes start at 24 + 8 = 32. */
static void name_errors(void) {
  fm_err err;
  uint64_t ne[1] = {8};
  static const struct {
    const char *bytes;
    size_t n;
    size_t bad; /* offset of the bad byte, or n when valid */
  } keys[] = {
      {"ab\0cd", 5, 2},                 /* NUL */
      {"a\xff", 2, 1},                  /* not a lead byte */
      {"ab\xc3", 3, 2},                 /* cut short */
      {"\xc3(", 2, 0},                  /* bad continuation */
      {"k\xc0\x80", 3, 1},              /* overlong NUL */
      {"\xe0\x80\xaf", 3, 0},           /* overlong '/' */
      {"x\xed\xa0\x80", 4, 1},          /* surrogate U+D800 */
      {"\xf4\x90\x80\x80", 4, 0},       /* above U+10FFFF */
      {"\x80", 1, 0},                   /* lone continuation */
      {"h\xc3\xa9", 3, 3},              /* valid: U+00E9 */
      {"\xf0\x9f\x98\x80.k", 6, 6},     /* valid: U+1F600 */
      {"\xef\xbf\xbf\xf4\x8f\xbf\xbf", 7, 7}, /* valid: U+FFFF, U+10FFFF */
  };
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    buf kv = {0};
    put_u64(&kv, keys[i].n);
    put(&kv, keys[i].bytes, keys[i].n);
    put_u32(&kv, FM_GGUF_U8), put_u8(&kv, 7);
    char at[64];
    snprintf(at, sizeof at, "at byte %zu", 32 + keys[i].bad);
    fm_status st = one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err);
    if (keys[i].bad == keys[i].n) {
      CHECK_OK(st, &err);
    } else {
      CHECK(st == FM_EFORMAT && has(err.msg, "metadata key at byte 24") && has(err.msg, at));
      CHECK(has(err.msg, keys[i].bytes[keys[i].bad] ? "not valid UTF-8" : "NUL byte"));
    }
    free(kv.p);
  }
  /* a valid key is found by its bytes */
  buf b = {0};
  put_header(&b, 3, 0, 1);
  kv_u32(&b, "h\xc3\xa9", 5);
  fm_gguf *g = NULL;
  CHECK_OK(parse_buf(&b, &g, &err), &err);
  CHECK(g && fm_gguf_find_kv(g, "h\xc3\xa9") == 0);
  close_parsed(g);
  free(b.p);
  /* the message shows at most 60 bytes of the text before the bad byte,
   * cut at a character: 35 two-byte characters then 0xff */
  memset(&b, 0, sizeof b);
  char key[72];
  for (int i = 0; i < 35; i++) key[2 * i] = (char)0xc3, key[2 * i + 1] = (char)0xa9;
  key[70] = (char)0xff;
  put_header(&b, 3, 0, 1);
  put_u64(&b, 71), put(&b, key, 71), put_u32(&b, FM_GGUF_U8), put_u8(&b, 1);
  CHECK(parse_buf(&b, &g, &err) == FM_EFORMAT && has(err.msg, "at byte 102") && has(err.msg, "0xff"));
  char want[80];
  want[0] = '\'';
  memcpy(want + 1, key, 60);
  want[61] = '\'';
  want[62] = 0;
  CHECK(has(err.msg, want));
  free(b.p);
  /* tensor names: bytes from 32 (no metadata) */
  static const struct {
    const char *bytes;
    size_t n, bad;
  } names[] = {{"t\0u", 3, 1}, {"\x80w", 2, 0}, {"w\xc3\xa9", 3, 3}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    memset(&b, 0, sizeof b);
    put_header(&b, 3, 1, 0);
    put_u64(&b, names[i].n), put(&b, names[i].bytes, names[i].n);
    put_u32(&b, 1), put_u64(&b, 8), put_u32(&b, 0), put_u64(&b, 0);
    pad_to(&b, 32);
    for (int k = 0; k < 32; k++) put_u8(&b, 0);
    fm_status st = parse_buf(&b, &g, &err);
    if (names[i].bad == names[i].n) {
      CHECK_OK(st, &err);
      CHECK(g && fm_gguf_find_tensor(g, "w\xc3\xa9") == 0);
      close_parsed(g);
      g = NULL;
    } else {
      char at[64];
      snprintf(at, sizeof at, "at byte %zu", 32 + names[i].bad);
      CHECK(st == FM_EFORMAT && has(err.msg, "tensor name at byte 24") && has(err.msg, at));
    }
    free(b.p);
  }
  /* metadata string values may hold any bytes */
  buf kv = {0};
  kv_head(&kv, "v", FM_GGUF_STRING), put_u64(&kv, 3), put(&kv, "a\0\xff", 3);
  kv_head(&kv, "tokens", FM_GGUF_ARRAY), put_u32(&kv, FM_GGUF_STRING), put_u64(&kv, 2);
  put_u64(&kv, 1), put(&kv, "\xfe", 1), put_u64(&kv, 2), put(&kv, "\0\0", 2);
  CHECK_OK(one_tensor(3, &kv, 2, 1, ne, 0, 0, 32, &err), &err);
  free(kv.p);
}

static void alignment_errors(void) {
  fm_err err;
  uint64_t ne[1] = {8};
  buf kv = {0};
  kv_head(&kv, "general.alignment", FM_GGUF_I32), put_u32(&kv, 32);
  CHECK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err) == FM_EFORMAT &&
        has(err.msg, "general.alignment") && has(err.msg, "type int32, expected uint32"));
  free(kv.p);
  memset(&kv, 0, sizeof kv);
  kv_head(&kv, "general.alignment", FM_GGUF_U64), put_u64(&kv, 32);
  CHECK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "type uint64"));
  free(kv.p);
  uint32_t bad[] = {0, 3, 48, 0xffffffffu};
  for (int i = 0; i < 4; i++) {
    memset(&kv, 0, sizeof kv);
    kv_u32(&kv, "general.alignment", bad[i]);
    CHECK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err) == FM_EFORMAT &&
          has(err.msg, "expected a nonzero power of two"));
    free(kv.p);
  }
  /* a valid alignment of 1 and of 2^31 (whose padding the file lacks) */
  memset(&kv, 0, sizeof kv);
  kv_u32(&kv, "general.alignment", 1);
  CHECK_OK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err), &err);
  free(kv.p);
  memset(&kv, 0, sizeof kv);
  kv_u32(&kv, "general.alignment", UINT32_C(1) << 31);
  CHECK(one_tensor(3, &kv, 1, 1, ne, 0, 0, 32, &err) == FM_EFORMAT &&
        has(err.msg, "data section starts at byte 2147483648"));
  free(kv.p);
}

static void tensor_errors(void) {
  fm_err err;
  uint64_t ne[4] = {8, 1, 1, 1};
  CHECK_OK(one_tensor(3, NULL, 0, 1, ne, 0, 0, 32, &err), &err);
  /* data past the end of the file: 8 f32 need 32 bytes */
  CHECK(one_tensor(3, NULL, 0, 1, ne, 0, 0, 31, &err) == FM_EFORMAT && has(err.msg, "'t'") &&
        has(err.msg, "past the end"));
  CHECK(one_tensor(3, NULL, 0, 1, ne, 0, 32, 32, &err) == FM_EFORMAT && has(err.msg, "past the end"));
  CHECK(one_tensor(3, NULL, 0, 1, ne, 0, UINT64_MAX - 31, 32, &err) == FM_EFORMAT &&
        has(err.msg, "past the end"));
  /* unaligned offset */
  CHECK(one_tensor(3, NULL, 0, 1, ne, 0, 4, 64, &err) == FM_EFORMAT && has(err.msg, "not a multiple of the alignment 32"));
  /* unknown types: removed ids, past the table */
  uint32_t types[] = {4, 5, 31, 33, 36, 38, 42, 1000, UINT32_MAX};
  for (int i = 0; i < 9; i++) {
    CHECK(one_tensor(3, NULL, 0, 1, ne, types[i], 0, 32, &err) == FM_EFORMAT &&
          has(err.msg, "not a known type"));
  }
  /* dimensions */
  CHECK(one_tensor(3, NULL, 0, 0, ne, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "0 dimensions"));
  uint64_t ne5[5] = {1, 1, 1, 1, 8};
  CHECK(one_tensor(3, NULL, 0, 5, ne5, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "5 dimensions"));
  uint64_t ne0[2] = {8, 0};
  CHECK(one_tensor(3, NULL, 0, 2, ne0, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "dimension 1"));
  uint64_t neneg[1] = {UINT64_MAX};
  CHECK(one_tensor(3, NULL, 0, 1, neneg, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "dimension 0"));
  uint64_t nebig[3] = {UINT64_C(1) << 32, UINT64_C(1) << 30, 2};
  CHECK(one_tensor(3, NULL, 0, 3, nebig, 24, 0, 32, &err) == FM_EFORMAT && has(err.msg, "dimension 2"));
  uint64_t nebytes[2] = {UINT64_C(1) << 32, UINT64_C(1) << 30}; /* 2^62 f32: 2^64 bytes */
  CHECK(one_tensor(3, NULL, 0, 2, nebytes, 0, 0, 32, &err) == FM_EFORMAT && has(err.msg, "2^63 bytes"));
  /* rows not a whole number of blocks */
  uint64_t ne16[2] = {16, 2};
  CHECK(one_tensor(3, NULL, 0, 2, ne16, 2, 0, 64, &err) == FM_EFORMAT && has(err.msg, "q4_0") &&
        has(err.msg, "block of 32"));
  uint64_t ne128[1] = {128};
  CHECK(one_tensor(3, NULL, 0, 1, ne128, 12, 0, 256, &err) == FM_EFORMAT && has(err.msg, "block of 256"));
  /* names: too long, repeated */
  buf b = {0};
  char longname[65];
  memset(longname, 'n', 64);
  longname[64] = 0;
  put_header(&b, 3, 1, 0);
  tensor_info(&b, longname, 1, ne, 0, 0);
  pad_to(&b, 32);
  for (int i = 0; i < 32; i++) put_u8(&b, 0);
  fm_gguf *g = NULL;
  CHECK(parse_buf(&b, &g, &err) == FM_EFORMAT && has(err.msg, "64 bytes, expected at most 63"));
  free(b.p);
  memset(&b, 0, sizeof b);
  longname[63] = 0; /* 63 bytes is fine */
  put_header(&b, 3, 1, 0);
  tensor_info(&b, longname, 1, ne, 0, 0);
  pad_to(&b, 32);
  for (int i = 0; i < 32; i++) put_u8(&b, 0);
  CHECK_OK(parse_buf(&b, &g, &err), &err);
  CHECK(g && fm_gguf_find_tensor(g, longname) == 0);
  close_parsed(g);
  free(b.p);
  memset(&b, 0, sizeof b);
  put_header(&b, 3, 2, 0);
  tensor_info(&b, "x", 1, ne, 0, 0);
  tensor_info(&b, "x", 1, ne, 0, 32);
  pad_to(&b, 32);
  for (int i = 0; i < 64; i++) put_u8(&b, 0);
  CHECK(parse_buf(&b, &g, &err) == FM_EFORMAT && has(err.msg, "'x'") && has(err.msg, "repeats tensor 0"));
  free(b.p);
  /* overlap: b [0, 64) and a [32, 64) */
  memset(&b, 0, sizeof b);
  uint64_t ne16b[1] = {16};
  put_header(&b, 3, 2, 0);
  tensor_info(&b, "a", 1, ne, 0, 32);
  tensor_info(&b, "b", 1, ne16b, 0, 0);
  pad_to(&b, 32);
  for (int i = 0; i < 64; i++) put_u8(&b, 0);
  CHECK(parse_buf(&b, &g, &err) == FM_EFORMAT && has(err.msg, "overlap") && has(err.msg, "'b'"));
  free(b.p);
  /* the same two, not overlapping, out of file order: fine */
  memset(&b, 0, sizeof b);
  put_header(&b, 3, 2, 0);
  tensor_info(&b, "a", 1, ne, 0, 64);
  tensor_info(&b, "b", 1, ne16b, 0, 0);
  pad_to(&b, 32);
  for (int i = 0; i < 96; i++) put_u8(&b, 0);
  CHECK_OK(parse_buf(&b, &g, &err), &err);
  close_parsed(g);
  free(b.p);
}

/* ---- type traits (without GGML; tests/llm_gguf_traits compares with GGML) ------------ */

static void type_traits(void) {
  CHECK(fm_gguf_type_block(0) == 1 && fm_gguf_type_size(0) == 4 && strcmp(fm_gguf_type_name(0), "f32") == 0);
  CHECK(fm_gguf_type_block(2) == 32 && fm_gguf_type_size(2) == 18);
  CHECK(fm_gguf_type_block(8) == 32 && fm_gguf_type_size(8) == 34);
  CHECK(fm_gguf_type_block(12) == 256 && fm_gguf_type_size(12) == 144 && strcmp(fm_gguf_type_name(12), "q4_K") == 0);
  CHECK(fm_gguf_type_block(14) == 256 && fm_gguf_type_size(14) == 210);
  CHECK(fm_gguf_type_block(30) == 1 && fm_gguf_type_size(30) == 2 && strcmp(fm_gguf_type_name(30), "bf16") == 0);
  CHECK(fm_gguf_type_block(4) == 0 && fm_gguf_type_size(4) == 0 && fm_gguf_type_name(4) == NULL);
  CHECK(fm_gguf_type_block(1000) == 0 && fm_gguf_type_name(UINT32_MAX) == NULL);
  CHECK(fm_gguf_vtype_size(FM_GGUF_U64) == 8 && fm_gguf_vtype_size(FM_GGUF_STRING) == 0);
  CHECK(strcmp(fm_gguf_vtype_name(FM_GGUF_F32), "float32") == 0);
  CHECK(strcmp(fm_gguf_vtype_name((fm_gguf_vtype)13), "?") == 0);
}

/* ---- files ---------------------------------------------------------------------------- */

static char g_dir[64];

static void open_files(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/v.gguf", g_dir);
  buf b;
  build_valid(&b);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0 && write(fd, b.p, b.n) == (ssize_t)b.n);
  if (fd >= 0) close(fd);
  fm_gguf *g = NULL;
  fm_err err;
  CHECK_OK(fm_gguf_open(path, &g, &err), &err);
  if (g) {
    CHECK(fm_gguf_size(g) == b.n && memcmp(fm_gguf_bytes(g), b.p, b.n) == 0);
    CHECK(strcmp(fm_gguf_path(g), path) == 0);
    CHECK_OK(fm_gguf_check(g, &err), &err);
    /* its descriptor reads the file a daemon maps (fm_fd_identity) */
    fm_file_identity ia, ib;
    fm_fileview *v = NULL;
    CHECK(fm_gguf_fd(g) >= 0);
    CHECK_OK(fm_fd_identity(fm_gguf_fd(g), path, fm_gguf_size(g), &ia, &err), &err);
    CHECK_OK(fm_fileview_open(path, &v, &err), &err);
    if (v) CHECK_OK(fm_fileview_identity(v, &ib, &err), &err);
    CHECK(v && ia.size == ib.size && ia.mtime_ns == ib.mtime_ns && ia.checksum == ib.checksum);
    fm_fileview_close(v);
    CHECK(fm_gguf_fd(NULL) == -1);
    CHECK(truncate(path, 100) == 0);
    CHECK(fm_gguf_check(g, &err) == FM_EFORMAT && has(err.msg, "shrank from") && has(err.msg, "to 100 bytes"));
    fm_gguf_close(g);
    g = NULL;
    CHECK(fm_gguf_open(path, &g, &err) == FM_EFORMAT && g == NULL && has(err.msg, path));
  }
  CHECK(fm_gguf_open("/nonexistent/x.gguf", &g, &err) == FM_EIO && has(err.msg, "/nonexistent/x.gguf"));
  CHECK(fm_gguf_open(g_dir, &g, &err) == FM_EIO && has(err.msg, "not a regular file"));
  /* a FIFO without a writer: refused at once, not waited on */
  snprintf(path, sizeof path, "%s/fifo.gguf", g_dir);
  CHECK(mkfifo(path, 0600) == 0);
  CHECK(fm_gguf_open(path, &g, &err) == FM_EIO && has(err.msg, "not a regular file") && g == NULL);
  unlink(path);
  CHECK(fm_gguf_open("", &g, &err) == FM_EARG);
  snprintf(path, sizeof path, "%s/empty.gguf", g_dir);
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) close(fd);
  CHECK(fm_gguf_open(path, &g, &err) == FM_EFORMAT && has(err.msg, "0 bytes"));
  fm_gguf_close(NULL);
  CHECK(fm_gguf_check(NULL, &err) == FM_EARG);
  free(b.p);
}

/* fm_gguf_check and fm_gguf_check_addr on a file changed under an open
 * handle: growth is fine, a header rewritten in place (same size, and in
 * the same tick of the file clock) and a truncation are FM_EFORMAT, also
 * through any address inside the mapping; tensor bytes rewritten in place
 * are not detected (documented). */
static void changed_files(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/c.gguf", g_dir);
  buf b;
  build_valid(&b);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0 && write(fd, b.p, b.n) == (ssize_t)b.n);
  if (fd >= 0) close(fd);
  fm_gguf *g = NULL, *h = NULL;
  fm_err err;
  CHECK_OK(fm_gguf_open(path, &g, &err), &err);
  CHECK_OK(fm_gguf_open(path, &h, &err), &err); /* a second mapping of the same file */
  if (!g || !h) return;
  const uint8_t *w = fm_gguf_tensor_data(g, fm_gguf_tensor_at(g, fm_gguf_find_tensor(g, "w")));
  const uint8_t *hw = fm_gguf_tensor_data(h, fm_gguf_tensor_at(h, 0));
  CHECK_OK(fm_gguf_check_addr(w, &err), &err);
  CHECK_OK(fm_gguf_check_addr(fm_gguf_bytes(g), &err), &err);
  CHECK_OK(fm_gguf_check_addr(NULL, &err), &err);
  /* growth */
  fd = open(path, O_WRONLY | O_APPEND);
  CHECK(fd >= 0 && write(fd, "tail", 4) == 4);
  if (fd >= 0) close(fd);
  CHECK_OK(fm_gguf_check(g, &err), &err);
  CHECK_OK(fm_gguf_check_addr(w + T0_BYTES - 1, &err), &err);
  /* a tensor byte rewritten in place: not detected */
  const size_t data_at = (size_t)(w - fm_gguf_bytes(g));
  fd = open(path, O_WRONLY);
  CHECK(fd >= 0 && pwrite(fd, "\x55", 1, (off_t)data_at) == 1);
  CHECK_OK(fm_gguf_check(g, &err), &err);
  CHECK(w[0] == 0x55); /* the mapping shows the file's bytes now */
  /* a header byte rewritten in place ("general..." -> "General..."): both
   * handles, through their files and through their tensor addresses */
  CHECK(fd >= 0 && pwrite(fd, "G", 1, 32) == 1);
  CHECK(fm_gguf_check(g, &err) == FM_EFORMAT && has(err.msg, "rewritten since it was opened") &&
        has(err.msg, path));
  CHECK(fm_gguf_check_addr(w, &err) == FM_EFORMAT && has(err.msg, "rewritten"));
  CHECK(fm_gguf_check_addr(hw, &err) == FM_EFORMAT && has(err.msg, "rewritten"));
  CHECK_OK(fm_gguf_check_addr(&err, &err), &err); /* an address in no mapping */
  /* restored: intact again */
  CHECK(fd >= 0 && pwrite(fd, "g", 1, 32) == 1);
  if (fd >= 0) close(fd);
  CHECK_OK(fm_gguf_check(g, &err), &err);
  CHECK_OK(fm_gguf_check_addr(hw, &err), &err);
  /* cut inside w's data */
  CHECK(truncate(path, (off_t)data_at + 8) == 0);
  CHECK(fm_gguf_check_addr(w, &err) == FM_EFORMAT && has(err.msg, "shrank from") &&
        has(err.msg, "bytes since it was opened"));
  CHECK(fm_gguf_check(h, &err) == FM_EFORMAT && has(err.msg, "shrank"));
  /* closed handles leave the list: their addresses are unknown again */
  fm_gguf_close(g);
  CHECK(fm_gguf_check_addr(hw, &err) == FM_EFORMAT);
  fm_gguf_close(h);
  CHECK_OK(fm_gguf_check_addr(hw, &err), &err);
  free(b.p);
}

/* ---- fixtures -------------------------------------------------------------------------- */

static char fixdir[1024];
static int have_fixtures;

static fm_gguf *open_fixture(const char *rel) {
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", fixdir, rel);
  fm_gguf *g = NULL;
  fm_err err;
  CHECK_OK(fm_gguf_open(path, &g, &err), &err);
  return g;
}

static int64_t kv_int(const fm_gguf *g, const char *key) {
  int64_t v = -1;
  const fm_gguf_kv *kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, key));
  if (!kv || fm_gguf_get_i64(kv, 0, &v)) return -1;
  return v;
}

static int kv_str_is(const fm_gguf *g, const char *key, uint64_t i, const char *want) {
  const fm_gguf_kv *kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, key));
  const char *s;
  size_t len;
  if (!kv || fm_gguf_get_str(kv, i, &s, &len)) return 0;
  return len == strlen(want) && memcmp(s, want, len) == 0;
}

/* Tensors of each ggml type id 0..63. */
static void type_counts(const fm_gguf *g, int64_t counts[64]) {
  memset(counts, 0, 64 * sizeof counts[0]);
  for (int64_t i = 0; i < fm_gguf_n_tensors(g); i++) {
    const fm_gguf_tensor *t = fm_gguf_tensor_at(g, i);
    if (t->type < 64) counts[t->type]++;
  }
}

/* Directory invariants every valid file keeps. */
static void check_layout(const fm_gguf *g) {
  uint64_t a = fm_gguf_alignment(g);
  CHECK(fm_gguf_data_offset(g) % a == 0 || fm_gguf_n_tensors(g) == 0);
  for (int64_t i = 0; i < fm_gguf_n_tensors(g); i++) {
    const fm_gguf_tensor *t = fm_gguf_tensor_at(g, i);
    CHECK(t->data_offset % a == 0 && t->data_offset >= fm_gguf_data_offset(g));
    CHECK(t->data_offset + t->n_bytes <= fm_gguf_size(g));
    int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    CHECK((int64_t)t->n_bytes == n / fm_gguf_type_block(t->type) * fm_gguf_type_size(t->type));
    char name[64];
    memcpy(name, t->name, t->name_len);
    name[t->name_len] = 0;
    CHECK(fm_gguf_find_tensor(g, name) == i);
  }
  for (int64_t i = 0; i < fm_gguf_n_kv(g); i++) {
    const fm_gguf_kv *kv = fm_gguf_kv_at(g, i);
    char key[256];
    if (kv->key_len >= sizeof key) continue;
    memcpy(key, kv->key, kv->key_len);
    key[kv->key_len] = 0;
    CHECK(fm_gguf_find_kv(g, key) == i);
  }
}

static void fixture_stories(void) {
  if (!have_fixtures) return;
  fm_gguf *g = open_fixture("stories260K.gguf");
  if (!g) return;
  CHECK(fm_gguf_version(g) == 3 && fm_gguf_size(g) == 1185376);
  CHECK(fm_gguf_n_tensors(g) == 48);
  CHECK(kv_str_is(g, "general.architecture", 0, "llama"));
  CHECK(kv_int(g, "llama.embedding_length") == 64);
  CHECK(kv_int(g, "llama.block_count") == 5);
  CHECK(kv_int(g, "llama.attention.head_count") == 8);
  CHECK(kv_int(g, "llama.attention.head_count_kv") == 4);
  CHECK(kv_int(g, "llama.feed_forward_length") == 172);
  CHECK(kv_int(g, "llama.rope.dimension_count") == 8);
  CHECK(kv_int(g, "llama.context_length") == 2048);
  CHECK(kv_int(g, "tokenizer.ggml.bos_token_id") == 1 && kv_int(g, "tokenizer.ggml.eos_token_id") == 2);
  CHECK(kv_int(g, "tokenizer.ggml.seperator_token_id") == 4294967295LL ||
        fm_gguf_find_kv(g, "tokenizer.ggml.seperator_token_id") < 0);
  double eps = 0;
  const fm_gguf_kv *kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "llama.attention.layer_norm_rms_epsilon"));
  CHECK(kv && fm_gguf_get_f64(kv, 0, &eps) == 0 && fabs(eps - 1e-5) < 1e-12);
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "tokenizer.ggml.tokens"));
  CHECK(kv && kv->elem_type == FM_GGUF_STRING && kv->n == 512);
  CHECK(kv_str_is(g, "tokenizer.ggml.tokens", 0, "<unk>"));
  CHECK(kv_str_is(g, "tokenizer.ggml.tokens", 1, "<s>"));
  CHECK(kv_str_is(g, "tokenizer.ggml.tokens", 2, "</s>"));
  CHECK(kv_str_is(g, "tokenizer.ggml.tokens", 3, "<0x00>"));
  CHECK(kv_str_is(g, "tokenizer.ggml.model", 0, "llama"));
  kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "tokenizer.ggml.scores"));
  CHECK(kv && kv->elem_type == FM_GGUF_F32 && kv->n == 512);
  int64_t counts[64];
  type_counts(g, counts);
  CHECK(counts[0] == 48);
  int64_t params = 0;
  for (int64_t i = 0; i < fm_gguf_n_tensors(g); i++) {
    const fm_gguf_tensor *t = fm_gguf_tensor_at(g, i);
    params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
  }
  CHECK(params == 292800);
  const fm_gguf_tensor *t = fm_gguf_tensor_at(g, fm_gguf_find_tensor(g, "token_embd.weight"));
  CHECK(t && t->n_dims == 2 && t->ne[0] == 64 && t->ne[1] == 512 && t->type == 0);
  t = fm_gguf_tensor_at(g, fm_gguf_find_tensor(g, "blk.0.ffn_down.weight"));
  CHECK(t && t->ne[0] == 172 && t->ne[1] == 64);
  check_layout(g);
  fm_gguf_close(g);
}

static void fixture_derived(void) {
  if (!have_fixtures) return;
  static const struct {
    const char *file;
    int64_t f32, f16, q8_0, q4_0, q5_0;
  } want[] = {
      {"derived/stories260K-F16.gguf", 11, 37, 0, 0, 0},
      {"derived/stories260K-Q8_0.gguf", 11, 5, 32, 0, 0},
      {"derived/stories260K-Q4_0.gguf", 11, 5, 1, 31, 0},
      {"derived/stories260K-Q4_K_M.gguf", 11, 5, 3, 0, 29},
  };
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    fm_gguf *g = open_fixture(want[k].file);
    if (!g) continue;
    int64_t c[64];
    type_counts(g, c);
    CHECK(fm_gguf_n_tensors(g) == 48);
    CHECK(c[0] == want[k].f32 && c[1] == want[k].f16 && c[8] == want[k].q8_0 && c[2] == want[k].q4_0 &&
          c[6] == want[k].q5_0);
    CHECK(kv_str_is(g, "general.architecture", 0, "llama"));
    check_layout(g);
    fm_gguf_close(g);
  }
  /* quant zoo: w.<TYPE> (256 x 128) for 13 types and x (256 x 4, f32) */
  fm_gguf *g = open_fixture("derived/quant-zoo-stories260K.gguf");
  if (!g) return;
  CHECK(fm_gguf_n_tensors(g) == 14);
  CHECK(kv_str_is(g, "general.architecture", 0, "quant-zoo"));
  static const struct {
    const char *name;
    uint32_t type;
  } zoo[] = {{"w.F32", 0},   {"w.F16", 1},   {"w.BF16", 30}, {"w.Q4_0", 2},  {"w.Q4_1", 3},
             {"w.Q5_0", 6},  {"w.Q5_1", 7},  {"w.Q8_0", 8},  {"w.Q2_K", 10}, {"w.Q3_K", 11},
             {"w.Q4_K", 12}, {"w.Q5_K", 13}, {"w.Q6_K", 14}};
  for (size_t k = 0; k < sizeof zoo / sizeof zoo[0]; k++) {
    const fm_gguf_tensor *t = fm_gguf_tensor_at(g, fm_gguf_find_tensor(g, zoo[k].name));
    CHECK(t != NULL);
    if (!t) {
      fprintf(stderr, "  quant zoo lacks %s\n", zoo[k].name);
      continue;
    }
    CHECK(t->type == zoo[k].type && t->ne[0] == 256 && t->ne[1] == 128);
    CHECK((int64_t)t->n_bytes == 128 * (256 / fm_gguf_type_block(t->type)) * fm_gguf_type_size(t->type));
  }
  const fm_gguf_tensor *x = fm_gguf_tensor_at(g, fm_gguf_find_tensor(g, "x"));
  CHECK(x && x->type == 0 && x->ne[0] == 256 && x->ne[1] == 4 && x->n_bytes == 4096);
  /* w.F32 holds token_embd.weight of stories260K as stored: compare bytes. */
  fm_gguf *s = open_fixture("stories260K.gguf");
  const fm_gguf_tensor *w = fm_gguf_tensor_at(g, fm_gguf_find_tensor(g, "w.F32"));
  const fm_gguf_tensor *e = s ? fm_gguf_tensor_at(s, fm_gguf_find_tensor(s, "token_embd.weight")) : NULL;
  CHECK(w && e && w->n_bytes == e->n_bytes &&
        memcmp(fm_gguf_tensor_data(g, w), fm_gguf_tensor_data(s, e), w->n_bytes) == 0);
  fm_gguf_close(s);
  check_layout(g);
  fm_gguf_close(g);
}

static void fixture_vocab(void) {
  if (!have_fixtures) return;
  static const struct {
    const char *file, *model, *pre, *arch;
    uint64_t n_vocab;
  } want[] = {
      {"vocab/ggml-vocab-llama-spm.gguf", "llama", NULL, "llama", 32000},
      {"vocab/ggml-vocab-gpt-2.gguf", "gpt2", "gpt-2", "gpt2", 50257},
      {"vocab/ggml-vocab-deepseek-coder.gguf", "gpt2", "deepseek-coder", "llama", 32256},
      {"vocab/ggml-vocab-falcon.gguf", "gpt2", "falcon", "falcon", 65024},
      {"vocab/ggml-vocab-bert-bge.gguf", "bert", "bert-bge", "bert", 30522},
  };
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    fm_gguf *g = open_fixture(want[k].file);
    if (!g) continue;
    CHECK(fm_gguf_n_tensors(g) == 0);
    CHECK(kv_str_is(g, "tokenizer.ggml.model", 0, want[k].model));
    if (want[k].pre) CHECK(kv_str_is(g, "tokenizer.ggml.pre", 0, want[k].pre));
    CHECK(kv_str_is(g, "general.architecture", 0, want[k].arch));
    const fm_gguf_kv *kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "tokenizer.ggml.tokens"));
    CHECK(kv && kv->elem_type == FM_GGUF_STRING && kv->n == want[k].n_vocab);
    if (kv) {
      /* the last string ends inside the file */
      const char *s;
      size_t len;
      CHECK(fm_gguf_get_str(kv, kv->n - 1, &s, &len) == 0 &&
            (const uint8_t *)s + len <= fm_gguf_bytes(g) + fm_gguf_size(g));
    }
    check_layout(g);
    fm_gguf_close(g);
  }
  /* gpt-2 merges: the first is "Ġ t" */
  fm_gguf *g = open_fixture("vocab/ggml-vocab-gpt-2.gguf");
  if (g) {
    CHECK(kv_str_is(g, "tokenizer.ggml.merges", 0, "\xc4\xa0 t"));
    CHECK(kv_str_is(g, "tokenizer.ggml.tokens", 0, "!"));
    fm_gguf_close(g);
  }
}

/* Every fixture cut at a few hundred lengths fails cleanly (reading from a
 * heap copy of exactly that many bytes). */
static void fixture_cuts(void) {
  if (!have_fixtures) return;
  fm_gguf *g = open_fixture("derived/stories260K-Q4_0.gguf");
  if (!g) return;
  size_t size = fm_gguf_size(g);
  uint64_t end = 0;
  for (int64_t i = 0; i < fm_gguf_n_tensors(g); i++) {
    const fm_gguf_tensor *t = fm_gguf_tensor_at(g, i);
    if (t->data_offset + t->n_bytes > end) end = t->data_offset + t->n_bytes;
  }
  int bad = 0;
  uint64_t rng = 7;
  for (int k = 0; k < 400; k++) {
    size_t n = k < 200 ? (size_t)(fm_gguf_data_offset(g) * (uint64_t)k / 200)
                       : (size_t)(fm_test_rng_next(&rng) % end);
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy) abort();
    memcpy(copy, fm_gguf_bytes(g), n);
    fm_gguf *h = NULL;
    fm_err err;
    if (fm_gguf_parse(copy, n, "cut.gguf", &h, &err) != FM_EFORMAT || h) bad++;
    fm_gguf_close(h);
    free(copy);
  }
  CHECK(bad == 0);
  (void)size;
  fm_gguf_close(g);
}

int main(void) {
  have_fixtures = fm_test_fixture(fixdir, sizeof fixdir, "gguf", "stories260K.gguf");
  if (!have_fixtures) printf("SKIP: GGUF fixtures not found at %s (set RFMALLOC_FIXTURES)\n", fixdir);
  if (!fm_test_tmpdir(g_dir, sizeof g_dir, "fm_gguf_")) return 1;
  FM_RUN(type_traits);
  FM_RUN(valid_file_reads);
  FM_RUN(every_cut_fails);
  FM_RUN(header_errors);
  FM_RUN(metadata_errors);
  FM_RUN(name_errors);
  FM_RUN(alignment_errors);
  FM_RUN(tensor_errors);
  FM_RUN(open_files);
  FM_RUN(changed_files);
  FM_RUN(fixture_stories);
  FM_RUN(fixture_derived);
  FM_RUN(fixture_vocab);
  FM_RUN(fixture_cuts);
  fm_test_rmtree(g_dir);
  FM_TEST_END();
}
