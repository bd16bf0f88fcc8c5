/* r_tok.c: R glue of the tokenizer (fm_tok.h). */
#include "r_calls.h"

const R_CallMethodDef rllm_tok_calls[] = {{NULL, NULL, 0}};
