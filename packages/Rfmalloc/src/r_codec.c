/* r_codec.c: .Call entry points for the genotype codecs (encode into storage
 * that R allocated, typed haplotype rows) and for borrowed file views. */
#include "r_mat.h"
#include "r_calls.h"

#include "fm/fm_codec_bed2.h"
#include "fm/fm_fmt_registry.h"
#include "fm/fm_codec_dos8.h"
#include "fm/fm_codec_hap1.h"
#include "fm/fm_fileview.h"
#include "r_parallel.h"
#include "fm/fm_stats_colvar.h"

static void check_out(SEXP out, int64_t need, const char *what) {
  if (TYPEOF(out) != RAWSXP || XLENGTH(out) < need)
    fmr_stop(FM_EARG, "%s output must be a raw vector of at least %lld bytes", what,
             (long long)need);
}

SEXP fmr_bed2_encode(SEXP g, SEXP out) {
  if (TYPEOF(g) != INTSXP || !Rf_isMatrix(g)) fmr_stop(FM_EARG, "g must be an integer matrix");
  int64_t n = Rf_nrows(g), m = Rf_ncols(g);
  check_out(out, fm_codec_bed2_col_bytes(n) * m, "bed");
  fm_err err;
  if (fm_codec_bed2_encode(INTEGER_RO(g), n, m, n, RAW(out), &err) != FM_OK) fmr_raise(&err);
  return R_NilValue;
}

SEXP fmr_dos8_encode(SEXP x, SEXP out) {
  if (TYPEOF(x) != REALSXP || !Rf_isMatrix(x)) fmr_stop(FM_EARG, "x must be a double matrix");
  int64_t n = Rf_nrows(x), m = Rf_ncols(x);
  check_out(out, n * m, "dosage");
  fm_err err;
  if (fm_codec_dos8_encode(REAL_RO(x), n, m, n, RAW(out), n, &err) != FM_OK) fmr_raise(&err);
  return R_NilValue;
}

SEXP fmr_hap1_encode(SEXP h, SEXP out) {
  if (TYPEOF(h) != INTSXP || !Rf_isMatrix(h)) fmr_stop(FM_EARG, "h must be an integer matrix");
  int64_t n_haps = Rf_nrows(h), n_loci = Rf_ncols(h);
  check_out(out, fm_codec_hap1_row_bytes(n_haps) * n_loci, "haplotype");
  fm_err err;
  if (fm_codec_hap1_encode(INTEGER_RO(h), n_haps, n_loci, n_haps, RAW(out), &err) != FM_OK)
    fmr_raise(&err);
  return R_NilValue;
}

/* Alleles of loci [l0, l0 + n) (0-based l0) as an n_haps x n integer matrix. */
/* .Call(fmr_fmt_files, format, path): the main file and companions of a
 * fileset as the core's format registry finds them (fm_fmt_resolve), named
 * by role: c(bed = , bim = , fam = ) for "bed". */
SEXP fmr_fmt_files(SEXP s_format, SEXP s_path) {
  const fm_fmt_format *f = fm_fmt_by_name(CHAR(STRING_ELT(s_format, 0)));
  if (!f) fmr_stop(FM_EARG, "'%s' is not a format of the registry", CHAR(STRING_ELT(s_format, 0)));
  fm_fmt_fileset *fs = (fm_fmt_fileset *)R_alloc(1, sizeof *fs);
  fm_err err;
  if (fm_fmt_resolve(f, Rf_translateCharUTF8(STRING_ELT(s_path, 0)), NULL, fs, &err) != FM_OK)
    fmr_raise(&err);
  const int n = 1 + f->n_companions;
  SEXP out = PROTECT(Rf_allocVector(STRSXP, n));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, n));
  SET_STRING_ELT(nm, 0, Rf_mkChar(f->name));
  for (int i = 0; i < n; i++) {
    SET_STRING_ELT(out, i, Rf_mkCharCE(fs->path[i], CE_UTF8));
    if (i > 0) SET_STRING_ELT(nm, i, Rf_mkChar(f->companion[i - 1].name));
  }
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

/* .Call(fmr_hap1_row_bytes, n_haps): bytes of one locus row (the core's
 * layout, fm_codec_hap1.h), so R never writes the formula again. */
SEXP fmr_hap1_row_bytes(SEXP s_n_haps) {
  return Rf_ScalarReal((double)fm_codec_hap1_row_bytes((int64_t)Rf_asReal(s_n_haps)));
}

SEXP fmr_hap1_rows(SEXP storage, SEXP s_n_haps, SEXP s_n_loci, SEXP s_l0, SEXP s_n) {
  int64_t n_haps = (int64_t)Rf_asReal(s_n_haps), n_loci = (int64_t)Rf_asReal(s_n_loci);
  int64_t l0 = (int64_t)Rf_asReal(s_l0), n = (int64_t)Rf_asReal(s_n);
  if (l0 < 0 || n < 0 || l0 + n > n_loci)
    fmr_stop(FM_EARG, "loci %lld..%lld are outside 1..%lld", (long long)l0 + 1, (long long)(l0 + n),
             (long long)n_loci);
  if (TYPEOF(storage) != RAWSXP ||
      XLENGTH(storage) < fm_codec_hap1_row_bytes(n_haps) * n_loci)
    fmr_stop(FM_EARG, "haplotype storage is smaller than %lld rows", (long long)n_loci);
  SEXP out = PROTECT(Rf_allocMatrix(INTSXP, (int)n_haps, (int)n));
  fm_codec_hap1_decode_rows(RAW_RO(storage), n_haps, l0, n, INTEGER(out), n_haps);
  UNPROTECT(1);
  return out;
}

static void fileview_finalize(SEXP ptr) {
  fmr_fileviews_remove(R_ExternalPtrAddr(ptr));
  fm_fileview_close(R_ExternalPtrAddr(ptr));
  R_ClearExternalPtr(ptr);
}

SEXP fmr_fileview_open(SEXP path) {
  if (!Rf_isString(path) || XLENGTH(path) != 1) fmr_stop(FM_EARG, "path must be one string");
  fm_fileview *v = NULL;
  fm_err err;
  if (fm_fileview_open(R_ExpandFileName(CHAR(STRING_ELT(path, 0))), &v, &err) != FM_OK)
    fmr_raise(&err);
  SEXP ptr = PROTECT(R_MakeExternalPtr(v, Rf_install("fm_fileview"), R_NilValue));
  R_RegisterCFinalizerEx(ptr, fileview_finalize, TRUE);
  fmr_fileviews_add(v); /* daemons may open it by path (r_parallel.c) */
  UNPROTECT(1);
  return ptr;
}

SEXP fmr_fileview_alive(SEXP ptr) {
  return Rf_ScalarLogical(TYPEOF(ptr) == EXTPTRSXP && R_ExternalPtrAddr(ptr) != NULL);
}

SEXP fmr_fileview_size(SEXP ptr) {
  fm_fileview *v = R_ExternalPtrAddr(ptr);
  if (!v) fmr_stop(FM_ECLOSED, "the mapped file is closed");
  return Rf_ScalarReal((double)v->n_bytes);
}

SEXP fmr_fileview_close(SEXP ptr) {
  fileview_finalize(ptr);
  return R_NilValue;
}

SEXP fmr_bed2_check(SEXP ptr, SEXP s_n, SEXP s_m, SEXP what) {
  fm_fileview *v = R_ExternalPtrAddr(ptr);
  if (!v) fmr_stop(FM_ECLOSED, "the mapped file is closed");
  fm_err err;
  if (fm_codec_bed2_check_file(v->base, v->n_bytes, (int64_t)Rf_asReal(s_n),
                               (int64_t)Rf_asReal(s_m), CHAR(STRING_ELT(what, 0)), &err) != FM_OK)
    fmr_raise(&err);
  return R_NilValue;
}

/* Genotype counts per logical column: a 4 x p double matrix with rows
 * (hom A2, het, hom A1, missing), streamed by the core
 * (fm_stats_bed2_counts: interrupts, a file truncated meanwhile). */
SEXP fmr_bed2_counts(SEXP h) {
  fm_ctl ctl = fmr_ctl();
  fm_mat x;
  fmr_view_get(h, &x, NULL);
  if (x.codec != FM_CODEC_BED2) fmr_stop(FM_EARG, "genotype counts need a bed (2-bit) matrix");
  int64_t *counts = (int64_t *)R_alloc((size_t)(x.n_cols > 0 ? x.n_cols : 1) * 4, sizeof(int64_t));
  fm_err err;
  fmr_finish(fm_stats_bed2_counts(&x, counts, &ctl, &err), &err);
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, 4, (int)x.n_cols));
  for (int64_t i = 0; i < 4 * x.n_cols; i++) REAL(out)[i] = (double)counts[i];
  UNPROTECT(1);
  return out;
}

/* This module's .Call entry points (r_calls.h; r_init.c registers them). */
const R_CallMethodDef fmr_codec_calls[] = {
    FMR_CALLDEF(fmr_bed2_encode, 2),
    FMR_CALLDEF(fmr_dos8_encode, 2),
    FMR_CALLDEF(fmr_hap1_encode, 2),
    FMR_CALLDEF(fmr_fmt_files, 2),
    FMR_CALLDEF(fmr_hap1_row_bytes, 1),
    FMR_CALLDEF(fmr_hap1_rows, 5),
    FMR_CALLDEF(fmr_fileview_open, 1),
    FMR_CALLDEF(fmr_fileview_alive, 1),
    FMR_CALLDEF(fmr_fileview_size, 1),
    FMR_CALLDEF(fmr_fileview_close, 1),
    FMR_CALLDEF(fmr_bed2_check, 4),
    FMR_CALLDEF(fmr_bed2_counts, 1),
    {NULL, NULL, 0}};
