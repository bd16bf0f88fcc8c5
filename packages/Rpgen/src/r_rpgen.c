/* r_rpgen.c: .Call glue between R and the core genotype readers (fm_fmt*.h).
 *
 * A reader lives in an external pointer whose finalizer closes it, so an R
 * error (which longjmps) never leaks it. Destination storage comes from
 * Rfmalloc's C API (Rfmalloc_vec_alloc / Rfmalloc_vec_ptr): Rpgen compiles no
 * allocator of its own. Core errors become R conditions of class
 * fm_error_<status> through the R function .rpg_raise (R/errors.R). */
#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>
#include <Rfmalloc.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fm/fm_base.h"
#include "fm/fm_fmt.h"
#include "fm/fm_fmt_bgen.h"
#include "fm/fm_fmt_pgen.h"
#include "fm/fm_fmt_plink.h"
#include "fm/fm_fmt_text.h"
#include "fm/fm_fmt_vcf.h"

/* ---- errors ------------------------------------------------------------- */

static void raise_named(fm_status code, const char *msg) __attribute__((noreturn));
static void raise_named(fm_status code, const char *msg) {
  if (code == FM_OK) code = FM_EINTERNAL;
  SEXP ns = Rf_findVarInFrame(R_NamespaceRegistry, Rf_install("Rpgen"));
  if (ns == R_UnboundValue || TYPEOF(ns) != ENVSXP) Rf_error("%s", msg);
  SEXP fun = Rf_findVarInFrame(ns, Rf_install(".rpg_raise"));
  if (fun == R_UnboundValue) Rf_error("%s", msg);
  SEXP s_code = PROTECT(Rf_mkString(fm_status_name(code)));
  SEXP s_msg = PROTECT(Rf_mkString(msg));
  SEXP call = PROTECT(Rf_lang3(fun, s_code, s_msg));
  Rf_eval(call, ns);
  UNPROTECT(3);
  Rf_error("%s", msg);
}

static void rpg_raise(const fm_err *err) __attribute__((noreturn));
static void rpg_raise(const fm_err *err) {
  char msg[sizeof err->msg];
  if (err->msg[0]) {
    memcpy(msg, err->msg, sizeof msg);
    msg[sizeof msg - 1] = '\0';
  } else {
    snprintf(msg, sizeof msg, "genotype reader error (%s)", fm_status_name(err->code));
  }
  raise_named(err->code, msg);
}

/* ---- interrupts and progress -------------------------------------------- */

static void check_interrupt(void *unused) {
  (void)unused;
  R_CheckUserInterrupt();
}

/* Nonzero when the user interrupted: R_ToplevelExec returns FALSE when the
 * interrupt longjmp'd out of check_interrupt, and never longjmps past us. */
static int cancel_cb(void *ud) {
  (void)ud;
  return R_ToplevelExec(check_interrupt, NULL) == FALSE;
}

typedef struct progress_ud {
  SEXP fun; /* R function(done, total), or R_NilValue */
  double done, total;
} progress_ud;

static void call_progress(void *p) {
  progress_ud *u = p;
  SEXP call = PROTECT(Rf_lang3(u->fun, Rf_ScalarReal(u->done), Rf_ScalarReal(u->total)));
  Rf_eval(call, R_GlobalEnv);
  UNPROTECT(1);
}

static void progress_cb(void *ud, double done, double total) {
  progress_ud *u = ud;
  if (!u || u->fun == R_NilValue) return;
  u->done = done;
  u->total = total;
  (void)R_ToplevelExec(call_progress, u); /* a failing progress bar never stops a read */
}

/* ---- readers ------------------------------------------------------------ */

static void reader_fin(SEXP xp) {
  fm_reader *r = R_ExternalPtrAddr(xp);
  if (r) fm_reader_close(r);
  R_ClearExternalPtr(xp);
}

static fm_reader *get_reader(SEXP xp) {
  if (TYPEOF(xp) != EXTPTRSXP) Rf_error("not a reader handle");
  fm_reader *r = R_ExternalPtrAddr(xp);
  if (!r) Rf_error("the reader was closed");
  return r;
}

static const char *opt_str(SEXP paths, int i) {
  if (Rf_xlength(paths) <= i) return NULL;
  SEXP s = STRING_ELT(paths, i);
  return s == NA_STRING ? NULL : CHAR(s);
}

/* Open a reader. format: "bed", "ped", "tped", "bgen", "vcf", "gen", "haps",
 * "haps_legend", "eigenstrat", "dosage". paths: the main file then the
 * companions in the order of the core open function (NA = default).
 * counted: NULL or character vector of counted alleles (ped/tped). opt: an
 * integer option (dosage format). */
SEXP rpg_open(SEXP s_format, SEXP paths, SEXP s_region, SEXP counted, SEXP s_opt) {
  const char *f = CHAR(STRING_ELT(s_format, 0));
  const char *region = Rf_isNull(s_region) ? NULL : CHAR(STRING_ELT(s_region, 0));
  fm_reader *r = NULL;
  fm_err err;
  fm_err_clear(&err);
  fm_status st;
  /* the reader handle is created first so that nothing leaks if R fails later */
  SEXP xp = PROTECT(R_MakeExternalPtr(NULL, R_NilValue, R_NilValue));
  R_RegisterCFinalizerEx(xp, reader_fin, TRUE);
  const char **cnt = NULL;
  int64_t n_cnt = 0;
  if (!Rf_isNull(counted)) {
    n_cnt = Rf_xlength(counted);
    cnt = (const char **)R_alloc((size_t)(n_cnt ? n_cnt : 1), sizeof *cnt);
    for (int64_t i = 0; i < n_cnt; i++) cnt[i] = CHAR(STRING_ELT(counted, i));
  }
  if (!strcmp(f, "bed")) {
    st = fm_fmt_bed_open(opt_str(paths, 0), opt_str(paths, 1), opt_str(paths, 2), &r, &err);
  } else if (!strcmp(f, "ped")) {
    st = fm_fmt_ped_open(opt_str(paths, 0), opt_str(paths, 1), cnt, n_cnt, &r, &err);
  } else if (!strcmp(f, "tped")) {
    st = fm_fmt_tped_open(opt_str(paths, 0), opt_str(paths, 1), cnt, n_cnt, &r, &err);
  } else if (!strcmp(f, "pgen")) {
    st = fm_fmt_pgen_open(opt_str(paths, 0), opt_str(paths, 1), opt_str(paths, 2), &r, &err);
  } else if (!strcmp(f, "bgen")) {
    st = fm_fmt_bgen_open(opt_str(paths, 0), &r, &err);
  } else if (!strcmp(f, "vcf")) {
    st = fm_fmt_vcf_open(opt_str(paths, 0), region, &r, &err);
  } else if (!strcmp(f, "gen")) {
    st = fm_fmt_gen_open(opt_str(paths, 0), opt_str(paths, 1), &r, &err);
  } else if (!strcmp(f, "haps")) {
    st = fm_fmt_haps_open(opt_str(paths, 0), opt_str(paths, 1), &r, &err);
  } else if (!strcmp(f, "haps_legend")) {
    st = fm_fmt_haps_legend_open(opt_str(paths, 0), opt_str(paths, 1), opt_str(paths, 2),
                                 region, &r, &err);
  } else if (!strcmp(f, "eigenstrat")) {
    st = fm_fmt_eigenstrat_open(opt_str(paths, 0), opt_str(paths, 1), opt_str(paths, 2), &r, &err);
  } else if (!strcmp(f, "dosage")) {
    st = fm_fmt_dosage_open(opt_str(paths, 0), opt_str(paths, 1), opt_str(paths, 2),
                            Rf_asInteger(s_opt), &r, &err);
  } else {
    fm_err_set(&err, FM_EARG, "unknown format '%s'", f);
    st = FM_EARG;
  }
  if (st != FM_OK) {
    fm_reader_close(r);
    rpg_raise(&err);
  }
  R_SetExternalPtrAddr(xp, r);
  UNPROTECT(1);
  return xp;
}

SEXP rpg_close(SEXP xp) {
  reader_fin(xp);
  return R_NilValue;
}

SEXP rpg_info(SEXP xp) {
  fm_reader *r = get_reader(xp);
  const char *nm[] = {"format", "n_samples", "n_variants", "phased", "has_dosage", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
  SET_VECTOR_ELT(out, 0, Rf_mkString(r->info.format ? r->info.format : ""));
  SET_VECTOR_ELT(out, 1, Rf_ScalarReal((double)r->info.n_samples));
  SET_VECTOR_ELT(out, 2, Rf_ScalarReal(r->info.n_variants < 0 ? NA_REAL : (double)r->info.n_variants));
  SET_VECTOR_ELT(out, 3, Rf_ScalarLogical(r->info.is_phased != 0));
  SET_VECTOR_ELT(out, 4, Rf_ScalarLogical(r->info.has_dosage != 0));
  UNPROTECT(1);
  return out;
}

/* Sample IDs of the reader, or NULL when the file has none (BGEN without a
 * sample block). */
SEXP rpg_samples(SEXP xp) {
  fm_reader *r = get_reader(xp);
  if (!r->sample_ids) return R_NilValue;
  SEXP out = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)r->info.n_samples));
  for (int64_t i = 0; i < r->info.n_samples; i++)
    SET_STRING_ELT(out, (R_xlen_t)i, Rf_mkChar(r->sample_ids[i] ? r->sample_ids[i] : ""));
  UNPROTECT(1);
  return out;
}

/* Count the records left in the reader (consumes it), polling interrupts. */
SEXP rpg_count(SEXP xp) {
  fm_reader *r = get_reader(xp);
  fm_err err;
  fm_err_clear(&err);
  fm_status st;
  double n = 0;
  fm_ctl ctl = {cancel_cb, NULL, NULL};
  if (!strcmp(r->info.format, "bgen")) {
    int64_t got = 0;
    st = fm_fmt_bgen_skip(r, INT64_MAX, &got, &err);
    if (st == FM_FMT_END || st == FM_OK) return Rf_ScalarReal((double)got);
    rpg_raise(&err);
  }
  fm_gt_record rec;
  memset(&rec, 0, sizeof rec);
  for (;;) {
    st = fm_reader_next(r, &rec, &err);
    if (st == FM_FMT_END) break;
    if (st != FM_OK) rpg_raise(&err);
    n++;
    if (((int64_t)n & 4095) == 0 && fm_ctl_cancelled(&ctl)) {
      fm_err_set(&err, FM_ECANCELLED, "counting records was interrupted after %.0f records", n);
      rpg_raise(&err);
    }
  }
  return Rf_ScalarReal(n);
}

typedef struct meta_ud {
  SEXP chr, pos, id, ref, alt; /* length n_in, protected by the caller */
  int64_t n_in;
} meta_ud;

static void on_variant(void *ud, int64_t in_index, const fm_gt_record *rec) {
  meta_ud *m = ud;
  if (in_index < 0 || in_index >= m->n_in) return;
  R_xlen_t i = (R_xlen_t)in_index;
  SET_STRING_ELT(m->chr, i, Rf_mkChar(rec->chrom ? rec->chrom : "."));
  REAL(m->pos)[i] = (double)rec->pos;
  SET_STRING_ELT(m->id, i, Rf_mkChar(rec->id ? rec->id : "."));
  SET_STRING_ELT(m->ref, i, Rf_mkChar(rec->ref ? rec->ref : "."));
  SET_STRING_ELT(m->alt, i, Rf_mkChar(rec->alt ? rec->alt : "."));
}

/* Bytes a destination needs. */
SEXP rpg_dest_bytes(SEXP s_kind, SEXP s_ns, SEXP s_nv) {
  uint64_t n = 0;
  fm_err err;
  fm_err_clear(&err);
  if (fm_dest_bytes((fm_dest_kind)Rf_asInteger(s_kind), (int64_t)Rf_asReal(s_ns),
                    (int64_t)Rf_asReal(s_nv), &n, &err) != FM_OK)
    rpg_raise(&err);
  return Rf_ScalarReal((double)n);
}

/* A zero-filled mapped vector from Rfmalloc's runtime (the one owner). */
SEXP rpg_alloc(SEXP rt, SEXP s_dtype, SEXP s_len) {
  return Rfmalloc_vec_alloc(rt, Rf_asInteger(s_dtype), Rf_asReal(s_len));
}

/* Stream the reader into storage (an Rfmalloc mapped vector).
 * sample_index / variant_index: NULL or double vectors of 0-based indices.
 * n_in: the number of input records (for metadata). Returns the metadata
 * list(chr, pos, id, ref, alt) indexed by input record (NA when not read). */
SEXP rpg_stream(SEXP xp, SEXP s_kind, SEXP storage, SEXP s_n_out_samples, SEXP s_n_out_variants,
                SEXP sample_index, SEXP variant_index, SEXP s_n_in, SEXP s_block, SEXP progress) {
  fm_reader *r = get_reader(xp);
  int dtype = 0;
  double n_bytes = 0;
  uint8_t *data = Rfmalloc_vec_ptr(storage, &dtype, &n_bytes);
  if (!data && Rf_xlength(storage) > 0) Rf_error("storage is not a mapped fmalloc vector");
  fm_dest d;
  memset(&d, 0, sizeof d);
  d.kind = (fm_dest_kind)Rf_asInteger(s_kind);
  d.data = data;
  d.n_out_samples = (int64_t)Rf_asReal(s_n_out_samples);
  d.n_out_variants = (int64_t)Rf_asReal(s_n_out_variants);
  int64_t *si = NULL, *vi = NULL;
  if (!Rf_isNull(sample_index)) {
    R_xlen_t n = Rf_xlength(sample_index);
    si = (int64_t *)R_alloc((size_t)(n ? n : 1), sizeof *si);
    for (R_xlen_t i = 0; i < n; i++) si[i] = (int64_t)REAL(sample_index)[i];
    d.sample_index = si;
  }
  if (!Rf_isNull(variant_index)) {
    R_xlen_t n = Rf_xlength(variant_index);
    vi = (int64_t *)R_alloc((size_t)(n ? n : 1), sizeof *vi);
    for (R_xlen_t i = 0; i < n; i++) vi[i] = (int64_t)REAL(variant_index)[i];
  }
  uint64_t need = 0;
  fm_err err;
  fm_err_clear(&err);
  if (fm_dest_bytes(d.kind, d.n_out_samples, d.n_out_variants, &need, &err) != FM_OK) rpg_raise(&err);
  if ((double)need > n_bytes) Rf_error("destination storage holds %.0f bytes, %.0f needed", n_bytes, (double)need);
  meta_ud m;
  m.n_in = (int64_t)Rf_asReal(s_n_in);
  m.chr = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)m.n_in));
  m.pos = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)m.n_in));
  m.id = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)m.n_in));
  m.ref = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)m.n_in));
  m.alt = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)m.n_in));
  for (int64_t i = 0; i < m.n_in; i++) {
    SET_STRING_ELT(m.chr, i, NA_STRING);
    SET_STRING_ELT(m.id, i, NA_STRING);
    SET_STRING_ELT(m.ref, i, NA_STRING);
    SET_STRING_ELT(m.alt, i, NA_STRING);
    REAL(m.pos)[i] = NA_REAL;
  }
  progress_ud pu = {progress, 0, 0};
  fm_ctl ctl = {cancel_cb, progress_cb, &pu};
  int64_t block = (int64_t)Rf_asReal(s_block);
  fm_status st = fm_fmt_stream(r, &d, vi, block, on_variant, &m, &ctl, &err);
  if (st != FM_OK) rpg_raise(&err);
  const char *nm[] = {"chr", "pos", "id", "ref", "alt", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
  SET_VECTOR_ELT(out, 0, m.chr);
  SET_VECTOR_ELT(out, 1, m.pos);
  SET_VECTOR_ELT(out, 2, m.id);
  SET_VECTOR_ELT(out, 3, m.ref);
  SET_VECTOR_ELT(out, 4, m.alt);
  UNPROTECT(6);
  return out;
}

static const R_CallMethodDef call_methods[] = {
    {"rpg_open", (DL_FUNC)&rpg_open, 5},
    {"rpg_close", (DL_FUNC)&rpg_close, 1},
    {"rpg_info", (DL_FUNC)&rpg_info, 1},
    {"rpg_samples", (DL_FUNC)&rpg_samples, 1},
    {"rpg_count", (DL_FUNC)&rpg_count, 1},
    {"rpg_dest_bytes", (DL_FUNC)&rpg_dest_bytes, 3},
    {"rpg_alloc", (DL_FUNC)&rpg_alloc, 3},
    {"rpg_stream", (DL_FUNC)&rpg_stream, 10},
    {NULL, NULL, 0}};

void R_init_Rpgen(DllInfo *dll) {
  R_registerRoutines(dll, NULL, call_methods, NULL, NULL);
  R_useDynamicSymbols(dll, FALSE);
  R_forceSymbols(dll, TRUE);
}
