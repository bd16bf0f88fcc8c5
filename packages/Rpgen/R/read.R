# Opening a genotype file, and the two user-facing functions. Which format
# a file has and where its companion files are is the core's format table
# (core/include/fm/fm_fmt_registry.h), reached through rpg_plan().

.opt <- function(dots, name, default = NULL) if (!is.null(dots[[name]])) dots[[name]] else default

# Evaluate a reader call; an fm_error whose message names none of files (the
# destination's "variant 'rs1' is unphased ...", say) gets the main file's
# name in front. Raised again, same class, as from the caller.
.rpg_naming <- function(expr, files) {
  call <- sys.call(-1L)
  files <- basename(files[!is.na(files)])
  withCallingHandlers(expr, error = function(e) {
    if (!inherits(e, "fm_error")) return()
    if (!any(vapply(files, grepl, NA, x = conditionMessage(e), fixed = TRUE)))
      e$message <- paste0(files[1], ": ", conditionMessage(e))
    e$call <- call
    stop(e)
  })
}

# Open a core reader for path: rpg_plan()'s list (format, files, paths,
# sample_file), the reader's options, and the reader xp. general: the
# arguments of `...` every format takes in this call (besides each format's
# companions and reader options); any other is refused.
.rpg_open <- function(path, format, dots, general) {
  if (!is.character(path))
    fm_abort("earg", "path must be a single string (one file name), not ", typeof(path))
  if (length(path) != 1L)
    fm_abort("earg", "path must be a single string (one file name), got length ", length(path))
  if (is.na(path) || !nzchar(path))
    fm_abort("earg", "path must be one file name, not an empty or NA string")
  if (!is.null(format) && (!is.character(format) || length(format) != 1L))
    fm_abort("earg", "format must be NULL or a string")
  h <- .Call(C_rpg_plan, path.expand(path), format, dots, general)
  call <- sys.call(-1L)
  str1 <- function(name) {
    x <- dots[[name]]
    if (!is.null(x) && !(is.character(x) && length(x) == 1L && !is.na(x))) {
      fm_abort("earg", sprintf("%s must be one string (such as \"22\" or \"22:1-5000000\"), not %s", name,
                               if (is.character(x) && length(x) != 1L) sprintf("%d strings", length(x)) else deparse(x)[1]),
               call = call)
    }
    x
  }
  counted <- .opt(dots, "counted_alleles")
  h$options <- list(region = str1("region"), chrom = str1("chrom"),
                    counted_alleles = if (!is.null(counted)) as.character(counted),
                    dosage_format = as.integer(.opt(dots, "dosage_format", 0L)))
  h$xp <- .rpg_naming(.Call(C_rpg_open, h$format, h$files, h$options), c(h$paths, h$sample_file))
  notice <- .Call(C_rpg_notice, h$xp)
  if (!is.null(notice)) warning(warningCondition(notice, class = "rpgen_warning_region", call = call))
  h
}

.rpg_reopen <- function(h) .Call(C_rpg_open, h$format, h$files, h$options)

# The file set's samples in the metadata schema (?Rfmalloc::fmalloc_samples),
# one row per sample of the file: the reader's IDs as `iid`, with the other
# columns of the companion that lists the samples (.fam, .tfam, .psam, an
# Oxford .sample; read once by Rfmalloc::fmalloc_read_samples()). A BGEN
# without a sample block takes its IDs from its .sample. NULL when neither
# the file nor a companion names the samples: the default IDs
# "sample1".."sampleN" are then made only for the rows a read returns
# (.rpg_default_ids), since the reader checks a BGEN header's N at open only
# against the first block's size, which a compressed block bounds loosely
# (32768 x for zstd), and 2^31 - 1 IDs would take 16 GB before the block's
# decoding refuses N.
.rpg_sample_table <- function(h, n) {
  ids <- .Call(C_rpg_samples, h$xp)
  companion <- switch(h$format, bed = c("fam", "fam"), tped = c("tfam", "fam"),
                      dosage = c("fam", "fam"), pgen = c("psam", "psam"),
                      bgen = , gen = , haps = c("sample", "sample"))
  path <- if (!is.null(companion)) h$files[[companion[1]]]
  if (is.null(path) || is.na(path) || !file.exists(path)) {
    return(if (!is.null(ids)) data.frame(iid = ids, stringsAsFactors = FALSE))
  }
  tab <- Rfmalloc::fmalloc_read_samples(path, companion[2])
  if (nrow(tab) != n) {
    fm_abort("emismatch", "sample file '", path, "' lists ", nrow(tab), " samples but ",
             if (h$format == "bgen") paste0("the header of '", h$paths[1], "' says ", n, " (byte offset 12)")
             else paste0("'", h$paths[1], "' has ", n))
  }
  if (!is.null(ids)) tab$iid <- ids
  tab
}

.rpg_default_ids <- function(at) sprintf("sample%.0f", at)

# One pass over a second reader of the same file (the handle's own reader
# stays at the first record): the record count and, with want_ids, the ID of
# every record (after the split of multi-allelic sites), as the read reports
# them. Interruptible, with a cli spinner on long passes.
.rpg_scan <- function(h, want_ids, n_hint, label) {
  xp <- .rpg_reopen(h)
  on.exit(.Call(C_rpg_close, xp))
  pb <- cli::cli_progress_bar(sprintf("Scanning %s", label), total = NA, clear = TRUE)
  progress <- function(done, total) cli::cli_progress_update(id = pb, set = done)
  res <- .rpg_naming(.Call(C_rpg_scan, xp, want_ids, as.double(n_hint), progress), h$paths)
  cli::cli_progress_done(id = pb)
  res
}

# Positions of the requested IDs in ids: every position of each ID, in file
# order, requests in their order (so duplicated requests repeat). NA, "" and
# "." never name a record. ids NULL: the default IDs sample1..sample<n>,
# matched without making them.
.rpg_match_ids <- function(req, ids, what, file, n) {
  bad <- is.na(req) | req %in% c("", ".")
  if (any(bad))
    fm_abort("earg", what, " IDs must not be NA, empty or '.' (the missing-ID mark, ",
              "which names no record); select such ", what, " by index")
  if (is.null(ids)) {
    k <- rep(NA_real_, length(req))
    ok <- grepl("^sample[1-9][0-9]*$", req)
    k[ok] <- as.numeric(substring(req[ok], 7L))
    k[!is.na(k) & k > n] <- NA
    if (anyNA(k))
      fm_abort("earg", what, " ID '", req[is.na(k)][1], "' is not in '", file, "' (", n, " ", what,
                " there, named sample1 to sample", n, ")")
    return(k)
  }
  uq <- unique(req)
  k <- match(ids, uq)
  hit <- which(!is.na(k))
  found <- unique(k[hit])
  if (length(found) < length(uq)) {
    miss <- uq[setdiff(seq_along(uq), found)[1]]
    fm_abort("earg", what, " ID '", miss, "' is not in '", file, "' (",
              length(ids), " ", what, " there)")
  }
  at <- split(hit, factor(k[hit], levels = seq_along(uq)))
  as.double(unlist(at[match(req, uq)], use.names = FALSE))
}

.rpg_index <- function(idx, n, what, ids = NULL, file = NULL) {
  if (is.null(idx)) return(NULL)
  if (is.factor(idx)) idx <- as.character(idx)
  if (is.logical(idx)) {
    if (length(idx) != n || anyNA(idx))
      fm_abort("earg", what, " as a logical vector must have length ", n, " and no NA")
    return(as.double(which(idx)))
  }
  if (is.character(idx)) return(.rpg_match_ids(idx, ids, what, file, n))
  if (!is.numeric(idx) || anyNA(idx) || any(idx != floor(idx)) || any(idx < 1) || any(idx > n))
    fm_abort("earg", what, " must be whole numbers in 1..", n, " (1-based; duplicates allowed), ",
              "IDs or a logical vector")
  as.double(idx)
}

#' Describe a genotype file
#'
#' Opens a genotype file with the native reader of its format and reports
#' what is known before streaming.
#'
#' @param path the genotype file (`.bed`, `.pgen`, `.ped`, `.tped`,
#'   `.bgen`, `.vcf`, `.vcf.gz`, `.bcf`, `.gen`, `.haps`, `.geno`; the
#'   formats and their companion files are listed in the Details of
#'   [rpgen_read()]), or a PLINK prefix with a `.bed` or `.pgen` beside it.
#' @param format `NULL` (detect from the extension, then the first bytes) or
#'   one of `"bed"`, `"pgen"`, `"ped"`, `"tped"`, `"bgen"`, `"vcf"` (also BCF),
#'   `"gen"`, `"haps"`, `"eigenstrat"`, `"dosage"`.
#' @param ... companion files and reader options, as for [rpgen_read()];
#'   `count = TRUE` counts the records when the header does not tell
#'   (one pass over the file). An argument the format does not take (a
#'   misspelt companion such as `bimm =`, `region =` for a `.bed`) is an
#'   `fm_error_earg` naming it and listing those the format takes.
#' @return A list: `format` (the reader's name, e.g. `"bed"`, `"bcf"`,
#'   `"eigenstrat-packed"`), `n_samples`, `n_variants` (records after the
#'   split of multi-allelic sites; `NA` when unknown without a pass and
#'   `count` is not `TRUE`), `phased` (some record read so far carries phase;
#'   for VCF it is known only after reading), `has_dosage`.
#' @section Errors: `fm_error_eio` (file missing or unreadable),
#'   `fm_error_eformat` (wrong magic, malformed header; a file whose first
#'   bytes are another format's, such as a VCF named `.bed`, is named as
#'   that format before any companion is looked for), `fm_error_emismatch`
#'   (companion files disagree), each naming the file; `fm_error_earg` for
#'   an argument in `...` the format does not take, or one without a name.
#'   A `region` whose contig the file does not list warns
#'   (`rpgen_warning_region`, see [rpgen_read()]).
#' @section Source: the format specifications listed under Source in
#'   [rpgen_read()].
#' @examples
#' # a PLINK 1 fileset of 4 samples x 2 variants, written byte by byte
#' prefix <- file.path(tempdir(), "rpgen_example")
#' writeBin(as.raw(c(0x6c, 0x1b, 0x01, 0xe4, 0x1b)), paste0(prefix, ".bed"))
#' writeLines(sprintf("f%d s%d 0 0 %d -9", 1:4, 1:4, c(1, 2, 1, 2)), paste0(prefix, ".fam"))
#' writeLines(c("1 rs1 0 100 A G", "1 rs2 0 200 C T"), paste0(prefix, ".bim"))
#' rpgen_info(paste0(prefix, ".bed"))
#' @export
rpgen_info <- function(path, format = NULL, ...) {
  dots <- list(...)
  h <- .rpg_open(path, format, dots, c("sex", "count"))
  on.exit(.Call(C_rpg_close, h$xp))
  info <- .Call(C_rpg_info, h$xp)
  if (is.na(info$n_variants) && isTRUE(dots[["count"]])) {
    info$n_variants <- .rpg_scan(h, FALSE, NA, basename(path))$n
  }
  info
}

# Sex codes 0 (unknown), 1 (male), 2 (female) from the `sex` option: one
# value per sample of the file, numbers 1/2 or strings "1"/"M"/"male" and
# "2"/"F"/"female" (any case); anything else, NA included, is unknown.
.rpg_sex_codes <- function(sex, n) {
  if (is.factor(sex)) sex <- as.character(sex)
  if (!(is.numeric(sex) || is.character(sex) || is.logical(sex) && all(is.na(sex))))
    fm_abort("earg", "sex must be numbers (1 male, 2 female) or strings (\"M\", \"F\"), not ",
              typeof(sex))
  if (length(sex) != n)
    fm_abort("earg", "sex must give one value per sample of the file (", n, " samples), not ",
              length(sex))
  s <- toupper(trimws(as.character(sex)))
  out <- integer(n)
  out[!is.na(s) & s %in% c("1", "M", "MALE")] <- 1L
  out[!is.na(s) & s %in% c("2", "F", "FEMALE")] <- 2L
  out
}

# Sex for the male-X rule (docs/formats/conventions.md): the readers take it
# from their companions at open; a BGEN's comes from its .sample here; the
# `sex` option replaces both.
.rpg_apply_sex <- function(h, dots, n) {
  if (!is.na(h$sample_file) && file.exists(h$sample_file))
    .Call(C_rpg_sample_sex, h$xp, h$sample_file)
  if (!is.null(dots[["sex"]])) .Call(C_rpg_set_sex, h$xp, .rpg_sex_codes(dots[["sex"]], n))
  invisible(NULL)
}

#' Read a genotype file into an Rfmalloc destination
#'
#' Reads a genotype file once, with the native reader of its format, and
#' streams bounded blocks of records into storage allocated in an Rfmalloc
#' runtime (through Rfmalloc's C API: one runtime, one owner). Nothing is
#' converted through a temporary file.
#'
#' **Formats and companions** (found by prefix, or given in `...`):
#' `.bed` (or a prefix) with `bim`, `fam` (a `.fam` with a line too many,
#' which the `.bed`'s size cannot reveal, is read as plink2 reads it, with
#' the warning of `Rfmalloc::fmalloc_bed_open()`); `.pgen` (or a prefix) with `pvar`,
#' `psam` (PLINK 2: hardcalls, phase, dosages, multi-allelic records split);
#' `.ped` with `map`; `.tped` with
#' `tfam`; `.bgen` (embedded samples, else `sample`, else `sample1...`);
#' `.vcf`, `.vcf.gz`, `.bcf` (`region = "22"` or `"22:1-5000000"` reads one
#' region through the index beside the file; a region of a contig that the
#' index of a `.vcf.gz` or the header of a `.bcf` does not list reads no
#' records, with a warning of class `rpgen_warning_region` naming the
#' contigs it does list, e.g. `"22"` where `"chr22"` was asked for);
#' `.gen` with `sample`; `.haps` with `sample`, or
#' with `legend` (IMPUTE2 haps/legend, `chrom` names the chromosome);
#' `.geno` (EIGENSTRAT text or packed) with `snp`, `ind`; `format = "dosage"`
#' (PLINK 1 legacy dosage) with optional `fam`, `map`, `dosage_format`.
#' For `.ped`/`.tped`, `counted_alleles` (one per variant, e.g. the ALT
#' column of a `.bim`) selects the counted allele; without it the minor
#' allele is counted (plink 1.9's rule).
#' The main file is opened as named (`UP.BED`; `g.bed.bak` with
#' `format = "bed"`); a companion not given is looked for under the main
#' file's name with the format's extension replaced, in that extension's case
#' first (`UP.BIM` beside `UP.BED`), then in lower case. An argument named
#' exactly `sample` is the `.sample` companion (`sample = "o.sample"`);
#' `samples` selects samples.
#'
#' **Males on chromosome X.** On records of X outside the pseudo-autosomal
#' regions (chromosome `X`, `chrX` or `23`; `XY`, `25`, `PAR1`, `PAR2` stay
#' diploid) a sample known to be male is haploid: his heterozygous call is
#' missing (hardcall, dosage and both haplotype slots), in every format.
#' Sex comes from the companion: `.fam`/`.tfam`/`.ped` column 5, the `.psam`
#' `SEX` column, the `.sample` column named `sex` (type `D`; also for a
#' `.bgen` with a `.sample` beside it), the `.ind` column 2 (`M`/`F`/`U`).
#' `sex` (one value per sample of the file, in file order: `1` or `"M"`
#' male, `2` or `"F"` female, anything else or `NA` unknown) replaces it;
#' VCF/BCF store no sex, so there it is the only source besides the
#' haploid calls the VCF reader sees (a sample with a haploid call, such as
#' `1`, on a contig is haploid on that contig from then on).
#'
#' **Conventions** (identical in every reader):
#' values count the ALT allele (A1 of a `.bed`); haploid calls are coded 0/2;
#' heterozygous haploid calls and half-calls are missing hardcalls;
#' a VCF/BCF record's DS, where the sample has one, is its dosage as stored,
#' also for half-calls and missing GT (GT gives hardcalls and haplotypes);
#' multi-allelic sites are split into one biallelic record per ALT;
#' probabilities give dosage `P(het) + 2 P(hom ALT)` as stored; every format
#' that stores dosages or probabilities (BGEN, GEN, legacy dosage, VCF DS
#' without GT) calls hardcalls by plink2's rule: the nearest integer of the
#' dosage when it lies within 0.1 of it (in plink2's units of 1/16384), else
#' missing, as `plink2 --make-bed` calls them.
#'
#' @inheritParams rpgen_info
#' @param destination `"hardcall"` (2-bit PLINK codes, an
#'   `fmalloc_codec_matrix` with codec `"bed2"`), `"dosage"` (1 byte per
#'   value, codec `"dos8"`; the record's dosage when the format stores one,
#'   else its hardcall), `"haplotype"` (1 bit per haplotype, phased records
#'   only) or `"dense"` (a mapped double matrix; dosage when present, else
#'   hardcall).
#' @param runtime an Rfmalloc runtime ([Rfmalloc::open_fmalloc()]) that owns
#'   the result's storage; the session's default runtime
#'   ([Rfmalloc::fmalloc_default_runtime()], a scratch file in [tempdir()])
#'   when not given.
#' @param samples `NULL` (all, in file order), or 1-based indices, sample
#'   IDs (the IIDs the result's row names show, in every format) or a
#'   logical vector; in any order, duplicates give duplicated rows. IDs
#'   follow the rules of `variants`.
#' @param variants `NULL` (all records), or 1-based record indices (after
#'   the split of multi-allelic sites), variant IDs, or a logical vector; in
#'   any order, duplicates give duplicated columns. IDs are those the
#'   result's column names show: the companion's ID column (`.bim`, `.pvar`,
#'   `.map`, `.snp`, `.legend`) or the record's own (VCF/BCF, where `.` is
#'   replaced by `CHROM:POS:REF:ALT`; BGEN rsid; GEN/HAPS column 2). An ID
#'   held by several records selects **all of them, in file order** (the
#'   records split from one multi-allelic site share its ID, so
#'   `variants = "rs1"` returns one column per ALT allele); an ID that no
#'   record holds is an `fm_error_earg` naming it and the file; `NA`, `""`
#'   and `"."` (no ID) are refused: select such records by index. Selecting
#'   by ID costs one extra pass over the file to learn the IDs (it replaces
#'   the counting pass of formats whose header does not give the count).
#' @param block_records records per block between interrupt polls and
#'   progress updates (default 1024).
#' @param ... companion files and reader options (see Details), by name;
#'   `sex` for every format. An argument the format does not take (a
#'   misspelt companion such as `bimm =`, `region =` for a `.bed`) is an
#'   `fm_error_earg` naming it and listing those the format takes.
#' @return For `"hardcall"` and `"dosage"`, an `fmalloc_codec_matrix`,
#'   samples x variants, with dimnames (sample IDs, variant IDs), variant
#'   metadata (`Rfmalloc::fmalloc_variants()`: data frame `chr`, `pos`, `id`,
#'   `ref`, `alt`; `ref`/`alt` are the uncounted/counted alleles; then `cm`,
#'   centimorgans, where the file set stores them: `.bim`, `.pvar` with a
#'   `CM` column, `.map`, `.tped`) and sample metadata
#'   (`Rfmalloc::fmalloc_samples()`: `iid`, then the columns of the
#'   companion that lists the samples, read by
#'   `Rfmalloc::fmalloc_read_samples()` with the names and codes
#'   `Rfmalloc::fmalloc_bed_open()` gives: from a `.fam` or `.tfam` `fid`,
#'   `father`, `mother`, `sex` (0/1/2), `phenotype`; from a `.psam` its
#'   columns, e.g. `fid`, `sex`, `Population`; from a `.sample` (BGEN, GEN,
#'   HAPS) `fid`, `missing`, `sex` and the others; VCF/BCF, `.ped` and
#'   EIGENSTRAT give `iid` only). Both follow `samples` and `variants`: one
#'   row per row and per column of the result. `sex` there is the file's,
#'   also when the `sex` argument replaces it for the male-X rule. Missing
#'   calls read as `NA`.
#'   For `"dense"`, a mapped double matrix (samples x variants; `NA`
#'   missing) with attributes `variants` and `samples`.
#'   For `"haplotype"`, an object of class
#'   `c("rpgen_haplotypes", "fmalloc_haplotypes")`: loci x haplotypes
#'   (sample `i` has haplotypes `2i - 1` and `2i`, in stored slot order),
#'   `h[i, ]` and `as.matrix(h)` give alleles 0/1, `NA` where the slot is
#'   missing; `h$missing` is a second
#'   `fmalloc_haplotypes` of the same shape whose bit is 1 where the slot is
#'   missing (its allele bit is then 0); `h$variants`, `h$samples`. The
#'   verbs of `Rfmalloc::fmalloc_haplotypes()` apply (`rowSums()` counts
#'   ALT alleles per locus, `summary()`); `h %*% y` needs
#'   `as.matrix(h) %*% y`, or a read with `destination = "hardcall"`.
#' @section Source: the format specifications the readers implement:
#'   * PLINK 2 `.pgen`: plink-ng's `pgen_spec`
#'     (<https://github.com/chrchang/plink-ng/tree/master/pgen_spec>);
#'     `.pvar`, `.psam`: <https://www.cog-genomics.org/plink/2.0/formats>.
#'   * PLINK 1 `.bed`/`.bim`/`.fam`, `.ped`/`.map`, `.tped`/`.tfam`:
#'     <https://www.cog-genomics.org/plink/1.9/formats>.
#'   * BGEN v1.1, v1.2 and v1.3:
#'     <https://www.well.ox.ac.uk/~gav/bgen_format/spec/v1.1.html>,
#'     <https://www.well.ox.ac.uk/~gav/bgen_format/spec/v1.2.html>,
#'     <https://www.well.ox.ac.uk/~gav/bgen_format/spec/latest.html>.
#'   * VCF v4.x and BCF2: <https://samtools.github.io/hts-specs/>
#'     (`VCFv4.3.pdf`), parsed by htslib (<https://www.htslib.org/>).
#'   * Oxford GEN, HAPS, LEGEND and SAMPLE:
#'     <https://www.cog-genomics.org/plink/2.0/formats#gen>, `#haps`,
#'     `#legend`, `#sample`, and QCTOOL's
#'     <https://www.well.ox.ac.uk/~gav/qctool_v2/documentation/sample_file_formats.html>.
#'   * EIGENSTRAT and packed ancestrymap `.geno`, `.snp`, `.ind`: EIGENSOFT's
#'     `convertf` documentation
#'     (<https://github.com/DReichLab/EIG/blob/master/CONVERTF/README>).
#'   * PLINK 1 legacy dosage (`format=1`, `2`, `3`):
#'     <https://www.cog-genomics.org/plink/1.9/assoc#dosage>.
#'
#'   How every reader maps these onto one set of rules is stated under
#'   Conventions above (in full, with each format's notes, in
#'   `docs/formats/` in the source repository).
#' @section Errors: conditions of class `fm_error_<status>` (see
#'   [rpgen_errors]) naming the file and the record, line or byte offset:
#'   `fm_error_eio`, `fm_error_eformat`, `fm_error_emismatch` (also an
#'   unphased record in a haplotype destination), `fm_error_earg` (bad
#'   arguments), `fm_error_enospc` (the runtime is full). A warning of
#'   class `rpgen_warning_region` when `region` names a contig the file
#'   does not list (the result then has no variants).
#' @section Memory and time: one pass over the file (two when the record
#'   count is not in the header, or `variants` are IDs: a first pass counts
#'   the records, or collects their IDs, to size the destination); memory is
#'   bounded by the reader's buffers plus the mapped destination.
#' @section Progress and interrupts: a cli progress bar (shown after
#'   `getOption("cli.progress_show_after")` seconds) is updated once per
#'   block of `block_records` records, and the reader polls for a user
#'   interrupt once per block. The progress bar's R code runs with the
#'   caller's condition handlers. An interrupt, or an error or restart
#'   raised from a handler during the read, stops the reader at the end of
#'   the current block; the reader is then closed and the partly written
#'   destination becomes garbage (its runtime space is freed by the next
#'   garbage collection), and the condition reaches the caller as from any R
#'   code: an interrupt is R's `interrupt` condition.
#' @examples
#' prefix <- file.path(tempdir(), "rpgen_example")
#' writeBin(as.raw(c(0x6c, 0x1b, 0x01, 0xe4, 0x1b)), paste0(prefix, ".bed"))
#' writeLines(sprintf("f%d s%d 0 0 %d -9", 1:4, 1:4, c(1, 2, 1, 2)), paste0(prefix, ".fam"))
#' writeLines(c("1 rs1 0 100 A G", "1 rs2 0 200 C T"), paste0(prefix, ".bim"))
#' X <- rpgen_read(paste0(prefix, ".bed"))        # hardcalls, in the session's runtime
#' X[, ]
#' Rfmalloc::fmalloc_variants(X)                   # chr, pos, id, ref, alt (counted)
#' Rfmalloc::fmalloc_allele_freq(X)
#' D <- rpgen_read(paste0(prefix, ".bed"), destination = "dense", variants = "rs2")
#' D
#' @export
rpgen_read <- function(path, format = NULL, destination = c("hardcall", "dosage", "haplotype", "dense"),
                       runtime = Rfmalloc::fmalloc_default_runtime(), samples = NULL, variants = NULL,
                       block_records = NULL, ...) {
  destination <- fm_arg_choice(destination, c("hardcall", "dosage", "haplotype", "dense"))
  fm_check_runtime(runtime)
  if (is.null(block_records)) block_records <- 1024
  if (!is.numeric(block_records) || length(block_records) != 1L || is.na(block_records) || block_records < 1)
    fm_abort("earg", "block_records must be a number >= 1")
  dots <- list(...)
  # `sample` (the .sample companion) partially matches the formal `samples`:
  # an argument named exactly `sample` is the companion (R puts it in `...`
  # itself when `samples` is named too).
  given <- names(match.call(function(...) NULL, sys.call(), envir = parent.frame()))
  if ("sample" %in% given && !"samples" %in% given) {
    dots$sample <- samples
    samples <- NULL
  }
  h <- .rpg_open(path, format, dots, "sex")
  on.exit(.Call(C_rpg_close, h$xp))
  info <- .Call(C_rpg_info, h$xp)
  n_s <- info$n_samples
  n_in <- info$n_variants
  var_ids <- NULL
  if (is.na(n_in) || is.character(variants) || is.factor(variants)) {
    sc <- .rpg_scan(h, is.character(variants) || is.factor(variants), n_in, basename(path))
    if (!is.na(n_in) && sc$n != n_in)
      fm_abort("emismatch", "'", path, "' has ", sc$n, " records but its reader announced ", n_in)
    n_in <- sc$n
    var_ids <- sc$ids
  }
  samples_all <- .rpg_sample_table(h, n_s)
  if (h$format == "bed" && !is.na(h$files["fam"])) { # a .fam with an extra line reads padding bits
    Rfmalloc::fm_check_fam_padding(h$paths[1], n_s, h$files[["fam"]], call = sys.call())
  }
  ids <- samples_all$iid
  .rpg_apply_sex(h, dots, n_s)
  si <- .rpg_index(samples, n_s, "samples", ids, h$paths[1])
  vi <- .rpg_index(variants, n_in, "variants", var_ids, h$paths[1])
  n_out_s <- if (is.null(si)) n_s else length(si)
  n_out_v <- if (is.null(vi)) n_in else length(vi)
  dest <- .Call(C_rpg_dest, destination, n_out_s, n_out_v) # kind, dtype, codec, bytes, row_bytes
  storage <- if (destination == "dense") {
    Rfmalloc::create_fmalloc_matrix("double", n_out_s, n_out_v, runtime)
  } else {
    .Call(C_rpg_alloc, runtime, dest$dtype, max(1, dest$bytes))
  }
  # auto_terminate = FALSE: the bar lives until cli_progress_done(), so an
  # update at current == total does not end it and make the next update an
  # error; a total of 0 (an empty read) would make cli divide by zero. Errors
  # of this function reach the caller (see "Progress and interrupts").
  pb <- cli::cli_progress_bar(sprintf("Reading %s", basename(path)), total = max(1, n_in),
                              clear = TRUE, auto_terminate = FALSE)
  progress <- function(done, total) {
    cli::cli_progress_update(id = pb, set = done, total = max(1, total))
  }
  # metadata vectors reach only the last selected record (n_in is a header's word)
  meta <- .rpg_naming(.Call(C_rpg_stream, h$xp, dest$kind, storage, n_out_s, n_out_v,
                            if (is.null(si)) NULL else si - 1, if (is.null(vi)) NULL else vi - 1,
                            if (is.null(vi)) n_in else max(0, vi), as.double(block_records), progress),
                      c(h$paths, h$sample_file))
  cli::cli_progress_done(id = pb)
  rows <- if (is.null(vi)) seq_len(n_in) else vi
  vars <- as.data.frame(lapply(meta, `[`, rows), stringsAsFactors = FALSE) # chr pos id ref alt [cm]
  smp <- if (is.null(samples_all)) {
    data.frame(iid = .rpg_default_ids(if (is.null(si)) seq_len(n_s) else si), stringsAsFactors = FALSE)
  } else if (is.null(si)) {
    samples_all
  } else {
    samples_all[si, , drop = FALSE]
  }
  rownames(smp) <- NULL
  s_ids <- smp$iid
  src <- normalizePath(path, mustWork = FALSE)
  switch(destination,
    hardcall = , dosage = Rfmalloc::fmalloc_codec_matrix(
      storage, dest$codec, n_out_s, n_out_v,
      dimnames = list(s_ids, vars$id), variants = vars, samples = smp),
    dense = {
      dimnames(storage) <- list(s_ids, vars$id)
      attr(storage, "variants") <- vars
      attr(storage, "samples") <- smp
      storage
    },
    haplotype = {
      n_haps <- 2 * n_out_s
      row_bytes <- dest$row_bytes
      plane <- row_bytes * n_out_v
      miss <- Rfmalloc::create_fmalloc_vector("raw", max(1, plane), runtime)
      .Call(C_rpg_copy_plane, miss, storage, plane, plane)
      hn <- paste0(rep(s_ids, each = 2), c("_1", "_2"))
      dn <- list(vars$id, hn)
      m <- structure(list(storage = miss, n_loci = n_out_v, n_haps = n_haps, row_bytes = row_bytes,
                          dimnames = dn), class = "fmalloc_haplotypes")
      structure(list(storage = storage, n_loci = n_out_v, n_haps = n_haps, row_bytes = row_bytes,
                     dimnames = dn, missing = m, variants = vars, samples = smp, source = src),
                class = c("rpgen_haplotypes", "fmalloc_haplotypes"))
    }
  )
}
