/* tok_pre.c: the pre-tokenizers of byte-level BPE, as hand-written scanners
 * of the regular expressions that tokenizer.ggml.pre selects (no regex
 * library). Each stage is one expression; like llama.cpp's
 * unicode_regex_split, a stage splits every piece of the previous stage into
 * its leftmost matches and the text between them (kept as pieces of their
 * own). Alternatives are tried in order at each position, as a backtracking
 * engine does; each scanner below returns the length the first matching
 * alternative would match there, or 0.
 *
 * Classes: \p{L}, \p{N}, \p{P} are Unicode's general categories L*, N*, P*;
 * \s is the White_Space property; a byte of ill-formed UTF-8 is in none of
 * them (like U+FFFD, a symbol). Patterns, from the tokenizers' definitions:
 *   GPT-2:  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *   llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *            ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   qwen2:  llama3's with \p{N} instead of \p{N}{1,3}
 *   deepseek-coder: [\r\n], \s?\p{L}+, \s?\p{P}+, [一-龥ࠀ-一가-퟿]+, \p{N}
 *   falcon: [\p{P}\$\+<=>\^~\|`]+, GPT-2's, [0-9][0-9][0-9]
 *   starcoder family: \p{N}, GPT-2's */
#include <stdlib.h>
#include <string.h>

#include "tok_impl.h"

typedef struct scan {
  const uint32_t *cp;
  const uint16_t *cls;
  size_t end; /* one past the piece's last unit */
} scan;

static inline unsigned CL(const scan *s, size_t i) { return i < s->end ? s->cls[i] : 0u; }
static inline uint32_t CP(const scan *s, size_t i) { return i < s->end ? s->cp[i] : 0xFFFFFFFFu; }
static inline uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
static inline int is_nl(uint32_t c) { return c == '\r' || c == '\n'; }

/* 's|'t|'re|'ve|'m|'ll|'d (case-insensitive when ci) */
static size_t contraction(const scan *s, size_t pos, int ci) {
  if (CP(s, pos) != '\'' || pos + 1 >= s->end) return 0;
  uint32_t a = CP(s, pos + 1);
  if (ci) a = ascii_lower(a);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= s->end) return 0;
  uint32_t b = CP(s, pos + 2);
  if (ci) b = ascii_lower(b);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

static int other(unsigned cl) { /* [^\s\p{L}\p{N}], for a unit inside the piece */
  return cl && !(cl & (TOK_CL_WS | TOK_CL_L | TOK_CL_N));
}

/* \s+(?!\S)|\s+ at pos (after the alternatives before it failed). */
static size_t spaces(const scan *s, size_t pos) {
  size_t k = 0;
  while (CL(s, pos + k) & TOK_CL_WS) k++;
  if (k > 1 && pos + k < s->end) return k - 1; /* leave the last one to the next word */
  return k;
}

static size_t m_gpt2(const scan *s, size_t pos) {
  size_t m = contraction(s, pos, 0);
  if (m) return m;
  uint32_t c = CP(s, pos);
  size_t sp = c == ' ';
  unsigned f = CL(s, pos + sp);
  size_t i = pos + sp;
  if (f & TOK_CL_L) {
    while (CL(s, i) & TOK_CL_L) i++;
    return i - pos;
  }
  if (f & TOK_CL_N) {
    while (CL(s, i) & TOK_CL_N) i++;
    return i - pos;
  }
  if (other(f)) {
    while (other(CL(s, i))) i++;
    return i - pos;
  }
  return spaces(s, pos);
}

static size_t m_llama3(const scan *s, size_t pos, size_t max_digits) {
  size_t m = contraction(s, pos, 1);
  if (m) return m;
  uint32_t c = CP(s, pos);
  unsigned f = CL(s, pos);
  size_t i;
  /* [^\r\n\p{L}\p{N}]?\p{L}+ */
  if (!is_nl(c) && !(f & TOK_CL_N) && ((f & TOK_CL_L) || (CL(s, pos + 1) & TOK_CL_L))) {
    i = pos + 1;
    while (CL(s, i) & TOK_CL_L) i++;
    return i - pos;
  }
  /* \p{N}{1,k} */
  if (f & TOK_CL_N) {
    i = pos;
    while (i < pos + max_digits && (CL(s, i) & TOK_CL_N)) i++;
    return i - pos;
  }
  /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
  size_t sp = c == ' ';
  if (other(CL(s, pos + sp))) {
    i = pos + sp;
    while (other(CL(s, i))) i++;
    while (is_nl(CP(s, i))) i++;
    return i - pos;
  }
  /* \s*[\r\n]+ : up to the last \r or \n of the run of spaces */
  size_t k = 0, last_nl = 0;
  while (CL(s, pos + k) & TOK_CL_WS) {
    if (is_nl(CP(s, pos + k))) last_nl = k + 1;
    k++;
  }
  if (last_nl) return last_nl;
  return spaces(s, pos);
}

static size_t run(const scan *s, size_t i, unsigned cls) {
  size_t j = i;
  while (CL(s, j) & cls) j++;
  return j - i;
}

/* \s?X+ for the class X */
static size_t ws_run(const scan *s, size_t pos, unsigned cls) {
  if ((CL(s, pos) & TOK_CL_WS) && (CL(s, pos + 1) & cls)) return 1 + run(s, pos + 1, cls);
  return run(s, pos, cls);
}

static int dsc_cjk(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x0800 && c <= 0x4E00) || (c >= 0xAC00 && c <= 0xD7FF);
}

static int falcon_p(const scan *s, size_t i) {
  if (CL(s, i) & TOK_CL_P) return 1;
  uint32_t c = CP(s, i);
  return c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' ||
         c == '|' || c == '`';
}

static size_t match(tok_pre_stage st, const scan *s, size_t pos) {
  size_t i;
  switch (st) {
  case TOK_STAGE_GPT2: return m_gpt2(s, pos);
  case TOK_STAGE_LLAMA3: return m_llama3(s, pos, 3);
  case TOK_STAGE_QWEN2: return m_llama3(s, pos, 1);
  case TOK_STAGE_DIGIT: return (CL(s, pos) & TOK_CL_N) ? 1 : 0;
  case TOK_STAGE_NEWLINE: return is_nl(CP(s, pos)) ? 1 : 0;
  case TOK_STAGE_WS_LETTERS: return ws_run(s, pos, TOK_CL_L);
  case TOK_STAGE_WS_PUNCT: return ws_run(s, pos, TOK_CL_P);
  case TOK_STAGE_DSC_CJK:
    for (i = pos; i < s->end && dsc_cjk(s->cp[i]);) i++;
    return i - pos;
  case TOK_STAGE_FALCON_P:
    for (i = pos; i < s->end && falcon_p(s, i);) i++;
    return i - pos;
  case TOK_STAGE_DIGITS3:
    for (i = pos; i < pos + 3 && CP(s, i) >= '0' && CP(s, i) <= '9';) i++;
    return i == pos + 3 ? 3 : 0;
  default: return 0;
  }
}

static fm_status push_end(size_t **v, size_t *n, size_t *cap, size_t x, fm_err *err) {
  if (*n == *cap) {
    fm_status st = tok_reserve((void **)v, cap, *n + 1, sizeof **v, err);
    if (st) return st;
  }
  (*v)[(*n)++] = x;
  return FM_OK;
}

fm_status tok_pretokenize(const tok_pre_stage *stages, tok_scratch *s, fm_err *err) {
  fm_status st;
  s->n_ends = 0;
  if (s->u.n == 0) return FM_OK;
  if ((st = push_end(&s->ends, &s->n_ends, &s->cap_ends, s->u.n, err))) return st;
  for (int k = 0; k < TOK_MAX_STAGES && stages[k] != TOK_STAGE_END; k++) {
    s->n_ends2 = 0;
    size_t a = 0;
    for (size_t p = 0; p < s->n_ends; p++) {
      size_t b = s->ends[p];
      scan sc = {s->u.cp, s->u.cls, b};
      size_t pos = a, gap = a;
      while (pos < b) {
        size_t m = match(stages[k], &sc, pos);
        if (m == 0) {
          pos++;
          continue;
        }
        if (gap < pos && (st = push_end(&s->ends2, &s->n_ends2, &s->cap_ends2, pos, err))) return st;
        pos += m;
        gap = pos;
        if ((st = push_end(&s->ends2, &s->n_ends2, &s->cap_ends2, pos, err))) return st;
      }
      if (gap < b && (st = push_end(&s->ends2, &s->n_ends2, &s->cap_ends2, b, err))) return st;
      a = b;
    }
    size_t *tv = s->ends, tc = s->cap_ends;
    s->ends = s->ends2;
    s->cap_ends = s->cap_ends2;
    s->n_ends = s->n_ends2;
    s->ends2 = tv;
    s->cap_ends2 = tc;
  }
  return FM_OK;
}
