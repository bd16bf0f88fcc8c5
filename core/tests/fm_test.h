/* fm_test.h: a minimal assertion harness for the core's C tests.
 * Each test file defines main() calling FM_RUN(fn) for its cases and ends
 * with FM_TEST_END(), which prints "N passed, N failed" and sets the exit code. */
#ifndef FM_TEST_H
#define FM_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int fm_test_failed_checks;
static int fm_test_passed, fm_test_failed;

#define CHECK(cond)                                                               \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
      fm_test_failed_checks++;                                                    \
    }                                                                             \
  } while (0)

/* Check a status; print the error message on failure. */
#define CHECK_OK(expr, errp)                                                      \
  do {                                                                            \
    fm_status st_ = (expr);                                                       \
    if (st_ != FM_OK) {                                                           \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr,         \
              fm_status_name(st_), (errp)->msg);                                  \
      fm_test_failed_checks++;                                                    \
    }                                                                             \
  } while (0)

#define CHECK_CLOSE(a, b, rtol)                                                   \
  do {                                                                            \
    double a_ = (a), b_ = (b);                                                    \
    if (!(fabs(a_ - b_) <= (rtol) * (fabs(a_) + fabs(b_) + 1e-300))) {            \
      fprintf(stderr, "%s:%d: %s = %.17g vs %s = %.17g\n", __FILE__, __LINE__, #a, \
              a_, #b, b_);                                                        \
      fm_test_failed_checks++;                                                    \
    }                                                                             \
  } while (0)

#define FM_RUN(fn)                                                                \
  do {                                                                            \
    int before_ = fm_test_failed_checks;                                          \
    fn();                                                                         \
    if (fm_test_failed_checks == before_) {                                       \
      fm_test_passed++;                                                           \
    } else {                                                                      \
      fm_test_failed++;                                                           \
      fprintf(stderr, "FAILED: %s\n", #fn);                                       \
    }                                                                             \
  } while (0)

/* splitmix64 stream for test data; each test file seeds its own state. */
static inline uint64_t fm_test_rng_next(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Uniform double in [0, 1) from the top 53 bits. */
static inline double fm_test_rng_unif(uint64_t *state) {
  return (double)(fm_test_rng_next(state) >> 11) / 9007199254740992.0;
}

#define FM_TEST_END()                                                             \
  do {                                                                            \
    printf("%d passed, %d failed\n", fm_test_passed, fm_test_failed);             \
    return fm_test_failed ? 1 : 0;                                                \
  } while (0)

#endif
