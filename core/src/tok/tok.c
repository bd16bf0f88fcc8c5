/* tok.c: the tokenizer (fm_tok.h): building one from a description or from
 * GGUF metadata, special-token partitioning, the tokenize entry point that
 * dispatches to the encoders (tok_spm.c, tok_bpe.c, tok_wpm.c), detokenizing
 * and queries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_impl.h"

/* ---- construction ---- */

void fm_tok_def_init(fm_tok_def *def) {
  if (!def) return;
  memset(def, 0, sizeof *def);
  def->bos = def->eos = def->eot = def->eom = def->unk = def->sep = def->pad = def->mask = FM_TOK_DEFAULT;
  def->add_bos = def->add_eos = def->add_sep = def->add_space_prefix = FM_TOK_DEFAULT;
}

typedef struct pre_entry {
  const char *name;
  tok_pre_stage stages[TOK_MAX_STAGES];
  int ignore_merges; /* also: add BOS by default */
} pre_entry;

static const pre_entry pre_table[] = {
    {"default", {TOK_STAGE_GPT2}, 0},
    {"gpt-2", {TOK_STAGE_GPT2}, 0},
    {"gpt2", {TOK_STAGE_GPT2}, 0},
    {"mpt", {TOK_STAGE_GPT2}, 0},
    {"olmo", {TOK_STAGE_GPT2}, 0},
    {"jais", {TOK_STAGE_GPT2}, 0},
    {"phi-2", {TOK_STAGE_GPT2}, 0},
    {"roberta-bpe", {TOK_STAGE_GPT2}, 0},
    {"jina-v1-en", {TOK_STAGE_GPT2}, 0},
    {"jina-v2-code", {TOK_STAGE_GPT2}, 0},
    {"jina-v2-es", {TOK_STAGE_GPT2}, 0},
    {"jina-v2-de", {TOK_STAGE_GPT2}, 0},
    {"jina-es", {TOK_STAGE_GPT2}, 0},
    {"jina-de", {TOK_STAGE_GPT2}, 0},
    {"gigachat", {TOK_STAGE_GPT2}, 0},
    {"starcoder", {TOK_STAGE_DIGIT, TOK_STAGE_GPT2}, 0},
    {"refact", {TOK_STAGE_DIGIT, TOK_STAGE_GPT2}, 0},
    {"command-r", {TOK_STAGE_DIGIT, TOK_STAGE_GPT2}, 0},
    {"smollm", {TOK_STAGE_DIGIT, TOK_STAGE_GPT2}, 0},
    {"codeshell", {TOK_STAGE_DIGIT, TOK_STAGE_GPT2}, 0},
    {"exaone", {TOK_STAGE_DIGIT, TOK_STAGE_GPT2}, 0},
    {"minerva-7b", {TOK_STAGE_DIGIT, TOK_STAGE_GPT2}, 0},
    {"llama3", {TOK_STAGE_LLAMA3}, 1},
    {"llama-v3", {TOK_STAGE_LLAMA3}, 1},
    {"llama-bpe", {TOK_STAGE_LLAMA3}, 1},
    {"falcon3", {TOK_STAGE_LLAMA3}, 1},
    {"falcon-h1", {TOK_STAGE_LLAMA3}, 1},
    {"pixtral", {TOK_STAGE_LLAMA3}, 1},
    {"lfm2", {TOK_STAGE_LLAMA3}, 1},
    {"dbrx", {TOK_STAGE_LLAMA3}, 0},
    {"smaug-bpe", {TOK_STAGE_LLAMA3}, 0},
    {"qwen2", {TOK_STAGE_QWEN2}, 0},
    {"deepseek-r1-qwen", {TOK_STAGE_QWEN2}, 0},
    {"megrez", {TOK_STAGE_QWEN2}, 0},
    {"stablelm2", {TOK_STAGE_QWEN2}, 0},
    {"deepseek-coder",
     {TOK_STAGE_NEWLINE, TOK_STAGE_WS_LETTERS, TOK_STAGE_WS_PUNCT, TOK_STAGE_DSC_CJK, TOK_STAGE_DIGIT}, 0},
    {"falcon", {TOK_STAGE_FALCON_P, TOK_STAGE_GPT2, TOK_STAGE_DIGITS3}, 0},
};

/* Decode GPT-2 byte-level text into raw bytes (dst has room for n bytes).
 * Returns the length, or -1 when a character is not one of the 256. */
static int64_t gpt2_decode(const uint8_t *src, size_t n, uint8_t *dst) {
  size_t i = 0, k = 0;
  while (i < n) {
    uint32_t cp;
    i += tok_utf8_next(src + i, n - i, &cp);
    int b = tok_cp_to_byte(cp);
    if (b < 0) return -1;
    dst[k++] = (uint8_t)b;
  }
  return (int64_t)k;
}

static const uint8_t SPM_SPACE[3] = {0xE2, 0x96, 0x81}; /* U+2581 */

/* Bytes a token contributes when detokenized, written to dst (room for
 * len bytes; none of the rewrites grows the text). */
static size_t piece_of(fm_tok_model model, int type, const uint8_t *s, size_t len, uint8_t *dst) {
  if (type == FM_TOK_TYPE_USER_DEFINED || type == FM_TOK_TYPE_CONTROL || type == FM_TOK_TYPE_UNKNOWN) {
    memcpy(dst, s, len);
    return len;
  }
  if (model == FM_TOK_MODEL_BPE) {
    int64_t k = gpt2_decode(s, len, dst);
    if (k >= 0) return (size_t)k;
    memcpy(dst, s, len);
    return len;
  }
  if (type == FM_TOK_TYPE_BYTE && len == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>') {
    unsigned v = 0;
    int ok = 1;
    for (int i = 3; i < 5; i++) {
      uint8_t c = s[i];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
      else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
      else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
      else ok = 0;
    }
    if (ok) {
      dst[0] = (uint8_t)v;
      return 1;
    }
  }
  size_t k = 0;
  for (size_t i = 0; i < len;) {
    if (i + 3 <= len && memcmp(s + i, SPM_SPACE, 3) == 0) {
      dst[k++] = ' ';
      i += 3;
    } else {
      dst[k++] = s[i++];
    }
  }
  return k;
}

static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int32_t id_or_none(int32_t v, int32_t dflt, int32_t n_vocab) {
  int32_t id = v == FM_TOK_DEFAULT ? dflt : v;
  return id >= 0 && id < n_vocab ? id : FM_TOK_NONE;
}

static int flag_or(int v, int dflt) { return v == FM_TOK_DEFAULT ? dflt : v != 0; }

/* End-of-turn tokens of common chat templates (texts as stored). */
static const char *const eot_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>",
    ("<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"), "<|eom_id|>", "<|end_of_text|>"};

/* Insert id into the ascending end-of-generation list (fm_tok.h's rule
 * adds at most 12 ids, below FM_TOK_MAX_EOG). */
static void add_eog(fm_tok *t, int32_t id) {
  if (id < 0 || t->n_eog == FM_TOK_MAX_EOG) return;
  int i = t->n_eog;
  while (i > 0 && t->eog[i - 1] > id) i--;
  if (i > 0 && t->eog[i - 1] == id) return;
  memmove(t->eog + i + 1, t->eog + i, (size_t)(t->n_eog - i) * sizeof t->eog[0]);
  t->eog[i] = id;
  t->n_eog++;
}

fm_status fm_tok_new(const fm_tok_def *d, fm_tok **out, fm_err *err) {
  fm_status st = FM_OK;
  fm_tok *t = NULL;
  if (out) *out = NULL;
  if (!d || !out) return fm_err_set(err, FM_EARG, "fm_tok_new: NULL description or output");
  if (d->n_vocab < 1 || !d->tokens || !d->token_lens)
    return fm_err_set(err, FM_EARG, "fm_tok_new: the vocabulary is empty (%d tokens)", (int)d->n_vocab);
  if (d->n_merges > 0 && (!d->merges || !d->merge_lens))
    return fm_err_set(err, FM_EARG, "fm_tok_new: %lld merges but no merge strings", (long long)d->n_merges);
  fm_tok_model model;
  const char *mname = d->model ? d->model : "";
  if (strcmp(mname, "llama") == 0) model = FM_TOK_MODEL_SPM;
  else if (strcmp(mname, "gpt2") == 0) model = FM_TOK_MODEL_BPE;
  else if (strcmp(mname, "bert") == 0) model = FM_TOK_MODEL_WPM;
  else
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "tokenizer model '%.60s' is not supported (expected llama, gpt2 or bert)", mname);
  const char *pre = d->pre && d->pre[0] ? d->pre : "default";
  const pre_entry *pe = NULL;
  if (model == FM_TOK_MODEL_BPE) {
    for (size_t i = 0; i < sizeof pre_table / sizeof pre_table[0]; i++)
      if (strcmp(pre_table[i].name, pre) == 0) pe = &pre_table[i];
    if (!pe)
      return fm_err_set(err, FM_EUNSUPPORTED, "BPE pre-tokenizer '%.60s' (tokenizer.ggml.pre) is not supported",
                        pre);
  }

  int32_t n = d->n_vocab;
  t = calloc(1, sizeof *t);
  if (!t) return fm_err_set(err, FM_ENOMEM, "tokenizer: out of memory");
  t->model = model;
  snprintf(t->model_name, sizeof t->model_name, "%s", mname);
  snprintf(t->pre_name, sizeof t->pre_name, "%s", pre);
  if (pe)
    for (int i = 0; i < TOK_MAX_STAGES; i++) t->stages[i] = pe->stages[i];
  t->n_vocab = n;

  size_t total = 0;
  for (int32_t i = 0; i < n; i++) {
    if (!d->tokens[i] && d->token_lens[i]) {
      st = fm_err_set(err, FM_EARG, "fm_tok_new: token %d has no text", (int)i);
      goto fail;
    }
    if (total + d->token_lens[i] < total) {
      st = fm_err_set(err, FM_ENOMEM, "tokenizer: token texts too large");
      goto fail;
    }
    total += d->token_lens[i];
  }
  t->text = malloc(total + 1);
  t->piece = malloc(total + 1);
  t->text_off = malloc(((size_t)n + 1) * sizeof *t->text_off);
  t->piece_off = malloc(((size_t)n + 1) * sizeof *t->piece_off);
  t->score = malloc((size_t)n * sizeof *t->score);
  t->type = malloc((size_t)n);
  if (!t->text || !t->piece || !t->text_off || !t->piece_off || !t->score || !t->type) {
    st = fm_err_set(err, FM_ENOMEM, "tokenizer: out of memory for %d tokens", (int)n);
    goto fail;
  }
  size_t off = 0, poff = 0;
  for (int32_t i = 0; i < n; i++) {
    size_t len = d->token_lens[i];
    if (len) memcpy(t->text + off, d->tokens[i], len);
    t->text_off[i] = off;
    int ty = d->types ? d->types[i] : FM_TOK_TYPE_NORMAL;
    if (ty < 0 || ty > FM_TOK_TYPE_BYTE) ty = FM_TOK_TYPE_UNDEFINED;
    t->type[i] = (uint8_t)ty;
    t->score[i] = d->scores ? d->scores[i] : 0.0f;
    t->piece_off[i] = poff;
    poff += piece_of(model, ty, t->text + off, len, t->piece + poff);
    off += len;
    if (len > t->max_token_len) t->max_token_len = len;
  }
  t->text_off[n] = off;
  t->piece_off[n] = poff;

  /* Lookup keys. BPE: the decoded bytes; a token whose text is not in
   * GPT-2's alphabet can never come out of a byte-level word and gets no
   * key. Equal keys: the last id wins, as in llama.cpp. */
  if ((st = tok_map_init(&t->vocab, (size_t)n, err))) goto fail;
  if (model == FM_TOK_MODEL_BPE) {
    t->key = malloc(total + 1);
    t->key_off = malloc(((size_t)n + 1) * sizeof *t->key_off);
    if (!t->key || !t->key_off) {
      st = fm_err_set(err, FM_ENOMEM, "tokenizer: out of memory for %d keys", (int)n);
      goto fail;
    }
    if ((st = tok_map_init(&t->stored, (size_t)n, err))) goto fail;
    size_t koff = 0;
    for (int32_t i = 0; i < n; i++) {
      size_t len;
      const uint8_t *s = tok_text(t, i, &len);
      t->key_off[i] = koff;
      int64_t k = gpt2_decode(s, len, t->key + koff);
      if (k >= 0) {
        tok_map_put(&t->vocab, t->key + koff, (size_t)k, 0, i, 1);
        koff += (size_t)k;
      }
      tok_map_put(&t->stored, s, len, 0, i, 1);
    }
    t->key_off[n] = koff;
  } else {
    for (int32_t i = 0; i < n; i++) {
      size_t len;
      const uint8_t *s = tok_text(t, i, &len);
      tok_map_put(&t->vocab, s, len, 0, i, 1);
    }
  }

  /* BPE merges: (left bytes + right bytes, left length) -> rank. */
  if (model == FM_TOK_MODEL_BPE && d->n_merges > 0) {
    size_t mtotal = 0;
    for (int64_t i = 0; i < d->n_merges; i++) mtotal += d->merge_lens[i];
    t->merge_keys = malloc(mtotal + 1);
    if (!t->merge_keys) {
      st = fm_err_set(err, FM_ENOMEM, "tokenizer: out of memory for %lld merges", (long long)d->n_merges);
      goto fail;
    }
    if ((st = tok_map_init(&t->merges, (size_t)d->n_merges, err))) goto fail;
    size_t moff = 0;
    for (int64_t i = 0; i < d->n_merges && i < INT32_MAX; i++) {
      const uint8_t *s = (const uint8_t *)d->merges[i];
      size_t len = d->merge_lens[i], sp = 1;
      if (!s) continue;
      while (sp < len && s[sp] != ' ') sp++;
      if (sp >= len) continue;
      int64_t a = gpt2_decode(s, sp, t->merge_keys + moff);
      if (a < 0) continue;
      int64_t b = gpt2_decode(s + sp + 1, len - sp - 1, t->merge_keys + moff + a);
      if (b < 0) continue;
      tok_map_put(&t->merges, t->merge_keys + moff, (size_t)(a + b), (uint32_t)a, (int32_t)i, 0);
      moff += (size_t)(a + b);
    }
  }

  /* One token per byte: SentencePiece's <0xNN> tokens (else a token that is
   * that byte), BPE's single-byte tokens. */
  for (int b = 0; b < 256; b++) {
    uint8_t c = (uint8_t)b;
    t->byte_id[b] = tok_map_get(&t->vocab, &c, 1, 0);
  }
  if (model == FM_TOK_MODEL_SPM) {
    for (int32_t i = 0; i < n; i++) {
      if (t->type[i] != FM_TOK_TYPE_BYTE) continue;
      size_t plen = t->piece_off[i + 1] - t->piece_off[i];
      size_t tlen = t->text_off[i + 1] - t->text_off[i];
      if (plen == 1 && tlen == 6) t->byte_id[t->piece[t->piece_off[i]]] = i;
    }
  }

  /* Special tokens, longest text first (then lower id). */
  t->special = malloc((size_t)n * sizeof *t->special);
  if (!t->special) {
    st = fm_err_set(err, FM_ENOMEM, "tokenizer: out of memory");
    goto fail;
  }
  {
    /* sort keys: (2^32 - 1 - length) << 32 | id, ascending */
    uint64_t *keys = malloc((size_t)n * sizeof *keys);
    if (!keys) {
      st = fm_err_set(err, FM_ENOMEM, "tokenizer: out of memory");
      goto fail;
    }
    size_t m = 0;
    for (int32_t i = 0; i < n; i++) {
      int ty = t->type[i];
      size_t len = t->text_off[i + 1] - t->text_off[i];
      if ((ty == FM_TOK_TYPE_CONTROL || ty == FM_TOK_TYPE_USER_DEFINED || ty == FM_TOK_TYPE_UNKNOWN) && len > 0 &&
          len < UINT32_MAX)
        keys[m++] = ((uint64_t)(UINT32_MAX - (uint32_t)len) << 32) | (uint32_t)i;
    }
    qsort(keys, m, sizeof *keys, u64_cmp);
    for (size_t i = 0; i < m; i++) t->special[i] = (int32_t)(keys[i] & UINT32_MAX);
    t->n_special = (int32_t)m;
    free(keys);
  }

  /* Special ids and flags. */
  fm_tok_special *sp = &t->sp;
  switch (model) {
  case FM_TOK_MODEL_SPM:
    sp->unk = id_or_none(d->unk, 0, n);
    sp->bos = id_or_none(d->bos, 1, n);
    sp->eos = id_or_none(d->eos, 2, n);
    sp->add_bos = flag_or(d->add_bos, 1);
    sp->add_space_prefix = flag_or(d->add_space_prefix, 1);
    sp->sep = id_or_none(d->sep, FM_TOK_NONE, n);
    sp->pad = id_or_none(d->pad, FM_TOK_NONE, n);
    sp->mask = id_or_none(d->mask, FM_TOK_NONE, n);
    sp->add_sep = flag_or(d->add_sep, 0);
    break;
  case FM_TOK_MODEL_BPE:
    sp->unk = id_or_none(d->unk, FM_TOK_NONE, n);
    sp->bos = id_or_none(d->bos, FM_TOK_NONE, n);
    sp->eos = id_or_none(d->eos, FM_TOK_NONE, n);
    sp->ignore_merges = pe->ignore_merges;
    sp->add_bos = flag_or(d->add_bos, pe->ignore_merges);
    sp->add_space_prefix = flag_or(d->add_space_prefix, 0);
    sp->sep = id_or_none(d->sep, FM_TOK_NONE, n);
    sp->pad = id_or_none(d->pad, FM_TOK_NONE, n);
    sp->mask = id_or_none(d->mask, FM_TOK_NONE, n);
    sp->add_sep = flag_or(d->add_sep, 0);
    break;
  case FM_TOK_MODEL_WPM:
    sp->unk = id_or_none(d->unk, 100, n);
    sp->bos = id_or_none(d->bos, 101, n);
    sp->eos = id_or_none(d->eos, FM_TOK_NONE, n);
    sp->sep = id_or_none(d->sep, 102, n);
    sp->pad = id_or_none(d->pad, 0, n);
    sp->mask = id_or_none(d->mask, 103, n);
    sp->add_bos = flag_or(d->add_bos, 1);
    sp->add_sep = flag_or(d->add_sep, 1);
    sp->add_space_prefix = flag_or(d->add_space_prefix, 0);
    break;
  }
  sp->add_eos = flag_or(d->add_eos, 0);
  sp->eom = id_or_none(d->eom, FM_TOK_NONE, n);
  sp->eot = id_or_none(d->eot, FM_TOK_NONE, n);
  for (size_t k = 0; k < sizeof eot_texts / sizeof eot_texts[0]; k++) {
    int32_t id = tok_map_get(model == FM_TOK_MODEL_BPE ? &t->stored : &t->vocab, (const uint8_t *)eot_texts[k],
                             strlen(eot_texts[k]), 0);
    if (id < 0 || t->type[id] != FM_TOK_TYPE_CONTROL) continue;
    if (sp->eot == FM_TOK_NONE && strcmp(eot_texts[k], "<|eom_id|>") != 0) sp->eot = id;
    add_eog(t, id);
  }
  add_eog(t, sp->eos);
  add_eog(t, sp->eot);
  add_eog(t, sp->eom);
  *out = t;
  return FM_OK;
fail:
  fm_tok_free(t);
  return st;
}

void fm_tok_free(fm_tok *t) {
  if (!t) return;
  free(t->text);
  free(t->text_off);
  free(t->piece);
  free(t->piece_off);
  free(t->key);
  free(t->key_off);
  free(t->score);
  free(t->type);
  tok_map_clear(&t->vocab);
  tok_map_clear(&t->stored);
  tok_map_clear(&t->merges);
  free(t->merge_keys);
  free(t->special);
  free(t);
}

/* ---- from GGUF ---- */

static const fm_gguf_kv *find(const fm_gguf *g, const char *key) {
  int64_t i = fm_gguf_find_kv(g, key);
  return i < 0 ? NULL : fm_gguf_kv_at(g, i);
}

static fm_status get_string(const fm_gguf *g, const char *key, char *buf, size_t cap, int *found, fm_err *err) {
  const fm_gguf_kv *kv = find(g, key);
  *found = 0;
  buf[0] = 0;
  if (!kv) return FM_OK;
  const char *s;
  size_t len;
  if (kv->type != FM_GGUF_STRING || fm_gguf_get_str(kv, 0, &s, &len))
    return fm_err_set(err, FM_EFORMAT, "GGUF key %s should be a string, found type %s", key,
                      fm_gguf_vtype_name(kv->type));
  if (len >= cap) len = cap - 1;
  memcpy(buf, s, len);
  buf[len] = 0;
  *found = 1;
  return FM_OK;
}

static fm_status get_id(const fm_gguf *g, const char *key, int32_t n_vocab, int32_t *out, fm_err *err) {
  const fm_gguf_kv *kv = find(g, key);
  if (!kv) return FM_OK; /* keep the default */
  int64_t v;
  uint64_t u;
  if (kv->type == FM_GGUF_ARRAY || kv->type == FM_GGUF_STRING || kv->type == FM_GGUF_F32 ||
      kv->type == FM_GGUF_F64 || kv->type == FM_GGUF_BOOL)
    return fm_err_set(err, FM_EFORMAT, "GGUF key %s should be an integer token id, found type %s", key,
                      fm_gguf_vtype_name(kv->type));
  if (fm_gguf_get_i64(kv, 0, &v) == 0) {
    *out = v >= 0 && v < n_vocab ? (int32_t)v : FM_TOK_NONE;
  } else if (fm_gguf_get_u64(kv, 0, &u) == 0) {
    *out = u < (uint64_t)n_vocab ? (int32_t)u : FM_TOK_NONE;
  } else {
    *out = FM_TOK_NONE;
  }
  return FM_OK;
}

static fm_status get_flag(const fm_gguf *g, const char *key, int *out, fm_err *err) {
  const fm_gguf_kv *kv = find(g, key);
  if (!kv) return FM_OK;
  int64_t v;
  if (kv->type == FM_GGUF_ARRAY || kv->type == FM_GGUF_STRING || fm_gguf_get_i64(kv, 0, &v))
    return fm_err_set(err, FM_EFORMAT, "GGUF key %s should be a bool, found type %s", key,
                      fm_gguf_vtype_name(kv->type));
  *out = v != 0;
  return FM_OK;
}

static fm_status get_array(const fm_gguf *g, const char *key, int want_string, const fm_gguf_kv **out,
                           fm_err *err) {
  const fm_gguf_kv *kv = find(g, key);
  *out = NULL;
  if (!kv) return FM_OK;
  int ok = kv->type == FM_GGUF_ARRAY &&
           (want_string ? kv->elem_type == FM_GGUF_STRING
                        : (kv->elem_type != FM_GGUF_STRING && kv->elem_type != FM_GGUF_ARRAY));
  if (!ok)
    return fm_err_set(err, FM_EFORMAT, "GGUF key %s should be an array of %s, found %s%s%s", key,
                      want_string ? "strings" : "numbers", fm_gguf_vtype_name(kv->type),
                      kv->type == FM_GGUF_ARRAY ? " of " : "",
                      kv->type == FM_GGUF_ARRAY ? fm_gguf_vtype_name(kv->elem_type) : "");
  *out = kv;
  return FM_OK;
}

fm_status fm_tok_from_gguf(const fm_gguf *g, fm_tok **out, fm_err *err) {
  fm_status st = FM_OK;
  const char **toks = NULL, **merges = NULL;
  size_t *tok_lens = NULL, *merge_lens = NULL;
  float *scores = NULL;
  int32_t *types = NULL;
  if (out) *out = NULL;
  if (!g || !out) return fm_err_set(err, FM_EARG, "fm_tok_from_gguf: NULL file or output");
  char model[32], pre[64];
  int has_model, has_pre;
  if ((st = get_string(g, "tokenizer.ggml.model", model, sizeof model, &has_model, err))) return st;
  if (!has_model)
    return fm_err_set(err, FM_EUNSUPPORTED, "the GGUF file has no tokenizer (no key tokenizer.ggml.model)");
  if ((st = get_string(g, "tokenizer.ggml.pre", pre, sizeof pre, &has_pre, err))) return st;
  if (strcmp(model, "no") == 0 || strcmp(model, "none") == 0)
    return fm_err_set(err, FM_EUNSUPPORTED, "the GGUF file declares no tokenizer (tokenizer.ggml.model '%s')", model);
  if (strcmp(model, "llama") && strcmp(model, "gpt2") && strcmp(model, "bert"))
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "tokenizer.ggml.model '%s' is not supported (expected llama, gpt2 or bert)", model);

  const fm_gguf_kv *ktok, *kscore, *ktype, *kmerge;
  if ((st = get_array(g, "tokenizer.ggml.tokens", 1, &ktok, err))) return st;
  if (!ktok) return fm_err_set(err, FM_EFORMAT, "the GGUF file has tokenizer.ggml.model but no tokenizer.ggml.tokens");
  if (ktok->n < 1 || ktok->n > INT32_MAX)
    return fm_err_set(err, FM_EFORMAT, "tokenizer.ggml.tokens has %llu tokens (expected 1 to 2^31 - 1)",
                      (unsigned long long)ktok->n);
  int32_t n = (int32_t)ktok->n;
  if ((st = get_array(g, "tokenizer.ggml.scores", 0, &kscore, err))) return st;
  if ((st = get_array(g, "tokenizer.ggml.token_type", 0, &ktype, err))) return st;
  if ((st = get_array(g, "tokenizer.ggml.merges", 1, &kmerge, err))) return st;
  if (kscore && kscore->n != ktok->n)
    return fm_err_set(err, FM_EFORMAT, "tokenizer.ggml.scores has %llu values for %d tokens",
                      (unsigned long long)kscore->n, (int)n);
  if (ktype && ktype->n != ktok->n)
    return fm_err_set(err, FM_EFORMAT, "tokenizer.ggml.token_type has %llu values for %d tokens",
                      (unsigned long long)ktype->n, (int)n);

  fm_tok_def d;
  fm_tok_def_init(&d);
  d.model = model;
  d.pre = has_pre ? pre : NULL;
  d.n_vocab = n;
  toks = malloc((size_t)n * sizeof *toks);
  tok_lens = malloc((size_t)n * sizeof *tok_lens);
  if (!toks || !tok_lens) {
    st = fm_err_set(err, FM_ENOMEM, "tokenizer: out of memory for %d tokens", (int)n);
    goto done;
  }
  for (int32_t i = 0; i < n; i++) {
    if (fm_gguf_get_str(ktok, (uint64_t)i, &toks[i], &tok_lens[i])) {
      st = fm_err_set(err, FM_EFORMAT, "tokenizer.ggml.tokens: token %d cannot be read", (int)i);
      goto done;
    }
  }
  d.tokens = toks;
  d.token_lens = tok_lens;
  if (kscore) {
    scores = malloc((size_t)n * sizeof *scores);
    if (!scores) {
      st = fm_err_set(err, FM_ENOMEM, "tokenizer: out of memory");
      goto done;
    }
    for (int32_t i = 0; i < n; i++) {
      double v;
      if (fm_gguf_get_f64(kscore, (uint64_t)i, &v)) {
        st = fm_err_set(err, FM_EFORMAT, "tokenizer.ggml.scores: value %d is not a number", (int)i);
        goto done;
      }
      scores[i] = (float)v;
    }
    d.scores = scores;
  }
  if (ktype) {
    types = malloc((size_t)n * sizeof *types);
    if (!types) {
      st = fm_err_set(err, FM_ENOMEM, "tokenizer: out of memory");
      goto done;
    }
    for (int32_t i = 0; i < n; i++) {
      int64_t v;
      if (fm_gguf_get_i64(ktype, (uint64_t)i, &v)) {
        st = fm_err_set(err, FM_EFORMAT, "tokenizer.ggml.token_type: value %d is not an integer", (int)i);
        goto done;
      }
      types[i] = v >= 0 && v <= FM_TOK_TYPE_BYTE ? (int32_t)v : FM_TOK_TYPE_UNDEFINED;
    }
    d.types = types;
  }
  if (kmerge && kmerge->n > 0) {
    if (kmerge->n > (uint64_t)INT32_MAX) {
      st = fm_err_set(err, FM_EFORMAT, "tokenizer.ggml.merges has %llu merges (at most 2^31 - 1)",
                      (unsigned long long)kmerge->n);
      goto done;
    }
    merges = malloc((size_t)kmerge->n * sizeof *merges);
    merge_lens = malloc((size_t)kmerge->n * sizeof *merge_lens);
    if (!merges || !merge_lens) {
      st = fm_err_set(err, FM_ENOMEM, "tokenizer: out of memory for %llu merges", (unsigned long long)kmerge->n);
      goto done;
    }
    for (uint64_t i = 0; i < kmerge->n; i++) {
      if (fm_gguf_get_str(kmerge, i, &merges[i], &merge_lens[i])) {
        st = fm_err_set(err, FM_EFORMAT, "tokenizer.ggml.merges: merge %llu cannot be read", (unsigned long long)i);
        goto done;
      }
    }
    d.n_merges = (int64_t)kmerge->n;
    d.merges = merges;
    d.merge_lens = merge_lens;
  }
  if ((st = get_id(g, "tokenizer.ggml.bos_token_id", n, &d.bos, err)) ||
      (st = get_id(g, "tokenizer.ggml.eos_token_id", n, &d.eos, err)) ||
      (st = get_id(g, "tokenizer.ggml.eot_token_id", n, &d.eot, err)) ||
      (st = get_id(g, "tokenizer.ggml.eom_token_id", n, &d.eom, err)) ||
      (st = get_id(g, "tokenizer.ggml.unknown_token_id", n, &d.unk, err)) ||
      (st = get_id(g, "tokenizer.ggml.seperator_token_id", n, &d.sep, err)) ||
      (st = get_id(g, "tokenizer.ggml.padding_token_id", n, &d.pad, err)) ||
      (st = get_id(g, "tokenizer.ggml.mask_token_id", n, &d.mask, err)))
    goto done;
  if (d.bos == FM_TOK_DEFAULT && (st = get_id(g, "tokenizer.ggml.cls_token_id", n, &d.bos, err))) goto done;
  if ((st = get_flag(g, "tokenizer.ggml.add_bos_token", &d.add_bos, err)) ||
      (st = get_flag(g, "tokenizer.ggml.add_eos_token", &d.add_eos, err)) ||
      (st = get_flag(g, "tokenizer.ggml.add_sep_token", &d.add_sep, err)) ||
      (st = get_flag(g, "tokenizer.ggml.add_space_prefix", &d.add_space_prefix, err)))
    goto done;
  st = fm_tok_new(&d, out, err);
done:
  free(toks);
  free(tok_lens);
  free(scores);
  free(types);
  free(merges);
  free(merge_lens);
  return st;
}

/* ---- tokenize ---- */

typedef struct frag {
  size_t off, len;
  int32_t id; /* -1: raw text */
} frag;

typedef struct frags {
  frag *v;
  size_t n, cap;
} frags;

static fm_status frag_push(frags *f, size_t off, size_t len, int32_t id, fm_err *err) {
  fm_status st = tok_reserve((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v, err);
  if (st) return st;
  f->v[f->n++] = (frag){off, len, id};
  return FM_OK;
}

static const uint8_t *find_bytes(const uint8_t *h, size_t hn, const uint8_t *nd, size_t nn) {
  if (nn == 0 || nn > hn) return NULL;
  const uint8_t *end = h + (hn - nn) + 1;
  while (h < end) {
    const uint8_t *p = memchr(h, nd[0], (size_t)(end - h));
    if (!p) return NULL;
    if (memcmp(p, nd, nn) == 0) return p;
    h = p + 1;
  }
  return NULL;
}

/* Split raw fragments at every special token, longest text first: each
 * token takes its leftmost non-overlapping occurrences in the fragments
 * left by the longer ones (llama.cpp's partitioning). */
static fm_status partition(const fm_tok *t, const uint8_t *text, size_t n, int parse_special, frags *a,
                           frags *b, fm_err *err) {
  fm_status st;
  a->n = 0;
  if ((st = frag_push(a, 0, n, -1, err))) return st;
  for (int32_t k = 0; k < t->n_special; k++) {
    int32_t id = t->special[k];
    int ty = t->type[id];
    if (!parse_special && ty != FM_TOK_TYPE_USER_DEFINED) continue;
    size_t len;
    const uint8_t *s = tok_text(t, id, &len);
    if (!find_bytes(text, n, s, len)) continue;
    b->n = 0;
    for (size_t i = 0; i < a->n; i++) {
      frag f = a->v[i];
      if (f.id >= 0) {
        if ((st = frag_push(b, f.off, f.len, f.id, err))) return st;
        continue;
      }
      size_t pos = f.off, end = f.off + f.len;
      const uint8_t *p;
      while ((p = find_bytes(text + pos, end - pos, s, len)) != NULL) {
        size_t at = (size_t)(p - text);
        if (at > pos && (st = frag_push(b, pos, at - pos, -1, err))) return st;
        if ((st = frag_push(b, at, len, id, err))) return st;
        pos = at + len;
      }
      if (pos < end && (st = frag_push(b, pos, end - pos, -1, err))) return st;
    }
    frags tmp = *a;
    *a = *b;
    *b = tmp;
  }
  return FM_OK;
}

fm_status fm_tok_tokenize(const fm_tok *t, const char *text, size_t n_bytes, unsigned flags, fm_tok_ids *out,
                          fm_err *err) {
  if (!t || !out) return fm_err_set(err, FM_EARG, "fm_tok_tokenize: NULL tokenizer or output");
  if (!text && n_bytes) return fm_err_set(err, FM_EARG, "fm_tok_tokenize: NULL text of %zu bytes", n_bytes);
  const uint8_t *s = (const uint8_t *)text;
  int64_t n0 = out->n;
  fm_status st = FM_OK;
  tok_scratch sc;
  memset(&sc, 0, sizeof sc);
  frags fa = {0}, fb = {0};
  const fm_tok_special *sp = &t->sp;
  int add = (flags & FM_TOK_ADD_SPECIAL) != 0;

  if (n_bytes && (st = partition(t, s, n_bytes, (flags & FM_TOK_PARSE_SPECIAL) != 0, &fa, &fb, err))) goto done;
  if (add && sp->add_bos && sp->bos >= 0 && (st = tok_push_id(out, sp->bos, err))) goto done;
  int prev_special = 1; /* SentencePiece: a space before text at the start or after a special token */
  for (size_t i = 0; i < fa.n; i++) {
    frag f = fa.v[i];
    if (f.id >= 0) {
      if ((st = tok_push_id(out, f.id, err))) goto done;
      prev_special = 1;
      continue;
    }
    switch (t->model) {
    case FM_TOK_MODEL_SPM:
      st = tok_spm_encode(t, &sc, s + f.off, f.len, sp->add_space_prefix && prev_special, out, err);
      break;
    case FM_TOK_MODEL_BPE: st = tok_bpe_encode(t, &sc, s + f.off, f.len, out, err); break;
    case FM_TOK_MODEL_WPM: st = tok_wpm_encode(t, &sc, s + f.off, f.len, out, err); break;
    }
    if (st) goto done;
    prev_special = 0;
  }
  if (add && sp->add_sep && sp->sep >= 0 && (st = tok_push_id(out, sp->sep, err))) goto done;
  if (add && sp->add_eos && sp->eos >= 0 && (st = tok_push_id(out, sp->eos, err))) goto done;
done:
  if (st) out->n = n0;
  tok_scratch_clear(&sc);
  free(fa.v);
  free(fb.v);
  return st;
}

/* ---- detokenize ---- */

static int renders(const fm_tok *t, int32_t id, unsigned flags) {
  int ty = t->type[id];
  if (ty == FM_TOK_TYPE_CONTROL || ty == FM_TOK_TYPE_UNKNOWN) return (flags & FM_TOK_RENDER_SPECIAL) != 0;
  return 1;
}

fm_status fm_tok_token_bytes(const fm_tok *t, int32_t id, unsigned flags, const uint8_t **bytes, size_t *n_bytes,
                             fm_err *err) {
  if (bytes) *bytes = NULL;
  if (n_bytes) *n_bytes = 0;
  if (!t || !bytes || !n_bytes) return fm_err_set(err, FM_EARG, "fm_tok_token_bytes: NULL argument");
  if (id < 0 || id >= t->n_vocab)
    return fm_err_set(err, FM_EARG, "token id %d is outside the vocabulary [0, %d)", (int)id, (int)t->n_vocab);
  *bytes = t->piece + t->piece_off[id];
  *n_bytes = renders(t, id, flags) ? t->piece_off[id + 1] - t->piece_off[id] : 0;
  return FM_OK;
}

fm_status fm_tok_detokenize(const fm_tok *t, const int32_t *ids, int64_t n, unsigned flags, uint8_t *buf,
                            size_t cap, size_t *n_out, fm_err *err) {
  if (n_out) *n_out = 0;
  if (!t || !n_out || (n > 0 && !ids) || n < 0 || (cap && !buf))
    return fm_err_set(err, FM_EARG, "fm_tok_detokenize: NULL or negative argument");
  int strip = (flags & FM_TOK_STRIP_SPACE) &&
              ((t->model == FM_TOK_MODEL_SPM && t->sp.add_space_prefix) || t->model == FM_TOK_MODEL_WPM);
  size_t k = 0;
  for (int64_t i = 0; i < n; i++) {
    int32_t id = ids[i];
    if (id < 0 || id >= t->n_vocab)
      return fm_err_set(err, FM_EARG, "token %lld has id %d, outside the vocabulary [0, %d)", (long long)i + 1,
                        (int)id, (int)t->n_vocab);
    if (!renders(t, id, flags)) continue;
    const uint8_t *p = t->piece + t->piece_off[id];
    size_t len = t->piece_off[id + 1] - t->piece_off[id];
    if (len == 0) continue;
    if (strip) {
      strip = 0;
      if (p[0] == ' ') {
        p++;
        len--;
      }
    }
    if (k < cap) memcpy(buf + k, p, len < cap - k ? len : cap - k);
    k += len;
  }
  *n_out = k;
  return FM_OK;
}

/* ---- queries ---- */

void fm_tok_ids_clear(fm_tok_ids *v) {
  if (!v) return;
  free(v->ids);
  v->ids = NULL;
  v->n = v->cap = 0;
}

int32_t fm_tok_n_vocab(const fm_tok *t) { return t ? t->n_vocab : 0; }
fm_tok_model fm_tok_model_type(const fm_tok *t) { return t->model; }
const char *fm_tok_model_name(const fm_tok *t) { return t->model_name; }
const char *fm_tok_pre_name(const fm_tok *t) { return t->pre_name; }
const fm_tok_special *fm_tok_specials(const fm_tok *t) { return &t->sp; }

fm_tok_type fm_tok_token_type(const fm_tok *t, int32_t id) {
  return id >= 0 && id < t->n_vocab ? (fm_tok_type)t->type[id] : FM_TOK_TYPE_UNDEFINED;
}

float fm_tok_token_score(const fm_tok *t, int32_t id) {
  return id >= 0 && id < t->n_vocab ? t->score[id] : 0.0f;
}

const char *fm_tok_token_text(const fm_tok *t, int32_t id, size_t *n_bytes) {
  size_t len = 0;
  const char *s = "";
  if (id >= 0 && id < t->n_vocab) s = (const char *)tok_text(t, id, &len);
  if (n_bytes) *n_bytes = len;
  return s;
}

int32_t fm_tok_find(const fm_tok *t, const char *text, size_t n_bytes) {
  if (!t || (!text && n_bytes)) return FM_TOK_NONE;
  const tok_map *m = t->model == FM_TOK_MODEL_BPE ? &t->stored : &t->vocab;
  int32_t id = tok_map_get(m, (const uint8_t *)(text ? text : ""), n_bytes, 0);
  return id >= 0 ? id : FM_TOK_NONE;
}

int fm_tok_eog_ids(const fm_tok *t, const int32_t **ids) {
  if (ids) *ids = t ? t->eog : NULL;
  return t ? t->n_eog : 0;
}

int fm_tok_is_eog(const fm_tok *t, int32_t id) {
  if (!t || id < 0) return 0;
  for (int i = 0; i < t->n_eog; i++)
    if (t->eog[i] == id) return 1;
  return 0;
}
