/* fmt.c: the reader interface shared by every genotype format (fm_fmt.h). */
#include "fm/fm_fmt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the male-X rule (fm_fmt.h) -------------------------------------------- */

struct fm_sex_state {
  int64_t *male;   /* indices of the male samples, ascending */
  int64_t n_male;
  int64_t n;       /* samples the buffers hold */
  /* copies of a record's arrays with the rule applied, made on demand */
  int8_t *hardcall;
  uint8_t *bed2;
  double *dosage;
  int8_t *hap;
};

static void sex_state_free(struct fm_sex_state *s) {
  if (!s) return;
  free(s->male);
  free(s->hardcall);
  free(s->bed2);
  free(s->dosage);
  free(s->hap);
  free(s);
}

uint8_t fm_sex_code(const char *tok) {
  if (!tok || !tok[0] || tok[1]) return FM_SEX_UNKNOWN;
  switch (tok[0]) {
    case '1': case 'M': case 'm': return FM_SEX_MALE;
    case '2': case 'F': case 'f': return FM_SEX_FEMALE;
    default: return FM_SEX_UNKNOWN;
  }
}

int fm_chrom_is_x(const char *c) {
  if (!c) return 0;
  if ((c[0] == 'c' || c[0] == 'C') && (c[1] == 'h' || c[1] == 'H') && (c[2] == 'r' || c[2] == 'R'))
    c += 3;
  return ((c[0] == 'X' || c[0] == 'x') && c[1] == '\0') || strcmp(c, "23") == 0;
}

fm_status fm_reader_set_sex(fm_reader *r, const uint8_t *sex, int64_t n, fm_err *err) {
  if (!r) return fm_err_set(err, FM_EARG, "fm_reader_set_sex: reader must not be NULL");
  if (sex && n != r->info.n_samples)
    return fm_err_set(err, FM_EARG, "%lld sex codes were given for the reader's %lld samples",
                      (long long)n, (long long)r->info.n_samples);
  uint8_t *copy = NULL;
  if (sex) {
    for (int64_t i = 0; i < n; i++)
      if (sex[i] > FM_SEX_FEMALE)
        return fm_err_set(err, FM_EARG,
                          "sex code %d of sample %lld is not 0 (unknown), 1 (male) or 2 (female)",
                          (int)sex[i], (long long)i + 1);
    if (!(copy = malloc((size_t)(n > 0 ? n : 1))))
      return fm_err_set(err, FM_ENOMEM, "out of memory for %lld sex codes", (long long)n);
    if (n > 0) memcpy(copy, sex, (size_t)n);
  }
  free(r->sex);
  r->sex = copy;
  sex_state_free(r->sex_state); /* rebuilt from the new codes at the next record */
  r->sex_state = NULL;
  return FM_OK;
}

static fm_status sex_state_make(fm_reader *r, fm_err *err) {
  const int64_t n = r->info.n_samples;
  struct fm_sex_state *s = calloc(1, sizeof *s);
  if (!s) return fm_err_set(err, FM_ENOMEM, "out of memory for the male-X rule");
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) k += r->sex[i] == FM_SEX_MALE;
  s->n = n;
  s->male = malloc((size_t)(k > 0 ? k : 1) * sizeof *s->male);
  if (!s->male) {
    free(s);
    return fm_err_set(err, FM_ENOMEM, "out of memory for the male-X rule");
  }
  for (int64_t i = 0; i < n; i++)
    if (r->sex[i] == FM_SEX_MALE) s->male[s->n_male++] = i;
  r->sex_state = s;
  return FM_OK;
}

/* Is male sample i heterozygous in rec? */
static int male_het(const fm_gt_record *rec, int64_t i) {
  if (rec->hardcall) {
    if (rec->hardcall[i] == 1) return 1;
  } else if (rec->bed2 && ((rec->bed2[i >> 2] >> (2 * (i & 3))) & 3u) == 2u) {
    return 1;
  }
  if (rec->dosage && fm_hardcall_from_dosage(rec->dosage[i]) == 1) return 1;
  if (rec->hap) {
    const int8_t a = rec->hap[2 * i], b = rec->hap[2 * i + 1];
    if (a >= 0 && b >= 0 && a != b) return 1;
  }
  return rec->het_site && rec->het_site[i];
}

/* Point rec's arrays at copies in s (allocated on first use), once. */
static int copy_record(struct fm_sex_state *s, fm_gt_record *rec) {
  const size_t n = (size_t)(s->n > 0 ? s->n : 1), cb = (n + 3) / 4;
  if (rec->hardcall) {
    if (!s->hardcall && !(s->hardcall = malloc(n))) return 0;
    memcpy(s->hardcall, rec->hardcall, (size_t)s->n);
    rec->hardcall = s->hardcall;
  }
  if (rec->bed2) {
    if (!s->bed2 && !(s->bed2 = malloc(cb))) return 0;
    memcpy(s->bed2, rec->bed2, (size_t)(s->n + 3) / 4);
    rec->bed2 = s->bed2;
  }
  if (rec->dosage) {
    if (!s->dosage && !(s->dosage = malloc(n * sizeof *s->dosage))) return 0;
    memcpy(s->dosage, rec->dosage, (size_t)s->n * sizeof *s->dosage);
    rec->dosage = s->dosage;
  }
  if (rec->hap) {
    if (!s->hap && !(s->hap = malloc(2 * n))) return 0;
    memcpy(s->hap, rec->hap, 2 * (size_t)s->n);
    rec->hap = s->hap;
  }
  return 1;
}

static fm_status apply_male_x(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  if (!r->sex_state) {
    fm_status st = sex_state_make(r, err);
    if (st != FM_OK) return st;
  }
  struct fm_sex_state *s = r->sex_state;
  if (s->n_male == 0 || rec->n_samples != s->n || !fm_chrom_is_x(rec->chrom)) return FM_OK;
  int copied = 0;
  for (int64_t k = 0; k < s->n_male; k++) {
    const int64_t i = s->male[k];
    if (!male_het(rec, i)) continue;
    if (!copied) {
      if (!copy_record(s, rec))
        return fm_err_set(err, FM_ENOMEM, "out of memory applying the male-X rule to '%s'",
                          rec->id ? rec->id : "");
      copied = 1;
    }
    if (rec->hardcall) rec->hardcall[i] = FM_GT_MISSING;
    if (rec->bed2) { /* the reader's own bytes are const; the copy is s->bed2 */
      const unsigned sh = 2u * (unsigned)(i & 3);
      s->bed2[i >> 2] = (uint8_t)((s->bed2[i >> 2] & ~(3u << sh)) | (1u << sh));
    }
    if (rec->dosage) rec->dosage[i] = NAN;
    if (rec->hap) rec->hap[2 * i] = rec->hap[2 * i + 1] = FM_GT_MISSING;
  }
  return FM_OK;
}

fm_status fm_reader_next(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  if (!r || !r->ops || !rec) return fm_err_set(err, FM_EARG, "fm_reader_next: reader and record must not be NULL");
  rec->bed2 = NULL;
  rec->het_site = NULL;
  rec->cm = NAN;
  fm_status st = r->ops->next(r, rec, err);
  if (st == FM_OK && r->sex) st = apply_male_x(r, rec, err);
  return st;
}

fm_status fm_reader_count(fm_reader *r, int64_t *n_out, const fm_ctl *ctl, fm_err *err) {
  if (!r || !r->ops || !n_out)
    return fm_err_set(err, FM_EARG, "fm_reader_count: reader and count must not be NULL");
  *n_out = 0;
  if (r->ops->count) return r->ops->count(r, n_out, ctl, err);
  fm_gt_record rec;
  memset(&rec, 0, sizeof rec);
  for (;;) {
    if ((*n_out & 4095) == 0) {
      if (fm_ctl_cancelled(ctl))
        return fm_err_set(err, FM_ECANCELLED, "scanning records was interrupted after %lld records",
                          (long long)*n_out);
      fm_ctl_progress(ctl, (double)*n_out, NAN);
    }
    fm_status st = r->ops->next(r, &rec, err);
    if (st == FM_FMT_END) return FM_OK;
    if (st != FM_OK) return st;
    (*n_out)++;
  }
}

fm_reader *fm_reader_new(const fm_reader_ops *ops, size_t impl_size) {
  fm_reader *r = calloc(1, sizeof *r);
  void *impl = calloc(1, impl_size ? impl_size : 1);
  if (!r || !impl) {
    free(r);
    free(impl);
    return NULL;
  }
  r->ops = ops;
  r->impl = impl;
  return r;
}

void fm_reader_close(fm_reader *r) {
  if (!r) return;
  if (r->sample_ids) {
    for (int64_t i = 0; i < r->info.n_samples; i++) free(r->sample_ids[i]);
    free(r->sample_ids);
    r->sample_ids = NULL;
  }
  free(r->sex);
  r->sex = NULL;
  sex_state_free(r->sex_state);
  r->sex_state = NULL;
  if (r->ops && r->ops->close) r->ops->close(r); /* frees impl */
  free(r);
}

/* ---- plink2's hardcall rule (fm_fmt.h) ----------------------------------- */

uint32_t fm_dosage_units(double d) {
  if (!(d >= 0.0 && d <= 2.5)) return UINT32_MAX;
  return (uint32_t)floor(d * (double)FM_DOSAGE_UNITS + 0.5); /* d * 16384 is exact */
}

int8_t fm_hardcall_from_dosage(double d) {
  const uint32_t u = fm_dosage_units(d);
  return u == UINT32_MAX ? FM_GT_MISSING : fm_hardcall_from_units(u);
}

uint32_t fm_dosage_units_ratio(uint64_t num, uint64_t den) {
  const uint64_t x = num * FM_DOSAGE_UNITS, q = x / den, r = x % den;
  return (uint32_t)(q + (2 * r > den || (2 * r == den && (q & 1))));
}

/* Smallest num in [0, 2 den + 1] whose units reach `units` (units is never
 * above fm_dosage_units_ratio(2 den + 1, den)). */
static uint64_t first_num_at(uint64_t den, uint64_t units) {
  uint64_t lo = 0, hi = 2 * den + 1;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (fm_dosage_units_ratio(mid, den) >= units) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

void fm_hardcall_bounds(uint64_t den, uint64_t bound[4]) {
  bound[0] = first_num_at(den, FM_HARDCALL_MAX_DIST + 1);
  bound[1] = first_num_at(den, FM_DOSAGE_UNITS - FM_HARDCALL_MAX_DIST);
  bound[2] = first_num_at(den, FM_DOSAGE_UNITS + FM_HARDCALL_MAX_DIST + 1);
  bound[3] = first_num_at(den, 2 * FM_DOSAGE_UNITS - FM_HARDCALL_MAX_DIST);
}
