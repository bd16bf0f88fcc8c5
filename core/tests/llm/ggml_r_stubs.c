/* ggml_r_stubs.c: stand-ins for the five R entry points that ggmlR's
 * libggml.a calls (it is built to print through R and raise R errors), so
 * the C tests of the GGML modules link without R. An error ends the test. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void Rprintf(const char *fmt, ...);
void REprintf(const char *fmt, ...);
void Rvprintf(const char *fmt, va_list ap);
void REvprintf(const char *fmt, va_list ap);
void Rf_error(const char *fmt, ...);

void Rvprintf(const char *fmt, va_list ap) { vfprintf(stdout, fmt, ap); }
void REvprintf(const char *fmt, va_list ap) { vfprintf(stderr, fmt, ap); }

void Rprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Rvprintf(fmt, ap);
  va_end(ap);
}

void REprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  REvprintf(fmt, ap);
  va_end(ap);
}

void Rf_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  REvprintf(fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}
