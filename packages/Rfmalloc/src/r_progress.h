/* r_progress.h: progress reports from core loops to an R callback. */
#ifndef R_PROGRESS_H
#define R_PROGRESS_H

#include "r_glue.h"

typedef struct fmr_progress {
  fm_ctl base; /* fmr_ctl(): interrupt check */
  SEXP fn;     /* borrowed R function(done, total), or R_NilValue */
  double last;
  int failed;
} fmr_progress;

/* A control block that polls interrupts like fmr_ctl() and reports progress
 * to fn (when fn is a function). p must outlive the returned ctl; fn must be
 * protected by the caller. Main thread only. */
fm_ctl fmr_progress_ctl(fmr_progress *p, SEXP fn);

#endif
