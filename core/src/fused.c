/* fused.c: the fused genotype backend (fm_fused.h). Kernels land next; until
 * then it declines every product and the reference path computes. */
#include "fm/fm_fused.h"

void fm_fused_force_isa(fm_fused_isa isa) { (void)isa; }

const char *fm_fused_isa_name(void) { return "portable"; }

fm_status fm_fused_backend(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ud;
  (void)p;
  (void)ctl;
  (void)err;
  return FM_EUNSUPPORTED;
}
