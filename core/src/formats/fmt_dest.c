/* fmt_dest.c: destinations of genotype records and the stream driver
 * (fm_fmt.h). Layouts: docs/formats/{bed,dos8,hap1}.md and
 * docs/formats/conventions.md. */
#include "fm/fm_codec_bed2.h"
#include "fm/fm_codec_dos8.h"
#include "fm/fm_codec_hap1.h"
#include "fm/fm_fmt.h"
#include "fm/fm_panel.h"

#include "base/pages.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef long long ll;

/* Each destination kind's name (Rpgen's `destination`) and stored dtype. */
static const struct {
  const char *name;
  fm_dtype dtype;
} kinds[] = {[FM_DEST_HARDCALL] = {"hardcall", FM_DTYPE_BED2},
             [FM_DEST_DOSAGE] = {"dosage", FM_DTYPE_DOS8},
             [FM_DEST_HAPLOTYPE] = {"haplotype", FM_DTYPE_HAP1},
             [FM_DEST_DENSE] = {"dense", FM_DTYPE_F64}};

static int is_kind(fm_dest_kind k) { return k >= FM_DEST_HARDCALL && k <= FM_DEST_DENSE; }

fm_status fm_dest_kind_by_name(const char *name, fm_dest_kind *out, fm_err *err) {
  if (!out) return fm_err_set(err, FM_EARG, "fm_dest_kind_by_name: out must not be NULL");
  for (int k = FM_DEST_HARDCALL; k <= FM_DEST_DENSE; k++)
    if (name && !strcmp(name, kinds[k].name)) {
      *out = (fm_dest_kind)k;
      return FM_OK;
    }
  return fm_err_set(err, FM_EARG,
                    "destination '%s' is not one of hardcall, dosage, haplotype, dense",
                    name ? name : "(null)");
}

fm_dtype fm_dest_dtype(fm_dest_kind kind) {
  return is_kind(kind) ? kinds[kind].dtype : FM_DTYPE_NONE;
}

/* Bytes of one output column (or, for haplotypes, one row). */
static int col_bytes(fm_dest_kind kind, int64_t n, int64_t *out) {
  switch (kind) {
    case FM_DEST_HARDCALL: *out = fm_codec_bed2_col_bytes(n); return 1;
    case FM_DEST_DOSAGE: *out = n; return 1;
    case FM_DEST_DENSE: return fm_mul_ok(n, 8, out);
    case FM_DEST_HAPLOTYPE: {
      int64_t h;
      if (!fm_mul_ok(n, 2, &h) || h > INT64_MAX - 512) return 0;
      *out = fm_codec_hap1_row_bytes(h);
      return 1;
    }
  }
  return 0;
}

fm_status fm_dest_bytes(fm_dest_kind kind, int64_t n_out_samples, int64_t n_out_variants,
                        uint64_t *n_bytes_out, fm_err *err) {
  if (n_bytes_out) *n_bytes_out = 0;
  if (!n_bytes_out) return fm_err_set(err, FM_EARG, "fm_dest_bytes: n_bytes_out must not be NULL");
  if (!is_kind(kind))
    return fm_err_set(err, FM_EARG, "fm_dest_bytes: unknown destination kind %d", (int)kind);
  if (n_out_samples < 0 || n_out_variants < 0)
    return fm_err_set(err, FM_EARG,
                      "fm_dest_bytes: n_out_samples (%lld) and n_out_variants (%lld) must be >= 0",
                      (ll)n_out_samples, (ll)n_out_variants);
  int64_t cb = 0, rows = n_out_variants, total = 0;
  if (kind == FM_DEST_HAPLOTYPE && !fm_mul_ok(rows, 2, &rows)) rows = -1;
  if (rows < 0 || !col_bytes(kind, n_out_samples, &cb) || !fm_mul_ok(cb, rows, &total))
    return fm_err_set(err, FM_EARG,
                      "fm_dest_bytes: a %s destination of %lld samples x %lld variants overflows "
                      "a 64-bit byte count",
                      kinds[kind].name, (ll)n_out_samples, (ll)n_out_variants);
  *n_bytes_out = (uint64_t)total;
  return FM_OK;
}

static fm_status check_dest(const fm_dest *d, fm_err *err) {
  if (!d) return fm_err_set(err, FM_EARG, "destination must not be NULL");
  if (!is_kind(d->kind))
    return fm_err_set(err, FM_EARG, "unknown destination kind %d", (int)d->kind);
  if (d->n_out_samples < 0 || d->n_out_variants < 0)
    return fm_err_set(err, FM_EARG,
                      "destination n_out_samples (%lld) and n_out_variants (%lld) must be >= 0",
                      (ll)d->n_out_samples, (ll)d->n_out_variants);
  uint64_t nb = 0;
  fm_status st = fm_dest_bytes(d->kind, d->n_out_samples, d->n_out_variants, &nb, err);
  if (st != FM_OK) return st;
  if (!d->data && nb > 0) return fm_err_set(err, FM_EARG, "destination data must not be NULL");
  return FM_OK;
}

static fm_status check_samples(const fm_dest *d, int64_t n_in, fm_err *err) {
  if (!d->sample_index) {
    if (d->n_out_samples != n_in)
      return fm_err_set(err, FM_EMISMATCH,
                        "the destination has %lld samples but the input has %lld and no "
                        "sample_index was given",
                        (ll)d->n_out_samples, (ll)n_in);
    return FM_OK;
  }
  for (int64_t i = 0; i < d->n_out_samples; i++)
    if (d->sample_index[i] < 0 || d->sample_index[i] >= n_in)
      return fm_err_set(err, FM_EARG,
                        "sample_index[%lld] = %lld is outside the %lld input samples (0-based)",
                        (ll)i, (ll)d->sample_index[i], (ll)n_in);
  return FM_OK;
}

static const char *var_name(const fm_gt_record *rec) {
  return rec->id && rec->id[0] ? rec->id : "(no id)";
}

/* bed2 code of an ALT count, indexed by the count's low 2 bits (missing,
 * -1, has 3): 0 -> 0b11, 1 -> 0b10, 2 -> 0b00, missing -> 0b01. */
static const uint8_t bed2_of_count[4] = {3u, 2u, 0u, 1u};

/* Column of bed2 codes from a record: its packed bed2 when the reader gave
 * one, else its int8 hardcalls; sample order from si (NULL = all). The pad
 * bits of the last byte are written 0. */
static void put_bed2(uint8_t *out, int64_t cb, int64_t n, const int64_t *si,
                     const fm_gt_record *rec) {
  const uint8_t *pk = rec->bed2;
  const int8_t *hc = rec->hardcall;
  if (!si && pk) {
    memcpy(out, pk, (size_t)cb);
  } else if (!si) { /* four counts per step: their low 2 bits packed, then one lookup */
    const int64_t n4 = n >> 2;
    for (int64_t b = 0; b < n4; b++) {
      const uint8_t *q = (const uint8_t *)hc + 4 * b;
      out[b] = fm_codec_bed2_of_count2[(q[0] & 3u) | (q[1] & 3u) << 2 | (q[2] & 3u) << 4 |
                                       (q[3] & 3u) << 6];
    }
    if (n4 < cb) {
      unsigned byte = 0;
      for (int64_t i = 4 * n4; i < n; i++)
        byte |= (unsigned)bed2_of_count[(uint8_t)hc[i] & 3u] << (2 * (i & 3));
      out[n4] = (uint8_t)byte;
    }
  } else {
    int64_t i = 0;
    for (int64_t b = 0; b < cb; b++) {
      unsigned byte = 0;
      for (int k = 0; k < 4 && i < n; k++, i++) {
        const int64_t s = si[i];
        const unsigned c = pk ? (pk[s >> 2] >> (2 * (s & 3))) & 3u
                              : bed2_of_count[(uint8_t)hc[s] & 3u];
        byte |= c << (2 * k);
      }
      out[b] = (uint8_t)byte;
    }
  }
  if (n & 3) out[cb - 1] &= (uint8_t)((1u << (2 * (n & 3))) - 1u);
}

static fm_status put_one(const fm_dest *d, int64_t col, const fm_gt_record *rec, fm_err *err) {
  const int64_t n = d->n_out_samples;
  const int64_t *si = d->sample_index;
  int64_t cb = 0;
  (void)col_bytes(d->kind, n, &cb); /* validated by check_dest */
  switch (d->kind) {
    case FM_DEST_HARDCALL: {
      if (!rec->hardcall && !rec->bed2 && n > 0)
        return fm_err_set(err, FM_EARG, "variant '%s' carries no hardcalls", var_name(rec));
      if (n > 0) put_bed2(d->data + col * cb, cb, n, si, rec);
      return FM_OK;
    }
    case FM_DEST_DOSAGE: {
      uint8_t *out = d->data + col * cb;
      if (!rec->dosage) {
        static const uint8_t q[3] = {0, 127, 254};
        if (!rec->hardcall && n > 0)
          return fm_err_set(err, FM_EARG, "variant '%s' carries no genotypes", var_name(rec));
        for (int64_t i = 0; i < n; i++) {
          const int8_t g = rec->hardcall[si ? si[i] : i];
          out[i] = (g >= 0 && g <= 2) ? q[g] : (uint8_t)FM_DOS8_MISSING;
        }
        return FM_OK;
      }
      for (int64_t i = 0; i < n; i++) {
        const int64_t s = si ? si[i] : i;
        double x = rec->dosage[s];
        if (isnan(x)) {
          out[i] = FM_DOS8_MISSING;
          continue;
        }
        if (!(x >= -FM_DOS8_TOL && x <= 2.0 + FM_DOS8_TOL))
          return fm_err_set(err, FM_EFORMAT,
                            "variant '%s', input sample %lld: dosage %g is outside [0, 2]",
                            var_name(rec), (ll)s + 1, x);
        if (x < 0) x = 0;
        if (x > 2) x = 2;
        out[i] = (uint8_t)lround(x * FM_DOS8_STEPS);
      }
      return FM_OK;
    }
    case FM_DEST_DENSE: {
      uint8_t *out = d->data + col * cb;
      const double na = fm_na_value();
      if (!rec->dosage && !rec->hardcall && n > 0)
        return fm_err_set(err, FM_EARG, "variant '%s' carries no genotypes", var_name(rec));
      for (int64_t i = 0; i < n; i++) {
        const int64_t s = si ? si[i] : i;
        double x;
        if (rec->dosage) {
          x = rec->dosage[s];
          if (isnan(x)) x = na;
        } else {
          const int8_t g = rec->hardcall[s];
          x = (g >= 0 && g <= 2) ? (double)g : na;
        }
        memcpy(out + 8 * i, &x, sizeof x);
      }
      return FM_OK;
    }
    case FM_DEST_HAPLOTYPE: {
      if (!rec->hap)
        return fm_err_set(err, FM_EMISMATCH,
                          "variant '%s' is unphased; the haplotype destination needs phased "
                          "records",
                          var_name(rec));
      uint8_t *allele = d->data + col * cb;
      uint8_t *miss = d->data + (d->n_out_variants + col) * cb;
      memset(allele, 0, (size_t)cb);
      memset(miss, 0, (size_t)cb);
      for (int64_t i = 0; i < n; i++) {
        const int64_t s = si ? si[i] : i;
        for (int k = 0; k < 2; k++) {
          const int64_t h = 2 * i + k;
          const int8_t a = rec->hap[2 * s + k];
          const uint8_t bit = (uint8_t)(1u << (h % 8));
          if (a == 1)
            allele[h / 8] |= bit;
          else if (a != 0)
            miss[h / 8] |= bit;
        }
      }
      return FM_OK;
    }
  }
  return fm_err_set(err, FM_EINTERNAL, "unreachable destination kind");
}

fm_status fm_dest_put(const fm_dest *d, int64_t col, const fm_gt_record *rec, fm_err *err) {
  fm_status st = check_dest(d, err);
  if (st != FM_OK) return st;
  if (!rec) return fm_err_set(err, FM_EARG, "fm_dest_put: rec must not be NULL");
  if (col < 0 || col >= d->n_out_variants)
    return fm_err_set(err, FM_EARG, "fm_dest_put: column %lld is outside the %lld output variants",
                      (ll)col, (ll)d->n_out_variants);
  if ((st = check_samples(d, rec->n_samples, err)) != FM_OK) return st;
  return put_one(d, col, rec, err);
}

typedef struct pair {
  int64_t in, col;
} pair;

static int pair_cmp(const void *a, const void *b) {
  const pair *x = a, *y = b;
  if (x->in != y->in) return x->in < y->in ? -1 : 1;
  return (x->col > y->col) - (x->col < y->col);
}

/* Drop the whole pages of d->data in [*done, upto) bytes from memory; the
 * file mapping keeps their contents (dirty pages go to the page cache, not
 * away). *done advances to the last page boundary dropped. A failing
 * madvise only leaves the pages resident. */
static void release_written(const fm_dest *d, uint64_t *done, uint64_t upto) {
  size_t end;
  if (fm_pages_release(d->data, (size_t)*done, (size_t)upto, FM_PAGES_INWARD, &end)) *done = end;
}

fm_status fm_fmt_stream(fm_reader *r, const fm_dest *d, const int64_t *variant_index,
                        int64_t block_records, fm_variant_fn on_variant, void *on_variant_ud,
                        const fm_ctl *ctl, fm_err *err) {
  fm_status st;
  pair *pairs = NULL;
  fm_gt_record rec;
  memset(&rec, 0, sizeof rec);
  if (!r || !r->ops) return fm_err_set(err, FM_EARG, "fm_fmt_stream: reader must not be NULL");
  if ((st = check_dest(d, err)) != FM_OK) return st;
  if ((st = check_samples(d, r->info.n_samples, err)) != FM_OK) return st;
  if (block_records <= 0) block_records = 1024;
  if (d->kind == FM_DEST_HARDCALL) r->is_hardcall_only = 1;
  const int64_t m = d->n_out_variants, n_known = r->info.n_variants;
  int64_t last = m - 1; /* largest input index needed */
  if (variant_index) {
    pairs = malloc((size_t)(m > 0 ? m : 1) * sizeof *pairs);
    if (!pairs) return fm_err_set(err, FM_ENOMEM, "fm_fmt_stream: out of memory for %lld pairs", (ll)m);
    for (int64_t j = 0; j < m; j++) {
      const int64_t v = variant_index[j];
      if (v < 0 || (n_known >= 0 && v >= n_known)) {
        st = fm_err_set(err, FM_EARG,
                        "variant_index[%lld] = %lld is outside the %lld input variants (0-based)",
                        (ll)j, (ll)v, (ll)n_known);
        goto fail;
      }
      pairs[j].in = v;
      pairs[j].col = j;
    }
    qsort(pairs, (size_t)m, sizeof *pairs, pair_cmp);
    last = m > 0 ? pairs[m - 1].in : -1;
  } else if (n_known >= 0 && n_known != m) {
    st = fm_err_set(err, FM_EMISMATCH,
                    "the destination has %lld variants but the %s input has %lld and no "
                    "variant_index was given",
                    (ll)m, r->info.format ? r->info.format : "", (ll)n_known);
    goto fail;
  }
  int64_t p = 0; /* next pair */
  const double total = (double)(last + 1);
  /* columns are written in order without variant_index: release as we go */
  int64_t cb = 0;
  const int release = d->is_file_mapped && !variant_index && d->kind != FM_DEST_HAPLOTYPE &&
                      col_bytes(d->kind, d->n_out_samples, &cb);
  uint64_t released = 0;
  for (int64_t k = 0; k <= last || (!variant_index && n_known < 0 && k == m); k++) {
    if (k % block_records == 0) {
      if (release) release_written(d, &released, (uint64_t)k * (uint64_t)cb);
      if (fm_ctl_cancelled(ctl)) {
        st = fm_err_set(err, FM_ECANCELLED, "reading was cancelled after %lld records", (ll)k);
        goto fail;
      }
      fm_ctl_progress(ctl, (double)k, total);
    }
    st = fm_reader_next(r, &rec, err);
    if (st == FM_FMT_END) {
      if (k == m && !variant_index) { st = FM_OK; break; }
      st = fm_err_set(err, FM_EMISMATCH,
                      "the %s input ended after %lld records but record %lld (0-based) was "
                      "requested",
                      r->info.format ? r->info.format : "", (ll)k, (ll)last);
      goto fail;
    }
    if (st != FM_OK) goto fail;
    if (k == m && !variant_index) {
      st = fm_err_set(err, FM_EMISMATCH,
                      "the %s input has more than the destination's %lld variants and no "
                      "variant_index was given",
                      r->info.format ? r->info.format : "", (ll)m);
      goto fail;
    }
    if (rec.n_samples != r->info.n_samples) {
      st = fm_err_set(err, FM_EINTERNAL, "record %lld has %lld samples but the reader has %lld",
                      (ll)k, (ll)rec.n_samples, (ll)r->info.n_samples);
      goto fail;
    }
    if (variant_index) {
      if (p >= m || pairs[p].in != k) continue;
      if (on_variant) on_variant(on_variant_ud, k, &rec);
      for (; p < m && pairs[p].in == k; p++)
        if ((st = put_one(d, pairs[p].col, &rec, err)) != FM_OK) goto fail;
    } else {
      if (on_variant) on_variant(on_variant_ud, k, &rec);
      if ((st = put_one(d, k, &rec, err)) != FM_OK) goto fail;
    }
  }
  fm_ctl_progress(ctl, total, total);
  free(pairs);
  return FM_OK;
fail:
  free(pairs);
  return st;
}
