/* fmt_vcf.c: VCF/BCF reader over htslib (fm_fmt_vcf.h, docs/formats/vcf.md). */
#include "fm/fm_fmt_vcf.h"

#include <htslib/hts.h>
#include <htslib/tbx.h>
#include <htslib/vcf.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vcf_impl {
  char *path;          /* owned copy, for messages */
  htsFile *fp;         /* owned */
  bcf_hdr_t *hdr;      /* owned */
  bcf1_t *rec;         /* owned: the current htslib record */
  int is_bcf;
  hts_idx_t *idx;      /* owned: BCF index when a region is read */
  tbx_t *tbx;          /* owned: tabix index of a VCF.gz when a region is read */
  hts_itr_t *itr;      /* owned: region iterator, NULL for a whole-file read */
  int itr_empty;       /* the region names no contig of the index: no records */
  kstring_t line;      /* owned: text line of a tabix read */
  int64_t n;           /* samples */
  /* the record being split: its ALTs are emitted one at a time */
  int has_rec;         /* rec holds a record with ALTs left to emit */
  int next_alt;        /* 1-based allele index of the next split record */
  int32_t *gt;         /* owned by htslib's getter convention: (n_gt) GT values */
  int n_gt_alloc;
  int n_gt;            /* values in gt, < 0 when the record has no GT */
  float *ds;           /* (n_ds) DS values */
  int n_ds_alloc;
  int n_ds;            /* values in ds, < 0 when the record has no DS */
  /* per-record outputs */
  int8_t *hardcall;    /* (n) */
  double *dosage;      /* (n) */
  int8_t *hap;         /* (2 n) */
  uint8_t *ploidy;     /* (n) ploidy of each sample's call in the current record */
  uint8_t *hap_chrom;  /* (n) 1 when the sample had a non-missing haploid call on hap_rid */
  int hap_rid;         /* contig the hap_chrom flags belong to, -1 none yet */
  char *id_buf;        /* owned: synthesized CHROM:POS:REF:ALT */
  size_t id_cap;
  char last_chrom[128];/* last good record, for messages */
  int64_t last_pos;
  int64_t n_bad_dosage;/* problems log: DS values outside [0, 2] set to NaN */
} vcf_impl;

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static void vr_close(fm_reader *r) {
  vcf_impl *v = r ? r->impl : NULL;
  if (!v) return;
  if (v->itr) hts_itr_destroy(v->itr);
  if (v->idx) hts_idx_destroy(v->idx);
  if (v->tbx) tbx_destroy(v->tbx);
  if (v->rec) bcf_destroy(v->rec);
  if (v->hdr) bcf_hdr_destroy(v->hdr);
  if (v->fp) hts_close(v->fp);
  free(v->line.s);
  free(v->gt);
  free(v->ds);
  free(v->hardcall);
  free(v->dosage);
  free(v->hap);
  free(v->ploidy);
  free(v->hap_chrom);
  free(v->id_buf);
  free(v->path);
  free(v);
  r->impl = NULL;
}

/* Read the next htslib record into v->rec: 0 ok, 1 end, -1 error (err set). */
static int read_rec(vcf_impl *v, fm_err *err) {
  int ret;
  if (v->itr_empty) return 1;
  if (!v->itr) {
    ret = bcf_read(v->fp, v->hdr, v->rec);
  } else if (v->is_bcf) {
    ret = bcf_itr_next(v->fp, v->itr, v->rec);
  } else {
    ret = tbx_itr_next(v->fp, v->tbx, v->itr, &v->line);
    if (ret >= 0) ret = vcf_parse1(&v->line, v->hdr, v->rec) < 0 ? -2 : 0;
  }
  if (ret == -1) return 1;
  /* Undefined contigs and tags are added to the header by htslib with a
   * warning; every other error code marks a record we cannot trust. */
  int bad = ret < -1 || (v->rec->errcode & ~(BCF_ERR_CTG_UNDEF | BCF_ERR_TAG_UNDEF)) != 0;
  if (!bad && bcf_unpack(v->rec, BCF_UN_STR | BCF_UN_FMT) < 0) bad = 1;
  if (!bad && v->rec->n_allele < 1) bad = 1;
  if (bad) {
    const char *c = (ret >= -1 && v->rec->rid >= 0 && v->rec->rid < v->hdr->n[BCF_DT_CTG])
                        ? bcf_hdr_id2name(v->hdr, v->rec->rid)
                        : NULL;
    if (c && v->rec->pos >= 0)
      fm_err_set(err, FM_EFORMAT, "%s: malformed record at %s:%lld", v->path, c,
                 (long long)v->rec->pos + 1);
    else if (v->last_pos > 0)
      fm_err_set(err, FM_EFORMAT, "%s: malformed record after %s:%lld", v->path, v->last_chrom,
                 (long long)v->last_pos);
    else
      fm_err_set(err, FM_EFORMAT, "%s: malformed first record", v->path);
    return -1;
  }
  snprintf(v->last_chrom, sizeof v->last_chrom, "%s", bcf_seqname(v->hdr, v->rec));
  v->last_pos = (int64_t)v->rec->pos + 1;
  return 0;
}

/* Fetch GT and DS of v->rec once per htslib record. */
static fm_status load_fields(vcf_impl *v, fm_err *err) {
  /* htslib 1.16's bcf_get_format_values calls exit(1) on a FORMAT entry of
   * any storage type other than int8/16/32 or float (e.g. a GT with no
   * values, from a FORMAT column with empty keys "::GT", or a BCF type byte
   * out of range): refuse the record before asking for GT or DS. Only the
   * tags htslib would decode are checked (declared GT String, DS Float). */
  int gt_id = bcf_hdr_id2int(v->hdr, BCF_DT_ID, "GT"), ds_id = bcf_hdr_id2int(v->hdr, BCF_DT_ID, "DS");
  if (gt_id < 0 || !bcf_hdr_idinfo_exists(v->hdr, BCF_HL_FMT, gt_id) ||
      bcf_hdr_id2type(v->hdr, BCF_HL_FMT, gt_id) != BCF_HT_STR)
    gt_id = -1;
  if (ds_id < 0 || !bcf_hdr_idinfo_exists(v->hdr, BCF_HL_FMT, ds_id) ||
      bcf_hdr_id2type(v->hdr, BCF_HL_FMT, ds_id) != BCF_HT_REAL)
    ds_id = -1;
  for (int i = 0; i < (int)v->rec->n_fmt; i++) {
    const bcf_fmt_t *f = &v->rec->d.fmt[i];
    if (!f->p || f->id < 0 || (f->id != gt_id && f->id != ds_id)) continue;
    if (f->type != BCF_BT_INT8 && f->type != BCF_BT_INT16 && f->type != BCF_BT_INT32 &&
        f->type != BCF_BT_FLOAT)
      return fm_err_set(err, FM_EFORMAT, "%s: malformed %s field at %s:%lld", v->path,
                        f->id == gt_id ? "GT" : "DS", v->last_chrom, (long long)v->last_pos);
  }
  v->n_gt = bcf_get_genotypes(v->hdr, v->rec, &v->gt, &v->n_gt_alloc);
  if (v->n_gt == -4) return fm_err_set(err, FM_ENOMEM, "%s: out of memory at %s:%lld", v->path, v->last_chrom, (long long)v->last_pos);
  if (v->n_gt >= 0 && v->n_gt % (v->n > 0 ? v->n : 1) != 0)
    return fm_err_set(err, FM_EFORMAT, "%s: GT of %s:%lld has %d values for %lld samples",
                      v->path, v->last_chrom, (long long)v->last_pos, v->n_gt, (long long)v->n);
  v->n_ds = bcf_get_format_float(v->hdr, v->rec, "DS", &v->ds, &v->n_ds_alloc);
  if (v->n_ds == -4) return fm_err_set(err, FM_ENOMEM, "%s: out of memory at %s:%lld", v->path, v->last_chrom, (long long)v->last_pos);
  if (v->n_ds >= 0 && (v->n == 0 || v->n_ds % v->n != 0)) v->n_ds = -1;
  if (v->hap_rid != v->rec->rid) {
    memset(v->hap_chrom, 0, (size_t)v->n);
    v->hap_rid = v->rec->rid;
  }
  /* Ploidy of each call, and the haploid-on-this-contig flags, are set from
   * the whole record before any split record is emitted. */
  int per = v->n_gt > 0 && v->n > 0 ? v->n_gt / (int)v->n : 0;
  for (int64_t s = 0; s < v->n; s++) {
    int k = 0;
    const int32_t *g = per ? v->gt + s * per : NULL;
    while (k < per && g[k] != bcf_int32_vector_end) k++;
    v->ploidy[s] = (uint8_t)(k > 255 ? 255 : k);
    if (k == 1 && !bcf_gt_is_missing(g[0])) v->hap_chrom[s] = 1;
  }
  return FM_OK;
}

static const char *make_id(vcf_impl *v, const char *alt, fm_err *err, fm_status *st) {
  const char *id = v->rec->d.id;
  *st = FM_OK;
  if (id && strcmp(id, ".") != 0) return id;
  const char *chrom = bcf_seqname(v->hdr, v->rec);
  size_t need = strlen(chrom) + strlen(v->rec->d.allele[0]) + strlen(alt) + 32;
  if (need > v->id_cap) {
    char *b = realloc(v->id_buf, need);
    if (!b) {
      *st = fm_err_set(err, FM_ENOMEM, "%s: out of memory at %s:%lld", v->path, v->last_chrom,
                       (long long)v->last_pos);
      return NULL;
    }
    v->id_buf = b;
    v->id_cap = need;
  }
  snprintf(v->id_buf, v->id_cap, "%s:%lld:%s:%s", chrom, (long long)v->rec->pos + 1,
           v->rec->d.allele[0], alt);
  return v->id_buf;
}

static fm_status vr_next(fm_reader *r, fm_gt_record *out, fm_err *err) {
  vcf_impl *v = r->impl;
  memset(out, 0, sizeof *out);
  out->n_samples = v->n;
  if (!v->has_rec) {
    for (;;) {
      int rc = read_rec(v, err);
      if (rc < 0) return err ? err->code : FM_EFORMAT;
      if (rc > 0) return FM_FMT_END;
      /* A record with no ALT ('.') has nothing to count: skipped. */
      if (v->rec->n_allele < 2) continue;
      fm_status st = load_fields(v, err);
      if (st != FM_OK) return st;
      v->has_rec = 1;
      v->next_alt = 1;
      break;
    }
  }
  const int j = v->next_alt; /* counted allele index */
  const int n_allele = v->rec->n_allele;
  const int per = v->n_gt > 0 && v->n > 0 ? v->n_gt / (int)v->n : 0;
  int all_phased = per > 0;
  for (int64_t s = 0; s < v->n; s++) {
    const int32_t *g = per ? v->gt + s * per : NULL;
    const int k = per ? v->ploidy[s] : 0;
    int8_t hc = FM_GT_MISSING, h0 = FM_GT_MISSING, h1 = FM_GT_MISSING;
    if (k == 1) {
      if (!bcf_gt_is_missing(g[0])) {
        int a = bcf_gt_allele(g[0]);
        if (a < n_allele) {
          h0 = h1 = (int8_t)(a == j);
          hc = (int8_t)(2 * (a == j));
        }
      }
    } else if (k == 2) {
      if (!bcf_gt_is_phased(g[1])) all_phased = 0;
      int m0 = bcf_gt_is_missing(g[0]), m1 = bcf_gt_is_missing(g[1]);
      int a0 = m0 ? -1 : bcf_gt_allele(g[0]), a1 = m1 ? -1 : bcf_gt_allele(g[1]);
      if (a0 >= n_allele) a0 = -1, m0 = 1;
      if (a1 >= n_allele) a1 = -1, m1 = 1;
      if (!m0) h0 = (int8_t)(a0 == j);
      if (!m1) h1 = (int8_t)(a1 == j);
      if (!m0 && !m1) {
        if (a0 != a1 && v->hap_chrom[s]) {
          /* heterozygous call of a sample haploid on this contig */
          h0 = h1 = FM_GT_MISSING;
        } else {
          hc = (int8_t)((a0 == j) + (a1 == j));
        }
      }
    } else if (k > 2) {
      all_phased = 0; /* polyploid: not representable, missing */
    }
    v->hardcall[s] = hc;
    v->hap[2 * s] = h0;
    v->hap[2 * s + 1] = h1;
  }
  out->hardcall = v->hardcall;
  out->is_phased = all_phased && v->n > 0;
  out->hap = out->is_phased ? v->hap : NULL;
  if (out->is_phased) r->info.is_phased = 1;
  /* DS: Number=A (one per ALT) or one value for a biallelic record. */
  int ds_per = v->n_ds > 0 && v->n > 0 ? v->n_ds / (int)v->n : 0;
  if (ds_per >= n_allele - 1 || (ds_per == 1 && n_allele == 2)) {
    for (int64_t s = 0; s < v->n; s++) {
      float f = v->ds[s * ds_per + (j - 1)];
      double d = NAN;
      if (!bcf_float_is_missing(f) && !bcf_float_is_vector_end(f)) {
        d = (double)f;
        if (per && v->ploidy[s] == 1) d *= 2.0; /* haploid: PLINK 0..2 scale */
        if (!(d >= 0.0 && d <= 2.0 + 1e-6)) {
          v->n_bad_dosage++;
          d = NAN;
        } else if (d > 2.0) {
          d = 2.0;
        }
      }
      v->dosage[s] = d;
    }
    out->dosage = v->dosage;
    /* No GT: hardcalls from DS, the nearest count when within 0.1 of it
     * (plink2's default --hard-call-threshold 0.1; the 1e-6 absorbs DS's
     * float32 rounding, so 1.1 counts 1), else missing. */
    if (!per) {
      for (int64_t s = 0; s < v->n; s++) {
        double d = v->dosage[s], c = floor(d + 0.5);
        v->hardcall[s] = (int8_t)(!isnan(d) && fabs(d - c) <= 0.1 + 1e-6 ? (int)c : FM_GT_MISSING);
      }
    }
  }
  fm_status st;
  out->chrom = bcf_seqname(v->hdr, v->rec);
  out->pos = (int64_t)v->rec->pos + 1;
  out->ref = v->rec->d.allele[0];
  out->alt = v->rec->d.allele[j];
  out->id = make_id(v, out->alt, err, &st);
  if (st != FM_OK) return st;
  if (++v->next_alt >= n_allele) v->has_rec = 0;
  return FM_OK;
}

static const fm_reader_ops vr_ops = {vr_next, vr_close};

/* The first bytes of path, as hex and then as text when printable, for a
 * wrong-magic message ("23 23 6e 6f 74 76 \"##notv\""); 0 when the file
 * cannot be read. A VCF starts with "##fileformat=VCF", a BCF with "BCF\2",
 * either possibly inside BGZF (1f 8b). */
static int first_bytes_hex(const char *path, char *out, size_t n_out) {
  unsigned char b[6];
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  const size_t got = fread(b, 1, sizeof b, f);
  const int failed = ferror(f); /* e.g. a directory */
  fclose(f);
  if (failed) return 0;
  size_t k = 0;
  int text = got > 0;
  out[0] = '\0';
  if (got == 0) snprintf(out, n_out, "the file is empty");
  for (size_t i = 0; i < got && k < n_out; i++) {
    k += (size_t)snprintf(out + k, n_out - k, i ? " %02x" : "%02x", (unsigned)b[i]);
    if (b[i] < 0x20 || b[i] > 0x7e) text = 0;
  }
  if (text && k < n_out) snprintf(out + k, n_out - k, " \"%.*s\"", (int)got, (const char *)b);
  return 1;
}

fm_status fm_fmt_vcf_open(const char *path, const char *region, fm_reader **out, fm_err *err) {
  fm_reader *r = NULL;
  vcf_impl *v = NULL;
  fm_status st = FM_OK;
  if (out) *out = NULL;
  if (!path || !out) return fm_err_set(err, FM_EARG, "fm_fmt_vcf_open: path and out must not be NULL");
  r = calloc(1, sizeof *r);
  v = calloc(1, sizeof *v);
  if (!r || !v) {
    free(r);
    free(v);
    return fm_err_set(err, FM_ENOMEM, "%s: out of memory opening the file", path);
  }
  r->ops = &vr_ops;
  r->impl = v;
  v->hap_rid = -1;
  if (!(v->path = dup_str(path))) {
    st = fm_err_set(err, FM_ENOMEM, "%s: out of memory opening the file", path);
    goto fail;
  }
  v->fp = hts_open(path, "r");
  if (!v->fp) {
    /* htslib also refuses a readable file whose first bytes it cannot place */
    char magic[48];
    if (!first_bytes_hex(path, magic, sizeof magic)) {
      st = fm_err_set(err, FM_EIO, "%s: cannot open the file", path);
      goto fail;
    }
    st = fm_err_set(err, FM_EFORMAT, "%s: not a VCF or BCF file (byte offset 0: %s)", path, magic);
    goto fail;
  }
  const htsFormat *fmt = hts_get_format(v->fp);
  if (fmt->category != variant_data || (fmt->format != vcf && fmt->format != bcf)) {
    char magic[48];
    if (!first_bytes_hex(path, magic, sizeof magic)) snprintf(magic, sizeof magic, "unreadable");
    st = fm_err_set(err, FM_EFORMAT, "%s: not a VCF or BCF file (byte offset 0: %s)", path, magic);
    goto fail;
  }
  v->is_bcf = fmt->format == bcf;
  v->hdr = bcf_hdr_read(v->fp);
  if (!v->hdr) {
    st = fm_err_set(err, FM_EFORMAT, "%s: cannot read the VCF/BCF header", path);
    goto fail;
  }
  v->rec = bcf_init();
  if (!v->rec) {
    st = fm_err_set(err, FM_ENOMEM, "%s: out of memory opening the file", path);
    goto fail;
  }
  v->n = bcf_hdr_nsamples(v->hdr);
  if (region) {
    if (v->is_bcf) {
      v->idx = bcf_index_load(path);
      if (!v->idx) {
        st = fm_err_set(err, FM_EARG, "%s: region '%s' needs an index (.csi) beside the file", path, region);
        goto fail;
      }
      v->itr = bcf_itr_querys(v->idx, v->hdr, region);
    } else {
      if (fmt->compression != bgzf || !(v->tbx = tbx_index_load(path))) {
        st = fm_err_set(err, FM_EARG, "%s: region '%s' needs a BGZF file with an index (.tbi/.csi) beside it", path, region);
        goto fail;
      }
      v->itr = tbx_itr_querys(v->tbx, region);
    }
    if (!v->itr) v->itr_empty = 1;
  }
  size_t n = (size_t)(v->n > 0 ? v->n : 1);
  v->hardcall = malloc(n);
  v->dosage = malloc(n * sizeof(double));
  v->hap = malloc(2 * n);
  v->ploidy = calloc(n, 1);
  v->hap_chrom = calloc(n, 1);
  r->sample_ids = calloc(n, sizeof(char *));
  if (!v->hardcall || !v->dosage || !v->hap || !v->ploidy || !v->hap_chrom || !r->sample_ids) {
    st = fm_err_set(err, FM_ENOMEM, "%s: out of memory for %lld samples", path, (long long)v->n);
    goto fail;
  }
  r->info.format = v->is_bcf ? "bcf" : "vcf";
  r->info.n_samples = v->n; /* set before sample_ids so close frees what exists */
  for (int64_t s = 0; s < v->n; s++) {
    if (!(r->sample_ids[s] = dup_str(v->hdr->samples[s]))) {
      st = fm_err_set(err, FM_ENOMEM, "%s: out of memory for sample names", path);
      goto fail;
    }
  }
  r->info.n_variants = -1;
  r->info.is_phased = 0;
  int ds_id = bcf_hdr_id2int(v->hdr, BCF_DT_ID, "DS");
  r->info.has_dosage = ds_id >= 0 && bcf_hdr_idinfo_exists(v->hdr, BCF_HL_FMT, ds_id) &&
                       bcf_hdr_id2type(v->hdr, BCF_HL_FMT, ds_id) == BCF_HT_REAL;
  *out = r;
  return FM_OK;
fail:
  fm_reader_close(r);
  return st;
}
