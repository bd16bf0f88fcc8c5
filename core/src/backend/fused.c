/* fused.c: the fused genotype backend (fm_fused.h): which products it takes,
 * the choice of kernels (fm_cpu_isa), and the loop over blocks of variants with
 * its threads.
 *
 * Each block of variants runs in up to two phases (fused_impl.h explains the
 * sparse lists):
 *   A, threads over variants: per variant its table, code counts, base code
 *      and deltas; XB keeps b[j, :]; COLSUMS writes y[j, :] from the counts
 *      alone; XTB and XXTB then take row segments of transposed b in turn
 *      (one stays in L2 while every variant of the thread is listed on its
 *      rows and gathered from it) and finish y[j, :] or z[j, :].
 *   B, threads over row ranges (XB, XXTB): in tiles of rows that stay in L1,
 *      each variant's rows of the tile are listed and scattered:
 *      ys[i, :] += d * (b or z)[j, :], variants in order.
 * and at the end y[i, :] = r + ys[i, :], r = sum_j lut_j[base] (b or z)[j, :]
 * accumulated in variant order by the calling thread. Lists live in small
 * per-thread buffers (rows of a segment or a tile), so the genotype bytes of
 * a block (sized to stay in cache) are the only data shared between phases.
 * Each output element is computed by one thread in an order fixed by the data
 * alone (variants in order; rows in order, split in fixed segments), so
 * results are bit-identical for every thread count and block size, for one
 * kernel table. */
#define _POSIX_C_SOURCE 200809L /* fm_fault.h */
#include "fm/fm_fused.h"

#include "fm/fm_codec_bed2.h"
#include "fm/fm_codec_dos8.h"
#include "fm/fm_cpu.h"
#include "fm/fm_fault.h"
#include "fused_impl.h"
#include "fused_pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Stored bytes per block of variants (they are read again in phase B). */
#define FUSED_BLOCK_BYTES ((int64_t)1 << 20)
/* Most variants per block (bounds the tables kept per block). */
#define FUSED_VMAX ((int64_t)1024)
/* Bytes of transposed b per row segment of phase A (kept in L2 while the
 * block's variants are gathered from it); the segment's rows are a multiple
 * of 32 between FUSED_SEG_MIN and FUSED_SEG_MAX. The sums do not depend on
 * them: a variant's entries alternate between its two accumulator sets
 * across segments (phase_a). */
#define FUSED_SEG_BYTES ((int64_t)256 << 10)
#define FUSED_SEG_MIN ((int64_t)256)
#define FUSED_SEG_MAX ((int64_t)8192)
/* Bytes of the row tile of phase B (kept in L1), and its rows at least. */
#define FUSED_TILE_BYTES ((int64_t)32 << 10)
#define FUSED_TILE_MIN ((int64_t)64)
/* Genotypes per thread below which a product uses fewer threads. */
#define FUSED_MIN_WORK ((int64_t)8192)
/* Largest partial sum the kernels may reach (the overflow guard). */
#define FUSED_SUM_MAX 1e300

/* The kernels of the level fm_cpu_isa() names (fm_cpu.h). */
static const fused_kernels *kernels(void) {
#if FUSED_HAVE_X86
  switch (fm_cpu_isa()) {
  case FM_ISA_AVX512: return &fused_kernels_avx512;
  case FM_ISA_AVX2: return &fused_kernels_avx2;
  case FM_ISA_PORTABLE: break;
  }
#endif
  return &fused_kernels_portable;
}

typedef struct fused_job {
  const fm_product *p;
  const fused_kernels *kern;
  fused_tables tab;
  int64_t n, q, k, kp;
  unsigned n_codes;      /* 4 (BED2) or 256 (DOS8) */
  int n_threads;
  int64_t vmax;          /* variants per block */
  int64_t tile;          /* rows per tile in phase B, a multiple of 32 */
  int64_t c0, nc;        /* the current block: logical columns [c0, c0 + nc) */
  const double *bt;      /* (n, kp) row-major: b transposed (XTB, XXTB) */
  const double *bsum;    /* (kp): column sums of b (XTB, XXTB) */
  unsigned *base;        /* (vmax): base code per variant of the block */
  double *basev;         /* (vmax): lut[base] */
  double *dtab;          /* (vmax, n_codes): lut - lut[base] */
  double *src;           /* (vmax, kp): b[j, :] (XB), z[j, :] (XXTB), y[j, :] (XTB) */
  double *ys;            /* (n, kp): sums over the lists (XB, XXTB) */
  const double *r;       /* (kp): the base term (XB, XXTB) */
  int64_t seg;           /* rows per segment in phase A, a multiple of 32 */
  uint32_t *ent;         /* (n_threads, list_cap + 4): each thread's list */
  int64_t list_cap;      /* max(seg, tile) */
  double *acc;           /* (vmax, 2 * kp): gather accumulators per variant */
  unsigned char *odd;    /* (vmax): the variant's entries so far are odd in number */
} fused_job;

/* The byte table of BED2 lists (fused_tables in fused_impl.h). */
static void tables_init(fused_tables *tab) {
  for (unsigned w = 0; w < 256; w++) {
    unsigned c = 0;
    for (unsigned f = 0; f < 4; f++) tab->bed2_entry[w][f] = 0;
    for (unsigned f = 0; f < 4; f++) {
      const unsigned code = (w >> (2 * f)) & 3u;
      if (code != 0) tab->bed2_entry[w][c++] = (f << FUSED_ENT_SHIFT) | code;
    }
    tab->bed2_count[w] = (uint8_t)c;
  }
}

/* The most frequent code whose value is not NaN (the lowest code on ties). */
static unsigned pick_base(const double *lut, const int64_t *count, unsigned n_codes) {
  unsigned base = n_codes;
  for (unsigned c = 0; c < n_codes; c++)
    if (!isnan(lut[c]) && (base == n_codes || count[c] > count[base])) base = c;
  return base;
}

/* Sums of values and squares from per-code counts, codes in order. */
static void colsums_from_counts(const double *lut, const int64_t *count, unsigned n_codes,
                                unsigned missing_code, double *sum, double *sumsq, double *n_miss) {
  if (n_miss) *n_miss = (double)count[missing_code];
  double s = 0.0, ss = 0.0;
  for (unsigned c = 0; c < n_codes; c++) {
    if (count[c] == 0) continue; /* 0 * NaN would be NaN */
    s += (double)count[c] * lut[c];
    ss += (double)count[c] * (lut[c] * lut[c]);
  }
  *sum = s;
  *sumsq = ss;
}

static const uint8_t *column(const fused_job *job, int64_t j) {
  const fm_mat *x = job->p->x;
  const int64_t s = x->col_index ? x->col_index[j] : j;
  return (const uint8_t *)x->data + s * x->col_stride;
}

/* List rows [r0, r1) of variant jl of the block into ent. */
static int64_t list_rows(const fused_job *job, int64_t jl, int64_t r0, int64_t r1, uint32_t *ent) {
  const uint8_t *col = column(job, job->c0 + jl);
  return (job->n_codes == 4 ? job->kern->bed2_list : job->kern->dos8_list)(
      col, r0, r1, job->base[jl], &job->tab, ent);
}

/* Phase A for variant jl of the block, but the gathers. */
static void prepare_variant(fused_job *job, int64_t jl) {
  const fm_product *p = job->p;
  const int64_t n = job->n, kp = job->kp, j = job->c0 + jl;
  const uint8_t *col = column(job, j);
  double c, sc, f;
  fm_affine_at(p->aff, j, &c, &sc, &f);
  double lut[256];
  int64_t count[256];
  if (job->n_codes == 4) {
    fm_codec_bed2_lut(c, sc, f, lut);
    job->kern->bed2_counts(col, n, count);
  } else {
    fm_codec_dos8_lut(c, sc, f, lut);
    job->kern->dos8_hist(col, n, count);
  }
  if (p->op == FM_OP_COLSUMS) {
    colsums_from_counts(lut, count, job->n_codes, job->n_codes == 4 ? 1u : FM_DOS8_MISSING,
                        p->y + j, p->y + p->ldy + j, p->k == 3 ? p->y + 2 * p->ldy + j : NULL);
    return;
  }
  const unsigned base = pick_base(lut, count, job->n_codes);
  double *dtab = job->dtab + jl * job->n_codes;
  for (unsigned t = 0; t < job->n_codes; t++) dtab[t] = lut[t] - lut[base];
  job->base[jl] = base;
  job->basev[jl] = lut[base];
  if (p->op == FM_OP_XB) {
    double *src = job->src + jl * kp;
    for (int64_t t = 0; t < job->k; t++) src[t] = p->b[j + t * p->ldb];
    for (int64_t t = job->k; t < kp; t++) src[t] = 0.0;
  } else {
    memset(job->acc + jl * 2 * kp, 0, 2 * (size_t)kp * sizeof(double));
    job->odd[jl] = 0;
  }
}

/* XTB, XXTB: the row of variant jl, lut[base] * colsum(b) + the gathers,
 * into y[j, :] or z[j, :]. */
static void finish_variant(fused_job *job, int64_t jl) {
  const fm_product *p = job->p;
  const int64_t kp = job->kp, j = job->c0 + jl;
  const double *acc_e = job->acc + jl * 2 * kp, *acc_o = acc_e + kp;
  double *out = job->src + jl * kp; /* z[j, :]; for XTB a scratch row */
  for (int64_t t = 0; t < kp; t++) out[t] = job->basev[jl] * job->bsum[t] + (acc_e[t] + acc_o[t]);
  if (p->op == FM_OP_XTB)
    for (int64_t t = 0; t < job->k; t++) p->y[j + t * p->ldy] = out[t];
}

/* Variants jl = tid, tid + n_threads, ... of the block (interleaved, which
 * evens out runs of rare and common variants). */
static void phase_a(void *arg, int tid) {
  fused_job *job = arg;
  const int64_t step = job->n_threads, kp = job->kp;
  for (int64_t jl = tid; jl < job->nc; jl += step) prepare_variant(job, jl);
  const fm_op op = job->p->op;
  if (op != FM_OP_XTB && op != FM_OP_XXTB) return;
  uint32_t *ent = job->ent + (int64_t)tid * (job->list_cap + 4);
  for (int64_t r0 = 0; r0 < job->n; r0 += job->seg) {
    const int64_t r1 = job->n - r0 < job->seg ? job->n : r0 + job->seg;
    for (int64_t jl = tid; jl < job->nc; jl += step) {
      const int64_t m = list_rows(job, jl, r0, r1, ent);
      /* after an odd number of entries so far, this segment's first one
       * is an odd entry of the variant's whole list: the sets swap */
      double *acc_e = job->acc + jl * 2 * kp, *acc_o = acc_e + kp;
      if (job->odd[jl]) {
        double *t = acc_e;
        acc_e = acc_o;
        acc_o = t;
      }
      if (m > 0)
        job->kern->gather(ent, m, job->dtab + jl * job->n_codes, job->bt + r0 * kp, kp, acc_e,
                          acc_o);
      job->odd[jl] ^= (unsigned char)(m & 1);
    }
  }
  for (int64_t jl = tid; jl < job->nc; jl += step) finish_variant(job, jl);
}

/* Rows [r0, r1) of thread tid: contiguous, in thread order, starting on a
 * multiple of 32 (a whole word of BED2 codes). */
static void rows_of(const fused_job *job, int tid, int64_t *r0, int64_t *r1) {
  const int64_t per = ((job->n + job->n_threads - 1) / job->n_threads + 31) / 32 * 32;
  *r0 = per * tid < job->n ? per * tid : job->n;
  *r1 = *r0 + per < job->n ? *r0 + per : job->n;
}

static void phase_b(void *arg, int tid) {
  fused_job *job = arg;
  int64_t r0, r1;
  rows_of(job, tid, &r0, &r1);
  uint32_t *ent = job->ent + (int64_t)tid * (job->list_cap + 4);
  const int64_t kp = job->kp;
  for (int64_t t0 = r0; t0 < r1; t0 += job->tile) {
    const int64_t t1 = r1 - t0 < job->tile ? r1 : t0 + job->tile;
    for (int64_t jl = 0; jl < job->nc; jl++) {
      const int64_t m = list_rows(job, jl, t0, t1, ent);
      if (m > 0)
        job->kern->scatter(ent, m, job->dtab + jl * job->n_codes, job->src + jl * kp,
                           job->ys + t0 * kp, kp);
    }
  }
}

static void phase_final(void *arg, int tid) {
  const fused_job *job = arg;
  int64_t r0, r1;
  rows_of(job, tid, &r0, &r1);
  const fm_product *p = job->p;
  for (int64_t i = r0; i < r1; i++) {
    const double *row = job->ys + i * job->kp;
    for (int64_t t = 0; t < job->k; t++) p->y[i + t * p->ldy] = job->r[t] + row[t];
  }
}

/* Rows of b and y (b_rows 0 for COLSUMS). */
static void dims(const fm_product *p, int64_t *b_rows, int64_t *y_rows) {
  const int64_t n = p->x->n_rows, q = p->x->n_cols;
  switch (p->op) {
  case FM_OP_XB: *b_rows = q; *y_rows = n; break;
  case FM_OP_XTB: *b_rows = n; *y_rows = q; break;
  case FM_OP_XXTB: *b_rows = n; *y_rows = n; break;
  default: *b_rows = 0; *y_rows = q; break;
  }
}

/* FM_OK when the product is one this backend computes exactly as the
 * reference path would: a known op and codec, k <= 64, valid shapes, finite
 * b and affine parameters, and no partial sum that could overflow; else
 * FM_EUNSUPPORTED with the reason in err (fm_backend_run_named appends it
 * to its decline message). */
static fm_status accepted(const fm_product *p, fm_err *err) {
  if (!p || !p->x || !p->y)
    return fm_err_set(err, FM_EUNSUPPORTED, "the product has no matrix or no output");
  const fm_mat *x = p->x;
  if (p->op != FM_OP_XB && p->op != FM_OP_XTB && p->op != FM_OP_XXTB && p->op != FM_OP_COLSUMS)
    return fm_err_set(err, FM_EUNSUPPORTED, "it computes X b, X' b, X X' b and column sums only");
  if (x->codec != FM_CODEC_BED2 && x->codec != FM_CODEC_DOS8)
    return fm_err_set(err, FM_EUNSUPPORTED, "it takes bed2 and dos8 matrices only");
  if (p->op == FM_OP_COLSUMS && p->k != 2 && p->k != 3)
    return fm_err_set(err, FM_EUNSUPPORTED, "column sums need k = 2 or 3 output columns, not %lld",
                      (long long)p->k);
  if (p->k < 1 || p->k > FUSED_K_MAX)
    return fm_err_set(err, FM_EUNSUPPORTED, "B has %lld columns, outside the 1 to %d it takes",
                      (long long)p->k, FUSED_K_MAX);
  const int64_t n = x->n_rows, q = x->n_cols;
  if (n < 0 || q < 0)
    return fm_err_set(err, FM_EUNSUPPORTED, "the matrix has a negative extent");
  if (n > INT32_MAX)
    return fm_err_set(err, FM_EUNSUPPORTED, "%lld rows, more than the %d it takes", (long long)n,
                      INT32_MAX);
  int64_t b_rows, y_rows;
  dims(p, &b_rows, &y_rows);
  if (p->ldy < y_rows || p->ldy < 1)
    return fm_err_set(err, FM_EUNSUPPORTED, "ldy %lld is below the %lld rows of y",
                      (long long)p->ldy, (long long)y_rows);
  if (b_rows > 0 && (!p->b || p->ldb < b_rows))
    return fm_err_set(err, FM_EUNSUPPORTED, "B is missing or its ldb is below its %lld rows",
                      (long long)b_rows);
  if (n == 0 || q == 0) return FM_OK;
  if (!x->data || x->col_stride < fm_mat_min_stride(x->codec, n))
    return fm_err_set(err, FM_EUNSUPPORTED, "the matrix has no data or a column stride too small");
  if (x->col_index)
    for (int64_t j = 0; j < q; j++)
      if (x->col_index[j] < 0)
        return fm_err_set(err, FM_EUNSUPPORTED, "column %lld has a negative stored index",
                          (long long)j + 1);
  double lmax = 0.0; /* bound on |lut| over all columns */
  for (int64_t j = 0; j < q; j++) {
    double c, s, f;
    fm_affine_at(p->aff, j, &c, &s, &f);
    if (!isfinite(c) || !isfinite(s))
      return fm_err_set(err, FM_EUNSUPPORTED,
                        "the centre or scale of column %lld is not finite (%g, %g)",
                        (long long)j + 1, c, s);
    const double l = (fabs(c) + 2.0) * fabs(s);
    if (l > lmax) lmax = l;
    if (fm_affine_has_fill(p->aff)) {
      if (!isfinite(f))
        return fm_err_set(err, FM_EUNSUPPORTED, "the fill of column %lld is not finite (%g)",
                          (long long)j + 1, f);
      if (fabs(f) > lmax) lmax = fabs(f);
    }
  }
  double bmax = 0.0;
  for (int64_t t = 0; t < (b_rows > 0 ? p->k : 0); t++)
    for (int64_t i = 0; i < b_rows; i++) {
      const double v = fabs(p->b[i + t * p->ldb]);
      if (!isfinite(v))
        return fm_err_set(err, FM_EUNSUPPORTED,
                          "B[%lld, %lld] is not finite (NA, NaN or Inf: the reference path "
                          "propagates it)",
                          (long long)i + 1, (long long)t + 1);
      if (v > bmax) bmax = v;
    }
  const double nn = (double)n + 1.0, qq = (double)q + 1.0;
  double bound;
  switch (p->op) {
  case FM_OP_XB: bound = 4.0 * lmax * bmax * qq; break;
  case FM_OP_XTB: bound = 4.0 * lmax * bmax * nn; break;
  case FM_OP_XXTB: bound = 4.0 * lmax * qq * (4.0 * lmax * bmax * nn); break;
  default: bound = nn * lmax * lmax; break;
  }
  if (!(bound <= FUSED_SUM_MAX))
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "its partial sums could reach %g, above the %g it keeps exact", bound,
                      FUSED_SUM_MAX);
  return FM_OK;
}

static void *alloc_aligned(size_t n_bytes) {
  const size_t a = FUSED_ALIGN, rounded = (n_bytes + a - 1) / a * a;
  return aligned_alloc(a, rounded ? rounded : a);
}

fm_status fm_fused_backend(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ud;
  if (accepted(p, err) != FM_OK) return FM_EUNSUPPORTED;
  const fm_mat *x = p->x;
  const int64_t n = x->n_rows, q = x->n_cols, k = p->k;
  const int uses_bt = p->op == FM_OP_XTB || p->op == FM_OP_XXTB,
            uses_ys = p->op == FM_OP_XB || p->op == FM_OP_XXTB;
  int64_t b_rows, y_rows;
  dims(p, &b_rows, &y_rows);
  if (n == 0 || q == 0) {
    for (int64_t t = 0; t < k; t++) memset(p->y + t * p->ldy, 0, (size_t)y_rows * sizeof(double));
    return FM_OK;
  }

  fused_job job;
  memset(&job, 0, sizeof job);
  job.p = p;
  job.kern = kernels();
  job.n = n;
  job.q = q;
  job.k = k;
  job.kp = (k + job.kern->kpad - 1) / job.kern->kpad * job.kern->kpad;
  job.n_codes = x->codec == FM_CODEC_BED2 ? 4u : 256u;
  tables_init(&job.tab);
  const int64_t kp = job.kp;
  /* blocks: within the panel budget (as doubles) and the cache-sized bytes */
  const int64_t col_bytes = fm_mat_min_stride(x->codec, n);
  int64_t vmax = (int64_t)(fm_panel_budget(ctl) / sizeof(double)) / n;
  if (vmax > FUSED_BLOCK_BYTES / col_bytes) vmax = FUSED_BLOCK_BYTES / col_bytes;
  if (vmax > FUSED_VMAX) vmax = FUSED_VMAX;
  if (vmax < 1) vmax = 1;
  if (vmax > q) vmax = q;
  job.vmax = vmax;
  job.tile = FUSED_TILE_BYTES / (kp * (int64_t)sizeof(double)) / 32 * 32;
  if (job.tile < FUSED_TILE_MIN) job.tile = FUSED_TILE_MIN;
  job.seg = FUSED_SEG_BYTES / (kp * (int64_t)sizeof(double)) / 32 * 32;
  if (job.seg < FUSED_SEG_MIN) job.seg = FUSED_SEG_MIN;
  if (job.seg > FUSED_SEG_MAX) job.seg = FUSED_SEG_MAX;
  job.list_cap = job.tile > job.seg ? job.tile : job.seg;
  int64_t want = fm_threads(ctl);
  if (want > 1 + n * q / FUSED_MIN_WORK) want = 1 + n * q / FUSED_MIN_WORK;
  if (want > FM_THREADS_MAX) want = FM_THREADS_MAX;

  fm_status st = FM_EUNSUPPORTED; /* until y is first written, failures decline */
  fused_pool *pool = NULL;
  double *bt = NULL, *bsum = NULL, *r = NULL;
  job.base = calloc((size_t)vmax, sizeof(unsigned));
  job.basev = calloc((size_t)vmax, sizeof(double));
  job.dtab = malloc((size_t)vmax * job.n_codes * sizeof(double));
  job.src = alloc_aligned((size_t)vmax * (size_t)kp * sizeof(double));
  if (!job.base || !job.basev || !job.dtab || !job.src) goto done;
  if (uses_bt) {
    bt = alloc_aligned((size_t)n * (size_t)kp * sizeof(double));
    bsum = alloc_aligned((size_t)kp * sizeof(double));
    if (!bt || !bsum) goto done;
    for (int64_t i = 0; i < n; i++) {
      double *row = bt + i * kp;
      for (int64_t t = 0; t < k; t++) row[t] = p->b[i + t * p->ldb];
      for (int64_t t = k; t < kp; t++) row[t] = 0.0;
    }
    for (int64_t t = 0; t < kp; t++) {
      double s = 0.0;
      if (t < k)
        for (int64_t i = 0; i < n; i++) s += p->b[i + t * p->ldb];
      bsum[t] = s;
    }
    job.bt = bt;
    job.bsum = bsum;
  }
  if (uses_ys) {
    job.ys = alloc_aligned((size_t)n * (size_t)kp * sizeof(double));
    r = alloc_aligned((size_t)kp * sizeof(double));
    if (!job.ys || !r) goto done;
    memset(job.ys, 0, (size_t)n * (size_t)kp * sizeof(double));
    memset(r, 0, (size_t)kp * sizeof(double));
    job.r = r;
  }
  pool = fused_pool_start((int)want);
  if (!pool) goto done;
  job.n_threads = fused_pool_size(pool);
  job.ent = malloc((size_t)job.n_threads * (size_t)(job.list_cap + 4) * sizeof(uint32_t));
  job.acc = alloc_aligned((size_t)vmax * 2 * (size_t)kp * sizeof(double));
  job.odd = calloc((size_t)vmax, 1);
  if (!job.ent || !job.acc || !job.odd) goto done;

  const int64_t n_blocks = (q + vmax - 1) / vmax;
  const uint32_t row0 = 0; /* row 0, code 0: r += basev * src */
  for (int64_t blk = 0; blk < n_blocks; blk++) {
    if (fm_ctl_cancelled(ctl)) {
      st = fm_err_set(err, FM_ECANCELLED, "fused product cancelled after %lld of %lld blocks",
                      (long long)blk, (long long)n_blocks);
      goto done;
    }
    job.c0 = blk * vmax;
    job.nc = q - job.c0 < vmax ? q - job.c0 : vmax;
    fused_pool_run(pool, phase_a, &job);
    if (fused_pool_fault(pool)) break;
    if (uses_ys) {
      for (int64_t jl = 0; jl < job.nc; jl++)
        job.kern->scatter(&row0, 1, &job.basev[jl], job.src + jl * kp, r, kp);
      fused_pool_run(pool, phase_b, &job);
      if (fused_pool_fault(pool)) break;
    }
    fm_mat_evict_stream(x, job.c0, job.nc);
    fm_ctl_progress(ctl, (double)(blk + 1), (double)n_blocks);
  }
  if (fused_pool_fault(pool)) { /* its file truncated from outside: y is incomplete */
    st = fm_fault_error(fused_pool_fault(pool), err);
    goto done;
  }
  if (uses_ys) fused_pool_run(pool, phase_final, &job);
  st = FM_OK;
done:
  if (st == FM_EUNSUPPORTED) /* declined before writing y */
    st = fm_err_set(err, FM_EUNSUPPORTED, "it could not allocate its buffers or start its threads");
  fused_pool_stop(pool);
  free(job.base);
  free(job.basev);
  free(job.dtab);
  free(job.src);
  free(job.ys);
  free(job.ent);
  free(job.acc);
  free(job.odd);
  free(bt);
  free(bsum);
  free(r);
  return st;
}
