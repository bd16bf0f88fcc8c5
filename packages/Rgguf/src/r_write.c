/* r_write.c: writing GGUF files through GGML's GGUF writer. */
#include "r_calls.h"

const R_CallMethodDef rgguf_write_calls[] = {{NULL, NULL, 0}};
