/* pages.h (private): drop a byte range of a file mapping from the resident
 * set, page by page (madvise MADV_DONTNEED). One helper for every streamed
 * pass of the core (stats_par.c, formats/fmt_dest.c, codec/panel.c).
 *
 * Only for MAP_SHARED or read-only mappings of a file: their dropped pages
 * come back from the page cache or the file on the next touch (a written
 * page of a shared file mapping is already in the page cache, so nothing is
 * lost). Never call it on anonymous or private writable memory: dropping a
 * page there zero-fills it. Best effort: a failing madvise, or a system
 * without MADV_DONTNEED, leaves the pages resident and never changes a
 * value. Safe to call concurrently. */
#ifndef FM_BASE_PAGES_H
#define FM_BASE_PAGES_H

#include <stddef.h>
#include <stdint.h>

/* How the byte range [p + from, p + upto) is rounded to whole pages:
 *   FM_PAGES_INWARD   only pages wholly inside the range: start rounded up,
 *                     end rounded down (a partial page at either end stays,
 *                     e.g. because a neighbour still writes to it);
 *   FM_PAGES_OUTWARD  every page holding a byte of the range: start rounded
 *                     down, end rounded up;
 *   FM_PAGES_DOWN     both ends rounded down: the page holding the first
 *                     byte goes, the page holding byte `upto` stays (a
 *                     forward stream's next item may start there). */
typedef enum fm_pages_round {
  FM_PAGES_INWARD = 0,
  FM_PAGES_OUTWARD = 1,
  FM_PAGES_DOWN = 2
} fm_pages_round;

/* The system page size (sysconf, 4096 when it cannot be read). */
size_t fm_page_size(void);

/* The physical memory in bytes (sysconf _SC_PHYS_PAGES times the page
 * size), 0 when it cannot be read. */
uint64_t fm_phys_mem_bytes(void);

/* The page-aligned addresses [*a, *b) that fm_pages_release would drop for
 * the range (no system call); *b <= *a means none. */
void fm_pages_span(const void *p, size_t from, size_t upto, fm_pages_round round,
                   size_t page, const char **a, const char **b);

/* Drop the pages of [p + from, p + upto) rounded as `round` says. Returns 1
 * when madvise dropped at least one page, 0 otherwise (no whole page in the
 * range, madvise failed, or not supported); when it returns 1 and end is not
 * NULL, *end is the offset from p of the end of the dropped pages. */
int fm_pages_release(const void *p, size_t from, size_t upto, fm_pages_round round, size_t *end);

#endif
