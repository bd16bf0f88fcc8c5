/* fm_test_files.h: files for the core's C tests: the shared fixtures folder,
 * a whole file read into memory, a private temporary directory, a shared
 * mapping of a temporary file and the resident pages of a mapping.
 * POSIX: a test that includes it defines _POSIX_C_SOURCE 200809L (or
 * _GNU_SOURCE) before its first header. */
#ifndef FM_TEST_FILES_H
#define FM_TEST_FILES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* Pages of the mapping that starts at address p resident in this process
 * (Rss of its /proc/self/smaps entry; mincore would report the page cache
 * instead), or (size_t)-1 when that cannot be read. */
static inline size_t fm_test_rss_pages(const void *p, size_t page) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return (size_t)-1;
  char line[512];
  int in = 0;
  size_t r = (size_t)-1;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi, kb;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in = lo == (unsigned long)(uintptr_t)p;
    } else if (in && sscanf(line, "Rss: %lu kB", &kb) == 1) {
      r = (size_t)kb * 1024u / page;
      break;
    }
  }
  fclose(f);
  return r;
}

/* A writable MAP_SHARED mapping of len bytes of a new, already unlinked
 * temporary file (zeros), or NULL. *fd_out gets the file's descriptor when
 * fd_out is not NULL (the caller closes it), else it is closed. */
static inline unsigned char *fm_test_map_tmp(size_t len, int *fd_out) {
  char path[] = "/tmp/fm_test_mapXXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return NULL;
  unlink(path);
  void *m = ftruncate(fd, (off_t)len) == 0
                ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                : MAP_FAILED;
  if (m == MAP_FAILED || !fd_out)
    close(fd);
  else
    *fd_out = fd;
  return m == MAP_FAILED ? NULL : m;
}

#endif
