/* ggml_gemv.c: how fast GGML's one-row products (the decode step's matrix
 * times one token: type_traits_cpu->vec_dot, one weight row at a time, one
 * thread) read weights when they come from L2 and when they come from
 * memory, for bench/llm_profile.R's question "is decode at one thread
 * limited by memory or by the kernel?". For each type: a matrix of k = 768
 * columns (llama85m's width) and random values, quantized by GGML; rate =
 * weight bytes read per second (and multiply-adds per second):
 *   l2    512 rows (0.2-0.8 MB), multiplied 400 times: the kernel's rate;
 *   heap  a 512 MiB matrix on the heap, one pass, 3 times;
 *   file  the same bytes written to a file and mapped (as GGUF weights
 *         are: the page cache's 4 KB pages), read after one warm pass;
 *   pf    the same file, each row's lines LLM_GEMV_AHEAD bytes ahead
 *         requested first (llm_gemv_prefetch, core/src/llm/llm_gemm.h:
 *         Rllm's one-column products do so; ggml_mul_mat does not).
 * If l2 is close to heap and file, the kernel (its instructions per
 * block) is the limit, not memory.
 * Build and run (bench/llm_profile.R does it):
 *   cc -O2 -I$RLIB/ggmlR/include -Icore/src/llm bench/ggml_gemv.c $RLIB/ggmlR/lib/libggml.a \
 *      $(R CMD config --ldflags) -lstdc++ -lm -lpthread -fopenmp -o build/ggml_gemv &&
 *   build/ggml_gemv [dir]
 * (R's flags: ggmlR's libggml.a prints through R.) */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ggml-cpu.h"
#include "ggml.h"
#include "llm_gemm.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Seconds for one pass of y = W x over rows [0, rows), prefetching ahead
 * or not. */
static double pass(const struct ggml_type_traits_cpu *tr, const char *w, size_t row_bytes, int64_t rows,
                   int k, const void *xq, float *y, int ahead) {
  double t0 = now();
  for (int64_t r = 0; r < rows; r++) {
    if (ahead) llm_gemv_prefetch((const uint8_t *)w, (size_t)r * row_bytes, row_bytes, row_bytes * (size_t)rows);
    tr->vec_dot(k, y + r, 0, w + (size_t)r * row_bytes, 0, xq, 0, 1);
  }
  return now() - t0;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "/tmp";
  const int k = 768;
  const enum ggml_type types[] = {GGML_TYPE_F16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_K};
  ggml_cpu_init();
  float *src = malloc((size_t)512 * k * sizeof *src), *x = malloc((size_t)k * sizeof *x);
  uint64_t s = 88172645463325252ull;
  for (size_t i = 0; i < (size_t)512 * k; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    src[i] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5);
  }
  for (int i = 0; i < k; i++) x[i] = src[i] * 0.5f;
  printf("%-6s %8s %8s %8s %8s   (GB/s of weights read, one thread; GMAC/s in brackets)\n", "type", "l2", "heap",
         "file", "pf");
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    const enum ggml_type type = types[t];
    const struct ggml_type_traits_cpu *tr = ggml_get_type_traits_cpu(type);
    const size_t row_bytes = ggml_row_size(type, k);
    const int64_t hot_rows = 512, big_rows = ((int64_t)512 << 20) / (int64_t)row_bytes;
    char *hot = malloc(row_bytes * (size_t)hot_rows);
    ggml_quantize_chunk(type, src, hot, 0, hot_rows, k, NULL);
    char *xq = malloc(ggml_row_size(tr->vec_dot_type, k));
    if (tr->vec_dot_type == GGML_TYPE_F32) memcpy(xq, x, (size_t)k * sizeof *x);
    else ggml_get_type_traits_cpu(tr->vec_dot_type)->from_float(x, xq, k);
    float *y = malloc((size_t)big_rows * sizeof *y);
    /* l2: the best of 5 runs of 400 passes */
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
      double sec = 0;
      for (int p = 0; p < 400; p++) sec += pass(tr, hot, row_bytes, hot_rows, k, xq, y, 0);
      if (sec < best) best = sec;
    }
    const double l2 = 400.0 * (double)row_bytes * (double)hot_rows / best;
    /* heap: the hot rows tiled to 512 MiB */
    char *big = malloc(row_bytes * (size_t)big_rows);
    for (int64_t r = 0; r < big_rows; r++)
      memcpy(big + (size_t)r * row_bytes, hot + (size_t)(r % hot_rows) * row_bytes, row_bytes);
    best = 1e9;
    for (int r = 0; r < 3; r++) {
      double sec = pass(tr, big, row_bytes, big_rows, k, xq, y, 0);
      if (sec < best) best = sec;
    }
    const double heap = (double)row_bytes * (double)big_rows / best;
    /* file: the same bytes through a mapping of the page cache */
    char path[4096];
    snprintf(path, sizeof path, "%s/ggml_gemv_%d.bin", dir, (int)getpid());
    double file = 0, pf = 0;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    const size_t nbytes = row_bytes * (size_t)big_rows;
    if (fd >= 0 && write(fd, big, nbytes) == (ssize_t)nbytes) {
      const char *map = mmap(NULL, nbytes, PROT_READ, MAP_SHARED, fd, 0);
      if (map != MAP_FAILED) {
        pass(tr, map, row_bytes, big_rows, k, xq, y, 0); /* faults the pages in */
        double best_pf = best = 1e9;
        for (int r = 0; r < 3; r++) {
          double sec = pass(tr, map, row_bytes, big_rows, k, xq, y, 0);
          if (sec < best) best = sec;
          sec = pass(tr, map, row_bytes, big_rows, k, xq, y, 1);
          if (sec < best_pf) best_pf = sec;
        }
        file = (double)nbytes / best;
        pf = (double)nbytes / best_pf;
        munmap((void *)map, nbytes);
      }
    }
    if (fd >= 0) close(fd);
    unlink(path);
    const double per_mac = (double)row_bytes / k; /* bytes per weight */
    printf("%-6s %8.1f %8.1f %8.1f %8.1f   (%.1f %.1f %.1f %.1f)\n", ggml_type_name(type), l2 / 1e9, heap / 1e9,
           file / 1e9, pf / 1e9, l2 / per_mac / 1e9, heap / per_mac / 1e9, file / per_mac / 1e9, pf / per_mac / 1e9);
    free(big), free(y), free(xq), free(hot);
  }
  free(src), free(x);
  return 0;
}
