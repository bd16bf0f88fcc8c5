/* tok_spm.c: SentencePiece encoding as llama-family GGUF vocabularies use
 * it (Kudo and Richardson 2018; llama.cpp's llm_tokenizer_spm behaviour).
 *
 * The text gets a leading space when asked (add_space_prefix), every space
 * becomes U+2581, and the result is split into pieces by UTF-8 lead byte.
 * Then, repeatedly, the adjacent pair whose concatenation is a token with
 * the highest score is merged (ties: the leftmost pair). A final piece that
 * is a token is emitted; any other (a character outside the vocabulary, or
 * bytes of ill-formed UTF-8) becomes one <0xNN> byte token per byte, or the
 * unknown token when the vocabulary has no byte tokens. */
#include <string.h>

#include "tok_impl.h"

static const uint8_t SPACE_MARK[3] = {0xE2, 0x96, 0x81}; /* U+2581 */

static fm_status try_pair(const fm_tok *t, tok_scratch *s, int64_t l, int64_t r, fm_err *err) {
  if (l < 0 || r < 0) return FM_OK;
  const tok_sym *a = &s->sym[l], *b = &s->sym[r];
  size_t size = a->n + b->n;
  int32_t id = tok_map_get(&t->vocab, s->buf + a->off, size, 0);
  if (id < 0) return FM_OK;
  tok_bigram g = {-(double)t->score[id], l, r, size};
  return tok_heap_push(s, g, err);
}

fm_status tok_spm_encode(const fm_tok *t, tok_scratch *s, const uint8_t *text, size_t n, int prefix_space,
                         fm_tok_ids *out, fm_err *err) {
  fm_status st;
  s->n_buf = 0;
  s->n_sym = 0;
  s->n_heap = 0;
  if (prefix_space && (st = tok_buf_append(s, SPACE_MARK, 3, err))) return st;
  size_t a = 0;
  for (size_t i = 0; i < n; i++) {
    if (text[i] != ' ') continue;
    if ((st = tok_buf_append(s, text + a, i - a, err)) || (st = tok_buf_append(s, SPACE_MARK, 3, err))) return st;
    a = i + 1;
  }
  if ((st = tok_buf_append(s, text + a, n - a, err))) return st;
  size_t len = s->n_buf;
  if (len == 0) return FM_OK;

  for (size_t off = 0; off < len;) {
    size_t k = tok_utf8_lead_len(s->buf[off]);
    if (k > len - off) k = len - off;
    if ((st = tok_sym_push(s, off, k, err))) return st;
    off += k;
  }
  for (size_t i = 1; i < s->n_sym; i++)
    if ((st = try_pair(t, s, (int64_t)i - 1, (int64_t)i, err))) return st;

  while (s->n_heap) {
    tok_bigram g = tok_heap_pop(s);
    tok_sym *l = &s->sym[g.left], *r = &s->sym[g.right];
    if (l->n == 0 || r->n == 0 || l->n + r->n != g.size) continue; /* stale */
    l->n += r->n;
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0) s->sym[r->next].prev = g.left;
    if ((st = try_pair(t, s, l->prev, g.left, err))) return st;
    if ((st = try_pair(t, s, g.left, s->sym[g.left].next, err))) return st;
  }

  for (int64_t i = 0; i != -1; i = s->sym[i].next) {
    const tok_sym *y = &s->sym[i];
    int32_t id = tok_map_get(&t->vocab, s->buf + y->off, y->n, 0);
    if (id >= 0) {
      if ((st = tok_push_id(out, id, err))) return st;
      continue;
    }
    for (size_t j = 0; j < y->n; j++) {
      int32_t b = t->byte_id[s->buf[y->off + j]];
      if (b < 0) b = t->sp.unk;
      if (b >= 0 && (st = tok_push_id(out, b, err))) return st;
    }
  }
  return FM_OK;
}
