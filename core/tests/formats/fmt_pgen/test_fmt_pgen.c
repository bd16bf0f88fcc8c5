/* PGEN reader (fm_fmt_pgen.h): every record of the 1000 Genomes fixture
 * 1kg_bi.pgen must equal the .bed decode of 1kg_bi.bed (same genotypes,
 * A1 = ALT; decoded here by plain bit arithmetic), with the .bim's IDs and
 * alleles, in one pass that also checks chr22 phase against the .haps
 * export slot by slot and that hap slots sum to the hardcalls; a
 * fixed-width (mode 0x02) file written here from the .bed must read back;
 * bad inputs name the file and the offset or variant. Fixture cases print
 * "SKIP: ..." when the fixtures are absent. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "fm/fm_fmt_pgen.h"
#include "fm_test.h"
#include "fm_test_fmt.h"

static char fx_dir[4096];
static int have_fx;
static char tmp_dir[256];

static int find_fixtures(void) {
  const char *env = getenv("RFMALLOC_FIXTURES");
  char cand[4096];
  if (env && env[0]) {
    snprintf(cand, sizeof cand, "%s/genotypes/1kg_phase3_subset", env);
  } else {
    char src[2048];
    snprintf(src, sizeof src, "%s", __FILE__);
    char *p = strstr(src, "/core/tests/formats/fmt_pgen/");
    if (!p) return 0;
    *p = '\0';
    snprintf(cand, sizeof cand, "%s/../shared/fixtures/genotypes/1kg_phase3_subset", src);
  }
  char probe[4200];
  snprintf(probe, sizeof probe, "%s/1kg_bi.pgen", cand);
  if (access(probe, R_OK) != 0) return 0;
  snprintf(fx_dir, sizeof fx_dir, "%s", cand);
  return 1;
}

static void fx_path(char *out, size_t n, const char *rel) { snprintf(out, n, "%s/%s", fx_dir, rel); }

/* ---- .bed oracle ---------------------------------------------------------- */

static const int8_t bed_val[4] = {2, FM_GT_MISSING, 1, 0}; /* A1 = ALT counts */

static void test_bi_equals_bed(void) {
  if (!have_fx) {
    printf("SKIP: test_bi_equals_bed (fixtures not found)\n");
    return;
  }
  char pg[4300], bed[4300], bim[4300];
  fx_path(pg, sizeof pg, "1kg_bi.pgen");
  fx_path(bed, sizeof bed, "1kg_bi.bed");
  fx_path(bim, sizeof bim, "1kg_bi.bim");
  fm_err err = {0};
  fm_reader *r = NULL;
  CHECK_OK(fm_fmt_pgen_open(pg, NULL, NULL, &r, &err), &err);
  if (!r) return;
  CHECK(strcmp(r->info.format, "pgen") == 0);
  CHECK(r->info.n_samples == 1126);
  CHECK(r->info.n_variants == 25161);
  CHECK(r->info.is_phased);
  CHECK(strcmp(r->sample_ids[0], "HG00096") == 0);
  FILE *fb = fopen(bed, "rb"), *fm = fopen(bim, "r");
  CHECK(fb && fm);
  if (!fb || !fm) {
    if (fb) fclose(fb);
    if (fm) fclose(fm);
    fm_reader_close(r);
    return;
  }
  const int64_t n = r->info.n_samples, cb = (n + 3) / 4;
  uint8_t *col = malloc((size_t)cb);
  int8_t bed4[256][4]; /* the 4 ALT counts of a .bed byte */
  for (int x = 0; x < 256; x++)
    for (int k = 0; k < 4; k++) bed4[x][k] = bed_val[(x >> (2 * k)) & 3];
  fseek(fb, 3, SEEK_SET);
  /* chr22 phase: .haps rows are "chr id pos ref alt" then 2 alleles per
   * sample, ALT = 1, in .pvar order */
  char hp[4300];
  fx_path(hp, sizeof hp, "text/1kg_bi_chr22.haps");
  FILE *fh = fopen(hp, "r");
  char *hline = NULL;
  size_t hcap = 0;
  int64_t n22 = 0, bad_hap = 0, unph22 = 0;
  char line[4096], c_chr[512], c_id[1024], c_a1[1024], c_a2[1024];
  long long c_pos;
  double c_cm;
  int64_t v = 0, bad_gt = 0, bad_meta = 0, n_phased = 0, bad_sum = 0;
  fm_gt_record rec;
  fm_status st;
  while ((st = fm_reader_next(r, &rec, &err)) == FM_OK) {
    if (fread(col, 1, (size_t)cb, fb) != (size_t)cb || !fgets(line, sizeof line, fm)) {
      bad_meta++;
      break;
    }
    if (sscanf(line, "%511s %1023s %lf %lld %1023s %1023s", c_chr, c_id, &c_cm, &c_pos, c_a1,
               c_a2) != 6 ||
        strcmp(c_chr, rec.chrom) || strcmp(c_id, rec.id) || c_pos != rec.pos ||
        strcmp(c_a1, rec.alt) || strcmp(c_a2, rec.ref))
      bad_meta++;
    for (int64_t j = 0; j < n / 4; j++) bad_gt += memcmp(rec.hardcall + 4 * j, bed4[col[j]], 4) != 0;
    for (int64_t i = n / 4 * 4; i < n; i++)
      bad_gt += rec.hardcall[i] != bed_val[(col[i >> 2] >> (2 * (i & 3))) & 3];
    if (rec.hap) {
      n_phased += rec.is_phased;
      for (int64_t i = 0; i < n; i++) {
        const int8_t a = rec.hap[2 * i], b = rec.hap[2 * i + 1];
        bad_sum += ((a | b) < 0 ? FM_GT_MISSING : a + b) != rec.hardcall[i];
      }
    }
    if (fh && strcmp(rec.chrom, "22") == 0) {
      n22++;
      if (getline(&hline, &hcap, fh) <= 0) {
        bad_hap++;
      } else if (!rec.hap) {
        unph22++;
      } else {
        char *p = hline;
        for (int k = 0; p && k < 5; k++) {
          p = strchr(p, ' ');
          if (p) p++;
        }
        for (int64_t j = 0; p && j < 2 * n; j++, p += 2)
          if (rec.hap[j] != (p[0] == '1' ? 1 : p[0] == '0' ? 0 : FM_GT_MISSING)) bad_hap++;
        if (!p) bad_hap++;
      }
    }
    v++;
  }
  CHECK(st == FM_FMT_END);
  if (st != FM_FMT_END) fprintf(stderr, "stopped at record %lld: %s\n", (long long)v, err.msg);
  CHECK(v == 25161);
  CHECK(bad_gt == 0);
  CHECK(bad_meta == 0);
  CHECK(bad_sum == 0);
  CHECK(n_phased > 1000);
  if (fh) {
    CHECK(n22 == 1097);
    CHECK(bad_hap == 0);
    CHECK(unph22 == 0);
    if (bad_hap || unph22)
      fprintf(stderr, "chr22 phase: %lld slot mismatches, %lld unphased records\n",
              (long long)bad_hap, (long long)unph22);
    fclose(fh);
  } else {
    printf("SKIP: chr22 phase against .haps (text/1kg_bi_chr22.haps not found)\n");
  }
  free(hline);
  if (bad_gt || bad_meta || bad_sum)
    fprintf(stderr, "pgen vs bed: %lld genotype, %lld metadata, %lld hap-sum mismatches\n",
            (long long)bad_gt, (long long)bad_meta, (long long)bad_sum);
  CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
  free(col);
  fclose(fb);
  fclose(fm);
  fm_reader_close(r);
}

/* ---- files written by the test ------------------------------------------- */

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  if (n) fwrite(data, 1, n, f);
  fclose(f);
}

static void write_text(const char *path, const char *s) { write_file(path, s, strlen(s)); }

static void tmp_path(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", tmp_dir, name);
}

/* Mode 0x02 from the first 300 .bed variants, .pvar without a header. */
static void test_fixed_width(void) {
  if (!have_fx) {
    printf("SKIP: test_fixed_width (fixtures not found)\n");
    return;
  }
  char bed[4300], bim[4300], fam[4300];
  fx_path(bed, sizeof bed, "1kg_bi.bed");
  fx_path(bim, sizeof bim, "1kg_bi.bim");
  fx_path(fam, sizeof fam, "1kg_bi.fam");
  const int64_t n = 1126, cb = (n + 3) / 4, nv = 300;
  uint8_t *buf = malloc((size_t)(12 + nv * cb));
  FILE *fb = fopen(bed, "rb");
  CHECK(fb != NULL);
  if (!fb) {
    free(buf);
    return;
  }
  fseek(fb, 3, SEEK_SET);
  CHECK(fread(buf + 12, 1, (size_t)(nv * cb), fb) == (size_t)(nv * cb));
  fclose(fb);
  /* bed codes 0 (hom A1) 1 (miss) 2 (het) 3 (hom A2) -> pgen 2 3 1 0 */
  static const uint8_t map[4] = {2, 3, 1, 0};
  for (int64_t k = 0; k < nv * cb; k++) {
    uint8_t x = buf[12 + k], y = 0;
    for (int s = 0; s < 4; s++) y |= (uint8_t)(map[(x >> (2 * s)) & 3] << (2 * s));
    buf[12 + k] = y;
  }
  /* padding bits of the last byte stay whatever: readers ignore them */
  const uint8_t hdr[12] = {0x6c, 0x1b, 0x02, (uint8_t)nv, (uint8_t)(nv >> 8), 0, 0,
                           (uint8_t)n, (uint8_t)(n >> 8), 0, 0, 0};
  memcpy(buf, hdr, 12);
  char pg[512], pv[512];
  tmp_path(pg, sizeof pg, "fw.pgen");
  tmp_path(pv, sizeof pv, "fw.pvar");
  write_file(pg, buf, (size_t)(12 + nv * cb));
  /* .pvar in .bim layout: first nv lines of the .bim */
  FILE *in = fopen(bim, "r"), *o = fopen(pv, "w");
  char line[4096];
  for (int64_t v = 0; in && o && v < nv && fgets(line, sizeof line, in); v++) fputs(line, o);
  if (in) fclose(in);
  if (o) fclose(o);
  fm_err err = {0};
  fm_reader *r = NULL;
  CHECK_OK(fm_fmt_pgen_open(pg, pv, fam, &r, &err), &err); /* .fam layout psam */
  if (r) {
    CHECK(r->info.n_variants == nv && !r->info.is_phased);
    CHECK(r->info.has_cm); /* the .bim layout's column 3 */
    fb = fopen(bed, "rb");
    fseek(fb, 3, SEEK_SET);
    uint8_t *col = malloc((size_t)cb);
    fm_gt_record rec;
    int64_t v = 0, bad = 0;
    while (fm_reader_next(r, &rec, &err) == FM_OK) {
      if (fread(col, 1, (size_t)cb, fb) != (size_t)cb) break;
      for (int64_t i = 0; i < n; i++)
        if (rec.hardcall[i] != bed_val[(col[i >> 2] >> (2 * (i & 3))) & 3]) bad++;
      CHECK(!rec.is_phased && rec.cm == 0);
      v++;
    }
    CHECK(v == nv);
    CHECK(bad == 0);
    free(col);
    fclose(fb);
    fm_reader_close(r);
  }
  free(buf);
}

/* A tiny variable-width file: 8 samples, 3 variants (types 0, 4 with a
 * difflist, 3 inverted LD), written byte by byte from the spec. */
static void test_tiny_records(void) {
  char pg[512], pv[512], ps[512];
  tmp_path(pg, sizeof pg, "tiny.pgen");
  tmp_path(pv, sizeof pv, "tiny.pvar");
  tmp_path(ps, sizeof ps, "tiny.psam");
  write_text(pv, "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tCM\n1\t10\ta\tA\tC\t0.25\n"
                 "1\t20\tb\tG\tT\tNA\n1\t30\tc\tT\tA\t1.5\n");
  write_text(ps, "#IID\tSEX\ns1\t1\ns2\t1\ns3\t2\ns4\t2\ns5\t1\ns6\t1\ns7\t1\ns8\t1\n");
  /* genotypes: v1 = 0 1 2 3 | 0 0 1 2 (type 0, bytes 0xe4 0x90)
   *            v2 = all 0 but s3 = 2, s8 = 1 (type 4 difflist: len 2, start id 2,
   *                 values 2,1 -> 0x06, delta 5)
   *            v3 = LD inverted from v2 (the last non-LD record) with s1 -> 1:
   *                 patched 1 0 2 0 0 0 0 1, inverted 1 2 0 2 2 2 2 1 (type 3,
   *                 difflist len 1 start 0 val 1) */
  const uint8_t body[] = {0xe4, 0x90, 0x02, 0x02, 0x06, 0x05, 0x01, 0x00, 0x01};
  uint8_t f[12 + 8 + 3 + 3 + sizeof body];
  const uint8_t hdr[12] = {0x6c, 0x1b, 0x10, 3, 0, 0, 0, 8, 0, 0, 0, 0x04};
  memcpy(f, hdr, 12);
  const uint64_t off = 12 + 8 + 3 + 3;
  for (int k = 0; k < 8; k++) f[12 + k] = (uint8_t)(off >> (8 * k));
  f[20] = 0x00, f[21] = 0x04, f[22] = 0x03; /* record types */
  f[23] = 2, f[24] = 4, f[25] = 3;          /* record lengths (1 byte each) */
  memcpy(f + off, body, sizeof body);
  write_file(pg, f, sizeof f);
  fm_err err = {0};
  fm_reader *r = NULL;
  CHECK_OK(fm_fmt_pgen_open(pg, NULL, NULL, &r, &err), &err);
  if (!r) return;
  CHECK(strcmp(r->sample_ids[7], "s8") == 0);
  CHECK(r->info.has_cm); /* the CM column */
  static const int8_t want[3][8] = {{0, 1, 2, -1, 0, 0, 1, 2},
                                    {0, 0, 2, 0, 0, 0, 0, 1},
                                    {1, 2, 0, 2, 2, 2, 2, 1}};
  fm_gt_record rec;
  for (int v = 0; v < 3; v++) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    for (int i = 0; i < 8; i++) {
      if (rec.hardcall[i] != want[v][i]) fprintf(stderr, "v%d s%d got %d\n", v, i, rec.hardcall[i]);
      CHECK(rec.hardcall[i] == want[v][i]);
    }
    CHECK(v == 1 ? isnan(rec.cm) : rec.cm == (v ? 1.5 : 0.25));
  }
  CHECK(strcmp(rec.id, "c") == 0 && rec.pos == 30 && strcmp(rec.alt, "A") == 0);
  CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
  fm_reader_close(r);

  /* truncated record data: the index points past the end */
  tmp_path(pg, sizeof pg, "trunc.pgen");
  tmp_path(pv, sizeof pv, "trunc.pvar");
  tmp_path(ps, sizeof ps, "trunc.psam");
  write_text(pv, "#CHROM\tPOS\tID\tREF\tALT\n1\t10\ta\tA\tC\n1\t20\tb\tG\tT\n1\t30\tc\tT\tA\n");
  write_text(ps, "#FID\tIID\nf s1\nf s2\nf s3\nf s4\nf s5\nf s6\nf s7\nf s8\n");
  write_file(pg, f, sizeof f - 2);
  r = NULL;
  memset(&err, 0, sizeof err);
  CHECK(fm_fmt_pgen_open(pg, NULL, NULL, &r, &err) == FM_EFORMAT);
  CHECK(r == NULL && strstr(err.msg, "trunc.pgen") && strstr(err.msg, "26"));
  uint8_t g[sizeof f];
  /* truncated header */
  write_file(pg, f, 16);
  CHECK(fm_fmt_pgen_open(pg, NULL, NULL, &r, &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "trunc.pgen") && strstr(err.msg, "offset 12"));
  /* a header claiming 2^32 - 1 variants: refused from the file size, before
   * anything is allocated from the count */
  memcpy(g, f, sizeof f);
  g[3] = g[4] = g[5] = g[6] = 0xff;
  write_file(pg, g, sizeof g);
  CHECK(fm_fmt_pgen_open(pg, NULL, NULL, &r, &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "trunc.pgen") && strstr(err.msg, "4294967295"));
  /* wrong magic */
  memcpy(g, f, sizeof f);
  g[1] = 0x1c;
  write_file(pg, g, sizeof g);
  CHECK(fm_fmt_pgen_open(pg, NULL, NULL, &r, &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "trunc.pgen") && strstr(err.msg, "magic") && strstr(err.msg, "offset 0"));
  /* unsupported storage mode */
  memcpy(g, f, sizeof f);
  g[2] = 0x03;
  write_file(pg, g, sizeof g);
  CHECK(fm_fmt_pgen_open(pg, NULL, NULL, &r, &err) == FM_EUNSUPPORTED);
  CHECK(strstr(err.msg, "trunc.pgen") && strstr(err.msg, "0x03"));
  /* unsupported record type (phased dosage without dosage) names the
   * variant and type */
  memcpy(g, f, sizeof f);
  g[21] = 0x84;
  write_file(pg, g, sizeof g);
  CHECK_OK(fm_fmt_pgen_open(pg, NULL, NULL, &r, &err), &err);
  if (r) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(fm_reader_next(r, &rec, &err) == FM_EUNSUPPORTED);
    CHECK(strstr(err.msg, "variant 2") && strstr(err.msg, "0x84"));
    fm_reader_close(r);
    r = NULL;
  }
  /* sample count mismatch */
  write_file(pg, f, sizeof f);
  write_text(ps, "#IID\ns1\n");
  CHECK(fm_fmt_pgen_open(pg, NULL, NULL, &r, &err) == FM_EMISMATCH);
  CHECK(r == NULL);
  CHECK(strstr(err.msg, ".psam' lists 1 samples but the header of '") &&
        strstr(err.msg, "trunc.pgen' says") && strstr(err.msg, "(byte offset 7)"));
  /* variant count mismatch */
  write_text(ps, "#FID\tIID\nf s1\nf s2\nf s3\nf s4\nf s5\nf s6\nf s7\nf s8\n");
  write_text(pv, "#CHROM\tPOS\tID\tREF\tALT\n1\t10\ta\tA\tC\n1\t20\tb\tG\tT\n");
  CHECK(fm_fmt_pgen_open(pg, NULL, NULL, &r, &err) == FM_EMISMATCH);
  CHECK(r == NULL);
  CHECK(strstr(err.msg, ".pvar' lists 2 variants but the header of '") &&
        strstr(err.msg, "trunc.pgen' says 3 (byte offset 3)"));
}

/* 1kg.pgen has 516 multi-allelic variants (3 to 5 alleles; main-track
 * types 0/1/2/4/6 with track 1 and phase): each splits into one record per
 * ALT, which must hash (FNV-1a 64 of the hardcall bytes and of the hap slot
 * bytes, missing = 0xff) to the values in 1kg_multi_split.tsv, computed from
 * plink2's VCF export of those variants (GT strings), independent of this
 * reader. */
static uint64_t fnv1a(const int8_t *b, int64_t n) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (int64_t i = 0; i < n; i++) {
    h ^= (uint8_t)b[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

static void test_multiallelic_split(void) {
  char pg[4300], tsv[2048];
  fx_path(pg, sizeof pg, "1kg.pgen");
  snprintf(tsv, sizeof tsv, "%s", __FILE__);
  char *slash = strrchr(tsv, '/');
  snprintf(slash ? slash + 1 : tsv, sizeof tsv - (size_t)(slash ? slash + 1 - tsv : 0), "%s",
           "1kg_multi_split.tsv");
  FILE *ft = fopen(tsv, "r");
  if (!have_fx || access(pg, R_OK) != 0 || !ft) {
    printf("SKIP: test_multiallelic_split (fixtures or %s not found)\n", tsv);
    if (ft) fclose(ft);
    return;
  }
  fm_err err = {0};
  fm_reader *r = NULL;
  CHECK_OK(fm_fmt_pgen_open(pg, NULL, NULL, &r, &err), &err);
  if (!r) {
    fclose(ft);
    return;
  }
  CHECK(r->info.n_variants == 25677 + 493 + 2 * 21 + 3 * 2);
  CHECK(!r->info.has_cm); /* no CM column */
  char line[1024], id[512] = "", alt[256] = "";
  unsigned long long hh = 0, hp = 0;
  int have = 0;
  int64_t n_rec = 0, n_split = 0, bad = 0;
  fm_gt_record rec;
  fm_status st;
  int64_t n_cm = 0;
  while ((st = fm_reader_next(r, &rec, &err)) == FM_OK) {
    n_rec++;
    n_cm += !isnan(rec.cm);
    while (!have && fgets(line, sizeof line, ft))
      if (line[0] != '#' && sscanf(line, "%511s %255s %llx %llx", id, alt, &hh, &hp) == 4) have = 1;
    if (!have || strcmp(rec.id, id) != 0) continue;
    have = 0;
    n_split++;
    const int ok = strcmp(rec.alt, alt) == 0 && rec.hap &&
                   fnv1a(rec.hardcall, rec.n_samples) == hh &&
                   fnv1a(rec.hap, 2 * rec.n_samples) == hp;
    if (!ok && bad++ < 3) fprintf(stderr, "split record %s ALT %s differs\n", id, alt);
  }
  CHECK(st == FM_FMT_END);
  if (st != FM_FMT_END) fprintf(stderr, "%s\n", err.msg);
  CHECK(n_rec == r->info.n_variants);
  CHECK(n_split == 1057);
  CHECK(n_cm == 0);
  CHECK(bad == 0);
  fclose(ft);
  fm_reader_close(r);
}

/* 1kg_p1_chr22.pgen (5 samples, 10,376 variants) stores dosages (record-type
 * bits 5-6 as bit array, difflist-free full track) and phased dosages
 * (bit 7, skipped): hardcalls, dosages and phased slots must equal plink2's
 * own DS export 1kg_p1_chr22.plink2_DS.vcf.gz (GT:DS, DS printed to 3
 * decimals or fewer; a missing GT may carry a dosage). */
static void test_dosage_equals_ds_vcf(void) {
  char pg[4300], vcf[4300];
  fx_path(pg, sizeof pg, "../1kg_phase1_chr22_dosage/1kg_p1_chr22.pgen");
  fx_path(vcf, sizeof vcf, "../1kg_phase1_chr22_dosage/1kg_p1_chr22.plink2_DS.vcf.gz");
  if (!have_fx || access(pg, R_OK) != 0 || access(vcf, R_OK) != 0) {
    printf("SKIP: test_dosage_equals_ds_vcf (fixtures not found)\n");
    return;
  }
  fm_err err = {0};
  fm_reader *r = NULL;
  CHECK_OK(fm_fmt_pgen_open(pg, NULL, NULL, &r, &err), &err);
  if (!r) return;
  CHECK(r->info.has_dosage && r->info.n_variants == 10376 && r->info.n_samples == 5);
  gzFile g = gzopen(vcf, "r");
  CHECK(g != NULL);
  char line[8192];
  fm_gt_record rec;
  fm_status st;
  int64_t v = 0, bad_hc = 0, bad_ds = 0, bad_hap = 0, n_frac = 0, n_hap = 0;
  while (g && (st = fm_reader_next(r, &rec, &err)) == FM_OK) {
    char *t = NULL;
    do {
      t = gzgets(g, line, sizeof line);
    } while (t && line[0] == '#');
    if (!t) {
      bad_hc++;
      break;
    }
    char *save = NULL;
    t = strtok_r(line, "\t\n", &save);
    for (int k = 0; t && k < 9; k++) t = strtok_r(NULL, "\t\n", &save);
    CHECK(rec.dosage != NULL);
    for (int64_t i = 0; t && rec.dosage && i < rec.n_samples; i++, t = strtok_r(NULL, "\t\n", &save)) {
      const int x = t[0] == '.' ? -1 : t[0] - '0', y = t[2] == '.' ? -1 : t[2] - '0';
      bad_hc += rec.hardcall[i] != ((x < 0 || y < 0) ? FM_GT_MISSING : x + y);
      const char *c = strchr(t, ':');
      const double ds = (c && c[1] != '.') ? atof(c + 1) : NAN, d = rec.dosage[i];
      bad_ds += isnan(ds) != isnan(d) || (!isnan(d) && fabs(d - ds) > 1e-3);
      n_frac += !isnan(d) && d != floor(d);
      if (rec.hap && x >= 0 && y >= 0 && t[1] == '|') {
        n_hap++;
        bad_hap += rec.hap[2 * i] != x || rec.hap[2 * i + 1] != y;
      }
    }
    v++;
  }
  CHECK(st == FM_FMT_END);
  if (st != FM_FMT_END) fprintf(stderr, "%s\n", err.msg);
  CHECK(v == 10376);
  CHECK(bad_hc == 0 && bad_ds == 0 && bad_hap == 0);
  CHECK(n_frac > 1000 && n_hap > 1000);
  if (bad_hc || bad_ds || bad_hap)
    fprintf(stderr, "dosage pgen vs DS vcf: %lld hardcall, %lld dosage, %lld hap mismatches\n",
            (long long)bad_hc, (long long)bad_ds, (long long)bad_hap);
  if (g) gzclose(g);
  fm_reader_close(r);
}

/* ceu_exon_bi.pgen (90 samples, 1,346 variants, 7% missing, unphased) uses
 * 4-bit record types and 1-byte record lengths: every record must equal the
 * .bed decode of ceu_exon_bi.bed. */
static void test_ceu_exon_equals_bed(void) {
  char pg[4300], bed[4300];
  fx_path(pg, sizeof pg, "../ceu_exon/ceu_exon_bi.pgen");
  fx_path(bed, sizeof bed, "../ceu_exon/ceu_exon_bi.bed");
  if (!have_fx || access(pg, R_OK) != 0 || access(bed, R_OK) != 0) {
    printf("SKIP: test_ceu_exon_equals_bed (fixtures not found)\n");
    return;
  }
  fm_err err = {0};
  fm_reader *r = NULL;
  CHECK_OK(fm_fmt_pgen_open(pg, NULL, NULL, &r, &err), &err);
  if (!r) return;
  FILE *fb = fopen(bed, "rb");
  CHECK(fb != NULL);
  const int64_t n = r->info.n_samples, cb = (n + 3) / 4;
  uint8_t *col = malloc((size_t)cb);
  fm_gt_record rec;
  fm_status st = FM_OK;
  int64_t v = 0, bad = 0, n_miss = 0;
  if (fb) fseek(fb, 3, SEEK_SET);
  while (fb && (st = fm_reader_next(r, &rec, &err)) == FM_OK) {
    if (fread(col, 1, (size_t)cb, fb) != (size_t)cb) {
      bad++;
      break;
    }
    for (int64_t i = 0; i < n; i++) {
      bad += rec.hardcall[i] != bed_val[(col[i >> 2] >> (2 * (i & 3))) & 3];
      n_miss += rec.hardcall[i] == FM_GT_MISSING;
    }
    v++;
  }
  CHECK(st == FM_FMT_END);
  CHECK(v == 1346 && v == r->info.n_variants);
  CHECK(bad == 0);
  CHECK(n_miss > 5000);
  free(col);
  if (fb) fclose(fb);
  fm_reader_close(r);
}

/* Inputs found by fuzz_readers_pgen. */
/* Hardcall-only reads (packed main track, phase and dosage tracks
 * skipped) equal full reads on every PGEN fixture and the tiny file, which
 * hold record types 0, 1, 2, 3, 4, 6 and multi-allelic records. */
static fm_status open_pgen_ud(void *ud, fm_reader **out, fm_err *err) {
  return fm_fmt_pgen_open((const char *)ud, NULL, NULL, out, err);
}

static fm_status open_fixed_width_ud(void *ud, fm_reader **out, fm_err *err) {
  char pg[512], pv[512], fam[4300];
  (void)ud;
  tmp_path(pg, sizeof pg, "fw.pgen");
  tmp_path(pv, sizeof pv, "fw.pvar");
  fx_path(fam, sizeof fam, "1kg_bi.fam");
  return fm_fmt_pgen_open(pg, pv, fam, out, err);
}

static void test_hardcall_only(void) {
  char pg[4400];
  tmp_path(pg, sizeof pg, "tiny.pgen"); /* written by test_tiny_records */
  CHECK(fm_test_check_hardcall_only(open_pgen_ud, pg) == 3);
  if (!have_fx) {
    printf("SKIP: test_hardcall_only on fixtures (fixtures not found)\n");
    return;
  }
  static const char *const rel[] = {"1kg.pgen", "1kg_bi.pgen", "../ceu_exon/ceu_exon.pgen",
                                    "../ceu_exon/ceu_exon_bi.pgen",
                                    "../1kg_phase1_chr22_dosage/1kg_p1_chr22.pgen"};
  for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++) {
    fx_path(pg, sizeof pg, rel[k]);
    CHECK(fm_test_check_hardcall_only(open_pgen_ud, pg) > 1000);
  }
  CHECK(fm_test_check_hardcall_only(open_fixed_width_ud, NULL) == 300); /* mode 0x02 */
}

static void test_fuzz_regressions(void) {
  char pg[512], pv[512], ps[512];
  tmp_path(pg, sizeof pg, "fz.pgen");
  tmp_path(pv, sizeof pv, "fz.pvar");
  tmp_path(ps, sizeof ps, "fz.psam");
  const uint8_t hdr[12] = {0x6c, 0x1b, 0x02, 0, 0, 0, 0, 1, 0, 0, 0, 0}; /* 0 variants, 1 sample */
  write_file(pg, hdr, sizeof hdr);
  write_text(pv, "#CHROM\tPOS\tID\tREF\tALT\n");
  /* a .psam line with no fields (a NUL byte) read its first token unset */
  write_file(ps, "\0\n", 2);
  fm_err err = {0};
  fm_reader *r = NULL;
  CHECK(fm_fmt_pgen_open(pg, pv, ps, &r, &err) == FM_EFORMAT);
  CHECK(r == NULL && strstr(err.msg, "fz.psam") && strstr(err.msg, "line 1"));
  /* a 0-byte first record (nothing read yet) is truncated, not a NULL base */
  write_text(ps, "#IID\ns1\n");
  write_text(pv, "#CHROM\tPOS\tID\tREF\tALT\n1\t10\ta\tA\tC\n");
  const uint8_t zero[12 + 8 + 1 + 1] = {0x6c, 0x1b, 0x10, 1, 0, 0, 0, 1, 0, 0, 0, 0x04,
                                        22, 0, 0, 0, 0, 0, 0, 0, 0x00, 0};
  write_file(pg, zero, sizeof zero);
  CHECK_OK(fm_fmt_pgen_open(pg, pv, ps, &r, &err), &err);
  if (r) {
    fm_gt_record rec;
    CHECK(fm_reader_next(r, &rec, &err) == FM_EFORMAT);
    CHECK(strstr(err.msg, "fz.pgen") && strstr(err.msg, "variant 1"));
    fm_reader_close(r);
    r = NULL;
  }
  /* a block offset of 2^64 - 16 with 32 bytes of records wrapped past the
   * file-size check (then a failed seek, FM_EIO) */
  uint8_t wrap[12 + 8 + 1 + 1 + 1] = {0x6c, 0x1b, 0x10, 1, 0, 0, 0, 1, 0, 0, 0, 0x04};
  for (int k = 0; k < 8; k++) wrap[12 + k] = k ? 0xff : 0xf0;
  wrap[21] = 0x20; /* record length */
  write_file(pg, wrap, sizeof wrap);
  CHECK(fm_fmt_pgen_open(pg, pv, ps, &r, &err) == FM_EFORMAT);
  CHECK(r == NULL && strstr(err.msg, "fz.pgen") && strstr(err.msg, "variant block 1"));
}

int main(void) {
  have_fx = find_fixtures();
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/fm_test_pgen_XXXXXX");
  if (!mkdtemp(tmp_dir)) {
    fprintf(stderr, "cannot create a temporary directory\n");
    return 1;
  }
  FM_RUN(test_bi_equals_bed);
  FM_RUN(test_fixed_width);
  FM_RUN(test_tiny_records);
  FM_RUN(test_multiallelic_split);
  FM_RUN(test_dosage_equals_ds_vcf);
  FM_RUN(test_ceu_exon_equals_bed);
  FM_RUN(test_hardcall_only);
  FM_RUN(test_fuzz_regressions);
  const char *names[] = {"fw.pgen", "fw.pvar", "tiny.pgen", "tiny.pvar", "tiny.psam",
                         "trunc.pgen", "trunc.pvar", "trunc.psam", "fz.pgen", "fz.pvar", "fz.psam"};
  char p[512];
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    tmp_path(p, sizeof p, names[k]);
    unlink(p);
  }
  rmdir(tmp_dir);
  FM_TEST_END();
}
