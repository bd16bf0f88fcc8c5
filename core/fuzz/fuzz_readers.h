/* fuzz_readers.h: shared by the fuzz_readers_* targets: the input bytes as a
 * file, the invariants every genotype record must hold, and the loop that
 * reads a file to its end. */
#ifndef FUZZ_READERS_H
#define FUZZ_READERS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fm/fm_fmt.h"
#include "fuzz_util.h"

#define MAX_RECORDS 10000

/* Multi-file inputs: the companions and the main file in one input,
 * separated by FUZZ_SEP. Split data at the first n_parts - 1 separators;
 * the last part takes the rest (missing parts are empty). */
static const char FUZZ_SEP[] = "\n@@\n";
#define FUZZ_SEP_LEN (sizeof FUZZ_SEP - 1)

static inline void fuzz_split_parts(const uint8_t *data, size_t n, int n_parts,
                                    const uint8_t **part, size_t *len) {
  for (int i = 0; i < n_parts; i++) {
    part[i] = data;
    const uint8_t *hit = NULL;
    if (i < n_parts - 1)
      for (size_t j = 0; j + FUZZ_SEP_LEN <= n; j++)
        if (memcmp(data + j, FUZZ_SEP, FUZZ_SEP_LEN) == 0) { hit = data + j; break; }
    if (!hit) {
      len[i] = n;
      data += n;
      n = 0;
    } else {
      len[i] = (size_t)(hit - data);
      n -= len[i] + FUZZ_SEP_LEN;
      data = hit + FUZZ_SEP_LEN;
    }
  }
}

/* Lines in p[0..n), a last line without '\n' included. */
static inline int64_t fuzz_count_lines(const uint8_t *p, size_t n) {
  int64_t c = 0;
  for (size_t i = 0; i < n; i++) c += p[i] == '\n';
  if (n > 0 && p[n - 1] != '\n') c++;
  return c;
}

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

/* ALT count of sample i from the record's bed2 codes (docs/formats/bed.md). */
static int8_t bed2_count(const fm_gt_record *rec, int64_t i) {
  static const int8_t val[4] = {2, FM_GT_MISSING, 1, 0};
  return val[(rec->bed2[i >> 2] >> (2 * (i & 3))) & 3u];
}

/* ALT count of sample i: the hardcall, else the bed2 code. */
static int8_t rec_count(const fm_gt_record *rec, int64_t i) {
  return rec->hardcall ? rec->hardcall[i] : bed2_count(rec, i);
}

/* Invariants of every record (fm_fmt.h); hardcalls_only for readers that
 * yield neither dosages nor phase (fm_fmt_plink.h). */
static void check_record(const fm_reader *r, const fm_gt_record *rec, int hardcalls_only) {
  FUZZ_ASSERT(rec->n_samples == r->info.n_samples);
  FUZZ_ASSERT(rec->n_samples >= 0);
  FUZZ_ASSERT(rec->hardcall != NULL || rec->bed2 != NULL || rec->n_samples == 0);
  for (int64_t i = 0; i < rec->n_samples; i++) {
    int8_t h = rec_count(rec, i);
    FUZZ_ASSERT(h == 0 || h == 1 || h == 2 || h == FM_GT_MISSING);
    if (rec->hardcall && rec->bed2) FUZZ_ASSERT(bed2_count(rec, i) == h);
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
  if (hardcalls_only) {
    FUZZ_ASSERT(rec->dosage == NULL);
    FUZZ_ASSERT(!rec->is_phased);
  }
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
static void drain(fm_reader *r, int64_t n_skipped, int hardcalls_only) {
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
    check_record(r, &rec, hardcalls_only);
  }
  if (r->info.n_variants >= 0 && st == FM_FMT_END) FUZZ_ASSERT(n + n_skipped == r->info.n_variants);
  verbose_report(st, &err, n);
  fm_reader_close(r);
}

static inline int same_str(const char *a, const char *b) {
  return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

/* Read the same file through full (read as usual) and packed (opened the
 * same way, fm_reader.is_hardcall_only set here) in lockstep, checking each
 * record, then close both. The two give the same records and ALT counts
 * (hardcall or bed2). packed may skip the tracks that hold phase and
 * dosage, so it may read on where full fails, never the reverse. n_skipped
 * records were skipped on each before. */
static inline void drain_hardcall_only(fm_reader *full, fm_reader *packed,
                                       int64_t n_skipped, int hardcalls_only) {
  FUZZ_ASSERT(full != NULL && packed != NULL);
  FUZZ_ASSERT(full->info.n_samples == packed->info.n_samples);
  FUZZ_ASSERT(full->info.n_variants == packed->info.n_variants);
  packed->is_hardcall_only = 1;
  fm_gt_record a, b;
  fm_err ea, eb;
  fm_status sa = FM_OK, sb = FM_OK;
  int64_t n = 0;
  for (; n < MAX_RECORDS; n++) {
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    sa = fm_reader_next(full, &a, &ea);
    sb = fm_reader_next(packed, &b, &eb);
    if (sa == FM_OK || sa == FM_FMT_END) FUZZ_ASSERT(sb == sa);
    if (sa != FM_OK || sb != FM_OK) break;
    check_record(full, &a, hardcalls_only);
    check_record(packed, &b, hardcalls_only);
    FUZZ_ASSERT(a.pos == b.pos && same_str(a.chrom, b.chrom) && same_str(a.id, b.id) &&
                same_str(a.ref, b.ref) && same_str(a.alt, b.alt));
    for (int64_t i = 0; i < a.n_samples; i++) FUZZ_ASSERT(rec_count(&a, i) == rec_count(&b, i));
  }
  if (full->info.n_variants >= 0 && sa == FM_FMT_END)
    FUZZ_ASSERT(n + n_skipped == full->info.n_variants);
  verbose_report(sa, &ea, n);
  fm_reader_close(full);
  fm_reader_close(packed);
}

#endif
