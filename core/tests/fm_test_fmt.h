/* fm_test_fmt.h: a differential check shared by the reader tests. A
 * reader's hardcall-only read (fm_fmt_stream into a hardcall destination,
 * fm_reader.is_hardcall_only set) must give the same bed2 columns as its
 * records read in full and packed here bit by bit, for all samples and for
 * a reversed sample subset with a duplicate. */
#ifndef FM_TEST_FMT_H
#define FM_TEST_FMT_H

#include <stdlib.h>
#include <string.h>

#include "fm/fm_fmt.h"
#include "fm_test.h"

typedef fm_status (*fm_test_open_fn)(void *ud, fm_reader **out, fm_err *err);

/* Pack one column of ALT counts (sample order from si, NULL = all). */
static void fm_test_pack_bed2(const int8_t *hc, const int64_t *si, int64_t n, uint8_t *out) {
  static const uint8_t code[3] = {3u, 2u, 0u};
  memset(out, 0, (size_t)((n + 3) / 4));
  for (int64_t i = 0; i < n; i++) {
    const int8_t g = hc[si ? si[i] : i];
    out[i / 4] |= (uint8_t)((g >= 0 && g <= 2 ? code[g] : 1u) << (2 * (i % 4)));
  }
}

/* Returns the number of records compared (checks fail on any difference). */
static int64_t fm_test_check_hardcall_only(fm_test_open_fn open_fn, void *ud) {
  fm_err err;
  memset(&err, 0, sizeof err);
  fm_reader *r = NULL;
  CHECK_OK(open_fn(ud, &r, &err), &err);
  if (!r) return 0;
  const int64_t n = r->info.n_samples, cb = (n + 3) / 4;
  int64_t *rev = malloc((size_t)(n + 1) * sizeof *rev);
  for (int64_t i = 0; i < n; i++) rev[i] = n - 1 - i;
  rev[n] = 0;
  int64_t m = 0, cap = 64;
  uint8_t *want = malloc((size_t)(cap * cb)), *want_sub = malloc((size_t)(cap * (n + 4) / 4));
  fm_gt_record rec;
  memset(&rec, 0, sizeof rec);
  fm_status st;
  while ((st = fm_reader_next(r, &rec, &err)) == FM_OK) {
    if (m == cap) {
      cap *= 2;
      want = realloc(want, (size_t)(cap * cb));
      want_sub = realloc(want_sub, (size_t)(cap * (n + 4) / 4));
    }
    fm_test_pack_bed2(rec.hardcall, NULL, n, want + m * cb);
    fm_test_pack_bed2(rec.hardcall, rev, n + 1, want_sub + m * ((n + 4) / 4));
    m++;
  }
  CHECK(st == FM_FMT_END);
  fm_reader_close(r);
  for (int sub = 0; sub < 2; sub++) {
    const int64_t ns = sub ? n + 1 : n, cbs = (ns + 3) / 4;
    uint8_t *got = malloc((size_t)(m * cbs + 1));
    fm_dest d = {FM_DEST_HARDCALL, got, ns, m, sub ? rev : NULL, 0};
    r = NULL;
    CHECK_OK(open_fn(ud, &r, &err), &err);
    if (r) {
      CHECK_OK(fm_fmt_stream(r, &d, NULL, 0, NULL, NULL, NULL, &err), &err);
      CHECK(r->is_hardcall_only);
      CHECK(memcmp(got, sub ? want_sub : want, (size_t)(m * cbs)) == 0);
      fm_reader_close(r);
    }
    free(got);
  }
  free(want);
  free(want_sub);
  free(rev);
  return m;
}

#endif
