# One variant-metadata schema for the stack (?Rfmalloc::fmalloc_variants):
# every reader gives chr, pos, id, ref, alt (alt = the counted allele), and
# fmalloc_allele_freq() reads them (issue 14, defect 1: it looked for a1/a2).
schema <- c("chr", "pos", "id", "ref", "alt")
types <- c(chr = "character", pos = "numeric", id = "character", ref = "character", alt = "character")

test_that("every format's hardcall matrix carries the schema and feeds fmalloc_allele_freq", {
  rt <- new_runtime()
  dir <- gt_fixture("ceu_exon")
  files <- c("ceu_exon_bi.bed", "ceu_exon_bi.pgen", "ceu_exon_bi.16bit.bgen", "ceu_exon_bi.8bit.bgen")
  skip_if_not(all(file.exists(file.path(dir, files))), "ceu_exon fixture absent")
  freq <- list()
  for (f in files) {
    X <- rpgen_read(file.path(dir, f), runtime = rt)
    v <- Rfmalloc::fmalloc_variants(X)
    expect_identical(names(v)[1:5], schema, label = f)
    for (col in schema) expect_true(is(v[[col]], types[[col]]), label = paste(f, col))
    expect_identical(names(Rfmalloc::fmalloc_samples(X))[1], "iid", label = f)
    af <- Rfmalloc::fmalloc_allele_freq(X)
    expect_identical(names(af)[1:5], schema, label = f)
    expect_identical(af$alt, v$alt, label = f)
    g <- X[, , drop = FALSE]
    expect_equal(af$alt_freq, unname(colMeans(g, na.rm = TRUE) / 2), tolerance = 1e-12, label = f)
    freq[[f]] <- af
  }
  # the same calls in every format: the same counts and alleles
  for (f in files[-1]) {
    expect_identical(freq[[f]][c("id", "ref", "alt", "n_hom_ref", "n_het", "n_hom_alt")],
                     freq[[1]][c("id", "ref", "alt", "n_hom_ref", "n_het", "n_hom_alt")], label = f)
  }
  # a VCF's multiallelic-free subset: ALT is the counted allele there too
  V <- rpgen_read(file.path(dir, "ceu_exon.vcf.gz"), runtime = rt)
  av <- Rfmalloc::fmalloc_allele_freq(V)
  expect_identical(names(av)[1:5], schema)
  # the mapped .bed gives the same schema columns as the reader
  B <- Rfmalloc::fmalloc_bed_open(file.path(dir, "ceu_exon_bi"))
  expect_identical(Rfmalloc::fmalloc_variants(B)[schema], Rfmalloc::fmalloc_variants(
    rpgen_read(file.path(dir, "ceu_exon_bi.bed"), runtime = rt)))
  expect_identical(Rfmalloc::fmalloc_allele_freq(B), freq[["ceu_exon_bi.bed"]])
})
