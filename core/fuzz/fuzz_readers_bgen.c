/* fuzz_readers_bgen.c: libFuzzer target for the BGEN reader (fm_fmt_bgen.h).
 *
 * Input encoding: the whole input is the .bgen file (written to a memfd and
 * opened through its /proc/self/fd/N path; a temp file when memfd_create is
 * unavailable). fm_fmt_bgen_open, then every record (at most 10,000) through
 * fm_reader_next, then fm_reader_close. When the first input byte is odd, the
 * first record is skipped with fm_fmt_bgen_skip before reading the rest.
 * When bit 1 of the first byte is set, the file is also opened a second time
 * with fm_reader.is_hardcall_only set (skipping likewise) and both are read
 * in lockstep: same records and hardcalls, the hardcall-only read failing no
 * earlier.
 *
 * Invariants checked on every record (FUZZ_ASSERT): rec->n_samples equals
 * info.n_samples; hardcalls in {0, 1, 2, FM_GT_MISSING}; dosages NaN or in
 * [0, 2]; hap slots in {0, 1, FM_GT_MISSING}; a phased record has hap.
 *
 * Seeds (core/fuzz/corpus/fuzz_readers_bgen/): tiny hand-built files of 3
 * samples: layout 2 unphased 8-bit (no compression, zlib, zstd), layout 2
 * phased, a multi-allelic variant, a haploid/missing sample, layout 1;
 * hc_only_* are four of these with 2 bytes more before the first variant
 * (its offset, bytes 0..3, is 2 more: bit 1 of byte 0 set). */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fuzz_readers.h"
#include "fm/fm_fmt_bgen.h"

/* Skip the first record of r: the count skipped (0 or 1), or -1 after a
 * read error (the reader is then done). */
static int64_t skip_first(fm_reader *r) {
  fm_err err;
  int64_t skipped = -1;
  const fm_status sk = fm_fmt_bgen_skip(r, 1, &skipped, &err);
  FUZZ_ASSERT(skipped == 0 || skipped == 1);
  if (sk == FM_OK) FUZZ_ASSERT(skipped == 1);
  return sk == FM_OK || sk == FM_FMT_END ? skipped : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mem_file f;
  if (mem_file_open(&f, data, size) != 0) return 0;
  fm_reader *r = NULL, *hc = NULL;
  fm_err err;
  fm_status st = fm_fmt_bgen_open(f.path, &r, &err);
  if (st == FM_OK) {
    FUZZ_ASSERT(r->info.n_variants >= 0);
    const unsigned flags = size > 0 ? data[0] : 0u;
    if (flags & 2) {
      FUZZ_ASSERT(fm_fmt_bgen_open(f.path, &hc, &err) == FM_OK);
      hc->is_hardcall_only = 1;
    }
    int64_t skipped = 0;
    if (flags & 1) {
      skipped = skip_first(r);
      if (hc) FUZZ_ASSERT(skip_first(hc) == skipped);
    }
    if (skipped < 0) {
      fm_reader_close(r);
      fm_reader_close(hc);
    } else if (hc) {
      drain_hardcall_only(r, hc, skipped, 0);
    } else {
      drain(r, skipped, 0);
    }
  } else {
    FUZZ_ASSERT(r == NULL);
    verbose_report(st, &err, -1);
  }
  mem_file_close(&f);
  return 0;
}
