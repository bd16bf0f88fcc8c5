/* backend.c: the backend registry and the reference panel product
 * (decode bounded panels, accumulate with BLAS dgemm). */
#define _POSIX_C_SOURCE 200809L /* fm_fault.h */
#include "fm/fm_backend.h"

#include "base/blas.h"
#include "fm/fm_fault.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct backend_entry {
  char name[FM_BACKEND_NAME_MAX + 1];
  fm_backend_fn fn;
  void *ud; /* borrowed from the registrant */
} backend_entry;

static backend_entry registry[FM_BACKEND_MAX];
static int n_registered;

static const char reference_name[] = "reference";

fm_status fm_backend_register(const char *name, fm_backend_fn fn, void *ud, fm_err *err) {
  if (!name || !name[0])
    return fm_err_set(err, FM_EARG, "fm_backend_register: the backend name is empty");
  size_t len = strlen(name);
  if (len > FM_BACKEND_NAME_MAX)
    return fm_err_set(err, FM_EARG,
                      "fm_backend_register: the backend name has %zu characters (at most %d)", len,
                      FM_BACKEND_NAME_MAX);
  if (!fn)
    return fm_err_set(err, FM_EARG, "fm_backend_register: backend '%s' has no function", name);
  if (strcmp(name, reference_name) == 0)
    return fm_err_set(err, FM_EARG, "fm_backend_register: the name '%s' is reserved", name);
  for (int i = 0; i < n_registered; i++)
    if (strcmp(registry[i].name, name) == 0)
      return fm_err_set(err, FM_EARG, "fm_backend_register: a backend named '%s' is registered",
                        name);
  if (n_registered >= FM_BACKEND_MAX)
    return fm_err_set(err, FM_ENOSPC,
                      "fm_backend_register: cannot register '%s': all %d backend slots are used",
                      name, FM_BACKEND_MAX);
  backend_entry *e = &registry[n_registered];
  memcpy(e->name, name, len + 1);
  e->fn = fn;
  e->ud = ud;
  n_registered++;
  return FM_OK;
}

int fm_backend_unregister(const char *name) {
  if (!name) return 0;
  for (int i = 0; i < n_registered; i++) {
    if (strcmp(registry[i].name, name) == 0) {
      for (int k = i + 1; k < n_registered; k++) registry[k - 1] = registry[k];
      n_registered--;
      memset(&registry[n_registered], 0, sizeof registry[n_registered]);
      return 1;
    }
  }
  return 0;
}

int fm_backend_count(void) { return n_registered; }

const char *fm_backend_name(int i) {
  return i >= 0 && i < n_registered ? registry[i].name : NULL;
}

/* Shapes of b and y: rows of each (columns are k); b_rows 0 when b is unused. */
static void product_dims(const fm_product *p, int64_t *b_rows, int64_t *y_rows) {
  const int64_t n = p->x->n_rows, q = p->x->n_cols;
  switch (p->op) {
  case FM_OP_XB: *b_rows = q; *y_rows = n; break;
  case FM_OP_XTB: *b_rows = n; *y_rows = q; break;
  case FM_OP_XXTB: *b_rows = n; *y_rows = n; break;
  default: *b_rows = 0; *y_rows = q; break; /* COLSUMS */
  }
}

static fm_status validate(const fm_product *p, fm_err *err) {
  if (!p) return fm_err_set(err, FM_EARG, "product: p must not be NULL");
  if (p->op != FM_OP_XB && p->op != FM_OP_XTB && p->op != FM_OP_XXTB && p->op != FM_OP_COLSUMS)
    return fm_err_set(err, FM_EARG, "product: unknown op %d", (int)p->op);
  const fm_mat *x = p->x;
  if (!x) return fm_err_set(err, FM_EARG, "product: x must not be NULL");
  if (x->n_rows < 0 || x->n_cols < 0)
    return fm_err_set(err, FM_EARG, "product: x has negative dimensions %lld x %lld",
                      (long long)x->n_rows, (long long)x->n_cols);
  int64_t min_stride = fm_mat_min_stride(x->codec, x->n_rows);
  if (min_stride < 0)
    return fm_err_set(err, FM_EARG, "product: x has unknown codec id %d", (int)x->codec);
  if (x->codec == FM_CODEC_EXT && (!x->ext || !x->ext->decode))
    return fm_err_set(err, FM_EARG, "product: x has an external codec without a decoder");
  if (x->n_cols > 0 && x->col_stride < min_stride)
    return fm_err_set(err, FM_EARG, "product: x's col_stride %lld is below the %lld bytes needed",
                      (long long)x->col_stride, (long long)min_stride);
  if (x->n_rows > 0 && x->n_cols > 0 && !x->data)
    return fm_err_set(err, FM_EARG, "product: x->data must not be NULL");
  if (p->k < 1)
    return fm_err_set(err, FM_EARG, "product: k (%lld) must be >= 1", (long long)p->k);
  if (p->op == FM_OP_COLSUMS && p->k != 2 && p->k != 3)
    return fm_err_set(err, FM_EARG, "product: k (%lld) must be 2 or 3 for column sums",
                      (long long)p->k);
  int64_t b_rows, y_rows;
  product_dims(p, &b_rows, &y_rows);
  const int uses_b = p->op != FM_OP_COLSUMS;
  if (uses_b && (p->ldb < b_rows || p->ldb < 1))
    return fm_err_set(err, FM_EARG, "product: ldb (%lld) is less than the %lld rows of b",
                      (long long)p->ldb, (long long)b_rows);
  if (p->ldy < y_rows || p->ldy < 1)
    return fm_err_set(err, FM_EARG, "product: ldy (%lld) is less than the %lld rows of y",
                      (long long)p->ldy, (long long)y_rows);
  int64_t tmp;
  if ((uses_b && !fm_mul_ok(p->ldb, p->k, &tmp)) || !fm_mul_ok(p->ldy, p->k, &tmp))
    return fm_err_set(err, FM_EARG, "product: ld * k overflows (ldb %lld, ldy %lld, k %lld)",
                      (long long)p->ldb, (long long)p->ldy, (long long)p->k);
  if (!p->y) return fm_err_set(err, FM_EARG, "product: y must not be NULL");
  if (!p->b && b_rows > 0) return fm_err_set(err, FM_EARG, "product: b must not be NULL");
  return FM_OK;
}

/* COLSUMS of one panel of columns c0.. : per column, add its values and
 * squares in row order; with n_miss (k = 3) the panel was decoded without
 * the fill, so each NaN is counted and then takes the column's fill (or
 * stays NaN), which is the value decoding with the fill gives. */
static void colsums_panel(const double *panel, int64_t nr, int64_t nc, const fm_affine *aff,
                          int64_t c0, double *sum, double *sumsq, double *n_miss) {
  for (int64_t c = 0; c < nc; c++) {
    const double *col = panel + c * nr;
    double s = sum[c], ss = sumsq[c], m = 0, ctr, scl, fill = 0;
    if (n_miss) fm_affine_at(aff, c0 + c, &ctr, &scl, &fill);
    for (int64_t i = 0; i < nr; i++) {
      double v = col[i];
      if (n_miss && v != v) {
        m += 1;
        if (fm_affine_has_fill(aff)) v = fill;
      }
      s += v;
      ss += v * v;
    }
    sum[c] = s;
    sumsq[c] = ss;
    if (n_miss) n_miss[c] += m;
  }
}

fm_status fm_backend_reference(const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  fm_status st = validate(p, err);
  if (st != FM_OK) return st;
  const fm_mat *x = p->x;
  const int64_t n = x->n_rows, q = x->n_cols, k = p->k;
  int64_t b_rows, y_rows;
  product_dims(p, &b_rows, &y_rows);
  (void)b_rows;
  const int64_t ldb64 = p->op == FM_OP_COLSUMS ? 1 : p->ldb;
  if (!fm_blas_dim_ok(k) || !fm_blas_dim_ok(ldb64) || !fm_blas_dim_ok(p->ldy))
    return fm_err_set(err, FM_EARG,
                      "product: k (%lld), ldb (%lld) and ldy (%lld) must be at most %d for BLAS",
                      (long long)k, (long long)ldb64, (long long)p->ldy, INT_MAX);

  for (int64_t j = 0; j < k; j++) memset(p->y + j * p->ldy, 0, (size_t)y_rows * sizeof(double));
  if (n == 0 || q == 0) return FM_OK;

  const fm_panel_plan plan = fm_panel_plan_for(x, fm_panel_budget(ctl));
  if (!fm_blas_dim_ok(plan.rows) || !fm_blas_dim_ok(plan.cols))
    return fm_err_set(err, FM_EINTERNAL, "product: panel %lld x %lld exceeds BLAS integers",
                      (long long)plan.rows, (long long)plan.cols);
  double *panel = malloc((size_t)plan.rows * (size_t)plan.cols * sizeof(double));
  /* XXTB: z = X_C' b for the current column block C (cols x k). */
  double *z = p->op == FM_OP_XXTB ? malloc((size_t)plan.cols * (size_t)k * sizeof(double)) : NULL;
  if (!panel || (p->op == FM_OP_XXTB && !z)) {
    st = fm_err_set(err, FM_ENOMEM, "product: cannot allocate a %lld x %lld panel",
                    (long long)plan.rows, (long long)plan.cols);
    goto fail;
  }

  /* column sums that count missing entries decode without the fill */
  const int counts_missing = p->op == FM_OP_COLSUMS && p->k == 3;
  fm_affine no_fill = p->aff ? *p->aff : (fm_affine){0};
  no_fill.fill = NULL;
  no_fill.fill_all_set = 0;
  const int64_t row_tiles = (n + plan.rows - 1) / plan.rows;
  const int64_t col_tiles = (q + plan.cols - 1) / plan.cols;
  /* XXTB decodes every panel twice unless a column fits in one panel. */
  const int twice = p->op == FM_OP_XXTB && row_tiles > 1;
  const double total = (double)row_tiles * (double)col_tiles * (twice ? 2.0 : 1.0);
  double done = 0.0;
  const double one = 1.0, zero = 0.0;
  const fm_blas_int kk = (fm_blas_int)k, ldb = (fm_blas_int)ldb64, ldy = (fm_blas_int)p->ldy;

  for (int64_t c0 = 0; c0 < q; c0 += plan.cols) {
    const int64_t nc = q - c0 < plan.cols ? q - c0 : plan.cols;
    const fm_blas_int n_ = (fm_blas_int)nc;
    for (int pass = 0; pass < (twice ? 2 : 1); pass++) {
      for (int64_t r0 = 0; r0 < n; r0 += plan.rows) {
        const int64_t nr = n - r0 < plan.rows ? n - r0 : plan.rows;
        const fm_blas_int m_ = (fm_blas_int)nr;
        if (fm_ctl_cancelled(ctl)) {
          st = fm_err_set(err, FM_ECANCELLED, "product cancelled after %.0f of %.0f panels", done,
                          total);
          goto fail;
        }
        st = fm_panel_decode(x, counts_missing ? &no_fill : p->aff, r0, nr, c0, nc, panel, nr,
                             err);
        if (st != FM_OK) goto fail;
        switch (p->op) {
        case FM_OP_XB: /* y[r0:r0+nr, :] += P (nr x nc) * b[c0:c0+nc, :] */
          dgemm_("N", "N", &m_, &kk, &n_, &one, panel, &m_, p->b + c0, &ldb, &one, p->y + r0,
                 &ldy, FM_FCONE, FM_FCONE);
          break;
        case FM_OP_XTB: /* y[c0:c0+nc, :] += P' (nc x nr) * b[r0:r0+nr, :] */
          dgemm_("T", "N", &n_, &kk, &m_, &one, panel, &m_, p->b + r0, &ldb, &one, p->y + c0,
                 &ldy, FM_FCONE, FM_FCONE);
          break;
        case FM_OP_XXTB:
          if (pass == 0) { /* z (+)= P' b[R, :] */
            const double *beta = r0 == 0 ? &zero : &one;
            dgemm_("T", "N", &n_, &kk, &m_, &one, panel, &m_, p->b + r0, &ldb, beta, z, &n_,
                   FM_FCONE, FM_FCONE);
          }
          if (pass == 1 || !twice) /* y[R, :] += P z */
            dgemm_("N", "N", &m_, &kk, &n_, &one, panel, &m_, z, &n_, &one, p->y + r0, &ldy,
                   FM_FCONE, FM_FCONE);
          break;
        default:
          colsums_panel(panel, nr, nc, p->aff, c0, p->y + c0, p->y + p->ldy + c0,
                        p->k == 3 ? p->y + 2 * p->ldy + c0 : NULL);
          break;
        }
        done += 1.0;
        fm_ctl_progress(ctl, done, total);
      }
    }
    /* the block is consumed: drop its pages from the resident set (a no-op
     * unless x is an evictable file mapping) */
    fm_mat_evict_stream(x, c0, nc);
  }
  st = FM_OK;
fail:
  free(panel);
  free(z);
  return st;
}

/* ---- forcing one backend ---- */

static const backend_entry *find_backend(const char *name) {
  for (int i = 0; i < n_registered; i++)
    if (strcmp(registry[i].name, name) == 0) return &registry[i];
  return NULL;
}

/* FM_EARG "[<who>: ]no backend named 'x' is registered (registered: a, b,
 * reference)"; who may be NULL. */
static fm_status unknown_backend(const char *who, const char *name, fm_err *err) {
  char list[160];
  size_t used = 0;
  list[0] = '\0';
  for (int i = 0; i <= n_registered && used < sizeof list; i++) {
    const char *nm = i < n_registered ? registry[i].name : reference_name;
    int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", nm);
    if (w < 0) break;
    used += (size_t)w;
  }
  return fm_err_set(err, FM_EARG, "%s%sno backend named '%.*s' is registered (registered: %s)",
                    who ? who : "", who ? ": " : "", FM_BACKEND_NAME_MAX, name, list);
}

static const char *op_label(fm_op op) {
  switch (op) {
  case FM_OP_XB: return "X %*% B";
  case FM_OP_XTB: return "crossprod(X, B)";
  case FM_OP_XXTB: return "X %*% crossprod(X, B)";
  default: return "column sums";
  }
}

static const char *codec_label(const fm_mat *x, char *buf, size_t size) {
  switch (x->codec) {
  case FM_CODEC_F64: return "f64";
  case FM_CODEC_I32: return "i32";
  case FM_CODEC_BED2: return "bed2";
  case FM_CODEC_DOS8: return "dos8";
  case FM_CODEC_ALP: return "alp";
  case FM_CODEC_EXT:
    if (x->ext && x->ext->name) return x->ext->name;
    break;
  default: break; /* a codec added later: named by its id */
  }
  snprintf(buf, size, "id %d", (int)x->codec);
  return buf;
}

/* FM_EUNSUPPORTED naming the backend, the product and, after a colon, the
 * backend's own reason when it left one in err. */
static fm_status declined(const char *name, const fm_product *p, fm_err *err) {
  char reason[sizeof err->msg] = "";
  if (err && err->code == FM_EUNSUPPORTED && err->msg[0])
    memcpy(reason, err->msg, sizeof reason);
  char cols[48] = "", cbuf[24];
  if (p->op != FM_OP_COLSUMS)
    snprintf(cols, sizeof cols, " with B of %lld column%s", (long long)p->k,
             p->k == 1 ? "" : "s");
  return fm_err_set(err, FM_EUNSUPPORTED,
                    "backend '%s' does not support %s%s on codec %s (%lld x %lld)%s%s", name,
                    op_label(p->op), cols, codec_label(p->x, cbuf, sizeof cbuf),
                    (long long)p->x->n_rows, (long long)p->x->n_cols, reason[0] ? ": " : "",
                    reason);
}

/* ---- the per-thread record of the backends used (fm_backend_used) ---- */

static _Thread_local struct {
  int n;
  char names[FM_BACKEND_MAX + 1][FM_BACKEND_NAME_MAX + 1];
  char joined[(FM_BACKEND_MAX + 1) * (FM_BACKEND_NAME_MAX + 1)];
} used_rec;

static void note_used(const char *name) {
  for (int i = 0; i < used_rec.n; i++)
    if (strcmp(used_rec.names[i], name) == 0) return;
  if (used_rec.n > FM_BACKEND_MAX) return;
  snprintf(used_rec.names[used_rec.n++], FM_BACKEND_NAME_MAX + 1, "%s", name);
}

const char *fm_backend_used(void) {
  size_t len = 0;
  used_rec.joined[0] = '\0';
  for (int i = 0; i < used_rec.n; i++) {
    const int w = snprintf(used_rec.joined + len, sizeof used_rec.joined - len, "%s%s",
                           i ? "+" : "", used_rec.names[i]);
    len += (size_t)w; /* fits: at most FM_BACKEND_NAME_MAX + 1 bytes per name */
  }
  return used_rec.joined;
}

void fm_backend_used_clear(void) { used_rec.n = 0; }

/* One backend (or the reference path), no fallback; p validated. */
static fm_status run_one(const char *name, const fm_product *p, const fm_ctl *ctl,
                         const char **used_out, fm_err *err) {
  if (strcmp(name, reference_name) == 0) {
    if (used_out) *used_out = reference_name;
    note_used(reference_name);
    return fm_backend_reference(p, ctl, err);
  }
  const backend_entry *e = find_backend(name);
  if (!e) return unknown_backend("product", name, err);
  if (used_out) *used_out = e->name;
  note_used(e->name);
  fm_err_clear(err);
  fm_status st = e->fn(e->ud, p, ctl, err);
  if (st == FM_EUNSUPPORTED) return declined(e->name, p, err);
  if (st != FM_OK && err && err->code != st)
    fm_err_set(err, st, "backend '%s' failed with %s", e->name, fm_status_name(st));
  return st;
}

fm_status fm_backend_run_named(const char *name, const fm_product *p, const fm_ctl *ctl,
                               fm_err *err) {
  if (!name || !name[0])
    return fm_err_set(err, FM_EARG, "fm_backend_run_named: the backend name is empty");
  fm_status st = validate(p, err);
  if (st != FM_OK) return st;
  return run_one(name, p, ctl, NULL, err);
}

fm_status fm_backend_check(const char *name, fm_err *err) {
  if (!name || !name[0]) return fm_err_set(err, FM_EARG, "the backend name is empty");
  if (strcmp(name, reference_name) != 0 && !find_backend(name))
    return unknown_backend(NULL, name, err);
  return FM_OK;
}

static fm_status run_any(const fm_product *p, const fm_ctl *ctl, const char **used_out,
                         fm_err *err) {
  if (used_out) *used_out = NULL;
  fm_status st = validate(p, err);
  if (st != FM_OK) return st;
  if (ctl && ctl->backend && ctl->backend[0]) return run_one(ctl->backend, p, ctl, used_out, err);
  for (int i = 0; i < n_registered; i++) {
    const backend_entry *e = &registry[i];
    st = e->fn(e->ud, p, ctl, err);
    if (st == FM_EUNSUPPORTED) {
      fm_err_clear(err);
      continue;
    }
    if (used_out) *used_out = e->name;
    note_used(e->name);
    if (st != FM_OK && err && err->code != st)
      fm_err_set(err, st, "backend '%s' failed with %s", e->name, fm_status_name(st));
    return st;
  }
  if (used_out) *used_out = reference_name;
  note_used(reference_name);
  return fm_backend_reference(p, ctl, err);
}

/* The SIGBUS handler stays installed for the whole product (fm_fault.h):
 * the panels and the fused backend's blocks push their jump points under
 * it without a sigaction each. */
fm_status fm_backend_run(const fm_product *p, const fm_ctl *ctl, const char **used_out,
                         fm_err *err) {
  fm_fault_scope_enter();
  const fm_status st = run_any(p, ctl, used_out, err);
  fm_fault_scope_leave();
  return st;
}
