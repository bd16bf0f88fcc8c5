/* Rgguf.h: the C API that Rgguf exports to other packages (Rllm).
 *
 * Use: LinkingTo: Rfmalloc, Rgguf and Imports: Rgguf, then #include
 * <Rgguf.h> after "fm/fm_gguf.h" (the core header Rfmalloc installs: the
 * one core, so the struct layouts agree). The core's GGML subsystem is
 * reached through Rgguf_llm.h. The functions are registered with
 * R_RegisterCCallable. Main thread only. */
#ifndef RGGUF_H
#define RGGUF_H

#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

struct fm_gguf;

/* The parsed, validated file behind a handle from gguf_open() (class
 * "gguf_file"). Borrowed: valid while x is reachable; the tensor bytes lie
 * in the handle's read-only mapping. Raises an R error for anything that
 * is not an open gguf_file, and runs Rgguf_check() below. */
static inline const struct fm_gguf *Rgguf_file(SEXP x) {
  static const struct fm_gguf *(*fun)(SEXP) = NULL;
  if (!fun) fun = (const struct fm_gguf *(*)(SEXP))R_GetCCallable("Rgguf", "Rgguf_file");
  return fun(x);
}

/* Raises a clean R error (class fm_error_eformat, naming the file and both
 * sizes) when the file behind x shrank on disk since gguf_open() (reading
 * its mapped pages past the new end would kill R with SIGBUS), or when it
 * was rewritten in place; fm_error_eclosed for a closed handle,
 * fm_error_earg for anything that is not a gguf_file. One fstat(): call it
 * once before each pass that reads tensor bytes (an evaluation), not per
 * block. Rgguf_file() runs the same check. A truncation during the pass
 * itself cannot be caught (mmap semantics). */
static inline void Rgguf_check(SEXP x) {
  static void (*fun)(SEXP) = NULL;
  if (!fun) fun = (void (*)(SEXP))R_GetCCallable("Rgguf", "Rgguf_check");
  fun(x);
}

#endif
