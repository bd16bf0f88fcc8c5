/* fm_cpu.h: the instruction-set level of the kernels chosen at run time.
 *
 * Every module with CPU-specific kernels (the fused products, fm_fused.h;
 * the .bed genotype counts, fm_codec_bed2.h) asks fm_cpu_isa() which level
 * to run, so one probe and one test hook govern them all. The probe runs
 * once per process (CPUID through the compiler's __builtin_cpu_supports,
 * which includes the OS's support for the vector state, XGETBV) and is
 * cached; on a CPU or compiler without x86-64 probing the level is
 * FM_ISA_PORTABLE, so the library runs anywhere and no vector code is
 * reachable on a CPU without it.
 *
 * The environment variable FM_ISA ("portable", "avx2" or "avx512"; unset,
 * empty or "auto": no limit), read once with the probe, lowers the level
 * kernels use for the whole process, as if the CPU had no more: a test
 * suite or a user reproducing a result of another machine runs each path
 * on one CPU. The cap below works under that limit.
 *
 * Thread safety: fm_cpu_detect, fm_cpu_isa and fm_cpu_isa_name may be called
 * from any thread. fm_cpu_cap is a test hook: it is atomic, but a product
 * running while it changes may use either level for its parts. */
#ifndef FM_CPU_H
#define FM_CPU_H

/* Levels, ordered: each includes the ones below it. */
typedef enum fm_isa {
  FM_ISA_PORTABLE = 0, /* plain C */
  FM_ISA_AVX2 = 1,     /* AVX2, FMA, BMI1, BMI2 and POPCNT */
  FM_ISA_AVX512 = 2    /* the above plus AVX-512 F and BW */
} fm_isa;

/* The highest level this CPU (and OS) runs, whatever the cap.
 * Source: Intel SDM vol. 2A, CPUID leaf 7 and XGETBV; oracle
 *         core/tests/base/cpu/ (the flags of /proc/cpuinfo on Linux). */
fm_isa fm_cpu_detect(void);

/* The level FM_ISA allows (FM_ISA_AVX512 when unset, empty, "auto" or not
 * a level name: a misspelt value never raises the level; the R package
 * warns about it), read once with the probe. */
fm_isa fm_cpu_env_limit(void);

/* Whether FM_ISA, as read with the probe, was unset, empty or a name that
 * fm_cpu_isa_parse knows (1), or another string, which sets no limit (0):
 * the R package warns about it. */
int fm_cpu_env_valid(void);

/* `name` as a level ("portable", "avx2", "avx512"; "auto" is FM_ISA_AVX512,
 * no limit) into *out; returns 1, or 0 for NULL or another string (*out is
 * then untouched). */
int fm_cpu_isa_parse(const char *name, fm_isa *out);

/* The level kernels use: the lowest of fm_cpu_detect(), fm_cpu_env_limit()
 * and the cap. */
fm_isa fm_cpu_isa(void);

/* Test hook: cap the level kernels use at `cap`, so that each level is
 * checked against the others and an oracle on one machine. FM_ISA_AVX512
 * removes the cap (the default), and so does a value outside the enum; a
 * cap above what the CPU runs, or above FM_ISA's limit, has no effect. */
void fm_cpu_cap(fm_isa cap);

/* Stable name of a level: "portable", "avx2" or "avx512" ("unknown" for a
 * value outside the enum). Never NULL. */
const char *fm_cpu_isa_name(fm_isa isa);

#endif
