/* r_file.c: R glue of the GGUF reader (fm_gguf.h): gguf_open() handles,
 * metadata with exact types, the tensor directory, the C callable
 * Rgguf_file (inst/include/Rgguf.h). Errors are raised through Rfmalloc's
 * converter (Rfmalloc_stopf / Rfmalloc_raise_err in Rfmalloc.h: classes
 * fm_error_<status>, as Rfmalloc::fm_abort).
 *
 * A handle is an external pointer tagged `gguf_file` whose address is an
 * open fm_gguf (the file's read-only mapping). Its finalizer closes the
 * file, also at exit; the package keeps a list of live handles and closes
 * them in R_unload_Rgguf, after which a handle raises fm_error_eclosed. */
#include "r_calls.h"

#include "fm/fm_gguf.h"

#include <Rfmalloc.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- handles ------------------------------------------------------------ */

typedef struct live_handle {
  SEXP ptr; /* not protected: the entry is removed when ptr is finalized */
  struct live_handle *prev, *next;
} live_handle;

static live_handle *live_list;

static SEXP file_tag(void) { return Rf_install("gguf_file"); }

static void handle_forget(SEXP ptr) {
  for (live_handle *h = live_list; h; h = h->next) {
    if (h->ptr != ptr) continue;
    if (h->prev) h->prev->next = h->next;
    else live_list = h->next;
    if (h->next) h->next->prev = h->prev;
    free(h);
    return;
  }
}

/* Close g, after Rfmalloc forgets its file (mirai daemons, below). */
static void close_file(fm_gguf *g) {
  Rfmalloc_file_remove(fm_gguf_bytes(g));
  fm_gguf_close(g);
}

static void handle_finalize(SEXP ptr) {
  fm_gguf *g = R_ExternalPtrAddr(ptr);
  if (g) {
    R_ClearExternalPtr(ptr);
    close_file(g);
  }
  handle_forget(ptr);
}

void rgguf_close_all(void) {
  while (live_list) {
    SEXP ptr = live_list->ptr;
    fm_gguf *g = R_ExternalPtrAddr(ptr);
    if (g) {
      R_ClearExternalPtr(ptr);
      close_file(g);
    }
    handle_forget(ptr);
  }
}

/* The external pointer of a gguf_file object (the object is the pointer). */
static SEXP handle_ptr(SEXP x) {
  if (TYPEOF(x) != EXTPTRSXP || R_ExternalPtrTag(x) != file_tag())
    Rfmalloc_stopf(FM_EARG, "expected a GGUF file from gguf_open(), not an object of type %s",
               Rf_type2char(TYPEOF(x)));
  return x;
}

const fm_gguf *rgguf_file_of(SEXP x) {
  SEXP ptr = handle_ptr(x);
  const fm_gguf *g = R_ExternalPtrAddr(ptr);
  if (!g) {
    SEXP path = Rf_getAttrib(ptr, Rf_install("path"));
    Rfmalloc_stopf(FM_ECLOSED,
               "GGUF file '%s' is closed (a handle does not survive saveRDS(), a new session "
               "or unloading Rgguf); open it again with gguf_open()",
               TYPEOF(path) == STRSXP && XLENGTH(path) == 1 ? CHAR(STRING_ELT(path, 0)) : "?");
  }
  fm_err err;
  if (fm_gguf_check(g, &err) != FM_OK) Rfmalloc_raise_err(&err, NULL);
  return g;
}

/* C callables (inst/include/Rgguf.h). */
static const struct fm_gguf *Rgguf_file(SEXP x) { return rgguf_file_of(x); }
static void Rgguf_check(SEXP x) { (void)rgguf_file_of(x); }

SEXP rgguf_open(SEXP s_path) {
  if (TYPEOF(s_path) != STRSXP || XLENGTH(s_path) != 1 || STRING_ELT(s_path, 0) == NA_STRING)
    Rfmalloc_stopf(FM_EARG, "path must be a single string");
  SEXP s = STRING_ELT(s_path, 0);
  const char *path = (Rf_getCharCE(s) == CE_BYTES) ? CHAR(s) : Rf_translateCharUTF8(s);
  live_handle *h = malloc(sizeof *h);
  if (!h) Rfmalloc_stopf(FM_ENOMEM, "cannot allocate a GGUF handle");
  fm_gguf *g = NULL;
  fm_err err;
  if (fm_gguf_open(path, &g, &err) != FM_OK) {
    free(h);
    Rfmalloc_raise_err(&err, NULL);
  }
  SEXP ptr = PROTECT(R_MakeExternalPtr(g, file_tag(), R_NilValue));
  h->ptr = ptr;
  h->prev = NULL;
  h->next = live_list;
  if (live_list) live_list->prev = h;
  live_list = h;
  R_RegisterCFinalizerEx(ptr, handle_finalize, TRUE);
  /* tensor views' products may run on mirai daemons, which open the file
   * by path and make the view with .gguf_parallel_view (R/tensor.R) */
  if (fm_gguf_fd(g) >= 0 && fm_gguf_size(g) > 0)
    Rfmalloc_file_add(fm_gguf_path(g), fm_gguf_fd(g), fm_gguf_bytes(g), (double)fm_gguf_size(g),
                      "Rgguf::.gguf_parallel_view");
  UNPROTECT(1);
  return ptr;
}

SEXP rgguf_is_open(SEXP x) {
  return Rf_ScalarLogical(TYPEOF(x) == EXTPTRSXP && R_ExternalPtrTag(x) == file_tag() &&
                          R_ExternalPtrAddr(x) != NULL);
}

static void set_names(SEXP x, const char *const *names, int n) {
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, n));
  for (int i = 0; i < n; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
  Rf_setAttrib(x, R_NamesSymbol, nm);
  UNPROTECT(1);
}

/* list(version, alignment, data_offset, size, n_kv, n_tensors, path) */
SEXP rgguf_info(SEXP x) {
  const fm_gguf *g = rgguf_file_of(x);
  static const char *const names[] = {"version", "alignment", "data_offset", "size",
                                      "n_kv",    "n_tensors", "path"};
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 7));
  SET_VECTOR_ELT(out, 0, Rf_ScalarInteger((int)fm_gguf_version(g)));
  SET_VECTOR_ELT(out, 1, Rf_ScalarReal((double)fm_gguf_alignment(g)));
  SET_VECTOR_ELT(out, 2, Rf_ScalarReal((double)fm_gguf_data_offset(g)));
  SET_VECTOR_ELT(out, 3, Rf_ScalarReal((double)fm_gguf_size(g)));
  SET_VECTOR_ELT(out, 4, Rf_ScalarReal((double)fm_gguf_n_kv(g)));
  SET_VECTOR_ELT(out, 5, Rf_ScalarReal((double)fm_gguf_n_tensors(g)));
  const char *p = fm_gguf_path(g);
  SET_VECTOR_ELT(out, 6, p ? Rf_ScalarString(Rf_mkCharCE(p, CE_UTF8)) : Rf_ScalarString(NA_STRING));
  set_names(out, names, 7);
  UNPROTECT(1);
  return out;
}

/* ---- metadata ------------------------------------------------------------
 * Representation (documented in ?gguf_metadata):
 *   uint8, int8, uint16, int16, int32  -> integer
 *   uint32, float32, float64           -> double (exact)
 *   uint64, int64 -> double when every value of the entry is at most 2^53 in
 *                    magnitude (exact), else character (decimal digits)
 *   bool -> logical; string -> character (UTF-8) when every string of the
 *   entry is UTF-8 text without NUL; otherwise the entry is a list of raw
 *   vectors, one per string (its bytes, exactly).
 * Arrays are vectors of the element representation. Keys and tensor names
 * are UTF-8 text without NUL (the parser refuses others): CE_UTF8. */

static int utf8_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t len;
    unsigned min;
    if (c < 0x80) { i++; continue; }
    else if ((c & 0xE0) == 0xC0) { len = 2; min = 0x80; c &= 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; min = 0x800; c &= 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; min = 0x10000; c &= 0x07; }
    else return 0;
    if (i + len > n) return 0;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return 0;
      c = (c << 6) | (s[i + k] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    i += len;
  }
  return 1;
}

/* A string known to be UTF-8 text without NUL (a key, a tensor name, a
 * value checked by utf8_valid and memchr). */
static SEXP str_elt(const char *s, size_t len) {
  if (len > INT_MAX) Rfmalloc_stopf(FM_EUNSUPPORTED, "a metadata string of %zu bytes is too long for R", len);
  return Rf_mkCharLenCE(s, (int)len, CE_UTF8);
}

static SEXP kv_value(const fm_gguf_kv *kv) {
  const uint64_t n = kv->n;
  if (n > (uint64_t)R_XLEN_T_MAX) Rfmalloc_stopf(FM_EUNSUPPORTED, "metadata array of %llu elements", (unsigned long long)n);
  const R_xlen_t nn = (R_xlen_t)n;
  SEXP out = R_NilValue;
  switch (kv->elem_type) {
  case FM_GGUF_U8: case FM_GGUF_I8: case FM_GGUF_U16: case FM_GGUF_I16: case FM_GGUF_I32: {
    out = PROTECT(Rf_allocVector(INTSXP, nn));
    int *o = INTEGER(out);
    for (R_xlen_t i = 0; i < nn; i++) {
      int64_t v = 0;
      if (fm_gguf_get_i64(kv, (uint64_t)i, &v) != 0) { UNPROTECT(1); Rfmalloc_stopf(FM_EINTERNAL, "metadata element %lld unreadable", (long long)i); }
      o[i] = (int)v;
    }
    break;
  }
  case FM_GGUF_U32: case FM_GGUF_F32: case FM_GGUF_F64: {
    out = PROTECT(Rf_allocVector(REALSXP, nn));
    double *o = REAL(out);
    for (R_xlen_t i = 0; i < nn; i++)
      if (fm_gguf_get_f64(kv, (uint64_t)i, &o[i]) != 0) { UNPROTECT(1); Rfmalloc_stopf(FM_EINTERNAL, "metadata element %lld unreadable", (long long)i); }
    break;
  }
  case FM_GGUF_U64: case FM_GGUF_I64: {
    const int is_signed = kv->elem_type == FM_GGUF_I64;
    const uint64_t lim = UINT64_C(1) << 53;
    int exact = 1;
    for (R_xlen_t i = 0; i < nn && exact; i++) {
      if (is_signed) {
        int64_t v = 0;
        if (fm_gguf_get_i64(kv, (uint64_t)i, &v) != 0) exact = 0;
        else exact = v <= (int64_t)lim && v >= -(int64_t)lim;
      } else {
        uint64_t v = 0;
        if (fm_gguf_get_u64(kv, (uint64_t)i, &v) != 0) exact = 0;
        else exact = v <= lim;
      }
    }
    if (exact) {
      out = PROTECT(Rf_allocVector(REALSXP, nn));
      for (R_xlen_t i = 0; i < nn; i++) {
        if (is_signed) { int64_t v = 0; (void)fm_gguf_get_i64(kv, (uint64_t)i, &v); REAL(out)[i] = (double)v; }
        else { uint64_t v = 0; (void)fm_gguf_get_u64(kv, (uint64_t)i, &v); REAL(out)[i] = (double)v; }
      }
    } else {
      out = PROTECT(Rf_allocVector(STRSXP, nn));
      char buf[32];
      for (R_xlen_t i = 0; i < nn; i++) {
        if (is_signed) { int64_t v = 0; (void)fm_gguf_get_i64(kv, (uint64_t)i, &v); snprintf(buf, sizeof buf, "%lld", (long long)v); }
        else { uint64_t v = 0; (void)fm_gguf_get_u64(kv, (uint64_t)i, &v); snprintf(buf, sizeof buf, "%llu", (unsigned long long)v); }
        SET_STRING_ELT(out, i, Rf_mkChar(buf));
      }
    }
    break;
  }
  case FM_GGUF_BOOL: {
    out = PROTECT(Rf_allocVector(LGLSXP, nn));
    for (R_xlen_t i = 0; i < nn; i++) {
      int64_t v = 0;
      if (fm_gguf_get_i64(kv, (uint64_t)i, &v) != 0) { UNPROTECT(1); Rfmalloc_stopf(FM_EINTERNAL, "metadata element %lld unreadable", (long long)i); }
      LOGICAL(out)[i] = v != 0;
    }
    break;
  }
  case FM_GGUF_STRING: {
    int has_nul = 0; /* or bytes that are not UTF-8: raw vectors */
    for (R_xlen_t i = 0; i < nn && !has_nul; i++) {
      const char *s = NULL;
      size_t len = 0;
      if (fm_gguf_get_str(kv, (uint64_t)i, &s, &len) != 0) Rfmalloc_stopf(FM_EINTERNAL, "metadata string %lld unreadable", (long long)i);
      has_nul = memchr(s, 0, len) != NULL || !utf8_valid((const unsigned char *)s, len);
    }
    out = PROTECT(Rf_allocVector(has_nul ? VECSXP : STRSXP, nn));
    for (R_xlen_t i = 0; i < nn; i++) {
      const char *s = NULL;
      size_t len = 0;
      (void)fm_gguf_get_str(kv, (uint64_t)i, &s, &len);
      if (has_nul) {
        SEXP r = Rf_allocVector(RAWSXP, (R_xlen_t)len);
        SET_VECTOR_ELT(out, i, r);
        if (len) memcpy(RAW(r), s, len);
      } else {
        SET_STRING_ELT(out, i, str_elt(s, len));
      }
    }
    break;
  }
  default:
    Rfmalloc_stopf(FM_EUNSUPPORTED, "metadata value type %d is not supported", (int)kv->elem_type);
  }
  UNPROTECT(1);
  return out;
}

/* list(values = named list, types = character) */
SEXP rgguf_metadata(SEXP x) {
  const fm_gguf *g = rgguf_file_of(x);
  const int64_t n = fm_gguf_n_kv(g);
  if (n > INT_MAX) Rfmalloc_stopf(FM_EUNSUPPORTED, "%lld metadata keys", (long long)n);
  int nprot = 0;
  SEXP vals = PROTECT(Rf_allocVector(VECSXP, (R_xlen_t)n)); nprot++;
  SEXP keys = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)n)); nprot++;
  SEXP types = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)n)); nprot++;
  char tbuf[64];
  for (int64_t i = 0; i < n; i++) {
    const fm_gguf_kv *kv = fm_gguf_kv_at(g, i);
    SET_STRING_ELT(keys, (R_xlen_t)i, str_elt(kv->key, kv->key_len));
    if (kv->type == FM_GGUF_ARRAY)
      snprintf(tbuf, sizeof tbuf, "array<%s>", fm_gguf_vtype_name(kv->elem_type));
    else
      snprintf(tbuf, sizeof tbuf, "%s", fm_gguf_vtype_name(kv->type));
    SET_STRING_ELT(types, (R_xlen_t)i, Rf_mkChar(tbuf));
    SET_VECTOR_ELT(vals, (R_xlen_t)i, kv_value(kv));
  }
  Rf_setAttrib(vals, R_NamesSymbol, keys);
  Rf_setAttrib(types, R_NamesSymbol, keys);
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 2)); nprot++;
  SET_VECTOR_ELT(out, 0, vals);
  SET_VECTOR_ELT(out, 1, types);
  UNPROTECT(nprot);
  return out;
}

/* list(name, type, type_id, n_dims, ne0, ne1, ne2, ne3, offset, bytes) */
SEXP rgguf_tensors(SEXP x) {
  const fm_gguf *g = rgguf_file_of(x);
  const int64_t n = fm_gguf_n_tensors(g);
  if (n > INT_MAX) Rfmalloc_stopf(FM_EUNSUPPORTED, "%lld tensors", (long long)n);
  static const char *const names[] = {"name", "type", "type_id", "n_dims", "ne0",
                                      "ne1",  "ne2",  "ne3",     "offset", "bytes"};
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 10));
  SEXP name = Rf_allocVector(STRSXP, (R_xlen_t)n);
  SET_VECTOR_ELT(out, 0, name);
  SEXP type = Rf_allocVector(STRSXP, (R_xlen_t)n);
  SET_VECTOR_ELT(out, 1, type);
  SEXP tid = Rf_allocVector(INTSXP, (R_xlen_t)n);
  SET_VECTOR_ELT(out, 2, tid);
  SEXP nd = Rf_allocVector(INTSXP, (R_xlen_t)n);
  SET_VECTOR_ELT(out, 3, nd);
  for (int k = 0; k < 4; k++) SET_VECTOR_ELT(out, 4 + k, Rf_allocVector(REALSXP, (R_xlen_t)n));
  SET_VECTOR_ELT(out, 8, Rf_allocVector(REALSXP, (R_xlen_t)n));
  SET_VECTOR_ELT(out, 9, Rf_allocVector(REALSXP, (R_xlen_t)n));
  for (int64_t i = 0; i < n; i++) {
    const fm_gguf_tensor *t = fm_gguf_tensor_at(g, i);
    SET_STRING_ELT(name, (R_xlen_t)i, str_elt(t->name, t->name_len));
    const char *tn = fm_gguf_type_name(t->type);
    SET_STRING_ELT(type, (R_xlen_t)i, tn ? Rf_mkChar(tn) : NA_STRING);
    INTEGER(tid)[i] = (int)t->type;
    INTEGER(nd)[i] = (int)t->n_dims;
    for (int k = 0; k < 4; k++) REAL(VECTOR_ELT(out, 4 + k))[i] = (double)t->ne[k];
    REAL(VECTOR_ELT(out, 8))[i] = (double)t->data_offset;
    REAL(VECTOR_ELT(out, 9))[i] = (double)t->n_bytes;
  }
  set_names(out, names, 10);
  UNPROTECT(1);
  return out;
}

const R_CallMethodDef rgguf_file_calls[] = {
    {"rgguf_open", (DL_FUNC)&rgguf_open, 1},
    {"rgguf_is_open", (DL_FUNC)&rgguf_is_open, 1},
    {"rgguf_info", (DL_FUNC)&rgguf_info, 1},
    {"rgguf_metadata", (DL_FUNC)&rgguf_metadata, 1},
    {"rgguf_tensors", (DL_FUNC)&rgguf_tensors, 1},
    {NULL, NULL, 0}};

void rgguf_init_callables(void) {
  R_RegisterCCallable("Rgguf", "Rgguf_file", (DL_FUNC)&Rgguf_file);
  R_RegisterCCallable("Rgguf", "Rgguf_check", (DL_FUNC)&Rgguf_check);
  R_RegisterCCallable("Rgguf", "Rgguf_llm_api", (DL_FUNC)&rgguf_llm_api);
}
