/* Tests for fm_fmt_vcf.h. Oracles: plink2's .traw ALT counts of the 1kg
 * fixture (chr22 biallelic records of 1kg.vcf.gz and 1kg.bcf), and small VCFs
 * written here whose expected values are spelled out by hand from the
 * conventions in fm_fmt.h / docs/formats/vcf.md. */
#define _POSIX_C_SOURCE 200809L
#include "fm/fm_fmt_vcf.h"

#include "fm_test.h"
#include "fm_test_fmt.h"

#include <htslib/hts.h>
#include <htslib/hts_log.h>
#include <htslib/tbx.h>
#include <htslib/vcf.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MS FM_GT_MISSING

static char tmpdir[256];

static void tmp_path(char *buf, size_t n, const char *name) {
  snprintf(buf, n, "%s/%s", tmpdir, name);
}

static const char *HDR =
    "##fileformat=VCFv4.3\n"
    "##contig=<ID=22,length=51304566>\n"
    "##contig=<ID=X,length=155270560>\n"
    "##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">\n"
    "##FORMAT=<ID=GQ,Number=1,Type=Integer,Description=\"Genotype quality\">\n"
    "##FORMAT=<ID=DP,Number=1,Type=Integer,Description=\"Read depth\">\n"
    "##FORMAT=<ID=HQ,Number=2,Type=Integer,Description=\"Haplotype quality\">\n";
static const char *DS_HDR =
    "##FORMAT=<ID=DS,Number=A,Type=Float,Description=\"ALT dosage\">\n";

/* Write a plain VCF: the shared header (+ DS when with_ds), the #CHROM line
 * for the given tab-separated samples, then body (tab-separated lines). */
static void write_vcf(const char *path, int with_ds, const char *samples, const char *body) {
  FILE *f = fopen(path, "w");
  if (!f) {
    CHECK(!"cannot write a test VCF");
    return;
  }
  fputs(HDR, f);
  if (with_ds) fputs(DS_HDR, f);
  fprintf(f, "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t%s\n%s", samples, body);
  fclose(f);
}

/* Re-encode a VCF with htslib: mode "wb" (BCF) or "wz" (BGZF VCF), then index. */
static int convert(const char *in, const char *out, const char *mode) {
  htsFile *fi = hts_open(in, "r"), *fo = hts_open(out, mode);
  if (!fi || !fo) {
    if (fi) hts_close(fi);
    if (fo) hts_close(fo);
    return -1;
  }
  bcf_hdr_t *h = bcf_hdr_read(fi);
  bcf1_t *b = bcf_init();
  int rc = h && bcf_hdr_write(fo, h) == 0 ? 0 : -1;
  while (rc == 0 && bcf_read(fi, h, b) == 0) rc = bcf_write(fo, h, b) == 0 ? 0 : -1;
  bcf_destroy(b);
  if (h) bcf_hdr_destroy(h);
  hts_close(fi);
  if (hts_close(fo) != 0) rc = -1;
  if (rc == 0) rc = strcmp(mode, "wb") == 0 ? bcf_index_build(out, 14) : tbx_index_build(out, 0, &tbx_conf_vcf);
  return rc;
}

/* All records of a reader, copied. */
typedef struct recs {
  int n;
  int64_t n_samples;
  char chrom[64][16], id[64][64], ref[64][16], alt[64][16];
  int64_t pos[64];
  int8_t hc[64][8], hap[64][16];
  double ds[64][8];
  int is_phased[64], has_hap[64], has_ds[64];
} recs;

static fm_status read_all(const char *path, const char *region, recs *r, fm_reader **keep) {
  fm_err err;
  fm_reader *rd = NULL;
  memset(r, 0, sizeof *r);
  fm_status st = fm_fmt_vcf_open(path, region, &rd, &err);
  if (st != FM_OK) return st;
  r->n_samples = rd->info.n_samples;
  fm_gt_record rec;
  while ((st = fm_reader_next(rd, &rec, &err)) == FM_OK && r->n < 64) {
    int i = r->n++;
    CHECK(rec.n_samples == r->n_samples && rec.n_samples <= 8);
    snprintf(r->chrom[i], 16, "%s", rec.chrom);
    snprintf(r->id[i], 64, "%s", rec.id);
    snprintf(r->ref[i], 16, "%s", rec.ref);
    snprintf(r->alt[i], 16, "%s", rec.alt);
    r->pos[i] = rec.pos;
    r->is_phased[i] = rec.is_phased;
    r->has_hap[i] = rec.hap != NULL;
    r->has_ds[i] = rec.dosage != NULL;
    for (int64_t s = 0; s < rec.n_samples && s < 8; s++) {
      r->hc[i][s] = rec.hardcall[s];
      r->ds[i][s] = rec.dosage ? rec.dosage[s] : -9;
      r->hap[i][2 * s] = rec.hap ? rec.hap[2 * s] : -9;
      r->hap[i][2 * s + 1] = rec.hap ? rec.hap[2 * s + 1] : -9;
    }
  }
  if (st == FM_FMT_END) st = FM_OK;
  else fprintf(stderr, "read_all %s: %s\n", path, err.msg);
  if (keep) *keep = rd;
  else fm_reader_close(rd);
  return st;
}

static int recs_equal(const recs *a, const recs *b) {
  if (a->n != b->n || a->n_samples != b->n_samples) return 0;
  for (int i = 0; i < a->n; i++) {
    if (strcmp(a->chrom[i], b->chrom[i]) || strcmp(a->id[i], b->id[i]) ||
        strcmp(a->ref[i], b->ref[i]) || strcmp(a->alt[i], b->alt[i]) || a->pos[i] != b->pos[i] ||
        a->is_phased[i] != b->is_phased[i] || a->has_hap[i] != b->has_hap[i] ||
        a->has_ds[i] != b->has_ds[i])
      return 0;
    for (int s = 0; s < a->n_samples; s++) {
      if (a->hc[i][s] != b->hc[i][s] || a->hap[i][2 * s] != b->hap[i][2 * s] ||
          a->hap[i][2 * s + 1] != b->hap[i][2 * s + 1])
        return 0;
      if (!(a->ds[i][s] == b->ds[i][s] || (isnan(a->ds[i][s]) && isnan(b->ds[i][s])))) return 0;
    }
  }
  return 1;
}

static void check_hc(const recs *r, int i, const int8_t *want) {
  for (int s = 0; s < r->n_samples; s++) {
    if (r->hc[i][s] != want[s]) {
      fprintf(stderr, "record %d (%s %s) sample %d: hardcall %d, want %d\n", i, r->id[i],
              r->alt[i], s, r->hc[i][s], want[s]);
      fm_test_failed_checks++;
    }
  }
}

static void check_hap(const recs *r, int i, const int8_t *want) {
  for (int h = 0; h < 2 * r->n_samples; h++) {
    if (r->hap[i][h] != want[h]) {
      fprintf(stderr, "record %d (%s) slot %d: hap %d, want %d\n", i, r->id[i], h, r->hap[i][h],
              want[h]);
      fm_test_failed_checks++;
    }
  }
}

/* ---- small files -------------------------------------------------------- */

static const char *CHRX_BODY =
    "X\t1000\trsx1\tA\tG\t.\t.\t.\tGT\t0\t0|1\t1\n"
    "X\t2000\t.\tC\tT\t.\t.\t.\tGT\t1\t1|1\t0\n"
    "X\t3000\trsx3\tG\tA\t.\t.\t.\tGT\t.\t0|0\t1\n"
    "X\t4000\trsx4\tT\tC\t.\t.\t.\tGT\t0|1\t0|1\t1|1\n"
    "X\t5000\trsx5\tT\tC,G\t.\t.\t.\tGT\t2\t1|2\t1/0\n";

static void test_chrx_haploid_vcf_bcf(void) {
  char vcf[512], bcf[512], vgz[512];
  tmp_path(vcf, sizeof vcf, "chrx.vcf");
  tmp_path(bcf, sizeof bcf, "chrx.bcf");
  tmp_path(vgz, sizeof vgz, "chrx.vcf.gz");
  write_vcf(vcf, 0, "M1\tF1\tM2", CHRX_BODY);
  CHECK(convert(vcf, bcf, "wb") == 0);
  CHECK(convert(vcf, vgz, "wz") == 0);
  recs *a = malloc(sizeof *a), *b = malloc(sizeof *b), *c = malloc(sizeof *c);
  CHECK(read_all(vcf, NULL, a, NULL) == FM_OK);
  CHECK(read_all(bcf, NULL, b, NULL) == FM_OK);
  CHECK(read_all(vgz, NULL, c, NULL) == FM_OK);
  CHECK(a->n == 6 && a->n_samples == 3);
  CHECK(recs_equal(a, b));
  CHECK(recs_equal(a, c));
  {
    const int8_t w0[] = {0, 1, 2}, w1[] = {2, 2, 0}, w2[] = {MS, 0, 2};
    check_hc(a, 0, w0);
    check_hc(a, 1, w1);
    check_hc(a, 2, w2);
    /* haploid calls fill both slots; phased record (haploid + phased diploid) */
    const int8_t h0[] = {0, 0, 0, 1, 1, 1}, h2[] = {MS, MS, 0, 0, 1, 1};
    CHECK(a->is_phased[0] && a->has_hap[0] && a->is_phased[2]);
    check_hap(a, 0, h0);
    check_hap(a, 2, h2);
    CHECK(strcmp(a->id[1], "X:2000:C:T") == 0);
    /* rsx4: M1's 0|1 is a het of a sample haploid on X -> missing; M2 1|1 -> 2 */
    const int8_t w3[] = {MS, 1, 2}, h3[] = {MS, MS, 0, 1, 1, 1};
    check_hc(a, 3, w3);
    check_hap(a, 3, h3);
    /* split haploid: M1 '2' counts 2 in the G record, 0 in the C record;
     * M2's 1/0 is a het of a sample haploid on X: missing in both */
    const int8_t w4[] = {0, 1, MS}, w5[] = {2, 1, MS};
    CHECK(strcmp(a->alt[4], "C") == 0 && strcmp(a->alt[5], "G") == 0);
    CHECK(strcmp(a->id[4], "rsx5") == 0 && strcmp(a->id[5], "rsx5") == 0);
    check_hc(a, 4, w4);
    check_hc(a, 5, w5);
    CHECK(!a->is_phased[4] && !a->has_hap[4]); /* 1/0 is unphased */
  }
  /* region reads through the index, VCF.gz and BCF alike */
  CHECK(read_all(vgz, "X:2000-4000", c, NULL) == FM_OK);
  CHECK(read_all(bcf, "X:2000-4000", b, NULL) == FM_OK);
  CHECK(c->n == 3 && recs_equal(b, c) && c->pos[0] == 2000 && c->pos[2] == 4000);
  CHECK(read_all(bcf, "22", b, NULL) == FM_OK && b->n == 0);
  CHECK(read_all(vgz, "22", c, NULL) == FM_OK && c->n == 0);
  free(a);
  free(b);
  free(c);
}

static void test_male_het_chrx(void) {
  char vcf[512], bcf[512];
  tmp_path(vcf, sizeof vcf, "het.vcf");
  tmp_path(bcf, sizeof bcf, "het.bcf");
  write_vcf(vcf, 0, "M1\tF1",
            "22\t100\t.\tA\tG\t.\t.\t.\tGT\t0/1\t0/1\n"   /* diploid on 22: a het */
            "X\t100\t.\tA\tG\t.\t.\t.\tGT\t1\t0/1\n"      /* M1 haploid on X */
            "X\t200\t.\tA\tG\t.\t.\t.\tGT\t0/1\t0/1\n"    /* M1 het on X -> missing */
            "X\t300\t.\tA\tG\t.\t.\t.\tGT\t1/1\t1/0\n");  /* homozygous stays 2 */
  CHECK(convert(vcf, bcf, "wb") == 0);
  recs *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  CHECK(read_all(vcf, NULL, a, NULL) == FM_OK);
  CHECK(read_all(bcf, NULL, b, NULL) == FM_OK);
  CHECK(a->n == 4 && recs_equal(a, b));
  const int8_t w0[] = {1, 1}, w1[] = {2, 1}, w2[] = {MS, 1}, w3[] = {2, 1};
  check_hc(a, 0, w0);
  check_hc(a, 1, w1);
  check_hc(a, 2, w2);
  check_hc(a, 3, w3);
  for (int i = 0; i < a->n; i++)
    for (int s = 0; s < 2; s++) CHECK(a->hc[i][s] == MS || (a->hc[i][s] >= 0 && a->hc[i][s] <= 2));
  free(a);
  free(b);
}

static void test_half_calls(void) {
  char vcf[512], bcf[512];
  tmp_path(vcf, sizeof vcf, "half.vcf");
  tmp_path(bcf, sizeof bcf, "half.bcf");
  write_vcf(vcf, 0, "S1\tS2\tS3\tS4",
            "22\t100\th1\tA\tG\t.\t.\t.\tGT\t0|.\t1|.\t.|0\t.|1\n"
            "22\t200\th2\tA\tG\t.\t.\t.\tGT\t0|1\t.|.\t1|1\t0/.\n");
  CHECK(convert(vcf, bcf, "wb") == 0);
  recs *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  CHECK(read_all(vcf, NULL, a, NULL) == FM_OK);
  CHECK(read_all(bcf, NULL, b, NULL) == FM_OK);
  CHECK(a->n == 2 && recs_equal(a, b));
  const int8_t w0[] = {MS, MS, MS, MS}, h0[] = {0, MS, 1, MS, MS, 0, MS, 1};
  CHECK(a->is_phased[0] && a->has_hap[0]);
  check_hc(a, 0, w0);
  check_hap(a, 0, h0);
  const int8_t w1[] = {1, MS, 2, MS};
  check_hc(a, 1, w1);
  CHECK(!a->is_phased[1] && !a->has_hap[1]); /* 0/. is unphased */
  free(a);
  free(b);
}

static void test_format_fields(void) {
  char vcf[512], bcf[512];
  tmp_path(vcf, sizeof vcf, "fmt.vcf");
  tmp_path(bcf, sizeof bcf, "fmt.bcf");
  write_vcf(vcf, 0, "S1\tS2\tS3\tS4",
            "22\t100\tf1\tA\tG\t.\t.\t.\tGT:GQ:DP:HQ\t0|0:48:1:51,51\t1|0\t.\t./.:.:5\n"
            "22\t200\tf2\tA\tG\t.\t.\t.\tGT:GQ:DP:HQ\t0|1:.:.:.\t1|1\t.\t1|0:3\n");
  CHECK(convert(vcf, bcf, "wb") == 0);
  recs *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  CHECK(read_all(vcf, NULL, a, NULL) == FM_OK);
  CHECK(read_all(bcf, NULL, b, NULL) == FM_OK);
  CHECK(a->n == 2 && recs_equal(a, b));
  const int8_t w0[] = {0, 1, MS, MS}, w1[] = {1, 2, MS, 1};
  check_hc(a, 0, w0);
  check_hc(a, 1, w1);
  CHECK(!a->is_phased[0] && !a->has_hap[0] && !a->has_ds[0]); /* ./. is unphased */
  CHECK(a->is_phased[1] && a->has_hap[1]); /* '.' alone is a missing haploid call */
  const int8_t h1[] = {0, 1, 1, 1, MS, MS, 1, 0};
  check_hap(a, 1, h1);
  free(a);
  free(b);
}

static void test_multiallelic(void) {
  char vcf[512], bcf[512];
  tmp_path(vcf, sizeof vcf, "multi.vcf");
  tmp_path(bcf, sizeof bcf, "multi.bcf");
  write_vcf(vcf, 0, "S1\tS2\tS3\tS4",
            "22\t100\trs2\tA\tC\t.\t.\t.\tGT\t0/1\t1/.\t1/1\t0/0\n"
            "22\t200\trs5\tA\tC,G,T,AT\t.\t.\t.\tGT\t4/4\t0/3\t1|2\t./.\n"
            "22\t300\t.\tA\tC,G,T,AC,AG,AT\t.\t.\t.\tGT\t2/6\t1/.\t0/0\t6|6\n");
  CHECK(convert(vcf, bcf, "wb") == 0);
  recs *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  CHECK(read_all(vcf, NULL, a, NULL) == FM_OK);
  CHECK(read_all(bcf, NULL, b, NULL) == FM_OK);
  CHECK(a->n == 1 + 4 + 6 && recs_equal(a, b));
  const int8_t w0[] = {1, MS, 2, 0};
  check_hc(a, 0, w0);
  const char *alts5[] = {"C", "G", "T", "AT"};
  const int8_t w5[4][4] = {{0, 0, 1, MS}, {0, 0, 1, MS}, {0, 1, 0, MS}, {2, 0, 0, MS}};
  for (int k = 0; k < 4; k++) {
    CHECK(strcmp(a->id[1 + k], "rs5") == 0 && strcmp(a->alt[1 + k], alts5[k]) == 0);
    CHECK(a->pos[1 + k] == 200 && strcmp(a->ref[1 + k], "A") == 0);
    check_hc(a, 1 + k, w5[k]);
  }
  const char *alts7[] = {"C", "G", "T", "AC", "AG", "AT"};
  const int8_t w7[6][4] = {{0, MS, 0, 0}, {1, MS, 0, 0}, {0, MS, 0, 0},
                           {0, MS, 0, 0}, {0, MS, 0, 0}, {1, MS, 0, 2}};
  for (int k = 0; k < 6; k++) {
    char want_id[64];
    snprintf(want_id, sizeof want_id, "22:300:A:%s", alts7[k]);
    CHECK(strcmp(a->id[5 + k], want_id) == 0 && strcmp(a->alt[5 + k], alts7[k]) == 0);
    check_hc(a, 5 + k, w7[k]);
  }
  free(a);
  free(b);
}

static void test_dosage(void) {
  char vcf[512], bcf[512];
  tmp_path(vcf, sizeof vcf, "ds.vcf");
  tmp_path(bcf, sizeof bcf, "ds.bcf");
  write_vcf(vcf, 1, "S1\tS2\tS3\tS4",
            "22\t100\td1\tA\tG\t.\t.\t.\tGT:DS\t0/1:0.9\t1/1:1.95\t./.:.\t0/0:0.05\n"
            "22\t200\td2\tA\tC,G\t.\t.\t.\tGT:DS\t1/2:0.75,1.25\t0/0:0,0\t0/1\t2/2:0.1,1.8\n"
            "22\t300\td3\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\t0/0\t0/0\n"
            "X\t300\td4\tA\tG\t.\t.\t.\tGT:DS\t1:0.75\t0|1:1\t0:0\t1|1:2\n");
  CHECK(convert(vcf, bcf, "wb") == 0);
  fm_reader *rd = NULL;
  recs *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  CHECK(read_all(vcf, NULL, a, &rd) == FM_OK);
  CHECK(rd && rd->info.has_dosage && rd->info.is_phased && strcmp(rd->info.format, "vcf") == 0);
  fm_reader_close(rd);
  CHECK(read_all(bcf, NULL, b, &rd) == FM_OK);
  CHECK(rd && rd->info.has_dosage && strcmp(rd->info.format, "bcf") == 0);
  CHECK(rd && strcmp(rd->sample_ids[3], "S4") == 0);
  fm_reader_close(rd);
  CHECK(a->n == 5 && recs_equal(a, b));
  CHECK(a->has_ds[0] && a->has_ds[1] && a->has_ds[2] && !a->has_ds[3] && a->has_ds[4]);
  CHECK_CLOSE(a->ds[0][0], 0.9, 1e-6);
  CHECK_CLOSE(a->ds[0][1], 1.95, 1e-6);
  CHECK(isnan(a->ds[0][2]));
  CHECK_CLOSE(a->ds[0][3], 0.05, 1e-6);
  CHECK_CLOSE(a->ds[1][0], 0.75, 1e-6); /* ALT C */
  CHECK_CLOSE(a->ds[2][0], 1.25, 1e-6); /* ALT G */
  CHECK(a->ds[1][1] == 0.0 && a->ds[2][1] == 0.0);
  CHECK(isnan(a->ds[1][2]) && isnan(a->ds[2][2])); /* DS dropped from the sample */
  CHECK_CLOSE(a->ds[2][3], 1.8, 1e-6);
  /* haploid DS is doubled to the 0..2 scale of the 0/2 hardcall */
  CHECK_CLOSE(a->ds[4][0], 1.5, 1e-6);
  CHECK_CLOSE(a->ds[4][1], 1.0, 1e-6);
  CHECK(a->ds[4][2] == 0.0);
  CHECK_CLOSE(a->ds[4][3], 2.0, 1e-6);
  const int8_t w4[] = {2, 1, 0, 2};
  check_hc(a, 4, w4);
  /* no GT: hardcalls from DS, nearest count within 0.1 */
  tmp_path(vcf, sizeof vcf, "dsonly.vcf");
  write_vcf(vcf, 1, "S1\tS2\tS3\tS4",
            "22\t100\to1\tA\tG\t.\t.\t.\tDS\t0.05\t0.5\t1.92\t.\n"
            "22\t200\to2\tA\tG,T\t.\t.\t.\tDS\t1.1,0.85\t0,0\t.\t0.2,1.75\n");
  CHECK(read_all(vcf, NULL, a, NULL) == FM_OK);
  CHECK(a->n == 3 && a->has_ds[0] && !a->is_phased[0] && !a->has_hap[0]);
  const int8_t o0[] = {0, MS, 2, MS}, o1[] = {1, 0, MS, MS}, o2[] = {MS, 0, MS, MS};
  check_hc(a, 0, o0);
  check_hc(a, 1, o1);
  check_hc(a, 2, o2);
  CHECK_CLOSE(a->ds[2][3], 1.75, 1e-6);
  /* plink2's rule at its boundary, in 1/16384 units of the float32 DS (fm_fmt.h):
   * want = plink2 v2.00a3.5's calls of these values (--vcf ... dosage=DS
   * --make-bed, 2026-11-30); 0.100005 is 1638.48 units (called), 0.10004
   * 1639.06 (missing) */
  tmp_path(vcf, sizeof vcf, "dsrule.vcf");
  tmp_path(bcf, sizeof bcf, "dsrule.bcf");
  write_vcf(vcf, 1, "S1\tS2\tS3\tS4\tS5\tS6\tS7\tS8",
            "22\t100\tb1\tA\tG\t.\t.\t.\tDS\t0.1\t0.9\t1.1\t1.9\t0.100005\t0.10004\t1.100005\t1.899995\n"
            "22\t200\tb2\tA\tG\t.\t.\t.\tDS\t0.899995\t0.89996\t1.89996\t0.5\t0.100030\t0.10003\t0.1000305\t0.1000306\n");
  CHECK(convert(vcf, bcf, "wb") == 0);
  CHECK(read_all(vcf, NULL, a, NULL) == FM_OK);
  CHECK(read_all(bcf, NULL, b, NULL) == FM_OK);
  CHECK(a->n == 2 && recs_equal(a, b));
  const int8_t r0[] = {0, 1, 1, 2, 0, MS, 1, 2}, r1[] = {1, MS, MS, MS, MS, MS, MS, MS};
  check_hc(a, 0, r0);
  check_hc(a, 1, r1);
  free(a);
  free(b);
}

/* Edge cases: a sites-only VCF (0 samples), 1 sample, ALT '.', symbolic and
 * '*' alleles. */
static void test_edges(void) {
  char vcf[512];
  fm_err err;
  tmp_path(vcf, sizeof vcf, "sites.vcf");
  FILE *f = fopen(vcf, "w");
  if (f) {
    fprintf(f, "%s#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
               "22\t100\t.\tA\tG\t.\t.\t.\n22\t200\t.\tA\t.\t.\t.\t.\n"
               "22\t300\tr3\tA\tC,T\t.\t.\t.\n", HDR);
    fclose(f);
  }
  fm_reader *rd = NULL;
  CHECK_OK(fm_fmt_vcf_open(vcf, NULL, &rd, &err), &err);
  if (rd) {
    fm_gt_record rec;
    int n = 0;
    fm_status st;
    CHECK(rd->info.n_samples == 0 && !rd->info.has_dosage && rd->info.n_variants == -1);
    while ((st = fm_reader_next(rd, &rec, &err)) == FM_OK) {
      CHECK(rec.n_samples == 0 && rec.pos != 200 && !rec.is_phased && !rec.hap);
      n++;
    }
    CHECK(st == FM_FMT_END && n == 3);
    CHECK(fm_reader_next(rd, &rec, &err) == FM_FMT_END); /* stays at the end */
    fm_reader_close(rd);
  }
  tmp_path(vcf, sizeof vcf, "one.vcf");
  write_vcf(vcf, 0, "S1",
            "22\t100\t.\tA\tG\t.\t.\t.\tGT\t1|1\n"
            "22\t200\t.\tA\t.\t.\t.\t.\tGT\t0|0\n"
            "22\t300\tsv\tA\t<DEL>,*\t.\t.\t.\tGT\t1|2\n");
  recs *a = malloc(sizeof *a);
  CHECK(read_all(vcf, NULL, a, NULL) == FM_OK);
  CHECK(a->n == 3 && a->n_samples == 1);
  CHECK(a->hc[0][0] == 2 && a->is_phased[0] && a->hap[0][0] == 1 && a->hap[0][1] == 1);
  CHECK(strcmp(a->alt[1], "<DEL>") == 0 && strcmp(a->alt[2], "*") == 0);
  CHECK(a->hc[1][0] == 1 && a->hap[1][0] == 1 && a->hap[1][1] == 0);
  CHECK(a->hc[2][0] == 1 && a->hap[2][0] == 0 && a->hap[2][1] == 1);
  free(a);
}

static void test_errors(void) {
  fm_err err;
  fm_reader *rd = (fm_reader *)&err;
  char p[512], q[512];
  CHECK(fm_fmt_vcf_open(NULL, NULL, &rd, &err) == FM_EARG && rd == NULL);
  tmp_path(p, sizeof p, "absent.vcf");
  CHECK(fm_fmt_vcf_open(p, NULL, &rd, &err) == FM_EIO && rd == NULL);
  CHECK(strstr(err.msg, "absent.vcf") != NULL);
  tmp_path(p, sizeof p, "notvcf.txt");
  FILE *f = fopen(p, "w");
  if (f) {
    fputs("hello world\n1 2 3\n", f);
    fclose(f);
  }
  CHECK(fm_fmt_vcf_open(p, NULL, &rd, &err) == FM_EFORMAT && rd == NULL);
  CHECK(strstr(err.msg, "notvcf.txt: not a VCF or BCF file (byte offset 0: 68 65 6c 6c 6f 20 "
                        "\"hello \")") != NULL);
  /* binary bytes that htslib cannot place: a format error too, not an I/O error */
  tmp_path(p, sizeof p, "zeros.bcf");
  f = fopen(p, "wb");
  if (f) {
    static const unsigned char z[64] = {0x00, 0x00, 0x00, 0x04, 0x00, 0xff};
    fwrite(z, 1, sizeof z, f);
    fclose(f);
  }
  CHECK(fm_fmt_vcf_open(p, NULL, &rd, &err) == FM_EFORMAT && rd == NULL);
  CHECK(strstr(err.msg, "zeros.bcf: not a VCF or BCF file (byte offset 0: 00 00 00 04 00 ff)") != NULL);
  /* a header cut inside its #CHROM line names the header's lines */
  tmp_path(p, sizeof p, "cuthdr.vcf");
  f = fopen(p, "w");
  if (f) {
    fputs("##fileformat=VCFv4.2\n##contig=<ID=1>\n#CHROM\tPOS\tI", f);
    fclose(f);
  }
  CHECK(fm_fmt_vcf_open(p, NULL, &rd, &err) == FM_EFORMAT && rd == NULL);
  CHECK(strstr(err.msg, "cuthdr.vcf: cannot read the VCF header (lines 1 to 3, where the file "
                        "ends)") != NULL);
  /* a region needs an index */
  tmp_path(p, sizeof p, "plain.vcf");
  write_vcf(p, 0, "S1", "22\t100\t.\tA\tG\t.\t.\t.\tGT\t0/1\n");
  CHECK(fm_fmt_vcf_open(p, "22", &rd, &err) == FM_EARG && rd == NULL);
  CHECK(strstr(err.msg, "index") != NULL);
  /* a malformed record is named by file and CHROM:POS */
  tmp_path(q, sizeof q, "bad.vcf");
  write_vcf(q, 0, "S1\tS2",
            "22\t100\t.\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n"
            "22\t200\t.\tA\tG\t.\t.\t.\tGT:HQ\t0/1:1,x\t1/1\n");
  fm_status st = fm_fmt_vcf_open(q, NULL, &rd, &err);
  CHECK(st == FM_OK);
  if (st == FM_OK) {
    fm_gt_record rec;
    CHECK(fm_reader_next(rd, &rec, &err) == FM_OK);
    st = fm_reader_next(rd, &rec, &err);
    CHECK(st == FM_EFORMAT);
    if (st == FM_EFORMAT) CHECK(strstr(err.msg, "bad.vcf") && strstr(err.msg, "22:"));
    fm_reader_close(rd);
  }
  fm_reader_close(NULL);
}

/* Regression: htslib's threaded BGZF reader (used for whole-file VCF.gz
 * reads) ends a truncated file early, at a block boundary, instead of
 * failing: both counting and reading must report it, naming the file. */
static void test_truncated_bgzf(void) {
  char p[512], q[512];
  tmp_path(p, sizeof p, "big.vcf");
  tmp_path(q, sizeof q, "big.vcf.gz");
  enum { N_REC = 20000 };
  char *body = malloc((size_t)N_REC * 64);
  if (!body) return;
  size_t k = 0;
  uint32_t x = 12345u;
  for (int i = 0; i < N_REC; i++) {
    k += (size_t)sprintf(body + k, "22\t%d\t.\tA\tG\t.\t.\t.\tGT", 1000 + i);
    for (int s = 0; s < 8; s++) {
      x = x * 1103515245u + 12345u;
      k += (size_t)sprintf(body + k, "\t%u/%u", (x >> 16) & 1u, (x >> 17) & 1u);
    }
    body[k++] = '\n';
  }
  body[k] = '\0';
  write_vcf(p, 0, "S1\tS2\tS3\tS4\tS5\tS6\tS7\tS8", body);
  free(body);
  CHECK(convert(p, q, "wz") == 0);
  char bcf[512], cut[512];
  tmp_path(bcf, sizeof bcf, "big.bcf");
  CHECK(convert(p, bcf, "wb") == 0);
  struct stat sb;
  CHECK(stat(q, &sb) == 0 && sb.st_size > 3 * 65536 / 4);
  CHECK(truncate(q, sb.st_size / 2) == 0);
  fm_err err;
  fm_reader *rd = NULL;
  int64_t n = 0;
  CHECK_OK(fm_fmt_vcf_open(q, NULL, &rd, &err), &err);
  if (rd) {
    CHECK(fm_fmt_vcf_count(rd, &n, NULL, &err) == FM_EFORMAT);
    CHECK(strstr(err.msg, "big.vcf.gz: the compressed data after record 22:") &&
          strstr(err.msg, "truncated or corrupt BGZF block"));
    fm_reader_close(rd);
  }
  rd = NULL;
  CHECK_OK(fm_fmt_vcf_open(q, NULL, &rd, &err), &err);
  if (rd) {
    fm_gt_record rec;
    fm_status st;
    int64_t got = 0;
    while ((st = fm_reader_next(rd, &rec, &err)) == FM_OK) got++;
    CHECK(st == FM_EFORMAT && got < N_REC);
    CHECK(strstr(err.msg, "big.vcf.gz") != NULL);
    fm_reader_close(rd);
  }
  /* a region read through the index of the uncut file: its chunks lie past
   * the end, which must not read as an empty region */
  rd = NULL;
  CHECK(fm_fmt_vcf_open(q, "22:20000-21000", &rd, &err) == FM_EFORMAT && rd == NULL);
  CHECK(strstr(err.msg, "big.vcf.gz: the index puts region '22:20000-21000' at byte offset ") &&
        strstr(err.msg, "(truncated, or the index is not this file's)"));
  /* BCF cut at ten places: never a clean end with fewer records, and the
   * read error is named as such */
  FILE *in = fopen(bcf, "rb");
  CHECK(in != NULL && stat(bcf, &sb) == 0);
  unsigned char *bytes = in ? malloc((size_t)sb.st_size) : NULL;
  if (bytes && fread(bytes, 1, (size_t)sb.st_size, in) == (size_t)sb.st_size) {
    tmp_path(cut, sizeof cut, "cut.bcf");
    for (int c = 1; c <= 10; c++) {
      FILE *out = fopen(cut, "wb");
      if (!out) break;
      fwrite(bytes, 1, (size_t)(sb.st_size * c / 11), out);
      fclose(out);
      rd = NULL;
      if (fm_fmt_vcf_open(cut, NULL, &rd, &err) != FM_OK) continue; /* cut inside the header */
      fm_gt_record rec;
      fm_status st;
      int64_t got = 0;
      while ((st = fm_reader_next(rd, &rec, &err)) == FM_OK) got++;
      CHECK(st == FM_EFORMAT && got < N_REC &&
            strstr(err.msg, "cut.bcf: the compressed data after record 22:") &&
            strstr(err.msg, "(a truncated or corrupt BGZF block)"));
      fm_reader_close(rd);
    }
  }
  free(bytes);
  if (in) fclose(in);
}

/* Regression (fuzz_readers_vcf): a FORMAT column with empty keys ("::GT")
 * leaves GT stored with a type htslib 1.16's bcf_get_format_values does not
 * decode, and htslib called exit(1); the record is now FM_EFORMAT naming the
 * file and GT, and the reader can be closed. */
static void test_format_empty_keys(void) {
  char p[512];
  tmp_path(p, sizeof p, "emptykeys.vcf");
  write_vcf(p, 0, "S1\tS2",
            "22\t100\t.\tA\tC\t.\t.\t.\t::GT\t0|0\t1|0\n"
            "22\t200\t.\tA\tC\t.\t.\t.\tGT\t1|1\t0|0\n");
  fm_err err;
  fm_reader *rd = NULL;
  fm_status st = fm_fmt_vcf_open(p, NULL, &rd, &err);
  CHECK(st == FM_OK);
  if (st != FM_OK) return;
  fm_gt_record rec;
  st = fm_reader_next(rd, &rec, &err);
  CHECK(st == FM_EFORMAT);
  if (st == FM_EFORMAT) CHECK(strstr(err.msg, "emptykeys.vcf") && strstr(err.msg, "GT"));
  fm_reader_close(rd);
}

/* ---- the 1kg fixture against plink2's .traw ---------------------------- */

static char fixtures[1024];


static int find_fixtures(void) {
  const char *env = getenv("RFMALLOC_FIXTURES");
  char cand[3][1024];
  int nc = 0;
  if (env && *env) snprintf(cand[nc++], 1024, "%s", env);
  /* __FILE__ is <root>/core/tests/formats/fmt_vcf/test_fmt_vcf.c */
  const char *file = __FILE__, *slash = strrchr(file, '/');
  if (slash && file[0] == '/')
    snprintf(cand[nc++], 1024, "%.*s/../../../../../shared/fixtures", (int)(slash - file), file);
  snprintf(cand[nc++], 1024, "../../../shared/fixtures");
  for (int i = 0; i < nc; i++) {
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/genotypes/1kg_phase3_subset/1kg.vcf.gz", cand[i]);
    if (access(probe, R_OK) == 0) {
      memcpy(fixtures, cand[i], sizeof fixtures);
      fixtures[sizeof fixtures - 1] = 0;
      return 1;
    }
  }
  return 0;
}

typedef struct traw {
  int n_var, n_samples;
  char **id, **counted, **sample;
  double *gt; /* (n_samples, n_var) col-major: ALT counts or dosages, NaN = NA */
  int *seen;
  int hint;   /* next row to try first: records come in .traw order */
} traw;

static void traw_free(traw *t) {
  for (int i = 0; i < t->n_var; i++) free(t->id[i]), free(t->counted[i]);
  for (int s = 0; s < t->n_samples; s++) free(t->sample[s]);
  free(t->id), free(t->counted), free(t->sample), free(t->gt), free(t->seen);
}

static char *next_tok(char **p) {
  char *s = *p;
  if (!s) return NULL;
  char *e = strpbrk(s, "\t\n");
  if (e) {
    *e = 0;
    *p = e + 1;
  } else {
    *p = NULL;
  }
  return s;
}

static int traw_load(const char *path, traw *t) {
  memset(t, 0, sizeof *t);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t cap = 1 << 16;
  char *line = malloc(cap);
  int rc = -1, cap_var = 12000;
  if (!fgets(line, (int)cap, f)) goto done;
  {
    char *p = line;
    for (int k = 0; k < 6; k++) next_tok(&p);
    t->sample = malloc(sizeof(char *) * 4096);
    char *tok;
    while ((tok = next_tok(&p)) && *tok && t->n_samples < 4096) t->sample[t->n_samples++] = strdup(tok);
  }
  t->id = malloc(sizeof(char *) * (size_t)cap_var);
  t->counted = malloc(sizeof(char *) * (size_t)cap_var);
  t->gt = malloc(sizeof(double) * (size_t)t->n_samples * (size_t)cap_var);
  while (fgets(line, (int)cap, f) && t->n_var < cap_var) {
    char *p = line;
    next_tok(&p);
    char *id = next_tok(&p);
    next_tok(&p);
    next_tok(&p);
    char *counted = next_tok(&p);
    next_tok(&p);
    int v = t->n_var++;
    t->id[v] = strdup(id);
    t->counted[v] = strdup(counted);
    for (int s = 0; s < t->n_samples; s++) {
      char *tok = next_tok(&p);
      t->gt[(size_t)v * t->n_samples + s] = (!tok || tok[0] == 'N') ? NAN : strtod(tok, NULL);
    }
  }
  t->seen = calloc((size_t)t->n_var, sizeof(int));
  rc = 0;
done:
  free(line);
  fclose(f);
  return rc;
}

static int traw_find(traw *t, const char *id) {
  if (t->hint < t->n_var && strcmp(t->id[t->hint], id) == 0) return t->hint++;
  for (int v = 0; v < t->n_var; v++)
    if (strcmp(t->id[v], id) == 0) return (t->hint = v + 1) - 1;
  return -1;
}

static void check_against_traw(const char *path, traw *t) {
  fm_err err;
  fm_reader *rd = NULL;
  CHECK_OK(fm_fmt_vcf_open(path, "22", &rd, &err), &err);
  if (!rd) return;
  CHECK(rd->info.n_samples == t->n_samples);
  for (int s = 0; s < t->n_samples && s < rd->info.n_samples; s++) {
    const char *name = t->sample[s], *iid = rd->sample_ids[s];
    size_t ln = strlen(name), li = strlen(iid);
    CHECK(ln > li && strcmp(name + ln - li, iid) == 0 && name[ln - li - 1] == '_');
  }
  memset(t->seen, 0, sizeof(int) * (size_t)t->n_var);
  t->hint = 0;
  fm_gt_record rec;
  fm_status st;
  int n_bi = 0, n_split = 0, bad = 0, prev_pos = -1, multi_ok = 1;
  int16_t *multi_sum = calloc((size_t)t->n_samples, sizeof(int16_t));
  while ((st = fm_reader_next(rd, &rec, &err)) == FM_OK) {
    CHECK(strcmp(rec.chrom, "22") == 0);
    if (rec.pos == prev_pos || strchr(rec.id, ',') != NULL) {
      /* split record of a multi-allelic site (same POS as the previous one) */
    }
    int v = traw_find(t, rec.id);
    /* multi-allelic splits share the record's ID (CHROM:POS:REF:ALT1), which
     * the biallelic .traw does not list */
    char want_id[256];
    snprintf(want_id, sizeof want_id, "22:%lld:%s:%s", (long long)rec.pos, rec.ref, rec.alt);
    if (v < 0 || strcmp(rec.id, want_id) != 0 || rec.pos == prev_pos) {
      n_split++;
      for (int64_t s = 0; s < rec.n_samples; s++) {
        if (rec.pos != prev_pos) multi_sum[s] = 0;
        if (rec.hardcall[s] != MS) multi_sum[s] = (int16_t)(multi_sum[s] + rec.hardcall[s]);
        if (multi_sum[s] > 2) multi_ok = 0;
      }
      prev_pos = (int)rec.pos;
      continue;
    }
    prev_pos = (int)rec.pos;
    n_bi++;
    t->seen[v]++;
    int flip = strcmp(t->counted[v], rec.alt) != 0;
    CHECK(!flip || strcmp(t->counted[v], rec.ref) == 0);
    CHECK(rec.is_phased && rec.hap != NULL && rec.dosage == NULL);
    for (int64_t s = 0; s < rec.n_samples; s++) {
      double wd = t->gt[(size_t)v * t->n_samples + s];
      int8_t want = isnan(wd) ? MS : (int8_t)wd;
      if (flip && want != MS) want = (int8_t)(2 - want);
      bad += rec.hardcall[s] != want;
      if (rec.hap) bad += rec.hap[2 * s] + rec.hap[2 * s + 1] != rec.hardcall[s];
    }
  }
  CHECK(st == FM_FMT_END);
  if (st != FM_FMT_END) fprintf(stderr, "%s: %s\n", path, err.msg);
  if (bad) fprintf(stderr, "%s: %d mismatching calls\n", path, bad);
  CHECK(bad == 0);
  CHECK(n_bi == t->n_var);
  CHECK(multi_ok);
  CHECK(n_split > 0);
  for (int v = 0; v < t->n_var; v++) CHECK(t->seen[v] == 1);
  printf("%s: chr22 %d biallelic records match the .traw, %d split records\n", path, n_bi, n_split);
  free(multi_sum);
  fm_reader_close(rd);
}

static void test_1kg_chr22(void) {
  if (!find_fixtures()) {
    printf("SKIP: 1kg fixtures not found (set RFMALLOC_FIXTURES)\n");
    return;
  }
  char p[1200];
  traw t;
  snprintf(p, sizeof p, "%s/genotypes/1kg_phase3_subset/text/1kg_bi_chr22.traw", fixtures);
  if (traw_load(p, &t) != 0) {
    printf("SKIP: %s not readable\n", p);
    return;
  }
  CHECK(t.n_var == 1097 && t.n_samples == 1126);
  snprintf(p, sizeof p, "%s/genotypes/1kg_phase3_subset/1kg.vcf.gz", fixtures);
  check_against_traw(p, &t);
  snprintf(p, sizeof p, "%s/genotypes/1kg_phase3_subset/1kg.bcf", fixtures);
  check_against_traw(p, &t);
  traw_free(&t);
}

/* 1kg_phase1_chr22_dosage: DS of the upstream VCF, its BCF and plink2's DS
 * VCF against plink2's dosage .traw (ALT dosages), GT against the hap slots. */
/* all_phased: the upstream files are phased everywhere; plink2's DS export
 * writes GT from its own hardcalls (./. and 0/1 where DS is far from a count). */
static void check_dosage_traw(const char *path, const char *region, int max_records, traw *t,
                              int all_phased) {
  fm_err err;
  fm_reader *rd = NULL;
  CHECK_OK(fm_fmt_vcf_open(path, region, &rd, &err), &err);
  if (!rd) return;
  CHECK(rd->info.n_samples == t->n_samples && rd->info.has_dosage);
  memset(t->seen, 0, sizeof(int) * (size_t)t->n_var);
  t->hint = 0;
  fm_gt_record rec;
  fm_status st;
  int n = 0, bad_ds = 0, bad_gt = 0, n_frac = 0;
  double max_diff = 0;
  const int whole = !region && max_records <= 0;
  while ((max_records <= 0 || n < max_records) && (st = fm_reader_next(rd, &rec, &err)) == FM_OK) {
    int v = traw_find(t, rec.id);
    CHECK(v >= 0);
    if (v < 0 || !rec.dosage) {
      bad_ds++;
      continue;
    }
    n++;
    t->seen[v]++;
    CHECK(strcmp(t->counted[v], rec.alt) == 0);
    for (int64_t s = 0; s < rec.n_samples; s++) {
      double want = t->gt[(size_t)v * t->n_samples + s], d = fabs(rec.dosage[s] - want);
      if (!(d <= 1e-6)) bad_ds++;
      if (d > max_diff) max_diff = d;
      if (want != floor(want)) n_frac++;
      if (rec.hap ? (rec.hardcall[s] == MS ? rec.hap[2 * s] != MS && rec.hap[2 * s + 1] != MS
                                           : rec.hap[2 * s] + rec.hap[2 * s + 1] != rec.hardcall[s])
                  : all_phased)
        bad_gt++;
      /* where GT is called, it is the DS count within 0.1 (plink2 export) */
      if (!all_phased && rec.hardcall[s] != MS && fabs(rec.hardcall[s] - want) > 0.1 + 1e-6) bad_gt++;
    }
  }
  CHECK(st == FM_FMT_END || st == FM_OK);
  if (st != FM_FMT_END && st != FM_OK) fprintf(stderr, "%s: %s\n", path, err.msg);
  if ((whole && n != t->n_var) || bad_ds || bad_gt)
    fprintf(stderr, "%s: %d records, %d DS and %d GT mismatches\n", path, n, bad_ds, bad_gt);
  CHECK(bad_ds == 0 && bad_gt == 0 && n >= 1000);
  for (int v = 0; v < t->n_var; v++) CHECK(t->seen[v] <= 1);
  if (whole) {
    CHECK(n == t->n_var && n_frac == 3263); /* README: 3,263 non-integer DS values */
    for (int v = 0; v < t->n_var; v++) CHECK(t->seen[v] == 1);
  }
  printf("%s: %d records, DS max |diff| %.3g vs the .traw\n", path, n, max_diff);
  fm_reader_close(rd);
}

static void test_1kg_dosage(void) {
  if (!find_fixtures()) {
    printf("SKIP: 1kg dosage fixtures not found (set RFMALLOC_FIXTURES)\n");
    return;
  }
  char p[1200];
  traw t;
  snprintf(p, sizeof p, "%s/genotypes/1kg_phase1_chr22_dosage/1kg_p1_chr22.traw", fixtures);
  if (traw_load(p, &t) != 0) {
    printf("SKIP: %s not readable\n", p);
    return;
  }
  CHECK(t.n_var == 10376 && t.n_samples == 5);
  /* Whole file from the BCF (the fastest to parse); a part of the other two
   * keeps the test within its valgrind time budget. */
  snprintf(p, sizeof p, "%s/genotypes/1kg_phase1_chr22_dosage/1kg_p1_chr22.bcf", fixtures);
  check_dosage_traw(p, NULL, 0, &t, 1);
  snprintf(p, sizeof p, "%s/genotypes/1kg_phase1_chr22_dosage/1kg_p1_chr22.vcf.gz", fixtures);
  check_dosage_traw(p, "22:50500000-50650000", 0, &t, 1);
  snprintf(p, sizeof p, "%s/genotypes/1kg_phase1_chr22_dosage/1kg_p1_chr22.plink2_DS.vcf.gz", fixtures);
  check_dosage_traw(p, NULL, 2500, &t, 0);
  traw_free(&t);
}

/* ---- the fast GT parser against htslib's ------------------------------------ */

/* Every record of two readers agrees: metadata, hardcalls, phase, hap
 * slots, dosages; both end alike (status). Returns the records compared. */
static int64_t same_records(fm_reader *a, fm_reader *b) {
  fm_gt_record ra, rb;
  fm_err ea, eb;
  memset(&ea, 0, sizeof ea);
  memset(&eb, 0, sizeof eb);
  int64_t k = 0, bad = 0;
  for (;; k++) {
    const fm_status sa = fm_reader_next(a, &ra, &ea), sb = fm_reader_next(b, &rb, &eb);
    CHECK(sa == sb);
    if (sa != FM_OK || sb != FM_OK) break;
    const int64_t n = ra.n_samples;
    int same = n == rb.n_samples && !strcmp(ra.chrom, rb.chrom) && ra.pos == rb.pos &&
               !strcmp(ra.id, rb.id) && !strcmp(ra.ref, rb.ref) && !strcmp(ra.alt, rb.alt) &&
               ra.is_phased == rb.is_phased && !ra.hap == !rb.hap && !ra.dosage == !rb.dosage &&
               !memcmp(ra.hardcall, rb.hardcall, (size_t)n);
    if (same && ra.hap) same = !memcmp(ra.hap, rb.hap, 2 * (size_t)n);
    for (int64_t i = 0; same && ra.dosage && i < n; i++)
      same = ra.dosage[i] == rb.dosage[i] || (isnan(ra.dosage[i]) && isnan(rb.dosage[i]));
    if (!same && bad++ < 3) fprintf(stderr, "record %lld (%s:%lld) differs\n", (long long)k, ra.chrom, (long long)ra.pos);
  }
  CHECK(bad == 0);
  fm_reader_close(a);
  fm_reader_close(b);
  return k;
}

static int64_t same_files(const char *vcf, const char *other) {
  fm_reader *a = NULL, *b = NULL;
  fm_err err;
  CHECK_OK(fm_fmt_vcf_open(vcf, NULL, &a, &err), &err);
  CHECK_OK(fm_fmt_vcf_open(other, NULL, &b, &err), &err);
  if (!a || !b) {
    fm_reader_close(a);
    fm_reader_close(b);
    return -1;
  }
  return same_records(a, b);
}

static fm_status open_vcf_ud(void *ud, fm_reader **out, fm_err *err) {
  return fm_fmt_vcf_open((const char *)ud, NULL, out, err);
}

/* Text lines with FORMAT GT take the fast parser; htslib reads the BCF made
 * from the same text, so the two must agree record by record. The columns
 * cover the fast grammar and its edges (one-digit and longer alleles,
 * '.', haploid, half-calls, mixed separators inside and outside the
 * two-column steps, 2 and 5 alleles, a 3-allele record of 0/1 calls only,
 * chrX males, a het call of a haploid sample) and columns outside it
 * (ploidy 3, trailing bytes, empty allele, leading separator), which fall
 * back to htslib line by line. Then the fixtures' VCF against their BCF (written
 * by bcftools), and hardcall-only reads against full ones. */
static void test_fast_parser(void) {
  static const char *const body =
      "22\t100\ta\tA\tG\t.\t.\t.\tGT\t0|0\t0|1\t1|0\t1|1\t0|1\n"
      "22\t110\tb\tA\tG\t.\t.\t.\tGT\t0/0\t0/1\t1/1\t1/0\t0/0\n"
      "22\t120\tc\tA\tG\t.\t.\t.\tGT\t0|0\t0/1\t1|1\t1/0\t0|1\n"
      "22\t130\td\tA\tG,T\t.\t.\t.\tGT\t0|2\t2|1\t1|1\t2/2\t0|0\n"
      "22\t140\te\tA\tG\t.\t.\t.\tGT\t.|.\t./.\t.\t0|.\t.|1\n"
      "22\t160\t.\tA\tC,G,T,AA\t.\t.\t.\tGT\t4|3\t0|4\t00|1\t2/0\t1|0\n"
      "22\t165\tr\tA\tG,T\t.\t.\t.\tGT\t0|1\t1|1\t0|0\t1|0\t0|1\n"
      "22\t170\th\tA\tG\t.\t.\t.\tGT\t0|1|1\t0|1\t0|1\t0|1\t0|1\n"
      "22\t175\ti\tA\tG\t.\t.\t.\tGT\t1|.\t0|1\t1|1\t0|0\t0|1\n"
      "22\t190\tk\tA\tG\t.\t.\t.\tGT\t0|1\t0|1\t0|1\t0|1\t0|1\n"
      "22\t195\tq\tA\tG\t.\t.\t.\tGT\t0/1\t0/0\t1/0\t1/1\t0|1\n"
      "22\t196\ts\tA\tG\t.\t.\t.\tGT\t0|1\t0/0\t1|0\t1|1\t0|1\n"
      "X\t150\tf\tA\tG\t.\t.\t.\tGT\t0\t1\t0|1\t1|1\t.\n"
      "X\t180\tj\tA\tG\t.\t.\t.\tGT\t0|1\t0|1\t0|1\t0|1\t1\n"
      "X\t200\tl\tA\tG\t.\t.\t.\tGT\t0|1\t1|1\t0|0\t0|1\t1|0\n"
      "X\t210\tm\tA\tG\t.\t.\t.\tGT\t1\t0|1\t0\t0|1\t1|1\n"
      "X\t220\tn\tA\tG\t.\t.\t.\tGT\t0|1\t0|1\t1|0\t1|1\t0|0\n"
      "X\t230\to\tA\tG,C\t.\t.\t.\tGT\t0|1\t2|1\t1|0\t1|1\t0|0\n"
      "X\t240\tp\tA\tG\t.\t.\t.\tGT\t0/1\t0/1\t1/0\t1/1\t0/0\n";
  char vcf[512], bcf[512];
  tmp_path(vcf, sizeof vcf, "fast.vcf");
  tmp_path(bcf, sizeof bcf, "fast.bcf");
  write_vcf(vcf, 0, "s1\ts2\ts3\ts4\ts5", body);
  CHECK(convert(vcf, bcf, "wb") == 0);
  CHECK(same_files(vcf, bcf) == 25);
  for (int k = 0; k < 2; k++) { /* the count without genotypes, from the start and mid-site */
    fm_reader *r = NULL;
    fm_err err;
    int64_t n = -1;
    CHECK_OK(fm_fmt_vcf_open(k ? bcf : vcf, NULL, &r, &err), &err);
    fm_gt_record rec;
    for (int j = 0; r && j < 4; j++) CHECK_OK(fm_reader_next(r, &rec, &err), &err); /* d's 2nd ALT next */
    if (r) CHECK_OK(k ? fm_reader_count(r, &n, NULL, &err) : fm_fmt_vcf_count(r, &n, NULL, &err),
                    &err); /* the reader's count is the VCF one */
    CHECK(n == 21);
    fm_reader_close(r);
  }
  CHECK(fm_test_check_hardcall_only(open_vcf_ud, vcf) == 25);
  /* columns the fast grammar refuses and htslib reads (or refuses) alike */
  static const char *const odd[] = {"0|1x", "0|", "|0", "0||1", "0|1\t", "1234567|0"};
  for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++) {
    char line[256];
    snprintf(line, sizeof line, "22\t100\ta\tA\tG\t.\t.\t.\tGT\t0|0\t%s\n22\t200\tb\tA\tG\t.\t.\t.\tGT\t0|1\t1|1\n", odd[k]);
    write_vcf(vcf, 0, "s1\ts2", line);
    fm_reader *a = NULL;
    fm_err err;
    CHECK_OK(fm_fmt_vcf_open(vcf, NULL, &a, &err), &err);
    /* the reference: htslib's own parse of the same text, its alleles
     * within the record's (htslib reads "1234567|0" as that allele) */
    htsFile *f = hts_open(vcf, "r");
    bcf_hdr_t *h = f ? bcf_hdr_read(f) : NULL;
    bcf1_t *b = bcf_init();
    int ok = h && bcf_read(f, h, b) == 0 &&
             !(b->errcode & ~(BCF_ERR_CTG_UNDEF | BCF_ERR_TAG_UNDEF));
    if (ok) {
      int32_t *gt = NULL;
      int ngt = 0;
      const int got = bcf_get_genotypes(h, b, &gt, &ngt);
      for (int i = 0; i < got; i++)
        if (gt[i] != bcf_int32_vector_end && !bcf_gt_is_missing(gt[i]) &&
            bcf_gt_allele(gt[i]) >= b->n_allele)
          ok = 0;
      free(gt);
    }
    fm_gt_record rec;
    const fm_status st = a ? fm_reader_next(a, &rec, &err) : FM_EINTERNAL;
    CHECK((st == FM_OK) == ok);
    if (ok && st == FM_OK) {
      int32_t *gt = NULL;
      int ngt = 0;
      const int got = bcf_get_genotypes(h, b, &gt, &ngt);
      CHECK(got >= 2 && rec.hardcall[0] == 0);
      free(gt);
    }
    bcf_destroy(b);
    if (h) bcf_hdr_destroy(h);
    if (f) hts_close(f);
    fm_reader_close(a);
  }
  remove(vcf);
  remove(bcf);
  char fvcf[1200], fbcf[1200], csi[600];
  snprintf(csi, sizeof csi, "%.500s.csi", bcf);
  remove(csi);
  if (!find_fixtures()) {
    printf("SKIP: test_fast_parser on fixtures (fixtures not found)\n");
    return;
  }
  static const char *const sets[][2] = {{"1kg_phase3_subset/1kg.vcf.gz", "1kg_phase3_subset/1kg.bcf"},
                                        {"ceu_exon/ceu_exon.vcf.gz", "ceu_exon/ceu_exon.bcf"}};
  for (size_t k = 0; k < 2; k++) {
    snprintf(fvcf, sizeof fvcf, "%.1100s/genotypes/%s", fixtures, sets[k][0]);
    snprintf(fbcf, sizeof fbcf, "%.1100s/genotypes/%s", fixtures, sets[k][1]);
    CHECK(same_files(fvcf, fbcf) > 1000);
    CHECK(fm_test_check_hardcall_only(open_vcf_ud, fvcf) > 1000);
  }
}

/* Read path (region may be NULL) to its end, or count its records when
 * count: the status (FM_OK at the end) and *n_read records read; err holds
 * the message of a failure. */
static fm_status read_to_end(const char *path, const char *region, int count, int64_t *n_read,
                             fm_err *err) {
  fm_reader *rd = NULL;
  *n_read = 0;
  fm_status st = fm_fmt_vcf_open(path, region, &rd, err);
  if (st != FM_OK) return st;
  if (count) {
    st = fm_fmt_vcf_count(rd, n_read, NULL, err);
  } else {
    fm_gt_record rec;
    while ((st = fm_reader_next(rd, &rec, err)) == FM_OK) ++*n_read;
    if (st == FM_FMT_END) st = FM_OK;
  }
  fm_reader_close(rd);
  return st;
}

/* Copy the VCF in to the BCF out (indexed), the record at POS 200 moved to
 * 0-based position new_pos. */
static int write_bcf_pos(const char *in, const char *out, hts_pos_t new_pos) {
  htsFile *fi = hts_open(in, "r"), *fo = hts_open(out, "wb");
  bcf_hdr_t *h = fi ? bcf_hdr_read(fi) : NULL;
  bcf1_t *b = bcf_init();
  int rc = h && fo && bcf_hdr_write(fo, h) == 0 ? 0 : -1;
  while (rc == 0 && bcf_read(fi, h, b) == 0) {
    if (b->pos == 199) b->pos = new_pos;
    rc = bcf_write(fo, h, b) == 0 ? 0 : -1;
  }
  bcf_destroy(b);
  if (h) bcf_hdr_destroy(h);
  if (fi) hts_close(fi);
  if (fo && hts_close(fo) != 0) rc = -1;
  return rc;
}

/* Regression (QA): a POS that is not a non-negative integer read as POS 0,
 * and a GT allele index at or beyond the record's allele count as a missing
 * call, silently (plink2: "Invalid POS", "invalid GT field"). Both are now
 * FM_EFORMAT naming the file and the line (whole-file text reads), the
 * CHROM:POS and region (reads through the index) or the record number (BCF),
 * from the fast GT parser and htslib's alike; a malformed record is named by
 * its own line, not the record before it. */
static void test_bad_pos_and_alleles(void) {
  char p[512], q[512], msg[512];
  fm_err err;
  int64_t n = 0;
  tmp_path(p, sizeof p, "pos.vcf");
  /* POS: the header is 8 lines, so the second record is line 10 */
  static const char *const bad_pos[] = {"abc", "-5", "12x", "", "+5", " 5", "1e3"};
  for (size_t k = 0; k < sizeof bad_pos / sizeof bad_pos[0]; k++) {
    char body[256];
    snprintf(body, sizeof body,
             "22\t100\tr1\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n22\t%s\tr2\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n",
             bad_pos[k]);
    write_vcf(p, 0, "S1\tS2", body);
    snprintf(msg, sizeof msg,
             "pos.vcf: invalid POS '%s' (a non-negative integer expected) in the record at line 10 "
             "(22%s%s)", bad_pos[k], bad_pos[k][0] ? ":" : "", bad_pos[k]);
    for (int count = 0; count < 2; count++) {
      CHECK(read_to_end(p, NULL, count, &n, &err) == FM_EFORMAT && n == (count ? 0 : 1));
      CHECK(strstr(err.msg, msg) != NULL);
      if (!strstr(err.msg, msg)) fprintf(stderr, "  got: %s\n  want: %s\n", err.msg, msg);
    }
  }
  /* POS 0 (a telomere, VCF 4.3 section 1.6.1) reads */
  write_vcf(p, 0, "S1\tS2", "22\t0\tr1\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n");
  recs *a = malloc(sizeof *a);
  if (!a) return;
  CHECK(read_all(p, NULL, a, NULL) == FM_OK && a->n == 1 && a->pos[0] == 0);
  /* GT alleles: the fast parser (FORMAT GT), haploid, multi-allelic, and
   * htslib's parser (FORMAT GT:GQ) */
  static const char *const bad_gt[][3] = {
      {"22\t200\tr2\tA\tG\t.\t.\t.\tGT\t0/9\t1/1\n", "S1", "allele 9 but the record has 2 alleles (REF and 1 ALT)"},
      {"22\t200\tr2\tA\tG\t.\t.\t.\tGT\t0|1\t2\n", "S2", "allele 2 but the record has 2 alleles (REF and 1 ALT)"},
      {"22\t200\tr2\tA\tG,T\t.\t.\t.\tGT\t0/3\t1/2\n", "S1", "allele 3 but the record has 3 alleles (REF and 2 ALT)"},
      {"22\t200\tr2\tA\tG\t.\t.\t.\tGT\t0/1\t12|1\n", "S2", "allele 12 but the record has 2 alleles"},
      {"22\t200\tr2\tA\tG\t.\t.\t.\tGT:GQ\t0/1:30\t1/9:20\n", "S2", "allele 9 but the record has 2 alleles"},
  };
  for (size_t k = 0; k < sizeof bad_gt / sizeof bad_gt[0]; k++) {
    char body[256];
    snprintf(body, sizeof body, "22\t100\tr1\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n%s", bad_gt[k][0]);
    write_vcf(p, 0, "S1\tS2", body);
    snprintf(msg, sizeof msg, "pos.vcf: invalid GT field in the record at line 10 (22:200): sample %s has %s",
             bad_gt[k][1], bad_gt[k][2]);
    CHECK(read_to_end(p, NULL, 0, &n, &err) == FM_EFORMAT && n == 1);
    CHECK(strstr(err.msg, msg) != NULL);
    if (!strstr(err.msg, msg)) fprintf(stderr, "  got: %s\n  want: %s\n", err.msg, msg);
    /* counting reads no genotypes */
    CHECK(read_to_end(p, NULL, 1, &n, &err) == FM_OK && n == (k == 2 ? 3 : 2));
    /* BCF: the record number; VCF.gz through the index: CHROM:POS and the region */
    tmp_path(q, sizeof q, "pos.bcf");
    CHECK(convert(p, q, "wb") == 0);
    CHECK(read_to_end(q, NULL, 0, &n, &err) == FM_EFORMAT && n == 1);
    snprintf(msg, sizeof msg, "pos.bcf: invalid GT field in the record 2 (22:200): sample %s has %s",
             bad_gt[k][1], bad_gt[k][2]);
    CHECK(strstr(err.msg, msg) != NULL);
    if (!strstr(err.msg, msg)) fprintf(stderr, "  got: %s\n  want: %s\n", err.msg, msg);
    tmp_path(q, sizeof q, "pos.vcf.gz");
    CHECK(convert(p, q, "wz") == 0);
    CHECK(read_to_end(q, "22:150-300", 0, &n, &err) == FM_EFORMAT && n == 0);
    snprintf(msg, sizeof msg,
             "pos.vcf.gz: invalid GT field in the record at 22:200 in region '22:150-300': sample %s has %s",
             bad_gt[k][1], bad_gt[k][2]);
    CHECK(strstr(err.msg, msg) != NULL);
    if (!strstr(err.msg, msg)) fprintf(stderr, "  got: %s\n  want: %s\n", err.msg, msg);
  }
  /* alleles up to the last of 7 read (2/6, 1/.) */
  write_vcf(p, 0, "S1\tS2", "22\t200\tr2\tA\tC,G,T,AA,AC,AG\t.\t.\t.\tGT\t2/6\t1/.\n");
  CHECK(read_all(p, NULL, a, NULL) == FM_OK && a->n == 6 && a->hc[5][0] == 1 && a->hc[0][1] == MS);
  /* a BCF record whose POS is negative */
  write_vcf(p, 0, "S1\tS2", "22\t100\tr1\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n22\t200\tr2\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n");
  tmp_path(q, sizeof q, "pos.bcf");
  CHECK(write_bcf_pos(p, q, -6) == 0);
  for (int count = 0; count < 2; count++) {
    CHECK(read_to_end(q, NULL, count, &n, &err) == FM_EFORMAT && n == (count ? 0 : 1));
    CHECK(strstr(err.msg, "pos.bcf: invalid POS -5 (a non-negative integer expected) in the record 2 (after 22:100)") != NULL);
    if (!strstr(err.msg, "pos.bcf: invalid POS")) fprintf(stderr, "  got: %s (%lld)\n", err.msg, (long long)n);
  }
  CHECK(write_bcf_pos(p, q, -1) == 0); /* POS 0 */
  CHECK(read_all(q, NULL, a, NULL) == FM_OK && a->n == 2 && a->pos[1] == 0);
  /* a malformed record is named by its line (htslib names it at 22:300),
   * not by the record before it */
  write_vcf(p, 0, "S1\tS2",
            "22\t100\tr1\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n22\t200\tr2\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n"
            "22\t300\tr3\tA\tG\t.\t.\t.\tGT:HQ\t0/1:1,x\t1/1\n");
  CHECK(read_to_end(p, NULL, 0, &n, &err) == FM_EFORMAT && n == 2);
  CHECK(strstr(err.msg, "pos.vcf: malformed record at line 11 (22:300)") != NULL);
  free(a);
}

/* Regression (QA): a region htslib cannot parse ("22:abc") or an empty one
 * read as no records; both are FM_EARG naming the region and the file. A
 * well-formed region of a contig the index does not list reads as none. */
static void test_bad_regions(void) {
  char p[512], gz[512], bcf[512];
  fm_err err;
  int64_t n = 0;
  tmp_path(p, sizeof p, "reg.vcf");
  tmp_path(gz, sizeof gz, "reg.vcf.gz");
  tmp_path(bcf, sizeof bcf, "reg.bcf");
  write_vcf(p, 0, "S1\tS2",
            "22\t100\tr1\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n22\t200\tr2\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n"
            "X\t300\tr3\tA\tG\t.\t.\t.\tGT\t0/1\t1/1\n");
  CHECK(convert(p, gz, "wz") == 0);
  CHECK(convert(p, bcf, "wb") == 0);
  const char *files[] = {gz, bcf}, *names[] = {"reg.vcf.gz", "reg.bcf"};
  static const char *const bad[] = {"22:abc", "22:300-200", "22:100-abc", "22:1x", "9:abc", "9:5-1"};
  static const struct { const char *region; int64_t n; } good[] = {
      {"22", 2}, {"22:150-250", 1}, {"22:1,000-2,000", 0}, {"X:1-", 1}, {"9", 0}, {"9:1-1000", 0}, {"chr22", 0}};
  for (int f = 0; f < 2; f++) {
    char msg[256];
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
      fm_reader *rd = (fm_reader *)&err;
      CHECK(fm_fmt_vcf_open(files[f], bad[k], &rd, &err) == FM_EARG && rd == NULL);
      snprintf(msg, sizeof msg, "%s: region '%s' is malformed (expected CHROM, CHROM:BEG or CHROM:BEG-END",
               names[f], bad[k]);
      CHECK(strstr(err.msg, msg) != NULL);
      if (!strstr(err.msg, msg)) fprintf(stderr, "  got: %s\n  want: %s\n", err.msg, msg);
    }
    CHECK(read_to_end(files[f], "", 0, &n, &err) == FM_EARG);
    snprintf(msg, sizeof msg, "%s: region '' is empty", names[f]);
    CHECK(strstr(err.msg, msg) != NULL);
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
      CHECK(read_to_end(files[f], good[k].region, 0, &n, &err) == FM_OK && n == good[k].n);
      if (n != good[k].n) fprintf(stderr, "  %s %s: %lld records\n", names[f], good[k].region, (long long)n);
    }
  }
}

static void rm_tmpdir(void) {
  const char *names[] = {"chrx.vcf", "chrx.bcf", "chrx.bcf.csi", "chrx.vcf.gz", "chrx.vcf.gz.tbi",
                         "het.vcf", "het.bcf", "het.bcf.csi", "half.vcf", "half.bcf",
                         "half.bcf.csi", "fmt.vcf", "fmt.bcf", "fmt.bcf.csi", "multi.vcf",
                         "multi.bcf", "multi.bcf.csi", "ds.vcf", "ds.bcf", "ds.bcf.csi",
                         "notvcf.txt", "plain.vcf", "bad.vcf", "dsonly.vcf", "sites.vcf", "one.vcf",
                         "emptykeys.vcf", "pos.vcf", "pos.bcf", "pos.bcf.csi", "pos.vcf.gz",
                         "pos.vcf.gz.tbi", "reg.vcf", "reg.vcf.gz", "reg.vcf.gz.tbi", "reg.bcf",
                         "reg.bcf.csi"};
  char p[512];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    tmp_path(p, sizeof p, names[i]);
    remove(p);
  }
  rmdir(tmpdir);
}

int main(void) {
  hts_set_log_level(HTS_LOG_OFF);
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/fm_vcf_XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    fprintf(stderr, "cannot create a temporary directory\n");
    return 1;
  }
  FM_RUN(test_chrx_haploid_vcf_bcf);
  FM_RUN(test_male_het_chrx);
  FM_RUN(test_half_calls);
  FM_RUN(test_format_fields);
  FM_RUN(test_multiallelic);
  FM_RUN(test_dosage);
  FM_RUN(test_edges);
  FM_RUN(test_errors);
  FM_RUN(test_truncated_bgzf);
  FM_RUN(test_format_empty_keys);
  FM_RUN(test_1kg_chr22);
  FM_RUN(test_1kg_dosage);
  FM_RUN(test_fast_parser);
  FM_RUN(test_bad_pos_and_alleles);
  FM_RUN(test_bad_regions);
  rm_tmpdir();
  FM_TEST_END();
}
