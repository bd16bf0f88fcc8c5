/* r_runtime.h: glue-internal records behind runtime handles and mapped
 * vectors, shared by r_runtime.c, r_altrep.c and other glue modules that
 * allocate blocks in a runtime (codec objects). Not an API for other packages.
 *
 * Runtime handle (R class "fmalloc_runtime"): an external pointer whose
 * address is an fmr_runtime and whose tag is the path (a CHARSXP-bearing
 * STRSXP, so a closed handle still prints). The handle is finalized (map
 * closed, unsynced changes dropped) by a weak-reference finalizer that also
 * runs at exit; every open runtime sits on a process-wide list so that
 * .onUnload / R_unload_Rfmalloc can close them and unserialize can reuse an
 * already open map of a path.
 *
 * Mapped vector (ALTREP classes fm_dbl_map, fm_int_map, fm_lgl_map,
 * fm_raw_map): data1 is an external pointer to an fmr_vec whose protected
 * field is the runtime handle (so the runtime outlives its vectors); data2 is
 * the recipe list at creation (path, name, dtype, length, uid, mode, off).
 * The name and uid in fmr_vec are authoritative: fmalloc_save can name a
 * temporary later, and deleting or replacing a name detaches live views.
 *
 * Lifetime of the C records: an fmr_runtime is freed when its handle was
 * finalized AND no fmr_vec refers to it (at exit the finalizers run in any
 * order). An fmr_vec is freed by its own finalizer, which also frees its block
 * when the block is unnamed, no other live vector shares it, the map is open
 * and writable, and this is the process that opened the map.
 *
 * Forks: a forked child (parallel::mcparallel) shares the mapping. It may read
 * and write through pointers into existing blocks, but never allocates, frees,
 * names or syncs: the allocator state is private to the parent.
 *
 * Value semantics: a vector over a named block (fmalloc_get, unserialize, and
 * the caller's object once fmalloc_save named it) is marked not mutable, so R
 * duplicates it (Duplicate: a new unnamed block) before any modification.
 * Only unnamed blocks, each viewed by one R object, are written in place by R
 * code; fmalloc_write_cols is the explicit way to write into a stored object.
 *
 * Broken runtimes: once the file is found truncated (fm_map_check, a failed
 * sync or allocation, a streamed pass) or rewritten in place
 * (fm_map_same_file), the runtime is marked broken for good: every later data
 * access (Dataptr, Dataptr_or_null, Elt, Get_region, Duplicate, write_cols)
 * raises fm_error_eformat with the recorded message (naming the file) instead
 * of touching pages that would raise SIGBUS. Dataptr and Dataptr_or_null (once
 * per operation) also run fm_map_check (one fstat) themselves; Elt and
 * Get_region only test the flag. */
#ifndef R_RUNTIME_H
#define R_RUNTIME_H

#include "r_glue.h"

#include <sys/types.h>

typedef struct fmr_vec fmr_vec;

typedef struct fmr_runtime {
  fm_map *map;           /* owned; NULL once closed */
  char *path;            /* owned: canonical path (as given for scratch files) */
  fm_map_mode mode;
  int read_only;
  pid_t pid;             /* process that opened the map */
  int is_finalized;      /* the R handle is gone; freed when n_vecs drops to 0 */
  int64_t n_vecs;        /* live fmr_vec records that point here */
  fmr_vec *vecs;         /* (n_vecs) doubly linked */
  SEXP wref;             /* preserved weak reference whose key is the handle */
  char file_id[2 * FM_MAP_FILE_ID_BYTES + 1]; /* hex of fm_map_info.file_id */
  int is_broken;         /* file truncated or rewritten from outside: no page may be read */
  int64_t last_check_ns; /* CLOCK_MONOTONIC time of the last fm_map_check */
  char broken_msg[256];  /* why (names the file), raised as fm_error_eformat */
  struct fmr_runtime *next, *prev; /* process-wide list of unfinalized runtimes */
} fmr_runtime;

struct fmr_vec {
  fmr_runtime *rt;             /* borrowed; kept alive by rt->n_vecs */
  uint64_t off;                /* block offset in the file */
  int64_t length;              /* elements as R sees them (bytes for packed dtypes) */
  fm_dtype dtype;              /* stored dtype (directory dtype) */
  SEXPTYPE type;               /* REALSXP, INTSXP, LGLSXP or RAWSXP */
  int is_named;                /* the block carries the name below */
  char name[FM_NAME_MAX + 1];  /* valid when is_named */
  uint64_t uid;                /* directory uid when is_named */
  fmr_vec *next, *prev;        /* rt->vecs */
};

/* The fmr_runtime of a handle, open or not; raises fm_error_earg when rt is
 * not an "fmalloc_runtime" and fm_error_eclosed when its handle was cleared. */
fmr_runtime *fmr_runtime_get(SEXP rt);

/* Raise fm_error_eclosed "mapping of '<path>' is closed". */
void fmr_stop_closed(const char *path) __attribute__((noreturn));

/* Record that r's file was truncated or rewritten from outside (err: the core
 * error naming the file); r stays broken until closed. */
void fmr_runtime_mark_broken(fmr_runtime *r, const fm_err *err);

/* Raise fm_error_eclosed when r is closed and fm_error_eformat when it is
 * broken (no system call). */
void fmr_runtime_require_intact(const fmr_runtime *r);

/* fmr_runtime_require_intact, then fm_map_check (one fstat): a truncation
 * found here marks r broken and is raised as fm_error_eformat. Call once per
 * operation before touching pages. */
void fmr_runtime_check_pages(fmr_runtime *r);

/* The same check for per-element reads (Elt, Get_region), which come in tight
 * loops: the file is checked at most once a millisecond. A truncation that
 * happened before the loop began (any shell command takes longer) is caught;
 * one from another process during a tight loop may be seen up to 1 ms late,
 * which is the documented SIGBUS window. */
void fmr_runtime_check_pages_throttled(fmr_runtime *r);

/* fmr_runtime_check_pages of runtime handle rt: the check before a streamed
 * pass over a mapped vector (r_mat.c). */
void fmr_runtime_check_handle(SEXP rt);

/* After a core call on r failed with err: when it was FM_EFORMAT and the file
 * is indeed truncated (fm_map_check), mark r broken. */
void fmr_runtime_note_failure(fmr_runtime *r, const fm_err *err);

/* fm_map_alloc in r; on FM_ENOSPC with allow_gc, run R_gc() once (finalizers
 * free the blocks of dead temporaries) and retry once. Only where running R
 * finalizers is allowed (.Call entry points, never ALTREP methods). */
FM_NODISCARD fm_status fmr_runtime_alloc(fmr_runtime *r, uint64_t n_bytes, int allow_gc,
                                         uint64_t *off_out, fm_err *err);

/* Nonzero when the runtime may allocate, free, name and sync here: open,
 * writable and in the process that opened it. */
int fmr_runtime_can_modify(const fmr_runtime *r);

/* Raise unless fmr_runtime_can_modify(r); `what` names the operation. */
void fmr_runtime_require_modify(const fmr_runtime *r, const char *what);

/* Open path with fm_map_open and return a new registered handle (finalizer
 * set, R objects allocated before the map is opened so that no R allocation
 * failure can leak a mapping). On a core failure returns R_NilValue with err
 * filled; the caller raises (possibly adding context). */
SEXP fmr_runtime_open_c(const char *path, uint64_t cap_bytes, fm_map_mode mode, int read_only,
                        fm_err *err);

/* Link v into r's list of live vectors / unlink it. Unlinking the last vector
 * of a finalized runtime frees r. */
void fmr_runtime_add_vec(fmr_runtime *r, fmr_vec *v);
void fmr_runtime_drop_vec(fmr_runtime *r, fmr_vec *v);

/* The live handle of an open persistent map in this process of the file that
 * path names now (fm_map_same_file), or R_NilValue. A map of path whose file
 * was replaced (renamed over, deleted) is skipped; one whose file was
 * truncated or rewritten in place is marked broken and skipped, and err is
 * set (FM_EFORMAT naming the file); otherwise err->code is FM_OK. */
SEXP fmr_runtime_find(const char *path, fm_err *err);

/* R type of a stored dtype: plain dtypes map to their R type, packed codecs
 * to RAWSXP (a byte view). */
SEXPTYPE fmr_dtype_sexptype(fm_dtype t);

/* A new mapped vector over the block at off of runtime handle rt.
 * length: elements as R sees them; named: the directory entry when the block
 * is named (the vector is then marked not mutable), else NULL. Raises on R
 * allocation failure (the block is then left to the caller's cleanup). */
SEXP fmr_vec_wrap(SEXP rt, uint64_t off, int64_t length, fm_dtype dtype, const fm_dir_entry *named);

/* Allocate a zero-filled block for `length` elements of dtype (bytes for
 * packed dtypes) in runtime rt and return the mapped vector over it (writable
 * in place). On FM_ENOSPC it collects garbage once and retries
 * (fmr_runtime_alloc), so call it only from .Call entry points. */
SEXP fmr_vec_alloc(SEXP rt, fm_dtype dtype, int64_t length);

/* The record of a mapped vector, or NULL when x is not one. */
fmr_vec *fmr_vec_of(SEXP x);

/* Pointer to the data of a mapped vector, after fmr_runtime_check_pages:
 * raises fm_error_eclosed when its runtime was closed, fm_error_eformat when
 * its file was truncated. */
void *fmr_vec_ptr(const fmr_vec *v);

/* Before the block at off loses its name (delete, replace): move every live
 * vector that views it onto a fresh unnamed copy, so R values never change
 * under a variable (the vectors stay marked not mutable). FM_ENOSPC etc. when
 * the copy cannot be allocated (after one garbage collection), FM_EFORMAT
 * when the file was truncated. .Call entry points only. */
FM_NODISCARD fm_status fmr_vec_detach_block(fmr_runtime *r, uint64_t off, fm_err *err);

/* Record that the block at e->off now carries the directory entry e. */
void fmr_vec_note_named(fmr_runtime *r, const fm_dir_entry *e);

/* Register the ALTREP classes (R_init_Rfmalloc). */
void fmr_altrep_init(DllInfo *dll);

/* The open, persistent, unbroken runtime of this process whose mapping
 * holds p (*off: p's offset in its file), or NULL: the files a mirai daemon
 * can map by path (r_parallel.c; a scratch file has no path any more). */
fmr_runtime *fmr_runtime_holding(const void *p, uint64_t *off);

/* Close every open runtime of this process (unload). */
void fmr_runtime_close_all_c(void);

#endif
