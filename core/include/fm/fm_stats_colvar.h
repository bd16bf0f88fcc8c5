/* fm_stats_colvar.h: streamed column means and variances over any fm_mat.
 *
 * Missing values (NaN/NA for F64, INT32_MIN for I32, code 01 for BED2, 255
 * for DOS8) are excluded: each column's mean and variance use its observed
 * values only, and the variance has denominator n_obs - 1 (as var()).
 * A column with no observed value has mean NaN; fewer than two, variance NaN.
 * Accumulation is two-pass per column block in double (dense codecs) or exact
 * from genotype counts (BED2), so results do not depend on block size.
 * Source: Chan, Golub and LeVeque (1983) on the two-pass algorithm. Oracle:
 * apply(X, 2, var) in R; plink2 --freq for allele frequencies. */
#ifndef FM_STATS_COLVAR_H
#define FM_STATS_COLVAR_H

#include "fm_base.h"
#include "fm_panel.h"

/* Shape: mean_out, var_out (may be NULL) and n_obs_out (may be NULL) have
 * length x->n_cols. Errors: FM_ECANCELLED, FM_ENOMEM, FM_EARG. */
FM_NODISCARD fm_status fm_stats_colvar(const fm_mat *x, double *mean_out, double *var_out,
                                       int64_t *n_obs_out, const fm_ctl *ctl, fm_err *err);

#endif
