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

#endif
