/* r_mat.c: R descriptions of typed-storage matrices -> fm_mat / fm_affine,
 * and views: a matrix validated once, held by an external pointer. */
#include "r_mat.h"
#include "r_calls.h"

#include "r_ext.h"

#include "fm/fm_codec_alp.h"
#include "fm/fm_fileview.h"

#include <stdlib.h>
#include <string.h>

SEXP Rfmalloc_vec_runtime(SEXP x); /* r_api.c */

/* A streamed pass over mapped storage first checks that the file under the
 * mapping was not truncated from outside: an error here beats a SIGBUS. */
static void check_mapped(SEXP storage) {
  /* r_runtime.h: raises fm_error_eclosed, or fm_error_eformat for a truncated
   * file, which also marks the runtime broken so later element access raises
   * instead of touching the lost pages. */
  void fmr_runtime_check_handle(SEXP rt);
  SEXP rt = Rfmalloc_vec_runtime(storage);
  if (Rf_isNull(rt)) return;
  fmr_runtime_check_handle(rt);
}

/* The bytes of storage; *evictable says whether they are a file mapping
 * whose consumed pages a streamed pass may drop (FM_MAT_EVICTABLE): a
 * read-only file view, or an fmalloc vector (runtimes map their file
 * MAP_SHARED, so dropped pages, dirty ones included, stay in the page cache
 * and the file). Plain R vectors live in the heap and are never flagged. */
static const uint8_t *storage_bytes(SEXP storage, uint64_t *n_bytes, int *evictable) {
  *evictable = TYPEOF(storage) == EXTPTRSXP || !Rf_isNull(Rfmalloc_vec_runtime(storage));
  if (TYPEOF(storage) != EXTPTRSXP) check_mapped(storage);
  switch (TYPEOF(storage)) {
  case RAWSXP:
    *n_bytes = (uint64_t)XLENGTH(storage);
    return RAW_RO(storage);
  case REALSXP:
    *n_bytes = (uint64_t)XLENGTH(storage) * sizeof(double);
    return (const uint8_t *)REAL_RO(storage);
  case INTSXP:
    *n_bytes = (uint64_t)XLENGTH(storage) * sizeof(int);
    return (const uint8_t *)INTEGER_RO(storage);
  case LGLSXP:
    *n_bytes = (uint64_t)XLENGTH(storage) * sizeof(int);
    return (const uint8_t *)LOGICAL_RO(storage);
  case EXTPTRSXP: {
    fm_fileview *v = R_ExternalPtrAddr(storage);
    if (!v) fmr_stop(FM_ECLOSED, "the mapped file behind this matrix is closed");
    fm_err err;
    if (fm_fileview_check(v, &err) != FM_OK) fmr_raise(&err);
    *n_bytes = v->n_bytes;
    return v->base;
  }
  default:
    fmr_stop(FM_EARG, "matrix storage must be a raw, double, integer or logical vector, not %s",
             Rf_type2char(TYPEOF(storage)));
  }
}

/* 1-based R column numbers -> 0-based stored columns (R_alloc'ed). */
static const int64_t *col_index_from(SEXP cols, int64_t n_stored_cols) {
  R_xlen_t nc = XLENGTH(cols);
  int64_t *ci = (int64_t *)R_alloc((size_t)(nc > 0 ? nc : 1), sizeof(int64_t));
  for (R_xlen_t j = 0; j < nc; j++) {
    double v = TYPEOF(cols) == INTSXP ? (double)INTEGER_RO(cols)[j] : REAL_RO(cols)[j];
    if (!(v >= 1 && v <= (double)n_stored_cols))
      fmr_stop(FM_EARG, "column %.0f is outside 1..%lld", v, (long long)n_stored_cols);
    ci[j] = (int64_t)v - 1;
  }
  return ci;
}

/* A matrix over an external codec: the shape must be the store's. */
static void ext_mat_from(const fmr_ext_store *es, const double *s, SEXP cols, fm_mat *x) {
  if ((int)s[0] != FM_CODEC_EXT || (int64_t)s[1] != es->n_rows || (int64_t)s[2] != es->n_cols)
    fmr_stop(FM_EARG, "matrix spec (codec %d, %.0f x %.0f) does not describe its external "
             "codec storage ('%s', %lld x %lld)", (int)s[0], s[1], s[2],
             es->codec->name ? es->codec->name : "?", (long long)es->n_rows,
             (long long)es->n_cols);
  fm_err err;
  if (fm_mat_init_ext(x, es->codec, es->data, es->n_rows, es->n_cols, es->stride, &err) != FM_OK)
    fmr_raise(&err);
  if (!Rf_isNull(cols)) {
    x->col_index = col_index_from(cols, es->n_cols);
    x->n_cols = (int64_t)XLENGTH(cols);
  }
}

/* An ALP matrix: the spec's stride is the blob's size; the blob is checked
 * whole (fm_mat_init_alp) on every use, so a changed file is an error, not a
 * crash, and must hold the spec's shape. */
static void alp_mat_from(const uint8_t *base, uint64_t n_bytes, const double *s, SEXP cols,
                         fm_mat *x) {
  const uint64_t off = (uint64_t)s[3], size = (uint64_t)s[4];
  if (off > n_bytes || size > n_bytes - off)
    fmr_stop(FM_EARG, "alp matrix needs %llu bytes from offset %llu but its storage has %llu",
             (unsigned long long)size, (unsigned long long)off, (unsigned long long)n_bytes);
  fm_err err;
  if (fm_mat_init_alp(x, base + off, (size_t)size, &err) != FM_OK) fmr_raise(&err);
  if (x->n_rows != (int64_t)s[1] || x->n_cols != (int64_t)s[2])
    fmr_stop(FM_EMISMATCH, "alp blob holds %lld x %lld values, its matrix says %.0f x %.0f",
             (long long)x->n_rows, (long long)x->n_cols, s[1], s[2]);
  if (!Rf_isNull(cols)) {
    x->col_index = col_index_from(cols, x->n_stored_cols);
    x->n_cols = (int64_t)XLENGTH(cols);
  }
}

static void fmr_mat_from(SEXP storage, SEXP spec, SEXP cols, fm_mat *x) {
  if (TYPEOF(spec) != REALSXP || XLENGTH(spec) != 5)
    fmr_stop(FM_EARG, "matrix spec must be a double vector of length 5");
  const double *s = REAL_RO(spec);
  fm_codec_id codec = (fm_codec_id)(int)s[0];
  const fmr_ext_store *es = fmr_ext_store_of(storage);
  if (es) {
    ext_mat_from(es, s, cols, x);
    return;
  }
  if (codec == FM_CODEC_EXT)
    fmr_stop(FM_EARG, "an external-codec matrix needs its external-pointer storage");
  int64_t n_rows = (int64_t)s[1], n_stored_cols = (int64_t)s[2];
  uint64_t off = (uint64_t)s[3];
  int64_t stride = (int64_t)s[4];
  uint64_t n_bytes = 0;
  int evictable = 0;
  const uint8_t *base = storage_bytes(storage, &n_bytes, &evictable);
  if (codec == FM_CODEC_ALP) {
    alp_mat_from(base, n_bytes, s, cols, x); /* a compressed blob: nothing to evict */
    return;
  }

  int64_t n_cols = n_stored_cols;
  const int64_t *col_index = NULL;
  if (!Rf_isNull(cols)) {
    col_index = col_index_from(cols, n_stored_cols);
    n_cols = (int64_t)XLENGTH(cols);
  }
  /* The stored columns must lie inside the storage. */
  if (n_stored_cols > 0) {
    int64_t need = 0, last = 0;
    if (!fm_mul_ok(stride, n_stored_cols - 1, &last) ||
        !fm_mul_ok(1, last + fm_mat_min_stride(codec, n_rows), &need) ||
        off + (uint64_t)need > n_bytes)
      fmr_stop(FM_EARG,
               "matrix of %lld x %lld needs %llu bytes from offset %llu but its storage has %llu",
               (long long)n_rows, (long long)n_stored_cols, (unsigned long long)need,
               (unsigned long long)off, (unsigned long long)n_bytes);
  }
  fm_err err;
  if (fm_mat_init(x, codec, base + off, n_rows, n_stored_cols, stride, &err) != FM_OK)
    fmr_raise(&err);
  x->n_cols = n_cols;
  x->col_index = col_index;
  if (evictable) x->flags |= FM_MAT_EVICTABLE;
}

static const double *affine_part(SEXP lst, const char *name, int64_t n_cols) {
  SEXP names = Rf_getAttrib(lst, R_NamesSymbol);
  for (R_xlen_t i = 0; i < XLENGTH(lst); i++) {
    if (strcmp(CHAR(STRING_ELT(names, i)), name) != 0) continue;
    SEXP v = VECTOR_ELT(lst, i);
    if (Rf_isNull(v)) return NULL;
    if (TYPEOF(v) != REALSXP || XLENGTH(v) != n_cols)
      fmr_stop(FM_EARG, "transform '%s' must be a double vector of length %lld", name,
               (long long)n_cols);
    return REAL_RO(v);
  }
  return NULL;
}

static void fmr_affine_from(SEXP aff_list, int64_t n_cols, fm_affine *aff) {
  *aff = (fm_affine){0};
  if (Rf_isNull(aff_list)) return;
  if (TYPEOF(aff_list) != VECSXP) fmr_stop(FM_EARG, "transform must be a list");
  aff->center = affine_part(aff_list, "center", n_cols);
  aff->scale = affine_part(aff_list, "scale", n_cols);
  aff->fill = affine_part(aff_list, "fill", n_cols);
}

/* ---- views ---- */

typedef struct fmr_view {
  fm_mat x;           /* x.data is fetched again at each use (view_base) */
  fm_affine aff;      /* points into the transform's vectors (kept reachable) */
  int64_t *col_index; /* owned copy, or NULL */
  ptrdiff_t offset;   /* x.data - the storage's first byte */
} fmr_view;

static SEXP view_tag(void) { return Rf_install("fmalloc_view"); }

static void view_finalize(SEXP h) {
  fmr_view *v = R_ExternalPtrAddr(h);
  if (!v) return;
  free(v->col_index);
  free(v);
  R_ClearExternalPtr(h);
}

SEXP fmr_view_new(SEXP storage, SEXP spec, SEXP cols, SEXP transform) {
  fm_mat x;
  fm_affine aff;
  fmr_mat_from(storage, spec, cols, &x);
  fmr_affine_from(transform, x.n_cols, &aff);
  int nprot = 0;
  /* What the view reads and was made from, reachable while the handle is: a
   * weak reference keyed on the handle (serialize() writes weak references
   * empty, so a saved object holds its storage once, in its slot). */
  SEXP keep = PROTECT(Rf_allocVector(VECSXP, 4)); nprot++;
  SET_VECTOR_ELT(keep, 0, storage);
  SET_VECTOR_ELT(keep, 1, spec);
  SET_VECTOR_ELT(keep, 2, cols);
  SET_VECTOR_ELT(keep, 3, transform);
  fmr_view *v = calloc(1, sizeof *v);
  if (!v) fmr_stop(FM_ENOMEM, "cannot allocate a matrix view");
  SEXP h = PROTECT(R_MakeExternalPtr(v, view_tag(), R_NilValue)); nprot++;
  R_RegisterCFinalizerEx(h, view_finalize, TRUE);
  R_SetExternalPtrProtected(h, R_MakeWeakRef(h, keep, R_NilValue, FALSE));
  if (x.col_index) {
    v->col_index = malloc((size_t)(x.n_cols > 0 ? x.n_cols : 1) * sizeof(int64_t));
    if (!v->col_index) fmr_stop(FM_ENOMEM, "cannot copy a column index of %lld entries",
                                (long long)x.n_cols);
    memcpy(v->col_index, x.col_index, (size_t)x.n_cols * sizeof(int64_t));
  }
  v->x = x;
  v->x.col_index = v->col_index;
  v->aff = aff;
  if (!fmr_ext_store_of(storage)) {
    uint64_t n_bytes;
    int evictable;
    v->offset = (const uint8_t *)x.data - storage_bytes(storage, &n_bytes, &evictable);
  }
  UNPROTECT(nprot);
  return h;
}

/* The list(storage, spec, cols, transform) a live handle was made from, or
 * NULL. */
static SEXP view_made_from(SEXP h) {
  if (TYPEOF(h) != EXTPTRSXP || R_ExternalPtrTag(h) != view_tag() || !R_ExternalPtrAddr(h))
    return R_NilValue;
  SEXP w = R_ExternalPtrProtected(h);
  return TYPEOF(w) == WEAKREFSXP ? R_WeakRefValue(w) : R_NilValue;
}

SEXP fmr_view_alive(SEXP h) { return Rf_ScalarLogical(!Rf_isNull(view_made_from(h))); }

SEXP fmr_view_of_slots(SEXP h, SEXP storage, SEXP spec, SEXP cols, SEXP transform) {
  SEXP from = view_made_from(h);
  return Rf_ScalarLogical(!Rf_isNull(from) && VECTOR_ELT(from, 0) == storage &&
                          VECTOR_ELT(from, 1) == spec && VECTOR_ELT(from, 2) == cols &&
                          VECTOR_ELT(from, 3) == transform);
}

void fmr_view_get(SEXP h, fm_mat *x, fm_affine *aff) {
  if (TYPEOF(h) != EXTPTRSXP || R_ExternalPtrTag(h) != view_tag())
    fmr_stop(FM_EARG, "not a matrix view (an fmalloc codec matrix's handle)");
  const fmr_view *v = R_ExternalPtrAddr(h);
  SEXP from = view_made_from(h);
  if (!v || Rf_isNull(from))
    fmr_stop(FM_ECLOSED, "this matrix view was not restored (it does not survive saveRDS())");
  SEXP storage = VECTOR_ELT(from, 0);
  *x = v->x;
  if (!fmr_ext_store_of(storage)) { /* an external codec raises when released */
    /* the runtime is open and its file whole, or the file view alive and
     * its file not shrunk: then the bytes are where they were */
    uint64_t n_bytes;
    int evictable;
    const uint8_t *base = storage_bytes(storage, &n_bytes, &evictable);
    x->data = base + v->offset;
    if (x->codec == FM_CODEC_ALP) {
      /* an ALP blob's structure is checked again at each use (the directory
       * only, not the values): a blob rewritten since is an error, not a
       * crash */
      fm_err err;
      if (fm_mat_init_alp(x, x->data, (size_t)v->x.col_stride, &err) != FM_OK) fmr_raise(&err);
      x->n_cols = v->x.n_cols;
      x->col_index = v->col_index;
    }
  }
  if (aff) *aff = v->aff;
}

/* .Call(fmr_codec_ids): the core's codec ids (fm_codec_id), named as the R
 * code names them, so no number is written twice. */
SEXP fmr_codec_ids(void) {
  static const struct {
    const char *name;
    fm_codec_id id;
  } ids[] = {{"double", FM_CODEC_F64}, {"integer", FM_CODEC_I32}, {"bed2", FM_CODEC_BED2},
             {"dos8", FM_CODEC_DOS8},  {"ext", FM_CODEC_EXT},     {"alp", FM_CODEC_ALP}};
  const int n = (int)(sizeof ids / sizeof ids[0]);
  SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, n));
  for (int i = 0; i < n; i++) {
    REAL(out)[i] = (double)ids[i].id;
    SET_STRING_ELT(nm, i, Rf_mkChar(ids[i].name));
  }
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

/* This module's .Call entry points (r_calls.h; r_init.c registers them). */
const R_CallMethodDef fmr_mat_calls[] = {
    FMR_CALLDEF(fmr_view_new, 4),
    FMR_CALLDEF(fmr_view_alive, 1),
    FMR_CALLDEF(fmr_view_of_slots, 5),
    FMR_CALLDEF(fmr_codec_ids, 0),
    {NULL, NULL, 0}};
