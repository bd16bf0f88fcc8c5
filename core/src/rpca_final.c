/* rpca_final.c: the last pass of fm_stats_rpca and its Rayleigh-Ritz step
 * (rpca_impl.h): Z = A'U0 (p x k) straight into the caller's v, Z = Qv R in
 * place, R' = P S Vt, so that A ~ U0 U0'A = (U0 P) S (Qv Vt')'. The values
 * come from this unsquared QR, not from the iteration's squared Ritz values,
 * so they keep eps * d[0] absolute accuracy given the subspace. Rows of v are
 * never held twice: Qv Vt' runs through row chunks of a small buffer.
 *
 * Signs (2024-05 design note): each component is flipped so that the entry
 * of largest magnitude of its left vector u (the first such entry on ties) is
 * positive, as scikit-learn's svd_flip(u_based_decision=True). */
#include "rpca_impl.h"

#include <stdlib.h>
#include <string.h>
#include <math.h>

/* Rows of v rotated per chunk: k x chunk doubles of scratch (4 MB at k = 64). */
#define RPCA_FINAL_CHUNK_ROWS 8192

fm_status rpca_final(const fm_mat *x, const fm_affine *aff, const double *col_div, int64_t k,
                     rpca_work *w, double zero_floor, double *d_out, double *u_out,
                     double *v_out, const fm_ctl *ctl, double *done, double total, fm_err *err) {
  const int64_t n = x->n_rows, p = x->n_cols;
  const int64_t chunk = p < RPCA_FINAL_CHUNK_ROWS ? p : RPCA_FINAL_CHUNK_ROWS;
  const int64_t scratch_len = (n > chunk ? n : chunk) * k;
  double *rk = malloc((size_t)(k * k) * sizeof *rk);  /* R of Z */
  double *rt = malloc((size_t)(k * k) * sizeof *rt);  /* R' */
  double *pk = malloc((size_t)(k * k) * sizeof *pk);  /* left vectors of R' */
  double *vtk = malloc((size_t)(k * k) * sizeof *vtk); /* right vectors', of R' */
  double *scratch = malloc((size_t)scratch_len * sizeof *scratch);
  fm_status st = FM_OK;
  if (!rk || !rt || !pk || !vtk || !scratch) {
    st = fm_err_set(err, FM_ENOMEM, "fm_stats_rpca: cannot allocate the final step's work");
    goto done;
  }
  const fm_blas_int N = (fm_blas_int)n, P = (fm_blas_int)p, K = (fm_blas_int)k;
  const double one = 1.0, zero = 0.0;

  st = rpca_product(FM_OP_XTB, x, aff, u_out, n, k, v_out, p, p, ctl, done, total, err);
  if (st != FM_OK) goto done;
  if (col_div)
    for (int64_t j = 0; j < k; j++)
      for (int64_t i = 0; i < p; i++) v_out[i + j * p] /= col_div[i];
  st = rpca_qr(w, v_out, p, k, rk, err);
  if (st != FM_OK) goto done;
  for (int64_t j = 0; j < k; j++)
    for (int64_t i = 0; i < k; i++) rt[i + j * k] = rk[j + i * k];
  st = rpca_svd(w, rt, k, d_out, pk, vtk, err);
  if (st != FM_OK) goto done;
  st = rpca_check_nonzero(d_out[0] * d_out[0], zero_floor, n, p, err);
  if (st != FM_OK) goto done;
  /* U = U0 P */
  memcpy(scratch, u_out, (size_t)(n * k) * sizeof *scratch);
  dgemm_("N", "N", &N, &K, &K, &one, scratch, &N, pk, &K, &zero, u_out, &N, FM_FCONE, FM_FCONE);
  /* V = Qv Vt' in row chunks */
  for (int64_t r0 = 0; r0 < p; r0 += chunk) {
    const int64_t nr = p - r0 < chunk ? p - r0 : chunk;
    const fm_blas_int R = (fm_blas_int)nr;
    dgemm_("N", "T", &R, &K, &K, &one, v_out + r0, &P, vtk, &K, &zero, scratch, &R, FM_FCONE,
           FM_FCONE);
    for (int64_t j = 0; j < k; j++)
      memcpy(v_out + r0 + j * p, scratch + j * nr, (size_t)nr * sizeof *scratch);
  }
  for (int64_t j = 0; j < k; j++) {
    double *uj = u_out + j * n, *vj = v_out + j * p;
    int64_t imax = 0;
    for (int64_t i = 1; i < n; i++)
      if (fabs(uj[i]) > fabs(uj[imax])) imax = i;
    if (uj[imax] < 0) {
      for (int64_t i = 0; i < n; i++) uj[i] = -uj[i];
      for (int64_t i = 0; i < p; i++) vj[i] = -vj[i];
    }
  }

done:
  free(rk);
  free(rt);
  free(pk);
  free(vtk);
  free(scratch);
  return st;
}
