/* fuzz_fmt_registry.c: libFuzzer target for the format table's lookups of
 * untrusted names and bytes (fm_fmt_registry.h): fm_fmt_by_magic,
 * fm_fmt_by_path, fm_fmt_by_name and fm_fmt_resolve.
 *
 * Input encoding:
 *   byte 0      bit 0 clear: bytes 1.. are a file's first bytes, copied into
 *               a heap buffer of exactly their length (a read past them is an
 *               AddressSanitizer report) for fm_fmt_by_magic.
 *               bit 0 set: bytes 1.. (up to the first NUL) are a path and a
 *               format name, resolved for every format of the table with
 *               no companion given. fm_fmt_detect is not called: it reads the
 *               first bytes of whatever file the path names (a FIFO blocks).
 *
 * Invariants checked (FUZZ_ASSERT): a format found by its magic has one
 * that the bytes hold; one found by path has an extension that ends it, in
 * ASCII case; a name found is the format's or an alias, in ASCII case;
 * fm_fmt_resolve succeeds below FM_FMT_PATH_MAX - 16 bytes and fails with
 * FM_EIO from FM_FMT_PATH_MAX on; the main file it gives starts with the
 * path, and each companion not absent ends with its extension in some case.
 *
 * Seeds (core/fuzz/corpus/fuzz_fmt_registry/): the first bytes of a .bed,
 * PGEN, BGEN, BCF, BGZF and packed EIGENSTRAT file; paths with each
 * extension, upper case and compressed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fm/fm_fmt_registry.h"
#include "fuzz_util.h"

/* s (n bytes) ends with suffix, in ASCII case. */
static int ends_with(const char *s, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  return k <= n && strncasecmp(s + n - k, suffix, k) == 0;
}

static void check_magic(const uint8_t *data, size_t size) {
  uint8_t *bytes = malloc(size ? size : 1);
  if (!bytes) return;
  memcpy(bytes, data, size);
  const fm_fmt_format *f = fm_fmt_by_magic(bytes, size);
  int held = !f;
  for (int j = 0; f && j < f->n_magic && !held; j++) {
    const fm_fmt_magic *m = &f->magic[j];
    held = m->offset + m->len <= size;
    for (uint32_t i = 0; held && i < m->len; i++)
      held = !m->mask || (uint8_t)m->mask[i] ? bytes[m->offset + i] == (uint8_t)m->bytes[i] : 1;
  }
  FUZZ_ASSERT(held);
  free(bytes);
}

static void check_path(const char *path) {
  const size_t n = strlen(path);
  const fm_fmt_format *f = fm_fmt_by_path(path);
  int ends = !f;
  for (int i = 0; f && f->extension[i] && !ends; i++) ends = ends_with(path, n, f->extension[i]);
  FUZZ_ASSERT(ends);
  const fm_fmt_format *named = fm_fmt_by_name(path);
  int is_name = !named || !strcasecmp(named->name, path);
  for (int i = 0; named && named->alias[i] && !is_name; i++) is_name = !strcasecmp(named->alias[i], path);
  FUZZ_ASSERT(is_name);
  static fm_fmt_fileset fs;
  fm_err err;
  for (int k = 0; (f = fm_fmt_at(k)); k++) {
    fm_status st = fm_fmt_resolve(f, path, NULL, &fs, &err);
    FUZZ_ASSERT(n < FM_FMT_PATH_MAX - 16 ? st == FM_OK : n >= FM_FMT_PATH_MAX ? st == FM_EIO : 1);
    if (st != FM_OK) continue;
    FUZZ_ASSERT(fs.format == f && strncmp(fs.path[0], path, n) == 0);
    for (int i = 0; i < f->n_companions; i++) {
      const char *c = fs.path[1 + i], *ext = f->companion[i].ext;
      FUZZ_ASSERT(!c[0] || (ext && ends_with(c, strlen(c), ext))); /* none given */
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (!(data[0] & 1)) {
    check_magic(data + 1, size - 1);
    return 0;
  }
  char *path = malloc(size);
  if (!path) return 0;
  memcpy(path, data + 1, size - 1);
  path[size - 1] = '\0';
  check_path(path);
  free(path);
  return 0;
}
