/* r_core.c: the core functions this package calls, as forwarders into
 * Rfmalloc's function table (Rfmalloc_core.h); RfmallocStatgen compiles no
 * core. */
#include <Rfmalloc_core_stubs.c>
