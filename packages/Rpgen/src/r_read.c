/* r_read.c: .Call glue between R and the core genotype readers (fm_fmt*.h).
 *
 * A file's format, its companion files and the open function of its reader
 * come from the core's format table (fm_fmt_registry.h: rpg_plan, rpg_open);
 * a destination's kind, dtype and layout from fm_fmt.h (rpg_dest). Neither
 * this file nor the R code repeats them.
 *
 * A reader lives in an external pointer whose finalizer closes it, so an R
 * error (which longjmps) never leaks it. Destination storage comes from
 * Rfmalloc's C API (Rfmalloc_vec_alloc / Rfmalloc_vec_ptr): Rpgen compiles no
 * allocator of its own. Core errors become R conditions of class
 * fm_error_<status> through Rfmalloc's converter (Rfmalloc_raise_err,
 * Rfmalloc.h).
 *
 * Long reads call back into R between blocks through Rfmalloc's control
 * block (Rfmalloc_ctl, Rfmalloc.h): the cancel callback polls
 * R_CheckUserInterrupt and the progress callback runs an R function (a cli
 * progress bar), both with the caller's condition handlers in place, so an
 * interrupt, an error in the progress function, or a restart invoked by a
 * handler reaches R as it would from R code, after the core has freed its
 * state and returned (Rfmalloc_ctl_finish). The reader lives in an external
 * pointer that rpgen_read() closes on exit; storage is an R object the
 * collector frees. */
#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fm/fm_base.h"
#include "fm/fm_codec_hap1.h"
#include "fm/fm_fmt.h"
#include "fm/fm_fmt_bgen.h"
#include "fm/fm_fmt_registry.h"
#include "fm/fm_fmt_text.h"
#include "fm/fm_fmt_vcf.h"

#include <Rfmalloc.h>

#include "r_calls.h"
#include <Rfmalloc_core.h>

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

/* The element of list x named name (the first), or R_NilValue. */
static SEXP list_elt(SEXP x, const char *name) {
  SEXP nm = Rf_getAttrib(x, R_NamesSymbol);
  for (R_xlen_t i = 0; !Rf_isNull(nm) && i < Rf_xlength(x); i++)
    if (!strcmp(CHAR(STRING_ELT(nm, i)), name)) return VECTOR_ELT(x, i);
  return R_NilValue;
}

/* A companion file given in `...` under its name, tilde-expanded (in
 * memory R frees after the .Call), or NULL when not given. */
static const char *given_file(SEXP dots, const char *name) {
  SEXP x = list_elt(dots, name);
  if (Rf_isNull(x)) return NULL;
  if (!Rf_isString(x) || Rf_xlength(x) != 1 || STRING_ELT(x, 0) == NA_STRING)
    Rfmalloc_stopf(FM_EARG, "%s must be one file name (a string)", name);
  const char *p = R_ExpandFileName(CHAR(STRING_ELT(x, 0)));
  return strcpy(R_alloc(strlen(p) + 1, 1), p); /* R_ExpandFileName's buffer is reused */
}

/* Whether format f takes argument a: one of its companions, one of its
 * reader's options, or one of general (what every format takes in this
 * call). */
static int takes(const fm_fmt_format *f, const char *a, SEXP general) {
  for (int i = 0; i < f->n_companions; i++)
    if (!strcmp(f->companion[i].name, a)) return 1;
  for (int i = 0; f->option[i]; i++)
    if (!strcmp(f->option[i], a)) return 1;
  for (R_xlen_t i = 0; i < Rf_xlength(general); i++)
    if (!strcmp(CHAR(STRING_ELT(general, i)), a)) return 1;
  return 0;
}

/* Refuse an argument in dots that format f does not take (a misspelt
 * companion is never ignored), naming it and listing what f takes; one
 * given as NULL counts as not given. */
static void check_args(const fm_fmt_format *f, SEXP dots, SEXP general) {
  SEXP nm = Rf_getAttrib(dots, R_NamesSymbol);
  for (R_xlen_t i = 0; i < Rf_xlength(dots); i++) {
    const char *a = Rf_isNull(nm) ? "" : CHAR(STRING_ELT(nm, i));
    if (Rf_isNull(VECTOR_ELT(dots, i)) || (a[0] && takes(f, a, general))) continue; /* NULL: not given */
    char list[512] = "";
    size_t k = 0;
    for (int j = 0; j < f->n_companions; j++)
      k += (size_t)snprintf(list + k, k < sizeof list ? sizeof list - k : 0, "%s%s", k ? ", " : "",
                            f->companion[j].name);
    for (int j = 0; f->option[j]; j++)
      k += (size_t)snprintf(list + k, k < sizeof list ? sizeof list - k : 0, "%s%s", k ? ", " : "",
                            f->option[j]);
    for (R_xlen_t j = 0; j < Rf_xlength(general); j++)
      k += (size_t)snprintf(list + k, k < sizeof list ? sizeof list - k : 0, "%s%s", k ? ", " : "",
                            CHAR(STRING_ELT(general, j)));
    if (!a[0])
      Rfmalloc_stopf(FM_EARG, "argument %lld in ... has no name: a %s file takes, by name: %s",
                     (long long)i + 1, f->name, list);
    Rfmalloc_stopf(FM_EARG, "unknown argument '%s' for a %s file, which takes: %s", a, f->name,
                   list);
  }
}

/* Where a read of path finds its files, from the core's format table
 * (fm_fmt_registry.h): the format (s_format, NULL to detect it) and the
 * main file and companions (named in dots, or found beside path). path is
 * tilde-expanded. Returns list(format = <name>, files = <the main file,
 * then each companion, NA when absent, named by the format and the
 * companions>, paths = <the files the reader reads, main first>,
 * sample_file = <the companion the reader does not read (a BGEN's
 * .sample), or NA>). Every argument in dots must be one the format takes
 * (check_args; general: the names every format takes in this call). */
SEXP rpg_plan(SEXP s_path, SEXP s_format, SEXP dots, SEXP general) {
  const char *path = CHAR(STRING_ELT(s_path, 0));
  const char *name = Rf_isNull(s_format) ? NULL : CHAR(STRING_ELT(s_format, 0));
  fm_err err;
  fm_err_clear(&err);
  const fm_fmt_format *f = NULL;
  if (fm_fmt_detect(path, name, &f, &err) != FM_OK) Rfmalloc_raise_err(&err, NULL);
  check_args(f, dots, general);
  const char *given[FM_FMT_MAX_COMPANIONS] = {NULL};
  for (int i = 0; i < f->n_companions; i++) given[i] = given_file(dots, f->companion[i].name);
  fm_fmt_fileset fs;
  if (fm_fmt_resolve(f, path, given, &fs, &err) != FM_OK) Rfmalloc_raise_err(&err, NULL);
  const int n = 1 + f->n_companions;
  int n_paths = 0;
  for (int i = 0; i < n; i++) n_paths += fs.path[i][0] && (!i || f->companion[i - 1].is_read_at_open);
  const char *nm[] = {"format", "files", "paths", "sample_file", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
  SEXP files = PROTECT(Rf_allocVector(STRSXP, n)), fnames = PROTECT(Rf_allocVector(STRSXP, n));
  SEXP paths = PROTECT(Rf_allocVector(STRSXP, n_paths));
  SEXP sample_file = PROTECT(Rf_ScalarString(NA_STRING));
  for (int i = 0, k = 0; i < n; i++) {
    SEXP p = fs.path[i][0] ? Rf_mkChar(fs.path[i]) : NA_STRING;
    SET_STRING_ELT(files, i, p);
    SET_STRING_ELT(fnames, i, Rf_mkChar(i ? f->companion[i - 1].name : f->name));
    if (p == NA_STRING) continue;
    if (!i || f->companion[i - 1].is_read_at_open) SET_STRING_ELT(paths, k++, p);
    else SET_STRING_ELT(sample_file, 0, p);
  }
  Rf_setAttrib(files, R_NamesSymbol, fnames);
  SET_VECTOR_ELT(out, 0, Rf_mkString(f->name));
  SET_VECTOR_ELT(out, 1, files);
  SET_VECTOR_ELT(out, 2, paths);
  SET_VECTOR_ELT(out, 3, sample_file);
  UNPROTECT(5);
  return out;
}

/* Open a reader of rpg_plan's format and files (NA: absent) with options,
 * list(region, chrom, counted_alleles, dosage_format) (fm_fmt_options: each
 * NULL for the default, a format ignores those it has no use for). */
SEXP rpg_open(SEXP s_format, SEXP files, SEXP options) {
  fm_fmt_fileset fs;
  memset(&fs, 0, sizeof fs);
  fs.format = fm_fmt_by_name(CHAR(STRING_ELT(s_format, 0)));
  if (!fs.format || Rf_xlength(files) != 1 + fs.format->n_companions)
    Rf_error("rpg_open: files must be those of rpg_plan()");
  for (R_xlen_t i = 0; i < Rf_xlength(files); i++) {
    SEXP p = STRING_ELT(files, i);
    if (p == NA_STRING) continue;
    if (strlen(CHAR(p)) >= sizeof fs.path[i]) Rf_error("rpg_open: a file name is too long");
    strcpy(fs.path[i], CHAR(p));
  }
  fm_fmt_options opt;
  memset(&opt, 0, sizeof opt);
  SEXP region = list_elt(options, "region"), chrom = list_elt(options, "chrom");
  SEXP counted = list_elt(options, "counted_alleles"), dfmt = list_elt(options, "dosage_format");
  if (!Rf_isNull(region)) opt.region = CHAR(STRING_ELT(region, 0));
  if (!Rf_isNull(chrom)) opt.chrom = CHAR(STRING_ELT(chrom, 0));
  if (!Rf_isNull(counted)) {
    opt.n_counted = Rf_xlength(counted);
    const char **cnt = (const char **)R_alloc((size_t)(opt.n_counted ? opt.n_counted : 1), sizeof *cnt);
    for (int64_t i = 0; i < opt.n_counted; i++) cnt[i] = CHAR(STRING_ELT(counted, i));
    opt.counted_alleles = cnt;
  }
  if (!Rf_isNull(dfmt)) opt.dosage_format = Rf_asInteger(dfmt);
  /* the reader handle is created first so that nothing leaks if R fails later */
  SEXP xp = PROTECT(R_MakeExternalPtr(NULL, R_NilValue, R_NilValue));
  R_RegisterCFinalizerEx(xp, reader_fin, TRUE);
  fm_reader *r = NULL;
  fm_err err;
  fm_err_clear(&err);
  if (fm_fmt_open(&fs, &opt, &r, &err) != FM_OK) {
    fm_reader_close(r);
    Rfmalloc_raise_err(&err, NULL);
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

/* What the reader has to tell of its open although it succeeded
 * (fm_fmt_info.notice: a region whose contig the file does not list), or
 * NULL. */
SEXP rpg_notice(SEXP xp) {
  fm_reader *r = get_reader(xp);
  return r->info.notice ? Rf_mkString(r->info.notice) : R_NilValue;
}

/* Replace the reader's sex codes (fm_reader_set_sex): an integer vector of
 * 0 (unknown), 1 (male), 2 (female), one per sample of the file, or NULL to
 * clear them. Before the first record only. */
SEXP rpg_set_sex(SEXP xp, SEXP sex) {
  fm_reader *r = get_reader(xp);
  fm_err err;
  fm_err_clear(&err);
  uint8_t *codes = NULL;
  int64_t n = 0;
  if (!Rf_isNull(sex)) {
    if (TYPEOF(sex) != INTSXP) Rf_error("rpg_set_sex: sex must be an integer vector");
    n = (int64_t)Rf_xlength(sex);
    codes = (uint8_t *)R_alloc((size_t)(n ? n : 1), 1);
    for (int64_t i = 0; i < n; i++) {
      const int x = INTEGER(sex)[i];
      codes[i] = (uint8_t)(x == 1 || x == 2 ? x : (x == 0 || x == NA_INTEGER ? 0 : 3));
    }
  }
  if (fm_reader_set_sex(r, codes, n, &err) != FM_OK) Rfmalloc_raise_err(&err, NULL);
  return R_NilValue;
}

/* The sex column of an Oxford .sample listing the reader's samples
 * (fm_fmt_sample_sex): a BGEN's companion. */
SEXP rpg_sample_sex(SEXP xp, SEXP path) {
  fm_reader *r = get_reader(xp);
  fm_err err;
  fm_err_clear(&err);
  if (fm_fmt_sample_sex(r, CHAR(STRING_ELT(path, 0)), &err) != FM_OK) Rfmalloc_raise_err(&err, NULL);
  return R_NilValue;
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

/* One pass over the records left in the reader (it is consumed), polling
 * interrupts and reporting progress (done records, total NA) every 4096
 * records: the number of records, and with want_ids their IDs (the ID of
 * every record after the split of multi-allelic sites, "." when the format
 * has none), read with the reader's own parser so that they equal the IDs a
 * read reports. n_hint (NA when unknown) sizes the ID vector. Returns
 * list(n = <double>, ids = <character or NULL>). When no IDs are asked for,
 * the core counts the cheapest way the format offers (fm_reader_count: BGEN
 * seeks over genotype blocks, VCF/BCF reads the sites' allele counts). */
SEXP rpg_scan(SEXP xp, SEXP s_want_ids, SEXP s_n_hint, SEXP progress) {
  fm_reader *r = get_reader(xp);
  const int want_ids = Rf_asLogical(s_want_ids) == TRUE;
  const double hint = Rf_asReal(s_n_hint);
  int nprot = 0;
  fm_err err;
  fm_err_clear(&err);
  fm_status st = FM_OK;
  fm_ctl ctl = Rfmalloc_ctl(progress);
  const double na = NA_REAL;
  double n = 0;
  SEXP ids = R_NilValue;
  PROTECT_INDEX ids_ix;
  PROTECT_WITH_INDEX(ids, &ids_ix);
  nprot++;
  if (!want_ids) { /* the format's cheapest count (fm_reader_count) */
    int64_t got = 0;
    st = fm_reader_count(r, &got, &ctl, &err);
    n = (double)got;
  } else {
    R_xlen_t cap = (!ISNAN(hint) && hint >= 0 && hint < (double)R_XLEN_T_MAX) ? (R_xlen_t)hint : 1024;
    if (cap < 1) cap = 1;
    REPROTECT(ids = Rf_allocVector(STRSXP, cap), ids_ix);
    fm_gt_record rec;
    memset(&rec, 0, sizeof rec);
    for (;;) {
      if (((int64_t)n & 4095) == 0) {
        if (fm_ctl_cancelled(&ctl)) {
          st = fm_err_set(&err, FM_ECANCELLED, "scanning records was interrupted after %.0f records", n);
          break;
        }
        fm_ctl_progress(&ctl, n, na);
      }
      st = fm_reader_next(r, &rec, &err);
      if (st == FM_FMT_END) {
        st = FM_OK;
        break;
      }
      if (st != FM_OK) break;
      if ((R_xlen_t)n >= cap) {
        R_xlen_t ncap = cap < R_XLEN_T_MAX / 2 ? 2 * cap : R_XLEN_T_MAX;
        SEXP grown = PROTECT(Rf_allocVector(STRSXP, ncap));
        for (R_xlen_t i = 0; i < cap; i++) SET_STRING_ELT(grown, i, STRING_ELT(ids, i));
        REPROTECT(ids = grown, ids_ix);
        UNPROTECT(1);
        cap = ncap;
      }
      SET_STRING_ELT(ids, (R_xlen_t)n, Rf_mkChar(rec.id && rec.id[0] ? rec.id : "."));
      n++;
    }
  }
  Rfmalloc_ctl_finish(st, &err, NULL);
  if (want_ids && Rf_xlength(ids) != (R_xlen_t)n) REPROTECT(ids = Rf_xlengthgets(ids, (R_xlen_t)n), ids_ix);
  const char *nm[] = {"n", "ids", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
  nprot++;
  SET_VECTOR_ELT(out, 0, Rf_ScalarReal(n));
  SET_VECTOR_ELT(out, 1, ids);
  UNPROTECT(nprot);
  return out;
}

typedef struct meta_ud {
  SEXP chr, pos, id, ref, alt; /* length n_in, protected by the caller */
  SEXP cm;                     /* length n_in, or NULL when the format stores none */
  int64_t n_in;
  /* CHARSXPs made once and reused (each is held by a vector above): the
   * chromosome of the previous record, one-letter alleles (most SNVs) */
  SEXP last_chr;
  char last_chr_s[64];
  SEXP allele1[128];
} meta_ud;

static SEXP allele_char(meta_ud *m, const char *a) {
  const unsigned char c = (unsigned char)a[0];
  if (c == 0 || c >= 128 || a[1] != '\0') return Rf_mkChar(a);
  if (!m->allele1[c]) m->allele1[c] = Rf_mkChar(a);
  return m->allele1[c];
}

static void on_variant(void *ud, int64_t in_index, const fm_gt_record *rec) {
  meta_ud *m = ud;
  if (in_index < 0 || in_index >= m->n_in) return;
  R_xlen_t i = (R_xlen_t)in_index;
  const char *chr = rec->chrom ? rec->chrom : ".";
  if (strlen(chr) >= sizeof m->last_chr_s) {
    SET_STRING_ELT(m->chr, i, Rf_mkChar(chr));
  } else {
    if (!m->last_chr || strcmp(chr, m->last_chr_s) != 0) {
      m->last_chr = Rf_mkChar(chr);
      memcpy(m->last_chr_s, chr, strlen(chr) + 1);
    }
    SET_STRING_ELT(m->chr, i, m->last_chr);
  }
  REAL(m->pos)[i] = (double)rec->pos;
  if (m->cm) REAL(m->cm)[i] = ISNAN(rec->cm) ? NA_REAL : rec->cm;
  SET_STRING_ELT(m->id, i, Rf_mkChar(rec->id ? rec->id : "."));
  SET_STRING_ELT(m->ref, i, allele_char(m, rec->ref ? rec->ref : "."));
  SET_STRING_ELT(m->alt, i, allele_char(m, rec->alt ? rec->alt : "."));
}

/* A destination of Rpgen's `destination` name for n_out_samples x
 * n_out_variants, in the core's terms: list(kind = <fm_dest_kind>, dtype =
 * <its storage's fm_dtype>, codec = <that dtype's name: "bed2", "dos8">,
 * bytes = <fm_dest_bytes>, row_bytes = <bytes of a haplotype row, NA for
 * the other kinds>). */
SEXP rpg_dest(SEXP s_dest, SEXP s_ns, SEXP s_nv) {
  fm_err err;
  fm_err_clear(&err);
  fm_dest_kind kind = FM_DEST_DENSE;
  const int64_t n_s = (int64_t)Rf_asReal(s_ns);
  uint64_t n = 0;
  if (fm_dest_kind_by_name(CHAR(STRING_ELT(s_dest, 0)), &kind, &err) != FM_OK ||
      fm_dest_bytes(kind, n_s, (int64_t)Rf_asReal(s_nv), &n, &err) != FM_OK)
    Rfmalloc_raise_err(&err, NULL);
  const fm_dtype dtype = fm_dest_dtype(kind);
  const char *nm[] = {"kind", "dtype", "codec", "bytes", "row_bytes", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
  SET_VECTOR_ELT(out, 0, Rf_ScalarInteger((int)kind));
  SET_VECTOR_ELT(out, 1, Rf_ScalarInteger((int)dtype));
  SET_VECTOR_ELT(out, 2, Rf_mkString(fm_dtype_name(dtype)));
  SET_VECTOR_ELT(out, 3, Rf_ScalarReal((double)n));
  SET_VECTOR_ELT(out, 4, Rf_ScalarReal(kind == FM_DEST_HAPLOTYPE
                                           ? (double)fm_codec_hap1_row_bytes(2 * n_s)
                                           : NA_REAL));
  UNPROTECT(1);
  return out;
}

/* A zero-filled mapped vector from Rfmalloc's runtime (the one owner). */
SEXP rpg_alloc(SEXP rt, SEXP s_dtype, SEXP s_len) {
  return Rfmalloc_vec_alloc(rt, Rf_asInteger(s_dtype), Rf_asReal(s_len));
}

/* Stream the reader into storage (an Rfmalloc mapped vector).
 * sample_index / variant_index: NULL or double vectors of 0-based indices.
 * n_in: the number of input records (for metadata). Returns the metadata
 * list(chr, pos, id, ref, alt), and cm when the format stores centimorgans
 * (fm_fmt_info.has_cm), indexed by input record (NA when not read). */
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
  d.is_file_mapped = 1; /* runtime storage is a shared file mapping: written pages may go */
  d.n_out_samples = (int64_t)Rf_asReal(s_n_out_samples);
  d.n_out_variants = (int64_t)Rf_asReal(s_n_out_variants);
  int64_t *si = NULL, *vi = NULL;
  if ((!Rf_isNull(sample_index) && (TYPEOF(sample_index) != REALSXP ||
                                     Rf_xlength(sample_index) != (R_xlen_t)d.n_out_samples)) ||
      (!Rf_isNull(variant_index) && (TYPEOF(variant_index) != REALSXP ||
                                      Rf_xlength(variant_index) != (R_xlen_t)d.n_out_variants)))
    Rf_error("rpg_stream: sample_index and variant_index must be NULL or doubles of the output "
             "dimensions");
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
  if (fm_dest_bytes(d.kind, d.n_out_samples, d.n_out_variants, &need, &err) != FM_OK) Rfmalloc_raise_err(&err, NULL);
  if ((double)need > n_bytes) Rf_error("destination storage holds %.0f bytes, %.0f needed", n_bytes, (double)need);
  meta_ud m;
  memset(&m, 0, sizeof m);
  m.n_in = (int64_t)Rf_asReal(s_n_in);
  m.chr = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)m.n_in));
  m.pos = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)m.n_in));
  m.id = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)m.n_in));
  m.ref = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)m.n_in));
  m.alt = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)m.n_in));
  SEXP cm = PROTECT(r->info.has_cm ? Rf_allocVector(REALSXP, (R_xlen_t)m.n_in) : R_NilValue);
  if (r->info.has_cm) {
    m.cm = cm;
    for (int64_t i = 0; i < m.n_in; i++) REAL(cm)[i] = NA_REAL;
  }
  for (int64_t i = 0; i < m.n_in; i++) {
    SET_STRING_ELT(m.chr, i, NA_STRING);
    SET_STRING_ELT(m.id, i, NA_STRING);
    SET_STRING_ELT(m.ref, i, NA_STRING);
    SET_STRING_ELT(m.alt, i, NA_STRING);
    REAL(m.pos)[i] = NA_REAL;
  }
  fm_ctl ctl = Rfmalloc_ctl(progress);
  int64_t block = (int64_t)Rf_asReal(s_block);
  fm_status st = fm_fmt_stream(r, &d, vi, block, on_variant, &m, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, NULL);
  const char *nm[] = {"chr", "pos", "id", "ref", "alt", "cm", ""};
  if (!m.cm) nm[5] = "";
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
  SET_VECTOR_ELT(out, 0, m.chr);
  SET_VECTOR_ELT(out, 1, m.pos);
  SET_VECTOR_ELT(out, 2, m.id);
  SET_VECTOR_ELT(out, 3, m.ref);
  SET_VECTOR_ELT(out, 4, m.alt);
  if (m.cm) SET_VECTOR_ELT(out, 5, m.cm);
  UNPROTECT(7);
  return out;
}

/* Copy n bytes of src from byte offset `from` to the start of dst: the
 * haplotype destination's missing plane into its own vector, mapping to
 * mapping, without an R index vector the size of the plane. */
SEXP rpg_copy_plane(SEXP dst, SEXP src, SEXP s_from, SEXP s_n) {
  double from = Rf_asReal(s_from), n = Rf_asReal(s_n);
  if (TYPEOF(dst) != RAWSXP || TYPEOF(src) != RAWSXP || !(from >= 0) || !(n >= 0) ||
      from + n > (double)XLENGTH(src) || n > (double)XLENGTH(dst))
    Rf_error("rpg_copy_plane: %.0f bytes at %.0f do not fit", n, from);
  if (n > 0) memcpy(RAW(dst), RAW(src) + (R_xlen_t)from, (size_t)n);
  return R_NilValue;
}

/* This module's .Call entry points (r_calls.h; r_init.c registers them). */
const R_CallMethodDef rpg_read_calls[] = {
    RPG_CALLDEF(rpg_plan, 4),
    RPG_CALLDEF(rpg_open, 3),
    RPG_CALLDEF(rpg_close, 1),
    RPG_CALLDEF(rpg_info, 1),
    RPG_CALLDEF(rpg_notice, 1),
    RPG_CALLDEF(rpg_samples, 1),
    RPG_CALLDEF(rpg_set_sex, 2),
    RPG_CALLDEF(rpg_sample_sex, 2),
    RPG_CALLDEF(rpg_scan, 4),
    RPG_CALLDEF(rpg_dest, 3),
    RPG_CALLDEF(rpg_alloc, 3),
    RPG_CALLDEF(rpg_stream, 10),
    RPG_CALLDEF(rpg_copy_plane, 4),
    {NULL, NULL, 0}};
