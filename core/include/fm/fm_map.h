/* fm_map.h: the mapped-file runtime. One file = one fm_map: a header, two
 * metadata slots (block table + name directory) and a data region carved into
 * 64-byte-aligned blocks by a first-fit allocator. Byte layout:
 * docs/formats/fmalloc.md.
 *
 * Modes
 *   FM_MAP_PERSISTENT  the file and its *named* blocks survive the process.
 *                      Unnamed blocks are temporaries: they are not kept
 *                      across a reopen.
 *   FM_MAP_SCRATCH     the file is unlinked right after it is created, so it
 *                      disappears at close or at any process exit, even kill -9.
 *
 * Growth never remaps: open reserves virtual address space for the whole cap
 * (one MAP_SHARED mapping of cap bytes), and the file grows under it with
 * posix_fallocate. Pointers from fm_map_ptr therefore stay valid until
 * fm_map_close; nothing is invalidated by allocation or resize-in-place.
 * (A resize that moves a block invalidates pointers into that block only.)
 *
 * Crash consistency: fm_map_sync msyncs the data, then writes the block table
 * and directory into the inactive metadata slot with a higher sequence number
 * and a checksum, then msyncs that slot. Open picks the valid slot with the
 * highest sequence. A crash loses unsynced changes, never the directory.
 * Space freed from a synced block is not reused before the next sync, so a
 * crash can never leave a synced object's bytes overwritten by a later block.
 * There is no copy-on-write: bytes written into an already synced block
 * reach the file as the kernel writes them back, synced or not.
 *
 * Identity: a new file gets a random 128-bit file id in its header
 * (fm_map_info.file_id), so a reference to (path, name, uid) can tell a file
 * created again at the same path (whose uids restart) from the original.
 *
 * Space is reserved at allocation (posix_fallocate, after checking
 * RLIMIT_FSIZE), so a full disk is an FM_ENOSPC error at allocation, never a
 * SIGBUS at a later write.
 *
 * Locking: a writer holds flock(LOCK_EX) for the life of the map; a read-only
 * open takes LOCK_SH. A conflicting open fails with FM_EBUSY.
 *
 * Thread safety: one fm_map may be used from one thread at a time for
 * allocation, directory and sync calls. Reads and writes through pointers
 * into distinct blocks may run concurrently, also from forked children;
 * allocation, directory and sync calls belong to the opening process.
 * Ownership: fm_map owns its fd and mapping; fm_map_close releases both. */
#ifndef FM_MAP_H
#define FM_MAP_H

#include "fm_base.h"
#include "fm_fileview.h"

typedef struct fm_map fm_map;

typedef enum fm_map_mode { FM_MAP_PERSISTENT = 0, FM_MAP_SCRATCH = 1 } fm_map_mode;

#define FM_MAP_ALIGN 64          /* alignment of every block, bytes */
#define FM_NAME_MAX 255          /* longest object name, bytes, without NUL */
#define FM_DIR_MAX_DIMS 4

/* Each of the two metadata slots of a new file holds this many bytes (the
 * block table and directory: about 100 bytes per named object plus its name,
 * so roughly 9000 objects with short names). Slots are reserved on disk at
 * creation, so writing metadata can never fail for lack of space. */
#define FM_MAP_SLOT_BYTES (UINT64_C(1) << 20)
/* The fixed part of a file: a 64 KiB header region and two slots. A new
 * file's cap_bytes must be at least this; the data region starts here. */
#define FM_MAP_MIN_CAP (UINT64_C(65536) + 2 * FM_MAP_SLOT_BYTES)

/* Open or create the file at path.
 * cap_bytes: size cap of the whole file in bytes for a new file (the file
 *            grows up to it; at least FM_MAP_MIN_CAP); for an existing file
 *            0 or a smaller value keeps the stored cap, a larger value raises
 *            it (durably at the next sync). Ignored for read-only opens.
 * mode:      FM_MAP_PERSISTENT opens path or creates it (atomically: a new
 *            file appears fully formed, or not at all; an existing empty file
 *            is initialized). FM_MAP_SCRATCH creates path, which must not
 *            exist, and unlinks it at once.
 * read_only: nonzero maps PROT_READ and takes a shared lock; the file must
 *            exist; not with FM_MAP_SCRATCH.
 * Errors: FM_EFORMAT (truncated, foreign or corrupted file: the message names
 *         the file and the problem), FM_EBUSY (another open, also in this
 *         process, holds a conflicting lock), FM_EIO (OS failure, including a
 *         missing file for read-only opens, and no random bytes for a new
 *         file's id), FM_ENOSPC (address space for the
 *         cap cannot be reserved, or no disk space for the header), FM_EARG
 *         (NULL path, cap too small or too large for a new file, scratch
 *         path exists, not a regular file), FM_ENOMEM.
 * Owns: *out is owned; free with fm_map_close. *out is NULL on failure. */
FM_NODISCARD fm_status fm_map_open(const char *path, uint64_t cap_bytes, fm_map_mode mode,
                                   int read_only, fm_map **out, fm_err *err);

/* Unmap, unlock and close (scratch files were already unlinked). Unsynced
 * changes of a persistent file are lost. Safe on NULL. In a forked child it
 * releases only the child's copies: the lock, shared with the parent through
 * the inherited descriptor, stays held until the last copy is closed. */
void fm_map_close(fm_map *m);

/* Commit data and metadata durably (see crash consistency above). After it
 * returns, space freed from blocks committed earlier becomes reusable. On a
 * scratch map it only does that bookkeeping (nothing outlives the process).
 * Errors: FM_EFORMAT if the file was truncated from outside (message names
 *         the file, expected and actual size) or its commit sequence numbers
 *         are used up (nothing is committed); FM_EIO; FM_EARG if read-only
 *         or m is NULL. */
FM_NODISCARD fm_status fm_map_sync(fm_map *m, fm_err *err);

/* Cheap check that the file under the mapping still has the size this map
 * relies on (fstat: at least the end of the highest block); call before a
 * streamed pass. FM_EFORMAT naming the file and both sizes when truncated;
 * FM_EIO if fstat fails; FM_EARG if m is NULL. A file replaced by rename
 * does not matter: the map keeps the old inode. */
FM_NODISCARD fm_status fm_map_check(const fm_map *m, fm_err *err);

#define FM_MAP_FILE_ID_BYTES 16

typedef struct fm_map_info {
  const char *path;     /* borrowed from the map */
  fm_map_mode mode;
  int read_only;
  uint32_t version;     /* format version of the file (docs/formats/fmalloc.md) */
  uint8_t file_id[FM_MAP_FILE_ID_BYTES]; /* random identity written when the file
                           was created (never changes; a file created again at
                           the same path gets another); all zero for a
                           version-1 file, which has none */
  uint64_t cap_bytes;   /* size cap */
  uint64_t file_bytes;  /* current file size */
  uint64_t used_bytes;  /* bytes in live blocks (rounded to FM_MAP_ALIGN) */
  int64_t n_blocks;     /* live blocks, named or not */
  int64_t n_named;      /* directory entries */
  uint64_t sync_seq;    /* sequence number of the last committed metadata */
} fm_map_info;

/* Fill *out (all zero when m is NULL). */
void fm_map_get_info(const fm_map *m, fm_map_info *out);

/* Does path still name the file under this map? *same_out = 1 when path
 * names the same file (device and inode) and that file still has the size
 * the map relies on and the header it was opened with; *same_out = 0 when
 * path names another file or none (missing, unreadable directory: the map
 * itself is fine, e.g. the file was renamed away, deleted or replaced by
 * rename). Use it before reusing an open map for something that refers to
 * the file by path (a serialized reference).
 * Errors: FM_EFORMAT when path names the map's file but it was truncated or
 *         rewritten in place from outside (`cp other path`, `> path`): the
 *         mapping must not be read any more (message names the file);
 *         FM_EIO if fstat or pread fails; FM_EARG for NULL arguments.
 *         *same_out is 0 on every error. */
FM_NODISCARD fm_status fm_map_same_file(const fm_map *m, const char *path, int *same_out,
                                        fm_err *err);

/* Pointer to byte offset off of the file (borrowed; valid until close).
 * NULL if off is outside the data region [data start, file_bytes). */
void *fm_map_ptr(const fm_map *m, uint64_t off);

/* The inverse: 1 and *off_out = the file offset of p when p lies in the
 * data region of m's mapping, else 0 (m NULL included). */
int fm_map_offset_of(const fm_map *m, const void *p, uint64_t *off_out);

/* The identity (fm_fd_identity, fm_fileview.h) of m's file as another
 * process that maps it by path sees it (a mirai daemon, possibly on another
 * host sharing the file): a writable map's pages are first written to the
 * file (msync; the metadata is not committed: that is fm_map_sync), then
 * the file's size, mtime and sampled bytes are read.
 * Errors: FM_EARG (NULL), FM_EFORMAT (truncated from outside), FM_EIO. */
FM_NODISCARD fm_status fm_map_identity(fm_map *m, fm_file_identity *id, fm_err *err);

/* ---- blocks ---------------------------------------------------------- */

/* Allocate n_bytes (> 0), 64-byte aligned, zero-filled, space reserved on disk.
 * The block is a temporary until it is named. First fit; the file grows in
 * steps (1/8 of its size, 1 MiB .. 256 MiB, never past the cap or
 * RLIMIT_FSIZE).
 * Errors: FM_ENOSPC (no free range below the cap, disk full, RLIMIT_FSIZE;
 *         the map stays usable), FM_EARG (NULL, read-only map, n_bytes == 0),
 *         FM_EFORMAT (file truncated from outside), FM_EIO, FM_ENOMEM. */
FM_NODISCARD fm_status fm_map_alloc(fm_map *m, uint64_t n_bytes, uint64_t *off_out, fm_err *err);

/* Free the block at off. A named block also loses its directory entry.
 * Errors: FM_EARG if off is not the start of a live block or the map is
 *         read-only. */
FM_NODISCARD fm_status fm_map_free(fm_map *m, uint64_t off, fm_err *err);

/* Resize the block at off to n_bytes (> 0), in place when the space after it
 * is free, otherwise by moving it (contents copied; new tail zero-filled).
 * *off_out receives the (possibly new) offset; a move invalidates pointers
 * into the old block and updates its directory entry. A named block keeps
 * its entry (uid, dims); the entry's n_bytes is clamped to n_bytes, so a
 * caller that changes the shape names the block again.
 * Errors: FM_EARG (not a live block, n_bytes == 0, read-only), FM_ENOSPC
 *         (as fm_map_alloc; the block is unchanged), FM_EFORMAT, FM_EIO,
 *         FM_ENOMEM. */
FM_NODISCARD fm_status fm_map_resize(fm_map *m, uint64_t off, uint64_t n_bytes, uint64_t *off_out,
                                     fm_err *err);

/* Size in bytes requested for the block at off, or 0 if none starts there. */
uint64_t fm_map_block_bytes(const fm_map *m, uint64_t off);

/* ---- named objects ---------------------------------------------------- */

typedef struct fm_dir_entry {
  char name[FM_NAME_MAX + 1];
  fm_dtype dtype;
  int32_t n_dims;                /* 1..FM_DIR_MAX_DIMS */
  int64_t dims[FM_DIR_MAX_DIMS]; /* extents; unused dims are 0 */
  uint64_t off;                  /* block offset in the file */
  uint64_t n_bytes;              /* payload bytes */
  uint64_t uid;                  /* unique per file, never reused; lets a
                                    reference detect a replaced object */
} fm_dir_entry;

/* Give the block at e->off the name e->name (and its type and dims), or
 * replace the entry already under that name (the old block is freed unless
 * it is the same block). A block has at most one name: naming an already
 * named block renames it. Takes effect durably at the next fm_map_sync
 * (the first name of a session also commits, to reserve uids durably).
 * e->uid is ignored on input; the stored entry gets a fresh uid, also when
 * the same block is named again. Unused dims are stored as 0.
 * Errors: FM_EARG (empty or too long name, dtype unknown, off not a live
 *         block, n_dims out of range, negative or overflowing dims, a plain
 *         dtype whose prod(dims) * size exceeds n_bytes, n_bytes larger than
 *         the block, read-only map); FM_ENOSPC (directory full: the metadata
 *         slot cannot hold it; nothing changes); errors of fm_map_sync from
 *         the uid commit. */
FM_NODISCARD fm_status fm_map_name(fm_map *m, const fm_dir_entry *e, fm_err *err);

/* Look up name. Returns FM_EARG with a message naming the file when absent. */
FM_NODISCARD fm_status fm_map_lookup(const fm_map *m, const char *name, fm_dir_entry *out,
                                     fm_err *err);

/* Number of directory entries and the i-th one (0-based, sorted by name). */
int64_t fm_map_dir_count(const fm_map *m);
FM_NODISCARD fm_status fm_map_dir_at(const fm_map *m, int64_t i, fm_dir_entry *out, fm_err *err);

/* Remove the entry and free its block. FM_EARG when absent. */
FM_NODISCARD fm_status fm_map_unname(fm_map *m, const char *name, fm_err *err);

/* Nonzero when the block at off carries a name. */
int fm_map_is_named(const fm_map *m, uint64_t off);

#endif
