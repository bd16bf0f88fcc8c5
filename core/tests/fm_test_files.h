/* fm_test_files.h: files for the core's C tests: the shared fixtures folder,
 * a whole file read into memory, and a private temporary directory.
 * POSIX: a test that includes it defines _POSIX_C_SOURCE 200809L (or
 * _GNU_SOURCE) before its first header. */
#ifndef FM_TEST_FILES_H
#define FM_TEST_FILES_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* out = "<fixtures>/<rel>", where <fixtures> is $RFMALLOC_FIXTURES when set
 * and non-empty, else ../../../shared/fixtures (the repository's sibling
 * shared/ seen from build/core/<test>, where ctest runs). Returns 1 when
 * "<out>/<probe>" (out itself when probe is NULL) is readable, else 0. */
static inline int fm_test_fixture(char *out, size_t n, const char *rel, const char *probe) {
  const char *env = getenv("RFMALLOC_FIXTURES");
  const char *base = env && env[0] ? env : "../../../shared/fixtures";
  snprintf(out, n, "%s/%s", base, rel);
  if (!probe) return access(out, R_OK) == 0;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", out, probe);
  return access(path, R_OK) == 0;
}

/* The bytes of the file at path in a malloc'd buffer (free it) followed by
 * one NUL byte not counted in *n; NULL (and *n = 0) when it cannot be read. */
static inline void *fm_test_read_file(const char *path, size_t *n) {
  *n = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (len >= 0 && fseek(f, 0, SEEK_SET) == 0) buf = malloc((size_t)len + 1);
  if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (!buf) return NULL;
  buf[len] = 0;
  *n = (size_t)len;
  return buf;
}

/* A new directory "/tmp/<prefix>XXXXXX" (mkdtemp) written into dir (size
 * n); returns 1, or prints the reason and returns 0. */
static inline int fm_test_tmpdir(char *dir, size_t n, const char *prefix) {
  snprintf(dir, n, "/tmp/%sXXXXXX", prefix);
  if (mkdtemp(dir)) return 1;
  perror("mkdtemp");
  return 0;
}

/* "<dir>/<name>" in one of 8 static buffers used in turn, so that up to 8
 * results may be live at once. */
static inline const char *fm_test_path_in(const char *dir, const char *name) {
  static char buf[8][4200];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

/* Remove the directory dir and everything below it (rm -rf); says so on
 * stderr when it could not. */
static inline void fm_test_rmtree(const char *dir) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

#endif
