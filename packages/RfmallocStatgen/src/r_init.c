/* r_init.c: registers the .Call entry points of RfmallocStatgen (each glue
 * module's table, r_calls.h) and looks Rfmalloc's core table up. Dynamic
 * symbol lookup is off. */
#include <Rfmalloc_core.h>

#include <Rfmalloc_calls.h>

#include "r_calls.h"

static const R_CallMethodDef *const module_tables[] = {stg_gwas_calls, stg_ld_calls,
                                                        stg_ldscore_calls, stg_coloc_calls,
                                                        stg_ldpred2_calls, stg_clump_calls};

void R_init_RfmallocStatgen(DllInfo *dll) {
  Rfmalloc_core_init();
  Rfmalloc_register_calls(dll, module_tables,
                          (int)(sizeof module_tables / sizeof module_tables[0]));
}
