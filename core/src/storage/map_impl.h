/* map_impl.h: private state of the mapped-file runtime (fm_map.h) shared by
 * map.c (open, close, commit, file layout), map_alloc.c (block table) and
 * map_dir.c (name directory). Byte layout: docs/formats/fmalloc.md.
 *
 * In-memory model
 *   blk[]  every extent of the data region that is in use, sorted by off, with
 *          pairwise disjoint extents [off, off + ext). A live block has
 *          n_bytes > 0. A "ghost" (n_bytes == 0) is the extent of a block that
 *          the last commit references but that has since been freed, moved or
 *          shrunk: it stays reserved until the next commit, so a crash can
 *          never leave a committed object overwritten by a later block.
 *   dir[]  directory entries (owned, one heap object each, so that a block can
 *          point at its entry), sorted by name with strcmp.
 *   Free space is every gap between consecutive extents plus the tail up to
 *   cap; allocation is first fit over the gaps.
 *
 * 2025-06 decision: sorted arrays, not trees. Lookups are binary searches;
 * insertion and first fit are O(n) in the number of blocks, which is cheap
 * for the thousands of objects an R session creates, and appends (the
 * common case) move nothing. Revisit if profiles show 1e5+ live blocks. */
#ifndef FM_MAP_IMPL_H
#define FM_MAP_IMPL_H

/* Functions named fmi_map_* are internal to libfmalloc (shared between the
 * map*.c files); they are not part of the public contract. */

#include "fm/fm_map.h"

#include <stdint.h>

/* ---- file layout (docs/formats/fmalloc.md) ----------------------------- */

#define MAP_MAGIC "FMALLOC"          /* 8 bytes with its NUL */
#define MAP_VERSION 2u                /* written by this build; reads 1 and 2 */
#define MAP_VERSION_MIN 1u            /* oldest version this build reads */
#define MAP_FILE_ID_BYTES FM_MAP_FILE_ID_BYTES /* random file identity (version 2, header offset 64) */
#define MAP_ENDIAN_MARK 0x01020304u  /* written native; read back to detect byte order */
#define MAP_HEADER_BYTES UINT64_C(65536)
#define MAP_HEADER_USED 128u         /* bytes of the header region that carry fields */
#define MAP_SLOT_MAGIC "FMSLOT1"     /* 8 bytes with its NUL */
#define MAP_SLOT_HDR 64u             /* bytes of the slot header before the payload */
#define MAP_BLOCK_REC 24u            /* off, n_bytes, flags */
#define MAP_DIR_REC_FIXED 72u        /* directory record without its name */
#define MAP_BLOCK_NAMED UINT64_C(1)  /* block flag: the block carries a directory entry */
#define MAP_UID_LEASE (UINT64_C(1) << 20) /* uids reserved durably per internal commit */

/* Bytes of one directory record for a name of name_len bytes (padded to 8). */
static inline uint64_t map_dir_rec_bytes(uint64_t name_len) {
  return MAP_DIR_REC_FIXED + ((name_len + 7u) & ~UINT64_C(7));
}

/* Metadata bytes one named object adds to a slot payload. */
static inline uint64_t map_named_cost(uint64_t name_len) {
  return MAP_BLOCK_REC + map_dir_rec_bytes(name_len);
}

/* n rounded up to FM_MAP_ALIGN; 0 when that overflows (callers treat it as
 * "does not fit"). */
static inline uint64_t map_round(uint64_t n) {
  if (n > UINT64_MAX - (FM_MAP_ALIGN - 1)) return 0;
  return (n + (FM_MAP_ALIGN - 1)) & ~(uint64_t)(FM_MAP_ALIGN - 1);
}

/* ---- in-memory state ---------------------------------------------------- */

/* Fields of a validated file header. */
typedef struct map_hdr {
  uint32_t version;
  uint64_t header_bytes, slot_bytes, data_off, cap0;
  uint64_t slot_off[2];
  uint8_t file_id[MAP_FILE_ID_BYTES]; /* all zero in a version-1 file */
} map_hdr;

typedef struct map_blk {
  uint64_t off;       /* byte offset in the file, multiple of FM_MAP_ALIGN */
  uint64_t n_bytes;   /* requested size; 0 marks a ghost */
  uint64_t held;      /* bytes from off the last commit references (multiple
                         of FM_MAP_ALIGN); 0 if the commit does not know it */
  fm_dir_entry *ent;  /* this block's directory entry (owned by dir[]), or NULL */
} map_blk;

struct fm_map {
  char *path;          /* owned copy of the path as given */
  int fd;
  fm_map_mode mode;
  int read_only;
  uint8_t hdr[MAP_HEADER_USED]; /* the header as read at open: fm_map_same_file
                                   compares the file's header with it */
  uint32_t version;    /* format version of the file */
  uint8_t file_id[MAP_FILE_ID_BYTES];

  uint8_t *base;       /* mapping of map_len bytes from file offset 0 */
  size_t map_len;

  uint64_t header_bytes, slot_bytes, data_off;
  uint64_t slot_off[2];

  uint64_t cap;        /* current size cap of the file, bytes */
  uint64_t file_bytes; /* bytes from 0 known to be reserved (fallocated); for a
                          read-only map, the file size at open */
  uint64_t clean_from; /* [clean_from, file_bytes) is known to be all zero */

  uint64_t seq;        /* sequence number of the committed metadata */
  int active;          /* slot (0 = A, 1 = B) holding that metadata */
  uint64_t uid_next;   /* next uid to hand out */
  uint64_t uid_lease;  /* uids below this are durably reserved */

  map_blk *blk;        /* (n_blk) sorted by off */
  int64_t n_blk, blk_capa;
  fm_dir_entry **dir;  /* (n_dir) owned entries sorted by name */
  int64_t n_dir, dir_capa;
  uint64_t meta_bytes; /* slot payload bytes the directory needs now */
};

/* The contents of one metadata slot, decoded and validated (owned arrays). */
typedef struct map_meta {
  uint64_t seq, cap, uid_lease;
  map_blk *blk;        /* (n_blk) sorted by off, every one named */
  int64_t n_blk;
  fm_dir_entry **dir;  /* (n_dir) sorted by name; dir[i]->off matches a block */
  int64_t n_dir;
  uint64_t meta_bytes;
} map_meta;

/* ---- map_meta.c: header and slot codecs, commit ------------------------ */

/* Encode a version-MAP_VERSION header for a new file into buf
 * (MAP_HEADER_USED bytes); file_id: MAP_FILE_ID_BYTES random bytes. */
void fmi_map_header_encode(uint8_t *buf, uint64_t slot_bytes, uint64_t cap,
                           const uint8_t *file_id);

/* Validate the first n bytes of path (n <= MAP_HEADER_USED) against a file of
 * file_bytes bytes. FM_EFORMAT with a message naming path and the problem. */
FM_NODISCARD fm_status fmi_map_header_decode(const char *path, const uint8_t *buf, uint64_t n,
                                             uint64_t file_bytes, map_hdr *out, fm_err *err);

/* Encode the header of a slot with an empty payload into buf (MAP_SLOT_HDR). */
void fmi_map_slot_encode_empty(uint8_t *buf, uint64_t seq, uint64_t cap, uint64_t uid_lease);

/* Read slot (0 = A, 1 = B) with pread and validate it. FM_OK: *out holds it.
 * FM_EFORMAT: the slot is not valid; why (why_n bytes) says why, err is not
 * touched. Other codes (FM_EIO, FM_ENOMEM) are real failures set in err. */
FM_NODISCARD fm_status fmi_map_slot_read(int fd, const char *path, const map_hdr *h, int slot,
                                         map_meta *out, char *why, size_t why_n, fm_err *err);

/* Free the arrays of mm and zero it. */
void fmi_map_meta_clear(map_meta *mm);

/* fm_map_open with an explicit metadata slot size for a new file (multiple of
 * 4096, 4096 .. 1 GiB); fm_map_open uses FM_MAP_SLOT_BYTES. Tests use small slots
 * to reach "directory full" quickly. Existing files keep their slot size. */
FM_NODISCARD fm_status fmi_map_open_with(const char *path, uint64_t cap_bytes, fm_map_mode mode,
                                     int read_only, uint64_t slot_bytes, fm_map **out,
                                     fm_err *err);

/* Bytes from off that block b occupies (live size or committed extent). */
static inline uint64_t map_blk_ext(const map_blk *b) {
  uint64_t live = map_round(b->n_bytes);
  return live > b->held ? live : b->held;
}

/* End of the highest extent, at least data_off: the file size this map needs. */
uint64_t fmi_map_hi_end(const fm_map *m);

/* Index of the first block with off >= off (n_blk if none). */
int64_t fmi_map_blk_lower(const fm_map *m, uint64_t off);

/* Index of the live block starting at off, or -1. */
int64_t fmi_map_blk_live(const fm_map *m, uint64_t off);

/* Insert b at index at (keeps the order); FM_ENOMEM on failure. */
FM_NODISCARD fm_status fmi_map_blk_insert(fm_map *m, int64_t at, map_blk b, fm_err *err);

/* Free block i: drop its directory entry, then turn it into a ghost if the last
 * commit references it, else remove it. Indices after i may shift. */
void fmi_map_blk_release(fm_map *m, int64_t i);

/* Directory: index of name (found) or where it would be inserted. */
int64_t fmi_map_dir_search(const fm_map *m, const char *name, int *found);

/* Remove and free the entry at index i (the block keeps living, unnamed). */
void fmi_map_dir_remove(fm_map *m, int64_t i);

/* Error unless the map may be modified (not NULL, not read-only). */
FM_NODISCARD fm_status fmi_map_writable(const fm_map *m, const char *what, fm_err *err);

/* fstat the file: *size_out gets its size. FM_EFORMAT when it is shorter than
 * fmi_map_hi_end (truncated from outside); FM_EIO when fstat fails. */
FM_NODISCARD fm_status fmi_map_stat(const fm_map *m, uint64_t *size_out, fm_err *err);

/* Make [0, end) reserved on disk (end <= cap): checks RLIMIT_FSIZE, grows
 * the file with posix_fallocate. FM_ENOSPC or FM_EIO. */
FM_NODISCARD fm_status fmi_map_reserve(fm_map *m, uint64_t end, fm_err *err);

/* Zero [off, end) of the mapping where it is not known to be zero already,
 * then mark it as handed out. The range must be reserved. */
void fmi_map_zero(fm_map *m, uint64_t off, uint64_t end);

/* Write the metadata into the inactive slot (the commit behind fm_map_sync);
 * uid_lease is the lease recorded with it. */
FM_NODISCARD fm_status fmi_map_commit(fm_map *m, uint64_t uid_lease, fm_err *err);

#endif
