/* r_write.c: writing GGUF files through GGML's own GGUF writer (gguf.h of
 * ggmlR: gguf_init_empty, gguf_set_val_*, gguf_set_arr_*, gguf_add_tensor,
 * gguf_write_to_file).
 *
 * R/write.R normalizes and validates the arguments; this file checks again
 * everything GGML would assert on (types, lengths, names, shapes, block
 * multiples), so that no GGML assertion can fire, and only then creates the
 * GGML and GGUF contexts. Between their creation and their release no R
 * API that can raise is called, so nothing leaks on an R error.
 *
 * Tensor data: R doubles are rounded to float32 and then converted to the
 * requested GGML type (F16/BF16 rows, or ggml_quantize_chunk without an
 * importance matrix for the quantized types); integers fill I8/I16/I32;
 * a raw vector is taken as already encoded bytes of the type.
 * Shapes: ne[0] (the contiguous dimension) is R's first dimension. */
#define _POSIX_C_SOURCE 200809L /* fmemopen */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ggml.h>
#include <gguf.h>

#include "r_calls.h"

/* GGUF names are limited by upstream GGML to 63 bytes (GGML_MAX_NAME 64);
 * ggmlR's build allows longer ones, but other readers (llama.cpp) do not. */
#define RGGUF_MAX_NAME 63
#define RGGUF_MAX_DIMS 4

/* The GGUF spec's name of value type t (as R/write.R spells it). */
static const char *vtype_name(int t) {
  static const char *const names[] = {"uint8", "int8", "uint16", "int16", "uint32",
                                      "int32", "float32", "bool", "string", "array",
                                      "uint64", "int64", "float64"};
  return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "?";
}

/* Error result for R/write.R: c(code, message), raised there with fm_abort. */
static SEXP write_fail(const char *code, const char *msg) {
  SEXP out = PROTECT(Rf_allocVector(STRSXP, 2));
  SET_STRING_ELT(out, 0, Rf_mkChar(code));
  SET_STRING_ELT(out, 1, Rf_mkCharCE(msg, CE_UTF8));
  UNPROTECT(1);
  return out;
}

/* Whether t is a tensor type whose values this writer can encode from
 * numbers (raw bytes are accepted for every type GGML knows). */
static int type_from_numbers(enum ggml_type t) {
  switch (t) {
  case GGML_TYPE_F32: case GGML_TYPE_F16: case GGML_TYPE_BF16:
  case GGML_TYPE_I8: case GGML_TYPE_I16: case GGML_TYPE_I32:
  case GGML_TYPE_Q4_0: case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1:
  case GGML_TYPE_Q8_0: case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_Q4_K:
  case GGML_TYPE_Q5_K: case GGML_TYPE_Q6_K:
    return 1;
  default:
    return 0;
  }
}

static int is_int_type(enum ggml_type t) {
  return t == GGML_TYPE_I8 || t == GGML_TYPE_I16 || t == GGML_TYPE_I32;
}

/* One prepared tensor: validated shape and type, data pointer into R memory. */
typedef struct {
  const char *name;
  enum ggml_type type;
  int n_dims;
  int64_t ne[RGGUF_MAX_DIMS];
  int64_t n_el;
  size_t n_bytes;
  SEXP data; /* REALSXP, INTSXP or RAWSXP, protected by the caller's list */
} wtensor;

/* Parse a 64-bit integer given as a decimal string (u64/i64 values beyond
 * 2^53). Returns 0 on success. */
static int parse_i64(const char *s, int is_unsigned, uint64_t *out) {
  if (!s || !*s) return 1;
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

/* Element i of a numeric metadata value as double (REALSXP or INTSXP). */
static double num_at(SEXP v, R_xlen_t i) {
  return TYPEOF(v) == INTSXP ? (double)INTEGER(v)[i] : REAL(v)[i];
}

/* Check that value v fits metadata type t (GGUF numbering); msg gets why not. */
static int check_value(SEXP v, int t, const char *key, char *msg, size_t msg_len) {
  R_xlen_t n = XLENGTH(v);
  switch (t) {
  case GGUF_TYPE_STRING:
    if (TYPEOF(v) != STRSXP) goto bad_type;
    for (R_xlen_t i = 0; i < n; i++)
      if (STRING_ELT(v, i) == NA_STRING) {
        snprintf(msg, msg_len, "metadata '%s': element %lld is NA, not a string", key,
                 (long long)i + 1);
        return 1;
      }
    return 0;
  case GGUF_TYPE_BOOL:
    if (TYPEOF(v) != LGLSXP) goto bad_type;
    for (R_xlen_t i = 0; i < n; i++)
      if (LOGICAL(v)[i] == NA_LOGICAL) {
        snprintf(msg, msg_len, "metadata '%s': element %lld is NA, not TRUE or FALSE", key,
                 (long long)i + 1);
        return 1;
      }
    return 0;
  case GGUF_TYPE_FLOAT32: case GGUF_TYPE_FLOAT64:
    if (TYPEOF(v) != REALSXP && TYPEOF(v) != INTSXP) goto bad_type;
    return 0;
  case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64:
    if (TYPEOF(v) == STRSXP) {
      for (R_xlen_t i = 0; i < n; i++) {
        uint64_t u;
        SEXP s = STRING_ELT(v, i);
        if (s == NA_STRING || parse_i64(CHAR(s), t == GGUF_TYPE_UINT64, &u)) {
          snprintf(msg, msg_len, "metadata '%s': element %lld is not a decimal %s", key,
                   (long long)i + 1, t == GGUF_TYPE_UINT64 ? "uint64" : "int64");
          return 1;
        }
      }
      return 0;
    }
    /* fall through: numbers, checked below */
  default: {
    if (TYPEOF(v) != REALSXP && TYPEOF(v) != INTSXP) goto bad_type;
    double lo = 0, hi = 0;
    switch (t) {
    case GGUF_TYPE_UINT8: lo = 0; hi = 255; break;
    case GGUF_TYPE_INT8: lo = -128; hi = 127; break;
    case GGUF_TYPE_UINT16: lo = 0; hi = 65535; break;
    case GGUF_TYPE_INT16: lo = -32768; hi = 32767; break;
    case GGUF_TYPE_UINT32: lo = 0; hi = 4294967295.0; break;
    case GGUF_TYPE_INT32: lo = -2147483648.0; hi = 2147483647.0; break;
    case GGUF_TYPE_UINT64: lo = 0; hi = 9007199254740992.0; break;         /* 2^53 */
    case GGUF_TYPE_INT64: lo = -9007199254740992.0; hi = 9007199254740992.0; break;
    default:
      snprintf(msg, msg_len, "metadata '%s': unknown GGUF value type %d", key, t);
      return 1;
    }
    for (R_xlen_t i = 0; i < n; i++) {
      if (TYPEOF(v) == INTSXP && INTEGER(v)[i] == NA_INTEGER) goto bad_elem;
      double x = num_at(v, i);
      if (!(x >= lo && x <= hi) || x != (double)(int64_t)x) goto bad_elem;
      continue;
    bad_elem:
      snprintf(msg, msg_len,
               "metadata '%s': element %lld is not a whole number in [%.0f, %.0f] for type %s",
               key, (long long)i + 1, lo, hi, vtype_name(t));
      return 1;
    }
    return 0;
  }
  }
bad_type:
  snprintf(msg, msg_len, "metadata '%s': an R %s cannot hold GGUF type %s", key,
           Rf_type2char(TYPEOF(v)), vtype_name(t));
  return 1;
}

/* Bytes of one element of an array of scalar type t. */
static size_t scalar_size(int t) {
  switch (t) {
  case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
  case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
  case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
  case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
  default: return 0;
  }
}

/* Encode element i of v (already checked) as scalar type t into dst. */
static void encode_scalar(SEXP v, R_xlen_t i, int t, void *dst) {
  if (t == GGUF_TYPE_BOOL) { int8_t b = LOGICAL(v)[i] ? 1 : 0; memcpy(dst, &b, 1); return; }
  if ((t == GGUF_TYPE_UINT64 || t == GGUF_TYPE_INT64) && TYPEOF(v) == STRSXP) {
    uint64_t u = 0;
    (void)parse_i64(CHAR(STRING_ELT(v, i)), t == GGUF_TYPE_UINT64, &u);
    memcpy(dst, &u, 8);
    return;
  }
  double x = num_at(v, i);
  switch (t) {
  case GGUF_TYPE_UINT8: { uint8_t y = (uint8_t)x; memcpy(dst, &y, 1); break; }
  case GGUF_TYPE_INT8: { int8_t y = (int8_t)x; memcpy(dst, &y, 1); break; }
  case GGUF_TYPE_UINT16: { uint16_t y = (uint16_t)x; memcpy(dst, &y, 2); break; }
  case GGUF_TYPE_INT16: { int16_t y = (int16_t)x; memcpy(dst, &y, 2); break; }
  case GGUF_TYPE_UINT32: { uint32_t y = (uint32_t)x; memcpy(dst, &y, 4); break; }
  case GGUF_TYPE_INT32: { int32_t y = (int32_t)x; memcpy(dst, &y, 4); break; }
  case GGUF_TYPE_FLOAT32: { float y = (float)x; memcpy(dst, &y, 4); break; }
  case GGUF_TYPE_UINT64: { uint64_t y = (uint64_t)x; memcpy(dst, &y, 8); break; }
  case GGUF_TYPE_INT64: { int64_t y = (int64_t)x; memcpy(dst, &y, 8); break; }
  case GGUF_TYPE_FLOAT64: { double y = x; memcpy(dst, &y, 8); break; }
  default: break;
  }
}

/* Set one metadata entry on ctx. strs: the UTF-8 strings of a string
 * value (translated before any GGML state exists); scratch: memory for the
 * encoded elements of a numeric array, sized by the caller. Calls nothing
 * of R that can raise. */
static void set_kv(struct gguf_context *ctx, const char *key, int t, int is_array, SEXP v,
                   const char **strs, void *scratch) {
  if (!is_array) {
    if (t == GGUF_TYPE_STRING) { gguf_set_val_str(ctx, key, strs[0]); return; }
    if (t == GGUF_TYPE_BOOL) { gguf_set_val_bool(ctx, key, LOGICAL(v)[0] != 0); return; }
    unsigned char buf[8];
    encode_scalar(v, 0, t, buf);
    switch (t) {
    case GGUF_TYPE_UINT8: { uint8_t y; memcpy(&y, buf, 1); gguf_set_val_u8(ctx, key, y); break; }
    case GGUF_TYPE_INT8: { int8_t y; memcpy(&y, buf, 1); gguf_set_val_i8(ctx, key, y); break; }
    case GGUF_TYPE_UINT16: { uint16_t y; memcpy(&y, buf, 2); gguf_set_val_u16(ctx, key, y); break; }
    case GGUF_TYPE_INT16: { int16_t y; memcpy(&y, buf, 2); gguf_set_val_i16(ctx, key, y); break; }
    case GGUF_TYPE_UINT32: { uint32_t y; memcpy(&y, buf, 4); gguf_set_val_u32(ctx, key, y); break; }
    case GGUF_TYPE_INT32: { int32_t y; memcpy(&y, buf, 4); gguf_set_val_i32(ctx, key, y); break; }
    case GGUF_TYPE_FLOAT32: { float y; memcpy(&y, buf, 4); gguf_set_val_f32(ctx, key, y); break; }
    case GGUF_TYPE_UINT64: { uint64_t y; memcpy(&y, buf, 8); gguf_set_val_u64(ctx, key, y); break; }
    case GGUF_TYPE_INT64: { int64_t y; memcpy(&y, buf, 8); gguf_set_val_i64(ctx, key, y); break; }
    case GGUF_TYPE_FLOAT64: { double y; memcpy(&y, buf, 8); gguf_set_val_f64(ctx, key, y); break; }
    default: break;
    }
    return;
  }
  R_xlen_t n = XLENGTH(v);
  if (t == GGUF_TYPE_STRING) {
    gguf_set_arr_str(ctx, key, strs, (size_t)n);
    return;
  }
  size_t es = scalar_size(t);
  for (R_xlen_t i = 0; i < n; i++) encode_scalar(v, i, t, (char *)scratch + (size_t)i * es);
  gguf_set_arr_data(ctx, key, (enum gguf_type)t, scratch, (size_t)n);
}

/* An empty GGUF context whose alignment is `align`. GGML's writer pads
 * tensors and the data section to the context's alignment, which only its
 * reader sets (from general.alignment; gguf_set_val_u32 stores the key but
 * leaves the padding at 32), so the context comes from GGML reading a
 * header of no tensors and that one key, from memory. NULL on failure. */
static struct gguf_context *aligned_context(int align) {
  static const char key[] = GGUF_KEY_GENERAL_ALIGNMENT;
  /* the header (57 bytes) padded to the data section, which is empty */
  size_t size = ((57 + (size_t)align - 1) / (size_t)align) * (size_t)align;
  unsigned char *buf = calloc(size, 1);
  if (!buf) return NULL;
  size_t n = 0;
  uint32_t u32;
  uint64_t u64;
  memcpy(buf + n, GGUF_MAGIC, 4), n += 4;
  u32 = GGUF_VERSION, memcpy(buf + n, &u32, 4), n += 4;
  u64 = 0, memcpy(buf + n, &u64, 8), n += 8; /* tensors */
  u64 = 1, memcpy(buf + n, &u64, 8), n += 8; /* key-value pairs */
  u64 = sizeof key - 1, memcpy(buf + n, &u64, 8), n += 8;
  memcpy(buf + n, key, sizeof key - 1), n += sizeof key - 1;
  u32 = GGUF_TYPE_UINT32, memcpy(buf + n, &u32, 4), n += 4;
  u32 = (uint32_t)align, memcpy(buf + n, &u32, 4), n += 4;
  FILE *f = fmemopen(buf, size, "rb");
  if (!f) {
    free(buf);
    return NULL;
  }
  struct gguf_init_params p = {true, NULL};
  struct gguf_context *gg = gguf_init_from_file_ptr(f, p);
  fclose(f);
  free(buf);
  if (gg && gguf_get_alignment(gg) != (size_t)align) {
    gguf_free(gg);
    gg = NULL;
  }
  return gg;
}

/* .Call entry: path (string), keys (character), vtypes (integer, GGUF
 * numbering of the scalar or element type), is_array (logical), values
 * (list), tnames (character), ttypes (integer ggml type ids), tdims (list of
 * integer/double vectors: ne[0], ne[1], ...), tdata (list: double, integer or
 * raw), alignment (integer). Returns NULL on success, c(code, message) on a
 * refusal that R/write.R raises as an fm_error condition. */
static SEXP fmr_gguf_write(SEXP path, SEXP keys, SEXP vtypes, SEXP is_array, SEXP values,
                           SEXP tnames, SEXP ttypes, SEXP tdims, SEXP tdata, SEXP alignment) {
  char msg[512];
  if (TYPEOF(path) != STRSXP || XLENGTH(path) != 1 || STRING_ELT(path, 0) == NA_STRING)
    return write_fail("earg", "path must be a single string");
  R_xlen_t n_kv = XLENGTH(keys);
  if (TYPEOF(keys) != STRSXP || TYPEOF(vtypes) != INTSXP || TYPEOF(is_array) != LGLSXP ||
      TYPEOF(values) != VECSXP || XLENGTH(vtypes) != n_kv || XLENGTH(is_array) != n_kv ||
      XLENGTH(values) != n_kv)
    return write_fail("einternal", "gguf_write: malformed metadata arguments");
  R_xlen_t n_t = XLENGTH(tnames);
  if (TYPEOF(tnames) != STRSXP || TYPEOF(ttypes) != INTSXP || TYPEOF(tdims) != VECSXP ||
      TYPEOF(tdata) != VECSXP || XLENGTH(ttypes) != n_t || XLENGTH(tdims) != n_t ||
      XLENGTH(tdata) != n_t)
    return write_fail("einternal", "gguf_write: malformed tensor arguments");
  if (TYPEOF(alignment) != INTSXP || XLENGTH(alignment) != 1)
    return write_fail("earg", "alignment must be a single integer");
  int align = INTEGER(alignment)[0];
  if (align == NA_INTEGER || align < 1 || align > 65536 || (align & (align - 1)) != 0) {
    snprintf(msg, sizeof msg, "alignment must be a power of two from 1 to 65536, got %d", align);
    return write_fail("earg", msg);
  }

  /* Metadata: keys, types and values; scratch sized for the largest array. */
  size_t scratch_bytes = 8;
  for (R_xlen_t i = 0; i < n_kv; i++) {
    SEXP k = STRING_ELT(keys, i);
    if (k == NA_STRING || !*CHAR(k))
      return write_fail("earg", "metadata names must be non-empty strings");
    const char *key = Rf_translateCharUTF8(k);
    for (R_xlen_t j = 0; j < i; j++)
      if (!strcmp(key, Rf_translateCharUTF8(STRING_ELT(keys, j)))) {
        snprintf(msg, sizeof msg, "metadata key '%s' is given twice", key);
        return write_fail("earg", msg);
      }
    int t = INTEGER(vtypes)[i];
    if (t == NA_INTEGER || t < 0 || t >= GGUF_TYPE_COUNT || t == GGUF_TYPE_ARRAY) {
      snprintf(msg, sizeof msg, "metadata '%s': unknown GGUF value type %d", key, t);
      return write_fail("earg", msg);
    }
    SEXP v = VECTOR_ELT(values, i);
    int arr = LOGICAL(is_array)[i] == TRUE;
    if (!arr && XLENGTH(v) != 1) {
      snprintf(msg, sizeof msg, "metadata '%s': a scalar needs exactly one value, got %lld", key,
               (long long)XLENGTH(v));
      return write_fail("earg", msg);
    }
    if (check_value(v, t, key, msg, sizeof msg)) return write_fail("earg", msg);
    if (arr) {
      if (t != GGUF_TYPE_STRING && (size_t)XLENGTH(v) * scalar_size(t) > scratch_bytes)
        scratch_bytes = (size_t)XLENGTH(v) * scalar_size(t);
    }
    if (!strcmp(key, GGUF_KEY_GENERAL_ALIGNMENT))
      return write_fail("earg", "metadata must not set general.alignment; use the alignment argument");
  }

  /* Tensors: names, types, shapes, data lengths. */
  wtensor *ts = (wtensor *)R_alloc(n_t > 0 ? (size_t)n_t : 1, sizeof(wtensor));
  size_t ctx_bytes = 1024 + (size_t)(n_t + 1) * ggml_tensor_overhead();
  for (R_xlen_t i = 0; i < n_t; i++) {
    wtensor *w = &ts[i];
    SEXP nm = STRING_ELT(tnames, i);
    if (nm == NA_STRING || !*CHAR(nm)) return write_fail("earg", "tensor names must be non-empty strings");
    w->name = Rf_translateCharUTF8(nm);
    if (strlen(w->name) > RGGUF_MAX_NAME) {
      snprintf(msg, sizeof msg, "tensor name '%.40s...' is %d bytes long; GGUF readers allow %d",
               w->name, (int)strlen(w->name), RGGUF_MAX_NAME);
      return write_fail("earg", msg);
    }
    for (R_xlen_t j = 0; j < i; j++)
      if (!strcmp(w->name, ts[j].name)) {
        snprintf(msg, sizeof msg, "tensor '%s' is given twice", w->name);
        return write_fail("earg", msg);
      }
    int ty = INTEGER(ttypes)[i];
    if (ty == NA_INTEGER || ty < 0 || ty >= GGML_TYPE_COUNT || ggml_blck_size((enum ggml_type)ty) <= 0 ||
        ggml_type_size((enum ggml_type)ty) == 0) {
      snprintf(msg, sizeof msg, "tensor '%s': unknown GGML type id %d", w->name, ty);
      return write_fail("earg", msg);
    }
    w->type = (enum ggml_type)ty;
    SEXP d = VECTOR_ELT(tdims, i);
    if ((TYPEOF(d) != INTSXP && TYPEOF(d) != REALSXP) || XLENGTH(d) < 1 || XLENGTH(d) > RGGUF_MAX_DIMS) {
      snprintf(msg, sizeof msg, "tensor '%s': needs 1 to %d dimensions", w->name, RGGUF_MAX_DIMS);
      return write_fail("earg", msg);
    }
    w->n_dims = (int)XLENGTH(d);
    w->n_el = 1;
    for (int k = 0; k < RGGUF_MAX_DIMS; k++) {
      if (k >= w->n_dims) { w->ne[k] = 1; continue; }
      double x = TYPEOF(d) == INTSXP ? (INTEGER(d)[k] == NA_INTEGER ? -1 : INTEGER(d)[k]) : REAL(d)[k];
      if (!(x >= 1 && x <= 4.0e15) || x != (double)(int64_t)x) {
        snprintf(msg, sizeof msg, "tensor '%s': dimension %d must be a whole number >= 1", w->name, k + 1);
        return write_fail("earg", msg);
      }
      w->ne[k] = (int64_t)x;
      if (w->n_el > INT64_MAX / 8 / w->ne[k]) {
        snprintf(msg, sizeof msg, "tensor '%s': too many elements", w->name);
        return write_fail("earg", msg);
      }
      w->n_el *= w->ne[k];
    }
    int64_t blck = ggml_blck_size(w->type);
    if (w->ne[0] % blck != 0) {
      snprintf(msg, sizeof msg,
               "tensor '%s': type %s stores rows in blocks of %lld values, but ne[0] is %lld",
               w->name, ggml_type_name(w->type), (long long)blck, (long long)w->ne[0]);
      return write_fail("earg", msg);
    }
    w->n_bytes = ggml_row_size(w->type, w->ne[0]) * (size_t)(w->n_el / w->ne[0]);
    w->data = VECTOR_ELT(tdata, i);
    switch (TYPEOF(w->data)) {
    case RAWSXP:
      if ((size_t)XLENGTH(w->data) != w->n_bytes) {
        snprintf(msg, sizeof msg, "tensor '%s': %s of shape %lld x %lld x %lld x %lld takes %llu bytes, got %lld raw bytes",
                 w->name, ggml_type_name(w->type), (long long)w->ne[0], (long long)w->ne[1],
                 (long long)w->ne[2], (long long)w->ne[3], (unsigned long long)w->n_bytes,
                 (long long)XLENGTH(w->data));
        return write_fail("earg", msg);
      }
      break;
    case REALSXP: case INTSXP:
      if (!type_from_numbers(w->type)) {
        snprintf(msg, sizeof msg, "tensor '%s': type %s cannot be encoded from numbers here; give its bytes as a raw vector",
                 w->name, ggml_type_name(w->type));
        return write_fail("eunsupported", msg);
      }
      if (XLENGTH(w->data) != w->n_el) {
        snprintf(msg, sizeof msg, "tensor '%s': shape holds %lld values, got %lld", w->name,
                 (long long)w->n_el, (long long)XLENGTH(w->data));
        return write_fail("earg", msg);
      }
      if (is_int_type(w->type)) {
        double lo = w->type == GGML_TYPE_I8 ? -128 : w->type == GGML_TYPE_I16 ? -32768 : -2147483647.0;
        double hi = w->type == GGML_TYPE_I8 ? 127 : w->type == GGML_TYPE_I16 ? 32767 : 2147483647.0;
        for (R_xlen_t j = 0; j < XLENGTH(w->data); j++) {
          double x = TYPEOF(w->data) == INTSXP
                         ? (INTEGER(w->data)[j] == NA_INTEGER ? NAN : INTEGER(w->data)[j])
                         : REAL(w->data)[j];
          if (!(x >= lo && x <= hi) || x != (double)(int64_t)x) {
            snprintf(msg, sizeof msg, "tensor '%s': value %lld is not a whole number that %s holds",
                     w->name, (long long)j + 1, ggml_type_name(w->type));
            return write_fail("earg", msg);
          }
        }
      } else if (TYPEOF(w->data) == INTSXP) {
        for (R_xlen_t j = 0; j < XLENGTH(w->data); j++)
          if (INTEGER(w->data)[j] == NA_INTEGER) {
            snprintf(msg, sizeof msg, "tensor '%s': value %lld is NA", w->name, (long long)j + 1);
            return write_fail("earg", msg);
          }
      }
      break;
    default:
      snprintf(msg, sizeof msg, "tensor '%s': data must be numeric or raw, not %s", w->name,
               Rf_type2char(TYPEOF(w->data)));
      return write_fail("earg", msg);
    }
    ctx_bytes += w->n_bytes + GGML_MEM_ALIGN;
  }

  /* Scratch memory and UTF-8 strings, all taken before GGML state exists. */
  void *kv_scratch = R_alloc(scratch_bytes, 1);
  const char **kv_keys = (const char **)R_alloc(n_kv > 0 ? (size_t)n_kv : 1, sizeof(char *));
  const char ***kv_strs = (const char ***)R_alloc(n_kv > 0 ? (size_t)n_kv : 1, sizeof(char **));
  for (R_xlen_t i = 0; i < n_kv; i++) {
    kv_keys[i] = Rf_translateCharUTF8(STRING_ELT(keys, i));
    kv_strs[i] = NULL;
    if (INTEGER(vtypes)[i] != GGUF_TYPE_STRING) continue;
    SEXP v = VECTOR_ELT(values, i);
    kv_strs[i] = (const char **)R_alloc(XLENGTH(v) > 0 ? (size_t)XLENGTH(v) : 1, sizeof(char *));
    for (R_xlen_t j = 0; j < XLENGTH(v); j++) kv_strs[i][j] = Rf_translateCharUTF8(STRING_ELT(v, j));
  }
  int64_t max_el = 1;
  for (R_xlen_t i = 0; i < n_t; i++)
    if (TYPEOF(ts[i].data) != RAWSXP && !is_int_type(ts[i].type) && ts[i].n_el > max_el)
      max_el = ts[i].n_el;
  float *f32 = (float *)R_alloc((size_t)max_el, sizeof(float));
  const char *fname = R_ExpandFileName(Rf_translateChar(STRING_ELT(path, 0)));
  size_t fname_len = strlen(fname);
  char *fname_copy = R_alloc(fname_len + 1, 1);
  memcpy(fname_copy, fname, fname_len + 1);

  /* From here on: no R call that can raise until both contexts are freed. */
  struct ggml_init_params ip = {ctx_bytes, NULL, false};
  struct ggml_context *gctx = ggml_init(ip);
  if (!gctx) return write_fail("enomem", "gguf_write: could not allocate the GGML context");
  struct gguf_context *gg = align == GGUF_DEFAULT_ALIGNMENT ? gguf_init_empty() : aligned_context(align);
  if (!gg) {
    ggml_free(gctx);
    return write_fail("enomem", "gguf_write: could not create the GGUF context");
  }
  for (R_xlen_t i = 0; i < n_kv; i++)
    set_kv(gg, kv_keys[i], INTEGER(vtypes)[i], LOGICAL(is_array)[i] == TRUE,
           VECTOR_ELT(values, i), kv_strs[i], kv_scratch);

  for (R_xlen_t i = 0; i < n_t; i++) {
    wtensor *w = &ts[i];
    struct ggml_tensor *t = ggml_new_tensor(gctx, w->type, w->n_dims, w->ne);
    ggml_set_name(t, w->name);
    SEXP d = w->data;
    if (TYPEOF(d) == RAWSXP) {
      memcpy(t->data, RAW(d), w->n_bytes);
    } else if (is_int_type(w->type)) {
      for (int64_t j = 0; j < w->n_el; j++) {
        double x = TYPEOF(d) == INTSXP ? (double)INTEGER(d)[j] : REAL(d)[j];
        if (w->type == GGML_TYPE_I8) ((int8_t *)t->data)[j] = (int8_t)x;
        else if (w->type == GGML_TYPE_I16) ((int16_t *)t->data)[j] = (int16_t)x;
        else ((int32_t *)t->data)[j] = (int32_t)x;
      }
    } else {
      for (int64_t j = 0; j < w->n_el; j++)
        f32[j] = TYPEOF(d) == INTSXP ? (float)INTEGER(d)[j] : (float)REAL(d)[j];
      if (w->type == GGML_TYPE_F32) memcpy(t->data, f32, (size_t)w->n_el * sizeof(float));
      else if (w->type == GGML_TYPE_F16) ggml_fp32_to_fp16_row(f32, (ggml_fp16_t *)t->data, w->n_el);
      else if (w->type == GGML_TYPE_BF16) ggml_fp32_to_bf16_row_ref(f32, (ggml_bf16_t *)t->data, w->n_el);
      else ggml_quantize_chunk(w->type, f32, t->data, 0, w->n_el / w->ne[0], w->ne[0], NULL);
    }
    gguf_add_tensor(gg, t);
  }
  bool ok = gguf_write_to_file(gg, fname_copy, false);
  gguf_free(gg);
  ggml_free(gctx);
  if (!ok) {
    snprintf(msg, sizeof msg, "could not write GGUF file '%s'", fname_copy);
    return write_fail("eio", msg);
  }
  return R_NilValue;
}

/* .Call entry: GGML's name and block traits of type ids (integer vector):
 * a data frame-like list (id, name, block, type_size). Unknown ids get NA. */
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
    const char *name = NULL;
    if (id != NA_INTEGER && id >= 0 && id < GGML_TYPE_COUNT && ggml_type_size((enum ggml_type)id) > 0)
      name = ggml_type_name((enum ggml_type)id);
    if (!name || !*name || !strcmp(name, "DEPRECATED")) {
      SET_STRING_ELT(nm, i, NA_STRING);
      INTEGER(bl)[i] = NA_INTEGER;
      INTEGER(sz)[i] = NA_INTEGER;
    } else {
      SET_STRING_ELT(nm, i, Rf_mkChar(name));
      INTEGER(bl)[i] = (int)ggml_blck_size((enum ggml_type)id);
      INTEGER(sz)[i] = (int)ggml_type_size((enum ggml_type)id);
    }
  }
  SET_VECTOR_ELT(out, 0, nm);
  SET_VECTOR_ELT(out, 1, bl);
  SET_VECTOR_ELT(out, 2, sz);
  UNPROTECT(nprot);
  return out;
}

const R_CallMethodDef rgguf_write_calls[] = {
    {"fmr_gguf_write", (DL_FUNC)&fmr_gguf_write, 10},
    {"fmr_gguf_ggml_types", (DL_FUNC)&fmr_gguf_ggml_types, 1},
    {NULL, NULL, 0}};
