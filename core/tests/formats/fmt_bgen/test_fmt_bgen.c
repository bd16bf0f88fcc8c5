/* test_fmt_bgen.c: BGEN reader (fm_fmt_bgen.h).
 * Oracles: plink2's ALT-count .traw (chr22) and the PLINK 1 .bed (chrX) of
 * ../shared/fixtures/genotypes/1kg_phase3_subset; tiny BGENs written here. */
#define _POSIX_C_SOURCE 200809L
#include "fm/fm_fmt_bgen.h"
#include "fm_test.h"
#include "fm_test_files.h"
#include "fm_test_fmt.h"

#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define N_SAMPLES 1126
#define N_CHR22 1097
#define N_BEFORE_22 23047 /* chr1..21 biallelic records (fixture README) */
#define N_CHRX 1017
#define N_TOTAL 25161

static char fixdir[1024];

static int find_fixtures(void) {
  return fm_test_fixture(fixdir, sizeof fixdir, "genotypes/1kg_phase3_subset",
                         "text/1kg_bi_chr22.traw");
}

/* ---- oracles -------------------------------------------------------------- */

static int8_t *traw;   /* N_CHR22 x N_SAMPLES ALT counts */
static char **traw_id; /* N_CHR22 variant IDs */

static int load_traw(void) {
  char path[1200];
  snprintf(path, sizeof path, "%s/text/1kg_bi_chr22.traw", fixdir);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  traw = malloc((size_t)N_CHR22 * N_SAMPLES);
  traw_id = calloc(N_CHR22, sizeof(char *));
  size_t cap = 1 << 16;
  char *line = malloc(cap);
  int ok = traw && traw_id && line && fgets(line, (int)cap, f); /* header */
  for (int v = 0; ok && v < N_CHR22; v++) {
    ssize_t len = getline(&line, &cap, f);
    if (len <= 0) { ok = 0; break; }
    char *p = line;
    for (int c = 0; c < 6; c++) {
      char *tab = strchr(p, '\t');
      if (!tab) { ok = 0; break; }
      if (c == 1) {
        traw_id[v] = malloc((size_t)(tab - p) + 1);
        memcpy(traw_id[v], p, (size_t)(tab - p));
        traw_id[v][tab - p] = '\0';
      }
      p = tab + 1;
    }
    for (int i = 0; ok && i < N_SAMPLES; i++) {
      if (*p == 'N') { traw[(size_t)v * N_SAMPLES + i] = FM_GT_MISSING; p += 2; continue; }
      traw[(size_t)v * N_SAMPLES + i] = (int8_t)(*p - '0');
      p += 2;
    }
  }
  free(line);
  fclose(f);
  return ok;
}

static void free_traw(void) {
  if (traw_id)
    for (int v = 0; v < N_CHR22; v++) free(traw_id[v]);
  free(traw_id);
  free(traw);
}

/* chrX ALT counts from the .bed (A1 = ALT): the last N_CHRX variants. */
static int8_t *bedx;

static int load_bed_chrx(void) {
  char path[1200];
  snprintf(path, sizeof path, "%s/1kg_bi.bed", fixdir);
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  const size_t nb = (N_SAMPLES + 3) / 4;
  uint8_t *col = malloc(nb);
  bedx = malloc((size_t)N_CHRX * N_SAMPLES);
  int ok = col && bedx &&
           fseek(f, (long)(3 + (size_t)(N_TOTAL - N_CHRX) * nb), SEEK_SET) == 0;
  static const int8_t code[4] = {2, FM_GT_MISSING, 1, 0};
  for (int v = 0; ok && v < N_CHRX; v++) {
    if (fread(col, 1, nb, f) != nb) { ok = 0; break; }
    for (int i = 0; i < N_SAMPLES; i++)
      bedx[(size_t)v * N_SAMPLES + i] = code[(col[i / 4] >> (2 * (i % 4))) & 3];
  }
  free(col);
  fclose(f);
  return ok;
}

/* ---- fixtures --------------------------------------------------------------- */

static int hc_mismatch, dos_bad, hap_bad, n_unphased_hap;

/* Hardcalls equal truth; dosages within quant of the hardcall; hap slots
 * (phased records, or unphased ones without a heterozygote) sum to it. */
static void check_record(const fm_gt_record *rec, const int8_t *truth, double quant) {
  int has_het = 0;
  for (int i = 0; i < N_SAMPLES; i++) {
    int8_t h = rec->hardcall[i];
    has_het |= h == 1;
    if (h != truth[i]) hc_mismatch++;
    if (h == FM_GT_MISSING || !(fabs(rec->dosage[i] - h) <= quant)) dos_bad++;
    if (rec->hap) {
      int8_t a = rec->hap[2 * i], b = rec->hap[2 * i + 1];
      if (a == FM_GT_MISSING || b == FM_GT_MISSING || a + b != h) hap_bad++;
    }
  }
  if (rec->is_phased && !rec->hap) hap_bad++;
  if (!rec->is_phased && rec->hap) {
    n_unphased_hap++;
    if (has_het) hap_bad++;
  }
  if (!rec->is_phased && !rec->hap && !has_het) hap_bad++;
}

/* genome_wide: 0 chr22 only (v1.1); 1 chr22 then chrX decoded; 2 chr22, chrX skipped. */
static void check_fixture(const char *rel, double quant, int genome_wide, int expect_phased) {
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", fixdir, rel);
  fm_err err = {0};
  fm_reader *r = NULL;
  fm_status st = fm_fmt_bgen_open(path, &r, &err);
  CHECK_OK(st, &err);
  if (st != FM_OK) return;
  CHECK(r->info.n_samples == N_SAMPLES);
  CHECK(r->info.n_variants == (genome_wide ? N_TOTAL : N_CHR22));
  CHECK(r->info.has_dosage == 1);
  CHECK(strcmp(r->info.format, "bgen") == 0);
  if (genome_wide) CHECK(r->sample_ids && strcmp(r->sample_ids[0], "HG00096") == 0);
  else CHECK(r->sample_ids == NULL); /* plink2's v1.1 export has no sample block */
  if (genome_wide) {
    int64_t skipped = -1;
    CHECK_OK(fm_fmt_bgen_skip(r, N_BEFORE_22, &skipped, &err), &err);
    CHECK(skipped == N_BEFORE_22);
  }
  hc_mismatch = dos_bad = hap_bad = n_unphased_hap = 0;
  int n_phased = 0, n_meta_bad = 0;
  fm_gt_record rec;
  /* phased: every chr22 record goes into a haplotype destination (fm_dest_put) */
  uint64_t nbytes = 0;
  uint8_t *hapd = NULL;
  if (expect_phased) {
    CHECK_OK(fm_dest_bytes(FM_DEST_HAPLOTYPE, N_SAMPLES, N_CHR22, &nbytes, &err), &err);
    hapd = calloc(nbytes ? nbytes : 1, 1);
  }
  fm_dest hd = {FM_DEST_HAPLOTYPE, hapd, N_SAMPLES, N_CHR22, NULL, 0};
  for (int v = 0; v < N_CHR22; v++) {
    memset(&rec, 0, sizeof rec);
    st = fm_reader_next(r, &rec, &err);
    CHECK_OK(st, &err);
    if (st != FM_OK) break;
    if (strcmp(rec.chrom, "22") != 0 || strcmp(rec.id, traw_id[v]) != 0 || rec.n_samples != N_SAMPLES)
      n_meta_bad++;
    /* IDs are CHROM:POS:REF:ALT */
    char want[512];
    snprintf(want, sizeof want, "22:%lld:%s:%s", (long long)rec.pos, rec.ref, rec.alt);
    if (strcmp(want, rec.id) != 0) n_meta_bad++;
    n_phased += rec.is_phased != 0;
    check_record(&rec, traw + (size_t)v * N_SAMPLES, quant);
    if (hapd) CHECK_OK(fm_dest_put(&hd, v, &rec, &err), &err);
  }
  if (hapd) { /* allele bits of each sample sum to the .traw count; no missing bits */
    const size_t cb = (size_t)(nbytes / (2 * N_CHR22));
    int n_bad = 0;
    for (int v = 0; v < N_CHR22; v++) {
      const uint8_t *al = hapd + (size_t)v * cb, *ms = hapd + (size_t)(N_CHR22 + v) * cb;
      for (int i = 0; i < N_SAMPLES; i++) {
        int h0 = 2 * i, h1 = 2 * i + 1;
        int a = ((al[h0 / 8] >> (h0 % 8)) & 1) + ((al[h1 / 8] >> (h1 % 8)) & 1);
        int m = ((ms[h0 / 8] >> (h0 % 8)) & 1) + ((ms[h1 / 8] >> (h1 % 8)) & 1);
        if (m || a != traw[(size_t)v * N_SAMPLES + i]) n_bad++;
      }
    }
    CHECK(n_bad == 0);
    free(hapd);
  }
  CHECK(n_meta_bad == 0);
  CHECK(hc_mismatch == 0);
  CHECK(dos_bad == 0);
  CHECK(hap_bad == 0);
  if (expect_phased) {
    CHECK(n_phased == N_CHR22 - 15); /* README: 15 all-homozygous stored unphased */
    CHECK(n_unphased_hap == 15);      /* ... whose slots come from the hardcalls */
  } else {
    CHECK(n_phased == 0);
  }
  CHECK(r->info.is_phased == (expect_phased != 0));
  if (hc_mismatch || dos_bad || hap_bad || n_meta_bad)
    fprintf(stderr, "%s: chr22 %d hardcall, %d dosage, %d hap, %d metadata mismatches\n", rel,
            hc_mismatch, dos_bad, hap_bad, n_meta_bad);
  if (genome_wide == 2) {
    int64_t skipped = -1;
    CHECK_OK(fm_fmt_bgen_skip(r, N_CHRX, &skipped, &err), &err);
    CHECK(skipped == N_CHRX);
  } else if (genome_wide) { /* chrX: males haploid (0/2), against the .bed */
    hc_mismatch = dos_bad = hap_bad = 0;
    int n_bad_chrom = 0;
    for (int v = 0; v < N_CHRX; v++) {
      st = fm_reader_next(r, &rec, &err);
      CHECK_OK(st, &err);
      if (st != FM_OK) break;
      if (strcmp(rec.chrom, "X") != 0 && strcmp(rec.chrom, "23") != 0) n_bad_chrom++;
      check_record(&rec, bedx + (size_t)v * N_SAMPLES, quant);
    }
    CHECK(n_bad_chrom == 0);
    CHECK(hc_mismatch == 0);
    CHECK(dos_bad == 0);
    CHECK(hap_bad == 0);
    if (hc_mismatch || dos_bad || hap_bad || n_bad_chrom)
      fprintf(stderr, "%s: chrX %d hardcall, %d dosage, %d hap, %d chrom mismatches\n", rel, hc_mismatch,
              dos_bad, hap_bad, n_bad_chrom);
  }
  st = fm_reader_next(r, &rec, &err);
  CHECK(st == FM_FMT_END);
  fm_reader_close(r);
}

static int have_fixtures;

static void test_fixture_8bit(void) { if (have_fixtures) check_fixture("1kg_bi.8bit.bgen", 0.5 / 255 + 1e-12, 1, 0); }
static void test_fixture_16bit(void) { if (have_fixtures) check_fixture("1kg_bi.16bit.bgen", 0.5 / 65535 + 1e-12, 2, 0); }
static void test_fixture_zstd(void) { if (have_fixtures) check_fixture("1kg_bi.16bit.zstd.bgen", 0.5 / 65535 + 1e-12, 2, 0); }
static void test_fixture_phased(void) { if (have_fixtures) check_fixture("1kg_bi.phased.8bit.bgen", 0.5 / 255 + 1e-12, 1, 1); }
static void test_fixture_v11(void) { if (have_fixtures) check_fixture("text/1kg_bi_chr22.v11.bgen", 1.0 / 32768 + 1e-12, 0, 0); }

/* FM_TEST_BIG=1 (slow under valgrind): every record of each genome-wide file
 * decodes, and its hardcalls equal the .bed's ALT counts (A1 = ALT). */
static void test_fixture_full_decode(void) {
  if (!have_fixtures || !getenv("FM_TEST_BIG")) return;
  static const char *files[] = {"1kg_bi.8bit.bgen", "1kg_bi.16bit.bgen", "1kg_bi.16bit.zstd.bgen",
                                "1kg_bi.phased.8bit.bgen"};
  static const int8_t code[4] = {2, FM_GT_MISSING, 1, 0};
  const size_t nb = (N_SAMPLES + 3) / 4;
  uint8_t *col = malloc(nb);
  char bed[1200];
  snprintf(bed, sizeof bed, "%s/1kg_bi.bed", fixdir);
  for (int f = 0; f < 4; f++) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", fixdir, files[f]);
    fm_err err = {0};
    fm_reader *r = NULL;
    CHECK_OK(fm_fmt_bgen_open(path, &r, &err), &err);
    FILE *bf = fopen(bed, "rb");
    CHECK(bf && fseek(bf, 3, SEEK_SET) == 0);
    if (!r || !bf) {
      fm_reader_close(r);
      if (bf) fclose(bf);
      continue;
    }
    fm_gt_record rec;
    int64_t n = 0, bad = 0, mism = 0;
    fm_status st;
    while ((st = fm_reader_next(r, &rec, &err)) == FM_OK) {
      n++;
      if (fread(col, 1, nb, bf) != nb) { mism++; continue; }
      for (int i = 0; i < N_SAMPLES; i++) {
        if (rec.hardcall[i] == FM_GT_MISSING || isnan(rec.dosage[i])) bad++;
        if (rec.hardcall[i] != code[(col[i / 4] >> (2 * (i % 4))) & 3]) mism++;
      }
    }
    CHECK(st == FM_FMT_END);
    CHECK(n == N_TOTAL);
    CHECK(bad == 0); /* the fixture has no missing calls */
    CHECK(mism == 0);
    if (mism) fprintf(stderr, "%s: %lld hardcalls differ from the .bed\n", files[f], (long long)mism);
    fclose(bf);
    fm_reader_close(r);
  }
  free(col);
}

/* ---- tiny BGENs written here -------------------------------------------------- */

typedef struct buf {
  uint8_t *p;
  size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n) {
  if (n == 0) return;
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, src, n);
  b->n += n;
}
static void put8(buf *b, unsigned x) { uint8_t t = (uint8_t)x; put(b, &t, 1); }
static void put16(buf *b, unsigned x) { put8(b, x & 255); put8(b, (x >> 8) & 255); }
static void put32(buf *b, uint32_t x) { put16(b, x & 0xffff); put16(b, x >> 16); }
static void putstr16(buf *b, const char *s) { put16(b, (unsigned)strlen(s)); put(b, s, strlen(s)); }
static void putstr32(buf *b, const char *s) { put32(b, (uint32_t)strlen(s)); put(b, s, strlen(s)); }

/* Bit-packed little-endian values of nb bits. */
typedef struct bits {
  buf *b;
  uint64_t acc;
  int n;
} bits;
static void putbits(bits *w, uint64_t x, int nb) {
  w->acc |= x << w->n;
  w->n += nb;
  while (w->n >= 8) {
    put8(w->b, (unsigned)(w->acc & 255));
    w->acc >>= 8;
    w->n -= 8;
  }
}
static void flushbits(bits *w) {
  if (w->n > 0) put8(w->b, (unsigned)(w->acc & 255));
  w->acc = 0;
  w->n = 0;
}

#define TN 4 /* samples of the tiny files */

/* Layout-2 probability data of the three tiny variants. */
static void tiny_geno(int v, buf *g) {
  bits w = {g, 0, 0};
  if (v == 0) { /* biallelic, unphased, 8 bits */
    put32(g, TN); put16(g, 2); put8(g, 2); put8(g, 2);
    put8(g, 2); put8(g, 2); put8(g, 0x82); put8(g, 2); /* sample 3 missing */
    put8(g, 0); put8(g, 8);
    static const unsigned pr[TN][2] = {{255, 0}, {0, 255}, {0, 0}, {10, 20}};
    for (int i = 0; i < TN; i++) { putbits(&w, pr[i][0], 8); putbits(&w, pr[i][1], 8); }
  } else if (v == 1) { /* biallelic, phased, 16 bits; ploidy 2, 1, 2, 0 */
    put32(g, TN); put16(g, 2); put8(g, 0); put8(g, 2);
    put8(g, 2); put8(g, 1); put8(g, 2); put8(g, 0);
    put8(g, 1); put8(g, 16);
    putbits(&w, 0, 16); putbits(&w, 65535, 16);     /* s1: ALT | REF */
    putbits(&w, 0, 16);                             /* s2: haploid ALT */
    putbits(&w, 65535, 16); putbits(&w, 32768, 16); /* s3: REF | uncertain */
  } else if (v == 3) { /* triallelic, phased, 8 bits; ploidy 2, 1, 2, missing */
    put32(g, TN); put16(g, 3); put8(g, 1); put8(g, 2);
    put8(g, 2); put8(g, 1); put8(g, 2); put8(g, 0x82);
    put8(g, 1); put8(g, 8);
    static const unsigned pr[7][2] = {{0, 255}, {0, 0}, {255, 0}, {255, 0}, {128, 127}, {0, 0}, {0, 0}};
    for (int h = 0; h < 7; h++) { putbits(&w, pr[h][0], 8); putbits(&w, pr[h][1], 8); }
  } else { /* triallelic, unphased, 3 bits: genotypes 00 01 11 02 12 22 */
    put32(g, TN); put16(g, 3); put8(g, 2); put8(g, 2);
    for (int i = 0; i < TN; i++) put8(g, 2);
    put8(g, 0); put8(g, 3);
    static const unsigned pr[TN][5] = {{7, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 7}, {0, 0, 7, 0, 0}};
    for (int i = 0; i < TN; i++)
      for (int g2 = 0; g2 < 5; g2++) putbits(&w, pr[i][g2], 3);
  }
  flushbits(&w);
}

/* A layout-2 file of the three tiny variants; flags' compression = comp
 * (3 writes zlib data under the undefined flag). */
static void tiny_file(buf *f, unsigned comp, int with_ids, const char *magic) {
  buf samples = {0};
  if (with_ids) {
    static const char *ids[TN] = {"s1", "s2", "s3", "s4"};
    size_t len = 8;
    for (int i = 0; i < TN; i++) len += 2 + strlen(ids[i]);
    put32(&samples, (uint32_t)len); put32(&samples, TN);
    for (int i = 0; i < TN; i++) putstr16(&samples, ids[i]);
  }
  const uint32_t lh = 20 + 3; /* 3 bytes of free data */
  put32(f, lh + (uint32_t)samples.n);
  put32(f, lh); put32(f, 4); put32(f, TN); put(f, magic, 4); put(f, "abc", 3);
  put32(f, comp | (2u << 2) | (with_ids ? 0x80000000u : 0));
  put(f, samples.p, samples.n);
  free(samples.p);
  static const char *alleles[4][3] = {{"A", "G", NULL}, {"C", "T", NULL}, {"A", "C", "G"}, {"A", "C", "G"}};
  for (int v = 0; v < 4; v++) {
    char id[16];
    snprintf(id, sizeof id, "rs%d", v + 1);
    putstr16(f, ""); putstr16(f, id); putstr16(f, "1"); put32(f, 100 + (uint32_t)v);
    int k = v >= 2 ? 3 : 2;
    put16(f, (unsigned)k);
    for (int a = 0; a < k; a++) putstr32(f, alleles[v][a]);
    buf g = {0};
    tiny_geno(v, &g);
    if (comp == 0) {
      put32(f, (uint32_t)g.n);
      put(f, g.p, g.n);
    } else {
      size_t cap = g.n * 2 + 128;
      uint8_t *c = malloc(cap);
      size_t clen;
      if (comp == 2) {
        clen = ZSTD_compress(c, cap, g.p, g.n, 3);
      } else {
        uLongf cl = (uLongf)cap;
        compress(c, &cl, g.p, (uLong)g.n);
        clen = cl;
      }
      put32(f, (uint32_t)clen + 4); put32(f, (uint32_t)g.n);
      put(f, c, clen);
      free(c);
    }
    free(g.p);
  }
}

static char tmpdir[512];

static void write_file(const char *path, const uint8_t *p, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fwrite(p, 1, n, f) == n);
  fclose(f);
}

static void tmp_path(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", tmpdir, name); }

#define Q8 (1.0 / 255)

static void check_tiny_records(fm_reader *r) {
  fm_err err = {0};
  fm_gt_record rec;
  /* variant 1: unphased 8 bit */
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(strcmp(rec.id, "rs1") == 0 && strcmp(rec.chrom, "1") == 0 && rec.pos == 100);
  CHECK(strcmp(rec.ref, "A") == 0 && strcmp(rec.alt, "G") == 0);
  CHECK(!rec.is_phased && rec.hap == NULL);
  CHECK(rec.hardcall[0] == 0 && rec.hardcall[1] == 1 && rec.hardcall[2] == FM_GT_MISSING);
  CHECK(rec.hardcall[3] == FM_GT_MISSING); /* P(hom ALT) = 225/255 < 0.9 */
  CHECK_CLOSE(rec.dosage[0], 0.0, 1e-12);
  CHECK_CLOSE(rec.dosage[1], 1.0, 1e-12);
  CHECK(isnan(rec.dosage[2]));
  CHECK_CLOSE(rec.dosage[3], (20 + 2 * 225) * Q8, 1e-12);
  /* variant 2: phased 16 bit with ploidy 2, 1, 2, 0 */
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(strcmp(rec.id, "rs2") == 0 && rec.is_phased && rec.hap != NULL);
  if (rec.hap) {
    CHECK(rec.hap[0] == 1 && rec.hap[1] == 0);
    CHECK(rec.hap[2] == 1 && rec.hap[3] == 1);          /* haploid ALT repeated */
    CHECK(rec.hap[4] == 0 && rec.hap[5] == FM_GT_MISSING); /* uncertain slot */
    CHECK(rec.hap[6] == FM_GT_MISSING && rec.hap[7] == FM_GT_MISSING);
  }
  CHECK(rec.hardcall[0] == 1 && rec.hardcall[1] == 2 && rec.hardcall[2] == FM_GT_MISSING);
  CHECK(rec.hardcall[3] == FM_GT_MISSING);
  CHECK_CLOSE(rec.dosage[0], 1.0, 1e-12);
  CHECK_CLOSE(rec.dosage[1], 2.0, 1e-12); /* haploid: 2 P(ALT) */
  CHECK_CLOSE(rec.dosage[2], 32767.0 / 65535, 1e-12);
  CHECK(isnan(rec.dosage[3]));
  /* variant 3: triallelic, split into ALT C and ALT G */
  static const int8_t hc1[TN] = {0, 0, 1, 2}, hc2[TN] = {0, 2, 1, 0}; /* AA GG CG CC */
  static const double d1[TN] = {0, 0, 1, 2}, d2[TN] = {0, 2, 1, 0};
  for (int j = 1; j <= 2; j++) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(strcmp(rec.id, "rs3") == 0 && strcmp(rec.ref, "A") == 0);
    CHECK(strcmp(rec.alt, j == 1 ? "C" : "G") == 0);
    for (int i = 0; i < TN; i++) {
      CHECK(rec.hardcall[i] == (j == 1 ? hc1 : hc2)[i]);
      CHECK_CLOSE(rec.dosage[i], (j == 1 ? d1 : d2)[i], 1e-12);
    }
  }
  /* variant 4: triallelic phased: C|G, haploid A, A|uncertain, missing.
   * Each split record's hardcall is plink2's rule on its own dosage: the
   * uncertain slot is C or A, so sample 3 carries 0.498 C (missing) and
   * surely no G (0). */
  static const int8_t p_hc[2][TN] = {{1, 0, FM_GT_MISSING, FM_GT_MISSING}, {1, 0, 0, FM_GT_MISSING}};
  static const int8_t p_hap[2][2 * TN] = {{1, 0, 0, 0, 0, FM_GT_MISSING, FM_GT_MISSING, FM_GT_MISSING},
                                         {0, 1, 0, 0, 0, FM_GT_MISSING, FM_GT_MISSING, FM_GT_MISSING}};
  static const double p_d[2][3] = {{1, 0, 127 * Q8}, {1, 0, 0}};
  for (int j = 1; j <= 2; j++) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    CHECK(strcmp(rec.id, "rs4") == 0 && rec.is_phased && rec.hap != NULL);
    CHECK(strcmp(rec.alt, j == 1 ? "C" : "G") == 0);
    for (int i = 0; i < TN; i++) {
      CHECK(rec.hardcall[i] == p_hc[j - 1][i]);
      if (rec.hap) CHECK(rec.hap[2 * i] == p_hap[j - 1][2 * i] && rec.hap[2 * i + 1] == p_hap[j - 1][2 * i + 1]);
      if (i < 3) CHECK_CLOSE(rec.dosage[i], p_d[j - 1][i], 1e-12);
      else CHECK(isnan(rec.dosage[i]));
    }
  }
  CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
}

static void test_tiny_compressions(void) {
  for (unsigned comp = 0; comp <= 2; comp++) {
    buf f = {0};
    tiny_file(&f, comp, 1, "bgen");
    char path[600];
    tmp_path(path, sizeof path, "tiny.bgen");
    write_file(path, f.p, f.n);
    free(f.p);
    fm_err err = {0};
    fm_reader *r = NULL;
    CHECK_OK(fm_fmt_bgen_open(path, &r, &err), &err);
    if (!r) continue;
    CHECK(r->info.n_samples == TN && r->info.n_variants == 6); /* records: 1 + 1 + 2 + 2 */
    CHECK(r->sample_ids && strcmp(r->sample_ids[3], "s4") == 0);
    check_tiny_records(r);
    fm_reader_close(r);
  }
}

static void test_tiny_no_ids_and_skip(void) {
  buf f = {0};
  tiny_file(&f, 1, 0, "\0\0\0\0"); /* old zero magic is accepted */
  char path[600];
  tmp_path(path, sizeof path, "noids.bgen");
  write_file(path, f.p, f.n);
  free(f.p);
  fm_err err = {0};
  fm_reader *r = NULL;
  CHECK_OK(fm_fmt_bgen_open(path, &r, &err), &err);
  if (!r) return;
  CHECK(r->sample_ids == NULL);
  int64_t n = -1;
  CHECK_OK(fm_fmt_bgen_skip(r, 3, &n, &err), &err); /* lands inside the split variant */
  CHECK(n == 3);
  fm_gt_record rec;
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(strcmp(rec.alt, "G") == 0 && rec.hardcall[1] == 2);
  CHECK(fm_fmt_bgen_skip(r, 5, &n, &err) == FM_FMT_END && n == 2); /* rs4's two records */
  fm_reader_close(r);
  /* fm_reader_count takes the same seek: the records left, mid-variant too */
  r = NULL;
  CHECK_OK(fm_fmt_bgen_open(path, &r, &err), &err);
  if (!r) return;
  CHECK_OK(fm_fmt_bgen_skip(r, 3, &n, &err), &err);
  CHECK_OK(fm_reader_count(r, &n, NULL, &err), &err);
  CHECK(n == 3);
  fm_reader_close(r);
}

static void test_bad_headers(void) {
  char path[600];
  tmp_path(path, sizeof path, "bad.bgen");
  fm_err err = {0};
  fm_reader *r = NULL;
  /* compression flag 3 */
  buf f = {0};
  tiny_file(&f, 3, 1, "bgen");
  write_file(path, f.p, f.n);
  free(f.p);
  CHECK(fm_fmt_bgen_open(path, &r, &err) == FM_EFORMAT && r == NULL);
  CHECK(strstr(err.msg, "compression flag 3") != NULL && strstr(err.msg, path) != NULL);
  /* wrong magic */
  f = (buf){0};
  tiny_file(&f, 1, 1, "bgeN");
  write_file(path, f.p, f.n);
  free(f.p);
  CHECK(fm_fmt_bgen_open(path, &r, &err) == FM_EFORMAT && r == NULL);
  CHECK(strstr(err.msg, "magic") != NULL && strstr(err.msg, "byte offset 16") != NULL);
  /* a first-variant offset past the end is named as such, not as a truncation */
  f = (buf){0};
  tiny_file(&f, 1, 1, "bgen");
  f.p[0] = f.p[1] = f.p[2] = 0xff;
  f.p[3] = 0x7f;
  write_file(path, f.p, f.n);
  free(f.p);
  CHECK(fm_fmt_bgen_open(path, &r, &err) == FM_EFORMAT && r == NULL);
  CHECK(strstr(err.msg, "first-variant offset 2147483647 (byte offset 0) points past the end") != NULL &&
        !strstr(err.msg, "truncated"));
  /* missing file */
  tmp_path(path, sizeof path, "does_not_exist.bgen");
  CHECK(fm_fmt_bgen_open(path, &r, &err) == FM_EIO && r == NULL);
  CHECK(fm_fmt_bgen_open(NULL, &r, &err) == FM_EARG);
}

/* Every proper prefix of a valid file fails cleanly, naming a byte offset. */
static void test_truncated(void) {
  for (unsigned comp = 0; comp <= 2; comp++) {
    buf f = {0};
    tiny_file(&f, comp, 1, "bgen");
    char path[600];
    tmp_path(path, sizeof path, "trunc.bgen");
    int n_bad = 0;
    for (size_t len = 0; len < f.n; len++) {
      write_file(path, f.p, len);
      fm_err err = {0};
      fm_reader *r = NULL;
      fm_status st = fm_fmt_bgen_open(path, &r, &err);
      fm_gt_record rec;
      int n_rec = 0;
      while (st == FM_OK && (st = fm_reader_next(r, &rec, &err)) == FM_OK) n_rec++;
      fm_reader_close(r);
      if (st != FM_EFORMAT || !strstr(err.msg, "byte offset") || !strstr(err.msg, path) || n_rec > 5) {
        n_bad++;
        if (n_bad < 4) fprintf(stderr, "prefix %zu: %s: %s\n", len, fm_status_name(st), err.msg);
      }
    }
    CHECK(n_bad == 0);
    free(f.p);
  }
}

/* Layout 1 (v1.1): sums below 1 are kept as stored; all-zero is missing. */
/* A layout-1 (v1.1) file of one variant and four samples. */
static void l1_file(buf *fp) {
  buf f = {0};
  const uint32_t lh = 20;
  put32(&f, lh); put32(&f, lh); put32(&f, 1); put32(&f, 4); put(&f, "bgen", 4);
  put32(&f, 1u | (1u << 2)); /* zlib, layout 1, no sample block */
  put32(&f, 4); putstr16(&f, "snp1"); putstr16(&f, "rs1"); putstr16(&f, "22"); put32(&f, 5);
  putstr32(&f, "A"); putstr32(&f, "T");
  static const unsigned pr[4][3] = {{0, 16384, 0}, {0, 0, 0}, {0, 3276, 29492}, {0, 0, 32768}};
  buf g = {0};
  for (int i = 0; i < 4; i++)
    for (int c = 0; c < 3; c++) put16(&g, pr[i][c]);
  uint8_t c[256];
  uLongf cl = sizeof c;
  CHECK(compress(c, &cl, g.p, (uLong)g.n) == Z_OK);
  put32(&f, (uint32_t)cl); put(&f, c, cl);
  free(g.p);
  *fp = f;
}

static void test_layout1_probabilities(void) {
  buf f = {0};
  l1_file(&f);
  char path[600];
  tmp_path(path, sizeof path, "l1.bgen");
  write_file(path, f.p, f.n);
  free(f.p);
  fm_err err = {0};
  fm_reader *r = NULL;
  CHECK_OK(fm_fmt_bgen_open(path, &r, &err), &err);
  if (!r) return;
  fm_gt_record rec;
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(strcmp(rec.id, "rs1") == 0 && strcmp(rec.alt, "T") == 0 && !rec.is_phased);
  CHECK(rec.hap != NULL); /* no heterozygote: slots from the hardcalls */
  if (rec.hap) {
    static const int8_t want[8] = {FM_GT_MISSING, FM_GT_MISSING, FM_GT_MISSING, FM_GT_MISSING, 1, 1, 1, 1};
    CHECK(memcmp(rec.hap, want, 8) == 0);
  }
  CHECK(rec.hardcall[0] == FM_GT_MISSING);
  CHECK_CLOSE(rec.dosage[0], 0.5, 1e-12); /* sum 0.5 < 1: not renormalized */
  CHECK(rec.hardcall[1] == FM_GT_MISSING && isnan(rec.dosage[1]));
  CHECK(rec.hardcall[2] == 2); /* dosage 62260 / 32768 = 1.90002: 31130 units, 1638 from 2 */
  CHECK_CLOSE(rec.dosage[2], (3276 + 2 * 29492) / 32768.0, 1e-12);
  CHECK(rec.hardcall[3] == 2);
  CHECK_CLOSE(rec.dosage[3], 2.0, 1e-12);
  CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
  fm_reader_close(r);
}

/* A layout-2 uncompressed file whose variant v has genotype data blk[v]. */
static void blocks_file(buf *f, buf *blk, int n_var) {
  put32(f, 20); put32(f, 20); put32(f, (uint32_t)n_var); put32(f, TN); put(f, "bgen", 4);
  put32(f, 2u << 2);
  for (int v = 0; v < n_var; v++) {
    char id[16];
    snprintf(id, sizeof id, "v%d", v + 1);
    putstr16(f, id); putstr16(f, ""); putstr16(f, "2"); put32(f, (uint32_t)v + 1);
    put16(f, 2); putstr32(f, "A"); putstr32(f, "C");
    put32(f, (uint32_t)blk[v].n);
    put(f, blk[v].p, blk[v].n);
  }
}

static void geno_head(buf *g, const uint8_t ploidy[TN], unsigned nb) {
  put32(g, TN); put16(g, 2); put8(g, 1); put8(g, 3);
  for (int i = 0; i < TN; i++) put8(g, ploidy[i]);
  put8(g, 0); put8(g, nb);
}

/* 32- and 1-bit probabilities; ploidy 3 refused (FM_EFORMAT) naming the
 * sample, and the reader goes on with the next variant; SNPID used when RSID is empty. */
static void test_bits_and_ploidy(void) {
  static const uint8_t dip[TN] = {2, 2, 2, 2}, dip_miss[TN] = {2, 2, 2, 0x82}, tri[TN] = {2, 3, 2, 2};
  buf blk[4] = {{0}, {0}, {0}, {0}};
  bits w;
  geno_head(&blk[0], dip, 32);
  w = (bits){&blk[0], 0, 0};
  static const uint32_t v32[TN][2] = {{0xffffffffu, 0}, {0, 0}, {0x80000000u, 0x7fffffffu}, {1, 0}};
  for (int i = 0; i < TN; i++) { putbits(&w, v32[i][0], 32); putbits(&w, v32[i][1], 32); }
  flushbits(&w);
  geno_head(&blk[1], dip_miss, 1);
  w = (bits){&blk[1], 0, 0};
  static const unsigned v1[TN][2] = {{1, 0}, {0, 1}, {0, 0}, {0, 0}};
  for (int i = 0; i < TN; i++) { putbits(&w, v1[i][0], 1); putbits(&w, v1[i][1], 1); }
  flushbits(&w);
  geno_head(&blk[2], tri, 8);
  for (int i = 0; i < 2 * TN + 1; i++) put8(&blk[2], 0);
  geno_head(&blk[3], dip, 8);
  for (int i = 0; i < TN; i++) { put8(&blk[3], 0); put8(&blk[3], 255); }
  buf f = {0};
  blocks_file(&f, blk, 4);
  for (int v = 0; v < 4; v++) free(blk[v].p);
  char path[600];
  tmp_path(path, sizeof path, "bits.bgen");
  write_file(path, f.p, f.n);
  free(f.p);
  fm_err err = {0};
  fm_reader *r = NULL;
  CHECK_OK(fm_fmt_bgen_open(path, &r, &err), &err);
  if (!r) return;
  fm_gt_record rec;
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(strcmp(rec.id, "v1") == 0 && strcmp(rec.chrom, "2") == 0);
  CHECK(rec.hardcall[0] == 0 && rec.hardcall[1] == 2 && rec.hardcall[2] == FM_GT_MISSING && rec.hardcall[3] == 2);
  CHECK_CLOSE(rec.dosage[2], 2147483647.0 / 4294967295.0, 1e-12);
  CHECK_CLOSE(rec.dosage[3], 2 * 4294967294.0 / 4294967295.0, 1e-12);
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(rec.hardcall[0] == 0 && rec.hardcall[1] == 1 && rec.hardcall[2] == 2 && rec.hardcall[3] == FM_GT_MISSING);
  CHECK(isnan(rec.dosage[3]) && rec.dosage[1] == 1.0);
  /* regression (fuzz_readers_bgen): not FM_EUNSUPPORTED, which is FM_FMT_END,
   * so the error read as a clean end of the file */
  fm_status st3 = fm_reader_next(r, &rec, &err);
  CHECK(st3 == FM_EFORMAT && st3 != FM_FMT_END);
  CHECK(strstr(err.msg, "ploidy 3") && strstr(err.msg, "sample 2") && strstr(err.msg, "variant 3 (v3)"));
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(strcmp(rec.id, "v4") == 0 && rec.hardcall[0] == 1 && rec.dosage[3] == 1.0);
  CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
  fm_reader_close(r);
  unlink(path);
}

/* Regression (fuzz_readers_bgen): N comes from the header and is not backed
 * by a sample block, so a 100-byte file can claim 4 billion samples. The
 * per-sample buffers were allocated before the first block's own sample
 * count was checked (tens of GB, or FM_ENOMEM), and a zlib block's claimed
 * uncompressed length was allocated before inflating. Regression (QA): a
 * header claiming 2^31 - 1 samples and no sample block opened, and R ran
 * out of memory building N sample IDs; N is now checked at open against the
 * first variant's genotype block (FM_EFORMAT naming byte offset 12 and the
 * block). A later block claiming 4 GB is FM_EFORMAT without the allocation,
 * and the reader goes on to the next variant. */
static void huge_n_file(const char *path, uint32_t n_header, uint32_t d2) {
  static const uint8_t dip[TN] = {2, 2, 2, 2};
  buf g = {0};
  geno_head(&g, dip, 8);
  for (int i = 0; i < TN; i++) { put8(&g, 255); put8(&g, 0); }
  uLongf cl = (uLongf)(g.n * 2 + 128);
  uint8_t *c = malloc(cl);
  if (!c) { free(g.p); CHECK(!"malloc"); return; }
  compress(c, &cl, g.p, (uLong)g.n);
  buf f = {0};
  put32(&f, 20); put32(&f, 20); put32(&f, 2); put32(&f, n_header); put(&f, "bgen", 4);
  put32(&f, 1u | (2u << 2)); /* zlib, layout 2, no sample block */
  for (int v = 0; v < 2; v++) {
    putstr16(&f, v ? "v2" : "v1"); putstr16(&f, ""); putstr16(&f, "2"); put32(&f, 10 + (uint32_t)v);
    put16(&f, 2); putstr32(&f, "A"); putstr32(&f, "C");
    put32(&f, (uint32_t)cl + 4);
    put32(&f, v ? d2 : (uint32_t)g.n);
    put(&f, c, cl);
  }
  free(c);
  free(g.p);
  write_file(path, f.p, f.n);
  free(f.p);
}

static void test_huge_n_header(void) {
  char path[600];
  tmp_path(path, sizeof path, "huge_n.bgen");
  fm_err err = {0};
  fm_reader *r = NULL;
  static const uint32_t huge[] = {0xfffffff0u, 0x7fffffffu, 1000000};
  for (size_t k = 0; k < sizeof huge / sizeof huge[0]; k++) {
    huge_n_file(path, huge[k], 0xffffff00u);
    r = (fm_reader *)&err;
    CHECK(fm_fmt_bgen_open(path, &r, &err) == FM_EFORMAT && r == NULL);
    char want[160];
    snprintf(want, sizeof want, "huge_n.bgen: header N %lu (byte offset 12) does not fit the first genotype "
             "block (byte offset 53: zlib, ", (unsigned long)huge[k]);
    CHECK(strstr(err.msg, want) != NULL);
    if (!strstr(err.msg, want)) fprintf(stderr, "  got: %s\n  want: %s\n", err.msg, want);
  }
  /* N as the blocks say: the second block's claim of 4 GB fails when read */
  huge_n_file(path, TN, 0xffffff00u);
  r = NULL;
  CHECK_OK(fm_fmt_bgen_open(path, &r, &err), &err);
  if (!r) return;
  fm_gt_record rec;
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  CHECK(rec.hardcall[0] == 0 && rec.hardcall[3] == 0);
  fm_status st = fm_reader_next(r, &rec, &err);
  CHECK(st == FM_EFORMAT);
  CHECK(strstr(err.msg, "variant 2 (v2) at byte offset 81: uncompressed length 4294967040 exceeds the "
                        "110 bytes 4 samples can need"));
  CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
  fm_reader_close(r);
  unlink(path);
}

/* Regression (QA): the open-time check of N in the other layouts and
 * compressions: an uncompressed layout-2 block of enough bytes whose own N
 * differs; a layout-1 variant's N (its sample count field) differing; a
 * layout-1 zlib block too small for 6 N bytes even when the variant agrees;
 * a zstd block. A file of no variants has nothing to check N against. And
 * a variant of 0 alleles is malformed (FM_EFORMAT naming the byte offsets),
 * not FM_EUNSUPPORTED like a variant of 1. */
static void test_header_n_first_block(void) {
  char path[600];
  tmp_path(path, sizeof path, "n_first.bgen");
  fm_err err = {0};
  fm_reader *r = NULL;
  static const uint8_t dip[TN] = {2, 2, 2, 2};
  buf g = {0};
  geno_head(&g, dip, 8);
  for (int i = 0; i < TN; i++) { put8(&g, 255); put8(&g, 0); }
  /* layout 2, uncompressed: header N 5, the block (22 bytes, room for 12) says 4; then N 13 */
  for (uint32_t n_hdr = 5; n_hdr <= 13; n_hdr += 8) {
    buf f = {0};
    put32(&f, 20); put32(&f, 20); put32(&f, 1); put32(&f, n_hdr); put(&f, "bgen", 4);
    put32(&f, 0u | (2u << 2));
    putstr16(&f, "v1"); putstr16(&f, ""); putstr16(&f, "2"); put32(&f, 10);
    put16(&f, 2); putstr32(&f, "A"); putstr32(&f, "C");
    put32(&f, (uint32_t)g.n); put(&f, g.p, g.n);
    write_file(path, f.p, f.n);
    free(f.p);
    CHECK(fm_fmt_bgen_open(path, &r, &err) == FM_EFORMAT && r == NULL);
    if (n_hdr == 5)
      CHECK(strstr(err.msg, "n_first.bgen: header N 5 (byte offset 12) but the first genotype block (byte "
                            "offset 53) says 4 samples") != NULL);
    else
      CHECK(strstr(err.msg, "n_first.bgen: header N 13 (byte offset 12) does not fit the first genotype "
                            "block (byte offset 53: 22 bytes; N samples need 23 bytes)") != NULL);
  }
  /* layout 2, zstd: the block holds 4 samples, the header says 70000 */
  {
    uint8_t c[256];
    size_t cl = ZSTD_compress(c, sizeof c, g.p, g.n, 3);
    CHECK(!ZSTD_isError(cl));
    buf f = {0};
    put32(&f, 20); put32(&f, 20); put32(&f, 1); put32(&f, 70000); put(&f, "bgen", 4);
    put32(&f, 2u | (2u << 2));
    putstr16(&f, "v1"); putstr16(&f, ""); putstr16(&f, "2"); put32(&f, 10);
    put16(&f, 2); putstr32(&f, "A"); putstr32(&f, "C");
    put32(&f, (uint32_t)cl + 4); put32(&f, (uint32_t)g.n); put(&f, c, cl);
    write_file(path, f.p, f.n);
    free(f.p);
    CHECK(fm_fmt_bgen_open(path, &r, &err) == FM_EFORMAT && r == NULL);
    CHECK(strstr(err.msg, "header N 70000 (byte offset 12) does not fit the first genotype block (byte "
                          "offset 53: zstd, 35 bytes, 22 uncompressed; N samples need 70010 bytes)"));
  }
  free(g.p);
  /* layout 1: the variant's N differs from the header's; then both say 3000000 */
  for (int both = 0; both < 2; both++) {
    buf f = {0};
    const uint32_t n_hdr = 3000000;
    put32(&f, 20); put32(&f, 20); put32(&f, 1); put32(&f, n_hdr); put(&f, "bgen", 4);
    put32(&f, 1u | (1u << 2));
    put32(&f, both ? n_hdr : 4); putstr16(&f, "snp1"); putstr16(&f, "rs1"); putstr16(&f, "22");
    put32(&f, 5); putstr32(&f, "A"); putstr32(&f, "T");
    buf p = {0};
    for (int i = 0; i < 4; i++) { put16(&p, 32768); put16(&p, 0); put16(&p, 0); }
    uint8_t c[256];
    uLongf cl = sizeof c;
    CHECK(compress(c, &cl, p.p, (uLong)p.n) == Z_OK);
    free(p.p);
    put32(&f, (uint32_t)cl); put(&f, c, cl);
    write_file(path, f.p, f.n);
    free(f.p);
    CHECK(fm_fmt_bgen_open(path, &r, &err) == FM_EFORMAT && r == NULL);
    if (!both)
      CHECK(strstr(err.msg, "variant 1 at byte offset 24 has 4 samples, the header 3000000 (byte offset 12)"));
    else
      CHECK(strstr(err.msg, "header N 3000000 (byte offset 12) does not fit the first genotype block (byte "
                            "offset 61: zlib, 14 bytes; N samples need 18000000 bytes)"));
  }
  /* no variants: N stands (nothing to check it against) */
  {
    buf f = {0};
    put32(&f, 20); put32(&f, 20); put32(&f, 0); put32(&f, 0x7fffffffu); put(&f, "bgen", 4);
    put32(&f, 1u | (2u << 2));
    write_file(path, f.p, f.n);
    free(f.p);
    CHECK_OK(fm_fmt_bgen_open(path, &r, &err), &err);
    if (r) CHECK(r->info.n_variants == 0 && r->info.n_samples == 0x7fffffff);
    fm_reader_close(r);
    r = NULL;
  }
  /* 0 alleles: malformed; 1 allele: unsupported */
  for (unsigned k = 0; k < 2; k++) {
    buf f = {0};
    put32(&f, 20); put32(&f, 20); put32(&f, 1); put32(&f, TN); put(&f, "bgen", 4);
    put32(&f, 0u | (2u << 2));
    putstr16(&f, "v1"); putstr16(&f, "rs9"); putstr16(&f, "2"); put32(&f, 10);
    put16(&f, k);
    if (k) putstr32(&f, "A");
    put32(&f, 0);
    write_file(path, f.p, f.n);
    free(f.p);
    fm_status st = fm_fmt_bgen_open(path, &r, &err);
    CHECK(st == (k ? FM_EUNSUPPORTED : FM_EFORMAT) && r == NULL);
    if (!k)
      CHECK(strstr(err.msg, "n_first.bgen: variant 1 (rs9) at byte offset 24 has 0 alleles (allele count at "
                            "byte offset 40)") != NULL);
    else
      CHECK(strstr(err.msg, "has 1 allele(s)") != NULL);
  }
  unlink(path);
}

/* Regression (fuzz_readers_bgen): the same for a zstd block claiming 4 GB. */
static void test_huge_zstd_claim(void) {
  static const uint8_t dip[TN] = {2, 2, 2, 2};
  buf g = {0};
  geno_head(&g, dip, 8);
  for (int i = 0; i < TN; i++) { put8(&g, 255); put8(&g, 0); }
  size_t cap = ZSTD_compressBound(g.n);
  uint8_t *c = malloc(cap);
  if (!c) { free(g.p); CHECK(!"malloc"); return; }
  size_t cl = ZSTD_compress(c, cap, g.p, g.n, 3);
  CHECK(!ZSTD_isError(cl));
  buf f = {0};
  put32(&f, 20); put32(&f, 20); put32(&f, 1); put32(&f, TN); put(&f, "bgen", 4);
  put32(&f, 2u | (2u << 2)); /* zstd, layout 2, no sample block */
  putstr16(&f, "v1"); putstr16(&f, ""); putstr16(&f, "2"); put32(&f, 10);
  put16(&f, 2); putstr32(&f, "A"); putstr32(&f, "C");
  put32(&f, (uint32_t)cl + 4);
  put32(&f, 0xffffff00u);
  put(&f, c, cl);
  free(c);
  free(g.p);
  char path[600];
  tmp_path(path, sizeof path, "huge_zstd.bgen");
  write_file(path, f.p, f.n);
  free(f.p);
  fm_err err = {0};
  fm_reader *r = NULL;
  CHECK_OK(fm_fmt_bgen_open(path, &r, &err), &err);
  if (!r) return;
  fm_gt_record rec;
  CHECK(fm_reader_next(r, &rec, &err) == FM_EFORMAT);
  CHECK(strstr(err.msg, "variant 1 (v1) at byte offset 24: uncompressed length 4294967040 exceeds"));
  CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
  fm_reader_close(r);
  unlink(path);
}

/* Every byte of the tiny files changed two ways: the reader never crashes
 * (ASan/valgrind), and every failure carries a message naming the file. */
static void test_mutations(void) {
  char path[600];
  tmp_path(path, sizeof path, "mut.bgen");
  int n_bad = 0, n_err = 0;
  for (int kind = 0; kind < 4; kind++) {
    buf f = {0};
    if (kind == 1) continue; /* zlib: covered by the truncations; mutations mostly fail inflate */
    if (kind < 3) tiny_file(&f, (unsigned)kind, 1, "bgen");
    else l1_file(&f);
    static const uint8_t xors[2] = {0xff, 0x01};
    for (size_t at = 0; at < f.n; at++) {
      for (int m = 0; m < 2; m++) {
        f.p[at] ^= xors[m];
        write_file(path, f.p, f.n);
        f.p[at] ^= xors[m];
        fm_err err = {0};
        fm_reader *r = NULL;
        fm_status st = fm_fmt_bgen_open(path, &r, &err);
        fm_gt_record rec;
        int n_rec = 0;
        while (st == FM_OK && n_rec < 100000 && (st = fm_reader_next(r, &rec, &err)) == FM_OK) {
          for (int64_t i = 0; i < rec.n_samples; i++)
            if (rec.hardcall[i] != FM_GT_MISSING && (rec.hardcall[i] < 0 || rec.hardcall[i] > 2)) n_bad++;
          n_rec++;
        }
        fm_reader_close(r);
        if (st != FM_FMT_END) {
          n_err++;
          if (!strstr(err.msg, path)) n_bad++;
        }
      }
    }
    free(f.p);
  }
  unlink(path);
  CHECK(n_bad == 0);
  CHECK(n_err > 0);
}

/* fm_fmt_stream over a BGEN reader: dense, duplicated variants and samples. */
static void test_stream(void) {
  if (!have_fixtures) return;
  char path[1200];
  fm_err err = {0};
  fm_reader *r = NULL;
  snprintf(path, sizeof path, "%s/text/1kg_bi_chr22.v11.bgen", fixdir);
  CHECK_OK(fm_fmt_bgen_open(path, &r, &err), &err);
  if (r) {
    static const int64_t vi[4] = {1096, 0, 500, 0}, si[4] = {5, 0, 5, 1125};
    double out[16];
    fm_dest d = {FM_DEST_DENSE, (uint8_t *)out, 4, 4, si, 0};
    CHECK_OK(fm_fmt_stream(r, &d, vi, 0, NULL, NULL, NULL, &err), &err);
    for (int c = 0; c < 4; c++)
      for (int i = 0; i < 4; i++)
        CHECK(fabs(out[4 * c + i] - traw[(size_t)vi[c] * N_SAMPLES + (size_t)si[i]]) <= 1.0 / 32768);
    fm_reader_close(r);
  }
}

/* Hardcall-only reads (byte-width loops, no dosages) equal full reads: on
 * random two-allele blocks of 8, 16 and odd widths, phased or not, all
 * diploid or with ploidies 0, 1, 2 and the missing bit, values near the
 * hardcall bounds and the slots' 0.9 threshold; and
 * on every BGEN fixture. An oversum is refused alike in both modes. */
static fm_status open_bgen_ud(void *ud, fm_reader **out, fm_err *err) {
  return fm_fmt_bgen_open((const char *)ud, out, err);
}

static uint64_t near_threshold(uint64_t *st, uint64_t maxv) {
  const uint64_t t = (uint64_t)(0.9 * (double)maxv), u = fm_test_rng_next(st);
  uint64_t bound[4], x;
  if (maxv == 0) return 0;
  switch (u % 6) {
    case 0: return 0;
    case 1: return maxv;
    case 2: return t + (u >> 8) % 3 - 1; /* t - 1, t, t + 1: the haplotype slots' 0.9 */
    case 3: /* next to a hardcall bound (fm_hardcall_bounds): as P(REF/ALT) with
             * P(ALT/ALT) = 0, or as maxv - x (haploid or phased) */
      fm_hardcall_bounds(maxv, bound);
      x = bound[(u >> 8) % 4] / ((u >> 10) % 2 + 1) + (u >> 11) % 3;
      x = x < 1 ? 0 : x - 1;
      x = x > maxv ? maxv : x;
      return (u >> 13) % 2 ? x : maxv - x;
    default: return (u >> 8) % (maxv + 1);
  }
}

/* An uncompressed layout-2 file of n samples and n_var two-allele
 * variants, 8- and 16-bit in turn, unphased; two blocks in three all
 * diploid (the four-sample lane path and its 1..3-sample tail), the rest
 * with ploidies 0, 1, 2 and the missing bit; values near the threshold. */
static void lanes_file(const char *path, uint32_t n, int n_var, uint64_t seed) {
  static const uint8_t ploidies[6] = {2, 2, 1, 0, 0x82, 0x81};
  buf f = {0};
  put32(&f, 20); put32(&f, 20); put32(&f, (uint32_t)n_var); put32(&f, n); put(&f, "bgen", 4);
  put32(&f, 2u << 2);
  for (int v = 0; v < n_var; v++) {
    const unsigned nb = v % 2 ? 16 : 8;
    const uint64_t maxv = (UINT64_C(1) << nb) - 1;
    buf g = {0};
    uint8_t *pl = malloc(n);
    for (uint32_t i = 0; i < n; i++) pl[i] = v % 3 ? ploidies[fm_test_rng_next(&seed) % 6] : 2;
    put32(&g, n); put16(&g, 2); put8(&g, 0); put8(&g, 2);
    put(&g, pl, n);
    put8(&g, 0); put8(&g, nb);
    for (uint32_t i = 0; i < n; i++) {
      const unsigned z = pl[i] & 63u;
      const uint64_t x0 = near_threshold(&seed, maxv), x1 = near_threshold(&seed, maxv - x0);
      if (z >= 1) put(&g, (const uint8_t[]){(uint8_t)x0, (uint8_t)(x0 >> 8)}, nb / 8);
      if (z == 2) {
        const uint64_t y = x1 > maxv - x0 ? maxv - x0 : x1;
        put(&g, (const uint8_t[]){(uint8_t)y, (uint8_t)(y >> 8)}, nb / 8);
      }
    }
    char id[16];
    snprintf(id, sizeof id, "v%d", v + 1);
    putstr16(&f, id); putstr16(&f, ""); putstr16(&f, "2"); put32(&f, (uint32_t)v + 1);
    put16(&f, 2); putstr32(&f, "A"); putstr32(&f, "C");
    put32(&f, (uint32_t)g.n);
    put(&f, g.p, g.n);
    free(g.p);
    free(pl);
  }
  write_file(path, f.p, f.n);
  free(f.p);
}

static void test_hardcall_only(void) {
  enum { NV = 240 };
  char lp[1200];
  tmp_path(lp, sizeof lp, "lanes.bgen");
  static const uint32_t ns[8] = {1, 2, 3, 5, 6, 7, 9, 11};
  for (int k = 0; k < 8; k++) {
    lanes_file(lp, ns[k], 60, 100 + (uint64_t)k);
    CHECK(fm_test_check_hardcall_only(open_bgen_ud, lp) == 60);
  }
  unlink(lp);
  static const unsigned widths[4] = {8, 16, 3, 12};
  static const uint8_t ploidies[6] = {2, 2, 1, 0, 0x82, 0x81};
  uint64_t st = 42;
  buf blk[NV];
  for (int v = 0; v < NV; v++) {
    const unsigned nb = widths[v % 4], phased = (v / 4) % 2;
    const uint64_t maxv = (UINT64_C(1) << nb) - 1;
    uint8_t pl[TN];
    for (int i = 0; i < TN; i++) pl[i] = v % 3 ? ploidies[fm_test_rng_next(&st) % 6] : 2;
    memset(&blk[v], 0, sizeof blk[v]);
    geno_head(&blk[v], pl, nb);
    blk[v].p[8 + TN] = (uint8_t)phased;
    bits w = {&blk[v], 0, 0};
    for (int i = 0; i < TN; i++) {
      const unsigned z = pl[i] & 63u;
      if (phased || z == 1) {
        for (unsigned h = 0; h < z; h++) putbits(&w, near_threshold(&st, maxv), (int)nb);
      } else if (z == 2) {
        const uint64_t x0 = near_threshold(&st, maxv), x1 = near_threshold(&st, maxv - x0);
        putbits(&w, x0, (int)nb);
        putbits(&w, x1 > maxv - x0 ? maxv - x0 : x1, (int)nb);
      }
    }
    flushbits(&w);
  }
  buf f = {0};
  blocks_file(&f, blk, NV);
  char path[1200];
  tmp_path(path, sizeof path, "hc_only.bgen");
  write_file(path, f.p, f.n);
  CHECK(fm_test_check_hardcall_only(open_bgen_ud, path) == NV);
  /* sample 3 of variant 2 (8-bit, unphased) sums past 1 */
  free(blk[1].p);
  memset(&blk[1], 0, sizeof blk[1]);
  static const uint8_t dip[TN] = {2, 2, 2, 2};
  geno_head(&blk[1], dip, 8);
  for (int i = 0; i < TN; i++) { put8(&blk[1], i == 2 ? 200 : 255); put8(&blk[1], i == 2 ? 100 : 0); }
  f.n = 0;
  blocks_file(&f, blk, NV);
  write_file(path, f.p, f.n);
  for (int hc_only = 0; hc_only < 2; hc_only++) {
    fm_err err = {0};
    fm_reader *r = NULL;
    CHECK_OK(fm_fmt_bgen_open(path, &r, &err), &err);
    if (!r) continue;
    uint8_t out[NV * 2];
    fm_dest d = {hc_only ? FM_DEST_HARDCALL : FM_DEST_DOSAGE, out, TN, NV, NULL, 0};
    CHECK(fm_fmt_stream(r, &d, NULL, 0, NULL, NULL, NULL, &err) == FM_EFORMAT);
    CHECK(strstr(err.msg, "sample 3") && strstr(err.msg, "variant 2 (v2)"));
    fm_reader_close(r);
  }
  for (int v = 0; v < NV; v++) free(blk[v].p);
  free(f.p);
  unlink(path);
  if (!have_fixtures) return;
  /* Skips while blocks are decompressed ahead (a 4 MB zlib file): the
   * records after each skip equal those of a reader that read through. */
  snprintf(path, sizeof path, "%s/1kg_bi.16bit.bgen", fixdir);
  fm_reader *a = NULL, *b = NULL;
  fm_err err = {0};
  CHECK_OK(fm_fmt_bgen_open(path, &a, &err), &err);
  CHECK_OK(fm_fmt_bgen_open(path, &b, &err), &err);
  static const int64_t skips[5] = {0, 1, 5, 1000, 9000};
  for (int k = 0; a && b && k < 5; k++) {
    int64_t got = 0;
    fm_gt_record ra, rb;
    CHECK_OK(fm_fmt_bgen_skip(a, skips[k], &got, &err), &err);
    CHECK(got == skips[k]);
    for (int64_t j = 0; j < skips[k]; j++) CHECK_OK(fm_reader_next(b, &rb, &err), &err);
    for (int j = 0; j < 3; j++) {
      CHECK_OK(fm_reader_next(a, &ra, &err), &err);
      CHECK_OK(fm_reader_next(b, &rb, &err), &err);
      CHECK(!strcmp(ra.id, rb.id) && !memcmp(ra.hardcall, rb.hardcall, N_SAMPLES));
      CHECK(!memcmp(ra.dosage, rb.dosage, N_SAMPLES * sizeof(double)));
    }
  }
  fm_reader_close(a);
  fm_reader_close(b);
  static const char *const rel[] = {
      "1kg_bi.8bit.bgen", "1kg_bi.16bit.bgen", "1kg_bi.16bit.zstd.bgen",
      "1kg_bi.phased.8bit.bgen", "text/1kg_bi_chr22.v11.bgen", "../ceu_exon/ceu_exon_bi.8bit.bgen",
      "../ceu_exon/ceu_exon_bi.16bit.bgen", "../1kg_phase1_chr22_dosage/1kg_p1_chr22.8bit.bgen",
      "../1kg_phase1_chr22_dosage/1kg_p1_chr22.16bit.zstd.bgen"};
  for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++) {
    snprintf(path, sizeof path, "%s/%s", fixdir, rel[k]);
    CHECK(fm_test_check_hardcall_only(open_bgen_ud, path) > 1000);
  }
}

/* ---- plink2's hardcall rule (fm_fmt.h) at every boundary -------------------- */

/* The hardcall plink2 gives a dosage of s / maxv, computed independently of
 * the reader: units = s * 16384 / maxv to the nearest (maxv odd: no ties),
 * called c when within 1638 units of c. Haploid dosages are 2 P(ALT), and a
 * haploid near 1 is a heterozygous haploid call: missing. */
static int8_t plink2_hc(uint64_t s, uint64_t maxv, int haploid) {
  const double u = nearbyint((double)s * 16384.0 / (double)maxv);
  const double c = floor(u / 16384.0 + 0.5);
  if (!(fabs(u - 16384.0 * c) <= 1638.0) || (haploid && c == 1)) return FM_GT_MISSING;
  return (int8_t)c;
}

#define RN 131073 /* samples: every 16-bit numerator 0 .. 131070, two more (a one-sample tail) */
#define RV 12     /* variants */

/* Variant v, sample i: bits, phased flag, ploidy byte, the stored values
 * (x[0], x[1]; unphased P(REF/REF), P(REF/ALT), phased P(REF) per
 * haplotype) and the ALT numerator s. Variants 0-7 are exactly the inputs
 * that plink2 v2.00a3.5 --bgen ... ref-first --make-bed called as
 * plink2_hc() does (0 of 32,896 8-bit pairs, 0 of 131,071 16-bit
 * numerators in two splits each, unphased and phased, 0 haploid values
 * differed; 2026-11-30): every 8-bit unphased pair, every 8-bit phased
 * pair, every 16-bit numerator stored two ways unphased and two ways
 * phased, 8-bit mixed ploidy, 16-bit haploid; then odd widths and 32 bits
 * around the bounds (random). */
static void rule_sample(int v, uint32_t i, uint64_t *st, unsigned *nb, unsigned *phased, uint8_t *pl,
                        uint64_t x[2], uint64_t *s) {
  static const unsigned nbs[RV] = {8, 8, 16, 16, 16, 16, 8, 16, 16, 10, 12, 32};
  static const unsigned ph[RV] = {0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0};
  *nb = nbs[v];
  *phased = ph[v];
  const uint64_t maxv = *nb == 32 ? UINT64_C(0xffffffff) : (UINT64_C(1) << *nb) - 1;
  *pl = 2;
  x[0] = x[1] = 0;
  uint32_t k = i;
  if (v == 6) { /* ploidies 1, 2, missing, 1, 0, 2 in turn */
    static const uint8_t pls[6] = {1, 2, 0x82, 1, 0, 2};
    *pl = pls[i % 6];
    k = i / 6;
    if (*pl == 1) {
      x[0] = k % 256;
      *s = 2 * (maxv - x[0]);
      return;
    }
  }
  if (v == 7) { /* haploid: every value */
    *pl = 1;
    x[0] = i % 65536;
    *s = 2 * (maxv - x[0]);
    return;
  }
  if (v == 8) *pl = (i % 3 == 1) ? 1 : 2; /* phased, haploid every third */
  if (v == 0 || v == 6) { /* the 32,896 pairs with x0 + x1 <= 255 in turn */
    uint32_t j = k % 32896, a = 0;
    while (j > 255 - a) j -= 256 - a, a++;
    x[0] = a;
    x[1] = j;
  } else if (v == 1) {
    x[0] = k & 255;
    x[1] = (k >> 8) & 255;
  } else if (v >= 2 && v <= 5) {
    const uint64_t t = k % (2 * maxv + 1); /* the ALT numerator */
    const int split_b = v == 3 || v == 5;
    uint64_t a0, a1;
    if (!split_b) a0 = t / 2, a1 = t - a0;
    else if (t <= maxv) a0 = 0, a1 = t;
    else a0 = t - maxv, a1 = maxv;
    if (v <= 3) { /* unphased: P(ALT/ALT) = a0, P(REF/ALT) = a1 - a0 */
      x[1] = a1 - a0;
      x[0] = maxv - x[1] - a0;
    } else {
      x[0] = maxv - a0;
      x[1] = maxv - a1;
    }
  } else { /* random values, half of them next to a bound */
    uint64_t bound[4];
    fm_hardcall_bounds(maxv, bound);
    const uint64_t u = fm_test_rng_next(st);
    uint64_t t = (u >> 8) % (2 * maxv + 1);
    if (u & 1) t = bound[(u >> 1) % 4] - ((u >> 3) & 1);
    if (t > 2 * maxv) t = 2 * maxv;
    const uint64_t lo = t > maxv ? t - maxv : 0, hi = t < maxv ? t : maxv;
    const uint64_t a0 = lo + (fm_test_rng_next(st) % (hi - lo + 1)), a1 = t - a0; /* a0, a1 <= maxv */
    if (*phased) {
      x[0] = maxv - a0;
      x[1] = maxv - a1;
    } else { /* P(ALT/ALT) = min(a0, a1) */
      const uint64_t hom = a0 < a1 ? a0 : a1;
      x[1] = t - 2 * hom;
      x[0] = maxv - x[1] - hom;
    }
  }
  if (*pl == 1) {
    *s = 2 * (maxv - x[0]);
    return;
  }
  *s = *phased ? 2 * maxv - x[0] - x[1] : 2 * maxv - 2 * x[0] - x[1];
}

static void rule_file(const char *path) {
  buf f = {0};
  put32(&f, 20); put32(&f, 20); put32(&f, RV); put32(&f, RN); put(&f, "bgen", 4);
  put32(&f, 2u << 2); /* uncompressed, layout 2 */
  uint64_t st = 7;
  for (int v = 0; v < RV; v++) {
    char id[16];
    snprintf(id, sizeof id, "r%d", v + 1);
    putstr16(&f, id); putstr16(&f, ""); putstr16(&f, "1"); put32(&f, (uint32_t)v + 1);
    put16(&f, 2); putstr32(&f, "A"); putstr32(&f, "C");
    buf g = {0}, vals = {0};
    bits w = {&vals, 0, 0};
    unsigned nb = 8, phased = 0;
    put32(&g, RN); put16(&g, 2); put8(&g, 0); put8(&g, 2);
    for (uint32_t i = 0; i < RN; i++) {
      uint8_t pl;
      uint64_t x[2], s;
      rule_sample(v, i, &st, &nb, &phased, &pl, x, &s);
      put8(&g, pl);
      for (unsigned h = 0; h < (pl & 63u); h++) putbits(&w, x[h], (int)nb);
    }
    flushbits(&w);
    put8(&g, phased); put8(&g, nb);
    put(&g, vals.p, vals.n);
    put32(&f, (uint32_t)g.n);
    put(&f, g.p, g.n);
    free(g.p);
    free(vals.p);
  }
  write_file(path, f.p, f.n);
  free(f.p);
}

static void test_plink2_rule(void) {
  char path[600];
  tmp_path(path, sizeof path, "rule.bgen");
  rule_file(path);
  fm_err err = {0};
  fm_reader *r = NULL;
  CHECK_OK(fm_fmt_bgen_open(path, &r, &err), &err);
  if (!r) return;
  uint64_t st = 7;
  fm_gt_record rec;
  for (int v = 0; v < RV; v++) {
    CHECK_OK(fm_reader_next(r, &rec, &err), &err);
    int bad_hc = 0, bad_ds = 0, n_called = 0;
    for (uint32_t i = 0; i < RN; i++) {
      unsigned nb, phased;
      uint8_t pl;
      uint64_t x[2], s;
      rule_sample(v, i, &st, &nb, &phased, &pl, x, &s);
      const uint64_t maxv = nb == 32 ? UINT64_C(0xffffffff) : (UINT64_C(1) << nb) - 1;
      const int missing = pl != 1 && pl != 2;
      const int8_t want = missing ? FM_GT_MISSING : plink2_hc(s, maxv, pl == 1);
      n_called += want != FM_GT_MISSING;
      if (rec.hardcall[i] != want) {
        if (bad_hc++ < 3)
          fprintf(stderr, "variant %d sample %u: s %llu / %llu: hardcall %d, want %d\n", v + 1, i,
                  (unsigned long long)s, (unsigned long long)maxv, rec.hardcall[i], want);
      }
      if (missing ? !isnan(rec.dosage[i]) : !(fabs(rec.dosage[i] - (double)s / (double)maxv) <= 1e-12)) bad_ds++;
      /* a haploid allele fills both slots: the slots sum to the hardcall */
      if (pl == 1 && rec.hap)
        CHECK(rec.hap[2 * i] == rec.hap[2 * i + 1] &&
              (want < 0 ? rec.hap[2 * i] == FM_GT_MISSING : 2 * rec.hap[2 * i] == want));
    }
    CHECK(bad_hc == 0 && bad_ds == 0 && n_called > RN / 10);
  }
  CHECK(fm_reader_next(r, &rec, &err) == FM_FMT_END);
  fm_reader_close(r);
  /* the hardcall-only reads (four-sample lanes, per-sample loops) equal it */
  CHECK(fm_test_check_hardcall_only(open_bgen_ud, path) == RV);
  unlink(path);
}

/* Layout 1: the dosage (v1 + 2 v2) / 32768 is half a unit from the grid
 * for odd numerators; plink2 rounds those halves to even (measured on all
 * 32,768 odd numerators of probabilities summing to 32768). A sum below
 * 32768 is not renormalized here (plink2 renormalizes it). */
static void test_layout1_rule(void) {
  enum { L1N = 9 };
  static const unsigned pr[L1N][3] = {
      {32768 - 1 - 1638, 1, 1638},   /* 1638.5 units -> 1638: 0 */
      {32768 - 1 - 1639, 1, 1639},   /* 1639.5 -> 1640: missing */
      {32768 - 1 - 14745, 1, 14745}, /* 14745.5 -> 14746: 1 */
      {32768 - 1 - 18022, 1, 18022}, /* 18022.5 -> 18022: 1 */
      {32768 - 1 - 18023, 1, 18023}, /* 18023.5 -> 18024: missing */
      {1638, 1, 31129},              /* 31129.5 -> 31130: 2 */
      {1639, 1, 31128},              /* 31128.5 -> 31128: missing */
      {0, 16384, 0},                 /* sum 0.5: dosage 0.5, missing (plink2: 1) */
      {2949, 0, 29819}};             /* P(ALT/ALT) = 0.91, dosage 1.82: missing (0.9 rule: 2) */
  static const int8_t want[L1N] = {0, FM_GT_MISSING, 1, 1, FM_GT_MISSING, 2, FM_GT_MISSING,
                                   FM_GT_MISSING, FM_GT_MISSING};
  buf f = {0};
  put32(&f, 20); put32(&f, 20); put32(&f, 1); put32(&f, L1N); put(&f, "bgen", 4);
  put32(&f, 0u | (1u << 2)); /* uncompressed, layout 1 */
  put32(&f, L1N); putstr16(&f, "snp1"); putstr16(&f, "rs1"); putstr16(&f, "22"); put32(&f, 5);
  putstr32(&f, "A"); putstr32(&f, "T");
  for (int i = 0; i < L1N; i++)
    for (int c = 0; c < 3; c++) put16(&f, pr[i][c]);
  char path[600];
  tmp_path(path, sizeof path, "l1rule.bgen");
  write_file(path, f.p, f.n);
  free(f.p);
  fm_err err = {0};
  fm_reader *r = NULL;
  CHECK_OK(fm_fmt_bgen_open(path, &r, &err), &err);
  if (!r) return;
  fm_gt_record rec;
  CHECK_OK(fm_reader_next(r, &rec, &err), &err);
  for (int i = 0; i < L1N; i++) {
    CHECK(rec.hardcall[i] == want[i]);
    CHECK_CLOSE(rec.dosage[i], (pr[i][1] + 2.0 * pr[i][2]) / 32768, 1e-15);
  }
  fm_reader_close(r);
  CHECK(fm_test_check_hardcall_only(open_bgen_ud, path) == 1);
  unlink(path);
}

int main(void) {
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/fm_bgen_XXXXXX", t && t[0] ? t : "/tmp");
  if (!mkdtemp(tmpdir)) {
    fprintf(stderr, "cannot create a temporary directory\n");
    return 1;
  }
  have_fixtures = find_fixtures();
  if (have_fixtures) {
    if (!load_traw() || !load_bed_chrx()) {
      fprintf(stderr, "cannot read the fixture oracles in %s\n", fixdir);
      return 1;
    }
  } else {
    printf("SKIP: fixtures not found (%s); set RFMALLOC_FIXTURES\n", fixdir);
  }
  FM_RUN(test_tiny_compressions);
  FM_RUN(test_tiny_no_ids_and_skip);
  FM_RUN(test_bad_headers);
  FM_RUN(test_truncated);
  FM_RUN(test_layout1_probabilities);
  FM_RUN(test_bits_and_ploidy);
  FM_RUN(test_huge_n_header);
  FM_RUN(test_huge_zstd_claim);
  FM_RUN(test_header_n_first_block);
  FM_RUN(test_mutations);
  FM_RUN(test_fixture_v11);
  FM_RUN(test_fixture_8bit);
  FM_RUN(test_fixture_16bit);
  FM_RUN(test_fixture_zstd);
  FM_RUN(test_fixture_phased);
  FM_RUN(test_stream);
  FM_RUN(test_hardcall_only);
  FM_RUN(test_plink2_rule);
  FM_RUN(test_layout1_rule);
  FM_RUN(test_fixture_full_decode);
  free_traw();
  free(bedx);
  static const char *names[] = {"tiny.bgen", "noids.bgen", "bad.bgen", "trunc.bgen", "l1.bgen"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char p[600];
    tmp_path(p, sizeof p, names[i]);
    unlink(p);
  }
  rmdir(tmpdir);
  FM_TEST_END();
}
