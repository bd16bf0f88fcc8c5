/* r_parallel.c: the "mirai" backend. A product forced to it (option
 * fmalloc.parallel = "mirai": r_backend.c puts the name in the call's
 * fm_ctl, which reaches every product of the call, a PCA's passes
 * included) is handed, with the path, identity and layout of the file its
 * matrix lies in, to R/parallel.R, which computes it in blocks of columns
 * on mirai daemons (or in this process when none are running) and reduces
 * the blocks in their order. Daemons map the file read-only by path, so
 * the matrix's bytes must lie in a file: a fileview of the glue (a .bed of
 * fmalloc_bed_open(), registered here as it opens and closes), a
 * persistent runtime (its codec matrices and mapped vectors; the runtime
 * writes its pages to the file first, fm_map_identity), or a file another
 * package registered with the R function that makes its external-codec
 * matrices again on a daemon (Rfmalloc_file_add: Rgguf's GGUF files). */
#include "r_parallel.h"
#include "r_calls.h"
#include "r_runtime.h"
#include "r_ext.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_t main_thread;
/* The product the backend is handing to R, for blocks computed in this
 * process on its own mapping (fmr_local_block); NULL outside. */
static const fm_product *current;
static const fm_ctl *current_ctl;
static const fm_fileview **views;
static int n_views, cap_views;

/* Files of other packages (Rfmalloc_file_add) */
typedef struct foreign_file {
  char *path, *opener;
  int fd;
  const uint8_t *base;
  uint64_t n_bytes;
  struct foreign_file *next;
} foreign_file;
static foreign_file *foreign;

void fmr_parallel_init(void) { main_thread = pthread_self(); }

void fmr_fileviews_add(const fm_fileview *v) {
  if (n_views == cap_views) {
    int cap = cap_views ? 2 * cap_views : 16;
    const fm_fileview **grown = realloc(views, (size_t)cap * sizeof *views);
    if (!grown) return; /* unregistered: its products cannot go to daemons (a clear decline) */
    views = grown;
    cap_views = cap;
  }
  views[n_views++] = v;
}

void fmr_fileviews_remove(const fm_fileview *v) {
  for (int i = 0; i < n_views; i++)
    if (views[i] == v) {
      views[i] = views[--n_views];
      return;
    }
}

void Rfmalloc_file_add(const char *path, int fd, const void *base, double n_bytes, const char *opener) {
  if (!path || fd < 0 || !base || !(n_bytes > 0) || !opener || !strstr(opener, "::"))
    fmr_stop(FM_EARG, "Rfmalloc_file_add: a path, an open descriptor, a mapping and an opener \"pkg::fun\" are needed");
  foreign_file *f = calloc(1, sizeof *f);
  if (f) {
    f->path = strdup(path);
    f->opener = strdup(opener);
  }
  if (!f || !f->path || !f->opener) {
    if (f) free(f->path);
    free(f);
    fmr_stop(FM_ENOMEM, "Rfmalloc_file_add: out of memory");
  }
  f->fd = fd;
  f->base = base;
  f->n_bytes = (uint64_t)n_bytes;
  f->next = foreign;
  foreign = f;
}

void Rfmalloc_file_remove(const void *base) {
  for (foreign_file **at = &foreign; *at; at = &(*at)->next)
    if ((*at)->base == base) {
      foreign_file *f = *at;
      *at = f->next;
      free(f->path);
      free(f->opener);
      free(f);
      return;
    }
}

/* The registered view whose mapping holds p, or NULL. */
static const fm_fileview *view_holding(const void *p) {
  const uint8_t *q = p;
  for (int i = 0; i < n_views; i++)
    if (views[i]->base && q >= views[i]->base && q < views[i]->base + views[i]->n_bytes) return views[i];
  return NULL;
}

static SEXP doubles_or_null(const double *p, int64_t n) {
  if (!p) return R_NilValue;
  SEXP v = Rf_allocVector(REALSXP, (R_xlen_t)n);
  memcpy(REAL(v), p, (size_t)n * sizeof(double));
  return v;
}

static SEXP identity_strings(const fm_file_identity *id) {
  char buf[3][32];
  snprintf(buf[0], sizeof buf[0], "%llu", (unsigned long long)id->size);
  snprintf(buf[1], sizeof buf[1], "%lld", (long long)id->mtime_ns);
  snprintf(buf[2], sizeof buf[2], "%016llx", (unsigned long long)id->checksum);
  SEXP s = PROTECT(Rf_allocVector(STRSXP, 3));
  for (int i = 0; i < 3; i++) SET_STRING_ELT(s, i, Rf_mkChar(buf[i]));
  UNPROTECT(1);
  return s;
}

/* Where a daemon finds bytes p: the file it maps by path, p's offset there
 * and the file's identity. */
typedef struct file_at {
  const char *path;
  uint64_t off;
  fm_file_identity id;
  const char *opener; /* a foreign file's: makes its matrices on a daemon */
} file_at;

/* *found = 1 and *f when a file holds p: for an external codec's bytes
 * (ext) a foreign file, else a registered fileview or a persistent
 * runtime; *found = 0 when none does. f->id is read (the file's bytes,
 * after a runtime's msync) only when identity is nonzero. Errors: reading
 * the identity. */
static fm_status file_holding(const void *p, int ext, int identity, file_at *f, int *found, fm_err *err) {
  *found = 0;
  if (ext) {
    const uint8_t *q = p;
    for (const foreign_file *g = foreign; g; g = g->next)
      if (q >= g->base && q < g->base + g->n_bytes) {
        *f = (file_at){g->path, (uint64_t)(q - g->base), {0}, g->opener};
        *found = 1;
        return identity ? fm_fd_identity(g->fd, g->path, g->n_bytes, &f->id, err) : FM_OK;
      }
    return FM_OK;
  }
  const fm_fileview *v = view_holding(p);
  if (v) {
    *f = (file_at){v->path, (uint64_t)((const uint8_t *)p - v->base), {0}, NULL};
    *found = 1;
    return identity ? fm_fileview_identity(v, &f->id, err) : FM_OK;
  }
  uint64_t off;
  fmr_runtime *r = fmr_runtime_holding(p, &off);
  if (!r) return FM_OK;
  *f = (file_at){r->path, off, {0}, NULL};
  *found = 1;
  return identity ? fm_map_identity(r->map, &f->id, err) : FM_OK;
}

static SEXP named_list(int n, const char **names) {
  SEXP s = PROTECT(Rf_allocVector(VECSXP, n));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, n));
  for (int i = 0; i < n; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
  Rf_setAttrib(s, R_NamesSymbol, nm);
  UNPROTECT(2);
  return s;
}

/* list(path, identity, codec, n_rows, n_cols, n_stored, offset, stride,
 * cols, opener) of x in file f: what a daemon needs to map the same
 * columns (the spec of fmr_view_new over the whole file: offset is in the
 * file; for an external codec, the opener's arguments). */
static SEXP file_spec(const fm_mat *x, const file_at *f) {
  static const char *names[] = {"path", "identity", "codec", "n_rows", "n_cols", "n_stored", "offset", "stride", "cols", "opener"};
  SEXP s = PROTECT(named_list(10, names));
  int64_t n_stored = x->n_cols;
  if (x->codec == FM_CODEC_ALP || x->codec == FM_CODEC_EXT) n_stored = x->n_stored_cols;
  else if (x->col_index)
    for (int64_t j = n_stored = 0; j < x->n_cols; j++)
      if (x->col_index[j] + 1 > n_stored) n_stored = x->col_index[j] + 1;
  SET_VECTOR_ELT(s, 0, Rf_mkString(f->path));
  SET_VECTOR_ELT(s, 1, identity_strings(&f->id));
  SET_VECTOR_ELT(s, 2, Rf_ScalarReal((double)x->codec));
  SET_VECTOR_ELT(s, 3, Rf_ScalarReal((double)x->n_rows));
  SET_VECTOR_ELT(s, 4, Rf_ScalarReal((double)x->n_cols));
  SET_VECTOR_ELT(s, 5, Rf_ScalarReal((double)n_stored));
  SET_VECTOR_ELT(s, 6, Rf_ScalarReal((double)f->off));
  SET_VECTOR_ELT(s, 7, Rf_ScalarReal((double)x->col_stride));
  if (x->col_index) { /* 1-based stored columns, as a codec matrix's cols */
    SEXP c = SET_VECTOR_ELT(s, 8, Rf_allocVector(REALSXP, (R_xlen_t)x->n_cols));
    for (int64_t j = 0; j < x->n_cols; j++) REAL(c)[j] = (double)x->col_index[j] + 1;
  }
  if (f->opener) SET_VECTOR_ELT(s, 9, Rf_mkString(f->opener));
  UNPROTECT(1);
  return s;
}

/* list(center, scale, fill, fill_all) of aff over n columns (NULL parts,
 * fill_all NA when unset). */
static SEXP affine_list(const fm_affine *aff, int64_t n) {
  static const char *names[] = {"center", "scale", "fill", "fill_all"};
  SEXP a = PROTECT(named_list(4, names));
  if (aff) {
    SET_VECTOR_ELT(a, 0, doubles_or_null(aff->center, n));
    SET_VECTOR_ELT(a, 1, doubles_or_null(aff->scale, n));
    SET_VECTOR_ELT(a, 2, doubles_or_null(aff->fill, n));
  }
  SET_VECTOR_ELT(a, 3, Rf_ScalarReal(aff && aff->fill_all_set ? aff->fill_all : NA_REAL));
  UNPROTECT(1);
  return a;
}

static SEXP list_elt(SEXP lst, const char *name) {
  SEXP nm = Rf_getAttrib(lst, R_NamesSymbol);
  for (R_xlen_t i = 0; !Rf_isNull(nm) && i < XLENGTH(lst); i++)
    if (strcmp(CHAR(STRING_ELT(nm, i)), name) == 0) return VECTOR_ELT(lst, i);
  return R_NilValue;
}

/* The call's settings without the forcing: the registry's order. */
static fm_ctl unforced(const fm_ctl *ctl) {
  fm_ctl c = *ctl;
  c.backend = NULL;
  return c;
}

fm_status fmr_mirai_backend(void *ud, const fm_product *p, const fm_ctl *ctl, fm_err *err) {
  (void)ud;
  if (!ctl || !ctl->backend || strcmp(ctl->backend, FMR_MIRAI_BACKEND) != 0) return FM_EUNSUPPORTED;
  if (!pthread_equal(pthread_self(), main_thread))
    return fm_err_set(err, FM_EUNSUPPORTED, "it runs on R's main thread only");
  if (current) return fm_err_set(err, FM_EINTERNAL, "the mirai backend was re-entered");
  const fm_mat *x = p->x;
  file_at f;
  int found = 0;
  fm_status st = file_holding(x->data, x->codec == FM_CODEC_EXT, 1, &f, &found, err);
  if (st != FM_OK) return st;
  if (!found || x->n_cols == 0) {
    /* daemons could not open it (or there is nothing to cut): here, as
     * without the option; the call's record of backends names the one
     * that computed it, not this one */
    fm_backend_used_clear();
    const fm_ctl c = unforced(ctl);
    return fm_backend_run(p, &c, NULL, err);
  }
  const int64_t rows_b = p->op == FM_OP_XB ? x->n_cols : x->n_rows;
  const int64_t rows_y = p->op == FM_OP_XB || p->op == FM_OP_XXTB ? x->n_rows : x->n_cols;
  if (rows_b > INT_MAX || rows_y > INT_MAX || p->k > INT_MAX)
    return fm_err_set(err, FM_EUNSUPPORTED, "its operands would be R matrices of 2^31 rows or more");
  int nprot = 0;
  SEXP b = R_NilValue;
  if (p->op != FM_OP_COLSUMS) {
    b = PROTECT(Rf_allocMatrix(REALSXP, (int)rows_b, (int)p->k));
    nprot++;
    for (int64_t c = 0; c < p->k; c++)
      memcpy(REAL(b) + c * rows_b, p->b + c * p->ldb, (size_t)rows_b * sizeof(double));
  }
  SEXP ns = PROTECT(R_FindNamespace(Rf_mkString("Rfmalloc")));
  nprot++;
  SEXP fun = PROTECT(Rf_findFun(Rf_install(".fm_parallel_product"), ns));
  nprot++;
  SEXP spec = PROTECT(file_spec(x, &f));
  SEXP aff = PROTECT(affine_list(p->aff, x->n_cols));
  SEXP op = PROTECT(Rf_ScalarInteger((int)p->op)), k = PROTECT(Rf_ScalarInteger((int)p->k));
  nprot += 4;
  SEXP call = PROTECT(Rf_lang6(fun, spec, op, b, k, aff));
  nprot++;
  if (p->op == FM_OP_XB || p->op == FM_OP_XXTB) /* the blocks' sums start from 0 (fmr_consume_block) */
    for (int64_t c = 0; c < p->k; c++) memset(p->y + c * p->ldy, 0, (size_t)rows_y * sizeof(double));
  int failed = 0;
  /* .fm_parallel_product catches every condition itself: nothing jumps
   * over these frames */
  current = p;
  current_ctl = ctl;
  SEXP r = PROTECT(R_tryEval(call, R_GlobalEnv, &failed));
  nprot++;
  current = NULL;
  current_ctl = NULL;
  if (failed || (!Rf_isNull(r) && TYPEOF(r) != VECSXP)) {
    st = fm_err_set(err, FM_EINTERNAL, "the mirai backend's R side (.fm_parallel_product) failed");
  } else if (!Rf_isNull(r)) { /* list(status = "<fm_status_name>", message) */
    SEXP name = list_elt(r, "status"), msg = list_elt(r, "message");
    st = FM_EINTERNAL;
    for (int c = FM_OK + 1; c < FM_EEND; c++)
      if (TYPEOF(name) == STRSXP && XLENGTH(name) == 1 && strcmp(CHAR(STRING_ELT(name, 0)), fm_status_name((fm_status)c)) == 0)
        st = (fm_status)c;
    st = fm_err_set(err, st, "%s", TYPEOF(msg) == STRSXP && XLENGTH(msg) == 1 ? CHAR(STRING_ELT(msg, 0)) : "a block failed");
  }
  UNPROTECT(nprot);
  return st;
}

/* .Call(fmr_consume_block, first, count, r): block r (the product of
 * columns first .. first + count - 1, 0-based) of the product being
 * computed, reduced into its output in place: added for X B and X X'B (in
 * block order, from 0: the sums a serial run makes), its rows placed for
 * X'B and column sums. */
static SEXP fmr_consume_block(SEXP s_first, SEXP s_count, SEXP r) {
  if (!current) fmr_stop(FM_EARG, "no product is being computed by the mirai backend");
  const fm_product *p = current;
  const int64_t first = (int64_t)Rf_asReal(s_first), count = (int64_t)Rf_asReal(s_count);
  const int sums = p->op == FM_OP_XB || p->op == FM_OP_XXTB;
  const int64_t rows = sums ? p->x->n_rows : count;
  if (first < 0 || count < 1 || first + count > p->x->n_cols || TYPEOF(r) != REALSXP || Rf_nrows(r) != rows ||
      Rf_ncols(r) != p->k)
    fmr_stop(FM_EINTERNAL, "block of columns %lld..%lld: a result of another shape",
             (long long)first + 1, (long long)(first + count));
  const double *src = REAL_RO(r);
  for (int64_t c = 0; c < p->k; c++) {
    double *y = p->y + c * p->ldy;
    if (sums)
      for (int64_t i = 0; i < rows; i++) y[i] += src[i + c * rows];
    else
      memcpy(y + first, src + c * rows, (size_t)rows * sizeof(double));
  }
  return R_NilValue;
}

/* .Call(fmr_local_block, first, count, b) -> the block of columns first
 * .. first + count - 1 (0-based) of the product the backend is computing,
 * on this process's own mapping, through the registry: what a daemon
 * computes for that block (the same columns, transform and op), for runs
 * without daemons. b: the block's rows of b for X B, else b itself or
 * NULL. */
static SEXP fmr_local_block(SEXP s_first, SEXP s_count, SEXP b) {
  if (!current) fmr_stop(FM_EARG, "no product is being computed by the mirai backend");
  const fm_product *p = current;
  const int64_t first = (int64_t)Rf_asReal(s_first), count = (int64_t)Rf_asReal(s_count);
  if (first < 0 || count < 1 || first + count > p->x->n_cols) fmr_stop(FM_EARG, "block outside the matrix");
  fm_mat sub = *p->x;
  int64_t *ci = (int64_t *)R_alloc((size_t)count, sizeof *ci);
  for (int64_t j = 0; j < count; j++) ci[j] = p->x->col_index ? p->x->col_index[first + j] : first + j;
  sub.n_cols = count;
  sub.col_index = ci;
  fm_affine aff = {0};
  if (p->aff) {
    aff = *p->aff;
    if (aff.center) aff.center += first;
    if (aff.scale) aff.scale += first;
    if (aff.fill) aff.fill += first;
  }
  const int64_t rows_y = p->op == FM_OP_XB || p->op == FM_OP_XXTB ? sub.n_rows : count;
  const int64_t k = p->op == FM_OP_COLSUMS ? p->k : Rf_ncols(b);
  if (p->op != FM_OP_COLSUMS &&
      (TYPEOF(b) != REALSXP || Rf_nrows(b) != (p->op == FM_OP_XB ? count : sub.n_rows)))
    fmr_stop(FM_EARG, "the block's operand has the wrong shape");
  SEXP y = PROTECT(Rf_allocMatrix(REALSXP, (int)rows_y, (int)k));
  fm_product q = {p->op, &sub, &aff, p->op == FM_OP_COLSUMS ? NULL : REAL_RO(b),
                  p->op == FM_OP_COLSUMS ? 1 : Rf_nrows(b), k, REAL(y), rows_y};
  const fm_ctl c = unforced(current_ctl);
  fm_err err;
  if (fm_backend_run(&q, &c, NULL, &err) != FM_OK) fmr_raise(&err);
  UNPROTECT(1);
  return y;
}

/* .Call(fmr_fileview_identity, view) -> character c(size, mtime in ns,
 * checksum in hex) of a mapped file (fm_fileview_identity). */
static SEXP fmr_fileview_identity(SEXP ptr) {
  fm_fileview *v = TYPEOF(ptr) == EXTPTRSXP ? R_ExternalPtrAddr(ptr) : NULL;
  if (!v) fmr_stop(FM_ECLOSED, "the mapped file is closed");
  fm_file_identity id;
  fm_err err;
  if (fm_fileview_identity(v, &id, &err) != FM_OK) fmr_raise(&err);
  return identity_strings(&id);
}

/* .Call(fmr_storage_file, storage, identity) -> list(path, identity,
 * offset, opener) (identity NULL unless asked: it reads the file)
 * of the file a daemon maps to read a codec matrix's storage (a .bed's
 * fileview, a persistent runtime's vector, an external codec's bytes in a
 * foreign file; offset: the storage's first byte in the file), or NULL
 * when no file holds it. */
static SEXP fmr_storage_file(SEXP storage, SEXP s_identity) {
  const void *p = NULL;
  const fmr_ext_store *es = fmr_ext_store_of(storage);
  if (es) {
    p = es->data;
  } else if (TYPEOF(storage) == EXTPTRSXP && R_ExternalPtrTag(storage) == Rf_install("fm_fileview")) {
    const fm_fileview *v = R_ExternalPtrAddr(storage);
    if (!v) fmr_stop(FM_ECLOSED, "the mapped file is closed");
    p = v->base;
  } else {
    const fmr_vec *v = fmr_vec_of(storage);
    if (v) p = fmr_vec_ptr(v);
  }
  file_at f;
  int found = 0;
  fm_err err;
  const int identity = Rf_asLogical(s_identity) == TRUE;
  if (p && file_holding(p, es != NULL, identity, &f, &found, &err) != FM_OK) fmr_raise(&err);
  if (!found) return R_NilValue;
  static const char *names[] = {"path", "identity", "offset", "opener"};
  SEXP s = PROTECT(named_list(4, names));
  SET_VECTOR_ELT(s, 0, Rf_mkString(f.path));
  if (identity) SET_VECTOR_ELT(s, 1, identity_strings(&f.id));
  SET_VECTOR_ELT(s, 2, Rf_ScalarReal((double)f.off));
  if (f.opener) SET_VECTOR_ELT(s, 3, Rf_mkString(f.opener));
  UNPROTECT(1);
  return s;
}

const R_CallMethodDef fmr_parallel_calls[] = {FMR_CALLDEF(fmr_fileview_identity, 1),
                                               FMR_CALLDEF(fmr_local_block, 3),
                                               FMR_CALLDEF(fmr_storage_file, 2),
                                               FMR_CALLDEF(fmr_consume_block, 3), {NULL, NULL, 0}};
