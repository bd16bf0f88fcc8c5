/* r_ext.c: codec matrices over external codecs (FM_CODEC_EXT in fm_panel.h)
 * and backend registration for other packages; the C callables behind
 * inst/include/Rfmalloc.h (Rfmalloc_ext_matrix, Rfmalloc_backend_register,
 * Rfmalloc_backend_unregister), plus a row-major test codec and its backend
 * for the test suite (.test_ext_matrix).
 *
 * The storage of an external-codec matrix is an external pointer tagged
 * `fm_ext_codec` whose address is an fmr_ext_store (malloc'ed, freed by the
 * finalizer) and whose protected value is the owner of the bytes (for
 * Rgguf: the gguf_file handle keeping the model's mapping alive). */
#include "r_ext.h"
#include "r_calls.h"

#include "fm/fm_backend.h"

#include <stdlib.h>
#include <string.h>

static SEXP ext_tag(void) { return Rf_install("fm_ext_codec"); }

/* Live stores, so that a registrant that unloads can release its codecs
 * (Rfmalloc_ext_release): their matrices then raise instead of calling
 * code or reading a mapping that is gone. */
static fmr_ext_store *live_stores;

static void ext_finalize(SEXP ptr) {
  fmr_ext_store *s = R_ExternalPtrAddr(ptr);
  if (s) {
    if (s->prev) s->prev->next = s->next;
    else live_stores = s->next;
    if (s->next) s->next->prev = s->prev;
    free(s);
    R_ClearExternalPtr(ptr);
  }
}

const fmr_ext_store *fmr_ext_store_of(SEXP storage) {
  if (TYPEOF(storage) != EXTPTRSXP || R_ExternalPtrTag(storage) != ext_tag()) return NULL;
  const fmr_ext_store *s = R_ExternalPtrAddr(storage);
  if (!s)
    fmr_stop(FM_ECLOSED, "the bytes behind this external-codec matrix are gone (an external "
                         "pointer does not survive saveRDS() or a new session); make the "
                         "matrix again from its source");
  if (!s->codec)
    fmr_stop(FM_ECLOSED, "the codec of this external-codec matrix was released (the package "
                         "that made it was unloaded); make the matrix again");
  return s;
}

static SEXP ext_storage_new(const fm_ext_codec *codec, const void *data, double n_rows,
                            double n_cols, double stride, double n_bytes, SEXP owner) {
  if (!codec || !codec->decode) fmr_stop(FM_EARG, "the external codec has no decoder");
  if (!(n_rows >= 0) || !(n_cols >= 0) || n_rows != (double)(int64_t)n_rows ||
      n_cols != (double)(int64_t)n_cols || n_rows > 9e15 || n_cols > 9e15)
    fmr_stop(FM_EARG, "external codec '%s': dimensions %g x %g must be whole numbers >= 0",
             codec->name ? codec->name : "?", n_rows, n_cols);
  if (!data && n_rows > 0 && n_cols > 0)
    fmr_stop(FM_EARG, "external codec '%s': no data for a %g x %g matrix",
             codec->name ? codec->name : "?", n_rows, n_cols);
  fmr_ext_store *s = malloc(sizeof *s);
  if (!s) fmr_stop(FM_ENOMEM, "cannot allocate an external-codec matrix");
  s->codec = codec;
  s->data = data;
  s->n_rows = (int64_t)n_rows;
  s->n_cols = (int64_t)n_cols;
  s->stride = (int64_t)stride;
  s->n_bytes = n_bytes;
  s->prev = NULL;
  s->next = live_stores;
  if (live_stores) live_stores->prev = s;
  live_stores = s;
  SEXP ptr = PROTECT(R_MakeExternalPtr(s, ext_tag(), owner));
  R_RegisterCFinalizerEx(ptr, ext_finalize, TRUE);
  UNPROTECT(1);
  return ptr;
}

int Rfmalloc_ext_release(const fm_ext_codec *codec) {
  int n = 0;
  for (fmr_ext_store *s = live_stores; s; s = s->next) {
    if (s->codec == codec) {
      s->codec = NULL;
      s->data = NULL;
      n++;
    }
  }
  return n;
}

SEXP Rfmalloc_ext_matrix(const fm_ext_codec *codec, const void *data, double n_rows,
                         double n_cols, double stride, double n_bytes, SEXP owner,
                         SEXP dimnames, const char *source) {
  int nprot = 0;
  SEXP ptr = PROTECT(ext_storage_new(codec, data, n_rows, n_cols, stride, n_bytes, owner));
  nprot++;
  SEXP ns = Rf_findVarInFrame(R_NamespaceRegistry, Rf_install("Rfmalloc"));
  if (ns == R_UnboundValue || TYPEOF(ns) != ENVSXP)
    fmr_stop(FM_EINTERNAL, "the Rfmalloc namespace is not loaded");
  SEXP fun = Rf_findVarInFrame(ns, Rf_install(".new_ext_matrix"));
  SEXP s_rows = PROTECT(Rf_ScalarReal(n_rows));
  nprot++;
  SEXP s_cols = PROTECT(Rf_ScalarReal(n_cols));
  nprot++;
  SEXP s_src = PROTECT(Rf_mkString(source ? source : (codec->name ? codec->name : "external")));
  nprot++;
  SEXP call = PROTECT(Rf_lang6(fun, ptr, s_rows, s_cols, dimnames, s_src));
  nprot++;
  SEXP res = Rf_eval(call, ns);
  UNPROTECT(nprot);
  return res;
}

void Rfmalloc_backend_register(const char *name, fm_backend_fn fn, void *ud) {
  fm_err err;
  if (fm_backend_register(name, fn, ud, &err) != FM_OK) fmr_raise(&err);
}

int Rfmalloc_backend_unregister(const char *name) { return fm_backend_unregister(name); }

/* list(name = codec name, bytes = payload bytes, rows, cols) of ext storage. */
SEXP fmr_ext_info(SEXP storage) {
  const fmr_ext_store *s = fmr_ext_store_of(storage);
  if (!s) fmr_stop(FM_EARG, "not the storage of an external-codec matrix");
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 4));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, 4));
  SET_VECTOR_ELT(out, 0, Rf_mkString(s->codec->name ? s->codec->name : "external"));
  SET_VECTOR_ELT(out, 1, Rf_ScalarReal(s->n_bytes));
  SET_VECTOR_ELT(out, 2, Rf_ScalarReal((double)s->n_rows));
  SET_VECTOR_ELT(out, 3, Rf_ScalarReal((double)s->n_cols));
  static const char *names[] = {"name", "bytes", "rows", "cols"};
  for (int i = 0; i < 4; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

/* ---- a test codec: a double matrix stored row-major ----------------------
 * The bytes are those of a double vector holding t(m) (so row i of m is
 * contiguous), the layout shape of a GGML tensor; col_stride is unused. */
static fm_status rowmajor_decode(const fm_mat *x, int64_t r0, int64_t n_rows, int64_t c0,
                                 int64_t n_cols, double *out, int64_t ld, fm_err *err) {
  (void)err;
  const double *d = (const double *)x->data;
  const int64_t row_len = x->n_stored_cols;
  for (int64_t j = 0; j < n_cols; j++)
    for (int64_t i = 0; i < n_rows; i++) out[i + j * ld] = d[(r0 + i) * row_len + c0 + j];
  return FM_OK;
}

static const fm_ext_codec rowmajor_codec = {"test rowmajor f64", rowmajor_decode, NULL};

/* The matching test backend: X %*% b straight from the row-major bytes for
 * the test codec without column index or transform; declines the rest. */
static fm_status rowmajor_backend(void *ud, const fm_product *p, const fm_ctl *ctl,
                                  fm_err *err) {
  (void)ud; (void)ctl;
  const fm_mat *x = p->x;
  if (x->codec != FM_CODEC_EXT || x->ext != &rowmajor_codec || p->op != FM_OP_XB ||
      x->col_index || (p->aff && (p->aff->center || p->aff->scale || p->aff->fill)))
    return fm_err_set(err, FM_EUNSUPPORTED, "ext_rowmajor computes only plain X %%*%% b");
  const double *d = (const double *)x->data;
  for (int64_t c = 0; c < p->k; c++)
    for (int64_t i = 0; i < x->n_rows; i++) {
      double s = 0;
      for (int64_t j = 0; j < x->n_cols; j++) s += d[i * x->n_cols + j] * p->b[j + c * p->ldb];
      p->y[i + c * p->ldy] = s;
    }
  return FM_OK;
}

/* .test_ext_matrix(tm, nrow, ncol): tm is t(m) as a double vector. */
SEXP fmr_test_ext_matrix(SEXP tm, SEXP s_rows, SEXP s_cols) {
  if (TYPEOF(tm) != REALSXP) fmr_stop(FM_EARG, "the test codec stores doubles");
  double nr = Rf_asReal(s_rows), nc = Rf_asReal(s_cols);
  if (!(nr * nc == (double)XLENGTH(tm)))
    fmr_stop(FM_EARG, "%g x %g values expected, got %lld", nr, nc, (long long)XLENGTH(tm));
  return Rfmalloc_ext_matrix(&rowmajor_codec, REAL_RO(tm), nr, nc, 0, 8.0 * nr * nc, tm,
                             R_NilValue, "test rowmajor");
}

SEXP fmr_test_ext_release(void) { return Rf_ScalarInteger(Rfmalloc_ext_release(&rowmajor_codec)); }

SEXP fmr_test_ext_backend(SEXP s_on) {
  Rfmalloc_backend_unregister("ext_rowmajor");
  if (Rf_asLogical(s_on)) Rfmalloc_backend_register("ext_rowmajor", rowmajor_backend, NULL);
  return R_NilValue;
}

/* This module's .Call entry points (r_calls.h; r_init.c registers them). */
const R_CallMethodDef fmr_ext_calls[] = {
    FMR_CALLDEF(fmr_ext_info, 1),
    FMR_CALLDEF(fmr_test_ext_matrix, 3),
    FMR_CALLDEF(fmr_test_ext_backend, 1),
    FMR_CALLDEF(fmr_test_ext_release, 0),
    {NULL, NULL, 0}};
