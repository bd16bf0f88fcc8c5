/* r_core.c: the rest of the core (everything but core/src/llm, which this
 * package compiles) as forwarders into Rfmalloc's function table
 * (Rfmalloc_core.h), for the glue and for core/src/llm alike. */
#include <Rfmalloc_core_stubs.c>
