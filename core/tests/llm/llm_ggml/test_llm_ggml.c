/* Tests for fm_llm_ggml.h: the features table is well formed, the level
 * follows from the features, and the level is the build that setup
 * verified. Oracle: FM_GGML_ISA_EXPECTED, which the Makefile takes from
 * tools/ggmlr-setup.sh (GGML's compile flags and the AVX instructions that
 * objdump finds in the libggml.a linked here); without it that check is
 * skipped, saying so. Also whether it has Vulkan (FM_GGML_VULKAN_EXPECTED). */
#define _POSIX_C_SOURCE 200809L
#include "fm/fm_llm_ggml.h"

#include "fm_test.h"

#include <stdlib.h>
#include <string.h>

static int has(const char *want) {
  const char *name;
  for (int i = 0; i < fm_llm_ggml_n_features(); i++) {
    const int on = fm_llm_ggml_feature(i, &name);
    if (strcmp(name, want) == 0) return on;
  }
  return -1;
}

static void test_table(void) {
  const int n = fm_llm_ggml_n_features();
  CHECK(n >= 10);
  for (int i = 0; i < n; i++) {
    const char *a, *b;
    const int on = fm_llm_ggml_feature(i, &a);
    CHECK(a != NULL && (on == 0 || on == 1));
    for (int j = 0; j < i; j++) {
      (void)fm_llm_ggml_feature(j, &b);
      CHECK(strcmp(a, b) != 0);
    }
  }
  const char *name = "x";
  CHECK(fm_llm_ggml_feature(n, &name) == -1 && name == NULL);
  name = "x";
  CHECK(fm_llm_ggml_feature(-1, &name) == -1 && name == NULL);
  CHECK(strlen(fm_llm_ggml_version()) > 0);
}

static void test_level(void) {
  const char *isa = fm_llm_ggml_isa();
  if (strcmp(isa, "avx512") == 0) CHECK(has("avx512") == 1);
  else if (strcmp(isa, "avx2") == 0) CHECK(has("avx512") == 0 && has("avx2") == 1 && has("fma") == 1 && has("f16c") == 1);
  else if (strcmp(isa, "portable") == 0) CHECK(has("avx") == 0 && has("sse3") == 0 && has("neon") == 0);
  else CHECK(strcmp(isa, "avx") == 0 || strcmp(isa, "sse") == 0 || strcmp(isa, "neon") == 0);
  printf("GGML %s: %s build\n", fm_llm_ggml_version(), isa);
}

static void test_expected(void) {
  const char *want = getenv("FM_GGML_ISA_EXPECTED");
  if (!want || !*want) {
    printf("skipped test_expected: FM_GGML_ISA_EXPECTED unset (make test sets it)\n");
    return;
  }
  CHECK(strcmp(fm_llm_ggml_isa(), want) == 0);
}

/* Whether the build has Vulkan, against what tools/ggmlr-setup.sh verified
 * (nm finds ggml_backend_vk_reg in libggml.a or not); without a Vulkan
 * build no device is listed. */
static void test_vulkan(void) {
  const int has = fm_llm_ggml_has_vulkan();
  CHECK(has == 0 || has == 1);
  if (!has) CHECK(fm_llm_ggml_n_devices("Vulkan") == 0);
  const char *want = getenv("FM_GGML_VULKAN_EXPECTED");
  if (!want || !*want) {
    printf("skipped the Vulkan expectation: FM_GGML_VULKAN_EXPECTED unset (make test sets it)\n");
    return;
  }
  CHECK(has == (strcmp(want, "yes") == 0));
}

int main(void) {
  FM_RUN(test_table);
  FM_RUN(test_vulkan);
  FM_RUN(test_level);
  FM_RUN(test_expected);
  FM_TEST_END();
}
