/* r_tensor.c: R glue of fm_llm_tensor.h: tensor views (Rfmalloc codec
 * matrices over the external codecs that decode GGML blocks), whole-tensor
 * dequantization, and the GGML backend's place in Rfmalloc's backend
 * registry. The decoding and the product are the core's
 * (core/src/llm/llm_tensor.c); this file validates arguments, calls it,
 * converts the result and raises.
 *
 * Orientation (fm_llm_tensor.h): a GGML tensor with ne[0] (contiguous) and
 * ne[1] is an R matrix of ne[1] rows and ne[0] columns; ne[2], ne[3] stack
 * further rows in a view; as numeric, an (ne1, ne0, ne2[, ne3]) array. */
#include "r_calls.h"

#include "fm/fm_backend.h"
#include "fm/fm_gguf.h"
#include "fm/fm_llm_tensor.h"
#include "fm/fm_panel.h"

#include <Rfmalloc.h>

#include <limits.h>
#include <string.h>

static const char backend_name[] = "ggml";

/* The backend's threads come from each product's control block (the stack's
 * setting; one thread in a forked child, fm_llm_tensor.h). */
void rgguf_tensor_init(void) {
  /* builds the codec table now rather than inside a first decode */
  (void)fm_llm_tensor_codec(0);
}

/* Before the DLL goes: views made over the core's codecs forget them (they
 * raise fm_error_eclosed instead of calling unloaded code or reading a
 * closed mapping), and the backend leaves the registry. */
void rgguf_tensor_unload(void) {
  for (uint32_t t = 0; t < 256; t++) { /* GGML's type ids are far below 256 */
    const fm_ext_codec *c = fm_llm_tensor_codec(t);
    if (c) (void)Rfmalloc_ext_release(c);
  }
  Rfmalloc_backend_unregister(backend_name);
}

SEXP rgguf_backend_register(SEXP s_on) {
  Rfmalloc_backend_unregister(backend_name);
  if (Rf_asLogical(s_on) == TRUE)
    Rfmalloc_backend_register(backend_name, fm_llm_tensor_backend, NULL);
  return R_NilValue;
}

/* ---- tensors by name ----------------------------------------------------- */

static const fm_gguf_tensor *find_tensor(const fm_gguf *g, SEXP s_name) {
  if (TYPEOF(s_name) != STRSXP || XLENGTH(s_name) != 1 || STRING_ELT(s_name, 0) == NA_STRING)
    Rfmalloc_stopf(FM_EARG, "name must be a single string");
  /* names are UTF-8 (the reader refuses others); a string marked "bytes"
   * is looked up by its bytes (and, not being UTF-8, not found) */
  SEXP s = STRING_ELT(s_name, 0);
  const char *name = (Rf_getCharCE(s) == CE_BYTES) ? CHAR(s) : Rf_translateCharUTF8(s);
  const int64_t i = fm_gguf_find_tensor(g, name);
  const char *path = fm_gguf_path(g);
  if (i < 0)
    Rfmalloc_stopf(FM_EARG, "GGUF file '%s' has no tensor named '%s'", path ? path : "?",
                   (Rf_getCharCE(s) == CE_BYTES) ? "(a string marked \"bytes\")" : name);
  return fm_gguf_tensor_at(g, i);
}

SEXP rgguf_tensor_view(SEXP x, SEXP s_name, SEXP s_source) {
  const fm_gguf *g = rgguf_file_of(x);
  const fm_gguf_tensor *t = find_tensor(g, s_name);
  if (TYPEOF(s_source) != STRSXP || XLENGTH(s_source) != 1 || STRING_ELT(s_source, 0) == NA_STRING)
    Rfmalloc_stopf(FM_EARG, "source must be a single string");
  fm_mat m;
  fm_err err;
  if (fm_llm_tensor_view(g, t, &m, &err) != FM_OK) Rfmalloc_raise_err(&err, NULL);
  return Rfmalloc_ext_matrix(m.ext, m.data, (double)m.n_rows, (double)m.n_cols,
                             (double)m.col_stride, (double)t->n_bytes, x, R_NilValue,
                             CHAR(STRING_ELT(s_source, 0)));
}

/* The whole tensor dequantized (fm_llm_tensor_dequantize): a vector for a
 * 1-D tensor, an ne1 x ne0 matrix for 2-D, an (ne1, ne0, ne2[, ne3]) array
 * above (R's [i, j, k, l] is GGML's element (j, i, k, l)). */
SEXP rgguf_tensor_numeric(SEXP x, SEXP s_name) {
  const fm_gguf *g = rgguf_file_of(x);
  const fm_gguf_tensor *t = find_tensor(g, s_name);
  const int64_t n = fm_llm_tensor_n_elements(t);
  if (n < 0 || (double)n > (double)R_XLEN_T_MAX || n > (int64_t)4e15)
    Rfmalloc_stopf(FM_EUNSUPPORTED, "tensor '%.*s' has too many elements for an R vector",
               (int)t->name_len, t->name);
  int nprot = 0;
  SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)n)); nprot++;
  fm_err err;
  if (fm_llm_tensor_dequantize(g, t, REAL(out), n, &err) != FM_OK) {
    UNPROTECT(nprot);
    Rfmalloc_raise_err(&err, NULL);
  }
  if (t->n_dims > 1) {
    const int nd = t->n_dims > 4 ? 4 : (int)t->n_dims;
    const int fits = t->ne[0] <= INT_MAX && t->ne[1] <= INT_MAX && t->ne[2] <= INT_MAX &&
                     t->ne[3] <= INT_MAX;
    SEXP dim = PROTECT(Rf_allocVector(fits ? INTSXP : REALSXP, nd)); nprot++;
    for (int d = 0; d < nd; d++) {
      const int64_t v = d == 0 ? t->ne[1] : d == 1 ? t->ne[0] : t->ne[d];
      if (fits) INTEGER(dim)[d] = (int)v;
      else REAL(dim)[d] = (double)v;
    }
    Rf_setAttrib(out, R_DimSymbol, dim);
  }
  UNPROTECT(nprot);
  return out;
}

/* For tests: GGML's name of the vec_dot type of a type id (the type the
 * backend quantizes the operand to), or NA. */
SEXP rgguf_vec_dot_type(SEXP s_type) {
  const int t = Rf_asInteger(s_type);
  const char *name = t == NA_INTEGER || t < 0 ? NULL : fm_llm_tensor_vec_dot_type((uint32_t)t);
  return name ? Rf_mkString(name) : Rf_ScalarString(NA_STRING);
}

const R_CallMethodDef rgguf_tensor_calls[] = {
    {"rgguf_tensor_view", (DL_FUNC)&rgguf_tensor_view, 3},
    {"rgguf_tensor_numeric", (DL_FUNC)&rgguf_tensor_numeric, 2},
    {"rgguf_backend_register", (DL_FUNC)&rgguf_backend_register, 1},
    {"rgguf_vec_dot_type", (DL_FUNC)&rgguf_vec_dot_type, 1},
    {NULL, NULL, 0}};
