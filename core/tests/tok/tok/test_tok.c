/* Tests of the tokenizer (fm_tok.h).
 * Oracle: llama.cpp's upstream tokenizer test vectors in
 * ../shared/fixtures/gguf/vocab/ (ggml-vocab-<name>.gguf with .inp/.out:
 * 46 cases each, tokenized with add_special = false, parse_special = false),
 * which node-llama-cpp 3.21.1 (llama.cpp v0.4.0) reproduces; plus small
 * vocabularies built here with values worked out by hand. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fm/fm_gguf.h"
#include "fm/fm_tok.h"
#include "fm_test.h"
#include "fm_test_files.h"

static char fixdir[1024];
static int have_fixtures;

static fm_tok *open_vocab(const char *name) {
  char path[1200];
  snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", fixdir, name);
  fm_err err;
  fm_gguf *g = NULL;
  fm_tok *t = NULL;
  CHECK_OK(fm_gguf_open(path, &g, &err), &err);
  if (!g) return NULL;
  CHECK_OK(fm_tok_from_gguf(g, &t, &err), &err);
  fm_gguf_close(g); /* the tokenizer keeps its own copies */
  return t;
}

static int ids_equal(const fm_tok_ids *v, const int32_t *want, int64_t n) {
  if (v->n != n) return 0;
  for (int64_t i = 0; i < n; i++)
    if (v->ids[i] != want[i]) return 0;
  return 1;
}

static void print_ids(const char *what, const int32_t *ids, int64_t n) {
  fprintf(stderr, "  %s:", what);
  for (int64_t i = 0; i < n; i++) fprintf(stderr, " %d", (int)ids[i]);
  fprintf(stderr, "\n");
}

/* Detokenize with flags into a fresh buffer; *len its length. */
static uint8_t *detok(const fm_tok *t, const int32_t *ids, int64_t n, unsigned flags, size_t *len) {
  fm_err err;
  size_t need = 0;
  CHECK_OK(fm_tok_detokenize(t, ids, n, flags, NULL, 0, &need, &err), &err);
  uint8_t *buf = malloc(need + 1);
  size_t got = 0;
  CHECK_OK(fm_tok_detokenize(t, ids, n, flags, buf, need, &got, &err), &err);
  CHECK(got == need);
  *len = need;
  return buf;
}

/* All 46 cases of one vocabulary; returns how many matched. Round trips:
 * SentencePiece and byte-level BPE are lossless on these texts. */
static int run_vectors(const char *name, int lossless) {
  char path[1200];
  size_t n_inp, n_out;
  snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf.inp", fixdir, name);
  char *inp = fm_test_read_file(path, &n_inp);
  snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf.out", fixdir, name);
  char *outp = fm_test_read_file(path, &n_out);
  fm_tok *t = open_vocab(name);
  CHECK(inp && outp && t);
  if (!inp || !outp || !t) {
    free(inp);
    free(outp);
    fm_tok_free(t);
    return 0;
  }
  const char *sep = "\n__ggml_vocab_test__\n";
  size_t sep_len = strlen(sep);
  char *p = inp, *end = inp + n_inp, *line = outp;
  int n_cases = 0, n_pass = 0, n_round = 0;
  int32_t want[512];
  fm_tok_ids got = {0};
  while (p < end) {
    char *q = strstr(p, sep);
    size_t len = q ? (size_t)(q - p) : (size_t)(end - p);
    /* the file ends with a separator: no case after it */
    char *nl = strchr(line, '\n');
    if (!nl) nl = line + strlen(line);
    int64_t n_want = 0;
    for (char *r = line; r < nl;) {
      char *e;
      long v = strtol(r, &e, 10);
      if (e == r) break;
      if (n_want < 512) want[n_want++] = (int32_t)v;
      r = e;
    }
    fm_err err;
    got.n = 0;
    CHECK_OK(fm_tok_tokenize(t, p, len, 0, &got, &err), &err);
    n_cases++;
    if (ids_equal(&got, want, n_want)) {
      n_pass++;
    } else {
      fprintf(stderr, "%s case %d '%.*s':\n", name, n_cases, (int)len, p);
      print_ids("want", want, n_want);
      print_ids("got ", got.ids, got.n);
    }
    if (lossless) {
      size_t blen;
      uint8_t *back = detok(t, got.ids, got.n, FM_TOK_STRIP_SPACE, &blen);
      if (blen == len && memcmp(back, p, len) == 0) n_round++;
      else fprintf(stderr, "%s case %d: round trip gave '%.*s'\n", name, n_cases, (int)blen, (char *)back);
      free(back);
    }
    line = *nl ? nl + 1 : nl;
    if (!q) break;
    p = q + sep_len;
  }
  CHECK(n_cases == 46);
  CHECK(n_pass == n_cases);
  if (lossless) CHECK(n_round == n_cases);
  printf("%s: %d/%d cases match llama.cpp%s\n", name, n_pass, n_cases, lossless ? ", all round-trip" : "");
  fm_tok_ids_clear(&got);
  fm_tok_free(t);
  free(inp);
  free(outp);
  return n_pass;
}

static int total_pass;

static void test_vectors_llama_spm(void) {
  if (have_fixtures) total_pass += run_vectors("llama-spm", 1);
}
static void test_vectors_gpt2(void) {
  if (have_fixtures) total_pass += run_vectors("gpt-2", 1);
}
static void test_vectors_deepseek_coder(void) {
  if (have_fixtures) total_pass += run_vectors("deepseek-coder", 1);
}
static void test_vectors_falcon(void) {
  if (have_fixtures) total_pass += run_vectors("falcon", 1);
}
static void test_vectors_bert(void) {
  if (have_fixtures) total_pass += run_vectors("bert-bge", 0);
}

/* Specials, flags and metadata of the real vocabularies. */
static void test_vocab_specials(void) {
  if (!have_fixtures) return;
  fm_err err;
  fm_tok_ids v = {0};
  fm_tok *t = open_vocab("llama-spm");
  if (t) {
    const fm_tok_special *sp = fm_tok_specials(t);
    CHECK(fm_tok_model_type(t) == FM_TOK_MODEL_SPM);
    CHECK(fm_tok_n_vocab(t) == 32000);
    CHECK(sp->bos == 1 && sp->eos == 2 && sp->unk == 0 && sp->add_bos == 1 && sp->add_eos == 0);
    CHECK(fm_tok_is_eog(t, 2) && !fm_tok_is_eog(t, 1));
    const int32_t *eog;
    CHECK(fm_tok_eog_ids(t, &eog) == 1 && eog[0] == 2); /* </s> */
    /* "Hello world" with BOS: 1 15043 3186 (the test vector plus BOS) */
    CHECK_OK(fm_tok_tokenize(t, "Hello world", 11, FM_TOK_ADD_SPECIAL, &v, &err), &err);
    int32_t w1[] = {1, 15043, 3186};
    CHECK(ids_equal(&v, w1, 3));
    /* "<s>" as text vs parsed; a space prefix follows a special token */
    v.n = 0;
    CHECK_OK(fm_tok_tokenize(t, "<s>Hi", 5, 0, &v, &err), &err);
    CHECK(v.n > 2);
    for (int64_t i = 0; i < v.n; i++) CHECK(v.ids[i] != 1);
    v.n = 0;
    CHECK_OK(fm_tok_tokenize(t, "<s>Hi", 5, FM_TOK_PARSE_SPECIAL, &v, &err), &err);
    fm_tok_ids w = {0};
    CHECK_OK(fm_tok_tokenize(t, "Hi", 2, 0, &w, &err), &err);
    CHECK(v.n == w.n + 1 && v.ids[0] == 1 && memcmp(v.ids + 1, w.ids, (size_t)w.n * 4) == 0);
    /* control tokens are dropped unless rendered */
    size_t len;
    uint8_t *s = detok(t, v.ids, v.n, FM_TOK_STRIP_SPACE, &len);
    CHECK(len == 2 && memcmp(s, "Hi", 2) == 0);
    free(s);
    s = detok(t, v.ids, v.n, FM_TOK_RENDER_SPECIAL, &len);
    CHECK(len == 6 && memcmp(s, "<s> Hi", 6) == 0);
    free(s);
    fm_tok_ids_clear(&w);
    /* "é" absent from this piece of text: a character the vocabulary has as
     * a token still tokenizes whole; 𝄞 (U+1D11E, F0 9D 84 9E) is not a
     * token: four byte tokens <0xF0> <0x9D> <0x84> <0x9E> = ids 243 160 135 161 */
    v.n = 0;
    CHECK_OK(fm_tok_tokenize(t, "\xF0\x9D\x84\x9E", 4, 0, &v, &err), &err);
    int32_t w2[] = {29871, 243, 160, 135, 161};
    CHECK(ids_equal(&v, w2, 5));
    if (!ids_equal(&v, w2, 5)) print_ids("got", v.ids, v.n);
    /* streaming: each byte token gives one byte; concatenated they are the character */
    const uint8_t *b;
    size_t nb;
    CHECK_OK(fm_tok_token_bytes(t, 243, 0, &b, &nb, &err), &err);
    CHECK(nb == 1 && b[0] == 0xF0);
    s = detok(t, v.ids + 1, 2, 0, &len);
    CHECK(len == 2 && s[0] == 0xF0 && s[1] == 0x9D);
    free(s);
    s = detok(t, v.ids, v.n, FM_TOK_STRIP_SPACE, &len);
    CHECK(len == 4 && memcmp(s, "\xF0\x9D\x84\x9E", 4) == 0);
    free(s);
    /* ill-formed UTF-8 falls back to byte tokens and round-trips */
    v.n = 0;
    const char bad[] = "a\xC3(\xFF\xED\xA0\x80z\xE2\x82";
    CHECK_OK(fm_tok_tokenize(t, bad, sizeof bad - 1, 0, &v, &err), &err);
    s = detok(t, v.ids, v.n, FM_TOK_STRIP_SPACE, &len);
    CHECK(len == sizeof bad - 1 && memcmp(s, bad, len) == 0);
    free(s);
    /* ids outside the vocabulary */
    int32_t badid[] = {5, 32000};
    size_t need;
    CHECK(fm_tok_detokenize(t, badid, 2, 0, NULL, 0, &need, &err) == FM_EARG);
    CHECK(strstr(err.msg, "32000") != NULL);
    CHECK(fm_tok_token_bytes(t, -1, 0, &b, &nb, &err) == FM_EARG);
    fm_tok_free(t);
  }
  t = open_vocab("gpt-2");
  if (t) {
    const fm_tok_special *sp = fm_tok_specials(t);
    CHECK(fm_tok_model_type(t) == FM_TOK_MODEL_BPE && strcmp(fm_tok_pre_name(t), "gpt-2") == 0);
    CHECK(sp->bos == 50256 && sp->eos == 50256 && sp->add_bos == 0);
    CHECK(fm_tok_find(t, "<|endoftext|>", 13) == 50256);
    const int32_t *eog;
    CHECK(fm_tok_eog_ids(t, &eog) == 1 && eog[0] == 50256); /* eos, and named like an end of turn */
    CHECK(fm_tok_find(t, "\xC4\xA0the", 5) == 262); /* stored text "Ġthe" */
    const char *txt = "a<|endoftext|>b";
    v.n = 0;
    CHECK_OK(fm_tok_tokenize(t, txt, strlen(txt), 0, &v, &err), &err);
    for (int64_t i = 0; i < v.n; i++) CHECK(v.ids[i] != 50256);
    v.n = 0;
    CHECK_OK(fm_tok_tokenize(t, txt, strlen(txt), FM_TOK_PARSE_SPECIAL, &v, &err), &err);
    int32_t w[] = {64, 50256, 65};
    CHECK(ids_equal(&v, w, 3));
    /* 🦙 (F0 9F A6 99) is not a token in GPT-2: its bytes spread over
     * several tokens, none holding the whole character; concatenated they
     * give it back */
    v.n = 0;
    CHECK_OK(fm_tok_tokenize(t, "\xF0\x9F\xA6\x99", 4, 0, &v, &err), &err);
    CHECK(v.n >= 2);
    {
      uint8_t cat[8];
      size_t k = 0;
      for (int64_t i = 0; i < v.n; i++) {
        const uint8_t *bi;
        size_t ni;
        CHECK_OK(fm_tok_token_bytes(t, v.ids[i], 0, &bi, &ni, &err), &err);
        CHECK(ni >= 1 && ni < 4);
        if (k + ni <= sizeof cat) memcpy(cat + k, bi, ni);
        k += ni;
      }
      CHECK(k == 4 && memcmp(cat, "\xF0\x9F\xA6\x99", 4) == 0);
    }
    /* ill-formed UTF-8 round-trips through byte-level BPE */
    v.n = 0;
    const char bad[] = "x\x80\xC0\xAF y\xF5";
    CHECK_OK(fm_tok_tokenize(t, bad, sizeof bad - 1, 0, &v, &err), &err);
    size_t len;
    uint8_t *s = detok(t, v.ids, v.n, 0, &len);
    CHECK(len == sizeof bad - 1 && memcmp(s, bad, len) == 0);
    free(s);
    fm_tok_free(t);
  }
  t = open_vocab("bert-bge");
  if (t) {
    const fm_tok_special *sp = fm_tok_specials(t);
    CHECK(fm_tok_model_type(t) == FM_TOK_MODEL_WPM);
    CHECK(sp->bos == 101 && sp->sep == 102 && sp->unk == 100 && sp->add_bos && sp->add_sep);
    v.n = 0;
    CHECK_OK(fm_tok_tokenize(t, "Hello world", 11, FM_TOK_ADD_SPECIAL, &v, &err), &err);
    int32_t w[] = {101, 7592, 2088, 102};
    CHECK(ids_equal(&v, w, 4));
    size_t len;
    uint8_t *s = detok(t, v.ids, v.n, FM_TOK_STRIP_SPACE, &len);
    CHECK(len == 11 && memcmp(s, "hello world", 11) == 0);
    free(s);
    s = detok(t, v.ids, v.n, FM_TOK_STRIP_SPACE | FM_TOK_RENDER_SPECIAL, &len);
    CHECK(len == 22 && memcmp(s, "[CLS] hello world[SEP]", 22) == 0);
    free(s);
    /* [SEP] written in text: punctuation-split text by default, the token when parsed */
    v.n = 0;
    CHECK_OK(fm_tok_tokenize(t, "a [SEP] b", 9, 0, &v, &err), &err);
    int32_t w2[] = {1037, 1031, 19802, 1033, 1038};
    CHECK(ids_equal(&v, w2, 5));
    v.n = 0;
    CHECK_OK(fm_tok_tokenize(t, "a [SEP] b", 9, FM_TOK_PARSE_SPECIAL, &v, &err), &err);
    int32_t w3[] = {1037, 102, 1038};
    CHECK(ids_equal(&v, w3, 3));
    fm_tok_free(t);
  }
  fm_tok_ids_clear(&v);
}

/* ---- small vocabularies with hand-worked answers ---- */

static fm_tok *make(const char *model, const char *pre, const char *const *toks, int n, const float *scores,
                    const int32_t *types, const char *const *merges, int n_merges, fm_tok_def *extra) {
  size_t lens[64], mlens[64];
  for (int i = 0; i < n; i++) lens[i] = strlen(toks[i]);
  for (int i = 0; i < n_merges; i++) mlens[i] = strlen(merges[i]);
  fm_tok_def d;
  if (extra) d = *extra;
  else fm_tok_def_init(&d);
  d.model = model;
  d.pre = pre;
  d.n_vocab = n;
  d.tokens = toks;
  d.token_lens = lens;
  d.scores = scores;
  d.types = types;
  d.n_merges = n_merges;
  d.merges = merges;
  d.merge_lens = mlens;
  fm_tok *t = NULL;
  fm_err err;
  CHECK_OK(fm_tok_new(&d, &t, &err), &err);
  return t;
}

static void tokenize_str(const fm_tok *t, const char *s, unsigned flags, fm_tok_ids *v) {
  fm_err err;
  v->n = 0;
  CHECK_OK(fm_tok_tokenize(t, s, strlen(s), flags, v, &err), &err);
}

/* SentencePiece: the highest-scoring pair merges first, ties leftmost;
 * pieces outside the vocabulary fall back to bytes, or to <unk>. */
static void test_spm_small(void) {
  const char *toks[] = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "c", "ab", "bc",
                        ("\xE2\x96\x81" "a"), "abc", "<0x61>", "<0xC3>", "<0xA9>", "<0x20>"};
  /*                      0       1      2      3 (▁)        4    5    6    7     8
   *                      9 (▁a)  10     11     12           13        14 */
  float sc[] = {0, 0, 0, -5, -1, -1, -1, -2, -1.5f, -3, -4, 0, 0, 0, 0};
  int32_t ty[] = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6, 6, 6, 6};
  fm_tok *t = make("llama", NULL, toks, 15, sc, ty, NULL, 0, NULL);
  if (!t) return;
  fm_tok_ids v = {0};
  /* "abc" -> ▁abc: pairs ▁a(-3) ab(-2) bc(-1.5): bc first; then ▁a(-3) vs
   * a+bc="abc"(-4): ▁a; then ▁a+bc is no token: [▁a, bc] */
  tokenize_str(t, "abc", 0, &v);
  int32_t w1[] = {9, 8};
  CHECK(ids_equal(&v, w1, 2));
  /* equal scores, leftmost first: "bcbc" -> ▁ b c b c; bc(-1.5) twice: left
   * one first, then the right one; ▁+bc no token; "bcbc" no token */
  tokenize_str(t, "bcbc", 0, &v);
  int32_t w2[] = {3, 8, 8};
  CHECK(ids_equal(&v, w2, 3));
  /* "é" (C3 A9) is not a token: byte tokens 12 13 */
  tokenize_str(t, "\xC3\xA9", 0, &v);
  int32_t w3[] = {3, 12, 13};
  CHECK(ids_equal(&v, w3, 3));
  /* "d" has no byte token: <unk> */
  tokenize_str(t, "d", 0, &v);
  int32_t w4[] = {3, 0};
  CHECK(ids_equal(&v, w4, 2));
  /* BOS by default; EOS when asked; "</s>" as text is not EOS */
  tokenize_str(t, "a", FM_TOK_ADD_SPECIAL, &v);
  int32_t w5[] = {1, 9};
  CHECK(ids_equal(&v, w5, 2));
  tokenize_str(t, "", FM_TOK_ADD_SPECIAL, &v);
  CHECK(v.n == 1 && v.ids[0] == 1);
  tokenize_str(t, "", 0, &v);
  CHECK(v.n == 0);
  tokenize_str(t, "a</s>", FM_TOK_PARSE_SPECIAL, &v);
  int32_t w6[] = {9, 2};
  CHECK(ids_equal(&v, w6, 2));
  tokenize_str(t, "</s>a", FM_TOK_PARSE_SPECIAL, &v);
  int32_t w7[] = {2, 9}; /* a space prefix after a special token */
  CHECK(ids_equal(&v, w7, 2));
  fm_tok_free(t);

  fm_tok_def d;
  fm_tok_def_init(&d);
  d.add_eos = 1;
  d.add_bos = 0;
  d.add_space_prefix = 0;
  t = make("llama", NULL, toks, 15, sc, ty, NULL, 0, &d);
  if (t) {
    tokenize_str(t, "abc", FM_TOK_ADD_SPECIAL, &v);
    /* no prefix: a b c; bc (-1.5) before ab (-2); then a+bc = abc (-4) */
    int32_t w8[] = {10, 2};
    CHECK(ids_equal(&v, w8, 2));
    fm_tok_free(t);
  }
  fm_tok_ids_clear(&v);
}

/* Byte-level BPE with merge ranks, GPT-2 pre-tokenizer. */
static void test_bpe_small(void) {
  /* bytes needed: ' ' is "Ġ" (C4 A0) in GPT-2's alphabet */
  const char *toks[] = {"a", "b", "c", "\xC4\xA0", "ab", "bc", ("\xC4\xA0" "a"), "abc", "<|end|>", "\xC3\xA9", "X"};
  /*                     0    1    2    3 (Ġ)      4     5     6 (Ġa)          7      8          9 (é)      10 */
  const char *merges[] = {"b c", "a b", "\xC4\xA0 a", "a bc"};
  int32_t ty[] = {1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 4};
  fm_tok *t = make("gpt2", "gpt-2", toks, 11, NULL, ty, merges, 4, NULL);
  if (!t) return;
  fm_tok_ids v = {0};
  /* "abc": b c (rank 0) first -> a bc -> rank 3 "a bc" -> abc */
  tokenize_str(t, "abc", 0, &v);
  int32_t w1[] = {7};
  CHECK(ids_equal(&v, w1, 1));
  /* "ab ab": words "ab", " ab"; " ab": Ġ a (rank 2) vs a b (rank 1): ab first,
   * then Ġ+ab is no merge -> [Ġ, ab] */
  tokenize_str(t, "ab ab", 0, &v);
  int32_t w2[] = {4, 3, 4};
  CHECK(ids_equal(&v, w2, 3));
  /* "X" is a USER_DEFINED token: always matched, even without parse_special */
  tokenize_str(t, "aXa", 0, &v);
  int32_t w3[] = {0, 10, 0};
  CHECK(ids_equal(&v, w3, 3));
  /* "<|end|>" is CONTROL: text unless parsed; the bytes of a CONTROL token
   * are dropped when detokenizing unless rendered */
  tokenize_str(t, "a<|end|>", FM_TOK_PARSE_SPECIAL, &v);
  int32_t w4[] = {0, 8};
  CHECK(ids_equal(&v, w4, 2));
  CHECK(fm_tok_is_eog(t, 8)); /* named like an end-of-turn token */
  size_t len;
  uint8_t *s = detok(t, v.ids, v.n, 0, &len);
  CHECK(len == 1 && s[0] == 'a');
  free(s);
  s = detok(t, v.ids, v.n, FM_TOK_RENDER_SPECIAL, &len);
  CHECK(len == 8 && memcmp(s, "a<|end|>", 8) == 0);
  free(s);
  /* a token's bytes: "Ġa" is " a"; "é" stored as "Ã©" is C3 A9 */
  const uint8_t *b;
  fm_err err;
  CHECK_OK(fm_tok_token_bytes(t, 6, 0, &b, &len, &err), &err);
  CHECK(len == 2 && memcmp(b, " a", 2) == 0);
  CHECK_OK(fm_tok_token_bytes(t, 9, 0, &b, &len, &err), &err);
  CHECK(len == 1 && b[0] == 0xE9);
  fm_tok_free(t);
  fm_tok_ids_clear(&v);
}

/* The scanners themselves: tokens of whole pieces make piece boundaries
 * visible (a vocabulary holding exactly the expected pieces, ignore_merges
 * via the llama3 family, else merges that build each piece). */
static int split_as(const char *pre, const char *text, const char *const *want, int n_want) {
  /* tokens: the wanted pieces in GPT-2's alphabet, taken whole through
   * merges "prefix char" built for each piece */
  enum { MAXT = 256 };
  static char buf[MAXT][64];
  const char *toks[MAXT];
  size_t lens[MAXT];
  const char *merges[MAXT];
  size_t mlens[MAXT];
  static char mbuf[MAXT][140];
  int nt = 0, nm = 0;
  for (int i = 0; i < n_want; i++) {
    /* encode the piece byte by byte into the GPT-2 alphabet */
    const uint8_t *p = (const uint8_t *)want[i];
    size_t plen = strlen(want[i]);
    char enc[64];
    size_t elen = 0, cut[32], nc = 0;
    for (size_t j = 0; j < plen; j++) {
      unsigned b = p[j];
      int pr = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      uint32_t cp = b;
      if (!pr) {
        uint32_t k = 0;
        for (unsigned x = 0; x < b; x++)
          if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF))) k++;
        cp = 256 + k;
      }
      if (cp < 0x80) enc[elen++] = (char)cp;
      else {
        enc[elen++] = (char)(0xC0 | (cp >> 6));
        enc[elen++] = (char)(0x80 | (cp & 0x3F));
      }
      cut[nc++] = elen;
    }
    /* tokens: every prefix; merges: prefix + next char */
    for (size_t c = 0; c < nc; c++) {
      size_t from = c ? cut[c - 1] : 0;
      memcpy(buf[nt], enc, cut[c]);
      buf[nt][cut[c]] = 0;
      toks[nt] = buf[nt];
      lens[nt] = cut[c];
      nt++;
      if (c) {
        size_t a = from;
        memcpy(mbuf[nm], enc, a);
        mbuf[nm][a] = ' ';
        memcpy(mbuf[nm] + a + 1, enc + from, cut[c] - from);
        merges[nm] = mbuf[nm];
        mlens[nm] = a + 1 + cut[c] - from;
        nm++;
      }
    }
  }
  fm_tok_def d;
  fm_tok_def_init(&d);
  d.model = "gpt2";
  d.pre = pre;
  d.n_vocab = nt;
  d.tokens = toks;
  d.token_lens = lens;
  d.n_merges = nm;
  d.merges = merges;
  d.merge_lens = mlens;
  fm_tok *t = NULL;
  fm_err err;
  CHECK_OK(fm_tok_new(&d, &t, &err), &err);
  if (!t) return 0;
  fm_tok_ids v = {0};
  CHECK_OK(fm_tok_tokenize(t, text, strlen(text), 0, &v, &err), &err);
  int ok = v.n == n_want;
  for (int64_t i = 0; ok && i < v.n; i++) {
    size_t len;
    const uint8_t *b;
    CHECK_OK(fm_tok_token_bytes(t, v.ids[i], 0, &b, &len, &err), &err);
    if (len != strlen(want[i]) || memcmp(b, want[i], len) != 0) ok = 0;
  }
  if (!ok) {
    fprintf(stderr, "pre %s on '%s': got %lld pieces:", pre, text, (long long)v.n);
    for (int64_t i = 0; i < v.n; i++) {
      size_t len;
      const uint8_t *b;
      if (fm_tok_token_bytes(t, v.ids[i], 0, &b, &len, &err) == FM_OK) fprintf(stderr, " [%.*s]", (int)len, b);
    }
    fprintf(stderr, "\n");
  }
  fm_tok_ids_clear(&v);
  fm_tok_free(t);
  return ok;
}

static void test_pretokenizers(void) {
  /* GPT-2: contractions, optional space before letters/numbers/other,
   * a run of spaces leaves its last space to the next word */
  const char *g1[] = {"I", "'ll", " go", "  ", " 42", "!!", " x", "\n"};
  CHECK(split_as("gpt-2", "I'll go   42!! x\n", g1, 8));
  /* GPT-2 contractions are case-sensitive: 'LL is ' + LL */
  const char *g2[] = {"I", "'", "LL"};
  CHECK(split_as("gpt-2", "I'LL", g2, 3));
  /* llama3: case-insensitive contractions, digits in threes, a non-letter
   * before letters, newlines kept with spaces before them */
  const char *l1[] = {"I", "'LL", " go", "123", "45", ",", "\tx", " \n", " ", " y"};
  CHECK(split_as("llama3", "I'LL go12345,\tx \n  y", l1, 10));
  /* qwen2: single digits */
  const char *q1[] = {"1", "2", "3", " ab"};
  CHECK(split_as("qwen2", "123 ab", q1, 4));
  /* falcon: punctuation runs first, then GPT-2, then groups of 3 ASCII digits */
  const char *f1[] = {"a", "+=", " b", " ", "123", "45"};
  CHECK(split_as("falcon", "a+= b 12345", f1, 6));
  /* deepseek-coder: newlines alone; letters with one optional space; CJK
   * runs split from a preceding space; digits one by one */
  const char *d1[] = {"ab", "\n", " cd", " ", "\xE4\xBD\xA0\xE5\xA5\xBD", " ", "1", "2"};
  CHECK(split_as("deepseek-coder", "ab\n cd \xE4\xBD\xA0\xE5\xA5\xBD 12", d1, 8));
  /* starcoder family: digits apart before GPT-2 */
  const char *s1[] = {"x", "1", "2", " y"};
  CHECK(split_as("starcoder", "x12 y", s1, 4));
}

static void test_wpm_small(void) {
  const char *toks[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", ("\xE2\x96\x81" "un"), "aff", "able", ("\xE2\x96\x81" "a"),
                        ("\xE2\x96\x81" ","), ("\xE2\x96\x81" "\xE4\xBD\xA0"), ("\xE2\x96\x81" "cafe")};
  /*                      0        1        2        3        4 (▁un)              5      6       7 (▁a)
   *                      8 (▁,)               9 (▁你)                        10 (▁cafe) */
  int32_t ty[] = {3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  fm_tok_def d;
  fm_tok_def_init(&d);
  d.unk = 1;
  d.bos = 2;
  d.sep = 3;
  d.pad = 0;
  fm_tok *t = make("bert", NULL, toks, 11, NULL, ty, NULL, 0, &d);
  if (!t) return;
  fm_tok_ids v = {0};
  /* "UnAffable, a 你 Café x" -> unaffable , a 你 cafe [UNK] */
  tokenize_str(t, "UnAffable, a\xE4\xBD\xA0 Caf\xC3\xA9 x", FM_TOK_ADD_SPECIAL, &v);
  int32_t w[] = {2, 4, 5, 6, 8, 7, 9, 10, 1, 3};
  CHECK(ids_equal(&v, w, 10));
  if (!ids_equal(&v, w, 10)) print_ids("got", v.ids, v.n);
  size_t len;
  uint8_t *s = detok(t, v.ids, v.n, FM_TOK_STRIP_SPACE, &len);
  const char *back = "unaffable , a \xE4\xBD\xA0 cafe";
  CHECK(len == strlen(back) && memcmp(s, back, len) == 0);
  free(s);
  /* ill-formed bytes, control characters and combining marks (Mn U+0301,
   * Mc U+093E, Me U+20DD) are dropped: "cafe" + U+0301 is "cafe" */
  tokenize_str(t, "a\xFF\x01", 0, &v);
  CHECK(v.n == 1 && v.ids[0] == 7);
  tokenize_str(t, "cafe\xCC\x81 a\xE0\xA4\xBE\xE2\x83\x9D", 0, &v);
  int32_t w2[] = {10, 7};
  CHECK(ids_equal(&v, w2, 2));
  fm_tok_free(t);
  fm_tok_ids_clear(&v);
}

static void test_errors(void) {
  const char *toks[] = {"a"};
  size_t lens[] = {1};
  fm_tok_def d;
  fm_tok_def_init(&d);
  d.n_vocab = 1;
  d.tokens = toks;
  d.token_lens = lens;
  fm_tok *t = NULL;
  fm_err err;
  d.model = "t5";
  CHECK(fm_tok_new(&d, &t, &err) == FM_EUNSUPPORTED && t == NULL);
  CHECK(strstr(err.msg, "t5") != NULL);
  d.model = "gpt2";
  d.pre = "tekken";
  CHECK(fm_tok_new(&d, &t, &err) == FM_EUNSUPPORTED);
  CHECK(strstr(err.msg, "tekken") != NULL);
  d.pre = NULL;
  d.n_vocab = 0;
  CHECK(fm_tok_new(&d, &t, &err) == FM_EARG);
  CHECK(fm_tok_new(NULL, &t, &err) == FM_EARG);
  fm_tok_free(NULL);
  fm_tok_ids_clear(NULL);
  d.n_vocab = 1;
  CHECK_OK(fm_tok_new(&d, &t, &err), &err);
  fm_tok_ids v = {0};
  CHECK(fm_tok_tokenize(t, NULL, 3, 0, &v, &err) == FM_EARG);
  CHECK_OK(fm_tok_tokenize(t, NULL, 0, FM_TOK_ADD_SPECIAL, &v, &err), &err);
  CHECK(v.n == 0); /* BPE without BOS */
  /* a byte that is no token is dropped by BPE without a byte token */
  CHECK_OK(fm_tok_tokenize(t, "ab", 2, 0, &v, &err), &err);
  CHECK(v.n == 1 && v.ids[0] == 0);
  fm_tok_ids_clear(&v);
  fm_tok_free(t);
}

/* GGUF metadata errors: a minimal file built in memory. */
static size_t put_str(uint8_t *p, const char *s) {
  uint64_t n = strlen(s);
  memcpy(p, &n, 8);
  memcpy(p + 8, s, n);
  return 8 + n;
}

static size_t gguf_header(uint8_t *p, uint64_t n_kv) {
  uint32_t ver = 3;
  uint64_t nt = 0;
  memcpy(p, "GGUF", 4);
  memcpy(p + 4, &ver, 4);
  memcpy(p + 8, &nt, 8);
  memcpy(p + 16, &n_kv, 8);
  return 24;
}

static size_t kv_str(uint8_t *p, const char *key, const char *val) {
  size_t k = put_str(p, key);
  uint32_t ty = 8;
  memcpy(p + k, &ty, 4);
  return k + 4 + put_str(p + k + 4, val);
}

static size_t kv_u32(uint8_t *p, const char *key, uint32_t val) {
  size_t k = put_str(p, key);
  uint32_t ty = 4;
  memcpy(p + k, &ty, 4);
  memcpy(p + k + 4, &val, 4);
  return k + 8;
}

static size_t kv_str_array(uint8_t *p, const char *key, const char *const *v, int n) {
  size_t k = put_str(p, key);
  uint32_t ty = 9, et = 8;
  uint64_t nn = (uint64_t)n;
  memcpy(p + k, &ty, 4);
  memcpy(p + k + 4, &et, 4);
  memcpy(p + k + 8, &nn, 8);
  k += 16;
  for (int i = 0; i < n; i++) k += put_str(p + k, v[i]);
  return k;
}

static fm_status from_bytes(const uint8_t *buf, size_t n, fm_tok **t, fm_err *err) {
  fm_gguf *g = NULL;
  fm_status st = fm_gguf_parse(buf, n, "mem.gguf", &g, err);
  if (st) return st;
  st = fm_tok_from_gguf(g, t, err);
  fm_gguf_close(g);
  return st;
}

/* The end-of-generation rule (fm_tok.h): eos, eot and eom, and the
 * CONTROL tokens named like an end of turn; ascending, without repeats. */
static void test_eog_rule(void) {
  const char *toks[] = {"a", "<|im_end|>", "<|endoftext|>", "<|eom_id|>", "<|end_of_text|>",
                        "<|eot_id|>", "</s>", "<end_of_turn>"};
  /* <|end_of_text|> is NORMAL and <|eot_id|> USER_DEFINED: their names do
   * not count; the others are CONTROL */
  int32_t ty[] = {1, 3, 3, 3, 1, 4, 3, 3};
  fm_tok_def d;
  fm_tok_def_init(&d);
  d.eos = 6;
  fm_tok *t = make("gpt2", "gpt-2", toks, 8, NULL, ty, NULL, 0, &d);
  const int32_t *ids = NULL;
  if (t) {
    int32_t want[] = {1, 2, 3, 6, 7};
    CHECK(fm_tok_eog_ids(t, &ids) == 5 && memcmp(ids, want, sizeof want) == 0);
    CHECK(fm_tok_specials(t)->eot == 1); /* the first named, <|eot_id|> not being CONTROL */
    for (int32_t id = -1; id < 9; id++) {
      int in = 0;
      for (int k = 0; k < 5; k++) in |= want[k] == id;
      CHECK(!fm_tok_is_eog(t, id) == !in);
    }
    fm_tok_free(t);
  }
  /* eot and eom given: counted once each, whatever their type; an eos
   * outside the vocabulary is none */
  fm_tok_def_init(&d);
  d.eos = 100;
  d.eot = 4;
  d.eom = 4;
  t = make("gpt2", "gpt-2", toks, 8, NULL, ty, NULL, 0, &d);
  if (t) {
    int32_t want[] = {1, 2, 3, 4, 7}; /* </s> (6) was only the eos */
    CHECK(fm_tok_eog_ids(t, &ids) == 5 && memcmp(ids, want, sizeof want) == 0);
    CHECK(fm_tok_specials(t)->eos == FM_TOK_NONE);
    fm_tok_free(t);
  }
  /* SentencePiece without ids: eos defaults to 2 */
  const char *spm[] = {"<unk>", "<s>", "</s>", "\xE2\x96\x81" "h"};
  t = make("llama", NULL, spm, 4, NULL, NULL, NULL, 0, NULL);
  if (t) {
    CHECK(fm_tok_eog_ids(t, &ids) == 1 && ids[0] == 2);
    fm_tok_free(t);
  }
  /* WordPiece has no eos by default: nothing ends generation */
  const char *wpm[] = {"[PAD]", "a"};
  t = make("bert", NULL, wpm, 2, NULL, NULL, NULL, 0, NULL);
  if (t) {
    CHECK(fm_tok_eog_ids(t, &ids) == 0 && !fm_tok_is_eog(t, 0) && !fm_tok_is_eog(t, 1));
    fm_tok_free(t);
  }
  CHECK(fm_tok_eog_ids(NULL, &ids) == 0 && ids == NULL && !fm_tok_is_eog(NULL, 0));
}

static void test_gguf_keys(void) {
  static uint8_t buf[4096];
  const char *toks[] = {"<unk>", "<s>", "</s>", ("\xE2\x96\x81" "h")};
  fm_tok *t = NULL;
  fm_err err;
  size_t n;
  /* no tokenizer at all */
  n = gguf_header(buf, 1);
  n += kv_str(buf + n, "general.architecture", "llama");
  CHECK(from_bytes(buf, n, &t, &err) == FM_EUNSUPPORTED && strstr(err.msg, "tokenizer.ggml.model"));
  /* an unsupported model */
  n = gguf_header(buf, 2);
  n += kv_str(buf + n, "tokenizer.ggml.model", "rwkv");
  n += kv_str_array(buf + n, "tokenizer.ggml.tokens", toks, 4);
  CHECK(from_bytes(buf, n, &t, &err) == FM_EUNSUPPORTED && strstr(err.msg, "rwkv"));
  /* tokens of the wrong type */
  n = gguf_header(buf, 2);
  n += kv_str(buf + n, "tokenizer.ggml.model", "llama");
  n += kv_u32(buf + n, "tokenizer.ggml.tokens", 7);
  CHECK(from_bytes(buf, n, &t, &err) == FM_EFORMAT && strstr(err.msg, "tokenizer.ggml.tokens"));
  /* a BOS id of the wrong type, an out-of-range EOS id taken as none */
  n = gguf_header(buf, 3);
  n += kv_str(buf + n, "tokenizer.ggml.model", "llama");
  n += kv_str_array(buf + n, "tokenizer.ggml.tokens", toks, 4);
  n += kv_str(buf + n, "tokenizer.ggml.bos_token_id", "1");
  CHECK(from_bytes(buf, n, &t, &err) == FM_EFORMAT && strstr(err.msg, "bos_token_id"));
  n = gguf_header(buf, 3);
  n += kv_str(buf + n, "tokenizer.ggml.model", "llama");
  n += kv_str_array(buf + n, "tokenizer.ggml.tokens", toks, 4);
  n += kv_u32(buf + n, "tokenizer.ggml.eos_token_id", 4294967295u);
  CHECK_OK(from_bytes(buf, n, &t, &err), &err);
  if (t) {
    CHECK(fm_tok_specials(t)->eos == FM_TOK_NONE && fm_tok_specials(t)->bos == 1);
    fm_tok_ids v = {0};
    CHECK_OK(fm_tok_tokenize(t, "h", 1, FM_TOK_ADD_SPECIAL, &v, &err), &err);
    int32_t w[] = {1, 3};
    CHECK(ids_equal(&v, w, 2));
    fm_tok_ids_clear(&v);
    fm_tok_free(t);
  }
}

int main(void) {
  have_fixtures = fm_test_fixture(fixdir, sizeof fixdir, "gguf/vocab", "ggml-vocab-gpt-2.gguf");
  if (!have_fixtures) printf("tok: ../shared/fixtures/gguf/vocab absent; vector tests skipped\n");
  FM_RUN(test_vectors_llama_spm);
  FM_RUN(test_vectors_gpt2);
  FM_RUN(test_vectors_deepseek_coder);
  FM_RUN(test_vectors_falcon);
  FM_RUN(test_vectors_bert);
  if (have_fixtures) {
    printf("tok: %d/230 vector cases match\n", total_pass);
    CHECK(total_pass == 230);
  }
  FM_RUN(test_vocab_specials);
  FM_RUN(test_spm_small);
  FM_RUN(test_bpe_small);
  FM_RUN(test_pretokenizers);
  FM_RUN(test_wpm_small);
  FM_RUN(test_errors);
  FM_RUN(test_eog_rule);
  FM_RUN(test_gguf_keys);
  FM_TEST_END();
}
