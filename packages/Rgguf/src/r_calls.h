/* r_calls.h: the .Call tables of Rgguf's glue modules (r_init.c joins them). */
#ifndef RGGUF_R_CALLS_H
#define RGGUF_R_CALLS_H

#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

extern const R_CallMethodDef rgguf_file_calls[];   /* r_file.c: open, metadata, directory */
extern const R_CallMethodDef rgguf_tensor_calls[]; /* r_tensor.c: views, decode, GGML backend */
extern const R_CallMethodDef rgguf_write_calls[];  /* r_write.c: GGUF writer (GGML's) */

/* R_RegisterCCallable of the functions in inst/include/Rgguf.h (r_file.c). */
void rgguf_init_callables(void);

#endif
