/* fmt_registry.c: the table of genotype file formats and its lookups
 * (fm_fmt_registry.h): detection by name, extension, bare prefix and magic
 * bytes, companion files, and each format's open function. */
#define _POSIX_C_SOURCE 200809L /* stat */
#include "fm/fm_fmt_registry.h"

#include "fm/fm_fmt_bgen.h"
#include "fm/fm_fmt_pgen.h"
#include "fm/fm_fmt_plink.h"
#include "fm/fm_fmt_text.h"
#include "fm/fm_fmt_vcf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* ---- open functions: the fileset's slots in the order of the table ------ */

static const char *file_at(const fm_fmt_fileset *fs, int i) {
  return fs->path[i][0] ? fs->path[i] : NULL;
}

static fm_status open_bed(const fm_fmt_fileset *fs, const fm_fmt_options *o, fm_reader **out,
                          fm_err *err) {
  (void)o;
  return fm_fmt_bed_open(file_at(fs, 0), file_at(fs, 1), file_at(fs, 2), out, err);
}

static fm_status open_pgen(const fm_fmt_fileset *fs, const fm_fmt_options *o, fm_reader **out,
                           fm_err *err) {
  (void)o;
  return fm_fmt_pgen_open(file_at(fs, 0), file_at(fs, 1), file_at(fs, 2), out, err);
}

static fm_status open_ped(const fm_fmt_fileset *fs, const fm_fmt_options *o, fm_reader **out,
                          fm_err *err) {
  return fm_fmt_ped_open(file_at(fs, 0), file_at(fs, 1), o->counted_alleles, o->n_counted, out,
                         err);
}

static fm_status open_tped(const fm_fmt_fileset *fs, const fm_fmt_options *o, fm_reader **out,
                           fm_err *err) {
  return fm_fmt_tped_open(file_at(fs, 0), file_at(fs, 1), o->counted_alleles, o->n_counted, out,
                          err);
}

static fm_status open_bgen(const fm_fmt_fileset *fs, const fm_fmt_options *o, fm_reader **out,
                           fm_err *err) {
  (void)o;
  return fm_fmt_bgen_open(file_at(fs, 0), out, err);
}

static fm_status open_vcf(const fm_fmt_fileset *fs, const fm_fmt_options *o, fm_reader **out,
                          fm_err *err) {
  return fm_fmt_vcf_open(file_at(fs, 0), o->region, out, err);
}

static fm_status open_gen(const fm_fmt_fileset *fs, const fm_fmt_options *o, fm_reader **out,
                          fm_err *err) {
  (void)o;
  return fm_fmt_gen_open(file_at(fs, 0), file_at(fs, 1), out, err);
}

/* Oxford HAPS with its .sample, or IMPUTE2 HAPS + LEGEND when a legend is
 * there. */
static fm_status open_haps(const fm_fmt_fileset *fs, const fm_fmt_options *o, fm_reader **out,
                           fm_err *err) {
  const char *legend = file_at(fs, 1);
  if (legend)
    return fm_fmt_haps_legend_open(file_at(fs, 0), legend, file_at(fs, 2), o->chrom, out, err);
  return fm_fmt_haps_open(file_at(fs, 0), file_at(fs, 2), out, err);
}

static fm_status open_eigenstrat(const fm_fmt_fileset *fs, const fm_fmt_options *o,
                                 fm_reader **out, fm_err *err) {
  (void)o;
  return fm_fmt_eigenstrat_open(file_at(fs, 0), file_at(fs, 1), file_at(fs, 2), out, err);
}

static fm_status open_dosage(const fm_fmt_fileset *fs, const fm_fmt_options *o, fm_reader **out,
                             fm_err *err) {
  return fm_fmt_dosage_open(file_at(fs, 0), file_at(fs, 1), file_at(fs, 2), o->dosage_format, out,
                            err);
}

/* ---- the table ----------------------------------------------------------- */

static const fm_fmt_format formats[] = {
    {.name = "bed",
     .extension = {".bed"},
     .is_prefix_named = 1,
     .magic = {{0, 3, "\x6c\x1b\x01", NULL}}, /* variant-major */
     .n_magic = 1,
     .companion = {{"bim", ".bim", 1, 1}, {"fam", ".fam", 1, 1}},
     .n_companions = 2,
     .open = open_bed},
    {.name = "pgen",
     .extension = {".pgen"},
     .is_prefix_named = 1,
     .magic = {{0, 3, "\x6c\x1b\x00", "\xff\xff\x00"}}, /* any storage mode (and a sample-major .bed) */
     .n_magic = 1,
     .companion = {{"pvar", ".pvar", 1, 1}, {"psam", ".psam", 1, 1}},
     .n_companions = 2,
     .open = open_pgen},
    {.name = "ped",
     .extension = {".ped"},
     .companion = {{"map", ".map", 1, 1}},
     .n_companions = 1,
     .option = {"counted_alleles"},
     .open = open_ped},
    {.name = "tped",
     .extension = {".tped"},
     .companion = {{"tfam", ".tfam", 1, 1}},
     .n_companions = 1,
     .option = {"counted_alleles"},
     .open = open_tped},
    {.name = "bgen",
     .extension = {".bgen"},
     .magic = {{16, 4, "bgen", NULL}}, /* after the offset and header's length, M and N */
     .n_magic = 1,
     .companion = {{"sample", ".sample", 0, 0}},
     .n_companions = 1,
     .open = open_bgen},
    {.name = "vcf",
     .alias = {"bcf", "vcf.gz"},
     .extension = {".vcf", ".vcf.gz", ".vcf.bgz", ".bcf"},
     .magic = {{0, 3, "BCF", NULL}, {0, 2, "\x1f\x8b", NULL}, {0, 6, "##file", NULL}},
     .n_magic = 3,
     .option = {"region"},
     .open = open_vcf},
    {.name = "gen",
     .extension = {".gen", ".gen.gz"},
     .companion = {{"sample", ".sample", 1, 1}},
     .n_companions = 1,
     .open = open_gen},
    {.name = "haps",
     .extension = {".haps", ".haps.gz"},
     .companion = {{"legend", ".legend", 0, 1}, {"sample", ".sample", 1, 1}},
     .n_companions = 2,
     .option = {"chrom"},
     .open = open_haps},
    {.name = "eigenstrat",
     .alias = {"geno", "ancestrymap", "packedancestrymap"},
     .extension = {".geno"},
     .magic = {{0, 4, "GENO", NULL}}, /* packed ancestrymap */
     .n_magic = 1,
     .companion = {{"snp", ".snp", 1, 1}, {"ind", ".ind", 1, 1}},
     .n_companions = 2,
     .open = open_eigenstrat},
    {.name = "dosage", /* PLINK 1 legacy dosage: by name only, companions only given */
     .companion = {{"fam", NULL, 0, 1}, {"map", NULL, 0, 1}},
     .n_companions = 2,
     .option = {"dosage_format"},
     .open = open_dosage},
};

enum { N_FORMATS = (int)(sizeof formats / sizeof formats[0]) };

const fm_fmt_format *fm_fmt_at(int i) { return i >= 0 && i < N_FORMATS ? &formats[i] : NULL; }

/* ---- lookups --------------------------------------------------------------- */

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

static int same_ascii_case(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (lower((unsigned char)*a) != lower((unsigned char)*b)) return 0;
  return *a == *b;
}

const fm_fmt_format *fm_fmt_by_name(const char *name) {
  if (!name) return NULL;
  for (int i = 0; i < N_FORMATS; i++) {
    if (same_ascii_case(name, formats[i].name)) return &formats[i];
    for (const char *const *a = formats[i].alias; *a; a++)
      if (same_ascii_case(name, *a)) return &formats[i];
  }
  return NULL;
}

/* Bytes of the extension of f that ends path (of n bytes), 0 when none. */
static size_t ext_len(const fm_fmt_format *f, const char *path, size_t n) {
  for (const char *const *e = f->extension; *e; e++) {
    size_t k = strlen(*e);
    if (k <= n && same_ascii_case(path + n - k, *e)) return k;
  }
  return 0;
}

const fm_fmt_format *fm_fmt_by_path(const char *path) {
  if (!path) return NULL;
  size_t n = strlen(path);
  for (int i = 0; i < N_FORMATS; i++)
    if (ext_len(&formats[i], path, n)) return &formats[i];
  return NULL;
}

static int magic_at(const fm_fmt_magic *m, const uint8_t *bytes, size_t n) {
  if ((size_t)m->offset + m->len > n) return 0;
  for (uint32_t i = 0; i < m->len; i++) {
    uint8_t mask = m->mask ? (uint8_t)m->mask[i] : 0xff;
    if ((bytes[m->offset + i] ^ (uint8_t)m->bytes[i]) & mask) return 0;
  }
  return 1;
}

const fm_fmt_format *fm_fmt_by_magic(const uint8_t *bytes, size_t n) {
  if (!bytes) return NULL;
  for (int i = 0; i < N_FORMATS; i++)
    for (int j = 0; j < formats[i].n_magic; j++)
      if (magic_at(&formats[i].magic[j], bytes, n)) return &formats[i];
  return NULL;
}

/* stat() succeeds (R's file.exists: a directory exists too). */
static int exists(const char *path, int *is_dir) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  if (is_dir) *is_dir = S_ISDIR(st.st_mode);
  return 1;
}

/* dst = the first na bytes of a, then b (upper-cased when upper). */
static fm_status join(char dst[FM_FMT_PATH_MAX], const char *a, size_t na, const char *b,
                      int upper, fm_err *err) {
  const size_t nb = strlen(b);
  if (na + nb >= FM_FMT_PATH_MAX)
    return fm_err_set(err, FM_EIO, "file name '%.60s...' is %zu bytes long; at most %d can be opened",
                      a, na + nb, FM_FMT_PATH_MAX - 1);
  memcpy(dst, a, na);
  for (size_t i = 0; i < nb; i++)
    dst[na + i] = upper && b[i] >= 'a' && b[i] <= 'z' ? (char)(b[i] - ('a' - 'A')) : b[i];
  dst[na + nb] = '\0';
  return FM_OK;
}

/* The first FM_FMT_SNIFF_BYTES bytes of the file path (fewer when shorter). */
static fm_status read_head(const char *path, uint8_t head[FM_FMT_SNIFF_BYTES], size_t *n,
                           fm_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return fm_err_set(err, FM_EIO, "cannot open '%s': %s", path, strerror(errno));
  *n = fread(head, 1, FM_FMT_SNIFF_BYTES, f);
  const int bad = ferror(f);
  fclose(f);
  return bad ? fm_err_set(err, FM_EIO, "cannot read the first bytes of '%s'", path) : FM_OK;
}

fm_status fm_fmt_detect(const char *path, const char *name, const fm_fmt_format **out,
                        fm_err *err) {
  if (!out || (!path && !name))
    return fm_err_set(err, FM_EARG, "fm_fmt_detect: out and a path or name are required");
  *out = NULL;
  if (name) {
    if ((*out = fm_fmt_by_name(name))) return FM_OK;
    char list[256] = "";
    for (int i = 0; i < N_FORMATS; i++) {
      size_t at = strlen(list);
      snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", formats[i].name);
    }
    return fm_err_set(err, FM_EARG, "format '%s' is not one of %s", name, list);
  }
  if ((*out = fm_fmt_by_path(path))) return FM_OK;
  int is_dir = 0;
  if (!exists(path, &is_dir)) {
    char beside[FM_FMT_PATH_MAX]; /* too long a name is no file */
    for (int i = 0; i < N_FORMATS; i++) {
      if (formats[i].is_prefix_named &&
          join(beside, path, strlen(path), formats[i].extension[0], 0, NULL) == FM_OK &&
          exists(beside, NULL)) {
        *out = &formats[i];
        return FM_OK;
      }
    }
    return fm_err_set(err, FM_EIO, "genotype file '%s' does not exist", path);
  }
  if (!is_dir) {
    uint8_t head[FM_FMT_SNIFF_BYTES];
    size_t n;
    fm_status st = read_head(path, head, &n, err);
    if (st != FM_OK) return st;
    if ((*out = fm_fmt_by_magic(head, n))) return FM_OK;
  }
  return fm_err_set(err, FM_EFORMAT,
                    "cannot tell the format of '%s' from its name or first bytes; give format = ",
                    path);
}

/* Nonzero when the format's own part of the extension ext (n bytes as
 * written, with its dot: "GEN" of ".GEN.gz") has capitals and no small
 * letters. */
static int is_upper_ext(const char *ext, size_t n) {
  int caps = 0;
  for (size_t i = 1; i < n && ext[i] != '.'; i++) {
    if (ext[i] >= 'a' && ext[i] <= 'z') return 0;
    caps |= ext[i] >= 'A' && ext[i] <= 'Z';
  }
  return caps;
}

fm_status fm_fmt_resolve(const fm_fmt_format *f, const char *path, const char *const *given,
                         fm_fmt_fileset *out, fm_err *err) {
  if (!f || !path || !out)
    return fm_err_set(err, FM_EARG, "fm_fmt_resolve: format, path and out are required");
  memset(out, 0, sizeof *out);
  out->format = f;
  const size_t n = strlen(path), ext = ext_len(f, path, n), stem = n - ext;
  const int upper = is_upper_ext(path + stem, ext);
  int is_dir = 0;
  const int is_file = exists(path, &is_dir) && !is_dir;
  const char *main_ext = f->is_prefix_named && !ext && !is_file ? f->extension[0] : "";
  fm_status st = join(out->path[0], path, n, main_ext, 0, err);
  for (int i = 0; st == FM_OK && i < f->n_companions; i++) {
    const fm_fmt_companion *c = &f->companion[i];
    char *dst = out->path[1 + i];
    if (given && given[i]) {
      st = join(dst, given[i], strlen(given[i]), "", 0, err);
    } else if (c->ext) {
      /* the extension upper-cased when the main file's is, then as in the table */
      int found = 0;
      for (int k = upper ? 0 : 1; st == FM_OK && !found && k < 2; k++)
        found = (st = join(dst, path, stem, c->ext, k == 0, err)) == FM_OK && exists(dst, NULL);
      if (st == FM_OK && !found) {
        if (c->is_required) st = join(dst, path, stem, c->ext, upper, err); /* the first name */
        else dst[0] = '\0';
      }
    }
  }
  if (st != FM_OK) memset(out->path, 0, sizeof out->path);
  return st;
}

/* Whether magics a and b share a byte position and agree on every shared
 * one (masks applied): one file could hold both, as a .bed (6c 1b 01) and
 * a PGEN (6c 1b, any mode) can; such formats are not told apart here. */
static int magics_overlap(const fm_fmt_magic *a, const fm_fmt_magic *b) {
  int shared = 0;
  for (uint32_t i = 0; i < a->len; i++) {
    const uint32_t at = a->offset + i;
    if (at < b->offset || at >= b->offset + b->len) continue;
    const uint8_t ma = a->mask ? (uint8_t)a->mask[i] : 0xff;
    const uint8_t mb = b->mask ? (uint8_t)b->mask[at - b->offset] : 0xff;
    if (((uint8_t)a->bytes[i] ^ (uint8_t)b->bytes[at - b->offset]) & ma & mb) return 0;
    shared = 1;
  }
  return shared;
}

/* The format whose magic the main file's first bytes are, when they are
 * not fs's format's own (a BCF named .bgen); NULL otherwise, and for
 * formats whose magics overlap (a sample-major .bed is no PGEN). */
static const fm_fmt_format *other_format(const fm_fmt_fileset *fs) {
  uint8_t head[FM_FMT_SNIFF_BYTES];
  size_t n;
  if (!fs->path[0][0] || read_head(fs->path[0], head, &n, NULL) != FM_OK) return NULL;
  const fm_fmt_format *other = fm_fmt_by_magic(head, n);
  if (!other || other == fs->format) return NULL;
  for (int j = 0; j < fs->format->n_magic; j++) {
    if (magic_at(&fs->format->magic[j], head, n)) return NULL;
    for (int k = 0; k < other->n_magic; k++)
      if (magics_overlap(&fs->format->magic[j], &other->magic[k])) return NULL;
  }
  return other;
}

/* FM_EFORMAT saying that fs's main file is an `other` file, then (when
 * said is not NULL) what fs's reader found. */
static fm_status is_other_format(const fm_fmt_fileset *fs, const fm_fmt_format *other,
                                 const char *said, fm_err *err) {
  return fm_err_set(err, FM_EFORMAT, "'%s' starts like a %s file, not %s: give format = \"%s\" to read it as one%s%s%s%s",
                    fs->path[0], other->name, fs->format->name, other->name, said ? " (the " : "",
                    said ? fs->format->name : "", said ? " reader said: " : "", said ? said : "");
}

fm_status fm_fmt_open(const fm_fmt_fileset *fs, const fm_fmt_options *opt, fm_reader **out,
                      fm_err *err) {
  if (!fs || !fs->format || !out)
    return fm_err_set(err, FM_EARG, "fm_fmt_open: fileset, its format and out are required");
  /* the main file first: a missing .bed is named, not the .fam its reader reads first */
  int is_dir = 0;
  if (fs->path[0][0] && !exists(fs->path[0], &is_dir))
    return fm_err_set(err, FM_EIO, "cannot open '%s': no such file", fs->path[0]);
  if (is_dir) return fm_err_set(err, FM_EIO, "cannot read '%s': it is a directory", fs->path[0]);
  /* a main file in another format's bytes is named as such before its
   * reader looks for companions (a VCF named .bed, not its missing .fam);
   * a format without a magic learns it only when its reader refuses the
   * file (a .gen.gz starts like a .vcf.gz); files that open are never
   * looked at then */
  const fm_fmt_format *other = fs->format->n_magic ? other_format(fs) : NULL;
  if (other) return is_other_format(fs, other, NULL, err);
  const fm_fmt_options none = {0};
  fm_status st = fs->format->open(fs, opt ? opt : &none, out, err);
  if (st == FM_EFORMAT && err && !fs->format->n_magic && (other = other_format(fs))) {
    char said[sizeof err->msg];
    memcpy(said, err->msg, sizeof said);
    st = is_other_format(fs, other, said, err);
  }
  return st;
}
