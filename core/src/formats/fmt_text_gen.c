/* fmt_gen.c: Oxford GEN + SAMPLE reader (fm_fmt_text.h,
 * docs/formats/text_formats.md). One line per variant, read one at a time. */
#include "fm/fm_fmt_text.h"
#include "fmt_text_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct gen_impl {
  fm_text_lines in;
  int64_t n;
  char **fields; /* (6 + 3n + 1) field pointers into in.line */
  int8_t *hardcall;
  double *dosage;
} gen_impl;

/* Probability field: fast paths for "0" and "1", else strtod; 1 on success. */
static int parse_prob(const char *s, double *out) {
  if (s[0] == '0' && s[1] == '\0') { *out = 0.0; return 1; }
  if (s[0] == '1' && s[1] == '\0') { *out = 1.0; return 1; }
  char *end = NULL;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || !(v >= 0.0 && v <= 1.0)) return 0;
  *out = v;
  return 1;
}

static fm_status gen_next(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  gen_impl *g = r->impl;
  fm_text_lines *in = &g->in;
  fm_status st;
  do {
    st = fm_text_lines_next(in, err);
    if (st != FM_OK) return st;
  } while (in->line[strspn(in->line, " \t")] == '\0'); /* skip blank lines */
  int64_t n = g->n;
  int64_t nf = fm_text_split(in->line, g->fields, 6 + 3 * n + 1);
  int64_t lead;
  if (nf == 5 + 3 * n) lead = 5;
  else if (nf == 6 + 3 * n) lead = 6;
  else
    return fm_err_set(err, FM_EFORMAT,
                      "%s line %lld: expected 5 leading columns (chrom id pos a1 a2) and 3 probabilities "
                      "for each of the %lld samples (%lld fields), found %lld fields",
                      in->path, (long long)in->line_no, (long long)n, (long long)(5 + 3 * n),
                      (long long)nf);
  char **f = g->fields;
  int64_t pos;
  if (!fm_text_parse_i64(f[lead - 3], &pos))
    return fm_err_set(err, FM_EFORMAT, "%s line %lld: expected a base-pair position in column %lld, found \"%.40s\"",
                      in->path, (long long)in->line_no, (long long)(lead - 2), f[lead - 3]);
  char **p = f + lead;
  for (int64_t i = 0; i < n; i++, p += 3) {
    double q[3];
    for (int k = 0; k < 3; k++)
      if (!parse_prob(p[k], &q[k]))
        return fm_err_set(err, FM_EFORMAT,
                          "%s line %lld: expected a probability in [0, 1] for sample %lld (field %lld), found \"%.40s\"",
                          in->path, (long long)in->line_no, (long long)(i + 1),
                          (long long)(lead + 3 * i + k + 1), p[k]);
    double sum = q[0] + q[1] + q[2];
    if (sum > 1.0 + 1e-3)
      return fm_err_set(err, FM_EFORMAT, "%s line %lld: probabilities of sample %lld sum to %.6g, more than 1",
                        in->path, (long long)in->line_no, (long long)(i + 1), sum);
    if (sum == 0.0) {
      g->dosage[i] = NAN;
      g->hardcall[i] = FM_GT_MISSING;
      continue;
    }
    g->dosage[i] = q[1] + 2.0 * q[2];
    g->hardcall[i] = fm_hardcall_from_dosage(g->dosage[i]); /* plink2's rule (fm_fmt.h) */
  }
  rec->n_samples = n;
  rec->chrom = f[0];
  rec->pos = pos;
  rec->id = f[lead == 5 ? 1 : 2];
  rec->ref = f[lead - 2];
  rec->alt = f[lead - 1];
  rec->hardcall = g->hardcall;
  rec->dosage = g->dosage;
  rec->hap = NULL;
  rec->is_phased = 0;
  return FM_OK;
}

static void gen_close(fm_reader *r) {
  gen_impl *g = r->impl;
  if (!g) return;
  fm_text_lines_close(&g->in);
  free(g->fields);
  free(g->hardcall);
  free(g->dosage);
  free(g);
  r->impl = NULL;
}

static const fm_reader_ops gen_ops = {gen_next, gen_close, NULL};

fm_status fm_fmt_gen_open(const char *gen_path, const char *sample_path, fm_reader **out,
                          fm_err *err) {
  if (out) *out = NULL;
  if (!gen_path || !sample_path || !out)
    return fm_err_set(err, FM_EARG, "fm_fmt_gen_open: gen_path, sample_path and out must not be NULL");
  fm_status st;
  fm_reader *r = fm_reader_new(&gen_ops, sizeof(gen_impl));
  if (!r) return fm_err_set(err, FM_ENOMEM, "out of memory opening %s", gen_path);
  gen_impl *g = r->impl;
  st = fm_text_read_ids(sample_path, 0, &r->sample_ids, &r->info.n_samples, &r->sex, err);
  if (st != FM_OK) goto fail;
  g->n = r->info.n_samples;
  if ((st = fm_text_lines_open(&g->in, gen_path, err)) != FM_OK) goto fail;
  g->in.max_len = (size_t)(6 + 3 * g->n) * 64 + ((size_t)1 << 20);
  g->fields = malloc((size_t)(6 + 3 * g->n + 1) * sizeof *g->fields);
  g->hardcall = malloc((size_t)(g->n ? g->n : 1));
  g->dosage = malloc((size_t)(g->n ? g->n : 1) * sizeof *g->dosage);
  if (!g->fields || !g->hardcall || !g->dosage) {
    st = fm_err_set(err, FM_ENOMEM, "out of memory opening %s (%lld samples)", gen_path,
                    (long long)g->n);
    goto fail;
  }
  r->info.format = "gen";
  r->info.n_variants = -1;
  r->info.is_phased = 0;
  r->info.has_dosage = 1;
  *out = r;
  return FM_OK;
fail:
  fm_reader_close(r);
  return st;
}

fm_status fm_fmt_sample_sex(fm_reader *r, const char *sample_path, fm_err *err) {
  if (!r || !sample_path)
    return fm_err_set(err, FM_EARG, "fm_fmt_sample_sex: r and sample_path must not be NULL");
  char **ids = NULL;
  uint8_t *sex = NULL;
  int64_t n = 0;
  fm_status st = fm_text_read_ids(sample_path, 0, &ids, &n, &sex, err);
  if (st != FM_OK) return st;
  fm_text_free_ids(ids, n);
  if (sex && n != r->info.n_samples)
    st = fm_err_set(err, FM_EMISMATCH, "sample file '%s' lists %lld samples but the %s file has %lld",
                    sample_path, (long long)n, r->info.format ? r->info.format : "genotype",
                    (long long)r->info.n_samples);
  else if (sex)
    st = fm_reader_set_sex(r, sex, n, err);
  free(sex);
  return st;
}
