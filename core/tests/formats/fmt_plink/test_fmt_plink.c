/* PLINK 1 readers (fm_fmt_plink.h): BED/BIM/FAM, PED/MAP and TPED/TFAM on the
 * chr22 1000 Genomes fixtures must give exactly the ALT-count matrix of
 * plink2's text/1kg_bi_chr22.traw; small hand-written files cover the error
 * paths. Fixture cases print "SKIP: ..." when the fixtures are absent. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fm/fm_codec_bed2.h"
#include "fm/fm_fmt_plink.h"
#include "fm_test.h"
#include "fm_test_fmt.h"

/* ---- fixtures -------------------------------------------------------- */

static char fx_dir[4096];

static int find_fixtures(void) {
  const char *env = getenv("RFMALLOC_FIXTURES");
  char cand[4096];
  if (env && env[0]) {
    snprintf(cand, sizeof cand, "%s/genotypes/1kg_phase3_subset", env);
  } else {
    /* <repo>/core/tests/formats/fmt_plink/this.c -> <repo>/../shared/fixtures */
    char src[2048];
    snprintf(src, sizeof src, "%s", __FILE__);
    char *p = strstr(src, "/core/tests/formats/fmt_plink/");
    if (!p) return 0;
    *p = '\0';
    snprintf(cand, sizeof cand, "%s/../shared/fixtures/genotypes/1kg_phase3_subset", src);
  }
  char probe[4200];
  snprintf(probe, sizeof probe, "%s/text/1kg_bi_chr22.traw", cand);
  if (access(probe, R_OK) != 0) return 0;
  snprintf(fx_dir, sizeof fx_dir, "%s", cand);
  return 1;
}

static int have_fx;

static void fx_path(char *out, size_t n, const char *rel) { snprintf(out, n, "%s/%s", fx_dir, rel); }

/* The .traw: variants x samples ALT counts (COUNTED column = ALT). */
typedef struct traw {
  int64_t n_var, n_samples;
  char **id, **counted, **iid_col; /* iid_col: header FID_IID */
  int8_t *g;                       /* n_var * n_samples */
} traw;

static traw T;

static char *xdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  memcpy(d, s, n);
  return d;
}

static int load_traw(void) {
  char path[4300];
  fx_path(path, sizeof path, "text/1kg_bi_chr22.traw");
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int64_t cap_v = 0;
  if ((len = getline(&line, &cap, f)) <= 0) return 0;
  /* header */
  int64_t nf = 0;
  for (char *tok = strtok(line, "\t\r\n"); tok; tok = strtok(NULL, "\t\r\n"), nf++)
    if (nf >= 6) {
      T.iid_col = realloc(T.iid_col, (size_t)(nf - 5) * sizeof *T.iid_col);
      T.iid_col[nf - 6] = xdup(tok);
    }
  T.n_samples = nf - 6;
  while ((len = getline(&line, &cap, f)) > 0) {
    if (T.n_var == cap_v) {
      cap_v = cap_v ? 2 * cap_v : 1024;
      T.id = realloc(T.id, (size_t)cap_v * sizeof *T.id);
      T.counted = realloc(T.counted, (size_t)cap_v * sizeof *T.counted);
      T.g = realloc(T.g, (size_t)(cap_v * T.n_samples));
    }
    int64_t k = 0;
    int8_t *row = T.g + T.n_var * T.n_samples;
    char *p = line;
    for (; k < 6; k++) { /* CHR SNP (C)M POS COUNTED ALT */
      char *tab = strchr(p, '\t');
      if (!tab) break;
      *tab = '\0';
      if (k == 1) T.id[T.n_var] = xdup(p);
      if (k == 4) T.counted[T.n_var] = xdup(p);
      p = tab + 1;
    }
    for (; k - 6 < T.n_samples && *p; k++) { /* 0, 1, 2 or NA, tab separated */
      if (p[0] == 'N') {
        row[k - 6] = FM_GT_MISSING;
        p += 2;
      } else {
        row[k - 6] = (int8_t)(p[0] - '0');
        p += 1;
      }
      if (*p == '\t') p++;
    }
    CHECK(k == 6 + T.n_samples);
    T.n_var++;
  }
  free(line);
  fclose(f);
  return T.n_var > 0;
}

static void free_traw(void) {
  for (int64_t v = 0; v < T.n_var; v++) {
    free(T.id[v]);
    free(T.counted[v]);
  }
  for (int64_t s = 0; s < T.n_samples; s++) free(T.iid_col[s]);
  free(T.id);
  free(T.counted);
  free(T.iid_col);
  free(T.g);
}

static void check_samples(const fm_reader *r) {
  CHECK(r->info.n_samples == T.n_samples);
  if (r->info.n_samples != T.n_samples) return;
  for (int64_t s = 0; s < T.n_samples; s++) {
    const char *col = T.iid_col[s], *iid = r->sample_ids[s];
    const size_t a = strlen(col), b = strlen(iid);
    CHECK(a > b && col[a - b - 1] == '_' && strcmp(col + a - b, iid) == 0);
  }
}

/* Compare record rec with .traw row v; returns 1 when it matches. */
static int match_row(const fm_gt_record *rec, int64_t v) {
  int ok = strcmp(rec->id, T.id[v]) == 0 && strcmp(rec->alt, T.counted[v]) == 0 &&
           rec->n_samples == T.n_samples;
  if (ok) ok = memcmp(rec->hardcall, T.g + v * T.n_samples, (size_t)T.n_samples) == 0;
  if (!ok) fprintf(stderr, "mismatch at traw row %lld (%s)\n", (long long)v, T.id[v]);
  return ok;
}

static void test_bed_fixture(void) {
  if (!have_fx) {
    printf("SKIP: test_bed_fixture (fixtures not found)\n");
    return;
  }
  char bed[4300];
  fx_path(bed, sizeof bed, "1kg_bi.bed");
  fm_reader *r = NULL;
  fm_err err;
  CHECK_OK(fm_fmt_bed_open(bed, NULL, NULL, &r, &err), &err);
  if (!r) return;
  CHECK(strcmp(r->info.format, "bed") == 0);
  CHECK(r->info.n_variants == 25161);
  check_samples(r);
  fm_gt_record rec;
  memset(&rec, 0, sizeof rec);
  int64_t k = 0, v = 0, bad = 0;
  fm_status st;
  while ((st = fm_reader_next(r, &rec, &err)) == FM_OK) {
    k++;
    if (strcmp(rec.chrom, "22") != 0) continue;
    CHECK(rec.hap == NULL && rec.dosage == NULL);
    if (v < T.n_var && !match_row(&rec, v)) bad++;
    v++;
  }
  CHECK(st == FM_FMT_END);
  CHECK(k == 25161);
  CHECK(v == T.n_var);
  CHECK(bad == 0);
  /* the end is sticky */
  CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
  fm_reader_close(r);
}

typedef struct id_check {
  int64_t first, n_calls, bad;
} id_check;

static void on_bed_variant(void *ud, int64_t in_index, const fm_gt_record *rec) {
  id_check *c = ud;
  const int64_t v = in_index - c->first;
  c->n_calls++;
  if (v < 0 || v >= T.n_var || strcmp(rec->id, T.id[v]) != 0) c->bad++;
}

/* The chr22 records of the genome-wide .bed streamed into a dense
 * destination: variants reversed with duplicates, samples subset with
 * duplicates. */
static void test_bed_fixture_stream(void) {
  if (!have_fx) {
    printf("SKIP: test_bed_fixture_stream (fixtures not found)\n");
    return;
  }
  char bed[4300], bim[4300];
  fx_path(bed, sizeof bed, "1kg_bi.bed");
  fx_path(bim, sizeof bim, "1kg_bi.bim");
  FILE *f = fopen(bim, "r");
  CHECK(f != NULL);
  if (!f) return;
  char line[512];
  int64_t first = -1, k = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "22\t", 3) == 0) {
      first = k;
      break;
    }
    k++;
  }
  fclose(f);
  CHECK(first > 0);
  if (first <= 0) return;
  const int64_t n = T.n_samples, mo = T.n_var + 2, no = 9;
  int64_t *vars = malloc((size_t)mo * sizeof *vars);
  for (int64_t j = 0; j < T.n_var; j++) vars[j] = first + T.n_var - 1 - j;
  vars[T.n_var] = first + 10;
  vars[T.n_var + 1] = first;
  const int64_t samples[9] = {n - 1, 0, 1, 2, 3, 1, 600, 601, n - 1};
  double *buf = malloc((size_t)(mo * no) * sizeof *buf);
  fm_reader *r = NULL;
  fm_err err;
  CHECK_OK(fm_fmt_bed_open(bed, NULL, NULL, &r, &err), &err);
  if (r) {
    fm_dest d = {FM_DEST_DENSE, (uint8_t *)buf, no, mo, samples, 0};
    id_check c = {first, 0, 0};
    CHECK_OK(fm_fmt_stream(r, &d, vars, 1000, on_bed_variant, &c, NULL, &err), &err);
    CHECK(c.n_calls == T.n_var && c.bad == 0);
    int64_t bad = 0;
    for (int64_t j = 0; j < mo; j++)
      for (int64_t i = 0; i < no; i++)
        if (buf[j * no + i] != T.g[(vars[j] - first) * n + samples[i]]) bad++;
    CHECK(bad == 0);
    fm_reader_close(r);
  }
  free(buf);
  free(vars);
}

/* A hardcall-only read hands the .bed columns over as bed2: equal to the
 * full read, on the genome-wide fixture and the hapmap file (chr 23,
 * missing calls, n % 4 != 0 checked by the sample subset). */
static fm_status open_bed_ud(void *ud, fm_reader **out, fm_err *err) {
  return fm_fmt_bed_open((const char *)ud, NULL, NULL, out, err);
}

static void test_bed_hardcall_only(void) {
  if (!have_fx) {
    printf("SKIP: test_bed_hardcall_only (fixtures not found)\n");
    return;
  }
  char bed[4300];
  fx_path(bed, sizeof bed, "1kg_bi.bed");
  CHECK(fm_test_check_hardcall_only(open_bed_ud, bed) == 25161);
  fx_path(bed, sizeof bed, "../ceu_exon/ceu_exon_bi.bed");
  CHECK(fm_test_check_hardcall_only(open_bed_ud, bed) > 1000);
}

static const char *const *counted_list(void) { return (const char *const *)T.counted; }

static void test_ped_fixture(void) {
  if (!have_fx) {
    printf("SKIP: test_ped_fixture (fixtures not found)\n");
    return;
  }
  char ped[4300];
  fx_path(ped, sizeof ped, "text/1kg_bi_chr22.ped");
  fm_reader *r = NULL;
  fm_err err;
  CHECK_OK(fm_fmt_ped_open(ped, NULL, counted_list(), T.n_var, &r, &err), &err);
  if (!r) return;
  CHECK(r->info.n_variants == T.n_var);
  check_samples(r);
  fm_gt_record rec;
  memset(&rec, 0, sizeof rec);
  int64_t v = 0, bad = 0;
  fm_status st;
  while ((st = fm_reader_next(r, &rec, &err)) == FM_OK) {
    if (v < T.n_var && !match_row(&rec, v)) bad++;
    CHECK(strcmp(rec.chrom, "22") == 0 && rec.pos > 0);
    v++;
  }
  CHECK(st == FM_FMT_END && v == T.n_var && bad == 0);
  fm_reader_close(r);
  /* wrong length of the counted list */
  CHECK(fm_fmt_ped_open(ped, NULL, counted_list(), T.n_var - 1, &r, &err) == FM_EMISMATCH);
  CHECK(r == NULL);
}

/* TPED without a counted list (minor-allele rule), then streamed into a
 * hardcall destination with sample and variant subsets and duplicates. */
static void test_tped_fixture(void) {
  if (!have_fx) {
    printf("SKIP: test_tped_fixture (fixtures not found)\n");
    return;
  }
  char tped[4300];
  fx_path(tped, sizeof tped, "text/1kg_bi_chr22.tped");
  fm_reader *r = NULL;
  fm_err err;
  CHECK_OK(fm_fmt_tped_open(tped, NULL, NULL, 0, &r, &err), &err);
  if (!r) return;
  check_samples(r);
  fm_gt_record rec;
  memset(&rec, 0, sizeof rec);
  int64_t v = 0, bad = 0, flipped = 0;
  fm_status st;
  const int64_t n = T.n_samples;
  while ((st = fm_reader_next(r, &rec, &err)) == FM_OK && v < T.n_var) {
    const int8_t *g = T.g + v * n;
    int64_t alt_copies = 0;
    if (strcmp(rec.alt, ".") == 0) { /* monomorphic: every call counts 0 */
      const int hom_alt = strcmp(rec.ref, T.counted[v]) == 0;
      for (int64_t s = 0; s < n; s++)
        if (rec.hardcall[s] != 0 || g[s] != (hom_alt ? 2 : 0)) bad++;
      v++;
      continue;
    }
    const int same = strcmp(rec.alt, T.counted[v]) == 0;
    for (int64_t s = 0; s < n; s++) {
      alt_copies += rec.hardcall[s];
      if (rec.hardcall[s] != (same ? g[s] : 2 - g[s])) bad++;
    }
    if (!same) {
      flipped++;
      CHECK(strcmp(rec.ref, T.counted[v]) == 0);
    }
    CHECK(alt_copies <= n); /* minor allele */
    v++;
  }
  CHECK(st == FM_FMT_END && v == T.n_var && bad == 0);
  CHECK(flipped > 0);
  fm_reader_close(r);

  /* streamed, with the .traw's counted alleles */
  CHECK_OK(fm_fmt_tped_open(tped, NULL, counted_list(), T.n_var, &r, &err), &err);
  if (!r) return;
  enum { NO = 7, MO = 6 };
  const int64_t samples[NO] = {n - 1, 0, 0, 17, 500, n - 1, 3};
  const int64_t vars[MO] = {400, 5, 0, 5, 300, 2};
  const int64_t cb = fm_codec_bed2_col_bytes(NO);
  uint8_t buf[MO * 2];
  fm_dest d = {FM_DEST_HARDCALL, buf, NO, MO, samples, 0};
  CHECK_OK(fm_fmt_stream(r, &d, vars, 64, NULL, NULL, NULL, &err), &err);
  double lut[4], out[NO];
  fm_codec_bed2_lut(0, 1, -1, lut);
  for (int64_t j = 0; j < MO; j++) {
    fm_codec_bed2_decode_col(buf + j * cb, 0, NO, lut, out);
    for (int64_t i = 0; i < NO; i++) CHECK(out[i] == T.g[vars[j] * n + samples[i]]);
  }
  fm_reader_close(r);
}

/* ---- hand-written inputs ------------------------------------------------ */

static char tmp_dir[256];

static void write_file(const char *name, const void *data, size_t n) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", tmp_dir, name);
  FILE *f = fopen(p, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fwrite(data, 1, n, f) == n);
  fclose(f);
}

static void write_text(const char *name, const char *text) { write_file(name, text, strlen(text)); }

static char *tmp_path(const char *name) {
  static char p[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", tmp_dir, name);
  return p[k];
}

static const char fam5[] = "f1 s1 0 0 1 -9\nf2 s2 0 0 2 -9\nf3 s3 0 0 1 -9\nf4 s4 0 0 2 -9\n"
                           "f5 s5 0 0 1 -9\n";
static const char bim3[] = "1\trs1\t0\t100\tA\tG\n1\trs2\t1.25e1\t200\tC\tT\n2 rs3 x 300 G GA\n";

static void test_bed_small(void) {
  /* 5 samples -> 2 bytes per variant. codes: 00=2, 01=NA, 10=1, 11=0 */
  const uint8_t bed[3 + 6] = {0x6c, 0x1b, 0x01, 0xE4, 0x03, 0xFF, 0x00, 0x1B, 0x01};
  write_text("a.fam", fam5);
  write_text("a.bim", bim3);
  write_file("a.bed", bed, sizeof bed);
  fm_reader *r = NULL;
  fm_err err;
  CHECK_OK(fm_fmt_bed_open(tmp_path("a.bed"), NULL, NULL, &r, &err), &err);
  if (!r) return;
  CHECK(r->info.n_samples == 5 && r->info.n_variants == 3);
  CHECK(strcmp(r->sample_ids[4], "s5") == 0);
  CHECK(r->info.has_cm);
  fm_gt_record rec;
  memset(&rec, 0, sizeof rec);
  static const int8_t want[3][5] = {{2, FM_GT_MISSING, 1, 0, 0},
                                    {0, 0, 0, 0, 2},
                                    {0, 1, FM_GT_MISSING, 2, FM_GT_MISSING}};
  for (int v = 0; v < 3; v++) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(memcmp(rec.hardcall, want[v], 5) == 0);
    /* column 3, centimorgans: "0", "1.25e1", and "x" (not a number: NAN) */
    CHECK(v == 2 ? isnan(rec.cm) : rec.cm == (v ? 12.5 : 0));
  }
  CHECK(strcmp(rec.id, "rs3") == 0 && strcmp(rec.alt, "G") == 0 && strcmp(rec.ref, "GA") == 0);
  CHECK(rec.pos == 300 && strcmp(rec.chrom, "2") == 0);
  CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
  fm_reader_close(r);

  /* truncated .bed */
  write_file("t.bed", bed, sizeof bed - 1);
  CHECK(fm_fmt_bed_open(tmp_path("t.bed"), tmp_path("a.bim"), tmp_path("a.fam"), &r, &err) ==
        FM_EFORMAT);
  CHECK(r == NULL && strstr(err.msg, "t.bed") && strstr(err.msg, "8 bytes"));
  CHECK(strstr(err.msg, "ends at byte offset 8, in variant 3 (1-based)") != NULL);
  CHECK(strstr(err.msg, "(5 samples in 'a.fam', 3 variants in 'a.bim')") != NULL);
  /* shorter than the magic */
  write_file("t2.bed", bed, 2);
  CHECK(fm_fmt_bed_open(tmp_path("t2.bed"), tmp_path("a.bim"), tmp_path("a.fam"), &r, &err) ==
        FM_EFORMAT);
  /* sample-major */
  uint8_t sm[sizeof bed];
  memcpy(sm, bed, sizeof bed);
  sm[2] = 0x00;
  write_file("sm.bed", sm, sizeof sm);
  CHECK(fm_fmt_bed_open(tmp_path("sm.bed"), tmp_path("a.bim"), tmp_path("a.fam"), &r, &err) ==
        FM_EFORMAT);
  CHECK(strstr(err.msg, "sample-major") != NULL);
  /* wrong magic */
  sm[2] = 0x01;
  sm[0] = 0x00;
  write_file("mg.bed", sm, sizeof sm);
  CHECK(fm_fmt_bed_open(tmp_path("mg.bed"), tmp_path("a.bim"), tmp_path("a.fam"), &r, &err) ==
        FM_EFORMAT);
  CHECK(strstr(err.msg, "magic") != NULL);
  /* .fam with 9 samples: 3 bytes per variant, the .bed is too small */
  write_text("b.fam", "a a 0 0 0 -9\nb b 0 0 0 -9\nc c 0 0 0 -9\nd d 0 0 0 -9\ne e 0 0 0 -9\n"
                      "f f 0 0 0 -9\ng g 0 0 0 -9\nh h 0 0 0 -9\ni i 0 0 0 -9\n");
  CHECK(fm_fmt_bed_open(tmp_path("a.bed"), tmp_path("a.bim"), tmp_path("b.fam"), &r, &err) ==
        FM_EFORMAT);
  CHECK(strstr(err.msg, "9 samples") && strstr(err.msg, "3 variants"));
  CHECK(strstr(err.msg, "ends at byte offset 9, in variant 3 (1-based)") &&
        strstr(err.msg, "b.fam'"));
  /* .bim with one line fewer: the .bed is too large */
  write_text("e.bim", "1\trs1\t0\t100\tA\tG\n1\trs2\t0\t200\tC\tT\n");
  CHECK(fm_fmt_bed_open(tmp_path("a.bed"), tmp_path("e.bim"), tmp_path("a.fam"), &r, &err) ==
        FM_EFORMAT);
  CHECK(strstr(err.msg, "the bytes from offset 7 on belong to no variant") &&
        strstr(err.msg, "2 variants in 'e.bim')"));
  /* bad .fam line */
  write_text("c.fam", "a a 0 0 0 -9\nb b 0 0\n");
  CHECK(fm_fmt_bed_open(tmp_path("a.bed"), tmp_path("a.bim"), tmp_path("c.fam"), &r, &err) ==
        FM_EFORMAT);
  CHECK(strstr(err.msg, "c.fam") && strstr(err.msg, "line 2"));
  /* missing file */
  CHECK(fm_fmt_bed_open(tmp_path("nope.bed"), NULL, NULL, &r, &err) == FM_EIO);
  CHECK(strstr(err.msg, "nope.fam") != NULL);
  /* bad .bim line surfaces at next() with file and line */
  write_text("d.bim", "1 rs1 0 100 A G\n1 rs2 0 200 C\n1 rs3 0 300 G T\n");
  CHECK_OK(fm_fmt_bed_open(tmp_path("a.bed"), tmp_path("d.bim"), tmp_path("a.fam"), &r, &err),
           &err);
  if (r) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(fm_reader_next(r, &rec, &err) == FM_EFORMAT);
    CHECK(strstr(err.msg, "d.bim") && strstr(err.msg, "line 2"));
    fm_reader_close(r);
  }
}

static void test_ped_small(void) {
  write_text("p.map", "1 rs1 0 100\n1 rs2 0 200\n1 rs3 0.5 300\n");
  /* rs1: A A / A C / C C / 0 0  -> second seen C, counts A 3 C 3: tie -> C
   * rs2: G G everywhere -> monomorphic, ALT "."
   * rs3: T TT / TT TT / 0 T / T T -> TT seen second, counts T 3 TT 3 -> TT */
  write_text("p.ped", "f1 s1 0 0 1 -9 A A G G T TT\n"
                      "f2 s2 0 0 2 -9 A C G G TT TT\n"
                      "\n"
                      "f3 s3 0 0 1 -9 C C G G 0 T\n"
                      "f4 s4 0 0 1 -9 0 0 G G T T\n");
  fm_reader *r = NULL;
  fm_err err;
  CHECK_OK(fm_fmt_ped_open(tmp_path("p.ped"), NULL, NULL, 0, &r, &err), &err);
  if (!r) return;
  CHECK(r->info.n_samples == 4 && r->info.n_variants == 3);
  CHECK(strcmp(r->sample_ids[2], "s3") == 0);
  fm_gt_record rec;
  memset(&rec, 0, sizeof rec);
  static const int8_t w1[4] = {0, 1, 2, FM_GT_MISSING}, w2[4] = {0, 0, 0, 0},
                      w3[4] = {1, 2, FM_GT_MISSING, 0};
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(memcmp(rec.hardcall, w1, 4) == 0 && strcmp(rec.alt, "C") == 0 &&
        strcmp(rec.ref, "A") == 0 && rec.pos == 100);
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(memcmp(rec.hardcall, w2, 4) == 0 && strcmp(rec.alt, ".") == 0 &&
        strcmp(rec.ref, "G") == 0);
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(memcmp(rec.hardcall, w3, 4) == 0 && strcmp(rec.alt, "TT") == 0);
  CHECK(r->info.has_cm && rec.cm == 0.5); /* the .map's column 3 */
  CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
  fm_reader_close(r);

  /* counted list: A for rs1 (flip), X for the monomorphic rs2, T for rs3 */
  const char *cnt[3] = {"A", "X", "T"};
  CHECK_OK(fm_fmt_ped_open(tmp_path("p.ped"), tmp_path("p.map"), cnt, 3, &r, &err), &err);
  if (!r) return;
  static const int8_t c1[4] = {2, 1, 0, FM_GT_MISSING}, c3[4] = {1, 0, FM_GT_MISSING, 2};
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(memcmp(rec.hardcall, c1, 4) == 0 && strcmp(rec.alt, "A") == 0);
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(memcmp(rec.hardcall, w2, 4) == 0 && strcmp(rec.alt, "X") == 0 &&
        strcmp(rec.ref, "G") == 0);
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(memcmp(rec.hardcall, c3, 4) == 0 && strcmp(rec.ref, "TT") == 0);
  fm_reader_close(r);

  /* counted allele not among two seen */
  const char *bad_cnt[3] = {"G", "G", "T"};
  CHECK(fm_fmt_ped_open(tmp_path("p.ped"), NULL, bad_cnt, 3, &r, &err) == FM_EMISMATCH);
  CHECK(strstr(err.msg, "rs1") != NULL);

  /* wrong field count: names file and line */
  write_text("w.ped", "f1 s1 0 0 1 -9 A A G G T T\nf2 s2 0 0 2 -9 A C G G T\n");
  write_text("w.map", "1 rs1 0 100\n1 rs2 0 200\n1 rs3 0 300\n");
  CHECK(fm_fmt_ped_open(tmp_path("w.ped"), NULL, NULL, 0, &r, &err) == FM_EFORMAT);
  CHECK(r == NULL && strstr(err.msg, "w.ped") && strstr(err.msg, "line 2") &&
        strstr(err.msg, "11 fields"));
  /* third allele */
  write_text("x.ped", "f1 s1 0 0 1 -9 A A G G T T\nf2 s2 0 0 2 -9 A C G G T A\n"
                      "f3 s3 0 0 2 -9 A A G G C T\n");
  write_text("x.map", "1 rs1 0 100\n1 rs2 0 200\n1 rs3 0 300\n");
  CHECK(fm_fmt_ped_open(tmp_path("x.ped"), NULL, NULL, 0, &r, &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "line 3") && strstr(err.msg, "rs3") && strstr(err.msg, "third"));
  /* bad .map */
  write_text("y.map", "1 rs1 0 100\n1 rs2 200\n");
  write_text("y.ped", "f1 s1 0 0 1 -9 A A G G\n");
  CHECK(fm_fmt_ped_open(tmp_path("y.ped"), NULL, NULL, 0, &r, &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "y.map") && strstr(err.msg, "line 2"));
}

static void test_tped_small(void) {
  write_text("q.tfam", "f1 s1 0 0 1 -9\nf2 s2 0 0 2 -9\nf3 s3 0 0 1 -9\n");
  write_text("q.tped", "1 rs1 2.5 100 A A A C C C\n"
                       "1 rs2 0 200 G G 0 G G G\n"
                       "1 rs3 0 300 T T T\n");
  fm_reader *r = NULL;
  fm_err err;
  CHECK_OK(fm_fmt_tped_open(tmp_path("q.tped"), NULL, NULL, 0, &r, &err), &err);
  if (!r) return;
  CHECK(r->info.n_samples == 3 && r->info.n_variants == 3);
  fm_gt_record rec;
  memset(&rec, 0, sizeof rec);
  static const int8_t w1[3] = {0, 1, 2}, w2[3] = {0, FM_GT_MISSING, 0};
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(memcmp(rec.hardcall, w1, 3) == 0 && strcmp(rec.alt, "C") == 0);
  CHECK(r->info.has_cm && rec.cm == 2.5);
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(memcmp(rec.hardcall, w2, 3) == 0 && strcmp(rec.alt, ".") == 0 && rec.cm == 0);
  CHECK(fm_reader_next(r, &rec, &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "q.tped") && strstr(err.msg, "line 3") && strstr(err.msg, "7 fields"));
  fm_reader_close(r);
  const char *cnt[2] = {"A", "G"};
  CHECK(fm_fmt_tped_open(tmp_path("q.tped"), NULL, cnt, 2, &r, &err) == FM_EMISMATCH);
  CHECK(fm_fmt_tped_open(tmp_path("q.tped"), tmp_path("none.tfam"), NULL, 0, &r, &err) ==
        FM_EIO);
}

static void cleanup_tmp(void) {
  static const char *names[] = {"a.fam", "a.bim", "a.bed", "t.bed", "t2.bed", "sm.bed",
                                "mg.bed", "b.fam", "c.fam", "d.bim", "p.map", "p.ped",
                                "w.ped", "w.map", "x.ped", "x.map", "y.map", "y.ped",
                                "q.tfam", "q.tped"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unlink(tmp_path(names[i]));
  rmdir(tmp_dir);
}

int main(void) {
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/fm_fmt_plink_XXXXXX");
  if (!mkdtemp(tmp_dir)) {
    fprintf(stderr, "cannot create a temporary folder\n");
    return 1;
  }
  have_fx = find_fixtures() && load_traw();
  if (have_fx) CHECK(T.n_var == 1097 && T.n_samples == 1126);
  FM_RUN(test_bed_small);
  FM_RUN(test_ped_small);
  FM_RUN(test_tped_small);
  FM_RUN(test_bed_fixture);
  FM_RUN(test_bed_fixture_stream);
  FM_RUN(test_bed_hardcall_only);
  FM_RUN(test_ped_fixture);
  FM_RUN(test_tped_fixture);
  if (have_fx) free_traw();
  cleanup_tmp();
  FM_TEST_END();
}
