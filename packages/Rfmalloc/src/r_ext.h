/* r_ext.h: the storage of codec matrices over external codecs (r_ext.c). */
#ifndef R_EXT_H
#define R_EXT_H

#include "r_glue.h"
#include "fm/fm_backend.h"
#include "fm/fm_panel.h"

/* What an external-pointer storage tagged `fm_ext_codec` points at. */
typedef struct fmr_ext_store {
  const fm_ext_codec *codec; /* borrowed from the registrant (static storage);
                                NULL once the registrant released it */
  struct fmr_ext_store *prev, *next; /* the list of live stores (r_ext.c) */
  const void *data;          /* borrowed: bytes kept alive by the pointer's owner */
  int64_t n_rows, n_cols;    /* stored shape */
  int64_t stride;            /* passed to the codec as fm_mat.col_stride */
  double n_bytes;            /* payload bytes (for printing) */
} fmr_ext_store;

/* The store behind storage, or NULL when storage is not external-codec
 * storage. Raises fm_error_eclosed when the pointer was cleared (after
 * saveRDS()/readRDS()) or its codec released (the registrant unloaded). */
const fmr_ext_store *fmr_ext_store_of(SEXP storage);

/* C callables (inst/include/Rfmalloc.h), registered by r_init.c. */
SEXP Rfmalloc_ext_matrix(const fm_ext_codec *codec, const void *data, double n_rows,
                         double n_cols, double stride, double n_bytes, SEXP owner,
                         SEXP dimnames, const char *source);
void Rfmalloc_backend_register(const char *name, fm_backend_fn fn, void *ud);
int Rfmalloc_backend_unregister(const char *name);
int Rfmalloc_ext_release(const fm_ext_codec *codec);

#endif
