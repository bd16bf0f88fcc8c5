/* pages.c: fm_pages_release (pages.h). */
#define _DEFAULT_SOURCE /* madvise, sysconf */
#include "pages.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

size_t fm_page_size(void) {
  const long ps = sysconf(_SC_PAGESIZE);
  return ps > 0 ? (size_t)ps : 4096u;
}

uint64_t fm_phys_mem_bytes(void) {
#if defined(_SC_PHYS_PAGES)
  const long np = sysconf(_SC_PHYS_PAGES);
  return np > 0 ? (uint64_t)np * (uint64_t)fm_page_size() : 0;
#else
  return 0;
#endif
}

void fm_pages_span(const void *p, size_t from, size_t upto, fm_pages_round round,
                   size_t page, const char **a, const char **b) {
  const uintptr_t pg = (uintptr_t)page;
  const uintptr_t s = (uintptr_t)p + from, e = (uintptr_t)p + upto;
  const uintptr_t down_s = s / pg * pg, down_e = e / pg * pg;
  uintptr_t lo, hi;
  switch (round) {
  case FM_PAGES_OUTWARD:
    lo = down_s;
    hi = (e + pg - 1) / pg * pg;
    break;
  case FM_PAGES_DOWN:
    lo = down_s;
    hi = down_e;
    break;
  case FM_PAGES_INWARD:
  default:
    lo = (s + pg - 1) / pg * pg;
    hi = down_e;
    break;
  }
  if (upto <= from) hi = lo; /* an empty range drops nothing, whatever the rounding */
  *a = (const char *)lo;
  *b = (const char *)hi;
}

int fm_pages_release(const void *p, size_t from, size_t upto, fm_pages_round round, size_t *end) {
#if defined(MADV_DONTNEED)
  const char *a, *b;
  if (!p) return 0;
  fm_pages_span(p, from, upto, round, fm_page_size(), &a, &b);
  if (b <= a || madvise((void *)a, (size_t)(b - a), MADV_DONTNEED) != 0) return 0;
  if (end) *end = (size_t)(b - (const char *)p);
  return 1;
#else
  (void)p, (void)from, (void)upto, (void)round, (void)end;
  return 0;
#endif
}
