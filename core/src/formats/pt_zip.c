/* pt_zip.c: the ZIP directory of a .pt checkpoint (pt_impl.h).
 *
 * Source: PKWARE's APPNOTE.TXT (sections 4.3.7 local file header, 4.3.12
 * central directory header, 4.3.14-4.3.16 ZIP64 end of central directory
 * record, its locator and the end of central directory record, 4.5.3 the
 * ZIP64 extended information extra field). Written from the specification;
 * docs/formats/pt.md lists every check.
 *
 * Only what a torch checkpoint needs is read: a single-disk archive of
 * stored entries. Every offset and size is compared with the file before it
 * is used, and each record is read once, so the work is linear in the size
 * of the central directory. */
#include "pt_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END 0x06054b50u
#define SIG_END64 0x06064b50u
#define SIG_LOC64 0x07064b50u

#define LOCAL_BYTES 30u   /* fixed part of a local file header */
#define CENTRAL_BYTES 46u /* fixed part of a central directory header */
#define END_BYTES 22u     /* end of central directory record, without comment */
#define LOC64_BYTES 20u   /* ZIP64 end of central directory locator */
#define END64_BYTES 56u   /* ZIP64 end of central directory record, version 1 */

#define U16_SAT 0xffffu
#define U32_SAT 0xffffffffu

/* n bytes (1..8) at p, little-endian. */
static uint64_t le(const uint8_t *p, int n) {
  uint64_t v = 0;
  while (n-- > 0) v = v << 8 | p[n];
  return v;
}

/* Bytes of a name for "%.*s": at most 60, cut at a character boundary
 * (names are checked UTF-8 before a message prints them). */
static int shown(const char *s, size_t n) {
  size_t k = n < 60 ? n : 60;
  if (k < n)
    while (k > 0 && ((unsigned char)s[k] & 0xC0u) == 0x80u) k--;
  return (int)k;
}

static fm_pt_name entry_name(const void *owner, int64_t i) {
  const fm_pt_zip *z = owner;
  return (fm_pt_name){z->e[i].name, z->e[i].name_len};
}

/* The end records: where the central directory is and how many entries it
 * holds, from the end of central directory record and, when its locator
 * is present, the ZIP64 record (whose values win; the 16- and 32-bit
 * fields must then agree with them or be saturated). */
typedef struct dir_at {
  uint64_t off, size, n; /* central directory: offset, bytes, entries */
  uint64_t limit;        /* the first byte after it may not pass: the next end record */
} dir_at;

static fm_status find_end(const fm_pt_zip *z, dir_at *d, fm_err *err) {
  const uint8_t *p = z->p;
  const size_t size = z->size;
  if (size >= 2 && p[0] == 0x80 && p[1] <= 5)
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "%s: the file is a bare pickle (protocol %u), torch.save's legacy format from before torch 1.6; only the ZIP format is read (load and save it again with a current torch)",
                      z->msg, (unsigned)p[1]);
  if (size < END_BYTES)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: %zu bytes is too short for a ZIP archive (its end record alone is %u bytes)",
                      z->msg, size, END_BYTES);
  /* The end record is the last thing in the file but its comment (at most
   * 65535 bytes), whose length it gives: scan back for a signature whose
   * comment length reaches the end exactly. */
  size_t at = size - END_BYTES, stop = at > 65535u ? at - 65535u : 0;
  for (;; at--) {
    if (le(p + at, 4) == SIG_END && le(p + at + 20, 2) == size - at - END_BYTES) break;
    if (at == stop)
      return fm_err_set(err, FM_EFORMAT,
                        "%s: no ZIP end of central directory record (signature 50 4b 05 06 with a comment reaching the end of the file) in its last %zu bytes: not a ZIP archive",
                        z->msg, size - stop);
  }
  const uint8_t *e = p + at;
  uint64_t disk = le(e + 4, 2), cd_disk = le(e + 6, 2), n_disk = le(e + 8, 2), n = le(e + 10, 2);
  uint64_t cd_size = le(e + 12, 4), cd_off = le(e + 16, 4);
  d->limit = at;
  if (at >= LOC64_BYTES && le(p + at - LOC64_BYTES, 4) == SIG_LOC64) {
    const uint8_t *l = p + at - LOC64_BYTES;
    uint64_t l_disk = le(l + 4, 4), off64 = le(l + 8, 8), n_disks = le(l + 16, 4);
    size_t l_at = at - LOC64_BYTES;
    if (l_disk != 0 || n_disks > 1)
      return fm_err_set(err, FM_EUNSUPPORTED,
                        "%s: the ZIP64 locator at byte %zu names disk %llu of %llu: multi-disk archives are not read",
                        z->msg, l_at, (ull)l_disk, (ull)n_disks);
    if (off64 > l_at || l_at - off64 < END64_BYTES || le(p + off64, 4) != SIG_END64)
      return fm_err_set(err, FM_EFORMAT,
                        "%s: the ZIP64 locator at byte %zu points at byte %llu, where no ZIP64 end of central directory record (50 4b 06 06, %u bytes) fits before the locator",
                        z->msg, l_at, (ull)off64, END64_BYTES);
    const uint8_t *r = p + off64;
    uint64_t rec = le(r + 4, 8);
    if (rec < END64_BYTES - 12 || rec > l_at - off64 - 12)
      return fm_err_set(err, FM_EFORMAT,
                        "%s: the ZIP64 end of central directory record at byte %llu gives its size as %llu, expected %u to %llu (it must end before the locator at byte %zu)",
                        z->msg, (ull)off64, (ull)rec, END64_BYTES - 12, (ull)(l_at - off64 - 12), l_at);
    uint64_t disk64 = le(r + 16, 4), cd_disk64 = le(r + 20, 4), n_disk64 = le(r + 24, 8);
    uint64_t n64 = le(r + 32, 8), cd_size64 = le(r + 40, 8), cd_off64 = le(r + 48, 8);
    struct {
      uint64_t v32, v64, sat;
      const char *what;
    } f[] = {{disk, disk64, U16_SAT, "disk number"},        {cd_disk, cd_disk64, U16_SAT, "central directory disk"},
             {n_disk, n_disk64, U16_SAT, "entries on this disk"}, {n, n64, U16_SAT, "entry count"},
             {cd_size, cd_size64, U32_SAT, "central directory size"}, {cd_off, cd_off64, U32_SAT, "central directory offset"}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
      if (f[i].v32 != f[i].v64 && f[i].v32 != f[i].sat)
        return fm_err_set(err, FM_EFORMAT,
                          "%s: the end of central directory record at byte %zu gives the %s as %llu, but the ZIP64 record at byte %llu as %llu",
                          z->msg, at, f[i].what, (ull)f[i].v32, (ull)off64, (ull)f[i].v64);
    disk = disk64, cd_disk = cd_disk64, n_disk = n_disk64, n = n64;
    cd_size = cd_size64, cd_off = cd_off64;
    d->limit = off64;
  } else if (disk == U16_SAT || cd_disk == U16_SAT || n_disk == U16_SAT || n == U16_SAT ||
             cd_size == U32_SAT || cd_off == U32_SAT) {
    return fm_err_set(err, FM_EFORMAT,
                      "%s: the end of central directory record at byte %zu holds saturated (ZIP64) values but no ZIP64 locator precedes it",
                      z->msg, at);
  }
  if (disk != 0 || cd_disk != 0 || n_disk != n)
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "%s: the end record at byte %zu describes disk %llu (directory on disk %llu, %llu of %llu entries there): multi-disk archives are not read",
                      z->msg, at, (ull)disk, (ull)cd_disk, (ull)n_disk, (ull)n);
  if (cd_off > d->limit || cd_size > d->limit - cd_off)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: the central directory of %llu bytes at byte %llu does not end before the end records at byte %llu",
                      z->msg, (ull)cd_size, (ull)cd_off, (ull)d->limit);
  if (n > cd_size / CENTRAL_BYTES)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: the end record claims %llu entries, but a central directory of %llu bytes holds at most %llu",
                      z->msg, (ull)n, (ull)cd_size, (ull)(cd_size / CENTRAL_BYTES));
  if (n == 0) return fm_err_set(err, FM_EFORMAT, "%s: the ZIP archive has no entries", z->msg);
  d->off = cd_off, d->size = cd_size, d->n = n;
  return FM_OK;
}

/* The ZIP64 extended information extra field (id 0x0001) replaces, in this
 * order, each of the uncompressed size, compressed size, local header
 * offset (8 bytes each) and disk number (4 bytes) that the header saturated. */
static fm_status read_zip64_extra(const fm_pt_zip *z, int64_t i, uint64_t at, const uint8_t *x,
                                  size_t xn, uint64_t *usize, uint64_t *csize, uint64_t *lh_off,
                                  uint64_t *disk, fm_err *err) {
  const fm_pt_entry *e = &z->e[i];
  size_t k = 0;
  while (k < xn) {
    if (xn - k < 4)
      return fm_err_set(err, FM_EFORMAT,
                        "%s: entry '%.*s' (central directory byte %llu): its extra field ends inside a field header at extra byte %zu",
                        z->msg, shown(e->name, e->name_len), e->name, (ull)at, k);
    uint64_t id = le(x + k, 2), len = le(x + k + 2, 2);
    if (len > xn - k - 4)
      return fm_err_set(err, FM_EFORMAT,
                        "%s: entry '%.*s' (central directory byte %llu): extra field 0x%04llx claims %llu bytes but %zu remain",
                        z->msg, shown(e->name, e->name_len), e->name, (ull)at, (ull)id, (ull)len,
                        xn - k - 4);
    if (id == 1) {
      const uint8_t *f = x + k + 4;
      size_t used = 0;
      uint64_t *v[] = {usize, csize, lh_off, disk};
      const uint64_t sat[] = {U32_SAT, U32_SAT, U32_SAT, U16_SAT};
      const size_t w[] = {8, 8, 8, 4};
      for (int j = 0; j < 4; j++) {
        if (*v[j] != sat[j]) continue;
        if (len - used < w[j])
          return fm_err_set(err, FM_EFORMAT,
                            "%s: entry '%.*s' (central directory byte %llu): its ZIP64 extra field of %llu bytes lacks the %s value it must hold",
                            z->msg, shown(e->name, e->name_len), e->name, (ull)at, (ull)len,
                            j == 0 ? "uncompressed size" : j == 1 ? "compressed size" : j == 2 ? "local header offset" : "disk number");
        *v[j] = le(f + used, (int)w[j]);
        used += w[j];
      }
    }
    k += 4 + (size_t)len;
  }
  return FM_OK;
}

/* Central directory header i at byte *pos, which moves past it. */
static fm_status read_central(fm_pt_zip *z, const dir_at *d, int64_t i, uint64_t *pos, fm_err *err) {
  const uint64_t at = *pos, end = d->off + d->size;
  fm_pt_entry *e = &z->e[i];
  if (end - at < CENTRAL_BYTES)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: central directory entry %lld at byte %llu: the directory ends at byte %llu, %u bytes needed",
                      z->msg, (long long)i, (ull)at, (ull)end, CENTRAL_BYTES);
  const uint8_t *c = z->p + at;
  if (le(c, 4) != SIG_CENTRAL)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: central directory entry %lld at byte %llu starts %02x %02x %02x %02x, expected 50 4b 01 02",
                      z->msg, (long long)i, (ull)at, c[0], c[1], c[2], c[3]);
  uint64_t flags = le(c + 8, 2), method = le(c + 10, 2);
  uint64_t csize = le(c + 20, 4), usize = le(c + 24, 4);
  uint64_t nlen = le(c + 28, 2), xlen = le(c + 30, 2), clen = le(c + 32, 2);
  uint64_t disk = le(c + 34, 2), lh_off = le(c + 42, 4);
  if (nlen + xlen + clen > end - at - CENTRAL_BYTES)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: central directory entry %lld at byte %llu: its name, extra field and comment (%llu + %llu + %llu bytes) run past the directory's end at byte %llu",
                      z->msg, (long long)i, (ull)at, (ull)nlen, (ull)xlen, (ull)clen, (ull)end);
  e->name = (const char *)(c + CENTRAL_BYTES);
  e->name_len = (size_t)nlen;
  e->cd_off = at;
  size_t bad = fm_pt_utf8_bad_at((const uint8_t *)e->name, e->name_len);
  if (nlen == 0 || bad < nlen || memchr(e->name, 0, e->name_len))
    return fm_err_set(err, FM_EFORMAT,
                      "%s: central directory entry %lld at byte %llu has a name of %llu bytes that is empty, not UTF-8 or holds a NUL",
                      z->msg, (long long)i, (ull)at, (ull)nlen);
  fm_status st = read_zip64_extra(z, i, at, c + CENTRAL_BYTES + nlen, (size_t)xlen, &usize, &csize,
                                  &lh_off, &disk, err);
  if (st) return st;
  int sn = shown(e->name, e->name_len);
  if (flags & 0x41u)
    return fm_err_set(err, FM_EUNSUPPORTED, "%s: entry '%.*s' (central directory byte %llu) is encrypted",
                      z->msg, sn, e->name, (ull)at);
  if (method != 0)
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "%s: entry '%.*s' (central directory byte %llu) is compressed (method %llu%s); only stored (method 0) entries are read, as torch.save writes them",
                      z->msg, sn, e->name, (ull)at, (ull)method, method == 8 ? ", deflate" : "");
  if (csize != usize)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: stored entry '%.*s' (central directory byte %llu) has compressed size %llu but uncompressed size %llu",
                      z->msg, sn, e->name, (ull)at, (ull)csize, (ull)usize);
  if (disk != 0)
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "%s: entry '%.*s' (central directory byte %llu) starts on disk %llu: multi-disk archives are not read",
                      z->msg, sn, e->name, (ull)at, (ull)disk);
  e->lh_off = lh_off;
  e->n_bytes = usize;
  *pos = at + CENTRAL_BYTES + nlen + xlen + clen;
  return FM_OK;
}

/* The local header of entry i: where its data starts, and that it agrees
 * with the central directory. */
static fm_status read_local(fm_pt_zip *z, const dir_at *d, int64_t i, fm_err *err) {
  fm_pt_entry *e = &z->e[i];
  const int sn = shown(e->name, e->name_len);
  const uint64_t at = e->lh_off;
  if (at > d->off || d->off - at < LOCAL_BYTES)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: entry '%.*s': its local header at byte %llu (from the central directory at byte %llu) does not fit before the central directory at byte %llu",
                      z->msg, sn, e->name, (ull)at, (ull)e->cd_off, (ull)d->off);
  const uint8_t *h = z->p + at;
  if (le(h, 4) != SIG_LOCAL)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: entry '%.*s': the local header at byte %llu starts %02x %02x %02x %02x, expected 50 4b 03 04",
                      z->msg, sn, e->name, (ull)at, h[0], h[1], h[2], h[3]);
  uint64_t flags = le(h + 6, 2), method = le(h + 8, 2), csize = le(h + 18, 4), usize = le(h + 22, 4);
  uint64_t nlen = le(h + 26, 2), xlen = le(h + 28, 2);
  if (method != 0)
    return fm_err_set(err, FM_EUNSUPPORTED,
                      "%s: entry '%.*s': its local header at byte %llu gives compression method %llu; only stored (method 0) entries are read",
                      z->msg, sn, e->name, (ull)at, (ull)method);
  if (nlen + xlen > d->off - at - LOCAL_BYTES)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: entry '%.*s': the name and extra field (%llu + %llu bytes) of its local header at byte %llu run into the central directory at byte %llu",
                      z->msg, sn, e->name, (ull)nlen, (ull)xlen, (ull)at, (ull)d->off);
  if (nlen != e->name_len || memcmp(h + LOCAL_BYTES, e->name, e->name_len) != 0)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: entry '%.*s': its local header at byte %llu names another file (%llu bytes) than the central directory at byte %llu",
                      z->msg, sn, e->name, (ull)at, (ull)nlen, (ull)e->cd_off);
  /* Sizes follow in a data descriptor when flag bit 3 is set (torch sets
   * it); otherwise the local header states them too. */
  if (!(flags & 8u) && csize != U32_SAT && usize != U32_SAT &&
      (csize != e->n_bytes || usize != e->n_bytes))
    return fm_err_set(err, FM_EFORMAT,
                      "%s: entry '%.*s': its local header at byte %llu gives sizes %llu/%llu, the central directory %llu",
                      z->msg, sn, e->name, (ull)at, (ull)csize, (ull)usize, (ull)e->n_bytes);
  e->data_off = at + LOCAL_BYTES + nlen + xlen;
  if (e->n_bytes > d->off - e->data_off)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: entry '%.*s': its %llu bytes of data at byte %llu run past the central directory at byte %llu",
                      z->msg, sn, e->name, (ull)e->n_bytes, (ull)e->data_off, (ull)d->off);
  return FM_OK;
}

static int cmp_lh(const void *a, const void *b) {
  const fm_pt_entry *x = *(const fm_pt_entry *const *)a, *y = *(const fm_pt_entry *const *)b;
  return x->lh_off < y->lh_off ? -1 : x->lh_off > y->lh_off;
}

/* No two entries' local records (header and data) overlap. */
static fm_status check_overlap(fm_pt_zip *z, fm_err *err) {
  const fm_pt_entry **by = malloc((size_t)z->n * sizeof *by);
  if (!by) return fm_err_set(err, FM_ENOMEM, "%s: cannot sort %lld ZIP entries", z->msg, (long long)z->n);
  for (int64_t i = 0; i < z->n; i++) by[i] = &z->e[i];
  qsort(by, (size_t)z->n, sizeof *by, cmp_lh);
  fm_status st = FM_OK;
  for (int64_t i = 1; i < z->n && !st; i++) {
    const fm_pt_entry *a = by[i - 1], *b = by[i];
    if (a->data_off + a->n_bytes > b->lh_off)
      st = fm_err_set(err, FM_EFORMAT,
                      "%s: entries '%.*s' (bytes %llu-%llu) and '%.*s' (from byte %llu) overlap",
                      z->msg, shown(a->name, a->name_len), a->name, (ull)a->lh_off,
                      (ull)(a->data_off + a->n_bytes), shown(b->name, b->name_len), b->name,
                      (ull)b->lh_off);
  }
  free(by);
  return st;
}

fm_status fm_pt_zip_read(fm_pt_zip *z, const uint8_t *p, size_t size, const char *msg, fm_err *err) {
  memset(z, 0, sizeof *z);
  z->p = p, z->size = size, z->msg = msg;
  dir_at d = {0, 0, 0, 0};
  fm_status st = find_end(z, &d, err);
  if (st) return st;
  z->e = calloc((size_t)d.n, sizeof *z->e);
  if (!z->e) return fm_err_set(err, FM_ENOMEM, "%s: cannot allocate %llu ZIP entries", msg, (ull)d.n);
  uint64_t pos = d.off;
  for (uint64_t i = 0; i < d.n; i++) {
    if ((st = read_central(z, &d, (int64_t)i, &pos, err))) return st;
    z->n = (int64_t)i + 1;
    fm_pt_entry *e = &z->e[i];
    if (i == 0) {
      const char *slash = memchr(e->name, '/', e->name_len);
      if (!slash || slash == e->name)
        return fm_err_set(err, FM_EFORMAT,
                          "%s: the first entry '%.*s' (central directory byte %llu) is not inside a top-level folder, as torch.save's entries are",
                          msg, shown(e->name, e->name_len), e->name, (ull)e->cd_off);
      z->top = e->name;
      z->top_len = (size_t)(slash - e->name);
    }
    if (e->name_len <= z->top_len || memcmp(e->name, z->top, z->top_len) != 0 ||
        e->name[z->top_len] != '/')
      return fm_err_set(err, FM_EFORMAT,
                        "%s: entry '%.*s' (central directory byte %llu) is not inside the archive's folder '%.*s/' that the first entry names",
                        msg, shown(e->name, e->name_len), e->name, (ull)e->cd_off,
                        shown(z->top, z->top_len), z->top);
    fm_pt_name none = {"", 0}, nm = {e->name, e->name_len};
    int64_t dup = fm_pt_names_find(&z->names, z, entry_name, none, nm);
    if (dup >= 0)
      return fm_err_set(err, FM_EFORMAT, "%s: entry '%.*s' (central directory byte %llu) repeats entry %lld",
                        msg, shown(e->name, e->name_len), e->name, (ull)e->cd_off, (long long)dup);
    if (fm_pt_names_add(&z->names, z, entry_name, (int64_t)i))
      return fm_err_set(err, FM_ENOMEM, "%s: cannot index %llu ZIP entries", msg, (ull)d.n);
    if ((st = read_local(z, &d, (int64_t)i, err))) return st;
  }
  if (pos != d.off + d.size)
    return fm_err_set(err, FM_EFORMAT,
                      "%s: the central directory's %llu entries end at byte %llu, but the end record gives it %llu bytes from byte %llu",
                      msg, (ull)d.n, (ull)pos, (ull)d.size, (ull)d.off);
  return check_overlap(z, err);
}

const fm_pt_entry *fm_pt_zip_find(const fm_pt_zip *z, const char *rel, size_t rel_len) {
  if (!z->top) return NULL;
  /* "<top>/" is a prefix of every name: hash it with rel as two parts. */
  fm_pt_name top = {z->top, z->top_len + 1}, r = {rel, rel_len};
  int64_t i = fm_pt_names_find(&z->names, z, entry_name, top, r);
  return i >= 0 ? &z->e[i] : NULL;
}

void fm_pt_zip_clear(fm_pt_zip *z) {
  if (!z) return;
  free(z->e);
  fm_pt_names_clear(&z->names);
  memset(z, 0, sizeof *z);
}
