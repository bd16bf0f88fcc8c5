/* fm_gguf.h against GGML (ggmlR's libggml.a), which is the authority on the
 * type traits and on the file layout:
 *  - the type table: for every id below GGML_TYPE_COUNT, fm_gguf_type_block,
 *    fm_gguf_type_size and fm_gguf_type_name equal ggml_blck_size,
 *    ggml_type_size and ggml_type_name; ids GGML has removed (block size 0)
 *    are unknown to both;
 *  - files written by GGML's own GGUF writer (one tensor of every known type,
 *    metadata of every value type) parse, and the
 *    directory (offsets, sizes, types, keys, values) equals what GGML's
 *    reader (gguf_init_from_file) reports;
 *  - the fixtures in $RFMALLOC_FIXTURES/gguf: the same directory comparison.
 * Hand-built bad files are in core/tests/formats/gguf (no GGML). */
#define _GNU_SOURCE
#include "fm/fm_gguf.h"
#include "fm_test.h"
#include "fm_test_files.h"

#include <ggml.h>
#include <gguf.h>
#include <string.h>
#include <unistd.h>

static void type_table(void) {
  int known = 0;
  for (int id = 0; id < GGML_TYPE_COUNT; id++) {
    enum ggml_type t = (enum ggml_type)id;
    int64_t blk = ggml_blck_size(t);
    if (blk == 0) {
      if (fm_gguf_type_block((uint32_t)id) != 0 || fm_gguf_type_name((uint32_t)id) != NULL)
        fprintf(stderr, "  id %d: GGML has no such type, fm_gguf says block %lld\n", id,
                (long long)fm_gguf_type_block((uint32_t)id));
      CHECK(fm_gguf_type_block((uint32_t)id) == 0 && fm_gguf_type_size((uint32_t)id) == 0 &&
            fm_gguf_type_name((uint32_t)id) == NULL);
      continue;
    }
    known++;
    const char *name = fm_gguf_type_name((uint32_t)id);
    int same = fm_gguf_type_block((uint32_t)id) == blk &&
               fm_gguf_type_size((uint32_t)id) == (int64_t)ggml_type_size(t) && name &&
               strcmp(name, ggml_type_name(t)) == 0;
    if (!same)
      fprintf(stderr, "  id %d: ggml %s %lld/%zu, fm_gguf %s %lld/%lld\n", id, ggml_type_name(t),
              (long long)blk, ggml_type_size(t), name ? name : "NULL",
              (long long)fm_gguf_type_block((uint32_t)id), (long long)fm_gguf_type_size((uint32_t)id));
    CHECK(same);
  }
  CHECK(known >= 34);
  for (uint32_t id = GGML_TYPE_COUNT; id < GGML_TYPE_COUNT + 64; id++)
    CHECK(fm_gguf_type_block(id) == 0 && fm_gguf_type_name(id) == NULL);
}

/* Our parse of path against GGML's reader of the same file. */
static void compare_with_ggml(const char *path) {
  fm_gguf *g = NULL;
  fm_err err;
  CHECK_OK(fm_gguf_open(path, &g, &err), &err);
  struct gguf_init_params params = {true, NULL};
  struct gguf_context *ctx = gguf_init_from_file(path, params);
  CHECK(ctx != NULL);
  if (!g || !ctx) goto out;
  CHECK(fm_gguf_version(g) == gguf_get_version(ctx));
  CHECK(fm_gguf_alignment(g) == gguf_get_alignment(ctx));
  CHECK(fm_gguf_n_kv(g) == gguf_get_n_kv(ctx));
  CHECK(fm_gguf_n_tensors(g) == gguf_get_n_tensors(ctx));
  if (fm_gguf_n_tensors(g) > 0) CHECK(fm_gguf_data_offset(g) == gguf_get_data_offset(ctx));
  for (int64_t i = 0; i < fm_gguf_n_kv(g) && i < gguf_get_n_kv(ctx); i++) {
    const fm_gguf_kv *kv = fm_gguf_kv_at(g, i);
    const char *key = gguf_get_key(ctx, i);
    CHECK(strlen(key) == kv->key_len && memcmp(key, kv->key, kv->key_len) == 0);
    CHECK((int)kv->type == (int)gguf_get_kv_type(ctx, i));
    CHECK(fm_gguf_find_kv(g, key) == i);
    if (kv->type == FM_GGUF_ARRAY) {
      CHECK((int)kv->elem_type == (int)gguf_get_arr_type(ctx, i));
      CHECK(kv->n == gguf_get_arr_n(ctx, i));
      if (kv->elem_type == FM_GGUF_STRING) {
        int bad = 0;
        for (uint64_t j = 0; j < kv->n; j++) {
          const char *s, *o = gguf_get_arr_str(ctx, i, (size_t)j);
          size_t len;
          if (fm_gguf_get_str(kv, j, &s, &len) || len != strlen(o) || memcmp(s, o, len)) bad++;
        }
        CHECK(bad == 0);
      } else {
        /* numeric arrays: GGML holds a copy; ours points into the file */
        CHECK(memcmp(kv->value, gguf_get_arr_data(ctx, i), kv->n * fm_gguf_vtype_size(kv->elem_type)) == 0);
      }
    } else if (kv->type == FM_GGUF_STRING) {
      const char *s, *o = gguf_get_val_str(ctx, i);
      size_t len;
      CHECK(fm_gguf_get_str(kv, 0, &s, &len) == 0 && len == strlen(o) && memcmp(s, o, len) == 0);
    } else {
      CHECK(memcmp(kv->value, gguf_get_val_data(ctx, i), fm_gguf_vtype_size(kv->type)) == 0);
    }
  }
  for (int64_t i = 0; i < fm_gguf_n_tensors(g) && i < gguf_get_n_tensors(ctx); i++) {
    const fm_gguf_tensor *t = fm_gguf_tensor_at(g, i);
    const char *name = gguf_get_tensor_name(ctx, i);
    CHECK(strlen(name) == t->name_len && memcmp(name, t->name, t->name_len) == 0);
    CHECK(t->type == (uint32_t)gguf_get_tensor_type(ctx, i));
    CHECK(t->n_bytes == gguf_get_tensor_size(ctx, i));
    CHECK(t->data_offset == gguf_get_data_offset(ctx) + gguf_get_tensor_offset(ctx, i));
  }
out:
  if (ctx) gguf_free(ctx);
  fm_gguf_close(g);
}

static char g_dir[64];

/* A file from GGML's writer: every value type, and one 2-row tensor of every
 * type GGML knows (rows of two blocks), filled with a byte pattern. */
static void ggml_written(void) {
  /* GGML's writer lays tensors out when they are added, at its context's
   * alignment, which setting general.alignment does not change (its own
   * reader then refuses the file); other alignments are tested on
   * hand-built files in core/tests/formats/gguf. */
  const uint32_t alignment = 32;
  char path[128];
  snprintf(path, sizeof path, "%s/w%u.gguf", g_dir, alignment);
  size_t mem = 0;
  for (int id = 0; id < GGML_TYPE_COUNT; id++)
    if (ggml_blck_size((enum ggml_type)id)) mem += 4 * ggml_type_size((enum ggml_type)id) + 1024;
  struct ggml_init_params ip = {mem + 65536, NULL, false};
  struct ggml_context *mctx = ggml_init(ip);
  struct gguf_context *ctx = gguf_init_empty();
  CHECK(mctx && ctx);
  if (!mctx || !ctx) return;
  gguf_set_val_str(ctx, "general.architecture", "zoo");
  gguf_set_val_u8(ctx, "v.u8", 250);
  gguf_set_val_i8(ctx, "v.i8", -3);
  gguf_set_val_u16(ctx, "v.u16", 65535);
  gguf_set_val_i16(ctx, "v.i16", -300);
  gguf_set_val_u32(ctx, "v.u32", 4000000000u);
  gguf_set_val_i32(ctx, "v.i32", -2000000000);
  gguf_set_val_f32(ctx, "v.f32", 0.125f);
  gguf_set_val_u64(ctx, "v.u64", UINT64_C(1) << 40);
  gguf_set_val_i64(ctx, "v.i64", -(INT64_C(1) << 40));
  gguf_set_val_f64(ctx, "v.f64", 3.25);
  gguf_set_val_bool(ctx, "v.bool", true);
  float fa[5] = {1, -2, 3.5f, 0, 1e30f};
  gguf_set_arr_data(ctx, "v.af32", GGUF_TYPE_FLOAT32, fa, 5);
  int32_t ia[3] = {-1, 0, 7};
  gguf_set_arr_data(ctx, "v.ai32", GGUF_TYPE_INT32, ia, 3);
  const char *sa[4] = {"<unk>", "", "\xe2\x96\x81the", "x y"};
  gguf_set_arr_str(ctx, "v.astr", sa, 4);
  int n_types = 0;
  for (int id = 0; id < GGML_TYPE_COUNT; id++) {
    enum ggml_type t = (enum ggml_type)id;
    if (!ggml_blck_size(t)) continue;
    struct ggml_tensor *x = ggml_new_tensor_2d(mctx, t, 2 * ggml_blck_size(t), 2);
    char name[64];
    snprintf(name, sizeof name, "w.%s", ggml_type_name(t));
    ggml_set_name(x, name);
    uint8_t *d = x->data;
    for (size_t k = 0; k < ggml_nbytes(x); k++) d[k] = (uint8_t)(k * 13 + (size_t)id);
    gguf_add_tensor(ctx, x);
    n_types++;
  }
  CHECK(gguf_write_to_file(ctx, path, false));
  gguf_free(ctx);
  compare_with_ggml(path);

  fm_gguf *g = NULL;
  fm_err err;
  CHECK_OK(fm_gguf_open(path, &g, &err), &err);
  if (g) {
    CHECK(fm_gguf_n_tensors(g) == n_types && fm_gguf_alignment(g) == alignment);
    for (int id = 0; id < GGML_TYPE_COUNT; id++) {
      enum ggml_type t = (enum ggml_type)id;
      if (!ggml_blck_size(t)) continue;
      char name[64];
      snprintf(name, sizeof name, "w.%s", ggml_type_name(t));
      const fm_gguf_tensor *x = fm_gguf_tensor_at(g, fm_gguf_find_tensor(g, name));
      CHECK(x && x->type == (uint32_t)id && x->ne[0] == 2 * ggml_blck_size(t) && x->ne[1] == 2);
      CHECK(x && x->data_offset % alignment == 0);
      if (x) {
        /* the bytes GGML wrote are where we say they are */
        const uint8_t *d = fm_gguf_tensor_data(g, x);
        int bad = 0;
        for (uint64_t k = 0; k < x->n_bytes; k++) bad += d[k] != (uint8_t)(k * 13 + (size_t)id);
        CHECK(bad == 0);
      }
    }
    const fm_gguf_kv *kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "v.u32"));
    uint64_t u;
    int64_t i;
    double f;
    CHECK(kv && fm_gguf_get_u64(kv, 0, &u) == 0 && u == 4000000000u);
    kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "v.i16"));
    CHECK(kv && fm_gguf_get_i64(kv, 0, &i) == 0 && i == -300);
    kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "v.af32"));
    CHECK(kv && kv->n == 5 && fm_gguf_get_f64(kv, 4, &f) == 0 && f == (double)1e30f);
    kv = fm_gguf_kv_at(g, fm_gguf_find_kv(g, "v.bool"));
    CHECK(kv && kv->type == FM_GGUF_BOOL && fm_gguf_get_i64(kv, 0, &i) == 0 && i == 1);
    fm_gguf_close(g);
  }
  ggml_free(mctx);
}


static char fixdir[1024];
static int have_fixtures;

static void fixtures(void) {
  if (!have_fixtures) return;
  static const char *files[] = {
      "stories260K.gguf",
      "derived/stories260K-F16.gguf",
      "derived/stories260K-Q8_0.gguf",
      "derived/stories260K-Q4_0.gguf",
      "derived/stories260K-Q4_K_M.gguf",
      "derived/quant-zoo-stories260K.gguf",
      "vocab/ggml-vocab-llama-spm.gguf",
      "vocab/ggml-vocab-gpt-2.gguf",
      "vocab/ggml-vocab-deepseek-coder.gguf",
      "vocab/ggml-vocab-falcon.gguf",
      "vocab/ggml-vocab-bert-bge.gguf",
  };
  for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", fixdir, files[k]);
    compare_with_ggml(path);
  }
}

int main(void) {
  have_fixtures = fm_test_fixture(fixdir, sizeof fixdir, "gguf", "stories260K.gguf");
  if (!have_fixtures) printf("SKIP: GGUF fixtures not found at %s (set RFMALLOC_FIXTURES)\n", fixdir);
  if (!fm_test_tmpdir(g_dir, sizeof g_dir, "fm_gguf_ggml_")) return 1;
  FM_RUN(type_table);
  FM_RUN(ggml_written);
  FM_RUN(fixtures);
  fm_test_rmtree(g_dir);
  FM_TEST_END();
}
