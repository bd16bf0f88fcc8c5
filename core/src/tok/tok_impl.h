/* tok_impl.h: private parts of the tokenizer (fm_tok.h), shared by
 * tok.c (construction, special tokens, detokenizing, dispatch), tok_common.c
 * (buffers, the bigram heap and merge loop, the hash map),
 * tok_unicode.c (UTF-8, code point classes, NFD, lower case, GPT-2 bytes),
 * tok_pre.c (BPE pre-tokenizers), tok_spm.c, tok_bpe.c and tok_wpm.c. */
#ifndef FM_TOK_IMPL_H
#define FM_TOK_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fm/fm_tok.h"

/* ---- code points (tok_unicode.c) ---- */

/* Class bits of a code point. L, N, P, S, M, Z and C are the Unicode general
 * category's major class (C: Cc, Cf, Cs, Co; unassigned Cn is UNDEF), WS the
 * White_Space property, BAD a byte that does not start well-formed UTF-8. */
enum {
  TOK_CL_L = 1 << 0,
  TOK_CL_N = 1 << 1,
  TOK_CL_P = 1 << 2,
  TOK_CL_S = 1 << 3,
  TOK_CL_M = 1 << 4,
  TOK_CL_C = 1 << 5,
  TOK_CL_Z = 1 << 6,
  TOK_CL_WS = 1 << 7,
  TOK_CL_UNDEF = 1 << 8,
  TOK_CL_BAD = 1 << 9
};

/* Marks a unit that is one byte of ill-formed UTF-8 (above U+10FFFF). */
#define TOK_CP_BAD 0x110000u

/* One unit of s[0..n) (n >= 1): its byte length (1..4); *cp the code point,
 * or TOK_CP_BAD when s[0] does not begin a well-formed sequence (length 1). */
size_t tok_utf8_next(const uint8_t *s, size_t n, uint32_t *cp);
/* Bytes of cp in UTF-8 (1..4); cp must be a scalar value. */
size_t tok_utf8_put(uint32_t cp, uint8_t out[4]);
unsigned tok_cp_class(uint32_t cp);
uint32_t tok_cp_lower(uint32_t cp);     /* simple lower-case mapping */
uint32_t tok_cp_nfd_first(uint32_t cp); /* first code point of the canonical decomposition */
int tok_cp_is_cjk(uint32_t cp);         /* BERT's CJK ideograph blocks */

/* GPT-2's byte-level alphabet: byte -> code point, and back (-1 if cp is
 * not one of the 256). */
uint32_t tok_byte_to_cp(uint8_t b);
int tok_cp_to_byte(uint32_t cp);

/* Text as units: cp[i], cls[i] and byte offsets off[i] (off[n] = bytes). */
typedef struct tok_units {
  uint32_t *cp;  /* (n) */
  uint16_t *cls; /* (n) TOK_CL_* */
  size_t *off;   /* (n + 1) */
  size_t n, cap;
} tok_units;
FM_NODISCARD fm_status tok_units_decode(tok_units *u, const uint8_t *s, size_t n, fm_err *err);
void tok_units_clear(tok_units *u);

/* ---- a byte-string hash map (tok_common.c) ----
 * Keys are borrowed byte ranges plus a 32-bit tag (aux; the left length of
 * a BPE merge, else 0); values are int32. Open addressing, linear probing. */
typedef struct tok_entry {
  uint64_t h;
  const uint8_t *key;
  uint32_t len;
  uint32_t aux;
  int32_t val;
  int32_t used;
} tok_entry;
typedef struct tok_map {
  tok_entry *e; /* (cap) */
  size_t cap, n;
} tok_map;
FM_NODISCARD fm_status tok_map_init(tok_map *m, size_t n_expected, fm_err *err);
void tok_map_clear(tok_map *m);
/* Insert; an existing key keeps its value unless replace. */
void tok_map_put(tok_map *m, const uint8_t *key, size_t len, uint32_t aux, int32_t val, int replace);
int32_t tok_map_get(const tok_map *m, const uint8_t *key, size_t len, uint32_t aux); /* -1 absent */

/* ---- scratch of one tokenize call ---- */

/* A symbol of the merge loops: bytes [off, off + n) of the text being
 * merged (offsets from its first byte); n == 0 once merged into its left
 * neighbour. Merge loops run on at most INT32_MAX bytes at a time. */
typedef struct tok_sym {
  uint32_t off, n;
  int32_t prev, next;
} tok_sym;

/* A candidate merge of symbol `left` with symbol `right`, valid while their
 * lengths still sum to size. order = key << 32 | left: pairs pop by key,
 * then leftmost first (SentencePiece key: tok_score_key(score), so higher
 * scores first; BPE key: the merge rank). */
typedef struct tok_bigram {
  uint64_t order;
  uint32_t right, size;
} tok_bigram;
#define TOK_MAX_MERGE_BYTES ((size_t)INT32_MAX)

/* A key that sorts ascending as scores sort descending (NaN last). */
static inline uint32_t tok_score_key(float score) {
  float f = -score;
  uint32_t b;
  if (f != f) f = (float)1e38 * 10.0f; /* NaN: +inf */
  if (f == 0.0f) f = 0.0f;           /* -0 and +0 tie */
  memcpy(&b, &f, sizeof b);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

typedef struct tok_scratch {
  tok_units u;
  size_t *ends, *ends2; /* piece ends (unit indices) of the pre-tokenizer */
  size_t n_ends, n_ends2, cap_ends, cap_ends2;
  tok_sym *sym;
  size_t n_sym, cap_sym;
  tok_bigram *heap;
  size_t n_heap, cap_heap;
  uint8_t *buf; /* text rewritten for a model (escaped, lower-cased) */
  size_t n_buf, cap_buf;
} tok_scratch;
void tok_scratch_clear(tok_scratch *s);
FM_NODISCARD fm_status tok_reserve(void **p, size_t *cap, size_t need, size_t elem, fm_err *err);
FM_NODISCARD fm_status tok_buf_append(tok_scratch *s, const void *p, size_t n, fm_err *err);
FM_NODISCARD fm_status tok_sym_push(tok_scratch *s, uint32_t off, uint32_t n, fm_err *err);
FM_NODISCARD fm_status tok_heap_push(tok_scratch *s, tok_bigram b, fm_err *err);
tok_bigram tok_heap_pop(tok_scratch *s);
/* The key of merging adjacent symbols a (left) and b, both spans of bytes:
 * lower keys merge first (SentencePiece: tok_score_key of the merged
 * piece's score; BPE: the merge rank); -1 when the pair does not merge. */
typedef int64_t (*tok_pair_key_fn)(const fm_tok *t, const uint8_t *bytes, const tok_sym *a,
                                   const tok_sym *b);
/* Merge the linked symbols s->sym[0..n_sym) over bytes greedily: while some
 * adjacent pair has a key, merge the pair of lowest key, leftmost first
 * (stale candidates are skipped). Merged-away symbols are left with n == 0;
 * the survivors stay linked through next from symbol 0. */
FM_NODISCARD fm_status tok_merge_symbols(const fm_tok *t, tok_scratch *s, const uint8_t *bytes,
                                         tok_pair_key_fn key, fm_err *err);
FM_NODISCARD fm_status tok_push_id(fm_tok_ids *v, int32_t id, fm_err *err);

/* ---- BPE pre-tokenizers (tok_pre.c) ---- */
typedef enum tok_pre_stage {
  TOK_STAGE_END = 0,
  TOK_STAGE_GPT2,       /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
  TOK_STAGE_LLAMA3,     /* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
                           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
  TOK_STAGE_QWEN2,      /* the same with \p{N} single */
  TOK_STAGE_DIGIT,      /* \p{N} */
  TOK_STAGE_NEWLINE,    /* [\r\n] */
  TOK_STAGE_WS_LETTERS, /* \s?\p{L}+ */
  TOK_STAGE_WS_PUNCT,   /* \s?\p{P}+ */
  TOK_STAGE_DSC_CJK,    /* [一-龥ࠀ-一가-퟿]+ */
  TOK_STAGE_FALCON_P,   /* [\p{P}\$\+<=>\^~\|`]+ */
  TOK_STAGE_DIGITS3     /* [0-9][0-9][0-9] */
} tok_pre_stage;
#define TOK_MAX_STAGES 6

/* Split units [0, u->n) into pieces by the stages in order; each stage
 * splits every piece into its matches and the text between them. The piece
 * ends (unit indices, ascending, last == u->n) are left in s->ends. */
FM_NODISCARD fm_status tok_pretokenize(const tok_pre_stage *stages, tok_scratch *s, fm_err *err);

/* ---- the tokenizer ---- */
struct fm_tok {
  fm_tok_model model;
  char model_name[8];
  char pre_name[64];
  tok_pre_stage stages[TOK_MAX_STAGES]; /* BPE; TOK_STAGE_END-terminated */
  int32_t n_vocab;
  uint8_t *text;          /* stored texts, concatenated */
  size_t *text_off;       /* (n_vocab + 1) */
  uint8_t *piece;         /* detokenized bytes, concatenated */
  size_t *piece_off;      /* (n_vocab + 1) */
  uint8_t *key;           /* BPE: the lookup keys (decoded texts), concatenated */
  size_t *key_off;        /* (n_vocab + 1) */
  float *score;           /* (n_vocab) */
  uint8_t *type;          /* (n_vocab) fm_tok_type */
  tok_map vocab;          /* key bytes -> id (SPM/WPM: stored text; BPE: decoded) */
  tok_map stored;         /* BPE only: stored text -> id (fm_tok_find) */
  tok_map merges;         /* BPE: (left bytes + right bytes, left length) -> rank */
  uint8_t *merge_keys;    /* owns the merge key bytes */
  int32_t byte_id[256];   /* token of one byte (SPM: <0xNN>), or -1 */
  int32_t *special;       /* CONTROL/USER_DEFINED/UNKNOWN ids, longest text first */
  int32_t n_special;
  int32_t eog[FM_TOK_MAX_EOG]; /* fm_tok_eog_ids, ascending */
  int n_eog;
  size_t max_token_len;   /* bytes (WordPiece) */
  fm_tok_special sp;
};

/* Stored text of id. */
static inline const uint8_t *tok_text(const fm_tok *t, int32_t id, size_t *len) {
  *len = t->text_off[id + 1] - t->text_off[id];
  return t->text + t->text_off[id];
}

/* Model encoders: append the ids of one raw-text fragment. */
FM_NODISCARD fm_status tok_spm_encode(const fm_tok *t, tok_scratch *s, const uint8_t *text,
                                      size_t n, int prefix_space, fm_tok_ids *out, fm_err *err);
FM_NODISCARD fm_status tok_bpe_encode(const fm_tok *t, tok_scratch *s, const uint8_t *text,
                                      size_t n, fm_tok_ids *out, fm_err *err);
FM_NODISCARD fm_status tok_wpm_encode(const fm_tok *t, tok_scratch *s, const uint8_t *text,
                                      size_t n, fm_tok_ids *out, fm_err *err);

#endif
