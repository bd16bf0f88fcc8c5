/* map.c: opening, creating, locking, growing and closing an fmalloc file
 * (fm_map.h). Codecs and the commit live in map_meta.c, the block table in
 * map_alloc.c, the directory in map_dir.c. Layout: docs/formats/fmalloc.md. */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include "map_impl.h"

#include "fm/fm_fault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/random.h>
#endif

typedef unsigned long long ull;

#define MIB (UINT64_C(1) << 20)

static uint64_t page_bytes(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (uint64_t)p : 4096;
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* ---- file size, growth and zeroing -------------------------------------- */

uint64_t fmi_map_hi_end(const fm_map *m) {
  if (m->n_blk == 0) return m->data_off;
  const map_blk *b = &m->blk[m->n_blk - 1];
  return b->off + map_blk_ext(b);
}

fm_status fmi_map_stat(const fm_map *m, uint64_t *size_out, fm_err *err) {
  struct stat st;
  *size_out = 0;
  if (fstat(m->fd, &st) != 0)
    return fm_err_set(err, FM_EIO, "cannot stat '%s': %s", m->path, strerror(errno));
  uint64_t size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
  uint64_t need = fmi_map_hi_end(m);
  if (size < need)
    return fm_err_set(err, FM_EFORMAT,
                      "'%s' was truncated from outside: it has %llu bytes, its objects need %llu",
                      m->path, (ull)size, (ull)need);
  *size_out = size;
  return FM_OK;
}

/* The file-size limit (RLIMIT_FSIZE) in bytes, or UINT64_MAX when unlimited.
 * Checked before growing so the process gets FM_ENOSPC instead of SIGXFSZ. */
static uint64_t fsize_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return (uint64_t)rl.rlim_cur;
}

static int fallocate_retry(int fd, uint64_t off, uint64_t len) {
  int r;
  do r = posix_fallocate(fd, (off_t)off, (off_t)len);
  while (r == EINTR);
  return r;
}

static fm_status grow_error(const char *path, uint64_t end, int r, fm_err *err) {
  if (r == ENOSPC || r == EFBIG || r == EDQUOT)
    return fm_err_set(err, FM_ENOSPC, "no space to grow '%s' to %llu bytes: %s", path, (ull)end,
                      strerror(r));
  return fm_err_set(err, FM_EIO, "cannot grow '%s' to %llu bytes: %s", path, (ull)end,
                    strerror(r));
}

fm_status fmi_map_reserve(fm_map *m, uint64_t end, fm_err *err) {
  if (end <= m->file_bytes) return FM_OK;
  if (end > m->cap)
    return fm_err_set(err, FM_ENOSPC, "'%s' cannot grow to %llu bytes beyond its cap of %llu",
                      m->path, (ull)end, (ull)m->cap);
  uint64_t limit = fsize_limit();
  if (end > limit)
    return fm_err_set(err, FM_ENOSPC,
                      "growing '%s' to %llu bytes would exceed the file size limit (ulimit -f) of %llu bytes",
                      m->path, (ull)end, (ull)limit);
  /* Grow in steps of 1/8 of the file (1 MiB .. 256 MiB), rounded to 1 MiB,
   * so a stream of small allocations does not call fallocate each time. */
  uint64_t step = m->file_bytes / 8;
  if (step < MIB) step = MIB;
  if (step > 256 * MIB) step = 256 * MIB;
  uint64_t target = m->file_bytes + step; /* file_bytes <= cap <= INT64_MAX */
  if (target < end) target = end;
  if (target <= UINT64_MAX - MIB) target = (target + MIB - 1) / MIB * MIB;
  if (target > m->cap) target = m->cap;
  if (target > limit) target = limit;
  if (target < end) target = end;

  /* A file that grew from outside holds unknown bytes past file_bytes. */
  struct stat st;
  uint64_t actual = (fstat(m->fd, &st) == 0 && st.st_size > 0) ? (uint64_t)st.st_size : 0;

  int r = fallocate_retry(m->fd, m->file_bytes, target - m->file_bytes);
  if (r != 0 && target > end) {
    target = end;
    r = fallocate_retry(m->fd, m->file_bytes, target - m->file_bytes);
  }
  if (r != 0) return grow_error(m->path, end, r, err);
  if (actual > m->file_bytes) m->clean_from = actual < target ? actual : target;
  m->file_bytes = target;
  return FM_OK;
}

/* Zero [off, end) of the mapping. Large page-aligned interiors go through
 * FALLOC_FL_ZERO_RANGE (the kernel drops the pages instead of us touching
 * every one); anything the filesystem refuses falls back to memset. */
static void zero_bytes(fm_map *m, uint64_t off, uint64_t end) {
#ifdef FALLOC_FL_ZERO_RANGE
  if (end - off >= 4 * MIB) {
    uint64_t pg = page_bytes();
    uint64_t a = (off + pg - 1) / pg * pg, b = end / pg * pg;
    if (b > a && fallocate(m->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)a,
                           (off_t)(b - a)) == 0) {
      memset(m->base + off, 0, (size_t)(a - off));
      memset(m->base + b, 0, (size_t)(end - b));
      return;
    }
  }
#endif
  memset(m->base + off, 0, (size_t)(end - off));
}

void fmi_map_zero(fm_map *m, uint64_t off, uint64_t end) {
  uint64_t stop = end < m->clean_from ? end : m->clean_from;
  if (off < stop) zero_bytes(m, off, stop);
  if (end > m->clean_from) m->clean_from = end;
}

fm_status fmi_map_writable(const fm_map *m, const char *what, fm_err *err) {
  if (!m) return fm_err_set(err, FM_EARG, "%s needs an open map, got NULL", what);
  if (m->read_only)
    return fm_err_set(err, FM_EARG, "'%s' is open read-only, so %s is not allowed", m->path, what);
  return FM_OK;
}

/* ---- locking and creation ------------------------------------------------ */

static fm_status lock_file(int fd, int exclusive, const char *path, fm_err *err) {
  for (;;) {
    if (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0) return FM_OK;
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK)
      return fm_err_set(err, FM_EBUSY,
                        exclusive ? "'%s' is already open elsewhere (its lock is held)"
                                  : "'%s' is open for writing elsewhere (its lock is held)",
                        path);
    return fm_err_set(err, FM_EIO, "cannot lock '%s': %s", path, strerror(errno));
  }
}

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off) {
  const uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = pwrite(fd, p, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
    off += (uint64_t)r;
  }
  return 0;
}

/* Check the cap requested for a new file. */
static fm_status check_new_cap(const char *path, uint64_t cap, uint64_t slot_bytes, fm_err *err) {
  uint64_t need = MAP_HEADER_BYTES + 2 * slot_bytes;
  if (cap == 0)
    return fm_err_set(err, FM_EARG, "creating '%s' needs cap_bytes > 0", path);
  if (cap < need)
    return fm_err_set(err, FM_EARG,
                      "cap of %llu bytes for '%s' is below the %llu bytes its header and metadata need",
                      (ull)cap, path, (ull)need);
  if (cap > (uint64_t)INT64_MAX || cap > (uint64_t)SIZE_MAX - page_bytes())
    return fm_err_set(err, FM_EARG, "cap of %llu bytes for '%s' is too large", (ull)cap, path);
  return FM_OK;
}

/* MAP_FILE_ID_BYTES random bytes for a new file's identity: getrandom(2),
 * else /dev/urandom. FM_EIO when neither gives them (no weak fallback: the
 * identity is what tells a serialized reference that its file was replaced). */
static fm_status random_file_id(uint8_t *id, const char *path, fm_err *err) {
  size_t got = 0;
#if defined(__linux__)
  while (got < MAP_FILE_ID_BYTES) {
    ssize_t r = getrandom(id + got, MAP_FILE_ID_BYTES - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
#endif
  if (got < MAP_FILE_ID_BYTES) {
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    while (fd >= 0 && got < MAP_FILE_ID_BYTES) {
      ssize_t r = read(fd, id + got, MAP_FILE_ID_BYTES - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    if (fd >= 0) close(fd);
  }
  if (got < MAP_FILE_ID_BYTES)
    return fm_err_set(err, FM_EIO, "cannot create '%s': no random bytes for its file identity "
                      "(getrandom and /dev/urandom failed)", path);
  return FM_OK;
}

/* Write header and an empty slot A (seq 1) into the empty file fd; the
 * header goes last so a half-made file never carries a valid header. */
static fm_status init_file(int fd, const char *path, uint64_t cap, uint64_t slot_bytes,
                           int durable, fm_err *err) {
  uint64_t data_off = MAP_HEADER_BYTES + 2 * slot_bytes;
  uint64_t limit = fsize_limit();
  if (data_off > limit)
    return fm_err_set(err, FM_ENOSPC,
                      "creating '%s' needs %llu bytes, over the file size limit (ulimit -f) of %llu",
                      path, (ull)data_off, (ull)limit);
  uint8_t slot[MAP_SLOT_HDR], hdr[MAP_HEADER_USED], id[MAP_FILE_ID_BYTES];
  fm_status st = random_file_id(id, path, err);
  if (st != FM_OK) return st;
  int r = fallocate_retry(fd, 0, data_off);
  if (r != 0) return grow_error(path, data_off, r, err);
  fmi_map_slot_encode_empty(slot, 1, cap, 1);
  fmi_map_header_encode(hdr, slot_bytes, cap, id);
  if (pwrite_all(fd, slot, sizeof slot, MAP_HEADER_BYTES) != 0 ||
      pwrite_all(fd, hdr, sizeof hdr, 0) != 0 || (durable && fdatasync(fd) != 0))
    return fm_err_set(err, FM_EIO, "cannot write the header of '%s': %s", path, strerror(errno));
  return FM_OK;
}

/* fsync the directory holding path, so a new name survives a power cut. */
static void sync_parent_dir(const char *path) {
  char *dir = dup_str(path);
  if (!dir) return;
  char *slash = strrchr(dir, '/');
  const char *d = ".";
  if (slash) {
    slash[slash == dir ? 1 : 0] = '\0';
    d = dir;
  }
  int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  free(dir);
}

enum { CREATED = 0, RETRY = 1 };

/* Create path fully formed: build it under a temporary name, then link it in
 * place, so no reader ever sees a half-made file and two creators cannot both
 * win. Sets m->fd (locked) on success; *again is set when path appeared
 * meanwhile and the caller should open it instead. */
static fm_status create_file(fm_map *m, uint64_t cap, uint64_t slot_bytes, int *again,
                             fm_err *err) {
  fm_status st = FM_OK;
  size_t n = strlen(m->path) + 64;
  char *tmp = malloc(n);
  int fd = -1, linked = 0, in_place = 0;
  *again = 0;
  if (!tmp) return fm_err_set(err, FM_ENOMEM, "cannot allocate a path for '%s'", m->path);
  for (int k = 0; k < 100 && fd < 0; k++) {
    snprintf(tmp, n, "%s.fmtmp.%ld.%d", m->path, (long)getpid(), k);
    fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) {
      st = fm_err_set(err, FM_EIO, "cannot create '%s': %s", m->path, strerror(errno));
      goto fail;
    }
  }
  if (fd < 0) {
    st = fm_err_set(err, FM_EIO, "cannot create a temporary file next to '%s'", m->path);
    goto fail;
  }
  if ((st = lock_file(fd, 1, m->path, err)) != FM_OK) goto fail;
  if ((st = init_file(fd, m->path, cap, slot_bytes, 1, err)) != FM_OK) goto fail;
  if (link(tmp, m->path) == 0) {
    linked = 1;
  } else if (errno == EEXIST) {
    *again = 1;
    goto fail;
  } else {
    /* No hard links here (some FUSE, vfat): create in place instead. */
    unlink(tmp);
    close(fd);
    fd = open(m->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno == EEXIST) *again = 1;
      else st = fm_err_set(err, FM_EIO, "cannot create '%s': %s", m->path, strerror(errno));
      goto fail;
    }
    /* Someone who opened it before our lock holds it now: that is EBUSY. */
    if ((st = lock_file(fd, 1, m->path, err)) != FM_OK) goto fail;
    in_place = 1;
    if ((st = init_file(fd, m->path, cap, slot_bytes, 1, err)) != FM_OK) goto fail;
  }
  if (linked) unlink(tmp);
  sync_parent_dir(m->path);
  free(tmp);
  m->fd = fd;
  return FM_OK;
fail:
  if (fd >= 0) {
    unlink(in_place ? m->path : tmp); /* ours, and locked: never a half-made file */
    close(fd);
  }
  free(tmp);
  return st;
}

static fm_status open_writer(fm_map *m, uint64_t cap, uint64_t slot_bytes, fm_err *err) {
  fm_status st;
  for (int attempt = 0; attempt < 8; attempt++) {
    int fd = open(m->path, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      m->fd = fd;
      if ((st = lock_file(fd, 1, m->path, err)) != FM_OK) return st;
      struct stat sb;
      if (fstat(fd, &sb) != 0)
        return fm_err_set(err, FM_EIO, "cannot stat '%s': %s", m->path, strerror(errno));
      if (S_ISREG(sb.st_mode) && sb.st_size == 0) {
        /* An empty file (e.g. made by mktemp) holds nothing to lose. */
        if ((st = check_new_cap(m->path, cap, slot_bytes, err)) != FM_OK) return st;
        return init_file(fd, m->path, cap, slot_bytes, 1, err);
      }
      return FM_OK;
    }
    if (errno != ENOENT)
      return fm_err_set(err, FM_EIO, "cannot open '%s': %s", m->path, strerror(errno));
    if ((st = check_new_cap(m->path, cap, slot_bytes, err)) != FM_OK) return st;
    int again = 0;
    st = create_file(m, cap, slot_bytes, &again, err);
    if (st != FM_OK || !again) return st;
  }
  return fm_err_set(err, FM_EIO, "cannot open '%s': it keeps appearing and disappearing", m->path);
}

/* ---- loading --------------------------------------------------------------- */

static fm_status load(fm_map *m, uint64_t cap_req, fm_err *err) {
  fm_status st = FM_OK;
  map_meta mm[2];
  char why[2][128];
  memset(mm, 0, sizeof mm);

  struct stat sb;
  if (fstat(m->fd, &sb) != 0) {
    st = fm_err_set(err, FM_EIO, "cannot stat '%s': %s", m->path, strerror(errno));
    goto fail;
  }
  if (!S_ISREG(sb.st_mode)) {
    st = fm_err_set(err, FM_EARG, "'%s' is not a regular file", m->path);
    goto fail;
  }
  uint64_t size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
  uint8_t hbuf[MAP_HEADER_USED];
  uint64_t want = size < MAP_HEADER_USED ? size : MAP_HEADER_USED, got = 0;
  while (got < want) {
    ssize_t r = pread(m->fd, hbuf + got, (size_t)(want - got), (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      st = fm_err_set(err, FM_EIO, "cannot read '%s': %s", m->path, strerror(errno));
      goto fail;
    }
    if (r == 0) break;
    got += (uint64_t)r;
  }
  map_hdr h;
  if ((st = fmi_map_header_decode(m->path, hbuf, got, size, &h, err)) != FM_OK) goto fail;
  memcpy(m->hdr, hbuf, MAP_HEADER_USED); /* decode succeeded: got == MAP_HEADER_USED */
  m->version = h.version;
  memcpy(m->file_id, h.file_id, MAP_FILE_ID_BYTES);

  for (int s = 0; s < 2; s++) {
    st = fmi_map_slot_read(m->fd, m->path, &h, s, &mm[s], why[s], sizeof why[s], err);
    if (st != FM_OK && st != FM_EFORMAT) goto fail;
    if (st == FM_EFORMAT) mm[s].seq = 0; /* marks the slot invalid */
  }
  st = FM_OK;
  if (mm[0].seq == 0 && mm[1].seq == 0) {
    st = fm_err_set(err, FM_EFORMAT, "'%s' has no valid metadata (slot A: %s; slot B: %s)",
                    m->path, why[0], why[1]);
    goto fail;
  }
  int k = mm[1].seq > mm[0].seq ? 1 : 0;
  map_meta *c = &mm[k];
  uint64_t need = h.data_off;
  if (c->n_blk > 0) need = c->blk[c->n_blk - 1].off + c->blk[c->n_blk - 1].held;
  if (size < need) {
    st = fm_err_set(err, FM_EFORMAT, "'%s' is truncated: %llu bytes, its directory needs %llu",
                    m->path, (ull)size, (ull)need);
    goto fail;
  }

  uint64_t cap = c->cap;
  if (!m->read_only && cap_req > cap) {
    if (cap_req > (uint64_t)INT64_MAX || cap_req > (uint64_t)SIZE_MAX - page_bytes()) {
      st = fm_err_set(err, FM_EARG, "cap of %llu bytes for '%s' is too large", (ull)cap_req, m->path);
      goto fail;
    }
    cap = cap_req;
  }
  uint64_t len = m->read_only ? size : (cap > size ? cap : size);
  uint64_t pg = page_bytes();
  if (len > (uint64_t)SIZE_MAX - pg) {
    st = fm_err_set(err, FM_ENOSPC, "'%s' of %llu bytes cannot be mapped here", m->path, (ull)len);
    goto fail;
  }
  len = (len + pg - 1) / pg * pg;
  void *base = mmap(NULL, (size_t)len, m->read_only ? PROT_READ : PROT_READ | PROT_WRITE,
                    MAP_SHARED, m->fd, 0);
  if (base == MAP_FAILED) {
    if (errno == ENOMEM)
      st = fm_err_set(err, FM_ENOSPC, "cannot reserve %llu bytes of address space for '%s'",
                      (ull)len, m->path);
    else
      st = fm_err_set(err, FM_EIO, "cannot map '%s': %s", m->path, strerror(errno));
    goto fail;
  }
  m->base = base;
  m->map_len = (size_t)len;
  fm_fault_register(base, (size_t)len, m->path); /* a SIGBUS in it is an error */
  m->header_bytes = h.header_bytes;
  m->slot_bytes = h.slot_bytes;
  m->slot_off[0] = h.slot_off[0];
  m->slot_off[1] = h.slot_off[1];
  m->data_off = h.data_off;
  m->cap = cap;
  m->file_bytes = size;
  m->clean_from = size;
  m->seq = c->seq;
  m->active = k;
  /* uids below the lease may have been handed out by a session that died
   * before committing; start after them. uid 0 is never valid, and a slot
   * with lease 0 (no uid handed out) would otherwise give it out. */
  m->uid_next = c->uid_lease > 0 ? c->uid_lease : 1;
  m->uid_lease = c->uid_lease;
  m->blk = c->blk;
  m->n_blk = m->blk_capa = c->n_blk;
  m->dir = c->dir;
  m->n_dir = m->dir_capa = c->n_dir;
  m->meta_bytes = c->meta_bytes;
  memset(c, 0, sizeof *c);
fail:
  fmi_map_meta_clear(&mm[0]);
  fmi_map_meta_clear(&mm[1]);
  return st;
}

/* ---- public entry points ------------------------------------------------- */

fm_status fm_map_open(const char *path, uint64_t cap_bytes, fm_map_mode mode, int read_only,
                      fm_map **out, fm_err *err) {
  return fmi_map_open_with(path, cap_bytes, mode, read_only, FM_MAP_SLOT_BYTES, out, err);
}

fm_status fmi_map_open_with(const char *path, uint64_t cap_bytes, fm_map_mode mode,
                            int read_only, uint64_t slot_bytes, fm_map **out, fm_err *err) {
  fm_status st = FM_OK;
  fm_map *m = NULL;
  if (out) *out = NULL;
  if (!out || !path || !path[0])
    return fm_err_set(err, FM_EARG, "fm_map_open needs a non-empty path and an out pointer");
  if (mode != FM_MAP_PERSISTENT && mode != FM_MAP_SCRATCH)
    return fm_err_set(err, FM_EARG, "mode %d for '%s' is neither persistent nor scratch", (int)mode,
                      path);
  if (mode == FM_MAP_SCRATCH && read_only)
    return fm_err_set(err, FM_EARG, "a scratch map of '%s' cannot be read-only", path);
  if (slot_bytes < 4096 || slot_bytes % 4096 || slot_bytes > (UINT64_C(1) << 30))
    return fm_err_set(err, FM_EARG, "metadata slot size %llu is not a multiple of 4096 in 4 KiB .. 1 GiB",
                      (ull)slot_bytes);

  m = calloc(1, sizeof *m);
  if (!m || !(m->path = dup_str(path))) {
    st = fm_err_set(err, FM_ENOMEM, "cannot allocate a map for '%s'", path);
    goto fail;
  }
  m->fd = -1;
  m->mode = mode;
  m->read_only = read_only ? 1 : 0;

  if (mode == FM_MAP_SCRATCH) {
    if ((st = check_new_cap(path, cap_bytes, slot_bytes, err)) != FM_OK) goto fail;
    m->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (m->fd < 0) {
      if (errno == EEXIST)
        st = fm_err_set(err, FM_EARG, "scratch mode creates '%s', but it already exists", path);
      else
        st = fm_err_set(err, FM_EIO, "cannot create '%s': %s", path, strerror(errno));
      goto fail;
    }
    /* Unlinked at once: the kernel frees it at close or at any exit. */
    if (unlink(path) != 0) {
      st = fm_err_set(err, FM_EIO, "cannot unlink scratch file '%s': %s", path, strerror(errno));
      goto fail;
    }
    if ((st = lock_file(m->fd, 1, path, err)) != FM_OK) goto fail;
    if ((st = init_file(m->fd, path, cap_bytes, slot_bytes, 0, err)) != FM_OK) goto fail;
  } else if (read_only) {
    /* O_NONBLOCK: a FIFO would block until a writer came (load() refuses
     * anything but a regular file, which ignores the flag) */
    m->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (m->fd < 0) {
      st = fm_err_set(err, FM_EIO, "cannot open '%s': %s", path, strerror(errno));
      goto fail;
    }
    if ((st = lock_file(m->fd, 0, path, err)) != FM_OK) goto fail;
  } else {
    if ((st = open_writer(m, cap_bytes, slot_bytes, err)) != FM_OK) goto fail;
  }
  if ((st = load(m, cap_bytes, err)) != FM_OK) goto fail;
  *out = m;
  return FM_OK;
fail:
  fm_map_close(m);
  return st;
}

void fm_map_close(fm_map *m) {
  if (!m) return;
  /* No flock(LOCK_UN): a forked child shares the lock's open file
   * description, and its close must not unlock the parent. close() drops
   * the lock once the last descriptor is gone. */
  if (m->base) {
    fm_fault_unregister(m->base);
    munmap(m->base, m->map_len);
  }
  if (m->fd >= 0) close(m->fd);
  for (int64_t i = 0; i < m->n_dir; i++) free(m->dir[i]);
  free(m->dir);
  free(m->blk);
  free(m->path);
  free(m);
}

fm_status fm_map_sync(fm_map *m, fm_err *err) {
  fm_status st = fmi_map_writable(m, "fm_map_sync", err);
  if (st != FM_OK) return st;
  return fmi_map_commit(m, m->uid_lease, err);
}

fm_status fm_map_check(const fm_map *m, fm_err *err) {
  if (!m) return fm_err_set(err, FM_EARG, "fm_map_check needs an open map, got NULL");
  uint64_t size;
  return fmi_map_stat(m, &size, err);
}

void fm_map_get_info(const fm_map *m, fm_map_info *out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  if (!m) return;
  out->path = m->path;
  out->mode = m->mode;
  out->read_only = m->read_only;
  out->cap_bytes = m->cap;
  out->file_bytes = m->file_bytes;
  for (int64_t i = 0; i < m->n_blk; i++) {
    if (m->blk[i].n_bytes == 0) continue;
    out->used_bytes += map_round(m->blk[i].n_bytes);
    out->n_blocks++;
  }
  out->n_named = m->n_dir;
  out->sync_seq = m->seq;
  out->version = m->version;
  memcpy(out->file_id, m->file_id, sizeof out->file_id);
}

fm_status fm_map_same_file(const fm_map *m, const char *path, int *same_out, fm_err *err) {
  if (same_out) *same_out = 0;
  if (!m || !path || !same_out)
    return fm_err_set(err, FM_EARG, "fm_map_same_file needs an open map, a path and same_out");
  struct stat ps, fs;
  if (stat(path, &ps) != 0) return FM_OK; /* path names no file we can see */
  if (fstat(m->fd, &fs) != 0)
    return fm_err_set(err, FM_EIO, "cannot stat '%s': %s", m->path, strerror(errno));
  if (ps.st_dev != fs.st_dev || ps.st_ino != fs.st_ino) return FM_OK;
  /* The same inode: it must still be the file this map opened, not one
   * truncated or rewritten in place (`cp other path`, `> path`). */
  uint64_t size;
  fm_status st = fmi_map_stat(m, &size, err);
  if (st != FM_OK) return st;
  uint8_t buf[MAP_HEADER_USED];
  size_t got = 0;
  while (got < sizeof buf) {
    ssize_t r = pread(m->fd, buf + got, sizeof buf - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return fm_err_set(err, FM_EIO, "cannot read '%s': %s", m->path, strerror(errno));
    if (r == 0) break;
    got += (size_t)r;
  }
  if (got < sizeof buf || memcmp(buf, m->hdr, sizeof buf) != 0)
    return fm_err_set(err, FM_EFORMAT,
                      "'%s' was overwritten from outside: its header is not the one it was opened with",
                      m->path);
  *same_out = 1;
  return FM_OK;
}

void *fm_map_ptr(const fm_map *m, uint64_t off) {
  if (!m || off < m->data_off || off >= m->file_bytes) return NULL;
  return m->base + off;
}

int fm_map_offset_of(const fm_map *m, const void *p, uint64_t *off_out) {
  const uint8_t *q = p;
  if (!m || !m->base || !q || q < m->base + m->data_off || q >= m->base + m->file_bytes) return 0;
  if (off_out) *off_out = (uint64_t)(q - m->base);
  return 1;
}

fm_status fm_map_identity(fm_map *m, fm_file_identity *id, fm_err *err) {
  if (!m || !id) return fm_err_set(err, FM_EARG, "fm_map_identity needs an open map and an output");
  uint64_t size;
  fm_status st = fmi_map_stat(m, &size, err);
  if (st != FM_OK) return st;
  /* the mapping may be shorter than the file (a read-only map is the size at open) */
  const uint64_t mapped = size < m->map_len ? size : m->map_len;
  if (!m->read_only && mapped > 0 && msync(m->base, (size_t)mapped, MS_SYNC) != 0)
    return fm_err_set(err, FM_EIO, "cannot write '%s' back to its file (msync): %s", m->path, strerror(errno));
  return fm_fd_identity(m->fd, m->path, size, id, err);
}
