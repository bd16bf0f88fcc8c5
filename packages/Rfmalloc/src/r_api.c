/* r_api.c: the functions behind inst/include/Rfmalloc.h and the core's
 * function table of inst/include/Rfmalloc_core.h, registered with
 * R_RegisterCCallable in r_init.c. Contracts: those headers. */
#include "r_runtime.h"

#include "fm/fm_codec_hap1.h"

SEXP Rfmalloc_vec_alloc(SEXP rt, int dtype, double length);
void *Rfmalloc_vec_ptr(SEXP x, int *dtype_out, double *n_bytes_out);
SEXP Rfmalloc_vec_runtime(SEXP x);

SEXP Rfmalloc_vec_alloc(SEXP rt, int dtype, double length) {
  if (dtype < FM_DTYPE_F64 || dtype > FM_DTYPE_HAP1)
    fmr_stop(FM_EARG, "dtype %d is not a stored dtype (1..%d)", dtype, (int)FM_DTYPE_HAP1);
  if (!(length >= 0) || length != (double)(int64_t)length)
    fmr_stop(FM_EARG, "length must be a whole number >= 0, not %g", length);
  return fmr_vec_alloc(rt, (fm_dtype)dtype, (int64_t)length);
}

void *Rfmalloc_vec_ptr(SEXP x, int *dtype_out, double *n_bytes_out) {
  fmr_vec *v = fmr_vec_of(x);
  if (!v) return NULL;
  void *p = fmr_vec_ptr(v);
  if (dtype_out) *dtype_out = (int)v->dtype;
  if (n_bytes_out) {
    size_t s = fm_dtype_size(v->dtype);
    *n_bytes_out = (double)v->length * (double)(s ? s : 1);
  }
  return p;
}

const unsigned long long *Rfmalloc_hap1_row(const void *data, double n_haps, double locus);
const unsigned long long *Rfmalloc_hap1_row(const void *data, double n_haps, double locus) {
  return (const unsigned long long *)fm_codec_hap1_row((const uint8_t *)data, (int64_t)n_haps,
                                                       (int64_t)locus);
}

SEXP Rfmalloc_vec_runtime(SEXP x) {
  return fmr_vec_of(x) ? R_ExternalPtrProtected(R_altrep_data1(x)) : R_NilValue;
}

/* The core's function table (inst/include/Rfmalloc_core.h), filled from the
 * same list the clients' forwarders are made from. */
#include <Rfmalloc_core.h>

static const Rfmalloc_core_api core_api = {
    RFMALLOC_CORE_VERSION, RFMALLOC_CORE_N,
#define FM_CORE_FN(ret, name, params, args) name,
#define FM_CORE_VOID(name, params, args) name,
#include <Rfmalloc_core_list.h>
#undef FM_CORE_FN
#undef FM_CORE_VOID
};

const Rfmalloc_core_api *Rfmalloc_core_api_get(void) { return &core_api; }
