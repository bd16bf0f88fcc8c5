/* fused_impl.h (private): the kernel table of the fused backend (fm_fused.h).
 *
 * fused.c drives a product in blocks of variants; the inner loops live in a
 * kernel table built twice from the same source (fused_kern.h): portable C
 * (fused_portable.c) and AVX2 + FMA (fused_avx2.c, x86-64 with GCC or clang
 * only). fused.c picks one table per product from CPUID.
 *
 * Sparse form of a column (design note, 2025-01): each variant j has a
 * "base" code (its most frequent stored code whose value is not NaN) and
 * lut_j[code] = lut_j[base] + d_j[code]. A run of rows of a column is listed
 * as the rows whose code differs from the base, with d_j of their code
 * (d_j[base] = 0 is never listed), so that
 *   (X' b)[j, :] = lut_j[base] * colsum(b) + sum over listed rows i of d * b[i, :]
 *   (X b)[i, :]  = sum_j lut_j[base] b[j, :] + sum over the lists that hold i of d * b[j, :].
 * Genotype columns are mostly one code, so lists are short; choosing the most
 * frequent code keeps the base term from cancelling against long lists.
 * Lists are made from the stored bytes where they are used (a segment of a
 * column, a tile of rows) and never stored: 12 bytes an entry against a
 * quarter of a byte a genotype.
 *
 * Vectors of k doubles are stored row-major, padded to kp columns (a multiple
 * of FUSED_KPAD, zeros in the padding), in buffers aligned to FUSED_ALIGN.
 * Every kernel is reentrant. */
#ifndef FM_FUSED_IMPL_H
#define FM_FUSED_IMPL_H

#include <stdint.h>

#define FUSED_ALIGN 64
#define FUSED_KPAD 4
#define FUSED_K_MAX 64

typedef struct fused_kernels {
  const char *name; /* "portable" or "avx2" */

  /* List the rows r0 <= i < r1 of one BED2 column whose code differs from
   * base. r0 is a multiple of 4 (lists start on a byte).
   * Shape:  col is the column's first byte (padding bits ignored); idx and d
   *         have room for r1 - r0 entries.
   * Out:    idx[t] the row (ascending), d[t] = dtab[its code]; returns the
   *         number listed. */
  int64_t (*bed2_list)(const uint8_t *col, int64_t r0, int64_t r1, unsigned base,
                       const double dtab[4], int32_t *idx, double *d);

  /* The same for a DOS8 column (any r0). */
  int64_t (*dos8_list)(const uint8_t *col, int64_t r0, int64_t r1, unsigned base,
                       const double dtab[256], int32_t *idx, double *d);

  /* counts_out[q] = number of bytes equal to q among col[0 .. n). */
  void (*dos8_hist)(const uint8_t *col, int64_t n, int64_t counts_out[256]);

  /* acc_e[c] += sum over even t of d[t] * rows[idx[t] * kp + c], acc_o[c]
   * likewise over odd t, in order of t, c < kp (two accumulators hide the
   * latency of the multiply-adds; the caller adds them at the end). */
  void (*gather)(const int32_t *idx, const double *d, int64_t m, const double *rows, int64_t kp,
                 double *acc_e, double *acc_o);

  /* ys[idx[t] * kp + c] += d[t] * src[c], for t = 0 .. m-1 in order, c < kp
   * (a fused multiply-add where the kernel has one). */
  void (*scatter)(const int32_t *idx, const double *d, int64_t m, const double *src, double *ys,
                  int64_t kp);
} fused_kernels;

extern const fused_kernels fused_kernels_portable;

/* x86-64 with a compiler that builds AVX2 functions without global flags. */
#if defined(__x86_64__) && defined(__GNUC__)
#define FUSED_HAVE_AVX2 1
extern const fused_kernels fused_kernels_avx2;
#else
#define FUSED_HAVE_AVX2 0
#endif

#endif
