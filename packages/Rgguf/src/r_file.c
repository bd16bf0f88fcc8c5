/* r_file.c: R glue of the GGUF reader (fm_gguf.h). */
#include "r_calls.h"

const R_CallMethodDef rgguf_file_calls[] = {{NULL, NULL, 0}};

void rgguf_init_callables(void) {}
