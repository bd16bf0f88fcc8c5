/* rpca_final.c: the last pass of fm_stats_rpca and its Rayleigh-Ritz step
 * (rpca_impl.h): Z = A'U0 (p x k) straight into the caller's v, Z = Qv R,
 * R' = P S Vt, so that A ~ U0 U0'A = (U0 P) S (Qv Vt')'. The values come
 * from this unsquared QR, not from the iteration's squared Ritz values, so
 * they keep eps * d[0] absolute accuracy given the subspace.
 *
 * Two ways to the same result:
 * - in place (the default): one XTB pass into all of v, Householder QR of v
 *   in place, then v := Qv Vt' in row chunks of a small buffer, so rows of
 *   v are never held twice, but all of v is resident at the end.
 * - streamed (opts v_release, v in a MAP_SHARED file mapping): the XTB pass
 *   runs over column chunks of A into a small buffer whose rows are copied
 *   into v and whose Gram Z'Z is accumulated; R comes from CholeskyQR2
 *   (Fukaya, Nakatsukasa, Yanagisawa and Yamamoto 2014, "CholeskyQR2: a
 *   simple and communication-avoiding algorithm for computing a tall-skinny
 *   QR factorization", ScalA'14): R1 = chol(Z'Z), Q1 = Z R1^-1, R2 =
 *   chol(Q1'Q1), Q = Q1 R2^-1, R = R2 R1, which needs only streamed passes
 *   over v in row chunks (Q1 with the second Gram, then v := Q1 R2^-1 Vt'
 *   with the signs folded in). Each chunk's whole pages of v leave the
 *   resident set once written (madvise through fm_mat_evict_cols); their
 *   contents stay in the file. CholeskyQR2 is as accurate as Householder
 *   (residual and orthogonality O(eps)) while cond(Z) = d[0] / d[k-1] stays
 *   below about eps^-1/2; beyond 1e7 (estimated from the eigenvalues of
 *   Z'Z), or when a Cholesky factorization fails, the in-place Householder
 *   path runs on v instead, touching all of it, and v is released after.
 *
 * Signs (2024-05 design note): each component is flipped so that the entry
 * of largest magnitude of its left vector u (the first such entry on ties) is
 * positive, as scikit-learn's svd_flip(u_based_decision=True). */
#include "stats_rpca_impl.h"

#include <stdlib.h>
#include <string.h>
#include <math.h>

/* Rows of v rotated per chunk in place: k x chunk doubles of scratch (4 MB
 * at k = 64). */
#define RPCA_FINAL_CHUNK_ROWS 8192

/* Streamed path: cond(Z) above this (d[k-1] < 1e-7 d[0]) goes to Householder. */
#define RPCA_CHOLQR_MAX_COND 1e7

/* Buffers of the final step. */
typedef struct final_bufs {
  double *rk;      /* (k x k) R of Z */
  double *rt;      /* (k x k) R' */
  double *pk;      /* (k x k) left vectors of R' */
  double *vtk;     /* (k x k) right vectors', of R' */
  double *scratch; /* (max(n, chunk) x k) U0 copy, row chunks of v */
} final_bufs;

/* Sign of component j: + when the entry of largest magnitude of u's column
 * j (the first on ties) is positive. */
static int u_sign(const double *uj, int64_t n) {
  int64_t imax = 0;
  for (int64_t i = 1; i < n; i++)
    if (fabs(uj[i]) > fabs(uj[imax])) imax = i;
  return uj[imax] < 0 ? -1 : 1;
}

/* With R in b->rk (times r1 on the right when given): R' = P S Vt into
 * d_out, b->pk, b->vtk; d checked against zero; U = U0 P in u_out. */
static fm_status small_step(rpca_work *w, final_bufs *b, const double *r1, int64_t n, int64_t p,
                            int64_t k, double zero_floor, double *d_out, double *u_out,
                            fm_err *err) {
  const fm_blas_int N = (fm_blas_int)n, K = (fm_blas_int)k;
  const double one = 1.0, zero = 0.0;
  if (r1)
    dtrmm_("R", "U", "N", "N", &K, &K, &one, r1, &K, b->rk, &K, FM_FCONE, FM_FCONE, FM_FCONE,
           FM_FCONE);
  for (int64_t j = 0; j < k; j++)
    for (int64_t i = 0; i < k; i++) b->rt[i + j * k] = b->rk[j + i * k];
  fm_status st = rpca_svd(w, b->rt, k, d_out, b->pk, b->vtk, err);
  if (st != FM_OK) return st;
  st = rpca_check_nonzero(d_out[0] * d_out[0], zero_floor, n, p, err);
  if (st != FM_OK) return st;
  memcpy(b->scratch, u_out, (size_t)(n * k) * sizeof *b->scratch);
  dgemm_("N", "N", &N, &K, &K, &one, b->scratch, &N, b->pk, &K, &zero, u_out, &N, FM_FCONE,
         FM_FCONE);
  return FM_OK;
}

/* From Z in v (p x k): Householder QR in place, R := R r1 when r1 (k x k,
 * upper) is given (v then held Z r1^-1), SVD of R', u := U0 P, v := Qv Vt'
 * in row chunks, d, signs. */
static fm_status finish_householder(rpca_work *w, final_bufs *b, const double *r1, int64_t n,
                                    int64_t p, int64_t k, double zero_floor, double *d_out,
                                    double *u_out, double *v_out, fm_err *err) {
  const int64_t chunk = p < RPCA_FINAL_CHUNK_ROWS ? p : RPCA_FINAL_CHUNK_ROWS;
  const fm_blas_int P = (fm_blas_int)p, K = (fm_blas_int)k;
  const double one = 1.0, zero = 0.0;
  fm_status st = rpca_qr(w, v_out, p, k, b->rk, err);
  if (st != FM_OK) return st;
  st = small_step(w, b, r1, n, p, k, zero_floor, d_out, u_out, err);
  if (st != FM_OK) return st;
  /* V = Qv Vt' in row chunks */
  for (int64_t r0 = 0; r0 < p; r0 += chunk) {
    const int64_t nr = p - r0 < chunk ? p - r0 : chunk;
    const fm_blas_int R = (fm_blas_int)nr;
    dgemm_("N", "T", &R, &K, &K, &one, v_out + r0, &P, b->vtk, &K, &zero, b->scratch, &R,
           FM_FCONE, FM_FCONE);
    for (int64_t j = 0; j < k; j++)
      memcpy(v_out + r0 + j * p, b->scratch + j * nr, (size_t)nr * sizeof *b->scratch);
  }
  for (int64_t j = 0; j < k; j++) {
    double *uj = u_out + j * n, *vj = v_out + j * p;
    if (u_sign(uj, n) < 0) {
      for (int64_t i = 0; i < n; i++) uj[i] = -uj[i];
      for (int64_t i = 0; i < p; i++) vj[i] = -vj[i];
    }
  }
  return FM_OK;
}

/* Rows [r0, r0 + nr) of every column of v (p x k) leave the resident set:
 * each column's run is stored column 0 of a one-column evictable view, so
 * fm_mat_evict_cols's page rounding applies (the page holding the byte after
 * the run stays: the next chunk, or column j + 1, starts there). */
static void release_rows(double *v, int64_t p, int64_t k, int64_t r0, int64_t nr) {
  for (int64_t j = 0; j < k; j++) {
    const fm_mat run = {.codec = FM_CODEC_F64,
                        .data = v + j * p + r0,
                        .n_rows = nr,
                        .n_cols = 1,
                        .col_stride = nr * (int64_t)sizeof(double),
                        .flags = FM_MAT_EVICTABLE};
    fm_mat_evict_cols(&run, 0, 1);
  }
}

/* All of v but the page holding its last byte's successor. */
static void release_all(double *v, int64_t p, int64_t k) {
  const fm_mat whole = {.codec = FM_CODEC_F64,
                        .data = v,
                        .n_rows = p,
                        .n_cols = k,
                        .col_stride = p * (int64_t)sizeof(double),
                        .flags = FM_MAT_EVICTABLE};
  fm_mat_evict_cols(&whole, 0, k);
}

/* Rows [r0, r0 + nr) of v (p x k) to or from buf (nr x k, ld nr). */
static void gather_rows(const double *v, int64_t p, int64_t k, int64_t r0, int64_t nr,
                        double *buf) {
  for (int64_t j = 0; j < k; j++)
    memcpy(buf + j * nr, v + j * p + r0, (size_t)nr * sizeof *buf);
}

static void scatter_rows(double *v, int64_t p, int64_t k, int64_t r0, int64_t nr,
                         const double *buf) {
  for (int64_t j = 0; j < k; j++)
    memcpy(v + j * p + r0, buf + j * nr, (size_t)nr * sizeof *buf);
}

/* Progress of one chunk's product, mapped onto [base, base + width) of the
 * run's pass count. */
typedef struct chunk_relay {
  const fm_ctl *outer;
  double base, width, total;
} chunk_relay;

static int chunk_cancel(void *ud) { return fm_ctl_cancelled(((const chunk_relay *)ud)->outer); }

static void chunk_progress(void *ud, double done, double total) {
  const chunk_relay *r = ud;
  double frac = total > 0 ? done / total : 0.0;
  if (!(frac >= 0.0)) frac = 0.0;
  if (frac > 1.0) frac = 1.0;
  fm_ctl_progress(r->outer, r->base + r->width * frac, r->total);
}

/* Logical columns [c0, c0 + nc) of x as a view of their own, with the
 * affine arrays offset to match; idx (nc) holds the stored column numbers
 * for codecs whose columns are not col_stride apart (EXT, ALP). */
static void sub_view(const fm_mat *x, const fm_affine *aff, int64_t c0, int64_t nc, int64_t *idx,
                     fm_mat *xs, fm_affine *as) {
  *xs = *x;
  xs->n_cols = nc;
  if (x->col_index) {
    xs->col_index = x->col_index + c0;
  } else if (x->codec == FM_CODEC_EXT || x->codec == FM_CODEC_ALP) {
    for (int64_t i = 0; i < nc; i++) idx[i] = c0 + i;
    xs->col_index = idx;
  } else if (x->data) {
    xs->data = (const unsigned char *)x->data + c0 * x->col_stride;
  }
  *as = aff ? *aff : (fm_affine){0};
  if (as->center) as->center += c0;
  if (as->scale) as->scale += c0;
  if (as->fill) as->fill += c0;
}

/* Upper Cholesky factor of g (k x k, upper part read) in place, the lower
 * part zeroed; 0 when g is not numerically positive definite. */
static int cholesky_upper(double *g, int64_t k) {
  const fm_blas_int K = (fm_blas_int)k;
  fm_blas_int info = 0;
  dpotrf_("U", &K, g, &K, &info, FM_FCONE);
  if (info != 0) return 0;
  for (int64_t j = 0; j < k; j++)
    for (int64_t i = j + 1; i < k; i++) g[i + j * k] = 0.0;
  return 1;
}

/* One streamed pass over the rows of v (p x k) in chunks, each released
 * once written: v := v tri^-1 (tri upper triangular k x k; gram, when
 * given, += the new rows' Gram) or, with tri NULL, v := v mat (k x k).
 * buf, buf2: chunk x k scratch. */
static fm_status stream_rows(double *v, int64_t p, int64_t k, int64_t chunk, const double *tri,
                             const double *mat, double *gram, double *buf, double *buf2,
                             const fm_ctl *ctl, fm_err *err) {
  const fm_blas_int K = (fm_blas_int)k;
  const double one = 1.0, zero = 0.0;
  for (int64_t r0 = 0; r0 < p; r0 += chunk) {
    if (fm_ctl_cancelled(ctl))
      return fm_err_set(err, FM_ECANCELLED, "fm_stats_rpca: cancelled in the final step");
    const int64_t nr = p - r0 < chunk ? p - r0 : chunk;
    const fm_blas_int NR = (fm_blas_int)nr;
    gather_rows(v, p, k, r0, nr, buf);
    double *out = buf;
    if (tri) {
      dtrsm_("R", "U", "N", "N", &NR, &K, &one, tri, &K, buf, &NR, FM_FCONE, FM_FCONE, FM_FCONE,
             FM_FCONE);
      if (gram) dsyrk_("U", "T", &K, &NR, &one, buf, &NR, &one, gram, &K, FM_FCONE, FM_FCONE);
    } else {
      dgemm_("N", "N", &NR, &K, &K, &one, buf, &NR, mat, &K, &zero, buf2, &NR, FM_FCONE, FM_FCONE);
      out = buf2;
    }
    scatter_rows(v, p, k, r0, nr, out);
    release_rows(v, p, k, r0, nr);
  }
  return FM_OK;
}

/* The streamed final step (see the top of this file). */
static fm_status final_streamed(const fm_mat *x, const fm_affine *aff, const double *col_div,
                                int64_t k, rpca_work *w, final_bufs *b, double zero_floor,
                                double *d_out, double *u_out, double *v_out, const fm_ctl *ctl,
                                double *done, double total, fm_err *err) {
  const int64_t n = x->n_rows, p = x->n_cols;
  /* chunks of budget / 16 bytes of k doubles per row (4 MiB by default) */
  int64_t chunk = (int64_t)(fm_panel_budget(ctl) / (16u * sizeof(double) * (size_t)k));
  if (chunk < 1) chunk = 1;
  if (chunk > p) chunk = p;
  const fm_blas_int K = (fm_blas_int)k;
  const double one = 1.0;
  double *buf = malloc((size_t)(chunk * k) * sizeof *buf);  /* (chunk x k) */
  double *buf2 = malloc((size_t)(chunk * k) * sizeof *buf2); /* (chunk x k) */
  int64_t *idx = malloc((size_t)chunk * sizeof *idx);       /* (chunk) */
  double *r1 = calloc((size_t)(k * k), sizeof *r1);          /* (k x k) Z'Z, then R1 */
  double *r2 = calloc((size_t)(k * k), sizeof *r2);          /* (k x k) Q1'Q1, then R2 */
  double *m = malloc((size_t)(k * k) * sizeof *m);           /* (k x k) R2^-1 Vt' signs */
  double *lam = malloc((size_t)k * sizeof *lam);
  fm_status st = FM_OK;
  if (!buf || !buf2 || !idx || !r1 || !r2 || !m || !lam) {
    st = fm_err_set(err, FM_ENOMEM, "fm_stats_rpca: cannot allocate the final step's work");
    goto done;
  }

  /* Z = A'U0 by column chunks of A: rows of v, Gram Z'Z, release */
  for (int64_t c0 = 0; c0 < p; c0 += chunk) {
    const int64_t nc = p - c0 < chunk ? p - c0 : chunk;
    const fm_blas_int NC = (fm_blas_int)nc;
    if (fm_ctl_cancelled(ctl)) {
      st = fm_err_set(err, FM_ECANCELLED, "fm_stats_rpca: cancelled in the final pass");
      goto done;
    }
    fm_mat xs;
    fm_affine as;
    sub_view(x, aff, c0, nc, idx, &xs, &as);
    chunk_relay rl = {ctl, *done + (double)c0 / (double)p, (double)nc / (double)p, total};
    const fm_ctl inner = fm_ctl_relay(ctl, chunk_cancel, chunk_progress, &rl);
    double inner_done = 0.0;
    st = rpca_product(FM_OP_XTB, &xs, &as, u_out, n, k, buf, nc, nc, ctl ? &inner : NULL,
                      &inner_done, 1.0, err);
    if (st != FM_OK) goto done;
    if (col_div)
      for (int64_t j = 0; j < k; j++)
        for (int64_t i = 0; i < nc; i++) buf[i + j * nc] /= col_div[c0 + i];
    dsyrk_("U", "T", &K, &NC, &one, buf, &NC, &one, r1, &K, FM_FCONE, FM_FCONE);
    scatter_rows(v_out, p, k, c0, nc, buf);
    release_rows(v_out, p, k, c0, nc);
  }
  *done += 1.0;
  fm_ctl_progress(ctl, *done, total);

  /* cond(Z)^2 from the eigenvalues of Z'Z; Householder beyond the limit */
  memcpy(m, r1, (size_t)(k * k) * sizeof *m);
  st = rpca_eig(w, m, k, lam, 0, err);
  if (st != FM_OK) goto done;
  const double lim = RPCA_CHOLQR_MAX_COND * RPCA_CHOLQR_MAX_COND;
  if (!(lam[0] > 0 && lam[k - 1] <= lim * lam[0]) || !cholesky_upper(r1, k)) {
    st = finish_householder(w, b, NULL, n, p, k, zero_floor, d_out, u_out, v_out, err);
    goto done;
  }

  /* Q1 = Z R1^-1 in place, Gram Q1'Q1 */
  st = stream_rows(v_out, p, k, chunk, r1, NULL, r2, buf, buf2, ctl, err);
  if (st != FM_OK) goto done;
  if (!cholesky_upper(r2, k)) { /* v holds Q1 = Z R1^-1 */
    st = finish_householder(w, b, r1, n, p, k, zero_floor, d_out, u_out, v_out, err);
    goto done;
  }

  /* R = R2 R1, R' = P S Vt, U = U0 P */
  memcpy(b->rk, r2, (size_t)(k * k) * sizeof *b->rk);
  st = small_step(w, b, r1, n, p, k, zero_floor, d_out, u_out, err);
  if (st != FM_OK) goto done;
  /* M = R2^-1 Vt' diag(signs), the signs taken from u and applied to it */
  for (int64_t j = 0; j < k; j++) {
    double *uj = u_out + j * n;
    const double sg = u_sign(uj, n) < 0 ? -1.0 : 1.0;
    if (sg < 0)
      for (int64_t i = 0; i < n; i++) uj[i] = -uj[i];
    for (int64_t i = 0; i < k; i++) m[i + j * k] = sg * b->vtk[j + i * k];
  }
  dtrsm_("L", "U", "N", "N", &K, &K, &one, r2, &K, m, &K, FM_FCONE, FM_FCONE, FM_FCONE, FM_FCONE);

  /* v := Q1 M */
  st = stream_rows(v_out, p, k, chunk, NULL, m, NULL, buf, buf2, ctl, err);

done:
  if (st == FM_OK) release_all(v_out, p, k);
  free(buf);
  free(buf2);
  free(idx);
  free(r1);
  free(r2);
  free(m);
  free(lam);
  return st;
}

fm_status rpca_final(const fm_mat *x, const fm_affine *aff, const double *col_div, int64_t k,
                     int v_release, rpca_work *w, double zero_floor, double *d_out,
                     double *u_out, double *v_out, const fm_ctl *ctl, double *done, double total,
                     fm_err *err) {
  const int64_t n = x->n_rows, p = x->n_cols;
  const int64_t chunk = p < RPCA_FINAL_CHUNK_ROWS ? p : RPCA_FINAL_CHUNK_ROWS;
  const int64_t scratch_len = (n > chunk ? n : chunk) * k;
  final_bufs b = {malloc((size_t)(k * k) * sizeof(double)), malloc((size_t)(k * k) * sizeof(double)),
                  malloc((size_t)(k * k) * sizeof(double)), malloc((size_t)(k * k) * sizeof(double)),
                  malloc((size_t)scratch_len * sizeof(double))};
  fm_status st = FM_OK;
  if (!b.rk || !b.rt || !b.pk || !b.vtk || !b.scratch) {
    st = fm_err_set(err, FM_ENOMEM, "fm_stats_rpca: cannot allocate the final step's work");
    goto done;
  }
  if (v_release) {
    st = final_streamed(x, aff, col_div, k, w, &b, zero_floor, d_out, u_out, v_out, ctl, done,
                        total, err);
    goto done;
  }
  st = rpca_product(FM_OP_XTB, x, aff, u_out, n, k, v_out, p, p, ctl, done, total, err);
  if (st != FM_OK) goto done;
  if (col_div)
    for (int64_t j = 0; j < k; j++)
      for (int64_t i = 0; i < p; i++) v_out[i + j * p] /= col_div[i];
  st = finish_householder(w, &b, NULL, n, p, k, zero_floor, d_out, u_out, v_out, err);

done:
  free(b.rk);
  free(b.rt);
  free(b.pk);
  free(b.vtk);
  free(b.scratch);
  return st;
}
