/* stats_ld.c: the LD band of fm_stats_ld.h: checks, block and chunk
 * geometry, the pass over the blocks, and the column-by-column output.
 *
 * Blocks: columns [a, b) with their windows [a, e), e = win_end[b - 1],
 * grown while the block's pairs (6 doubles each) and 64 rows of its
 * columns fit half the panel budget each. Rows come in chunks that fill
 * the other half (all rows at once in the common case). Inputs are read in
 * the calling thread, behind the core's SIGBUS jump point; the pair sums
 * run on worker threads over the block's columns.
 *
 * Output (fill): column j is written when its block is done: first its
 * lower entries, the k < j whose own column (written before) holds row j,
 * found through a cursor per column that only moves forward; then the
 * diagonal; then its upper pairs. So each value is computed once and both
 * triangles hold the same bits. Pages of rowidx and values before the
 * first column any later window reaches are dropped when release_output
 * says they are a file mapping. */
#define _POSIX_C_SOURCE 200809L /* sigsetjmp, fm_fault.h */
#include "stats_ld_impl.h"
#include "stats_par.h"
#include "base/pages.h"

#include "fm/fm_codec_bed2.h"
#include "fm/fm_fault.h"

#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

typedef long long ll;

/* ---- checks ---------------------------------------------------------------- */

static fm_status check_args(const char *what, const fm_mat *x, const int64_t *win_end,
                            const fm_ld_opts *o, fm_err *err) {
  if (!x || !o) return fm_err_set(err, FM_EARG, "%s: x and opts must not be NULL", what);
  const int64_t n = x->n_cols;
  if (n > 0 && !win_end) return fm_err_set(err, FM_EARG, "%s: win_end must not be NULL", what);
  if (o->missing != FM_LD_PAIRWISE && o->missing != FM_LD_MEAN)
    return fm_err_set(err, FM_EARG, "%s: unknown missing-value rule %d", what, (int)o->missing);
  if (o->dtype != FM_BAND_F64 && o->dtype != FM_BAND_F32)
    return fm_err_set(err, FM_EARG, "%s: unknown value type %d", what, (int)o->dtype);
  if (!(o->r2_min >= 0 && o->r2_min <= 1))
    return fm_err_set(err, FM_EARG, "%s: r2_min must be in [0, 1], not %g", what, o->r2_min);
  if (n > INT32_MAX)
    return fm_err_set(err, FM_EARG, "%s: %lld variants, more than a band's 32-bit row index",
                      what, (ll)n);
  for (int64_t j = 0; j < n; j++) {
    if (win_end[j] <= j || win_end[j] > n || (j && win_end[j] < win_end[j - 1]))
      return fm_err_set(err, FM_EARG,
                        "%s: win_end[%lld] = %lld: window ends must be nondecreasing, after "
                        "their variant and at most %lld",
                        what, (ll)j, (ll)win_end[j], (ll)n);
  }
  return FM_OK;
}

/* ---- one block ----------------------------------------------------------- */

typedef struct ld_block {
  const fm_mat *x;
  const fm_affine *aff;
  const int64_t *win_end;
  const uint64_t *sel; /* the sample mask, or NULL */
  int planes;
  int64_t a, b, e;  /* columns [a, b), windows [a, e) */
  int64_t *off;     /* b - a + 1: first pair of each column */
  double *acc;      /* off[b - a] x LD_SUMS */
  double *cs1, *cs2, *ccnt; /* e - a: whole-column sums */
  double *shift;    /* e - a, doubles: the first observed value */
  unsigned char *shifted;
  ld_chunk c;
  ld_pair_fn pair;
} ld_block;

static void block_free(ld_block *k) {
  free(k->off), free(k->acc), free(k->cs1), free(k->cs2), free(k->ccnt), free(k->shift);
  free(k->shifted), free(k->c.h), free(k->c.t), free(k->c.o), free(k->c.x0), free(k->c.x2);
  free(k->c.om), free(k->c.s1), free(k->c.s2), free(k->c.cnt), free(k->c.full);
  memset(k, 0, sizeof *k);
}

static int64_t stored_col(const fm_mat *x, int64_t j) { return x->col_index ? x->col_index[j] : j; }

/* Chunk rows [r0, r0 + rows) of every column of the block, in the calling
 * thread (reads of the mapping stay behind the jump point of the caller). */
static fm_status chunk_prepare(ld_block *k, int64_t r0, int64_t rows, fm_err *err) {
  ld_chunk *c = &k->c;
  const fm_mat *x = k->x;
  c->rows = rows;
  if (k->planes) {
    c->nw = (rows + 63) / 64;
    const int64_t cb = fm_codec_bed2_col_bytes(x->n_rows);
    for (int64_t i = 0; i < c->nc; i++) {
      const uint8_t *col = (const uint8_t *)x->data + stored_col(x, k->a + i) * x->col_stride;
      ld_planes_col(col, cb, x->n_rows, r0, c->nw, k->sel ? k->sel + r0 / 64 : NULL,
                    c->h + i * c->nw, c->t + i * c->nw, c->o + i * c->nw, &c->s1[i], &c->s2[i],
                    &c->cnt[i], &c->full[i]);
    }
    return FM_OK;
  }
  fm_status st = fm_panel_decode(x, k->aff, r0, rows, k->a, c->nc, c->x0, rows, err);
  if (st != FM_OK) return st;
  /* the selected rows, kept in order: column i moves from offset i rows to
   * i kept, never past what is still to be read (kept <= rows) */
  int64_t kept = rows;
  if (k->sel) {
    kept = 0;
    for (int64_t r = r0; r < r0 + rows; r++) kept += (int64_t)(k->sel[r / 64] >> (r % 64) & 1u);
  }
  c->rows = kept;
  for (int64_t i = 0; i < c->nc; i++) {
    const double *src = c->x0 + i * rows;
    double *v = c->x0 + i * kept, *q = c->x2 + i * kept, *m = c->om + i * kept;
    double s1 = 0, s2 = 0, n = 0;
    for (int64_t r = 0, o = 0; r < rows; r++) {
      if (k->sel && !(k->sel[(r0 + r) / 64] >> ((r0 + r) % 64) & 1u)) continue;
      const double val = src[r];
      if (isnan(val)) {
        v[o] = q[o] = m[o] = 0;
        o++;
        continue;
      }
      /* a shift inside the data keeps n Sxx - Sx^2 from cancelling */
      if (!k->shifted[i]) k->shift[i] = val, k->shifted[i] = 1;
      v[o] = val - k->shift[i];
      q[o] = v[o] * v[o], m[o] = 1;
      s1 += v[o], s2 += q[o], n += 1;
      o++;
    }
    c->s1[i] = s1, c->s2[i] = s2, c->cnt[i] = n, c->full[i] = n == (double)kept;
  }
  return FM_OK;
}

static void block_pairs(void *ud, int64_t jj, int t) {
  (void)t;
  ld_block *k = ud;
  const int64_t j = k->a + jj;
  double *acc = k->acc + k->off[jj] * LD_SUMS;
  for (int64_t kc = j + 1; kc < k->win_end[j]; kc++, acc += LD_SUMS)
    k->pair(&k->c, jj, kc - k->a, acc);
}

static fm_status chunk_guarded(ld_block *k, int64_t r0, int64_t rows, fm_err *err) {
  fm_fault_jmp jp;
  fm_fault_push(&jp);
  if (sigsetjmp(jp.jb, 0) != 0) return fm_fault_caught(&jp, err);
  const fm_status st = chunk_prepare(k, r0, rows, err);
  fm_fault_pop(&jp);
  return st;
}

/* The correlation of pair sums s of columns jj < kk of the block. */
static double pair_r(const ld_block *k, fm_ld_missing rule, const double *s, int64_t jj,
                     int64_t kk) {
  double num, dx, dy;
  if (rule == FM_LD_PAIRWISE) {
    const double n = s[LD_N];
    if (n < 2) return 0;
    num = n * s[LD_SXY] - s[LD_SX] * s[LD_SY];
    dx = n * s[LD_SXX] - s[LD_SX] * s[LD_SX];
    dy = n * s[LD_SYY] - s[LD_SY] * s[LD_SY];
  } else {
    const double cj = k->ccnt[jj], ck = k->ccnt[kk];
    if (cj < 1 || ck < 1) return 0;
    const double mj = k->cs1[jj] / cj, mk = k->cs1[kk] / ck;
    num = s[LD_SXY] - mk * s[LD_SX] - mj * s[LD_SY] + mj * mk * s[LD_N];
    dx = k->cs2[jj] - k->cs1[jj] * mj;
    dy = k->cs2[kk] - k->cs1[kk] * mk;
  }
  if (!(dx > 0 && dy > 0)) return 0;
  const double r = num / sqrt(dx * dy);
  return r > 1 ? 1 : r < -1 ? -1 : r;
}

/* Sizes: the block from column a, within the budget (at least one column). */
static void block_geometry(const fm_mat *x, const int64_t *win_end, int64_t a, int planes,
                           size_t budget, int64_t *b_out, int64_t *rows_out) {
  const int64_t n = x->n_cols;
  const double half = (double)budget / 2;
  const double row_bytes = planes ? 3.0 / 8 : 24.0; /* per row and column */
  int64_t b = a + 1, pairs = win_end[a] - a - 1;
  while (b < n && b - a < 4096) {
    const int64_t more = pairs + win_end[b] - b - 1;
    if ((double)more * LD_SUMS * 8 > half || (double)(win_end[b] - a) * 64 * row_bytes > half)
      break;
    pairs = more, b++;
  }
  const int64_t nc = win_end[b - 1] - a;
  int64_t rows = (int64_t)(half / ((double)nc * row_bytes));
  rows = rows / 64 * 64;
  if (rows < 64) rows = 64;
  if (rows >= x->n_rows) rows = x->n_rows;
  *b_out = b;
  *rows_out = rows;
}

static fm_status block_alloc(ld_block *k, int64_t rows, fm_err *err) {
  const int64_t nb = k->b - k->a, nc = k->e - k->a;
  k->off = malloc((size_t)(nb + 1) * sizeof *k->off);
  if (!k->off) return fm_err_set(err, FM_ENOMEM, "fm_stats_ld: out of memory for a block");
  k->off[0] = 0;
  for (int64_t jj = 0; jj < nb; jj++)
    k->off[jj + 1] = k->off[jj] + k->win_end[k->a + jj] - (k->a + jj) - 1;
  const size_t pairs = (size_t)k->off[nb], n_c = (size_t)nc;
  ld_chunk *c = &k->c;
  c->nc = nc;
  c->planes = k->planes;
  k->acc = calloc(pairs * LD_SUMS + 1, sizeof *k->acc);
  k->cs1 = calloc(n_c, sizeof(double)), k->cs2 = calloc(n_c, sizeof(double));
  k->ccnt = calloc(n_c, sizeof(double));
  c->s1 = malloc(n_c * sizeof(double)), c->s2 = malloc(n_c * sizeof(double));
  c->cnt = malloc(n_c * sizeof(double)), c->full = malloc(n_c);
  int ok = k->acc && k->cs1 && k->cs2 && k->ccnt && c->s1 && c->s2 && c->cnt && c->full;
  if (k->planes) {
    const size_t words = n_c * (size_t)((rows + 63) / 64);
    c->h = malloc(words * 8), c->t = malloc(words * 8), c->o = malloc(words * 8);
    ok = ok && c->h && c->t && c->o;
  } else {
    const size_t cells = n_c * (size_t)rows;
    c->x0 = malloc(cells * 8), c->x2 = malloc(cells * 8), c->om = malloc(cells * 8);
    k->shift = calloc(n_c, sizeof(double)), k->shifted = calloc(n_c, 1);
    ok = ok && c->x0 && c->x2 && c->om && k->shift && k->shifted;
  }
  return ok ? FM_OK
            : fm_err_set(err, FM_ENOMEM, "fm_stats_ld: out of memory for a block of %lld x %lld",
                         (ll)rows, (ll)nc);
}

/* Every chunk of the block: its pair sums in acc and column sums. */
static fm_status block_sums(ld_block *k, int64_t rows, int nt, fm_err *err) {
  const int64_t n_rows = k->x->n_rows, nc = k->e - k->a;
  for (int64_t r0 = 0; r0 < n_rows; r0 += rows) {
    const int64_t m = r0 + rows <= n_rows ? rows : n_rows - r0;
    const fm_status st = chunk_guarded(k, r0, m, err);
    if (st != FM_OK) return st;
    for (int64_t i = 0; i < nc; i++)
      k->cs1[i] += k->c.s1[i], k->cs2[i] += k->c.s2[i], k->ccnt[i] += k->c.cnt[i];
    stats_par_for(block_pairs, k, k->b - k->a, nt);
  }
  return FM_OK;
}

/* ---- output -------------------------------------------------------------- */

typedef struct ld_out {
  const int64_t *colptr;
  int32_t *rowidx;
  void *values;
  fm_band_dtype dtype;
  int64_t *cur;     /* per column: its next stored row after the diagonal */
  int64_t released; /* entries before this one are dropped from memory */
} ld_out;

static void put(ld_out *w, int64_t pos, int64_t row, double v) {
  w->rowidx[pos] = (int32_t)row;
  if (w->dtype == FM_BAND_F32)
    ((float *)w->values)[pos] = (float)v;
  else
    ((double *)w->values)[pos] = v;
}

static double got(const ld_out *w, int64_t pos) {
  return w->dtype == FM_BAND_F32 ? (double)((const float *)w->values)[pos]
                                 : ((const double *)w->values)[pos];
}

static fm_status write_column(ld_out *w, const ld_block *k, fm_ld_missing rule, double r2_min,
                              int64_t j, int64_t start, fm_err *err) {
  const int64_t end = w->colptr[j + 1];
  int64_t pos = w->colptr[j];
  for (int64_t q = start; q < j; q++) {
    const int64_t c = w->cur[q];
    if (c < w->colptr[q + 1] && w->rowidx[c] == j) {
      if (pos >= end) goto overflow;
      put(w, pos++, q, got(w, c));
      w->cur[q] = c + 1;
    }
  }
  if (pos >= end) goto overflow;
  put(w, pos++, j, 1.0);
  w->cur[j] = pos;
  const int64_t jj = j - k->a;
  const double *s = k->acc + k->off[jj] * LD_SUMS;
  for (int64_t q = j + 1; q < k->win_end[j]; q++, s += LD_SUMS) {
    const double r = pair_r(k, rule, s, jj, q - k->a);
    if (r2_min > 0 && !(r * r >= r2_min)) continue;
    if (pos >= end) goto overflow;
    put(w, pos++, q, r);
  }
  if (pos == end) return FM_OK;
overflow:
  return fm_err_set(err, FM_EARG,
                    "fm_stats_ld_fill: column %lld has more or fewer entries than colptr gives "
                    "it (%lld): colptr must come from fm_stats_ld_count with the same "
                    "arguments",
                    (ll)j, (ll)(w->colptr[j + 1] - w->colptr[j]));
}

/* ---- the pass -------------------------------------------------------------- */

static fm_status ld_pass(const char *what, const fm_mat *x, const fm_affine *aff,
                         const int64_t *win_end, const fm_ld_opts *o, int64_t *count,
                         ld_out *w, const fm_ctl *ctl, fm_err *err) {
  const int64_t n = x->n_cols;
  const int planes = x->codec == FM_CODEC_BED2 && fm_affine_is_identity(aff);
  const size_t budget = fm_panel_budget(ctl);
  const int nt = fm_threads(ctl);
  const size_t vbytes = o->dtype == FM_BAND_F32 ? 4 : 8;
  int64_t start = 0; /* first column whose window reaches the current one */
  fm_status st = FM_OK;
  for (int64_t a = 0, b; a < n; a = b) {
    if (fm_ctl_cancelled(ctl)) return fm_err_set(err, FM_ECANCELLED, "%s: cancelled", what);
    int64_t rows;
    block_geometry(x, win_end, a, planes, budget, &b, &rows);
    ld_block k = {.x = x, .aff = aff, .win_end = win_end, .sel = o->sample_mask, .planes = planes,
                  .a = a, .b = b, .e = win_end[b - 1]};
    k.pair = planes ? ld_pair_planes() : ld_pair_doubles;
    if ((st = block_alloc(&k, rows, err)) != FM_OK || (st = block_sums(&k, rows, nt, err)) != FM_OK) {
      block_free(&k);
      return st;
    }
    for (int64_t j = a; j < b; j++) {
      while (win_end[start] <= j) start++;
      if (count) {
        const double *s = k.acc + k.off[j - a] * LD_SUMS;
        for (int64_t q = j + 1; q < win_end[j]; q++, s += LD_SUMS) {
          const double r = pair_r(&k, o->missing, s, j - a, q - a);
          if (r * r >= o->r2_min) count[j]++, count[q]++;
        }
      } else if ((st = write_column(w, &k, o->missing, o->r2_min, j, start, err)) != FM_OK) {
        block_free(&k);
        return st;
      }
    }
    block_free(&k);
    fm_mat_evict_stream(x, a, b - a);
    if (w && o->release_output && b < n) {
      int64_t s_next = start;
      while (win_end[s_next] <= b) s_next++;
      const int64_t upto = w->colptr[s_next];
      fm_pages_release(w->rowidx, (size_t)w->released * 4, (size_t)upto * 4, FM_PAGES_INWARD, NULL);
      fm_pages_release(w->values, (size_t)w->released * vbytes, (size_t)upto * vbytes,
                       FM_PAGES_INWARD, NULL);
      w->released = upto;
    }
    fm_ctl_progress(ctl, (double)b, (double)n);
  }
  return FM_OK;
}

fm_status fm_stats_ld_count(const fm_mat *x, const fm_affine *aff, const int64_t *win_end,
                            const fm_ld_opts *opts, int64_t *count_out, const fm_ctl *ctl,
                            fm_err *err) {
  static const char what[] = "fm_stats_ld_count";
  fm_status st = check_args(what, x, win_end, opts, err);
  if (st != FM_OK) return st;
  const int64_t n = x->n_cols;
  if (n > 0 && !count_out) return fm_err_set(err, FM_EARG, "%s: count_out must not be NULL", what);
  for (int64_t j = 0; j < n; j++) count_out[j] = 1;
  if (opts->r2_min == 0) { /* every pair of the window: no data needed */
    for (int64_t j = 0; j < n; j++)
      for (int64_t q = j + 1; q < win_end[j]; q++) count_out[j]++, count_out[q]++;
    return FM_OK;
  }
  return ld_pass(what, x, aff, win_end, opts, count_out, NULL, ctl, err);
}

fm_status fm_stats_ld_fill(const fm_mat *x, const fm_affine *aff, const int64_t *win_end,
                           const fm_ld_opts *opts, const int64_t *colptr, int32_t *rowidx,
                           void *values, const fm_ctl *ctl, fm_err *err) {
  static const char what[] = "fm_stats_ld_fill";
  fm_status st = check_args(what, x, win_end, opts, err);
  if (st != FM_OK) return st;
  const int64_t n = x->n_cols;
  if (n == 0) return FM_OK;
  if (!colptr || !rowidx || !values)
    return fm_err_set(err, FM_EARG, "%s: colptr, rowidx and values must not be NULL", what);
  if (colptr[0] != 0) return fm_err_set(err, FM_EARG, "%s: colptr[0] must be 0", what);
  for (int64_t j = 0; j < n; j++)
    if (colptr[j + 1] < colptr[j] + 1)
      return fm_err_set(err, FM_EARG, "%s: colptr gives column %lld no entry", what, (ll)j);
  ld_out w = {colptr, rowidx, values, opts->dtype, malloc((size_t)n * sizeof(int64_t)), 0};
  if (!w.cur) return fm_err_set(err, FM_ENOMEM, "%s: out of memory for %lld cursors", what, (ll)n);
  st = ld_pass(what, x, aff, win_end, opts, NULL, &w, ctl, err);
  free(w.cur);
  return st;
}
