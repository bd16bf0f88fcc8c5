/* Tests of the text genotype readers (fm_fmt_text.h): GEN, HAPS, HAPS+LEGEND
 * and EIGENSTRAT (text and packed) against the chr22 .traw ALT-count matrix of
 * the 1kg_phase3_subset fixture, plus hand-written small and bad inputs. */
#define _GNU_SOURCE
#include "fm/fm_fmt_text.h"
#include "fm_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* ---- fixture: the .traw ground truth ---------------------------------- */

static char g_text_dir[4096];
static int g_have_fixtures;

typedef struct traw {
  int64_t n_samples, n_variants;
  char **sample_cols; /* FID_IID */
  char **ids;
  char **counted;
  int8_t *gt; /* n_variants x n_samples, variant-major */
  double *ds; /* same shape, when loaded as dosages */
} traw;
static traw g_traw;

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  memcpy(p, s, n);
  return p;
}

static int split_tabs(char *s, char **f, int cap) {
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(s, "\t\n\r", &save); t; t = strtok_r(NULL, "\t\n\r", &save))
    if (n < cap) f[n++] = t;
  return n;
}

/* Load a .traw; with want_ds, values are doubles (dosages) in t->ds too. */
static int load_traw(traw *t, const char *path, int64_t vcap, int want_ds) {
  FILE *fp = fopen(path, "r");
  if (!fp) return 0;
  memset(t, 0, sizeof *t);
  char *line = NULL;
  size_t cap = 0;
  int fcap = 4096;
  char **f = malloc((size_t)fcap * sizeof *f);
  if (getline(&line, &cap, fp) < 0) { fclose(fp); free(f); free(line); return 0; }
  int nf = split_tabs(line, f, fcap);
  if (nf < 7 || nf > 4000) { fclose(fp); free(f); free(line); return 0; }
  t->n_samples = nf - 6;
  t->sample_cols = malloc((size_t)t->n_samples * sizeof(char *));
  for (int i = 6; i < nf; i++) t->sample_cols[i - 6] = xstrdup(f[i]);
  t->ids = malloc((size_t)vcap * sizeof(char *));
  t->counted = malloc((size_t)vcap * sizeof(char *));
  t->gt = malloc((size_t)(vcap * t->n_samples));
  if (want_ds) t->ds = malloc((size_t)(vcap * t->n_samples) * sizeof(double));
  while (getline(&line, &cap, fp) > 0) {
    nf = split_tabs(line, f, fcap);
    if (nf != 6 + t->n_samples || t->n_variants >= vcap) break;
    int64_t v = t->n_variants++;
    t->ids[v] = xstrdup(f[1]);
    t->counted[v] = xstrdup(f[4]);
    for (int64_t i = 0; i < t->n_samples; i++) {
      const char *s = f[6 + i];
      t->gt[v * t->n_samples + i] = (s[0] == 'N' || s[1]) ? FM_GT_MISSING : (int8_t)(s[0] - '0');
      if (want_ds) t->ds[v * t->n_samples + i] = s[0] == 'N' ? NAN : strtod(s, NULL);
    }
  }
  free(line);
  free(f);
  fclose(fp);
  return 1;
}

static void free_traw(traw *t) {
  for (int64_t i = 0; i < t->n_samples; i++) free(t->sample_cols[i]);
  for (int64_t v = 0; v < t->n_variants; v++) {
    free(t->ids[v]);
    free(t->counted[v]);
  }
  free(t->sample_cols);
  free(t->ids);
  free(t->counted);
  free(t->gt);
  free(t->ds);
  memset(t, 0, sizeof *t);
}

static const char *fx(const char *name) {
  static char buf[8][4200];
  static int k;
  char *b = buf[k++ & 7];
  snprintf(b, sizeof buf[0], "%s/%s", g_text_dir, name);
  return b;
}

/* Sample IDs equal the IID part of the .traw FID_IID headers. */
static void check_ids_t(const fm_reader *r, const traw *tr) {
  CHECK(r->info.n_samples == tr->n_samples);
  if (r->info.n_samples != tr->n_samples) return;
  for (int64_t i = 0; i < tr->n_samples; i++) {
    const char *col = tr->sample_cols[i], *id = r->sample_ids[i];
    size_t lc = strlen(col), li = strlen(id);
    int ok = lc > li && strcmp(col + lc - li, id) == 0 && col[lc - li - 1] == '_';
    if (!ok) {
      fprintf(stderr, "sample %lld: id %s vs traw %s\n", (long long)i, id, col);
      CHECK(ok);
      return;
    }
  }
}

static void check_ids(const fm_reader *r) { check_ids_t(r, &g_traw); }

enum { WANT_DOSAGE = 1, WANT_HAP = 2, BY_ID = 4 };

/* Every record equals its .traw row (in order, or matched by ID); returns the
 * number of records read. */
static int64_t check_vs_traw_t(fm_reader *r, const traw *tr, int flags) {
  fm_gt_record rec;
  fm_err err = {0};
  int64_t n = tr->n_samples, k = 0, row = 0, bad = 0;
  fm_status st;
  while ((st = fm_reader_next(r, &rec, &err)) == FM_OK) {
    if (flags & BY_ID) {
      while (row < tr->n_variants && strcmp(tr->ids[row], rec.id) != 0) row++;
    }
    if (row >= tr->n_variants || strcmp(tr->ids[row], rec.id) != 0 ||
        strcmp(tr->counted[row], rec.alt) != 0 || rec.n_samples != n) {
      fprintf(stderr, "record %lld (%s, alt %s) does not match a .traw row\n", (long long)k, rec.id,
              rec.alt);
      CHECK(0);
      return k;
    }
    const int8_t *want = tr->gt + row * n;
    for (int64_t i = 0; i < n; i++) {
      if (rec.hardcall[i] != want[i]) bad++;
      if (flags & WANT_DOSAGE) {
        if (!rec.dosage || rec.dosage[i] != (double)want[i]) bad++;
      }
      if (flags & WANT_HAP) {
        if (!rec.hap || !rec.is_phased || rec.hap[2 * i] + rec.hap[2 * i + 1] != want[i]) bad++;
      }
    }
    if (bad) {
      fprintf(stderr, "record %lld (%s): %lld mismatches\n", (long long)k, rec.id, (long long)bad);
      CHECK(bad == 0);
      return k;
    }
    k++;
    row++;
  }
  CHECK(st == FM_FMT_END);
  if (st != FM_FMT_END) fprintf(stderr, "%s\n", err.msg);
  return k;
}

static int64_t check_vs_traw(fm_reader *r, int flags) { return check_vs_traw_t(r, &g_traw, flags); }

static void test_gen_fixture(void) {
  if (!g_have_fixtures) return;
  fm_reader *r = NULL;
  fm_err err = {0};
  CHECK_OK(fm_fmt_gen_open(fx("1kg_bi_chr22.gen"), fx("1kg_bi_chr22.sample"), &r, &err), &err);
  if (!r) return;
  CHECK(strcmp(r->info.format, "gen") == 0);
  CHECK(r->info.has_dosage == 1);
  check_ids(r);
  CHECK(check_vs_traw(r, WANT_DOSAGE) == 1097);
  fm_reader_close(r);
}

static void test_haps_fixture(void) {
  if (!g_have_fixtures) return;
  fm_reader *r = NULL;
  fm_err err = {0};
  CHECK_OK(fm_fmt_haps_open(fx("1kg_bi_chr22.haps"), fx("1kg_bi_chr22.sample"), &r, &err), &err);
  if (!r) return;
  CHECK(r->info.is_phased == 1);
  check_ids(r);
  CHECK(check_vs_traw(r, WANT_HAP) == 1097);
  fm_reader_close(r);
}

static void test_haps_legend_fixture(void) {
  if (!g_have_fixtures) return;
  fm_reader *r = NULL;
  fm_err err = {0};
  CHECK_OK(fm_fmt_haps_legend_open(fx("1kg_bi_chr22_hl.haps"), fx("1kg_bi_chr22_hl.legend"),
                                   fx("1kg_bi_chr22_hl.sample"), "22", &r, &err),
           &err);
  if (!r) return;
  check_ids(r);
  fm_gt_record rec;
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(strcmp(rec.chrom, "22") == 0 && rec.pos == 16145159 && strcmp(rec.ref, "G") == 0);
  fm_reader_close(r);
  r = NULL;
  CHECK_OK(fm_fmt_haps_legend_open(fx("1kg_bi_chr22_hl.haps"), fx("1kg_bi_chr22_hl.legend"),
                                   fx("1kg_bi_chr22_hl.sample"), "22", &r, &err),
           &err);
  if (!r) return;
  CHECK(check_vs_traw(r, WANT_HAP) == 1097);
  fm_reader_close(r);
}

static char g_tmp[4096];

static const char *tmp(const char *name) {
  static char buf[8][4200];
  static int k;
  char *b = buf[k++ & 7];
  snprintf(b, sizeof buf[0], "%s/%s", g_tmp, name);
  return b;
}

static void write_file(const char *path, const char *text) {
  FILE *fp = fopen(path, "wb");
  if (!fp) { CHECK(fp != NULL); return; }
  fputs(text, fp);
  fclose(fp);
}

static uint32_t hashit(const char *s) {
  uint32_t h = 0;
  for (; *s; s++) h = h * 23u + (uint32_t)(unsigned char)*s;
  return h;
}

/* Write a packed ancestrymap .geno of the records of r (n samples). */
static int64_t write_packed(fm_reader *r, const char *path, int64_t n_snp) {
  int64_t n = r->info.n_samples;
  size_t rlen = (size_t)((2 * n + 7) / 8);
  if (rlen < 48) rlen = 48;
  unsigned char *buf = calloc(rlen, 1);
  FILE *fp = fopen(path, "wb");
  uint32_t ih = 0;
  for (int64_t i = 0; i < n; i++) ih = ih * 23u + hashit(r->sample_ids[i]);
  snprintf((char *)buf, rlen, "GENO %7lld %7lld %x %x", (long long)n, (long long)n_snp, ih, 0u);
  fwrite(buf, 1, rlen, fp);
  fm_gt_record rec;
  fm_err err = {0};
  int64_t k = 0;
  while (fm_reader_next(r, &rec, &err) == FM_OK) {
    memset(buf, 0, rlen);
    for (int64_t i = 0; i < n; i++) {
      unsigned v = rec.hardcall[i] == FM_GT_MISSING ? 3u : (unsigned)rec.hardcall[i];
      buf[i >> 2] |= (unsigned char)(v << (2 * (3 - (i & 3))));
    }
    fwrite(buf, 1, rlen, fp);
    k++;
  }
  fclose(fp);
  free(buf);
  return k;
}

static void test_eigenstrat_fixture(void) {
  if (!g_have_fixtures) return;
  fm_reader *r = NULL;
  fm_err err = {0};
  CHECK_OK(fm_fmt_eigenstrat_open(fx("1kg_bi_chr22.geno"), fx("1kg_bi_chr22.snp"),
                                  fx("1kg_bi_chr22.ind"), &r, &err),
           &err);
  if (!r) return;
  CHECK(strcmp(r->info.format, "eigenstrat") == 0);
  check_ids(r);
  CHECK(check_vs_traw(r, BY_ID) == 1010);
  fm_reader_close(r);

  /* packed, written here from the text reader, reads identically */
  r = NULL;
  CHECK_OK(fm_fmt_eigenstrat_open(fx("1kg_bi_chr22.geno"), fx("1kg_bi_chr22.snp"),
                                  fx("1kg_bi_chr22.ind"), &r, &err),
           &err);
  if (!r) return;
  const char *packed = tmp("packed.geno");
  CHECK(write_packed(r, packed, 1010) == 1010);
  fm_reader_close(r);
  fm_reader *a = NULL, *b = NULL;
  CHECK_OK(fm_fmt_eigenstrat_open(fx("1kg_bi_chr22.geno"), fx("1kg_bi_chr22.snp"),
                                  fx("1kg_bi_chr22.ind"), &a, &err), &err);
  CHECK_OK(fm_fmt_eigenstrat_open(packed, fx("1kg_bi_chr22.snp"), fx("1kg_bi_chr22.ind"), &b, &err),
           &err);
  if (a && b) {
    CHECK(strcmp(b->info.format, "eigenstrat-packed") == 0);
    CHECK(b->info.n_variants == 1010);
    fm_gt_record ra, rb;
    int64_t k = 0, bad = 0;
    fm_status sa, sb;
    for (;;) {
      sa = fm_reader_next(a, &ra, &err);
      sb = fm_reader_next(b, &rb, &err);
      if (sa != FM_OK || sb != FM_OK) break;
      if (strcmp(ra.id, rb.id) || ra.pos != rb.pos || strcmp(ra.alt, rb.alt) ||
          strcmp(ra.ref, rb.ref) || memcmp(ra.hardcall, rb.hardcall, (size_t)ra.n_samples))
        bad++;
      k++;
    }
    CHECK(sa == FM_FMT_END && sb == FM_FMT_END);
    CHECK(k == 1010 && bad == 0);
  }
  fm_reader_close(a);
  fm_reader_close(b);
  fm_reader_close(NULL);
  /* and matches the .traw too */
  b = NULL;
  CHECK_OK(fm_fmt_eigenstrat_open(packed, fx("1kg_bi_chr22.snp"), fx("1kg_bi_chr22.ind"), &b, &err),
           &err);
  if (b) CHECK(check_vs_traw(b, BY_ID) == 1010);
  fm_reader_close(b);
  unlink(packed);
}

/* ---- small hand-written inputs ------------------------------------------ */

/* Open succeeds; reading fails with code and a message containing each of needles. */
static void expect_read_error(fm_reader *r, fm_status code, const char *n1, const char *n2) {
  fm_gt_record rec;
  fm_err err = {0};
  fm_status st;
  while ((st = fm_reader_next(r, &rec, &err)) == FM_OK) {}
  CHECK(st == code);
  CHECK(strstr(err.msg, n1) != NULL);
  CHECK(strstr(err.msg, n2) != NULL);
  if (st != code || !strstr(err.msg, n1) || !strstr(err.msg, n2))
    fprintf(stderr, "  got %s: %s\n", fm_status_name(st), err.msg);
}

static const char *SAMPLE3 = "ID_1 ID_2 missing sex\n0 0 0 D\nf1 s1 0 1\nf2 s2 0 2\nf3 s3 0 1\n";

static void test_gen_small(void) {
  const char *gen = tmp("small.gen"), *sample = tmp("small.sample");
  write_file(sample, SAMPLE3);
  write_file(gen, "1 rs1 100 A G 0 0 0 0.05 0.9 0.05 0.2 0.7 0.1\r\n"
                  "1 snp2 rs2 200 C T 1 0 0 0 1 0 0 0 1\n\n");
  fm_reader *r = NULL;
  fm_err err = {0};
  CHECK_OK(fm_fmt_gen_open(gen, sample, &r, &err), &err);
  if (!r) return;
  CHECK(r->info.n_samples == 3 && strcmp(r->sample_ids[1], "s2") == 0);
  fm_gt_record rec;
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(strcmp(rec.chrom, "1") == 0 && strcmp(rec.id, "rs1") == 0 && rec.pos == 100);
  CHECK(strcmp(rec.ref, "A") == 0 && strcmp(rec.alt, "G") == 0);
  CHECK(rec.hardcall[0] == FM_GT_MISSING && isnan(rec.dosage[0]));
  CHECK(rec.hardcall[1] == 1);
  CHECK_CLOSE(rec.dosage[1], 1.0, 1e-12);
  CHECK(rec.hardcall[2] == 1); /* dosage 0.9: within 0.1 of 1 (plink2's rule, no genotype at 0.9) */
  CHECK_CLOSE(rec.dosage[2], 0.9, 1e-12);
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(strcmp(rec.id, "rs2") == 0 && rec.pos == 200 && strcmp(rec.alt, "T") == 0);
  CHECK(rec.hardcall[0] == 0 && rec.hardcall[1] == 1 && rec.hardcall[2] == 2);
  CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
  fm_reader_close(r);

  /* gzip input reads the same */
  const char *gz = tmp("small.gen.gz");
  gzFile z = gzopen(gz, "wb");
  gzputs(z, "1 rs1 100 A G 0 0 1 0 1 0 1 0 0\n");
  gzclose(z);
  r = NULL;
  CHECK_OK(fm_fmt_gen_open(gz, sample, &r, &err), &err);
  if (r) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(rec.hardcall[0] == 2 && rec.hardcall[1] == 1 && rec.hardcall[2] == 0);
    CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
    fm_reader_close(r);
  }
  /* a truncated gzip stream is an error naming the file, not a short read */
  z = gzopen(gz, "wb");
  for (int i = 0; i < 20000; i++) gzprintf(z, "1 r%d %d A G 1 0 0 0 1 0 0 0 1\n", i, i + 1);
  gzclose(z);
  FILE *fp = fopen(gz, "rb");
  long sz = 0;
  if (fp) { fseek(fp, 0, SEEK_END); sz = ftell(fp); fclose(fp); }
  CHECK(sz > 100 && truncate(gz, sz / 2) == 0);
  r = NULL;
  CHECK_OK(fm_fmt_gen_open(gz, sample, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EFORMAT, "small.gen.gz after line", "unexpected end of file"); fm_reader_close(r); }
  unlink(gz);
  unlink(gen);
  unlink(sample);
}

static void test_gen_bad(void) {
  const char *gen = tmp("bad.gen"), *sample = tmp("bad.sample");
  fm_reader *r = NULL;
  fm_err err = {0};
  write_file(sample, SAMPLE3);
  write_file(gen, "1 rs1 100 A G 1 0 0 1 0 0 1 0 0\n1 rs2 200 A G 1 0 0 1 0 0 1 0\n");
  CHECK_OK(fm_fmt_gen_open(gen, sample, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EFORMAT, "bad.gen line 2", "found 13 fields"); fm_reader_close(r); }
  write_file(gen, "1 rs1 100 A G 1 0 0 1 0 0 1 0 x\n");
  r = NULL;
  CHECK_OK(fm_fmt_gen_open(gen, sample, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EFORMAT, "bad.gen line 1", "sample 3"); fm_reader_close(r); }
  write_file(gen, "1 rs1 100 A G 1 0 0 1 0 0 0.6 0.6 0\n");
  r = NULL;
  CHECK_OK(fm_fmt_gen_open(gen, sample, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EFORMAT, "bad.gen line 1", "sum to 1.2"); fm_reader_close(r); }
  write_file(gen, "1 rs1 1e2 A G 1 0 0 1 0 0 1 0 0\n");
  r = NULL;
  CHECK_OK(fm_fmt_gen_open(gen, sample, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EFORMAT, "bad.gen line 1", "position"); fm_reader_close(r); }
  /* a line far longer than 3 samples can need (binary junk): bounded, named */
  {
    size_t big = (size_t)1 << 21;
    char *junk = malloc(big + 1);
    memset(junk, 'x', big);
    junk[big] = '\0';
    write_file(gen, junk);
    free(junk);
    r = NULL;
    CHECK_OK(fm_fmt_gen_open(gen, sample, &r, &err), &err);
    if (r) { expect_read_error(r, FM_EFORMAT, "bad.gen line 1", "longer than"); fm_reader_close(r); }
  }
  /* a .sample without its header lines */
  write_file(sample, "s1\n");
  r = NULL;
  CHECK(fm_fmt_gen_open(gen, sample, &r, &err) == FM_EFORMAT && r == NULL);
  CHECK(strstr(err.msg, "bad.sample line 1") != NULL);
  /* missing file */
  CHECK(fm_fmt_gen_open(tmp("nope.gen"), sample, &r, &err) != FM_OK && r == NULL);
  CHECK(fm_fmt_gen_open(NULL, sample, &r, &err) == FM_EARG);
  unlink(gen);
  unlink(sample);
}

static void test_haps_small_and_bad(void) {
  const char *haps = tmp("small.haps"), *sample = tmp("small.sample");
  const char *leg = tmp("small.legend");
  fm_reader *r = NULL;
  fm_err err = {0};
  fm_gt_record rec;
  write_file(sample, SAMPLE3);
  write_file(haps, "X rsx 5 C T 0 1 1 - 0 -\n");
  CHECK_OK(fm_fmt_haps_open(haps, sample, &r, &err), &err);
  if (r) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    /* s1 is male (SAMPLE3's sex column): his het on X is missing, both slots */
    CHECK(rec.is_phased && rec.hap[0] == FM_GT_MISSING && rec.hap[1] == FM_GT_MISSING &&
          rec.hardcall[0] == FM_GT_MISSING);
    CHECK(rec.hap[2] == 1 && rec.hap[3] == 1 && rec.hardcall[1] == 2);
    CHECK(rec.hap[4] == 0 && rec.hap[5] == 0 && rec.hardcall[2] == 0);
    CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
    fm_reader_close(r);
  }
  write_file(haps, "1 rs1 5 C T 0 1 1 0 0 0\n1 rs2 6 C T 0 1 2 0 0 0\n");
  r = NULL;
  CHECK_OK(fm_fmt_haps_open(haps, sample, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EFORMAT, "small.haps line 2", "found \"2\""); fm_reader_close(r); }
  write_file(haps, "1 rs1 5 C T 0 1 1 0 0\n");
  r = NULL;
  CHECK_OK(fm_fmt_haps_open(haps, sample, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EFORMAT, "small.haps line 1", "found 10"); fm_reader_close(r); }
  /* legend variant: 2 legend lines, 1 haps line */
  write_file(haps, "0 1 1 0 0 0\n");
  write_file(leg, "id position a0 a1\nrs1 5 C T\nrs2 6 G A\n");
  r = NULL;
  CHECK_OK(fm_fmt_haps_legend_open(haps, leg, sample, NULL, &r, &err), &err);
  if (r) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(strcmp(rec.chrom, ".") == 0 && strcmp(rec.id, "rs1") == 0 && rec.pos == 5);
    CHECK(strcmp(rec.ref, "C") == 0 && strcmp(rec.alt, "T") == 0);
    CHECK(rec.hardcall[0] == 1 && rec.hardcall[1] == 1 && rec.hardcall[2] == 0);
    expect_read_error(r, FM_EMISMATCH, "small.haps ends after 1 lines", "small.legend");
    fm_reader_close(r);
  }
  write_file(leg, "id position a0 a1\nrs1 5 C\n");
  r = NULL;
  CHECK_OK(fm_fmt_haps_legend_open(haps, leg, sample, "1", &r, &err), &err);
  if (r) { expect_read_error(r, FM_EFORMAT, "small.legend line 2", "expected 4 fields"); fm_reader_close(r); }
  unlink(haps);
  unlink(leg);
  unlink(sample);
}

static void test_eigenstrat_small_and_bad(void) {
  const char *geno = tmp("e.geno"), *snp = tmp("e.snp"), *ind = tmp("e.ind");
  const char *packed = tmp("p.geno");
  fm_reader *r = NULL;
  fm_err err = {0};
  fm_gt_record rec;
  write_file(ind, "i1 M pop\ni2 F pop\ni3 U pop\ni4 M pop\ni5 F pop\n");
  write_file(snp, "snp1 1 0.0 100 A G\nsnp2 1 0.0 200 C T\nsnp3 2 0.0 300\n");
  write_file(geno, "01292\n22220\n90000\n");
  CHECK_OK(fm_fmt_eigenstrat_open(geno, snp, ind, &r, &err), &err);
  if (!r) return;
  CHECK(r->info.n_samples == 5 && strcmp(r->sample_ids[4], "i5") == 0);
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(strcmp(rec.alt, "A") == 0 && strcmp(rec.ref, "G") == 0 && rec.pos == 100);
  CHECK(rec.hardcall[0] == 0 && rec.hardcall[1] == 1 && rec.hardcall[2] == 2 &&
        rec.hardcall[3] == FM_GT_MISSING && rec.hardcall[4] == 2);
  fm_reader_close(r);
  /* packed copy; then truncate its last record */
  r = NULL;
  CHECK_OK(fm_fmt_eigenstrat_open(geno, snp, ind, &r, &err), &err);
  if (!r) return;
  CHECK(write_packed(r, packed, 3) == 3);
  fm_reader_close(r);
  r = NULL;
  CHECK_OK(fm_fmt_eigenstrat_open(packed, snp, ind, &r, &err), &err);
  if (r) {
    CHECK(r->info.n_variants == 3);
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(rec.hardcall[0] == 0 && rec.hardcall[1] == 1 && rec.hardcall[2] == 2 &&
          rec.hardcall[3] == FM_GT_MISSING && rec.hardcall[4] == 2);
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(strcmp(rec.id, "snp3") == 0 && strcmp(rec.alt, ".") == 0);
    CHECK(rec.hardcall[0] == FM_GT_MISSING && rec.hardcall[1] == 0);
    CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
    fm_reader_close(r);
  }
  /* Regression (QA): a packed header's SNP count is checked at open against
   * the .snp and the file's size; a header of 10 SNPs beside a .snp of 1346
   * read 10 records, one of 10^12 sized the read by it. Counts that disagree
   * with the .snp (fewer, more, 10^12) are FM_EMISMATCH naming the header's
   * offset and the .snp; agreeing with it, a file of other size is
   * FM_EFORMAT naming the cut record or the extra bytes. */
  {
    const char *pn = tmp("pn.geno");
    static const int64_t claims[] = {4, 2, 0, 1000000000000LL};
    for (size_t k = 0; k < sizeof claims / sizeof claims[0]; k++) {
      r = NULL;
      CHECK_OK(fm_fmt_eigenstrat_open(geno, snp, ind, &r, &err), &err);
      if (r) {
        CHECK(write_packed(r, pn, claims[k]) == 3);
        fm_reader_close(r);
      }
      r = (fm_reader *)&err;
      CHECK(fm_fmt_eigenstrat_open(pn, snp, ind, &r, &err) == FM_EMISMATCH && r == NULL);
      char want[256];
      snprintf(want, sizeof want, "pn.geno: the header (byte offset 0) says %lld SNPs but %s has 3 SNP lines",
               (long long)claims[k], snp);
      CHECK(strstr(err.msg, want) != NULL);
      if (!strstr(err.msg, want)) fprintf(stderr, "  got: %s\n  want: %s\n", err.msg, want);
    }
    /* the header and the .snp agree, the file holds one record more, or a few bytes more */
    FILE *fp = fopen(packed, "rb"), *out = fopen(pn, "wb");
    unsigned char buf[48 * 4];
    CHECK(fp && out && fread(buf, 1, sizeof buf, fp) == sizeof buf);
    if (fp) fclose(fp);
    if (out) {
      fwrite(buf, 1, sizeof buf, out);
      fwrite(buf + 48, 1, 48, out);
      fclose(out);
    }
    CHECK(fm_fmt_eigenstrat_open(pn, snp, ind, &r, &err) == FM_EFORMAT && r == NULL);
    CHECK(strstr(err.msg, "pn.geno: 48 bytes after the last record, which ends at byte offset 192 "
                          "(the header at byte offset 0 says 3 SNPs)") != NULL);
    CHECK(truncate(pn, 48 * 4 + 5) == 0);
    CHECK(fm_fmt_eigenstrat_open(pn, snp, ind, &r, &err) == FM_EFORMAT && r == NULL);
    CHECK(strstr(err.msg, "pn.geno: 5 bytes after the last record") != NULL);
    unlink(pn);
  }
  /* a cut file: the cut record is named at open */
  CHECK(truncate(packed, 48 * 4 - 10) == 0);
  r = NULL;
  CHECK(fm_fmt_eigenstrat_open(packed, snp, ind, &r, &err) == FM_EFORMAT && r == NULL);
  CHECK(strstr(err.msg, "p.geno: truncated at record 2 (0-based, byte offset 144): expected 48 bytes, "
                        "found 38 (the header at byte offset 0 says 3 SNPs: 192 bytes in all)") != NULL);
  CHECK(truncate(packed, 48 * 3) == 0);
  CHECK(fm_fmt_eigenstrat_open(packed, snp, ind, &r, &err) == FM_EFORMAT && r == NULL);
  CHECK(strstr(err.msg, "p.geno: truncated at record 2 (0-based, byte offset 144): expected 48 bytes, "
                        "found 0") != NULL);
  CHECK(truncate(packed, 30) == 0);
  r = NULL;
  CHECK(fm_fmt_eigenstrat_open(packed, snp, ind, &r, &err) == FM_EFORMAT && r == NULL);
  CHECK(strstr(err.msg, "p.geno: truncated header") != NULL);
  /* packed header disagreeing with .ind */
  write_file(packed, "GENO       7       3 0 0                         ");
  CHECK(fm_fmt_eigenstrat_open(packed, snp, ind, &r, &err) == FM_EMISMATCH && r == NULL);
  CHECK(strstr(err.msg, "p.geno: the header (byte offset 0) says 7 individuals but the .ind file "
                        "lists 5") != NULL);
  /* text: bad code, short line, fewer .geno lines than .snp */
  write_file(geno, "01292\n22320\n90000\n");
  r = NULL;
  CHECK_OK(fm_fmt_eigenstrat_open(geno, snp, ind, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EFORMAT, "e.geno line 2", "sample 3"); fm_reader_close(r); }
  write_file(geno, "01292\n2222\n90000\n");
  r = NULL;
  CHECK_OK(fm_fmt_eigenstrat_open(geno, snp, ind, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EFORMAT, "e.geno line 2", "found 4"); fm_reader_close(r); }
  write_file(geno, "01292\n22220\n");
  r = NULL;
  CHECK_OK(fm_fmt_eigenstrat_open(geno, snp, ind, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EMISMATCH, "e.geno ends after 2 lines", "e.snp"); fm_reader_close(r); }
  write_file(snp, "snp1 1 0.0 100 A G\nsnp2 1 0.0\n");
  r = NULL;
  CHECK_OK(fm_fmt_eigenstrat_open(geno, snp, ind, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EFORMAT, "e.snp line 2", "expected 6 fields"); fm_reader_close(r); }
  write_file(packed, "TGENO 1 2 3 4");
  CHECK(fm_fmt_eigenstrat_open(packed, snp, ind, &r, &err) == FM_EUNSUPPORTED && r == NULL);
  unlink(geno);
  unlink(snp);
  unlink(ind);
  unlink(packed);
}

/* ---- PLINK 1 legacy dosage ------------------------------------------------ */

static const char *dx(const char *name) {
  static char buf[4][4200];
  static int k;
  char *b = buf[k++ & 3];
  const char *env = getenv("RFMALLOC_FIXTURES");
  snprintf(b, sizeof buf[0], "%s/genotypes/1kg_phase1_chr22_dosage/%s",
           env && *env ? env : "../../../shared/fixtures", name);
  return b;
}

/* Dosages of r equal the .traw dosages (within tol), in order. */
static int64_t check_dosage_vs_traw(fm_reader *r, const traw *t, double tol) {
  fm_gt_record rec;
  fm_err err = {0};
  fm_status st;
  int64_t k = 0, bad = 0;
  while ((st = fm_reader_next(r, &rec, &err)) == FM_OK) {
    if (k >= t->n_variants || strcmp(rec.id, t->ids[k]) || strcmp(rec.alt, t->counted[k]) ||
        rec.n_samples != t->n_samples || !rec.dosage) {
      fprintf(stderr, "record %lld (%s) does not match .traw row\n", (long long)k, rec.id);
      CHECK(0);
      return k;
    }
    for (int64_t i = 0; i < t->n_samples; i++) {
      double want = t->ds[k * t->n_samples + i], got = rec.dosage[i];
      if (!(fabs(got - want) <= tol)) bad++;
      /* plink2's hardcalls of this file: the nearest integer when the
       * dosage is within 0.1 of it (0.1, 0.9, 1.1 and 1.9 included), else
       * missing (plink2 --import-dosage ... --make-bed: 1,370 missing) */
      double rd = floor(want + 0.5);
      int8_t hc = fabs(want - rd) <= 0.1 + 1e-9 ? (int8_t)rd : FM_GT_MISSING;
      if (rec.hardcall[i] != hc) bad++;
    }
    if (bad) {
      fprintf(stderr, "record %lld (%s): %lld mismatches\n", (long long)k, rec.id, (long long)bad);
      CHECK(bad == 0);
      return k;
    }
    k++;
  }
  CHECK(st == FM_FMT_END);
  if (st != FM_FMT_END) fprintf(stderr, "%s\n", err.msg);
  return k;
}

static void test_dosage_fixture(void) {
  traw t;
  if (!load_traw(&t, dx("1kg_p1_chr22.traw"), 20000, 1)) {
    printf("SKIP: dosage fixture not found at %s\n", dx(""));
    return;
  }
  CHECK(t.n_variants == 10376 && t.n_samples == 5);
  fm_reader *r = NULL;
  fm_err err = {0};
  CHECK_OK(fm_fmt_dosage_open(dx("1kg_p1_chr22.dosage"), dx("1kg_p1_chr22.fam"),
                              dx("1kg_p1_chr22.dosage.map"), 0, &r, &err),
           &err);
  if (r) {
    CHECK(strcmp(r->sample_ids[4], "HG00101") == 0 && r->info.has_dosage);
    fm_gt_record rec;
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(strcmp(rec.chrom, "22") == 0 && rec.pos == 50300078 && strcmp(rec.ref, "A") == 0);
    fm_reader_close(r);
  }
  r = NULL;
  CHECK_OK(fm_fmt_dosage_open(dx("1kg_p1_chr22.dosage"), NULL, dx("1kg_p1_chr22.dosage.map"), 1,
                              &r, &err),
           &err);
  if (r) {
    CHECK(r->info.n_samples == 5 && strcmp(r->sample_ids[0], "HG00096") == 0);
    CHECK(check_dosage_vs_traw(r, &t, 0.0) == 10376);
    fm_reader_close(r);
  }
  /* GEN with fractional probabilities: dosage P(AB) + 2 P(BB) */
  r = NULL;
  CHECK_OK(fm_fmt_gen_open(dx("1kg_p1_chr22.gen"), dx("1kg_p1_chr22.sample"), &r, &err), &err);
  if (r) {
    CHECK(check_dosage_vs_traw(r, &t, 1e-9) == 10376);
    fm_reader_close(r);
  }
  free_traw(&t);
}

static void test_dosage_small_and_bad(void) {
  const char *dos = tmp("d.dosage"), *fam = tmp("d.fam"), *map = tmp("d.map");
  fm_reader *r = NULL;
  fm_err err = {0};
  fm_gt_record rec;
  write_file(fam, "F1 a 0 0 1 -9\nF2 b 0 0 2 -9\n");
  write_file(map, "1 v1 0 10\n1 v2 20\n");
  /* format 2: P(A1A1) P(A1A2) */
  write_file(dos, "SNP A1 A2 F1 a F2 b\nv1 T C 0.95 0.05 NA NA\nv2 G A 0 0.5 0.02 0.03\n");
  CHECK_OK(fm_fmt_dosage_open(dos, fam, map, 0, &r, &err), &err);
  if (r) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(strcmp(rec.alt, "T") == 0 && strcmp(rec.ref, "C") == 0 && rec.pos == 10);
    CHECK_CLOSE(rec.dosage[0], 1.95, 1e-12);
    CHECK(rec.hardcall[0] == 2);
    CHECK(isnan(rec.dosage[1]) && rec.hardcall[1] == FM_GT_MISSING);
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(rec.pos == 20);
    CHECK_CLOSE(rec.dosage[0], 0.5, 1e-12);
    CHECK(rec.hardcall[0] == FM_GT_MISSING); /* P = 0, 0.5, 0.5 */
    CHECK_CLOSE(rec.dosage[1], 0.07, 1e-12);
    CHECK(rec.hardcall[1] == 0);              /* P(A2A2) = 0.95 */
    CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
    fm_reader_close(r);
  }
  /* format 3, all-zero probabilities = missing; format 1 rounding rule */
  write_file(dos, "SNP A1 A2 F1 a F2 b\nv1 T C 0 0 1 0 0 0\n");
  r = NULL;
  CHECK_OK(fm_fmt_dosage_open(dos, NULL, NULL, 3, &r, &err), &err);
  if (r) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(strcmp(rec.chrom, ".") == 0 && rec.pos == 0);
    CHECK(rec.dosage[0] == 0.0 && rec.hardcall[0] == 0);
    CHECK(isnan(rec.dosage[1]) && rec.hardcall[1] == FM_GT_MISSING);
    fm_reader_close(r);
  }
  write_file(dos, "SNP A1 A2 F1 a F2 b\nv1 T C 1.92 1.85\n");
  r = NULL;
  CHECK_OK(fm_fmt_dosage_open(dos, NULL, NULL, 0, &r, &err), &err);
  if (r) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(rec.hardcall[0] == 2 && rec.hardcall[1] == FM_GT_MISSING);
    fm_reader_close(r);
  }
  /* format 1 at exactly 0.1 from an integer is called on both sides (as
   * plink2 --import-dosage calls it); just beyond is missing */
  write_file(dos, "SNP A1 A2 F1 a F2 b\nv1 T C 0.1 0.9\nv2 T C 1.1 1.9\nv3 T C 1.1001 0.8999\n");
  r = NULL;
  CHECK_OK(fm_fmt_dosage_open(dos, NULL, NULL, 1, &r, &err), &err);
  if (r) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(rec.hardcall[0] == 0 && rec.hardcall[1] == 1);
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(rec.hardcall[0] == 1 && rec.hardcall[1] == 2);
    CHECK_CLOSE(rec.dosage[0], 1.1, 1e-12);
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(rec.hardcall[0] == FM_GT_MISSING && rec.hardcall[1] == FM_GT_MISSING);
    fm_reader_close(r);
  }
  /* errors */
  write_file(dos, "SNP A1 A2 F1 a F2 b\nv1 T C 1 1\nv2 T C 1 2.5\n");
  r = NULL;
  CHECK_OK(fm_fmt_dosage_open(dos, fam, NULL, 1, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EFORMAT, "d.dosage line 3", "sample 2"); fm_reader_close(r); }
  write_file(dos, "SNP A1 A2 F1 a F2 b\nv1 T C 1 1\nv2 T C 1\n");
  r = NULL;
  CHECK_OK(fm_fmt_dosage_open(dos, fam, NULL, 0, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EFORMAT, "d.dosage line 3", "found 4"); fm_reader_close(r); }
  write_file(dos, "SNP A1 A2 F1 a F2 b\nv1 T C 1 1\nv9 T C 1 1\n");
  r = NULL;
  CHECK_OK(fm_fmt_dosage_open(dos, fam, map, 0, &r, &err), &err);
  if (r) { expect_read_error(r, FM_EMISMATCH, "d.map line 2", "v9"); fm_reader_close(r); }
  write_file(dos, "SNP A1 A2 F1 a F2 c\nv1 T C 1 1\n");
  r = NULL;
  CHECK(fm_fmt_dosage_open(dos, fam, map, 0, &r, &err) == FM_EMISMATCH && r == NULL);
  CHECK(strstr(err.msg, "d.dosage line 1") != NULL);
  write_file(dos, "SNP A1 A2 F1\n");
  CHECK(fm_fmt_dosage_open(dos, NULL, NULL, 0, &r, &err) == FM_EFORMAT && r == NULL);
  CHECK(fm_fmt_dosage_open(dos, NULL, NULL, 4, &r, &err) == FM_EARG);
  unlink(dos);
  unlink(fam);
  unlink(map);
}

/* GEN and legacy dosage formats 2 and 3 at the boundaries of plink2's
 * hardcall rule (fm_fmt.h): the same 13 genotypes as probabilities; want =
 * plink2 v2.00a3.5's own calls of these lines (--gen ... ref-first
 * --make-bed, --import-dosage format=2/3 --make-bed; 2026-11-30). */
#define RULE_N 13
static const char *const rule_probs[RULE_N] = { /* P(REF/REF) P(REF/ALT) P(ALT/ALT) */
    "0.9 0.1 0",       "0 0.9 0.1",        "0 0.1 0.9",   "0.1 0.9 0",  "0.8999 0.1001 0",
    "0 0.8999 0.1001", "0.05 0 0.95",      "0.92 0 0.08", "0.15 0.85 0", "0.2 0.7 0.1",
    "0.04 0.02 0.94",  "0 0.05 0.95",      "0.95 0.05 0"};
/* dosages 0.1 1.1 1.9 0.9 0.1001 1.1001 1.9 0.16 0.85 0.9 1.9 1.95 0.05 */
static const int8_t rule_want[RULE_N] = {0, 1, 2, 1, FM_GT_MISSING, FM_GT_MISSING, 2,
                                         FM_GT_MISSING, FM_GT_MISSING, 1, 2, 2, 0};

static void test_probability_rule(void) {
  const char *gen = tmp("rule.gen"), *sample = tmp("rule.sample"), *dos = tmp("rule.dosage");
  char line[4096], smp[4096], head[4096], d3[4096], d2[4096];
  int o = snprintf(line, sizeof line, "1 rs1 100 A C");
  int os = snprintf(smp, sizeof smp, "ID_1 ID_2 missing\n0 0 0\n");
  int oh = snprintf(head, sizeof head, "SNP A1 A2");
  int o3 = snprintf(d3, sizeof d3, "rs1 C A"), o2 = snprintf(d2, sizeof d2, "rs1 C A");
  for (int i = 0; i < RULE_N; i++) {
    double p[3];
    CHECK(sscanf(rule_probs[i], "%lf %lf %lf", &p[0], &p[1], &p[2]) == 3);
    o += snprintf(line + o, sizeof line - (size_t)o, " %s", rule_probs[i]);
    os += snprintf(smp + os, sizeof smp - (size_t)os, "s%d s%d 0\n", i, i);
    oh += snprintf(head + oh, sizeof head - (size_t)oh, " s%d s%d", i, i);
    /* legacy dosage counts A1 = ALT: P(A1A1) P(A1A2) [P(A2A2)] */
    o3 += snprintf(d3 + o3, sizeof d3 - (size_t)o3, " %.17g %.17g %.17g", p[2], p[1], p[0]);
    o2 += snprintf(d2 + o2, sizeof d2 - (size_t)o2, " %.17g %.17g", p[2], p[1]);
  }
  snprintf(line + o, sizeof line - (size_t)o, "\n");
  write_file(gen, line);
  write_file(sample, smp);
  fm_reader *r = NULL;
  fm_err err = {0};
  fm_gt_record rec;
  CHECK_OK(fm_fmt_gen_open(gen, sample, &r, &err), &err);
  if (r) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    for (int i = 0; i < RULE_N; i++) {
      CHECK(rec.hardcall[i] == rule_want[i]);
      if (rec.hardcall[i] != rule_want[i]) fprintf(stderr, "  GEN sample %d: %d\n", i, rec.hardcall[i]);
    }
    fm_reader_close(r);
  }
  for (int fmt = 2; fmt <= 3; fmt++) {
    char text[sizeof head + sizeof d3 + 4];
    snprintf(text, sizeof text, "%s\n%s\n", head, fmt == 3 ? d3 : d2);
    write_file(dos, text);
    r = NULL;
    CHECK_OK(fm_fmt_dosage_open(dos, NULL, NULL, fmt, &r, &err), &err);
    if (!r) continue;
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    for (int i = 0; i < RULE_N; i++) {
      CHECK(rec.hardcall[i] == rule_want[i]);
      if (rec.hardcall[i] != rule_want[i]) fprintf(stderr, "  format %d sample %d: %d\n", fmt, i, rec.hardcall[i]);
    }
    fm_reader_close(r);
  }
  unlink(gen);
  unlink(sample);
  unlink(dos);
}

/* ---- ceu_exon: missing calls (GEN 0 0 0, EIGENSTRAT 9, packed 3) ----------- */

static const char *cx(const char *name) {
  static char buf[4][4200];
  static int k;
  char *b = buf[k++ & 3];
  const char *env = getenv("RFMALLOC_FIXTURES");
  snprintf(b, sizeof buf[0], "%s/genotypes/ceu_exon/%s", env && *env ? env : "../../../shared/fixtures",
           name);
  return b;
}

static void test_ceu_missing(void) {
  traw t;
  if (!load_traw(&t, cx("ceu_exon_bi.traw"), 2048, 0)) {
    printf("SKIP: ceu_exon fixture not found at %s\n", cx(""));
    return;
  }
  CHECK(t.n_variants == 1346 && t.n_samples == 90);
  int64_t n_missing = 0;
  for (int64_t i = 0; i < t.n_variants * t.n_samples; i++) n_missing += t.gt[i] == FM_GT_MISSING;
  CHECK(n_missing == 8603);
  fm_reader *r = NULL;
  fm_err err = {0};
  CHECK_OK(fm_fmt_gen_open(cx("ceu_exon_bi.gen"), cx("ceu_exon_bi.sample"), &r, &err), &err);
  if (r) {
    check_ids_t(r, &t);
    CHECK(check_vs_traw_t(r, &t, 0) == 1346);
    fm_reader_close(r);
  }
  r = NULL;
  CHECK_OK(fm_fmt_eigenstrat_open(cx("ceu_exon_bi.geno"), cx("ceu_exon_bi.snp"), cx("ceu_exon_bi.ind"),
                                  &r, &err),
           &err);
  if (r) {
    check_ids_t(r, &t);
    CHECK(check_vs_traw_t(r, &t, BY_ID) == 1346);
    fm_reader_close(r);
  }
  /* packed copy keeps the missing calls (code 3) */
  r = NULL;
  CHECK_OK(fm_fmt_eigenstrat_open(cx("ceu_exon_bi.geno"), cx("ceu_exon_bi.snp"), cx("ceu_exon_bi.ind"),
                                  &r, &err),
           &err);
  if (r) {
    CHECK(write_packed(r, tmp("ceu.geno"), 1346) == 1346);
    fm_reader_close(r);
    r = NULL;
    CHECK_OK(fm_fmt_eigenstrat_open(tmp("ceu.geno"), cx("ceu_exon_bi.snp"), cx("ceu_exon_bi.ind"), &r,
                                    &err),
             &err);
    if (r) CHECK(check_vs_traw_t(r, &t, BY_ID) == 1346);
    fm_reader_close(r);
    unlink(tmp("ceu.geno"));
  }
  free_traw(&t);
}

int main(void) {
  const char *env = getenv("RFMALLOC_FIXTURES");
  snprintf(g_text_dir, sizeof g_text_dir, "%s/genotypes/1kg_phase3_subset/text",
           env && *env ? env : "../../../shared/fixtures");
  char traw_path[4200];
  snprintf(traw_path, sizeof traw_path, "%s/1kg_bi_chr22.traw", g_text_dir);
  g_have_fixtures = load_traw(&g_traw, traw_path, 2048, 0);
  if (g_have_fixtures && (g_traw.n_samples != 1126 || g_traw.n_variants != 1097)) {
    fprintf(stderr, "unexpected .traw shape %lld x %lld\n", (long long)g_traw.n_variants,
            (long long)g_traw.n_samples);
    return 1;
  }
  if (!g_have_fixtures) printf("SKIP: fixtures not found at %s (set RFMALLOC_FIXTURES)\n", g_text_dir);
  const char *td = getenv("TMPDIR");
  snprintf(g_tmp, sizeof g_tmp, "%s/fm_fmt_text_XXXXXX", td && *td ? td : "/tmp");
  if (!mkdtemp(g_tmp)) { perror("mkdtemp"); return 1; }

  FM_RUN(test_gen_small);
  FM_RUN(test_gen_bad);
  FM_RUN(test_haps_small_and_bad);
  FM_RUN(test_eigenstrat_small_and_bad);
  FM_RUN(test_gen_fixture);
  FM_RUN(test_haps_fixture);
  FM_RUN(test_haps_legend_fixture);
  FM_RUN(test_eigenstrat_fixture);
  FM_RUN(test_dosage_small_and_bad);
  FM_RUN(test_probability_rule);
  if (g_have_fixtures) FM_RUN(test_dosage_fixture);
  if (g_have_fixtures) FM_RUN(test_ceu_missing);

  if (g_have_fixtures) free_traw(&g_traw);
  rmdir(g_tmp);
  FM_TEST_END();
}
