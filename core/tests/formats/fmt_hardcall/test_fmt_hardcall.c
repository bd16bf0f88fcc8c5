/* plink2's hardcall rule shared by every dosage and probability reader
 * (fm_fmt.h): units of 1/16384, the 0.1 boundary, the rounding of exact
 * ratios and the four bounds the BGEN reader compares against. The
 * references here are computed independently (double arithmetic and
 * nearbyint, which rounds halves to even), not with the functions tested.
 *
 * plink2 v2.00a3.5 measured (2026-11-30, plink2 --make-bed / --make-pgen):
 * a dosage of u units is called c when |u - 16384 c| <= 1638, else missing
 * (BGEN: every 8-bit probability pair and every 16-bit dosage, unphased,
 * phased and haploid; VCF DS; GEN; legacy dosage); BGEN v1.1 numerators
 * (v1 + 2 v2) / 32768 round their halves to even (all 32,768 odd
 * numerators); a legacy dosage of 1638.5 / 16384 becomes 1639 (halves up). */
#include <math.h>
#include <string.h>

#include "fm/fm_fmt.h"
#include "fm_test.h"

/* Independent references. */
static int8_t ref_from_units(double u) {
  double c = floor(u / 16384.0 + 0.5);
  if (c > 2) c = 2;
  return fabs(u - 16384.0 * c) <= 1638.0 ? (int8_t)c : FM_GT_MISSING;
}
static uint32_t ref_units_ratio(uint64_t num, uint64_t den) {
  /* num * 16384 / den is never within 2^-20 of a half unless it is one
   * (den | 2 num 16384), so double division and nearbyint (ties to even)
   * give the exact answer for den < 2^20 */
  return (uint32_t)nearbyint((double)num * 16384.0 / (double)den);
}

static void test_units_rule(void) {
  /* the boundary: 1638 units from an integer is called, 1639 is not */
  static const struct { uint32_t u; int8_t hc; } t[] = {
      {0, 0},      {1638, 0},   {1639, FM_GT_MISSING}, {8192, FM_GT_MISSING},
      {14745, FM_GT_MISSING}, {14746, 1}, {16384, 1}, {18022, 1},
      {18023, FM_GT_MISSING}, {31129, FM_GT_MISSING}, {31130, 2}, {32768, 2},
      {32771, 2},  /* a layout-1 sum of up to 32768 + 3 */
      {34406, 2},  {34407, FM_GT_MISSING}, {60000, FM_GT_MISSING}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    CHECK(fm_hardcall_from_units(t[i].u) == t[i].hc);
    if (fm_hardcall_from_units(t[i].u) != t[i].hc) fprintf(stderr, "  u = %u\n", (unsigned)t[i].u);
  }
  int bad = 0;
  for (uint32_t u = 0; u <= 40000; u++) bad += fm_hardcall_from_units(u) != ref_from_units(u);
  CHECK(bad == 0);
}

static void test_double_dosages(void) {
  /* 0.1, 0.9, 1.1, 1.9 are called (1638.4, 14745.6, 18022.4, 31129.6 units
   * round to 1638 from the integer); 0.1001 is 1640 units: missing */
  static const struct { double d; int8_t hc; } t[] = {
      {0.0, 0},   {0.05, 0}, {0.1, 0}, {0.1001, FM_GT_MISSING}, {0.5, FM_GT_MISSING},
      {0.8999, FM_GT_MISSING}, {0.9, 1}, {1.0, 1}, {1.1, 1}, {1.1001, FM_GT_MISSING},
      {1.8999, FM_GT_MISSING}, {1.9, 2}, {2.0, 2}, {0.100005, 0}, {0.10004, FM_GT_MISSING},
      {1.899995, 2}, {1.89996, FM_GT_MISSING}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    CHECK(fm_hardcall_from_dosage(t[i].d) == t[i].hc);
    if (fm_hardcall_from_dosage(t[i].d) != t[i].hc) fprintf(stderr, "  d = %.17g\n", t[i].d);
  }
  /* a float32 DS: 1.1f is 1.10000002, 18022.4 units: called */
  CHECK(fm_hardcall_from_dosage((double)1.1f) == 1 && fm_hardcall_from_dosage((double)1.9f) == 2);
  CHECK(fm_hardcall_from_dosage((double)0.9f) == 1 && fm_hardcall_from_dosage((double)0.1f) == 0);
  /* halves round up: 1638.5 units -> 1639 (missing), 14745.5 -> 14746 (1) */
  CHECK(fm_dosage_units(1638.5 / 16384) == 1639 && fm_dosage_units(14745.5 / 16384) == 14746);
  CHECK(fm_hardcall_from_dosage(1638.5 / 16384) == FM_GT_MISSING);
  CHECK(fm_hardcall_from_dosage(14745.5 / 16384) == 1);
  CHECK(fm_dosage_units(0.1) == 1638 && fm_dosage_units(1.1) == 18022 && fm_dosage_units(2.0) == 32768);
  /* NaN, negative and far out of range are missing, never undefined */
  CHECK(fm_dosage_units(NAN) == UINT32_MAX && fm_hardcall_from_dosage(NAN) == FM_GT_MISSING);
  CHECK(fm_dosage_units(-0.01) == UINT32_MAX && fm_dosage_units(1e300) == UINT32_MAX);
  CHECK(fm_hardcall_from_dosage(2.6) == FM_GT_MISSING && fm_hardcall_from_dosage(-1) == FM_GT_MISSING);
  CHECK(fm_hardcall_from_dosage(2.05) == 2);
  int bad = 0;
  for (int k = 0; k <= 200000; k++) {
    const double d = k / 100000.0;
    bad += fm_hardcall_from_dosage(d) != ref_from_units(floor(d * 16384 + 0.5));
  }
  CHECK(bad == 0);
}

static void test_ratios_and_bounds(void) {
  /* BGEN v1.1: (v1 + 2 v2) / 32768, halves to even as plink2 rounds them */
  CHECK(fm_dosage_units_ratio(3277, 32768) == 1638);   /* 1638.5: called 0 */
  CHECK(fm_dosage_units_ratio(3279, 32768) == 1640);   /* 1639.5: missing */
  CHECK(fm_dosage_units_ratio(36045, 32768) == 18022); /* 18022.5: called 1 */
  CHECK(fm_dosage_units_ratio(29491, 32768) == 14746); /* 14745.5: called 1 */
  CHECK(fm_dosage_units_ratio(62259, 32768) == 31130); /* 31129.5: called 2 */
  CHECK(fm_dosage_units_ratio(62257, 32768) == 31128); /* 31128.5: missing */
  /* 8 and 16 bits: 25/255 is 1606 units (called), 26/255 1670.5 (missing);
   * 6553/65535 is 1638.27 (called), 6554/65535 1638.52 (missing) */
  CHECK(fm_dosage_units_ratio(25, 255) == 1606 && fm_dosage_units_ratio(26, 255) == 1671);
  CHECK(fm_dosage_units_ratio(6553, 65535) == 1638 && fm_dosage_units_ratio(6554, 65535) == 1639);
  static const uint64_t dens[] = {1, 2, 3, 7, 15, 255, 1023, 4095, 32767, 32768, 65535, 262143};
  for (size_t k = 0; k < sizeof dens / sizeof dens[0]; k++) {
    const uint64_t den = dens[k];
    uint64_t bound[4];
    fm_hardcall_bounds(den, bound);
    CHECK(bound[0] <= bound[1] && bound[1] <= bound[2] && bound[2] <= bound[3] && bound[3] <= 2 * den + 1);
    int bad_u = 0, bad_b = 0;
    for (uint64_t num = 0; num <= 2 * den; num++) {
      const uint32_t u = fm_dosage_units_ratio(num, den);
      bad_u += u != ref_units_ratio(num, den);
      bad_b += fm_hardcall_from_bounds(num, bound) != ref_from_units(ref_units_ratio(num, den));
    }
    CHECK(bad_u == 0 && bad_b == 0);
    if (bad_u || bad_b) fprintf(stderr, "  den %llu: %d units, %d hardcalls differ\n",
                                (unsigned long long)den, bad_u, bad_b);
  }
  /* 8 bits: called 0 up to s = 25, 1 for 230..280, 2 from 485 */
  uint64_t b8[4];
  fm_hardcall_bounds(255, b8);
  CHECK(b8[0] == 26 && b8[1] == 230 && b8[2] == 281 && b8[3] == 485);
  /* 32 bits: around each bound only (2^33 numerators) */
  const uint64_t den = UINT64_C(0xffffffff);
  uint64_t bound[4];
  fm_hardcall_bounds(den, bound);
  static const uint32_t at[4] = {1639, 14746, 18023, 31130};
  for (int i = 0; i < 4; i++) {
    CHECK(fm_dosage_units_ratio(bound[i], den) >= at[i]);
    CHECK(bound[i] == 0 || fm_dosage_units_ratio(bound[i] - 1, den) < at[i]);
  }
  CHECK(fm_dosage_units_ratio(2 * den, den) == 32768 && fm_dosage_units_ratio(den, den) == 16384);
}

int main(void) {
  FM_RUN(test_units_rule);
  FM_RUN(test_double_dosages);
  FM_RUN(test_ratios_and_bounds);
  FM_TEST_END();
}
