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
 * longjmp), so call these only where an R error is allowed.
 * Main thread only. */
#ifndef RFMALLOC_H
#define RFMALLOC_H

#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

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
 * word h / 64. Rows are ceil(n_haps / 512) * 64 bytes, 64-byte aligned. */
static inline const unsigned long long *Rfmalloc_hap1_row(const void *data, double n_haps,
                                                         double locus) {
  double row_bytes = 64.0 * (double)(((long long)n_haps + 511) / 512);
  return (const unsigned long long *)((const char *)data + (size_t)(locus * row_bytes));
}

#endif
