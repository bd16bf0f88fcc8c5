/* r_glue.h: shared helpers of the Rfmalloc glue (not an API for other packages;
 * those use inst/include/Rfmalloc.h). */
#ifndef R_GLUE_H
#define R_GLUE_H

#define R_NO_REMAP
#include <R.h>
#include <Rinternals.h>

#include "fm/fm_base.h"
#include "fm/fm_map.h"

/* Raise the core error as an R condition of classes
 * c("fm_error_<name>", "fm_error", "error", "condition"). Never returns.
 * Copy anything needed from err before releasing C resources, then call this. */
void fmr_raise(const fm_err *err) __attribute__((noreturn));

/* Raise an fm_error of the given status with a formatted message. */
void fmr_stop(fm_status code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* The fm_map of a runtime external pointer (class "fmalloc_runtime");
 * raises fm_error_eclosed "mapping of '<path>' is closed" after cleanup_fmalloc. */
fm_map *fmr_runtime_map(SEXP rt);

/* fm_ctl whose cancel callback runs R_CheckUserInterrupt inside
 * R_ToplevelExec (so R cannot longjmp over C frames). Main thread only. */
fm_ctl fmr_ctl(void);

#endif
