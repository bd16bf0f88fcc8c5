/* r_model.c: R glue of the model runtime (fm_llm.h): models, KV caches,
 * logits, generation, embeddings and single-token sampling.
 *
 * A model lives in an external pointer whose finalizer frees it; its
 * protected slot holds the gguf_file handle (Rgguf), so the mapping the
 * weights borrow outlives the model. A cache's external pointer protects the
 * model's pointer and, for a cache in an Rfmalloc runtime, the mapped raw
 * vector that holds it. Core errors become R conditions of class
 * fm_error_<status> through Rfmalloc's converter (Rfmalloc_raise and
 * Rfmalloc_raise_err, Rfmalloc.h), after every C resource of the call is
 * released. Interrupts are polled between
 * evaluations (and by GGML's abort hook on the main thread) through
 * Rfmalloc's control block (Rfmalloc_ctl, Rfmalloc.h), so R never longjmps
 * over a GGML computation: a condition raised there (the error of
 * setTimeLimit()) reaches the caller's handlers once the core has returned
 * (Rfmalloc_ctl_finish), and a user interrupt becomes fm_error_ecancelled.
 *
 * Threads: every evaluation takes the stack's settings from Rfmalloc's
 * control block (Rfmalloc_ctl: option fmalloc.threads, and a fork since
 * Rfmalloc loaded, where GGML runs one thread: GNU OpenMP's pool does not
 * survive fork()); a model's own count, when set, overrides the first
 * (fm_llm_threads_for). Reports of the count read the same settings
 * without a control block (Rfmalloc_settings). */
#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fm/fm_base.h"
#include "fm/fm_gguf.h"
#include "fm/fm_llm.h"
#include "fm/fm_llm_program.h"
#include "fm/fm_llm_ggml.h"
#include <Rfmalloc.h>
#include <Rgguf.h>

#include "r_calls.h"

/* ---- external pointers -------------------------------------------------- */

static SEXP tag_model_, tag_cache_;
#define tag_model (tag_model_ ? tag_model_ : (tag_model_ = Rf_install("rllm_model")))
#define tag_cache (tag_cache_ ? tag_cache_ : (tag_cache_ = Rf_install("rllm_cache")))

static void model_finalizer(SEXP p) {
  fm_llm_model *m = R_ExternalPtrAddr(p);
  if (m) {
    fm_llm_model_free(m);
    R_ClearExternalPtr(p);
  }
}

static void cache_finalizer(SEXP p) {
  fm_llm_cache *c = R_ExternalPtrAddr(p);
  if (c) {
    fm_llm_cache_free(c);
    R_ClearExternalPtr(p);
  }
}

static fm_llm_model *get_model(SEXP p) {
  if (TYPEOF(p) != EXTPTRSXP || R_ExternalPtrTag(p) != tag_model)
    Rfmalloc_raise(FM_EARG, "not an Rllm model pointer");
  fm_llm_model *m = R_ExternalPtrAddr(p);
  if (!m) Rfmalloc_raise(FM_ECLOSED, "the model was freed (a model does not survive saveRDS or a new session)");
  return m;
}

/* The cache, after re-checking a runtime-backed cache's memory (the runtime
 * may have been closed: fm_error_eclosed from Rfmalloc; or its mapping
 * moved: the cache follows it). */
static fm_llm_cache *get_cache(SEXP p) {
  if (TYPEOF(p) != EXTPTRSXP || R_ExternalPtrTag(p) != tag_cache)
    Rfmalloc_raise(FM_EARG, "not an Rllm cache pointer");
  fm_llm_cache *c = R_ExternalPtrAddr(p);
  if (!c) Rfmalloc_raise(FM_ECLOSED, "the cache was freed (a cache does not survive saveRDS or a new session)");
  SEXP prot = R_ExternalPtrProtected(p);
  SEXP mem = VECTOR_ELT(prot, 1);
  if (mem != R_NilValue) {
    double nb = 0;
    void *ptr = Rfmalloc_vec_ptr(mem, NULL, &nb);
    if (!ptr) Rfmalloc_raise(FM_ECLOSED, "the cache's runtime storage is no longer mapped");
    fm_err err;
    fm_err_clear(&err);
    if (fm_llm_cache_rebase(c, ptr, (size_t)nb, &err) != FM_OK) Rfmalloc_raise_err(&err, "cache");
  }
  return c;
}

/* The model of an evaluation entry point, after checking that its GGUF file
 * did not shrink on disk since it was opened (one fstat; reading mapped
 * pages past a new end would kill R with SIGBUS): fm_error_eformat from
 * Rgguf otherwise. */
static fm_llm_model *eval_model(SEXP p) {
  fm_llm_model *m = get_model(p);
  Rgguf_check(R_ExternalPtrProtected(p));
  return m;
}

/* The threads an evaluation of m would use now (the stack's settings). */
static int effective_threads(const fm_llm_model *m) {
  fm_ctl ctl = Rfmalloc_settings();
  return fm_llm_threads_for(m, &ctl);
}

/* ---- models ------------------------------------------------------------- */

/* A model's R pointer (keeping its file alive), its switches set. */
static SEXP wrap_model(fm_llm_model *m, SEXP file, SEXP flash_attn, SEXP repack, SEXP fused_gemm,
                       const char *lab) {
  fm_err err;
  fm_err_clear(&err);
  SEXP p = PROTECT(R_MakeExternalPtr(m, tag_model, file));
  R_RegisterCFinalizerEx(p, model_finalizer, TRUE);
  if (fm_llm_model_set_flash_attn(m, Rf_asLogical(flash_attn) == 1, &err) != FM_OK ||
      fm_llm_model_set_fused_gemm(m, Rf_asLogical(fused_gemm) == 1, &err) != FM_OK ||
      (Rf_asLogical(repack) == 1 && fm_llm_model_repack(m, &err) != FM_OK))
    Rfmalloc_raise_err(&err, lab);
  UNPROTECT(1);
  return p;
}

/* .Call(C_rllm_model_new_program, gguf_file, threads, flash_attn, repack,
 *       fused_gemm, label, device, index, bound): bound from
 *       .rllm_bind_native() (R/program_bind.R). */
static SEXP rllm_model_new_program(SEXP file, SEXP threads, SEXP flash_attn, SEXP repack,
                                   SEXP fused_gemm, SEXP label, SEXP device, SEXP index, SEXP bound) {
  const fm_gguf *g = Rgguf_file(file);
  const char *lab = CHAR(STRING_ELT(label, 0));
  SEXP ops = VECTOR_ELT(bound, 1), args = VECTOR_ELT(bound, 2), tensor = VECTOR_ELT(bound, 3),
       tclass = VECTOR_ELT(bound, 4), layer = VECTOR_ELT(bound, 5), ia = VECTOR_ELT(bound, 6),
       fa = VECTOR_ELT(bound, 7);
  const R_xlen_t n = XLENGTH(ops);
  fm_llm_node *nodes = (fm_llm_node *)R_alloc((size_t)(n > 0 ? n : 1), sizeof *nodes);
  for (R_xlen_t i = 0; i < n; i++) {
    fm_llm_node *nd = &nodes[i];
    memset(nd, 0, sizeof *nd);
    nd->op = fm_llm_op_find(CHAR(STRING_ELT(ops, i)));
    if (nd->op < 0)
      Rfmalloc_stopf(FM_EARG, "program node %lld: operator '%s' is not in the native vocabulary",
                     (long long)i, CHAR(STRING_ELT(ops, i)));
    for (int k = 0; k < FM_LLM_MAX_ARGS; k++) nd->args[k] = INTEGER(args)[i + k * n];
    nd->tensor = (int64_t)REAL(tensor)[i];
    nd->type_class = INTEGER(tclass)[i];
    nd->layer = INTEGER(layer)[i];
    for (int k = 0; k < 4; k++) nd->ia[k] = (int64_t)REAL(ia)[i + k * n];
    for (int k = 0; k < 2; k++) nd->fa[k] = REAL(fa)[i + k * n];
  }
  SEXP outs = VECTOR_ELT(bound, 11); /* the nodes of the named outputs and taps (rllm_run) */
  int64_t *out_nodes = (int64_t *)R_alloc((size_t)XLENGTH(outs) + 1, sizeof *out_nodes);
  for (R_xlen_t k = 0; k < XLENGTH(outs); k++) out_nodes[k] = (int64_t)REAL(outs)[k];
  fm_llm_program prog = {CHAR(STRING_ELT(VECTOR_ELT(bound, 0), 0)), FM_LLM_VOCABULARY, (int64_t)n, nodes,
                         Rf_asInteger(VECTOR_ELT(bound, 8)), (int64_t)Rf_asReal(VECTOR_ELT(bound, 9)),
                         Rf_asInteger(VECTOR_ELT(bound, 10)), (int64_t)XLENGTH(outs), out_nodes};
  fm_err err;
  fm_err_clear(&err);
  fm_llm_model *m = NULL;
  if (fm_llm_model_new_program(g, &prog, Rf_asInteger(threads), (fm_llm_device)Rf_asInteger(device),
                               Rf_asInteger(index), &m, &err) != FM_OK)
    Rfmalloc_raise_err(&err, lab);
  return wrap_model(m, file, flash_attn, repack, fused_gemm, lab);
}

static SEXP rllm_model_free(SEXP p) {
  if (TYPEOF(p) == EXTPTRSXP && R_ExternalPtrTag(p) == tag_model) model_finalizer(p);
  return R_NilValue;
}

static SEXP mk_int_or_na(int64_t v) {
  return Rf_ScalarReal((double)v);
}

static SEXP rllm_model_info(SEXP p) {
  int nprot = 0;
  fm_llm_model *m = get_model(p);
  const fm_llm_info *in = fm_llm_model_info(m);
  const char *names[] = {"arch", "name", "n_vocab", "n_embd", "n_embd_out", "n_layer", "n_head",
                         "n_head_kv", "n_embd_head_k", "n_embd_head_v", "n_ff", "n_rot",
                         "n_ctx_train", "n_expert", "n_expert_used", "rope_freq_base", "norm_eps",
                         "rope_neox", "causal", "pooling", "tied_output", "n_params",
                         "weight_bytes", "threads", "flash_attn", "repacked_bytes",
                         "fused_gemm", "device"};
  int n = (int)(sizeof names / sizeof names[0]);
  SEXP r = PROTECT(Rf_allocVector(VECSXP, n));
  nprot++;
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, n));
  nprot++;
  for (int i = 0; i < n; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
  int i = 0;
  SET_VECTOR_ELT(r, i++, Rf_mkString(in->arch));
  SET_VECTOR_ELT(r, i++, Rf_mkString(in->name));
  SET_VECTOR_ELT(r, i++, mk_int_or_na(in->n_vocab));
  SET_VECTOR_ELT(r, i++, mk_int_or_na(in->n_embd));
  SET_VECTOR_ELT(r, i++, mk_int_or_na(in->n_embd_out));
  SET_VECTOR_ELT(r, i++, mk_int_or_na(in->n_layer));
  SET_VECTOR_ELT(r, i++, mk_int_or_na(in->n_head));
  SET_VECTOR_ELT(r, i++, mk_int_or_na(in->n_head_kv));
  SET_VECTOR_ELT(r, i++, mk_int_or_na(in->n_embd_head_k));
  SET_VECTOR_ELT(r, i++, mk_int_or_na(in->n_embd_head_v));
  SET_VECTOR_ELT(r, i++, mk_int_or_na(in->n_ff));
  SET_VECTOR_ELT(r, i++, mk_int_or_na(in->n_rot));
  SET_VECTOR_ELT(r, i++, mk_int_or_na(in->n_ctx_train));
  SET_VECTOR_ELT(r, i++, mk_int_or_na(in->n_expert));
  SET_VECTOR_ELT(r, i++, mk_int_or_na(in->n_expert_used));
  SET_VECTOR_ELT(r, i++, Rf_ScalarReal(in->rope_freq_base));
  SET_VECTOR_ELT(r, i++, Rf_ScalarReal(in->norm_eps));
  SET_VECTOR_ELT(r, i++, Rf_ScalarLogical(in->rope_neox));
  SET_VECTOR_ELT(r, i++, Rf_ScalarLogical(in->causal));
  SET_VECTOR_ELT(r, i++, Rf_ScalarInteger(in->pooling));
  SET_VECTOR_ELT(r, i++, Rf_ScalarLogical(in->tied_output));
  SET_VECTOR_ELT(r, i++, Rf_ScalarReal((double)in->n_params));
  SET_VECTOR_ELT(r, i++, Rf_ScalarReal((double)in->n_weight_bytes));
  SET_VECTOR_ELT(r, i++, Rf_ScalarInteger(effective_threads(m)));
  SET_VECTOR_ELT(r, i++, Rf_ScalarLogical(fm_llm_model_flash_attn(m)));
  SET_VECTOR_ELT(r, i++, Rf_ScalarReal((double)fm_llm_model_repacked_bytes(m)));
  SET_VECTOR_ELT(r, i++, Rf_ScalarLogical(fm_llm_model_fused_gemm(m)));
  SET_VECTOR_ELT(r, i++, Rf_mkString(fm_llm_model_device(m)));
  Rf_setAttrib(r, R_NamesSymbol, nm);
  UNPROTECT(nprot);
  return r;
}

static SEXP rllm_model_set_threads(SEXP p, SEXP threads) {
  fm_llm_model *m = get_model(p);
  fm_err err;
  fm_err_clear(&err);
  int nt = Rf_asInteger(threads);
  if (fm_llm_model_set_threads(m, nt, &err) != FM_OK) Rfmalloc_raise_err(&err, NULL);
  return Rf_ScalarInteger(effective_threads(m));
}

/* .Call(C_rllm_model_threads, model_ptr): threads the next evaluation may use. */
static SEXP rllm_model_threads(SEXP p) { return Rf_ScalarInteger(effective_threads(get_model(p))); }

/* .Call(C_rllm_ptr_state, ptr): 0 live, 1 freed (or restored from a saved
 * session), 3 not a model or cache pointer. Never raises. */
static SEXP rllm_ptr_state(SEXP p) {
  if (TYPEOF(p) != EXTPTRSXP || (R_ExternalPtrTag(p) != tag_model && R_ExternalPtrTag(p) != tag_cache))
    return Rf_ScalarInteger(3);
  return Rf_ScalarInteger(R_ExternalPtrAddr(p) ? 0 : 1);
}

/* ---- caches ------------------------------------------------------------- */

static SEXP rllm_cache_bytes(SEXP p, SEXP n_ctx, SEXP type) {
  fm_llm_model *m = get_model(p);
  return Rf_ScalarReal((double)fm_llm_cache_bytes(m, (int64_t)Rf_asReal(n_ctx),
                                                  (fm_llm_kv_type)Rf_asInteger(type)));
}

/* .Call(C_rllm_cache_new, model_ptr, n_ctx, type, mem): mem is NULL (heap)
 * or a raw vector from Rfmalloc_vec_alloc of fm_llm_cache_bytes bytes. */
static SEXP rllm_cache_new(SEXP p, SEXP n_ctx, SEXP type, SEXP mem) {
  int nprot = 0;
  fm_llm_model *m = get_model(p);
  void *ptr = NULL;
  double nb = 0;
  if (mem != R_NilValue) {
    ptr = Rfmalloc_vec_ptr(mem, NULL, &nb);
    if (!ptr) Rfmalloc_raise(FM_EARG, "cache storage is not an Rfmalloc mapped vector");
  }
  SEXP prot = PROTECT(Rf_allocVector(VECSXP, 2));
  nprot++;
  SET_VECTOR_ELT(prot, 0, p);
  SET_VECTOR_ELT(prot, 1, mem);
  fm_err err;
  fm_err_clear(&err);
  fm_llm_cache *c = NULL;
  if (fm_llm_cache_new(m, (int64_t)Rf_asReal(n_ctx), (fm_llm_kv_type)Rf_asInteger(type), ptr,
                       (size_t)nb, &c, &err) != FM_OK)
    Rfmalloc_raise_err(&err, "cache");
  SEXP r = PROTECT(R_MakeExternalPtr(c, tag_cache, prot));
  nprot++;
  R_RegisterCFinalizerEx(r, cache_finalizer, TRUE);
  UNPROTECT(nprot);
  return r;
}

static SEXP rllm_cache_clear(SEXP p) {
  fm_llm_cache_clear(get_cache(p));
  return R_NilValue;
}

static SEXP rllm_cache_state(SEXP p) {
  fm_llm_cache *c = get_cache(p);
  SEXP r = PROTECT(Rf_allocVector(REALSXP, 3));
  REAL(r)[0] = (double)fm_llm_cache_n_past(c);
  REAL(r)[1] = (double)fm_llm_cache_n_ctx(c);
  REAL(r)[2] = (double)fm_llm_cache_type(c);
  UNPROTECT(1);
  return r;
}

/* .Call(C_rllm_runtime_raw, runtime, bytes): a zero-filled raw vector in
 * an Rfmalloc runtime's mapping. */
static SEXP rllm_runtime_raw(SEXP rt, SEXP bytes) {
  return Rfmalloc_vec_alloc(rt, 4, Rf_asReal(bytes));
}

/* ---- evaluation --------------------------------------------------------- */

/* .Call(C_rllm_logits, model_ptr, cache_ptr or NULL, tokens (integer, 0-based), all) */
static SEXP rllm_logits(SEXP p, SEXP cp, SEXP tokens, SEXP all) {
  int nprot = 0;
  fm_llm_model *m = eval_model(p);
  fm_llm_cache *c = cp == R_NilValue ? NULL : get_cache(cp);
  int64_t n = XLENGTH(tokens), V = fm_llm_model_info(m)->n_vocab;
  int want_all = Rf_asLogical(all) == TRUE;
  int64_t ncol = want_all ? n : 1;
  SEXP r = PROTECT(Rf_allocMatrix(REALSXP, (int)V, (int)ncol));
  nprot++;
  float *buf = (float *)R_alloc((size_t)(V * ncol), sizeof(float));
  fm_err err;
  fm_err_clear(&err);
  fm_ctl ctl = Rfmalloc_ctl(R_NilValue);
  fm_status st = fm_llm_eval(m, c, INTEGER(tokens), n, want_all ? FM_LLM_OUT_ALL : FM_LLM_OUT_LAST,
                             buf, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, NULL);
  double *d = REAL(r);
  for (int64_t i = 0; i < V * ncol; i++) d[i] = (double)buf[i];
  UNPROTECT(nprot);
  return r;
}

static fm_status make_sampler(SEXP temperature, SEXP top_k, SEXP top_p, SEXP seed, int64_t V,
                              fm_llm_sampler **s, fm_err *err) {
  fm_llm_sampling sp;
  sp.temperature = Rf_asReal(temperature);
  sp.top_k = (int64_t)Rf_asReal(top_k);
  sp.top_p = Rf_asReal(top_p);
  sp.seed = (uint64_t)(int64_t)Rf_asReal(seed);
  return fm_llm_sampler_new(&sp, V, s, err);
}

/* .Call(C_rllm_generate, model, cache, prompt, n_new, temperature, top_k,
 *       top_p, seed, stop) -> list(tokens, prefill_s, decode_s, n_prefill, n_decode,
 *       threads) */
static SEXP rllm_generate(SEXP p, SEXP cp, SEXP prompt, SEXP n_new, SEXP temperature, SEXP top_k,
                          SEXP top_p, SEXP seed, SEXP stop) {
  int nprot = 0;
  fm_llm_model *m = eval_model(p);
  fm_llm_cache *c = get_cache(cp);
  int64_t nn = (int64_t)Rf_asReal(n_new), V = fm_llm_model_info(m)->n_vocab;
  int32_t *out = (int32_t *)R_alloc((size_t)(nn > 0 ? nn : 1), sizeof(int32_t));
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 6));
  nprot++;
  fm_ctl ctl = Rfmalloc_ctl(R_NilValue); /* before the sampler: a bad option raises */
  fm_err err;
  fm_err_clear(&err);
  fm_llm_sampler *s = NULL;
  if (make_sampler(temperature, top_k, top_p, seed, V, &s, &err) != FM_OK) Rfmalloc_raise_err(&err, NULL);
  int64_t n_out = 0;
  fm_llm_timings t;
  fm_status st = fm_llm_generate(m, c, INTEGER(prompt), XLENGTH(prompt), nn, s, INTEGER(stop),
                                 XLENGTH(stop), out, &n_out, &t, &ctl, &err);
  fm_llm_sampler_free(s);
  Rfmalloc_ctl_finish(st, &err, NULL);
  SEXP toks = PROTECT(Rf_allocVector(INTSXP, (R_xlen_t)n_out));
  nprot++;
  for (int64_t i = 0; i < n_out; i++) INTEGER(toks)[i] = out[i];
  SET_VECTOR_ELT(res, 0, toks);
  SET_VECTOR_ELT(res, 1, Rf_ScalarReal(t.prefill_s));
  SET_VECTOR_ELT(res, 2, Rf_ScalarReal(t.decode_s));
  SET_VECTOR_ELT(res, 3, Rf_ScalarReal((double)t.n_prefill));
  SET_VECTOR_ELT(res, 4, Rf_ScalarReal((double)t.n_decode));
  SET_VECTOR_ELT(res, 5, Rf_ScalarInteger(t.n_threads));
  UNPROTECT(nprot);
  return res;
}

/* .Call(C_rllm_embed, model, tokens, pooling) -> numeric n_embd_out */
static SEXP rllm_embed(SEXP p, SEXP tokens, SEXP pooling) {
  int nprot = 0;
  fm_llm_model *m = eval_model(p);
  int64_t E = fm_llm_model_info(m)->n_embd_out;
  SEXP r = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)E));
  nprot++;
  float *buf = (float *)R_alloc((size_t)E, sizeof(float));
  fm_err err;
  fm_err_clear(&err);
  fm_ctl ctl = Rfmalloc_ctl(R_NilValue);
  fm_status st = fm_llm_embed(m, INTEGER(tokens), XLENGTH(tokens),
                              (fm_llm_pooling)Rf_asInteger(pooling), buf, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, NULL);
  for (int64_t i = 0; i < E; i++) REAL(r)[i] = (double)buf[i];
  UNPROTECT(nprot);
  return r;
}

/* .Call(C_rllm_run, model, tokens (integer, 0-based) or NULL, x (a double
 * matrix, channels x positions, the program's channels: checked by the
 * caller) or NULL, mask (double, one per position: checked by the caller)
 * or NULL, want (integer, 0-based indices of the program's outputs), names
 * (character: theirs, for messages)) -> a list of double arrays, one per
 * wanted output: [rows, positions] or pair maps [positions, positions,
 * channels] (fm_llm_run). */
static SEXP rllm_run(SEXP p, SEXP tokens, SEXP x, SEXP mask, SEXP want, SEXP names) {
  fm_llm_model *m = eval_model(p);
  const int64_t nw = XLENGTH(want);
  int64_t n = Rf_isNull(tokens) ? 0 : XLENGTH(tokens);
  float *in = NULL;
  if (!Rf_isNull(x)) {
    SEXP dim = Rf_getAttrib(x, R_DimSymbol);
    n = XLENGTH(dim) == 2 ? INTEGER(dim)[1] : 0;
    in = (float *)R_alloc((size_t)(XLENGTH(x) > 0 ? XLENGTH(x) : 1), sizeof(float));
    for (R_xlen_t i = 0; i < XLENGTH(x); i++) in[i] = (float)REAL(x)[i];
  }
  float *mk = NULL;
  if (!Rf_isNull(mask)) {
    mk = (float *)R_alloc((size_t)XLENGTH(mask) + 1, sizeof(float));
    for (R_xlen_t i = 0; i < XLENGTH(mask); i++) mk[i] = (float)REAL(mask)[i];
  }
  int64_t *idx = (int64_t *)R_alloc((size_t)nw + 1, sizeof *idx), *cap = (int64_t *)R_alloc((size_t)nw + 1, sizeof *cap);
  int64_t(*ne)[3] = (int64_t(*)[3])R_alloc((size_t)nw + 1, sizeof *ne);
  int *pairs = (int *)R_alloc((size_t)nw + 1, sizeof *pairs);
  float **out = (float **)R_alloc((size_t)nw + 1, sizeof *out);
  fm_err err;
  fm_err_clear(&err);
  for (int64_t k = 0; k < nw; k++) {
    idx[k] = INTEGER(want)[k];
    /* the buffers: sized by the output's shape (errors as fm_llm_run's) */
    if (fm_llm_output_shape(m, idx[k], n, ne[k], &pairs[k], &err) != FM_OK)
      Rfmalloc_raise_err(&err, CHAR(STRING_ELT(names, (R_xlen_t)k)));
    cap[k] = ne[k][0] * ne[k][1] * ne[k][2];
    out[k] = (float *)R_alloc((size_t)(cap[k] > 0 ? cap[k] : 1), sizeof(float));
  }
  fm_ctl ctl = Rfmalloc_ctl(R_NilValue);
  fm_status st = fm_llm_run(m, Rf_isNull(tokens) ? NULL : INTEGER(tokens), in, mk, n, nw, idx, out, cap, ne, &ctl, &err);
  Rfmalloc_ctl_finish(st, &err, NULL);
  SEXP r = PROTECT(Rf_allocVector(VECSXP, (R_xlen_t)nw));
  for (int64_t k = 0; k < nw; k++) {
    SEXP a = SET_VECTOR_ELT(r, (R_xlen_t)k, Rf_allocVector(REALSXP, (R_xlen_t)cap[k]));
    for (int64_t i = 0; i < cap[k]; i++) REAL(a)[i] = (double)out[k][i];
    SEXP dim = PROTECT(Rf_allocVector(INTSXP, pairs[k] ? 3 : 2));
    for (int d = 0; d < XLENGTH(dim); d++) INTEGER(dim)[d] = (int)ne[k][d];
    Rf_setAttrib(a, R_DimSymbol, dim);
    UNPROTECT(1);
  }
  UNPROTECT(1);
  return r;
}

/* .Call(C_rllm_sample, logits (double), temperature, top_k, top_p, seed, n)
 * -> n tokens drawn from one sampler (0-based ids). The sampler works in
 * float: a logit is refused when it is NA or NaN, or +Inf as a float (a
 * finite double beyond a float's range included); -Inf masks a token, and
 * at least one logit must be above -Inf as a float. */
static SEXP rllm_sample(SEXP logits, SEXP temperature, SEXP top_k, SEXP top_p, SEXP seed, SEXP n) {
  int nprot = 0;
  R_xlen_t V = XLENGTH(logits);
  int nd = Rf_asInteger(n);
  float *x = (float *)R_alloc((size_t)(V > 0 ? V : 1), sizeof(float));
  const double *d = REAL(logits);
  int any_above = 0;
  for (R_xlen_t i = 0; i < V; i++) {
    if (ISNAN(d[i]))
      Rfmalloc_stopf(FM_EARG, "logits must not contain NA or NaN: logits[%.0f] is %s", (double)i + 1,
                     ISNA(d[i]) ? "NA" : "NaN");
    x[i] = (float)d[i];
    if (x[i] == INFINITY) {
      if (isinf(d[i]))
        Rfmalloc_stopf(FM_EARG, "logits[%.0f] is Inf: a logit must be finite or -Inf", (double)i + 1);
      Rfmalloc_stopf(FM_EARG,
                     "logits[%.0f] is %g, beyond a float's range (3.4e38; the sampler works in "
                     "float): a logit must be finite or -Inf",
                     (double)i + 1, d[i]);
    }
    if (x[i] > -INFINITY) any_above = 1;
  }
  if (!any_above)
    Rfmalloc_stopf(FM_EARG,
                   "logits have no finite value: all %.0f are -Inf (or below -3.4e38, a float's range), "
                   "so no token can be drawn",
                   (double)V);
  SEXP r = PROTECT(Rf_allocVector(INTSXP, nd));
  nprot++;
  fm_err err;
  fm_err_clear(&err);
  fm_llm_sampler *s = NULL;
  if (make_sampler(temperature, top_k, top_p, seed, (int64_t)V, &s, &err) != FM_OK)
    Rfmalloc_raise_err(&err, NULL);
  for (int i = 0; i < nd; i++) {
    int64_t tok = fm_llm_sampler_next(s, x);
    INTEGER(r)[i] = tok < 0 ? NA_INTEGER : (int)tok;
  }
  fm_llm_sampler_free(s);
  UNPROTECT(nprot);
  return r;
}

/* .Call(C_rllm_ggml_info): the linked GGML build (fm_llm_ggml.h): a list of
 * isa (one word), version and features (named logical). */
static SEXP rllm_ggml_info(void) {
  const int n = fm_llm_ggml_n_features();
  SEXP feat = PROTECT(Rf_allocVector(LGLSXP, n));
  SEXP fnames = PROTECT(Rf_allocVector(STRSXP, n));
  for (int i = 0; i < n; i++) {
    const char *name;
    LOGICAL(feat)[i] = fm_llm_ggml_feature(i, &name) == 1;
    SET_STRING_ELT(fnames, i, Rf_mkChar(name));
  }
  Rf_setAttrib(feat, R_NamesSymbol, fnames);
  const char *names[] = {"isa", "version", "features", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, names));
  SET_VECTOR_ELT(out, 0, Rf_mkString(fm_llm_ggml_isa()));
  SET_VECTOR_ELT(out, 1, Rf_mkString(fm_llm_ggml_version()));
  SET_VECTOR_ELT(out, 2, feat);
  UNPROTECT(3);
  return out;
}

/* .Call(C_rllm_vulkan_info): the devices of GGML's Vulkan backend
 * (fm_llm_ggml.h) as a list of equal-length columns (index, name,
 * description, memory_free, memory_total, type) and whether the build has
 * Vulkan at all (vulkan_build). */
static SEXP rllm_vulkan_info(void) {
  const int n = fm_llm_ggml_n_devices("Vulkan");
  const char *names[] = {"index",        "name", "description", "memory_free",
                         "memory_total", "type", "vulkan_build", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, names));
  SEXP idx = rllm_column(out, 0, INTSXP, n), nm = rllm_column(out, 1, STRSXP, n);
  SEXP desc = rllm_column(out, 2, STRSXP, n), fr = rllm_column(out, 3, REALSXP, n);
  SEXP tot = rllm_column(out, 4, REALSXP, n), ty = rllm_column(out, 5, STRSXP, n);
  SET_VECTOR_ELT(out, 6, Rf_ScalarLogical(fm_llm_ggml_has_vulkan()));
  for (int i = 0; i < n; i++) {
    fm_llm_device_info d;
    if (fm_llm_ggml_device("Vulkan", i, &d) != FM_OK)
      Rfmalloc_raise(FM_EINTERNAL, "GGML's list of Vulkan devices changed while it was read");
    INTEGER(idx)[i] = i;
    SET_STRING_ELT(nm, i, Rf_mkChar(d.name));
    SET_STRING_ELT(desc, i, Rf_mkChar(d.description));
    REAL(fr)[i] = (double)d.memory_free;
    REAL(tot)[i] = (double)d.memory_total;
    SET_STRING_ELT(ty, i, Rf_mkChar(d.type));
  }
  UNPROTECT(1);
  return out;
}

#define CALLDEF(name, n) {#name, (DL_FUNC)&name, n}
const R_CallMethodDef rllm_model_calls[] = {CALLDEF(rllm_model_new_program, 9), CALLDEF(rllm_run, 6),
                                            CALLDEF(rllm_model_free, 1),
                                            CALLDEF(rllm_model_info, 1),
                                            CALLDEF(rllm_model_set_threads, 2),
                                            CALLDEF(rllm_cache_bytes, 3),
                                            CALLDEF(rllm_cache_new, 4),
                                            CALLDEF(rllm_cache_clear, 1),
                                            CALLDEF(rllm_runtime_raw, 2),
                                            CALLDEF(rllm_cache_state, 1),
                                            CALLDEF(rllm_logits, 4),
                                            CALLDEF(rllm_generate, 9),
                                            CALLDEF(rllm_embed, 3),
                                            CALLDEF(rllm_sample, 6),
                                            CALLDEF(rllm_model_threads, 1),
                                            CALLDEF(rllm_ptr_state, 1),
                                            CALLDEF(rllm_ggml_info, 0),
                                            CALLDEF(rllm_vulkan_info, 0),
                                            {NULL, NULL, 0}};
