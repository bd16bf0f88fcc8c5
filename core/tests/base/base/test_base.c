/* Tests for fm_base.h: error buffer, names, checksum, overflow-checked
 * products, thread count. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "fm/fm_base.h"
#include "fm_test.h"

#include <sched.h>
#include <string.h>

static void err_set_formats_and_returns_code(void) {
  fm_err err;
  CHECK(fm_err_set(&err, FM_EARG, "k = %d is out of range", 7) == FM_EARG);
  CHECK(err.code == FM_EARG);
  CHECK(strcmp(err.msg, "k = 7 is out of range") == 0);
  CHECK(fm_err_set(NULL, FM_EIO, "ignored") == FM_EIO);
  fm_err_clear(&err);
  CHECK(err.code == FM_OK && err.msg[0] == '\0');
}

static void status_names_are_stable(void) {
  CHECK(strcmp(fm_status_name(FM_OK), "ok") == 0);
  CHECK(strcmp(fm_status_name(FM_EFORMAT), "eformat") == 0);
  CHECK(strcmp(fm_status_name(FM_EINTERNAL), "einternal") == 0);
  CHECK(strcmp(fm_status_name((fm_status)99), "einternal") == 0);
}

static void checksum_chains_and_detects_flips(void) {
  const char a[] = "hello world";
  uint64_t whole = fm_checksum(a, sizeof a, FM_CHECKSUM_SEED);
  uint64_t chained = fm_checksum(a + 5, sizeof a - 5, fm_checksum(a, 5, FM_CHECKSUM_SEED));
  CHECK(whole == chained);
  char b[sizeof a];
  memcpy(b, a, sizeof a);
  b[3] ^= 1;
  CHECK(fm_checksum(b, sizeof b, FM_CHECKSUM_SEED) != whole);
}

static void mul_ok_detects_overflow(void) {
  int64_t r = 0;
  CHECK(fm_mul_ok(INT64_C(1) << 31, INT64_C(1) << 31, &r) && r == (INT64_C(1) << 62));
  CHECK(!fm_mul_ok(INT64_C(1) << 32, INT64_C(1) << 32, &r));
  CHECK(!fm_mul_ok(-1, 2, &r));
  CHECK(fm_mul_ok(0, INT64_MAX, &r) && r == 0);
}

/* The default (ctl NULL, or threads 0) is the CPUs of the affinity mask
 * (which taskset or a cpuset narrows below the CPUs online); a call's count
 * is capped at FM_THREADS_MAX. */
static void threads_follow_affinity_and_cap(void) {
  fm_ctl ctl = {0};
  CHECK(fm_threads(NULL) >= 1 && fm_threads(NULL) <= FM_THREADS_MAX);
  CHECK(fm_threads(&ctl) == fm_threads(NULL));
#if defined(__linux__) && defined(CPU_COUNT)
  cpu_set_t set;
  CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
  const int n_mask = CPU_COUNT(&set);
  CHECK(fm_threads(NULL) == (n_mask > FM_THREADS_MAX ? FM_THREADS_MAX : n_mask));
  /* narrowed to one CPU, the default follows */
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set)) {
      CPU_SET(c, &one);
      break;
    }
  CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
  CHECK(fm_threads(NULL) == 1);
  CHECK(sched_setaffinity(0, sizeof set, &set) == 0);
  CHECK(fm_threads(NULL) == (n_mask > FM_THREADS_MAX ? FM_THREADS_MAX : n_mask));
#endif
  ctl.threads = 3;
  CHECK(fm_threads(&ctl) == 3);
  ctl.threads = FM_THREADS_MAX;
  CHECK(fm_threads(&ctl) == FM_THREADS_MAX);
  ctl.threads = 1000000000;
  CHECK(fm_threads(&ctl) == FM_THREADS_MAX);
  ctl.threads = -5;
  CHECK(fm_threads(&ctl) == fm_threads(NULL));
}

/* A relayed control block keeps the caller's settings and takes its own
 * callbacks. */
static int relay_cancel(void *ud) { return *(int *)ud; }

static void relay_keeps_settings(void) {
  const fm_ctl outer = {.backend = "reference", .threads = 3, .panel_bytes = 4096, .forked = 1};
  int stop = 1;
  fm_ctl inner = fm_ctl_relay(&outer, relay_cancel, NULL, &stop);
  CHECK(inner.threads == 3 && inner.panel_bytes == 4096 && inner.forked == 1);
  CHECK(inner.backend == outer.backend && inner.progress == NULL && fm_ctl_cancelled(&inner));
  inner = fm_ctl_relay(NULL, NULL, NULL, NULL);
  CHECK(inner.threads == 0 && inner.panel_bytes == 0 && inner.backend == NULL);
  CHECK(!fm_ctl_cancelled(&inner));
}

int main(void) {
  FM_RUN(err_set_formats_and_returns_code);
  FM_RUN(status_names_are_stable);
  FM_RUN(checksum_chains_and_detects_flips);
  FM_RUN(mul_ok_detects_overflow);
  FM_RUN(threads_follow_affinity_and_cap);
  FM_RUN(relay_keeps_settings);
  FM_TEST_END();
}
