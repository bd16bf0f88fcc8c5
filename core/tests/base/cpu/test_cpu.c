/* Tests for fm_cpu.h: the detected level against the CPUID and XCR0 bits
 * read here from the Intel SDM's definitions (not through the compiler's
 * __builtin_cpu_supports, which the module uses), and at most the level of
 * the flags the Linux kernel reports in /proc/cpuinfo (equal on hardware;
 * an emulator such as valgrind reports fewer features through CPUID than
 * the kernel saw at boot); the first probe racing from several threads;
 * the FM_ISA limit and its parser; the cap; the names.
 * Oracle: CPUID leaves 1 and 7 and XGETBV (Intel SDM vol. 2A), and
 * /proc/cpuinfo (skipped, saying so, where it has no x86 flags line). */
#define _POSIX_C_SOURCE 200809L
#include "fm/fm_cpu.h"

#include "fm_test.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

#define N_RACERS 8

static pthread_barrier_t start;
static fm_isa raced[N_RACERS];

static void *racer(void *arg) {
  fm_isa *out = arg;
  pthread_barrier_wait(&start);
  *out = fm_cpu_detect();
  return NULL;
}

/* The first probe, from N_RACERS threads released at once: all agree with
 * each other and with every later call. Runs first in main. */
static void test_first_probe_raced(void) {
  pthread_t th[N_RACERS];
  CHECK(pthread_barrier_init(&start, NULL, N_RACERS) == 0);
  for (int t = 0; t < N_RACERS; t++) CHECK(pthread_create(&th[t], NULL, racer, &raced[t]) == 0);
  for (int t = 0; t < N_RACERS; t++) pthread_join(th[t], NULL);
  pthread_barrier_destroy(&start);
  for (int t = 0; t < N_RACERS; t++) CHECK(raced[t] == fm_cpu_detect());
}

/* Whether the space-separated list `flags` holds the word `w`. */
static int has_flag(const char *flags, const char *w) {
  const size_t n = strlen(w);
  for (const char *p = strstr(flags, w); p; p = strstr(p + 1, w))
    if ((p == flags || p[-1] == ' ' || p[-1] == '\t') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
      return 1;
  return 0;
}

#if HAVE_X86
/* The level from the raw bits: AVX2 needs AVX2, FMA, BMI1, BMI2, POPCNT and
 * the OS saving the SSE and AVX state (XCR0 bits 1, 2); AVX-512 needs F and
 * BW and the opmask and ZMM state too (XCR0 bits 5, 6, 7). */
static fm_isa level_from_cpuid(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return FM_ISA_PORTABLE;
  const int fma = (c >> 12) & 1, popcnt = (c >> 23) & 1, osxsave = (c >> 27) & 1;
  if (!osxsave || __get_cpuid_max(0, NULL) < 7) return FM_ISA_PORTABLE;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  (void)hi;
  __cpuid_count(7, 0, a, b, c, d);
  const int avx2 = (b >> 5) & 1, bmi1 = (b >> 3) & 1, bmi2 = (b >> 8) & 1;
  const int avx512f = (b >> 16) & 1, avx512bw = (b >> 30) & 1;
  if (!(avx2 && fma && bmi1 && bmi2 && popcnt && (lo & 0x6u) == 0x6u)) return FM_ISA_PORTABLE;
  return avx512f && avx512bw && (lo & 0xe6u) == 0xe6u ? FM_ISA_AVX512 : FM_ISA_AVX2;
}
#endif

static void test_detect_matches_cpuid(void) {
#if HAVE_X86
  CHECK(fm_cpu_detect() == level_from_cpuid());
#else
  CHECK(fm_cpu_detect() == FM_ISA_PORTABLE); /* no probe on this compiler or CPU */
#endif
  printf("detected %s\n", fm_cpu_isa_name(fm_cpu_detect()));
}

static void test_detect_within_cpuinfo(void) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  static char line[16384];
  int found = 0;
  while (f && !found && fgets(line, sizeof line, f))
    found = strncmp(line, "flags", 5) == 0;
  if (f) fclose(f);
  if (!found) {
    printf("skipped test_detect_within_cpuinfo: no x86 flags line in /proc/cpuinfo\n");
    return;
  }
  const int avx2 = has_flag(line, "avx2") && has_flag(line, "fma") && has_flag(line, "bmi1") &&
                   has_flag(line, "bmi2") && has_flag(line, "popcnt");
  const int avx512 = avx2 && has_flag(line, "avx512f") && has_flag(line, "avx512bw");
  const fm_isa kernel = avx512 ? FM_ISA_AVX512 : avx2 ? FM_ISA_AVX2 : FM_ISA_PORTABLE;
  CHECK(fm_cpu_detect() <= kernel);
  if (fm_cpu_detect() != kernel)
    printf("the kernel reports %s (an emulator hides features from CPUID)\n",
           fm_cpu_isa_name(kernel));
}

/* FM_ISA, as this process got it (make test ISA=...), sets the limit; a
 * value that names no level leaves none. */
static void test_env_limit(void) {
  const char *env = getenv("FM_ISA");
  fm_isa want = FM_ISA_AVX512;
  const int valid = !env || !*env || fm_cpu_isa_parse(env, &want);
  if (!valid) want = FM_ISA_AVX512;
  CHECK(fm_cpu_env_limit() == want);
  CHECK(fm_cpu_env_valid() == valid);
  printf("FM_ISA=%s: limit %s, kernels use %s\n", env ? env : "(unset)",
         fm_cpu_isa_name(fm_cpu_env_limit()), fm_cpu_isa_name(fm_cpu_isa()));
}

static void test_parse(void) {
  fm_isa got = FM_ISA_AVX2;
  CHECK(fm_cpu_isa_parse("portable", &got) && got == FM_ISA_PORTABLE);
  CHECK(fm_cpu_isa_parse("avx2", &got) && got == FM_ISA_AVX2);
  CHECK(fm_cpu_isa_parse("avx512", &got) && got == FM_ISA_AVX512);
  got = FM_ISA_PORTABLE;
  CHECK(fm_cpu_isa_parse("auto", &got) && got == FM_ISA_AVX512);
  got = FM_ISA_AVX2;
  CHECK(!fm_cpu_isa_parse("AVX2", &got) && got == FM_ISA_AVX2);
  CHECK(!fm_cpu_isa_parse("", &got) && got == FM_ISA_AVX2);
  CHECK(!fm_cpu_isa_parse("avx2 ", &got) && got == FM_ISA_AVX2);
  CHECK(!fm_cpu_isa_parse(NULL, &got) && got == FM_ISA_AVX2);
}

/* The level in use is min(detected, FM_ISA's limit, cap); out-of-range
 * caps remove the cap. */
static void test_cap(void) {
  const fm_isa hw = fm_cpu_detect();
  const fm_isa cpu = hw < fm_cpu_env_limit() ? hw : fm_cpu_env_limit();
  CHECK(fm_cpu_isa() == cpu); /* no cap by default */
  for (int c = FM_ISA_PORTABLE; c <= FM_ISA_AVX512; c++) {
    fm_cpu_cap((fm_isa)c);
    CHECK((int)fm_cpu_isa() == ((int)cpu < c ? (int)cpu : c));
    CHECK(fm_cpu_detect() == hw);
  }
  fm_cpu_cap(FM_ISA_PORTABLE);
  fm_cpu_cap((fm_isa)7);
  CHECK(fm_cpu_isa() == cpu);
  fm_cpu_cap(FM_ISA_PORTABLE);
  fm_cpu_cap((fm_isa)-1);
  CHECK(fm_cpu_isa() == cpu);
  fm_cpu_cap(FM_ISA_AVX512);
}

static void test_names(void) {
  CHECK(strcmp(fm_cpu_isa_name(FM_ISA_PORTABLE), "portable") == 0);
  CHECK(strcmp(fm_cpu_isa_name(FM_ISA_AVX2), "avx2") == 0);
  CHECK(strcmp(fm_cpu_isa_name(FM_ISA_AVX512), "avx512") == 0);
  CHECK(strcmp(fm_cpu_isa_name((fm_isa)9), "unknown") == 0);
}

int main(void) {
  FM_RUN(test_first_probe_raced);
  FM_RUN(test_detect_matches_cpuid);
  FM_RUN(test_detect_within_cpuinfo);
  FM_RUN(test_env_limit);
  FM_RUN(test_parse);
  FM_RUN(test_cap);
  FM_RUN(test_names);
  FM_TEST_END();
}
