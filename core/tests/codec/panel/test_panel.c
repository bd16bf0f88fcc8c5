/* Tests for fm_panel.h: views, F64 / I32 decode with missing values and the
 * affine transform, panel plans under tiny budgets, the global budget, and
 * eviction of consumed columns from the resident set (Linux: checked page by
 * page through /proc/self/pagemap and as a whole in /proc/self/statm).
 * Oracle: element-by-element application of the documented transform; for
 * eviction, the values decoded before and after and the kernel's own count
 * of resident pages. */
#define _DEFAULT_SOURCE /* mkstemp, ftruncate, madvise, posix_fadvise */
#include "fm/fm_backend.h"
#include "fm/fm_panel.h"
#include "fm/fm_stats_colvar.h"

#include "fm_test.h"
#include "fm_test_files.h"

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The control block of the core calls below: the panel budget and thread
 * count the tests set (0: the defaults). */
static fm_ctl test_ctl;

static int same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static void test_min_stride_and_init(void) {
  fm_err err;
  CHECK(fm_mat_min_stride(FM_CODEC_F64, 5) == 40);
  CHECK(fm_mat_min_stride(FM_CODEC_I32, 5) == 20);
  CHECK(fm_mat_min_stride(FM_CODEC_BED2, 5) == 2);
  CHECK(fm_mat_min_stride(FM_CODEC_DOS8, 5) == 5);
  CHECK(fm_mat_min_stride((fm_codec_id)99, 5) == -1);
  CHECK(fm_mat_min_stride(FM_CODEC_F64, -1) == -1);

  double d[12];
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_F64, d, 3, 4, 24, &err), &err);
  CHECK(x.n_rows == 3 && x.n_cols == 4 && x.col_stride == 24 && x.col_index == NULL);
  CHECK(fm_mat_init(&x, FM_CODEC_F64, d, 3, 4, 16, &err) == FM_EARG);
  CHECK(strstr(err.msg, "16") != NULL && strstr(err.msg, "24") != NULL);
  CHECK(fm_mat_init(&x, FM_CODEC_F64, d, 3, 2, 28, &err) == FM_EARG); /* misaligned stride */
  CHECK(fm_mat_init(&x, FM_CODEC_F64, (const char *)d + 4, 1, 1, 8, &err) == FM_EARG);
  CHECK(fm_mat_init(&x, (fm_codec_id)0, d, 3, 4, 24, &err) == FM_EARG);
  CHECK(fm_mat_init(&x, FM_CODEC_F64, d, -1, 4, 24, &err) == FM_EARG);
  CHECK(fm_mat_init(&x, FM_CODEC_F64, NULL, 3, 4, 24, &err) == FM_EARG);
  CHECK_OK(fm_mat_init(&x, FM_CODEC_F64, NULL, 0, 0, 0, &err), &err);
  CHECK_OK(fm_mat_init(&x, FM_CODEC_DOS8, d, 3, 1, 3, &err), &err);
}

static void test_f64(void) {
  fm_err err;
  /* 5 x 3 stored with stride 6 doubles (a gap row), NaN and R's NA inside */
  double na_real;
  {
    uint64_t bits = UINT64_C(0x7FF00000000007A2); /* R's NA_real_ */
    memcpy(&na_real, &bits, sizeof na_real);
  }
  double d[18] = {1, 2, NAN, 4, 5, -9, 0.5, na_real, 1.5, 2.5, 3.5, -9, 7, 8, 9, 10, 11, -9};
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_F64, d, 5, 3, 48, &err), &err);
  double out[20];
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 5, 0, 3, out, 5, &err), &err);
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < 5; i++) CHECK(same(out[i + 5 * j], d[i + 6 * j]));
  uint64_t bits;
  memcpy(&bits, &out[6], sizeof bits);
  CHECK(bits == UINT64_C(0x7FF00000000007A2)); /* NA payload kept */
  {
    double c2[3] = {1, 1, 1};
    fm_affine center_only = {.center = c2};
    CHECK_OK(fm_panel_decode(&x, &center_only, 0, 5, 1, 1, out, 5, &err), &err);
    memcpy(&bits, &out[1], sizeof bits);
    CHECK(bits == UINT64_C(0x7FF00000000007A2)); /* still NA after centring */
    CHECK(out[0] == -0.5 && out[2] == 0.5);
  }

  double center[4] = {1, 2, 3, 4}, scale[4] = {2, 0.5, -1, 3}, fill[4] = {-1, -2, -3, -4};
  int64_t idx[4] = {2, 0, 1, 0};
  x.col_index = idx;
  x.n_cols = 4;
  fm_affine affs[4] = {{.center = center, .scale = scale, .fill = fill},
                       {.center = center},
                       {.fill = fill},
                       {.scale = scale}};
  for (int a = 0; a < 4; a++) {
    for (int i = 0; i < 20; i++) out[i] = -123;
    CHECK_OK(fm_panel_decode(&x, &affs[a], 1, 3, 1, 3, out, 4, &err), &err);
    for (int jj = 0; jj < 3; jj++) {
      int j = 1 + jj;
      for (int i = 0; i < 3; i++) {
        double v = d[1 + i + 6 * idx[j]];
        double c = affs[a].center ? center[j] : 0, s = affs[a].scale ? scale[j] : 1;
        double want = isnan(v) ? (affs[a].fill ? fill[j] : NAN) : (v - c) * s;
        CHECK(same(out[i + 4 * jj], want));
      }
      CHECK(out[3 + 4 * jj] == -123); /* rows beyond n_rows in ld untouched */
    }
  }
}

static void test_i32(void) {
  fm_err err;
  int32_t g[8] = {1, INT32_MIN, 3, -4, INT32_MIN, INT32_MIN, 7, INT32_MAX};
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_I32, g, 4, 2, 16, &err), &err);
  double out[8];
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 4, 0, 2, out, 4, &err), &err);
  for (int i = 0; i < 8; i++)
    CHECK(g[i] == INT32_MIN ? isnan(out[i]) : out[i] == (double)g[i]);
  double center[2] = {0.5, 1}, fill[2] = {0, 42};
  fm_affine aff = {.center = center, .fill = fill};
  CHECK_OK(fm_panel_decode(&x, &aff, 0, 4, 0, 2, out, 4, &err), &err);
  double want[8] = {0.5, 0, 2.5, -4.5, 42, 42, 6, (double)INT32_MAX - 1};
  for (int i = 0; i < 8; i++) CHECK(out[i] == want[i]);
}

static void test_decode_errors(void) {
  fm_err err;
  double d[6] = {0};
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_F64, d, 3, 2, 24, &err), &err);
  double out[6];
  CHECK(fm_panel_decode(&x, NULL, 1, 3, 0, 1, out, 3, &err) == FM_EARG);
  CHECK(fm_panel_decode(&x, NULL, -1, 1, 0, 1, out, 3, &err) == FM_EARG);
  CHECK(fm_panel_decode(&x, NULL, 0, 3, 1, 2, out, 3, &err) == FM_EARG);
  CHECK(fm_panel_decode(&x, NULL, 0, 3, 0, 1, out, 2, &err) == FM_EARG);
  CHECK(fm_panel_decode(NULL, NULL, 0, 3, 0, 1, out, 3, &err) == FM_EARG);
  int64_t idx[2] = {0, -1};
  x.col_index = idx;
  CHECK(fm_panel_decode(&x, NULL, 0, 3, 0, 2, out, 3, &err) == FM_EARG);
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 3, 0, 1, out, 3, &err), &err);
  CHECK_OK(fm_panel_decode(&x, NULL, 3, 0, 2, 0, NULL, 1, &err), &err); /* empty panel */
}

/* Regression (found by core/fuzz/fuzz_codecs): a rejected panel whose start
 * plus length overflows int64 must not overflow while writing the message
 * (signed overflow, reported by UBSan in the FM_SANITIZE build). */
static void test_decode_errors_huge(void) {
  fm_err err;
  uint8_t d[10] = {0};
  fm_mat x;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_DOS8, d, 5, 2, 5, &err), &err);
  double out[1];
  const int64_t big = INT64_MAX - 1;
  CHECK(fm_panel_decode(&x, NULL, big, big, 0, 1, out, 1, &err) == FM_EARG);
  CHECK(err.code == FM_EARG && strstr(err.msg, "9223372036854775806 rows") != NULL);
  CHECK(fm_panel_decode(&x, NULL, 0, 1, big, big, out, 1, &err) == FM_EARG);
  CHECK(err.code == FM_EARG && strstr(err.msg, "9223372036854775806 columns") != NULL);
  CHECK(fm_panel_decode(&x, NULL, INT64_MIN, -1, 0, 1, out, 1, &err) == FM_EARG);
  CHECK(fm_panel_decode(&x, NULL, 0, 1, INT64_MIN, -1, out, 1, &err) == FM_EARG);
}

static void check_plan(const fm_mat *x, size_t budget) {
  fm_panel_plan p = fm_panel_plan_for(x, budget);
  CHECK(p.rows >= 1 && p.cols >= 1);
  CHECK(p.rows <= (x->n_rows > 0 ? x->n_rows : 1) && p.cols <= (x->n_cols > 0 ? x->n_cols : 1));
  CHECK(p.rows <= INT_MAX && p.cols <= INT_MAX);
  if (budget >= 8) CHECK((size_t)p.rows * (size_t)p.cols * 8 <= budget);
}

static void test_plan(void) {
  fm_mat x = {FM_CODEC_F64, NULL, 1000, 50, 8000, NULL, NULL, 0, 0};
  /* plenty: all rows, all columns */
  fm_panel_plan p = fm_panel_plan_for(&x, (size_t)1 << 30);
  CHECK(p.rows == 1000 && p.cols == 50);
  /* room for 10 full columns: column streaming */
  p = fm_panel_plan_for(&x, 10 * 1000 * 8 + 7);
  CHECK(p.rows == 1000 && p.cols == 10);
  /* exactly a handful */
  p = fm_panel_plan_for(&x, FM_PANEL_MIN_COLS * 1000 * 8);
  CHECK(p.rows == 1000 && p.cols == FM_PANEL_MIN_COLS);
  /* fewer than a handful of columns fit: tile rows */
  p = fm_panel_plan_for(&x, 3 * 1000 * 8);
  CHECK(p.rows < 1000 && p.cols == FM_PANEL_MIN_COLS);
  /* the 8 * 3 * 5 budget on a 7 x 5 matrix */
  fm_mat small = {FM_CODEC_F64, NULL, 7, 5, 56, NULL, NULL, 0, 0};
  p = fm_panel_plan_for(&small, 8 * 3 * 5);
  CHECK(p.rows == 3 && p.cols == 5);
  /* fewer columns than a handful, all fit: whole matrix */
  p = fm_panel_plan_for(&small, 8 * 35);
  CHECK(p.rows == 7 && p.cols == 5);
  /* BED2 row tiles start on byte boundaries */
  fm_mat bed = {FM_CODEC_BED2, NULL, 1001, 100, 251, NULL, NULL, 0, 0};
  p = fm_panel_plan_for(&bed, 8 * 8 * 30);
  CHECK(p.rows == 28 && p.cols == 8);
  /* degenerate budgets and shapes */
  p = fm_panel_plan_for(&x, 1);
  CHECK(p.rows == 1 && p.cols == 1);
  fm_mat empty = {FM_CODEC_F64, NULL, 0, 0, 0, NULL, NULL, 0, 0};
  p = fm_panel_plan_for(&empty, 1024);
  CHECK(p.rows == 1 && p.cols == 1);
  /* more rows than BLAS integers hold */
  fm_mat tall = {FM_CODEC_DOS8, NULL, (int64_t)3 << 31, 4, (int64_t)3 << 31, NULL, NULL, 0, 0};
  p = fm_panel_plan_for(&tall, (size_t)1 << 40);
  CHECK(p.rows <= INT_MAX && p.cols >= 1);

  size_t budgets[] = {1, 8, 9, 64, 120, 1000, 8000, 80000, 1 << 20};
  int64_t shapes[][2] = {{1, 1}, {7, 5}, {13, 1}, {1, 13}, {1000, 50}, {1001, 3}, {4, 1000}};
  fm_codec_id codecs[] = {FM_CODEC_F64, FM_CODEC_BED2};
  for (int c = 0; c < 2; c++)
    for (int s = 0; s < 7; s++)
      for (int b = 0; b < 9; b++) {
        fm_mat m = {codecs[c], NULL, shapes[s][0], shapes[s][1], 8 * shapes[s][0], NULL, NULL, 0, 0};
        check_plan(&m, budgets[b]);
      }
}

/* A call's budget comes from its control block; 0 (or no block) is the
 * default, and a plan for budget 0 is the default's. */
static void test_budget(void) {
  fm_ctl ctl = {0};
  CHECK(fm_panel_budget(NULL) == FM_PANEL_DEFAULT_BUDGET);
  CHECK(fm_panel_budget(&ctl) == FM_PANEL_DEFAULT_BUDGET);
  ctl.panel_bytes = 120;
  CHECK(fm_panel_budget(&ctl) == 120);
  fm_mat small = {FM_CODEC_F64, NULL, 7, 5, 56, NULL, NULL, 0, 0};
  fm_panel_plan p = fm_panel_plan_for(&small, fm_panel_budget(&ctl));
  CHECK(p.rows == 3 && p.cols == 5);
  p = fm_panel_plan_for(&small, 0);
  CHECK(p.rows == 7 && p.cols == 5);
}

static uint64_t bits_of(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

/* Missing entries without a fill decode to R's NA bit pattern in every codec. */
static void test_missing_is_r_na(void) {
  fm_err err = {0};
  fm_mat x;
  double out[4];
  const uint8_t bed = 0x01u | (0x00u << 2) | (0x01u << 4) | (0x03u << 6); /* NA, 2, NA, 0 */
  CHECK_OK(fm_mat_init(&x, FM_CODEC_BED2, &bed, 4, 1, 1, &err), &err);
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 4, 0, 1, out, 4, &err), &err);
  CHECK(bits_of(out[0]) == FM_NA_BITS && bits_of(out[2]) == FM_NA_BITS);
  CHECK(out[1] == 2.0 && out[3] == 0.0);
  const uint8_t dos[2] = {255, 127};
  CHECK_OK(fm_mat_init(&x, FM_CODEC_DOS8, dos, 2, 1, 2, &err), &err);
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 2, 0, 1, out, 2, &err), &err);
  CHECK(bits_of(out[0]) == FM_NA_BITS && out[1] == 1.0);
  const int32_t iv[2] = {INT32_MIN, 3};
  CHECK_OK(fm_mat_init(&x, FM_CODEC_I32, iv, 2, 1, 8, &err), &err);
  CHECK_OK(fm_panel_decode(&x, NULL, 0, 2, 0, 1, out, 2, &err), &err);
  CHECK(bits_of(out[0]) == FM_NA_BITS && out[1] == 3.0);
  CHECK(bits_of(fm_na_value()) == FM_NA_BITS);
}

/* ---- eviction ---------------------------------------------------------- */

#ifdef __linux__
/* Resident pages of this process (/proc/self/statm, second field). */
static long resident_pages(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, res = -1;
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &size, &res) != 2) res = -1;
  fclose(f);
  return res;
}

/* Whether each of n_pages pages from addr is mapped in this process
 * (/proc/self/pagemap bit 63); -1 when pagemap cannot be read. */
static int pages_present(const void *addr, long n_pages, unsigned char *present) {
  const long ps = sysconf(_SC_PAGESIZE);
  const int fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return -1;
  const off_t first = (off_t)((uintptr_t)addr / (uintptr_t)ps) * 8;
  for (long i = 0; i < n_pages; i++) {
    uint64_t e = 0;
    if (pread(fd, &e, sizeof e, first + (off_t)i * 8) != (ssize_t)sizeof e) {
      close(fd);
      return -1;
    }
    present[i] = (unsigned char)(e >> 63);
  }
  close(fd);
  return 0;
}

/* Generated values of the mapped test matrix, exact in double. */
static double evict_value(int64_t i, int64_t j) { return (double)(i * 7 + j * 1000003 % 8191); }

/* A 1024 x 2048 F64 matrix (16 MB, 8 KB = two pages per column) written to
 * a temporary file and mapped read-only, shared, one page past a 64 KB
 * boundary of address space. The kernel maps the cached pages of an aligned
 * 64 KB window around each read fault (fault-around); Linux places a large
 * file mapping on a huge-page boundary, where the windows never straddle a
 * streamed block of 128 KB, but valgrind places mappings at any page. */
typedef struct mapped {
  char dir[256], path[300];
  int fd;
  double *base;
  size_t n_bytes;
  void *reserved; /* the address range reserved around base */
  size_t n_reserved;
} mapped;

#define FAULT_AROUND_BYTES 65536

static int map_test_matrix(mapped *m, int64_t n, int64_t p) {
  memset(m, 0, sizeof *m);
  m->fd = -1;
  if (!fm_test_tmpdir(m->dir, sizeof m->dir, "fm_evict")) return 0;
  snprintf(m->path, sizeof m->path, "%s/x.f64", m->dir);
  FILE *f = fopen(m->path, "wb");
  if (!f) return 0;
  double *col = malloc((size_t)n * sizeof *col);
  for (int64_t j = 0; j < p; j++) {
    for (int64_t i = 0; i < n; i++) col[i] = evict_value(i, j);
    if (fwrite(col, sizeof *col, (size_t)n, f) != (size_t)n) break;
  }
  free(col);
  fclose(f);
  m->n_bytes = (size_t)(n * p) * sizeof(double);
  m->fd = open(m->path, O_RDONLY);
  if (m->fd < 0) return 0;
  m->n_reserved = m->n_bytes + 2 * FAULT_AROUND_BYTES;
  void *r = mmap(NULL, m->n_reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r == MAP_FAILED) return 0;
  m->reserved = r;
  const uintptr_t at =
      ((uintptr_t)r + FAULT_AROUND_BYTES - 1) / FAULT_AROUND_BYTES * FAULT_AROUND_BYTES + 4096;
  void *b = mmap((void *)at, m->n_bytes, PROT_READ, MAP_SHARED | MAP_FIXED, m->fd, 0);
  if (b == MAP_FAILED) return 0;
  m->base = b;
  return 1;
}

static void unmap_test_matrix(mapped *m) {
  if (m->reserved) munmap(m->reserved, m->n_reserved);
  if (m->fd >= 0) close(m->fd);
  fm_test_rmtree(m->dir);
}

/* Decode every logical column and compare with the generated values. */
static int64_t decode_all_wrong(const fm_mat *x, const int64_t *stored) {
  fm_err err = {0};
  double *panel = malloc((size_t)x->n_rows * 64 * sizeof *panel);
  int64_t wrong = 0;
  for (int64_t c0 = 0; c0 < x->n_cols; c0 += 64) {
    const int64_t nc = x->n_cols - c0 < 64 ? x->n_cols - c0 : 64;
    CHECK_OK(fm_panel_decode(x, NULL, 0, x->n_rows, c0, nc, panel, x->n_rows, &err), &err);
    for (int64_t c = 0; c < nc; c++)
      for (int64_t i = 0; i < x->n_rows; i++)
        wrong += panel[i + c * x->n_rows] != evict_value(i, stored ? stored[c0 + c] : c0 + c);
  }
  free(panel);
  return wrong;
}

static long count_present(const unsigned char *pr, long from, long to) {
  long c = 0;
  for (long i = from; i < to; i++) c += pr[i];
  return c;
}

/* The n x p test matrix mapped read-only, viewed as F64 (not evictable),
 * and a buffer for the presence of its pages. */
typedef struct evict_case {
  mapped m;
  fm_mat x;
  unsigned char *pr; /* (n_pages): whether each page is resident */
  long n_pages;
} evict_case;

/* 0 when the test cannot run: pages other than 4 KB (said), or the matrix
 * could not be written and mapped (a failed CHECK). Else 1; release with
 * evict_close. */
static int evict_open(evict_case *e, int64_t n, int64_t p) {
  memset(e, 0, sizeof *e);
  const long ps = sysconf(_SC_PAGESIZE);
  if (ps != 4096) {
    printf("  eviction test skipped: it assumes 4 KB pages (this system: %ld)\n", ps);
    return 0;
  }
  if (!map_test_matrix(&e->m, n, p)) {
    CHECK(0 && "cannot write and map the test matrix");
    unmap_test_matrix(&e->m);
    return 0;
  }
  e->n_pages = (long)(e->m.n_bytes / 4096);
  e->pr = malloc((size_t)e->n_pages);
  fm_err err = {0};
  CHECK_OK(fm_mat_init(&e->x, FM_CODEC_F64, e->m.base, n, p, n * 8, &err), &err);
  return 1;
}

/* Read which pages are resident into e->pr; 0 when pagemap is unreadable. */
static int evict_seen(evict_case *e) { return pages_present(e->m.base, e->n_pages, e->pr) == 0; }

static void evict_close(evict_case *e) {
  free(e->pr);
  unmap_test_matrix(&e->m);
}

static void test_evict_resident(void) {
  const int64_t p = 2048;
  evict_case e;
  if (!evict_open(&e, 1024, p)) return;

  /* not evictable: nothing is dropped */
  CHECK(decode_all_wrong(&e.x, NULL) == 0);
  fm_mat_evict_cols(&e.x, 0, p);
  if (!evict_seen(&e)) {
    printf("  eviction test skipped: /proc/self/pagemap is not readable\n");
    evict_close(&e);
    return;
  }
  CHECK(count_present(e.pr, 0, e.n_pages) == e.n_pages);

  /* evictable: the whole matrix leaves the resident set, values stay */
  e.x.flags = FM_MAT_EVICTABLE;
  const long before = resident_pages();
  fm_mat_evict_cols(&e.x, 0, p);
  const long after = resident_pages();
  CHECK(evict_seen(&e) && count_present(e.pr, 0, e.n_pages) == 0);
  printf("  evicting 16 MB of mapped columns: resident %ld -> %ld KB\n", before * 4, after * 4);
  CHECK(before - after >= e.n_pages * 9 / 10); /* pages come and go elsewhere (valgrind) */
  CHECK(decode_all_wrong(&e.x, NULL) == 0);
  CHECK(evict_seen(&e) && count_present(e.pr, 0, e.n_pages) == e.n_pages);

  /* a column index of three runs (and a lone column): exactly their pages go */
  int64_t idx[501];
  for (int64_t j = 0; j < 200; j++) idx[j] = 1000 + j;       /* stored 1000..1199 */
  for (int64_t j = 0; j < 200; j++) idx[200 + j] = 100 + j;  /* stored 100..299 */
  for (int64_t j = 0; j < 100; j++) idx[400 + j] = 1500 + j; /* stored 1500..1599 */
  idx[500] = 2047;
  fm_mat sub = e.x;
  sub.col_index = idx;
  sub.n_cols = 501;
  fm_mat_evict_cols(&sub, 0, 501);
  CHECK(evict_seen(&e));
  CHECK(count_present(e.pr, 200, 600) == 0 && count_present(e.pr, 2000, 2400) == 0);
  CHECK(count_present(e.pr, 3000, 3200) == 0 && count_present(e.pr, 4094, 4096) == 0);
  CHECK(count_present(e.pr, 0, 200) == 200 && count_present(e.pr, 600, 2000) == 1400);
  CHECK(count_present(e.pr, 2400, 3000) == 600 && count_present(e.pr, 3200, 4094) == 894);
  CHECK(decode_all_wrong(&sub, idx) == 0);
  /* part of a view: logical columns 250..449 are stored 150..299 and 1500..1549 */
  fm_mat_evict_cols(&sub, 250, 200);
  CHECK(evict_seen(&e));
  CHECK(count_present(e.pr, 300, 600) == 0 && count_present(e.pr, 3000, 3100) == 0);
  CHECK(count_present(e.pr, 200, 300) == 100 && count_present(e.pr, 3100, 3200) == 100);
  /* out of range and empty requests do nothing */
  fm_mat_evict_cols(&sub, 500, 2);
  fm_mat_evict_cols(&sub, -1, 2);
  fm_mat_evict_cols(&sub, 3, 0);
  CHECK(evict_seen(&e) && count_present(e.pr, 4094, 4096) == 2);
  evict_close(&e);

  /* columns of 800 bytes, every other one selected: no page stays */
  if (!evict_open(&e, 100, 512)) return;
  e.x.flags = FM_MAT_EVICTABLE;
  int64_t odd[256];
  for (int64_t j = 0; j < 256; j++) odd[j] = 2 * j + 1;
  sub = e.x;
  sub.col_index = odd;
  sub.n_cols = 256;
  CHECK(decode_all_wrong(&sub, odd) == 0);
  fm_mat_evict_cols(&sub, 0, 256);
  CHECK(evict_seen(&e) && count_present(e.pr, 0, e.n_pages) == 0);
  CHECK(decode_all_wrong(&sub, odd) == 0);
  evict_close(&e);
}

/* Drop the file's pages from the page cache (written back first), so that
 * the next pass reads a cold file as a user's first pass over a large one
 * does: its pages arrive while blocks are read, and the kernel's
 * fault-around then maps pages of blocks already dropped. */
static void make_cold(const evict_case *e) {
  if (fdatasync(e->m.fd) != 0 || posix_fadvise(e->m.fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
    printf("  could not drop the page cache: the pass reads a warm file\n");
}

/* The reference product and colvar drop each block once consumed
 * (fm_mat_evict_stream): after a pass over a cold file (small panels, many
 * blocks) at most the page after the matrix stays, and the results are
 * bit-identical to those over the same bytes unflagged. */
static void test_evict_streams(void) {
  const int64_t n = 1024, p = 2048, k = 3;
  evict_case e;
  if (!evict_open(&e, n, p)) return;
  fm_err err = {0};
  double *b = malloc((size_t)(n * k) * sizeof *b);
  double *y0 = malloc((size_t)(p * k) * sizeof *y0), *y1 = malloc((size_t)(p * k) * sizeof *y1);
  double *z0 = malloc((size_t)(n * k) * sizeof *z0), *z1 = malloc((size_t)(n * k) * sizeof *z1);
  uint64_t rs = 5;
  for (int64_t i = 0; i < n * k; i++) b[i] = fm_test_rng_unif(&rs) - 0.5;
  double *mean0 = malloc((size_t)p * sizeof *mean0), *mean1 = malloc((size_t)p * sizeof *mean1);
  test_ctl.panel_bytes = (size_t)n * 8 * 16; /* 16 columns per panel: 128 blocks */
  const fm_op ops[2] = {FM_OP_XTB, FM_OP_XXTB};
  for (int t = 0; t < 2; t++) {
    double *y = t == 0 ? y0 : z0, *yy = t == 0 ? y1 : z1;
    const int64_t ly = t == 0 ? p : n;
    fm_product pr0 = {ops[t], &e.x, NULL, b, n, k, y, ly};
    e.x.flags = 0;
    CHECK_OK(fm_backend_reference(&pr0, &test_ctl, &err), &err);
    e.x.flags = FM_MAT_EVICTABLE;
    fm_mat_evict_cols(&e.x, 0, p);
    make_cold(&e);
    fm_product pr1 = {ops[t], &e.x, NULL, b, n, k, yy, ly};
    CHECK_OK(fm_backend_reference(&pr1, &test_ctl, &err), &err);
    CHECK(memcmp(y, yy, (size_t)(ly * k) * sizeof *y) == 0);
    if (evict_seen(&e)) {
      printf("  reference %s over 16 MB: %ld pages resident after the pass\n",
             t == 0 ? "XTB" : "XXTB", count_present(e.pr, 0, e.n_pages));
      CHECK(count_present(e.pr, 0, e.n_pages) <= 1);
    }
  }
  e.x.flags = 0;
  CHECK_OK(fm_stats_colvar(&e.x, mean0, NULL, NULL, &test_ctl, &err), &err);
  e.x.flags = FM_MAT_EVICTABLE;
  make_cold(&e);
  CHECK_OK(fm_stats_colvar(&e.x, mean1, NULL, NULL, &test_ctl, &err), &err);
  CHECK(memcmp(mean0, mean1, (size_t)p * sizeof *mean0) == 0);
  if (evict_seen(&e)) CHECK(count_present(e.pr, 0, e.n_pages) <= 1);
  test_ctl.panel_bytes = 0;
  free(b);
  free(y0);
  free(y1);
  free(z0);
  free(z1);
  free(mean0);
  free(mean1);
  evict_close(&e);
}
#else
static void test_evict_resident(void) { printf("  eviction tests skipped: Linux only\n"); }
static void test_evict_streams(void) {}
#endif

int main(void) {
  FM_RUN(test_min_stride_and_init);
  FM_RUN(test_f64);
  FM_RUN(test_i32);
  FM_RUN(test_decode_errors);
  FM_RUN(test_decode_errors_huge);
  FM_RUN(test_plan);
  FM_RUN(test_budget);
  FM_RUN(test_missing_is_r_na);
  FM_RUN(test_evict_resident);
  FM_RUN(test_evict_streams);
  FM_TEST_END();
}
