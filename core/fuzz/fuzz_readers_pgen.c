/* fuzz_readers_pgen.c: libFuzzer target for the PLINK 2 PGEN reader
 * (fm_fmt_pgen.h).
 *
 * Input encoding:
 *   byte 0      flags. Bit 0 set: the .psam is generated, "#IID" then one
 *               IID per sample of the .pgen header's N (bytes 7..10 of the
 *               .pgen part), so N stays consistent under mutation; the .psam
 *               part is ignored, and N > 1024 skips the input. Bit 1 set: the
 *               .pvar's record lines (those not starting with '#') are
 *               repeated in order until there are M of them (the header's
 *               variant count, bytes 3..6), after its '#' lines; M > 4096 or
 *               no record line skips the input. Bit 2 set: the fileset is
 *               also opened a second time with fm_reader.is_hardcall_only
 *               set (the packed main-track path) and both are read in
 *               lockstep: same records and ALT counts (hardcall or bed2), the
 *               hardcall-only read failing no earlier. Other bits are
 *               ignored.
 *   bytes 1..   the files .psam, .pvar, .pgen (binary, last), separated by
 *               the 4 bytes "\n@@\n" (the first occurrences split; the last
 *               file takes the rest; absent files are empty).
 * Each file is a memfd opened through /proc/self/fd/N (temp files when
 * memfd_create is unavailable), passed to fm_fmt_pgen_open by path; every
 * record (at most 10,000) is read, then the reader is closed.
 *
 * Invariants checked on every record (FUZZ_ASSERT): rec->n_samples equals
 * info.n_samples; hardcalls in {0, 1, 2, FM_GT_MISSING} (bed2 codes agree
 * with them where a record has both); dosages NaN or in [0, 2]; hap slots in
 * {0, 1, FM_GT_MISSING}; a phased record has hap; the records read to the
 * end equal info.n_variants (split records counted).
 *
 * Seeds (core/fuzz/corpus/fuzz_readers_pgen/): plink2 v2.00a3.5 --make-pgen
 * of tiny VCFs written for them (12 samples unless said): unphased
 * biallelic (main-track types 0, 2, 3, 4, 6, 7, missing calls, 4-bit record
 * types), phased with unphased hets, DS dosages (bit-array dosage track),
 * HDS phased dosages, multi-allelic sites of 3 to 20 alleles (unphased and
 * phased, genotypes 2/6 and 1/.), 300 samples (generated .psam: 2-byte
 * difflist ids and record lengths, types 1 and 2, a dosage list),
 * .bim/.fam-style companions, a repeated .pvar; and a hand-written storage
 * mode 0x02 file with provisional-REF bits; hc_only_* are five of these
 * with flag bit 2. The 65,536-variant block boundary is out of reach of
 * the 4 KiB inputs. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_readers.h"
#include "fm/fm_fmt_pgen.h"

#define N_PARTS 3
#define MAX_GEN_SAMPLES 1024
#define MAX_GEN_VARIANTS 4096

/* A growable byte buffer for the generated companions. */
typedef struct buf {
  uint8_t *p;
  size_t n, cap;
} buf;

static int buf_put(buf *b, const void *s, size_t n) {
  if (n == 0) return 0;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 4096;
    while (cap < b->n + n) cap *= 2;
    uint8_t *t = realloc(b->p, cap);
    if (!t) return -1;
    b->p = t;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  return 0;
}

static int gen_psam(buf *b, uint32_t n) {
  if (buf_put(b, "#IID\n", 5) != 0) return -1;
  for (uint32_t i = 0; i < n; i++) {
    char line[16];
    const int w = snprintf(line, sizeof line, "s%u\n", i);
    if (buf_put(b, line, (size_t)w) != 0) return -1;
  }
  return 0;
}

/* The '#' lines of pvar, then its record lines repeated to m lines. */
static int gen_pvar(buf *b, const uint8_t *pvar, size_t n, uint32_t m) {
  size_t n_rec = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t s = 0; s < n;) {
      const uint8_t *nl = memchr(pvar + s, '\n', n - s);
      const size_t e = nl ? (size_t)(nl - pvar) : n;
      const int is_hdr = pvar[s] == '#';
      if (pass == 0 && is_hdr && (buf_put(b, pvar + s, e - s) != 0 || buf_put(b, "\n", 1) != 0))
        return -1;
      if (pass == 1 && !is_hdr) n_rec++;
      s = e + 1;
    }
  }
  if (n_rec == 0) return m == 0 ? 0 : -1;
  for (uint32_t k = 0; k < m;) {
    for (size_t s = 0; s < n && k < m;) {
      const uint8_t *nl = memchr(pvar + s, '\n', n - s);
      const size_t e = nl ? (size_t)(nl - pvar) : n;
      if (pvar[s] != '#') {
        if (buf_put(b, pvar + s, e - s) != 0 || buf_put(b, "\n", 1) != 0) return -1;
        k++;
      }
      s = e + 1;
    }
  }
  return 0;
}

static uint32_t rd_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const int gen_s = data[0] & 1, gen_v = (data[0] & 2) != 0;
  const uint8_t *part[N_PARTS];
  size_t len[N_PARTS];
  fuzz_split_parts(data + 1, size - 1, N_PARTS, part, len);
  const uint8_t *pgen = part[2];
  buf gs = {0}, gv = {0};
  mem_file f[N_PARTS];
  int opened = 0;
  if (gen_s || gen_v) {
    if (len[2] < 11) return 0;
    const uint32_t m = rd_u32(pgen + 3), n = rd_u32(pgen + 7);
    if (gen_s) {
      if (n > MAX_GEN_SAMPLES || gen_psam(&gs, n) != 0) goto done;
      part[0] = gs.p;
      len[0] = gs.n;
    }
    if (gen_v) {
      if (m > MAX_GEN_VARIANTS || gen_pvar(&gv, part[1], len[1], m) != 0) goto done;
      part[1] = gv.p;
      len[1] = gv.n;
    }
  }
  for (; opened < N_PARTS; opened++)
    if (mem_file_open(&f[opened], part[opened], len[opened]) != 0) goto done;

  fm_reader *r = NULL;
  fm_err err;
  const fm_status st = fm_fmt_pgen_open(f[2].path, f[1].path, f[0].path, &r, &err);
  if (st == FM_OK) {
    FUZZ_ASSERT(r->info.n_variants >= 0);
    fm_reader *hc = NULL;
    if (data[0] & 4) {
      FUZZ_ASSERT(fm_fmt_pgen_open(f[2].path, f[1].path, f[0].path, &hc, &err) == FM_OK);
      drain_hardcall_only(r, hc, 0, 0);
    } else {
      drain(r, 0, 0);
    }
  } else {
    FUZZ_ASSERT(r == NULL);
    verbose_report(st, &err, -1);
  }
done:
  for (int i = 0; i < opened; i++) mem_file_close(&f[i]);
  free(gs.p);
  free(gv.p);
  return 0;
}
