/* r_alp.c: .Call entry points for ALP-compressed double matrices
 * (fm_codec_alp.h): encode into a blob held by an external pointer, copy it
 * into storage that R allocated, describe a stored blob, and switch the
 * fused backend (fm_backend_alp.h) off and on for tests. Decoding,
 * products and statistics go through the generic codec-matrix entry points
 * (r_mat.c builds the fm_mat with fm_mat_init_alp). */
#include "r_mat.h"
#include "r_calls.h"

#include "fm/fm_backend_alp.h"
#include "fm/fm_codec_alp.h"

#include <stdlib.h>
#include <string.h>

/* The encoder's blob, owned by an external pointer until it is stored. */
typedef struct alp_blob {
  uint8_t *bytes; /* owned, free() */
  size_t size;
} alp_blob;

static void blob_finalize(SEXP ptr) {
  alp_blob *b = R_ExternalPtrAddr(ptr);
  if (!b) return;
  free(b->bytes);
  free(b);
  R_ClearExternalPtr(ptr);
}

/* Encode the double matrix x; returns list(blob pointer, size in bytes). */
SEXP fmr_alp_encode(SEXP x) {
  int nprot = 0;
  if (TYPEOF(x) != REALSXP || !Rf_isMatrix(x)) fmr_stop(FM_EARG, "x must be a double matrix");
  const int64_t n = Rf_nrows(x), p = Rf_ncols(x);
  alp_blob *b = calloc(1, sizeof *b);
  if (!b) fmr_stop(FM_ENOMEM, "cannot allocate the alp blob record");
  SEXP ptr = PROTECT(R_MakeExternalPtr(b, Rf_install("fm_alp_blob"), R_NilValue)); nprot++;
  R_RegisterCFinalizerEx(ptr, blob_finalize, TRUE);
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 2)); nprot++;
  fm_ctl ctl = fmr_ctl();
  fm_err err;
  fmr_finish(fm_codec_alp_encode(REAL_RO(x), n, p, n > 0 ? n : 1, 0, &ctl, &b->bytes, &b->size,
                                 &err),
             &err);
  SET_VECTOR_ELT(res, 0, ptr);
  SET_VECTOR_ELT(res, 1, Rf_ScalarReal((double)b->size));
  UNPROTECT(nprot);
  return res;
}

/* Copy the blob into the raw vector storage (at least as long) and free it. */
SEXP fmr_alp_store(SEXP ptr, SEXP storage) {
  alp_blob *b = TYPEOF(ptr) == EXTPTRSXP ? R_ExternalPtrAddr(ptr) : NULL;
  if (!b || !b->bytes) fmr_stop(FM_EARG, "the alp blob was already stored or released");
  if (TYPEOF(storage) != RAWSXP || (size_t)XLENGTH(storage) < b->size)
    fmr_stop(FM_EARG, "alp storage must be a raw vector of at least %llu bytes",
             (unsigned long long)b->size);
  memcpy(RAW(storage), b->bytes, b->size);
  blob_finalize(ptr);
  return R_NilValue;
}

/* What the blob of a codec matrix holds (it is checked on the way). */
SEXP fmr_alp_info(SEXP h) {
  fm_mat x;
  fmr_view_get(h, &x, NULL);
  if (x.codec != FM_CODEC_ALP) fmr_stop(FM_EARG, "not an alp matrix");
  fm_alp_info info;
  fm_err err;
  if (fm_codec_alp_info(x.data, (size_t)x.col_stride, &info, &err) != FM_OK) fmr_raise(&err);
  const char *names[] = {"bytes", "bits_per_value", "vector_size", "vectors", "raw_vectors",
                         "exceptions"};
  const double vals[] = {(double)info.n_bytes,   info.bits_per_value,   (double)info.vector_size,
                         (double)info.n_vectors, (double)info.n_raw,    (double)info.n_exceptions};
  int nprot = 0;
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 6)); nprot++;
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, 6)); nprot++;
  for (int i = 0; i < 6; i++) {
    SET_VECTOR_ELT(out, i, Rf_ScalarReal(vals[i]));
    SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
  }
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(nprot);
  return out;
}

/* Register (on = TRUE) or remove the "alp" backend: tests compare it with
 * the reference path by turning it off. */
SEXP fmr_alp_backend(SEXP on) {
  fm_backend_unregister(FM_BACKEND_ALP_NAME);
  if (Rf_asLogical(on) == TRUE) {
    fm_err err;
    if (fm_backend_register(FM_BACKEND_ALP_NAME, fm_backend_alp, NULL, &err) != FM_OK)
      fmr_raise(&err);
  }
  return R_NilValue;
}

/* This module's .Call entry points (r_calls.h; r_init.c registers them). */
const R_CallMethodDef fmr_alp_calls[] = {
    FMR_CALLDEF(fmr_alp_encode, 1),
    FMR_CALLDEF(fmr_alp_store, 2),
    FMR_CALLDEF(fmr_alp_info, 1),
    FMR_CALLDEF(fmr_alp_backend, 1),
    {NULL, NULL, 0}};
