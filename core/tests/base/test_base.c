/* Tests for fm_base.h: error buffer, names, checksum, overflow-checked products. */
#include "fm/fm_base.h"
#include "fm_test.h"

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

int main(void) {
  FM_RUN(err_set_formats_and_returns_code);
  FM_RUN(status_names_are_stable);
  FM_RUN(checksum_chains_and_detects_flips);
  FM_RUN(mul_ok_detects_overflow);
  FM_TEST_END();
}
