/* r_altrep.c: the ALTREP classes fm_dbl_map, fm_int_map, fm_lgl_map and
 * fm_raw_map (vectors whose data pointer lies in an fm_map), and the .Call
 * entry points that create, name, fetch and write them.
 *
 * Records, lifetimes, value semantics and broken runtimes: r_runtime.h.
 * Vectors over named blocks and vectors of read-only runtimes are marked not
 * mutable, so R duplicates them before writing; fresh unnamed vectors are
 * written in place. Behaviour of the methods:
 *   Length            the stored length (never raises, also after close).
 *   Dataptr           pointer into the mapping, after fm_map_check (one
 *                     fstat); raises fm_error_eclosed after cleanup_fmalloc
 *                     and fm_error_eformat once the file was truncated.
 *   Dataptr_or_null   the same pointer and checks, or NULL after close (R
 *                     then uses Elt, which raises).
 *   Elt, Get_region   bounds-checked reads; they test the closed and broken
 *                     flags and check the file at most once a millisecond
 *                     (fmr_runtime_check_pages_throttled), so only a
 *                     truncation by another process during a tight loop of
 *                     element reads can still raise SIGBUS.
 *   Duplicate         a new unnamed block in the same runtime, bytes copied:
 *                     value semantics without materialising into the heap.
 *                     NULL (R copies into the heap) when the runtime is
 *                     read-only, closed, owned by another process (fork), or
 *                     the allocation fails (no garbage collection here: R
 *                     finalizers must not run inside a method).
 *   Serialized_state  the recipe list for a named vector of a persistent
 *                     runtime whose name still refers to this block; NULL
 *                     otherwise, so R writes the values.
 *   Unserialize       reopens the file (reusing an open runtime of that path,
 *                     else read-only), looks the name up and checks the uid.
 *   Inspect           dtype, length, offset, mode, name, open/closed.
 * The methods evaluate R code only to raise errors (fmr_stop). */
#include "r_runtime.h"
#include "r_calls.h"

#include <R_ext/Altrep.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static R_altrep_class_t cls_dbl, cls_int, cls_lgl, cls_raw;

/* ---- records ------------------------------------------------------------ */

SEXPTYPE fmr_dtype_sexptype(fm_dtype t) {
  switch (t) {
  case FM_DTYPE_F64: return REALSXP;
  case FM_DTYPE_I32: return INTSXP;
  case FM_DTYPE_LGL: return LGLSXP;
  default: return RAWSXP;
  }
}

static fm_dtype sexptype_dtype(SEXPTYPE t) {
  switch (t) {
  case REALSXP: return FM_DTYPE_F64;
  case INTSXP: return FM_DTYPE_I32;
  case LGLSXP: return FM_DTYPE_LGL;
  case RAWSXP: return FM_DTYPE_U8;
  default: return FM_DTYPE_NONE;
  }
}

/* Bytes per element as R sees the vector (packed dtypes are byte views). */
static size_t r_elt_size(fm_dtype t) {
  size_t s = fm_dtype_size(t);
  return s ? s : 1;
}

static int is_our_class(SEXP x) {
  return ALTREP(x) && (R_altrep_inherits(x, cls_dbl) || R_altrep_inherits(x, cls_int) ||
                       R_altrep_inherits(x, cls_lgl) || R_altrep_inherits(x, cls_raw));
}

fmr_vec *fmr_vec_of(SEXP x) {
  if (!is_our_class(x)) return NULL;
  return (fmr_vec *)R_ExternalPtrAddr(R_altrep_data1(x));
}

static SEXP list_get(SEXP l, const char *nm);

/* The record of x, known to be one of our classes (methods). A released
 * record (only after unload) raises "closed", naming the path of the recipe. */
static fmr_vec *vec(SEXP x) {
  fmr_vec *v = (fmr_vec *)R_ExternalPtrAddr(R_altrep_data1(x));
  if (!v) {
    SEXP p = list_get(R_altrep_data2(x), "path");
    fmr_stop_closed(TYPEOF(p) == STRSXP && XLENGTH(p) == 1 ? CHAR(STRING_ELT(p, 0)) : NULL);
  }
  return v;
}

static void *block_ptr(const fmr_vec *v) {
  void *p = fm_map_ptr(v->rt->map, v->off);
  if (!p)
    fmr_stop(FM_EINTERNAL, "block offset %llu lies outside the mapping of '%s'",
             (unsigned long long)v->off, v->rt->path);
  return p;
}

void *fmr_vec_ptr(const fmr_vec *v) {
  fmr_runtime_check_pages(v->rt);
  return block_ptr(v);
}

/* For per-element access: the file check at most once a millisecond. */
static void *vec_ptr_fast(const fmr_vec *v) {
  fmr_runtime_check_pages_throttled(v->rt);
  return block_ptr(v);
}

static uint64_t vec_bytes(const fmr_vec *v) { return (uint64_t)v->length * r_elt_size(v->dtype); }

static int shares_block(const fmr_runtime *r, const fmr_vec *v) {
  for (const fmr_vec *o = r->vecs; o; o = o->next)
    if (o != v && o->off == v->off) return 1;
  return 0;
}

static void vec_finalize(SEXP ext) {
  fmr_vec *v = (fmr_vec *)R_ExternalPtrAddr(ext);
  if (!v) return;
  R_ClearExternalPtr(ext);
  fmr_runtime *r = v->rt;
  if (fmr_runtime_can_modify(r) && !shares_block(r, v) && !fm_map_is_named(r->map, v->off)) {
    fm_err err;
    if (fm_map_free(r->map, v->off, &err) != FM_OK) {
      /* Nothing to report from a finalizer: the block stays until close, and
       * an unnamed block is not kept across a reopen. */
    }
  }
  fmr_runtime_drop_vec(r, v);
  free(v);
}

void fmr_vec_note_named(fmr_runtime *r, const fm_dir_entry *e) {
  for (fmr_vec *v = r->vecs; v; v = v->next) {
    if (v->off == e->off) {
      v->is_named = 1;
      memcpy(v->name, e->name, sizeof v->name);
      v->uid = e->uid;
      /* A byte vector named as a codec's payload takes the directory's dtype
       * (raw <-> bed2, dos8, hap1), so that its reference names what is
       * stored. */
      if (r_elt_size(v->dtype) == r_elt_size(e->dtype)) v->dtype = e->dtype;
    } else if (v->is_named && strcmp(v->name, e->name) == 0) {
      v->is_named = 0; /* the name now refers to another block */
    }
  }
}

fm_status fmr_vec_detach_block(fmr_runtime *r, uint64_t off, fm_err *err) {
  fm_err_clear(err);
  int any = 0;
  for (fmr_vec *v = r->vecs; v; v = v->next)
    if (v->off == off) any = 1;
  if (!any) return FM_OK;
  if (r->is_broken) return fm_err_set(err, FM_EFORMAT, "%s", r->broken_msg);
  fm_status st = fm_map_check(r->map, err); /* the copy reads every page */
  if (st != FM_OK) {
    if (st == FM_EFORMAT) fmr_runtime_mark_broken(r, err);
    return st;
  }
  uint64_t n_bytes = fm_map_block_bytes(r->map, off);
  uint64_t new_off = 0;
  /* The garbage collection may drop vectors of this block: check again. */
  st = fmr_runtime_alloc(r, n_bytes ? n_bytes : 1, 1, &new_off, err);
  if (st != FM_OK) return st;
  any = 0;
  for (fmr_vec *v = r->vecs; v; v = v->next)
    if (v->off == off) any = 1;
  if (!any) return fm_map_free(r->map, new_off, err);
  void *src = fm_map_ptr(r->map, off), *dst = fm_map_ptr(r->map, new_off);
  if (!src || !dst) return fm_err_set(err, FM_EINTERNAL, "block pointer outside the mapping");
  memcpy(dst, src, (size_t)n_bytes);
  for (fmr_vec *v = r->vecs; v; v = v->next) {
    if (v->off != off) continue;
    v->off = new_off;
    v->is_named = 0;
    v->name[0] = '\0';
    v->uid = 0;
  }
  return FM_OK;
}

/* ---- construction ------------------------------------------------------- */

static SEXP mk_uid(uint64_t uid) {
  char buf[32];
  snprintf(buf, sizeof buf, "%llu", (unsigned long long)uid);
  return Rf_mkString(buf);
}

/* The recipe list; *off_slot receives its (unfilled) REALSXP offset cell. */
static SEXP recipe_new(const fmr_runtime *r, const char *name, fm_dtype dtype, int64_t length,
                       uint64_t uid, SEXP *off_slot) {
  int nprot = 0;
  const char *names[] = {"path", "name", "dtype", "length", "uid", "mode", "off", "file_id", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, names));
  nprot++;
  SET_VECTOR_ELT(out, 0, Rf_mkString(r->path ? r->path : ""));
  if (name) {
    SEXP s = PROTECT(Rf_allocVector(STRSXP, 1));
    SET_STRING_ELT(s, 0, Rf_mkCharCE(name, CE_UTF8));
    SET_VECTOR_ELT(out, 1, s);
    UNPROTECT(1);
    SET_VECTOR_ELT(out, 4, mk_uid(uid));
  }
  SET_VECTOR_ELT(out, 2, Rf_mkString(fm_dtype_name(dtype)));
  SET_VECTOR_ELT(out, 3, Rf_ScalarReal((double)length));
  SET_VECTOR_ELT(out, 5, Rf_mkString(r->mode == FM_MAP_SCRATCH ? "scratch" : "persistent"));
  SEXP off = Rf_allocVector(REALSXP, 1);
  SET_VECTOR_ELT(out, 6, off);
  REAL(off)[0] = 0;
  SET_VECTOR_ELT(out, 7, Rf_mkString(r->file_id));
  *off_slot = off;
  UNPROTECT(nprot);
  return out;
}

static R_altrep_class_t class_for(SEXPTYPE t) {
  switch (t) {
  case REALSXP: return cls_dbl;
  case INTSXP: return cls_int;
  case LGLSXP: return cls_lgl;
  default: return cls_raw;
  }
}

enum {
  VM_ALLOC = 1,  /* allocate a fresh block of `length` elements (off ignored) */
  VM_SOFT = 2,   /* on an allocation failure return NULL with err set, not raise */
  VM_GC = 4      /* on FM_ENOSPC collect garbage once and retry (.Call paths only) */
};

/* The mapped vector over a block (flags VM_*). With VM_ALLOC and copy_from !=
 * NULL the new block is filled from copy_from (which must stay valid across a
 * garbage collection, so never with VM_GC). Vectors of read-only runtimes and
 * over named blocks are always marked not mutable. All R objects are made
 * before the block exists, and the record is linked before the last R
 * allocation, so an R error can never leak the block (the data1 finalizer
 * frees it). */
static SEXP vec_make(SEXP rt, uint64_t off, int64_t length, fm_dtype dtype,
                     const fm_dir_entry *named, int flags, const void *copy_from, fm_err *err) {
  fmr_runtime *r = fmr_runtime_get(rt);
  int nprot = 0;
  fm_err_clear(err);
  SEXPTYPE type = fmr_dtype_sexptype(dtype);
  SEXP ext = PROTECT(R_MakeExternalPtr(NULL, R_NilValue, rt));
  nprot++;
  R_RegisterCFinalizerEx(ext, vec_finalize, TRUE);
  SEXP off_slot = R_NilValue;
  SEXP recipe = PROTECT(recipe_new(r, named ? named->name : NULL, dtype, length,
                                   named ? named->uid : 0, &off_slot));
  nprot++;
  if (flags & VM_ALLOC) {
    uint64_t n_bytes = (uint64_t)length * r_elt_size(dtype);
    fm_status st = fmr_runtime_alloc(r, n_bytes ? n_bytes : 1, (flags & VM_GC) != 0, &off, err);
    if (st != FM_OK) {
      UNPROTECT(nprot);
      if (flags & VM_SOFT) return NULL;
      fmr_raise(err);
    }
    if (copy_from && n_bytes) memcpy(fm_map_ptr(r->map, off), copy_from, (size_t)n_bytes);
  }
  fmr_vec *v = (fmr_vec *)calloc(1, sizeof *v);
  if (!v) {
    fm_err e2;
    if ((flags & VM_ALLOC) && fm_map_free(r->map, off, &e2) != FM_OK) {
      /* The block stays until close; an unnamed block is not kept. */
    }
    UNPROTECT(nprot);
    if (flags & VM_SOFT) {
      fm_err_set(err, FM_ENOMEM, "cannot allocate a vector record");
      return NULL;
    }
    fmr_stop(FM_ENOMEM, "cannot allocate a vector record");
  }
  v->off = off;
  v->length = length;
  v->dtype = dtype;
  v->type = type;
  if (named) {
    v->is_named = 1;
    memcpy(v->name, named->name, sizeof v->name);
    v->uid = named->uid;
  }
  fmr_runtime_add_vec(r, v);
  R_SetExternalPtrAddr(ext, v);
  REAL(off_slot)[0] = (double)off;
  SEXP ans = R_new_altrep(class_for(type), ext, recipe);
  if (r->read_only || named) MARK_NOT_MUTABLE(ans);
  UNPROTECT(nprot);
  return ans;
}

SEXP fmr_vec_wrap(SEXP rt, uint64_t off, int64_t length, fm_dtype dtype, const fm_dir_entry *named) {
  fm_err err;
  return vec_make(rt, off, length, dtype, named, 0, NULL, &err);
}

static int64_t checked_bytes(int64_t length, fm_dtype dtype) {
  int64_t n_bytes = 0;
  if (length < 0 || !fm_mul_ok(length, (int64_t)r_elt_size(dtype), &n_bytes))
    fmr_stop(FM_EARG, "length %lld of %s elements is out of range", (long long)length,
             fm_dtype_name(dtype));
  return n_bytes;
}

SEXP fmr_vec_alloc(SEXP rt, fm_dtype dtype, int64_t length) {
  fmr_runtime *r = fmr_runtime_get(rt);
  fmr_runtime_require_modify(r, "allocate");
  if (length > R_XLEN_T_MAX)
    fmr_stop(FM_EARG, "length %lld exceeds R's longest vector", (long long)length);
  checked_bytes(length, dtype);
  fm_err err;
  return vec_make(rt, 0, length, dtype, NULL, VM_ALLOC | VM_GC, NULL, &err);
}

/* ---- ALTREP methods ------------------------------------------------------ */

static R_xlen_t m_length(SEXP x) {
  fmr_vec *v = (fmr_vec *)R_ExternalPtrAddr(R_altrep_data1(x));
  return v ? (R_xlen_t)v->length : 0;
}

/* Dataptr and Dataptr_or_null run once per operation (BLAS, sum, x[] <- v),
 * so they afford the fstat of fm_map_check: a truncated file is an
 * fm_error_eformat here, never a SIGBUS in the code that gets the pointer. */
static void *m_dataptr(SEXP x, Rboolean writeable) {
  (void)writeable; /* shared and read-only vectors are marked not mutable */
  return fmr_vec_ptr(vec(x));
}

static const void *m_dataptr_or_null(SEXP x) {
  fmr_vec *v = (fmr_vec *)R_ExternalPtrAddr(R_altrep_data1(x));
  if (!v || !v->rt->map) return NULL;
  return fmr_vec_ptr(v);
}

static const void *elt_base(SEXP x, R_xlen_t i) {
  fmr_vec *v = vec(x);
  if (i < 0 || i >= v->length)
    fmr_stop(FM_EARG, "index %lld is outside [0, %lld) of a mapped vector", (long long)i,
             (long long)v->length);
  return vec_ptr_fast(v);
}

static double m_dbl_elt(SEXP x, R_xlen_t i) { return ((const double *)elt_base(x, i))[i]; }
static int m_int_elt(SEXP x, R_xlen_t i) { return ((const int *)elt_base(x, i))[i]; }
static Rbyte m_raw_elt(SEXP x, R_xlen_t i) { return ((const Rbyte *)elt_base(x, i))[i]; }

static R_xlen_t region(SEXP x, R_xlen_t i, R_xlen_t n, void *buf, size_t size) {
  fmr_vec *v = vec(x);
  if (i < 0 || n < 0)
    fmr_stop(FM_EARG, "region start %lld or count %lld is negative", (long long)i, (long long)n);
  if (i >= v->length || n == 0) return 0;
  R_xlen_t k = (R_xlen_t)v->length - i;
  if (n < k) k = n;
  const char *p = (const char *)vec_ptr_fast(v);
  memcpy(buf, p + (size_t)i * size, (size_t)k * size);
  return k;
}

static R_xlen_t m_dbl_region(SEXP x, R_xlen_t i, R_xlen_t n, double *buf) {
  return region(x, i, n, buf, sizeof(double));
}
static R_xlen_t m_int_region(SEXP x, R_xlen_t i, R_xlen_t n, int *buf) {
  return region(x, i, n, buf, sizeof(int));
}
static R_xlen_t m_raw_region(SEXP x, R_xlen_t i, R_xlen_t n, Rbyte *buf) {
  return region(x, i, n, buf, 1);
}

static SEXP m_duplicate(SEXP x, Rboolean deep) {
  (void)deep; /* atomic data: deep and shallow copies are the same */
  fmr_vec *v = vec(x);
  const void *src = fmr_vec_ptr(v); /* raises when closed or truncated */
  if (!fmr_runtime_can_modify(v->rt)) return NULL;
  SEXP rt = R_ExternalPtrProtected(R_altrep_data1(x));
  fm_err err;
  return vec_make(rt, 0, v->length, v->dtype, NULL, VM_ALLOC | VM_SOFT, src, &err);
}

/* The vector's name still refers to its block (the map may be closed: then
 * trust the record, the reference is checked when it is restored). */
static int name_current(const fmr_vec *v) {
  if (!v->is_named) return 0;
  if (!v->rt->map) return 1;
  fm_dir_entry e;
  fm_err err;
  if (fm_map_lookup(v->rt->map, v->name, &e, &err) != FM_OK) return 0;
  return e.off == v->off && e.uid == v->uid;
}

static SEXP m_serialized_state(SEXP x) {
  fmr_vec *v = (fmr_vec *)R_ExternalPtrAddr(R_altrep_data1(x));
  if (!v || v->rt->mode != FM_MAP_PERSISTENT || !name_current(v)) return NULL;
  SEXP off_slot;
  SEXP out = PROTECT(recipe_new(v->rt, v->name, v->dtype, v->length, v->uid, &off_slot));
  REAL(off_slot)[0] = (double)v->off;
  UNPROTECT(1);
  return out;
}

static SEXP list_get(SEXP l, const char *nm) {
  SEXP names = Rf_getAttrib(l, R_NamesSymbol);
  for (R_xlen_t i = 0; i < XLENGTH(l); i++)
    if (strcmp(CHAR(STRING_ELT(names, i)), nm) == 0) return VECTOR_ELT(l, i);
  return R_NilValue;
}

static const char *recipe_string(SEXP state, const char *field) {
  SEXP s = list_get(state, field);
  if (TYPEOF(s) != STRSXP || XLENGTH(s) != 1 || STRING_ELT(s, 0) == NA_STRING)
    fmr_stop(FM_EFORMAT, "cannot restore fmalloc object: its reference has no valid '%s'", field);
  return CHAR(STRING_ELT(s, 0));
}

static SEXP m_unserialize(SEXP cls, SEXP state) {
  (void)cls;
  if (TYPEOF(state) != VECSXP)
    fmr_stop(FM_EFORMAT, "cannot restore fmalloc object: its reference is not a list");
  const char *name = recipe_string(state, "name");
  const char *path = recipe_string(state, "path");
  const char *dtype_s = recipe_string(state, "dtype");
  const char *uid_s = recipe_string(state, "uid");
  SEXP s_len = list_get(state, "length");
  if (TYPEOF(s_len) != REALSXP || XLENGTH(s_len) != 1)
    fmr_stop(FM_EFORMAT, "cannot restore fmalloc object '%s': its reference has no length", name);
  int64_t length = (int64_t)REAL(s_len)[0];
  uint64_t uid = strtoull(uid_s, NULL, 10);
  fm_dtype dtype = FM_DTYPE_NONE;
  for (int t = 1; t <= FM_DTYPE_HAP1; t++)
    if (strcmp(fm_dtype_name((fm_dtype)t), dtype_s) == 0) dtype = (fm_dtype)t;
  if (dtype == FM_DTYPE_NONE)
    fmr_stop(FM_EFORMAT, "cannot restore fmalloc object '%s': unknown dtype '%s'", name, dtype_s);

  /* Absent in references written before file ids existed: not checked. */
  SEXP s_id = list_get(state, "file_id");
  const char *file_id = NULL;
  if (s_id != R_NilValue) file_id = recipe_string(state, "file_id");

  if (access(path, F_OK) != 0)
    fmr_stop(FM_EIO, "cannot restore fmalloc object '%s': backing file '%s' does not exist", name,
             path);
  int nprot = 0;
  fm_err err;
  /* Reuse a runtime of this process only while path still names its file. */
  SEXP rt = fmr_runtime_find(path, &err);
  if (rt == R_NilValue && err.code != FM_OK)
    fmr_stop(err.code, "cannot restore fmalloc object '%s': %s", name, err.msg);
  if (rt == R_NilValue) {
    rt = fmr_runtime_open_c(path, 0, FM_MAP_PERSISTENT, 1, &err);
    if (rt == R_NilValue)
      fmr_stop(err.code, "cannot restore fmalloc object '%s': %s", name, err.msg);
  }
  PROTECT(rt);
  nprot++;
  fmr_runtime *r = fmr_runtime_get(rt);
  /* uids restart in a file created again at the same path: the file id tells
   * the object the reference was made for from a namesake. */
  if (file_id && strcmp(file_id, r->file_id) != 0) {
    UNPROTECT(nprot);
    fmr_stop(FM_EMISMATCH,
             "cannot restore fmalloc object '%s': the reference refers to object '%s' of another "
             "file: '%s' was created anew after it was serialized (file id %s, now %s)",
             name, name, path, file_id, r->file_id);
  }
  fm_dir_entry e;
  if (fm_map_lookup(r->map, name, &e, &err) != FM_OK) {
    UNPROTECT(nprot);
    fmr_stop(err.code, "cannot restore fmalloc object '%s': %s", name, err.msg);
  }
  if (e.uid != uid) {
    UNPROTECT(nprot);
    fmr_stop(FM_EMISMATCH,
             "cannot restore fmalloc object '%s': the object in '%s' was replaced after it was "
             "serialized (uid %llu, now %llu)",
             name, path, (unsigned long long)uid, (unsigned long long)e.uid);
  }
  int64_t stored_len = (int64_t)(e.n_bytes / r_elt_size(e.dtype));
  if (e.dtype != dtype || stored_len != length) {
    UNPROTECT(nprot);
    fmr_stop(FM_EMISMATCH,
             "cannot restore fmalloc object '%s': '%s' holds %lld %s values, the reference "
             "expects %lld %s values",
             name, path, (long long)stored_len, fm_dtype_name(e.dtype), (long long)length,
             dtype_s);
  }
  SEXP ans = fmr_vec_wrap(rt, e.off, length, e.dtype, &e);
  UNPROTECT(nprot);
  return ans;
}

static Rboolean m_inspect(SEXP x, int pre, int deep, int pvec,
                          void (*inspect_subtree)(SEXP, int, int, int)) {
  (void)pre;
  (void)deep;
  (void)pvec;
  (void)inspect_subtree;
  fmr_vec *v = (fmr_vec *)R_ExternalPtrAddr(R_altrep_data1(x));
  if (!v) {
    Rprintf(" fmalloc mapped vector (released)\n");
    return TRUE;
  }
  const fmr_runtime *r = v->rt;
  Rprintf(" fmalloc %s length=%lld off=%llu %s%s %s%s%s %s '%s'\n", fm_dtype_name(v->dtype),
          (long long)v->length, (unsigned long long)v->off,
          r->mode == FM_MAP_SCRATCH ? "scratch" : "persistent", r->read_only ? " read-only" : "",
          v->is_named ? "name='" : "unnamed", v->is_named ? v->name : "", v->is_named ? "'" : "",
          !r->map ? "closed" : (r->is_broken ? "broken" : "open"), r->path ? r->path : "");
  return TRUE;
}

void fmr_altrep_init(DllInfo *dll) {
  cls_dbl = R_make_altreal_class("fm_dbl_map", "Rfmalloc", dll);
  cls_int = R_make_altinteger_class("fm_int_map", "Rfmalloc", dll);
  cls_lgl = R_make_altlogical_class("fm_lgl_map", "Rfmalloc", dll);
  cls_raw = R_make_altraw_class("fm_raw_map", "Rfmalloc", dll);
  R_altrep_class_t all[4] = {cls_dbl, cls_int, cls_lgl, cls_raw};
  for (int k = 0; k < 4; k++) {
    R_altrep_class_t c = all[k];
    R_set_altrep_Length_method(c, m_length);
    R_set_altrep_Inspect_method(c, m_inspect);
    R_set_altrep_Duplicate_method(c, m_duplicate);
    R_set_altrep_Serialized_state_method(c, m_serialized_state);
    R_set_altrep_Unserialize_method(c, m_unserialize);
    R_set_altvec_Dataptr_method(c, m_dataptr);
    R_set_altvec_Dataptr_or_null_method(c, m_dataptr_or_null);
  }
  R_set_altreal_Elt_method(cls_dbl, m_dbl_elt);
  R_set_altreal_Get_region_method(cls_dbl, m_dbl_region);
  R_set_altinteger_Elt_method(cls_int, m_int_elt);
  R_set_altinteger_Get_region_method(cls_int, m_int_region);
  R_set_altlogical_Elt_method(cls_lgl, m_int_elt);
  R_set_altlogical_Get_region_method(cls_lgl, m_int_region);
  R_set_altraw_Elt_method(cls_raw, m_raw_elt);
  R_set_altraw_Get_region_method(cls_raw, m_raw_region);
}

/* ---- .Call entry points ------------------------------------------------- */

static const char *utf8_name(SEXP name) {
  if (TYPEOF(name) != STRSXP || XLENGTH(name) != 1 || STRING_ELT(name, 0) == NA_STRING)
    fmr_stop(FM_EARG, "name must be a single non-missing string");
  const char *nm = Rf_translateCharUTF8(STRING_ELT(name, 0));
  size_t n = strlen(nm);
  if (n == 0 || n > FM_NAME_MAX)
    fmr_stop(FM_EARG, "name must have 1 to %d bytes, not %zu", FM_NAME_MAX, n);
  return nm;
}

static fm_dtype type_dtype(SEXP type) {
  if (TYPEOF(type) != STRSXP || XLENGTH(type) != 1 || STRING_ELT(type, 0) == NA_STRING)
    fmr_stop(FM_EARG, "type must be a single string");
  const char *t = CHAR(STRING_ELT(type, 0));
  if (!strcmp(t, "double") || !strcmp(t, "numeric")) return FM_DTYPE_F64;
  if (!strcmp(t, "integer")) return FM_DTYPE_I32;
  if (!strcmp(t, "logical")) return FM_DTYPE_LGL;
  if (!strcmp(t, "raw")) return FM_DTYPE_U8;
  fmr_stop(FM_EARG, "type must be \"double\", \"numeric\", \"integer\", \"logical\" or \"raw\", not \"%s\"", t);
}

static int64_t as_length(SEXP length) {
  double d = Rf_asReal(length);
  if (!(d >= 0) || d != (double)(int64_t)d || d > (double)R_XLEN_T_MAX)
    fmr_stop(FM_EARG, "length must be a whole number in [0, 2^52], not %g", d);
  return (int64_t)d;
}

/* create_fmalloc_vector / create_fmalloc_matrix: dim is NULL or an integer
 * vector, dimnames NULL or a list already validated in R. */
SEXP fmr_altrep_new(SEXP rt, SEXP type, SEXP length, SEXP dim, SEXP dimnames) {
  fm_dtype dtype = type_dtype(type);
  int64_t n = as_length(length);
  SEXP ans = PROTECT(fmr_vec_alloc(rt, dtype, n));
  if (dim != R_NilValue) Rf_setAttrib(ans, R_DimSymbol, dim);
  if (dimnames != R_NilValue) Rf_setAttrib(ans, R_DimNamesSymbol, dimnames);
  UNPROTECT(1);
  return ans;
}

/* The one-byte dtype named by s ("raw", "bed2", "dos8", "hap1"). */
static fm_dtype byte_dtype(SEXP s) {
  if (TYPEOF(s) != STRSXP || XLENGTH(s) != 1 || STRING_ELT(s, 0) == NA_STRING)
    fmr_stop(FM_EARG, "a payload dtype must be a single string");
  const char *t = CHAR(STRING_ELT(s, 0));
  for (int k = 1; k <= FM_DTYPE_HAP1; k++)
    if (!strcmp(fm_dtype_name((fm_dtype)k), t) && r_elt_size((fm_dtype)k) == 1) return (fm_dtype)k;
  fmr_stop(FM_EARG, "\"%s\" is not a one-byte payload dtype (raw, bed2, dos8, hap1)", t);
}

/* Store x under name in runtime rt. A mapped unnamed x of rt (or one already
 * under this name) is named in place and returned; anything else is copied
 * into a new block, which is named and returned as a mapped vector (without
 * attributes: R sets them). An object already under the name is replaced; its
 * live views keep their values on an unnamed copy. Durable after a sync.
 * payload: NULL, or for the bytes of a codec matrix (x raw)
 * list(dtype, dims): the directory records that one-byte dtype and those
 * dims (a double vector of 1 to FM_DIR_MAX_DIMS extents; for a packed
 * dtype the matrix's shape) instead of x's. */
SEXP fmr_altrep_save(SEXP x, SEXP name, SEXP rt, SEXP payload) {
  fmr_runtime *r = fmr_runtime_get(rt);
  fmr_runtime_require_modify(r, "save an object");
  const char *nm = utf8_name(name);
  fm_dtype dtype = sexptype_dtype(TYPEOF(x));
  if (dtype == FM_DTYPE_NONE)
    fmr_stop(FM_EARG, "cannot save a %s vector: only double, integer, logical and raw are stored",
             Rf_type2char(TYPEOF(x)));
  int64_t length = (int64_t)XLENGTH(x);
  fm_dir_entry e;
  memset(&e, 0, sizeof e);
  SEXP dim = Rf_getAttrib(x, R_DimSymbol);
  fm_dtype payload_dtype = FM_DTYPE_NONE;
  if (payload != R_NilValue) {
    if (TYPEOF(x) != RAWSXP) fmr_stop(FM_EARG, "a codec payload must be a raw vector");
    payload_dtype = byte_dtype(list_get(payload, "dtype"));
    SEXP d = list_get(payload, "dims");
    if (TYPEOF(d) != REALSXP || XLENGTH(d) < 1 || XLENGTH(d) > FM_DIR_MAX_DIMS)
      fmr_stop(FM_EARG, "payload dims must be 1 to %d numbers", FM_DIR_MAX_DIMS);
    e.n_dims = (int32_t)XLENGTH(d);
    for (int k = 0; k < e.n_dims; k++) {
      double v = REAL(d)[k];
      if (!(v >= 0 && v <= 9007199254740992.0 && v == floor(v)))
        fmr_stop(FM_EARG, "payload dims must be whole numbers >= 0, not %g", v);
      e.dims[k] = (int64_t)v;
    }
    dtype = payload_dtype;
  } else if (dim != R_NilValue) {
    if (XLENGTH(dim) > FM_DIR_MAX_DIMS)
      fmr_stop(FM_EARG, "cannot save an array of %lld dimensions (at most %d)",
               (long long)XLENGTH(dim), FM_DIR_MAX_DIMS);
    e.n_dims = (int32_t)XLENGTH(dim);
    for (int k = 0; k < e.n_dims; k++) e.dims[k] = INTEGER(dim)[k];
  } else {
    e.n_dims = 1;
    e.dims[0] = length;
  }
  int nprot = 0;
  fmr_vec *v = fmr_vec_of(x);
  SEXP ans = x;
  if (v && v->rt == r && (!v->is_named || strcmp(v->name, nm) == 0)) {
    /* a byte view of a packed codec keeps its dtype, unless one is given */
    if (payload_dtype == FM_DTYPE_NONE) dtype = v->dtype;
    fmr_vec_ptr(v);   /* raises when closed or truncated */
  } else {
    if (v) fmr_vec_ptr(v); /* raises when the source is closed or truncated */
    fm_err err;
    ans = PROTECT(vec_make(rt, 0, length, dtype, NULL, VM_ALLOC | VM_GC, NULL, &err));
    nprot++;
    /* The source pointer is taken after the allocation, which may have run
     * the garbage collector (and finalizers). */
    const void *src = NULL;
    if (v) src = fmr_vec_ptr(v);
    else if (length > 0) src = DATAPTR_RO(x);
    fmr_vec *w = fmr_vec_of(ans);
    if (src && length > 0) memcpy(fmr_vec_ptr(w), src, (size_t)vec_bytes(w));
    v = w;
  }
  snprintf(e.name, sizeof e.name, "%s", nm);
  e.dtype = dtype;
  e.off = v->off;
  e.n_bytes = vec_bytes(v);
  fm_dir_entry old;
  fm_err err;
  if (fm_map_lookup(r->map, nm, &old, &err) == FM_OK && old.off != v->off) {
    if (fmr_vec_detach_block(r, old.off, &err) != FM_OK) {
      UNPROTECT(nprot);
      fmr_raise(&err);
    }
  }
  if (fm_map_name(r->map, &e, &err) != FM_OK) {
    UNPROTECT(nprot);
    fmr_raise(&err);
  }
  fm_dir_entry stored;
  if (fm_map_lookup(r->map, nm, &stored, &err) != FM_OK) {
    UNPROTECT(nprot);
    fmr_raise(&err);
  }
  fmr_vec_note_named(r, &stored);
  /* Value semantics: from now on x (named in place) and the result view the
   * stored object, so R must duplicate them before any modification. */
  MARK_NOT_MUTABLE(ans);
  UNPROTECT(nprot);
  return ans;
}

/* The stored object as a mapped vector, with dim for plain dtypes. */
SEXP fmr_altrep_get(SEXP rt, SEXP name) {
  fm_map *m = fmr_runtime_map(rt);
  const char *nm = utf8_name(name);
  fm_dir_entry e;
  fm_err err;
  if (fm_map_lookup(m, nm, &e, &err) != FM_OK) fmr_raise(&err);
  int64_t length = (int64_t)(e.n_bytes / r_elt_size(e.dtype));
  SEXP ans = PROTECT(fmr_vec_wrap(rt, e.off, length, e.dtype, &e));
  if (fm_dtype_size(e.dtype) && e.n_dims >= 2 && e.n_dims <= FM_DIR_MAX_DIMS) {
    int64_t prod = 1;
    int ok = 1;
    for (int k = 0; k < e.n_dims; k++)
      if (e.dims[k] < 0 || e.dims[k] > INT_MAX || !fm_mul_ok(prod, e.dims[k], &prod)) ok = 0;
    if (ok && prod == length) {
      SEXP dim = PROTECT(Rf_allocVector(INTSXP, e.n_dims));
      for (int k = 0; k < e.n_dims; k++) INTEGER(dim)[k] = (int)e.dims[k];
      Rf_setAttrib(ans, R_DimSymbol, dim);
      UNPROTECT(1);
    }
  }
  UNPROTECT(1);
  return ans;
}

/* Set attributes on a freshly made mapped vector in place (no duplicate). */
SEXP fmr_altrep_set_attrs(SEXP x, SEXP attrs) {
  if (!is_our_class(x)) fmr_stop(FM_EARG, "x must be a mapped vector");
  SEXP names = Rf_getAttrib(attrs, R_NamesSymbol);
  for (R_xlen_t i = 0; i < XLENGTH(attrs); i++)
    Rf_setAttrib(x, Rf_install(CHAR(STRING_ELT(names, i))), VECTOR_ELT(attrs, i));
  return x;
}

SEXP fmr_altrep_is_mapped(SEXP x) { return Rf_ScalarLogical(is_our_class(x)); }

SEXP fmr_altrep_runtime(SEXP x) {
  if (!is_our_class(x)) return R_NilValue;
  return R_ExternalPtrProtected(R_altrep_data1(x));
}

/* list(name, dtype, length, off, uid, mode, path, is_open, read_only) */
SEXP fmr_altrep_describe(SEXP x) {
  fmr_vec *v = fmr_vec_of(x);
  if (!v) fmr_stop(FM_EARG, "x is not a mapped vector");
  int nprot = 0;
  const char *names[] = {"name", "dtype", "length", "off", "uid", "mode",
                         "path", "is_open", "read_only", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, names));
  nprot++;
  int named = name_current(v);
  if (named) {
    SEXP s = PROTECT(Rf_allocVector(STRSXP, 1));
    SET_STRING_ELT(s, 0, Rf_mkCharCE(v->name, CE_UTF8));
    SET_VECTOR_ELT(out, 0, s);
    UNPROTECT(1);
    SET_VECTOR_ELT(out, 4, mk_uid(v->uid));
  }
  SET_VECTOR_ELT(out, 1, Rf_mkString(fm_dtype_name(v->dtype)));
  SET_VECTOR_ELT(out, 2, Rf_ScalarReal((double)v->length));
  SET_VECTOR_ELT(out, 3, Rf_ScalarReal((double)v->off));
  SET_VECTOR_ELT(out, 5, Rf_mkString(v->rt->mode == FM_MAP_SCRATCH ? "scratch" : "persistent"));
  SET_VECTOR_ELT(out, 6, Rf_mkString(v->rt->path ? v->rt->path : ""));
  SET_VECTOR_ELT(out, 7, Rf_ScalarLogical(v->rt->map != NULL));
  SET_VECTOR_ELT(out, 8, Rf_ScalarLogical(v->rt->read_only));
  UNPROTECT(nprot);
  return out;
}

/* Write values into columns j (1-based) of the mapped matrix x in place,
 * through the pointer: every R object viewing the block sees the change (no
 * value semantics; works from forked children). values has x's type and
 * nrow(x) * length(j) elements, column-major. */
SEXP fmr_altrep_write_cols(SEXP x, SEXP j, SEXP values) {
  fmr_vec *v = fmr_vec_of(x);
  if (!v) fmr_stop(FM_EARG, "x must be a mapped vector or matrix");
  if (v->rt->read_only)
    fmr_stop(FM_EARG, "cannot write: runtime '%s' is open read-only", v->rt->path);
  char *base = (char *)fmr_vec_ptr(v);
  int64_t nrow = v->length, ncol = 1;
  SEXP dim = Rf_getAttrib(x, R_DimSymbol);
  if (dim != R_NilValue) {
    if (XLENGTH(dim) != 2) fmr_stop(FM_EARG, "x must be a matrix, not a %lld-d array", (long long)XLENGTH(dim));
    nrow = INTEGER(dim)[0];
    ncol = INTEGER(dim)[1];
  }
  if (TYPEOF(j) != INTSXP) fmr_stop(FM_EARG, "j must be an integer vector");
  if ((SEXPTYPE)TYPEOF(values) != v->type)
    fmr_stop(FM_EARG, "values must be %s, not %s", Rf_type2char(v->type),
             Rf_type2char(TYPEOF(values)));
  int64_t nj = (int64_t)XLENGTH(j);
  int64_t need = 0;
  if (!fm_mul_ok(nrow, nj, &need) || need != (int64_t)XLENGTH(values))
    fmr_stop(FM_EMISMATCH, "values has %lld elements, %lld rows x %lld columns need %lld",
             (long long)XLENGTH(values), (long long)nrow, (long long)nj, (long long)need);
  for (int64_t k = 0; k < nj; k++) {
    int c = INTEGER(j)[k];
    if (c == NA_INTEGER || c < 1 || c > ncol)
      fmr_stop(FM_EARG, "column %d is outside 1..%lld", c, (long long)ncol);
  }
  size_t size = r_elt_size(v->dtype);
  size_t col_bytes = (size_t)nrow * size;
  const char *src = (const char *)DATAPTR_RO(values);
  for (int64_t k = 0; k < nj; k++)
    memcpy(base + (size_t)(INTEGER(j)[k] - 1) * col_bytes, src + (size_t)k * col_bytes, col_bytes);
  return R_NilValue;
}

/* Test hooks: the element and region accessors exactly as C code calls them
 * (INTEGER_ELT, REAL_GET_REGION, ...), which dispatch to Elt / Get_region.
 * i is 0-based. */
SEXP fmr_altrep_elt(SEXP x, SEXP i) {
  R_xlen_t k = (R_xlen_t)Rf_asReal(i);
  switch (TYPEOF(x)) {
  case REALSXP: return Rf_ScalarReal(REAL_ELT(x, k));
  case INTSXP: return Rf_ScalarInteger(INTEGER_ELT(x, k));
  case LGLSXP: return Rf_ScalarLogical(LOGICAL_ELT(x, k));
  case RAWSXP: return Rf_ScalarRaw(RAW_ELT(x, k));
  default: fmr_stop(FM_EARG, "x must be double, integer, logical or raw");
  }
}

SEXP fmr_altrep_region(SEXP x, SEXP i, SEXP n) {
  R_xlen_t k = (R_xlen_t)Rf_asReal(i), m = (R_xlen_t)Rf_asReal(n);
  if (m < 0) fmr_stop(FM_EARG, "n must be >= 0");
  SEXP buf = PROTECT(Rf_allocVector(TYPEOF(x), m));
  R_xlen_t got = 0;
  switch (TYPEOF(x)) {
  case REALSXP: got = REAL_GET_REGION(x, k, m, REAL(buf)); break;
  case INTSXP: got = INTEGER_GET_REGION(x, k, m, INTEGER(buf)); break;
  case LGLSXP: got = LOGICAL_GET_REGION(x, k, m, LOGICAL(buf)); break;
  case RAWSXP: got = RAW_GET_REGION(x, k, m, RAW(buf)); break;
  default: UNPROTECT(1); fmr_stop(FM_EARG, "x must be double, integer, logical or raw");
  }
  SEXP out = Rf_xlengthgets(buf, got);
  UNPROTECT(1);
  return out;
}

/* This module's .Call entry points (r_calls.h; r_init.c registers them). */
const R_CallMethodDef fmr_altrep_calls[] = {
    FMR_CALLDEF(fmr_altrep_new, 5),
    FMR_CALLDEF(fmr_altrep_save, 4),
    FMR_CALLDEF(fmr_altrep_get, 2),
    FMR_CALLDEF(fmr_altrep_set_attrs, 2),
    FMR_CALLDEF(fmr_altrep_is_mapped, 1),
    FMR_CALLDEF(fmr_altrep_runtime, 1),
    FMR_CALLDEF(fmr_altrep_describe, 1),
    FMR_CALLDEF(fmr_altrep_write_cols, 3),
    FMR_CALLDEF(fmr_altrep_elt, 2),
    FMR_CALLDEF(fmr_altrep_region, 3),
    {NULL, NULL, 0}};
