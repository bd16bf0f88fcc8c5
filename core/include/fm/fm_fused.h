/* fm_fused.h: fused decode-and-multiply kernels for genotype codecs.
 *
 * The "fused" backend (fm_backend.h) computes products over 2-bit hardcalls
 * (FM_CODEC_BED2) and 1-byte dosages (FM_CODEC_DOS8) without building the
 * double panel of the reference path: the affine transform (centre, impute,
 * scale) is folded into per-variant lookup tables over the stored codes, and
 * the codes are consumed straight from the mapping. It declines (before
 * writing y) every product it does not cover, and the reference path then
 * computes it.
 *
 * Instruction sets: AVX-512 kernels when the CPU has AVX-512 F and BW, else
 * AVX2 kernels when it has AVX2, FMA, BMI1 and BMI2 (CPUID at run time,
 * including the OS's support for the vector state), portable C otherwise; the
 * library runs on any x86-64 (and other) CPU, and no AVX code is reachable on
 * a CPU without it. Threads: fm_threads() (fm_base.h) workers per product.
 *
 * Thread safety: the backend may run concurrently on distinct outputs;
 * fm_fused_force_isa is a test hook (not thread-safe). */
#ifndef FM_FUSED_H
#define FM_FUSED_H

#include "fm_backend.h"

#define FM_FUSED_BACKEND_NAME "fused"

/* The backend function, to register with fm_backend_register under
 * FM_FUSED_BACKEND_NAME (ud unused, may be NULL). */
FM_NODISCARD fm_status fm_fused_backend(void *ud, const fm_product *p, const fm_ctl *ctl,
                                        fm_err *err);

typedef enum fm_fused_isa {
  FM_FUSED_ISA_AUTO = 0,     /* the best the CPU has */
  FM_FUSED_ISA_PORTABLE = 1, /* plain C */
  FM_FUSED_ISA_AVX2 = 2,     /* AVX2 + FMA; when the CPU lacks them, portable */
  FM_FUSED_ISA_AVX512 = 3    /* AVX-512; when the CPU lacks it, as AUTO */
} fm_fused_isa;

/* Test hook: use the best kernels the CPU runs, but none above isa (AUTO
 * and AVX512 restore the default). Results differ between kernel sets in
 * rounding only (FMA, vector width); within one set they are bit-identical
 * for every thread count and block size. */
void fm_fused_force_isa(fm_fused_isa isa);

/* Name of the kernels in use: "avx512", "avx2" or "portable". */
const char *fm_fused_isa_name(void);

#endif
