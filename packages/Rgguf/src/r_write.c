/* r_write.c: R glue of the GGUF writer (fm_gguf_write.h; the writing is
 * the core's, core/src/llm/gguf_write.c, through GGML's own GGUF writer).
 *
 * R/write.R normalizes and validates the arguments; this file converts
 * them into the core's description, calls it and raises its errors. The
 * conversions are R's: metadata numbers (double or integer vectors) become
 * values of the exact GGUF type when they are whole and in the type's range
 * (uint64 and int64 up to 2^53 in magnitude, where doubles stop being
 * exact, and beyond as decimal strings); strings are translated to UTF-8;
 * NA is refused. Tensor data: doubles and integers (no NA) are handed over
 * as numbers, a raw vector as the encoded bytes; dimensions as int64 (0
 * for what is no whole number >= 1, which the core refuses). Everything
 * else (types, names, shapes, sizes, duplicates) the core checks. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "r_calls.h"

#include "fm/fm_gguf.h"
#include "fm/fm_gguf_write.h"

#include <Rfmalloc.h>

/* Parse a 64-bit integer given as a decimal string (u64/i64 values beyond
 * 2^53). Returns 0 on success. */
static int parse_i64(const char *s, int is_unsigned, uint64_t *out) {
  if (!*s) return 1;
  char *end = NULL;
  errno = 0;
  if (is_unsigned) {
    if (*s == '-') return 1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return 1;
    *out = (uint64_t)v;
  } else {
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return 1;
    *out = (uint64_t)(int64_t)v;
  }
  return 0;
}

/* The whole numbers GGUF integer type t takes from R numbers; 0 when t is
 * no integer type. */
static int int_range(fm_gguf_vtype t, double *lo, double *hi) {
  switch (t) {
  case FM_GGUF_U8: *lo = 0, *hi = 255; return 1;
  case FM_GGUF_I8: *lo = -128, *hi = 127; return 1;
  case FM_GGUF_U16: *lo = 0, *hi = 65535; return 1;
  case FM_GGUF_I16: *lo = -32768, *hi = 32767; return 1;
  case FM_GGUF_U32: *lo = 0, *hi = 4294967295.0; return 1;
  case FM_GGUF_I32: *lo = -2147483648.0, *hi = 2147483647.0; return 1;
  case FM_GGUF_U64: *lo = 0, *hi = 9007199254740992.0; return 1; /* 2^53 */
  case FM_GGUF_I64: *lo = -9007199254740992.0, *hi = 9007199254740992.0; return 1;
  default: return 0;
  }
}

/* Store x (checked) as a value of numeric type t at dst. */
static void put_number(fm_gguf_vtype t, double x, void *dst) {
  switch (t) {
  case FM_GGUF_U8: { uint8_t y = (uint8_t)x; memcpy(dst, &y, 1); break; }
  case FM_GGUF_I8: { int8_t y = (int8_t)x; memcpy(dst, &y, 1); break; }
  case FM_GGUF_U16: { uint16_t y = (uint16_t)x; memcpy(dst, &y, 2); break; }
  case FM_GGUF_I16: { int16_t y = (int16_t)x; memcpy(dst, &y, 2); break; }
  case FM_GGUF_U32: { uint32_t y = (uint32_t)x; memcpy(dst, &y, 4); break; }
  case FM_GGUF_I32: { int32_t y = (int32_t)x; memcpy(dst, &y, 4); break; }
  case FM_GGUF_F32: { float y = (float)x; memcpy(dst, &y, 4); break; }
  case FM_GGUF_U64: { uint64_t y = (uint64_t)x; memcpy(dst, &y, 8); break; }
  case FM_GGUF_I64: { int64_t y = (int64_t)x; memcpy(dst, &y, 8); break; }
  case FM_GGUF_F64: memcpy(dst, &x, 8); break;
  default: break;
  }
}

/* The values of metadata entry `key` of GGUF type t from the R vector v
 * (R_alloc'd), or NULL for a type the core refuses. Raises for R values
 * the type cannot hold. */
static const void *kv_values(SEXP v, fm_gguf_vtype t, const char *key) {
  const R_xlen_t n = XLENGTH(v);
  const size_t size = t == FM_GGUF_STRING ? sizeof(char *) : fm_gguf_vtype_size(t);
  double lo = 0, hi = 0;
  const int is_int = int_range(t, &lo, &hi);
  if (size == 0) return NULL; /* ARRAY or unknown */
  const int fits = t == FM_GGUF_STRING ? TYPEOF(v) == STRSXP
                   : t == FM_GGUF_BOOL ? TYPEOF(v) == LGLSXP
                   : TYPEOF(v) == REALSXP || TYPEOF(v) == INTSXP ||
                         (TYPEOF(v) == STRSXP && (t == FM_GGUF_U64 || t == FM_GGUF_I64));
  if (!fits)
    Rfmalloc_stopf(FM_EARG, "metadata '%s': an R %s cannot hold GGUF type %s", key,
                   Rf_type2char(TYPEOF(v)), fm_gguf_vtype_name(t));
  char *out = R_alloc(n > 0 ? (size_t)n : 1, size);
  for (R_xlen_t i = 0; i < n; i++) {
    void *dst = out + (size_t)i * size;
    if (t == FM_GGUF_STRING) {
      SEXP s = STRING_ELT(v, i);
      if (s == NA_STRING)
        Rfmalloc_stopf(FM_EARG, "metadata '%s': element %lld is NA, not a string", key, (long long)i + 1);
      const char *u = Rf_translateCharUTF8(s);
      memcpy(dst, &u, sizeof u);
    } else if (t == FM_GGUF_BOOL) {
      if (LOGICAL(v)[i] == NA_LOGICAL)
        Rfmalloc_stopf(FM_EARG, "metadata '%s': element %lld is NA, not TRUE or FALSE", key,
                       (long long)i + 1);
      *(uint8_t *)dst = LOGICAL(v)[i] != 0;
    } else if (TYPEOF(v) == STRSXP) { /* uint64/int64 as decimal strings */
      uint64_t u;
      SEXP s = STRING_ELT(v, i);
      if (s == NA_STRING || parse_i64(CHAR(s), t == FM_GGUF_U64, &u))
        Rfmalloc_stopf(FM_EARG, "metadata '%s': element %lld is not a decimal %s", key,
                       (long long)i + 1, fm_gguf_vtype_name(t));
      memcpy(dst, &u, 8);
    } else {
      const int na = TYPEOF(v) == INTSXP && INTEGER(v)[i] == NA_INTEGER;
      const double x = TYPEOF(v) == INTSXP ? (double)INTEGER(v)[i] : REAL(v)[i];
      if (is_int && (na || !(x >= lo && x <= hi) || x != (double)(int64_t)x))
        Rfmalloc_stopf(FM_EARG, "metadata '%s': element %lld is not a whole number in [%.0f, %.0f] for type %s",
                       key, (long long)i + 1, lo, hi, fm_gguf_vtype_name(t));
      if (na) Rfmalloc_stopf(FM_EARG, "metadata '%s': element %lld is NA", key, (long long)i + 1);
      put_number(t, x, dst);
    }
  }
  return out;
}

/* One tensor of the .Call's arguments as the core's description. */
static void tensor_of(fm_gguf_wtensor *w, SEXP name, int type, SEXP dims, SEXP data) {
  if (name == NA_STRING) Rfmalloc_stopf(FM_EARG, "tensor names must be non-empty strings");
  w->name = Rf_translateCharUTF8(name);
  w->type = type == NA_INTEGER || type < 0 ? UINT32_MAX : (uint32_t)type;
  const R_xlen_t nd = TYPEOF(dims) == INTSXP || TYPEOF(dims) == REALSXP ? XLENGTH(dims) : 0;
  w->n_dims = nd > INT_MAX ? INT_MAX : (int)nd;
  for (int k = 0; k < FM_GGUF_MAX_DIMS; k++) {
    double x = k >= nd ? 1
               : TYPEOF(dims) == INTSXP ? (INTEGER(dims)[k] == NA_INTEGER ? 0 : INTEGER(dims)[k])
                                        : REAL(dims)[k];
    w->ne[k] = x >= 1 && x <= 4.0e15 && x == (double)(int64_t)x ? (int64_t)x : 0;
  }
  w->n = (int64_t)XLENGTH(data);
  switch (TYPEOF(data)) {
  case RAWSXP: w->src = FM_GGUF_WSRC_BYTES, w->data = RAW(data); break;
  case REALSXP: w->src = FM_GGUF_WSRC_F64, w->data = REAL(data); break;
  case INTSXP:
    for (R_xlen_t j = 0; j < XLENGTH(data); j++)
      if (INTEGER(data)[j] == NA_INTEGER)
        Rfmalloc_stopf(FM_EARG, "tensor '%s': value %lld is NA", w->name, (long long)j + 1);
    w->src = FM_GGUF_WSRC_I32, w->data = INTEGER(data);
    break;
  default:
    Rfmalloc_stopf(FM_EARG, "tensor '%s': data must be numeric or raw, not %s", w->name,
                   Rf_type2char(TYPEOF(data)));
  }
}

/* .Call entry: path (string), keys (character), vtypes (integer, GGUF
 * numbering of the scalar or element type), is_array (logical), values
 * (list), tnames (character), ttypes (integer GGML type ids), tdims (list of
 * integer/double vectors: ne[0], ne[1], ...), tdata (list: double, integer or
 * raw), alignment (integer). Returns NULL; raises fm_error_<status>. */
static SEXP fmr_gguf_write(SEXP path, SEXP keys, SEXP vtypes, SEXP is_array, SEXP values,
                           SEXP tnames, SEXP ttypes, SEXP tdims, SEXP tdata, SEXP alignment) {
  if (TYPEOF(path) != STRSXP || XLENGTH(path) != 1 || STRING_ELT(path, 0) == NA_STRING)
    Rfmalloc_stopf(FM_EARG, "path must be a single string");
  const R_xlen_t n_kv = XLENGTH(keys), n_t = XLENGTH(tnames);
  if (TYPEOF(keys) != STRSXP || TYPEOF(vtypes) != INTSXP || TYPEOF(is_array) != LGLSXP ||
      TYPEOF(values) != VECSXP || XLENGTH(vtypes) != n_kv || XLENGTH(is_array) != n_kv ||
      XLENGTH(values) != n_kv)
    Rfmalloc_stopf(FM_EINTERNAL, "gguf_write: malformed metadata arguments");
  if (TYPEOF(tnames) != STRSXP || TYPEOF(ttypes) != INTSXP || TYPEOF(tdims) != VECSXP ||
      TYPEOF(tdata) != VECSXP || XLENGTH(ttypes) != n_t || XLENGTH(tdims) != n_t ||
      XLENGTH(tdata) != n_t)
    Rfmalloc_stopf(FM_EINTERNAL, "gguf_write: malformed tensor arguments");
  if (TYPEOF(alignment) != INTSXP || XLENGTH(alignment) != 1)
    Rfmalloc_stopf(FM_EARG, "alignment must be a single integer");
  const int align = INTEGER(alignment)[0];

  fm_gguf_wkv *kv = (fm_gguf_wkv *)R_alloc(n_kv > 0 ? (size_t)n_kv : 1, sizeof *kv);
  for (R_xlen_t i = 0; i < n_kv; i++) {
    if (STRING_ELT(keys, i) == NA_STRING)
      Rfmalloc_stopf(FM_EARG, "metadata names must be non-empty strings");
    SEXP v = VECTOR_ELT(values, i);
    const int t = INTEGER(vtypes)[i];
    kv[i].key = Rf_translateCharUTF8(STRING_ELT(keys, i));
    kv[i].type = (fm_gguf_vtype)(t == NA_INTEGER ? -1 : t);
    kv[i].is_array = LOGICAL(is_array)[i] == TRUE;
    kv[i].n = (uint64_t)XLENGTH(v);
    kv[i].values = kv_values(v, kv[i].type, kv[i].key);
  }
  fm_gguf_wtensor *ts = (fm_gguf_wtensor *)R_alloc(n_t > 0 ? (size_t)n_t : 1, sizeof *ts);
  for (R_xlen_t i = 0; i < n_t; i++)
    tensor_of(&ts[i], STRING_ELT(tnames, i), INTEGER(ttypes)[i], VECTOR_ELT(tdims, i),
              VECTOR_ELT(tdata, i));
  const char *expanded = R_ExpandFileName(Rf_translateChar(STRING_ELT(path, 0)));
  char *fname = R_alloc(strlen(expanded) + 1, 1);
  strcpy(fname, expanded);

  fm_ctl ctl = Rfmalloc_ctl(R_NilValue);
  fm_err err;
  fm_status st = fm_gguf_write(fname, kv, (int64_t)n_kv, ts, (int64_t)n_t,
                               align == NA_INTEGER || align < 0 ? 0 : (uint32_t)align, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, NULL);
  return R_NilValue;
}

/* .Call entry: GGML's name and block traits of type ids (integer vector):
 * a data frame-like list (id, name, block, type_size). Unknown ids get NA.
 * The reader's table, which core/tests/llm/llm_gguf_traits checks equals
 * GGML's. */
static SEXP fmr_gguf_ggml_types(SEXP ids) {
  if (TYPEOF(ids) != INTSXP) Rf_error("ids must be an integer vector");
  R_xlen_t n = XLENGTH(ids);
  int nprot = 0;
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 3)); nprot++;
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, n)); nprot++;
  SEXP bl = PROTECT(Rf_allocVector(INTSXP, n)); nprot++;
  SEXP sz = PROTECT(Rf_allocVector(INTSXP, n)); nprot++;
  for (R_xlen_t i = 0; i < n; i++) {
    int id = INTEGER(ids)[i];
    const char *name = id == NA_INTEGER || id < 0 ? NULL : fm_gguf_type_name((uint32_t)id);
    SET_STRING_ELT(nm, i, name ? Rf_mkChar(name) : NA_STRING);
    INTEGER(bl)[i] = name ? (int)fm_gguf_type_block((uint32_t)id) : NA_INTEGER;
    INTEGER(sz)[i] = name ? (int)fm_gguf_type_size((uint32_t)id) : NA_INTEGER;
  }
  SET_VECTOR_ELT(out, 0, nm);
  SET_VECTOR_ELT(out, 1, bl);
  SET_VECTOR_ELT(out, 2, sz);
  UNPROTECT(nprot);
  return out;
}

/* .Call entry: the first of the numbers x (double or integer; R refused
 * NA) that GGML type `type` cannot be encoded from (fm_gguf_wrange_of):
 * list(its 1-based index, the type's range in words); NULL when every
 * value fits or numbers cannot be encoded to the type (fm_gguf_write says
 * so, naming the tensor). */
static SEXP fmr_gguf_first_bad(SEXP type, SEXP x) {
  fm_gguf_wrange r;
  const int id = Rf_asInteger(type);
  if (id == NA_INTEGER || id < 0 || !fm_gguf_wrange_of((uint32_t)id, &r)) return R_NilValue;
  if (TYPEOF(x) != REALSXP && TYPEOF(x) != INTSXP) Rf_error("x must be double or integer");
  const int64_t j = TYPEOF(x) == REALSXP ? fm_gguf_wrange_first_bad(&r, FM_GGUF_WSRC_F64, REAL(x), XLENGTH(x))
                                         : fm_gguf_wrange_first_bad(&r, FM_GGUF_WSRC_I32, INTEGER(x), XLENGTH(x));
  if (j < 0) return R_NilValue;
  char text[256];
  fm_gguf_wrange_text((uint32_t)id, text, sizeof text);
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
  SET_VECTOR_ELT(out, 0, Rf_ScalarReal((double)j + 1));
  SET_VECTOR_ELT(out, 1, Rf_mkString(text));
  UNPROTECT(1);
  return out;
}

const R_CallMethodDef rgguf_write_calls[] = {
    {"fmr_gguf_write", (DL_FUNC)&fmr_gguf_write, 10},
    {"fmr_gguf_ggml_types", (DL_FUNC)&fmr_gguf_ggml_types, 1},
    {"fmr_gguf_first_bad", (DL_FUNC)&fmr_gguf_first_bad, 2},
    {NULL, NULL, 0}};
