/* Rfmalloc_core_stubs.c: include this file in exactly one source file of a
 * package that calls the core (see Rfmalloc_core.h), and call
 * Rfmalloc_core_init() from its R_init_<pkg>. It defines the lookup of
 * function tables and, for every function of Rfmalloc_core_list.h, a
 * forwarder of the same name into Rfmalloc's table. The forwarders are
 * hidden: the package's shared object exports no core symbol. */
#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

#include <Rfmalloc_core.h>

#define FM_STUB __attribute__((visibility("hidden")))

FM_STUB const void *Rfmalloc_table(const char *pkg, const char *name, int version,
                                   int n_functions) {
  const void *(*get)(void) = (const void *(*)(void))R_GetCCallable(pkg, name);
  const int *head = get();
  if (head[0] != version || head[1] != n_functions)
    Rf_error("this package was built against %s's C table %s version %d (%d functions), but the "
             "installed %s has version %d (%d functions): reinstall this package",
             pkg, name, version, n_functions, pkg, head[0], head[1]);
  return head;
}

static const Rfmalloc_core_api *rfmalloc_core;

FM_STUB void Rfmalloc_core_init(void) {
  rfmalloc_core = (const Rfmalloc_core_api *)Rfmalloc_table(
      "Rfmalloc", "Rfmalloc_core_api", RFMALLOC_CORE_VERSION, RFMALLOC_CORE_N);
}

#define FM_CORE_FN(ret, name, params, args)                                                        \
  FM_STUB ret name params { return rfmalloc_core->name args; }
#define FM_CORE_VOID(name, params, args)                                                           \
  FM_STUB void name params { rfmalloc_core->name args; }
#include <Rfmalloc_core_list.h>
#undef FM_CORE_FN
#undef FM_CORE_VOID

FM_STUB fm_status fm_err_set(fm_err *err, fm_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fm_status st = rfmalloc_core->fm_err_setv(err, code, fmt, ap);
  va_end(ap);
  return st;
}
