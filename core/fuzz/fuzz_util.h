/* fuzz_util.h: shared by the libFuzzer targets in core/fuzz/. */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <stdio.h>
#include <stdlib.h>

/* A broken invariant of the code under test: report and abort, so libFuzzer
 * records the input as a crash. */
#define FUZZ_ASSERT(cond)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                 \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

#endif
