/* tok_common.c: the helpers every encoder shares (tok_impl.h): growable
 * buffers, the bigram heap and merge loop of SentencePiece and BPE, and the
 * byte-string hash map behind vocabulary lookups. */
#include <stdlib.h>
#include <string.h>

#include "tok_impl.h"


fm_status tok_reserve(void **p, size_t *cap, size_t need, size_t elem, fm_err *err) {
  if (need <= *cap) return FM_OK;
  size_t c = *cap ? *cap : 16;
  while (c < need) {
    if (c > SIZE_MAX / 2 / elem) return fm_err_set(err, FM_ENOMEM, "tokenizer: buffer of %zu elements too large", need);
    c *= 2;
  }
  void *q = realloc(*p, c * elem);
  if (!q) return fm_err_set(err, FM_ENOMEM, "tokenizer: out of memory (%zu elements of %zu bytes)", c, elem);
  *p = q;
  *cap = c;
  return FM_OK;
}

fm_status tok_buf_append(tok_scratch *s, const void *p, size_t n, fm_err *err) {
  if (s->n_buf + n < s->n_buf) return fm_err_set(err, FM_ENOMEM, "tokenizer: text too large");
  fm_status st = tok_reserve((void **)&s->buf, &s->cap_buf, s->n_buf + n, 1, err);
  if (st) return st;
  if (n) memcpy(s->buf + s->n_buf, p, n);
  s->n_buf += n;
  return FM_OK;
}

fm_status tok_sym_push(tok_scratch *s, uint32_t off, uint32_t n, fm_err *err) {
  fm_status st = tok_reserve((void **)&s->sym, &s->cap_sym, s->n_sym + 1, sizeof *s->sym, err);
  if (st) return st;
  int32_t i = (int32_t)s->n_sym;
  s->sym[i] = (tok_sym){off, n, i - 1, -1};
  if (i > 0) s->sym[i - 1].next = i;
  s->n_sym++;
  return FM_OK;
}

static inline int bigram_less(const tok_bigram *a, const tok_bigram *b) { return a->order < b->order; }

fm_status tok_heap_push(tok_scratch *s, tok_bigram b, fm_err *err) {
  fm_status st = tok_reserve((void **)&s->heap, &s->cap_heap, s->n_heap + 1, sizeof *s->heap, err);
  if (st) return st;
  size_t i = s->n_heap++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!bigram_less(&b, &s->heap[p])) break;
    s->heap[i] = s->heap[p];
    i = p;
  }
  s->heap[i] = b;
  return FM_OK;
}

tok_bigram tok_heap_pop(tok_scratch *s) {
  tok_bigram top = s->heap[0], last = s->heap[--s->n_heap];
  size_t n = s->n_heap, i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && bigram_less(&s->heap[c + 1], &s->heap[c])) c++;
    if (!bigram_less(&s->heap[c], &last)) break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (n) s->heap[i] = last;
  return top;
}

static fm_status try_pair(const fm_tok *t, tok_scratch *s, const uint8_t *bytes,
                          tok_pair_key_fn key, int32_t l, int32_t r, fm_err *err) {
  if (l < 0 || r < 0) return FM_OK;
  const tok_sym *a = &s->sym[l], *b = &s->sym[r];
  int64_t k = key(t, bytes, a, b);
  if (k < 0) return FM_OK;
  tok_bigram g = {((uint64_t)(uint32_t)k << 32) | (uint32_t)l, (uint32_t)r, a->n + b->n};
  return tok_heap_push(s, g, err);
}

fm_status tok_merge_symbols(const fm_tok *t, tok_scratch *s, const uint8_t *bytes,
                            tok_pair_key_fn key, fm_err *err) {
  fm_status st;
  s->n_heap = 0;
  for (int32_t i = 1; i < (int32_t)s->n_sym; i++)
    if ((st = try_pair(t, s, bytes, key, i - 1, i, err))) return st;
  while (s->n_heap) {
    tok_bigram g = tok_heap_pop(s);
    int32_t left = (int32_t)(g.order & UINT32_MAX);
    tok_sym *l = &s->sym[left], *r = &s->sym[g.right];
    if (l->n == 0 || r->n == 0 || l->n + r->n != g.size) continue; /* stale */
    l->n += r->n;
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0) s->sym[r->next].prev = left;
    if ((st = try_pair(t, s, bytes, key, l->prev, left, err))) return st;
    if ((st = try_pair(t, s, bytes, key, left, s->sym[left].next, err))) return st;
  }
  return FM_OK;
}

fm_status tok_push_id(fm_tok_ids *v, int32_t id, fm_err *err) {
  if (v->n == v->cap) {
    size_t cap = (size_t)v->cap;
    fm_status st = tok_reserve((void **)&v->ids, &cap, (size_t)v->n + 1, sizeof *v->ids, err);
    if (st) return st;
    v->cap = (int64_t)cap;
  }
  v->ids[v->n++] = id;
  return FM_OK;
}

void tok_scratch_clear(tok_scratch *s) {
  tok_units_clear(&s->u);
  free(s->ends);
  free(s->ends2);
  free(s->sym);
  free(s->heap);
  free(s->buf);
  memset(s, 0, sizeof *s);
}

/* ---- the hash map ---- */

static uint64_t hash_bytes(const uint8_t *p, size_t n, uint32_t aux) {
  uint64_t h = UINT64_C(0x9E3779B97F4A7C15) ^ ((uint64_t)n << 32) ^ aux;
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * UINT64_C(0xFF51AFD7ED558CCD);
    h ^= h >> 32;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  if (n) memcpy(&w, p, n);
  h = (h ^ w) * UINT64_C(0xC4CEB9FE1A85EC53);
  h ^= h >> 29;
  h *= UINT64_C(0x94D049BB133111EB);
  h ^= h >> 32;
  return h;
}

fm_status tok_map_init(tok_map *m, size_t n_expected, fm_err *err) {
  size_t cap = 16;
  while (cap < 2 * n_expected + 16) cap *= 2;
  m->e = calloc(cap, sizeof *m->e);
  if (!m->e) return fm_err_set(err, FM_ENOMEM, "tokenizer: out of memory for a table of %zu entries", cap);
  m->cap = cap;
  m->n = 0;
  return FM_OK;
}

void tok_map_clear(tok_map *m) {
  free(m->e);
  memset(m, 0, sizeof *m);
}

/* Callers size the table for every key they insert (at most half full). */
void tok_map_put(tok_map *m, const uint8_t *key, size_t len, uint32_t aux, int32_t val, int replace) {
  if (!m->e || 2 * (m->n + 1) > m->cap || len > UINT32_MAX) return;
  uint64_t h = hash_bytes(key, len, aux);
  size_t mask = m->cap - 1, i = (size_t)h & mask;
  for (;; i = (i + 1) & mask) {
    tok_entry *e = &m->e[i];
    if (!e->used) {
      *e = (tok_entry){h, key, (uint32_t)len, aux, val, 1};
      m->n++;
      return;
    }
    if (e->h == h && e->len == len && e->aux == aux && (len == 0 || memcmp(e->key, key, len) == 0)) {
      if (replace) e->val = val;
      return;
    }
  }
}

int32_t tok_map_get(const tok_map *m, const uint8_t *key, size_t len, uint32_t aux) {
  if (!m->e) return -1;
  uint64_t h = hash_bytes(key, len, aux);
  size_t mask = m->cap - 1, i = (size_t)h & mask;
  for (;; i = (i + 1) & mask) {
    const tok_entry *e = &m->e[i];
    if (!e->used) return -1;
    if (e->h == h && e->len == len && e->aux == aux && (len == 0 || memcmp(e->key, key, len) == 0))
      return e->val;
  }
}
