/* r_calls.h: the .Call tables of RfmallocStatgen's glue modules (r_init.c
 * joins them; the convention of r_calls.h in every package of the stack). */
#ifndef STG_R_CALLS_H
#define STG_R_CALLS_H

#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

#define STG_CALLDEF(name, n) {#name, (DL_FUNC)&name, n}

extern const R_CallMethodDef stg_gwas_calls[]; /* r_gwas.c: association tests */
extern const R_CallMethodDef stg_ld_calls[];   /* r_ld.c: LD bands and their products */
extern const R_CallMethodDef stg_ldscore_calls[]; /* r_ldscore.c: LD scores */
extern const R_CallMethodDef stg_coloc_calls[]; /* r_coloc.c: colocalisation */
extern const R_CallMethodDef stg_ldpred2_calls[]; /* r_ldpred2.c: LDpred2 */
extern const R_CallMethodDef stg_clump_calls[]; /* r_clump.c: clumping and pruning */

#endif
