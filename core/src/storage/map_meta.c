/* map_meta.c: the on-disk codecs of an fmalloc file (header, metadata slots)
 * and the commit that writes a slot. Byte layout: docs/formats/fmalloc.md.
 * Integers are stored in the writer's byte order; the header's endian mark
 * lets a reader of the other order refuse the file instead of misreading it. */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include "map_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef unsigned long long ull;

static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, sizeof v); }
static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, sizeof v); }
static uint32_t get_u32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static uint64_t get_u64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* ---- header ------------------------------------------------------------ */

/* Header field offsets (bytes from the start of the file). */
enum {
  H_MAGIC = 0,
  H_VERSION = 8,
  H_ENDIAN = 12,
  H_HEADER_BYTES = 16,
  H_SLOT_BYTES = 24,
  H_SLOT_A = 32,
  H_SLOT_B = 40,
  H_DATA_OFF = 48,
  H_CAP0 = 56,
  H_FILE_ID = 64, /* version 2; reserved (zero, ignored) in version 1 */
  H_CHECKSUM = 120
};

void fmi_map_header_encode(uint8_t *buf, uint64_t slot_bytes, uint64_t cap,
                           const uint8_t *file_id) {
  memset(buf, 0, MAP_HEADER_USED);
  memcpy(buf + H_MAGIC, MAP_MAGIC, 8);
  put_u32(buf + H_VERSION, MAP_VERSION);
  put_u32(buf + H_ENDIAN, MAP_ENDIAN_MARK);
  put_u64(buf + H_HEADER_BYTES, MAP_HEADER_BYTES);
  put_u64(buf + H_SLOT_BYTES, slot_bytes);
  put_u64(buf + H_SLOT_A, MAP_HEADER_BYTES);
  put_u64(buf + H_SLOT_B, MAP_HEADER_BYTES + slot_bytes);
  put_u64(buf + H_DATA_OFF, MAP_HEADER_BYTES + 2 * slot_bytes);
  put_u64(buf + H_CAP0, cap);
  memcpy(buf + H_FILE_ID, file_id, MAP_FILE_ID_BYTES);
  put_u64(buf + H_CHECKSUM, fm_checksum(buf, H_CHECKSUM, FM_CHECKSUM_SEED));
}

static uint32_t bswap32(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

fm_status fmi_map_header_decode(const char *path, const uint8_t *buf, uint64_t n,
                                uint64_t file_bytes, map_hdr *out, fm_err *err) {
  memset(out, 0, sizeof *out);
  if (file_bytes == 0) return fm_err_set(err, FM_EFORMAT, "'%s' is empty, not an fmalloc file", path);
  if (n < 8 || memcmp(buf + H_MAGIC, MAP_MAGIC, 8) != 0) {
    char hex[17] = {0};
    for (uint64_t i = 0; i < 8 && i < n; i++) snprintf(hex + 2 * i, 3, "%02x", buf[i]);
    return fm_err_set(err, FM_EFORMAT, "'%s' is not an fmalloc file (magic 0x%s)", path, hex);
  }
  if (n < MAP_HEADER_USED)
    return fm_err_set(err, FM_EFORMAT, "'%s' is truncated: %llu bytes, its header needs %llu",
                      path, (ull)file_bytes, (ull)MAP_HEADER_BYTES);
  uint32_t version = get_u32(buf + H_VERSION);
  if (version < MAP_VERSION_MIN || version > MAP_VERSION)
    return fm_err_set(err, FM_EFORMAT,
                      "'%s' has fmalloc format version %u but this build reads versions %u to %u",
                      path, version, MAP_VERSION_MIN, MAP_VERSION);
  uint32_t mark = get_u32(buf + H_ENDIAN);
  if (mark == bswap32(MAP_ENDIAN_MARK))
    return fm_err_set(err, FM_EFORMAT, "'%s' was written on a machine of the other byte order",
                      path);
  if (get_u64(buf + H_CHECKSUM) != fm_checksum(buf, H_CHECKSUM, FM_CHECKSUM_SEED) ||
      mark != MAP_ENDIAN_MARK)
    return fm_err_set(err, FM_EFORMAT, "'%s' has a corrupted header (checksum mismatch)", path);

  map_hdr h;
  memset(&h, 0, sizeof h);
  h.version = version;
  if (version >= 2) memcpy(h.file_id, buf + H_FILE_ID, MAP_FILE_ID_BYTES);
  h.header_bytes = get_u64(buf + H_HEADER_BYTES);
  h.slot_bytes = get_u64(buf + H_SLOT_BYTES);
  h.slot_off[0] = get_u64(buf + H_SLOT_A);
  h.slot_off[1] = get_u64(buf + H_SLOT_B);
  h.data_off = get_u64(buf + H_DATA_OFF);
  h.cap0 = get_u64(buf + H_CAP0);
  /* Every size below 2^40 keeps the sums free of overflow. */
  const uint64_t lim = UINT64_C(1) << 40;
  if (h.header_bytes < MAP_HEADER_USED || h.header_bytes % 4096 || h.header_bytes > lim ||
      h.slot_bytes < 4096 || h.slot_bytes % 4096 || h.slot_bytes > lim ||
      h.slot_off[0] != h.header_bytes || h.slot_off[1] != h.slot_off[0] + h.slot_bytes ||
      h.data_off != h.slot_off[1] + h.slot_bytes || h.cap0 < h.data_off ||
      h.cap0 > (uint64_t)INT64_MAX)
    return fm_err_set(err, FM_EFORMAT, "'%s' has an inconsistent header (slot size %llu, data at %llu)",
                      path, (ull)h.slot_bytes, (ull)h.data_off);
  if (file_bytes < h.data_off)
    return fm_err_set(err, FM_EFORMAT,
                      "'%s' is truncated: %llu bytes, its header and metadata need %llu", path,
                      (ull)file_bytes, (ull)h.data_off);
  *out = h;
  return FM_OK;
}

/* ---- slots ------------------------------------------------------------- */

/* Slot header field offsets (bytes from the start of the slot). */
enum {
  S_MAGIC = 0,
  S_SEQ = 8,
  S_PAYLOAD = 16,
  S_N_BLOCKS = 24,
  S_N_ENTRIES = 32,
  S_CAP = 40,
  S_UID_LEASE = 48,
  S_CHECKSUM = 56
};

/* Directory record field offsets. */
enum {
  D_OFF = 0,
  D_N_BYTES = 8,
  D_UID = 16,
  D_DTYPE = 24,
  D_N_DIMS = 28,
  D_DIMS = 32,
  D_NAME_LEN = 64,
  D_NAME = 72
};

static uint64_t slot_checksum(const uint8_t *hdr, const uint8_t *payload, uint64_t n) {
  return fm_checksum(payload, (size_t)n, fm_checksum(hdr, S_CHECKSUM, FM_CHECKSUM_SEED));
}

static void slot_header(uint8_t *buf, uint64_t seq, uint64_t payload, uint64_t n_blocks,
                        uint64_t n_entries, uint64_t cap, uint64_t uid_lease) {
  memset(buf, 0, MAP_SLOT_HDR);
  memcpy(buf + S_MAGIC, MAP_SLOT_MAGIC, 8);
  put_u64(buf + S_SEQ, seq);
  put_u64(buf + S_PAYLOAD, payload);
  put_u64(buf + S_N_BLOCKS, n_blocks);
  put_u64(buf + S_N_ENTRIES, n_entries);
  put_u64(buf + S_CAP, cap);
  put_u64(buf + S_UID_LEASE, uid_lease);
}

void fmi_map_slot_encode_empty(uint8_t *buf, uint64_t seq, uint64_t cap, uint64_t uid_lease) {
  slot_header(buf, seq, 0, 0, 0, cap, uid_lease);
  put_u64(buf + S_CHECKSUM, slot_checksum(buf, NULL, 0));
}

void fmi_map_meta_clear(map_meta *mm) {
  if (!mm) return;
  for (int64_t i = 0; i < mm->n_dir; i++) free(mm->dir[i]);
  free(mm->dir);
  free(mm->blk);
  memset(mm, 0, sizeof *mm);
}

static int64_t find_blk(const map_blk *blk, int64_t n, uint64_t off) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (blk[mid].off < off) lo = mid + 1;
    else hi = mid;
  }
  return (lo < n && blk[lo].off == off) ? lo : -1;
}

static int pread_all(int fd, void *buf, uint64_t n, uint64_t off) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = pread(fd, p, (size_t)n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r < 0 ? -1 : 0;
    p += r;
    n -= (uint64_t)r;
    off += (uint64_t)r;
  }
  return 1;
}

#define BAD(...)                                                                                   \
  do {                                                                                             \
    snprintf(why, why_n, __VA_ARGS__);                                                             \
    st = FM_EFORMAT;                                                                               \
    goto fail;                                                                                     \
  } while (0)

fm_status fmi_map_slot_read(int fd, const char *path, const map_hdr *h, int slot,
                            map_meta *out, char *why, size_t why_n, fm_err *err) {
  fm_status st = FM_OK;
  uint8_t hdr[MAP_SLOT_HDR];
  uint8_t *payload = NULL;
  map_meta mm;
  memset(&mm, 0, sizeof mm);
  memset(out, 0, sizeof *out);
  why[0] = '\0';

  int r = pread_all(fd, hdr, MAP_SLOT_HDR, h->slot_off[slot]);
  if (r < 0) {
    st = fm_err_set(err, FM_EIO, "cannot read '%s': %s", path, strerror(errno));
    goto fail;
  }
  if (r == 0) BAD("cut short");
  if (memcmp(hdr + S_MAGIC, MAP_SLOT_MAGIC, 8) != 0) BAD("never written or bad magic");
  uint64_t seq = get_u64(hdr + S_SEQ);
  uint64_t n_payload = get_u64(hdr + S_PAYLOAD);
  uint64_t n_blocks = get_u64(hdr + S_N_BLOCKS);
  uint64_t n_entries = get_u64(hdr + S_N_ENTRIES);
  mm.seq = seq;
  mm.cap = get_u64(hdr + S_CAP);
  mm.uid_lease = get_u64(hdr + S_UID_LEASE);
  if (n_payload > h->slot_bytes - MAP_SLOT_HDR) BAD("payload of %llu bytes overflows it", (ull)n_payload);
  if (n_payload > 0) {
    payload = malloc((size_t)n_payload);
    if (!payload) {
      st = fm_err_set(err, FM_ENOMEM, "cannot allocate %llu bytes to read '%s'", (ull)n_payload, path);
      goto fail;
    }
    r = pread_all(fd, payload, n_payload, h->slot_off[slot] + MAP_SLOT_HDR);
    if (r < 0) {
      st = fm_err_set(err, FM_EIO, "cannot read '%s': %s", path, strerror(errno));
      goto fail;
    }
    if (r == 0) BAD("cut short");
  }
  if (get_u64(hdr + S_CHECKSUM) != slot_checksum(hdr, payload, n_payload)) BAD("checksum mismatch");
  if (seq == 0) BAD("sequence number 0");
  if (mm.cap < h->data_off || mm.cap > (uint64_t)INT64_MAX) BAD("cap %llu out of range", (ull)mm.cap);
  /* Each block costs at least one block record and one directory record. */
  if (n_blocks != n_entries || n_blocks > n_payload / (MAP_BLOCK_REC + MAP_DIR_REC_FIXED))
    BAD("counts %llu blocks and %llu entries do not fit its payload", (ull)n_blocks, (ull)n_entries);

  uint64_t pos = 0;
  if (n_blocks > 0) {
    mm.blk = calloc((size_t)n_blocks, sizeof *mm.blk);
    mm.dir = calloc((size_t)n_entries, sizeof *mm.dir);
    if (!mm.blk || !mm.dir) {
      st = fm_err_set(err, FM_ENOMEM, "cannot allocate the directory of '%s'", path);
      goto fail;
    }
  }
  uint64_t prev_end = h->data_off;
  for (uint64_t i = 0; i < n_blocks; i++, pos += MAP_BLOCK_REC) {
    const uint8_t *p = payload + pos;
    uint64_t off = get_u64(p), nb = get_u64(p + 8), flags = get_u64(p + 16);
    uint64_t ext = map_round(nb);
    if (flags != MAP_BLOCK_NAMED || nb == 0 || ext == 0 || off % FM_MAP_ALIGN || off < prev_end ||
        off > mm.cap || ext > mm.cap - off)
      BAD("block %llu (offset %llu, %llu bytes) is invalid", (ull)i, (ull)off, (ull)nb);
    mm.blk[i].off = off;
    mm.blk[i].n_bytes = nb;
    mm.blk[i].held = ext;
    mm.n_blk++;
    prev_end = off + ext;
  }
  for (uint64_t i = 0; i < n_entries; i++) {
    if (n_payload - pos < MAP_DIR_REC_FIXED) BAD("directory record %llu is cut short", (ull)i);
    const uint8_t *p = payload + pos;
    uint64_t name_len = get_u32(p + D_NAME_LEN);
    uint64_t rec = map_dir_rec_bytes(name_len);
    if (name_len == 0 || name_len > FM_NAME_MAX || rec > n_payload - pos)
      BAD("directory record %llu has a bad name length %llu", (ull)i, (ull)name_len);
    if (memchr(p + D_NAME, 0, (size_t)name_len)) BAD("directory record %llu has a NUL in its name", (ull)i);
    fm_dir_entry *e = calloc(1, sizeof *e);
    if (!e) {
      st = fm_err_set(err, FM_ENOMEM, "cannot allocate the directory of '%s'", path);
      goto fail;
    }
    mm.dir[mm.n_dir++] = e;
    memcpy(e->name, p + D_NAME, (size_t)name_len);
    e->off = get_u64(p + D_OFF);
    e->n_bytes = get_u64(p + D_N_BYTES);
    e->uid = get_u64(p + D_UID);
    uint32_t dtype = get_u32(p + D_DTYPE);
    uint32_t n_dims = get_u32(p + D_N_DIMS);
    if (dtype > FM_DTYPE_HAP1 || n_dims < 1 || n_dims > FM_DIR_MAX_DIMS)
      BAD("entry '%s' has dtype %u and %u dims", e->name, dtype, n_dims);
    e->dtype = (fm_dtype)dtype;
    e->n_dims = (int32_t)n_dims;
    for (int k = 0; k < FM_DIR_MAX_DIMS; k++) {
      e->dims[k] = (int64_t)get_u64(p + D_DIMS + 8 * k);
      if (e->dims[k] < 0 || ((uint32_t)k >= n_dims && e->dims[k] != 0))
        BAD("entry '%s' has bad dims", e->name);
    }
    if (i > 0 && strcmp(mm.dir[i - 1]->name, e->name) >= 0)
      BAD("directory is not sorted at '%s'", e->name);
    int64_t b = find_blk(mm.blk, mm.n_blk, e->off);
    if (b < 0 || mm.blk[b].ent) BAD("entry '%s' does not name a block of its own", e->name);
    if (e->n_bytes > mm.blk[b].n_bytes) BAD("entry '%s' claims more bytes than its block", e->name);
    if (e->uid == 0 || e->uid >= mm.uid_lease) BAD("entry '%s' has uid %llu outside the lease", e->name, (ull)e->uid);
    mm.blk[b].ent = e;
    mm.meta_bytes += map_named_cost(name_len);
    pos += rec;
  }
  if (pos != n_payload) BAD("payload has %llu stray bytes", (ull)(n_payload - pos));
  free(payload);
  *out = mm;
  return FM_OK;
fail:
  free(payload);
  fmi_map_meta_clear(&mm);
  return st;
}

/* ---- commit ------------------------------------------------------------ */

static size_t page_size(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096;
}

/* msync [off, end) of the mapping, widened to whole pages. */
static int sync_range(fm_map *m, uint64_t off, uint64_t end) {
  if (end <= off) return 0;
  uint64_t pg = page_size();
  uint64_t a = off - off % pg;
  return msync(m->base + a, (size_t)(end - a), MS_SYNC);
}

fm_status fmi_map_commit(fm_map *m, uint64_t uid_lease, fm_err *err) {
  fm_status st;
  /* seq + 1 would wrap to 0, which open rejects: the commit would be lost. */
  if (m->seq == UINT64_MAX)
    return fm_err_set(err, FM_EFORMAT, "'%s' has used up its commit sequence numbers (seq %llu)",
                      m->path, (ull)m->seq);
  if (m->mode == FM_MAP_SCRATCH) {
    /* Nothing survives a scratch map, so only the bookkeeping moves on. */
    goto committed;
  }
  uint64_t size;
  if ((st = fmi_map_stat(m, &size, err)) != FM_OK) return st;
  uint64_t data_end = m->file_bytes < size ? m->file_bytes : size;
  if (sync_range(m, m->data_off, data_end) != 0)
    return fm_err_set(err, FM_EIO, "cannot write the data of '%s' to disk: %s", m->path,
                      strerror(errno));
  if (m->meta_bytes > m->slot_bytes - MAP_SLOT_HDR)
    return fm_err_set(err, FM_EINTERNAL, "metadata of '%s' (%llu bytes) exceeds its slot", m->path,
                      (ull)m->meta_bytes);

  int target = 1 - m->active;
  uint8_t *slot = m->base + m->slot_off[target];
  uint8_t *p = slot + MAP_SLOT_HDR;
  uint64_t n_blocks = 0;
  for (int64_t i = 0; i < m->n_blk; i++) {
    const map_blk *b = &m->blk[i];
    if (b->n_bytes == 0 || !b->ent) continue;
    put_u64(p, b->off);
    put_u64(p + 8, b->n_bytes);
    put_u64(p + 16, MAP_BLOCK_NAMED);
    p += MAP_BLOCK_REC;
    n_blocks++;
  }
  for (int64_t i = 0; i < m->n_dir; i++) {
    const fm_dir_entry *e = m->dir[i];
    uint64_t name_len = strlen(e->name);
    uint64_t rec = map_dir_rec_bytes(name_len);
    memset(p, 0, (size_t)rec);
    put_u64(p + D_OFF, e->off);
    put_u64(p + D_N_BYTES, e->n_bytes);
    put_u64(p + D_UID, e->uid);
    put_u32(p + D_DTYPE, (uint32_t)e->dtype);
    put_u32(p + D_N_DIMS, (uint32_t)e->n_dims);
    for (int k = 0; k < FM_DIR_MAX_DIMS; k++) put_u64(p + D_DIMS + 8 * k, (uint64_t)e->dims[k]);
    put_u32(p + D_NAME_LEN, (uint32_t)name_len);
    memcpy(p + D_NAME, e->name, (size_t)name_len);
    p += rec;
  }
  uint64_t n_payload = (uint64_t)(p - (slot + MAP_SLOT_HDR));
  if (n_payload != m->meta_bytes || n_blocks != (uint64_t)m->n_dir)
    return fm_err_set(err, FM_EINTERNAL, "metadata of '%s' is inconsistent (%llu bytes, expected %llu)",
                      m->path, (ull)n_payload, (ull)m->meta_bytes);
  uint8_t hdr[MAP_SLOT_HDR];
  slot_header(hdr, m->seq + 1, n_payload, n_blocks, (uint64_t)m->n_dir, m->cap, uid_lease);
  put_u64(hdr + S_CHECKSUM, slot_checksum(hdr, slot + MAP_SLOT_HDR, n_payload));
  memcpy(slot, hdr, MAP_SLOT_HDR);
  if (sync_range(m, m->slot_off[target], m->slot_off[target] + MAP_SLOT_HDR + n_payload) != 0)
    return fm_err_set(err, FM_EIO, "cannot write the metadata of '%s' to disk: %s", m->path,
                      strerror(errno));
  m->active = target;

committed:
  m->seq++;
  m->uid_lease = uid_lease;
  /* Ghosts die; what this commit references becomes held. */
  int64_t w = 0;
  for (int64_t i = 0; i < m->n_blk; i++) {
    map_blk b = m->blk[i];
    if (b.n_bytes == 0) continue;
    b.held = (b.ent && m->mode == FM_MAP_PERSISTENT) ? map_round(b.n_bytes) : 0;
    m->blk[w++] = b;
  }
  m->n_blk = w;
  return FM_OK;
}
