/* fuzz_readers_plink.c: libFuzzer target for the PLINK 1 readers
 * (fm_fmt_plink.h): BED/BIM/FAM, PED/MAP and TPED/TFAM.
 *
 * Input encoding:
 *   byte 0      (byte & 0x7f) % 3 picks the reader: 0 = bed, 1 = ped,
 *               2 = tped. Bit 7 set (ped/tped): pass counted_alleles, one "A"
 *               per line of the .map (ped) or .tped (a final line without
 *               '\n' counts); a count or allele mismatch is an error, which
 *               exercises the counted-allele checks.
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
 * each format, with missing genotypes, a monomorphic variant and padding. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "fm/fm_fmt_plink.h"

/* ---- shared by the fuzz_readers_* targets (kept in each file) ---------- */
#define MAX_RECORDS 10000
#define MAX_PARTS 4

/* The input bytes as a file: a memfd (its /proc/self/fd/N path), or a temp
 * file where memfd_create is unavailable. */
typedef struct mem_file {
  int fd;
  char path[64];
  char tmp[64]; /* nonempty when a temp file was used */
} mem_file;

static int mem_file_open(mem_file *f, const uint8_t *data, size_t n) {
  f->tmp[0] = '\0';
  f->fd = (int)syscall(SYS_memfd_create, "fuzz", 0u);
  if (f->fd < 0) {
    snprintf(f->tmp, sizeof f->tmp, "/tmp/fuzz_readers_XXXXXX");
    f->fd = mkstemp(f->tmp);
    if (f->fd < 0) return -1;
    snprintf(f->path, sizeof f->path, "%s", f->tmp);
  } else {
    snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
  }
  size_t off = 0;
  while (off < n) {
    ssize_t w = write(f->fd, data + off, n - off);
    if (w <= 0) { close(f->fd); if (f->tmp[0]) unlink(f->tmp); return -1; }
    off += (size_t)w;
  }
  return 0;
}

static void mem_file_close(mem_file *f) {
  close(f->fd);
  if (f->tmp[0]) unlink(f->tmp);
}

/* Split data at the first n_parts - 1 occurrences of SEP; the last part
 * takes the rest (missing parts are empty). */
static const char SEP[] = "\n@@\n";
#define SEP_LEN (sizeof SEP - 1)

static void split_parts(const uint8_t *data, size_t n, int n_parts, const uint8_t **part,
                        size_t *len) {
  for (int i = 0; i < n_parts; i++) {
    if (i == n_parts - 1) { part[i] = data; len[i] = n; break; }
    const uint8_t *hit = NULL;
    for (size_t j = 0; j + SEP_LEN <= n; j++) {
      if (memcmp(data + j, SEP, SEP_LEN) == 0) { hit = data + j; break; }
    }
    part[i] = data;
    if (!hit) {
      len[i] = n;
      data += n;
      n = 0;
    } else {
      len[i] = (size_t)(hit - data);
      n -= len[i] + SEP_LEN;
      data = hit + SEP_LEN;
    }
  }
}

/* Invariants of every record (fm_fmt.h). */
static void check_record(const fm_reader *r, const fm_gt_record *rec) {
  FUZZ_ASSERT(rec->n_samples == r->info.n_samples);
  FUZZ_ASSERT(rec->n_samples >= 0);
  FUZZ_ASSERT(rec->hardcall != NULL || rec->n_samples == 0);
  for (int64_t i = 0; i < rec->n_samples; i++) {
    int8_t h = rec->hardcall[i];
    FUZZ_ASSERT(h == 0 || h == 1 || h == 2 || h == FM_GT_MISSING);
    if (rec->dosage) {
      double d = rec->dosage[i];
      FUZZ_ASSERT(isnan(d) || (d >= 0.0 && d <= 2.0));
    }
    if (rec->hap) {
      for (int s = 0; s < 2; s++) {
        int8_t a = rec->hap[2 * i + s];
        FUZZ_ASSERT(a == 0 || a == 1 || a == FM_GT_MISSING);
      }
    }
  }
  if (rec->is_phased) FUZZ_ASSERT(rec->hap != NULL);
  /* fm_fmt_plink.h: hardcalls only, unphased */
  FUZZ_ASSERT(rec->dosage == NULL);
  FUZZ_ASSERT(!rec->is_phased);
}

/* FUZZ_READERS_VERBOSE=1 in the environment: print what each input did
 * (open error, or the records read and how the reading ended). */
static void verbose_report(fm_status st, const fm_err *err, int64_t n_records) {
  static int verbose = -1;
  if (verbose < 0) verbose = getenv("FUZZ_READERS_VERBOSE") != NULL;
  if (!verbose) return;
  if (n_records < 0)
    fprintf(stderr, "open: %s: %s\n", fm_status_name(st), err->msg);
  else
    fprintf(stderr, "read %lld records, then %s%s%s\n", (long long)n_records, fm_status_name(st),
            st == FM_FMT_END ? "" : ": ", st == FM_FMT_END ? "" : err->msg);
}

/* Read every record (at most MAX_RECORDS), checking each; close r. When
 * info.n_variants is known, the records read plus n_skipped must equal it. */
static void drain(fm_reader *r, int64_t n_skipped) {
  FUZZ_ASSERT(r != NULL);
  FUZZ_ASSERT(r->info.n_samples >= 0);
  fm_gt_record rec;
  fm_err err;
  fm_status st = FM_OK;
  int64_t n = 0;
  for (; n < MAX_RECORDS; n++) {
    memset(&rec, 0, sizeof rec);
    st = fm_reader_next(r, &rec, &err);
    if (st != FM_OK) break;
    check_record(r, &rec);
  }
  if (r->info.n_variants >= 0 && st == FM_FMT_END) FUZZ_ASSERT(n + n_skipped == r->info.n_variants);
  verbose_report(st, &err, n);
  fm_reader_close(r);
}

static int64_t count_lines(const uint8_t *p, size_t n) {
  int64_t c = 0;
  for (size_t i = 0; i < n; i++) c += p[i] == '\n';
  if (n > 0 && p[n - 1] != '\n') c++;
  return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned kind = (data[0] & 0x7fu) % 3u;
  int counted = (data[0] & 0x80) != 0;
  int n_parts = kind == 0 ? 3 : 2;
  const uint8_t *part[MAX_PARTS];
  size_t len[MAX_PARTS];
  split_parts(data + 1, size - 1, n_parts, part, len);
  mem_file f[MAX_PARTS];
  int opened = 0;
  for (; opened < n_parts; opened++)
    if (mem_file_open(&f[opened], part[opened], len[opened]) != 0) goto done;

  fm_reader *r = NULL;
  fm_err err;
  fm_status st;
  const char **alleles = NULL;
  int64_t n_counted = 0;
  if (kind != 0 && counted) {
    /* ped: one per .map line (part 0); tped: one per .tped line (part 1) */
    n_counted = count_lines(part[kind == 1 ? 0 : 1], len[kind == 1 ? 0 : 1]);
    if (n_counted > 100000) goto done;
    alleles = malloc((size_t)(n_counted > 0 ? n_counted : 1) * sizeof *alleles);
    if (!alleles) goto done;
    for (int64_t i = 0; i < n_counted; i++) alleles[i] = "A";
  }
  if (kind == 0)
    st = fm_fmt_bed_open(f[2].path, f[0].path, f[1].path, &r, &err);
  else if (kind == 1)
    st = fm_fmt_ped_open(f[1].path, f[0].path, alleles, n_counted, &r, &err);
  else
    st = fm_fmt_tped_open(f[1].path, f[0].path, alleles, n_counted, &r, &err);
  free(alleles);
  if (st == FM_OK) {
    FUZZ_ASSERT(r->info.n_variants >= -1);
    drain(r, 0);
  } else {
    FUZZ_ASSERT(r == NULL);
    verbose_report(st, &err, -1);
  }
done:
  for (int i = 0; i < opened; i++) mem_file_close(&f[i]);
  return 0;
}
