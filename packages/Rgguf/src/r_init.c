/* r_init.c: registers the .Call entry points and C callables of Rgguf. */
#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

static const R_CallMethodDef call_methods[] = {{NULL, NULL, 0}};

void R_init_Rgguf(DllInfo *dll) {
  R_registerRoutines(dll, NULL, call_methods, NULL, NULL);
  R_useDynamicSymbols(dll, FALSE);
  R_forceSymbols(dll, TRUE);
}
