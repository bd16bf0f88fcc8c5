/* Tests for fm_pt.h: the validating reader of PyTorch .pt state dicts.
 *
 * Hand-built archives come from the pickle and ZIP writers below (written
 * from pickletools' opcode descriptions and PKWARE's APPNOTE, field by
 * field, with CRC-32s, so Python's zipfile and pickle read them too); every
 * parse reads a heap copy of exactly the archive's size, so a read past the
 * end is an ASan report. The OpenSpliceAI checkpoints in
 * $RFMALLOC_FIXTURES/models/openspliceai (else ../../../shared/fixtures/...
 * from the build directory) are read and checked against the counts and
 * shapes of their README, and every tensor's bytes against the entry a
 * minimal central-directory walk of this file finds; without them those
 * cases are skipped with a message.
 *
 * With FM_PT_WRITE_CORPUS=<dir> in the environment, the generated archives
 * are also written there as seeds for core/fuzz/fuzz_pt.c (Python's
 * zipfile, testzip() included, and pickle read them all); with
 * FM_PT_SHOW_ERRORS=1 each expected error message is printed. */
#define _GNU_SOURCE
#include "fm/fm_pt.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fm_test.h"
#include "fm_test_files.h"

/* ---- bytes ------------------------------------------------------------------------- */

/* A growing byte string (n bytes used of cap). */
typedef struct buf {
  uint8_t *p;
  size_t n, cap;
} buf;

static uint8_t *room(buf *b, size_t more) {
  size_t cap = b->cap;
  while (cap - b->n < more) cap = cap ? 2 * cap : 512;
  if (cap != b->cap && !(b->p = realloc(b->p, cap))) abort();
  b->cap = cap;
  uint8_t *at = b->p + b->n;
  b->n += more;
  return at;
}

static void put(buf *b, const void *src, size_t n) {
  uint8_t *at = room(b, n);
  if (n) memcpy(at, src, n);
}

/* v as w little-endian bytes. */
static void le(buf *b, uint64_t v, int w) {
  uint8_t *at = room(b, (size_t)w);
  for (int i = 0; i < w; i++) at[i] = (uint8_t)(v >> (8 * i));
}

static void byte(buf *b, unsigned c) { le(b, c, 1); }

static void set_le(uint8_t *p, uint64_t v, int w) {
  for (int i = 0; i < w; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int w) {
  uint64_t v = 0;
  for (int i = w - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* ---- a pickle writer ---------------------------------------------------------------- */

/* The two styles torch.save's pickler writes: protocol 2 (GLOBAL,
 * BINUNICODE, BINPUT/BINGET) and protocol 4 (FRAME, STACK_GLOBAL,
 * SHORT_BINUNICODE, MEMOIZE). */
typedef struct pk {
  buf b;
  int proto;
  int memo; /* next memo index */
} pk;

static void pk_str(pk *k, const char *s) {
  size_t n = strlen(s);
  if (k->proto >= 4 && n < 256) {
    byte(&k->b, 0x8c); /* SHORT_BINUNICODE */
    byte(&k->b, (unsigned)n);
  } else {
    byte(&k->b, 'X'); /* BINUNICODE */
    le(&k->b, n, 4);
  }
  put(&k->b, s, n);
}

/* Memoize the top of the stack; returns its index. */
static int pk_put(pk *k) {
  if (k->proto >= 4) byte(&k->b, 0x94); /* MEMOIZE */
  else if (k->memo < 256) byte(&k->b, 'q'), byte(&k->b, (unsigned)k->memo);
  else byte(&k->b, 'r'), le(&k->b, (uint64_t)k->memo, 4);
  return k->memo++;
}

static void pk_get(pk *k, int i) {
  if (i < 256) byte(&k->b, 'h'), byte(&k->b, (unsigned)i);
  else byte(&k->b, 'j'), le(&k->b, (uint64_t)i, 4);
}

static void pk_global(pk *k, const char *mod, const char *name) {
  if (k->proto >= 4) {
    pk_str(k, mod);
    pk_str(k, name);
    byte(&k->b, 0x93); /* STACK_GLOBAL */
  } else {
    byte(&k->b, 'c');
    put(&k->b, mod, strlen(mod));
    byte(&k->b, '\n');
    put(&k->b, name, strlen(name));
    byte(&k->b, '\n');
  }
}

static void pk_int(pk *k, int64_t v) {
  if (v >= 0 && v < 256) byte(&k->b, 'K'), byte(&k->b, (unsigned)v);
  else if (v >= 0 && v < 65536) byte(&k->b, 'M'), le(&k->b, (uint64_t)v, 2);
  else if (v >= INT32_MIN && v <= INT32_MAX) byte(&k->b, 'J'), le(&k->b, (uint64_t)v, 4);
  else byte(&k->b, 0x8a), byte(&k->b, 8), le(&k->b, (uint64_t)v, 8); /* LONG1 */
}

/* A tuple of n ints: TUPLE1/2/3 at protocol 2+, MARK ... TUPLE otherwise. */
static void pk_ints(pk *k, const int64_t *v, int n) {
  if (n == 0) {
    byte(&k->b, ')');
    return;
  }
  if (n > 3) byte(&k->b, '(');
  for (int i = 0; i < n; i++) pk_int(k, v[i]);
  byte(&k->b, n > 3 ? 't' : (unsigned)(0x84 + n));
}

/* One tensor of a hand-built state dict. */
typedef struct tspec {
  const char *name;
  const char *cls; /* "FloatStorage", ... */
  const char *key; /* storage key */
  int64_t numel;   /* of the storage */
  int64_t offset;
  int n_dims;
  int64_t size[10], stride[10];
} tspec;

/* The state dict as torch.save pickles it: OrderedDict() then SETITEMS of
 * key -> _rebuild_tensor_v2(...), then BUILD with {'_metadata': ...}. */
static void pk_state_dict(pk *k, const tspec *t, int n) {
  byte(&k->b, 0x80), byte(&k->b, (unsigned)k->proto);
  size_t frame_at = 0;
  if (k->proto >= 4) {
    byte(&k->b, 0x95);
    frame_at = k->b.n;
    le(&k->b, 0, 8);
  }
  pk_global(k, "collections", "OrderedDict");
  const int od = pk_put(k);
  byte(&k->b, ')'), byte(&k->b, 'R');
  pk_put(k);
  byte(&k->b, '(');
  int rebuild = -1, storage_str = -1;
  int cls_memo[16];
  const char *cls_name[16];
  int n_cls = 0;
  for (int i = 0; i < n; i++) {
    pk_str(k, t[i].name);
    pk_put(k);
    if (rebuild < 0) {
      pk_global(k, "torch._utils", "_rebuild_tensor_v2");
      rebuild = pk_put(k);
    } else {
      pk_get(k, rebuild);
    }
    byte(&k->b, '(');
    byte(&k->b, '(');
    if (storage_str < 0) {
      pk_str(k, "storage");
      storage_str = pk_put(k);
    } else {
      pk_get(k, storage_str);
    }
    int c = 0;
    while (c < n_cls && strcmp(cls_name[c], t[i].cls) != 0) c++;
    if (c == n_cls) {
      pk_global(k, "torch", t[i].cls);
      cls_name[n_cls] = t[i].cls;
      cls_memo[n_cls++] = pk_put(k);
    } else {
      pk_get(k, cls_memo[c]);
    }
    pk_str(k, t[i].key);
    pk_str(k, "cpu");
    pk_int(k, t[i].numel);
    byte(&k->b, 't');
    byte(&k->b, 'Q'); /* BINPERSID */
    pk_int(k, t[i].offset);
    pk_ints(k, t[i].size, t[i].n_dims);
    pk_ints(k, t[i].stride, t[i].n_dims);
    byte(&k->b, k->proto >= 4 ? 0x88 : 0x89); /* requires_grad: NEWTRUE / NEWFALSE */
    pk_get(k, od);
    byte(&k->b, ')'), byte(&k->b, 'R'); /* backward_hooks = OrderedDict() */
    if (k->proto >= 4) byte(&k->b, 'N'); /* metadata = None, the 7th argument */
    byte(&k->b, 't');
    byte(&k->b, 'R');
  }
  byte(&k->b, 'u'); /* SETITEMS */
  /* State: {'_metadata': OrderedDict([('', {'version': 1})])}; protocol 4
   * also puts a list, a float and an 8-byte string in it (all ignored). */
  byte(&k->b, '}');
  pk_str(k, "_metadata");
  pk_get(k, od);
  byte(&k->b, ')'), byte(&k->b, 'R');
  pk_str(k, "");
  byte(&k->b, '(');
  pk_str(k, "version");
  pk_int(k, 1);
  if (k->proto >= 4) {
    byte(&k->b, 0x8d), le(&k->b, 2, 8), put(&k->b, "lr", 2); /* BINUNICODE8 */
    byte(&k->b, 'G');
    const uint8_t half[8] = {0x3f, 0xe0, 0, 0, 0, 0, 0, 0}; /* 0.5, big-endian */
    put(&k->b, half, 8);
    pk_str(k, "list");
    byte(&k->b, ']');
    pk_int(k, 7), byte(&k->b, 'a');
    byte(&k->b, '('), pk_int(k, -3), pk_int(k, 1 << 20), byte(&k->b, 'e');
    pk_str(k, "big");
    byte(&k->b, 0x8a), byte(&k->b, 0);        /* LONG1 of 0 bytes: 0 */
  }
  byte(&k->b, 'd'); /* DICT */
  byte(&k->b, 's');
  byte(&k->b, 's');
  byte(&k->b, 'b'); /* BUILD */
  byte(&k->b, '.');
  if (k->proto >= 4) set_le(k->b.p + frame_at, k->b.n - frame_at - 8, 8);
}

/* ---- a ZIP writer ------------------------------------------------------------------- */

static uint32_t crc32_of(const uint8_t *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

typedef struct zent {
  char name[96];
  const uint8_t *data;
  size_t n;
  int method;
  int skew; /* bytes of padding past the 64-byte boundary (a misaligned entry) */
} zent;

enum { Z_PLAIN, Z_TORCH64, Z_FORCED64 };

/* Entries stored with data on 64-byte boundaries (an "FB" extra field of
 * padding, as torch writes), flag bit 3 and a data descriptor after each;
 * mode Z_TORCH64 adds the ZIP64 end records with the real values in the
 * classic one too (as torch writes), Z_FORCED64 puts every size and offset
 * in ZIP64 fields and saturates the classic ones. */
static void zip_build(buf *z, const zent *e, int n, int mode) {
  uint64_t *lh = calloc((size_t)n, sizeof *lh);
  for (int i = 0; i < n; i++) {
    const size_t nl = strlen(e[i].name);
    lh[i] = z->n;
    const uint32_t crc = crc32_of(e[i].data, e[i].n);
    le(z, 0x04034b50u, 4), le(z, mode ? 45 : 20, 2), le(z, 0x0808, 2), le(z, (uint64_t)e[i].method, 2);
    le(z, 0, 4), le(z, 0, 4), le(z, 0, 4), le(z, 0, 4);
    size_t pad = (64 - (z->n + 4 + nl) % 64) % 64 + (size_t)e[i].skew;
    if (pad && pad < 4) pad += 64;
    le(z, nl, 2), le(z, pad, 2);
    put(z, e[i].name, nl);
    if (pad) {
      le(z, 0x4246, 2), le(z, pad - 4, 2);
      for (size_t k = 4; k < pad; k++) byte(z, 'Z');
    }
    put(z, e[i].data, e[i].n);
    le(z, 0x08074b50u, 4), le(z, crc, 4);
    le(z, e[i].n, mode == Z_FORCED64 ? 8 : 4), le(z, e[i].n, mode == Z_FORCED64 ? 8 : 4);
  }
  const uint64_t cd = z->n;
  for (int i = 0; i < n; i++) {
    const size_t nl = strlen(e[i].name);
    const int f64 = mode == Z_FORCED64;
    le(z, 0x02014b50u, 4), le(z, 0x031e, 2), le(z, mode ? 45 : 20, 2), le(z, 0x0808, 2);
    le(z, (uint64_t)e[i].method, 2), le(z, 0, 4), le(z, crc32_of(e[i].data, e[i].n), 4);
    le(z, f64 ? 0xFFFFFFFFu : e[i].n, 4), le(z, f64 ? 0xFFFFFFFFu : e[i].n, 4);
    le(z, nl, 2), le(z, f64 ? 28 : 0, 2), le(z, 0, 2), le(z, 0, 2), le(z, 0, 2), le(z, 0, 4);
    le(z, f64 ? 0xFFFFFFFFu : lh[i], 4);
    put(z, e[i].name, nl);
    if (f64) le(z, 1, 2), le(z, 24, 2), le(z, e[i].n, 8), le(z, e[i].n, 8), le(z, lh[i], 8);
  }
  const uint64_t cd_size = z->n - cd;
  if (mode) {
    const uint64_t r = z->n;
    le(z, 0x06064b50u, 4), le(z, 44, 8), le(z, 0x031e, 2), le(z, 45, 2), le(z, 0, 4), le(z, 0, 4);
    le(z, (uint64_t)n, 8), le(z, (uint64_t)n, 8), le(z, cd_size, 8), le(z, cd, 8);
    le(z, 0x07064b50u, 4), le(z, 0, 4), le(z, r, 8), le(z, 1, 4);
  }
  const int sat = mode == Z_FORCED64;
  le(z, 0x06054b50u, 4), le(z, 0, 2), le(z, 0, 2);
  le(z, sat ? 0xFFFF : (uint64_t)n, 2), le(z, sat ? 0xFFFF : (uint64_t)n, 2);
  le(z, sat ? 0xFFFFFFFFu : cd_size, 4), le(z, sat ? 0xFFFFFFFFu : cd, 4), le(z, 0, 2);
  free(lh);
}

/* ---- a checkpoint writer ------------------------------------------------------------ */

/* Storage contents: element j of storage key s is (s[0] * 100 + j) in the
 * storage's type, so every value tells where it came from. */
typedef struct stspec {
  const char *key;
  int dtype; /* fm_pt_dtype */
  int64_t numel;
} stspec;

static void fill_storage(buf *b, const stspec *s) {
  const size_t es = fm_pt_dtype_size((fm_pt_dtype)s->dtype);
  for (int64_t j = 0; j < s->numel; j++) {
    const double v = (double)(s->key[0] * 100 + j);
    uint8_t x[8] = {0};
    if (s->dtype == FM_PT_F32) {
      float f = (float)v;
      memcpy(x, &f, 4);
    } else if (s->dtype == FM_PT_F64) {
      memcpy(x, &v, 8);
    } else if (s->dtype == FM_PT_BOOL) {
      x[0] = (uint8_t)(j & 1);
    } else {
      set_le(x, (uint64_t)(int64_t)v, (int)es);
    }
    put(b, x, es);
  }
}

/* A whole checkpoint: <top>/data.pkl, byteorder, data/<key>..., version
 * (the order torch writes), from tensors t and storages s. byteorder NULL
 * leaves that entry out. */
typedef struct ckpt {
  const char *top;
  const char *byteorder;
  int proto;
  int zip_mode;
} ckpt;

static void ckpt_build(buf *out, const ckpt *c, const tspec *t, int nt, const stspec *s, int ns) {
  pk k = {{NULL, 0, 0}, c->proto, 0};
  pk_state_dict(&k, t, nt);
  zent *e = calloc((size_t)ns + 3, sizeof *e);
  buf *data = calloc((size_t)ns, sizeof *data);
  int n = 0;
  snprintf(e[n].name, sizeof e[n].name, "%s/data.pkl", c->top);
  e[n].data = k.b.p, e[n++].n = k.b.n;
  if (c->byteorder) {
    snprintf(e[n].name, sizeof e[n].name, "%s/byteorder", c->top);
    e[n].data = (const uint8_t *)c->byteorder, e[n++].n = strlen(c->byteorder);
  }
  for (int i = 0; i < ns; i++) {
    fill_storage(&data[i], &s[i]);
    snprintf(e[n].name, sizeof e[n].name, "%s/data/%s", c->top, s[i].key);
    e[n].data = data[i].p ? data[i].p : (const uint8_t *)"", e[n++].n = data[i].n;
  }
  snprintf(e[n].name, sizeof e[n].name, "%s/version", c->top);
  e[n].data = (const uint8_t *)"3\n", e[n++].n = 2;
  memset(out, 0, sizeof *out);
  zip_build(out, e, n, c->zip_mode);
  for (int i = 0; i < ns; i++) free(data[i].p);
  free(data);
  free(e);
  free(k.b.p);
}

/* The small valid state dict the error cases start from: "w" f32 [2,3]
 * and "b" f32 [3] share storage "a" (b from offset 6), "n" i64 scalar in
 * "c", "h" bf16 [2,2] in "d" viewed with a free stride on a size-1 dim. */
static const stspec k_st[] = {{"a", FM_PT_F32, 9}, {"c", FM_PT_I64, 1}, {"d", FM_PT_BF16, 4}};
static tspec k_t[] = {
    {"w", "FloatStorage", "a", 9, 0, 2, {2, 3}, {3, 1}},
    {"b", "FloatStorage", "a", 9, 6, 1, {3}, {1}},
    {"n", "LongStorage", "c", 1, 0, 0, {0}, {0}},
    {"h", "BFloat16Storage", "d", 4, 0, 3, {2, 1, 2}, {2, 99, 1}},
};
#define N_ST (int)(sizeof k_st / sizeof k_st[0])
#define N_T (int)(sizeof k_t / sizeof k_t[0])

static const ckpt k_plain = {"archive", "little", 2, Z_TORCH64};

static void build_small(buf *out, const ckpt *c) { ckpt_build(out, c, k_t, N_T, k_st, N_ST); }

/* ---- parsing from an exact-size copy ------------------------------------------------- */

static const char *g_corpus; /* FM_PT_WRITE_CORPUS */

static void write_seed(const char *name, const buf *b) {
  if (!g_corpus) return;
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", g_corpus, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(b->p, 1, b->n, f) != b->n) fprintf(stderr, "cannot write %s\n", path);
  if (f) fclose(f);
}

/* Parse b from a heap copy of exactly b->n bytes; release with done(). */
static fm_status parse(const uint8_t *p, size_t n, fm_pt **pt, fm_err *err) {
  uint8_t *copy = malloc(n ? n : 1);
  if (!copy) abort();
  if (n) memcpy(copy, p, n);
  fm_status st = fm_pt_parse(n ? copy : NULL, n, "t.pt", pt, err);
  if (st) free(copy);
  return st;
}

static void done(fm_pt *pt) {
  if (!pt) return;
  uint8_t *p = (uint8_t *)fm_pt_bytes(pt);
  fm_pt_close(pt);
  free(p);
}

static int has(const char *msg, const char *what) {
  if (strstr(msg, what)) return 1;
  fprintf(stderr, "  message '%s' lacks '%s'\n", msg, what);
  return 0;
}

/* Parse, expect status want and a message holding each of up to three
 * phrases (NULL: none). */
static void expect(const buf *b, fm_status want, const char *w1, const char *w2, const char *w3) {
  fm_pt *pt = NULL;
  fm_err err = {FM_OK, ""};
  fm_status st = parse(b->p, b->n, &pt, &err);
  if (st != want) fprintf(stderr, "  got %s (%s), expected %s\n", fm_status_name(st), err.msg, fm_status_name(want));
  CHECK(st == want);
  if (getenv("FM_PT_SHOW_ERRORS")) printf("%s: %s\n", fm_status_name(st), err.msg);
  if (want != FM_OK) {
    CHECK(pt == NULL && err.code == st);
    const char *w[3] = {w1, w2, w3};
    for (int i = 0; i < 3; i++)
      if (w[i]) CHECK(has(err.msg, w[i]));
  }
  done(pt);
}

/* The tensors of the small state dict, as fm_pt reports them. */
static void check_small(const fm_pt *pt, const char *top) {
  CHECK(strcmp(fm_pt_top(pt), top) == 0);
  CHECK(fm_pt_n_tensors(pt) == 4);
  const fm_pt_tensor *w = fm_pt_tensor_at(pt, 0), *b = fm_pt_tensor_at(pt, 1);
  const fm_pt_tensor *n = fm_pt_tensor_at(pt, 2), *h = fm_pt_tensor_at(pt, 3);
  CHECK(w && b && n && h && fm_pt_tensor_at(pt, 4) == NULL && fm_pt_tensor_at(pt, -1) == NULL);
  if (!w || !b || !n || !h) return;
  CHECK(strcmp(w->name, "w") == 0 && w->dtype == FM_PT_F32 && w->n_dims == 2);
  CHECK(w->shape[0] == 2 && w->shape[1] == 3 && w->shape[2] == 1 && w->numel == 6 && w->n_bytes == 24);
  CHECK(strcmp(w->storage, "a") == 0 && w->storage_offset == 0);
  CHECK(b->numel == 3 && b->storage_offset == 6 && b->data_off == w->data_off + 24);
  float fw[6], fb[3];
  memcpy(fw, w->data, sizeof fw);
  memcpy(fb, b->data, sizeof fb);
  for (int j = 0; j < 6; j++) CHECK(fw[j] == (float)('a' * 100 + j));
  for (int j = 0; j < 3; j++) CHECK(fb[j] == (float)('a' * 100 + 6 + j));
  CHECK(n->dtype == FM_PT_I64 && n->n_dims == 0 && n->numel == 1 && n->n_bytes == 8);
  CHECK((int64_t)get_le(n->data, 8) == 'c' * 100);
  CHECK(h->dtype == FM_PT_BF16 && h->n_dims == 3 && h->numel == 4 && h->n_bytes == 8);
  CHECK(get_le((const uint8_t *)h->data + 6, 2) == (uint64_t)('d' * 100 + 3));
  for (int64_t i = 0; i < 4; i++) CHECK(fm_pt_find(pt, fm_pt_tensor_at(pt, i)->name) == i);
  CHECK(fm_pt_find(pt, "x") == -1 && fm_pt_find(pt, "") == -1 && fm_pt_find(pt, NULL) == -1);
  for (int64_t i = 0; i < 4; i++) CHECK(fm_pt_tensor_at(pt, i)->data_off % 2 == 0);
}

/* ---- cases: valid archives ------------------------------------------------------------ */

static void dtypes(void) {
  static const char *const names[] = {"f32", "f64", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool"};
  static const size_t sizes[] = {4, 8, 2, 2, 8, 4, 2, 1, 1, 1};
  for (int t = 0; t < FM_PT_N_DTYPES; t++) {
    CHECK(strcmp(fm_pt_dtype_name((fm_pt_dtype)t), names[t]) == 0);
    CHECK(fm_pt_dtype_size((fm_pt_dtype)t) == sizes[t]);
  }
  CHECK(strcmp(fm_pt_dtype_name((fm_pt_dtype)FM_PT_N_DTYPES), "?") == 0);
  CHECK(fm_pt_dtype_size((fm_pt_dtype)-1) == 0);
  fm_pt_close(NULL);
  CHECK(fm_pt_n_tensors(NULL) == 0 && fm_pt_tensor_at(NULL, 0) == NULL && fm_pt_top(NULL) == NULL);
  fm_pt *pt = (fm_pt *)1;
  fm_err err;
  CHECK(fm_pt_parse(NULL, 5, "x", &pt, &err) == FM_EARG && pt == NULL);
  CHECK(fm_pt_parse("", 0, "x", NULL, &err) == FM_EARG);
  CHECK(fm_pt_open("", &pt, &err) == FM_EARG);
  CHECK(fm_pt_check(NULL, &err) == FM_EARG);
}

static void small_reads(void) {
  const int modes[] = {Z_PLAIN, Z_TORCH64, Z_FORCED64};
  for (int proto = 2; proto <= 4; proto += 2)
    for (int m = 0; m < 3; m++) {
      ckpt c = {"archive", "little", proto, modes[m]};
      buf b;
      build_small(&b, &c);
      char seed[64];
      snprintf(seed, sizeof seed, "small_p%d_z%d", proto, m);
      write_seed(seed, &b);
      fm_pt *pt = NULL;
      fm_err err = {FM_OK, ""};
      CHECK_OK(parse(b.p, b.n, &pt, &err), &err);
      if (pt) {
        check_small(pt, "archive");
        CHECK(fm_pt_tensor_at(pt, 0)->requires_grad == (proto >= 4));
        CHECK(fm_pt_check(pt, &err) == FM_OK);
      }
      done(pt);
      free(b.p);
    }
}

/* Every storage class once, with a tensor of each at an offset. */
static void every_dtype(void) {
  static const char *const cls[] = {"FloatStorage", "DoubleStorage", "HalfStorage", "BFloat16Storage",
                                    "LongStorage",  "IntStorage",    "ShortStorage", "CharStorage",
                                    "ByteStorage",  "BoolStorage"};
  static const char *const keys[] = {"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"};
  static const char *const names[] = {"t.f32", "t.f64", "t.f16", "t.bf16", "t.i64",
                                      "t.i32", "t.i16", "t.i8",  "t.u8",   "t.bool"};
  stspec s[FM_PT_N_DTYPES];
  tspec t[FM_PT_N_DTYPES];
  for (int i = 0; i < FM_PT_N_DTYPES; i++) {
    s[i] = (stspec){keys[i], i, 5};
    t[i] = (tspec){names[i], cls[i], keys[i], 5, 1, 1, {4}, {1}};
  }
  ckpt c = {"top with space", NULL, 2, Z_PLAIN}; /* no byteorder entry: little */
  buf b;
  ckpt_build(&b, &c, t, FM_PT_N_DTYPES, s, FM_PT_N_DTYPES);
  write_seed("every_dtype", &b);
  fm_pt *pt = NULL;
  fm_err err = {FM_OK, ""};
  CHECK_OK(parse(b.p, b.n, &pt, &err), &err);
  if (pt) {
    CHECK(strcmp(fm_pt_top(pt), "top with space") == 0);
    for (int i = 0; i < FM_PT_N_DTYPES; i++) {
      const fm_pt_tensor *x = fm_pt_tensor_at(pt, i);
      const size_t es = fm_pt_dtype_size((fm_pt_dtype)i);
      CHECK(x->dtype == (fm_pt_dtype)i && x->numel == 4 && x->n_bytes == 4 * es);
      CHECK(x->data_off % es == 0 && x->storage_offset == 1);
      if (i >= FM_PT_I64 && i <= FM_PT_U8) /* integers: element 1 of the storage */
        CHECK(get_le(x->data, (int)es) == (uint64_t)('k' * 100 + 1) % (es == 1 ? 256u : UINT64_MAX));
    }
    double d;
    memcpy(&d, fm_pt_tensor_at(pt, FM_PT_F64)->data, 8);
    CHECK(d == 'k' * 100 + 1);
    CHECK(((const uint8_t *)fm_pt_tensor_at(pt, FM_PT_BOOL)->data)[0] == 1);
  }
  done(pt);
  free(b.p);
}

/* Many tensors (hash tables grow, LONG_BINPUT/LONG_BINGET, SETITEMS of
 * more than 1000 pairs) sharing one storage, each a different slice; and
 * an empty tensor and an empty state dict. */
static void many_tensors(void) {
  enum { N = 3000 };
  tspec *t = calloc(N + 1, sizeof *t);
  char(*nm)[16] = calloc(N + 1, sizeof *nm);
  for (int i = 0; i < N; i++) {
    snprintf(nm[i], sizeof nm[i], "layer.%d", i);
    t[i] = (tspec){nm[i], "IntStorage", "s", N, i, 1, {1}, {1}};
  }
  t[N] = (tspec){"empty", "IntStorage", "s", N, N, 2, {0, 5}, {5, 1}};
  stspec s = {"s", FM_PT_I32, N};
  ckpt c = {"m", "little", 2, Z_PLAIN};
  buf b;
  ckpt_build(&b, &c, t, N + 1, &s, 1);
  fm_pt *pt = NULL;
  fm_err err = {FM_OK, ""};
  CHECK_OK(parse(b.p, b.n, &pt, &err), &err);
  if (pt) {
    CHECK(fm_pt_n_tensors(pt) == N + 1);
    for (int i = 0; i < N; i += 97) {
      int64_t k = fm_pt_find(pt, nm[i]);
      CHECK(k == i);
      CHECK(get_le(fm_pt_tensor_at(pt, k)->data, 4) == (uint64_t)('s' * 100 + i));
    }
    const fm_pt_tensor *e = fm_pt_tensor_at(pt, N);
    CHECK(e->numel == 0 && e->n_bytes == 0 && e->data != NULL && e->shape[1] == 5);
  }
  done(pt);
  free(b.p);
  ckpt_build(&b, &c, t, 0, &s, 0);
  write_seed("empty_dict", &b);
  CHECK_OK(parse(b.p, b.n, &pt, &err), &err);
  CHECK(pt && fm_pt_n_tensors(pt) == 0);
  done(pt);
  free(b.p);
  free(nm);
  free(t);
}

/* Every prefix of a valid archive fails cleanly; every single-byte change
 * either parses or fails cleanly (under ASan: no bad read). */
static void every_cut_and_flip(void) {
  ckpt c = k_plain;
  for (int proto = 2; proto <= 4; proto += 2) {
    c.proto = proto;
    buf b;
    build_small(&b, &c);
    for (size_t n = 0; n < b.n; n++) {
      fm_pt *pt = NULL;
      fm_err err = {FM_OK, ""};
      fm_status st = parse(b.p, n, &pt, &err);
      if (st == FM_OK) fprintf(stderr, "  a cut at %zu of %zu bytes parsed\n", n, b.n);
      CHECK(st == FM_EFORMAT || st == FM_EUNSUPPORTED);
      CHECK(pt == NULL && err.msg[0] != 0);
      done(pt);
    }
    int n_ok = 0;
    for (size_t i = 0; i < b.n; i++) {
      const uint8_t keep = b.p[i];
      for (int v = 0; v < 3; v++) {
        b.p[i] = v == 0 ? (uint8_t)~keep : v == 1 ? (uint8_t)(keep + 1) : 0xFF;
        fm_pt *pt = NULL;
        fm_err err = {FM_OK, ""};
        fm_status st = parse(b.p, b.n, &pt, &err);
        CHECK(st == FM_OK || st == FM_EFORMAT || st == FM_EUNSUPPORTED);
        if (st == FM_OK) {
          n_ok++;
          for (int64_t k = 0; k < fm_pt_n_tensors(pt); k++) {
            const fm_pt_tensor *x = fm_pt_tensor_at(pt, k);
            CHECK(x->data_off <= b.n && x->n_bytes <= b.n - x->data_off);
          }
        } else {
          CHECK(err.msg[0] != 0);
        }
        done(pt);
      }
      b.p[i] = keep;
    }
    CHECK(n_ok > 0); /* e.g. CRCs, times and padding bytes are not read */
    free(b.p);
  }
}

/* ---- cases: malformed and out-of-scope archives ------------------------------------------- */

/* The small archive with its pickle replaced by raw bytes (and the same
 * storages). */
static void with_pickle(buf *out, const uint8_t *pkl, size_t n) {
  zent e[5];
  buf data[N_ST];
  memset(e, 0, sizeof e);
  memset(data, 0, sizeof data);
  int k = 0;
  snprintf(e[k].name, sizeof e[k].name, "archive/data.pkl");
  e[k].data = pkl, e[k++].n = n;
  for (int i = 0; i < N_ST; i++) {
    fill_storage(&data[i], &k_st[i]);
    snprintf(e[k].name, sizeof e[k].name, "archive/data/%s", k_st[i].key);
    e[k].data = data[i].p, e[k++].n = data[i].n;
  }
  snprintf(e[k].name, sizeof e[k].name, "archive/version");
  e[k].data = (const uint8_t *)"3\n", e[k++].n = 2;
  memset(out, 0, sizeof *out);
  zip_build(out, e, k, Z_PLAIN);
  for (int i = 0; i < N_ST; i++) free(data[i].p);
}

static void expect_pickle(const char *pkl, size_t n, fm_status want, const char *w1, const char *w2) {
  buf b;
  with_pickle(&b, (const uint8_t *)pkl, n);
  expect(&b, want, w1, w2, NULL);
  free(b.p);
}
#define PKL(lit) lit, sizeof lit - 1

/* One hand-written pickle: its bytes, the status and up to two phrases of
 * the message. */
typedef struct pcase {
  const char *pkl;
  size_t n;
  fm_status want;
  const char *w1, *w2;
} pcase;
static void pickle_errors(void) {
  static const pcase cases[] = {
      /* Imports that are not a state dict's; data that is not a dict of
       * tensors. */
      {PKL("\x80\x02" "c__builtin__\neval\n" "."), FM_EUNSUPPORTED, "not a plain state dict", "__builtin__.eval"},
      {PKL("\x80\x02" "ctorch.nn.modules.conv\nConv1d\nq\x00)\x81."), FM_EUNSUPPORTED, "not a plain state dict", "torch.nn.modules.conv.Conv1d"},
      {PKL("\x80\x04\x8c\x02os\x8c\x06system\x93."), FM_EUNSUPPORTED, "os.system", NULL},
      {PKL("\x80\x02" "ctorch\nFloatStorage\n)R."), FM_EUNSUPPORTED, "torch.FloatStorage", NULL},
      {PKL("\x80\x02]."), FM_EUNSUPPORTED, "not a plain state dict", "list"},
      {PKL("\x80\x02}X\x01\x00\x00\x00kK\x05s."), FM_EUNSUPPORTED, "value of 'k' is a int", NULL},
      {PKL("\x80\x02}K\x01K\x05s."), FM_EUNSUPPORTED, "key 0", "not a str"},
      {PKL("\x80\x02" "ccollections\nOrderedDict\n(K\x01tR."), FM_EUNSUPPORTED, "OrderedDict called", NULL},
      /* Memo, stack and marks. */
      {PKL("\x80\x02h\xc8."), FM_EFORMAT, "memo index 200 was never stored", "byte 2 (file byte"},
      {PKL("\x80\x02j\xff\xff\xff\x7f."), FM_EFORMAT, "memo index 2147483647", NULL},
      {PKL("\x80\x02Nr\xff\xff\xff\xff."), FM_EFORMAT, "memo index 4294967295", NULL},
      {PKL("\x80\x02q\x00."), FM_EFORMAT, "stack underflow", NULL},
      {PKL("\x80\x02}(s."), FM_EFORMAT, "stack underflow", NULL},
      {PKL("\x80\x02N(\x87."), FM_EFORMAT, "stack underflow", NULL},
      {PKL("\x80\x02t."), FM_EFORMAT, "TUPLE without a MARK", NULL},
      {PKL("\x80\x02(."), FM_EFORMAT, "stack underflow", NULL},
      {PKL("\x80\x02}(K\x01u."), FM_EFORMAT, "key/value pairs", NULL},
      {PKL("\x80\x02N(K\x01u."), FM_EFORMAT, "SETITEMS needs a dict", NULL},
      {PKL("\x80\x02NN\x85R."), FM_EFORMAT, "REDUCE calls a None", NULL},
      {PKL("\x80\x02" "ccollections\nOrderedDict\n)RNb."), FM_OK, NULL, NULL},
      {PKL("\x80\x02]Nb."), FM_EUNSUPPORTED, "BUILD sets the state of a list", NULL},
      /* Lengths, ends and opcodes. */
      {PKL("\x80\x02X\xff\xff\xff\xff"), FM_EFORMAT, "a string of 4294967295 bytes", NULL},
      {PKL("\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f" "abc."), FM_EFORMAT, "a string of 9223372036854775807 bytes", NULL},
      {PKL("\x80\x04\x95\x00\x00\x00\x00\x00\x01\x00\x00}."), FM_EFORMAT, "a frame of", NULL},
      {PKL("\x80\x02X\x02\x00\x00\x00\xc3\x28."), FM_EFORMAT, "not UTF-8", NULL},
      {PKL("\x80\x02}"), FM_EFORMAT, "ends without STOP", NULL},
      {PKL("\x80\x02" "ccollections\nOrderedDict"), FM_EFORMAT, "newline-terminated", NULL},
      {PKL("\x80\x02J\x01\x00"), FM_EFORMAT, "ends inside this opcode's 4-byte argument", NULL},
      {PKL("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."), FM_EUNSUPPORTED, "9 bytes", NULL},
      {PKL("\x80\x06}."), FM_EUNSUPPORTED, "protocol 6", NULL},
      {PKL("\x80\x02I1\n."), FM_EUNSUPPORTED, "opcode 0x49 ('I')", NULL},
      {PKL("\x80\x02\xff."), FM_EFORMAT, "byte 0xff is not a pickle opcode", NULL},
      {PKL("\x80\x02Q."), FM_EFORMAT, "stack underflow", NULL},
      {PKL("\x80\x02NQ."), FM_EUNSUPPORTED, "persistent id", NULL},
      /* The same key object set twice. */
      {PKL("\x80\x02}X\x01\x00\x00\x00kq\x00Ns" "h\x00Ns."), FM_EFORMAT, "'k'", "set twice"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    expect_pickle(cases[i].pkl, cases[i].n, cases[i].want, cases[i].w1, cases[i].w2);

  /* Bombs: nested marks, a deep stack. */
  buf b = {NULL, 0, 0};
  put(&b, "\x80\x02", 2);
  for (int i = 0; i < 100000; i++) byte(&b, '(');
  byte(&b, '.');
  expect_pickle((const char *)b.p, b.n, FM_EUNSUPPORTED, "more than 256 nested MARKs", NULL);
  b.n = 2;
  for (int i = 0; i < FM_PT_MAX_STACK + 10; i++) byte(&b, 'N');
  byte(&b, '.');
  expect_pickle((const char *)b.p, b.n, FM_EUNSUPPORTED, "stack grows past", NULL);
  /* A 2 MiB key reused by BINGET for many entries stops at the second use. */
  b.n = 0;
  put(&b, "\x80\x02}X\x00\x00\x20\x00", 8);
  for (int i = 0; i < (1 << 21); i++) byte(&b, 'k');
  put(&b, "q\x00Ns", 4);
  for (int i = 0; i < 100000; i++) put(&b, "h\x00Ns", 4);
  byte(&b, '.');
  expect_pickle((const char *)b.p, b.n, FM_EFORMAT, "set twice", NULL);
  free(b.p);
}

/* The small state dict with one tensor spec changed. */
static void expect_tensor(const tspec *changed, int at, fm_status want, const char *w1, const char *w2) {
  tspec t[N_T];
  memcpy(t, k_t, sizeof t);
  t[at] = *changed;
  buf b;
  ckpt_build(&b, &k_plain, t, N_T, k_st, N_ST);
  expect(&b, want, w1, w2, NULL);
  free(b.p);
}

static void tensor_errors(void) {
  tspec t = k_t[1];
  t.offset = 7; /* 3 elements from 7 of 9 */
  expect_tensor(&t, 1, FM_EFORMAT, "tensor 'b'", "run past the 9 elements of storage 'a'");
  t = k_t[0];
  t.size[0] = -2;
  expect_tensor(&t, 0, FM_EFORMAT, "tensor 'w'", "dim 0 of size -2");
  t = k_t[0];
  t.stride[0] = 1, t.stride[1] = 2; /* a transpose */
  expect_tensor(&t, 0, FM_EUNSUPPORTED, "tensor 'w'", "not contiguous");
  t = k_t[0];
  t.n_dims = 9;
  for (int k = 0; k < 9; k++) t.size[k] = 1, t.stride[k] = 1;
  expect_tensor(&t, 0, FM_EUNSUPPORTED, "9 dims", NULL);
  t = k_t[0];
  t.size[0] = INT64_C(1) << 40, t.size[1] = INT64_C(1) << 40, t.stride[0] = INT64_C(1) << 40;
  expect_tensor(&t, 0, FM_EFORMAT, "tensor 'w'", "overflows");
  t = k_t[0];
  t.offset = -1;
  expect_tensor(&t, 0, FM_EFORMAT, "storage_offset is negative", NULL);
  t = k_t[1];
  t.numel = 8; /* storage 'a' named with another size */
  expect_tensor(&t, 1, FM_EFORMAT, "storage 'a' is named as f32 of 8 elements", "as f32 of 9");
  t = k_t[1];
  t.cls = "DoubleStorage";
  expect_tensor(&t, 1, FM_EFORMAT, "storage 'a' is named as f64", NULL);
  t = k_t[2];
  t.key = "zz"; /* no entry */
  expect_tensor(&t, 2, FM_EFORMAT, "storage 'zz'", "no entry 'archive/data/zz'");
  t = k_t[1];
  t.name = "w";
  expect_tensor(&t, 1, FM_EFORMAT, "state-dict key 'w'", "repeats key 0");
  t = k_t[3];
  t.numel = 3; /* 4 bf16 elements in its entry, not 3 */
  expect_tensor(&t, 3, FM_EFORMAT, "storage 'd'", "has 8 bytes");
}

/* The small archive with bytes patched: (the offset of the n-th
 * occurrence of a signature) + delta gets value v of w bytes. */
static size_t find_sig(const buf *b, uint32_t sig, int nth) {
  for (size_t i = 0; i + 4 <= b->n; i++)
    if (get_le(b->p + i, 4) == sig && nth-- == 0) return i;
  return (size_t)-1;
}

static void expect_patch(int mode, uint32_t sig, int nth, size_t delta, uint64_t v, int w, fm_status want,
                         const char *w1, const char *w2) {
  ckpt c = k_plain;
  c.zip_mode = mode;
  buf b;
  build_small(&b, &c);
  size_t at = find_sig(&b, sig, nth);
  CHECK(at != (size_t)-1);
  if (at != (size_t)-1) {
    set_le(b.p + at + delta, v, w);
    expect(&b, want, w1, w2, NULL);
  }
  free(b.p);
}

/* One patch of the small archive: the field at (the n-th occurrence of a
 * signature) + delta set to v of w bytes, in ZIP mode mode; the status and
 * up to two phrases of the message. */
typedef struct zcase {
  int mode;
  uint32_t sig;
  int nth;
  size_t delta;
  uint64_t v;
  int w;
  fm_status want;
  const char *w1, *w2;
} zcase;

#define LH 0x04034b50u
#define CD 0x02014b50u
#define EOCD 0x06054b50u
#define Z64 0x06064b50u
#define LOC64 0x07064b50u

static void zip_errors(void) {
  static const zcase cases[] = {
      /* Compressed: the central directory's and the local header's method. */
      {Z_TORCH64, CD, 1, 10, 8, 2, FM_EUNSUPPORTED, "entry 'archive/byteorder'", "compressed (method 8, deflate)"},
      {Z_TORCH64, LH, 2, 8, 8, 2, FM_EUNSUPPORTED, "entry 'archive/data/a'", "compression method 8"},
      {Z_TORCH64, CD, 0, 8, 0x0809, 2, FM_EUNSUPPORTED, "encrypted", NULL},
      /* Local header names another file; sizes disagree. */
      {Z_TORCH64, LH, 1, 30, 'X', 1, FM_EFORMAT, "names another file", NULL},
      {Z_TORCH64, CD, 0, 24, 5, 4, FM_EFORMAT, "compressed size", "uncompressed size 5"},
      {Z_TORCH64, CD, 2, 20, 99999, 4, FM_EFORMAT, "compressed size 99999", NULL},
      /* Offsets outside the file or the archive. */
      {Z_TORCH64, CD, 1, 42, 0x7FFFFFF0u, 4, FM_EFORMAT, "local header at byte 2147483632", NULL},
      {Z_TORCH64, CD, 1, 42, 3, 4, FM_EFORMAT, "starts", "expected 50 4b 03 04"},
      {Z_FORCED64, CD, 1, 46 + 17 + 4 + 16, UINT64_C(1) << 62, 8, FM_EFORMAT, "local header at byte", NULL},
      {Z_TORCH64, CD, 2, 24, 99999, 4, FM_EFORMAT, NULL, NULL},
      {Z_PLAIN, EOCD, 0, 16, 1, 4, FM_EFORMAT, "central directory entry 0 at byte 1", NULL},
      {Z_PLAIN, EOCD, 0, 8, 60000u | 60000u << 16, 4, FM_EFORMAT, "claims 60000 entries", NULL},
      {Z_PLAIN, EOCD, 0, 12, 0x7FFFFFFF, 4, FM_EFORMAT, "does not end before the end records", NULL},
      {Z_PLAIN, EOCD, 0, 4, 1, 2, FM_EUNSUPPORTED, "multi-disk", NULL},
      {Z_PLAIN, EOCD, 0, 10, 0, 2, FM_EUNSUPPORTED, "multi-disk", NULL}, /* 5 on disk, 0 in all */
      {Z_PLAIN, EOCD, 0, 12, 0xFFFFFFFFu, 4, FM_EFORMAT, "no ZIP64 locator", NULL},
      /* ZIP64 end records. */
      {Z_TORCH64, Z64, 0, 32, 4, 8, FM_EFORMAT, "entry count as 6", "ZIP64 record at byte"},
      {Z_FORCED64, Z64, 0, 48, 12345, 8, FM_EFORMAT, NULL, NULL},
      {Z_FORCED64, Z64, 0, 4, 2, 8, FM_EFORMAT, "gives its size as 2", NULL},
      {Z_FORCED64, LOC64, 0, 8, 7, 8, FM_EFORMAT, "ZIP64 locator", "points at byte 7"},
      {Z_FORCED64, CD, 0, 46 + 16 + 2, 16, 2, FM_EFORMAT, "lacks the local header offset", NULL},
      {Z_FORCED64, CD, 0, 46 + 16 + 2, 200, 2, FM_EFORMAT, "extra field 0x0001 claims 200 bytes", NULL},
      /* Names. */
      {Z_TORCH64, CD, 0, 46 + 3, 0, 1, FM_EFORMAT, "holds a NUL", NULL},
      {Z_TORCH64, CD, 1, 46 + 7, '_', 1, FM_EFORMAT, "not inside the archive's folder 'archive/'", NULL},
      {Z_TORCH64, CD, 1, 46 + 8, 0xC3, 1, FM_EFORMAT, "not UTF-8", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const zcase *c = &cases[i];
    expect_patch(c->mode, c->sig, c->nth, c->delta, c->v, c->w, c->want, c->w1, c->w2);
  }
  /* Not a ZIP at all; the legacy format. */
  buf b = {NULL, 0, 0};
  put(&b, "hello, this is not a zip archive at all", 39);
  expect(&b, FM_EFORMAT, "not a ZIP archive", NULL, NULL);
  b.n = 3;
  expect(&b, FM_EFORMAT, "too short for a ZIP archive", NULL, NULL);
  b.n = 0;
  put(&b, "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15);
  expect(&b, FM_EUNSUPPORTED, "legacy format", NULL, NULL);
  b.n = 0;
  expect(&b, FM_EFORMAT, "too short", NULL, NULL);
  free(b.p);
}

static void record_errors(void) {
  ckpt c = k_plain;
  buf b;
  c.byteorder = "big";
  build_small(&b, &c);
  expect(&b, FM_EUNSUPPORTED, "archive/byteorder", "big-endian", NULL);
  free(b.p);
  c.byteorder = "middle";
  build_small(&b, &c);
  expect(&b, FM_EFORMAT, "not 'little' or 'big'", NULL, NULL);
  free(b.p);
  /* No version entry: rename it; a version that is no number. */
  c = k_plain;
  build_small(&b, &c);
  size_t at = find_sig(&b, CD, 5);
  CHECK(at != (size_t)-1 && memcmp(b.p + at + 46, "archive/version", 15) == 0);
  size_t lat = (size_t)get_le(b.p + at + 42, 4);
  b.p[at + 46 + 8] = 'V', b.p[lat + 30 + 8] = 'V';
  expect(&b, FM_EFORMAT, "no 'archive/version' entry", NULL, NULL);
  b.p[at + 46 + 8] = 'v', b.p[lat + 30 + 8] = 'v';
  const size_t data = lat + 30 + 15 + get_le(b.p + lat + 28, 2);
  b.p[data] = 'x';
  expect(&b, FM_EFORMAT, "decimal version", NULL, NULL);
  free(b.p);
  /* No data.pkl: the first entry renamed (still in the folder). */
  build_small(&b, &c);
  at = find_sig(&b, CD, 0);
  b.p[at + 46 + 8] = 'D', b.p[30 + 8] = 'D';
  expect(&b, FM_EFORMAT, "no 'archive/data.pkl' entry", NULL, NULL);
  b.p[at + 46 + 7] = 'X', b.p[30 + 7] = 'X'; /* "archiveXData.pkl": no folder */
  expect(&b, FM_EFORMAT, "not inside a top-level folder", NULL, NULL);
  free(b.p);
  /* Two entries of one name. */
  zent e[2];
  memset(e, 0, sizeof e);
  for (int i = 0; i < 2; i++) {
    snprintf(e[i].name, sizeof e[i].name, "t/version");
    e[i].data = (const uint8_t *)"3\n", e[i].n = 2;
  }
  b = (buf){NULL, 0, 0};
  zip_build(&b, e, 2, Z_PLAIN);
  expect(&b, FM_EFORMAT, "repeats entry 0", NULL, NULL);
  free(b.p);
}

/* A storage whose data is not aligned to its element size. */
static void unaligned_storage(void) {
  zent e[3];
  memset(e, 0, sizeof e);
  pk k = {{NULL, 0, 0}, 2, 0};
  tspec t = {"x", "FloatStorage", "a", 2, 0, 1, {2}, {1}};
  pk_state_dict(&k, &t, 1);
  static const uint8_t vals[8] = {0};
  snprintf(e[0].name, sizeof e[0].name, "q/data.pkl");
  e[0].data = k.b.p, e[0].n = k.b.n;
  snprintf(e[1].name, sizeof e[1].name, "q/data/a");
  e[1].data = vals, e[1].n = 8, e[1].skew = 2;
  snprintf(e[2].name, sizeof e[2].name, "q/version");
  e[2].data = (const uint8_t *)"3\n", e[2].n = 2;
  buf b = {NULL, 0, 0};
  zip_build(&b, e, 3, Z_PLAIN);
  expect(&b, FM_EUNSUPPORTED, "storage 'a'", "not aligned to its 4-byte elements", NULL);
  free(b.p);
  e[1].skew = 4; /* aligned to 4 though not to 64: read */
  b = (buf){NULL, 0, 0};
  zip_build(&b, e, 3, Z_PLAIN);
  expect(&b, FM_OK, NULL, NULL, NULL);
  free(b.p);
  free(k.b.p);
}

/* fm_pt_open: a written file, a missing one, a directory and a FIFO. */
static char g_dir[256];

static void open_files(void) {
  buf b;
  build_small(&b, &k_plain);
  const char *path = fm_test_path_in(g_dir, "small.pt");
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(b.p, 1, b.n, f) == b.n);
  if (f) fclose(f);
  fm_pt *pt = NULL;
  fm_err err = {FM_OK, ""};
  CHECK_OK(fm_pt_open(path, &pt, &err), &err);
  if (pt) {
    check_small(pt, "archive");
    CHECK(strcmp(fm_pt_path(pt), path) == 0 && fm_pt_size(pt) == b.n);
    CHECK_OK(fm_pt_check(pt, &err), &err);
    CHECK(truncate(path, 10) == 0);
    CHECK(fm_pt_check(pt, &err) == FM_EFORMAT && has(err.msg, "shrank"));
  }
  fm_pt_close(pt);
  CHECK(fm_pt_open(path, &pt, &err) == FM_EFORMAT && pt == NULL && has(err.msg, path));
  CHECK(fm_pt_open(fm_test_path_in(g_dir, "missing.pt"), &pt, &err) == FM_EIO && pt == NULL);
  CHECK(fm_pt_open(g_dir, &pt, &err) == FM_EIO && has(err.msg, "not a regular file"));
  const char *fifo = fm_test_path_in(g_dir, "fifo.pt");
  CHECK(mkfifo(fifo, 0600) == 0);
  CHECK(fm_pt_open(fifo, &pt, &err) == FM_EIO && has(err.msg, "not a regular file"));
  free(b.p);
}

/* ---- the OpenSpliceAI fixtures --------------------------------------------------------- */

static char fixdir[2048];
static int have_fixtures;

/* Independent of the reader: the data of entry `name`, found by walking
 * the central directory from the end record (no comment, as torch writes
 * none; ZIP64 offsets through the locator) and then the local header. */
static const uint8_t *entry_data(const uint8_t *p, size_t n, const char *name, uint64_t *size) {
  if (n < 22 || get_le(p + n - 22, 4) != 0x06054b50u) return NULL;
  uint64_t count = get_le(p + n - 12, 2), cd = get_le(p + n - 6, 4);
  if (cd == 0xFFFFFFFFu || count == 0xFFFF) {
    const uint8_t *z = p + get_le(p + n - 22 - 20 + 8, 8);
    count = get_le(z + 32, 8), cd = get_le(z + 48, 8);
  }
  for (uint64_t i = 0; i < count; i++) {
    const uint8_t *c = p + cd;
    const size_t nl = (size_t)get_le(c + 28, 2), xl = (size_t)get_le(c + 30, 2), cl = (size_t)get_le(c + 32, 2);
    if (nl == strlen(name) && memcmp(c + 46, name, nl) == 0) {
      const uint8_t *l = p + get_le(c + 42, 4);
      *size = get_le(c + 24, 4);
      return l + 30 + get_le(l + 26, 2) + get_le(l + 28, 2);
    }
    cd += 46 + nl + xl + cl;
  }
  return NULL;
}

static int ends_with(const char *s, const char *tail) {
  size_t a = strlen(s), b = strlen(tail);
  return a >= b && strcmp(s + a - b, tail) == 0;
}

static void fixture_one(int flank, int seed, int n_groups, int64_t n_tensors, int64_t n_learnable) {
  static const int kernel[4] = {11, 11, 21, 41};
  char path[4200];
  snprintf(path, sizeof path, "%s/%dnt/model_%dnt_rs%d.pt", fixdir, flank, flank, seed);
  fm_pt *pt = NULL;
  fm_err err = {FM_OK, ""};
  CHECK_OK(fm_pt_open(path, &pt, &err), &err);
  if (!pt) return;
  CHECK(strcmp(fm_pt_top(pt), "model_best") == 0);
  CHECK(fm_pt_n_tensors(pt) == n_tensors);
  const fm_pt_tensor *t = fm_pt_tensor_at(pt, fm_pt_find(pt, "initial_conv.weight"));
  CHECK(t && t->n_dims == 3 && t->shape[0] == 32 && t->shape[1] == 4 && t->shape[2] == 1);
  t = fm_pt_tensor_at(pt, fm_pt_find(pt, "final_conv.weight"));
  CHECK(t && t->n_dims == 3 && t->shape[0] == 3 && t->shape[1] == 32 && t->shape[2] == 1);
  t = fm_pt_tensor_at(pt, fm_pt_find(pt, "final_conv.bias"));
  CHECK(t && t->n_dims == 1 && t->shape[0] == 3);
  CHECK(fm_pt_tensor_at(pt, 0) == fm_pt_tensor_at(pt, fm_pt_find(pt, "initial_conv.weight")));
  for (int g = 0; g < n_groups; g++) {
    char name[96];
    for (int u = 0; u < 4; u++)
      for (int c = 1; c <= 2; c++) {
        snprintf(name, sizeof name, "residual_units.%d.conv%d.weight", 5 * g + u, c);
        t = fm_pt_tensor_at(pt, fm_pt_find(pt, name));
        CHECK(t && t->n_dims == 3 && t->shape[0] == 32 && t->shape[1] == 32 && t->shape[2] == kernel[g]);
      }
    snprintf(name, sizeof name, "residual_units.%d.conv.weight", 5 * g + 4);
    t = fm_pt_tensor_at(pt, fm_pt_find(pt, name));
    CHECK(t && t->shape[0] == 32 && t->shape[1] == 32 && t->shape[2] == 1);
  }
  /* The README's learnable parameters are the float tensors but the
   * batch-norm buffers running_mean and running_var (checked: with them
   * the sums are 512 per residual unit larger). */
  int64_t learn = 0, floats = 0, n_bn = 0;
  const uint8_t *base = fm_pt_bytes(pt);
  for (int64_t i = 0; i < fm_pt_n_tensors(pt); i++) {
    t = fm_pt_tensor_at(pt, i);
    if (ends_with(t->name, "num_batches_tracked")) {
      n_bn++;
      CHECK(t->dtype == FM_PT_I64 && t->n_dims == 0 && t->numel == 1 && t->n_bytes == 8);
      CHECK((int64_t)get_le(t->data, 8) > 0);
      continue;
    }
    CHECK(t->dtype == FM_PT_F32);
    floats += t->numel;
    if (!ends_with(t->name, "running_mean") && !ends_with(t->name, "running_var")) learn += t->numel;
    /* The bytes: entry <top>/data/<storage> found apart from the reader. */
    char ename[128];
    snprintf(ename, sizeof ename, "model_best/data/%s", t->storage);
    uint64_t esize = 0;
    const uint8_t *d = entry_data(base, fm_pt_size(pt), ename, &esize);
    CHECK(d != NULL && d == (const uint8_t *)t->data && esize == t->n_bytes);
    CHECK(t->data_off % 64 == 0);
  }
  CHECK(learn == n_learnable);
  CHECK(floats == n_learnable + 2 * 32 * n_bn);
  CHECK(n_bn == 8 * n_groups); /* 2 per residual unit, 4 units a group */
  if (flank == 80 && seed == 10) {
    /* From Python: struct.unpack('<f', zipfile.ZipFile(path).read(
     * 'model_best/data/1')[:4]), storage '1' being initial_conv.bias's. */
    t = fm_pt_tensor_at(pt, fm_pt_find(pt, "initial_conv.bias"));
    float v;
    memcpy(&v, t->data, 4);
    CHECK(strcmp(t->storage, "1") == 0 && v == -0.28911489248275757f);
  }
  fm_pt_close(pt);
}

static void fixtures(void) {
  if (!have_fixtures) return;
  static const struct {
    int flank, groups;
    int64_t tensors, learnable;
  } k[] = {{80, 1, 64, 93251}, {400, 2, 122, 185187}, {2000, 3, 180, 359043}, {10000, 4, 238, 696739}};
  for (int i = 0; i < 4; i++)
    for (int seed = 10; seed <= 14; seed++) fixture_one(k[i].flank, seed, k[i].groups, k[i].tensors, k[i].learnable);
}

/* Every cut of a real checkpoint's central directory region fails cleanly. */
static void fixture_cuts(void) {
  if (!have_fixtures) return;
  char path[4200];
  snprintf(path, sizeof path, "%s/80nt/model_80nt_rs10.pt", fixdir);
  size_t n = 0;
  uint8_t *p = fm_test_read_file(path, &n);
  CHECK(p != NULL);
  if (!p) return;
  for (size_t cut = n > 6000 ? n - 6000 : 0; cut < n; cut += 7) {
    fm_pt *pt = NULL;
    fm_err err = {FM_OK, ""};
    CHECK(parse(p, cut, &pt, &err) != FM_OK && err.msg[0]);
  }
  fm_pt *pt = NULL;
  fm_err err = {FM_OK, ""};
  CHECK_OK(parse(p, n, &pt, &err), &err);
  done(pt);
  free(p);
}

int main(void) {
  g_corpus = getenv("FM_PT_WRITE_CORPUS");
  if (g_corpus && !g_corpus[0]) g_corpus = NULL;
  have_fixtures = fm_test_fixture(fixdir, sizeof fixdir, "models/openspliceai", "80nt/model_80nt_rs10.pt");
  if (!have_fixtures) printf("SKIP: OpenSpliceAI fixtures not found at %s (set RFMALLOC_FIXTURES)\n", fixdir);
  if (!fm_test_tmpdir(g_dir, sizeof g_dir, "fm_pt_")) return 1;
  FM_RUN(dtypes);
  FM_RUN(small_reads);
  FM_RUN(every_dtype);
  FM_RUN(many_tensors);
  FM_RUN(every_cut_and_flip);
  FM_RUN(pickle_errors);
  FM_RUN(tensor_errors);
  FM_RUN(zip_errors);
  FM_RUN(record_errors);
  FM_RUN(unaligned_storage);
  FM_RUN(open_files);
  FM_RUN(fixtures);
  FM_RUN(fixture_cuts);
  fm_test_rmtree(g_dir);
  FM_TEST_END();
}
