/* Rgguf.h: the C API that Rgguf exports to other packages (Rllm).
 *
 * Use: LinkingTo: Rgguf and Imports: Rgguf, then #include <Rgguf.h> after
 * "fm/fm_gguf.h" (each package compiles its own copy of the core's GGUF
 * module from the same source, so the struct layouts agree).
 * The functions are registered with R_RegisterCCallable. Main thread only. */
#ifndef RGGUF_H
#define RGGUF_H

#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

struct fm_gguf;

/* The parsed, validated file behind a handle from gguf_open() (class
 * "gguf_file"). Borrowed: valid while x is reachable; the tensor bytes lie
 * in the handle's read-only mapping. Raises an R error for anything that
 * is not an open gguf_file. */
static inline const struct fm_gguf *Rgguf_file(SEXP x) {
  static const struct fm_gguf *(*fun)(SEXP) = NULL;
  if (!fun) fun = (const struct fm_gguf *(*)(SEXP))R_GetCCallable("Rgguf", "Rgguf_file");
  return fun(x);
}

#endif
