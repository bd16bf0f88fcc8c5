/* Tests for base/pages.h: page rounding of byte ranges and release of a
 * shared file mapping's pages, whose contents must survive. */
#define _DEFAULT_SOURCE /* mkstemp, MAP_SHARED */
#include "base/pages.h"
#include "fm_test.h"
#include "fm_test_files.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* span of a range relative to a page-aligned base, in bytes */
static void span(size_t from, size_t upto, fm_pages_round r, long *lo, long *hi) {
  const char *base = (const char *)(uintptr_t)(1u << 20); /* aligned, never dereferenced */
  const char *a, *b;
  fm_pages_span(base, from, upto, r, 4096, &a, &b);
  *lo = (long)(a - base);
  *hi = (long)(b - base);
}

static void rounding_edges(void) {
  long lo, hi;
  /* inward: only whole pages inside */
  span(0, 8192, FM_PAGES_INWARD, &lo, &hi);
  CHECK(lo == 0 && hi == 8192);
  span(1, 8192, FM_PAGES_INWARD, &lo, &hi);
  CHECK(lo == 4096 && hi == 8192);
  span(1, 8191, FM_PAGES_INWARD, &lo, &hi);
  CHECK(hi <= lo); /* no whole page */
  span(4095, 4097, FM_PAGES_INWARD, &lo, &hi);
  CHECK(hi <= lo);
  span(4096, 4096, FM_PAGES_INWARD, &lo, &hi);
  CHECK(hi <= lo);
  /* outward: every page touched */
  span(1, 8191, FM_PAGES_OUTWARD, &lo, &hi);
  CHECK(lo == 0 && hi == 8192);
  span(4095, 4097, FM_PAGES_OUTWARD, &lo, &hi);
  CHECK(lo == 0 && hi == 8192);
  span(4096, 8192, FM_PAGES_OUTWARD, &lo, &hi);
  CHECK(lo == 4096 && hi == 8192);
  span(4096, 4097, FM_PAGES_OUTWARD, &lo, &hi);
  CHECK(lo == 4096 && hi == 8192);
  span(100, 100, FM_PAGES_OUTWARD, &lo, &hi);
  CHECK(hi <= lo); /* empty range: nothing */
  /* down: first byte's page goes, the page of byte `upto` stays */
  span(100, 8292, FM_PAGES_DOWN, &lo, &hi);
  CHECK(lo == 0 && hi == 8192);
  span(100, 4000, FM_PAGES_DOWN, &lo, &hi);
  CHECK(hi <= lo);
  span(4096, 8192, FM_PAGES_DOWN, &lo, &hi);
  CHECK(lo == 4096 && hi == 8192);
  /* an unaligned base shifts the rounding with it */
  const char *a, *b, *base = (const char *)(uintptr_t)((1u << 20) + 10);
  fm_pages_span(base, 0, 8192, FM_PAGES_INWARD, 4096, &a, &b);
  CHECK((uintptr_t)a == (1u << 20) + 4096 && (uintptr_t)b == (1u << 20) + 8192);
  fm_pages_span(base, 0, 8192, FM_PAGES_OUTWARD, 4096, &a, &b);
  CHECK((uintptr_t)a == (1u << 20) && (uintptr_t)b == (1u << 20) + 12288);
  CHECK(fm_page_size() >= 4096 && (fm_page_size() & (fm_page_size() - 1)) == 0);
}

/* Written pages of a MAP_SHARED file mapping are dropped and read back
 * unchanged, for every rounding mode; the pages outside the rounding stay
 * resident. */
static void release_keeps_file_data(void) {
  const size_t page = fm_page_size(), n = 8 * page;
  int fd = -1;
  unsigned char *m = fm_test_map_tmp(n, &fd);
  CHECK(m != NULL);
  if (!m) return;
  for (fm_pages_round r = FM_PAGES_INWARD; r <= FM_PAGES_DOWN; r++) {
    for (size_t i = 0; i < n; i++) m[i] = (unsigned char)((i * 31u + (size_t)r) & 0xffu);
    CHECK(fm_test_rss_pages(m, page) == 8);
    size_t end = 0;
    /* bytes [page + 1, 5 * page + 1): inward drops pages 2..4, outward 1..5, down 1..4 */
    CHECK(fm_pages_release(m, page + 1, 5 * page + 1, r, &end) == 1);
    const size_t want_end = r == FM_PAGES_OUTWARD ? 6 * page : 5 * page;
    CHECK(end == want_end);
    const size_t want_left = r == FM_PAGES_INWARD ? 5 : r == FM_PAGES_OUTWARD ? 3 : 4;
    const size_t left = fm_test_rss_pages(m, page);
    if (left != (size_t)-1) CHECK(left == want_left);
    int same = 1;
    for (size_t i = 0; i < n; i++) same &= m[i] == (unsigned char)((i * 31u + (size_t)r) & 0xffu);
    CHECK(same);
  }
  /* nothing to drop: 0, and *end untouched */
  size_t end = 77;
  CHECK(fm_pages_release(m, 1, page - 1, FM_PAGES_INWARD, &end) == 0 && end == 77);
  CHECK(fm_pages_release(m, 10, 10, FM_PAGES_OUTWARD, &end) == 0 && end == 77);
  CHECK(fm_pages_release(NULL, 0, n, FM_PAGES_OUTWARD, &end) == 0);
  /* the file holds what was written, after the release */
  CHECK(munmap(m, n) == 0);
  unsigned char buf[64];
  CHECK(pread(fd, buf, sizeof buf, (off_t)(3 * page)) == (ssize_t)sizeof buf);
  int same = 1;
  for (size_t i = 0; i < sizeof buf; i++)
    same &= buf[i] == (unsigned char)(((3 * page + i) * 31u + (size_t)FM_PAGES_DOWN) & 0xffu);
  CHECK(same);
  close(fd);
}

int main(void) {
  FM_RUN(rounding_edges);
  FM_RUN(release_keeps_file_data);
  FM_TEST_END();
}
