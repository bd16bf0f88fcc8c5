/* r_tok.c: R glue of the tokenizer (fm_tok.h).
 *
 * A tokenizer is an external pointer (tag "fm_tok") owning an fm_tok; its
 * finalizer frees it, also at exit. Entry points never raise for a core
 * status: they return an error marker, a character vector c(status, message)
 * of class "rllm_tok_error", which R/tokenizer.R turns into an fm_error_<status>
 * condition through Rfmalloc::fm_abort with the caller's call. Core resources
 * are released before returning. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "fm/fm_gguf.h"
#include "fm/fm_tok.h"
#include <Rgguf.h>

#include "r_calls.h"

static SEXP tok_tag(void) { return Rf_install("fm_tok"); }

static SEXP error_marker(const fm_err *err) {
  int nprot = 0;
  SEXP out = PROTECT(Rf_allocVector(STRSXP, 2));
  nprot++;
  fm_status code = err->code == FM_OK ? FM_EINTERNAL : err->code;
  SET_STRING_ELT(out, 0, Rf_mkChar(fm_status_name(code)));
  SET_STRING_ELT(out, 1, Rf_mkCharCE(err->msg[0] ? err->msg : "tokenizer error", CE_UTF8));
  Rf_setAttrib(out, R_ClassSymbol, Rf_mkString("rllm_tok_error"));
  UNPROTECT(nprot);
  return out;
}

static SEXP earg(const char *msg) {
  fm_err err;
  fm_err_set(&err, FM_EARG, "%s", msg);
  return error_marker(&err);
}

static void tok_finalize(SEXP p) {
  fm_tok *t = (fm_tok *)R_ExternalPtrAddr(p);
  if (t) {
    fm_tok_free(t);
    R_ClearExternalPtr(p);
  }
}

/* The fm_tok of an external pointer, or NULL (not one, or released). */
static const fm_tok *get_tok(SEXP p) {
  if (TYPEOF(p) != EXTPTRSXP || R_ExternalPtrTag(p) != tok_tag()) return NULL;
  return (const fm_tok *)R_ExternalPtrAddr(p);
}

static SEXP wrap(fm_tok *t) {
  SEXP p = PROTECT(R_MakeExternalPtr(t, tok_tag(), R_NilValue));
  R_RegisterCFinalizerEx(p, tok_finalize, TRUE);
  UNPROTECT(1);
  return p;
}

/* fmr_tok_from_path(path): build from a GGUF file, opened and closed here. */
static SEXP fmr_tok_from_path(SEXP path) {
  if (!Rf_isString(path) || XLENGTH(path) != 1 || STRING_ELT(path, 0) == NA_STRING)
    return earg("path must be a single file name");
  const char *p = R_ExpandFileName(Rf_translateChar(STRING_ELT(path, 0)));
  fm_err err;
  fm_gguf *g = NULL;
  fm_tok *t = NULL;
  fm_status st = fm_gguf_open(p, &g, &err);
  if (st == FM_OK) {
    st = fm_tok_from_gguf(g, &t, &err);
    fm_gguf_close(g);
  }
  if (st) {
    /* name the file when the message does not */
    if (!strstr(err.msg, p)) {
      char msg[2 * sizeof err.msg + 16];
      snprintf(msg, sizeof msg, "%.200s: %s", p, err.msg);
      memcpy(err.msg, msg, sizeof err.msg - 1);
      err.msg[sizeof err.msg - 1] = '\0';
    }
    return error_marker(&err);
  }
  return wrap(t);
}

/* fmr_tok_from_gguf(x, optional): build from an open gguf_file handle of
 * Rgguf; NULL when optional is TRUE and the file has no tokenizer (no key
 * tokenizer.ggml.model: a model then takes token ids). */
static SEXP fmr_tok_from_gguf(SEXP x, SEXP optional) {
  const struct fm_gguf *g = Rgguf_file(x); /* raises for anything else */
  if (Rf_asLogical(optional) == TRUE && fm_gguf_find_kv(g, "tokenizer.ggml.model") < 0) return R_NilValue;
  fm_err err;
  fm_tok *t = NULL;
  if (fm_tok_from_gguf(g, &t, &err)) return error_marker(&err);
  return wrap(t);
}

static SEXP released(void) {
  fm_err err;
  fm_err_set(&err, FM_ECLOSED, "the tokenizer was released (a saved and reloaded object has no tokenizer)");
  return error_marker(&err);
}

/* fmr_tok_info(p): list(model, pre, n_vocab, bos, eos, eot, eom, unk, sep,
 * pad, mask, add_bos, add_eos, add_sep, add_space_prefix, eog); ids
 * 0-based, NA when absent; eog the end-of-generation ids (fm_tok_eog_ids). */
static SEXP fmr_tok_info(SEXP p) {
  const fm_tok *t = get_tok(p);
  if (!t) return released();
  const fm_tok_special *sp = fm_tok_specials(t);
  const char *names[] = {"model", "pre", "n_vocab", "bos", "eos", "eot", "eom", "unk", "sep",
                         "pad", "mask", "add_bos", "add_eos", "add_sep", "add_space_prefix", "eog"};
  int n = (int)(sizeof names / sizeof names[0]), nprot = 0;
  SEXP out = PROTECT(Rf_allocVector(VECSXP, n));
  nprot++;
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, n));
  nprot++;
  for (int i = 0; i < n; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
  SET_VECTOR_ELT(out, 0, Rf_mkString(fm_tok_model_name(t)));
  SET_VECTOR_ELT(out, 1, Rf_mkString(fm_tok_pre_name(t)));
  SET_VECTOR_ELT(out, 2, Rf_ScalarInteger(fm_tok_n_vocab(t)));
  int32_t ids[] = {sp->bos, sp->eos, sp->eot, sp->eom, sp->unk, sp->sep, sp->pad, sp->mask};
  for (int i = 0; i < 8; i++) SET_VECTOR_ELT(out, 3 + i, Rf_ScalarInteger(ids[i] >= 0 ? ids[i] : NA_INTEGER));
  int flags[] = {sp->add_bos, sp->add_eos, sp->add_sep, sp->add_space_prefix};
  for (int i = 0; i < 4; i++) SET_VECTOR_ELT(out, 11 + i, Rf_ScalarLogical(flags[i] != 0));
  const int32_t *eog;
  const int n_eog = fm_tok_eog_ids(t, &eog);
  SEXP s_eog = Rf_allocVector(INTSXP, n_eog);
  SET_VECTOR_ELT(out, 15, s_eog);
  for (int i = 0; i < n_eog; i++) INTEGER(s_eog)[i] = eog[i];
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(nprot);
  return out;
}

static SEXP ids_to_r(void *d) {
  const fm_tok_ids *v = d;
  SEXP out = Rf_allocVector(INTSXP, (R_xlen_t)v->n);
  if (v->n) memcpy(INTEGER(out), v->ids, (size_t)v->n * sizeof(int));
  return out;
}

static void free_ids(void *d, Rboolean jump) {
  (void)jump;
  fm_tok_ids_clear(d);
}

/* fmr_tok_tokenize(p, text, add_special, parse_special): text a raw vector
 * (R turned a string into its bytes, .tok_bytes). Integer ids, 0-based. */
static SEXP fmr_tok_tokenize(SEXP p, SEXP text, SEXP add_special, SEXP parse_special) {
  const fm_tok *t = get_tok(p);
  if (!t) return released();
  if (TYPEOF(text) != RAWSXP) return earg("text must be a raw vector");
  const char *s = (const char *)RAW(text);
  size_t n = (size_t)XLENGTH(text);
  unsigned flags = 0;
  if (Rf_asLogical(add_special) == TRUE) flags |= FM_TOK_ADD_SPECIAL;
  if (Rf_asLogical(parse_special) == TRUE) flags |= FM_TOK_PARSE_SPECIAL;
  fm_tok_ids v = {0};
  fm_err err;
  if (fm_tok_tokenize(t, n ? s : NULL, n, flags, &v, &err)) {
    fm_tok_ids_clear(&v);
    return error_marker(&err);
  }
  if (v.n > R_XLEN_T_MAX) {
    fm_tok_ids_clear(&v);
    return earg("too many tokens for an R vector");
  }
  /* allocVector can only fail by a longjmp: free v on the way out either way */
  SEXP cont = PROTECT(R_MakeUnwindCont());
  SEXP out = R_UnwindProtect(ids_to_r, &v, free_ids, &v, cont);
  UNPROTECT(1);
  return out;
}

/* fmr_tok_detokenize(p, ids, special, strip): ids an integer vector (R
 * checked for NA and whole numbers). A raw vector. */
static SEXP fmr_tok_detokenize(SEXP p, SEXP ids, SEXP special, SEXP strip) {
  const fm_tok *t = get_tok(p);
  if (!t) return released();
  if (TYPEOF(ids) != INTSXP) return earg("tokens must be an integer vector");
  unsigned flags = 0;
  if (Rf_asLogical(special) == TRUE) flags |= FM_TOK_RENDER_SPECIAL;
  if (Rf_asLogical(strip) == TRUE) flags |= FM_TOK_STRIP_SPACE;
  const int32_t *v = (const int32_t *)INTEGER(ids);
  int64_t n = (int64_t)XLENGTH(ids);
  size_t need = 0;
  fm_err err;
  if (fm_tok_detokenize(t, v, n, flags, NULL, 0, &need, &err)) return error_marker(&err);
  if (need > (size_t)R_XLEN_T_MAX) return earg("detokenized text too long for a raw vector");
  SEXP out = PROTECT(Rf_allocVector(RAWSXP, (R_xlen_t)need));
  size_t got = 0;
  fm_status st = fm_tok_detokenize(t, v, n, flags, need ? RAW(out) : NULL, need, &got, &err);
  UNPROTECT(1);
  if (st) return error_marker(&err);
  return out;
}

/* fmr_tok_pieces(p, ids, special): list of raw vectors, the bytes of each
 * token (streaming detokenization). */
static SEXP fmr_tok_pieces(SEXP p, SEXP ids, SEXP special) {
  const fm_tok *t = get_tok(p);
  if (!t) return released();
  if (TYPEOF(ids) != INTSXP) return earg("tokens must be an integer vector");
  unsigned flags = Rf_asLogical(special) == TRUE ? FM_TOK_RENDER_SPECIAL : 0;
  R_xlen_t n = XLENGTH(ids);
  fm_err err;
  for (R_xlen_t i = 0; i < n; i++) {
    const uint8_t *b;
    size_t len;
    if (fm_tok_token_bytes(t, INTEGER(ids)[i], flags, &b, &len, &err)) return error_marker(&err);
  }
  SEXP out = PROTECT(Rf_allocVector(VECSXP, n));
  for (R_xlen_t i = 0; i < n; i++) {
    const uint8_t *b;
    size_t len;
    if (fm_tok_token_bytes(t, INTEGER(ids)[i], flags, &b, &len, &err)) len = 0;
    SEXP r = Rf_allocVector(RAWSXP, (R_xlen_t)len);
    SET_VECTOR_ELT(out, i, r);
    if (len) memcpy(RAW(r), b, len);
  }
  UNPROTECT(1);
  return out;
}

static int utf8_ok(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    unsigned c = u[i];
    size_t k = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (!k || i + k > n) return 0;
    for (size_t j = 1; j < k; j++)
      if ((u[i + j] & 0xC0) != 0x80) return 0;
    i += k;
  }
  return 1;
}

/* fmr_tok_vocab(p): list of columns id (0-based), text (stored text: UTF-8,
 * else marked as bytes; NA when it holds a NUL), type (fm_tok_type code),
 * score (double). */
static SEXP fmr_tok_vocab(SEXP p) {
  const fm_tok *t = get_tok(p);
  if (!t) return released();
  int32_t n = fm_tok_n_vocab(t);
  int nprot = 0;
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 4));
  nprot++;
  SEXP id = rllm_column(out, 0, INTSXP, n), text = rllm_column(out, 1, STRSXP, n);
  SEXP type = rllm_column(out, 2, INTSXP, n), score = rllm_column(out, 3, REALSXP, n);
  for (int32_t i = 0; i < n; i++) {
    size_t len;
    const char *s = fm_tok_token_text(t, i, &len);
    INTEGER(id)[i] = i;
    if (len > INT_MAX || memchr(s, 0, len)) SET_STRING_ELT(text, i, NA_STRING);
    else SET_STRING_ELT(text, i, Rf_mkCharLenCE(s, (int)len, utf8_ok(s, len) ? CE_UTF8 : CE_BYTES));
    INTEGER(type)[i] = (int)fm_tok_token_type(t, i);
    REAL(score)[i] = (double)fm_tok_token_score(t, i);
  }
  UNPROTECT(nprot);
  return out;
}

/* fmr_tok_text(p, ids): the stored texts of ids (character; UTF-8 where
 * valid, else bytes; NA for ids outside the vocabulary). */
static SEXP fmr_tok_text(SEXP p, SEXP ids) {
  const fm_tok *t = get_tok(p);
  if (!t) return released();
  if (TYPEOF(ids) != INTSXP) return earg("tokens must be an integer vector");
  R_xlen_t n = XLENGTH(ids);
  SEXP out = PROTECT(Rf_allocVector(STRSXP, n));
  for (R_xlen_t i = 0; i < n; i++) {
    int id = INTEGER(ids)[i];
    size_t len;
    const char *s = fm_tok_token_text(t, id, &len);
    if (id < 0 || id >= fm_tok_n_vocab(t) || len > INT_MAX || memchr(s, 0, len)) SET_STRING_ELT(out, i, NA_STRING);
    else SET_STRING_ELT(out, i, Rf_mkCharLenCE(s, (int)len, utf8_ok(s, len) ? CE_UTF8 : CE_BYTES));
  }
  UNPROTECT(1);
  return out;
}

/* fmr_tok_is_live(p): TRUE while p holds a tokenizer. */
static SEXP fmr_tok_is_live(SEXP p) { return Rf_ScalarLogical(get_tok(p) != NULL); }

const R_CallMethodDef rllm_tok_calls[] = {
    {"fmr_tok_from_path", (DL_FUNC)&fmr_tok_from_path, 1},
    {"fmr_tok_from_gguf", (DL_FUNC)&fmr_tok_from_gguf, 2},
    {"fmr_tok_info", (DL_FUNC)&fmr_tok_info, 1},
    {"fmr_tok_tokenize", (DL_FUNC)&fmr_tok_tokenize, 4},
    {"fmr_tok_detokenize", (DL_FUNC)&fmr_tok_detokenize, 4},
    {"fmr_tok_pieces", (DL_FUNC)&fmr_tok_pieces, 3},
    {"fmr_tok_vocab", (DL_FUNC)&fmr_tok_vocab, 1},
    {"fmr_tok_text", (DL_FUNC)&fmr_tok_text, 2},
    {"fmr_tok_is_live", (DL_FUNC)&fmr_tok_is_live, 1},
    {NULL, NULL, 0}};
