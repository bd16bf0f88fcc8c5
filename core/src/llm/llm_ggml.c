/* llm_ggml.c: the instruction sets of the linked GGML build (fm_llm_ggml.h). */
#include "fm/fm_llm_ggml.h"
#include "fm/fm_llm.h"

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

const char *fm_llm_ggml_version(void) {
  const char *v = ggml_version();
  return v ? v : "unknown";
}
