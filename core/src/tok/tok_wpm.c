/* tok_wpm.c: WordPiece (BERT; Devlin et al. 2019, Google's
 * tokenization.py BasicTokenizer + WordpieceTokenizer) as llama.cpp's
 * llm_tokenizer_wpm applies it to GGUF vocabularies, where a word-initial
 * piece is stored with a leading U+2581 and a continuation ("##x" in BERT's
 * vocab.txt) without a mark.
 *
 * Basic tokenization, per code point: each precomposed character is
 * replaced by the first code point of its canonical decomposition (NFD;
 * this strips accents from precomposed letters); whitespace ends a word;
 * NUL, U+FFFD, control characters, combining marks (all of \p{M}, so
 * decomposed accents go too, as in llama.cpp) and bytes of ill-formed UTF-8
 * are dropped;
 * punctuation, ASCII symbols and CJK ideographs are words of their own;
 * everything is lower-cased. Each word, prefixed with U+2581, is then cut
 * greedily into the longest vocabulary entries from the left; a word with a
 * part that matches nothing becomes the unknown token. */
#include <string.h>

#include "tok_impl.h"

static const uint8_t WORD_MARK[3] = {0xE2, 0x96, 0x81}; /* U+2581 */

/* Cut s->buf (U+2581 + word) into tokens. */
static fm_status word_pieces(const fm_tok *t, tok_scratch *s, fm_tok_ids *out, fm_err *err) {
  fm_status st;
  size_t n = s->n_buf;
  if (n <= 3) return FM_OK; /* empty word */
  int64_t n0 = out->n;
  for (size_t i = 0; i < n; i++) {
    size_t j = i + t->max_token_len + 1 < n ? i + t->max_token_len + 1 : n;
    int found = 0;
    for (; j > i; j--) {
      int32_t id = tok_map_get(&t->vocab, s->buf + i, j - i, 0);
      if (id >= 0) {
        if ((st = tok_push_id(out, id, err))) return st;
        found = 1;
        i = j - 1;
        break;
      }
    }
    if (!found) {
      out->n = n0;
      break;
    }
  }
  if (out->n == n0 && t->sp.unk >= 0) return tok_push_id(out, t->sp.unk, err);
  return FM_OK;
}

static fm_status end_word(const fm_tok *t, tok_scratch *s, fm_tok_ids *out, fm_err *err) {
  fm_status st = word_pieces(t, s, out, err);
  s->n_buf = 3;
  return st;
}

fm_status tok_wpm_encode(const fm_tok *t, tok_scratch *s, const uint8_t *text, size_t n, fm_tok_ids *out,
                         fm_err *err) {
  fm_status st;
  if (n == 0) return FM_OK;
  if ((st = tok_units_decode(&s->u, text, n, err))) return st;
  s->n_buf = 0;
  if ((st = tok_buf_append(s, WORD_MARK, 3, err))) return st;
  for (size_t i = 0; i < s->u.n; i++) {
    uint32_t cp = s->u.cp[i];
    if (cp == TOK_CP_BAD) continue;
    cp = tok_cp_nfd_first(cp);
    unsigned cl = tok_cp_class(cp);
    if (cl & TOK_CL_WS) {
      if ((st = end_word(t, s, out, err))) return st;
      continue;
    }
    if (cp == 0 || cp == 0xFFFD || (cl & (TOK_CL_C | TOK_CL_M))) continue;
    uint8_t u8[4];
    size_t k = tok_utf8_put(tok_cp_lower(cp), u8);
    if ((cl & TOK_CL_P) || (cp < 0x7F && (cl & TOK_CL_S)) || tok_cp_is_cjk(cp)) {
      if ((st = end_word(t, s, out, err)) || (st = tok_buf_append(s, u8, k, err)) ||
          (st = end_word(t, s, out, err)))
        return st;
      continue;
    }
    if ((st = tok_buf_append(s, u8, k, err))) return st;
  }
  return end_word(t, s, out, err);
}
