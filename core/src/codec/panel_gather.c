/* panel_gather.c: gathering given rows and columns, or given cells, of a
 * matrix view in bounded panels (fm_panel.h: fm_panel_gather,
 * fm_panel_gather_cells): the decoding behind R's x[i, j] and x[i]. */
#include "fm/fm_panel.h"

#include <stdlib.h>
#include <string.h>

/* A view of x restricted to logical columns cols[0..nc) (0-based), with
 * the transform's columns alike: the caller's buffers idx (nc), and when
 * aff has them center, scale, fill (nc each) hold the subset. */
typedef struct sub_view {
  fm_mat x;
  fm_affine aff;
  int64_t *idx;
  double *center, *scale, *fill;
} sub_view;

static fm_status sub_view_new(sub_view *s, const fm_mat *x, const fm_affine *aff, int64_t cap,
                              fm_err *err) {
  memset(s, 0, sizeof *s);
  s->idx = malloc((size_t)cap * sizeof *s->idx);
  int ok = s->idx != NULL;
  if (aff && aff->center) ok = ok && (s->center = malloc((size_t)cap * sizeof(double)));
  if (aff && aff->scale) ok = ok && (s->scale = malloc((size_t)cap * sizeof(double)));
  if (aff && aff->fill) ok = ok && (s->fill = malloc((size_t)cap * sizeof(double)));
  s->x = *x;
  if (!ok) return fm_err_set(err, FM_ENOMEM, "gather: cannot allocate %lld column entries",
                             (long long)cap);
  return FM_OK;
}

static void sub_view_free(sub_view *s) {
  free(s->idx);
  free(s->center);
  free(s->scale);
  free(s->fill);
}

/* Point s at logical columns cols[0..nc) of x. */
static void sub_view_set(sub_view *s, const fm_mat *x, const fm_affine *aff, const int64_t *cols,
                         int64_t nc) {
  for (int64_t j = 0; j < nc; j++) {
    const int64_t c = cols[j];
    s->idx[j] = x->col_index ? x->col_index[c] : c;
    if (s->center) s->center[j] = aff->center[c];
    if (s->scale) s->scale[j] = aff->scale[c];
    if (s->fill) s->fill[j] = aff->fill[c];
  }
  s->x.col_index = s->idx;
  s->x.n_cols = nc;
  s->aff = (fm_affine){.center = s->center, .scale = s->scale, .fill = s->fill};
  if (aff) {
    s->aff.fill_all_set = aff->fill_all_set;
    s->aff.fill_all = aff->fill_all;
  }
}

static fm_status check_index(const int64_t *v, int64_t n, int64_t extent, const char *what,
                             fm_err *err) {
  for (int64_t i = 0; i < n; i++)
    if (v[i] < 0 || v[i] >= extent)
      return fm_err_set(err, FM_EARG, "gather: %s index %lld is outside 0..%lld", what,
                        (long long)v[i], (long long)extent - 1);
  return FM_OK;
}

fm_status fm_panel_gather(const fm_mat *x, const fm_affine *aff, const int64_t *rows,
                          int64_t n_rows, const int64_t *cols, int64_t n_cols, double *out,
                          int64_t ld, const fm_ctl *ctl, fm_err *err) {
  if (!x || (!out && n_rows > 0 && n_cols > 0) || n_rows < 0 || n_cols < 0)
    return fm_err_set(err, FM_EARG, "gather: NULL argument or negative count");
  if (ld < n_rows || ld < 1)
    return fm_err_set(err, FM_EARG, "gather: ld %lld is below %lld rows", (long long)ld,
                      (long long)n_rows);
  fm_status st;
  if ((rows && (st = check_index(rows, n_rows, x->n_rows, "row", err))) ||
      (cols && (st = check_index(cols, n_cols, x->n_cols, "column", err))))
    return st;
  if (!rows && n_rows != x->n_rows)
    return fm_err_set(err, FM_EARG, "gather: all rows are %lld, not %lld",
                      (long long)x->n_rows, (long long)n_rows);
  if (!cols && n_cols != x->n_cols)
    return fm_err_set(err, FM_EARG, "gather: all columns are %lld, not %lld",
                      (long long)x->n_cols, (long long)n_cols);
  if (n_rows == 0 || n_cols == 0) return FM_OK;
  /* the span of rows decoded: every row between the first and last asked */
  int64_t lo = 0, hi = x->n_rows - 1;
  if (rows) {
    lo = hi = rows[0];
    for (int64_t i = 1; i < n_rows; i++) {
      if (rows[i] < lo) lo = rows[i];
      if (rows[i] > hi) hi = rows[i];
    }
  }
  const int64_t span = hi - lo + 1;
  int64_t chunk = (int64_t)(fm_panel_budget(ctl) / sizeof(double)) / span;
  if (chunk < 1) chunk = 1;
  if (chunk > n_cols) chunk = n_cols;
  sub_view s;
  double *panel = malloc((size_t)span * (size_t)chunk * sizeof(double));
  int64_t *all = cols ? NULL : malloc((size_t)chunk * sizeof(int64_t));
  st = sub_view_new(&s, x, aff, chunk, err);
  if (st == FM_OK && (!panel || (!cols && !all)))
    st = fm_err_set(err, FM_ENOMEM, "gather: cannot allocate a %lld x %lld panel",
                    (long long)span, (long long)chunk);
  const double total = (double)((n_cols + chunk - 1) / chunk);
  double done = 0;
  for (int64_t c0 = 0; st == FM_OK && c0 < n_cols; c0 += chunk) {
    const int64_t nc = n_cols - c0 < chunk ? n_cols - c0 : chunk;
    if (fm_ctl_cancelled(ctl)) {
      st = fm_err_set(err, FM_ECANCELLED, "gather cancelled after %.0f of %.0f panels", done,
                      total);
      break;
    }
    if (!cols)
      for (int64_t j = 0; j < nc; j++) all[j] = c0 + j;
    sub_view_set(&s, x, aff, cols ? cols + c0 : all, nc);
    st = fm_panel_decode(&s.x, &s.aff, lo, span, 0, nc, panel, span, err);
    if (st != FM_OK) break;
    for (int64_t j = 0; j < nc; j++) {
      double *o = out + (c0 + j) * ld;
      const double *pc = panel + j * span;
      if (rows)
        for (int64_t i = 0; i < n_rows; i++) o[i] = pc[rows[i] - lo];
      else
        memcpy(o, pc, (size_t)n_rows * sizeof(double));
    }
    fm_ctl_progress(ctl, ++done, total);
  }
  sub_view_free(&s);
  free(panel);
  free(all);
  return st;
}

/* Cells in column order: the position of each cell in the caller's list. */
typedef struct cell_ref {
  int64_t col, pos;
} cell_ref;

static int by_column(const void *a, const void *b) {
  const cell_ref *u = a, *v = b;
  if (u->col != v->col) return u->col < v->col ? -1 : 1;
  return u->pos < v->pos ? -1 : u->pos > v->pos;
}

fm_status fm_panel_gather_cells(const fm_mat *x, const fm_affine *aff, const int64_t *rows,
                                const int64_t *cols, int64_t n, double *out, const fm_ctl *ctl,
                                fm_err *err) {
  if (!x || n < 0 || (n > 0 && (!rows || !cols || !out)))
    return fm_err_set(err, FM_EARG, "gather: NULL argument or negative count");
  fm_status st;
  if ((st = check_index(rows, n, x->n_rows, "row", err)) ||
      (st = check_index(cols, n, x->n_cols, "column", err)))
    return st;
  if (n == 0) return FM_OK;
  cell_ref *ref = malloc((size_t)n * sizeof *ref);
  int64_t *ucols = malloc((size_t)n * sizeof *ucols);
  if (!ref || !ucols) {
    free(ref);
    free(ucols);
    return fm_err_set(err, FM_ENOMEM, "gather: cannot index %lld cells", (long long)n);
  }
  for (int64_t k = 0; k < n; k++) ref[k] = (cell_ref){cols[k], k};
  qsort(ref, (size_t)n, sizeof *ref, by_column);
  int64_t nu = 0;
  for (int64_t k = 0; k < n; k++)
    if (k == 0 || ref[k].col != ref[k - 1].col) ucols[nu++] = ref[k].col;
  /* whole columns of the distinct ones, a bounded block at a time */
  const int64_t nr = x->n_rows;
  int64_t chunk = (int64_t)(fm_panel_budget(ctl) / sizeof(double)) / (nr > 0 ? nr : 1);
  if (chunk < 1) chunk = 1;
  if (chunk > nu) chunk = nu;
  double *block = malloc((size_t)nr * (size_t)chunk * sizeof(double));
  if (!block) st = fm_err_set(err, FM_ENOMEM, "gather: cannot allocate a %lld x %lld panel",
                              (long long)nr, (long long)chunk);
  /* the inner gathers poll ctl; progress is reported here, per block */
  const fm_ctl inner = fm_ctl_relay(ctl, ctl ? ctl->cancel : NULL, NULL, ctl ? ctl->ud : NULL);
  const double total = (double)((nu + chunk - 1) / chunk);
  double done = 0;
  int64_t k = 0; /* next cell in column order */
  for (int64_t u0 = 0; st == FM_OK && u0 < nu; u0 += chunk) {
    const int64_t nc = nu - u0 < chunk ? nu - u0 : chunk;
    st = fm_panel_gather(x, aff, NULL, nr, ucols + u0, nc, block, nr, &inner, err);
    if (st == FM_OK) fm_ctl_progress(ctl, ++done, total);
    for (int64_t j = 0; st == FM_OK && j < nc; j++)
      for (; k < n && ref[k].col == ucols[u0 + j]; k++)
        out[ref[k].pos] = block[rows[ref[k].pos] + j * nr];
  }
  free(block);
  free(ref);
  free(ucols);
  return st;
}
