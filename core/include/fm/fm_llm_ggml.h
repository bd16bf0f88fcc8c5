/* fm_llm_ggml.h: the instruction sets the linked GGML was compiled for.
 *
 * GGML's CPU kernels are chosen when GGML is compiled (ggmlR's configure:
 * --with-simd adds -mavx2 -mfma -mf16c; without it the build is portable
 * C), not at run time, so a GGML built without SIMD runs its scalar kernels
 * on any CPU. This module reports the build that this process links, from
 * GGML's own ggml_cpu_has_* (compile-time flags of ggml-cpu), so a user
 * and a test log can tell which path computed a result. Built into
 * fmalloc_ggml (core/src/llm/llm_ggml.c); names no GGML type.
 * Thread safety: every function may be called from any thread.
 * Source: ggml-cpu.h (ggml_cpu_has_*), ggml.h (ggml_version). */
#ifndef FM_LLM_GGML_H
#define FM_LLM_GGML_H

/* The number of instruction-set features fm_llm_ggml_feature reports. */
int fm_llm_ggml_n_features(void);

/* Feature i (0 <= i < fm_llm_ggml_n_features()): its name ("sse3", "avx2",
 * "fma", "f16c", "avx512", "amx_int8", "neon", ...: GGML's spelling) in
 * *name and whether the build uses it (1 or 0) as the return value; -1 and
 * *name NULL for i out of range. */
int fm_llm_ggml_feature(int i, const char **name);

/* The level of the build in one word, the highest that holds: "avx512"
 * (AVX-512 F), "avx2" (AVX2, FMA and F16C), "avx", "sse" (SSE3), "neon",
 * "portable" (none of these). Never NULL. */
const char *fm_llm_ggml_isa(void);

/* GGML's version string (ggml_version()). Never NULL. */
const char *fm_llm_ggml_version(void);

#endif
