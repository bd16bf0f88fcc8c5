/* fileview.c: read-only borrowed mappings of foreign files (fm_fileview.h). */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include "fm/fm_fileview.h"

#include "fm/fm_fault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef unsigned long long ull;

fm_status fm_fileview_open(const char *path, fm_fileview **out, fm_err *err) {
  fm_status st = FM_OK;
  fm_fileview *v = NULL;
  if (out) *out = NULL;
  if (!path || !path[0] || !out)
    return fm_err_set(err, FM_EARG, "fm_fileview_open needs a non-empty path and an out pointer");
  v = calloc(1, sizeof *v);
  if (v) v->fd = -1;
  size_t n = strlen(path) + 1;
  if (!v || !(v->path = malloc(n))) {
    st = fm_err_set(err, FM_ENOMEM, "cannot allocate a view of '%s'", path);
    goto fail;
  }
  memcpy(v->path, path, n);
  /* O_NONBLOCK: a FIFO would block open() until a writer came; a regular
   * file, the only kind mapped, ignores the flag. */
  v->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (v->fd < 0) {
    st = fm_err_set(err, FM_EIO, "cannot open '%s': %s", path, strerror(errno));
    goto fail;
  }
  struct stat sb;
  if (fstat(v->fd, &sb) != 0) {
    st = fm_err_set(err, FM_EIO, "cannot stat '%s': %s", path, strerror(errno));
    goto fail;
  }
  if (!S_ISREG(sb.st_mode)) {
    st = fm_err_set(err, FM_EIO, "'%s' is not a regular file", path);
    goto fail;
  }
  uint64_t size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
  if (size > (uint64_t)SIZE_MAX) {
    st = fm_err_set(err, FM_EIO, "'%s' of %llu bytes is too large to map here", path, (ull)size);
    goto fail;
  }
  if (size > 0) {
    void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, v->fd, 0);
    if (p == MAP_FAILED) {
      st = fm_err_set(err, FM_EIO, "cannot map '%s': %s", path, strerror(errno));
      goto fail;
    }
    v->base = p;
    fm_fault_register(p, (size_t)size, v->path); /* a SIGBUS in it is an error */
  }
  v->n_bytes = size;
  *out = v;
  return FM_OK;
fail:
  fm_fileview_close(v);
  return st;
}

void fm_fileview_close(fm_fileview *v) {
  if (!v) return;
  if (v->base) {
    fm_fault_unregister(v->base);
    munmap((void *)v->base, (size_t)v->n_bytes);
  }
  if (v->fd >= 0) close(v->fd);
  free(v->path);
  free(v);
}

fm_status fm_fileview_check(const fm_fileview *v, fm_err *err) {
  if (!v) return fm_err_set(err, FM_EARG, "fm_fileview_check needs an open view, got NULL");
  struct stat sb;
  if (fstat(v->fd, &sb) != 0)
    return fm_err_set(err, FM_EIO, "cannot stat '%s': %s", v->path, strerror(errno));
  uint64_t size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
  if (size < v->n_bytes)
    return fm_err_set(err, FM_EFORMAT, "'%s' shrank from %llu to %llu bytes since it was opened",
                      v->path, (ull)v->n_bytes, (ull)size);
  return FM_OK;
}

/* n bytes at off of file fd (named path) into buf, all of them: FM_EIO
 * otherwise. */
static fm_status read_at(int fd, const char *path, uint8_t *buf, size_t n, uint64_t off, fm_err *err) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, buf + got, n - got, (off_t)(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return fm_err_set(err, FM_EIO, "cannot read %zu bytes at offset %llu of '%s': %s", n, (ull)off, path,
                        r < 0 ? strerror(errno) : "the file ends before them (truncated?)");
    got += (size_t)r;
  }
  return FM_OK;
}

fm_status fm_fd_identity(int fd, const char *path, uint64_t size, fm_file_identity *id, fm_err *err) {
  if (fd < 0 || !path || !id) return fm_err_set(err, FM_EARG, "fm_fd_identity needs a descriptor, a path and an output");
  memset(id, 0, sizeof *id);
  struct stat sb;
  if (fstat(fd, &sb) != 0) return fm_err_set(err, FM_EIO, "cannot stat '%s': %s", path, strerror(errno));
  uint8_t *buf = malloc(FM_IDENTITY_HEAD);
  if (!buf) return fm_err_set(err, FM_ENOMEM, "out of memory reading '%s'", path);
  uint64_t h = FM_CHECKSUM_SEED;
  size_t n = size < FM_IDENTITY_HEAD ? (size_t)size : FM_IDENTITY_HEAD;
  fm_status st = read_at(fd, path, buf, n, 0, err);
  if (st == FM_OK) h = fm_checksum(buf, n, h);
  if (size > FM_IDENTITY_PAGE)
    for (int j = 0; j < FM_IDENTITY_PAGES && st == FM_OK; j++) {
      const uint64_t off = (uint64_t)j * (size - FM_IDENTITY_PAGE) / (FM_IDENTITY_PAGES - 1);
      st = read_at(fd, path, buf, FM_IDENTITY_PAGE, off, err);
      if (st == FM_OK) h = fm_checksum(buf, FM_IDENTITY_PAGE, h);
    }
  free(buf);
  if (st != FM_OK) return st;
  id->size = size;
  id->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + (int64_t)sb.st_mtim.tv_nsec;
  id->checksum = h;
  return FM_OK;
}

fm_status fm_fileview_identity(const fm_fileview *v, fm_file_identity *id, fm_err *err) {
  if (!v || !id) return fm_err_set(err, FM_EARG, "fm_fileview_identity needs a view and an output");
  return fm_fd_identity(v->fd, v->path, v->n_bytes, id, err);
}
