/* fm_backend.h: panel products and the backend registry.
 *
 * A product is described by fm_product. fm_backend_run offers it to each
 * registered backend in registration order; a backend either computes the
 * whole result or declines by returning FM_EUNSUPPORTED *before writing y*.
 * When every backend declines (or none is registered), the reference path
 * runs: decode bounded panels (fm_panel_decode) and hand them to BLAS dgemm.
 * Specialisation may change speed, never whether a result exists or what it
 * is (backends are tested against the reference path).
 *
 * Operations, with X the n x p logical matrix after its affine transform:
 *   FM_OP_XB       y (n x k) = X  b        with b p x k
 *   FM_OP_XTB      y (p x k) = X' b        with b n x k
 *   FM_OP_XXTB     y (n x k) = X (X' b)    with b n x k: the Gram product of
 *                  a subspace iteration in one pass over X (each column
 *                  block C is read once for z = X_C' b and y += X_C z)
 *   FM_OP_COLSUMS  y (p x k): y[j] = sum_i X[i, j], y[j + ldy] = sum_i
 *                  X[i, j]^2 and, when k is 3, y[j + 2 ldy] = the number
 *                  of entries of column j that are missing as stored
 *                  (before the transform's fill replaces them: the count
 *                  behind an na.rm mean in the same pass); k must be 2 or
 *                  3, b and ldb are ignored (b may be NULL)
 * Missing values that the affine transform leaves as NaN propagate as NaN.
 * A backend must decline every op it does not know: ops may be added.
 *
 * External codecs (FM_CODEC_EXT, fm_panel.h) take the reference path like
 * any codec; a backend that knows an external codec recognises it by the
 * fm_ext_codec pointer (or its decode function) and declines all others.
 * R packages register backends in Rfmalloc's registry through the C
 * callables of Rfmalloc's inst/include/Rfmalloc.h (one registry per
 * process, in Rfmalloc's copy of this module).
 *
 * Forcing (for users and tests): fm_backend_run_named runs one named
 * backend, or the reference path alone, with no fallback; the backend field
 * of the call's fm_ctl makes fm_backend_run behave so, which reaches the
 * products run inside the core with that ctl (randomized PCA) too. The
 * setting belongs to the call: concurrent calls may force different
 * backends.
 *
 * Thread safety: registration is not thread-safe (do it from one thread
 * while no product runs); fm_backend_run, fm_backend_run_named and
 * fm_backend_check may be called concurrently. */
#ifndef FM_BACKEND_H
#define FM_BACKEND_H

#include "fm_base.h"
#include "fm_panel.h"

typedef enum fm_op { FM_OP_XB = 1, FM_OP_XTB = 2, FM_OP_XXTB = 3, FM_OP_COLSUMS = 4 } fm_op;

typedef struct fm_product {
  fm_op op;
  const fm_mat *x;       /* borrowed */
  const fm_affine *aff;  /* borrowed, or NULL */
  const double *b;       /* borrowed: (p x k) for XB, (n x k) for XTB and XXTB,
                            col-major; unused for COLSUMS */
  int64_t ldb;
  int64_t k;             /* columns of b and y, >= 1 (2 for COLSUMS) */
  double *y;             /* out: (n x k) for XB and XXTB, (p x k) for XTB and
                            COLSUMS, col-major */
  int64_t ldy;
} fm_product;

/* A backend: compute *p fully, or return FM_EUNSUPPORTED without writing p->y. */
typedef fm_status (*fm_backend_fn)(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err);

#define FM_BACKEND_MAX 16
#define FM_BACKEND_NAME_MAX 63

/* Append a backend. Errors: FM_EARG (empty/long name, name taken or the
 *         reserved "reference", NULL fn),
 * FM_ENOSPC (FM_BACKEND_MAX reached). ud is borrowed for as long as the
 * backend stays registered. */
FM_NODISCARD fm_status fm_backend_register(const char *name, fm_backend_fn fn, void *ud,
                                           fm_err *err);

/* Remove the backend named name, keeping the order of the others; nonzero
 * if one was removed. */
int fm_backend_unregister(const char *name);

int fm_backend_count(void);
const char *fm_backend_name(int i); /* borrowed; NULL when out of range */

/* Compute *p (see above). With ctl->backend set (not NULL or ""), this is
 * fm_backend_run_named(ctl->backend, p, ctl, err): no fallback, FM_EARG when
 * no backend has that name (a name that was registered when the caller
 * checked it and has gone since included). used_out (may be NULL) receives
 * the name of the backend that produced the result (or the error),
 * "reference" for the reference path; borrowed, valid until the registry
 * next changes.
 * Shape:  y rows beyond its logical rows (up to ldy) are never written.
 * Errors: FM_EARG (unknown op, x invalid, k < 1, ldb/ldy below the rows of
 *         b/y, NULL b or y), FM_ECANCELLED, FM_ENOMEM, or a backend's own
 *         error (not a decline); a backend that returns an error without
 *         filling err gets a message naming it. On error y is unspecified.
 * Owns:   borrows p and everything it points to; writes only p->y. */
FM_NODISCARD fm_status fm_backend_run(const fm_product *p, const fm_ctl *ctl,
                                      const char **used_out, fm_err *err);

/* Offer *p to the backend named name alone, with no fallback; name
 * "reference" runs the reference path (fm_backend_reference).
 * Errors: FM_EARG when no backend is named name (the message lists the
 *         registered ones); FM_EUNSUPPORTED when that backend declines, with
 *         a message naming the backend, the op, the columns of B and the
 *         codec, e.g. "backend 'fused' does not support X %*% B with B of 65
 *         columns on codec bed2 (1000 x 20)", followed by the backend's own
 *         reason when it gave one; otherwise as fm_backend_run (ctl->backend
 *         is ignored here).
 * Owns:   as fm_backend_run. */
FM_NODISCARD fm_status fm_backend_run_named(const char *name, const fm_product *p,
                                            const fm_ctl *ctl, fm_err *err);

/* Check a name for fm_ctl.backend (and fm_backend_run_named): a registered
 * backend or "reference". Lets a caller refuse a bad name before it starts
 * work, with its own words in front of the message.
 * Errors: FM_EARG for NULL, "" or a name that is not registered ("no
 *         backend named 'x' is registered (registered: ...)", no prefix). */
FM_NODISCARD fm_status fm_backend_check(const char *name, fm_err *err);

/* The backends that computed products on the calling thread since its last
 * fm_backend_used_clear (or since it started): their distinct names in the
 * order of first use, joined by "+" ("reference" for the reference path),
 * or "" when none did; e.g. "reference+alp" after fm_stats_rpca over ALP
 * storage, whose alp backend declines X X' B (the reference path computes
 * those passes) and computes X' B. A product counts once fm_backend_run or
 * fm_backend_run_named has chosen its backend, whatever its status (in
 * fm_backend_run's fallback a backend that declines is not chosen). For
 * callers whose products run inside another core function; at most
 * FM_BACKEND_MAX + 1 names are kept.
 * Owns:   a buffer of the calling thread, valid until that thread's next
 *         product or clear. Thread safety: each thread has its own record. */
const char *fm_backend_used(void);
void fm_backend_used_clear(void);

/* The reference path alone: zero y, then for each panel of
 * fm_panel_plan_for(x, fm_panel_budget()) (columns outer, rows inner) decode
 * it into one buffer allocated once and accumulate with dgemm:
 *   XB:  y[R, :] += P b[C, :]      XTB: y[C, :] += P' b[R, :]
 *   XXTB: z = sum over R of P' b[R, :] (a column block's z, cols x k), then
 *         y[R, :] += P z (panels decoded twice when a column is taller than
 *         one panel)
 *   COLSUMS: per column, sums in row order (so the result does not depend
 *         on the plan at all).
 * Once a column block is consumed it calls fm_mat_evict_stream on it, so a
 * pass over an evictable file mapping keeps about one block resident.
 * Polls ctl->cancel once before each panel decode and reports progress after
 * each, in panels (done, total). Same contract as fm_backend_run, plus FM_EARG when
 * k, ldb or ldy exceed INT_MAX (BLAS integers are 32-bit). Results depend on
 * the panel plan only through floating-point summation order. */
FM_NODISCARD fm_status fm_backend_reference(const fm_product *p, const fm_ctl *ctl, fm_err *err);

#endif
