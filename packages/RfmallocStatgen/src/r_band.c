/* r_band.c: the band of a statgen_ld object as the core's fm_band
 * (r_band.h), so that a damaged or hand-made object is an R error, never a
 * read out of bounds.
 *
 * The whole layout (colptr nondecreasing whole numbers, every row index in
 * 0..n-1) is checked once per band: when it is made or reopened
 * (new_statgen_ld() calls stg_band_check), which is where the bytes of a
 * damaged runtime file arrive. The check leaves a token in the object
 * (part "checked", an external pointer) holding the data pointers and
 * lengths it saw and colptr as int64; each later call compares those in
 * O(1) and reuses the offsets. A token that does not match (parts replaced,
 * the runtime reopened elsewhere, or a band restored by readRDS, whose
 * pointer is NULL) is rebuilt by a full check. */
#include "r_band.h"

#include <stdint.h>
#include <string.h>

/* The token's payload, at the start of a raw vector that the token's
 * external pointer protects. */
typedef struct band_seen {
  const void *cp, *ri, *va;
  R_xlen_t n_cp, n_ri, n_va;
  int va_type;
  int64_t colptr[]; /* n + 1 checked offsets */
} band_seen;

static SEXP part(SEXP parts, const char *name, int required) {
  SEXP names = Rf_getAttrib(parts, R_NamesSymbol);
  if (TYPEOF(names) == STRSXP)
    for (R_xlen_t i = 0; i < XLENGTH(parts) && i < XLENGTH(names); i++)
      if (!strcmp(CHAR(STRING_ELT(names, i)), name)) return VECTOR_ELT(parts, i);
  if (required) Rf_error("LD band: part '%s' is missing", name);
  return R_NilValue;
}

static const void *data_of(SEXP x) {
  return TYPEOF(x) == REALSXP ? (const void *)REAL_RO(x)
         : TYPEOF(x) == INTSXP ? (const void *)INTEGER_RO(x)
                               : (const void *)RAW_RO(x);
}

/* The O(1) checks of every call: types, lengths, colptr's ends. */
static void band_shape(SEXP cp, SEXP ri, SEXP va, fm_band *b) {
  if (TYPEOF(cp) != REALSXP || XLENGTH(cp) < 1) Rf_error("LD band: colptr must be doubles");
  if (TYPEOF(ri) != INTSXP) Rf_error("LD band: rowidx must be integers");
  const R_xlen_t n = XLENGTH(cp) - 1;
  const double *c = REAL_RO(cp);
  if (c[0] != 0) Rf_error("LD band: colptr[1] must be 0");
  if (!(c[n] >= 0 && c[n] <= 9007199254740992.0 && c[n] == (double)(int64_t)c[n]))
    Rf_error("LD band: colptr[%lld] must be a whole number of entries", (long long)n + 1);
  const int64_t nnz = (int64_t)c[n];
  if ((int64_t)XLENGTH(ri) != nnz)
    Rf_error("LD band: rowidx has %lld entries, colptr says %lld", (long long)XLENGTH(ri),
             (long long)nnz);
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
  b->rowidx = (const int32_t *)INTEGER_RO(ri);
}

/* The full check, O(colptr + rowidx): colptr (already shaped) into c64. */
static void band_check_all(SEXP cp, const fm_band *b, int64_t *c64) {
  const double *c = REAL_RO(cp);
  const int64_t n = b->n;
  for (int64_t j = 0; j <= n; j++) {
    if (!(c[j] >= (j ? c[j - 1] : 0) && c[j] <= c[n] && c[j] == (double)(int64_t)c[j]))
      Rf_error("LD band: colptr must be nondecreasing whole numbers (at column %lld)",
               (long long)j);
    c64[j] = (int64_t)c[j];
  }
  const int32_t *r = b->rowidx;
  for (int64_t k = 0; k < c64[n]; k++)
    if (r[k] < 0 || r[k] >= n)
      Rf_error("LD band: rowidx[%lld] = %d is outside 0..%lld", (long long)k + 1, (int)r[k],
               (long long)n - 1);
}

/* A token's payload for the parts, after the full check: a raw vector
 * (unprotected: the caller protects it). */
static SEXP band_seen_new(SEXP cp, SEXP ri, SEXP va, const fm_band *b) {
  const size_t bytes = sizeof(band_seen) + ((size_t)b->n + 1) * sizeof(int64_t);
  SEXP raw = PROTECT(Rf_allocVector(RAWSXP, (R_xlen_t)bytes));
  band_seen *s = (band_seen *)RAW(raw);
  band_check_all(cp, b, s->colptr);
  s->cp = data_of(cp), s->ri = data_of(ri), s->va = data_of(va);
  s->n_cp = XLENGTH(cp), s->n_ri = XLENGTH(ri), s->n_va = XLENGTH(va);
  s->va_type = TYPEOF(va);
  UNPROTECT(1);
  return raw;
}

static int band_seen_matches(const band_seen *s, SEXP cp, SEXP ri, SEXP va) {
  return s && s->cp == data_of(cp) && s->ri == data_of(ri) && s->va == data_of(va) &&
         s->n_cp == XLENGTH(cp) && s->n_ri == XLENGTH(ri) && s->n_va == XLENGTH(va) &&
         s->va_type == TYPEOF(va);
}

void stg_band_get(SEXP parts, fm_band *b) {
  if (TYPEOF(parts) != VECSXP) Rf_error("LD band: parts must be a list");
  SEXP cp = part(parts, "colptr", 1), ri = part(parts, "rowidx", 1);
  SEXP va = part(parts, "values", 1), tok = part(parts, "checked", 0);
  band_shape(cp, ri, va, b);
  if (TYPEOF(tok) == EXTPTRSXP) {
    const band_seen *s = R_ExternalPtrAddr(tok);
    if (!band_seen_matches(s, cp, ri, va)) {
      SEXP raw = PROTECT(band_seen_new(cp, ri, va, b));
      R_SetExternalPtrProtected(tok, raw);
      R_SetExternalPtrAddr(tok, RAW(raw));
      UNPROTECT(1);
      s = R_ExternalPtrAddr(tok);
    }
    b->colptr = s->colptr;
    return;
  }
  /* no token (a hand-made parts list): check all, for this call only */
  int64_t *c64 = (int64_t *)R_alloc((size_t)b->n + 1, sizeof(int64_t));
  band_check_all(cp, b, c64);
  b->colptr = c64;
}

SEXP stg_band_check(SEXP parts) {
  if (TYPEOF(parts) != VECSXP) Rf_error("LD band: parts must be a list");
  SEXP cp = part(parts, "colptr", 1), ri = part(parts, "rowidx", 1);
  SEXP va = part(parts, "values", 1);
  fm_band b;
  band_shape(cp, ri, va, &b);
  SEXP raw = PROTECT(band_seen_new(cp, ri, va, &b));
  SEXP tok = R_MakeExternalPtr(RAW(raw), Rf_install("statgen_ld_checked"), raw);
  UNPROTECT(1);
  return tok;
}
