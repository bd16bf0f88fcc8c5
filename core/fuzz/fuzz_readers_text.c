/* fuzz_readers_text.c: libFuzzer target for the line-oriented readers
 * (fm_fmt_text.h): Oxford GEN, HAPS, IMPUTE2 HAPS + LEGEND, EIGENSTRAT
 * (text and packed .geno) and PLINK 1 legacy dosage.
 *
 * Input encoding:
 *   byte 0      bits 0-2: (value % 6) picks the reader:
 *                 0 gen       files: .sample, .gen
 *                 1 haps      files: .sample, .haps
 *                 2 haps+leg  files: .sample, .legend, .haps (chrom "22" when
 *                             bit 3 is set, else NULL)
 *                 3 eigen     files: .ind, .snp, .geno (as given: text, or
 *                             packed when it starts with "GENO")
 *                 4 packed    files: .ind, .snp, .geno records; the packed
 *                             header record "GENO <n_ind> <n_snp> 0 0" is
 *                             generated (n_ind, n_snp = the line counts of
 *                             .ind and .snp, NUL-padded to the record length
 *                             max(48, ceil(n_ind / 4))) and put before the
 *                             given bytes
 *                 5 dosage    files: .fam, .map, dosage; bits 4-5 = format
 *                             0..3; bit 6 set: pass the .fam, bit 7 set:
 *                             pass the .map (else NULL)
 *   bytes 1..   the files in the order above, separated by the 4 bytes
 *               "\n@@\n" (first occurrences split; the last file takes the
 *               rest; absent files are empty).
 * Each file is a memfd opened through /proc/self/fd/N (temp files when
 * memfd_create is unavailable); every record (at most 10,000) is read, then
 * the reader is closed.
 *
 * Invariants checked on every record (FUZZ_ASSERT): rec->n_samples equals
 * info.n_samples; hardcalls in {0, 1, 2, FM_GT_MISSING}; dosages NaN or in
 * [0, 2]; hap slots in {0, 1, FM_GT_MISSING}; a phased record has hap.
 *
 * Seeds (core/fuzz/corpus/fuzz_readers_text/): 3 samples x 3 variants in each
 * format (dosage: formats 1, 2, 3 and inferred), with missing calls and a
 * haploid HAPS call. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fuzz_readers.h"
#include "fm/fm_fmt_text.h"


#define MAX_PARTS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned kind = (data[0] & 7u) % 6u;
  static const int n_parts_of[6] = {2, 2, 3, 3, 3, 3};
  int n_parts = n_parts_of[kind];
  const uint8_t *part[MAX_PARTS];
  size_t len[MAX_PARTS];
  fuzz_split_parts(data + 1, size - 1, n_parts, part, len);

  uint8_t *packed = NULL;
  if (kind == 4) {
    int64_t n_ind = fuzz_count_lines(part[0], len[0]);
    int64_t n_snp = fuzz_count_lines(part[1], len[1]);
    size_t rec = (size_t)((n_ind + 3) / 4);
    if (rec < 48) rec = 48;
    packed = calloc(1, rec + len[2]);
    if (!packed) return 0;
    char hdr[64];
    int h = snprintf(hdr, sizeof hdr, "GENO %lld %lld 0 0", (long long)n_ind, (long long)n_snp);
    memcpy(packed, hdr, (size_t)h < rec ? (size_t)h : rec);
    if (len[2]) memcpy(packed + rec, part[2], len[2]);
    part[2] = packed;
    len[2] += rec;
  }

  mem_file f[MAX_PARTS];
  int opened = 0;
  for (; opened < n_parts; opened++)
    if (mem_file_open(&f[opened], part[opened], len[opened]) != 0) goto done;

  fm_reader *r = NULL;
  fm_err err;
  fm_status st;
  switch (kind) {
  case 0: st = fm_fmt_gen_open(f[1].path, f[0].path, &r, &err); break;
  case 1: st = fm_fmt_haps_open(f[1].path, f[0].path, &r, &err); break;
  case 2:
    st = fm_fmt_haps_legend_open(f[2].path, f[1].path, f[0].path, (data[0] & 8) ? "22" : NULL,
                                 &r, &err);
    break;
  case 3:
  case 4: st = fm_fmt_eigenstrat_open(f[2].path, f[1].path, f[0].path, &r, &err); break;
  default:
    st = fm_fmt_dosage_open(f[2].path, (data[0] & 0x40) ? f[0].path : NULL,
                            (data[0] & 0x80) ? f[1].path : NULL, (data[0] >> 4) & 3, &r, &err);
    break;
  }
  if (st == FM_OK) {
    FUZZ_ASSERT(r->info.n_variants >= -1);
    drain(r, 0, 0);
  } else {
    FUZZ_ASSERT(r == NULL);
    verbose_report(st, &err, -1);
  }
done:
  for (int i = 0; i < opened; i++) mem_file_close(&f[i]);
  free(packed);
  return 0;
}
