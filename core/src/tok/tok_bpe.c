/* tok_bpe.c: byte-level BPE (Sennrich et al. 2016; GPT-2, Radford et al.
 * 2019) as llama.cpp's llm_tokenizer_bpe applies it.
 *
 * The text is split by the pre-tokenizer (tok_pre.c); each piece is a word
 * of bytes. GPT-2 maps every byte to a printable character and merges those
 * characters; the map is one-to-one, so this works on the bytes directly:
 * the vocabulary and the merges were decoded to bytes when the tokenizer was
 * built (tok.c). With ignore_merges (llama3), a word that is a token
 * is emitted whole. Otherwise the word starts as one symbol per byte and,
 * repeatedly, the adjacent pair with the lowest merge rank is merged (ties:
 * the leftmost pair). Each final symbol is emitted as its token; a symbol
 * that is not a token (merges that produce no token) is emitted as the
 * tokens of its single bytes. */
#include <string.h>

#include "tok_impl.h"

static int64_t pair_rank(const fm_tok *t, const uint8_t *word, const tok_sym *a, const tok_sym *b) {
  return tok_map_get(&t->merges, word + a->off, a->n + b->n, a->n);
}

static fm_status encode_word(const fm_tok *t, tok_scratch *s, const uint8_t *word, size_t n, fm_tok_ids *out,
                             fm_err *err) {
  fm_status st;
  if (t->sp.ignore_merges) {
    int32_t id = tok_map_get(&t->vocab, word, n, 0);
    if (id >= 0) return tok_push_id(out, id, err);
  }
  if (n > TOK_MAX_MERGE_BYTES)
    return fm_err_set(err, FM_EUNSUPPORTED, "BPE: a pre-token of %zu bytes is longer than 2 GiB", n);
  s->n_sym = 0;
  s->n_heap = 0;
  for (uint32_t i = 0; i < (uint32_t)n; i++)
    if ((st = tok_sym_push(s, i, 1, err))) return st;
  if ((st = tok_merge_symbols(t, s, word, pair_rank, err))) return st;
  for (int32_t i = 0; i != -1 && s->n_sym; i = s->sym[i].next) {
    const tok_sym *y = &s->sym[i];
    int32_t id = tok_map_get(&t->vocab, word + y->off, y->n, 0);
    if (id >= 0) {
      if ((st = tok_push_id(out, id, err))) return st;
      continue;
    }
    for (uint32_t j = 0; j < y->n; j++) {
      int32_t bid = t->byte_id[word[y->off + j]];
      if (bid >= 0 && (st = tok_push_id(out, bid, err))) return st;
    }
  }
  return FM_OK;
}

fm_status tok_bpe_encode(const fm_tok *t, tok_scratch *s, const uint8_t *text, size_t n, fm_tok_ids *out,
                         fm_err *err) {
  fm_status st;
  if (n == 0) return FM_OK;
  if ((st = tok_units_decode(&s->u, text, n, err))) return st;
  if ((st = tok_pretokenize(t->stages, s, err))) return st;
  size_t a = 0;
  for (size_t p = 0; p < s->n_ends; p++) {
    size_t b = s->ends[p];
    if ((st = encode_word(t, s, text + s->u.off[a], s->u.off[b] - s->u.off[a], out, err))) return st;
    a = b;
  }
  return FM_OK;
}
