/* Rfmalloc.h: the C API that Rfmalloc exports to other packages.
 *
 * Use: LinkingTo: Rfmalloc and Imports: Rfmalloc in DESCRIPTION, then
 * #include <Rfmalloc.h>. The functions are registered with
 * R_RegisterCCallable; each wrapper looks its target up once. Other packages
 * never compile a second copy of the allocator: they reach the runtime of
 * Rfmalloc through these calls only.
 *
 * dtype codes are those of fm_base.h (written to disk, never renumbered):
 *   1 double, 2 int32, 3 R logical (int32), 4 raw bytes,
 *   5 PLINK two-bit hardcalls, 6 one-byte dosages, 7 one-bit haplotypes.
 * Packed dtypes (5..7) are seen by R as raw vectors of their bytes.
 * Errors are raised as R conditions of class fm_error_<status> (they
 * longjmp), so call these only where an R error is allowed; other packages
 * raise theirs the same way through Rfmalloc_raise and its wrappers.
 * Main thread only. */
#ifndef RFMALLOC_H
#define RFMALLOC_H

#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

#include <stdarg.h>
#include <stdio.h>

/* A new zero-filled mapped vector of `length` elements (bytes for packed
 * dtypes) in the runtime handle rt (class "fmalloc_runtime"). A temporary:
 * freed when R collects it, unless named with fmalloc_save(). On a full
 * runtime it runs one garbage collection (to free dead temporaries) and
 * retries before raising fm_error_enospc. */
static inline SEXP Rfmalloc_vec_alloc(SEXP rt, int dtype, double length) {
  static SEXP (*fun)(SEXP, int, double) = NULL;
  if (!fun) fun = (SEXP(*)(SEXP, int, double))R_GetCCallable("Rfmalloc", "Rfmalloc_vec_alloc");
  return fun(rt, dtype, length);
}

/* Data pointer of a mapped vector (borrowed: valid while x is reachable and
 * its runtime open), or NULL when x is not a mapped vector. *dtype_out gets
 * the stored dtype and *n_bytes_out the payload bytes (either may be NULL).
 * Raises fm_error_eclosed when the runtime was closed. */
static inline void *Rfmalloc_vec_ptr(SEXP x, int *dtype_out, double *n_bytes_out) {
  static void *(*fun)(SEXP, int *, double *) = NULL;
  if (!fun) fun = (void *(*)(SEXP, int *, double *))R_GetCCallable("Rfmalloc", "Rfmalloc_vec_ptr");
  return fun(x, dtype_out, n_bytes_out);
}

/* The runtime handle of a mapped vector, or R_NilValue. */
static inline SEXP Rfmalloc_vec_runtime(SEXP x) {
  static SEXP (*fun)(SEXP) = NULL;
  if (!fun) fun = (SEXP(*)(SEXP))R_GetCCallable("Rfmalloc", "Rfmalloc_vec_runtime");
  return fun(x);
}

/* Typed row access to phased haplotypes (fmalloc_haplotypes(); layout in
 * docs/formats/hap1.md): the 64-bit words of locus row `locus` (0-based) of
 * a haplotype store with n_haps haplotypes, given its storage's data pointer
 * (Rfmalloc_vec_ptr of the object's $storage). Haplotype h is bit h % 64 of
 * word h / 64. The row layout is the core's (fm_codec_hap1_row of
 * fm_codec_hap1.h: rows of ceil(n_haps / 512) * 64 bytes, 64-byte aligned). */
static inline const unsigned long long *Rfmalloc_hap1_row(const void *data, double n_haps,
                                                         double locus) {
  static const unsigned long long *(*fun)(const void *, double, double) = NULL;
  if (!fun)
    fun = (const unsigned long long *(*)(const void *, double, double))R_GetCCallable(
        "Rfmalloc", "Rfmalloc_hap1_row");
  return fun(data, n_haps, locus);
}

/* ---- files for mirai daemons --------------------------------------------- */

/* A file whose mapping holds the bytes of external-codec matrices (made
 * with Rfmalloc_ext_matrix), so that their products can run on mirai
 * daemons (?fmalloc_parallel_info): path (absolute), fd an open descriptor
 * of it (the file's identity is read through it: size n_bytes, mtime,
 * sampled bytes), base..base + n_bytes the mapping. opener, "pkg::fun",
 * names an R function of that package that a daemon calls as
 * fun(path, offset, n_rows, n_cols, cache) to make the matrix whose
 * data starts at byte offset of the file (the shape of its store; cache: an environment that lives as long as the daemon's
 * checked mapping of the file, for the package's own handle). Call
 * Rfmalloc_file_remove(base) before the mapping or descriptor goes.
 * Raises fm_error_earg (bad arguments), fm_error_enomem. */
static inline void Rfmalloc_file_add(const char *path, int fd, const void *base, double n_bytes,
                                     const char *opener) {
  static void (*fun)(const char *, int, const void *, double, const char *) = NULL;
  if (!fun)
    fun = (void (*)(const char *, int, const void *, double, const char *))R_GetCCallable(
        "Rfmalloc", "Rfmalloc_file_add");
  fun(path, fd, base, n_bytes, opener);
}

static inline void Rfmalloc_file_remove(const void *base) {
  static void (*fun)(const void *) = NULL;
  if (!fun) fun = (void (*)(const void *))R_GetCCallable("Rfmalloc", "Rfmalloc_file_remove");
  fun(base);
}

/* ---- errors ---------------------------------------------------------------
 * One converter from a core status to an R condition, for every package's
 * glue. Release C resources first, then raise: these never return. */

/* Raise the condition that Rfmalloc's fm_abort(code, msg) raises for the R
 * function that made the .Call: class c("fm_error_<status name>",
 * "fm_error", "error", "condition"), or for status FM_ECANCELLED an
 * interrupt c("fm_error_ecancelled", "fm_error", "interrupt", "condition").
 * status is an fm_status value (fm_base.h); FM_OK and unknown values raise
 * fm_error_einternal. msg (UTF-8 or native text) is copied before anything
 * longjmps; an empty one becomes "fmalloc error (<status name>)". */
static inline void Rfmalloc_raise(int status, const char *msg) __attribute__((noreturn));
static inline void Rfmalloc_raise(int status, const char *msg) {
  static void (*fun)(int, const char *) = NULL;
  if (!fun) fun = (void (*)(int, const char *))R_GetCCallable("Rfmalloc", "Rfmalloc_raise");
  fun(status, msg);
  Rf_error("%s", msg ? msg : ""); /* not reached: Rfmalloc_raise never returns */
}

/* Rfmalloc_raise(status, <the printf-style message>); messages are cut at
 * 1023 bytes. */
static inline void Rfmalloc_stopf(int status, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));
static inline void Rfmalloc_stopf(int status, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  Rfmalloc_raise(status, msg);
}

#ifdef FM_BASE_H
/* Raise a core error (available when "fm/fm_base.h" is included before this
 * header): Rfmalloc_raise(err->code, err->msg), the message prefixed by
 * "<what>: " when what is a non-empty string; an empty message becomes
 * "fmalloc error (<status name>)"; err NULL raises fm_error_einternal. err is
 * copied first, so it may live in memory the caller has released. */
static inline void Rfmalloc_raise_err(const fm_err *err, const char *what)
    __attribute__((noreturn));
static inline void Rfmalloc_raise_err(const fm_err *err, const char *what) {
  char text[sizeof err->msg + 32], msg[sizeof text + 258];
  fm_status code = err ? err->code : FM_EINTERNAL;
  if (err && err->msg[0])
    snprintf(text, sizeof text, "%.*s", (int)sizeof err->msg, err->msg);
  else
    snprintf(text, sizeof text, "fmalloc error (%s)", fm_status_name(code));
  if (what && what[0]) snprintf(msg, sizeof msg, "%.255s: %s", what, text);
  else snprintf(msg, sizeof msg, "%s", text);
  Rfmalloc_raise((int)code, msg);
}

/* ---- callbacks of core calls ----------------------------------------------
 * The one way a package's glue lets a long core call poll R and report
 * progress (Rfmalloc's own glue uses it too). Use, in one .Call on the main
 * thread:
 *     fm_ctl ctl = Rfmalloc_ctl(progress);
 *     fm_status st = <core call>(..., &ctl, &err);
 *     <release C resources>
 *     Rfmalloc_ctl_finish(st, &err, what);
 * ctl.cancel runs R_CheckUserInterrupt() (at most every 10 ms, and at once
 * after a progress report); ctl.progress calls progress(done, total) (an R
 * function, else no reports) when done grew by a whole unit and when done
 * first reaches total (given as they are; total may be NA).
 * That R code runs with the caller's condition handlers and restarts in
 * place, but R never longjmps over the core's frames: a condition or
 * restart that leaves the R code (the error of setTimeLimit(), an error of
 * the progress function, invokeRestart() in a handler) makes ctl.cancel
 * answer nonzero, so the core cleans up and returns FM_ECANCELLED, and
 * Rfmalloc_ctl_finish continues that jump: tryCatch(error = ) around the R
 * call sees the original condition, with nothing printed. A user interrupt
 * becomes fm_error_ecancelled (class c("fm_error_ecancelled", "fm_error",
 * "interrupt", "condition")), raised by Rfmalloc_ctl_finish.
 * progress must stay protected until Rfmalloc_ctl_finish (an argument of
 * the .Call is); ctl is valid until the .Call returns. Call
 * Rfmalloc_ctl_finish right after the core call, also when it returned
 * FM_OK (a jump caught at its last progress report still continues), and
 * never with a ctl of an earlier .Call. */
static inline fm_ctl Rfmalloc_ctl(SEXP progress) {
  static fm_ctl (*fun)(SEXP) = NULL;
  if (!fun) fun = (fm_ctl(*)(SEXP))R_GetCCallable("Rfmalloc", "Rfmalloc_ctl");
  return fun(progress);
}

/* The stack's thread count, panel budget and fork state in effect now
 * (threads, panel_bytes, forked; no backend, no callbacks), for code that
 * only reports them (for example the threads a model's next evaluation
 * will use); raises fm_error_earg for an unusable option, naming it. Use
 * Rfmalloc_ctl() for a core call. */
static inline fm_ctl Rfmalloc_settings(void) {
  static fm_ctl (*fun)(void) = NULL;
  if (!fun) fun = (fm_ctl(*)(void))R_GetCCallable("Rfmalloc", "Rfmalloc_settings");
  return fun();
}

/* After the core call made with the latest Rfmalloc_ctl(): continue a jump
 * that its callbacks caught, else raise a caught user interrupt as
 * fm_error_ecancelled, else raise err (as Rfmalloc_raise_err(err, what))
 * when status is not FM_OK; returns only when there is nothing to raise. */
static inline void Rfmalloc_ctl_finish(int status, const fm_err *err, const char *what) {
  static void (*fun)(int, const fm_err *, const char *) = NULL;
  if (!fun)
    fun = (void (*)(int, const fm_err *, const char *))R_GetCCallable("Rfmalloc",
                                                                      "Rfmalloc_ctl_finish");
  fun(status, err, what);
}
#endif

/* ---- external codecs and the backend registry ---------------------------
 * Available when "fm/fm_panel.h" (external codecs) or "fm/fm_backend.h"
 * (backends) is included before this header: the core headers this
 * package installs (include/fm/, LinkingTo: Rfmalloc), the ones it was
 * built with, so the struct layouts agree. */
#ifdef FM_PANEL_H
/* A new codec matrix (S4 class "fmalloc_codec_matrix", codec "ext") of
 * n_rows x n_cols over bytes that codec decodes (fm_ext_codec in
 * fm_panel.h): panel decode, `[`, as.matrix(), `%*%`, crossprod() and
 * tcrossprod() work on it through the backend registry, with the reference
 * path (decode bounded panels + BLAS) whenever every backend declines.
 *   codec:  borrowed; must outlive the object (static storage in the
 *           registrant's shared library);
 *   data:   borrowed, first byte of the payload; passed as fm_mat.data;
 *   stride: passed as fm_mat.col_stride (its meaning is the codec's);
 *   n_bytes: payload size, for printing only;
 *   owner:  any R object keeping data alive (kept reachable by the matrix);
 *   dimnames: R_NilValue or a list of two character vectors (or NULLs);
 *   source: a short description shown by print() (may be NULL).
 * The object does not survive saveRDS(): after readRDS() any use raises
 * fm_error_eclosed. Raises fm_error_earg for a codec without decoder or
 * dimensions that are not whole numbers >= 0. */
static inline SEXP Rfmalloc_ext_matrix(const fm_ext_codec *codec, const void *data,
                                       double n_rows, double n_cols, double stride,
                                       double n_bytes, SEXP owner, SEXP dimnames,
                                       const char *source) {
  static SEXP (*fun)(const fm_ext_codec *, const void *, double, double, double, double, SEXP,
                     SEXP, const char *) = NULL;
  if (!fun)
    fun = (SEXP(*)(const fm_ext_codec *, const void *, double, double, double, double, SEXP, SEXP,
                   const char *))R_GetCCallable("Rfmalloc", "Rfmalloc_ext_matrix");
  return fun(codec, data, n_rows, n_cols, stride, n_bytes, owner, dimnames, source);
}

/* Release codec: every live matrix made over it forgets the codec and its
 * data, and raises fm_error_eclosed from then on. Call it from the
 * registrant's R_unload_<pkg> for each codec, before the code and the bytes
 * behind them go away. Returns the number of matrices released. */
static inline int Rfmalloc_ext_release(const fm_ext_codec *codec) {
  static int (*fun)(const fm_ext_codec *) = NULL;
  if (!fun)
    fun = (int (*)(const fm_ext_codec *))R_GetCCallable("Rfmalloc", "Rfmalloc_ext_release");
  return fun(codec);
}

/* The matrix behind a handle of fmalloc_view() (R) for one core call: *x
 * and, when aff is not NULL, *aff with the view's transform (a standardized
 * view's centre, scale and fill). Checks at each use that the storage is
 * still open and its file not truncated. Raises fm_error_earg for anything
 * that is not a handle, fm_error_eclosed for a dead one or closed storage.
 * Borrowed: valid until the .Call returns, while h stays protected. */
static inline void Rfmalloc_view_get(SEXP h, fm_mat *x, fm_affine *aff) {
  static void (*fun)(SEXP, fm_mat *, fm_affine *) = NULL;
  if (!fun) fun = (void (*)(SEXP, fm_mat *, fm_affine *))R_GetCCallable("Rfmalloc", "Rfmalloc_view_get");
  fun(h, x, aff);
}
#endif

#ifdef FM_BACKEND_H
/* Append a backend to Rfmalloc's registry (fm_backend_register in
 * fm_backend.h: tried in registration order before the reference path; it
 * computes a product or declines with FM_EUNSUPPORTED before writing y).
 * fn and ud must stay valid until Rfmalloc_backend_unregister(name): call
 * that from the registrant's R_unload_<pkg>. Raises fm_error_earg (bad or
 * taken name) or fm_error_enospc (registry full). */
static inline void Rfmalloc_backend_register(const char *name, fm_backend_fn fn, void *ud) {
  static void (*fun)(const char *, fm_backend_fn, void *) = NULL;
  if (!fun)
    fun = (void (*)(const char *, fm_backend_fn, void *))R_GetCCallable(
        "Rfmalloc", "Rfmalloc_backend_register");
  fun(name, fn, ud);
}

/* Remove the backend named name; 1 if one was removed, else 0. */
static inline int Rfmalloc_backend_unregister(const char *name) {
  static int (*fun)(const char *) = NULL;
  if (!fun)
    fun = (int (*)(const char *))R_GetCCallable("Rfmalloc", "Rfmalloc_backend_unregister");
  return fun(name);
}
#endif

#endif
