/* fmt_tped.c: PLINK 1 TPED/TFAM reader (fm_fmt_plink.h). Variant-major text:
 * next() parses one .tped line (CHR ID cM POS, then two alleles per sample). */
#define _POSIX_C_SOURCE 200809L
#include "fmt_plink_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef long long ll;

typedef struct tped_impl {
  fm_plink_lines L;
  char *tped_path;
  int64_t n_samples, n_variants, next;
  char **counted;     /* n_variants owned copies, or NULL */
  char **tok;         /* 4 + 2 n_samples + 1 */
  uint8_t *codes;     /* n_samples: count of the second-seen allele, 3 missing */
  int8_t *hardcall;
  fm_plink_alleles al; /* of the current record */
} tped_impl;

static void tped_close(fm_reader *r) {
  tped_impl *t = r->impl;
  if (!t) return;
  fm_plink_lines_close(&t->L);
  if (t->counted)
    for (int64_t v = 0; v < t->n_variants; v++) free(t->counted[v]);
  free(t->counted);
  free(t->tok);
  free(t->codes);
  free(t->hardcall);
  fm_plink_alleles_clear(&t->al);
  free(t->tped_path);
  free(t);
  r->impl = NULL;
}

static fm_status tped_next(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  tped_impl *t = r->impl;
  if (t->next >= t->n_variants) return FM_FMT_END;
  int rc = fm_plink_lines_next(&t->L, err);
  if (rc < 0) return (fm_status)-rc;
  if (rc == 0)
    return fm_err_set(err, FM_EFORMAT, "'%s' ended after %lld variants; %lld were counted at open",
                      t->tped_path, (ll)t->next, (ll)t->n_variants);
  const int64_t n = t->n_samples, want = 4 + 2 * n;
  const int64_t nt = fm_plink_split(t->L.buf, t->tok, want + 1);
  if (nt != want)
    return fm_err_set(err, FM_EFORMAT,
                      "'%s' line %lld has %lld fields but 4 + 2 * %lld samples = %lld were "
                      "expected",
                      t->tped_path, (ll)t->L.line_no, (ll)nt, (ll)n, (ll)want);
  char *end = NULL;
  errno = 0;
  const long long pos = strtoll(t->tok[3], &end, 10);
  if (errno || *end)
    return fm_err_set(err, FM_EFORMAT, "'%s' line %lld: position '%s' is not an integer",
                      t->tped_path, (ll)t->L.line_no, t->tok[3]);
  fm_plink_alleles_clear(&t->al);
  for (int64_t s = 0; s < n; s++) {
    int k[2];
    for (int h = 0; h < 2; h++) {
      const char *a = t->tok[4 + 2 * s + h];
      k[h] = fm_plink_allele_index(&t->al, a);
      if (k[h] == -3) return fm_err_set(err, FM_ENOMEM, "out of memory reading '%s'", t->tped_path);
      if (k[h] == -2)
        return fm_err_set(err, FM_EFORMAT,
                          "'%s' line %lld: variant '%s' has a third allele '%s' (seen '%s' and "
                          "'%s'); only biallelic variants are read",
                          t->tped_path, (ll)t->L.line_no, t->tok[1], a, t->al.a[0], t->al.a[1]);
    }
    if (k[0] >= 0 && k[1] >= 0) {
      t->codes[s] = (uint8_t)(k[0] + k[1]);
      t->al.cnt[k[0]]++;
      t->al.cnt[k[1]]++;
    } else {
      t->codes[s] = 3;
    }
  }
  int idx = 2;
  const char *ref = ".", *alt = ".";
  fm_status st = fm_plink_resolve(&t->al, t->counted ? t->counted[t->next] : NULL, t->tped_path,
                                  t->tok[1], &idx, &ref, &alt, err);
  if (st != FM_OK) return st;
  for (int64_t s = 0; s < n; s++) t->hardcall[s] = fm_plink_hardcall(t->codes[s], idx);
  rec->n_samples = n;
  rec->chrom = t->tok[0];
  rec->id = t->tok[1];
  rec->pos = pos > 0 ? pos : 0;
  rec->cm = fm_plink_parse_cm(t->tok[2]);
  rec->ref = ref;
  rec->alt = alt;
  rec->hardcall = t->hardcall;
  rec->dosage = NULL;
  rec->hap = NULL;
  rec->is_phased = 0;
  t->next++;
  return FM_OK;
}

static const fm_reader_ops tped_ops = {tped_next, tped_close, NULL};

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

fm_status fm_fmt_tped_open(const char *tped_path, const char *tfam_path,
                           const char *const *counted_alleles, int64_t n_counted,
                           fm_reader **out, fm_err *err) {
  fm_status st = FM_OK;
  fm_reader *r = NULL;
  tped_impl *t = NULL;
  char *tfam_alloc = NULL;
  if (out) *out = NULL;
  if (!tped_path || !out)
    return fm_err_set(err, FM_EARG, "fm_fmt_tped_open: tped_path and out must not be NULL");
  if (!(r = fm_reader_new(&tped_ops, sizeof *t)))
    return fm_err_set(err, FM_ENOMEM, "out of memory opening '%s'", tped_path);
  t = r->impl;
  r->info.format = "tped";
  r->info.has_cm = 1;
  if (!tfam_path) {
    if (!(tfam_alloc = fm_plink_swap_ext(tped_path, ".tped", ".tfam"))) goto oom;
    tfam_path = tfam_alloc;
  }
  if (!(t->tped_path = dup_str(tped_path))) goto oom;
  if ((st = fm_plink_read_samples(tfam_path, 0, &r->sample_ids, &t->n_samples, &r->sex, err)) !=
      FM_OK)
    goto fail;
  r->info.n_samples = t->n_samples;
  if ((st = fm_plink_count_lines(tped_path, &t->n_variants, err)) != FM_OK) goto fail;
  const int64_t m = t->n_variants, n = t->n_samples;
  r->info.n_variants = m;
  if (counted_alleles) {
    if (n_counted != m) {
      st = fm_err_set(err, FM_EMISMATCH,
                      "%lld counted alleles were given but '%s' has %lld variants",
                      (ll)n_counted, tped_path, (ll)m);
      goto fail;
    }
    if (!(t->counted = calloc((size_t)(m > 0 ? m : 1), sizeof *t->counted))) goto oom;
    for (int64_t v = 0; v < m; v++) {
      if (!counted_alleles[v]) {
        st = fm_err_set(err, FM_EARG, "counted_alleles[%lld] is NULL", (ll)v);
        goto fail;
      }
      if (!(t->counted[v] = dup_str(counted_alleles[v]))) goto oom;
    }
  }
  t->tok = malloc((size_t)(4 + 2 * n + 1) * sizeof *t->tok);
  t->codes = malloc((size_t)(n > 0 ? n : 1));
  t->hardcall = malloc((size_t)(n > 0 ? n : 1));
  if (!t->tok || !t->codes || !t->hardcall) goto oom;
  if ((st = fm_plink_lines_open(&t->L, t->tped_path, err)) != FM_OK) goto fail;
  free(tfam_alloc);
  *out = r;
  return FM_OK;
oom:
  st = fm_err_set(err, FM_ENOMEM, "out of memory opening '%s'", tped_path);
fail:
  free(tfam_alloc);
  fm_reader_close(r);
  return st;
}
