/* llm_ggml.c: the instruction sets of the linked GGML build and the
 * devices of its backend registry (fm_llm_ggml.h). */
#include "fm/fm_llm_ggml.h"
#include "fm/fm_llm.h"
#include "llm_impl.h"

#include <string.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

static const struct {
  const char *name;
  int (*has)(void);
} features[] = {
    {"sse3", ggml_cpu_has_sse3},
    {"ssse3", ggml_cpu_has_ssse3},
    {"avx", ggml_cpu_has_avx},
    {"avx2", ggml_cpu_has_avx2},
    {"fma", ggml_cpu_has_fma},
    {"f16c", ggml_cpu_has_f16c},
    {"bmi2", ggml_cpu_has_bmi2},
    {"avx_vnni", ggml_cpu_has_avx_vnni},
    {"avx512", ggml_cpu_has_avx512},
    {"avx512_vbmi", ggml_cpu_has_avx512_vbmi},
    {"avx512_vnni", ggml_cpu_has_avx512_vnni},
    {"avx512_bf16", ggml_cpu_has_avx512_bf16},
    {"amx_int8", ggml_cpu_has_amx_int8},
    {"neon", ggml_cpu_has_neon},
    {"arm_fma", ggml_cpu_has_arm_fma},
    {"fp16_va", ggml_cpu_has_fp16_va},
    {"dotprod", ggml_cpu_has_dotprod},
    {"sve", ggml_cpu_has_sve},
    {"llamafile", ggml_cpu_has_llamafile},
    {"repack", fm_llm_ggml_has_repack}, /* llm_repack.c */
};
#define N_FEATURES ((int)(sizeof features / sizeof features[0]))

int fm_llm_ggml_n_features(void) { return N_FEATURES; }

int fm_llm_ggml_feature(int i, const char **name) {
  if (i < 0 || i >= N_FEATURES) {
    *name = NULL;
    return -1;
  }
  *name = features[i].name;
  return features[i].has() ? 1 : 0;
}

const char *fm_llm_ggml_isa(void) {
  if (ggml_cpu_has_avx512()) return "avx512";
  if (ggml_cpu_has_avx2() && ggml_cpu_has_fma() && ggml_cpu_has_f16c()) return "avx2";
  if (ggml_cpu_has_avx()) return "avx";
  if (ggml_cpu_has_sse3()) return "sse";
  if (ggml_cpu_has_neon()) return "neon";
  return "portable";
}

int64_t llm_ggml_f32_lanes(void) {
  if (ggml_cpu_has_avx512()) return 16;
  if (ggml_cpu_has_avx()) return 8;
  if (ggml_cpu_has_sse3() || ggml_cpu_has_neon()) return 4;
  return 16;
}

const char *fm_llm_ggml_version(void) {
  const char *v = ggml_version();
  return v ? v : "unknown";
}

/* FM_GGML_VULKAN: set by Rgguf's configure and the core's CMakeLists when
 * the libggml.a they link defines ggml_backend_vk_reg. */
int fm_llm_ggml_has_vulkan(void) {
#ifdef FM_GGML_VULKAN
  return 1;
#else
  return 0;
#endif
}

/* GGML logs lines for its developers at info and debug level: one per
 * tensor it repacks (llm_repack.c) and, with Vulkan, its device scan and
 * every device buffer it allocates or frees, which would reach R's console
 * on every evaluation. Before GGML first does either, a logger that drops
 * the lines below warnings is put in front of the one in place, for the
 * rest of the process (one static state: loads run on R's thread). */
static struct {
  ggml_log_callback cb;
  void *data;
  int dropping; /* the last line was dropped: drop its continuations */
  int set;
} quiet;

static void quiet_log(enum ggml_log_level level, const char *text, void *data) {
  (void)data;
  if (level != GGML_LOG_LEVEL_CONT) quiet.dropping = level < GGML_LOG_LEVEL_WARN;
  if (!quiet.dropping && quiet.cb) quiet.cb(level, text, quiet.data);
}

void llm_ggml_quiet(void) {
  if (quiet.set) return;
  quiet.set = 1;
  ggml_log_get(&quiet.cb, &quiet.data);
  ggml_log_set(quiet_log, NULL);
}

int fm_llm_ggml_n_devices(const char *backend) {
  if (!backend) return 0;
  llm_ggml_quiet();
  ggml_backend_reg_t reg = ggml_backend_reg_by_name(backend);
  return reg ? (int)ggml_backend_reg_dev_count(reg) : 0;
}

static const char *dev_type_name(enum ggml_backend_dev_type t) {
  switch (t) {
  case GGML_BACKEND_DEVICE_TYPE_CPU: return "cpu";
  case GGML_BACKEND_DEVICE_TYPE_GPU: return "gpu";
  case GGML_BACKEND_DEVICE_TYPE_IGPU: return "igpu";
  case GGML_BACKEND_DEVICE_TYPE_META: return "meta";
  default: return "accel";
  }
}

fm_status fm_llm_ggml_device(const char *backend, int i, fm_llm_device_info *out) {
  if (!out) return FM_EARG;
  memset(out, 0, sizeof *out);
  if (i < 0 || i >= fm_llm_ggml_n_devices(backend)) return FM_EARG;
  ggml_backend_dev_t dev = ggml_backend_reg_dev_get(ggml_backend_reg_by_name(backend), (size_t)i);
  struct ggml_backend_dev_props p;
  memset(&p, 0, sizeof p);
  ggml_backend_dev_get_props(dev, &p);
  out->name = p.name ? p.name : "";
  out->description = p.description ? p.description : "";
  out->memory_free = (unsigned long long)p.memory_free;
  out->memory_total = (unsigned long long)p.memory_total;
  out->type = dev_type_name(p.type);
  return FM_OK;
}
