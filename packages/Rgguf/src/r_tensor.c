/* r_tensor.c: tensor views and the GGML backend. */
#include "r_calls.h"

const R_CallMethodDef rgguf_tensor_calls[] = {{NULL, NULL, 0}};
