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
  # the mapped .bed gives the same metadata as the reader (cm included)
  B <- Rfmalloc::fmalloc_bed_open(file.path(dir, "ceu_exon_bi"))
  expect_identical(Rfmalloc::fmalloc_variants(B), Rfmalloc::fmalloc_variants(
    rpgen_read(file.path(dir, "ceu_exon_bi.bed"), runtime = rt)))
  expect_identical(Rfmalloc::fmalloc_allele_freq(B), freq[["ceu_exon_bi.bed"]])
})

# Sample metadata (issue: rpgen_read kept only iid, fmalloc_bed_open the whole
# .fam) and cm: every reader gives the columns its file set has, under the
# names and codes of fmalloc_bed_open(), in the rows and columns a selection
# keeps.

# A sample file read as plain text, its header line (if any) naming columns.
read_text_table <- function(path, header_prefix = NULL, skip = 0) {
  lines <- readLines(path)
  if (!is.null(header_prefix)) lines <- lines[!startsWith(lines, "##")]
  lines <- lines[nzchar(trimws(lines))]
  f <- strsplit(trimws(lines), "[ \t]+")
  m <- do.call(rbind, f[(skip + 1):length(f)])
  if (!is.null(header_prefix)) colnames(m) <- sub("^#", "", f[[1]]) else if (skip) colnames(m) <- f[[1]]
  m
}

# A fixture file set's prefix (the fixture must exist, or the test skips).
fx_prefix <- function(f) sub("\\.[^.]+$", "", f)

sex_code <- function(s) ifelse(s %in% c("1", "M", "m"), 1L, ifelse(s %in% c("2", "F", "f"), 2L, 0L))

test_that("PLINK 1: samples and cm equal fmalloc_bed_open's and the .fam/.bim text, under selections", {
  rt <- new_runtime()
  for (p in fx_prefix(c(kg("1kg_bi.bed"), fixture_path("genotypes", "ceu_exon", "ceu_exon_bi.bed")))) {
    X <- rpgen_read(paste0(p, ".bed"), runtime = rt)
    B <- Rfmalloc::fmalloc_bed_open(p)
    expect_identical(Rfmalloc::fmalloc_samples(X), Rfmalloc::fmalloc_samples(B))
    expect_identical(Rfmalloc::fmalloc_variants(X), Rfmalloc::fmalloc_variants(B))
    fam <- read_text_table(paste0(p, ".fam"))
    s <- Rfmalloc::fmalloc_samples(X)
    expect_named(s, c("iid", "fid", "father", "mother", "sex", "phenotype"))
    expect_identical(as.matrix(s[c("fid", "iid", "father", "mother", "phenotype")]),
                     `colnames<-`(fam[, c(1, 2, 3, 4, 6)], c("fid", "iid", "father", "mother", "phenotype")))
    expect_identical(s$sex, sex_code(fam[, 5]))
    bim <- read_text_table(paste0(p, ".bim"))
    expect_identical(Rfmalloc::fmalloc_variants(X)$cm, as.numeric(bim[, 3]))
    # selections keep the metadata's rows aligned: duplicates, any order, by ID
    si <- c(nrow(fam), 2, 2, 1)
    vi <- c(5, 1, 3, 3)
    Y <- rpgen_read(paste0(p, ".bed"), runtime = rt, samples = fam[si, 2], variants = vi)
    want <- Rfmalloc::fmalloc_samples(B)[si, ]
    rownames(want) <- NULL
    expect_identical(Rfmalloc::fmalloc_samples(Y), want)
    expect_identical(rownames(Y), fam[si, 2])
    wv <- Rfmalloc::fmalloc_variants(B)[vi, ]
    rownames(wv) <- NULL
    expect_identical(Rfmalloc::fmalloc_variants(Y), wv)
    # the dense destination carries the same metadata
    D <- rpgen_read(paste0(p, ".bed"), runtime = rt, destination = "dense", samples = si, variants = vi)
    expect_identical(attr(D, "samples"), want)
    expect_identical(attr(D, "variants"), wv)
  }
})

test_that("PLINK 2: the .psam's columns, SEX coded, in file order after iid; cm only with a CM column", {
  rt <- new_runtime()
  for (p in fx_prefix(c(kg("1kg_bi.pgen"), kg("1kg.pgen"),
                        fixture_path("genotypes", "ceu_exon", "ceu_exon_bi.pgen")))) {
    psam <- read_text_table(paste0(p, ".psam"), header_prefix = "#", skip = 1)
    X <- rpgen_read(paste0(p, ".pgen"), runtime = rt, variants = 1:20)
    s <- Rfmalloc::fmalloc_samples(X)
    cols <- colnames(psam)
    named <- vapply(cols, function(k) switch(k, FID = "fid", IID = "iid", SEX = "sex", k), "")
    expect_identical(names(s), c("iid", setdiff(unname(named), "iid")), label = p)
    expect_identical(s$iid, psam[, "IID"])
    expect_identical(s$sex, sex_code(psam[, "SEX"]))
    for (k in setdiff(cols, c("IID", "SEX"))) expect_identical(s[[named[[k]]]], psam[, k], label = k)
    expect_false("cm" %in% names(Rfmalloc::fmalloc_variants(X))) # no CM column in these .pvar
  }
  # the same samples as the .bed of the same calls: the columns both files have agree
  X <- rpgen_read(kg("1kg_bi.pgen"), runtime = rt, samples = c(7, 3), variants = 1)
  B <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  common <- intersect(names(Rfmalloc::fmalloc_samples(X)), names(Rfmalloc::fmalloc_samples(B)))
  expect_identical(common, c("iid", "fid", "sex"))
  want <- Rfmalloc::fmalloc_samples(B)[c(7, 3), common]
  rownames(want) <- NULL
  expect_identical(Rfmalloc::fmalloc_samples(X)[common], want)
  expect_identical(Rfmalloc::fmalloc_samples(X)$Population, c("GBR", "GBR"))

  # a .pvar with a CM column (and a .psam with PAT/MAT), generated from the fixture
  d <- withr::local_tempdir()
  file.copy(kg("1kg_bi.pgen"), file.path(d, "g.pgen"))
  pvar <- readLines(kg("1kg_bi.pvar"))
  hdr <- which(startsWith(pvar, "#CHROM"))
  body <- pvar[-seq_len(hdr)]
  cm <- round(seq_along(body) / 100, 2)
  writeLines(c(paste0(pvar[hdr], "\tCM"), paste0(body, "\t", cm)), file.path(d, "g.pvar"))
  psam <- read_text_table(kg("1kg_bi.psam"), header_prefix = "#", skip = 1)
  writeLines(c("#IID\tPAT\tMAT\tSEX\tPHENO1",
               paste(psam[, "IID"], "0", "0", c("M", "F", "NA")[seq_len(nrow(psam)) %% 3 + 1],
                     seq_len(nrow(psam)), sep = "\t")), file.path(d, "g.psam"))
  Y <- rpgen_read(file.path(d, "g.pgen"), runtime = rt, variants = c(4, 2))
  expect_identical(Rfmalloc::fmalloc_variants(Y)$cm, cm[c(4, 2)])
  s <- Rfmalloc::fmalloc_samples(Y)
  expect_named(s, c("iid", "father", "mother", "sex", "PHENO1"))
  expect_identical(s$sex, c(1L, 2L, 0L)[seq_len(nrow(psam)) %% 3 + 1]) # M, F, NA
  expect_identical(s$PHENO1, as.character(seq_len(nrow(psam))))
})

test_that("BGEN and VCF: the .sample's columns; a VCF has iid only", {
  rt <- new_runtime()
  for (f in c(kg("1kg_bi.16bit.bgen"), kg("1kg_bi.8bit.bgen"),
              fixture_path("genotypes", "ceu_exon", "ceu_exon_bi.16bit.bgen"))) {
    smp <- read_text_table(sub("bgen$", "sample", f), skip = 2)
    types <- read_text_table(sub("bgen$", "sample", f))[2, ]
    X <- rpgen_read(f, runtime = rt, samples = c(3, 1), variants = 1:2)
    s <- Rfmalloc::fmalloc_samples(X)
    expect_identical(names(s), c("iid", "fid", colnames(smp)[-(1:2)]), label = f)
    expect_identical(s$iid, smp[c(3, 1), "ID_2"])
    expect_identical(s$fid, smp[c(3, 1), "ID_1"])
    expect_identical(s$missing, as.numeric(smp[c(3, 1), "missing"]))
    expect_identical(s$sex, sex_code(smp[c(3, 1), "sex"]))
    if ("Population" %in% colnames(smp)) expect_identical(s$Population, smp[c(3, 1), "Population"])
    expect_false("cm" %in% names(Rfmalloc::fmalloc_variants(X)))
  }
  # the .bed and the .bgen of the same samples agree where their columns do
  G <- rpgen_read(kg("1kg_bi.8bit.bgen"), runtime = rt, variants = 1)
  B <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  expect_identical(Rfmalloc::fmalloc_samples(G)[c("iid", "fid", "sex")],
                   Rfmalloc::fmalloc_samples(B)[c("iid", "fid", "sex")])
  V <- rpgen_read(kg("1kg.vcf.gz"), runtime = rt, variants = 1:2)
  expect_named(Rfmalloc::fmalloc_samples(V), "iid")
  expect_named(Rfmalloc::fmalloc_variants(V), schema)
})
