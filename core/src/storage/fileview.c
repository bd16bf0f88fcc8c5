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
