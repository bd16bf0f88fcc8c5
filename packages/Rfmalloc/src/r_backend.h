/* r_backend.h: backend registration at load and the forced-backend option,
 * shared by the glue modules that run products (r_backend.c). */
#ifndef R_BACKEND_H
#define R_BACKEND_H

#include "r_glue.h"

#include "fm/fm_backend.h"

/* Register the built-in backends (the table in r_backend.c: fused, then
 * alp) first in the registry, each unless already registered; called from
 * R_init_Rfmalloc. A failure is a warning (products then take the
 * reference path), never an error that stops the load. */
void fmr_backends_register_builtin(void);

/* The backend that option fmalloc.backend forces, for the backend field of
 * the call's fm_ctl: NULL for a NULL option (normal dispatch; "mirai" when
 * option fmalloc.parallel is "mirai": r_parallel.h), else
 * "reference" or a registered name, copied into R_alloc memory (valid until
 * the .Call returns, whatever R code run meanwhile does to the option).
 * Call at the start of every .Call that runs products, before anything is
 * allocated. Raises fm_error_earg for a value that is not NULL or one
 * string, or a name that is not registered (the message lists the
 * registered ones). */
const char *fmr_backend_option(void);

/* Record name (copied; "" and NULL as "none") as the backend of the last
 * product or statistic, which fmalloc_last_backend() returns: the backend a
 * product used, "none" for a result empty or zero by shape, "colvar" for
 * the streamed statistics, the backends of a PCA's passes joined by "+"
 * (fm_backend_used). Call after the computation succeeded. */
void fmr_backend_note(const char *name);

#endif
