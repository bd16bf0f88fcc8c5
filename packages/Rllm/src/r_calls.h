/* r_calls.h: the .Call tables of Rllm's glue modules (r_init.c joins them). */
#ifndef RLLM_R_CALLS_H
#define RLLM_R_CALLS_H

#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

extern const R_CallMethodDef rllm_tok_calls[];   /* r_tok.c: tokenizer */
extern const R_CallMethodDef rllm_model_calls[]; /* r_model.c: models, logits, generation */
extern const R_CallMethodDef rllm_pt_calls[];    /* r_pt.c: PyTorch state dicts */

/* A new vector of type t and length n, stored as element i of the
 * (protected) list `list` (which protects it); returned for filling. */
static inline SEXP rllm_column(SEXP list, R_xlen_t i, SEXPTYPE t, R_xlen_t n) {
  SEXP v = Rf_allocVector(t, n);
  SET_VECTOR_ELT(list, i, v);
  return v;
}

#endif
