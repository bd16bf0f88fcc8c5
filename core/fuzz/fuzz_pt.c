/* fuzz_pt.c: libFuzzer target for the PyTorch checkpoint reader (fm_pt.h:
 * fm_pt_parse and every accessor).
 *
 * Input encoding: the bytes are the .pt file itself (a ZIP archive holding
 * data.pkl and the storages), parsed in place from the fuzzer's buffer,
 * which ends exactly at the file's end, so any read past it is an
 * AddressSanitizer report.
 *
 * On a rejected file: the status is FM_EFORMAT or FM_EUNSUPPORTED with a
 * non-empty message and no result (FM_ENOMEM cannot happen at these sizes).
 * On an accepted file, what the reader promises is checked apart from it:
 *  - the top folder is a non-empty name without '/';
 *  - each tensor's name is NUL-terminated at name_len, found again by
 *    fm_pt_find, and differs from every other name (pairwise for up to 64
 *    tensors);
 *  - dtype known, 0..8 dims, every dim >= 0 and the unused ones 1, numel
 *    their product, n_bytes = numel * element size, data inside the input
 *    at offset, aligned to the element size, storage_offset >= 0;
 *  - every data byte is read once (so ASan sees a bad range).
 *
 * Seeds (core/fuzz/corpus/fuzz_pt/): the small archives test_pt writes with
 * FM_PT_WRITE_CORPUS=<dir>: a state dict of f32, i64 and bf16 tensors
 * sharing storages at pickle protocols 2 and 4, each with a plain, a
 * torch-style ZIP64 and a fully ZIP64 directory; every storage type; an
 * empty state dict. */
#include "fm/fm_pt.h"

#include <string.h>

#include "fuzz_util.h"

static volatile uint8_t sink;

static void check_tensor(const fm_pt *pt, const uint8_t *data, size_t size, int64_t i) {
  const fm_pt_tensor *t = fm_pt_tensor_at(pt, i);
  FUZZ_ASSERT(t != NULL && t->name != NULL && t->storage != NULL);
  FUZZ_ASSERT(strlen(t->name) == t->name_len && fm_pt_find(pt, t->name) == i);
  const size_t es = fm_pt_dtype_size(t->dtype);
  FUZZ_ASSERT(es == 1 || es == 2 || es == 4 || es == 8);
  FUZZ_ASSERT(strcmp(fm_pt_dtype_name(t->dtype), "?") != 0);
  FUZZ_ASSERT(t->n_dims >= 0 && t->n_dims <= FM_PT_MAX_DIMS);
  int64_t numel = 1;
  for (int k = 0; k < FM_PT_MAX_DIMS; k++) {
    FUZZ_ASSERT(t->shape[k] >= 0 && (k < t->n_dims || t->shape[k] == 1));
    FUZZ_ASSERT(fm_mul_ok(numel, t->shape[k], &numel));
  }
  FUZZ_ASSERT(numel == t->numel && t->n_bytes == (uint64_t)numel * es);
  FUZZ_ASSERT(t->data_off <= size && t->n_bytes <= size - t->data_off);
  FUZZ_ASSERT((const uint8_t *)t->data == data + t->data_off && t->data_off % es == 0);
  FUZZ_ASSERT(t->storage_offset >= 0 && (t->requires_grad == 0 || t->requires_grad == 1));
  const uint8_t *d = t->data;
  for (uint64_t k = 0; k < t->n_bytes; k++) sink ^= d[k];
  if (i < 64)
    for (int64_t j = 0; j < i; j++) FUZZ_ASSERT(strcmp(fm_pt_tensor_at(pt, j)->name, t->name) != 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fm_pt *pt = NULL;
  fm_err err = {FM_OK, ""};
  fm_status st = fm_pt_parse(data, size, "fuzz.pt", &pt, &err);
  if (st != FM_OK) {
    FUZZ_ASSERT(pt == NULL && err.code == st && err.msg[0] != 0);
    FUZZ_ASSERT(st == FM_EFORMAT || st == FM_EUNSUPPORTED);
    return 0;
  }
  FUZZ_ASSERT(pt && fm_pt_bytes(pt) == data && fm_pt_size(pt) == size);
  const char *top = fm_pt_top(pt);
  FUZZ_ASSERT(top && top[0] && !strchr(top, '/'));
  const int64_t n = fm_pt_n_tensors(pt);
  FUZZ_ASSERT(n >= 0);
  for (int64_t i = 0; i < n; i++) check_tensor(pt, data, size, i);
  FUZZ_ASSERT(fm_pt_tensor_at(pt, n) == NULL && fm_pt_tensor_at(pt, -1) == NULL);
  FUZZ_ASSERT(fm_pt_find(pt, "no such tensor\x01") == -1);
  FUZZ_ASSERT(fm_pt_check(pt, &err) == FM_OK);
  fm_pt_close(pt);
  return 0;
}
