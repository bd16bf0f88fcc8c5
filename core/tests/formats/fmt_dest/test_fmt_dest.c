/* Destinations and fm_fmt_stream (fm_fmt.h) on an in-memory mock reader:
 * every destination is decoded back with the codec functions and compared
 * with the records, under sample and variant subsets with duplicates. */
#define _DEFAULT_SOURCE /* mkstemp, ftruncate */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fm/fm_codec_bed2.h"
#include "fm/fm_codec_dos8.h"
#include "fm/fm_codec_hap1.h"
#include "fm/fm_fmt.h"
#include "fm/fm_panel.h"
#include "fm_test.h"

#define NS 13 /* samples (n % 4 != 0) */
#define NV 9  /* variants */

typedef struct mock {
  int64_t next, n_next_calls;
  int phased, with_dosage;
  int8_t hc[NV][NS];
  double ds[NV][NS];
  int8_t hap[NV][2 * NS];
  char id[NV][16];
} mock;

static fm_status mock_next(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  (void)err;
  mock *m = r->impl;
  m->n_next_calls++;
  if (m->next >= NV) return FM_FMT_END;
  const int64_t v = m->next++;
  rec->n_samples = NS;
  rec->chrom = "1";
  rec->pos = 100 + v;
  rec->id = m->id[v];
  rec->ref = "A";
  rec->alt = "C";
  rec->hardcall = m->hc[v];
  rec->dosage = m->with_dosage ? m->ds[v] : NULL;
  rec->hap = m->phased ? m->hap[v] : NULL;
  rec->is_phased = m->phased;
  return FM_OK;
}

static void mock_close(fm_reader *r) { free(r->impl); }
static const fm_reader_ops mock_ops = {mock_next, mock_close, NULL};

static fm_reader *mock_open(int phased, int with_dosage, uint64_t seed) {
  fm_reader *r = calloc(1, sizeof *r);
  mock *m = calloc(1, sizeof *m);
  r->ops = &mock_ops;
  r->impl = m;
  r->info.format = "mock";
  r->info.n_samples = NS;
  r->info.n_variants = NV;
  m->phased = phased;
  m->with_dosage = with_dosage;
  uint64_t st = seed;
  for (int v = 0; v < NV; v++) {
    snprintf(m->id[v], sizeof m->id[v], "v%d", v);
    for (int s = 0; s < NS; s++) {
      int8_t a[2];
      for (int k = 0; k < 2; k++) {
        uint64_t x = fm_test_rng_next(&st) % 10;
        a[k] = x == 0 ? FM_GT_MISSING : (int8_t)(x % 2);
      }
      m->hap[v][2 * s] = a[0];
      m->hap[v][2 * s + 1] = a[1];
      m->hc[v][s] = (a[0] < 0 || a[1] < 0) ? FM_GT_MISSING : (int8_t)(a[0] + a[1]);
      m->ds[v][s] = m->hc[v][s] < 0 ? NAN : fm_test_rng_unif(&st) * 2.0;
    }
  }
  return r;
}

static int is_r_na(double x) {
  double na = fm_na_value();
  return memcmp(&x, &na, sizeof x) == 0;
}

/* Check column j of d against variant v of m. */
static void check_col(const fm_dest *d, const mock *m, int64_t j, int64_t v) {
  const int64_t n = d->n_out_samples;
  double *out = malloc((size_t)(n > 0 ? n : 1) * sizeof *out);
  int32_t *h = malloc((size_t)(2 * n > 0 ? 2 * n : 1) * sizeof *h);
  if (d->kind == FM_DEST_HARDCALL) {
    const int64_t cb = fm_codec_bed2_col_bytes(n);
    double lut[4];
    fm_codec_bed2_lut(0, 1, NAN, lut);
    fm_codec_bed2_decode_col(d->data + j * cb, 0, n, lut, out);
    for (int64_t i = 0; i < n; i++) {
      const int8_t g = m->hc[v][d->sample_index ? d->sample_index[i] : i];
      if (g < 0) CHECK(isnan(out[i]));
      else CHECK(out[i] == g);
    }
    /* padding bits are zero */
    if (n % 4) CHECK((d->data[j * cb + cb - 1] >> (2 * (n % 4))) == 0);
  } else if (d->kind == FM_DEST_DOSAGE) {
    double lut[256];
    fm_codec_dos8_lut(0, 1, NAN, lut);
    fm_codec_dos8_decode_col(d->data + j * n, n, lut, out);
    for (int64_t i = 0; i < n; i++) {
      const int64_t s = d->sample_index ? d->sample_index[i] : i;
      const double x = m->with_dosage ? m->ds[v][s] : (m->hc[v][s] < 0 ? NAN : m->hc[v][s]);
      if (isnan(x)) CHECK(isnan(out[i]));
      else CHECK(fabs(out[i] - x) <= 1.0 / 254 + 1e-12);
    }
  } else if (d->kind == FM_DEST_DENSE) {
    for (int64_t i = 0; i < n; i++) {
      const int64_t s = d->sample_index ? d->sample_index[i] : i;
      double y;
      memcpy(&y, d->data + 8 * (j * n + i), sizeof y);
      const double x = m->with_dosage ? m->ds[v][s] : (m->hc[v][s] < 0 ? NAN : m->hc[v][s]);
      if (isnan(x)) CHECK(is_r_na(y));
      else CHECK(y == x);
    }
  } else {
    const int64_t nh = 2 * n, rb = fm_codec_hap1_row_bytes(nh);
    fm_codec_hap1_decode_rows(d->data, nh, j, 1, h, nh);
    int32_t *miss = malloc((size_t)(nh > 0 ? nh : 1) * sizeof *miss);
    fm_codec_hap1_decode_rows(d->data, nh, d->n_out_variants + j, 1, miss, nh);
    for (int64_t i = 0; i < n; i++) {
      const int64_t s = d->sample_index ? d->sample_index[i] : i;
      for (int k = 0; k < 2; k++) {
        const int8_t a = m->hap[v][2 * s + k];
        CHECK(miss[2 * i + k] == (a < 0));
        CHECK(h[2 * i + k] == (a == 1));
      }
    }
    /* padding of both planes is zero */
    for (int64_t b = (nh + 7) / 8; b < rb; b++) {
      CHECK(d->data[j * rb + b] == 0);
      CHECK(d->data[(d->n_out_variants + j) * rb + b] == 0);
    }
    free(miss);
  }
  free(out);
  free(h);
}

static void test_bytes(void) {
  fm_err err;
  uint64_t nb = 0;
  CHECK_OK(fm_dest_bytes(FM_DEST_HARDCALL, 13, 9, &nb, &err), &err);
  CHECK(nb == 4 * 9);
  CHECK_OK(fm_dest_bytes(FM_DEST_DOSAGE, 13, 9, &nb, &err), &err);
  CHECK(nb == 13 * 9);
  CHECK_OK(fm_dest_bytes(FM_DEST_DENSE, 13, 9, &nb, &err), &err);
  CHECK(nb == 8 * 13 * 9);
  CHECK_OK(fm_dest_bytes(FM_DEST_HAPLOTYPE, 13, 9, &nb, &err), &err);
  CHECK(nb == 2 * 9 * 64);
  CHECK_OK(fm_dest_bytes(FM_DEST_HAPLOTYPE, 257, 3, &nb, &err), &err);
  CHECK(nb == 2 * 3 * 128);
  CHECK_OK(fm_dest_bytes(FM_DEST_HARDCALL, 0, 0, &nb, &err), &err);
  CHECK(nb == 0);
  CHECK(fm_dest_bytes(FM_DEST_DENSE, INT64_MAX / 4, 3, &nb, &err) == FM_EARG);
  CHECK(fm_dest_bytes(FM_DEST_DENSE, -1, 3, &nb, &err) == FM_EARG);
  CHECK(fm_dest_bytes((fm_dest_kind)9, 1, 3, &nb, &err) == FM_EARG);
}

/* Destination names (Rpgen's `destination`) and the dtypes their storage holds. */
static void test_kind_names(void) {
  fm_err err;
  const char *names[] = {"hardcall", "dosage", "haplotype", "dense"};
  const fm_dest_kind kinds[] = {FM_DEST_HARDCALL, FM_DEST_DOSAGE, FM_DEST_HAPLOTYPE, FM_DEST_DENSE};
  const fm_dtype dtypes[] = {FM_DTYPE_BED2, FM_DTYPE_DOS8, FM_DTYPE_HAP1, FM_DTYPE_F64};
  for (int i = 0; i < 4; i++) {
    fm_dest_kind k = (fm_dest_kind)0;
    CHECK_OK(fm_dest_kind_by_name(names[i], &k, &err), &err);
    CHECK(k == kinds[i]);
    CHECK(fm_dest_dtype(k) == dtypes[i]);
  }
  fm_dest_kind k = FM_DEST_DENSE;
  CHECK(fm_dest_kind_by_name("Hardcall", &k, &err) == FM_EARG);
  CHECK(strstr(err.msg, "'Hardcall' is not one of hardcall, dosage, haplotype, dense") != NULL);
  CHECK(fm_dest_kind_by_name(NULL, &k, &err) == FM_EARG);
  CHECK(fm_dest_kind_by_name("dense", NULL, &err) == FM_EARG);
  CHECK(k == FM_DEST_DENSE);
  CHECK(fm_dest_dtype((fm_dest_kind)0) == FM_DTYPE_NONE);
  CHECK(fm_dest_dtype((fm_dest_kind)9) == FM_DTYPE_NONE);
}

typedef struct seen {
  int64_t n, idx[64];
} seen;

static void on_var(void *ud, int64_t in_index, const fm_gt_record *rec) {
  seen *s = ud;
  if (s->n < 64) s->idx[s->n] = in_index;
  s->n++;
  CHECK(rec->pos == 100 + in_index);
}

static void run_kind(fm_dest_kind kind, int phased, int with_dosage) {
  static const int64_t samples[] = {12, 0, 0, 5, 7, 3, 12, 1, 2, 9, 9}; /* 11 out, dups */
  static const int64_t vars[] = {7, 2, 2, 0, 8, 5, 2};                  /* any order, dups */
  const int64_t n_out_s = 11, n_out_v = 7;
  fm_err err;
  uint64_t nb = 0;
  CHECK_OK(fm_dest_bytes(kind, n_out_s, n_out_v, &nb, &err), &err);
  uint8_t *buf = malloc(nb);
  memset(buf, 0xAB, nb);
  fm_reader *r = mock_open(phased, with_dosage, 42 + (uint64_t)kind);
  fm_dest d = {kind, buf, n_out_s, n_out_v, samples, 0};
  seen sn = {0, {0}};
  CHECK_OK(fm_fmt_stream(r, &d, vars, 2, on_var, &sn, NULL, &err), &err);
  mock *m = r->impl;
  for (int64_t j = 0; j < n_out_v; j++) check_col(&d, m, j, vars[j]);
  /* on_variant once per selected input record, in file order */
  CHECK(sn.n == 5);
  CHECK(sn.idx[0] == 0 && sn.idx[1] == 2 && sn.idx[2] == 5 && sn.idx[3] == 7 && sn.idx[4] == 8);
  fm_reader_close(r);
  free(buf);

  /* all samples, all variants in order */
  CHECK_OK(fm_dest_bytes(kind, NS, NV, &nb, &err), &err);
  buf = malloc(nb);
  memset(buf, 0xCD, nb);
  r = mock_open(phased, with_dosage, 7);
  fm_dest d2 = {kind, buf, NS, NV, NULL, 0};
  CHECK_OK(fm_fmt_stream(r, &d2, NULL, 0, NULL, NULL, NULL, &err), &err);
  for (int64_t j = 0; j < NV; j++) check_col(&d2, r->impl, j, j);
  fm_reader_close(r);
  free(buf);
}

static void test_hardcall(void) { run_kind(FM_DEST_HARDCALL, 0, 0); }
static void test_dosage_from_hardcall(void) { run_kind(FM_DEST_DOSAGE, 0, 0); }
static void test_dosage(void) { run_kind(FM_DEST_DOSAGE, 0, 1); }
static void test_dense(void) {
  run_kind(FM_DEST_DENSE, 0, 0);
  run_kind(FM_DEST_DENSE, 0, 1);
}
static void test_haplotype(void) { run_kind(FM_DEST_HAPLOTYPE, 1, 0); }

static void test_bed2_codes(void) {
  /* exact code mapping: 2 -> 00, missing -> 01, 1 -> 10, 0 -> 11 */
  int8_t hc[5] = {2, FM_GT_MISSING, 1, 0, 1};
  fm_gt_record rec = {5, "1", 1, "x", "A", "C", NAN, hc, NULL, NULL, 0, NULL, NULL};
  uint8_t out[2] = {0xff, 0xff};
  fm_dest d = {FM_DEST_HARDCALL, out, 5, 1, NULL, 0};
  fm_err err;
  CHECK_OK(fm_dest_put(&d, 0, &rec, &err), &err);
  CHECK(out[0] == (0x0 | 0x1 << 2 | 0x2 << 4 | 0x3 << 6));
  CHECK(out[1] == 0x2);
  /* dos8 rounding */
  double ds[5] = {0.0, 1.0 / 127 * 0.49, 1.0, NAN, 2.0};
  rec.dosage = ds;
  uint8_t q[5];
  fm_dest dd = {FM_DEST_DOSAGE, q, 5, 1, NULL, 0};
  CHECK_OK(fm_dest_put(&dd, 0, &rec, &err), &err);
  CHECK(q[0] == 0 && q[1] == 0 && q[2] == 127 && q[3] == 255 && q[4] == 254);
  ds[1] = 2.5;
  CHECK(fm_dest_put(&dd, 0, &rec, &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "'x'") != NULL);
}

/* Hardcall columns from int8 counts and from a reader's packed bed2 (pad
 * bits set to garbage) equal a bit-by-bit reference, for every n % 4, with
 * and without a sample subset; the destination's pad bits are 0. */
static void test_bed2_packed(void) {
  enum { MAXN = 23 };
  static const unsigned code[3] = {3u, 2u, 0u};
  uint64_t st = 7;
  fm_err err;
  for (int64_t n = 1; n <= MAXN; n++) {
    int8_t hc[MAXN];
    uint8_t pk[(MAXN + 3) / 4], want[(MAXN + 3) / 4], got[(MAXN + 3) / 4];
    int64_t si[MAXN];
    const int64_t cb = (n + 3) / 4;
    memset(pk, 0xff, sizeof pk);
    for (int64_t i = 0; i < n; i++) {
      st = st * 6364136223846793005ULL + 1442695040888963407ULL;
      const int g = (int)((st >> 33) % 4);
      hc[i] = g == 3 ? FM_GT_MISSING : (int8_t)g;
      pk[i / 4] = (uint8_t)((pk[i / 4] & ~(3u << (2 * (i % 4)))) |
                            (g == 3 ? 1u : code[g]) << (2 * (i % 4)));
      si[i] = (int64_t)((st >> 40) % (uint64_t)n); /* duplicates likely */
    }
    for (int sub = 0; sub < 2; sub++) {
      memset(want, 0, sizeof want);
      for (int64_t i = 0; i < n; i++) {
        const int8_t g = hc[sub ? si[i] : i];
        want[i / 4] |= (uint8_t)((g < 0 ? 1u : code[g]) << (2 * (i % 4)));
      }
      for (int form = 0; form < 2; form++) {
        fm_gt_record rec = {n, "1", 1, "x", "A", "C", NAN, form ? NULL : hc, NULL, NULL, 0,
                            form ? pk : NULL, NULL};
        fm_dest d = {FM_DEST_HARDCALL, got, n, 1, sub ? si : NULL, 0};
        memset(got, 0xaa, sizeof got);
        CHECK_OK(fm_dest_put(&d, 0, &rec, &err), &err);
        CHECK(memcmp(got, want, (size_t)cb) == 0);
      }
    }
  }
  CHECK(fm_codec_bed2_of_count2[0] == 0xff && fm_codec_bed2_of_count2[0xff] == 0x55);
  CHECK(fm_codec_bed2_of_count2[0x1b] == (0x3 << 6 | 0x2 << 4 | 0x0 << 2 | 0x1)); /* 0,1,2,miss */
}

/* A reader over an in-memory (m, n) array of ALT counts. */
typedef struct vec_reader {
  const int8_t *hc;
  int64_t n, m, next;
} vec_reader;

static fm_status vec_next(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  (void)err;
  vec_reader *v = r->impl;
  if (v->next >= v->m) return FM_FMT_END;
  memset(rec, 0, sizeof *rec);
  rec->n_samples = v->n;
  rec->chrom = rec->id = rec->ref = rec->alt = "x";
  rec->hardcall = (int8_t *)(v->hc + v->next++ * v->n);
  return FM_OK;
}

static void vec_close(fm_reader *r) { free(r->impl); }
static const fm_reader_ops vec_ops = {vec_next, vec_close, NULL};

static int stop_now(void *ud) {
  (void)ud;
  return 1;
}

static int count_total_nan;
static double count_last_done;
static void count_progress(void *ud, double done, double total) {
  (void)ud;
  count_last_done = done;
  count_total_nan += total != total;
}

/* fm_reader_count on a reader without a count of its own reads the records
 * left; it polls ctl and reports progress with an unknown total. */
static void test_reader_count(void) {
  enum { N = 3, M = 9000 };
  static int8_t hc[M * N];
  fm_reader *r = fm_reader_new(&vec_ops, sizeof(vec_reader));
  vec_reader *vr = r->impl;
  vr->hc = hc;
  vr->n = N;
  vr->m = M;
  vr->next = 5;
  fm_err err;
  int64_t n = -1;
  const fm_ctl ctl = {.progress = count_progress};
  CHECK_OK(fm_reader_count(r, &n, &ctl, &err), &err);
  CHECK(n == M - 5 && vr->next == M);
  CHECK(count_total_nan == 3 && count_last_done == 8192); /* at 0, 4096, 8192 */
  CHECK_OK(fm_reader_count(r, &n, NULL, &err), &err);
  CHECK(n == 0);
  vr->next = 0;
  const fm_ctl stop = {.cancel = stop_now};
  CHECK(fm_reader_count(r, &n, &stop, &err) == FM_ECANCELLED && n == 0);
  CHECK(fm_reader_count(NULL, &n, NULL, &err) == FM_EARG);
  fm_reader_close(r);
}

/* A destination in a shared file mapping, released page by page as the
 * stream goes (tiny blocks, columns of 2 KiB so whole pages fall behind),
 * holds what a heap destination holds. */
static void test_file_mapped_release(void) {
  enum { N = 8000, M = 40 };
  const int64_t cb = (N + 3) / 4;
  static int8_t hc[M][N];
  for (int v = 0; v < M; v++)
    for (int i = 0; i < N; i++) hc[v][i] = (int8_t)((v * 7 + i * 13) % 4 - 1 + (i % 5 == 0));
  char path[] = "/tmp/fm_dest_map_XXXXXX";
  const int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  CHECK(ftruncate(fd, (off_t)(M * cb + 100)) == 0);
  uint8_t *map = mmap(NULL, (size_t)(M * cb + 100), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  CHECK(map != MAP_FAILED);
  uint8_t *heap = malloc((size_t)(M * cb));
  for (int is_mapped = 0; map != MAP_FAILED && is_mapped < 2; is_mapped++) {
    fm_reader *r = calloc(1, sizeof *r);
    vec_reader *vr = calloc(1, sizeof *vr);
    r->ops = &vec_ops;
    r->impl = vr;
    r->info.format = "vec";
    r->info.n_samples = N;
    r->info.n_variants = M;
    vr->hc = &hc[0][0];
    vr->n = N;
    vr->m = M;
    /* offset 100: the columns do not start on a page boundary */
    fm_dest d = {FM_DEST_HARDCALL, is_mapped ? map + 100 : heap, N, M, NULL, is_mapped};
    fm_err err;
    CHECK_OK(fm_fmt_stream(r, &d, NULL, 3, NULL, NULL, NULL, &err), &err);
    fm_reader_close(r);
  }
  if (map != MAP_FAILED) {
    CHECK(memcmp(map + 100, heap, (size_t)(M * cb)) == 0);
    munmap(map, (size_t)(M * cb + 100));
  }
  free(heap);
  close(fd);
  unlink(path);
}

static void test_errors(void) {
  fm_err err;
  uint8_t buf[4096];
  fm_reader *r = mock_open(0, 0, 1);
  fm_dest d = {FM_DEST_HAPLOTYPE, buf, NS, 1, NULL, 0};
  int64_t v0 = 3;
  CHECK(fm_fmt_stream(r, &d, &v0, 0, NULL, NULL, NULL, &err) == FM_EMISMATCH);
  CHECK(strstr(err.msg, "v3") != NULL);
  fm_reader_close(r);

  r = mock_open(0, 0, 1);
  int64_t bad_v = NV;
  fm_dest h = {FM_DEST_HARDCALL, buf, NS, 1, NULL, 0};
  CHECK(fm_fmt_stream(r, &h, &bad_v, 0, NULL, NULL, NULL, &err) == FM_EARG);
  int64_t bad_s[2] = {0, NS};
  fm_dest hs = {FM_DEST_HARDCALL, buf, 2, 1, bad_s, 0};
  CHECK(fm_fmt_stream(r, &hs, &v0, 0, NULL, NULL, NULL, &err) == FM_EARG);
  fm_dest wrong_n = {FM_DEST_HARDCALL, buf, NS - 1, 1, NULL, 0};
  CHECK(fm_fmt_stream(r, &wrong_n, &v0, 0, NULL, NULL, NULL, &err) == FM_EMISMATCH);
  fm_dest wrong_m = {FM_DEST_HARDCALL, buf, NS, NV - 1, NULL, 0};
  CHECK(fm_fmt_stream(r, &wrong_m, NULL, 0, NULL, NULL, NULL, &err) == FM_EMISMATCH);
  fm_gt_record rec;
  memset(&rec, 0, sizeof rec);
  CHECK(fm_dest_put(&h, 1, &rec, &err) == FM_EARG);
  CHECK(fm_dest_put(&h, -1, &rec, &err) == FM_EARG);
  CHECK(fm_dest_put(NULL, 0, &rec, &err) == FM_EARG);
  CHECK(fm_fmt_stream(NULL, &h, NULL, 0, NULL, NULL, NULL, &err) == FM_EARG);
  fm_reader_close(r);

  /* unknown length: more records than columns is an error */
  r = mock_open(0, 0, 1);
  r->info.n_variants = -1;
  fm_dest few = {FM_DEST_HARDCALL, buf, NS, NV - 2, NULL, 0};
  CHECK(fm_fmt_stream(r, &few, NULL, 0, NULL, NULL, NULL, &err) == FM_EMISMATCH);
  fm_reader_close(r);
  r = mock_open(0, 0, 1);
  r->info.n_variants = -1;
  fm_dest exact = {FM_DEST_HARDCALL, buf, NS, NV, NULL, 0};
  CHECK_OK(fm_fmt_stream(r, &exact, NULL, 0, NULL, NULL, NULL, &err), &err);
  fm_reader_close(r);
  /* index beyond the end of a file of unknown length */
  r = mock_open(0, 0, 1);
  r->info.n_variants = -1;
  int64_t far = NV + 4;
  CHECK(fm_fmt_stream(r, &h, &far, 0, NULL, NULL, NULL, &err) == FM_EMISMATCH);
  fm_reader_close(r);
}

static void test_stops_early(void) {
  fm_err err;
  uint8_t buf[64];
  fm_reader *r = mock_open(0, 0, 3);
  int64_t vi[2] = {3, 1};
  fm_dest d = {FM_DEST_HARDCALL, buf, NS, 2, NULL, 0};
  CHECK_OK(fm_fmt_stream(r, &d, vi, 0, NULL, NULL, NULL, &err), &err);
  CHECK(((mock *)r->impl)->n_next_calls == 4);
  fm_reader_close(r);
}

typedef struct cancel_state {
  int polls, stop_at;
  double last_done, last_total;
} cancel_state;

static int cancel_cb(void *ud) {
  cancel_state *c = ud;
  return ++c->polls >= c->stop_at;
}
static void progress_cb(void *ud, double done, double total) {
  cancel_state *c = ud;
  c->last_done = done;
  c->last_total = total;
}

static void test_cancel_progress(void) {
  fm_err err;
  uint8_t buf[64];
  cancel_state c = {0, 3, 0, 0};
  fm_ctl ctl = {.cancel = cancel_cb, .progress = progress_cb, .ud = &c};
  fm_reader *r = mock_open(0, 0, 3);
  fm_dest d = {FM_DEST_HARDCALL, buf, NS, NV, NULL, 0};
  CHECK(fm_fmt_stream(r, &d, NULL, 2, NULL, NULL, &ctl, &err) == FM_ECANCELLED);
  CHECK(c.polls == 3);
  CHECK(((mock *)r->impl)->n_next_calls == 4); /* polled at 0, 2, 4 */
  fm_reader_close(r);
  cancel_state c2 = {0, 1000, 0, 0};
  fm_ctl ctl2 = {.cancel = cancel_cb, .progress = progress_cb, .ud = &c2};
  r = mock_open(0, 0, 3);
  CHECK_OK(fm_fmt_stream(r, &d, NULL, 4, NULL, NULL, &ctl2, &err), &err);
  CHECK(c2.polls == 3 && c2.last_done == NV && c2.last_total == NV);
  fm_reader_close(r);
}

int main(void) {
  FM_RUN(test_bytes);
  FM_RUN(test_kind_names);
  FM_RUN(test_bed2_codes);
  FM_RUN(test_bed2_packed);
  FM_RUN(test_reader_count);
  FM_RUN(test_file_mapped_release);
  FM_RUN(test_hardcall);
  FM_RUN(test_dosage_from_hardcall);
  FM_RUN(test_dosage);
  FM_RUN(test_dense);
  FM_RUN(test_haplotype);
  FM_RUN(test_errors);
  FM_RUN(test_stops_early);
  FM_RUN(test_cancel_progress);
  FM_TEST_END();
}
