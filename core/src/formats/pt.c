/* pt.c: a validating reader of PyTorch .pt state-dict checkpoints
 * (fm_pt.h): the ZIP directory (pt_zip.c) and the pickle (pt_pickle.c)
 * give entries, storages and pickled tensors; this file checks the records
 * torch reads besides the pickle (byteorder, version), resolves each
 * storage to its data/<key> entry and each tensor to a contiguous range of
 * it, and builds the tensor table.
 *
 * Source: the format notes of the fixtures' README
 * (models/openspliceai/README.md, "The .pt file format"), PKWARE's
 * APPNOTE.TXT and Python's pickle opcode documentation (pickletools).
 * Written from those descriptions; docs/formats/pt.md lists every check. */
#define _GNU_SOURCE
#include "pt_impl.h"

#include "fm/fm_fileview.h"

#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned long long ull;

/* ---- names and text ------------------------------------------------------------ */

static uint64_t hash_parts(uint64_t seed, fm_pt_name a, fm_pt_name b) {
  return fm_checksum(b.s, b.n, fm_checksum(a.s, a.n, seed));
}

/* A seed for a new table: the clock, the table's and the stack's addresses
 * (ASLR) and a counter, mixed (splitmix64's finalizer). */
static uint64_t new_seed(const void *t) {
  static atomic_uint_fast64_t counter;
  const uint64_t k = (uint64_t)atomic_fetch_add(&counter, 1) * UINT64_C(0x9E3779B97F4A7C15);
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  uint64_t z = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^ (uint64_t)(uintptr_t)t ^
               (uint64_t)(uintptr_t)&ts ^ k;
  z = (z ^ z >> 30) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ z >> 27) * UINT64_C(0x94D049BB133111EB);
  return (z ^ z >> 31) | 1u;
}

int64_t fm_pt_names_find(const fm_pt_names *t, const void *owner, fm_pt_name_of name_of,
                         fm_pt_name prefix, fm_pt_name s) {
  if (!t->cap) return -1;
  const size_t mask = t->cap - 1;
  for (size_t h = (size_t)hash_parts(t->seed, prefix, s) & mask;; h = (h + 1) & mask) {
    if (!t->slot[h]) return -1;
    fm_pt_name x = name_of(owner, t->slot[h] - 1);
    if (x.n == prefix.n + s.n && memcmp(x.s, prefix.s, prefix.n) == 0 &&
        memcmp(x.s + prefix.n, s.s, s.n) == 0)
      return t->slot[h] - 1;
  }
}

static void place(int64_t *slot, size_t cap, uint64_t seed, fm_pt_name nm, int64_t i) {
  fm_pt_name none = {"", 0};
  size_t h = (size_t)hash_parts(seed, none, nm) & (cap - 1);
  while (slot[h]) h = (h + 1) & (cap - 1);
  slot[h] = i + 1;
}

int fm_pt_names_add(fm_pt_names *t, const void *owner, fm_pt_name_of name_of, int64_t i) {
  if ((size_t)(t->n + 1) * 2 > t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 16;
    int64_t *slot = calloc(cap, sizeof *slot);
    if (!slot) return -1;
    if (!t->seed) t->seed = new_seed(t);
    for (size_t k = 0; k < t->cap; k++)
      if (t->slot[k]) place(slot, cap, t->seed, name_of(owner, t->slot[k] - 1), t->slot[k] - 1);
    free(t->slot);
    t->slot = slot;
    t->cap = cap;
  }
  place(t->slot, t->cap, t->seed, name_of(owner, i), i);
  t->n++;
  return 0;
}

void fm_pt_names_clear(fm_pt_names *t) {
  free(t->slot);
  memset(t, 0, sizeof *t);
}

/* Unicode 15, table 3-7 (well-formed UTF-8 byte sequences): by lead byte,
 * the number of continuation bytes and the range the first of them must
 * lie in (the others are 80..BF). */
size_t fm_pt_utf8_bad_at(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    const uint8_t b = s[i];
    unsigned more, lo = 0x80, hi = 0xBF;
    if (b < 0x80) more = 0;
    else if (b >= 0xC2 && b <= 0xDF) more = 1;
    else if (b >= 0xE0 && b <= 0xEF) {
      more = 2;
      if (b == 0xE0) lo = 0xA0;      /* no overlong forms */
      else if (b == 0xED) hi = 0x9F; /* no surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
      more = 3;
      if (b == 0xF0) lo = 0x90;      /* no overlong forms */
      else if (b == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
    } else {
      return i;
    }
    if (n - i - 1 < more) return i;
    for (unsigned k = 1; k <= more; k++) {
      const uint8_t c = s[i + k];
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return i;
    }
    i += 1 + more;
  }
  return n;
}

/* ---- the reader ------------------------------------------------------------------ */

struct fm_pt {
  const uint8_t *base; /* the bytes parsed: size bytes */
  size_t size;
  char *path;          /* owned copy, may be NULL */
  char *top;           /* owned, NUL-terminated */
  fm_pt_tensor *t;     /* (n) owned */
  int64_t n;
  char *names;         /* owned: every name and storage key, each NUL-terminated */
  fm_pt_names index;   /* of t[i].name */
  fm_fileview *view;   /* fm_pt_open only */
};

/* The name messages use: the path, or its last component when long. */
static const char *msg_name(const char *path) {
  if (!path || !path[0]) return "PyTorch checkpoint";
  const char *slash = strrchr(path, '/');
  return strlen(path) > 80 && slash && slash[1] ? slash + 1 : path;
}

static fm_pt_name tensor_name(const void *owner, int64_t i) {
  const fm_pt *pt = owner;
  return (fm_pt_name){pt->t[i].name, pt->t[i].name_len};
}

static const char *const k_dtype_names[FM_PT_N_DTYPES] = {"f32", "f64", "f16", "bf16", "i64",
                                                          "i32", "i16", "i8",  "u8",   "bool"};
static const unsigned char k_dtype_sizes[FM_PT_N_DTYPES] = {4, 8, 2, 2, 8, 4, 2, 1, 1, 1};

const char *fm_pt_dtype_name(fm_pt_dtype t) {
  return (unsigned)t < FM_PT_N_DTYPES ? k_dtype_names[t] : "?";
}

size_t fm_pt_dtype_size(fm_pt_dtype t) {
  return (unsigned)t < FM_PT_N_DTYPES ? k_dtype_sizes[t] : 0;
}

/* Bytes of a name for "%.*s" in a message: at most 60, cut at a character
 * boundary (names are UTF-8). */
static int shown(const char *s, size_t n) {
  size_t k = n <= 60 ? n : 60;
  while (k < n && k > 0 && ((unsigned char)s[k] & 0xC0u) == 0x80u) k--;
  return (int)k;
}

/* <top>/byteorder must say "little" when present (torch assumes the
 * machine's order, little on every platform it writes from, when it is
 * absent); <top>/version (or <top>/.data/version) must hold a decimal
 * number, as torch's reader requires. */
static fm_status check_records(const fm_pt_zip *z, const char *msg, fm_err *err) {
  const fm_pt_entry *bo = fm_pt_zip_find(z, "byteorder", 9);
  if (bo) {
    const char *b = (const char *)z->p + bo->data_off;
    if (bo->n_bytes == 3 && memcmp(b, "big", 3) == 0)
      return fm_err_set(err, FM_EUNSUPPORTED,
                        "%s: entry '%.*s' says the tensors are big-endian; only little-endian checkpoints are read",
                        msg, shown(bo->name, bo->name_len), bo->name);
    if (bo->n_bytes != 6 || memcmp(b, "little", 6) != 0)
      return fm_err_set(err, FM_EFORMAT,
                        "%s: entry '%.*s' at byte %llu holds %llu bytes that are not 'little' or 'big'",
                        msg, shown(bo->name, bo->name_len), bo->name, (ull)bo->data_off,
                        (ull)bo->n_bytes);
  }
  const fm_pt_entry *v = fm_pt_zip_find(z, "version", 7);
  if (!v) v = fm_pt_zip_find(z, ".data/version", 13);
  if (!v)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: the archive has no '%.*s/version' entry (nor '.data/version'), which every torch.save writes",
                      msg, shown(z->top, z->top_len), z->top);
  const uint8_t *s = z->p + v->data_off;
  size_t k = 0, digits = 0;
  while (k < v->n_bytes && s[k] >= '0' && s[k] <= '9') k++, digits++;
  if (k < v->n_bytes && s[k] == '\n') k++;
  if (digits == 0 || digits > 18 || k != v->n_bytes)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: entry '%.*s' at byte %llu does not hold a decimal version number (%llu bytes)",
                      msg, shown(v->name, v->name_len), v->name, (ull)v->data_off, (ull)v->n_bytes);
  return FM_OK;
}

/* Where each storage's bytes are: entry <top>/data/<key>, holding exactly
 * numel elements, aligned to the element size within the file. */
static fm_status find_storages(const fm_pt_zip *z, const fm_pt_dict *d, const char *pkl,
                               uint64_t *data_off, fm_err *err) {
  for (int64_t i = 0; i < d->n_st; i++) {
    const fm_pt_storage *s = &d->st[i];
    const int sk = shown(s->key, s->key_len);
    const size_t es = fm_pt_dtype_size(s->dtype);
    char rel[64];
    const fm_pt_entry *e = NULL;
    if (s->key_len <= sizeof rel - 5) {
      memcpy(rel, "data/", 5);
      memcpy(rel + 5, s->key, s->key_len);
      e = fm_pt_zip_find(z, rel, 5 + s->key_len);
    } else {
      char *buf = malloc(5 + s->key_len);
      if (!buf) return fm_err_set(err, FM_ENOMEM, "%s: cannot name storage '%.*s'", z->msg, sk, s->key);
      memcpy(buf, "data/", 5);
      memcpy(buf + 5, s->key, s->key_len);
      e = fm_pt_zip_find(z, buf, 5 + s->key_len);
      free(buf);
    }
    if (!e)
      return fm_err_set(err, FM_EFORMAT,
                        "%s: storage '%.*s' (%s byte %zu) has no entry '%.*s/data/%.*s' in the archive",
                        z->msg, sk, s->key, pkl, s->at, shown(z->top, z->top_len), z->top, sk, s->key);
    if (s->numel > INT64_MAX / (int64_t)es || (uint64_t)s->numel * es != e->n_bytes)
      return fm_err_set(err, FM_EFORMAT,
                        "%s: storage '%.*s' (%s byte %zu) holds %lld %s elements, but its entry '%.*s' has %llu bytes, not %lld x %zu",
                        z->msg, sk, s->key, pkl, s->at, (long long)s->numel, fm_pt_dtype_name(s->dtype),
                        shown(e->name, e->name_len), e->name, (ull)e->n_bytes, (long long)s->numel, es);
    if (e->data_off % es != 0)
      return fm_err_set(err, FM_EUNSUPPORTED,
                        "%s: the data of storage '%.*s' at byte %llu is not aligned to its %zu-byte elements (torch.save aligns entries to 64 bytes)",
                        z->msg, sk, s->key, (ull)e->data_off, es);
    data_off[i] = e->data_off;
  }
  return FM_OK;
}

/* Tensor item i of the top dict, checked against its storage: dims
 * non-negative with a product that fits, C-contiguous, inside the storage. */
static fm_status make_tensor(fm_pt *pt, const fm_pt_dict *d, int64_t i, const uint64_t *data_off,
                             const char *msg, const char *pkl, fm_err *err) {
  const fm_pt_item *it = &d->items[i];
  const fm_pt_raw *r = &d->t[it->tensor];
  const fm_pt_storage *s = &d->st[r->storage];
  fm_pt_tensor *t = &pt->t[i];
  const int kn = shown(it->key, it->key_len);
  const size_t es = fm_pt_dtype_size(s->dtype);
  int64_t numel = 1;
  for (int k = 0; k < r->n_dims; k++) {
    if (r->size[k] < 0)
      return fm_err_set(err, FM_EFORMAT, "%s: tensor '%.*s' (%s byte %zu) has dim %d of size %lld",
                        msg, kn, it->key, pkl, r->at, k, (long long)r->size[k]);
    if (!fm_mul_ok(numel, r->size[k], &numel))
      return fm_err_set(err, FM_EFORMAT,
                        "%s: tensor '%.*s' (%s byte %zu): the product of its %d dims overflows",
                        msg, kn, it->key, pkl, r->at, r->n_dims);
    t->shape[k] = r->size[k];
  }
  for (int k = r->n_dims; k < FM_PT_MAX_DIMS; k++) t->shape[k] = 1;
  /* Row-major: walking from the innermost dim, each stride is the product
   * of the sizes inside it; a dim of size 1 never moves, so its stride is
   * free; an empty tensor has no elements to misplace. */
  int64_t want = 1;
  for (int k = r->n_dims - 1; k >= 0 && numel > 0; k--) {
    if (r->size[k] == 1) continue;
    if (r->stride[k] != want)
      return fm_err_set(err, FM_EUNSUPPORTED,
                        "%s: tensor '%.*s' (%s byte %zu) is not contiguous: dim %d has stride %lld where row-major order needs %lld",
                        msg, kn, it->key, pkl, r->at, k, (long long)r->stride[k], (long long)want);
    want *= r->size[k]; /* <= numel: no overflow */
  }
  if (r->offset > s->numel || numel > s->numel - r->offset)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: tensor '%.*s' (%s byte %zu): its %lld elements from storage offset %lld run past the %lld elements of storage '%.*s'",
                      msg, kn, it->key, pkl, r->at, (long long)numel, (long long)r->offset,
                      (long long)s->numel, shown(s->key, s->key_len), s->key);
  t->dtype = s->dtype;
  t->n_dims = r->n_dims;
  t->numel = numel;
  t->n_bytes = (uint64_t)numel * es;
  t->data_off = data_off[r->storage] + (uint64_t)r->offset * es;
  t->data = pt->base + t->data_off;
  t->storage_offset = r->offset;
  t->requires_grad = r->requires_grad;
  return FM_OK;
}

/* Names and storage keys, NUL-terminated, in one block; duplicate names
 * are an error. */
static fm_status copy_names(fm_pt *pt, const fm_pt_dict *d, const char *msg, const char *pkl,
                            fm_err *err) {
  size_t total = 0;
  for (int64_t i = 0; i < d->n_items; i++) total += d->items[i].key_len + 1;
  for (int64_t i = 0; i < d->n_st; i++) total += d->st[i].key_len + 1;
  char *buf = pt->names = malloc(total ? total : 1);
  if (!buf) return fm_err_set(err, FM_ENOMEM, "%s: cannot allocate %zu bytes of names", msg, total);
  char **keys = malloc((size_t)(d->n_st ? d->n_st : 1) * sizeof *keys);
  if (!keys) return fm_err_set(err, FM_ENOMEM, "%s: cannot allocate %lld storage keys", msg, (long long)d->n_st);
  for (int64_t i = 0; i < d->n_st; i++) {
    keys[i] = buf;
    memcpy(buf, d->st[i].key, d->st[i].key_len);
    buf += d->st[i].key_len;
    *buf++ = 0;
  }
  fm_status st = FM_OK;
  for (int64_t i = 0; i < d->n_items && !st; i++) {
    const fm_pt_item *it = &d->items[i];
    fm_pt_tensor *t = &pt->t[i];
    if (memchr(it->key, 0, it->key_len)) {
      st = fm_err_set(err, FM_EFORMAT, "%s: the state-dict key at %s byte %zu holds a NUL character",
                      msg, pkl, it->key_at);
      break;
    }
    t->name = buf;
    t->name_len = it->key_len;
    memcpy(buf, it->key, it->key_len);
    buf += it->key_len;
    *buf++ = 0;
    t->storage = keys[d->t[it->tensor].storage];
    fm_pt_name none = {"", 0}, nm = {t->name, t->name_len};
    int64_t dup = fm_pt_names_find(&pt->index, pt, tensor_name, none, nm);
    if (dup >= 0)
      st = fm_err_set(err, FM_EFORMAT, "%s: the state-dict key '%.*s' at %s byte %zu repeats key %lld",
                      msg, shown(it->key, it->key_len), it->key, pkl, it->key_at, (long long)dup);
    else if (fm_pt_names_add(&pt->index, pt, tensor_name, i))
      st = fm_err_set(err, FM_ENOMEM, "%s: cannot index %lld tensor names", msg, (long long)d->n_items);
  }
  free(keys);
  return st;
}

static fm_status parse_into(fm_pt *pt, const char *msg, fm_err *err) {
  fm_pt_zip z;
  fm_pt_dict d;
  uint64_t *data_off = NULL;
  memset(&d, 0, sizeof d);
  fm_status st = fm_pt_zip_read(&z, pt->base, pt->size, msg, err);
  if (st) goto done;
  if (!(pt->top = malloc(z.top_len + 1))) {
    st = fm_err_set(err, FM_ENOMEM, "%s: cannot allocate the folder name", msg);
    goto done;
  }
  memcpy(pt->top, z.top, z.top_len);
  pt->top[z.top_len] = 0;
  if ((st = check_records(&z, msg, err))) goto done;
  const fm_pt_entry *pk = fm_pt_zip_find(&z, "data.pkl", 8);
  if (!pk) {
    st = fm_err_set(err, FM_EFORMAT, "%s: the archive has no '%s/data.pkl' entry, which holds the state dict",
                    msg, pt->top);
    goto done;
  }
  char pkl[120];
  snprintf(pkl, sizeof pkl, "%.*s", shown(pk->name, pk->name_len), pk->name);
  char where[400];
  snprintf(where, sizeof where, "%s: %s", msg, pkl);
  if ((st = fm_pt_pickle_load(pt->base + pk->data_off, (size_t)pk->n_bytes, where, pk->data_off, &d, err)))
    goto done;
  data_off = malloc((size_t)(d.n_st ? d.n_st : 1) * sizeof *data_off);
  pt->t = calloc((size_t)(d.n_items ? d.n_items : 1), sizeof *pt->t);
  if (!data_off || !pt->t) {
    st = fm_err_set(err, FM_ENOMEM, "%s: cannot allocate %lld tensors", msg, (long long)d.n_items);
    goto done;
  }
  pt->n = d.n_items;
  if ((st = find_storages(&z, &d, pkl, data_off, err))) goto done;
  if ((st = copy_names(pt, &d, msg, pkl, err))) goto done;
  for (int64_t i = 0; i < d.n_items && !st; i++) st = make_tensor(pt, &d, i, data_off, msg, pkl, err);
done:
  free(data_off);
  fm_pt_dict_clear(&d);
  fm_pt_zip_clear(&z);
  return st;
}

static void free_parts(fm_pt *pt) {
  free(pt->path);
  free(pt->top);
  free(pt->t);
  free(pt->names);
  fm_pt_names_clear(&pt->index);
  fm_fileview_close(pt->view);
  free(pt);
}

fm_status fm_pt_parse(const void *data, size_t size, const char *path, fm_pt **out, fm_err *err) {
  if (out) *out = NULL;
  if (!out || (!data && size > 0))
    return fm_err_set(err, FM_EARG, "fm_pt_parse needs data (or size 0) and an out pointer");
  static const uint8_t empty[1] = {0};
  fm_pt *pt = calloc(1, sizeof *pt);
  if (!pt) return fm_err_set(err, FM_ENOMEM, "%s: cannot allocate a checkpoint reader", msg_name(path));
  pt->base = data ? data : empty;
  pt->size = size;
  if (path && !(pt->path = strdup(path))) {
    free_parts(pt);
    return fm_err_set(err, FM_ENOMEM, "%s: cannot allocate a checkpoint reader", msg_name(path));
  }
  fm_status st = parse_into(pt, msg_name(path), err);
  if (st) {
    free_parts(pt);
    return st;
  }
  *out = pt;
  return FM_OK;
}

fm_status fm_pt_open(const char *path, fm_pt **out, fm_err *err) {
  if (out) *out = NULL;
  if (!path || !path[0] || !out)
    return fm_err_set(err, FM_EARG, "fm_pt_open needs a non-empty path and an out pointer");
  fm_fileview *v = NULL;
  fm_status st = fm_fileview_open(path, &v, err);
  if (st) return st;
  if (v->n_bytes > SIZE_MAX / 2) {
    fm_fileview_close(v);
    return fm_err_set(err, FM_EIO, "'%s' is too large to read here", path);
  }
  fm_pt *pt = NULL;
  if ((st = fm_pt_parse(v->base, (size_t)v->n_bytes, path, &pt, err))) {
    fm_fileview_close(v);
    return st;
  }
  pt->view = v;
  *out = pt;
  return FM_OK;
}

void fm_pt_close(fm_pt *pt) {
  if (pt) free_parts(pt);
}

fm_status fm_pt_check(const fm_pt *pt, fm_err *err) {
  if (!pt) return fm_err_set(err, FM_EARG, "fm_pt_check needs a parsed checkpoint, got NULL");
  return pt->view ? fm_fileview_check(pt->view, err) : FM_OK;
}

const char *fm_pt_top(const fm_pt *pt) { return pt ? pt->top : NULL; }
const char *fm_pt_path(const fm_pt *pt) { return pt ? pt->path : NULL; }
const uint8_t *fm_pt_bytes(const fm_pt *pt) { return pt ? pt->base : NULL; }
size_t fm_pt_size(const fm_pt *pt) { return pt ? pt->size : 0; }
int64_t fm_pt_n_tensors(const fm_pt *pt) { return pt ? pt->n : 0; }

const fm_pt_tensor *fm_pt_tensor_at(const fm_pt *pt, int64_t i) {
  return pt && i >= 0 && i < pt->n ? &pt->t[i] : NULL;
}

int64_t fm_pt_find(const fm_pt *pt, const char *name) {
  if (!pt || !name) return -1;
  fm_pt_name none = {"", 0}, nm = {name, strlen(name)};
  return fm_pt_names_find(&pt->index, pt, tensor_name, none, nm);
}
