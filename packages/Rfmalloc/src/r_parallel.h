/* r_parallel.h: block-partitioned products on mirai daemons (the "mirai"
 * backend, r_parallel.c; its R side is R/parallel.R) and the registry of
 * mapped files it finds a matrix's file in. */
#ifndef R_PARALLEL_H
#define R_PARALLEL_H

#include "r_glue.h"

#include "fm/fm_backend.h"
#include "fm/fm_fileview.h"

#define FMR_MIRAI_BACKEND "mirai"

/* The mapped files a daemon can open by path: the glue's fileviews
 * (r_codec.c adds each at open and removes it at close) and the persistent
 * runtimes (r_runtime.h, fmr_runtime_holding). */
void fmr_fileviews_add(const fm_fileview *v);
void fmr_fileviews_remove(const fm_fileview *v);

/* C callables (inst/include/Rfmalloc.h): a file another package mapped,
 * and the R function that makes its external-codec matrices on a daemon. */
void Rfmalloc_file_add(const char *path, int fd, const void *base, double n_bytes, const char *opener);
void Rfmalloc_file_remove(const void *base);

/* The backend: declines every product unless the call forces it (option
 * fmalloc.parallel = "mirai", r_backend.c); then computes the product of a
 * matrix in one of those files in blocks of columns through R/parallel.R,
 * on R's main thread (another matrix: as without the option). */
fm_status fmr_mirai_backend(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err);

/* Records R's main thread (R_init_Rfmalloc). */
void fmr_parallel_init(void);

#endif
