/* fm_fused.h: fused decode-and-multiply kernels for genotype codecs.
 *
 * The "fused" backend (fm_backend.h) computes products over 2-bit hardcalls
 * (FM_CODEC_BED2) and 1-byte dosages (FM_CODEC_DOS8) without building the
 * double panel of the reference path: the affine transform (centre, impute,
 * scale) is folded into per-variant lookup tables over the stored codes, and
 * the codes are consumed straight from the mapping. Each variant is written
 * as its most frequent code's value plus sparse corrections at the rows with
 * another code, so the work per product is about (genotypes not at their
 * variant's most frequent code) x k multiply-adds. It declines (before
 * writing y) every product it does not cover, and the reference path then
 * computes it.
 *
 * Covered: FM_OP_XB, FM_OP_XTB, FM_OP_XXTB with 1 <= k <= 64 and
 * FM_OP_COLSUMS, any column index (subsets, repeats, any order), any affine
 * transform with finite centre, scale and fill (each may be NULL; a NULL
 * fill leaves missing calls NaN, and NaN then reaches exactly the outputs the
 * reference path makes NaN). Declined: other ops and codecs, k > 64, more
 * than INT32_MAX rows, a non-finite entry of b or of the affine parameters,
 * a negative column index, inputs whose partial sums could exceed 1e300, and
 * products it cannot allocate for.
 *
 * Numerics: within 1e-12 of the reference path relative to the sum of the
 * absolute values of each output's terms (tests: core/tests/backend/fused). Results
 * are bit-identical for every thread count and panel budget (block size):
 * each output element is summed by one thread in an order fixed by the data;
 * they depend on the kernel set (fm_cpu_isa, fm_cpu.h) through rounding only.
 *
 * Instruction sets: the kernels of the level fm_cpu_isa() names (fm_cpu.h:
 * AVX-512 F and BW, AVX2 with FMA, BMI1, BMI2 and POPCNT, or portable C),
 * read once per product; no AVX code is reachable on a CPU without it, and
 * the test hook fm_cpu_cap selects a lower level. Threads: up to
 * fm_threads() (fm_base.h) POSIX threads per product, started and joined
 * within the call (fewer for small products); they block all signals.
 *
 * Memory: besides y, about (2 n + 1024) x k doubles (b transposed, row sums)
 * plus up to 3 MB of per-block tables; the stored bytes are read in blocks of
 * about 1 MB of variants, each released with fm_mat_evict_stream once
 * consumed. Cancellation is polled and progress reported once per block.
 *
 * Thread safety: the backend may run concurrently on distinct outputs. */
#ifndef FM_FUSED_H
#define FM_FUSED_H

#include "fm_backend.h"

#define FM_FUSED_BACKEND_NAME "fused"

/* The backend function, to register with fm_backend_register under
 * FM_FUSED_BACKEND_NAME (ud unused, may be NULL).
 * Shape:  as fm_product (fm_backend.h); y rows beyond its logical rows are
 *         never written.
 * Errors: FM_EUNSUPPORTED (declined, y untouched; err gives the reason:
 *         "B has 65 columns, outside the 1 to 64 it takes", "B[3, 1] is not
 *         finite ...", "the fill of column 2 is not finite (nan)", ...),
 *         FM_ECANCELLED (y unspecified); nothing else.
 * Owns:   borrows p and everything it points to; writes only p->y.
 * Source: the sparse decomposition and blocking are this project's design
 *         (core/src/backend/fused_impl.h); oracle fm_backend_reference. */
FM_NODISCARD fm_status fm_fused_backend(void *ud, const fm_product *p, const fm_ctl *ctl,
                                        fm_err *err);

#endif
