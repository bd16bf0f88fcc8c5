/* r_model.c: R glue of the model runtime. */
#include "r_calls.h"

const R_CallMethodDef rllm_model_calls[] = {{NULL, NULL, 0}};
