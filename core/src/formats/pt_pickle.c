/* pt_pickle.c: the pickle of a .pt checkpoint (data.pkl) run by a small
 * stack machine that builds data, never calls code (pt_impl.h).
 *
 * Source: Python's pickle opcode documentation (Lib/pickletools.py: the
 * opcodes, their arguments and stack effects) and the torch state-dict
 * layout of the fixtures' README. Written from those descriptions;
 * docs/formats/pt.md lists the opcodes read and every check.
 *
 * Values live in one array of objects and refer to each other by index;
 * the stack, the memo, tuple elements and dict/list entries hold indices.
 * Each opcode creates at most one object, consumes what it pops once, and
 * copies nothing (BINGET pushes an index), so time and memory are linear in
 * the pickle's size; nothing recurses. A REDUCE may call only
 * collections.OrderedDict() (an empty dict) and
 * torch._utils._rebuild_tensor_v2 (a tensor record); BINPERSID resolves only
 * ('storage', torch.<T>Storage, key, location, numel). GLOBAL and
 * STACK_GLOBAL refuse every other import. */
#include "pt_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

enum kind { K_NONE, K_BOOL, K_INT, K_FLOAT, K_STR, K_TUPLE, K_LIST, K_DICT, K_GLOBAL, K_STORAGE, K_TENSOR };
static const char *const k_kind[] = {"None", "bool",   "int",     "float",   "str",   "tuple",
                                     "list", "dict",   "global",  "storage", "tensor"};

#define F_KEY 1u /* a str already used as a key of the top dict */

/* One value. By kind:
 *   BOOL, INT: a = the value; FLOAT: a = the IEEE bits;
 *   STR: a = pickle offset of its UTF-8 bytes, b = their count, c = the
 *        storage index + 1 it named as a persistent-id key (0: none yet);
 *   TUPLE: a = first element in slot[], b = the count;
 *   LIST, DICT: a = first node (-1 none), b = last node, c = entries;
 *   GLOBAL: a = its G_* id; STORAGE: a = storage index; TENSOR: a = raw index. */
typedef struct obj {
  int64_t a;
  int32_t b, c;
  uint8_t kind, flags;
} obj;

/* A list element (key -1) or dict entry, linked in insertion order. */
typedef struct node {
  int32_t key, val, next;
} node;

/* The importable globals. */
enum { G_ODICT = 0, G_REBUILD = 1, G_STORAGE = 2 /* + fm_pt_dtype */ };
typedef struct global_def {
  const char *module, *name;
} global_def;
static const global_def k_globals[] = {
    {"collections", "OrderedDict"},  {"torch._utils", "_rebuild_tensor_v2"},
    {"torch", "FloatStorage"},       {"torch", "DoubleStorage"},
    {"torch", "HalfStorage"},        {"torch", "BFloat16Storage"},
    {"torch", "LongStorage"},        {"torch", "IntStorage"},
    {"torch", "ShortStorage"},       {"torch", "CharStorage"},
    {"torch", "ByteStorage"},        {"torch", "BoolStorage"},
};
#define N_GLOBALS (int)(sizeof k_globals / sizeof k_globals[0])

typedef struct vm {
  const uint8_t *p;
  size_t n, pos, at; /* at: the current opcode */
  const char *where;
  uint64_t base;
  fm_err *err;
  obj *o; /* (n_o) */
  int64_t n_o, cap_o;
  int32_t *stk; /* (sp) object indices */
  int64_t sp, cap_stk;
  int64_t marks[FM_PT_MAX_MARKS]; /* stack heights at each MARK */
  int n_marks;
  int32_t *memo; /* (cap_memo) object index or -1 */
  int64_t cap_memo, n_memo;
  int32_t *slot; /* (n_slot) tuple elements */
  int64_t n_slot, cap_slot;
  node *nd; /* (n_nd) */
  int64_t n_nd, cap_nd;
  fm_pt_dict *out;
  int64_t cap_st, cap_t;
  fm_pt_names st_index; /* of out->st[i].key */
  int32_t none, no, yes; /* shared None, False, True */
} vm;

/* Set err to "<where> byte <at> (file byte <base + at>): <what>". */
static fm_status fail(vm *m, fm_status code, const char *fmt, ...) FM_PRINTF(3, 4);
static fm_status fail(vm *m, fm_status code, const char *fmt, ...) {
  fm_err what = {FM_OK, ""};
  va_list ap;
  va_start(ap, fmt);
  fm_err_setv(&what, code, fmt, ap);
  va_end(ap);
  return fm_err_set(m->err, code, "%s byte %zu (file byte %llu): %.200s", m->where, m->at,
                    (ull)(m->base + m->at), what.msg);
}

static fm_status nomem(vm *m) { return fail(m, FM_ENOMEM, "out of memory"); }

/* p grown to hold at least need elements of el bytes (doubling), or NULL
 * with p untouched. */
static void *grow(void *p, int64_t *cap, int64_t need, size_t el) {
  int64_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(p, (size_t)c * el);
  if (q) *cap = c;
  return q;
}

static const char *str_at(const vm *m, int32_t i) { return (const char *)m->p + m->o[i].a; }

/* Bytes of a string for "%.*s": at most 48, cut at a character boundary. */
static int shown(const char *s, size_t n) {
  size_t k = n <= 48 ? n : 48;
  while (k < n && k > 0 && ((unsigned char)s[k] & 0xC0u) == 0x80u) k--;
  return (int)k;
}

static fm_status new_obj(vm *m, uint8_t kind, int64_t a, int32_t *out) {
  if (m->n_o == m->cap_o) {
    obj *q = grow(m->o, &m->cap_o, m->n_o + 1, sizeof *q);
    if (!q) return nomem(m);
    m->o = q;
  }
  m->o[m->n_o] = (obj){a, 0, 0, kind, 0};
  *out = (int32_t)m->n_o++;
  return FM_OK;
}

/* ---- the stack ------------------------------------------------------------------- */

/* Nothing below the innermost MARK may be popped until that mark is. */
static int64_t fence(const vm *m) { return m->n_marks ? m->marks[m->n_marks - 1] : 0; }

static fm_status push(vm *m, int32_t i) {
  if (m->sp == FM_PT_MAX_STACK)
    return fail(m, FM_EUNSUPPORTED, "the stack grows past %d values", FM_PT_MAX_STACK);
  if (m->sp == m->cap_stk) {
    int32_t *q = grow(m->stk, &m->cap_stk, m->sp + 1, sizeof *q);
    if (!q) return nomem(m);
    m->stk = q;
  }
  m->stk[m->sp++] = i;
  return FM_OK;
}

static fm_status push_new(vm *m, uint8_t kind, int64_t a) {
  int32_t i = 0;
  fm_status st = new_obj(m, kind, a, &i);
  return st ? st : push(m, i);
}

static fm_status underflow(vm *m, int64_t k) {
  return fail(m, FM_EFORMAT, "stack underflow: %lld value(s) needed, %lld above the %s", (long long)k,
              (long long)(m->sp - fence(m)), m->n_marks ? "innermost mark" : "bottom");
}

static fm_status pop(vm *m, int32_t *out) {
  if (m->sp <= fence(m)) return underflow(m, 1);
  *out = m->stk[--m->sp];
  return FM_OK;
}

/* The top value (not popped), of the given kind. */
static fm_status top_of(vm *m, uint8_t kind, const char *op, int32_t *out) {
  if (m->sp <= fence(m)) return underflow(m, 1);
  *out = m->stk[m->sp - 1];
  if (m->o[*out].kind != kind)
    return fail(m, FM_EFORMAT, "%s needs a %s on the stack, found a %s", op, k_kind[kind],
                k_kind[m->o[*out].kind]);
  return FM_OK;
}

/* Pop through the innermost MARK: the values above it start at *from. */
static fm_status pop_mark(vm *m, const char *op, int64_t *from) {
  if (!m->n_marks) return fail(m, FM_EFORMAT, "%s without a MARK", op);
  *from = m->marks[--m->n_marks];
  return FM_OK;
}

/* ---- containers ------------------------------------------------------------------- */

static fm_status add_node(vm *m, int32_t container, int32_t key, int32_t val) {
  if (m->n_nd == m->cap_nd) {
    node *q = grow(m->nd, &m->cap_nd, m->n_nd + 1, sizeof *q);
    if (!q) return nomem(m);
    m->nd = q;
  }
  int32_t k = (int32_t)m->n_nd++;
  m->nd[k] = (node){key, val, -1};
  obj *c = &m->o[container];
  if (c->a < 0) c->a = k;
  else m->nd[c->b].next = k;
  c->b = k;
  c->c++;
  return FM_OK;
}

static fm_status new_container(vm *m, uint8_t kind, int32_t *out) {
  fm_status st = new_obj(m, kind, -1, out);
  if (!st) m->o[*out].b = -1;
  return st;
}

/* A tuple of stack values [from, sp), which are popped. */
static fm_status make_tuple(vm *m, int64_t from) {
  const int64_t k = m->sp - from;
  if (m->n_slot + k > m->cap_slot) {
    int32_t *q = grow(m->slot, &m->cap_slot, m->n_slot + k, sizeof *q);
    if (!q) return nomem(m);
    m->slot = q;
  }
  if (k) memcpy(m->slot + m->n_slot, m->stk + from, (size_t)k * sizeof *m->slot);
  m->sp = from;
  int32_t t = 0;
  fm_status st = new_obj(m, K_TUPLE, m->n_slot, &t);
  if (st) return st;
  m->o[t].b = (int32_t)k;
  m->n_slot += k;
  return push(m, t);
}

/* Key/value pairs [from, sp) into dict d; they are popped. */
static fm_status set_items(vm *m, int32_t d, int64_t from, const char *op) {
  if ((m->sp - from) % 2)
    return fail(m, FM_EFORMAT, "%s has %lld values after its MARK, expected key/value pairs", op,
                (long long)(m->sp - from));
  for (int64_t k = from; k < m->sp; k += 2) {
    fm_status st = add_node(m, d, m->stk[k], m->stk[k + 1]);
    if (st) return st;
  }
  m->sp = from;
  return FM_OK;
}

/* ---- globals, storages, tensors ---------------------------------------------------- */

static fm_status find_global(vm *m, const char *mod, size_t mod_n, const char *name, size_t name_n) {
  for (int g = 0; g < N_GLOBALS; g++)
    if (strlen(k_globals[g].module) == mod_n && memcmp(k_globals[g].module, mod, mod_n) == 0 &&
        strlen(k_globals[g].name) == name_n && memcmp(k_globals[g].name, name, name_n) == 0)
      return push_new(m, K_GLOBAL, g);
  const int ok = fm_pt_utf8_bad_at((const uint8_t *)mod, mod_n) == mod_n &&
                 fm_pt_utf8_bad_at((const uint8_t *)name, name_n) == name_n;
  return fail(m, FM_EUNSUPPORTED,
              "the file is not a plain state dict: its pickle imports %.*s.%.*s (only collections.OrderedDict, torch._utils._rebuild_tensor_v2 and torch.<T>Storage are read)",
              ok ? shown(mod, mod_n) : 0, mod, ok ? shown(name, name_n) : 11, ok ? name : "<not UTF-8>");
}

static fm_pt_name storage_key(const void *owner, int64_t i) {
  const fm_pt_dict *d = owner;
  return (fm_pt_name){d->st[i].key, d->st[i].key_len};
}

static fm_status check_same_storage(vm *m, int64_t s, fm_pt_dtype dt, int64_t numel) {
  const fm_pt_storage *x = &m->out->st[s];
  if (x->dtype == dt && x->numel == numel) return FM_OK;
  return fail(m, FM_EFORMAT,
              "storage '%.*s' is named as %s of %lld elements, but at pickle byte %zu as %s of %lld",
              shown(x->key, x->key_len), x->key, fm_pt_dtype_name(dt), (long long)numel, x->at,
              fm_pt_dtype_name(x->dtype), (long long)x->numel);
}

/* BINPERSID: ('storage', torch.<T>Storage, key, location, numel) -> a storage. */
static fm_status persistent_load(vm *m, int32_t pid) {
  const obj *t = &m->o[pid];
  const int32_t *e = t->kind == K_TUPLE && t->b == 5 ? m->slot + t->a : NULL;
  if (!e || m->o[e[0]].kind != K_STR || m->o[e[0]].b != 7 ||
      memcmp(str_at(m, e[0]), "storage", 7) != 0)
    return fail(m, FM_EUNSUPPORTED,
                "a persistent id that is not ('storage', class, key, location, numel): only tensor storages are read");
  const obj *cls = &m->o[e[1]], *key = &m->o[e[2]], *loc = &m->o[e[3]], *num = &m->o[e[4]];
  if (cls->kind != K_GLOBAL || cls->a < G_STORAGE)
    return fail(m, FM_EFORMAT, "the storage persistent id names a %s where a torch.<T>Storage class belongs",
                cls->kind == K_GLOBAL ? "global that is no storage class" : k_kind[cls->kind]);
  if (key->kind != K_STR || loc->kind != K_STR || num->kind != K_INT || num->a < 0)
    return fail(m, FM_EFORMAT,
                "the storage persistent id holds (%s, %s, %s) where (str key, str location, int numel >= 0) belong",
                k_kind[key->kind], k_kind[loc->kind], k_kind[num->kind]);
  const fm_pt_dtype dt = (fm_pt_dtype)(cls->a - G_STORAGE);
  const int64_t numel = num->a;
  fm_status st;
  int64_t s = (int64_t)key->c - 1;
  if (s < 0) {
    fm_pt_name none = {"", 0}, k = {str_at(m, e[2]), (size_t)key->b};
    s = fm_pt_names_find(&m->st_index, m->out, storage_key, none, k);
    if (s < 0) {
      fm_pt_dict *d = m->out;
      if (d->n_st == m->cap_st) {
        fm_pt_storage *q = grow(d->st, &m->cap_st, d->n_st + 1, sizeof *q);
        if (!q) return nomem(m);
        d->st = q;
      }
      s = d->n_st++;
      d->st[s] = (fm_pt_storage){k.s, k.n, dt, numel, m->at};
      if (fm_pt_names_add(&m->st_index, d, storage_key, s)) return nomem(m);
    }
    m->o[e[2]].c = (int32_t)(s + 1);
  }
  if ((st = check_same_storage(m, s, dt, numel))) return st;
  return push_new(m, K_STORAGE, s);
}

/* The int elements of tuple t (at most FM_PT_MAX_DIMS) into v. */
static fm_status int_tuple(vm *m, int32_t t, const char *what, int64_t *v, int *n) {
  const obj *x = &m->o[t];
  if (x->kind != K_TUPLE)
    return fail(m, FM_EFORMAT, "_rebuild_tensor_v2's %s is a %s, expected a tuple of ints", what,
                k_kind[x->kind]);
  if (x->b > FM_PT_MAX_DIMS)
    return fail(m, FM_EUNSUPPORTED, "a tensor of %d dims; at most %d are read", (int)x->b, FM_PT_MAX_DIMS);
  for (int32_t k = 0; k < x->b; k++) {
    const obj *y = &m->o[m->slot[x->a + k]];
    if (y->kind != K_INT)
      return fail(m, FM_EFORMAT, "_rebuild_tensor_v2's %s holds a %s at position %d, expected ints",
                  what, k_kind[y->kind], (int)k);
    v[k] = y->a;
  }
  *n = (int)x->b;
  return FM_OK;
}

/* An empty dict or None: backward hooks and tensor metadata, which a state
 * dict never fills. */
static int empty_or_none(const obj *x) {
  return x->kind == K_NONE || (x->kind == K_DICT && x->c == 0);
}

/* _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
 * backward_hooks[, metadata]) -> a tensor record; its shape and bounds are
 * checked later, when its key is known (pt.c). */
static fm_status rebuild_tensor(vm *m, int32_t args) {
  const obj *a = &m->o[args];
  if (a->kind != K_TUPLE || a->b < 6 || a->b > 7)
    return fail(m, FM_EFORMAT, "_rebuild_tensor_v2 called with a %s of %d values, expected a tuple of 6 or 7",
                k_kind[a->kind], a->kind == K_TUPLE ? (int)a->b : 1);
  const int32_t *e = m->slot + a->a;
  fm_pt_raw r;
  memset(&r, 0, sizeof r);
  const obj *s = &m->o[e[0]], *off = &m->o[e[1]], *rg = &m->o[e[4]];
  if (s->kind != K_STORAGE)
    return fail(m, FM_EFORMAT, "_rebuild_tensor_v2's storage is a %s, expected a persistent-id storage",
                k_kind[s->kind]);
  if (off->kind != K_INT || off->a < 0)
    return fail(m, FM_EFORMAT, "_rebuild_tensor_v2's storage_offset is %s, expected an int >= 0",
                off->kind == K_INT ? "negative" : k_kind[off->kind]);
  int n_stride = 0;
  fm_status st = int_tuple(m, e[2], "size", r.size, &r.n_dims);
  if (!st) st = int_tuple(m, e[3], "stride", r.stride, &n_stride);
  if (st) return st;
  if (n_stride != r.n_dims)
    return fail(m, FM_EFORMAT, "_rebuild_tensor_v2 has %d sizes but %d strides", r.n_dims, n_stride);
  if (rg->kind != K_BOOL)
    return fail(m, FM_EFORMAT, "_rebuild_tensor_v2's requires_grad is a %s, expected a bool", k_kind[rg->kind]);
  if (!empty_or_none(&m->o[e[5]]) || (a->b == 7 && !empty_or_none(&m->o[e[6]])))
    return fail(m, FM_EUNSUPPORTED,
                "_rebuild_tensor_v2 with backward hooks or tensor metadata, which a plain state dict does not have");
  r.storage = s->a;
  r.offset = off->a;
  r.requires_grad = (int)rg->a;
  r.at = m->at;
  fm_pt_dict *d = m->out;
  if (d->n_t == m->cap_t) {
    fm_pt_raw *q = grow(d->t, &m->cap_t, d->n_t + 1, sizeof *q);
    if (!q) return nomem(m);
    d->t = q;
  }
  d->t[d->n_t] = r;
  return push_new(m, K_TENSOR, d->n_t++);
}

static fm_status reduce(vm *m) {
  int32_t args = 0, fn = 0;
  fm_status st = pop(m, &args);
  if (!st) st = pop(m, &fn);
  if (st) return st;
  const obj *f = &m->o[fn];
  if (f->kind != K_GLOBAL)
    return fail(m, FM_EFORMAT, "REDUCE calls a %s, expected an imported global", k_kind[f->kind]);
  if (f->a == G_REBUILD) return rebuild_tensor(m, args);
  if (f->a == G_ODICT) {
    if (m->o[args].kind != K_TUPLE || m->o[args].b != 0)
      return fail(m, FM_EUNSUPPORTED, "collections.OrderedDict called with arguments (a %s); only OrderedDict() is read",
                  k_kind[m->o[args].kind]);
    int32_t d = 0;
    return (st = new_container(m, K_DICT, &d)) ? st : push(m, d);
  }
  return fail(m, FM_EUNSUPPORTED, "REDUCE calls %s.%s, which a state dict never calls",
              k_globals[f->a].module, k_globals[f->a].name);
}

/* ---- the opcodes ------------------------------------------------------------------ */

/* n argument bytes of the current opcode. */
static fm_status take(vm *m, size_t k, const uint8_t **out) {
  if (m->n - m->pos < k)
    return fail(m, FM_EFORMAT, "the pickle ends inside this opcode's %zu-byte argument (%zu bytes remain)",
                k, m->n - m->pos);
  *out = m->p + m->pos;
  m->pos += k;
  return FM_OK;
}

static uint64_t le(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  while (n-- > 0) v = v << 8 | p[n];
  return v;
}

/* A string opcode with a little-endian length of w bytes. */
static fm_status op_str(vm *m, size_t w) {
  const uint8_t *q = NULL;
  fm_status st = take(m, w, &q);
  if (st) return st;
  const uint64_t len = le(q, w);
  if (len > m->n - m->pos)
    return fail(m, FM_EFORMAT, "a string of %llu bytes, but %zu bytes of the pickle remain", (ull)len,
                m->n - m->pos);
  const size_t bad = fm_pt_utf8_bad_at(m->p + m->pos, (size_t)len);
  if (bad < len)
    return fail(m, FM_EFORMAT, "the string's byte %zu (pickle byte %zu) is not UTF-8", bad, m->pos + bad);
  int32_t i = 0;
  if ((st = new_obj(m, K_STR, (int64_t)m->pos, &i))) return st;
  m->o[i].b = (int32_t)len;
  m->pos += (size_t)len;
  return push(m, i);
}

/* GLOBAL's argument: "module\nname\n". */
static fm_status op_global(vm *m) {
  const char *s = (const char *)m->p + m->pos;
  const size_t left = m->n - m->pos;
  const char *nl1 = memchr(s, '\n', left);
  const char *nl2 = nl1 ? memchr(nl1 + 1, '\n', left - (size_t)(nl1 + 1 - s)) : NULL;
  if (!nl2) return fail(m, FM_EFORMAT, "GLOBAL's module and name are not two newline-terminated lines");
  m->pos += (size_t)(nl2 + 1 - s);
  return find_global(m, s, (size_t)(nl1 - s), nl1 + 1, (size_t)(nl2 - nl1 - 1));
}

static fm_status op_stack_global(vm *m) {
  int32_t name = 0, mod = 0;
  fm_status st = pop(m, &name);
  if (!st) st = pop(m, &mod);
  if (st) return st;
  if (m->o[name].kind != K_STR || m->o[mod].kind != K_STR)
    return fail(m, FM_EFORMAT, "STACK_GLOBAL needs two strings, found a %s and a %s", k_kind[m->o[mod].kind],
                k_kind[m->o[name].kind]);
  return find_global(m, str_at(m, mod), (size_t)m->o[mod].b, str_at(m, name), (size_t)m->o[name].b);
}

static fm_status memo_put(vm *m, uint64_t idx) {
  if (m->sp <= fence(m)) return underflow(m, 1);
  if (idx >= m->n)
    return fail(m, FM_EFORMAT, "memo index %llu is past the %zu-byte pickle's possible indices", (ull)idx, m->n);
  if ((int64_t)idx >= m->cap_memo) {
    int64_t old = m->cap_memo;
    int32_t *q = grow(m->memo, &m->cap_memo, (int64_t)idx + 1, sizeof *q);
    if (!q) return nomem(m);
    m->memo = q;
    for (int64_t k = old; k < m->cap_memo; k++) q[k] = -1;
  }
  if (m->memo[idx] < 0) m->n_memo++;
  m->memo[idx] = m->stk[m->sp - 1];
  return FM_OK;
}

static fm_status memo_get(vm *m, uint64_t idx) {
  if ((int64_t)idx >= m->cap_memo || m->memo[idx] < 0)
    return fail(m, FM_EFORMAT, "memo index %llu was never stored", (ull)idx);
  return push(m, m->memo[idx]);
}

static fm_status op_int(vm *m, size_t w, int is_signed) {
  const uint8_t *q = NULL;
  fm_status st = take(m, w, &q);
  if (st) return st;
  uint64_t u = le(q, w);
  int64_t v = (int64_t)u;
  if (is_signed && w < 8 && (u >> (8 * w - 1)) & 1u) v = (int64_t)(u | ~(uint64_t)0 << (8 * w));
  return push_new(m, K_INT, v);
}

/* LONG1: a length byte, then that many bytes of little-endian two's
 * complement (0 bytes: zero). */
static fm_status op_long1(vm *m) {
  const uint8_t *q = NULL;
  fm_status st = take(m, 1, &q);
  if (st) return st;
  const size_t w = q[0];
  if (w > 8) {
    if ((st = take(m, w, &q))) return st;
    return fail(m, FM_EUNSUPPORTED, "an integer of %zu bytes; at most 64-bit integers are read", w);
  }
  if (w == 0) return push_new(m, K_INT, 0);
  return op_int(m, w, 1);
}

static fm_status op_binfloat(vm *m) {
  const uint8_t *q = NULL;
  fm_status st = take(m, 8, &q);
  if (st) return st;
  uint64_t bits = 0;
  for (int k = 0; k < 8; k++) bits = bits << 8 | q[k]; /* big-endian */
  return push_new(m, K_FLOAT, (int64_t)bits);
}

static fm_status op_tuple_n(vm *m, int64_t k) {
  if (m->sp - fence(m) < k) return underflow(m, k);
  return make_tuple(m, m->sp - k);
}

static fm_status op_marked(vm *m, uint8_t op) {
  int64_t from = 0;
  fm_status st = pop_mark(m, op == 't' ? "TUPLE" : op == 'd' ? "DICT" : op == 'e' ? "APPENDS" : "SETITEMS", &from);
  if (st) return st;
  if (op == 't') return make_tuple(m, from);
  if (op == 'd') {
    int32_t d = 0;
    if ((st = new_container(m, K_DICT, &d)) || (st = set_items(m, d, from, "DICT"))) return st;
    return push(m, d);
  }
  /* APPENDS and SETITEMS: the container sits just below the mark. */
  if (from <= fence(m)) return underflow(m, 1);
  const int32_t c = m->stk[from - 1];
  const uint8_t want = op == 'e' ? K_LIST : K_DICT;
  if (m->o[c].kind != want)
    return fail(m, FM_EFORMAT, "%s needs a %s below its MARK, found a %s", op == 'e' ? "APPENDS" : "SETITEMS",
                k_kind[want], k_kind[m->o[c].kind]);
  if (op == 'u') return set_items(m, c, from, "SETITEMS");
  for (int64_t k = from; k < m->sp; k++)
    if ((st = add_node(m, c, -1, m->stk[k]))) return st;
  m->sp = from;
  return FM_OK;
}

static fm_status op_setitem(vm *m) {
  int32_t val = 0, key = 0, d = 0;
  fm_status st = pop(m, &val);
  if (!st) st = pop(m, &key);
  if (!st) st = top_of(m, K_DICT, "SETITEM", &d);
  return st ? st : add_node(m, d, key, val);
}

static fm_status op_append(vm *m) {
  int32_t val = 0, l = 0;
  fm_status st = pop(m, &val);
  if (!st) st = top_of(m, K_LIST, "APPEND", &l);
  return st ? st : add_node(m, l, -1, val);
}

/* BUILD on the state dict: OrderedDict's state (its _metadata) is ignored. */
static fm_status op_build(vm *m) {
  int32_t state = 0, target = 0;
  fm_status st = pop(m, &state);
  if (st) return st;
  if (m->sp <= fence(m)) return underflow(m, 1);
  target = m->stk[m->sp - 1];
  if (m->o[target].kind != K_DICT)
    return fail(m, FM_EUNSUPPORTED, "BUILD sets the state of a %s; only a dict's state is read",
                k_kind[m->o[target].kind]);
  if (m->o[state].kind != K_DICT && m->o[state].kind != K_NONE)
    return fail(m, FM_EUNSUPPORTED, "BUILD gives a dict a state that is a %s, not a dict",
                k_kind[m->o[state].kind]);
  return FM_OK;
}

/* Pickle opcodes this machine does not run (protocols 0-5), so that their
 * bytes say "unsupported" rather than "malformed". */
static const char k_other_ops[] = "012BCFILPSTUVgilop\x81\x82\x83\x84\x8b\x8e\x8f\x90\x91\x92\x96\x97\x98";

static fm_status step(vm *m, uint8_t op, int32_t *result, int *stop) {
  const uint8_t *q = NULL;
  fm_status st;
  switch (op) {
  case 0x80: /* PROTO */
    if ((st = take(m, 1, &q))) return st;
    if (q[0] < 2 || q[0] > 5)
      return fail(m, FM_EUNSUPPORTED, "pickle protocol %u; protocols 2 to 5 are read", (unsigned)q[0]);
    return FM_OK;
  case 0x95: /* FRAME: a length, then that many bytes of opcodes */
    if ((st = take(m, 8, &q))) return st;
    if (le(q, 8) > m->n - m->pos)
      return fail(m, FM_EFORMAT, "a frame of %llu bytes, but %zu bytes remain", (ull)le(q, 8), m->n - m->pos);
    return FM_OK;
  case 'c': return op_global(m);
  case 0x93: return op_stack_global(m);
  case 0x8c: return op_str(m, 1); /* SHORT_BINUNICODE */
  case 'X': return op_str(m, 4);  /* BINUNICODE */
  case 0x8d: return op_str(m, 8); /* BINUNICODE8 */
  case 'q': return (st = take(m, 1, &q)) ? st : memo_put(m, q[0]);      /* BINPUT */
  case 'r': return (st = take(m, 4, &q)) ? st : memo_put(m, le(q, 4));  /* LONG_BINPUT */
  case 0x94: return memo_put(m, (uint64_t)m->n_memo);                   /* MEMOIZE */
  case 'h': return (st = take(m, 1, &q)) ? st : memo_get(m, q[0]);      /* BINGET */
  case 'j': return (st = take(m, 4, &q)) ? st : memo_get(m, le(q, 4));  /* LONG_BINGET */
  case '(': /* MARK */
    if (m->n_marks == FM_PT_MAX_MARKS)
      return fail(m, FM_EUNSUPPORTED, "more than %d nested MARKs", FM_PT_MAX_MARKS);
    m->marks[m->n_marks++] = m->sp;
    return FM_OK;
  case 't': case 'd': case 'e': case 'u': return op_marked(m, op); /* TUPLE DICT APPENDS SETITEMS */
  case ')': return make_tuple(m, m->sp);  /* EMPTY_TUPLE */
  case 0x85: return op_tuple_n(m, 1);     /* TUPLE1 */
  case 0x86: return op_tuple_n(m, 2);     /* TUPLE2 */
  case 0x87: return op_tuple_n(m, 3);     /* TUPLE3 */
  case '}': case ']': {                   /* EMPTY_DICT, EMPTY_LIST */
    int32_t c = 0;
    if ((st = new_container(m, op == '}' ? K_DICT : K_LIST, &c))) return st;
    return push(m, c);
  }
  case 'a': return op_append(m);
  case 's': return op_setitem(m);
  case 'J': return op_int(m, 4, 1);  /* BININT */
  case 'K': return op_int(m, 1, 0);  /* BININT1 */
  case 'M': return op_int(m, 2, 0);  /* BININT2 */
  case 0x8a: return op_long1(m);
  case 'N': return push(m, m->none);
  case 0x88: return push(m, m->yes); /* NEWTRUE */
  case 0x89: return push(m, m->no);  /* NEWFALSE */
  case 'G': return op_binfloat(m);
  case 'Q': { /* BINPERSID */
    int32_t pid = 0;
    return (st = pop(m, &pid)) ? st : persistent_load(m, pid);
  }
  case 'R': return reduce(m);
  case 'b': return op_build(m);
  case '.': /* STOP */
    if ((st = pop(m, result))) return st;
    *stop = 1;
    return FM_OK;
  default:
    if (op && memchr(k_other_ops, op, sizeof k_other_ops - 1))
      return fail(m, FM_EUNSUPPORTED, "pickle opcode 0x%02x ('%c') is not one a state dict uses", (unsigned)op,
                  op >= 0x20 && op < 0x7f ? op : '?');
    return fail(m, FM_EFORMAT, "byte 0x%02x is not a pickle opcode", (unsigned)op);
  }
}

/* The top dict's entries: str keys, each key object once (checked first, in
 * O(1) per entry, before any key is hashed), then tensor values. */
static fm_status collect(vm *m, int32_t r) {
  obj *d = &m->o[r];
  if (d->kind != K_DICT)
    return fail(m, FM_EUNSUPPORTED, "the file is not a plain state dict: the pickle holds a %s, not a dict of tensors",
                k_kind[d->kind]);
  int64_t i = 0;
  for (int32_t k = (int32_t)d->a; k >= 0; k = m->nd[k].next, i++) {
    obj *key = &m->o[m->nd[k].key];
    if (key->kind != K_STR)
      return fail(m, FM_EUNSUPPORTED, "the file is not a plain state dict: key %lld of its dict is a %s, not a str",
                  (long long)i, k_kind[key->kind]);
    const char *ks = (const char *)m->p + key->a;
    if (key->flags & F_KEY)
      return fail(m, FM_EFORMAT, "the state-dict key '%.*s' (pickle byte %lld) is set twice",
                  shown(ks, (size_t)key->b), ks, (long long)key->a);
    key->flags |= F_KEY;
  }
  fm_pt_dict *out = m->out;
  out->items = calloc((size_t)(d->c ? d->c : 1), sizeof *out->items);
  if (!out->items) return nomem(m);
  for (int32_t k = (int32_t)d->a; k >= 0; k = m->nd[k].next) {
    const obj *key = &m->o[m->nd[k].key], *val = &m->o[m->nd[k].val];
    const char *ks = (const char *)m->p + key->a;
    if (val->kind != K_TENSOR)
      return fail(m, FM_EUNSUPPORTED, "the file is not a plain state dict: the value of '%.*s' is a %s, not a tensor",
                  shown(ks, (size_t)key->b), ks, k_kind[val->kind]);
    out->items[out->n_items++] = (fm_pt_item){ks, (size_t)key->b, (size_t)key->a, val->a};
  }
  return FM_OK;
}

static fm_status run(vm *m) {
  fm_status st;
  if ((st = new_obj(m, K_NONE, 0, &m->none)) || (st = new_obj(m, K_BOOL, 0, &m->no)) ||
      (st = new_obj(m, K_BOOL, 1, &m->yes)))
    return st;
  int32_t result = -1;
  int stop = 0;
  while (!stop) {
    m->at = m->pos;
    if (m->pos >= m->n) return fail(m, FM_EFORMAT, "the pickle ends without STOP");
    const uint8_t op = m->p[m->pos++];
    if ((st = step(m, op, &result, &stop))) return st;
  }
  return collect(m, result);
}

fm_status fm_pt_pickle_load(const uint8_t *p, size_t n, const char *where, uint64_t base,
                            fm_pt_dict *out, fm_err *err) {
  memset(out, 0, sizeof *out);
  vm m;
  memset(&m, 0, sizeof m);
  m.p = p, m.n = n, m.where = where, m.base = base, m.err = err, m.out = out;
  if (n > (size_t)INT32_MAX / 2)
    return fm_err_set(err, FM_EUNSUPPORTED, "%s: a pickle of %zu bytes; at most %d are read", where, n,
                      INT32_MAX / 2);
  fm_status st = run(&m);
  free(m.o);
  free(m.stk);
  free(m.memo);
  free(m.slot);
  free(m.nd);
  fm_pt_names_clear(&m.st_index);
  if (st) fm_pt_dict_clear(out);
  return st;
}

void fm_pt_dict_clear(fm_pt_dict *d) {
  if (!d) return;
  free(d->st);
  free(d->t);
  free(d->items);
  memset(d, 0, sizeof *d);
}
