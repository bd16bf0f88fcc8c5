/* cpu.c: the one CPU probe and the level cap of the run-time kernel choice
 * (fm_cpu.h). */
#include "fm/fm_cpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define CPU_HAVE_X86 1
#else
#define CPU_HAVE_X86 0
#endif

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static fm_isa detected = FM_ISA_PORTABLE; /* written once, under probe_once */
static fm_isa env_limit = FM_ISA_AVX512;  /* likewise */
static int env_valid = 1;                 /* likewise */
static atomic_int cap_level = FM_ISA_AVX512;

int fm_cpu_isa_parse(const char *name, fm_isa *out) {
  static const struct { const char *name; fm_isa isa; } levels[] = {
      {"portable", FM_ISA_PORTABLE}, {"avx2", FM_ISA_AVX2}, {"avx512", FM_ISA_AVX512},
      {"auto", FM_ISA_AVX512}};
  for (size_t i = 0; name && i < sizeof levels / sizeof levels[0]; i++)
    if (strcmp(name, levels[i].name) == 0) {
      *out = levels[i].isa;
      return 1;
    }
  return 0;
}

static void probe(void) {
  /* getenv in the once-routine only: later setenv calls cannot race it. */
  const char *env = getenv("FM_ISA");
  env_valid = !env || !*env || fm_cpu_isa_parse(env, &env_limit);
#if CPU_HAVE_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
      __builtin_cpu_supports("popcnt")) {
    detected = FM_ISA_AVX2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
      detected = FM_ISA_AVX512;
  }
#endif
}

fm_isa fm_cpu_detect(void) {
  (void)pthread_once(&probe_once, probe);
  return detected;
}

fm_isa fm_cpu_env_limit(void) {
  (void)pthread_once(&probe_once, probe);
  return env_limit;
}

int fm_cpu_env_valid(void) {
  (void)pthread_once(&probe_once, probe);
  return env_valid;
}

fm_isa fm_cpu_isa(void) {
  int level = (int)fm_cpu_detect();
  if ((int)env_limit < level) level = (int)env_limit;
  const int cap = atomic_load(&cap_level);
  return (fm_isa)(cap < level ? cap : level);
}

void fm_cpu_cap(fm_isa cap) {
  const int c = (int)cap;
  atomic_store(&cap_level, c >= FM_ISA_PORTABLE && c <= FM_ISA_AVX512 ? c : FM_ISA_AVX512);
}

const char *fm_cpu_isa_name(fm_isa isa) {
  switch (isa) {
  case FM_ISA_PORTABLE: return "portable";
  case FM_ISA_AVX2: return "avx2";
  case FM_ISA_AVX512: return "avx512";
  }
  return "unknown";
}
