/* fmt_ped.c: PLINK 1 PED/MAP reader (fm_fmt_plink.h). The .ped is
 * sample-major, so open reads it whole into 2 bits per genotype (count of
 * the second-seen allele, 3 = missing), variant-major; next() decodes one
 * variant. */
#define _POSIX_C_SOURCE 200809L
#include "fmt_plink_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_codec_bed2.h"

typedef long long ll;

typedef struct map_var {
  char *chrom, *id;
  int64_t pos;
  double cm;
} map_var;

typedef struct ped_impl {
  char *ped_path;
  int64_t n_samples, n_variants, next;
  int64_t col_bytes;
  map_var *vars;           /* n_variants */
  fm_plink_alleles *alleles; /* n_variants */
  int *idx;                /* n_variants: counted stored allele (0, 1, 2 absent) */
  const char **ref, **alt; /* n_variants, borrowed from alleles or counted copies */
  char **counted;          /* n_variants owned copies of counted_alleles, or NULL */
  uint8_t *codes;          /* n_variants * col_bytes */
  int8_t *hardcall;
} ped_impl;

static void ped_close(fm_reader *r) {
  ped_impl *p = r->impl;
  if (!p) return;
  for (int64_t v = 0; v < p->n_variants; v++) {
    if (p->vars) {
      free(p->vars[v].chrom);
      free(p->vars[v].id);
    }
    if (p->alleles) fm_plink_alleles_clear(&p->alleles[v]);
    if (p->counted) free(p->counted[v]);
  }
  free(p->vars);
  free(p->alleles);
  free(p->idx);
  free(p->ref);
  free(p->alt);
  free(p->counted);
  free(p->codes);
  free(p->hardcall);
  free(p->ped_path);
  free(p);
  r->impl = NULL;
}

static fm_status ped_next(fm_reader *r, fm_gt_record *rec, fm_err *err) {
  (void)err;
  ped_impl *p = r->impl;
  if (p->next >= p->n_variants) return FM_FMT_END;
  const int64_t v = p->next++;
  const uint8_t *c = p->codes + v * p->col_bytes;
  const int idx = p->idx[v];
  for (int64_t i = 0; i < p->n_samples; i++)
    p->hardcall[i] = fm_plink_hardcall((c[i >> 2] >> (2 * (i & 3))) & 3u, idx);
  rec->n_samples = p->n_samples;
  rec->chrom = p->vars[v].chrom;
  rec->id = p->vars[v].id;
  rec->pos = p->vars[v].pos;
  rec->cm = p->vars[v].cm;
  rec->ref = p->ref[v];
  rec->alt = p->alt[v];
  rec->hardcall = p->hardcall;
  rec->dosage = NULL;
  rec->hap = NULL;
  rec->is_phased = 0;
  return FM_OK;
}

static const fm_reader_ops ped_ops = {ped_next, ped_close, NULL};

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* Read the .map (CHR ID cM POS). */
static fm_status read_map(const char *path, ped_impl *p, fm_err *err) {
  fm_plink_lines L;
  int64_t n = 0;
  fm_status st = fm_plink_count_lines(path, &n, err);
  if (st != FM_OK) return st;
  p->vars = calloc((size_t)(n > 0 ? n : 1), sizeof *p->vars);
  if (!p->vars) return fm_err_set(err, FM_ENOMEM, "out of memory reading '%s'", path);
  p->n_variants = n;
  if ((st = fm_plink_lines_open(&L, path, err)) != FM_OK) return st;
  int rc;
  int64_t v = 0;
  while ((rc = fm_plink_lines_next(&L, err)) == 1) {
    char *tok[5];
    const int64_t nt = fm_plink_split(L.buf, tok, 5);
    if (nt != 4) {
      st = fm_err_set(err, FM_EFORMAT, "'%s' line %lld has %lld fields; a .map line has 4", path,
                      (ll)L.line_no, (ll)nt);
      goto done;
    }
    if (v >= n) {
      st = fm_err_set(err, FM_EFORMAT, "'%s' changed while it was read", path);
      goto done;
    }
    char *end = NULL;
    errno = 0;
    const long long pos = strtoll(tok[3], &end, 10);
    if (errno || *end) {
      st = fm_err_set(err, FM_EFORMAT, "'%s' line %lld: position '%s' is not an integer", path,
                      (ll)L.line_no, tok[3]);
      goto done;
    }
    p->vars[v].pos = pos > 0 ? pos : 0;
    p->vars[v].cm = fm_plink_parse_cm(tok[2]);
    if (!(p->vars[v].chrom = dup_str(tok[0])) || !(p->vars[v].id = dup_str(tok[1]))) {
      st = fm_err_set(err, FM_ENOMEM, "out of memory reading '%s'", path);
      goto done;
    }
    v++;
  }
  if (rc < 0) st = (fm_status)-rc;
  else if (v != n) st = fm_err_set(err, FM_EFORMAT, "'%s' changed while it was read", path);
done:
  fm_plink_lines_close(&L);
  return st;
}

fm_status fm_fmt_ped_open(const char *ped_path, const char *map_path,
                          const char *const *counted_alleles, int64_t n_counted, fm_reader **out,
                          fm_err *err) {
  fm_status st = FM_OK;
  fm_reader *r = NULL;
  ped_impl *p = NULL;
  char **tok = NULL;
  char *map_alloc = NULL;
  fm_plink_lines L;
  memset(&L, 0, sizeof L);
  if (out) *out = NULL;
  if (!ped_path || !out)
    return fm_err_set(err, FM_EARG, "fm_fmt_ped_open: ped_path and out must not be NULL");
  if (!(r = fm_reader_new(&ped_ops, sizeof *p)))
    return fm_err_set(err, FM_ENOMEM, "out of memory opening '%s'", ped_path);
  p = r->impl;
  r->info.format = "ped";
  r->info.has_cm = 1;
  if (!map_path) {
    if (!(map_alloc = fm_plink_swap_ext(ped_path, ".ped", ".map"))) goto oom;
    map_path = map_alloc;
  }
  if (!(p->ped_path = dup_str(ped_path))) goto oom;
  if ((st = read_map(map_path, p, err)) != FM_OK) goto fail;
  const int64_t m = p->n_variants;
  r->info.n_variants = m;
  if (counted_alleles && n_counted != m) {
    st = fm_err_set(err, FM_EMISMATCH,
                    "%lld counted alleles were given but '%s' lists %lld variants",
                    (ll)n_counted, map_path, (ll)m);
    goto fail;
  }
  p->alleles = calloc((size_t)(m > 0 ? m : 1), sizeof *p->alleles);
  p->idx = calloc((size_t)(m > 0 ? m : 1), sizeof *p->idx);
  p->ref = calloc((size_t)(m > 0 ? m : 1), sizeof *p->ref);
  p->alt = calloc((size_t)(m > 0 ? m : 1), sizeof *p->alt);
  if (!p->alleles || !p->idx || !p->ref || !p->alt) goto oom;
  int64_t n = 0;
  if ((st = fm_plink_count_lines(ped_path, &n, err)) != FM_OK) goto fail;
  p->n_samples = n;
  r->info.n_samples = n;
  p->col_bytes = fm_codec_bed2_col_bytes(n);
  int64_t total = 0;
  if (!fm_mul_ok(m, p->col_bytes, &total) || (uint64_t)total > SIZE_MAX / 2) goto oom;
  p->codes = calloc((size_t)(total > 0 ? total : 1), 1);
  p->hardcall = malloc((size_t)(n > 0 ? n : 1));
  r->sample_ids = calloc((size_t)(n > 0 ? n : 1), sizeof *r->sample_ids);
  r->sex = calloc((size_t)(n > 0 ? n : 1), 1); /* field 5 of each line */
  const int64_t want = 6 + 2 * m;
  tok = malloc((size_t)(want + 1) * sizeof *tok);
  if (!p->codes || !p->hardcall || !r->sample_ids || !r->sex || !tok) goto oom;
  if ((st = fm_plink_lines_open(&L, ped_path, err)) != FM_OK) goto fail;
  int rc;
  int64_t s = 0;
  while ((rc = fm_plink_lines_next(&L, err)) == 1) {
    const int64_t nt = fm_plink_split(L.buf, tok, want + 1);
    if (nt != want) {
      st = fm_err_set(err, FM_EFORMAT,
                      "'%s' line %lld has %lld fields but 6 + 2 * %lld variants = %lld were "
                      "expected",
                      ped_path, (ll)L.line_no, (ll)nt, (ll)m, (ll)want);
      goto fail;
    }
    if (s >= n) {
      st = fm_err_set(err, FM_EFORMAT, "'%s' changed while it was read", ped_path);
      goto fail;
    }
    if (!(r->sample_ids[s] = dup_str(tok[1]))) goto oom;
    r->sex[s] = fm_sex_code(tok[4]);
    const int64_t byte = s >> 2;
    const int shift = 2 * (int)(s & 3);
    for (int64_t v = 0; v < m; v++) {
      fm_plink_alleles *al = &p->alleles[v];
      int k[2];
      for (int h = 0; h < 2; h++) {
        k[h] = fm_plink_allele_index(al, tok[6 + 2 * v + h]);
        if (k[h] == -3) goto oom;
        if (k[h] == -2) {
          st = fm_err_set(err, FM_EFORMAT,
                          "'%s' line %lld: variant '%s' has a third allele '%s' (seen '%s' and "
                          "'%s'); only biallelic variants are read",
                          ped_path, (ll)L.line_no, p->vars[v].id, tok[6 + 2 * v + h], al->a[0],
                          al->a[1]);
          goto fail;
        }
      }
      unsigned code = 3;
      if (k[0] >= 0 && k[1] >= 0) {
        code = (unsigned)(k[0] + k[1]);
        al->cnt[k[0]]++;
        al->cnt[k[1]]++;
      }
      p->codes[v * p->col_bytes + byte] |= (uint8_t)(code << shift);
    }
    s++;
  }
  if (rc < 0) {
    st = (fm_status)-rc;
    goto fail;
  }
  if (s != n) {
    st = fm_err_set(err, FM_EFORMAT, "'%s' changed while it was read", ped_path);
    goto fail;
  }
  if (counted_alleles) {
    p->counted = calloc((size_t)(m > 0 ? m : 1), sizeof *p->counted);
    if (!p->counted) goto oom;
  }
  for (int64_t v = 0; v < m; v++) {
    const char *c = NULL;
    if (counted_alleles) {
      if (!counted_alleles[v]) {
        st = fm_err_set(err, FM_EARG, "counted_alleles[%lld] is NULL", (ll)v);
        goto fail;
      }
      if (!(p->counted[v] = dup_str(counted_alleles[v]))) goto oom;
      c = p->counted[v];
    }
    if ((st = fm_plink_resolve(&p->alleles[v], c, ped_path, p->vars[v].id, &p->idx[v], &p->ref[v],
                               &p->alt[v], err)) != FM_OK)
      goto fail;
  }
  fm_plink_lines_close(&L);
  free(tok);
  free(map_alloc);
  *out = r;
  return FM_OK;
oom:
  st = fm_err_set(err, FM_ENOMEM, "out of memory reading '%s'", ped_path);
fail:
  fm_plink_lines_close(&L);
  free(tok);
  free(map_alloc);
  fm_reader_close(r);
  return st;
}
