/* fuzz_readers_vcf.c: libFuzzer target for the VCF/BCF reader (fm_fmt_vcf.h).
 *
 * Input encoding:
 *   byte 0      mode, low 2 bits: 0 or 3 = read bytes 1.. as the file itself
 *               (VCF text, or anything htslib detects); 1 = parse bytes 1.. as
 *               VCF with htslib and write them as BCF first (records up to
 *               the first one htslib rejects), then read the BCF; 2 = the same,
 *               written as BGZF-compressed VCF.
 *   bytes 1..   the VCF text
 * Files are memfds opened through /proc/self/fd/N (temp files when
 * memfd_create is unavailable). fm_fmt_vcf_open(path, NULL), every record (at
 * most 10,000), fm_reader_close.
 *
 * Invariants checked on every record (FUZZ_ASSERT): rec->n_samples equals
 * info.n_samples; hardcalls in {0, 1, 2, FM_GT_MISSING}; dosages NaN or in
 * [0, 2]; hap slots in {0, 1, FM_GT_MISSING}; a phased record has hap.
 *
 * Seeds (core/fuzz/corpus/fuzz_readers_vcf/): tiny VCFs of 2-3 samples in
 * each mode: phased/unphased GT, half-calls, haploid calls, multi-allelic
 * records, DS with and without GT. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fuzz_readers.h"
#include "fm/fm_fmt_vcf.h"

#include <htslib/hts.h>
#include <htslib/vcf.h>

/* Rewrite the VCF at in_path into out_path in mode "wb" (BCF) or "wz" (VCF.gz).
 * Returns 0 when at least the header was written. */
static int convert(const char *in_path, const char *out_path, const char *mode) {
  htsFile *in = hts_open(in_path, "r");
  if (!in) return -1;
  bcf_hdr_t *hdr = bcf_hdr_read(in);
  if (!hdr) { hts_close(in); return -1; }
  int rc = -1;
  htsFile *out = hts_open(out_path, mode);
  if (out) {
    if (bcf_hdr_write(out, hdr) == 0) {
      rc = 0;
      bcf1_t *b = bcf_init();
      int n = 0;
      while (b && n++ < MAX_RECORDS && bcf_read(in, hdr, b) == 0) {
        if (b->errcode) break;
        if (bcf_write(out, hdr, b) != 0) break;
      }
      bcf_destroy(b);
    }
    if (hts_close(out) != 0) rc = -1;
  }
  bcf_hdr_destroy(hdr);
  hts_close(in);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hts_set_log_level(HTS_LOG_OFF);
  if (size < 1) return 0;
  unsigned mode = data[0] & 3u;
  mem_file text;
  if (mem_file_open(&text, data + 1, size - 1) != 0) return 0;
  mem_file conv;
  int have_conv = 0;
  const char *path = text.path;
  if (mode == 1 || mode == 2) {
    if (mem_file_open(&conv, NULL, 0) != 0) { mem_file_close(&text); return 0; }
    have_conv = 1;
    if (convert(text.path, conv.path, mode == 1 ? "wb" : "wz") != 0) goto done;
    path = conv.path;
  }
  fm_reader *r = NULL;
  fm_err err;
  fm_status st = fm_fmt_vcf_open(path, NULL, &r, &err);
  if (st == FM_OK) {
    FUZZ_ASSERT(r->info.n_variants == -1);
    drain(r, 0, 0);
  } else {
    FUZZ_ASSERT(r == NULL);
    verbose_report(st, &err, -1);
  }
done:
  if (have_conv) mem_file_close(&conv);
  mem_file_close(&text);
  return 0;
}
