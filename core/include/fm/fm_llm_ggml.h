/* fm_llm_ggml.h: the instruction sets the linked GGML was compiled for,
 * and the devices of its backend registry (Vulkan).
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

#include "fm_base.h"

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

/* ---- devices ---------------------------------------------------------------
 * GGML's device backends are compiled in or not (ggmlR's configure
 * --with-vulkan; `make vulkan` in the source repository). A build with
 * Vulkan registers a backend named "Vulkan" in GGML's registry when a
 * Vulkan loader and at least one usable device are found (GGML skips CPU
 * drivers such as Mesa's lavapipe unless GGML_VK_VISIBLE_DEVICES names
 * them). Source: ggml-backend.h (ggml_backend_reg_by_name,
 * ggml_backend_dev_get_props). */

/* 1 when the linked GGML was compiled with its Vulkan backend (the build
 * defines FM_GGML_VULKAN after finding ggml_backend_vk_reg in libggml.a),
 * else 0. */
int fm_llm_ggml_has_vulkan(void);

/* One device of a GGML backend; the strings are GGML's (borrowed, valid
 * while the process runs). Memory in bytes, as the driver reports it. */
typedef struct fm_llm_device_info {
  const char *name;        /* "Vulkan0", ... */
  const char *description; /* the driver's device name */
  unsigned long long memory_free, memory_total;
  const char *type; /* "gpu", "igpu", "cpu", "accel" or "meta" */
} fm_llm_device_info;

/* Devices of the registered backend `backend` ("Vulkan"; case as GGML
 * spells it); 0 when no such backend is registered (not compiled in, or no
 * usable device). The first call initializes GGML's registry (a Vulkan
 * instance, in a Vulkan build). */
int fm_llm_ggml_n_devices(const char *backend);

/* Device i (0 <= i < fm_llm_ggml_n_devices(backend)) into *out: FM_OK, or
 * FM_EARG for an i out of range (out zeroed). */
fm_status fm_llm_ggml_device(const char *backend, int i, fm_llm_device_info *out);

#endif
