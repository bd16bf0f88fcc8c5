/* r_runtime.c: runtime handles (open_fmalloc, cleanup_fmalloc, sync, info)
 * and the name directory (list, delete). Records and lifetimes: r_runtime.h. */
#include "r_runtime.h"
#include "r_calls.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static fmr_runtime *g_runtimes = NULL; /* unfinalized runtimes of this process */

static void list_link(fmr_runtime *r) {
  r->prev = NULL;
  r->next = g_runtimes;
  if (g_runtimes) g_runtimes->prev = r;
  g_runtimes = r;
}

static void list_unlink(fmr_runtime *r) {
  if (r->prev) r->prev->next = r->next;
  else if (g_runtimes == r) g_runtimes = r->next;
  if (r->next) r->next->prev = r->prev;
  r->next = r->prev = NULL;
}

/* Close the map (the file stays as it is; unsynced metadata is dropped). In a
 * forked child the mapping and lock belong to the parent: only forget them. */
static void runtime_close(fmr_runtime *r) {
  if (!r->map) return;
  if (r->pid == getpid()) fm_map_close(r->map);
  r->map = NULL;
}

static void runtime_free(fmr_runtime *r) {
  free(r->path);
  free(r);
}

static void runtime_finalize(SEXP handle) {
  fmr_runtime *r = (fmr_runtime *)R_ExternalPtrAddr(handle);
  if (!r) return;
  R_ClearExternalPtr(handle);
  runtime_close(r);
  list_unlink(r);
  if (r->wref) {
    R_ReleaseObject(r->wref);
    r->wref = NULL;
  }
  r->is_finalized = 1;
  if (r->n_vecs == 0) runtime_free(r);
}

void fmr_runtime_add_vec(fmr_runtime *r, fmr_vec *v) {
  v->rt = r;
  v->prev = NULL;
  v->next = r->vecs;
  if (r->vecs) r->vecs->prev = v;
  r->vecs = v;
  r->n_vecs++;
}

void fmr_runtime_drop_vec(fmr_runtime *r, fmr_vec *v) {
  if (v->prev) v->prev->next = v->next;
  else if (r->vecs == v) r->vecs = v->next;
  if (v->next) v->next->prev = v->prev;
  v->next = v->prev = NULL;
  r->n_vecs--;
  if (r->is_finalized && r->n_vecs == 0) runtime_free(r);
}

fmr_runtime *fmr_runtime_holding(const void *p, uint64_t *off) {
  for (fmr_runtime *r = g_runtimes; r; r = r->next)
    if (r->map && !r->is_broken && r->mode == FM_MAP_PERSISTENT && r->pid == getpid() &&
        fm_map_offset_of(r->map, p, off))
      return r;
  return NULL;
}

/* "a character string", "NULL", "a list", ...: what a wrong argument is. */
static const char *describe(SEXP x, char *buf, size_t n) {
  int one = XLENGTH(x) == 1;
  SEXP cls = Rf_getAttrib(x, R_ClassSymbol);
  if (OBJECT(x) && TYPEOF(cls) == STRSXP && XLENGTH(cls) > 0) {
    snprintf(buf, n, "an object of class '%s'", CHAR(STRING_ELT(cls, 0)));
    return buf;
  }
  switch (TYPEOF(x)) {
  case NILSXP: return "NULL";
  case STRSXP: return one ? "a character string" : "a character vector";
  case REALSXP:
  case INTSXP: return one ? "a number" : "a numeric vector";
  case LGLSXP: return one ? "a logical value" : "a logical vector";
  case VECSXP: return "a list";
  case CLOSXP:
  case BUILTINSXP:
  case SPECIALSXP: return "a function";
  case ENVSXP: return "an environment";
  case EXTPTRSXP: return "an external pointer of another kind";
  default: snprintf(buf, n, "an object of type %s", Rf_type2char(TYPEOF(x))); return buf;
  }
}

static void require_handle(SEXP rt) {
  if (TYPEOF(rt) != EXTPTRSXP || !Rf_inherits(rt, "fmalloc_runtime")) {
    char buf[300];
    fmr_stop(FM_EARG, "runtime must be an fmalloc runtime (from open_fmalloc()), not %s",
             describe(rt, buf, sizeof buf));
  }
}

void fmr_stop_closed(const char *path) {
  fmr_stop(FM_ECLOSED, "mapping of '%s' is closed", path && path[0] ? path : "(unknown file)");
}

fmr_runtime *fmr_runtime_get(SEXP rt) {
  require_handle(rt);
  fmr_runtime *r = (fmr_runtime *)R_ExternalPtrAddr(rt);
  if (!r) {
    SEXP tag = R_ExternalPtrTag(rt);
    fmr_stop_closed(TYPEOF(tag) == STRSXP && XLENGTH(tag) == 1 ? CHAR(STRING_ELT(tag, 0)) : NULL);
  }
  return r;
}

fm_map *fmr_runtime_map(SEXP rt) {
  fmr_runtime *r = fmr_runtime_get(rt);
  if (!r->map) fmr_stop_closed(r->path);
  return r->map;
}

int fmr_runtime_can_modify(const fmr_runtime *r) {
  return r->map && !r->read_only && r->pid == getpid();
}

void fmr_runtime_mark_broken(fmr_runtime *r, const fm_err *err) {
  if (r->is_broken) return;
  r->is_broken = 1;
  snprintf(r->broken_msg, sizeof r->broken_msg, "%s",
           err && err->msg[0] ? err->msg : "the backing file was changed from outside");
}

void fmr_runtime_require_intact(const fmr_runtime *r) {
  if (!r->map) fmr_stop_closed(r->path);
  if (r->is_broken) fmr_stop(FM_EFORMAT, "%s", r->broken_msg);
}

static int64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void fmr_runtime_check_pages_throttled(fmr_runtime *r) {
  fmr_runtime_require_intact(r);
  if (monotonic_ns() - r->last_check_ns >= 1000000) fmr_runtime_check_pages(r);
}

void fmr_runtime_check_pages(fmr_runtime *r) {
  fmr_runtime_require_intact(r);
  r->last_check_ns = monotonic_ns();
  fm_err err;
  fm_status st = fm_map_check(r->map, &err);
  if (st == FM_OK) return;
  if (st == FM_EFORMAT) fmr_runtime_mark_broken(r, &err);
  fmr_raise(&err);
}

void fmr_runtime_note_failure(fmr_runtime *r, const fm_err *err) {
  if (!r->map || !err || err->code != FM_EFORMAT || r->is_broken) return;
  fm_err e2;
  if (fm_map_check(r->map, &e2) == FM_EFORMAT) fmr_runtime_mark_broken(r, &e2);
}

fm_status fmr_runtime_alloc(fmr_runtime *r, uint64_t n_bytes, int allow_gc, uint64_t *off_out,
                            fm_err *err) {
  fm_status st = fm_map_alloc(r->map, n_bytes, off_out, err);
  if (st == FM_ENOSPC && allow_gc) {
    /* The cap may be full of temporaries that R has not collected yet (R
     * sees only the small ALTREP shells): their finalizers free the blocks. */
    R_gc();
    if (!fmr_runtime_can_modify(r))
      return fm_err_set(err, FM_ECLOSED, "mapping of '%s' was closed while collecting garbage",
                        r->path);
    st = fm_map_alloc(r->map, n_bytes, off_out, err);
  }
  if (st != FM_OK) fmr_runtime_note_failure(r, err);
  return st;
}

void fmr_runtime_require_modify(const fmr_runtime *r, const char *what) {
  if (!r->map) fmr_stop_closed(r->path);
  if (r->is_broken) fmr_stop(FM_EFORMAT, "cannot %s: %s", what, r->broken_msg);
  if (r->read_only)
    fmr_stop(FM_EARG, "cannot %s: runtime '%s' is open read-only", what, r->path);
  if (r->pid != getpid())
    fmr_stop(FM_EARG,
             "cannot %s in a forked child: runtime '%s' belongs to process %ld; children may "
             "only read and write existing vectors (e.g. fmalloc_write_cols)",
             what, r->path, (long)r->pid);
}

SEXP fmr_runtime_open_c(const char *path, uint64_t cap_bytes, fm_map_mode mode, int read_only,
                        fm_err *err) {
  int nprot = 0;
  fm_err_clear(err);
  /* Every R object first: nothing below may longjmp while a map is open
   * without an owner. */
  SEXP tag = PROTECT(Rf_mkString(path));
  nprot++;
  SEXP handle = PROTECT(R_MakeExternalPtr(NULL, tag, R_NilValue));
  nprot++;
  SEXP cls = PROTECT(Rf_mkString("fmalloc_runtime"));
  nprot++;
  Rf_setAttrib(handle, R_ClassSymbol, cls);
  SEXP wref = R_MakeWeakRefC(handle, R_NilValue, runtime_finalize, TRUE);
  R_PreserveObject(wref);
  fmr_runtime *r = (fmr_runtime *)calloc(1, sizeof *r);
  char *canon = NULL;
  if (!r) {
    R_ReleaseObject(wref);
    UNPROTECT(nprot);
    fmr_stop(FM_ENOMEM, "cannot allocate a runtime record for '%s'", path);
  }
  r->wref = wref;
  R_SetExternalPtrAddr(handle, r);
  list_link(r); /* finalizer unlinks it, opened or not */

  fm_map *m = NULL;
  fm_status st = fm_map_open(path, cap_bytes, mode, read_only, &m, err);
  if (st != FM_OK) {
    UNPROTECT(nprot);
    return R_NilValue; /* r stays closed; its finalizer frees it */
  }
  /* Canonical path for reuse on unserialize; a scratch file is already gone. */
  canon = realpath(path, NULL);
  r->path = canon ? canon : strdup(path);
  if (!r->path) {
    fm_map_close(m);
    UNPROTECT(nprot);
    fmr_stop(FM_ENOMEM, "cannot allocate a runtime record for '%s'", path);
  }
  r->map = m;
  r->mode = mode;
  r->read_only = read_only;
  r->pid = getpid();
  fm_map_info info;
  fm_map_get_info(m, &info);
  for (int i = 0; i < FM_MAP_FILE_ID_BYTES; i++)
    snprintf(r->file_id + 2 * i, 3, "%02x", info.file_id[i]);
  UNPROTECT(nprot);
  return handle;
}

SEXP fmr_runtime_find(const char *path, fm_err *err) {
  fm_err_clear(err);
  char *canon = realpath(path, NULL);
  const char *key = canon ? canon : path;
  SEXP found = R_NilValue;
  pid_t self = getpid();
  for (fmr_runtime *r = g_runtimes; r; r = r->next) {
    /* Only persistent maps: a scratch file is unlinked, and a later file at
     * the same path is a different file. */
    if (!r->map || r->mode != FM_MAP_PERSISTENT || r->pid != self || !r->path ||
        strcmp(r->path, key) != 0 || r->is_broken)
      continue;
    SEXP h = R_WeakRefKey(r->wref);
    if (h == R_NilValue) continue;
    /* The path may name another file by now (deleted and created again,
     * renamed over), or this file rewritten in place: never reuse then. */
    int same = 0;
    fm_err e;
    fm_status st = fm_map_same_file(r->map, path, &same, &e);
    if (st != FM_OK) {
      if (st == FM_EFORMAT) fmr_runtime_mark_broken(r, &e);
      *err = e;
      continue;
    }
    if (!same) continue;
    found = h;
    if (!r->read_only) break; /* prefer the writer */
  }
  free(canon);
  if (found != R_NilValue) fm_err_clear(err);
  return found;
}

void fmr_runtime_close_all_c(void) {
  for (fmr_runtime *r = g_runtimes; r; r = r->next) runtime_close(r);
}

/* ---- .Call entry points ------------------------------------------------- */

static const char *scalar_string(SEXP x, const char *what) {
  if (TYPEOF(x) != STRSXP || XLENGTH(x) != 1 || STRING_ELT(x, 0) == NA_STRING)
    fmr_stop(FM_EARG, "%s must be a single non-missing string", what);
  return Rf_translateChar(STRING_ELT(x, 0));
}

/* path: absolute path; cap_bytes: double (0 = keep the stored cap);
 * mode: "persistent" | "scratch"; read_only: logical(1). */
SEXP fmr_runtime_open(SEXP path, SEXP cap_bytes, SEXP mode, SEXP read_only) {
  const char *p = scalar_string(path, "path");
  const char *md = scalar_string(mode, "mode");
  double cap = Rf_asReal(cap_bytes);
  int ro = Rf_asLogical(read_only);
  fm_map_mode m;
  if (strcmp(md, "persistent") == 0) m = FM_MAP_PERSISTENT;
  else if (strcmp(md, "scratch") == 0) m = FM_MAP_SCRATCH;
  else fmr_stop(FM_EARG, "mode must be \"persistent\" or \"scratch\", not \"%s\"", md);
  if (!(cap >= 0) || cap > 9.0e18) fmr_stop(FM_EARG, "size cap %g bytes is out of range", cap);
  if (ro == NA_LOGICAL) fmr_stop(FM_EARG, "read_only must be TRUE or FALSE");
  fm_err err;
  SEXP h = fmr_runtime_open_c(p, (uint64_t)cap, m, ro, &err);
  if (h == R_NilValue) fmr_raise(&err);
  return h;
}

/* Close; with sync TRUE commit a writable persistent map first. The map is
 * closed even when the commit fails, then the failure is raised. */
SEXP fmr_runtime_close(SEXP rt, SEXP sync) {
  fmr_runtime *r = fmr_runtime_get(rt);
  int do_sync = Rf_asLogical(sync) == TRUE;
  if (!r->map) return Rf_ScalarLogical(FALSE);
  fm_err err;
  fm_err_clear(&err);
  fm_status st = FM_OK;
  if (do_sync && r->mode == FM_MAP_PERSISTENT && fmr_runtime_can_modify(r)) {
    if (r->is_broken) st = fm_err_set(&err, FM_EFORMAT, "%s", r->broken_msg);
    else st = fm_map_sync(r->map, &err);
  }
  runtime_close(r);
  if (st != FM_OK) fmr_raise(&err);
  return Rf_ScalarLogical(TRUE);
}

SEXP fmr_runtime_sync(SEXP rt) {
  fmr_runtime *r = fmr_runtime_get(rt);
  fmr_runtime_require_modify(r, "sync");
  fm_err err;
  if (fm_map_sync(r->map, &err) != FM_OK) {
    fmr_runtime_note_failure(r, &err);
    fmr_raise(&err);
  }
  return R_NilValue;
}

SEXP fmr_runtime_check(SEXP rt) {
  fmr_runtime_check_pages(fmr_runtime_get(rt));
  return Rf_ScalarLogical(TRUE);
}

void fmr_runtime_check_handle(SEXP rt) { fmr_runtime_check_pages(fmr_runtime_get(rt)); }

static const char *mode_name(fm_map_mode m) {
  return m == FM_MAP_SCRATCH ? "scratch" : "persistent";
}

/* list(path, mode, read_only, is_open): never raises for a closed handle. */
SEXP fmr_runtime_state(SEXP rt) {
  require_handle(rt);
  fmr_runtime *r = (fmr_runtime *)R_ExternalPtrAddr(rt);
  int nprot = 0;
  const char *names[] = {"path", "mode", "read_only", "is_open", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, names));
  nprot++;
  SEXP tag = R_ExternalPtrTag(rt);
  if (r && r->path) SET_VECTOR_ELT(out, 0, Rf_mkString(r->path));
  else SET_VECTOR_ELT(out, 0, TYPEOF(tag) == STRSXP ? tag : Rf_ScalarString(NA_STRING));
  SET_VECTOR_ELT(out, 1, r && r->path ? Rf_mkString(mode_name(r->mode)) : Rf_ScalarString(NA_STRING));
  SET_VECTOR_ELT(out, 2, Rf_ScalarLogical(r && r->path ? r->read_only : NA_LOGICAL));
  SET_VECTOR_ELT(out, 3, Rf_ScalarLogical(r && r->map ? TRUE : FALSE));
  UNPROTECT(nprot);
  return out;
}

SEXP fmr_runtime_info(SEXP rt) {
  fmr_runtime *r = fmr_runtime_get(rt);
  if (!r->map) fmr_stop_closed(r->path);
  fm_map_info info;
  fm_map_get_info(r->map, &info);
  int nprot = 0;
  const char *names[] = {"path",       "mode",     "read_only", "cap_bytes", "file_bytes",
                         "used_bytes", "n_blocks", "n_named",   "sync_seq",  "format_version",
                         "file_id",    "is_broken", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, names));
  nprot++;
  SET_VECTOR_ELT(out, 0, Rf_mkString(r->path));
  SET_VECTOR_ELT(out, 1, Rf_mkString(mode_name(info.mode)));
  SET_VECTOR_ELT(out, 2, Rf_ScalarLogical(info.read_only != 0));
  SET_VECTOR_ELT(out, 3, Rf_ScalarReal((double)info.cap_bytes));
  SET_VECTOR_ELT(out, 4, Rf_ScalarReal((double)info.file_bytes));
  SET_VECTOR_ELT(out, 5, Rf_ScalarReal((double)info.used_bytes));
  SET_VECTOR_ELT(out, 6, Rf_ScalarReal((double)info.n_blocks));
  SET_VECTOR_ELT(out, 7, Rf_ScalarReal((double)info.n_named));
  SET_VECTOR_ELT(out, 8, Rf_ScalarReal((double)info.sync_seq));
  SET_VECTOR_ELT(out, 9, Rf_ScalarInteger((int)info.version));
  SET_VECTOR_ELT(out, 10, Rf_mkString(r->file_id));
  SET_VECTOR_ELT(out, 11, Rf_ScalarLogical(r->is_broken != 0));
  UNPROTECT(nprot);
  return out;
}

/* The directory as list(name, dtype, dims, bytes, uid, off): dims is a list
 * of numeric vectors; uid is a decimal string (exact beyond 2^53). */
SEXP fmr_runtime_dir(SEXP rt) {
  fm_map *m = fmr_runtime_map(rt);
  int64_t n = fm_map_dir_count(m);
  if (n > INT_MAX) fmr_stop(FM_EINTERNAL, "directory has %lld entries", (long long)n);
  int nprot = 0;
  const char *names[] = {"name", "dtype", "dims", "bytes", "uid", "off", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, names));
  nprot++;
  SEXP s_name = PROTECT(Rf_allocVector(STRSXP, n));
  nprot++;
  SEXP s_dtype = PROTECT(Rf_allocVector(STRSXP, n));
  nprot++;
  SEXP s_dims = PROTECT(Rf_allocVector(VECSXP, n));
  nprot++;
  SEXP s_bytes = PROTECT(Rf_allocVector(REALSXP, n));
  nprot++;
  SEXP s_uid = PROTECT(Rf_allocVector(STRSXP, n));
  nprot++;
  SEXP s_off = PROTECT(Rf_allocVector(REALSXP, n));
  nprot++;
  for (int64_t i = 0; i < n; i++) {
    fm_dir_entry e;
    fm_err err;
    if (fm_map_dir_at(m, i, &e, &err) != FM_OK) {
      UNPROTECT(nprot);
      fmr_raise(&err);
    }
    SET_STRING_ELT(s_name, i, Rf_mkCharCE(e.name, CE_UTF8));
    SET_STRING_ELT(s_dtype, i, Rf_mkChar(fm_dtype_name(e.dtype)));
    int nd = e.n_dims < 0 ? 0 : (e.n_dims > FM_DIR_MAX_DIMS ? FM_DIR_MAX_DIMS : e.n_dims);
    SEXP d = Rf_allocVector(REALSXP, nd);
    SET_VECTOR_ELT(s_dims, i, d);
    for (int k = 0; k < nd; k++) REAL(d)[k] = (double)e.dims[k];
    REAL(s_bytes)[i] = (double)e.n_bytes;
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)e.uid);
    SET_STRING_ELT(s_uid, i, Rf_mkChar(buf));
    REAL(s_off)[i] = (double)e.off;
  }
  SET_VECTOR_ELT(out, 0, s_name);
  SET_VECTOR_ELT(out, 1, s_dtype);
  SET_VECTOR_ELT(out, 2, s_dims);
  SET_VECTOR_ELT(out, 3, s_bytes);
  SET_VECTOR_ELT(out, 4, s_uid);
  SET_VECTOR_ELT(out, 5, s_off);
  UNPROTECT(nprot);
  return out;
}

/* Remove name from the directory and free its block; live vectors that view
 * the block are first moved onto unnamed copies (r_altrep.c). Returns FALSE
 * when the name is absent (nothing to do). */
SEXP fmr_runtime_delete(SEXP rt, SEXP name) {
  fmr_runtime *r = fmr_runtime_get(rt);
  fmr_runtime_require_modify(r, "delete an object");
  if (TYPEOF(name) != STRSXP || XLENGTH(name) != 1 || STRING_ELT(name, 0) == NA_STRING)
    fmr_stop(FM_EARG, "name must be a single non-missing string");
  const char *nm = Rf_translateCharUTF8(STRING_ELT(name, 0));
  fm_dir_entry e;
  fm_err err;
  if (fm_map_lookup(r->map, nm, &e, &err) != FM_OK) return Rf_ScalarLogical(FALSE);
  if (fmr_vec_detach_block(r, e.off, &err) != FM_OK) fmr_raise(&err);
  if (fm_map_unname(r->map, nm, &err) != FM_OK) fmr_raise(&err);
  return Rf_ScalarLogical(TRUE);
}

/* This module's .Call entry points (r_calls.h; r_init.c registers them). */
const R_CallMethodDef fmr_runtime_calls[] = {
    FMR_CALLDEF(fmr_runtime_open, 4),
    FMR_CALLDEF(fmr_runtime_close, 2),
    FMR_CALLDEF(fmr_runtime_sync, 1),
    FMR_CALLDEF(fmr_runtime_check, 1),
    FMR_CALLDEF(fmr_runtime_state, 1),
    FMR_CALLDEF(fmr_runtime_info, 1),
    FMR_CALLDEF(fmr_runtime_dir, 1),
    FMR_CALLDEF(fmr_runtime_delete, 2),
    {NULL, NULL, 0}};
