/* tok_unicode.c: the Unicode work of the tokenizer. UTF-8 decoding
 * (well-formed sequences per Unicode 15 table 3-7; anything else is one
 * byte-unit of its own), general categories, lower case and canonical
 * decomposition through utf8proc, the White_Space property, BERT's CJK
 * blocks and GPT-2's byte-to-unicode alphabet. */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tok_impl.h"

static int cont(uint8_t b) { return (b & 0xC0) == 0x80; }

size_t tok_utf8_next(const uint8_t *s, size_t n, uint32_t *cp) {
  uint8_t b0 = s[0];
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    if (n >= 2 && cont(s[1])) {
      *cp = ((uint32_t)(b0 & 0x1F) << 6) | (s[1] & 0x3F);
      return 2;
    }
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    /* second byte range: E0 A0..BF, ED 80..9F (no surrogates), else 80..BF */
    uint8_t lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
    if (n >= 3 && s[1] >= lo && s[1] <= hi && cont(s[2])) {
      *cp = ((uint32_t)(b0 & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
      return 3;
    }
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    /* F0 90..BF (no overlongs), F4 80..8F (at most U+10FFFF) */
    uint8_t lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
    if (n >= 4 && s[1] >= lo && s[1] <= hi && cont(s[2]) && cont(s[3])) {
      *cp = ((uint32_t)(b0 & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
            ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
      return 4;
    }
  }
  *cp = TOK_CP_BAD;
  return 1;
}

size_t tok_utf8_put(uint32_t cp, uint8_t out[4]) {
  if (cp < 0x80) {
    out[0] = (uint8_t)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (uint8_t)(0xC0 | (cp >> 6));
    out[1] = (uint8_t)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (uint8_t)(0xE0 | (cp >> 12));
    out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (uint8_t)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (uint8_t)(0xF0 | (cp >> 18));
  out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (uint8_t)(0x80 | (cp & 0x3F));
  return 4;
}

/* The White_Space property (PropList.txt). */
static int is_white_space(uint32_t cp) {
  if (cp < 0x80) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

static unsigned class_of_category(utf8proc_category_t c) {
  switch (c) {
  case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
  case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
    return TOK_CL_L;
  case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    return TOK_CL_M;
  case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
    return TOK_CL_N;
  case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
  case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
  case UTF8PROC_CATEGORY_PO:
    return TOK_CL_P;
  case UTF8PROC_CATEGORY_SM: case UTF8PROC_CATEGORY_SC: case UTF8PROC_CATEGORY_SK:
  case UTF8PROC_CATEGORY_SO:
    return TOK_CL_S;
  case UTF8PROC_CATEGORY_ZS: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP:
    return TOK_CL_Z;
  case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
  case UTF8PROC_CATEGORY_CO:
    return TOK_CL_C;
  default:
    return TOK_CL_UNDEF;
  }
}

/* ASCII classes, fixed (the categories of U+0000..U+007F never change). */
static unsigned ascii_class(uint32_t c) {
  unsigned ws = is_white_space(c) ? TOK_CL_WS : 0;
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return TOK_CL_L;
  if (c >= '0' && c <= '9') return TOK_CL_N;
  if (c < 0x20 || c == 0x7F) return TOK_CL_C | ws;
  if (c == ' ') return TOK_CL_Z | ws;
  switch (c) {
  case '$': case '+': case '<': case '=': case '>': case '^': case '`': case '|': case '~':
    return TOK_CL_S;
  default:
    return TOK_CL_P;
  }
}

unsigned tok_cp_class(uint32_t cp) {
  if (cp < 0x80) return ascii_class(cp);
  if (cp >= TOK_CP_BAD) return TOK_CL_BAD;
  unsigned cl = class_of_category(utf8proc_category((utf8proc_int32_t)cp));
  if (is_white_space(cp)) cl |= TOK_CL_WS;
  return cl;
}

uint32_t tok_cp_lower(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  if (cp >= TOK_CP_BAD) return cp;
  return (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp);
}

uint32_t tok_cp_nfd_first(uint32_t cp) {
  if (cp < 0xC0 || cp >= TOK_CP_BAD) return cp;
  utf8proc_int32_t dst[8];
  int last = 0;
  utf8proc_ssize_t n = utf8proc_decompose_char((utf8proc_int32_t)cp, dst, 8, UTF8PROC_DECOMPOSE, &last);
  return n >= 1 && n <= 8 ? (uint32_t)dst[0] : cp;
}

int tok_cp_is_cjk(uint32_t cp) {
  /* The CJK Unified Ideographs blocks of BERT's tokenization.py
   * (_is_chinese_char); the fifth range starts at U+2B920 as in Hugging
   * Face's BertPreTokenizer, which llama.cpp follows. */
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* GPT-2 (Radford et al. 2019, encoder.py bytes_to_unicode): the printable
 * bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves; the other
 * 68 bytes, in increasing order, become U+0100, U+0101, ... */
static int printable(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t tok_byte_to_cp(uint8_t b) {
  if (printable(b)) return b;
  uint32_t k = 0;
  for (unsigned x = 0; x < b; x++)
    if (!printable(x)) k++;
  return 256 + k;
}

int tok_cp_to_byte(uint32_t cp) {
  if (cp < 256) return printable(cp) ? (int)cp : -1;
  if (cp >= 256 + 68) return -1;
  uint32_t k = cp - 256;
  for (unsigned x = 0; x < 256; x++)
    if (!printable(x) && k-- == 0) return (int)x;
  return -1;
}

fm_status tok_units_decode(tok_units *u, const uint8_t *s, size_t n, fm_err *err) {
  u->n = 0;
  if (n + 1 > u->cap) {
    size_t cap = n + 1 > 2 * u->cap ? n + 1 : 2 * u->cap;
    uint32_t *cp = realloc(u->cp, cap * sizeof *cp);
    if (cp) u->cp = cp;
    uint16_t *cls = realloc(u->cls, cap * sizeof *cls);
    if (cls) u->cls = cls;
    size_t *off = realloc(u->off, cap * sizeof *off);
    if (off) u->off = off;
    if (!cp || !cls || !off)
      return fm_err_set(err, FM_ENOMEM, "tokenizer: out of memory decoding %zu bytes of text", n);
    u->cap = cap;
  }
  size_t i = 0, k = 0;
  while (i < n) {
    uint32_t cp;
    size_t len = tok_utf8_next(s + i, n - i, &cp);
    u->cp[k] = cp;
    u->cls[k] = (uint16_t)tok_cp_class(cp);
    u->off[k] = i;
    k++;
    i += len;
  }
  u->off[k] = n;
  u->n = k;
  return FM_OK;
}

void tok_units_clear(tok_units *u) {
  free(u->cp);
  free(u->cls);
  free(u->off);
  memset(u, 0, sizeof *u);
}
