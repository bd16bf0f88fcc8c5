# Companion files given by name or found by prefix: an explicit `sample =`
# (which R would partially match to `samples =`), main files whose extension
# is upper case or not the format's, and bare prefixes. Fixtures are copied
# into tempdir under other names.

ceu <- function(...) fixture_path("genotypes", "ceu_exon", ...)
kg_text <- function(...) kg("text", ...)

# Copy each fixture file to dir under the name given, returning the copies.
copy_as <- function(dir, files) {
  to <- file.path(dir, names(files))
  expect_true(all(file.copy(files, to)))
  stats::setNames(to, names(files))
}

sample_ids <- function(path) {
  x <- utils::read.table(path, skip = 2, colClasses = "character")
  x$V2
}

as_m <- function(X) Rfmalloc::as.matrix(X)

test_that("sample = names the .sample of GEN, HAPS, HAPS/LEGEND and BGEN; samples = still selects", {
  rt <- new_runtime()
  d <- tempfile("rpgen_comp")
  dir.create(d)
  f <- copy_as(d, c(q.gen = ceu("ceu_exon_bi.gen"), o.sample = ceu("ceu_exon_bi.sample"),
                    q.haps = kg_text("1kg_bi_chr22.haps"), h.sample = kg_text("1kg_bi_chr22.sample"),
                    l.haps = kg_text("1kg_bi_chr22_hl.haps"), x.legend = kg_text("1kg_bi_chr22_hl.legend"),
                    l.sample = kg_text("1kg_bi_chr22_hl.sample"),
                    q.bgen = kg_text("1kg_bi_chr22.v11.bgen"), b.sample = kg_text("1kg_bi_chr22.v11.sample")))
  cases <- list(
    gen = list(main = f[["q.gen"]], sample = f[["o.sample"]], ref = ceu("ceu_exon_bi.gen")),
    haps = list(main = f[["q.haps"]], sample = f[["h.sample"]], ref = kg_text("1kg_bi_chr22.haps")),
    haps_legend = list(main = f[["l.haps"]], sample = f[["l.sample"]], legend = f[["x.legend"]],
                       chrom = "22", ref = kg_text("1kg_bi_chr22_hl.haps")),
    bgen = list(main = f[["q.bgen"]], sample = f[["b.sample"]], ref = kg_text("1kg_bi_chr22.v11.bgen")))
  for (nm in names(cases)) {
    k <- cases[[nm]]
    ref_args <- list(k$ref, runtime = rt)
    args <- list(k$main, runtime = rt, sample = k$sample)
    if (!is.null(k$legend)) {
      args$legend <- k$legend
      args$chrom <- ref_args$chrom <- k$chrom
    }
    want <- as_m(do.call(rpgen_read, ref_args))
    X <- do.call(rpgen_read, args)
    expect_identical(as_m(X), want, label = nm)
    expect_identical(rownames(as_m(X)), sample_ids(k$sample), label = nm)
    expect_equal(rpgen_info(k$main, sample = k$sample, legend = k$legend, chrom = k$chrom)$n_samples,
                 nrow(want), label = nm)
    # with samples = as well, each argument keeps its meaning
    Y <- do.call(rpgen_read, c(args, list(samples = c(3, 1, 3))))
    expect_identical(as_m(Y), want[c(3, 1, 3), ], label = nm)
    Y <- do.call(rpgen_read, c(args, list(samples = rownames(want)[2])))
    expect_identical(as_m(Y), want[2, , drop = FALSE], label = nm)
  }
  # written out, and through a wrapper that passes `...` on
  X <- rpgen_read(f[["q.gen"]], runtime = rt, sample = f[["o.sample"]])
  expect_identical(rownames(as_m(X)), sample_ids(f[["o.sample"]]))
  wrap <- function(...) rpgen_read(f[["q.gen"]], runtime = rt, ...)
  expect_identical(as_m(wrap(sample = f[["o.sample"]])), as_m(X))
  expect_identical(as_m(wrap(sample = f[["o.sample"]], samples = 2)), as_m(X)[2, , drop = FALSE])
  # `samples =` alone is a selection, as before; the .sample is then found by
  # prefix (there is none for q.gen)
  expect_error(rpgen_read(f[["q.gen"]], runtime = rt, samples = 1), "q\\.sample",
               class = "fm_error_eio")
})

test_that("upper-case, non-standard and bare names of the main file open that file", {
  rt <- new_runtime()
  d <- tempfile("rpgen_comp")
  dir.create(d)
  want_bed <- as_m(rpgen_read(ceu("ceu_exon_bi.bed"), runtime = rt))
  want_pgen <- as_m(rpgen_read(ceu("ceu_exon_bi.pgen"), runtime = rt))
  f <- copy_as(d, c(UP.BED = ceu("ceu_exon_bi.bed"), UP.BIM = ceu("ceu_exon_bi.bim"),
                    UP.FAM = ceu("ceu_exon_bi.fam"), UP.PGEN = ceu("ceu_exon_bi.pgen"),
                    UP.PVAR = ceu("ceu_exon_bi.pvar"), UP.PSAM = ceu("ceu_exon_bi.psam"),
                    g.bed.bak = ceu("ceu_exon_bi.bed"), g.bim = ceu("ceu_exon_bi.bim"),
                    g.fam = ceu("ceu_exon_bi.fam"), LO.BED = ceu("ceu_exon_bi.bed"),
                    LO.bim = ceu("ceu_exon_bi.bim"), LO.fam = ceu("ceu_exon_bi.fam"),
                    lo.bed = ceu("ceu_exon_bi.bed"), lo.bim = ceu("ceu_exon_bi.bim"),
                    lo.fam = ceu("ceu_exon_bi.fam"), Q.GEN = ceu("ceu_exon_bi.gen"),
                    Q.SAMPLE = ceu("ceu_exon_bi.sample")))
  # companions given, or found in the main file's case (UP.BIM), or in
  # lower case (LO.bim beside LO.BED)
  expect_identical(as_m(rpgen_read(f[["UP.BED"]], runtime = rt, bim = f[["UP.BIM"]], fam = f[["UP.FAM"]])),
                   want_bed)
  expect_identical(as_m(rpgen_read(f[["UP.BED"]], runtime = rt)), want_bed)
  expect_identical(as_m(rpgen_read(f[["LO.BED"]], runtime = rt)), want_bed)
  expect_identical(as_m(rpgen_read(f[["UP.PGEN"]], runtime = rt, pvar = f[["UP.PVAR"]],
                                   psam = f[["UP.PSAM"]])), want_pgen)
  expect_identical(as_m(rpgen_read(f[["UP.PGEN"]], runtime = rt)), want_pgen)
  expect_equal(rpgen_info(f[["UP.PGEN"]])$n_variants, ncol(want_pgen))
  expect_identical(as_m(rpgen_read(f[["Q.GEN"]], runtime = rt)), as_m(rpgen_read(ceu("ceu_exon_bi.gen"), runtime = rt)))
  # an extension that is not the format's: the file as named, companions given
  expect_identical(as_m(rpgen_read(f[["g.bed.bak"]], format = "bed", runtime = rt,
                                   bim = f[["g.bim"]], fam = f[["g.fam"]])), want_bed)
  expect_identical(as_m(rpgen_read(f[["g.bed.bak"]], runtime = rt, bim = f[["g.bim"]],
                                   fam = f[["g.fam"]])), want_bed) # told from the magic
  # a bare prefix still finds prefix.bed (lower case)
  expect_identical(as_m(rpgen_read(file.path(d, "lo"), runtime = rt)), want_bed)
  # a missing companion is named in the main file's case
  file.remove(f[["UP.FAM"]])
  expect_error(rpgen_read(f[["UP.BED"]], runtime = rt), "UP\\.FAM", class = "fm_error_eio")
})
