/* Tests for fm_fused.h: the fused backend against the reference path
 * (fm_backend_reference: decode panels + BLAS dgemm) for every op, both
 * codecs, affine variants (none; centre + scale + fill; centre only; centre
 * + scale with missing calls left NaN), column indices (identity, subset,
 * repeats, reversed), k in {1, 2, 3, 7, 8, 10, 40, 63, 64} and n in {1, 3,
 * 4, 5, 31, 32, 33, 257}, with the panel budget forced to one variant per
 * block and at its default, with the kernel level (fm_cpu_cap, fm_cpu.h)
 * capped at portable, at AVX2 and not capped (AVX-512 on a CPU that has
 * it), and with 1, 2, 3 and 7
 * threads (a product uses fewer threads when it has too little work: the
 * small cases run on one).
 *
 * Tolerance: |fused - reference| <= 1e-12 * sum of |terms| of the element
 * (for XXTB the terms of X (X' b): sum_j |X[i, j]| sum_l |X[l, j] b[l, c]|;
 * for sums of squares the squares), and NaN exactly where the reference has
 * NaN. Results of one kernel table are compared bit for bit (memcmp) across
 * thread counts and budgets. Declined products (k = 65, other codecs,
 * non-finite b or affine parameters) must return FM_EUNSUPPORTED and leave y
 * untouched; they are printed as "unsupported", not counted as failures.
 * Also: fm_backend_run picks the backend, cancellation and progress, a
 * file mapping flagged evictable, and the real 1000 Genomes fixture.
 * Oracle: fm_backend_reference, and element() below for the magnitudes.
 * Data generated (seeded), except the fixture. */
#define _POSIX_C_SOURCE 200809L
#include "fm/fm_backend.h"
#include "fm/fm_codec_bed2.h"
#include "fm/fm_codec_dos8.h"
#include "fm/fm_cpu.h"
#include "fm/fm_fused.h"

#include "fm_test.h"
#include "fm_test_files.h"

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

/* The control block of the core calls below: the panel budget and thread
 * count the tests set (0: the defaults). */
static fm_ctl test_ctl;

static uint64_t rng_state = 5005;
static uint64_t rng_next(void) { return fm_test_rng_next(&rng_state); }
static double rng_unif(void) { return fm_test_rng_unif(&rng_state); }

/* ---- test data ---- */

typedef struct gmat {
  fm_codec_id codec;
  uint8_t *bytes;   /* stored columns */
  int64_t n, ps;    /* rows, stored columns */
  int64_t stride;   /* bytes between stored columns */
  int64_t *index;   /* logical -> stored, or NULL */
  int64_t q;        /* logical columns */
  double *center, *scale, *fill; /* length q, or NULL */
} gmat;

/* A stored column's codes: mostly one code, a few others, some columns with
 * missing calls; monomorphic columns now and then. Garbage in the padding. */
static void fill_bed2(uint8_t *col, int64_t n, int64_t stride) {
  for (int64_t t = 0; t < stride; t++) col[t] = (uint8_t)rng_next();
  const double u = rng_unif();
  const unsigned major = u < 0.6 ? 3u : u < 0.8 ? 0u : u < 0.9 ? 2u : 1u;
  const double p_other = u < 0.05 ? 0.0 : rng_unif() * 0.6;
  const double p_miss = rng_unif() < 0.3 ? 0.05 : 0.0;
  for (int64_t i = 0; i < n; i++) {
    unsigned code = major;
    const double v = rng_unif();
    if (v < p_miss)
      code = 1u;
    else if (v < p_miss + p_other)
      code = (unsigned)(rng_next() & 3u);
    const int sh = (int)(2 * (i % 4));
    col[i / 4] = (uint8_t)((col[i / 4] & ~(3u << sh)) | (code << sh));
  }
}

static void fill_dos8(uint8_t *col, int64_t n, int64_t stride) {
  for (int64_t t = 0; t < stride; t++) col[t] = (uint8_t)rng_next();
  const double u = rng_unif();
  const int major = u < 0.6 ? 0 : u < 0.8 ? 254 : u < 0.9 ? (int)(rng_next() % 255) : 255;
  const double p_other = u < 0.05 ? 0.0 : rng_unif() * 0.8;
  const double p_miss = rng_unif() < 0.3 ? 0.05 : 0.0;
  for (int64_t i = 0; i < n; i++) {
    int q = major;
    const double v = rng_unif();
    if (v < p_miss)
      q = 255;
    else if (v < p_miss + p_other)
      q = (int)(rng_next() % 255);
    col[i] = (uint8_t)q;
  }
}

enum { AFF_NONE, AFF_FULL, AFF_CENTER, AFF_NAN_FILL, N_AFF };
static const char *aff_name[N_AFF] = {"none", "centre+scale+fill", "centre", "centre+scale, NaN"};
enum { IX_IDENTITY, IX_SUBSET, IX_REPEATS, IX_REVERSED, N_IX };
static const char *ix_name[N_IX] = {"identity", "subset", "repeats", "reversed"};

static void gmat_free(gmat *g) {
  free(g->bytes);
  free(g->index);
  free(g->center);
  free(g->scale);
  free(g->fill);
  memset(g, 0, sizeof *g);
}

static double *rand_vec(int64_t q, double lo, double hi) {
  double *v = malloc(sizeof(double) * (size_t)(q + 1));
  for (int64_t j = 0; j < q; j++) v[j] = lo + (hi - lo) * rng_unif();
  return v;
}

static void gmat_make(gmat *g, fm_codec_id codec, int64_t n, int64_t ps, int ix, int aff) {
  memset(g, 0, sizeof *g);
  g->codec = codec;
  g->n = n;
  g->ps = ps;
  const int64_t min_stride = codec == FM_CODEC_BED2 ? (n + 3) / 4 : n;
  g->stride = min_stride + (int64_t)(rng_next() % 3);
  g->bytes = malloc((size_t)(g->stride * ps));
  for (int64_t s = 0; s < ps; s++) {
    if (codec == FM_CODEC_BED2)
      fill_bed2(g->bytes + s * g->stride, n, g->stride);
    else
      fill_dos8(g->bytes + s * g->stride, n, g->stride);
  }
  switch (ix) {
  case IX_SUBSET:
    g->q = (ps + 1) / 2;
    g->index = malloc(sizeof(int64_t) * (size_t)g->q);
    for (int64_t j = 0; j < g->q; j++) g->index[j] = 2 * j;
    break;
  case IX_REPEATS:
    g->q = 2 * ps;
    g->index = malloc(sizeof(int64_t) * (size_t)g->q);
    for (int64_t j = 0; j < g->q; j++) g->index[j] = (j / 2 + (j % 2) * (ps / 2)) % ps;
    break;
  case IX_REVERSED:
    g->q = ps;
    g->index = malloc(sizeof(int64_t) * (size_t)g->q);
    for (int64_t j = 0; j < g->q; j++) g->index[j] = ps - 1 - j;
    break;
  default: g->q = ps; break;
  }
  if (aff == AFF_FULL || aff == AFF_CENTER || aff == AFF_NAN_FILL) g->center = rand_vec(g->q, 0.0, 2.0);
  if (aff == AFF_FULL || aff == AFF_NAN_FILL) g->scale = rand_vec(g->q, 0.5, 3.0);
  if (aff == AFF_FULL) g->fill = rand_vec(g->q, -0.5, 0.5);
  if (aff == AFF_FULL && g->q > 1) {
    g->center[0] = 2.0; /* a centre on a stored value: exact zeros in the table */
    g->fill[1] = 0.0;
  }
}

static void gmat_view(const gmat *g, fm_mat *x, fm_affine *aff) {
  fm_err err;
  CHECK_OK(fm_mat_init(x, g->codec, g->bytes, g->n, g->ps, g->stride, &err), &err);
  x->n_cols = g->q;
  x->col_index = g->index;
  *aff = (fm_affine){.center = g->center, .scale = g->scale, .fill = g->fill};
}

/* X[i, j] after the transform, from the stored bits (not the codec). */
static double element(const gmat *g, int64_t i, int64_t j) {
  const int64_t s = g->index ? g->index[j] : j;
  const uint8_t *col = g->bytes + s * g->stride;
  double v;
  if (g->codec == FM_CODEC_BED2) {
    const int code = (col[i / 4] >> (2 * (i % 4))) & 3;
    v = code == 0 ? 2.0 : code == 2 ? 1.0 : code == 3 ? 0.0 : NAN;
  } else {
    v = col[i] == 255 ? NAN : col[i] / 127.0;
  }
  if (isnan(v)) return g->fill ? g->fill[j] : NAN;
  return (v - (g->center ? g->center[j] : 0.0)) * (g->scale ? g->scale[j] : 1.0);
}

/* ---- products ---- */

static const char *op_name(fm_op op) {
  return op == FM_OP_XB ? "XB" : op == FM_OP_XTB ? "XTB" : op == FM_OP_XXTB ? "XXTB" : "COLSUMS";
}

static int64_t b_rows_of(fm_op op, int64_t n, int64_t q) {
  return op == FM_OP_XB ? q : op == FM_OP_COLSUMS ? 0 : n;
}
static int64_t y_rows_of(fm_op op, int64_t n, int64_t q) {
  return op == FM_OP_XB || op == FM_OP_XXTB ? n : q;
}

/* sum of |terms| of each element of y (col-major, y_rows x k). */
static double *magnitudes(const gmat *g, fm_op op, const double *b, int64_t ldb, int64_t k) {
  const int64_t n = g->n, q = g->q, yr = y_rows_of(op, n, q);
  double *mag = calloc((size_t)(yr * k + 1), sizeof(double));
  double *ax = malloc(sizeof(double) * (size_t)(n * q + 1)); /* |X| col-major */
  for (int64_t j = 0; j < q; j++)
    for (int64_t i = 0; i < n; i++) {
      const double v = element(g, i, j);
      ax[i + j * n] = isnan(v) ? 0.0 : fabs(v);
    }
  if (op == FM_OP_COLSUMS) {
    for (int64_t j = 0; j < q; j++)
      for (int64_t i = 0; i < n; i++) {
        mag[j] += ax[i + j * n];
        mag[j + q] += ax[i + j * n] * ax[i + j * n];
      }
  } else if (op == FM_OP_XB) {
    for (int64_t c = 0; c < k; c++)
      for (int64_t j = 0; j < q; j++)
        for (int64_t i = 0; i < n; i++) mag[i + c * n] += ax[i + j * n] * fabs(b[j + c * ldb]);
  } else {
    double *zm = calloc((size_t)(q * k + 1), sizeof(double)); /* |X'| |b| */
    for (int64_t c = 0; c < k; c++)
      for (int64_t j = 0; j < q; j++)
        for (int64_t i = 0; i < n; i++) zm[j + c * q] += ax[i + j * n] * fabs(b[i + c * ldb]);
    if (op == FM_OP_XTB) {
      memcpy(mag, zm, sizeof(double) * (size_t)(q * k));
    } else {
      for (int64_t c = 0; c < k; c++)
        for (int64_t j = 0; j < q; j++)
          for (int64_t i = 0; i < n; i++) mag[i + c * n] += ax[i + j * n] * zm[j + c * q];
    }
    free(zm);
  }
  free(ax);
  return mag;
}

typedef struct pcase {
  fm_op op;
  int64_t k, ldb, ldy;
  double *b;
  double *ref, *mag; /* reference y and magnitudes */
} pcase;

static void pcase_make(pcase *pc, const gmat *g, fm_op op, int64_t k) {
  memset(pc, 0, sizeof *pc);
  pc->op = op;
  pc->k = op == FM_OP_COLSUMS ? 3 : k; /* sums, sums of squares, missing counts */
  const int64_t br = b_rows_of(op, g->n, g->q), yr = y_rows_of(op, g->n, g->q);
  pc->ldb = br + 2;
  pc->ldy = yr + 1;
  if (br > 0) {
    pc->b = malloc(sizeof(double) * (size_t)(pc->ldb * pc->k));
    for (int64_t t = 0; t < pc->ldb * pc->k; t++) pc->b[t] = rng_unif() * 2.0 - 1.0;
    if (pc->k > 1)
      for (int64_t i = 0; i < br; i++) pc->b[i + pc->ldb] = 0.0; /* a zero column: 0 * NaN */
  }
  fm_mat x;
  fm_affine aff;
  gmat_view(g, &x, &aff);
  pc->ref = malloc(sizeof(double) * (size_t)(pc->ldy * pc->k));
  fm_product p = {op, &x, &aff, pc->b, pc->ldb, pc->k, pc->ref, pc->ldy};
  fm_err err;
  CHECK_OK(fm_backend_reference(&p, &test_ctl, &err), &err);
  pc->mag = magnitudes(g, op, pc->b, pc->ldb, pc->k);
}

static void pcase_free(pcase *pc) {
  free(pc->b);
  free(pc->ref);
  free(pc->mag);
}

/* Run the fused backend; y (ldy x k) gets the result. */
static fm_status run_fused(const gmat *g, const pcase *pc, double *y) {
  fm_mat x;
  fm_affine aff;
  gmat_view(g, &x, &aff);
  fm_product p = {pc->op, &x, &aff, pc->b, pc->ldb, pc->k, y, pc->ldy};
  fm_err err;
  fm_err_clear(&err);
  return fm_fused_backend(NULL, &p, &test_ctl, &err);
}

/* Compare y with the reference; returns the number of bad elements. */
static int64_t compare(const gmat *g, const pcase *pc, const double *y, const char *what) {
  const int64_t yr = y_rows_of(pc->op, g->n, g->q);
  int64_t bad = 0;
  for (int64_t c = 0; c < pc->k; c++)
    for (int64_t r = 0; r < yr; r++) {
      const double got = y[r + c * pc->ldy], want = pc->ref[r + c * pc->ldy];
      const int ok = isnan(want) || isnan(got)
                         ? isnan(want) && isnan(got)
                         : fabs(got - want) <= 1e-12 * pc->mag[r + c * yr] + 1e-300;
      if (!ok && bad++ < 3)
        fprintf(stderr, "  %s: y[%lld, %lld] = %.17g, reference %.17g (|terms| %.3g)\n", what,
                (long long)r, (long long)c, got, want, pc->mag[r + c * yr]);
    }
  return bad;
}

static const int64_t k_list[] = {1, 2, 3, 7, 8, 10, 40, 63, 64};
static const int64_t n_list[] = {1, 3, 4, 5, 31, 32, 33, 257};
static const int threads_list[] = {1, 2, 3, 7};
#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Run one case under both kernel tables, both budgets and the given thread
 * counts: each against the reference, and bit-identical within a table. */
static void check_case(const gmat *g, const pcase *pc, const int *threads, int n_threads,
                       const char *label) {
  const size_t ybytes = sizeof(double) * (size_t)(pc->ldy * pc->k);
  double *first = malloc(ybytes), *y = malloc(ybytes);
  for (int cap = FM_ISA_PORTABLE; cap <= FM_ISA_AVX512; cap++) {
    fm_cpu_cap((fm_isa)cap);
    if ((int)fm_cpu_isa() < cap) continue; /* the CPU stops below: as cap - 1 */
    const char *isa = fm_cpu_isa_name(fm_cpu_isa());
    int have_first = 0;
    for (int bud = 0; bud < 2; bud++) {
      test_ctl.panel_bytes = bud == 0 ? 8 : 0; /* one variant per block, default */
      for (int t = 0; t < n_threads; t++) {
        test_ctl.threads = threads[t];
        for (size_t e = 0; e < ybytes / sizeof(double); e++) y[e] = -7.25;
        const fm_status st = run_fused(g, pc, y);
        if (st != FM_OK) {
          fprintf(stderr, "%s [%s, budget %s, %d threads]: status %s\n", label, isa,
                  bud ? "default" : "tiny", threads[t], fm_status_name(st));
          CHECK(st == FM_OK);
          continue;
        }
        char what[300];
        snprintf(what, sizeof what, "%s [%s, budget %s, %d threads]", label, isa,
                 bud ? "default" : "tiny", threads[t]);
        CHECK(compare(g, pc, y, what) == 0);
        if (!have_first) {
          memcpy(first, y, ybytes);
          have_first = 1;
        } else if (memcmp(first, y, ybytes) != 0) {
          fprintf(stderr, "  %s: not bit-identical to the first run\n", what);
          CHECK(0);
        }
      }
    }
  }
  fm_cpu_cap(FM_ISA_AVX512);
  test_ctl.panel_bytes = 0;
  test_ctl.threads = 0;
  free(first);
  free(y);
}

/* Every op x codec x affine x column index x k, n cycling through n_list,
 * the thread count cycling through threads_list. */
static void test_grid(void) {
  static const fm_op ops[] = {FM_OP_XB, FM_OP_XTB, FM_OP_XXTB, FM_OP_COLSUMS};
  int cycle = 0;
  for (int ci = 0; ci < 2; ci++)
    for (int oi = 0; oi < 4; oi++)
      for (int aff = 0; aff < N_AFF; aff++)
        for (int ix = 0; ix < N_IX; ix++)
          for (int ki = 0; ki < LEN(k_list); ki++) {
            if (ops[oi] == FM_OP_COLSUMS && ki > 0) continue; /* k is 3 */
            const int64_t n = n_list[cycle % LEN(n_list)];
            const int th = threads_list[cycle % LEN(threads_list)];
            cycle++;
            gmat g;
            gmat_make(&g, ci ? FM_CODEC_DOS8 : FM_CODEC_BED2, n, 7 + (int64_t)(rng_next() % 12),
                      ix, aff);
            pcase pc;
            pcase_make(&pc, &g, ops[oi], k_list[ki]);
            char label[200];
            snprintf(label, sizeof label, "%s %s n=%lld q=%lld k=%lld aff=%s index=%s",
                     ci ? "dos8" : "bed2", op_name(ops[oi]), (long long)n, (long long)g.q,
                     (long long)pc.k, aff_name[aff], ix_name[ix]);
            check_case(&g, &pc, &th, 1, label);
            pcase_free(&pc);
            gmat_free(&g);
          }
}

/* Every n of n_list with every op and codec, k = 3 and 40, all affine
 * variants, identity index (the grid above cycles n). */
static void test_all_n(void) {
  static const fm_op ops[] = {FM_OP_XB, FM_OP_XTB, FM_OP_XXTB, FM_OP_COLSUMS};
  for (int ci = 0; ci < 2; ci++)
    for (int ni = 0; ni < LEN(n_list); ni++)
      for (int oi = 0; oi < 4; oi++)
        for (int aff = 0; aff < N_AFF; aff++) {
          gmat g;
          gmat_make(&g, ci ? FM_CODEC_DOS8 : FM_CODEC_BED2, n_list[ni], 9, IX_IDENTITY, aff);
          for (int kk = 0; kk < 2; kk++) {
            pcase pc;
            pcase_make(&pc, &g, ops[oi], kk ? 40 : 3);
            char label[200];
            snprintf(label, sizeof label, "%s %s n=%lld k=%lld aff=%s", ci ? "dos8" : "bed2",
                     op_name(ops[oi]), (long long)n_list[ni], (long long)pc.k, aff_name[aff]);
            const int th = 1 + (ni % 2);
            check_case(&g, &pc, &th, 1, label);
            pcase_free(&pc);
          }
          gmat_free(&g);
        }
}

/* Big enough that every thread count gets work: 1, 2, 3 and 7 threads,
 * each budget, each table, bit-identical. */
static void test_threads(void) {
  static const fm_op ops[] = {FM_OP_XB, FM_OP_XTB, FM_OP_XXTB, FM_OP_COLSUMS};
  static const int64_t ks[] = {1, 10, 40, 64};
  for (int ci = 0; ci < 2; ci++)
    for (int oi = 0; oi < 4; oi++)
      for (int ki = 0; ki < 4; ki++) {
        if (ops[oi] == FM_OP_COLSUMS && ki > 0) continue;
        const int aff = (ki + oi) % N_AFF, ix = (ki + ci) % N_IX;
        gmat g;
        gmat_make(&g, ci ? FM_CODEC_DOS8 : FM_CODEC_BED2, 257 + 100 * ci, 200, ix, aff);
        pcase pc;
        pcase_make(&pc, &g, ops[oi], ks[ki]);
        char label[200];
        snprintf(label, sizeof label, "threads: %s %s n=%lld q=%lld k=%lld aff=%s index=%s",
                 ci ? "dos8" : "bed2", op_name(ops[oi]), (long long)g.n, (long long)g.q,
                 (long long)pc.k, aff_name[aff], ix_name[ix]);
        check_case(&g, &pc, threads_list, LEN(threads_list), label);
        pcase_free(&pc);
        gmat_free(&g);
      }
}

/* Columns longer than one row segment of phase A (about 256 KB of
 * transposed b: 512 rows at k = 64), so partial gathers carry over. */
static void test_segments(void) {
  static const fm_op ops[] = {FM_OP_XB, FM_OP_XTB, FM_OP_XXTB};
  static const int64_t ks[] = {40, 64};
  static const int th[] = {1, 3};
  for (int ci = 0; ci < 2; ci++)
    for (int oi = 0; oi < 3; oi++)
      for (int ki = 0; ki < 2; ki++) {
        gmat g;
        gmat_make(&g, ci ? FM_CODEC_DOS8 : FM_CODEC_BED2, 1500 + 37 * ci, 40, IX_REVERSED,
                  ki || ops[oi] == FM_OP_XXTB ? AFF_FULL : AFF_NAN_FILL);
        pcase pc;
        pcase_make(&pc, &g, ops[oi], ks[ki]);
        char label[200];
        snprintf(label, sizeof label, "segments: %s %s n=%lld k=%lld", ci ? "dos8" : "bed2",
                 op_name(ops[oi]), (long long)g.n, (long long)pc.k);
        check_case(&g, &pc, th, 2, label);
        pcase_free(&pc);
        gmat_free(&g);
      }
}

/* A column of b gives the same sums in any product: X'b for 64 columns
 * (several row segments, chunks with one set of registers) equals X'b_c
 * for each column alone (one segment, two sets), bit for bit, at every
 * kernel level (what GWAS of several phenotypes in one pass relies on). */
static void test_columns_alone(void) {
  static const fm_op ops[] = {FM_OP_XTB, FM_OP_XXTB};
  for (int ci = 0; ci < 2; ci++)
    for (int oi = 0; oi < 2; oi++) {
      gmat g;
      gmat_make(&g, ci ? FM_CODEC_DOS8 : FM_CODEC_BED2, 9000 + 37 * ci, 12, IX_SUBSET, AFF_FULL);
      pcase pc;
      pcase_make(&pc, &g, ops[oi], 64);
      const int64_t yr = y_rows_of(pc.op, g.n, g.q);
      double *all = malloc(sizeof(double) * (size_t)(pc.ldy * pc.k));
      double *one = malloc(sizeof(double) * (size_t)pc.ldy);
      for (int cap = FM_ISA_PORTABLE; cap <= FM_ISA_AVX512; cap++) {
        fm_cpu_cap((fm_isa)cap);
        if ((int)fm_cpu_isa() < cap) continue;
        CHECK(run_fused(&g, &pc, all) == FM_OK);
        for (int64_t c = 0; c < pc.k; c += 9) {
          pcase alone = pc;
          alone.b = pc.b + c * pc.ldb;
          alone.k = 1;
          CHECK(run_fused(&g, &alone, one) == FM_OK);
          if (memcmp(one, all + c * pc.ldy, sizeof(double) * (size_t)yr) != 0) {
            fprintf(stderr, "  %s %s column %lld [%s]: alone differs from among 64\n",
                    ci ? "dos8" : "bed2", op_name(pc.op), (long long)c,
                    fm_cpu_isa_name(fm_cpu_isa()));
            CHECK(0);
          }
        }
      }
      fm_cpu_cap(FM_ISA_AVX512);
      free(all);
      free(one);
      pcase_free(&pc);
      gmat_free(&g);
    }
}

/* A product the backend must decline: FM_EUNSUPPORTED, y untouched. */
static void expect_declined(const fm_product *p, const char *why) {
  const int64_t yr = p->op == FM_OP_XB || p->op == FM_OP_XXTB ? p->x->n_rows : p->x->n_cols;
  const size_t ne = (size_t)(p->ldy * (p->k < 1 ? 1 : p->k));
  double *before = malloc(sizeof(double) * ne);
  for (size_t e = 0; e < ne; e++) p->y[e] = before[e] = 0.5 + (double)e;
  fm_err err;
  fm_err_clear(&err);
  const fm_status st = fm_fused_backend(NULL, p, &test_ctl, &err);
  CHECK(st == FM_EUNSUPPORTED);
  CHECK(memcmp(before, p->y, sizeof(double) * ne) == 0);
  printf("unsupported (declined as it should): %s %s, %lld x %lld\n", op_name(p->op), why,
         (long long)p->x->n_rows, (long long)yr);
  free(before);
}

static void test_declines(void) {
  gmat g;
  gmat_make(&g, FM_CODEC_BED2, 33, 6, IX_IDENTITY, AFF_FULL);
  fm_mat x;
  fm_affine aff;
  gmat_view(&g, &x, &aff);
  const int64_t n = g.n, q = g.q;
  double *b = malloc(sizeof(double) * (size_t)(n * 66));
  for (int64_t t = 0; t < n * 66; t++) b[t] = rng_unif();
  double *y = malloc(sizeof(double) * (size_t)(n * 66));
  fm_product p = {FM_OP_XTB, &x, &aff, b, n, 65, y, q};
  expect_declined(&p, "k = 65");
  p.k = 10;
  b[5] = NAN;
  expect_declined(&p, "b with a NaN");
  b[5] = INFINITY;
  expect_declined(&p, "b with an Inf");
  b[5] = 0.25;
  p.op = FM_OP_XB;
  p.ldb = q;
  p.ldy = n;
  b[q + 2] = -INFINITY;
  expect_declined(&p, "b with -Inf");
  b[q + 2] = 1.0;
  g.center[2] = NAN;
  expect_declined(&p, "a NaN centre");
  g.center[2] = 1.0;
  g.scale[3] = INFINITY;
  expect_declined(&p, "an infinite scale");
  g.scale[3] = 1.0;
  g.fill[4] = NAN;
  expect_declined(&p, "a NaN fill");
  g.fill[4] = 0.0;
  b[0] = 1e300;
  expect_declined(&p, "b near overflow");
  b[0] = 1.0;
  int64_t bad_index[6] = {0, 1, -1, 2, 3, 4};
  x.col_index = bad_index;
  expect_declined(&p, "a negative column index");
  x.col_index = NULL;
  /* other codecs */
  double *f64 = calloc((size_t)(n * q), sizeof(double));
  fm_mat xf;
  fm_err err;
  CHECK_OK(fm_mat_init(&xf, FM_CODEC_F64, f64, n, q, n * 8, &err), &err);
  fm_product pf = {FM_OP_XB, &xf, NULL, b, q, 3, y, n};
  expect_declined(&pf, "codec f64");
  int32_t *i32 = calloc((size_t)(n * q), sizeof(int32_t));
  CHECK_OK(fm_mat_init(&xf, FM_CODEC_I32, i32, n, q, n * 4, &err), &err);
  expect_declined(&pf, "codec i32");
  /* and then the reference path computes them: fm_backend_run says which */
  CHECK_OK(fm_backend_register(FM_FUSED_BACKEND_NAME, fm_fused_backend, NULL, &err), &err);
  const char *used = NULL;
  CHECK_OK(fm_backend_run(&pf, &test_ctl, &used, &err), &err);
  CHECK(used && strcmp(used, "reference") == 0);
  p.k = 65;
  p.op = FM_OP_XTB;
  p.ldb = n;
  p.ldy = q;
  CHECK_OK(fm_backend_run(&p, &test_ctl, &used, &err), &err);
  CHECK(used && strcmp(used, "reference") == 0);
  p.k = 64;
  CHECK_OK(fm_backend_run(&p, &test_ctl, &used, &err), &err);
  CHECK(used && strcmp(used, FM_FUSED_BACKEND_NAME) == 0);
  CHECK(fm_backend_unregister(FM_FUSED_BACKEND_NAME));
  free(f64);
  free(i32);
  free(b);
  free(y);
  gmat_free(&g);
}

/* Empty matrices: y is zeroed like the reference does. */
static void test_empty(void) {
  uint8_t byte = 0;
  fm_mat x;
  fm_err err;
  CHECK_OK(fm_mat_init(&x, FM_CODEC_BED2, &byte, 0, 3, 1, &err), &err);
  double b[8] = {0}, y[8];
  for (int t = 0; t < 8; t++) y[t] = 9.0;
  fm_product p = {FM_OP_XTB, &x, NULL, b, 1, 2, y, 3};
  CHECK_OK(fm_fused_backend(NULL, &p, &test_ctl, &err), &err);
  for (int t = 0; t < 6; t++) CHECK(y[t] == 0.0);
  CHECK_OK(fm_mat_init(&x, FM_CODEC_DOS8, &byte, 4, 0, 4, &err), &err);
  fm_product p2 = {FM_OP_XB, &x, NULL, b, 1, 2, y, 4};
  for (int t = 0; t < 8; t++) y[t] = 9.0;
  CHECK_OK(fm_fused_backend(NULL, &p2, &test_ctl, &err), &err);
  for (int t = 0; t < 8; t++) CHECK(y[t] == 0.0);
}

static int cancel_after;
static int progress_calls;
static double progress_last, progress_total;
static int cancel_cb(void *ud) {
  (void)ud;
  return cancel_after-- <= 0;
}
static void progress_cb(void *ud, double done, double total) {
  (void)ud;
  progress_calls++;
  progress_last = done;
  progress_total = total;
}

static void test_cancel_progress(void) {
  gmat g;
  gmat_make(&g, FM_CODEC_BED2, 64, 40, IX_IDENTITY, AFF_NONE);
  pcase pc;
  pcase_make(&pc, &g, FM_OP_XXTB, 4);
  fm_mat x;
  fm_affine aff;
  gmat_view(&g, &x, &aff);
  double *y = malloc(sizeof(double) * (size_t)(pc.ldy * pc.k));
  fm_product p = {pc.op, &x, &aff, pc.b, pc.ldb, pc.k, y, pc.ldy};
  fm_ctl ctl = {.cancel = cancel_cb, .progress = progress_cb, .panel_bytes = 8}; /* 40 blocks */
  fm_err err;
  cancel_after = 1000;
  progress_calls = 0;
  CHECK_OK(fm_fused_backend(NULL, &p, &ctl, &err), &err);
  CHECK(progress_calls == 40 && progress_last == 40.0 && progress_total == 40.0);
  CHECK(compare(&g, &pc, y, "with progress") == 0);
  cancel_after = 5;
  fm_err_clear(&err);
  CHECK(fm_fused_backend(NULL, &p, &ctl, &err) == FM_ECANCELLED);
  CHECK(err.code == FM_ECANCELLED && strstr(err.msg, "cancel") != NULL);
  free(y);
  pcase_free(&pc);
  gmat_free(&g);
}

/* A read-only file mapping flagged evictable: pages dropped after each
 * block are read again, results unchanged. */
static void test_evictable_mapping(void) {
  char dir[256], path[300];
  if (!fm_test_tmpdir(dir, sizeof dir, "fm_fused_")) {
    CHECK(0);
    return;
  }
  gmat g;
  gmat_make(&g, FM_CODEC_BED2, 2000, 300, IX_IDENTITY, AFF_FULL);
  snprintf(path, sizeof path, "%s/x.bed2", dir);
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(g.bytes, 1, (size_t)(g.stride * g.ps), f) == (size_t)(g.stride * g.ps));
  if (f) fclose(f);
  const int fd = open(path, O_RDONLY);
  const size_t len = (size_t)(g.stride * g.ps);
  void *map = fd >= 0 ? mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
  CHECK(map != MAP_FAILED);
  if (map != MAP_FAILED) {
    static const fm_op ops[] = {FM_OP_XB, FM_OP_XTB, FM_OP_XXTB, FM_OP_COLSUMS};
    for (int oi = 0; oi < 4; oi++) {
      pcase pc;
      pcase_make(&pc, &g, ops[oi], 5);
      fm_mat x;
      fm_affine aff;
      gmat_view(&g, &x, &aff);
      x.data = map;
      x.flags = FM_MAT_EVICTABLE;
      double *y = malloc(sizeof(double) * (size_t)(pc.ldy * pc.k));
      fm_product p = {pc.op, &x, &aff, pc.b, pc.ldb, pc.k, y, pc.ldy};
      fm_err err;
      test_ctl.panel_bytes = 16000 * 8; /* 8 variants a block */
      CHECK_OK(fm_fused_backend(NULL, &p, &test_ctl, &err), &err);
      test_ctl.panel_bytes = 0;
      CHECK(compare(&g, &pc, y, "evictable mapping") == 0);
      free(y);
      pcase_free(&pc);
    }
    munmap(map, len);
  }
  if (fd >= 0) close(fd);
  gmat_free(&g);
  fm_test_rmtree(dir);
}

/* The 1000 Genomes subset (1126 samples), its first 1000 variants,
 * standardised with mean imputation like the PCA does, and raw. */
static void test_fixture(void) {
  static char dir[1024], path[1100];
  if (!fm_test_fixture(dir, sizeof dir, "genotypes/1kg_phase3_subset", "1kg_bi.bed")) {
    printf("skipped test_fixture: %s/1kg_bi.bed is not readable\n", dir);
    return;
  }
  snprintf(path, sizeof path, "%s/1kg_bi.bed", dir);
  size_t nbytes = 0;
  uint8_t *bed = fm_test_read_file(path, &nbytes);
  CHECK(bed != NULL);
  if (!bed) return;
  const int64_t n = 1126, cb = (n + 3) / 4, q = 1000;
  CHECK((int64_t)nbytes >= 3 + q * cb);
  gmat g;
  memset(&g, 0, sizeof g);
  g.codec = FM_CODEC_BED2;
  g.bytes = malloc((size_t)(q * cb));
  memcpy(g.bytes, bed + 3, (size_t)(q * cb));
  free(bed);
  g.n = n;
  g.ps = g.q = q;
  g.stride = cb;
  for (int standardise = 0; standardise < 2; standardise++) {
    if (standardise) {
      g.center = malloc(sizeof(double) * (size_t)q);
      g.scale = malloc(sizeof(double) * (size_t)q);
      g.fill = calloc((size_t)q, sizeof(double));
      int64_t counts[4];
      for (int64_t j = 0; j < q; j++) {
        fm_codec_bed2_col_counts(g.bytes, n, cb, &j, 1, counts);
        const double obs = (double)(counts[0] + counts[1] + counts[2]);
        const double mean = obs > 0 ? (counts[1] + 2.0 * counts[2]) / obs : 0.0;
        const double p2 = mean / 2.0, sd = sqrt(2.0 * p2 * (1.0 - p2));
        g.center[j] = mean;
        g.scale[j] = sd > 0 ? 1.0 / sd : 0.0;
      }
    }
    static const fm_op ops[] = {FM_OP_XB, FM_OP_XTB, FM_OP_XXTB, FM_OP_COLSUMS};
    for (int oi = 0; oi < 4; oi++) {
      pcase pc;
      pcase_make(&pc, &g, ops[oi], 10);
      char label[100];
      snprintf(label, sizeof label, "1kg %s %s", op_name(ops[oi]), standardise ? "standardised" : "raw");
      const int th[] = {1, 2};
      check_case(&g, &pc, th, 2, label);
      pcase_free(&pc);
    }
  }
  gmat_free(&g);
}

int main(void) {
  printf("kernel levels compared: portable to %s\n", fm_cpu_isa_name(fm_cpu_isa()));
  FM_RUN(test_declines);
  FM_RUN(test_empty);
  FM_RUN(test_grid);
  FM_RUN(test_all_n);
  FM_RUN(test_threads);
  FM_RUN(test_segments);
  FM_RUN(test_columns_alone);
  FM_RUN(test_cancel_progress);
  FM_RUN(test_evictable_mapping);
  FM_RUN(test_fixture);
  FM_TEST_END();
}
