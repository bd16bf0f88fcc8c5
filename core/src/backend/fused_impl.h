/* fused_impl.h (private): the kernel table of the fused backend (fm_fused.h).
 *
 * fused.c drives a product in blocks of variants; the inner loops live in a
 * kernel table built three times from the same source (fused_kern.h):
 * portable C (fused_portable.c), AVX2 + FMA (fused_avx2.c) and AVX-512
 * (fused_avx512.c), the last two on x86-64 with GCC or clang only. fused.c
 * picks one table per product from CPUID.
 *
 * Sparse form of a column (design note, 2026-11): each variant j has a
 * "base" code (its most frequent stored code whose value is not NaN) and
 * lut_j[code] = lut_j[base] + d_j[code]. A run of rows of a column is listed
 * as the rows whose code differs from the base, with d_j of their code
 * (d_j[base] = 0 is never listed), so that
 *   (X' b)[j, :] = lut_j[base] * colsum(b) + sum over listed rows i of d * b[i, :]
 *   (X b)[i, :]  = sum_j lut_j[base] b[j, :] + sum over the lists that hold i of d * b[j, :].
 * Genotype columns are mostly one code, so lists are short; choosing the most
 * frequent code keeps the base term from cancelling against long lists.
 * Lists are made from the stored bytes where they are used (a segment of a
 * column, a tile of rows) and never stored: 4 bytes an entry against a
 * quarter of a byte a genotype (a per-block list arena went through memory
 * between the phases and was slower than listing twice).
 *
 * Vectors of k doubles are stored row-major, padded to kp columns (a multiple
 * of the table's kpad, zeros in the padding), in buffers aligned to
 * FUSED_ALIGN.
 * Every kernel is reentrant. */
#ifndef FM_FUSED_IMPL_H
#define FM_FUSED_IMPL_H

#include <stdint.h>

#define FUSED_ALIGN 64
#define FUSED_K_MAX 64

/* A list entry: (row - r0) << FUSED_ENT_SHIFT | code, for a list of rows
 * [r0, r1) with r1 - r0 < 2^24; the consumer finds d in the variant's table
 * of deltas (4 or 256 doubles) by code. */
#define FUSED_ENT_SHIFT 8

/* Constant tables, built once per product (tables_init in fused.c).
 * For a byte w of four BED2 fields XORed with the base (so a field is
 * nonzero where it differs from the base): bed2_count[w] fields differ, and
 * bed2_entry[w][0 .. count) are their entries ((field << 8) | (field's code
 * ^ base)) in field order; the unused slots are 0. */
typedef struct fused_tables {
  uint32_t bed2_entry[256][4];
  uint8_t bed2_count[256];
} fused_tables;

typedef struct fused_kernels {
  int kpad; /* rows of k doubles are padded to a multiple of this */

  /* List the rows r0 <= i < r1 of one BED2 column whose code differs from
   * base. r0 is a multiple of 4 (lists start on a byte).
   * Shape:  col is the column's first byte (padding bits ignored); ent has
   *         room for r1 - r0 + 4 entries (whole bytes are written).
   * Out:    the entries, rows ascending; returns their number. */
  int64_t (*bed2_list)(const uint8_t *col, int64_t r0, int64_t r1, unsigned base,
                       const fused_tables *tab, uint32_t *ent);

  /* The same for a DOS8 column (any r0; tab unused). */
  int64_t (*dos8_list)(const uint8_t *col, int64_t r0, int64_t r1, unsigned base,
                       const fused_tables *tab, uint32_t *ent);

  /* counts_out[code] = rows 0 .. n-1 of a BED2 column with that code. */
  void (*bed2_counts)(const uint8_t *col, int64_t n, int64_t counts_out[4]);

  /* counts_out[q] = number of bytes equal to q among col[0 .. n). */
  void (*dos8_hist)(const uint8_t *col, int64_t n, int64_t counts_out[256]);

  /* With d(e) = dtab[code of e] and row(e) = rows + (row of e) * kp:
   * acc_e[c] += sum over even t of d(ent[t]) * row(ent[t])[c], acc_o[c]
   * likewise over odd t, in order of t, c < kp (two accumulators hide the
   * latency of the multiply-adds; the caller adds them at the end). */
  void (*gather)(const uint32_t *ent, int64_t m, const double *dtab, const double *rows,
                 int64_t kp, double *acc_e, double *acc_o);

  /* ys[(row of ent[t]) * kp + c] += d(ent[t]) * src[c], for t = 0 .. m-1 in
   * order, c < kp (a fused multiply-add where the kernel has one). */
  void (*scatter)(const uint32_t *ent, int64_t m, const double *dtab, const double *src,
                  double *ys, int64_t kp);
} fused_kernels;

extern const fused_kernels fused_kernels_portable;

/* x86-64 with a compiler that builds AVX2 and AVX-512 functions without
 * global flags (target attributes). */
#if defined(__x86_64__) && defined(__GNUC__)
#define FUSED_HAVE_X86 1
extern const fused_kernels fused_kernels_avx2;
extern const fused_kernels fused_kernels_avx512;
#else
#define FUSED_HAVE_X86 0
#endif

#endif
