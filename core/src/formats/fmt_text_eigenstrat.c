/* fmt_eigenstrat.c: EIGENSTRAT reader, text .geno or packed ancestrymap
 * .geno (detected from the "GENO" magic), with .snp and .ind (fm_fmt_text.h,
 * docs/formats/text_formats.md). One .snp line and one .geno line or record
 * at a time. */
#include "fm/fm_fmt_text.h"
#include "fmt_text_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PACKED_MIN_RECORD 48

typedef struct eig_impl {
  fm_text_lines geno;
  fm_text_lines snp;
  int is_packed;
  int64_t n;
  int64_t n_snp_header; /* packed: SNP count from the header */
  int64_t k;            /* records returned so far */
  size_t rlen;          /* packed record bytes */
  unsigned char *rec;   /* packed record buffer (rlen) */
  char *sfields[7];
  int8_t *hardcall;
} eig_impl;

static const char missing_allele[] = ".";

static fm_status next_nonblank(fm_text_lines *l, fm_err *err) {
  fm_status st;
  do {
    st = fm_text_lines_next(l, err);
    if (st != FM_OK) return st;
  } while (l->line[strspn(l->line, " \t")] == '\0');
  return FM_OK;
}

/* Parse the current .snp line into rec metadata. */
static fm_status parse_snp(eig_impl *e, fm_gt_record *rec, fm_err *err) {
  fm_text_lines *s = &e->snp;
  int64_t nf = fm_text_split(s->line, e->sfields, 7);
  if (nf != 4 && nf != 6)
    return fm_err_set(err, FM_EFORMAT,
                      "%s line %lld: expected 6 fields (id chrom cM pos a1 a2) or 4 (no alleles), found %lld",
                      s->path, (long long)s->line_no, (long long)nf);
  int64_t pos;
  if (!fm_text_parse_i64(e->sfields[3], &pos))
    return fm_err_set(err, FM_EFORMAT, "%s line %lld: expected a base-pair position in column 4, found \"%.40s\"",
                      s->path, (long long)s->line_no, e->sfields[3]);
  rec->id = e->sfields[0];
  rec->chrom = e->sfields[1];
  rec->pos = pos;
  rec->alt = nf == 6 ? e->sfields[4] : missing_allele;
  rec->ref = nf == 6 ? e->sfields[5] : missing_allele;
  return FM_OK;
}

static fm_status eig_next(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  eig_impl *e = r->impl;
  int64_t n = e->n;
  fm_status ss = next_nonblank(&e->snp, err);
  if (ss != FM_OK && ss != FM_FMT_END) return ss;
  if (e->is_packed) {
    if (ss == FM_FMT_END) {
      const unsigned char *p;
      size_t avail;
      fm_status st = fm_text_lines_peek(&e->geno, &p, &avail, err);
      if (st != FM_OK) return st;
      if (e->k != e->n_snp_header)
        return fm_err_set(err, FM_EMISMATCH, "%s ends after %lld SNP lines but the header of %s (byte offset 0) says %lld SNPs",
                          e->snp.path, (long long)e->k, e->geno.path, (long long)e->n_snp_header);
      if (avail > 0)
        return fm_err_set(err, FM_EFORMAT, "%s: unexpected bytes after the last record (record %lld)",
                          e->geno.path, (long long)e->k);
      return FM_FMT_END;
    }
    if (e->k >= e->n_snp_header)
      return fm_err_set(err, FM_EMISMATCH, "%s line %lld: more SNPs than the %lld of the header of %s",
                        e->snp.path, (long long)e->snp.line_no, (long long)e->n_snp_header,
                        e->geno.path);
    size_t got = 0;
    fm_status st = fm_text_lines_read(&e->geno, e->rec, e->rlen, &got, err);
    if (st != FM_OK) return st;
    if (got < e->rlen)
      return fm_err_set(err, FM_EFORMAT,
                        "%s: truncated at record %lld (0-based, byte offset %llu): expected %zu bytes, found %zu",
                        e->geno.path, (long long)e->k,
                        (unsigned long long)((uint64_t)(e->k + 1) * e->rlen), e->rlen, got);
    for (int64_t i = 0; i < n; i++) {
      int v = (e->rec[i >> 2] >> (2 * (3 - (i & 3)))) & 3;
      e->hardcall[i] = v == 3 ? FM_GT_MISSING : (int8_t)v;
    }
  } else {
    fm_status sg = next_nonblank(&e->geno, err);
    if (sg != FM_OK && sg != FM_FMT_END) return sg;
    if (sg == FM_FMT_END && ss == FM_FMT_END) return FM_FMT_END;
    if (sg == FM_FMT_END)
      return fm_err_set(err, FM_EMISMATCH, "%s ends after %lld lines but %s has a SNP on line %lld",
                        e->geno.path, (long long)e->geno.line_no, e->snp.path,
                        (long long)e->snp.line_no);
    if (ss == FM_FMT_END)
      return fm_err_set(err, FM_EMISMATCH, "%s ends after %lld lines but %s has genotypes on line %lld",
                        e->snp.path, (long long)e->snp.line_no, e->geno.path,
                        (long long)e->geno.line_no);
    const char *g = e->geno.line;
    if ((int64_t)e->geno.len != n)
      return fm_err_set(err, FM_EFORMAT, "%s line %lld: expected %lld genotype characters (one per .ind sample), found %zu",
                        e->geno.path, (long long)e->geno.line_no, (long long)n, e->geno.len);
    for (int64_t i = 0; i < n; i++) {
      char c = g[i];
      if (c >= '0' && c <= '2') e->hardcall[i] = (int8_t)(c - '0');
      else if (c == '9') e->hardcall[i] = FM_GT_MISSING;
      else
        return fm_err_set(err, FM_EFORMAT,
                          "%s line %lld: expected genotype code 0, 1, 2 or 9 for sample %lld (column %lld), found '%c' (byte %d)",
                          e->geno.path, (long long)e->geno.line_no, (long long)(i + 1),
                          (long long)(i + 1), (c >= 32 && c < 127) ? c : '?', (int)(unsigned char)c);
    }
  }
  fm_status st = parse_snp(e, rec, err);
  if (st != FM_OK) return st;
  rec->n_samples = n;
  rec->hardcall = e->hardcall;
  rec->dosage = NULL;
  rec->hap = NULL;
  rec->is_phased = 0;
  e->k++;
  return FM_OK;
}

static void eig_close(fm_reader *r) {
  eig_impl *e = r->impl;
  if (!e) return;
  fm_text_lines_close(&e->geno);
  fm_text_lines_close(&e->snp);
  free(e->rec);
  free(e->hardcall);
  free(e);
  r->impl = NULL;
}

static const fm_reader_ops eig_ops = {eig_next, eig_close, NULL};

/* Non-blank lines of the .snp at path (the SNPs eig_next would read). */
static fm_status count_snp_lines(const char *path, int64_t *n_out, fm_err *err) {
  fm_text_lines l = {0};
  int64_t n = 0;
  fm_status st = fm_text_lines_open(&l, path, err);
  if (st == FM_OK) {
    l.max_len = (size_t)1 << 20; /* as eig_next reads it */
    while ((st = next_nonblank(&l, err)) == FM_OK) n++;
    if (st == FM_FMT_END) st = FM_OK;
  }
  fm_text_lines_close(&l);
  *n_out = n;
  return st;
}

/* Size in bytes of the file at path when it is stored as is (not gzip,
 * which fm_text_lines also reads), else -1. */
static int64_t plain_file_size(const char *path) {
  struct stat sb;
  unsigned char magic[2] = {0, 0};
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  const size_t got = fread(magic, 1, 2, f);
  fclose(f);
  const int ok = stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
  if (!ok || (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b)) return -1;
  return (int64_t)sb.st_size;
}

/* Read and check the packed header record: its individual count against
 * the .ind, its SNP count against the .snp (snp_path) and, for a .geno
 * stored as is, against the file's size (a header record and one record per
 * SNP, each of max(ceil(2 n / 8), 48) bytes). A header that says 10 SNPs
 * beside a .snp of 1346, or 10^12, read 10 records or sized arrays by it. */
static fm_status open_packed(eig_impl *e, const char *snp_path, fm_err *err) {
  char head[PACKED_MIN_RECORD + 1];
  size_t got = 0;
  fm_status st = fm_text_lines_read(&e->geno, head, PACKED_MIN_RECORD, &got, err);
  if (st != FM_OK) return st;
  if (got < PACKED_MIN_RECORD)
    return fm_err_set(err, FM_EFORMAT, "%s: truncated header record: expected at least %d bytes, found %zu",
                      e->geno.path, PACKED_MIN_RECORD, got);
  head[PACKED_MIN_RECORD] = '\0';
  /* "GENO <n_ind> <n_snp> <hash> <hash>": the counts are checked, the hashes only parsed */
  char *f[6];
  int64_t nf = fm_text_split(head, f, 6);
  int64_t nind = -1, nsnp = -1;
  if (nf < 5 || strcmp(f[0], "GENO") != 0 || !fm_text_parse_i64(f[1], &nind) ||
      !fm_text_parse_i64(f[2], &nsnp) || strspn(f[3], "0123456789abcdefABCDEF") != strlen(f[3]) ||
      strspn(f[4], "0123456789abcdefABCDEF") != strlen(f[4]))
    return fm_err_set(err, FM_EFORMAT,
                      "%s: expected a packed header \"GENO <n_ind> <n_snp> <ind hash> <snp hash>\" in the first record",
                      e->geno.path);
  if (nind != e->n)
    return fm_err_set(err, FM_EMISMATCH, "%s: the header (byte offset 0) says %lld individuals but %s lists %lld",
                      e->geno.path, (long long)nind, "the .ind file", (long long)e->n);
  uint64_t need = ((uint64_t)nind * 2 + 7) / 8;
  e->rlen = need < PACKED_MIN_RECORD ? PACKED_MIN_RECORD : (size_t)need;
  e->n_snp_header = nsnp;
  e->rec = malloc(e->rlen);
  if (!e->rec) return fm_err_set(err, FM_ENOMEM, "out of memory opening %s", e->geno.path);
  if (e->rlen > PACKED_MIN_RECORD) { /* rest of the header record */
    size_t rest = e->rlen - PACKED_MIN_RECORD;
    st = fm_text_lines_read(&e->geno, e->rec, rest, &got, err);
    if (st != FM_OK) return st;
    if (got < rest)
      return fm_err_set(err, FM_EFORMAT, "%s: truncated header record: expected %zu bytes, found %zu",
                        e->geno.path, e->rlen, got + PACKED_MIN_RECORD);
  }
  int64_t n_lines = 0;
  if ((st = count_snp_lines(snp_path, &n_lines, err)) != FM_OK) return st;
  if (n_lines != nsnp)
    return fm_err_set(err, FM_EMISMATCH,
                      "%s: the header (byte offset 0) says %lld SNPs but %s has %lld SNP lines",
                      e->geno.path, (long long)nsnp, snp_path, (long long)n_lines);
  const int64_t size = plain_file_size(e->geno.path);
  if (size >= 0) {
    const uint64_t rlen = e->rlen, have = (uint64_t)size;
    /* records the file holds after the header record, whole or cut */
    const uint64_t whole = have / rlen - (have >= rlen), cut = have % rlen;
    if (whole < (uint64_t)nsnp)
      return fm_err_set(err, FM_EFORMAT,
                        "%s: truncated at record %llu (0-based, byte offset %llu): expected %zu bytes, "
                        "found %llu (the header at byte offset 0 says %lld SNPs: %llu bytes in all)",
                        e->geno.path, (unsigned long long)whole,
                        (unsigned long long)((whole + 1) * rlen), e->rlen, (unsigned long long)cut,
                        (long long)nsnp, (unsigned long long)((uint64_t)(nsnp + 1) * rlen));
    if (whole > (uint64_t)nsnp || cut != 0)
      return fm_err_set(err, FM_EFORMAT,
                        "%s: %llu bytes after the last record, which ends at byte offset %llu "
                        "(the header at byte offset 0 says %lld SNPs)",
                        e->geno.path, (unsigned long long)(have - (uint64_t)(nsnp + 1) * rlen),
                        (unsigned long long)((uint64_t)(nsnp + 1) * rlen), (long long)nsnp);
  }
  return FM_OK;
}

fm_status fm_fmt_eigenstrat_open(const char *geno_path, const char *snp_path,
                                 const char *ind_path, fm_reader **out, fm_err *err) {
  if (out) *out = NULL;
  if (!geno_path || !snp_path || !ind_path || !out)
    return fm_err_set(err, FM_EARG,
                      "fm_fmt_eigenstrat_open: geno_path, snp_path, ind_path and out must not be NULL");
  fm_status st;
  fm_reader *r = fm_reader_new(&eig_ops, sizeof(eig_impl));
  if (!r) return fm_err_set(err, FM_ENOMEM, "out of memory opening %s", geno_path);
  eig_impl *e = r->impl;
  st = fm_text_read_ids(ind_path, 1, &r->sample_ids, &r->info.n_samples, &r->sex, err);
  if (st != FM_OK) goto fail;
  e->n = r->info.n_samples;
  if ((st = fm_text_lines_open(&e->snp, snp_path, err)) != FM_OK) goto fail;
  if ((st = fm_text_lines_open(&e->geno, geno_path, err)) != FM_OK) goto fail;
  e->geno.max_len = (size_t)e->n * 2 + ((size_t)1 << 20);
  e->snp.max_len = (size_t)1 << 20;
  const unsigned char *p;
  size_t avail;
  if ((st = fm_text_lines_peek(&e->geno, &p, &avail, err)) != FM_OK) goto fail;
  if (avail >= 5 && memcmp(p, "TGENO", 5) == 0) {
    st = fm_err_set(err, FM_EUNSUPPORTED, "%s: transposed packed ancestrymap (TGENO) is not supported",
                    geno_path);
    goto fail;
  }
  e->is_packed = avail >= 4 && memcmp(p, "GENO", 4) == 0;
  e->hardcall = malloc((size_t)(e->n ? e->n : 1));
  if (!e->hardcall) {
    st = fm_err_set(err, FM_ENOMEM, "out of memory opening %s", geno_path);
    goto fail;
  }
  if (e->is_packed && (st = open_packed(e, snp_path, err)) != FM_OK) goto fail;
  r->info.format = e->is_packed ? "eigenstrat-packed" : "eigenstrat";
  r->info.n_variants = e->is_packed ? e->n_snp_header : -1;
  r->info.is_phased = 0;
  r->info.has_dosage = 0;
  *out = r;
  return FM_OK;
fail:
  fm_reader_close(r);
  return st;
}
