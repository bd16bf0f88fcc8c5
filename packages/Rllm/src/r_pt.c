/* r_pt.c: R glue of the .pt state-dict reader (fm_pt.h): one call that
 * reads a checkpoint's tensors into R, for the importer (R/import_pt.R).
 * The file is closed before any R error is raised. */
#include <R.h>
#include <Rinternals.h>
#include <math.h>
#include <string.h>

#include "fm/fm_base.h"
#include "fm/fm_pt.h"
#include <Rfmalloc.h>

#include "r_calls.h"

/* binary16 / bfloat16 bits -> double */
static double half_to_double(uint16_t h) {
  const int e = (h >> 10) & 0x1f, s = h >> 15;
  const double m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? R_NaN : R_PosInf) : ldexp(m + 1024.0, e - 25);
  return s ? -v : v;
}
static double bf16_to_double(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Element i of t as a double (little-endian storage, read with memcpy:
 * the bytes need not be aligned for the host). */
static double element(const fm_pt_tensor *t, int64_t i) {
  const unsigned char *p = (const unsigned char *)t->data + (size_t)i * fm_pt_dtype_size(t->dtype);
  switch (t->dtype) {
  case FM_PT_F32: { float v; memcpy(&v, p, 4); return v; }
  case FM_PT_F64: { double v; memcpy(&v, p, 8); return v; }
  case FM_PT_F16: { uint16_t v; memcpy(&v, p, 2); return half_to_double(v); }
  case FM_PT_BF16: { uint16_t v; memcpy(&v, p, 2); return bf16_to_double(v); }
  case FM_PT_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
  case FM_PT_I32: { int32_t v; memcpy(&v, p, 4); return v; }
  case FM_PT_I16: { int16_t v; memcpy(&v, p, 2); return v; }
  case FM_PT_I8: return (double)(signed char)p[0];
  case FM_PT_U8: case FM_PT_BOOL: return p[0];
  }
  return R_NaN;
}

/* rllm_pt_read(path): list(top = the archive's folder, tensors = a list,
 * in state-dict order, of list(name, dtype (fm_pt_dtype_name), shape
 * (PyTorch's order, outermost first), values (doubles, row-major))). */
static SEXP rllm_pt_read(SEXP path) {
  if (!Rf_isString(path) || XLENGTH(path) != 1 || STRING_ELT(path, 0) == NA_STRING)
    Rfmalloc_raise(FM_EARG, "path must be one string");
  fm_err err;
  fm_pt *pt = NULL;
  if (fm_pt_open(Rf_translateCharUTF8(STRING_ELT(path, 0)), &pt, &err) != FM_OK)
    Rfmalloc_raise_err(&err, NULL);
  const int64_t n = fm_pt_n_tensors(pt);
  int nprot = 0;
  const char *names[] = {"top", "tensors", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, names));
  nprot++;
  SET_VECTOR_ELT(out, 0, Rf_mkString(fm_pt_top(pt)));
  SEXP list = rllm_column(out, 1, VECSXP, (R_xlen_t)n);
  const char *fields[] = {"name", "dtype", "shape", "values", ""};
  for (int64_t k = 0; k < n; k++) {
    const fm_pt_tensor *t = fm_pt_tensor_at(pt, k);
    SEXP e = Rf_mkNamed(VECSXP, fields);
    SET_VECTOR_ELT(list, (R_xlen_t)k, e);
    SET_VECTOR_ELT(e, 0, Rf_ScalarString(Rf_mkCharLenCE(t->name, (int)t->name_len, CE_UTF8)));
    SET_VECTOR_ELT(e, 1, Rf_mkString(fm_pt_dtype_name(t->dtype)));
    SEXP shape = rllm_column(e, 2, REALSXP, t->n_dims);
    for (int d = 0; d < t->n_dims; d++) REAL(shape)[d] = (double)t->shape[d];
    SEXP v = rllm_column(e, 3, REALSXP, (R_xlen_t)t->numel);
    for (int64_t i = 0; i < t->numel; i++) REAL(v)[i] = element(t, i);
  }
  fm_pt_close(pt);
  UNPROTECT(nprot);
  return out;
}

const R_CallMethodDef rllm_pt_calls[] = {{"rllm_pt_read", (DL_FUNC)&rllm_pt_read, 1},
                                         {NULL, NULL, 0}};
