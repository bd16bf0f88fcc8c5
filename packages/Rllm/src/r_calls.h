/* r_calls.h: the .Call tables of Rllm's glue modules (r_init.c joins them). */
#ifndef RLLM_R_CALLS_H
#define RLLM_R_CALLS_H

#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

extern const R_CallMethodDef rllm_tok_calls[];   /* r_tok.c: tokenizer */
extern const R_CallMethodDef rllm_model_calls[]; /* r_model.c: models, logits, generation */

#endif
