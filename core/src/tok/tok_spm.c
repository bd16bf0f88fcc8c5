/* tok_spm.c: SentencePiece encoding as llama-family GGUF vocabularies use
 * it (Kudo and Richardson 2018; llama.cpp's llm_tokenizer_spm behaviour).
 *
 * The text gets a leading space when asked (add_space_prefix), every space
 * becomes U+2581, and the result is split into UTF-8 characters, a byte
 * of ill-formed UTF-8 being a piece of its own (llama.cpp goes by the lead
 * byte alone, which can swallow the bytes of a following U+2581; on
 * well-formed text the two agree).
 * Then, repeatedly, the adjacent pair whose concatenation is a token with
 * the highest score is merged (ties: the leftmost pair). A final piece that
 * is a token is emitted; any other (a character outside the vocabulary, or
 * bytes of ill-formed UTF-8) becomes one <0xNN> byte token per byte, or the
 * unknown token when the vocabulary has no byte tokens. */
#include <string.h>

#include "tok_impl.h"

static const uint8_t SPACE_MARK[3] = {0xE2, 0x96, 0x81}; /* U+2581 */

static int64_t pair_key(const fm_tok *t, const uint8_t *buf, const tok_sym *a, const tok_sym *b) {
  int32_t id = tok_map_get(&t->vocab, buf + a->off, a->n + b->n, 0);
  return id < 0 ? -1 : (int64_t)tok_score_key(t->score[id]);
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
  if (len > TOK_MAX_MERGE_BYTES)
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "SentencePiece: a text of %zu bytes between special tokens is longer than 2 GiB", len);

  for (size_t off = 0; off < len;) {
    uint32_t cp;
    size_t k = tok_utf8_next(s->buf + off, len - off, &cp);
    if ((st = tok_sym_push(s, (uint32_t)off, (uint32_t)k, err))) return st;
    off += k;
  }
  if ((st = tok_merge_symbols(t, s, s->buf, pair_key, err))) return st;

  for (int32_t i = 0; i != -1; i = s->sym[i].next) {
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
