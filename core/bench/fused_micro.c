/* fused_micro.c: timings of the fused backend (fm_fused.h) on a generated
 * 2-bit genotype matrix, against the reference path on a slice of it.
 * Not part of the build or the tests. Build and run from the repository root
 * after `make core`:
 *   cc -O2 -std=c11 -Icore/include core/bench/fused_micro.c build/core/libfmalloc.a \
 *      -lblas -lm -pthread -o build/fused_micro
 *   build/fused_micro [n_samples] [n_variants] [threads] [reps]  (default 5000 200000 1 1)
 * Data: generated, Hardy-Weinberg genotypes with allele frequency U(0.05, 0.5)
 * per variant and 1% missing calls; the affine transform is the PCA's
 * (centre at the mean, scale 1/sd, missing -> 0). Prints the fastest of reps runs per product
 * (its CPU time: the least CPU time of the runs),
 * (wall clock, and CPU time of all threads), ns per genotype and .bed bytes
 * per second (wall clock), for the automatic kernels and
 * the portable ones; timings are only meaningful on an idle machine. */
#define _POSIX_C_SOURCE 200809L
#include "fm/fm_backend.h"
#include "fm/fm_codec_bed2.h"
#include "fm/fm_cpu.h"
#include "fm/fm_fused.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t state = 42;
static uint64_t next(void) {
  uint64_t z = (state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}
static double unif(void) { return (double)(next() >> 11) / 9007199254740992.0; }

static double clock_s(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static double cpu_used; /* CPU seconds of the last run, all threads */

/* Fastest of `reps` runs (wall clock); cpu_used is that run's CPU time. */
static double run_once(fm_product *p, int reference);
static int reps = 1;
static double run(fm_product *p, int reference) {
  double best = 1e300, best_cpu = 0.0;
  for (int r = 0; r < reps; r++) {
    const double t = run_once(p, reference);
    if (cpu_used < best_cpu || r == 0) best_cpu = cpu_used;
    if (t < best) best = t;
  }
  cpu_used = best_cpu;
  return best;
}

static double run_once(fm_product *p, int reference) {
  fm_err err;
  const double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  const fm_status st = reference ? fm_backend_reference(p, NULL, &err)
                                 : fm_fused_backend(NULL, p, NULL, &err);
  const double t = clock_s(CLOCK_MONOTONIC) - t0;
  cpu_used = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  if (st != FM_OK) {
    fprintf(stderr, "status %s: %s\n", fm_status_name(st), err.msg);
    exit(1);
  }
  return t;
}

int main(int argc, char **argv) {
  const int64_t n = argc > 1 ? atoll(argv[1]) : 5000, q = argc > 2 ? atoll(argv[2]) : 200000;
  const int threads = argc > 3 ? atoi(argv[3]) : 1;
  reps = argc > 4 ? atoi(argv[4]) : 1;
  fm_set_threads(threads);
  const int64_t cb = fm_codec_bed2_col_bytes(n);
  uint8_t *bed = malloc((size_t)(cb * q));
  double *center = malloc(sizeof(double) * (size_t)q), *scale = malloc(sizeof(double) * (size_t)q);
  double *fill = calloc((size_t)q, sizeof(double));
  int64_t non_major = 0;
  for (int64_t j = 0; j < q; j++) {
    const double f = 0.05 + 0.45 * unif();
    uint8_t *col = bed + j * cb;
    memset(col, 0, (size_t)cb);
    int64_t cnt[3] = {0, 0, 0};
    for (int64_t i = 0; i < n; i++) {
      unsigned code;
      if (unif() < 0.01) {
        code = 1u;
      } else {
        const int g = (unif() < f) + (unif() < f);
        cnt[g]++;
        code = g == 0 ? 3u : g == 1 ? 2u : 0u;
        non_major += g != 0;
      }
      col[i / 4] |= (uint8_t)(code << (2 * (i % 4)));
    }
    const double obs = (double)(cnt[0] + cnt[1] + cnt[2]), mean = (cnt[1] + 2.0 * cnt[2]) / obs;
    const double sd = sqrt(mean * (1.0 - mean / 2.0));
    center[j] = mean;
    scale[j] = sd > 0 ? 1.0 / sd : 0.0;
  }
  printf("n %lld, q %lld (%.2f GB of .bed), threads %d, non-hom-A2 calls %.1f%%\n", (long long)n,
         (long long)q, (double)(cb * q) / 1e9, threads, 100.0 * (double)non_major / (double)(n * q));
  fm_mat x;
  fm_err err;
  if (fm_mat_init(&x, FM_CODEC_BED2, bed, n, q, cb, &err) != FM_OK) return 1;
  fm_affine aff = {.center = center, .scale = scale, .fill = fill};
  const int64_t kmax = 40;
  double *b = malloc(sizeof(double) * (size_t)((n > q ? n : q) * kmax));
  for (int64_t t = 0; t < (n > q ? n : q) * kmax; t++) b[t] = unif() - 0.5;
  double *y = malloc(sizeof(double) * (size_t)((n > q ? n : q) * kmax));
  struct {
    fm_op op;
    int64_t k;
    const char *name;
  } cases[] = {{FM_OP_XB, 10, "X b, k = 10"}, {FM_OP_XTB, 10, "X'b, k = 10"},
               {FM_OP_XXTB, 40, "X X'b, k = 40"}, {FM_OP_XTB, 40, "X'b, k = 40"},
               {FM_OP_XB, 40, "X b, k = 40"}, {FM_OP_COLSUMS, 2, "colsums"}};
  const double g = (double)n * (double)q;
  for (int isa = 0; isa < 2; isa++) {
    fm_cpu_cap(isa ? FM_ISA_PORTABLE : FM_ISA_AVX512);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      const int64_t ldb = cases[c].op == FM_OP_XB ? q : n;
      const int64_t ldy = cases[c].op == FM_OP_XB || cases[c].op == FM_OP_XXTB ? n : q;
      fm_product p = {cases[c].op, &x, &aff, b, ldb, cases[c].k, y, ldy};
      const double t = run(&p, 0);
      printf("%-9s %-14s %8.3f s (cpu %7.3f s)  %6.3f ns/genotype  %6.2f GB/s of .bed\n",
             fm_cpu_isa_name(fm_cpu_isa()), cases[c].name, t, cpu_used, 1e9 * t / g,
             (double)(cb * q) / t / 1e9);
    }
  }
  /* the reference path on a slice (it is much slower) */
  const int64_t qs = q < 2000 ? q : 2000;
  fm_mat xs = x;
  xs.n_cols = qs;
  for (size_t c = 0; c < 3; c++) {
    const int64_t ldb = cases[c].op == FM_OP_XB ? qs : n;
    const int64_t ldy = cases[c].op == FM_OP_XB || cases[c].op == FM_OP_XXTB ? n : qs;
    fm_product p = {cases[c].op, &xs, &aff, b, ldb, cases[c].k, y, ldy};
    const double tr = run(&p, 1);
    fm_cpu_cap(FM_ISA_AVX512);
    const double tf = run(&p, 0);
    printf("reference %-14s %8.3f s on %lld variants; fused %.3f s (ratio %.1f)\n", cases[c].name,
           tr, (long long)qs, tf, tr / tf);
  }
  free(bed);
  free(center);
  free(scale);
  free(fill);
  free(b);
  free(y);
  return 0;
}
