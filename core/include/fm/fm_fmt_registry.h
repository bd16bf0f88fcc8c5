/* fm_fmt_registry.h: the one table of genotype file formats: per format its
 * name, file extensions, magic bytes, companion files and open function,
 * with the lookups a caller needs to open a file by name alone.
 *
 * How a path becomes a reader (Rpgen's rpgen_read() and rpgen_info() go
 * through these three steps, docs/formats/conventions.md "Formats and
 * companion files"):
 *  1. fm_fmt_detect: the format named by the caller, else the one whose
 *     extension ends the path (".bed", ".vcf.gz", in any case), else a
 *     fileset named by its bare prefix ("g" with "g.bed" beside it), else
 *     the first bytes of the file (fm_fmt_by_magic).
 *  2. fm_fmt_resolve: the main file and each companion, the given name or
 *     the main file's name with the format's extension replaced, looked for
 *     first in the case of that extension when it is upper case (UP.BIM for
 *     UP.BED), then in lower case.
 *  3. fm_fmt_open: the format's reader, with the options it takes.
 *
 * Formats are listed in a fixed order (fm_fmt_at); where two rules could
 * match, the earlier format wins (a .bed magic 0x6c 0x1b 0x01 before the
 * PGEN magic 0x6c 0x1b). Names, aliases and extensions match whatever the
 * case of their ASCII letters.
 * Thread safety: the table is constant; every function is reentrant. */
#ifndef FM_FMT_REGISTRY_H
#define FM_FMT_REGISTRY_H

#include "fm_fmt.h"

#define FM_FMT_MAX_COMPANIONS 3
#define FM_FMT_MAX_EXTENSIONS 4
#define FM_FMT_MAX_ALIASES 3
#define FM_FMT_MAX_MAGIC 3
#define FM_FMT_MAX_OPTIONS 2
/* Bytes fm_fmt_detect reads from the start of a file for fm_fmt_by_magic. */
#define FM_FMT_SNIFF_BYTES 20
/* Bytes of a file name with its NUL, as Linux's PATH_MAX: a longer name
 * cannot be opened. */
#define FM_FMT_PATH_MAX 4096

/* Bytes that start a file of the format: bytes[i] == file[offset + i] for
 * each i < len where mask (NULL: every byte) has mask[i] == 0xff; bytes
 * under mask 0x00 must be present but may hold anything. */
typedef struct fm_fmt_magic {
  uint32_t offset;
  uint32_t len;
  const char *bytes;
  const char *mask;
} fm_fmt_magic;

/* A file read with the main one. */
typedef struct fm_fmt_companion {
  const char *name;    /* its role, and the argument that gives it in Rpgen: "bim" */
  const char *ext;     /* looked for beside the main file: ".bim"; NULL: only when given */
  int is_required;     /* absent: still passed on, under the first name looked for, so that
                          the reader's error names it; an optional one is then absent */
  int is_read_at_open; /* 0: the reader does not read it (a BGEN's .sample: the caller takes
                          sample IDs and sex from it when the file has none) */
} fm_fmt_companion;

typedef struct fm_fmt_format fm_fmt_format;

/* A main file and its companions, as fm_fmt_resolve finds them. */
typedef struct fm_fmt_fileset {
  const fm_fmt_format *format;
  /* [0] the main file, then format->companion[i] at [1 + i]; "" when absent */
  char path[1 + FM_FMT_MAX_COMPANIONS][FM_FMT_PATH_MAX];
} fm_fmt_fileset;

/* What a format's reader takes besides its files; a format ignores the
 * fields it has no use for. A zeroed struct is every default. */
typedef struct fm_fmt_options {
  const char *region;                  /* VCF/BCF: an htslib region read through the index */
  const char *chrom;                   /* HAPS + LEGEND: the chromosome of every record */
  const char *const *counted_alleles;  /* PED, TPED: one counted allele per variant, or NULL */
  int64_t n_counted;
  int dosage_format;                   /* PLINK 1 legacy dosage: 0 (infer), 1, 2 or 3 */
} fm_fmt_options;

typedef fm_status (*fm_fmt_open_fn)(const fm_fmt_fileset *fs, const fm_fmt_options *opt,
                                    fm_reader **out, fm_err *err);

struct fm_fmt_format {
  const char *name;                                    /* "bed", "vcf", ... */
  const char *alias[FM_FMT_MAX_ALIASES + 1];           /* other names, NULL-terminated */
  const char *extension[FM_FMT_MAX_EXTENSIONS + 1];    /* ".bed", ".gen.gz", NULL-terminated */
  int is_prefix_named; /* a bare prefix names the fileset: prefix + extension[0] */
  fm_fmt_magic magic[FM_FMT_MAX_MAGIC];
  int n_magic;
  fm_fmt_companion companion[FM_FMT_MAX_COMPANIONS];
  int n_companions;
  /* the fields of fm_fmt_options its reader uses, by name ("region"),
   * NULL-terminated: a caller refuses the others as arguments */
  const char *option[FM_FMT_MAX_OPTIONS + 1];
  fm_fmt_open_fn open; /* fm_fmt_open calls it */
};

/* The i-th format (0-based) of the table, NULL past its end. The order:
 * bed, pgen, ped, tped, bgen, vcf, gen, haps, eigenstrat, dosage. */
const fm_fmt_format *fm_fmt_at(int i);

/* The format called name or one of its aliases ("bcf", "vcf.gz": vcf;
 * "geno", "ancestrymap", "packedancestrymap": eigenstrat), in any case;
 * NULL for another name or NULL. */
const fm_fmt_format *fm_fmt_by_name(const char *name);

/* The format whose extension ends path (".bcf", ".HAPS.gz"); NULL when none.
 * Formats without extensions (legacy dosage) are never found by path. */
const fm_fmt_format *fm_fmt_by_path(const char *path);

/* The format whose magic the first n bytes of a file hold; NULL when none:
 * .bed 0x6c 0x1b 0x01; PGEN 0x6c 0x1b and any third byte; BGEN "bgen" at
 * byte offset 16; VCF/BCF "BCF", gzip (0x1f 0x8b: BGZF VCF) or "##file";
 * packed EIGENSTRAT "GENO". */
const fm_fmt_format *fm_fmt_by_magic(const uint8_t *bytes, size_t n);

/* The format of path: the one called name when name is not NULL (path is
 * then not looked at), else fm_fmt_by_path, else (path naming nothing) the
 * first prefix-named format with path + its extension[0] beside it, else
 * fm_fmt_by_magic of the file's first FM_FMT_SNIFF_BYTES bytes (a directory
 * has none).
 * Errors: FM_EARG (name is not a format: the message lists the names; path
 *         and name NULL); FM_EIO (path names nothing, or the file cannot be
 *         opened or read); FM_EFORMAT (neither its name nor its bytes tell),
 *         naming path. */
FM_NODISCARD fm_status fm_fmt_detect(const char *path, const char *name,
                                     const fm_fmt_format **out, fm_err *err);

/* The files of a fileset whose main file is named by path, for format f.
 * given: NULL, or f->n_companions names (NULL: not given), copied as they
 * are. The main file is path, except that a prefix-named format's path that
 * neither ends in one of its extensions nor is an existing file gets
 * extension[0] appended (an existing directory is not a file). A companion not given is the main file's name
 * without the format's extension (path itself when it has none), plus the
 * companion's extension: upper-cased first when the format's part of the
 * extension as written has capitals and no small letters (".BED",
 * ".GEN.gz"), then as in the table; the first name that exists (stat, a
 * directory too) is taken, else the first name for a required companion.
 * Errors: FM_EARG (f, path or out NULL); FM_EIO (a name of
 *         FM_FMT_PATH_MAX bytes or more, naming its start).
 * Owns:   *out is a value: nothing to free. */
FM_NODISCARD fm_status fm_fmt_resolve(const fm_fmt_format *f, const char *path,
                                      const char *const *given, fm_fmt_fileset *out,
                                      fm_err *err);

/* Open the reader of fs->format on fs's files (fm_fmt.h). opt may be NULL.
 * Errors: those of the format's open function (fm_fmt_<format>.h), an
 *         FM_EFORMAT of a main file whose first bytes are another format's
 *         magic and not its own saying so first; FM_EARG when fs, its
 *         format or out is NULL.
 * Owns:   *out owned (fm_reader_close); fs and opt are borrowed. */
FM_NODISCARD fm_status fm_fmt_open(const fm_fmt_fileset *fs, const fm_fmt_options *opt,
                                   fm_reader **out, fm_err *err);

#endif
