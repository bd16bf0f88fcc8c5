/* fuzz_readers_plink.c: libFuzzer target for the PLINK 1 readers
 * (fm_fmt_plink.h): BED/BIM/FAM, PED/MAP and TPED/TFAM.
 *
 * Input encoding:
 *   byte 0      (byte & 0x3f) % 3 picks the reader: 0 = bed, 1 = ped,
 *               2 = tped. Bit 7 set (ped/tped): pass counted_alleles, one "A"
 *               per line of the .map (ped) or .tped (a final line without
 *               '\n' counts); a count or allele mismatch is an error, which
 *               exercises the counted-allele checks. Bit 6 set: the files are
 *               also opened a second time with fm_reader.is_hardcall_only set
 *               (the .bed reader then hands over its bed2 columns) and both
 *               are read in lockstep: same records and ALT counts.
 *   bytes 1..   the files, separated by the 4 bytes "\n@@\n" (the first
 *               occurrences split; the last file takes the rest, so it may hold
 *               any bytes; absent files are empty):
 *                 bed:  .bim, .fam, .bed (binary, last)
 *                 ped:  .map, .ped
 *                 tped: .tfam, .tped
 * Each file is a memfd opened through /proc/self/fd/N (temp files when
 * memfd_create is unavailable); every record (at most 10,000) is read, then
 * the reader is closed.
 *
 * Invariants checked on every record (FUZZ_ASSERT): rec->n_samples equals
 * info.n_samples; hardcalls in {0, 1, 2, FM_GT_MISSING}; no dosage; not
 * phased; hap slots, if any, in {0, 1, FM_GT_MISSING}.
 *
 * Seeds (core/fuzz/corpus/fuzz_readers_plink/): 3 samples x 3 variants in
 * each format, with missing genotypes, a monomorphic variant and padding;
 * hc_only_* are four of these with bit 6 set. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fuzz_readers.h"
#include "fm/fm_fmt_plink.h"


#define MAX_PARTS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned kind = (data[0] & 0x3fu) % 3u;
  int counted = (data[0] & 0x80) != 0;
  int n_parts = kind == 0 ? 3 : 2;
  const uint8_t *part[MAX_PARTS];
  size_t len[MAX_PARTS];
  fuzz_split_parts(data + 1, size - 1, n_parts, part, len);
  mem_file f[MAX_PARTS];
  int opened = 0;
  for (; opened < n_parts; opened++)
    if (mem_file_open(&f[opened], part[opened], len[opened]) != 0) goto done;

  fm_reader *r = NULL, *hc = NULL;
  fm_err err;
  fm_status st;
  const char **alleles = NULL;
  int64_t n_counted = 0;
  if (kind != 0 && counted) {
    /* ped: one per .map line (part 0); tped: one per .tped line (part 1) */
    n_counted = fuzz_count_lines(part[kind == 1 ? 0 : 1], len[kind == 1 ? 0 : 1]);
    if (n_counted > 100000) goto done;
    alleles = malloc((size_t)(n_counted > 0 ? n_counted : 1) * sizeof *alleles);
    if (!alleles) goto done;
    for (int64_t i = 0; i < n_counted; i++) alleles[i] = "A";
  }
  const int twice = (data[0] & 0x40) != 0;
  for (int k = 0; k <= twice; k++) {
    fm_reader **out = k ? &hc : &r;
    if (kind == 0)
      st = fm_fmt_bed_open(f[2].path, f[0].path, f[1].path, out, &err);
    else if (kind == 1)
      st = fm_fmt_ped_open(f[1].path, f[0].path, alleles, n_counted, out, &err);
    else
      st = fm_fmt_tped_open(f[1].path, f[0].path, alleles, n_counted, out, &err);
    if (st != FM_OK) break;
  }
  free(alleles);
  if (r && hc) {
    drain_hardcall_only(r, hc, 0, 1);
  } else if (st == FM_OK) {
    FUZZ_ASSERT(r->info.n_variants >= -1);
    drain(r, 0, 1);
  } else {
    FUZZ_ASSERT(r == NULL); /* the same files open the same way twice */
    verbose_report(st, &err, -1);
  }
done:
  for (int i = 0; i < opened; i++) mem_file_close(&f[i]);
  return 0;
}
