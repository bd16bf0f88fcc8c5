/* stats_ld_impl.h (private): the pieces of fm_stats_ld.h's LD band.
 *
 * A block of columns [a, b) is correlated with its windows, columns
 * [a, e) (e = win_end[b - 1]); the rows are taken in chunks. For each chunk
 * every column of [a, e) is prepared once, either as three bit planes of
 * 64-sample words (2-bit hardcalls: H = count >= 1, T = count == 2,
 * O = observed; a missing call has H = T = 0) or as decoded doubles
 * (x0 = value - shift or 0 when missing, x2 = x0^2, om = 1 observed / 0),
 * with its chunk sums. Each pair (j, k > j) of the block accumulates six
 * sums over the chunks: n (samples observed in both), Sx, Sy, Sxx, Syy,
 * Sxy, in that order (ld_pair_acc). */
#ifndef STATS_LD_IMPL_H
#define STATS_LD_IMPL_H

#include "fm/fm_stats_ld.h"

#include <stdint.h>

enum { LD_N, LD_SX, LD_SY, LD_SXX, LD_SYY, LD_SXY, LD_SUMS };

/* One chunk of rows of the columns [a, e) of a block. */
typedef struct ld_chunk {
  int64_t nc;          /* columns */
  int64_t rows;        /* samples in the chunk (doubles: the selected ones, kept) */
  int planes;          /* 1: H, T, O; 0: x0, x2, om */
  int64_t nw;          /* planes: 64-sample words per column */
  uint64_t *h, *t, *o; /* planes: nc x nw each */
  double *x0, *x2, *om; /* doubles: nc x rows each */
  double *s1, *s2, *cnt; /* per column: chunk sums of x, x^2 and observed */
  unsigned char *full; /* per column: nothing missing in the chunk */
} ld_chunk;

/* Pair sums of columns jj and kk of the chunk, added to acc[LD_SUMS]. */
typedef void (*ld_pair_fn)(const ld_chunk *c, int64_t jj, int64_t kk, double *acc);

/* The planes kernel at the level fm_cpu_isa() names, and the doubles one. */
ld_pair_fn ld_pair_planes(void);
void ld_pair_doubles(const ld_chunk *c, int64_t jj, int64_t kk, double *acc);

/* Planes of samples [r0, r0 + 64 nw) (r0 a multiple of 64) of the stored
 * 2-bit column col (col_bytes bytes, n_rows samples in all) into h, t, o
 * (nw words each), with the chunk sums; bytes past the column's end are
 * never read and samples past n_rows are neither observed nor counted.
 * sel: NULL, or the nw words of the sample mask for these samples: an
 * unselected sample is 0 in every plane and not counted (full then means
 * every selected sample is observed). */
void ld_planes_col(const uint8_t *col, int64_t col_bytes, int64_t n_rows, int64_t r0, int64_t nw,
                   const uint64_t *sel, uint64_t *h, uint64_t *t, uint64_t *o, double *s1,
                   double *s2, double *cnt, unsigned char *full);

#endif
