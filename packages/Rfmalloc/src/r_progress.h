/* r_progress.h: progress reports from core loops to an R callback.
 * Implemented in r_err.c, beside the cancel poll whose state it shares. */
#ifndef R_PROGRESS_H
#define R_PROGRESS_H

#include "r_glue.h"

typedef struct fmr_progress {
  SEXP fn;     /* borrowed R function(done, total), or R_NilValue */
  double last; /* done of the last report */
} fmr_progress;

/* A control block that polls R like fmr_ctl() and reports progress to fn
 * (when fn is a function) when done grew by a whole unit and when done first
 * reaches total. fn runs with the caller's condition handlers in place; a
 * condition or restart that leaves it cancels the core call and reaches R
 * from fmr_raise / fmr_finish. p must outlive the returned ctl; fn must be
 * protected by the caller. Main thread only. */
fm_ctl fmr_progress_ctl(fmr_progress *p, SEXP fn);

#endif
