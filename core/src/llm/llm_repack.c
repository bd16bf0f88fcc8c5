/* llm_repack.c: matrix weights moved into GGML's CPU "repack" buffer
 * (fm_llm_model_repack). GGML stores there, per tensor, the types it has
 * interleaved GEMM/GEMV kernels for (on x86 with AVX2: Q4_0, Q4_K and
 * IQ4_NL, 8 rows interleaved) and multiplies them with those kernels; a
 * tensor of another type is not repacked. The buffer exists only in a GGML
 * built with GGML_USE_CPU_REPACK (tools/ggmlr-setup.sh builds ggmlR so). */
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "llm_impl.h"

static ggml_backend_buffer_type_t repack_buft(void) {
  ggml_backend_reg_t reg = ggml_backend_cpu_reg();
  if (!reg || ggml_backend_reg_dev_count(reg) < 1) return NULL;
  void *f = ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
  if (!f) return NULL;
  ggml_backend_dev_get_extra_bufts_t get; /* POSIX: object and function pointers convert */
  memcpy(&get, &f, sizeof get);
  for (ggml_backend_buffer_type_t *b = get(ggml_backend_reg_dev_get(reg, 0)); b && *b; b++)
    if (strcmp(ggml_backend_buft_name(*b), "CPU_REPACK") == 0) return *b;
  return NULL;
}

/* Whether GGML repacks a tensor placed in its buffer: it marks those it
 * has kernels for (tensor->extra: the kernels, NULL for a type it keeps as
 * is). t is left as it was; probe holds at least t's bytes (its pages are
 * never touched). */
static int repacks(ggml_backend_buffer_t probe, const struct ggml_tensor *t) {
  struct ggml_tensor c = *t;
  c.buffer = NULL;
  c.data = NULL;
  c.extra = NULL;
  return ggml_backend_tensor_alloc(probe, &c, ggml_backend_buffer_get_base(probe)) ==
             GGML_STATUS_SUCCESS && c.extra != NULL;
}

int fm_llm_ggml_has_repack(void) {
  /* a buffer exists in every GGML built with GGML_USE_CPU_REPACK; its
   * kernels only for some CPUs: ask about a Q4_0 matrix of 8 rows */
  ggml_backend_buffer_type_t bt = repack_buft();
  if (!bt) return 0;
  struct ggml_init_params ip = {2 * ggml_tensor_overhead(), NULL, true};
  struct ggml_context *ctx = ggml_init(ip);
  if (!ctx) return 0;
  struct ggml_tensor *t = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 256, 8);
  ggml_backend_buffer_t probe = ggml_backend_buft_alloc_buffer(bt, ggml_backend_buft_get_alloc_size(bt, t));
  int ok = probe && repacks(probe, t);
  if (probe) ggml_backend_buffer_free(probe);
  ggml_free(ctx);
  return ok;
}

/* The weight slots of a model that only matrix products read (the
 * program's matmul weights and experts). A tied output gets a repacked
 * copy of its own, as in llama.cpp: the embedding it shares stays on the
 * mapping for get_rows, which the repacked layout cannot serve (so the
 * embedding's bytes are held twice). */
static int64_t slots(llm_model *m, struct ggml_tensor ***out) { return llm_program_matrix_slots(m, out); }

static size_t padded(ggml_backend_buffer_type_t bt, const struct ggml_tensor *t) {
  size_t a = ggml_backend_buft_get_alignment(bt);
  return (ggml_backend_buft_get_alloc_size(bt, t) + a - 1) / a * a;
}

fm_status llm_repack(llm_model *m, fm_err *err) {
  ggml_backend_buffer_type_t bt = repack_buft();
  int64_t n = bt ? slots(m, NULL) : 0;
  if (n == 0) return FM_OK;
  fm_status st = FM_OK;
  struct ggml_tensor ***s = calloc((size_t)n, sizeof *s);
  struct ggml_tensor **copy = calloc((size_t)n, sizeof *copy);
  int *take = calloc((size_t)n, sizeof *take);
  struct ggml_init_params ip = {(size_t)(n + 1) * ggml_tensor_overhead(), NULL, true};
  m->rctx = s && copy && take ? ggml_init(ip) : NULL;
  if (!m->rctx) {
    st = fm_err_set(err, FM_ENOMEM, "out of memory repacking weights");
    goto done;
  }
  slots(m, s);
  /* Which tensors GGML repacks: a probe buffer as large as the largest
   * candidate tells (repacks()). A weight in several slots is repacked
   * once. */
  size_t big = 0, total = 0;
  for (int64_t i = 0; i < n; i++) {
    copy[i] = ggml_dup_tensor(m->rctx, *s[i]);
    ggml_set_name(copy[i], ggml_get_name(*s[i]));
    size_t b = ggml_backend_buft_get_alloc_size(bt, copy[i]);
    if (b > big) big = b;
  }
  ggml_backend_buffer_t probe = ggml_backend_buft_alloc_buffer(bt, big);
  if (!probe) {
    st = fm_err_set(err, FM_ENOMEM, "out of memory repacking weights");
    goto done;
  }
  for (int64_t i = 0; i < n; i++) {
    int dup = 0;
    for (int64_t j = 0; j < i; j++) dup |= *s[j] == *s[i];
    if (!dup && repacks(probe, copy[i])) {
      take[i] = 1;
      total += padded(bt, copy[i]);
    }
  }
  ggml_backend_buffer_free(probe);
  if (total == 0) goto done;
  m->rbuf = ggml_backend_buft_alloc_buffer(bt, total);
  if (!m->rbuf) {
    st = fm_err_set(err, FM_ENOMEM, "out of memory for %zu bytes of repacked weights", total);
    goto done;
  }
  ggml_backend_buffer_set_usage(m->rbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
  llm_ggml_quiet(); /* GGML says at debug level which tensors it repacks */
  char *p = ggml_backend_buffer_get_base(m->rbuf);
  for (int64_t i = 0; i < n && st == FM_OK; i++) {
    if (!take[i]) continue;
    if (ggml_backend_tensor_alloc(m->rbuf, copy[i], p) != GGML_STATUS_SUCCESS || !copy[i]->extra) {
      st = fm_err_set(err, FM_EINTERNAL, "GGML refused to repack tensor '%s'", ggml_get_name(copy[i]));
      break;
    }
    ggml_backend_tensor_set(copy[i], (*s[i])->data, 0, ggml_nbytes(copy[i]));
    p += padded(bt, copy[i]);
    m->repacked_bytes += ggml_nbytes(copy[i]);
    struct ggml_tensor *old = *s[i];
    for (int64_t j = i; j < n; j++)
      if (*s[j] == old) *s[j] = copy[i];
  }
done:
  free(s);
  free(copy);
  free(take);
  return st;
}
