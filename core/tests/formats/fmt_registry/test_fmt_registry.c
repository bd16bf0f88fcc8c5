/* Tests of the format registry (fm_fmt_registry.h): the table, lookups by
 * name, extension and magic bytes, detection with bare prefixes, companion
 * resolution in upper and lower case, and opening through the table (on
 * the shared fixtures, skipped without them). Files a case needs are
 * generated in a private temporary directory. */
#define _GNU_SOURCE
#include "fm/fm_fmt_registry.h"
#include "fm_test.h"
#include "fm_test_files.h"

#include <string.h>
#include <sys/stat.h>

static char g_dir[256];

/* "<g_dir>/<name>" into out (4096 bytes). */
static const char *at(char *out, const char *name) {
  snprintf(out, FM_FMT_PATH_MAX, "%s/%s", g_dir, name);
  return out;
}

/* Write n bytes to <g_dir>/<name>. */
static void put(const char *name, const void *bytes, size_t n) {
  char p[FM_FMT_PATH_MAX];
  FILE *f = fopen(at(p, name), "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fwrite(bytes, 1, n, f) == n);
  fclose(f);
}

static void touch(const char *name) { put(name, "", 0); }

static const char *name_of(const fm_fmt_format *f) { return f ? f->name : "(none)"; }

#define CHECK_FMT(expr, want)                                                                     \
  do {                                                                                            \
    const char *got_ = name_of(expr);                                                             \
    if (strcmp(got_, want) != 0) {                                                                \
      fprintf(stderr, "%s:%d: %s is %s, expected %s\n", __FILE__, __LINE__, #expr, got_, want);   \
      fm_test_failed_checks++;                                                                    \
    }                                                                                             \
  } while (0)

static void test_table(void) {
  const char *order[] = {"bed", "pgen", "ped", "tped", "bgen", "vcf", "gen", "haps", "eigenstrat",
                         "dosage"};
  /* the fm_fmt_options field each reader uses ("" none) */
  const char *option[] = {"", "", "counted_alleles", "counted_alleles", "", "region", "", "chrom", "",
                          "dosage_format"};
  const char *fields[] = {"region", "chrom", "counted_alleles", "dosage_format"};
  int n = 0;
  for (const fm_fmt_format *f; (f = fm_fmt_at(n)); n++) {
    CHECK(n < 10 && !strcmp(f->name, order[n]));
    CHECK(f->open != NULL);
    CHECK(f->n_companions >= 0 && f->n_companions <= FM_FMT_MAX_COMPANIONS);
    CHECK(f->n_magic >= 0 && f->n_magic <= FM_FMT_MAX_MAGIC);
    CHECK(!f->is_prefix_named || f->extension[0]);
    for (int j = 0; j < f->n_magic; j++)
      CHECK(f->magic[j].len > 0 && f->magic[j].offset + f->magic[j].len <= FM_FMT_SNIFF_BYTES);
    for (int j = 0; j < f->n_companions; j++) CHECK(f->companion[j].name != NULL);
    CHECK(!strcmp(f->option[0] ? f->option[0] : "", option[n]) && (!f->option[0] || !f->option[1]));
    int known = !f->option[0];
    for (int j = 0; j < 4; j++) known |= f->option[0] && !strcmp(f->option[0], fields[j]);
    CHECK(known);
    CHECK(fm_fmt_by_name(f->name) == f);
  }
  CHECK(n == 10);
  CHECK(fm_fmt_at(-1) == NULL);
  CHECK(fm_fmt_at(10) == NULL);
}

/* Each input and the format it finds ("(none)": NULL). */
typedef struct lookup_case {
  const char *in, *want;
} lookup_case;

static void check_lookups(const fm_fmt_format *(*find)(const char *), const lookup_case *c, int n) {
  for (int i = 0; i < n; i++) {
    const char *got = name_of(find(c[i].in));
    if (strcmp(got, c[i].want)) {
      fprintf(stderr, "'%s' finds %s, expected %s\n", c[i].in, got, c[i].want);
      fm_test_failed_checks++;
    }
  }
}

static void test_by_name(void) {
  static const lookup_case c[] = {
      {"BED", "bed"}, {"bcf", "vcf"}, {"VCF.GZ", "vcf"}, {"geno", "eigenstrat"},
      {"AncestryMap", "eigenstrat"}, {"packedancestrymap", "eigenstrat"}, {"Dosage", "dosage"},
      {"haps_legend", "(none)"}, /* one format, with or without a legend */
      {"bgz", "(none)"}, {"be", "(none)"}, {"beds", "(none)"}, {"", "(none)"}};
  check_lookups(fm_fmt_by_name, c, (int)(sizeof c / sizeof c[0]));
  CHECK(fm_fmt_by_name(NULL) == NULL);
}

static void test_by_path(void) {
  static const lookup_case c[] = {
      {"x.bed", "bed"}, {"/d.pgen/X.BED", "bed"}, {".bed", "bed"}, {"x.pgen", "pgen"},
      {"x.ped", "ped"}, {"x.tped", "tped"} /* not .ped */, {"x.bgen", "bgen"} /* not .gen */,
      {"x.vcf", "vcf"}, {"x.VCF.gz", "vcf"}, {"x.vcf.bgz", "vcf"}, {"x.bcf", "vcf"},
      {"x.gen", "gen"}, {"x.gen.GZ", "gen"}, {"x.haps", "haps"}, {"x.Haps.gz", "haps"},
      {"x.geno", "eigenstrat"}, {"x.bed.bak", "(none)"}, {"x.bed.gz", "(none)"},
      {"x.pgen.gz", "(none)"}, {"x.gz", "(none)"}, {"x.dosage", "(none)"} /* by name only */,
      {"xbed", "(none)"}, {"x.genotypes", "(none)"}, {"", "(none)"}};
  check_lookups(fm_fmt_by_path, c, (int)(sizeof c / sizeof c[0]));
  CHECK(fm_fmt_by_path(NULL) == NULL);
}

static void test_by_magic(void) {
  uint8_t b[FM_FMT_SNIFF_BYTES] = {0x6c, 0x1b, 0x01};
  CHECK_FMT(fm_fmt_by_magic(b, 3), "bed");
  CHECK(fm_fmt_by_magic(b, 2) == NULL); /* the mode byte is needed */
  b[2] = 0x02;
  CHECK_FMT(fm_fmt_by_magic(b, 3), "pgen");
  b[2] = 0x10;
  CHECK_FMT(fm_fmt_by_magic(b, 12), "pgen");
  b[2] = 0x00; /* a sample-major .bed, which the PGEN reader then refuses */
  CHECK_FMT(fm_fmt_by_magic(b, 3), "pgen");
  memset(b, 0, sizeof b);
  b[0] = 0x14; /* offset 20, header length 20, M, N: then "bgen" at 16 */
  b[4] = 0x14;
  memcpy(b + 16, "bgen", 4);
  CHECK_FMT(fm_fmt_by_magic(b, 20), "bgen");
  CHECK(fm_fmt_by_magic(b, 19) == NULL);
  memcpy(b, "xxxxbgen", 8); /* "bgen" elsewhere is no BGEN */
  memset(b + 16, 0, 4);
  CHECK(fm_fmt_by_magic(b, 20) == NULL);
  CHECK_FMT(fm_fmt_by_magic((const uint8_t *)"BCF\2\2", 5), "vcf");
  CHECK_FMT(fm_fmt_by_magic((const uint8_t *)"\x1f\x8b\x08\x04", 4), "vcf");
  CHECK_FMT(fm_fmt_by_magic((const uint8_t *)"##fileformat=VCFv4.2", 20), "vcf");
  CHECK(fm_fmt_by_magic((const uint8_t *)"##fil", 5) == NULL);
  CHECK_FMT(fm_fmt_by_magic((const uint8_t *)"GENO 3 4 1 2", 12), "eigenstrat");
  CHECK(fm_fmt_by_magic((const uint8_t *)"TGENO 3 4", 9) == NULL);
  CHECK(fm_fmt_by_magic((const uint8_t *)"0120\n", 5) == NULL);
  CHECK(fm_fmt_by_magic(b, 0) == NULL);
  CHECK(fm_fmt_by_magic(NULL, 20) == NULL);
}

static void test_detect(void) {
  char p[FM_FMT_PATH_MAX];
  fm_err err;
  const fm_fmt_format *f = NULL;
  /* a name wins, the path is not looked at */
  CHECK_OK(fm_fmt_detect(at(p, "none.bed"), "gen", &f, &err), &err);
  CHECK_FMT(f, "gen");
  CHECK_OK(fm_fmt_detect(NULL, "BCF", &f, &err), &err);
  CHECK_FMT(f, "vcf");
  CHECK(fm_fmt_detect(at(p, "x.bed"), "plink", &f, &err) == FM_EARG && f == NULL);
  CHECK(!strcmp(err.msg, "format 'plink' is not one of bed, pgen, ped, tped, bgen, vcf, gen, "
                         "haps, eigenstrat, dosage"));
  /* the extension, whether the file is there or not */
  CHECK_OK(fm_fmt_detect(at(p, "none.VCF.GZ"), NULL, &f, &err), &err);
  CHECK_FMT(f, "vcf");
  /* a bare prefix: .bed before .pgen */
  touch("g.pgen");
  CHECK_OK(fm_fmt_detect(at(p, "g"), NULL, &f, &err), &err);
  CHECK_FMT(f, "pgen");
  touch("g.bed");
  CHECK_OK(fm_fmt_detect(at(p, "g"), NULL, &f, &err), &err);
  CHECK_FMT(f, "bed");
  touch("G.BED"); /* the prefix's extension is looked for in lower case only */
  CHECK(fm_fmt_detect(at(p, "G"), NULL, &f, &err) == FM_EIO);
  CHECK(strstr(err.msg, "genotype file '") && strstr(err.msg, "/G' does not exist"));
  /* the first bytes */
  put("b.bak", "\x6c\x1b\x01\x00", 4);
  CHECK_OK(fm_fmt_detect(at(p, "b.bak"), NULL, &f, &err), &err);
  CHECK_FMT(f, "bed");
  put("v.txt", "##fileformat=VCFv4.2\n", 21);
  CHECK_OK(fm_fmt_detect(at(p, "v.txt"), NULL, &f, &err), &err);
  CHECK_FMT(f, "vcf");
  put("e.dat", "\x6c\x1b", 2);
  CHECK(fm_fmt_detect(at(p, "e.dat"), NULL, &f, &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "cannot tell the format of '") &&
        strstr(err.msg, "e.dat' from its name or first bytes"));
  touch("empty");
  CHECK(fm_fmt_detect(at(p, "empty"), NULL, &f, &err) == FM_EFORMAT);
  /* a directory has no bytes, and is not a bare prefix even with g.bed.bed beside it */
  CHECK(mkdir(at(p, "g.bed.d"), 0700) == 0);
  CHECK(fm_fmt_detect(at(p, "g.bed.d"), NULL, &f, &err) == FM_EFORMAT);
  CHECK(fm_fmt_detect(NULL, NULL, &f, &err) == FM_EARG);
  CHECK(fm_fmt_detect(at(p, "x.bed"), NULL, NULL, &err) == FM_EARG);
}

/* A BGEN of the fixtures under a name without its extension: told from
 * "bgen" at byte offset 16. */
static void test_detect_fixture_bgen(void) {
  char dir[FM_FMT_PATH_MAX], p[2 * FM_FMT_PATH_MAX];
  if (!fm_test_fixture(dir, sizeof dir, "genotypes/ceu_exon", "ceu_exon_bi.8bit.bgen")) {
    printf("fixtures absent: skipping test_detect_fixture_bgen\n");
    return;
  }
  size_t n = 0;
  snprintf(p, sizeof p, "%s/ceu_exon_bi.8bit.bgen", dir);
  void *bytes = fm_test_read_file(p, &n);
  CHECK(bytes != NULL);
  if (!bytes) return;
  put("bgen.dat", bytes, n);
  free(bytes);
  fm_err err;
  const fm_fmt_format *f = NULL;
  CHECK_OK(fm_fmt_detect(at(p, "bgen.dat"), NULL, &f, &err), &err);
  CHECK_FMT(f, "bgen");
}

/* Resolve path (a name in g_dir) for format name; check the main file and
 * each companion (NULL: absent) against names in g_dir. */
static void check_resolve(const char *format, const char *path, const char *const *given,
                          const char *want_main, const char *want0, const char *want1,
                          int line) {
  char p[FM_FMT_PATH_MAX], w[FM_FMT_PATH_MAX];
  static fm_fmt_fileset fs;
  fm_err err;
  const fm_fmt_format *f = fm_fmt_by_name(format);
  fm_status st = fm_fmt_resolve(f, at(p, path), given, &fs, &err);
  const char *want[3] = {want_main, want0, want1};
  int bad = st != FM_OK || fs.format != f;
  for (int i = 0; i < 3 && !bad; i++)
    bad = want[i] ? strcmp(fs.path[i], at(w, want[i])) != 0 : fs.path[i][0] != '\0';
  if (bad) {
    fprintf(stderr, "%s:%d: resolve %s '%s': %s -> '%s' '%s' '%s'\n", __FILE__, line, format, path,
            fm_status_name(st), fs.path[0], fs.path[1], fs.path[2]);
    fm_test_failed_checks++;
  }
}

#define RESOLVE(format, path, given, m, c0, c1) check_resolve(format, path, given, m, c0, c1, __LINE__)

static void test_resolve(void) {
  /* g.bed, g.pgen are there (test_detect) */
  touch("g.bim");
  touch("g.fam");
  RESOLVE("bed", "g.bed", NULL, "g.bed", "g.bim", "g.fam");
  RESOLVE("bed", "g", NULL, "g.bed", "g.bim", "g.fam"); /* a bare prefix */
  RESOLVE("pgen", "g", NULL, "g.pgen", "g.pvar", "g.psam"); /* required: named though absent */
  /* upper case: its companions first, then lower case */
  touch("UP.BIM");
  touch("UP.fam");
  RESOLVE("bed", "UP.BED", NULL, "UP.BED", "UP.BIM", "UP.fam");
  touch("UP.FAM");
  RESOLVE("bed", "UP.BED", NULL, "UP.BED", "UP.BIM", "UP.FAM");
  RESOLVE("bed", "UP2.BED", NULL, "UP2.BED", "UP2.BIM", "UP2.FAM"); /* absent: the first name */
  RESOLVE("bed", "UP.Bed", NULL, "UP.Bed", "UP.bim", "UP.fam");      /* mixed case is not upper */
  /* an extension not the format's: the file as named, companions beside it */
  RESOLVE("bed", "b.bak", NULL, "b.bak", "b.bak.bim", "b.bak.fam");
  /* a directory is not the main file of a bare prefix */
  RESOLVE("bed", "g.bed.d", NULL, "g.bed.d.bed", "g.bed.d.bim", "g.bed.d.fam");
  /* given names are taken as they are */
  const char *given[] = {NULL, "/elsewhere/x.fam"};
  char p[FM_FMT_PATH_MAX];
  fm_fmt_fileset fs;
  fm_err err;
  CHECK_OK(fm_fmt_resolve(fm_fmt_by_name("bed"), at(p, "g.bed"), given, &fs, &err), &err);
  CHECK(!strcmp(fs.path[2], "/elsewhere/x.fam"));
  /* compressed text: the format's own part of the extension sets the case */
  touch("Q.SAMPLE");
  RESOLVE("gen", "Q.GEN.gz", NULL, "Q.GEN.gz", "Q.SAMPLE", NULL);
  RESOLVE("gen", "Q.gen.GZ", NULL, "Q.gen.GZ", "Q.sample", NULL);
  /* optional companions: absent, or there */
  RESOLVE("bgen", "o.bgen", NULL, "o.bgen", NULL, NULL);
  touch("o.sample");
  RESOLVE("bgen", "o.bgen", NULL, "o.bgen", "o.sample", NULL);
  RESOLVE("haps", "o.haps.gz", NULL, "o.haps.gz", NULL, "o.sample");
  touch("o.legend");
  RESOLVE("haps", "o.haps.gz", NULL, "o.haps.gz", "o.legend", "o.sample");
  RESOLVE("eigenstrat", "o.geno", NULL, "o.geno", "o.snp", "o.ind");
  RESOLVE("vcf", "o.vcf.gz", NULL, "o.vcf.gz", NULL, NULL);
  /* legacy dosage: companions only when given */
  touch("o.fam");
  RESOLVE("dosage", "o.dosage", NULL, "o.dosage", NULL, NULL);
  const char *dgiven[] = {"a.fam", NULL};
  CHECK_OK(fm_fmt_resolve(fm_fmt_by_name("dosage"), "o.dosage", dgiven, &fs, &err), &err);
  CHECK(!strcmp(fs.path[1], "a.fam") && fs.path[2][0] == '\0');
  /* a name too long to open */
  static char longp[FM_FMT_PATH_MAX + 8];
  memset(longp, 'a', FM_FMT_PATH_MAX - 3);
  CHECK(fm_fmt_resolve(fm_fmt_by_name("ped"), longp, NULL, &fs, &err) == FM_EIO);
  CHECK(strstr(err.msg, "bytes long; at most 4095 can be opened") != NULL);
  CHECK(fs.path[0][0] == '\0');
  const fm_fmt_format *f = NULL;
  CHECK(fm_fmt_detect(longp, NULL, &f, &err) == FM_EIO); /* no prefix.bed of that name */
  CHECK(!strncmp(err.msg, "genotype file 'aaa", 18));
  CHECK(fm_fmt_resolve(NULL, "x.bed", NULL, &fs, &err) == FM_EARG);
  CHECK(fm_fmt_resolve(fm_fmt_by_name("bed"), NULL, NULL, &fs, &err) == FM_EARG);
}

/* Read every record of r; returns the count, or -1 on an error. */
static int64_t count_records(fm_reader *r) {
  fm_gt_record rec;
  memset(&rec, 0, sizeof rec);
  fm_err err;
  int64_t n = 0;
  fm_status st;
  while ((st = fm_reader_next(r, &rec, &err)) == FM_OK) n++;
  if (st != FM_FMT_END) fprintf(stderr, "reading: %s\n", err.msg);
  return st == FM_FMT_END ? n : -1;
}

/* Open fixture file rel through the table (detected, companions found) and
 * check the reader's format name, sample and record counts. */
static void check_open(const char *rel, const fm_fmt_options *opt, const char *want_format,
                       int64_t want_samples, int64_t want_records) {
  char dir[FM_FMT_PATH_MAX], p[2 * FM_FMT_PATH_MAX];
  if (!fm_test_fixture(dir, sizeof dir, "genotypes", rel)) {
    printf("fixtures absent: skipping %s\n", rel);
    return;
  }
  snprintf(p, sizeof p, "%s/%s", dir, rel);
  static fm_fmt_fileset fs;
  fm_err err;
  const fm_fmt_format *f = NULL;
  fm_reader *r = NULL;
  CHECK_OK(fm_fmt_detect(p, NULL, &f, &err), &err);
  if (!f) return;
  CHECK_OK(fm_fmt_resolve(f, p, NULL, &fs, &err), &err);
  CHECK_OK(fm_fmt_open(&fs, opt, &r, &err), &err);
  if (!r) return;
  if (strcmp(r->info.format, want_format) || r->info.n_samples != want_samples) {
    fprintf(stderr, "%s: format %s, %lld samples\n", rel, r->info.format,
            (long long)r->info.n_samples);
    fm_test_failed_checks++;
  }
  CHECK(count_records(r) == want_records);
  fm_reader_close(r);
}

/* A missing main file is named, whatever its reader opens first (a .bed's
 * reader reads the .fam first); so is a directory. */
static void test_open_missing_main(void) {
  static fm_fmt_fileset fs;
  fm_err err;
  fm_reader *r = NULL;
  const fm_fmt_format *bed = fm_fmt_by_name("bed");
  CHECK_OK(fm_fmt_resolve(bed, "/nonexistent-dir/nope.bed", NULL, &fs, &err), &err);
  CHECK(fm_fmt_open(&fs, NULL, &r, &err) == FM_EIO && r == NULL);
  CHECK(strstr(err.msg, "'/nonexistent-dir/nope.bed'") && strstr(err.msg, "no such file") &&
        !strstr(err.msg, ".fam"));
  CHECK_OK(fm_fmt_resolve(fm_fmt_by_name("vcf"), "/tmp", NULL, &fs, &err), &err);
  CHECK(fm_fmt_open(&fs, NULL, &r, &err) == FM_EIO && strstr(err.msg, "is a directory"));
}

/* A file whose bytes are another format's (a BCF named .bgen) is named as
 * that format: before its reader runs when its own format has a magic
 * (a VCF named .bed, without the .bim and .fam it would miss first),
 * after its reader refused it otherwise (a BCF named .gen); a malformed
 * one of no known format is not. */
static void test_open_other_format(void) {
  static fm_fmt_fileset fs;
  fm_err err;
  fm_reader *r = NULL;
  char p[FM_FMT_PATH_MAX];
  static const uint8_t gz[32] = {0x1f, 0x8b, 0x08, 0x04};
  put("bcf.bgen", gz, sizeof gz);
  CHECK_OK(fm_fmt_resolve(fm_fmt_by_name("bgen"), at(p, "bcf.bgen"), NULL, &fs, &err), &err);
  CHECK(fm_fmt_open(&fs, NULL, &r, &err) == FM_EFORMAT && r == NULL);
  CHECK(strstr(err.msg, "bcf.bgen' starts like a vcf file, not bgen: give format = \"vcf\" to read it as one") &&
        !strstr(err.msg, "reader said"));
  static const char vcf[] = "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n";
  put("vcf.bed", vcf, sizeof vcf - 1);
  CHECK_OK(fm_fmt_resolve(fm_fmt_by_name("bed"), at(p, "vcf.bed"), NULL, &fs, &err), &err);
  CHECK(fm_fmt_open(&fs, NULL, &r, &err) == FM_EFORMAT && r == NULL);
  CHECK(strstr(err.msg, "vcf.bed' starts like a vcf file, not bed: give format = \"vcf\"") &&
        !strstr(err.msg, ".fam") && !strstr(err.msg, ".bim"));
  static const uint8_t bcf[32] = {'B', 'C', 'F', 2, 2};
  put("bcf.ped", bcf, sizeof bcf);
  put("bcf.map", "1 rs1 0 1\n", 10);
  CHECK_OK(fm_fmt_resolve(fm_fmt_by_name("ped"), at(p, "bcf.ped"), NULL, &fs, &err), &err);
  fm_status st = fm_fmt_open(&fs, NULL, &r, &err);
  CHECK(st == FM_EFORMAT && r == NULL);
  CHECK(strstr(err.msg, "bcf.ped' starts like a vcf file, not ped: give format = \"vcf\" to read it as one (the ped reader said: "));
  static const uint8_t junk[32] = {1, 2, 3, 4};
  put("junk.bgen", junk, sizeof junk);
  CHECK_OK(fm_fmt_resolve(fm_fmt_by_name("bgen"), at(p, "junk.bgen"), NULL, &fs, &err), &err);
  CHECK(fm_fmt_open(&fs, NULL, &r, &err) == FM_EFORMAT && r == NULL);
  CHECK(strncmp(err.msg, "bgen ", 5) == 0 && !strstr(err.msg, "starts like"));
  /* a sample-major .bed (6c 1b 00) also matches the PGEN magic: the two
   * formats' magics overlap, so the .bed reader's own message stands */
  static const uint8_t sample_major[8] = {0x6c, 0x1b, 0x00};
  put("sm.bed", sample_major, sizeof sample_major);
  put("sm.bim", "1 rs1 0 1 A C\n", 14);
  put("sm.fam", "f s 0 0 1 -9\n", 13);
  CHECK_OK(fm_fmt_resolve(fm_fmt_by_name("bed"), at(p, "sm.bed"), NULL, &fs, &err), &err);
  CHECK(fm_fmt_open(&fs, NULL, &r, &err) == FM_EFORMAT && r == NULL);
  CHECK(strstr(err.msg, "sample-major") && !strstr(err.msg, "starts like"));
}

static void test_open_fixtures(void) {
  check_open("ceu_exon/ceu_exon_bi.bed", NULL, "bed", 90, 1346);
  check_open("ceu_exon/ceu_exon_bi.pgen", NULL, "pgen", 90, 1346);
  check_open("ceu_exon/ceu_exon_bi.ped", NULL, "ped", 90, 1346);
  check_open("ceu_exon/ceu_exon_bi.tped", NULL, "tped", 90, 1346);
  check_open("ceu_exon/ceu_exon_bi.8bit.bgen", NULL, "bgen", 90, 1346);
  check_open("ceu_exon/ceu_exon_bi.gen", NULL, "gen", 90, 1346);
  check_open("ceu_exon/ceu_exon_bi.geno", NULL, "eigenstrat", 90, 1346);
  const fm_fmt_options region = {.region = "22"};
  check_open("1kg_phase3_subset/1kg.bcf", &region, "bcf", 1126, 1145);
  check_open("1kg_phase3_subset/text/1kg_bi_chr22.haps", NULL, "haps", 1126, 1097);
  const fm_fmt_options chrom = {.chrom = "22"};
  check_open("1kg_phase3_subset/text/1kg_bi_chr22_hl.haps", &chrom, "haps-legend", 1126, 1097);
  fm_reader *r = NULL;
  fm_err err;
  CHECK(fm_fmt_open(NULL, NULL, &r, &err) == FM_EARG);
  static fm_fmt_fileset empty;
  CHECK(fm_fmt_open(&empty, NULL, &r, &err) == FM_EARG);
}

int main(void) {
  if (!fm_test_tmpdir(g_dir, sizeof g_dir, "fm_fmt_registry_")) return 1;
  FM_RUN(test_table);
  FM_RUN(test_by_name);
  FM_RUN(test_by_path);
  FM_RUN(test_by_magic);
  FM_RUN(test_detect);
  FM_RUN(test_detect_fixture_bgen);
  FM_RUN(test_resolve);
  FM_RUN(test_open_missing_main);
  FM_RUN(test_open_other_format);
  FM_RUN(test_open_fixtures);
  fm_test_rmtree(g_dir);
  FM_TEST_END();
}
