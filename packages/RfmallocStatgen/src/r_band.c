/* r_band.c: the band of a statgen_ld object as the core's fm_band
 * (r_band.h). The checks here are the layout's, made once per call, so that
 * a damaged or hand-made object is an R error, never a read out of bounds. */
#include "r_band.h"

#include <stdint.h>
#include <string.h>

static SEXP part(SEXP parts, const char *name) {
  SEXP names = Rf_getAttrib(parts, R_NamesSymbol);
  for (R_xlen_t i = 0; i < XLENGTH(parts); i++)
    if (!strcmp(CHAR(STRING_ELT(names, i)), name)) return VECTOR_ELT(parts, i);
  Rf_error("LD band: part '%s' is missing", name);
}

void stg_band_get(SEXP parts, fm_band *b) {
  if (TYPEOF(parts) != VECSXP) Rf_error("LD band: parts must be a list");
  SEXP cp = part(parts, "colptr"), ri = part(parts, "rowidx"), va = part(parts, "values");
  if (TYPEOF(cp) != REALSXP || XLENGTH(cp) < 1) Rf_error("LD band: colptr must be doubles");
  if (TYPEOF(ri) != INTSXP) Rf_error("LD band: rowidx must be integers");
  const R_xlen_t n = XLENGTH(cp) - 1;
  const double *c = REAL_RO(cp);
  int64_t *c64 = (int64_t *)R_alloc((size_t)n + 1, sizeof(int64_t));
  if (c[0] != 0) Rf_error("LD band: colptr[1] must be 0");
  for (R_xlen_t j = 0; j <= n; j++) {
    if (!(c[j] >= (j ? c[j - 1] : 0) && c[j] <= 9007199254740992.0))
      Rf_error("LD band: colptr must be nondecreasing whole numbers (at column %lld)",
               (long long)j);
    c64[j] = (int64_t)c[j];
  }
  const int64_t nnz = c64[n];
  if ((int64_t)XLENGTH(ri) != nnz)
    Rf_error("LD band: rowidx has %lld entries, colptr says %lld", (long long)XLENGTH(ri),
             (long long)nnz);
  const int *r = INTEGER_RO(ri);
  for (int64_t k = 0; k < nnz; k++)
    if (r[k] < 0 || r[k] >= n)
      Rf_error("LD band: rowidx[%lld] = %d is outside 0..%lld", (long long)k + 1, r[k],
               (long long)n - 1);
  if (TYPEOF(va) == REALSXP && (int64_t)XLENGTH(va) == nnz) {
    b->values = REAL_RO(va);
    b->dtype = FM_BAND_F64;
  } else if (TYPEOF(va) == RAWSXP && (int64_t)XLENGTH(va) == 4 * nnz) {
    b->values = RAW_RO(va);
    b->dtype = FM_BAND_F32;
  } else {
    Rf_error("LD band: values must be %lld doubles or %lld raw bytes (floats)", (long long)nnz,
             (long long)(4 * nnz));
  }
  b->n = (int64_t)n;
  b->colptr = c64;
  b->rowidx = (const int32_t *)r;
}
