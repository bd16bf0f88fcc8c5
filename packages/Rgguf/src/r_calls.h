/* r_calls.h: the .Call tables of Rgguf's glue modules (r_init.c joins them). */
#ifndef RGGUF_R_CALLS_H
#define RGGUF_R_CALLS_H

#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

#include "fm/fm_base.h"

struct fm_gguf;

extern const R_CallMethodDef rgguf_file_calls[];   /* r_file.c: open, metadata, directory */
extern const R_CallMethodDef rgguf_tensor_calls[]; /* r_tensor.c: views, numeric, GGML backend */
extern const R_CallMethodDef rgguf_write_calls[];  /* r_write.c: GGUF writer (GGML's) */

/* R_RegisterCCallable of the functions in inst/include/Rgguf.h (r_file.c). */
void rgguf_init_callables(void);

/* r_llm_api.c: the table of inst/include/Rgguf_llm.h. */
const struct Rgguf_llm_api *rgguf_llm_api(void);

/* r_file.c: the open file behind a gguf_file handle (borrowed while x is
 * reachable); raises fm_error_earg for another object, fm_error_eclosed for
 * a closed handle, fm_error_eformat when the file shrank since it was opened. */
const struct fm_gguf *rgguf_file_of(SEXP x);

/* r_file.c: close every open handle (R_unload_Rgguf). */
void rgguf_close_all(void);

/* r_tensor.c: GGML set-up and the GGML backend's registration (R_init_Rgguf)
 * and its removal (R_unload_Rgguf). */
void rgguf_tensor_init(void);
void rgguf_tensor_unload(void);

#endif
