/* fmt_haps.c: Oxford HAPS + SAMPLE and IMPUTE2 HAPS + LEGEND + SAMPLE readers
 * (fm_fmt_text.h, docs/formats/text_formats.md). One line of each file at a time. */
#include "fm/fm_fmt_text.h"
#include "fmt_text_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct haps_impl {
  fm_text_lines in;
  fm_text_lines legend; /* gz == NULL for Oxford HAPS */
  int has_legend;
  char *chrom;          /* owned; legend variant only */
  int64_t n;
  char **fields;        /* (5 + 2n + 1) */
  char *lfields[5];
  int8_t *hardcall;
  int8_t *hap;
} haps_impl;

static fm_status next_nonblank(fm_text_lines *l, fm_err *err) {
  fm_status st;
  do {
    st = fm_text_lines_next(l, err);
    if (st != FM_OK) return st;
  } while (l->line[strspn(l->line, " \t")] == '\0');
  return FM_OK;
}

static fm_status haps_next(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  haps_impl *h = r->impl;
  fm_text_lines *in = &h->in;
  int64_t n = h->n, lead = h->has_legend ? 0 : 5;
  fm_status st = next_nonblank(in, err);
  if (h->has_legend) {
    fm_status sl = next_nonblank(&h->legend, err);
    if (st == FM_FMT_END && sl == FM_FMT_END) return FM_FMT_END;
    if (st != FM_OK && st != FM_FMT_END) return st;
    if (sl != FM_OK && sl != FM_FMT_END) return sl;
    if (st == FM_FMT_END)
      return fm_err_set(err, FM_EMISMATCH, "%s ends after %lld lines but %s has a variant on line %lld",
                        in->path, (long long)in->line_no, h->legend.path,
                        (long long)h->legend.line_no);
    if (sl == FM_FMT_END)
      return fm_err_set(err, FM_EMISMATCH, "%s ends after %lld lines but %s has a variant on line %lld",
                        h->legend.path, (long long)h->legend.line_no, in->path,
                        (long long)in->line_no);
  } else if (st != FM_OK) {
    return st;
  }
  int64_t nf = fm_text_split(in->line, h->fields, lead + 2 * n + 1);
  if (nf != lead + 2 * n)
    return fm_err_set(err, FM_EFORMAT,
                      h->has_legend
                          ? "%s line %lld: expected %lld%s alleles (2 for each of the %lld samples), found %lld fields"
                          : "%s line %lld: expected %lld fields (5 leading columns chrom id pos a0 a1%s and 2 alleles "
                            "for each of the %lld samples), found %lld",
                      in->path, (long long)in->line_no, (long long)(lead + 2 * n), "", (long long)n,
                      (long long)nf);
  char **f = h->fields;
  const char *chrom, *id, *ref, *alt, *pos_s;
  if (h->has_legend) {
    fm_text_lines *lg = &h->legend;
    int64_t lf = fm_text_split(lg->line, h->lfields, 5);
    if (lf != 4)
      return fm_err_set(err, FM_EFORMAT, "%s line %lld: expected 4 fields (id position a0 a1), found %lld",
                        lg->path, (long long)lg->line_no, (long long)lf);
    chrom = h->chrom;
    id = h->lfields[0];
    pos_s = h->lfields[1];
    ref = h->lfields[2];
    alt = h->lfields[3];
  } else {
    chrom = f[0];
    id = f[1];
    pos_s = f[2];
    ref = f[3];
    alt = f[4];
  }
  int64_t pos;
  if (!fm_text_parse_i64(pos_s, &pos))
    return fm_err_set(err, FM_EFORMAT, "%s line %lld: expected a base-pair position, found \"%.40s\"",
                      h->has_legend ? h->legend.path : in->path,
                      (long long)(h->has_legend ? h->legend.line_no : in->line_no), pos_s);
  char **p = f + lead;
  for (int64_t i = 0; i < n; i++) {
    const char *a = p[2 * i], *b = p[2 * i + 1];
    int8_t x, y;
    if ((a[0] != '0' && a[0] != '1') || a[1] != '\0' ||
        ((b[0] != '0' && b[0] != '1' && b[0] != '-') || b[1] != '\0')) {
      const char *bad = ((a[0] != '0' && a[0] != '1') || a[1] != '\0') ? a : b;
      return fm_err_set(err, FM_EFORMAT,
                        "%s line %lld: expected allele code 0 or 1 (or - for a haploid second slot) for sample %lld "
                        "(field %lld), found \"%.20s\"",
                        in->path, (long long)in->line_no, (long long)(i + 1),
                        (long long)(lead + 2 * i + (bad == a ? 1 : 2)), bad);
    }
    x = (int8_t)(a[0] - '0');
    if (b[0] == '-') { /* haploid: the allele fills both slots (docs/formats/conventions.md) */
      h->hap[2 * i] = x;
      h->hap[2 * i + 1] = x;
      h->hardcall[i] = (int8_t)(2 * x);
    } else {
      y = (int8_t)(b[0] - '0');
      h->hap[2 * i] = x;
      h->hap[2 * i + 1] = y;
      h->hardcall[i] = (int8_t)(x + y);
    }
  }
  rec->n_samples = n;
  rec->chrom = chrom;
  rec->pos = pos;
  rec->id = id;
  rec->ref = ref;
  rec->alt = alt;
  rec->hardcall = h->hardcall;
  rec->dosage = NULL;
  rec->hap = h->hap;
  rec->is_phased = 1;
  return FM_OK;
}

static void haps_close(fm_reader *r) {
  haps_impl *h = r->impl;
  if (!h) return;
  fm_text_lines_close(&h->in);
  fm_text_lines_close(&h->legend);
  free(h->chrom);
  free(h->fields);
  free(h->hardcall);
  free(h->hap);
  free(h);
  r->impl = NULL;
}

static const fm_reader_ops haps_ops = {haps_next, haps_close, NULL};

static fm_status open_common(const char *haps_path, const char *legend_path,
                             const char *sample_path, const char *chrom, fm_reader **out,
                             fm_err *err) {
  fm_status st;
  fm_reader *r = fm_reader_new(&haps_ops, sizeof(haps_impl));
  if (!r) return fm_err_set(err, FM_ENOMEM, "out of memory opening %s", haps_path);
  haps_impl *h = r->impl;
  st = fm_text_read_ids(sample_path, 0, &r->sample_ids, &r->info.n_samples, &r->sex, err);
  if (st != FM_OK) goto fail;
  h->n = r->info.n_samples;
  if ((st = fm_text_lines_open(&h->in, haps_path, err)) != FM_OK) goto fail;
  h->in.max_len = (size_t)(5 + 2 * h->n) * 8 + ((size_t)1 << 20);
  if (legend_path) {
    h->has_legend = 1;
    h->chrom = fm_text_strdup(chrom ? chrom : ".");
    if (!h->chrom) { st = fm_err_set(err, FM_ENOMEM, "out of memory opening %s", legend_path); goto fail; }
    if ((st = fm_text_lines_open(&h->legend, legend_path, err)) != FM_OK) goto fail;
    st = fm_text_lines_next(&h->legend, err); /* header "id position a0 a1" */
    if (st == FM_FMT_END) {
      st = fm_err_set(err, FM_EFORMAT, "%s: empty, expected a header line (id position a0 a1)", legend_path);
      goto fail;
    }
    if (st != FM_OK) goto fail;
    char *hf[5];
    int64_t nf = fm_text_split(h->legend.line, hf, 5);
    if (nf != 4) {
      st = fm_err_set(err, FM_EFORMAT, "%s line 1: expected a 4-column header (id position a0 a1), found %lld fields",
                      legend_path, (long long)nf);
      goto fail;
    }
  }
  int64_t lead = legend_path ? 0 : 5;
  h->fields = malloc((size_t)(lead + 2 * h->n + 1) * sizeof *h->fields);
  h->hardcall = malloc((size_t)(h->n ? h->n : 1));
  h->hap = malloc((size_t)(h->n ? 2 * h->n : 1));
  if (!h->fields || !h->hardcall || !h->hap) {
    st = fm_err_set(err, FM_ENOMEM, "out of memory opening %s (%lld samples)", haps_path,
                    (long long)h->n);
    goto fail;
  }
  r->info.format = legend_path ? "haps-legend" : "haps";
  r->info.n_variants = -1;
  r->info.is_phased = 1;
  r->info.has_dosage = 0;
  *out = r;
  return FM_OK;
fail:
  fm_reader_close(r);
  return st;
}

fm_status fm_fmt_haps_open(const char *haps_path, const char *sample_path, fm_reader **out,
                           fm_err *err) {
  if (out) *out = NULL;
  if (!haps_path || !sample_path || !out)
    return fm_err_set(err, FM_EARG, "fm_fmt_haps_open: haps_path, sample_path and out must not be NULL");
  return open_common(haps_path, NULL, sample_path, NULL, out, err);
}

fm_status fm_fmt_haps_legend_open(const char *haps_path, const char *legend_path,
                                  const char *sample_path, const char *chrom, fm_reader **out,
                                  fm_err *err) {
  if (out) *out = NULL;
  if (!haps_path || !legend_path || !sample_path || !out)
    return fm_err_set(err, FM_EARG,
                      "fm_fmt_haps_legend_open: haps_path, legend_path, sample_path and out must not be NULL");
  return open_common(haps_path, legend_path, sample_path, chrom, out, err);
}
