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
 * Copy anything needed from err before releasing C resources, then call this.
 * FM_ECANCELLED raises its cause (see fmr_finish). */
void fmr_raise(const fm_err *err) __attribute__((noreturn));

/* Raise an fm_error of the given status with a formatted message. */
void fmr_stop(fm_status code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* The fm_map of a runtime external pointer (class "fmalloc_runtime");
 * raises fm_error_eclosed "mapping of '<path>' is closed" after cleanup_fmalloc. */
fm_map *fmr_runtime_map(SEXP rt);

/* fm_ctl whose cancel callback runs R_CheckUserInterrupt (at most every
 * 10 ms) with the caller's handlers in place, without letting R longjmp over
 * C frames (r_err.c), and whose settings are the stack's (fmr_settings_into).
 * Use: ctl = fmr_ctl() before acquiring C resources (a bad option raises);
 * st = <core call>(..., &ctl, &err); release C resources; then
 * fmr_raise(&err) when st != FM_OK, or fmr_finish(st, &err). Main thread
 * only. */
fm_ctl fmr_ctl(void);

/* The one place the stack's settings are read (r_settings.c), into the
 * call's control block: backend (option fmalloc.backend), threads (option
 * fmalloc.threads), panel_bytes (option fmalloc.panel_bytes) and forked (a
 * fork since Rfmalloc loaded). Raises fm_error_earg for an option that is
 * set but unusable, naming it. Every package's core calls get their ctl
 * through it (fmr_ctl, fmr_progress_ctl, the C callable Rfmalloc_ctl). */
void fmr_settings_into(fm_ctl *ctl);

/* Registers the fork handler behind fm_ctl.forked (R_init_Rfmalloc). */
void fmr_settings_init(void);

/* After a core call with a control block of fmr_ctl() or fmr_progress_ctl()
 * (right after it, in the same .Call): continue an R jump its callbacks
 * caught, raise a caught user interrupt as fm_error_ecancelled, else raise
 * err when st != FM_OK; returns only when there is nothing to raise. */
void fmr_finish(fm_status st, const fm_err *err);

#endif
