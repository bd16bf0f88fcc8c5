# Genotype codecs: PLINK 2-bit hardcalls (written, or mapped from an existing
# .bed), one-byte dosages, and one-bit phased haplotypes.

# Refuse values outside `allowed` (NA allowed when na_ok), naming the first
# offending cell in R's 1-based (row, column) terms.
.check_values <- function(m, what, allowed, na_ok) {
  bad <- if (na_ok) !is.na(m) & !(m %in% allowed) else is.na(m) | !(m %in% allowed)
  if (any(bad)) {
    at <- arrayInd(which(bad)[1], dim(m))
    fm_abort("earg", sprintf("%s[%d, %d] = %s is not %s", what, at[1], at[2],
                             format(m[at], digits = 15L), paste(c(allowed, if (na_ok) "NA"), collapse = ", ")))
  }
}

.as_genotype_matrix <- function(g, what) {
  if (!is.matrix(g) || !(is.numeric(g) || is.logical(g))) {
    fm_abort("earg", sprintf("%s must be a numeric matrix (samples x variants), not %s", what,
                             if (is.matrix(g)) paste(typeof(g), "matrix") else class(g)[1]))
  }
  # a logical matrix is allowed only all NA (the type of a bare NA): TRUE
  # and FALSE are not allele counts
  if (is.logical(g) && !all(is.na(g))) {
    fm_abort("earg", sprintf(paste("%s is a logical matrix with TRUE/FALSE values, not allele counts",
                                   "0, 1, 2 or NA; give numbers (e.g. %s + 0L if TRUE means one allele)"),
                             what, what))
  }
  .check_values(g, what, 0:2, na_ok = TRUE)
  storage.mode(g) <- "integer"
  g
}

.check_dimnames <- function(dn, d) {
  if (is.null(dn)) return(NULL)
  if (!is.list(dn) || length(dn) != 2) fm_abort("earg", "dimnames must be a list of two (row names, column names)")
  for (k in 1:2) {
    if (!is.null(dn[[k]]) && length(dn[[k]]) != d[k]) {
      fm_abort("emismatch", sprintf("dimnames[[%d]] has length %d but the matrix has %d %s", k,
                                    length(dn[[k]]), d[k], c("rows", "columns")[k]))
    }
  }
  lapply(dn, function(v) if (is.null(v)) NULL else as.character(v))
}

#' Store hardcalls as PLINK 2-bit genotypes
#'
#' Encodes an integer matrix of allele counts into PLINK 1 `.bed` two-bit,
#' variant-major storage inside an fmalloc runtime: 4 genotypes per byte,
#' `ceiling(nrow(g) / 4)` bytes per variant.
#'
#' @param g integer (or whole-number double) matrix, samples x variants, of
#'   counts of the counted allele (A1/ALT): 0, 1, 2 or `NA` (missing). A
#'   logical matrix is accepted only when all `NA` (all missing): `TRUE` and
#'   `FALSE` are not counts.
#' @param runtime an fmalloc runtime from [open_fmalloc()];
#'   the session's default runtime, [fmalloc_default_runtime()], when not given.
#' @param dimnames row (sample) and column (variant) names; defaults to `dimnames(g)`.
#' @return An [fmalloc_codec_matrix][fmalloc_codec_matrix-class] with codec `"bed2"`.
#' @section Errors: `fm_error_earg` naming the first (row, column) that is not
#'   0, 1, 2 or `NA` (its value to 15 significant digits), or for a logical
#'   matrix with `TRUE` or `FALSE`; `fm_error_enospc` when the runtime is full.
#' @section Source: PLINK 1.9 file formats, "bed" (PLINK 1 binary biallelic
#'   genotype table), <https://www.cog-genomics.org/plink/1.9/formats#bed>.
#' @examples
#' rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
#' g <- matrix(c(0L, 1L, 2L, NA, 1L, 0L), 3, 2)
#' G <- fmalloc_bed(g, rt)
#' G
#' G[2:3, ]
#' G %*% c(1, 1)
#' cleanup_fmalloc(rt)
#' @export
fmalloc_bed <- function(g, runtime = fmalloc_default_runtime(), dimnames = base::dimnames(g)) {
  g <- .as_genotype_matrix(g, "g")
  dimnames <- .check_dimnames(dimnames, dim(g))
  n <- nrow(g)
  col_bytes <- ceiling(n / 4)
  storage <- create_fmalloc_vector("raw", max(1, col_bytes * ncol(g)), runtime)
  .Call(C_fmr_bed2_encode, g, storage)
  .new_codec_matrix(storage, "bed2", n, ncol(g), 0, col_bytes, dimnames = dimnames)
}

# The .bed and its .bim and .fam as the core's format registry finds them
# (fm_fmt_resolve: also an upper-case .BED's .BIM and .FAM); a .bim or .fam
# given names its fileset too.
.bed_paths <- function(prefix_or_bed) {
  p <- sub("\\.(bim|fam)$", "", path.expand(prefix_or_bed))
  as.list(.Call(C_fmr_fmt_files, "bed", p))
}

.read_table_file <- function(path, col_names, col_classes, what) {
  if (!file.exists(path)) fm_abort("eio", sprintf("%s file '%s' does not exist", what, path))
  df <- tryCatch(
    utils::read.table(path, header = FALSE, col.names = col_names, colClasses = col_classes,
                      comment.char = "", quote = "", stringsAsFactors = FALSE),
    error = function(e) {
      fm_abort("eformat", sprintf("cannot parse %s file '%s': %s", what, path, conditionMessage(e)))
    }
  )
  df
}

#' Map an existing PLINK .bed without copying
#'
#' Maps `prefix.bed` read-only and reads `prefix.fam` and `prefix.bim`. The
#' genotypes are never copied: products, subsets and statistics decode bounded
#' panels straight from the file's pages.
#'
#' The `.bed` is validated before any genotype is read: the magic bytes
#' `0x6c 0x1b`, the variant-major mode byte `0x01`, and the exact size
#' `3 + M * ceiling(N / 4)` bytes for N samples (`.fam` lines) and M variants
#' (`.bim` lines).
#'
#' Values are counts of the `.bim` column-5 allele (A1; plink2 calls it ALT
#' when the file came from plink2), 0/1/2, missing `NA`. This is what
#' `plink2 --export A` writes when `--export-allele` names, for each variant,
#' its `.bim` column-5 allele.
#'
#' @param prefix_or_bed path to the `.bed` file or the common prefix.
#' @param variants read the `.bim` (default `TRUE`). With `FALSE` only its
#'   non-blank lines are counted (with [utils::count.fields()], checking
#'   that each has six fields), so the matrix has no
#'   variant names and `fmalloc_variants()` gives `NULL`: for files of
#'   millions of variants when only the genotypes are needed, e.g. a PCA in
#'   bounded memory. For 2,000,000 variants the `.bim` data frame takes
#'   214 MB, and the R process peaks at 382 MiB opening the file set with
#'   the `.bim` against 97 MiB without it.
#' @return An [fmalloc_codec_matrix][fmalloc_codec_matrix-class] of N samples x
#'   M variants with dimnames (IID, variant ID, or `NULL` column names with
#'   `variants = FALSE`); `fmalloc_variants(x)` gives the `.bim` columns in
#'   the stack's schema (`chr`, `pos`, `id`, `ref` = A2, `alt` = A1, then
#'   `cm`; see [fmalloc_variants()]) and `fmalloc_samples(x)` the `.fam`
#'   columns (`iid` first, then `fid`, `father`, `mother`, `sex`,
#'   `phenotype`).
#' `.fam` and `.bim` are read as whitespace-separated text without a header
#' (`.fam`: FID, IID, father, mother, sex, phenotype, read by
#' [fmalloc_read_samples()], so sex is coded 0/1/2; `.bim`: chromosome,
#' variant ID, centimorgans, base-pair position, A1, A2). N and M are their
#' line counts. A `.fam` whose line count is off by less than the 4-sample
#' padding of the last byte cannot be detected from the `.bed` size; its
#' extra samples read padding bits, which PLINK writes as 0 (two copies of
#' A1). As `plink2 --bfile` does, such a file is read (the extra sample has
#' genotype 2 everywhere); unlike plink2, a warning (class
#' `fm_warning_emismatch`) says so when the last sample sits in a byte's
#' padding slot and reads 2 at each of the first variants (up to 1000, at
#' least 16; a bounded read at the start of the file), as padding does and a
#' real sample almost never does.
#'
#' A matrix from `fmalloc_bed_open()` can be saved with [saveRDS()]: it
#' stores the path, and [readRDS()] maps and validates the file again on
#' first use (`fm_error_eio` when it is gone). [fmalloc_save()] instead
#' copies its genotype bytes into a runtime (given by `runtime`), with the
#' metadata, so that the saved matrix no longer needs the file.
#' @section Errors: `fm_error_earg` when `prefix_or_bed` is not one path or
#'   `variants` is not `TRUE` or `FALSE`;
#'   `fm_error_eio` for a missing file; `fm_error_eformat` for an unparsable
#'   `.fam`/`.bim` (naming the file and the line or the parser's complaint), wrong magic,
#'   a sample-major file, or a size that disagrees with N and M (the message
#'   names the file, expected and actual size, N and M).
#' @section Source: PLINK 1.9 file formats ("bed", "bim", "fam").
#' @examples
#' # a .bed of 5 samples x 2 variants, written byte by byte
#' prefix <- file.path(tempdir(), "example")
#' writeBin(as.raw(c(0x6c, 0x1b, 0x01, 0xe4, 0x00, 0x1b, 0x03)), paste0(prefix, ".bed"))
#' writeLines(sprintf("f%d s%d 0 0 1 -9", 1:5, 1:5), paste0(prefix, ".fam"))
#' writeLines(c("1 rs1 0 100 A G", "1 rs2 0 200 C T"), paste0(prefix, ".bim"))
#' G <- fmalloc_bed_open(prefix)
#' as.matrix(G)
#' fmalloc_variants(G)
#' fmalloc_allele_freq(G)
#' @export
fmalloc_bed_open <- function(prefix_or_bed, variants = TRUE) {
  if (!is.character(prefix_or_bed) || length(prefix_or_bed) != 1 || is.na(prefix_or_bed)) {
    fm_abort("earg", "prefix_or_bed must be one path (the .bed file or its prefix)")
  }
  if (!.is_flag(variants)) fm_abort("earg", "variants must be TRUE or FALSE")
  paths <- .bed_paths(prefix_or_bed)
  if (!file.exists(paths$bed)) fm_abort("eio", sprintf(".bed file '%s' does not exist", paths$bed))
  fam <- fmalloc_read_samples(paths$fam, "fam")
  bim <- if (variants) {
    # .bim: chromosome, ID, cM, bp, A1 (the counted allele), A2
    b <- .read_table_file(paths$bim, c("chr", "id", "cm", "pos", "alt", "ref"),
                          c("character", "character", "numeric", "numeric", "character", "character"),
                          ".bim")
    b[, c(.variant_columns, "cm")]
  }
  bed <- normalizePath(paths$bed)
  n <- nrow(fam)
  m <- if (variants) nrow(bim) else .count_bim_lines(paths$bim)
  storage <- new.env(parent = emptyenv())
  storage$path <- bed
  storage$n <- n
  storage$m <- m
  storage$ptr <- .open_bed_view(bed, n, m)
  fm_check_fam_padding(bed, n, paths$fam, call = sys.call())
  .new_codec_matrix(storage, "bed2", n, m, 3, ceiling(n / 4),
                    dimnames = list(fam$iid, bim$id), variants = bim, samples = fam,
                    source = bed)
}

#' @rdname fmalloc_bed_open
#' @param bed,n,fam for `fm_check_fam_padding()`: the `.bed` path, its
#'   sample count as the `.fam` gives it and the `.fam` path (for the
#'   message).
#' @param call the call the warning reports.
#' @details `fm_check_fam_padding()` is that check, for packages reading
#'   `.bed` files with their own reader (Rpgen's [Rpgen::rpgen_read()]);
#'   it returns `NULL` invisibly.
#' @export
fm_check_fam_padding <- function(bed, n, fam, call = sys.call(-1L)) {
  # A .fam one line longer than the samples a .bed was written for (same
  # bytes per variant when n %% 4 != 1) gives its last sample the padding
  # bits of each variant's last byte, 00 as PLINK writes them. Too few
  # variants (< 16) say nothing.
  stride <- ceiling(n / 4)
  m <- floor((file.size(bed) - 3) / max(1, stride))
  k <- min(m, 1000, floor(2^24 / max(1, stride)))
  if (n %% 4 == 1 || is.na(k) || k < 16) return(invisible())
  con <- file(bed, "rb")
  on.exit(close(con))
  seek(con, 3)
  b <- readBin(con, "raw", k * stride)
  last <- as.integer(b[seq(stride, k * stride, by = stride)])
  if (all(bitwAnd(bitwShiftR(last, 2L * ((n - 1) %% 4)), 3L) == 0L)) {
    warning(warningCondition(sprintf(paste(
      "the last sample of '%s' (line %s) reads two copies of A1 at each of the first %d variants",
      "of '%s', as the zero padding bits of a .bed written for fewer samples do: check that the",
      ".fam has one line per sample of the .bed"), fam, format(n), k, bed),
      class = "fm_warning_emismatch", call = call))
  }
  invisible()
}

# Records of a .bim without reading them: count.fields keeps one integer per
# non-blank line (8 MB for 2e6 variants) and no strings; a line without its
# six fields is refused as the full reader would.
.count_bim_lines <- function(path) {
  if (!file.exists(path)) fm_abort("eio", sprintf(".bim file '%s' does not exist", path))
  nf <- tryCatch(
    utils::count.fields(path, sep = "", quote = "", comment.char = "", blank.lines.skip = TRUE),
    error = function(e) fm_abort("eformat", sprintf("cannot parse .bim file '%s': %s", path, conditionMessage(e)))
  )
  if (length(nf) && !all(range(nf) == 6)) {
    bad <- which(nf != 6)[1]
    fm_abort("eformat", sprintf("cannot parse .bim file '%s': record %d has %d fields, not 6",
                                path, bad, nf[bad]))
  }
  length(nf)
}

# The metadata schema (documented at fmalloc_variants()): the variant
# columns every producer gives, in order, and the type of each column the
# schema names, checked where metadata is given by hand.
.variant_columns <- c("chr", "pos", "id", "ref", "alt")
.schema_types <- c(chr = "character", pos = "numeric", id = "character", ref = "character",
                   alt = "character", cm = "numeric", iid = "character", fid = "character",
                   father = "character", mother = "character", sex = "numeric",
                   phenotype = "character")

.check_metadata <- function(df, n, what) {
  if (is.null(df)) return(NULL)
  if (!is.data.frame(df) || nrow(df) != n)
    fm_abort("earg", what, " must be NULL or a data frame of ", n, " rows")
  for (col in intersect(names(df), names(.schema_types))) {
    want <- .schema_types[[col]]
    if (!(if (want == "numeric") is.numeric(df[[col]]) else is.character(df[[col]])))
      fm_abort("earg", what, " column '", col, "' must be ", want, " (the schema of ?fmalloc_variants), not ",
               fm_describe(df[[col]]))
  }
  df
}

#' Read a sample file into the metadata schema
#'
#' Reads the samples of a PLINK `.fam` (or `.tfam`), a PLINK 2 `.psam` or
#' an Oxford `.sample` file (BGEN, GEN, HAPS) as the data frame that
#' [fmalloc_samples()] gives for a genotype matrix read from that file set
#' ([fmalloc_bed_open()], `Rpgen::rpgen_read()`): one row per sample, in
#' file order, `iid` first, then the file's other columns in file order.
#'
#' * `"fam"`: six whitespace-separated fields per line, no header: `fid`,
#'   `iid`, `father`, `mother`, `sex`, `phenotype`.
#' * `"psam"`: `##` lines are skipped; a header line starting with `#`
#'   names the columns, which are kept under their names except `FID`,
#'   `IID`, `SID`, `PAT`, `MAT` and `SEX` (any case), which become `fid`,
#'   `iid`, `sid`, `father`, `mother` and `sex`; a file without a header
#'   has the `"fam"` layout. A header must name `IID`.
#' * `"sample"`: line 1 names the columns, line 2 gives their types; `ID_1`
#'   becomes `fid`, `ID_2` `iid`, a column named `sex` (any case) of type
#'   `D` becomes `sex`; columns of type `C` or `P` (continuous) and the
#'   `missing` column are numbers, the others strings.
#'
#' `sex` is an integer code, as the genotype readers use it for the male-X
#' rule: 1 (male) for `1`, `M` or `m`, 2 (female) for `2`, `F` or `f`, 0
#' (unknown) for anything else (`0`, `-9`, `NA`). Every other column is a
#' character vector, but the numeric ones of a `.sample`; a `.fam`'s
#' `phenotype` stays as written (`"-9"`). Blank lines are skipped. The
#' file is read in blocks of 65,536 lines.
#'
#' @param path the sample file (it may be compressed: gzip, bzip2, xz).
#' @param layout `"fam"`, `"psam"`, `"sample"`, or `NULL` to tell it from
#'   the extension (`.fam` and `.tfam`, `.psam`, `.sample`).
#' @return A data frame, one row per sample.
#' @section Errors: `fm_error_earg` when `path` is not one string or the
#'   layout cannot be told from its extension; `fm_error_eio` when the file
#'   does not exist; `fm_error_eformat` naming the file and the 1-based line
#'   for a line whose field count differs from the layout's (or the
#'   header's), a `.psam` header without `IID`, a `.sample` without its two
#'   header lines, or a value of a numeric `.sample` column that is not a
#'   number.
#' @section Source: PLINK 1.9 `.fam` and PLINK 2 `.psam`
#'   (<https://www.cog-genomics.org/plink/2.0/formats#psam>); the Oxford
#'   sample format (QCTOOL's `sample_file_formats` page).
#' @examples
#' f <- tempfile(fileext = ".psam")
#' writeLines(c("#FID\tIID\tSEX\tPopulation", "f1\ts1\t1\tGBR", "f2\ts2\tNA\tFIN"), f)
#' fmalloc_read_samples(f)
#' @export
fmalloc_read_samples <- function(path, layout = NULL) {
  if (!is.character(path) || length(path) != 1L || is.na(path))
    fm_abort("earg", "path must be one file name, not ", fm_describe(path))
  if (is.null(layout)) {
    ext <- tolower(sub(".*\\.", "", sub("\\.(gz|bz2|xz)$", "", basename(path))))
    layout <- switch(ext, fam = , tfam = "fam", psam = "psam", sample = "sample",
                     fm_abort("earg", "the layout of '", path, "' cannot be told from its extension: ",
                              "give layout = \"fam\", \"psam\" or \"sample\""))
  }
  layout <- fm_arg_choice(layout, c("fam", "psam", "sample"))
  what <- switch(layout, psam = ".psam", sample = "sample",
                 fam = if (grepl("\\.tfam(\\.(gz|bz2|xz))?$", path, ignore.case = TRUE)) ".tfam" else ".fam")
  if (!file.exists(path)) fm_abort("eio", sprintf("%s file '%s' does not exist", what, path))
  t <- .sample_fields(path, layout, what)
  names <- t$names
  key <- toupper(names)
  if (layout == "sample") {
    names[seq_len(2)] <- c("fid", "iid")
    sex <- which(key == "SEX" & toupper(t$types) == "D")[1]
    if (!is.na(sex)) names[sex] <- "sex"
  } else {
    renamed <- c(FID = "fid", IID = "iid", SID = "sid", PAT = "father", MAT = "mother", SEX = "sex")
    hit <- key %in% names(renamed)
    names[hit] <- renamed[key[hit]]
    if (!"iid" %in% names)
      fm_abort("eformat", sprintf("%s file '%s' line %d: the header names no IID column", what, path,
                                  t$header_line))
  }
  cols <- lapply(seq_along(names), function(k) {
    v <- t$fields[, k]
    if (names[k] == "sex") return(.sex_codes(v))
    if (layout == "sample" && (toupper(t$types[k]) %in% c("C", "P") || names[k] == "missing"))
      return(.sample_numbers(v, path, names[k], t$lines))
    v
  })
  names(cols) <- names
  df <- as.data.frame(cols, stringsAsFactors = FALSE, optional = TRUE)
  df[c("iid", setdiff(names, "iid"))]
}

# Sex codes of the genotype readers (fm_sex_code(), core/src/formats/fmt.c).
.sex_codes <- function(v) {
  out <- integer(length(v))
  out[v %in% c("1", "M", "m")] <- 1L
  out[v %in% c("2", "F", "f")] <- 2L
  out
}

# A numeric .sample column: NA and "NA" are missing, anything else not a
# number is refused, naming its line.
.sample_numbers <- function(v, path, name, lines) {
  x <- suppressWarnings(as.numeric(v))
  bad <- which(is.na(x) & !(v %in% c("NA", "na", "NaN", "nan", "-")))
  if (length(bad))
    fm_abort("eformat", sprintf("sample file '%s' line %d: '%s' in column %s is not a number", path,
                                lines[bad[1]], v[bad[1]], name))
  x
}

# The fields of a sample file's lines, read in blocks of 65,536 lines:
# list(names, types (a .sample's line 2), fields = a character matrix with
# one row per sample line, lines = their 1-based line numbers, header_line).
# A line whose field count differs from the layout's is an eformat error
# naming the file and the line.
.sample_fields <- function(path, layout, what) {
  fam <- c("fid", "iid", "father", "mother", "sex", "phenotype")
  con <- file(path, "r")
  on.exit(close(con))
  head <- list()
  head_at <- integer()
  n_head <- if (layout == "sample") 2L else NA_integer_ # psam: 0 or 1, seen at the first line
  width <- if (layout == "fam") 6L else NA_integer_
  blocks <- list()
  at <- list()
  done <- 0
  repeat {
    lines <- readLines(con, n = 65536L, warn = FALSE)
    if (!length(lines)) break
    no <- done + seq_along(lines)
    done <- done + length(lines)
    if (layout == "psam") {
      keep <- !startsWith(lines, "##")
      lines <- lines[keep]
      no <- no[keep]
    }
    f <- strsplit(trimws(lines), "[[:space:]]+")
    keep <- lengths(f) > 0L
    f <- f[keep]
    no <- no[keep]
    if (is.na(n_head) && length(f)) n_head <- if (startsWith(f[[1]][1], "#")) 1L else 0L
    take <- seq_len(min(length(f), n_head - length(head)))
    head <- c(head, f[take])
    head_at <- c(head_at, no[take])
    if (length(take)) {
      f <- f[-take]
      no <- no[-take]
    }
    if (is.na(width) && length(head) == n_head) width <- if (n_head) length(head[[1]]) else 6L
    nf <- lengths(f)
    bad <- which(nf != width)
    if (length(bad)) {
      fm_abort("eformat", sprintf("%s file '%s' line %.0f has %d field%s; %s", what, path, no[bad[1]],
                                  nf[bad[1]], if (nf[bad[1]] == 1L) "" else "s",
                                  if (n_head %in% 0L || layout == "fam") "a .fam line has 6" else
                                    sprintf("the header (line %.0f) names %d columns", head_at[1], width)))
    }
    if (length(f)) {
      blocks[[length(blocks) + 1L]] <- matrix(unlist(f, use.names = FALSE), ncol = width, byrow = TRUE)
      at[[length(at) + 1L]] <- no
    }
  }
  if (layout == "sample") {
    if (length(head) < 2L || length(head[[1]]) < 2L || length(head[[2]]) != length(head[[1]]))
      fm_abort("eformat", sprintf(paste("sample file '%s' must start with two header lines of the same",
                                        "length, at least ID_1 ID_2: the column names and their types"),
                                  path))
  }
  if (is.na(width)) width <- if (length(head)) length(head[[1]]) else 6L
  names <- if (length(head) && layout != "fam") head[[1]] else fam[seq_len(width)]
  if (layout == "psam" && length(head)) names[1] <- sub("^#", "", names[1])
  list(names = names, types = if (layout == "sample") head[[2]],
       fields = if (length(blocks)) do.call(rbind, blocks) else matrix(character(), 0L, width),
       lines = unlist(at), header_line = if (length(head_at)) head_at[1] else NA)
}

#' Variant and sample metadata of a genotype matrix
#'
#' The one metadata schema of the stack: every producer of a genotype
#' matrix ([fmalloc_bed_open()], `Rpgen::rpgen_read()` for every format)
#' gives these columns, and every consumer ([fmalloc_allele_freq()], the
#' statistics packages) reads them by these names.
#'
#' Variants (`fmalloc_variants()`), one row per column of `x`, in this order:
#' * `chr` (character): the chromosome as the file names it (`"1"`, `"chr1"`,
#'   `"X"`);
#' * `pos` (double): the base-pair position, 1-based (0 when the file has
#'   none);
#' * `id` (character): the variant ID (also the column names);
#' * `ref` (character): the other allele: REF in VCF, BGEN and PGEN, A2 in
#'   a PLINK 1 `.bim`;
#' * `alt` (character): the counted allele, whose copies a hardcall or
#'   dosage counts (0, 1, 2): ALT in VCF, BGEN and PGEN, A1 in a `.bim`
#'   (plink2 writes ALT as A1);
#' * then any columns a format adds: `cm` (double, centimorgans) from a
#'   `.bim`, a `.pvar` with a `CM` column (or in the `.bim` layout), a
#'   `.map` or a `.tped` (`NA` where the field is not a number).
#'
#' Samples (`fmalloc_samples()`), one row per row of `x`: `iid`
#' (character, the sample ID and the row names) first, then the columns of
#' the file set's sample file, as [fmalloc_read_samples()] reads it: from a
#' `.fam` (or `.tfam`) `fid`, `father`, `mother`, `sex` (integer: 0
#' unknown, 1 male, 2 female) and `phenotype`; from a `.psam` its columns
#' (`fid`, `sid`, `father`, `mother`, `sex` as there, others such as
#' `Population` under their own names); from an Oxford `.sample` (BGEN,
#' GEN, HAPS) `fid` (`ID_1`), `missing`, `sex` and its other columns.
#' Formats without a sample file (VCF, BCF) give `iid` only.
#'
#' Metadata given by hand to [fmalloc_codec_matrix()] may hold any of these
#' columns (and others); a column named as in the schema must have the
#' schema's type.
#'
#' Both read every object of the stack that carries metadata: a codec
#' matrix (samples x variants); its transposed view `t(X)` (variants x
#' samples), which gives the metadata of `X`: `fmalloc_variants(t(X))`
#' describes the rows of `t(X)` and `fmalloc_samples(t(X))` its columns; a
#' dense matrix with attributes `variants` and `samples` (as
#' `Rpgen::rpgen_read(destination = "dense")` returns it; base R's
#' subsetting drops them); a haplotype object (`h$variants`, one row per
#' locus, and `h$samples`, one row per sample, that is per two haplotype
#' columns, from `Rpgen::rpgen_read(destination = "haplotype")`).
#' @param x an `fmalloc_codec_matrix`, a transposed view of one, a matrix,
#'   or an `fmalloc_haplotypes` object.
#' @return A data frame (one row per variant or sample, following column
#'   and row selections), or `NULL` when the object carries none (a codec
#'   matrix made from an R matrix or opened with `variants = FALSE`, a
#'   matrix without the attribute).
#' @section Errors: `fm_error_earg` for any other `x` (a vector, `NULL`, a
#'   data frame).
#' @section Source: PLINK 1.9 `.bim`/`.fam` and PLINK 2 `.pvar`/`.psam`
#'   file formats; VCF 4.3 (REF, ALT); BGEN v1.2.
#' @examples
#' prefix <- file.path(tempdir(), "schema")
#' writeBin(as.raw(c(0x6c, 0x1b, 0x01, 0xe4, 0x00)), paste0(prefix, ".bed"))
#' writeLines(sprintf("f%d s%d 0 0 1 -9", 1:4, 1:4), paste0(prefix, ".fam"))
#' writeLines(c("1 rs1 0 100 A G", "1 rs2 0 200 C T"), paste0(prefix, ".bim"))
#' G <- fmalloc_bed_open(prefix)
#' fmalloc_variants(G)
#' fmalloc_samples(G)
#' @export
fmalloc_variants <- function(x) {
  if (!methods::is(x, "fmalloc_codec_matrix")) return(.metadata(x, "variants", sys.call()))
  v <- x@variants
  if (!is.null(v) && !is.null(x@cols)) v <- v[x@cols, , drop = FALSE]
  v
}

#' @rdname fmalloc_variants
#' @export
fmalloc_samples <- function(x) {
  if (!methods::is(x, "fmalloc_codec_matrix")) return(.metadata(x, "samples", sys.call()))
  x@samples
}

# The variants or samples (what) of an object other than a codec matrix.
.metadata <- function(x, what, call) {
  if (methods::is(x, "fmalloc_transposed")) return(match.fun(paste0("fmalloc_", what))(x@x))
  if (inherits(x, "fmalloc_haplotypes")) return(x[[what]])
  if (is.matrix(x)) return(attr(x, what, exact = TRUE))
  fm_abort("earg", "x must be a genotype matrix (a codec matrix, a transposed view t(X), a matrix with a '",
           what, "' attribute) or a haplotype object, not ", fm_describe(x), call = call)
}

#' Store dosages at one byte per value
#'
#' Quantizes dosages d in \[0, 2\] to the byte `round(127 * d)` (so the
#' decoded value is a multiple of 1/127 and the rounding error is at most
#' 1/254); byte 255 is missing.
#'
#' @param x double matrix, samples x variants, of dosages in \[0, 2\] or `NA`.
#' @param runtime an fmalloc runtime;
#'   the session's default runtime, [fmalloc_default_runtime()], when not given.
#' @param dimnames defaults to `dimnames(x)`.
#' @return An [fmalloc_codec_matrix][fmalloc_codec_matrix-class] with codec `"dos8"`.
#' @section Errors: `fm_error_earg` naming the first (row, column) outside \[0, 2\].
#' @section Source: this package's one-byte dosage layout (documented in
#'   `docs/formats/dos8.md` in the source repository).
#' @examples
#' rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
#' D <- fmalloc_dosage(matrix(c(0, 0.5, 1.98, NA), 2, 2), rt)
#' as.matrix(D) # multiples of 1/127; NA stays NA
#' cleanup_fmalloc(rt)
#' @export
fmalloc_dosage <- function(x, runtime = fmalloc_default_runtime(), dimnames = base::dimnames(x)) {
  if (!is.matrix(x) || !is.numeric(x)) fm_abort("earg", "x must be a numeric matrix (samples x variants)")
  storage.mode(x) <- "double"
  dimnames <- .check_dimnames(dimnames, dim(x))
  storage <- create_fmalloc_vector("raw", max(1, nrow(x) * ncol(x)), runtime)
  .Call(C_fmr_dos8_encode, x, storage)
  .new_codec_matrix(storage, "dos8", nrow(x), ncol(x), 0, nrow(x), dimnames = dimnames)
}

#' Phased haplotypes at one bit per haplotype
#'
#' Stores phased alleles as locus-major bit rows: row `l` holds the alleles of
#' every haplotype at locus `l`, one bit each, padded to a multiple of 64
#' bytes so every row starts 64-byte aligned. This is a typed accessor, not a
#' numeric matrix: it keeps alleles as alleles for Li-Stephens style HMM
#' kernels, which walk loci in order. C code reads rows with
#' `fm_codec_hap1_row()` (declared in Rfmalloc's C API, `LinkingTo: Rfmalloc`).
#'
#' @param h integer matrix, loci x haplotypes, of alleles 0 (REF) or 1 (ALT).
#'   Phased data have no missing code: `NA` is an error.
#' @param runtime an fmalloc runtime;
#'   the session's default runtime, [fmalloc_default_runtime()], when not given.
#' @return An object of class `fmalloc_haplotypes`; `dim()` gives
#'   (loci, haplotypes) and `h[i, ]` returns the alleles of loci `i` as an
#'   integer matrix (`NA` where an object with a missing plane, from
#'   `Rpgen::rpgen_read()`, marks the slot missing). `as.matrix(h)` decodes
#'   all of it (loci x haplotypes, as `h[, ]`); `rowSums()`, `colSums()`,
#'   `rowMeans()` and `colMeans()` decode bounded blocks of loci (at most
#'   [fmalloc_panel_budget()] bytes of integers each), with `na.rm` as in
#'   base R; `summary(h)` gives the shape, the missing slots and the spread
#'   of the ALT allele frequency over loci.
#' @section Errors: `fm_error_earg` naming the first value other than 0 or 1.
#'   `t(h)` raises `fm_error_eunsupported` (the bits are stored locus-major;
#'   use `t(as.matrix(h))`), as does `dims` other than 1 in the sums. `h %*%
#'   y` is not a method of this class (before R 4.4 no S3 method can serve
#'   `%*%`); it fails with base R's error: use `as.matrix(h) %*% y`.
#' @section Source: Li and Stephens (2003), Genetics 165:2213; the bit
#'   layout is this package's (`docs/formats/hap1.md` in the source repository).
#' @examples
#' rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
#' h <- matrix(rbinom(4 * 10, 1, 0.5), 4, 10) # 4 loci x 10 haplotypes
#' H <- fmalloc_haplotypes(h, rt)
#' identical(H[2:3, ], h[2:3, ])
#' cleanup_fmalloc(rt)
#' @aliases fmalloc_haplotypes-class
#' @export
fmalloc_haplotypes <- function(h, runtime = fmalloc_default_runtime()) {
  if (!is.matrix(h) || !(is.numeric(h) || is.logical(h))) {
    fm_abort("earg", "h must be a numeric matrix (loci x haplotypes) of 0/1 alleles")
  }
  .check_values(h, "h", 0:1, na_ok = FALSE)
  storage.mode(h) <- "integer"
  n_loci <- nrow(h)
  n_haps <- ncol(h)
  row_bytes <- .Call(C_fmr_hap1_row_bytes, n_haps)
  storage <- create_fmalloc_vector("raw", max(1, row_bytes * n_loci), runtime)
  .Call(C_fmr_hap1_encode, t(h), storage)
  structure(list(storage = storage, n_loci = n_loci, n_haps = n_haps, row_bytes = row_bytes,
                 dimnames = dimnames(h)),
            class = "fmalloc_haplotypes")
}

#' @export
dim.fmalloc_haplotypes <- function(x) as.integer(c(x$n_loci, x$n_haps))

#' @export
dimnames.fmalloc_haplotypes <- function(x) x$dimnames

#' @export
`[.fmalloc_haplotypes` <- function(x, i, j, drop = TRUE) {
  loci <- if (missing(i)) seq_len(x$n_loci) else .index(i, x$n_loci, x$dimnames[[1]], "locus")
  out <- matrix(0L, length(loci), x$n_haps)
  # Runs of consecutive loci are decoded with one call each.
  runs <- if (length(loci)) split(loci, cumsum(c(1, diff(loci) != 1))) else list()
  pos <- 0
  for (r in runs) {
    rows <- .Call(C_fmr_hap1_rows, x$storage, x$n_haps, x$n_loci, r[1] - 1, length(r))
    out[pos + seq_along(r), ] <- t(rows)
    pos <- pos + length(r)
  }
  if (!is.null(x$missing)) out[x$missing[loci, , drop = FALSE] == 1L] <- NA
  if (!is.null(x$dimnames)) dimnames(out) <- list(x$dimnames[[1]][loci], x$dimnames[[2]])
  if (!missing(j)) out <- out[, j, drop = FALSE]
  if (drop) drop(out) else out
}

#' @export
print.fmalloc_haplotypes <- function(x, ...) {
  cat(sprintf("<fmalloc haplotypes: %s loci x %s haplotypes, 1 bit each, %s bytes per locus row>\n",
              format(x$n_loci, big.mark = ","), format(x$n_haps, big.mark = ","), x$row_bytes))
  invisible(x)
}

# An S4-visible class, so that the methods below (and those for classes
# extending it, such as Rpgen's "rpgen_haplotypes") dispatch.
#' @exportClass fmalloc_haplotypes
setOldClass("fmalloc_haplotypes")

#' @rdname fmalloc_haplotypes
#' @param x,na.rm,dims as in [base::colSums()]; `x` an `fmalloc_haplotypes`.
#' @param ... ignored.
#' @export
setMethod("as.matrix", "fmalloc_haplotypes", function(x, ...) x[, , drop = FALSE])

#' @rdname fmalloc_haplotypes
#' @export
setMethod("t", "fmalloc_haplotypes", function(x) {
  fm_abort("eunsupported", "t() of haplotypes (stored locus-major, one bit each) is not supported; ",
           "use t(as.matrix(x)) for the haplotypes x loci matrix")
})

# Blocks of consecutive loci decoding to at most the panel budget of integers.
.hap_blocks <- function(x) {
  per <- max(1, floor(fmalloc_panel_budget() / (4 * max(1, x$n_haps))))
  if (x$n_loci == 0) return(list())
  lapply(seq(1, x$n_loci, by = per), function(s) seq(s, min(x$n_loci, s + per - 1)))
}

# Row (locus) or column (haplotype) sums or means, a block of loci at a time.
.hap_sums <- function(x, na.rm, dims, by_row, mean) {
  if (!identical(as.numeric(dims), 1)) {
    fm_abort("eunsupported", "dims must be 1 for haplotypes (a matrix), not ", deparse(dims),
             call = sys.call(-1L))
  }
  if (by_row) {
    out <- unlist(lapply(.hap_blocks(x), function(l) {
      b <- x[l, , drop = FALSE]
      if (mean) rowMeans(b, na.rm = na.rm) else rowSums(b, na.rm = na.rm)
    }), use.names = FALSE)
    return(stats::setNames(as.numeric(out), x$dimnames[[1]]))
  }
  sums <- numeric(x$n_haps)
  n <- numeric(x$n_haps)
  for (l in .hap_blocks(x)) {
    b <- x[l, , drop = FALSE]
    sums <- sums + colSums(b, na.rm = na.rm)
    n <- n + colSums(!is.na(b))
  }
  if (mean) sums <- sums / (if (na.rm) n else x$n_loci)
  stats::setNames(sums, x$dimnames[[2]])
}

#' @rdname fmalloc_haplotypes
#' @export
setMethod("rowSums", "fmalloc_haplotypes", function(x, na.rm = FALSE, dims = 1L) {
  .hap_sums(x, na.rm, dims, by_row = TRUE, mean = FALSE)
})

#' @rdname fmalloc_haplotypes
#' @export
setMethod("rowMeans", "fmalloc_haplotypes", function(x, na.rm = FALSE, dims = 1L) {
  .hap_sums(x, na.rm, dims, by_row = TRUE, mean = TRUE)
})

#' @rdname fmalloc_haplotypes
#' @export
setMethod("colSums", "fmalloc_haplotypes", function(x, na.rm = FALSE, dims = 1L) {
  .hap_sums(x, na.rm, dims, by_row = FALSE, mean = FALSE)
})

#' @rdname fmalloc_haplotypes
#' @export
setMethod("colMeans", "fmalloc_haplotypes", function(x, na.rm = FALSE, dims = 1L) {
  .hap_sums(x, na.rm, dims, by_row = FALSE, mean = TRUE)
})

#' @rdname fmalloc_haplotypes
#' @param object an `fmalloc_haplotypes`.
#' @export
setMethod("summary", "fmalloc_haplotypes", function(object, ...) {
  freq <- rowMeans(object, na.rm = TRUE)
  n_missing <- if (is.null(object$missing)) 0 else sum(rowSums(object$missing))
  structure(list(dim = dim(object), n_missing = n_missing,
                 alt_freq = summary(freq[!is.na(freq)])),
            class = "summary_fmalloc_haplotypes")
})

#' @export
print.summary_fmalloc_haplotypes <- function(x, ...) {
  cat(sprintf("fmalloc haplotypes: %s loci x %s haplotypes, %s missing slots\nALT allele frequency over loci:\n",
              format(x$dim[1], big.mark = ","), format(x$dim[2], big.mark = ","),
              format(x$n_missing, big.mark = ",")))
  print(x$alt_freq)
  invisible(x)
}
