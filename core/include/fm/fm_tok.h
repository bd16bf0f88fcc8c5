/* fm_tok.h: text tokenizers built from GGUF metadata (tokenizer.ggml.*):
 * SentencePiece as llama uses it (score-ordered merges with byte fallback),
 * GPT-2 byte-level BPE (merge ranks, with the pre-tokenizer selected by
 * tokenizer.ggml.pre) and WordPiece (BERT). Token ids are 0-based, exactly
 * the row numbers of tokenizer.ggml.tokens, as llama.cpp numbers them.
 *
 * Behaviour follows llama.cpp's tokenizer (release v0.4.0, node-llama-cpp
 * 3.21.1), which is the oracle: every case of the upstream test vectors in
 * ../shared/fixtures/gguf/vocab/ (core/tests/tok/tok/) gives the same ids.
 * Written from the algorithms' definitions: Sennrich et al. 2016 (BPE),
 * Radford et al. 2019 (byte-level BPE, GPT-2's pre-tokenizer pattern),
 * Kudo and Richardson 2018 (SentencePiece), Devlin et al. 2019 and Google's
 * BERT tokenization.py (WordPiece), and the pre-tokenizer patterns that
 * llama.cpp and Hugging Face tokenizers document for each tokenizer.ggml.pre.
 * The metadata keys read are listed at fm_tok_from_gguf.
 *
 * Text is bytes. Tokenizing: bytes that do not form well-formed UTF-8
 * (Unicode 15, table 3-7) never fail and never crash:
 *   - SentencePiece makes such a byte a piece of its own, which falls back
 *     to its <0xNN> byte token (llama.cpp splits by lead byte alone, so a
 *     bad lead byte can swallow the bytes of the next space mark), so every
 *     input byte survives;
 *   - byte-level BPE pre-tokenizes such a byte as one unit of its own,
 *     classed like U+FFFD (neither letter, number, punctuation nor space), and
 *     encodes the byte itself (llama.cpp substitutes U+FFFD's three bytes;
 *     on valid UTF-8 the two agree), so decoding gives the input back;
 *   - WordPiece drops such bytes, as it drops U+FFFD and control characters.
 * Detokenizing works on bytes: each token contributes its bytes (SentencePiece
 * and WordPiece: U+2581 becomes a space and <0xNN> the byte NN; BPE: GPT-2's
 * byte-to-unicode map reversed), so a UTF-8 character split across tokens is
 * reassembled by concatenation. Nothing checks or repairs the result's UTF-8.
 *
 * Special tokens: CONTROL and UNKNOWN tokens written in user text are plain
 * text unless FM_TOK_PARSE_SPECIAL is given; USER_DEFINED tokens (Hugging
 * Face's non-special "added tokens") are always matched first, longest text
 * first, as Hugging Face tokenizers and llama.cpp do.
 *
 * Ownership: an fm_tok owns copies of everything it needs; the fm_gguf it
 * was built from may be closed afterwards. Thread safety: an fm_tok is
 * immutable after construction; any number of threads may tokenize and
 * detokenize with it concurrently (each call allocates its own scratch). */
#ifndef FM_TOK_H
#define FM_TOK_H

#include "fm_base.h"
#include "fm_gguf.h"

typedef struct fm_tok fm_tok;

/* tokenizer.ggml.model */
typedef enum fm_tok_model {
  FM_TOK_MODEL_SPM = 1, /* "llama": SentencePiece, byte fallback */
  FM_TOK_MODEL_BPE = 2, /* "gpt2": byte-level BPE */
  FM_TOK_MODEL_WPM = 3  /* "bert": WordPiece */
} fm_tok_model;

/* tokenizer.ggml.token_type values (GGUF / llama.cpp numbering). */
typedef enum fm_tok_type {
  FM_TOK_TYPE_UNDEFINED = 0,
  FM_TOK_TYPE_NORMAL = 1,
  FM_TOK_TYPE_UNKNOWN = 2,
  FM_TOK_TYPE_CONTROL = 3,
  FM_TOK_TYPE_USER_DEFINED = 4,
  FM_TOK_TYPE_UNUSED = 5,
  FM_TOK_TYPE_BYTE = 6
} fm_tok_type;

/* fm_tok_tokenize flags */
#define FM_TOK_ADD_SPECIAL 1u   /* add BOS/CLS, EOS, SEP as the metadata says */
#define FM_TOK_PARSE_SPECIAL 2u /* CONTROL/UNKNOWN token texts in the input become their ids */
/* fm_tok_detokenize / fm_tok_token_bytes flags */
#define FM_TOK_RENDER_SPECIAL 4u /* CONTROL and UNKNOWN tokens give their text (else nothing) */
#define FM_TOK_STRIP_SPACE 8u    /* drop the space the tokenizer prefixed (see fm_tok_detokenize) */

/* "No such token" in the id fields below. */
#define FM_TOK_NONE (-1)
/* In fm_tok_def: "use the model's default". */
#define FM_TOK_DEFAULT (-2)

/* Special ids and the flags that decide what FM_TOK_ADD_SPECIAL adds.
 * Ids are FM_TOK_NONE when absent (or when the metadata names an id outside
 * [0, n_vocab), e.g. 4294967295). For WordPiece, bos is [CLS] and sep [SEP]. */
typedef struct fm_tok_special {
  int32_t bos, eos, eot, eom, unk, sep, pad, mask;
  int add_bos, add_eos, add_sep; /* 0/1 */
  int add_space_prefix;          /* SentencePiece: a space before the text (0/1) */
  int ignore_merges;             /* BPE: a pre-token that is a token is taken whole (llama3) */
} fm_tok_special;

/* A tokenizer description in memory: what fm_tok_from_gguf reads from the
 * metadata, usable directly (tests, fuzzing). Every pointer is borrowed for
 * the duration of fm_tok_new only.
 *   model        "llama", "gpt2" or "bert" (tokenizer.ggml.model)
 *   pre          tokenizer.ggml.pre; NULL or "" means "default" (BPE only)
 *   tokens       (n_vocab) token texts, token_lens their byte lengths
 *   scores       (n_vocab) SentencePiece scores, or NULL (all 0)
 *   types        (n_vocab) fm_tok_type values, or NULL (all NORMAL)
 *   merges       (n_merges) "left right" strings (BPE), merge_lens
 *   ids          bos..mask: an id, FM_TOK_NONE or FM_TOK_DEFAULT
 *   add_*        0, 1 or FM_TOK_DEFAULT */
typedef struct fm_tok_def {
  const char *model;
  const char *pre;
  int32_t n_vocab;
  const char *const *tokens;
  const size_t *token_lens;
  const float *scores;
  const int32_t *types;
  int64_t n_merges;
  const char *const *merges;
  const size_t *merge_lens;
  int32_t bos, eos, eot, eom, unk, sep, pad, mask;
  int add_bos, add_eos, add_sep, add_space_prefix;
} fm_tok_def;

/* Fill def with "nothing given": NULL arrays, every id and flag FM_TOK_DEFAULT. */
void fm_tok_def_init(fm_tok_def *def);

/* Build a tokenizer from a description.
 * Defaults (llama.cpp's): SentencePiece unk 0, bos 1, eos 2, add_bos 1,
 *   add_space_prefix 1; BPE no ids, add_bos 0 (1 for the llama3 family),
 *   add_space_prefix 0; WordPiece bos ([CLS]) 101, sep 102, unk 100, pad 0,
 *   mask 103, add_bos 1, add_sep 1. add_eos defaults to 0. eot: when not
 *   given, a CONTROL token named <|eot_id|>, <|im_end|>, <|end|>,
 *   <end_of_turn>, <|endoftext|>, <EOT> or <｜end▁of▁sentence｜>, if any.
 * Pre-tokenizers (BPE), by tokenizer.ggml.pre:
 *   GPT-2 pattern: default, gpt-2, gpt2, mpt, olmo, jais, phi-2, roberta-bpe,
 *     jina-v1-en, jina-v2-code, jina-v2-es, jina-v2-de, jina-es, jina-de,
 *     gigachat;
 *   \p{N} then GPT-2: starcoder, refact, command-r, smollm, codeshell,
 *     exaone, minerva-7b;
 *   llama3 pattern: llama3, llama-v3, llama-bpe, falcon3, falcon-h1,
 *     pixtral, lfm2 (whole pre-tokens first), dbrx, smaug-bpe;
 *   qwen2 pattern (single digits): qwen2, deepseek-r1-qwen, megrez, stablelm2;
 *   deepseek-coder; falcon.
 * Merges: split at the first space after their first byte, halves decoded
 *   from GPT-2's alphabet; a merge that does not split or decode can never
 *   apply and is ignored (as in llama.cpp). The first of duplicate merges
 *   ranks; of tokens with equal texts the last id wins.
 * Errors: FM_EARG (NULL def, out or token arrays, n_vocab < 1),
 *   FM_EUNSUPPORTED (a model other than llama/gpt2/bert, a pre-tokenizer not
 *   listed above), FM_ENOMEM.
 * Owns: *out is owned; free it with fm_tok_free. */
FM_NODISCARD fm_status fm_tok_new(const fm_tok_def *def, fm_tok **out, fm_err *err);

/* Build from a parsed GGUF's tokenizer.ggml.* keys: model, pre, tokens,
 * scores, token_type, merges, bos/eos/eot/eom/unknown/seperator/padding/
 * mask/cls _token_id, add_bos_token, add_eos_token, add_sep_token,
 * add_space_prefix.
 * Errors: FM_EUNSUPPORTED (no tokenizer.ggml.model, or a model other than
 *   llama/gpt2/bert, or an unknown pre-tokenizer), FM_EFORMAT (a key of the
 *   wrong type, arrays whose lengths differ from the token count), those of
 *   fm_tok_new. Messages name the key.
 * Owns: borrows g during the call only; *out is owned (fm_tok_free). */
FM_NODISCARD fm_status fm_tok_from_gguf(const fm_gguf *g, fm_tok **out, fm_err *err);

void fm_tok_free(fm_tok *t); /* NULL is allowed */

/* A growable list of token ids, owned by the caller: start it zeroed
 * (fm_tok_ids ids = {0}), release it with fm_tok_ids_clear. */
typedef struct fm_tok_ids {
  int32_t *ids; /* (n) token ids */
  int64_t n;
  int64_t cap;
} fm_tok_ids;
void fm_tok_ids_clear(fm_tok_ids *v);

/* Tokenize n_bytes bytes of text (no NUL needed; NULL allowed when n_bytes
 * is 0) and append the ids to *out.
 * flags: FM_TOK_ADD_SPECIAL, FM_TOK_PARSE_SPECIAL.
 * Empty text gives no ids (only BOS/EOS/SEP with FM_TOK_ADD_SPECIAL).
 * Errors: FM_EARG (NULL t or out), FM_ENOMEM; out keeps its earlier ids.
 * Owns: writes *out only. Safe to call concurrently. */
FM_NODISCARD fm_status fm_tok_tokenize(const fm_tok *t, const char *text, size_t n_bytes,
                                       unsigned flags, fm_tok_ids *out, fm_err *err);

/* The bytes one token contributes to detokenized output, for streaming.
 * *bytes points into t (borrowed while t lives) and *n_bytes may be 0
 * (CONTROL and UNKNOWN tokens without FM_TOK_RENDER_SPECIAL). USER_DEFINED
 * tokens give their text as stored; NORMAL tokens their decoded bytes.
 * FM_TOK_STRIP_SPACE is ignored here.
 * Errors: FM_EARG when id is outside [0, n_vocab). */
FM_NODISCARD fm_status fm_tok_token_bytes(const fm_tok *t, int32_t id, unsigned flags,
                                          const uint8_t **bytes, size_t *n_bytes, fm_err *err);

/* Concatenate the bytes of n tokens into buf (cap bytes; buf may be NULL
 * when cap is 0). *n_out receives the full length, also when it exceeds cap
 * (then only the first cap bytes are written): call with cap 0 to size.
 * flags: FM_TOK_RENDER_SPECIAL, FM_TOK_STRIP_SPACE. With FM_TOK_STRIP_SPACE
 * one leading space of the first token that gives any bytes is dropped when
 * the tokenizer prefixes a space (SentencePiece with add_space_prefix) or
 * marks word starts (WordPiece), as llama.cpp's detokenizer does; so
 * detokenize(tokenize(s)) == s for SentencePiece and byte-level BPE.
 * Errors: FM_EARG naming the position and value of an id outside
 *   [0, n_vocab). */
FM_NODISCARD fm_status fm_tok_detokenize(const fm_tok *t, const int32_t *ids, int64_t n,
                                         unsigned flags, uint8_t *buf, size_t cap,
                                         size_t *n_out, fm_err *err);

/* Queries. Ids outside [0, n_vocab) give FM_TOK_TYPE_UNDEFINED, 0, "". */
int32_t fm_tok_n_vocab(const fm_tok *t);
fm_tok_model fm_tok_model_type(const fm_tok *t);
const char *fm_tok_model_name(const fm_tok *t); /* "llama", "gpt2", "bert" */
const char *fm_tok_pre_name(const fm_tok *t);   /* tokenizer.ggml.pre as given, or "default" */
const fm_tok_special *fm_tok_specials(const fm_tok *t);
fm_tok_type fm_tok_token_type(const fm_tok *t, int32_t id);
float fm_tok_token_score(const fm_tok *t, int32_t id);
/* The token's text as stored in the vocabulary (not NUL-terminated). */
const char *fm_tok_token_text(const fm_tok *t, int32_t id, size_t *n_bytes);
/* Id of the token whose stored text is exactly these bytes, or FM_TOK_NONE. */
int32_t fm_tok_find(const fm_tok *t, const char *text, size_t n_bytes);
/* End of generation: the one rule of which tokens end generation, for a
 * tokenizer and so for a model (a model's are its tokenizer's: Rllm's
 * model$info$eog and rllm_generate()'s stop list are these ids).
 * The ids, without repeats:
 *   - eos, eot and eom as fm_tok_specials gives them: the metadata's
 *     tokenizer.ggml.eos_token_id, eot_token_id and eom_token_id when in
 *     [0, n_vocab), else fm_tok_new's defaults (SentencePiece eos 2; an
 *     eot not given is the first of the tokens below, <|eom_id|> aside);
 *   - every CONTROL token whose text is an end-of-turn name: <|eot_id|>,
 *     <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, <EOT>,
 *     <｜end▁of▁sentence｜>, <|eom_id|>, <|end_of_text|>.
 * Source: llama.cpp's vocabulary loading (llama_vocab's special_eog_ids and
 * llama_vocab_is_eog; read, not copied). llama.cpp also counts a token of
 * those names that the vocabulary does not mark CONTROL (and makes it
 * one), and its later versions the fill-in-the-middle pad, repo and
 * separator tokens; neither is done here. */

/* The most end-of-generation ids a tokenizer has. */
#define FM_TOK_MAX_EOG 16

/* The end-of-generation ids of t (the rule above), ascending: *ids points
 * into t (valid while t lives) and the count is returned; t NULL gives 0
 * and *ids NULL. */
int fm_tok_eog_ids(const fm_tok *t, const int32_t **ids);

/* Nonzero when id is one of fm_tok_eog_ids(t). */
int fm_tok_is_eog(const fm_tok *t, int32_t id);

#endif
