/* fuzz_tok.c: libFuzzer target for the tokenizer (fm_tok.h): arbitrary
 * bytes as user text through SentencePiece, byte-level BPE (every
 * pre-tokenizer) and WordPiece vocabularies built here, and arbitrary GGUF
 * metadata through fm_tok_from_gguf.
 *
 * The text is copied into a heap buffer of exactly its length (no NUL), so
 * a read past it is an AddressSanitizer report. Invariants checked (a
 * violation aborts): tokenizing succeeds; every id is in [0, n_vocab);
 * detokenizing succeeds and its size query equals its length; and the
 * documented round trips hold:
 *   - SentencePiece (byte fallback, no parse_special): detokenize with
 *     FM_TOK_STRIP_SPACE gives the input with each U+2581 read as a space;
 *   - byte-level BPE (all 256 bytes are tokens): detokenize (rendering
 *     special tokens when they were parsed) gives the input back, ill-formed
 *     UTF-8 included.
 *
 * Input encoding:
 *   byte 0  bits 0-3 mode, mod 9: 0 SentencePiece, 1-6 BPE with pre
 *           gpt-2, llama3, qwen2, starcoder, deepseek-coder, falcon,
 *           7 WordPiece, 8 GGUF (the rest of the input is a GGUF file; a
 *           tokenizer it yields tokenizes a fixed text);
 *           bit 4 FM_TOK_ADD_SPECIAL, bit 5 FM_TOK_PARSE_SPECIAL
 *   bytes 1.. the text (or the GGUF file)
 *
 * Seeds (core/fuzz/corpus/fuzz_tok/): texts for each mode (ASCII, mixed
 * scripts, spaces and newlines, special-token texts, ill-formed UTF-8) and
 * small GGUF files with llama, gpt2 and bert tokenizers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_gguf.h"
#include "fm/fm_tok.h"
#include "fuzz_util.h"

enum { N_MODES = 9 };
static fm_tok *toks[8]; /* modes 0..7, built once */

static int gpt2_printable(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/* GPT-2 alphabet spelling of raw bytes into out (room for 2 n bytes). */
static size_t gpt2_encode(const char *raw, size_t n, char *out) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned b = (unsigned char)raw[i];
    uint32_t cp = b;
    if (!gpt2_printable(b)) {
      cp = 256;
      for (unsigned x = 0; x < b; x++)
        if (!gpt2_printable(x)) cp++;
    }
    if (cp < 0x80) out[k++] = (char)cp;
    else {
      out[k++] = (char)(0xC0 | (cp >> 6));
      out[k++] = (char)(0x80 | (cp & 0x3F));
    }
  }
  return k;
}

static char pool[1 << 16];
static size_t pool_n;

static const char *keep(const char *s, size_t n) {
  FUZZ_ASSERT(pool_n + n + 1 <= sizeof pool);
  char *p = pool + pool_n;
  memcpy(p, s, n);
  p[n] = 0;
  pool_n += n + 1;
  return p;
}

static const char *const words[] = {"the", "he", "in", "an", "and", "on", "er", "at", "th", "ing",
                                    "\xC3\xA9", "\xD0\xB6", "\xE4\xB8\x96", "12", "123", "!!", "\n\n",
                                    "  ", "'s", "\xF0\x9F\x98\x80"};
enum { N_WORDS = sizeof words / sizeof words[0] };

static fm_tok *build_spm(void) {
  const char *t[400];
  size_t l[400];
  float sc[400];
  int32_t ty[400];
  int n = 0;
  const char *fixed[] = {"<unk>", "<s>", "</s>"};
  for (int i = 0; i < 3; i++, n++) {
    t[n] = fixed[i];
    l[n] = strlen(fixed[i]);
    sc[n] = 0;
    ty[n] = i == 0 ? FM_TOK_TYPE_UNKNOWN : FM_TOK_TYPE_CONTROL;
  }
  static const char hex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; b++, n++) {
    char s[7] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>', 0};
    t[n] = keep(s, 6);
    l[n] = 6;
    sc[n] = 0;
    ty[n] = FM_TOK_TYPE_BYTE;
  }
  for (int c = 'a'; c <= 'z'; c++, n++) {
    char s = (char)c;
    t[n] = keep(&s, 1);
    l[n] = 1;
    sc[n] = -(float)(c - 'a') / 4;
    ty[n] = FM_TOK_TYPE_NORMAL;
  }
  t[n] = "\xE2\x96\x81";
  l[n] = 3;
  sc[n] = -1;
  ty[n++] = FM_TOK_TYPE_NORMAL;
  for (int w = 0; w < N_WORDS; w++) {
    char s[32];
    size_t k = strlen(words[w]);
    memcpy(s, words[w], k);
    t[n] = keep(s, k);
    l[n] = k;
    sc[n] = -(float)w / 3;
    ty[n++] = FM_TOK_TYPE_NORMAL;
    memcpy(s, "\xE2\x96\x81", 3);
    memcpy(s + 3, words[w], k);
    t[n] = keep(s, k + 3);
    l[n] = k + 3;
    sc[n] = -(float)w / 2; /* ties between some of them */
    ty[n++] = FM_TOK_TYPE_NORMAL;
  }
  fm_tok_def d;
  fm_tok_def_init(&d);
  d.model = "llama";
  d.n_vocab = n;
  d.tokens = t;
  d.token_lens = l;
  d.scores = sc;
  d.types = ty;
  d.add_eos = 1;
  fm_tok *tok = NULL;
  fm_err err;
  FUZZ_ASSERT(fm_tok_new(&d, &tok, &err) == FM_OK);
  return tok;
}

static fm_tok *build_bpe(const char *pre) {
  const char *t[400], *m[200];
  size_t l[400], ml[200];
  int32_t ty[400];
  int n = 0, nm = 0;
  char buf[64];
  for (int b = 0; b < 256; b++, n++) {
    char c = (char)b;
    size_t k = gpt2_encode(&c, 1, buf);
    t[n] = keep(buf, k);
    l[n] = k;
    ty[n] = FM_TOK_TYPE_NORMAL;
  }
  /* each word (and " word") with merges that build it left to right */
  for (int w = 0; w < N_WORDS; w++) {
    for (int sp = 0; sp < 2; sp++) {
      char raw[40];
      size_t rk = 0;
      if (sp) raw[rk++] = ' ';
      memcpy(raw + rk, words[w], strlen(words[w]));
      rk += strlen(words[w]);
      for (size_t cut = 2; cut <= rk; cut++) {
        char left[80], right[8], merged[96];
        size_t a = gpt2_encode(raw, cut - 1, left), b = gpt2_encode(raw + cut - 1, 1, right);
        memcpy(merged, left, a);
        merged[a] = ' ';
        memcpy(merged + a + 1, right, b);
        m[nm] = keep(merged, a + 1 + b);
        ml[nm++] = a + 1 + b;
        size_t k = gpt2_encode(raw, cut, buf);
        t[n] = keep(buf, k);
        l[n] = k;
        ty[n++] = FM_TOK_TYPE_NORMAL;
      }
    }
  }
  t[n] = "<|endoftext|>";
  l[n] = 13;
  ty[n++] = FM_TOK_TYPE_CONTROL;
  t[n] = "<|user|>";
  l[n] = 8;
  ty[n++] = FM_TOK_TYPE_USER_DEFINED;
  fm_tok_def d;
  fm_tok_def_init(&d);
  d.model = "gpt2";
  d.pre = pre;
  d.n_vocab = n;
  d.tokens = t;
  d.token_lens = l;
  d.types = ty;
  d.n_merges = nm;
  d.merges = m;
  d.merge_lens = ml;
  d.bos = n - 2;
  d.eos = n - 2;
  d.add_bos = 1;
  fm_tok *tok = NULL;
  fm_err err;
  FUZZ_ASSERT(fm_tok_new(&d, &tok, &err) == FM_OK);
  return tok;
}

static fm_tok *build_wpm(void) {
  const char *t[200];
  size_t l[200];
  int32_t ty[200];
  int n = 0;
  const char *fixed[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (int i = 0; i < 5; i++, n++) {
    t[n] = fixed[i];
    l[n] = strlen(fixed[i]);
    ty[n] = FM_TOK_TYPE_CONTROL;
  }
  for (int c = 0x21; c < 0x7F; c++, n++) {
    char s[4] = {(char)0xE2, (char)0x96, (char)0x81, (char)c};
    t[n] = keep(s, 4);
    l[n] = 4;
    ty[n] = FM_TOK_TYPE_NORMAL;
  }
  for (int w = 0; w < N_WORDS; w++, n++) {
    t[n] = words[w];
    l[n] = strlen(words[w]);
    ty[n] = FM_TOK_TYPE_NORMAL;
  }
  fm_tok_def d;
  fm_tok_def_init(&d);
  d.model = "bert";
  d.n_vocab = n;
  d.tokens = t;
  d.token_lens = l;
  d.types = ty;
  d.unk = 1;
  d.bos = 2;
  d.sep = 3;
  d.pad = 0;
  d.mask = 4;
  fm_tok *tok = NULL;
  fm_err err;
  FUZZ_ASSERT(fm_tok_new(&d, &tok, &err) == FM_OK);
  return tok;
}

static void init(void) {
  static const char *const pres[] = {"gpt-2", "llama3", "qwen2", "starcoder", "deepseek-coder", "falcon"};
  toks[0] = build_spm();
  for (int i = 0; i < 6; i++) toks[1 + i] = build_bpe(pres[i]);
  toks[7] = build_wpm();
}

/* Tokenize, check ids, detokenize; returns the bytes (malloc'd) and length. */
static uint8_t *cycle(const fm_tok *t, const char *text, size_t n, unsigned flags, unsigned dflags,
                      size_t *out_len, fm_tok_ids *v) {
  fm_err err;
  v->n = 0;
  FUZZ_ASSERT(fm_tok_tokenize(t, text, n, flags, v, &err) == FM_OK);
  int32_t nv = fm_tok_n_vocab(t);
  for (int64_t i = 0; i < v->n; i++) FUZZ_ASSERT(v->ids[i] >= 0 && v->ids[i] < nv);
  size_t need = 0, got = 0;
  FUZZ_ASSERT(fm_tok_detokenize(t, v->ids, v->n, dflags, NULL, 0, &need, &err) == FM_OK);
  uint8_t *buf = malloc(need ? need : 1);
  FUZZ_ASSERT(buf);
  FUZZ_ASSERT(fm_tok_detokenize(t, v->ids, v->n, dflags, buf, need, &got, &err) == FM_OK);
  FUZZ_ASSERT(got == need);
  *out_len = need;
  return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!toks[0]) init();
  if (size < 1) return 0;
  unsigned mode = (data[0] & 15) % N_MODES;
  unsigned flags = ((data[0] >> 4) & 1 ? FM_TOK_ADD_SPECIAL : 0) | ((data[0] >> 5) & 1 ? FM_TOK_PARSE_SPECIAL : 0);
  size_t n = size - 1;
  char *text = malloc(n ? n : 1);
  FUZZ_ASSERT(text);
  if (n) memcpy(text, data + 1, n);
  fm_tok_ids v = {0};
  size_t len;
  uint8_t *back;
  if (mode == 8) {
    fm_gguf *g = NULL;
    fm_tok *t = NULL;
    fm_err err;
    if (fm_gguf_parse(text, n, "fuzz.gguf", &g, &err) == FM_OK) {
      fm_status st = fm_tok_from_gguf(g, &t, &err);
      FUZZ_ASSERT(st == FM_OK || err.code == st);
      fm_gguf_close(g); /* the tokenizer must not borrow the file */
      if (t) {
        static const char probe[] = "Hello, world! \xC3\xA9\xE4\xB8\x96 <s> 123\n\xFF";
        back = cycle(t, probe, sizeof probe - 1, flags, FM_TOK_RENDER_SPECIAL, &len, &v);
        free(back);
        const uint8_t *b;
        size_t bl;
        for (int32_t id = 0; id < fm_tok_n_vocab(t) && id < 64; id++)
          FUZZ_ASSERT(fm_tok_token_bytes(t, id, FM_TOK_RENDER_SPECIAL, &b, &bl, &err) == FM_OK);
        fm_tok_free(t);
      }
    }
  } else {
    const fm_tok *t = toks[mode];
    if (mode == 0) {
      unsigned f = flags & ~FM_TOK_PARSE_SPECIAL;
      back = cycle(t, text, n, f, FM_TOK_STRIP_SPACE, &len, &v);
      /* the input with U+2581 read as a space */
      size_t k = 0, i = 0;
      int ok = 1;
      while (i < n) {
        uint8_t c = (uint8_t)text[i];
        size_t step = 1;
        if (i + 3 <= n && memcmp(text + i, "\xE2\x96\x81", 3) == 0) {
          c = ' ';
          step = 3;
        }
        if (k >= len || back[k] != c) ok = 0;
        k++;
        i += step;
      }
      FUZZ_ASSERT(ok && k == len);
      free(back);
      back = cycle(t, text, n, flags, FM_TOK_RENDER_SPECIAL, &len, &v);
      free(back);
    } else if (mode <= 6) {
      unsigned dflags = (flags & FM_TOK_PARSE_SPECIAL) ? FM_TOK_RENDER_SPECIAL : 0;
      back = cycle(t, text, n, flags & ~FM_TOK_ADD_SPECIAL, dflags, &len, &v);
      FUZZ_ASSERT(len == n && (n == 0 || memcmp(back, text, n) == 0));
      free(back);
      back = cycle(t, text, n, flags, FM_TOK_STRIP_SPACE, &len, &v);
      free(back);
    } else {
      back = cycle(t, text, n, flags, FM_TOK_STRIP_SPACE | FM_TOK_RENDER_SPECIAL, &len, &v);
      free(back);
    }
  }
  fm_tok_ids_clear(&v);
  free(text);
  return 0;
}
