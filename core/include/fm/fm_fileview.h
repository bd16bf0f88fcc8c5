/* fm_fileview.h: a read-only, borrowed mapping of an existing foreign file
 * (a .bed, later a .gguf), so its bytes are consumed in place, never copied.
 *
 * The view records the file size at open; fm_fileview_check compares it with
 * the file's current size so a streamed pass reports truncation from outside
 * as an error instead of dying of SIGBUS; a truncation during a pass is
 * caught by the pass's SIGBUS guard (the mapping is registered with
 * fm_fault.h: FM_EIO naming the file). Replacing the file by rename leaves
 * the view on the old inode, whose bytes stay valid.
 * Ownership: the view owns its fd and mapping; free with fm_fileview_close.
 * Thread safety: reads through base may run concurrently. */
#ifndef FM_FILEVIEW_H
#define FM_FILEVIEW_H

#include "fm_base.h"

typedef struct fm_fileview {
  char *path;          /* owned copy of the path */
  int fd;
  const uint8_t *base; /* borrowed from the view: n_bytes readable bytes */
  uint64_t n_bytes;    /* file size at open */
} fm_fileview;

/* Map path read-only (MAP_SHARED, PROT_READ). An empty file gives base NULL
 * and n_bytes 0. Errors: FM_EIO naming the file and the OS reason. */
FM_NODISCARD fm_status fm_fileview_open(const char *path, fm_fileview **out, fm_err *err);

void fm_fileview_close(fm_fileview *v); /* safe on NULL */

/* FM_EFORMAT naming the file, the size at open and now, when it shrank. */
FM_NODISCARD fm_status fm_fileview_check(const fm_fileview *v, fm_err *err);

/* What identifies a file's bytes, for processes (daemons, other hosts)
 * that each map it by path to compute on the same data: its size and
 * modification time (of the view's inode: fstat of its descriptor), and a
 * checksum (fm_checksum) of its first FM_IDENTITY_HEAD bytes and of
 * FM_IDENTITY_PAGES pages of FM_IDENTITY_PAGE bytes at evenly spaced
 * offsets (page j at floor(j (size - page) / (pages - 1))), read with
 * pread, so a file truncated meanwhile is an error, never a SIGBUS. Equal
 * files give equal identities; a file that differs in size, mtime or a
 * sampled byte gives another (a change elsewhere is not seen: a guard
 * against computing on the wrong file, not a proof of equality).
 * Errors: FM_EARG (NULL), FM_EIO naming the file (stat or read failed, or
 * the file is shorter than the view's size). */
#define FM_IDENTITY_HEAD 65536
#define FM_IDENTITY_PAGES 16
#define FM_IDENTITY_PAGE 4096
typedef struct fm_file_identity {
  uint64_t size;
  int64_t mtime_ns;
  uint64_t checksum;
} fm_file_identity;
FM_NODISCARD fm_status fm_fileview_identity(const fm_fileview *v, fm_file_identity *id, fm_err *err);
/* The same of any open file: its first size bytes (a runtime's file,
 * fm_map_identity; a GGUF's). */
FM_NODISCARD fm_status fm_fd_identity(int fd, const char *path, uint64_t size, fm_file_identity *id,
                                        fm_err *err);

#endif
