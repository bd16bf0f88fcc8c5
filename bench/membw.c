/* membw.c: single-thread memory rates for bench/llm.R's decode bound.
 * Prints "memcpy_gbps read_gbps": the best of 5 memcpy()s of a 1 GiB buffer
 * into another (bytes copied per second; both buffers touched first) and of
 * 5 read-only passes summing it as 64-bit words (bytes read per second),
 * each line requested 4 KB ahead of its use, as the decode kernels do
 * (core/src/llm/llm_gemm.h: without it one thread reads 15-20% slower,
 * the hardware prefetcher stopping at each 4 KB page).
 * Build: cc -O2 -o build/membw bench/membw.c */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void) {
  const size_t n = (size_t)1 << 30;
  char *a = malloc(n), *b = malloc(n);
  if (!a || !b) return 1;
  memset(a, 1, n);
  memset(b, 2, n);
  double best_cp = 1e9, best_rd = 1e9;
  volatile uint64_t sink = 0;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    memcpy(b, a, n);
    double t1 = now();
    const uint64_t *w = (const uint64_t *)b;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i < n / 8; i += 4) {
      if (i % 8 == 0) __builtin_prefetch(w + i + 512, 0, 3);
      s0 += w[i];
      s1 += w[i + 1];
      s2 += w[i + 2];
      s3 += w[i + 3];
    }
    double t2 = now();
    sink += s0 + s1 + s2 + s3;
    if (t1 - t0 < best_cp) best_cp = t1 - t0;
    if (t2 - t1 < best_rd) best_rd = t2 - t1;
  }
  printf("%.3f %.3f\n", (double)n / best_cp / 1e9, (double)n / best_rd / 1e9);
  free(a);
  free(b);
  return sink == 42 ? 2 : 0;
}
