/* Tests for fm_codec_bed2.h and the BED2 path of fm_panel_decode.
 * Oracle: ref_* below decode and encode by plain bit arithmetic, one sample
 * at a time, straight from the PLINK 1 .bed specification. Data generated.
 * The counting tests run every case through both counting kernels: the one
 * chosen for this CPU (AVX2 where present) and the portable one, selected by
 * capping the level with fm_cpu_cap (fm_cpu.h). */
#include "fm/fm_codec_bed2.h"
#include "fm/fm_cpu.h"
#include "fm/fm_panel.h"

#include "fm_test.h"

#include <stdint.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng_next(void) { return fm_test_rng_next(&rng_state); }
static int64_t rng_int(int64_t n) { return (int64_t)(rng_next() % (uint64_t)n); }
static double rng_unif(void) { return fm_test_rng_unif(&rng_state); }

/* ---- oracle ---- */
static int ref_code(const uint8_t *col, int64_t i) { return (col[i / 4] >> (2 * (i % 4))) & 3; }
/* allele count of A1, or INT32_MIN */
static int32_t ref_value(const uint8_t *col, int64_t i) {
  switch (ref_code(col, i)) {
  case 0: return 2;
  case 1: return INT32_MIN;
  case 2: return 1;
  default: return 0;
  }
}
static void ref_encode(const int32_t *g, int64_t n, uint8_t *col) {
  int64_t nb = (n + 3) / 4;
  for (int64_t b = 0; b < nb; b++) col[b] = 0;
  for (int64_t i = 0; i < n; i++) {
    int code = g[i] == 2 ? 0 : g[i] == 1 ? 2 : g[i] == 0 ? 3 : 1;
    col[i / 4] = (uint8_t)(col[i / 4] | (code << (2 * (i % 4))));
  }
}

static int32_t random_genotype(double miss) {
  if (rng_unif() < miss) return INT32_MIN;
  return (int32_t)rng_int(3);
}

/* Same double or both NaN. */
static int same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static void test_col_bytes(void) {
  CHECK(fm_codec_bed2_col_bytes(0) == 0);
  CHECK(fm_codec_bed2_col_bytes(1) == 1);
  CHECK(fm_codec_bed2_col_bytes(4) == 1);
  CHECK(fm_codec_bed2_col_bytes(5) == 2);
  CHECK(fm_codec_bed2_col_bytes(1126) == 282);
  CHECK(fm_mat_min_stride(FM_CODEC_BED2, 1001) == 251);
}

static const int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 13, 1000, 1001};
#define N_SIZES ((int)(sizeof sizes / sizeof sizes[0]))

static void test_round_trip(void) {
  fm_err err;
  for (int t = 0; t < N_SIZES; t++) {
    const int64_t n = sizes[t], m = 9, cb = fm_codec_bed2_col_bytes(n);
    int32_t *g = malloc(sizeof(int32_t) * (size_t)(n * m));
    uint8_t *enc = malloc((size_t)(cb * m));
    uint8_t *ref = malloc((size_t)(cb * m));
    double *out = malloc(sizeof(double) * (size_t)((n + 2) * m));
    for (int64_t i = 0; i < n * m; i++) g[i] = random_genotype(0.1);
    for (int64_t i = 0; i < n; i++) g[i + 3 * n] = INT32_MIN; /* an all-missing column */
    CHECK_OK(fm_codec_bed2_encode(g, n, m, n, enc, &err), &err);
    for (int64_t j = 0; j < m; j++) ref_encode(g + j * n, n, ref + j * cb);
    CHECK(memcmp(enc, ref, (size_t)(cb * m)) == 0); /* padding bits are 0 too */
    for (int64_t j = 0; j < m; j++)
      for (int64_t i = 0; i < n; i++) CHECK(ref_value(enc + j * cb, i) == g[i + j * n]);

    fm_mat x;
    CHECK_OK(fm_mat_init(&x, FM_CODEC_BED2, enc, n, m, cb, &err), &err);
    CHECK_OK(fm_panel_decode(&x, NULL, 0, n, 0, m, out, n, &err), &err);
    int bad = 0;
    for (int64_t i = 0; i < n * m; i++)
      bad += g[i] == INT32_MIN ? !isnan(out[i]) : out[i] != (double)g[i];
    CHECK(bad == 0);

    /* Every (r0, n_rows) of one column through decode_col, for small n. */
    if (n <= 13) {
      double lut[4];
      fm_codec_bed2_lut(0.0, 1.0, NAN, lut);
      for (int64_t r0 = 0; r0 <= n; r0++)
        for (int64_t nr = 0; r0 + nr <= n; nr++) {
          double buf[16];
          for (int q = 0; q < 16; q++) buf[q] = -99.0;
          fm_codec_bed2_decode_col(enc + 2 * cb, r0, nr, lut, buf);
          for (int64_t i = 0; i < nr; i++) {
            int32_t v = ref_value(enc + 2 * cb, r0 + i);
            CHECK(v == INT32_MIN ? isnan(buf[i]) : buf[i] == (double)v);
          }
          CHECK(buf[nr] == -99.0); /* never writes past n_rows */
        }
    }

    /* Random panels: r0 anywhere, column subsets in shuffled order. */
    int64_t idx[9];
    for (int rep = 0; rep < 40; rep++) {
      int64_t nc = 1 + rng_int(m);
      for (int64_t j = 0; j < nc; j++) idx[j] = rng_int(m);
      x.col_index = idx;
      x.n_cols = nc;
      int64_t r0 = rng_int(n), nr = 1 + rng_int(n - r0);
      int64_t ld = nr + rng_int(3);
      CHECK_OK(fm_panel_decode(&x, NULL, r0, nr, 0, nc, out, ld, &err), &err);
      bad = 0;
      for (int64_t j = 0; j < nc; j++)
        for (int64_t i = 0; i < nr; i++) {
          int32_t v = ref_value(enc + idx[j] * cb, r0 + i);
          double o = out[i + j * ld];
          bad += v == INT32_MIN ? !isnan(o) : o != (double)v;
        }
      CHECK(bad == 0);
      /* logical column offset c0 into the subset */
      if (nc > 1) {
        CHECK_OK(fm_panel_decode(&x, NULL, r0, nr, 1, nc - 1, out, nr, &err), &err);
        for (int64_t i = 0; i < nr; i++) {
          int32_t v = ref_value(enc + idx[1] * cb, r0 + i);
          CHECK(v == INT32_MIN ? isnan(out[i]) : out[i] == (double)v);
        }
      }
    }
    free(g);
    free(enc);
    free(ref);
    free(out);
  }
}

/* Garbage in padding bits never leaks into decode or counts. */
static void test_padding_ignored(void) {
  fm_err err;
  const int64_t n = 13, m = 3, cb = fm_codec_bed2_col_bytes(n);
  int32_t g[39];
  uint8_t enc[12];
  for (int i = 0; i < 39; i++) g[i] = random_genotype(0.2);
  CHECK_OK(fm_codec_bed2_encode(g, n, m, n, enc, &err), &err);
  for (int64_t j = 0; j < m; j++) enc[j * cb + cb - 1] |= 0xfc; /* samples 13..15: code 3 / 1 */
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_BED2, enc, n, m, cb, &err), &err);
  double out[39];
  CHECK_OK(fm_panel_decode(&x, NULL, 0, n, 0, m, out, n, &err), &err);
  for (int i = 0; i < 39; i++) CHECK(g[i] == INT32_MIN ? isnan(out[i]) : out[i] == g[i]);
  int64_t counts[12];
  fm_codec_bed2_col_counts(enc, n, cb, NULL, m, counts);
  for (int64_t j = 0; j < m; j++) {
    int64_t c[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < n; i++) {
      int32_t v = g[i + j * n];
      c[v == INT32_MIN ? 3 : v]++;
    }
    for (int k = 0; k < 4; k++) CHECK(counts[4 * j + k] == c[k]);
  }
}

static void test_counts(void) {
  fm_err err;
  const int64_t ns[] = {1, 3, 4, 5, 1001, 70001};
  for (int t = 0; t < 6; t++) {
    const int64_t n = ns[t], m = 5, cb = fm_codec_bed2_col_bytes(n), stride = cb + 3;
    int32_t *g = malloc(sizeof(int32_t) * (size_t)(n * m));
    uint8_t *enc = calloc((size_t)(stride * m), 1);
    uint8_t *tmp = malloc((size_t)cb);
    for (int64_t i = 0; i < n * m; i++) g[i] = random_genotype(t == 5 ? 0.5 : 0.1);
    if (n > 4) for (int64_t i = 0; i < n; i++) g[i] = 2; /* a monomorphic column */
    for (int64_t j = 0; j < m; j++) {
      CHECK_OK(fm_codec_bed2_encode(g + j * n, n, 1, n, tmp, &err), &err);
      memcpy(enc + j * stride, tmp, (size_t)cb);
    }
    int64_t cols[4] = {4, 0, 2, 0};
    int64_t counts[16];
    fm_codec_bed2_col_counts(enc, n, stride, cols, 4, counts);
    for (int jj = 0; jj < 4; jj++) {
      int64_t ref[4] = {0, 0, 0, 0};
      for (int64_t i = 0; i < n; i++) {
        int32_t v = ref_value(enc + cols[jj] * stride, i);
        ref[v == INT32_MIN ? 3 : v]++;
      }
      for (int k = 0; k < 4; k++) CHECK(counts[4 * jj + k] == ref[k]);
      CHECK(counts[4 * jj] + counts[4 * jj + 1] + counts[4 * jj + 2] + counts[4 * jj + 3] == n);
    }
    int64_t all[20];
    fm_codec_bed2_col_counts(enc, n, stride, NULL, m, all);
    for (int k = 0; k < 4; k++) CHECK(all[4 * 4 + k] == counts[k]);
    if (n > 4) CHECK(all[2] == n && all[0] == 0 && all[1] == 0 && all[3] == 0);
    free(g);
    free(enc);
    free(tmp);
  }
}

/* ---- counting: both kernels against per-sample bit arithmetic ---- */

/* counts_out layout of fm_codec_bed2_col_counts, one sample at a time. */
static void ref_counts(const uint8_t *col, int64_t n, int64_t out[4]) {
  for (int k = 0; k < 4; k++) out[k] = 0;
  for (int64_t i = 0; i < n; i++) {
    int32_t v = ref_value(col, i);
    out[v == INT32_MIN ? 3 : v]++;
  }
}

/* Counts from the kernel for this CPU and from the portable one. */
static void counts_both_kernels(const uint8_t *data, int64_t n, int64_t stride, const int64_t *cols,
                                int64_t m, int64_t *dflt, int64_t *portable) {
  fm_codec_bed2_col_counts(data, n, stride, cols, m, dflt);
  fm_cpu_cap(FM_ISA_PORTABLE);
  fm_codec_bed2_col_counts(data, n, stride, cols, m, portable);
  fm_cpu_cap(FM_ISA_AVX512);
}

/* m columns of n random calls at stride bytes, in a buffer that ends with the
 * last column's last byte (so a read past it is an ASan error); padding bits
 * and the bytes between columns are random garbage. */
static uint8_t *random_columns(int64_t n, int64_t m, int64_t stride, double miss) {
  const int64_t cb = fm_codec_bed2_col_bytes(n);
  const size_t size = (size_t)(stride * (m - 1) + cb);
  uint8_t *data = malloc(size > 0 ? size : 1);
  for (size_t b = 0; b < size; b++) data[b] = (uint8_t)rng_next();
  for (int64_t j = 0; j < m; j++)
    for (int64_t i = 0; i < n; i++) {
      int32_t v = random_genotype(miss);
      int code = v == 2 ? 0 : v == 1 ? 2 : v == 0 ? 3 : 1;
      uint8_t *byte = data + j * stride + i / 4;
      *byte = (uint8_t)((*byte & ~(3 << (2 * (i % 4)))) | (code << (2 * (i % 4))));
    }
  return data;
}

/* Every n in 0..600 (each residue mod 32 and mod 256, at least twice), odd
 * strides, garbage padding: both kernels equal the oracle. */
static void test_counts_every_residue(void) {
  for (int64_t n = 0; n <= 600; n++) {
    const int64_t m = 3, stride = fm_codec_bed2_col_bytes(n) + (n % 3);
    uint8_t *data = random_columns(n, m, stride, 0.05 + 0.3 * (double)(n % 4) / 4);
    int64_t cols[4] = {2, 0, 1, 2}, dflt[16], port[16], want[4];
    counts_both_kernels(data, n, stride, cols, 4, dflt, port);
    int bad = 0;
    for (int j = 0; j < 4; j++) {
      ref_counts(data + cols[j] * stride, n, want);
      for (int k = 0; k < 4; k++) bad += dflt[4 * j + k] != want[k] || port[4 * j + k] != want[k];
    }
    CHECK(bad == 0);
    if (bad) fprintf(stderr, "  n = %lld\n", (long long)n);
    free(data);
  }
}

/* Constant columns (every byte 0x00, 0x55, 0xaa, 0xff: all hom A1, missing,
 * het, hom A2) fill every byte counter to its bound; sizes around the
 * kernels' flush points (63 x 32 and 63 x 8 bytes) and a huge column. */
static void test_counts_saturated(void) {
  const int64_t ns[] = {1, 31, 32, 33, 255, 256, 257, 2015, 2016, 2017, 8063, 8064, 8065,
                        63 * 128 * 3 + 5, 4000003};
  const uint8_t fills[4] = {0x00, 0x55, 0xaa, 0xff};
  const int slot[4] = {2, 3, 1, 0}; /* counts_out row of each fill's code */
  for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
    const int64_t n = ns[t], cb = fm_codec_bed2_col_bytes(n);
    uint8_t *data = malloc((size_t)(4 * cb));
    for (int f = 0; f < 4; f++) memset(data + f * cb, fills[f], (size_t)cb);
    int64_t dflt[16], port[16];
    counts_both_kernels(data, n, cb, NULL, 4, dflt, port);
    for (int f = 0; f < 4; f++)
      for (int k = 0; k < 4; k++) {
        const int64_t want = k == slot[f] ? n : 0;
        CHECK(dflt[4 * f + k] == want && port[4 * f + k] == want);
      }
    free(data);
  }
}

/* Huge random columns (counts far past 16 bits), tiny and empty selections. */
static void test_counts_huge(void) {
  const int64_t n = 3000017, m = 3, stride = fm_codec_bed2_col_bytes(n) + 1;
  uint8_t *data = random_columns(n, m, stride, 0.2);
  int64_t dflt[12], port[12], want[4];
  counts_both_kernels(data, n, stride, NULL, m, dflt, port);
  for (int64_t j = 0; j < m; j++) {
    ref_counts(data + j * stride, n, want);
    for (int k = 0; k < 4; k++) CHECK(dflt[4 * j + k] == want[k] && port[4 * j + k] == want[k]);
    CHECK(want[3] > 500000 && want[0] > 500000); /* every code, far past 65535 */
  }
  int64_t none[4] = {-1, -1, -1, -1};
  counts_both_kernels(data, n, stride, NULL, 0, none, none);
  CHECK(none[0] == -1); /* no columns: nothing written */
  free(data);
}

/* Fused affine equals decode-then-transform, bit for bit. */
static void test_affine_fusion(void) {
  fm_err err;
  for (int t = 0; t < N_SIZES; t++) {
    const int64_t n = sizes[t], m = 6, cb = fm_codec_bed2_col_bytes(n);
    int32_t *g = malloc(sizeof(int32_t) * (size_t)(n * m));
    uint8_t *enc = malloc((size_t)(cb * m));
    double *plain = malloc(sizeof(double) * (size_t)(n * m));
    double *fused = malloc(sizeof(double) * (size_t)(n * m));
    for (int64_t i = 0; i < n * m; i++) g[i] = random_genotype(0.15);
    CHECK_OK(fm_codec_bed2_encode(g, n, m, n, enc, &err), &err);
    double center[6], scale[6], fill[6];
    for (int j = 0; j < 6; j++) {
      center[j] = 2.0 * rng_unif();
      scale[j] = 0.5 + 3.0 * rng_unif();
      fill[j] = rng_unif() - 0.5;
    }
    fm_mat x;
    CHECK_OK(fm_mat_init(&x, FM_CODEC_BED2, enc, n, m, cb, &err), &err);
    int64_t idx[6] = {5, 1, 1, 3, 0, 2};
    x.col_index = idx;
    CHECK_OK(fm_panel_decode(&x, NULL, 0, n, 0, m, plain, n, &err), &err);
    /* all eight combinations of NULL / present parts */
    for (int mask = 0; mask < 8; mask++) {
      fm_affine aff = {.center = (mask & 1) ? center : NULL,
                       .scale = (mask & 2) ? scale : NULL,
                       .fill = (mask & 4) ? fill : NULL};
      int64_t r0 = n > 2 ? 1 + rng_int(n - 2) : 0, nr = n - r0;
      CHECK_OK(fm_panel_decode(&x, &aff, r0, nr, 0, m, fused, nr, &err), &err);
      int bad = 0;
      for (int64_t j = 0; j < m; j++)
        for (int64_t i = 0; i < nr; i++) {
          double v = plain[r0 + i + j * n];
          double c = aff.center ? center[j] : 0.0, s = aff.scale ? scale[j] : 1.0;
          double want = isnan(v) ? (aff.fill ? fill[j] : NAN) : (v - c) * s;
          bad += !same(fused[i + j * nr], want);
        }
      CHECK(bad == 0);
    }
    free(g);
    free(enc);
    free(plain);
    free(fused);
  }
}

static void test_encode_rejects(void) {
  fm_err err;
  int32_t g[12] = {0, 1, 2, INT32_MIN, 0, 1, 2, 0, 1, 3, 2, 2};
  uint8_t out[6];
  CHECK(fm_codec_bed2_encode(g, 5, 2, 6, out, &err) == FM_EARG); /* (4, 1) 0-based is 3 */
  CHECK(strstr(err.msg, "g[4, 2] = 3") != NULL);
  g[9] = -1;
  CHECK(fm_codec_bed2_encode(g, 6, 2, 6, out, &err) == FM_EARG);
  CHECK(strstr(err.msg, "g[4, 2] = -1") != NULL);
  g[9] = 1;
  CHECK_OK(fm_codec_bed2_encode(g, 6, 2, 6, out, &err), &err);
  CHECK(fm_codec_bed2_encode(g, 6, 2, 5, out, &err) == FM_EARG); /* ld < n */
  CHECK_OK(fm_codec_bed2_encode(NULL, 0, 0, 0, NULL, &err), &err);
}

/* The 8-bytes-per-step translation from packed counts equals the table on
 * every byte value, at every length (the tail goes byte by byte), in place. */
static void test_from_count2(void) {
  uint8_t src[300], dst[300], want[300];
  for (int i = 0; i < 300; i++) src[i] = (uint8_t)((i * 37 + 11) & 0xff);
  for (int i = 0; i < 256; i++) src[i] = (uint8_t)i;
  for (int64_t n = 0; n <= 300; n += n < 20 ? 1 : 37) {
    for (int64_t j = 0; j < n; j++) want[j] = fm_codec_bed2_of_count2[src[j]];
    fm_codec_bed2_from_count2(src, n, dst);
    CHECK(n == 0 || memcmp(dst, want, (size_t)n) == 0);
    memcpy(dst, src, (size_t)n);
    fm_codec_bed2_from_count2(dst, n, dst);
    CHECK(n == 0 || memcmp(dst, want, (size_t)n) == 0);
  }
  /* counts 0, 1, 2, missing -> 0b11, 0b10, 0b00, 0b01 */
  CHECK(fm_codec_bed2_of_count2[0xe4] == (0x1 << 6 | 0x0 << 4 | 0x2 << 2 | 0x3));
}

static void test_check_file(void) {
  fm_err err;
  const int64_t n = 1126, m = 3, cb = 282;
  const uint64_t size = 3 + (uint64_t)(m * cb);
  uint8_t *b = calloc(size + 1, 1);
  b[0] = 0x6c;
  b[1] = 0x1b;
  b[2] = 0x01;
  CHECK_OK(fm_codec_bed2_check_file(b, size, n, m, "x.bed", &err), &err);

  CHECK(fm_codec_bed2_check_file(b, size - 1, n, m, "x.bed", &err) == FM_EFORMAT);
  CHECK(strcmp(err.msg, "'x.bed' has 848 bytes but 1126 samples x 3 variants need 3 + 3 * 282 = "
                        "849 bytes: the file ends at byte offset 848, in variant 3 (1-based)") == 0);
  CHECK(fm_codec_bed2_check_file(b, size - 282, n, m, "x.bed", &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "ends at byte offset 567, in variant 3 (1-based)") != NULL);
  CHECK(fm_codec_bed2_check_file(b, size + 1, n, m, "x.bed", &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "has 850 bytes") != NULL);
  CHECK(strstr(err.msg, "the bytes from offset 849 on belong to no variant") != NULL);
  CHECK(fm_codec_bed2_check_file(NULL, 2, n, m, "x.bed", &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "ends at byte offset 2, in the 3-byte header") != NULL);

  CHECK(fm_codec_bed2_check_file(b, 1234, 1126, 25161, "x.bed", &err) == FM_EFORMAT);
  CHECK(strcmp(err.msg, "'x.bed' has 1234 bytes but 1126 samples x 25161 variants need 3 + "
                        "25161 * 282 = 7095405 bytes: the file ends at byte offset 1234, in "
                        "variant 5 (1-based)") == 0);

  b[2] = 0x00;
  CHECK(fm_codec_bed2_check_file(b, size, n, m, "x.bed", &err) == FM_EFORMAT);
  CHECK(strcmp(err.msg, "'x.bed' is sample-major (mode byte 0x00 at byte offset 2); only "
                        "variant-major .bed files are supported") == 0);
  b[2] = 0x07;
  CHECK(fm_codec_bed2_check_file(b, size, n, m, "x.bed", &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "mode byte 0x07 at byte offset 2") != NULL);
  b[2] = 0x01;

  b[0] = 'P';
  b[1] = 'K';
  CHECK(fm_codec_bed2_check_file(b, size, n, m, "x.bed", &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "(found 0x50 0x4b at byte offset 0)") != NULL && strstr(err.msg, "'x.bed'") != NULL);
  b[0] = 0x6c;
  b[1] = 0x1b;

  CHECK(fm_codec_bed2_check_file(b, 2, n, m, "x.bed", &err) == FM_EFORMAT);
  CHECK(fm_codec_bed2_check_file(NULL, 0, 0, 0, "x.bed", &err) == FM_EFORMAT);
  CHECK_OK(fm_codec_bed2_check_file(b, 3, 0, 0, NULL, &err), &err);
  CHECK_OK(fm_codec_bed2_check_file(b, 3, 17, 0, "x.bed", &err), &err);
  CHECK(fm_codec_bed2_check_file(b, 3, -1, 0, "x.bed", &err) == FM_EARG);
  CHECK(fm_codec_bed2_check_file(b, 3, INT64_MAX, INT64_MAX, "x.bed", &err) == FM_EFORMAT);
  free(b);
}

int main(void) {
  FM_RUN(test_col_bytes);
  FM_RUN(test_round_trip);
  FM_RUN(test_padding_ignored);
  FM_RUN(test_counts);
  FM_RUN(test_counts_every_residue);
  FM_RUN(test_counts_saturated);
  FM_RUN(test_counts_huge);
  FM_RUN(test_affine_fusion);
  FM_RUN(test_encode_rejects);
  FM_RUN(test_check_file);
  FM_RUN(test_from_count2);
  FM_TEST_END();
}
