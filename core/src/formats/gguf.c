/* gguf.c: a validating reader of GGUF model files (fm_gguf.h).
 *
 * Source: the GGUF specification (ggml docs/gguf.md) and, for the tensor type
 * traits, the block layouts in the ggml-common.h / ggml.h headers that the R
 * package ggmlR installs; core/tests/llm/llm_gguf_traits/ checks the table against
 * ggml_blck_size/ggml_type_size/ggml_type_name. Written from the format's
 * description; no GGML code. docs/formats/gguf.md lists every check.
 *
 * Every multi-byte value is read byte by byte as little-endian, and every
 * count and length is compared with the bytes that remain before anything is
 * sized by it, so no input can make this module read past the buffer or
 * allocate more than a small multiple of the input's size. */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include "fm/fm_gguf.h"

#include "fm/fm_fault.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long long ull;

/* ---- type traits ------------------------------------------------------------- */

/* ggml type ids that GGUF files use, with elements per block and bytes per
 * block from ggml-common.h's block structs (QK_K = 256). Ids that GGML has
 * removed (4, 5, 31-33, 36-38) are unknown here, as in GGML. */
typedef struct type_trait {
  const char *name;
  int64_t block, size;
} type_trait;

static const type_trait k_types[] = {
    [0] = {"f32", 1, 4},
    [1] = {"f16", 1, 2},
    [2] = {"q4_0", 32, 2 + 16},             /* d, 32 nibbles */
    [3] = {"q4_1", 32, 2 + 2 + 16},         /* d, m, 32 nibbles */
    [6] = {"q5_0", 32, 2 + 4 + 16},         /* d, qh, nibbles */
    [7] = {"q5_1", 32, 2 + 2 + 4 + 16},     /* d, m, qh, nibbles */
    [8] = {"q8_0", 32, 2 + 32},             /* d, 32 int8 */
    [9] = {"q8_1", 32, 2 + 2 + 32},         /* d, s, 32 int8 */
    [10] = {"q2_K", 256, 2 + 2 + 16 + 64},  /* scales, qs, d, dmin */
    [11] = {"q3_K", 256, 32 + 64 + 12 + 2}, /* hmask, qs, scales, d */
    [12] = {"q4_K", 256, 2 + 2 + 12 + 128},
    [13] = {"q5_K", 256, 2 + 2 + 12 + 32 + 128},
    [14] = {"q6_K", 256, 128 + 64 + 16 + 2},
    [15] = {"q8_K", 256, 4 + 256 + 32}, /* float d, int8 qs, int16 bsums[16] */
    [16] = {"iq2_xxs", 256, 2 + 64},
    [17] = {"iq2_xs", 256, 2 + 64 + 8},
    [18] = {"iq3_xxs", 256, 2 + 96},
    [19] = {"iq1_s", 256, 2 + 32 + 16},
    [20] = {"iq4_nl", 32, 2 + 16},
    [21] = {"iq3_s", 256, 2 + 64 + 8 + 32 + 4},
    [22] = {"iq2_s", 256, 2 + 64 + 8 + 8},
    [23] = {"iq4_xs", 256, 2 + 2 + 4 + 128},
    [24] = {"i8", 1, 1},
    [25] = {"i16", 1, 2},
    [26] = {"i32", 1, 4},
    [27] = {"i64", 1, 8},
    [28] = {"f64", 1, 8},
    [29] = {"iq1_m", 256, 32 + 16 + 8},
    [30] = {"bf16", 1, 2},
    [34] = {"tq1_0", 256, 48 + 4 + 2}, /* 240 ternaries 5 per byte, 16 4 per byte, d */
    [35] = {"tq2_0", 256, 64 + 2},
    [39] = {"mxfp4", 32, 1 + 16},      /* E8M0 scale, 32 E2M1 nibbles */
    [40] = {"nvfp4", 64, 4 + 32},      /* four UE4M3 scales, 64 E2M1 nibbles */
    [41] = {"q1_0", 128, 2 + 16},      /* d, 128 sign bits */
};
#define N_TYPES (sizeof k_types / sizeof k_types[0])

int64_t fm_gguf_type_block(uint32_t type) { return type < N_TYPES ? k_types[type].block : 0; }
int64_t fm_gguf_type_size(uint32_t type) { return type < N_TYPES ? k_types[type].size : 0; }
const char *fm_gguf_type_name(uint32_t type) { return type < N_TYPES ? k_types[type].name : NULL; }

size_t fm_gguf_vtype_size(fm_gguf_vtype t) {
  switch (t) {
  case FM_GGUF_U8:
  case FM_GGUF_I8:
  case FM_GGUF_BOOL: return 1;
  case FM_GGUF_U16:
  case FM_GGUF_I16: return 2;
  case FM_GGUF_U32:
  case FM_GGUF_I32:
  case FM_GGUF_F32: return 4;
  case FM_GGUF_U64:
  case FM_GGUF_I64:
  case FM_GGUF_F64: return 8;
  default: return 0;
  }
}

const char *fm_gguf_vtype_name(fm_gguf_vtype t) {
  static const char *const names[] = {"uint8",  "int8",   "uint16", "int16",  "uint32",
                                      "int32",  "float32", "bool",  "string", "array",
                                      "uint64", "int64",  "float64"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

/* ---- the parsed file ----------------------------------------------------------- */

/* A metadata entry with its private string index. The public part comes
 * first, so a pointer to it is a pointer to the whole (C11 6.7.2.1p15). */
typedef struct kv_impl {
  fm_gguf_kv pub;
  const uint8_t **strs; /* (pub.n) owned, for string arrays: each element's u64 length */
} kv_impl;

struct fm_gguf {
  const uint8_t *base; /* borrowed (parse) or the mapping (open): size bytes */
  size_t size;
  char *path;          /* owned copy, may be NULL */
  uint32_t version, alignment;
  uint64_t data_offset;
  int64_t n_kv, n_tensors;
  kv_impl *kvs;            /* (n_kv) owned */
  fm_gguf_tensor *tensors; /* (n_tensors) owned */
  int64_t *kv_hash;        /* (kv_cap) owned; entry index + 1, 0 empty */
  int64_t *t_hash;         /* (t_cap) owned */
  size_t kv_cap, t_cap;    /* powers of two, >= 2 * count, or 0 */
  /* fm_gguf_open only: the read-only mapping and its descriptor; what
   * fm_gguf_check compares with (the modification time and a checksum of
   * the header and directory, bytes [0, data_offset)); the list of open
   * files that fm_gguf_check_addr searches. */
  void *map;
  size_t map_len;
  int fd;
  int64_t mtime_ns;
  uint64_t head_sum;
  atomic_int settled; /* mtime alone tells a write since opening (below) */
  struct fm_gguf *open_prev, *open_next;
};

/* Files from fm_gguf_open that are still open (fm_gguf_check_addr). */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fm_gguf *open_list;

/* The name messages use for the file: the path, or its last component when
 * the path is long, so the message keeps room for the numbers. */
static const char *msg_name(const char *path) {
  if (!path || !path[0]) return "GGUF data";
  if (strlen(path) <= 80) return path;
  const char *slash = strrchr(path, '/');
  return slash && slash[1] ? slash + 1 : path;
}

static uint64_t rd_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static uint32_t rd_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static uint64_t hash_bytes(const char *s, size_t n) { return fm_checksum(s, n, FM_CHECKSUM_SEED); }

static size_t hash_cap(int64_t n) {
  size_t cap = 8;
  while (cap < 2 * (size_t)n) cap *= 2;
  return cap;
}

/* Index + 1 of the entry named (s, n) in table, or the free slot's negated
 * position - 1 when absent. names(i) gives entry i's name. */
typedef struct name_ref {
  const char *s;
  size_t n;
} name_ref;

static name_ref kv_name(const fm_gguf *g, int64_t i) {
  return (name_ref){g->kvs[i].pub.key, g->kvs[i].pub.key_len};
}
static name_ref t_name(const fm_gguf *g, int64_t i) {
  return (name_ref){g->tensors[i].name, g->tensors[i].name_len};
}

static int64_t hash_find(const fm_gguf *g, const int64_t *tab, size_t cap,
                         name_ref (*names)(const fm_gguf *, int64_t), const char *s, size_t n,
                         size_t *slot) {
  if (!cap) return -1;
  size_t h = (size_t)hash_bytes(s, n) & (cap - 1);
  for (;; h = (h + 1) & (cap - 1)) {
    if (!tab[h]) {
      if (slot) *slot = h;
      return -1;
    }
    name_ref r = names(g, tab[h] - 1);
    if (r.n == n && memcmp(r.s, s, n) == 0) return tab[h] - 1;
  }
}

/* A read cursor over the file. */
typedef struct cursor {
  const uint8_t *p;
  size_t size, off;
  const char *name; /* for messages */
  fm_err *err;
} cursor;

static size_t left(const cursor *c) { return c->size - c->off; }

/* what: the field being read, for the message. */
static fm_status need(cursor *c, size_t n, const char *what) {
  if (left(c) >= n) return FM_OK;
  return fm_err_set(c->err, FM_EFORMAT,
                    "%s: the file ends at byte %zu inside %s at byte %zu (%zu bytes needed, %zu remain)",
                    c->name, c->size, what, c->off, n, left(c));
}

static fm_status get_u32(cursor *c, uint32_t *v, const char *what) {
  fm_status st = need(c, 4, what);
  if (st) return st;
  *v = rd_u32(c->p + c->off);
  c->off += 4;
  return FM_OK;
}

static fm_status get_u64(cursor *c, uint64_t *v, const char *what) {
  fm_status st = need(c, 8, what);
  if (st) return st;
  *v = rd_u64(c->p + c->off);
  c->off += 8;
  return FM_OK;
}

/* A GGUF string: u64 length + bytes, the length checked against what remains. */
static fm_status get_str(cursor *c, const char **s, size_t *n, const char *what) {
  size_t at = c->off;
  uint64_t len;
  fm_status st = get_u64(c, &len, what);
  if (st) return st;
  if (len > left(c)) {
    c->off = at;
    return fm_err_set(c->err, FM_EFORMAT,
                      "%s: %s at byte %zu claims %llu bytes but %zu bytes remain", c->name,
                      what, at, (ull)len, left(c) - 8);
  }
  *s = (const char *)(c->p + c->off);
  *n = (size_t)len;
  c->off += (size_t)len;
  return FM_OK;
}

static int vtype_known(uint32_t t) { return t <= FM_GGUF_F64; }

/* Read one metadata value of element type t (not ARRAY) at the cursor:
 * element j of an array, or the scalar when j is UINT64_MAX. For strings,
 * *str_at (may be NULL) receives the element's address. */
static fm_status skip_value(cursor *c, uint32_t t, const char *key, int key_len, uint64_t j,
                            const uint8_t **str_at) {
  size_t at = c->off;
  char elt[48] = "";
  if (j != UINT64_MAX) snprintf(elt, sizeof elt, " element %llu", (ull)j);
  size_t sz = t == FM_GGUF_STRING ? 8 : fm_gguf_vtype_size((fm_gguf_vtype)t);
  if (left(c) < sz)
    return fm_err_set(c->err, FM_EFORMAT,
                      "%s: the file ends at byte %zu inside the %s value of '%.*s'%s at byte %zu",
                      c->name, c->size, fm_gguf_vtype_name((fm_gguf_vtype)t), key_len, key, elt, at);
  if (t == FM_GGUF_STRING) {
    if (str_at) *str_at = c->p + at;
    uint64_t len = rd_u64(c->p + at);
    if (len > left(c) - 8)
      return fm_err_set(c->err, FM_EFORMAT,
                        "%s: string value of '%.*s'%s at byte %zu claims %llu bytes but %zu remain",
                        c->name, key_len, key, elt, at, (ull)len, left(c) - 8);
    c->off += 8 + (size_t)len;
    return FM_OK;
  }
  if (t == FM_GGUF_BOOL && c->p[at] > 1)
    return fm_err_set(c->err, FM_EFORMAT, "%s: bool value of '%.*s'%s at byte %zu is %u, expected 0 or 1",
                      c->name, key_len, key, elt, at, (unsigned)c->p[at]);
  c->off += sz;
  return FM_OK;
}

#define MAX_NAME_IN_MSG 60
/* key_len for "%.*s": at most MAX_NAME_IN_MSG bytes of a name (names are
 * checked UTF-8 before any message prints them; a cut is moved back to the
 * start of a character, so messages stay valid UTF-8). */
static int mlen_of(const char *s, size_t n) {
  if (n <= MAX_NAME_IN_MSG) return (int)n;
  size_t k = MAX_NAME_IN_MSG;
  while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
  return (int)k;
}

/* The offset in s of the first byte at which s stops being UTF-8 text
 * without NUL (RFC 3629: a NUL; a byte that starts no character; a
 * sequence cut short, overlong, a surrogate or above U+10FFFF), or n. */
static size_t text_bad_at(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c == 0) return i;
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t len;
    unsigned min;
    if ((c & 0xE0) == 0xC0) len = 2, min = 0x80, c &= 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, min = 0x800, c &= 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, min = 0x10000, c &= 0x07;
    else return i;
    if (len > n - i) return i;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      c = (c << 6) | (s[i + k] & 0x3Fu);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return i;
    i += len;
  }
  return n;
}

/* Keys and tensor names are UTF-8 text without NUL (the specification's
 * strings are UTF-8; GGML keeps names as C strings, so a NUL would cut a
 * name short and two different names could then collide). what: "metadata
 * key" or "tensor name"; at: the byte of the string's length field. */
static fm_status check_name(cursor *c, const char *s, size_t n, size_t at, const char *what) {
  size_t bad = text_bad_at(s, n);
  if (bad == n) return FM_OK;
  unsigned char b = (unsigned char)s[bad];
  int pl = mlen_of(s, bad);
  if (b == 0)
    return fm_err_set(c->err, FM_EFORMAT,
                      "%s: the %s at byte %zu holds a NUL byte at byte %zu (the valid text before it begins '%.*s'), expected UTF-8 text without NUL",
                      c->name, what, at, at + 8 + bad, pl, s);
  return fm_err_set(c->err, FM_EFORMAT,
                    "%s: the %s at byte %zu is not valid UTF-8 at byte %zu (byte 0x%02x; the valid text before it begins '%.*s')",
                    c->name, what, at, at + 8 + bad, (unsigned)b, pl, s);
}

static fm_status parse_kv(fm_gguf *g, cursor *c, int64_t i) {
  kv_impl *e = &g->kvs[i];
  fm_gguf_kv *kv = &e->pub;
  size_t at = c->off;
  fm_status st = get_str(c, &kv->key, &kv->key_len, "a metadata key");
  if (st) return st;
  if ((st = check_name(c, kv->key, kv->key_len, at, "metadata key"))) return st;
  const char *key = kv->key;
  int kl = mlen_of(kv->key, kv->key_len);
  size_t slot = 0;
  int64_t dup = hash_find(g, g->kv_hash, g->kv_cap, kv_name, key, kv->key_len, &slot);
  if (dup >= 0)
    return fm_err_set(c->err, FM_EFORMAT, "%s: metadata key '%.*s' at byte %zu repeats key %lld",
                      c->name, kl, key, at, (long long)dup);
  g->kv_hash[slot] = i + 1;

  size_t type_at = c->off;
  uint32_t t;
  if ((st = get_u32(c, &t, "a metadata value type"))) return st;
  if (!vtype_known(t))
    return fm_err_set(c->err, FM_EFORMAT,
                      "%s: metadata '%.*s' has value type %u at byte %zu, expected 0..12", c->name,
                      kl, key, t, type_at);
  kv->type = (fm_gguf_vtype)t;
  if (t != FM_GGUF_ARRAY) {
    kv->elem_type = kv->type;
    kv->n = 1;
    kv->value = c->p + c->off;
    return skip_value(c, t, key, kl, UINT64_MAX, NULL);
  }

  uint32_t et;
  size_t et_at = c->off;
  if ((st = get_u32(c, &et, "an array element type"))) return st;
  if (et == FM_GGUF_ARRAY)
    return fm_err_set(c->err, FM_EUNSUPPORTED,
                      "%s: metadata '%.*s' at byte %zu is an array of arrays, which this reader does not support",
                      c->name, kl, key, at);
  if (!vtype_known(et))
    return fm_err_set(c->err, FM_EFORMAT,
                      "%s: metadata array '%.*s' has element type %u at byte %zu, expected 0..12",
                      c->name, kl, key, et, et_at);
  uint64_t n;
  if ((st = get_u64(c, &n, "an array length"))) return st;
  kv->elem_type = (fm_gguf_vtype)et;
  kv->n = n;
  kv->value = c->p + c->off;
  size_t esz = et == FM_GGUF_STRING ? 8 : fm_gguf_vtype_size((fm_gguf_vtype)et);
  if (n > left(c) / esz)
    return fm_err_set(c->err, FM_EFORMAT,
                      "%s: metadata array '%.*s' at byte %zu claims %llu elements of %zu%s bytes but %zu bytes remain",
                      c->name, kl, key, at, (ull)n, esz, et == FM_GGUF_STRING ? "+" : "", left(c));
  if (et == FM_GGUF_STRING) {
    /* n <= left / 8, so the index is at most as large as the file. */
    e->strs = malloc((n ? (size_t)n : 1) * sizeof *e->strs);
    if (!e->strs)
      return fm_err_set(c->err, FM_ENOMEM, "%s: cannot index the %llu strings of '%.*s'", c->name,
                        (ull)n, kl, key);
    for (uint64_t j = 0; j < n; j++)
      if ((st = skip_value(c, et, key, kl, j, &e->strs[j]))) return st;
  } else if (et == FM_GGUF_BOOL) {
    for (uint64_t j = 0; j < n; j++)
      if ((st = skip_value(c, et, key, kl, j, NULL))) return st;
  } else {
    c->off += (size_t)n * esz;
  }
  return FM_OK;
}

/* The smallest tensor directory entry: name length (8) with an empty name,
 * n_dims (4), one dimension (8), type (4), offset (8). */
#define MIN_TENSOR_INFO 32u
/* GGML keeps a tensor name in char[64] with its NUL (GGML_MAX_NAME). */
#define MAX_TENSOR_NAME 63u

static fm_status parse_tensor(fm_gguf *g, cursor *c, int64_t i) {
  fm_gguf_tensor *t = &g->tensors[i];
  size_t at = c->off;
  fm_status st = get_str(c, &t->name, &t->name_len, "a tensor name");
  if (st) return st;
  if ((st = check_name(c, t->name, t->name_len, at, "tensor name"))) return st;
  const char *nm = t->name;
  int nl = mlen_of(t->name, t->name_len);
  if (t->name_len > MAX_TENSOR_NAME)
    return fm_err_set(c->err, FM_EFORMAT,
                      "%s: tensor name '%.*s...' at byte %zu has %zu bytes, expected at most %u",
                      c->name, nl, nm, at, t->name_len, MAX_TENSOR_NAME);
  size_t slot = 0;
  int64_t dup = hash_find(g, g->t_hash, g->t_cap, t_name, nm, t->name_len, &slot);
  if (dup >= 0)
    return fm_err_set(c->err, FM_EFORMAT, "%s: tensor name '%.*s' at byte %zu repeats tensor %lld",
                      c->name, nl, nm, at, (long long)dup);
  g->t_hash[slot] = i + 1;

  size_t dims_at = c->off;
  if ((st = get_u32(c, &t->n_dims, "a tensor's dimension count"))) return st;
  if (t->n_dims < 1 || t->n_dims > FM_GGUF_MAX_DIMS)
    return fm_err_set(c->err, FM_EFORMAT, "%s: tensor '%.*s' has %u dimensions at byte %zu, expected 1..%d",
                      c->name, nl, nm, t->n_dims, dims_at, FM_GGUF_MAX_DIMS);
  int64_t n_elem = 1;
  for (int d = 0; d < FM_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
  for (uint32_t d = 0; d < t->n_dims; d++) {
    size_t ne_at = c->off;
    uint64_t ne;
    if ((st = get_u64(c, &ne, "a tensor dimension"))) return st;
    if (ne < 1 || ne > (uint64_t)INT64_MAX || !fm_mul_ok(n_elem, (int64_t)ne, &n_elem))
      return fm_err_set(c->err, FM_EFORMAT,
                        "%s: tensor '%.*s' dimension %u at byte %zu is %llu, expected a positive size with the element count within 2^63",
                        c->name, nl, nm, d, ne_at, (ull)ne);
    t->ne[d] = (int64_t)ne;
  }
  size_t type_at = c->off;
  if ((st = get_u32(c, &t->type, "a tensor type"))) return st;
  int64_t blk = fm_gguf_type_block(t->type), tsz = fm_gguf_type_size(t->type);
  if (blk <= 0)
    return fm_err_set(c->err, FM_EFORMAT, "%s: tensor '%.*s' has ggml type %u at byte %zu, which is not a known type",
                      c->name, nl, nm, t->type, type_at);
  if (t->ne[0] % blk != 0)
    return fm_err_set(c->err, FM_EFORMAT,
                      "%s: tensor '%.*s' (%s) has rows of %lld elements, not a multiple of its block of %lld",
                      c->name, nl, nm, fm_gguf_type_name(t->type), (long long)t->ne[0], (long long)blk);
  /* Bytes: blocks per row times block size, times the other dimensions;
   * ne[0] / blk <= ne[0], so this overflows only if the bytes exceed 2^63. */
  int64_t nb = 0;
  int ok = fm_mul_ok(t->ne[0] / blk, tsz, &nb);
  for (int d = 1; ok && d < FM_GGUF_MAX_DIMS; d++) ok = fm_mul_ok(nb, t->ne[d], &nb);
  if (!ok)
    return fm_err_set(c->err, FM_EFORMAT, "%s: tensor '%.*s' at byte %zu would take more than 2^63 bytes",
                      c->name, nl, nm, at);
  t->n_bytes = (uint64_t)nb;
  size_t off_at = c->off;
  uint64_t rel;
  if ((st = get_u64(c, &rel, "a tensor offset"))) return st;
  if (rel % g->alignment != 0)
    return fm_err_set(c->err, FM_EFORMAT,
                      "%s: tensor '%.*s' offset %llu at byte %zu is not a multiple of the alignment %u",
                      c->name, nl, nm, (ull)rel, off_at, g->alignment);
  t->data_offset = rel; /* relative until the data section is known */
  return FM_OK;
}

typedef struct span_ref {
  uint64_t off, end;
  int64_t i;
} span_ref;

static int cmp_span(const void *a, const void *b) {
  const span_ref *x = a, *y = b;
  if (x->off != y->off) return x->off < y->off ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

static fm_status check_alignment(fm_gguf *g, cursor *c) {
  int64_t k = fm_gguf_find_kv(g, "general.alignment");
  g->alignment = FM_GGUF_DEFAULT_ALIGNMENT;
  if (k < 0) return FM_OK;
  const fm_gguf_kv *kv = &g->kvs[k].pub;
  size_t at = (size_t)(kv->value - c->p);
  if (kv->type != FM_GGUF_U32)
    return fm_err_set(c->err, FM_EFORMAT, "%s: general.alignment at byte %zu has type %s, expected uint32",
                      c->name, at, fm_gguf_vtype_name(kv->type));
  uint32_t a = rd_u32(kv->value);
  if (a == 0 || (a & (a - 1)) != 0)
    return fm_err_set(c->err, FM_EFORMAT,
                      "%s: general.alignment at byte %zu is %u, expected a nonzero power of two",
                      c->name, at, a);
  g->alignment = a;
  return FM_OK;
}

static fm_status check_data(fm_gguf *g, cursor *c) {
  uint64_t a = g->alignment, end = c->off;
  uint64_t pad = (a - end % a) % a;
  g->data_offset = end + pad; /* end <= size < 2^63, pad < 2^32: no overflow */
  if (g->n_tensors == 0) {
    /* Nothing is read from the data section: a file that ends in its
     * padding (a vocab-only file) is accepted, as GGML accepts it. */
    if (g->data_offset > c->size) g->data_offset = c->size;
    return FM_OK;
  }
  if (g->data_offset > c->size)
    return fm_err_set(c->err, FM_EFORMAT,
                      "%s: the data section starts at byte %llu (after padding to %u) but the file has %zu bytes",
                      c->name, (ull)g->data_offset, g->alignment, c->size);
  uint64_t room = c->size - g->data_offset;
  span_ref *spans = malloc((size_t)g->n_tensors * sizeof *spans);
  if (!spans)
    return fm_err_set(c->err, FM_ENOMEM, "%s: cannot sort %lld tensors", c->name, (long long)g->n_tensors);
  fm_status st = FM_OK;
  for (int64_t i = 0; i < g->n_tensors; i++) {
    fm_gguf_tensor *t = &g->tensors[i];
    uint64_t rel = t->data_offset;
    if (rel > room || t->n_bytes > room - rel) {
      st = fm_err_set(c->err, FM_EFORMAT,
                      "%s: tensor '%.*s' of %llu bytes at offset %llu of the data section (byte %llu) lies past the end of the file at byte %zu",
                      c->name, mlen_of(t->name, t->name_len), t->name, (ull)t->n_bytes, (ull)rel,
                      (ull)g->data_offset, c->size);
      goto done;
    }
    t->data_offset = g->data_offset + rel;
    spans[i] = (span_ref){t->data_offset, t->data_offset + t->n_bytes, i};
  }
  qsort(spans, (size_t)g->n_tensors, sizeof *spans, cmp_span);
  for (int64_t i = 1; i < g->n_tensors; i++) {
    if (spans[i].off < spans[i - 1].end) {
      const fm_gguf_tensor *x = &g->tensors[spans[i - 1].i], *y = &g->tensors[spans[i].i];
      st = fm_err_set(c->err, FM_EFORMAT,
                      "%s: tensors '%.*s' [%llu, %llu) and '%.*s' [%llu, %llu) overlap", c->name,
                      mlen_of(x->name, x->name_len), x->name, (ull)spans[i - 1].off, (ull)spans[i - 1].end,
                      mlen_of(y->name, y->name_len), y->name, (ull)spans[i].off, (ull)spans[i].end);
      goto done;
    }
  }
done:
  free(spans);
  return st;
}

static void free_parts(fm_gguf *g) {
  if (g->kvs)
    for (int64_t i = 0; i < g->n_kv; i++) free(g->kvs[i].strs);
  free(g->kvs);
  free(g->tensors);
  free(g->kv_hash);
  free(g->t_hash);
  free(g->path);
}

/* Header: magic (4), version (4), n_tensors (8), n_kv (8). */
#define HEADER_BYTES 24u
/* The smallest metadata entry: key length (8), empty key, type (4), a u8 (1). */
#define MIN_KV 13u

static fm_status parse_into(fm_gguf *g, const uint8_t *p, size_t size, const char *path, fm_err *err) {
  cursor c = {p, size, 0, msg_name(path), err};
  fm_status st;
  g->base = p;
  g->size = size;
  if (size < 4 || memcmp(p, "GGUF", 4) != 0) {
    if (size < 4)
      return fm_err_set(err, FM_EFORMAT, "%s: %zu bytes is too short for a GGUF file (magic 'GGUF' at byte 0)",
                        c.name, size);
    return fm_err_set(err, FM_EFORMAT,
                      "%s: bytes 0-3 are %02x %02x %02x %02x, expected the GGUF magic 47 47 55 46 ('GGUF')",
                      c.name, p[0], p[1], p[2], p[3]);
  }
  c.off = 4;
  if ((st = get_u32(&c, &g->version, "the version"))) return st;
  if (g->version == 1)
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "%s: GGUF version 1 (32-bit counts, 2023) is not supported, only versions 2 and 3; convert the file with a current llama.cpp",
                      c.name);
  if (g->version != 2 && g->version != 3) {
    if ((g->version & 0xffffu) == 0 && g->version >> 16 != 0)
      return fm_err_set(err, FM_EUNSUPPORTED,
                        "%s: version bytes at byte 4 read %u, a big-endian GGUF file; only little-endian files are supported",
                        c.name, g->version);
    return fm_err_set(err, g->version == 0 ? FM_EFORMAT : FM_EUNSUPPORTED,
                      "%s: GGUF version %u at byte 4 is not supported, expected 2 or 3", c.name, g->version);
  }
  uint64_t n_tensors, n_kv;
  if ((st = get_u64(&c, &n_tensors, "the tensor count"))) return st;
  if ((st = get_u64(&c, &n_kv, "the metadata count"))) return st;
  if (n_kv > left(&c) / MIN_KV)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: the header at byte 16 claims %llu metadata entries of %u+ bytes but %zu bytes remain",
                      c.name, (ull)n_kv, MIN_KV, left(&c));
  if (n_tensors > left(&c) / MIN_TENSOR_INFO)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: the header at byte 8 claims %llu tensors of %u+ bytes each but %zu bytes remain",
                      c.name, (ull)n_tensors, MIN_TENSOR_INFO, left(&c));

  g->kvs = calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->kvs);
  g->kv_cap = hash_cap((int64_t)n_kv);
  g->kv_hash = calloc(g->kv_cap, sizeof *g->kv_hash);
  if (!g->kvs || !g->kv_hash)
    return fm_err_set(err, FM_ENOMEM, "%s: cannot allocate %llu metadata entries", c.name, (ull)n_kv);
  for (uint64_t i = 0; i < n_kv; i++) {
    g->n_kv = (int64_t)i + 1; /* so free_parts frees entry i's index */
    if ((st = parse_kv(g, &c, (int64_t)i))) return st;
  }
  g->n_kv = (int64_t)n_kv;
  if ((st = check_alignment(g, &c))) return st;

  if (n_tensors > left(&c) / MIN_TENSOR_INFO)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: the header at byte 8 claims %llu tensors of %u+ bytes each but %zu bytes remain after the metadata at byte %zu",
                      c.name, (ull)n_tensors, MIN_TENSOR_INFO, left(&c), c.off);
  g->tensors = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *g->tensors);
  g->t_cap = hash_cap((int64_t)n_tensors);
  g->t_hash = calloc(g->t_cap, sizeof *g->t_hash);
  if (!g->tensors || !g->t_hash)
    return fm_err_set(err, FM_ENOMEM, "%s: cannot allocate %llu tensor entries", c.name, (ull)n_tensors);
  g->n_tensors = (int64_t)n_tensors;
  for (uint64_t i = 0; i < n_tensors; i++)
    if ((st = parse_tensor(g, &c, (int64_t)i))) return st;
  return check_data(g, &c);
}

fm_status fm_gguf_parse(const void *data, size_t size, const char *path, fm_gguf **out, fm_err *err) {
  if (out) *out = NULL;
  if (!out || (!data && size > 0))
    return fm_err_set(err, FM_EARG, "fm_gguf_parse needs data (or size 0) and an out pointer");
  static const uint8_t empty[1] = {0};
  fm_gguf *g = calloc(1, sizeof *g);
  if (!g) return fm_err_set(err, FM_ENOMEM, "%s: cannot allocate a GGUF reader", msg_name(path));
  g->fd = -1;
  if (path) {
    size_t n = strlen(path) + 1;
    if (!(g->path = malloc(n))) {
      free(g);
      return fm_err_set(err, FM_ENOMEM, "%s: cannot allocate a GGUF reader", msg_name(path));
    }
    memcpy(g->path, path, n);
  }
  fm_status st = parse_into(g, data ? data : empty, size, path, err);
  if (st) {
    free_parts(g);
    free(g);
    return st;
  }
  *out = g;
  return FM_OK;
}

/* A checksum of the header and directory for fm_gguf_check (not
 * cryptographic: it tells a rewritten header from the one parsed), 8 bytes
 * a step. */
static uint64_t head_checksum(const uint8_t *p, size_t n) {
  uint64_t h = UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = (h ^ w) * UINT64_C(0xFF51AFD7ED558CCD);
    h ^= h >> 29;
  }
  uint64_t w = 0;
  if (i < n) memcpy(&w, p + i, n - i);
  h = (h ^ w) * UINT64_C(0xC4CEB9FE1A85EC53);
  return h ^ (h >> 32);
}

static int64_t mtime_ns(const struct stat *sb) {
  return (int64_t)sb->st_mtim.tv_sec * 1000000000 + (int64_t)sb->st_mtim.tv_nsec;
}

static int64_t wall_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return 0;
  return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

/* File times advance in ticks of a few milliseconds, so a rewrite within
 * the tick of the last write before opening would keep the modification
 * time. Until a check a second past that write finds the header intact,
 * every check compares the header checksum; afterwards any write shows in
 * the size or the modification time. */
#define SETTLE_NS INT64_C(1000000000)

fm_status fm_gguf_open(const char *path, fm_gguf **out, fm_err *err) {
  if (out) *out = NULL;
  if (!path || !path[0] || !out)
    return fm_err_set(err, FM_EARG, "fm_gguf_open needs a non-empty path and an out pointer");
  /* O_NONBLOCK: a FIFO would block open() until a writer came (and R
   * cannot interrupt it); a regular file ignores the flag. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fm_err_set(err, FM_EIO, "cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return fm_err_set(err, FM_EIO, "cannot stat '%s': %s", path, strerror(e));
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return fm_err_set(err, FM_EIO, "'%s' is not a regular file", path);
  }
  uint64_t size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
  if (size > (uint64_t)SIZE_MAX / 2) {
    close(fd);
    return fm_err_set(err, FM_EIO, "'%s' of %llu bytes is too large to map here", path, (ull)size);
  }
  void *map = NULL;
  if (size > 0) {
    map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      int e = errno;
      close(fd);
      return fm_err_set(err, FM_EIO, "cannot map '%s': %s", path, strerror(e));
    }
  }
  fm_gguf *g = NULL;
  fm_status st = fm_gguf_parse(map, (size_t)size, path, &g, err);
  if (st) {
    if (map) munmap(map, (size_t)size);
    close(fd);
    return st;
  }
  g->map = map;
  g->map_len = (size_t)size;
  fm_fault_register(map, (size_t)size, g->path); /* a SIGBUS in it is an error */
  g->fd = fd;
  g->mtime_ns = mtime_ns(&sb);
  g->head_sum = head_checksum(g->base, (size_t)g->data_offset);
  atomic_init(&g->settled, wall_ns() - g->mtime_ns > SETTLE_NS);
  pthread_mutex_lock(&open_lock);
  g->open_next = open_list;
  if (open_list) open_list->open_prev = g;
  open_list = g;
  pthread_mutex_unlock(&open_lock);
  *out = g;
  return FM_OK;
}

void fm_gguf_close(fm_gguf *g) {
  if (!g) return;
  if (g->fd >= 0) {
    pthread_mutex_lock(&open_lock);
    if (g->open_prev) g->open_prev->open_next = g->open_next;
    else if (open_list == g) open_list = g->open_next;
    if (g->open_next) g->open_next->open_prev = g->open_prev;
    pthread_mutex_unlock(&open_lock);
  }
  if (g->map) {
    fm_fault_unregister(g->map);
    munmap(g->map, g->map_len);
  }
  if (g->fd >= 0) close(g->fd);
  free_parts(g);
  free(g);
}

fm_status fm_gguf_check(const fm_gguf *g, fm_err *err) {
  if (!g) return fm_err_set(err, FM_EARG, "fm_gguf_check needs a parsed file, got NULL");
  if (g->fd < 0) return FM_OK;
  struct stat sb;
  if (fstat(g->fd, &sb) != 0)
    return fm_err_set(err, FM_EIO, "cannot stat '%s': %s", g->path, strerror(errno));
  uint64_t now = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
  if (now < g->map_len)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: the file shrank from %zu to %llu bytes since it was opened; open it again",
                      msg_name(g->path), g->map_len, (ull)now);
  /* Written to since: the mapped pages show the file's bytes now (they are
   * never copied, as nothing writes them), so a header rewritten in place
   * would change what the parsed directory points at. */
  const int written = now != g->map_len || mtime_ns(&sb) != g->mtime_ns;
  const int settled = atomic_load_explicit(&((fm_gguf *)(uintptr_t)g)->settled, memory_order_relaxed);
  if (!written && settled) return FM_OK;
  const int64_t t = settled ? 0 : wall_ns();
  if (head_checksum(g->base, (size_t)g->data_offset) != g->head_sum)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: the file was rewritten since it was opened (its header and tensor directory, bytes 0-%llu, changed); open it again",
                      msg_name(g->path), (ull)g->data_offset);
  if (!written && !settled && t - g->mtime_ns > SETTLE_NS)
    atomic_store_explicit(&((fm_gguf *)(uintptr_t)g)->settled, 1, memory_order_relaxed);
  return FM_OK;
}

fm_status fm_gguf_check_addr(const void *p, fm_err *err) {
  const uintptr_t a = (uintptr_t)p;
  fm_status st = FM_OK;
  if (!p) return FM_OK;
  pthread_mutex_lock(&open_lock);
  for (const fm_gguf *g = open_list; g; g = g->open_next) {
    const uintptr_t lo = (uintptr_t)g->map;
    if (g->map && a >= lo && a - lo < g->map_len) {
      st = fm_gguf_check(g, err);
      break;
    }
  }
  pthread_mutex_unlock(&open_lock);
  return st;
}

/* ---- accessors ----------------------------------------------------------------- */

const char *fm_gguf_path(const fm_gguf *g) { return g ? g->path : NULL; }
uint32_t fm_gguf_version(const fm_gguf *g) { return g->version; }
uint32_t fm_gguf_alignment(const fm_gguf *g) { return g->alignment; }
uint64_t fm_gguf_data_offset(const fm_gguf *g) { return g->data_offset; }
const uint8_t *fm_gguf_bytes(const fm_gguf *g) { return g->base; }
size_t fm_gguf_size(const fm_gguf *g) { return g->size; }
int fm_gguf_fd(const fm_gguf *g) { return g && g->map ? g->fd : -1; }
int64_t fm_gguf_n_kv(const fm_gguf *g) { return g->n_kv; }
int64_t fm_gguf_n_tensors(const fm_gguf *g) { return g->n_tensors; }

const fm_gguf_kv *fm_gguf_kv_at(const fm_gguf *g, int64_t i) {
  return g && i >= 0 && i < g->n_kv ? &g->kvs[i].pub : NULL;
}

const fm_gguf_tensor *fm_gguf_tensor_at(const fm_gguf *g, int64_t i) {
  return g && i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

int64_t fm_gguf_find_kv(const fm_gguf *g, const char *key) {
  if (!g || !key) return -1;
  return hash_find(g, g->kv_hash, g->kv_cap, kv_name, key, strlen(key), NULL);
}

int64_t fm_gguf_find_tensor(const fm_gguf *g, const char *name) {
  if (!g || !name) return -1;
  return hash_find(g, g->t_hash, g->t_cap, t_name, name, strlen(name), NULL);
}

const uint8_t *fm_gguf_tensor_data(const fm_gguf *g, const fm_gguf_tensor *t) {
  return g && t ? g->base + t->data_offset : NULL;
}

/* ---- typed values ---------------------------------------------------------------- */

/* Address of element i of a fixed-size kv, or NULL. */
static const uint8_t *elem(const fm_gguf_kv *kv, uint64_t i) {
  if (!kv || i >= kv->n) return NULL;
  size_t sz = fm_gguf_vtype_size(kv->elem_type);
  return sz ? kv->value + i * sz : NULL;
}

/* Integer element i as a sign and magnitude: *neg set when negative. */
static int int_elem(const fm_gguf_kv *kv, uint64_t i, int *neg, uint64_t *mag) {
  const uint8_t *p = elem(kv, i);
  if (!p) return 1;
  int64_t s;
  switch (kv->elem_type) {
  case FM_GGUF_U8:
  case FM_GGUF_BOOL: *neg = 0, *mag = p[0]; return 0;
  case FM_GGUF_U16: *neg = 0, *mag = rd_u16(p); return 0;
  case FM_GGUF_U32: *neg = 0, *mag = rd_u32(p); return 0;
  case FM_GGUF_U64: *neg = 0, *mag = rd_u64(p); return 0;
  case FM_GGUF_I8: s = (int8_t)p[0]; break;
  case FM_GGUF_I16: s = (int16_t)rd_u16(p); break;
  case FM_GGUF_I32: s = (int32_t)rd_u32(p); break;
  case FM_GGUF_I64: s = (int64_t)rd_u64(p); break;
  default: return 1;
  }
  *neg = s < 0;
  *mag = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
  return 0;
}

int fm_gguf_get_i64(const fm_gguf_kv *kv, uint64_t i, int64_t *out) {
  int neg;
  uint64_t mag;
  if (int_elem(kv, i, &neg, &mag)) return 1;
  if (neg) {
    if (mag > (uint64_t)INT64_MAX + 1) return 1;
    *out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
  } else {
    if (mag > (uint64_t)INT64_MAX) return 1;
    *out = (int64_t)mag;
  }
  return 0;
}

int fm_gguf_get_u64(const fm_gguf_kv *kv, uint64_t i, uint64_t *out) {
  int neg;
  uint64_t mag;
  if (int_elem(kv, i, &neg, &mag) || neg) return 1;
  *out = mag;
  return 0;
}

int fm_gguf_get_f64(const fm_gguf_kv *kv, uint64_t i, double *out) {
  const uint8_t *p = elem(kv, i);
  if (!p) return 1;
  if (kv->elem_type == FM_GGUF_F32) {
    uint32_t b = rd_u32(p);
    float f;
    memcpy(&f, &b, sizeof f);
    *out = f;
    return 0;
  }
  if (kv->elem_type == FM_GGUF_F64) {
    uint64_t b = rd_u64(p);
    memcpy(out, &b, sizeof *out);
    return 0;
  }
  int neg;
  uint64_t mag;
  if (int_elem(kv, i, &neg, &mag)) return 1;
  *out = neg ? -(double)mag : (double)mag;
  return 0;
}

int fm_gguf_get_str(const fm_gguf_kv *kv, uint64_t i, const char **s, size_t *len) {
  if (!kv || kv->elem_type != FM_GGUF_STRING || i >= kv->n) return 1;
  const uint8_t *p;
  if (kv->type == FM_GGUF_STRING) {
    p = kv->value;
  } else {
    const kv_impl *e = (const kv_impl *)(const void *)kv;
    if (!e->strs) return 1;
    p = e->strs[i];
  }
  *len = (size_t)rd_u64(p);
  *s = (const char *)(p + 8);
  return 0;
}
