# 1kg_phase1_chr22_dosage (5 samples x 10,376 variants, real non-integer DS):
# each format that stores the dosage reads, in the dense and the dosage
# destinations, to the VCF's DS values within that format's quantization.
#
# Oracle: DS parsed from the VCF text here in R; the .traw (plink2 --export
# Av of the PGEN) holds exactly these values (asserted below).
#
# Tolerances, |read - DS| (d = DS as written, 1 to 4 characters):
#   VCF.gz, BCF           DS stored as float32 by htslib: 2^-24 (d < 2)
#   legacy dosage         the DS text copied as written: 1e-12 (double parse)
#   PGEN                  dosage in 1/16384 units, rounded: 1/32768
#   plink2 DS VCF         written by plink2 from the PGEN: 1/32768 + 2^-24
#   GEN                   printed by plink2 from the PGEN: 1/32768 + 1e-6
#   BGEN b bits           written by plink2 from the PGEN; each stored
#                         probability within 1/(2^b - 1) and their sum kept, so
#                         P(het) + 2 P(hom) within 2/(2^b - 1):
#                         1/32768 + 2/255 (8-bit), 1/32768 + 2/65535 (16-bit)
# The dense destination holds doubles: the format's tolerance alone. The
# dosage destination stores round(127 d') / 127 of the format's value d',
# so its bound is the format's tolerance + 1/254.

dsx <- function(...) gt_fixture("1kg_phase1_chr22_dosage", ...)

ds_oracle_cache <- new.env()
ds_oracle <- function() {
  if (is.null(ds_oracle_cache$d)) {
    con <- gzfile(dsx("1kg_p1_chr22.vcf.gz"), "r")  # gzfile reads every BGZF member (gzcon stops after the first)
    l <- readLines(con)
    close(con)
    samples <- strsplit(l[startsWith(l, "#CHROM")], "\t", fixed = TRUE)[[1]][-(1:9)]
    l <- l[!startsWith(l, "#")]
    f <- matrix(unlist(strsplit(l, "\t", fixed = TRUE)), ncol = length(l))
    stopifnot(all(f[9, ] == "GT:DS:GL"))
    cell <- t(f[-(1:9), , drop = FALSE])
    ds <- as.numeric(sub("^[^:]*:([^:]*):.*$", "\\1", cell))
    dim(ds) <- dim(cell)
    gt <- sub(":.*$", "", cell)
    hc <- suppressWarnings(as.integer(substr(gt, 1, 1)) + as.integer(substr(gt, 3, 3)))
    dim(hc) <- dim(cell)
    dimnames(ds) <- dimnames(hc) <- list(NULL, samples)
    ds_oracle_cache$d <- t(ds)    # samples x variants
    ds_oracle_cache$gt <- t(hc)
    ds_oracle_cache$pos <- as.numeric(f[2, ])
  }
  ds_oracle_cache
}

ds_formats <- function() {
  q16 <- 1 / 32768
  list(
    list(file = "1kg_p1_chr22.vcf.gz", tol = 2^-24 + 1e-12),
    list(file = "1kg_p1_chr22.bcf", tol = 2^-24 + 1e-12),
    list(file = "1kg_p1_chr22.dosage", tol = 1e-12,
         args = list(format = "dosage", fam = dsx("1kg_p1_chr22.fam"),
                     map = dsx("1kg_p1_chr22.dosage.map"), dosage_format = 1)),
    list(file = "1kg_p1_chr22.pgen", tol = q16),
    list(file = "1kg_p1_chr22.plink2_DS.vcf.gz", tol = q16 + 2^-24),
    list(file = "1kg_p1_chr22.gen", tol = q16 + 1e-6),
    list(file = "1kg_p1_chr22.8bit.bgen", tol = q16 + 2 / 255),
    list(file = "1kg_p1_chr22.16bit.bgen", tol = q16 + 2 / 65535),
    list(file = "1kg_p1_chr22.16bit.zstd.bgen", tol = q16 + 2 / 65535)
  )
}

read_ds <- function(spec, rt, destination) {
  do.call(rpgen_read, c(list(dsx(spec$file), runtime = rt, destination = destination), spec$args))
}

test_that("the dosage .traw holds the VCF's DS values exactly", {
  o <- ds_oracle()
  t <- read_traw(dsx("1kg_p1_chr22.traw"))
  expect_equal(dim(o$d), c(5L, 10376L))
  expect_identical(unname(t$G), unname(o$d))
  expect_identical(rownames(t$G), rownames(o$d))
  expect_equal(sum(o$d != round(o$d)), 3263)
})

test_that("dense and dosage destinations of every DS format are within its quantization", {
  rt <- new_runtime()
  o <- ds_oracle()
  ids <- read_traw(dsx("1kg_p1_chr22.traw"))$meta$SNP
  for (spec in ds_formats()) {
    f <- spec$file
    expect_true(rpgen_info(dsx(f), format = spec$args$format, fam = spec$args$fam,
                           map = spec$args$map, dosage_format = spec$args$dosage_format)$has_dosage,
                label = paste(f, "has_dosage"))
    E <- read_ds(spec, rt, "dense")
    expect_identical(colnames(E), ids, label = paste(f, "ids"))
    expect_identical(attr(E, "variants")$pos, o$pos, label = paste(f, "positions"))
    expect_identical(rownames(E), rownames(o$d), label = paste(f, "samples"))
    e <- unname(E[, ])
    expect_false(anyNA(e), label = paste(f, "dense has no NA"))
    err <- max(abs(e - unname(o$d)))
    expect_lte(err, spec$tol, label = sprintf("%s dense max |error| %.3g", f, err))
    D <- read_ds(spec, rt, "dosage")
    d <- unname(Rfmalloc::as.matrix(D))
    # the dos8 bytes are round(127 d') of the format's own value d'
    expect_identical(d * 127, round(d * 127), label = paste(f, "dos8 grid"))
    expect_lte(max(abs(d - e)), 1 / 254 + 1e-12, label = paste(f, "dos8 vs dense"))
    err8 <- max(abs(d - unname(o$d)))
    expect_lte(err8, spec$tol + 1 / 254 + 1e-12,
               label = sprintf("%s dosage max |error| %.3g", f, err8))
  }
})

test_that("PGEN dosages decode exactly to plink2's 1/16384 grid; VCF and BCF agree exactly", {
  rt <- new_runtime()
  o <- ds_oracle()
  P <- rpgen_read(dsx("1kg_p1_chr22.pgen"), runtime = rt, destination = "dense")
  # DS has 3 decimals, so DS * 16384 is never a tie: the rounding is unique
  expect_identical(unname(P[, ]), unname(round(o$d * 16384) / 16384))
  V <- rpgen_read(dsx("1kg_p1_chr22.vcf.gz"), runtime = rt, destination = "dense")
  B <- rpgen_read(dsx("1kg_p1_chr22.bcf"), runtime = rt, destination = "dense")
  expect_identical(V[, ], B[, ])
})

test_that("hardcalls beside the dosages: GT where the format has it, else plink2's 0.1 rule", {
  rt <- new_runtime()
  o <- ds_oracle()
  # VCF/BCF hardcalls are the GT field (75 cells disagree with round(DS))
  for (f in c("1kg_p1_chr22.vcf.gz", "1kg_p1_chr22.bcf", "1kg_p1_chr22.bed")) {
    X <- rpgen_read(dsx(f), runtime = rt)
    expect_same_calls(Rfmalloc::as.matrix(X), o$gt, paste(f, "hardcalls = GT"))
  }
  expect_equal(sum(o$gt != round(o$d)), 75)
  # plink2 --hard-call-threshold 0.1 (its documented rule): round(d) when
  # |d - round(d)| <= 0.1, else missing; 1,370 missing here. Every format
  # that stores the DS without loss (legacy dosage, PGEN, plink2's DS VCF,
  # GEN, 16-bit BGEN) gives exactly these calls; 8-bit BGEN stores
  # probabilities in 1/255 steps, which moves 126 dosages of 0.1 and 1.9 to
  # 26/255 (> 0.1) from the integer: missing there (and for plink2, below).
  rule <- ifelse(abs(o$d - round(o$d)) <= 0.1 + 1e-9, round(o$d), NA)
  expect_equal(sum(is.na(rule)), 1370)
  for (spec in ds_formats()[c(3, 4, 5, 6, 8, 9)]) {
    X <- read_ds(spec, rt, "hardcall")
    expect_same_calls(Rfmalloc::as.matrix(X), rule, paste(spec$file, "hardcalls"))
  }
  X8 <- Rfmalloc::as.matrix(read_ds(ds_formats()[[7]], rt, "hardcall"))
  expect_equal(sum(is.na(X8)), 1496)
  expect_equal(sum(xor(is.na(X8), is.na(rule))), 126)
  # plink2's own hardcalls of the legacy dosage file equal that rule
  plink2_or_skip()
  td <- tempfile("dosage")
  dir.create(td)
  on.exit(unlink(td, recursive = TRUE), add = TRUE)
  run_plink2(c("--import-dosage", dsx("1kg_p1_chr22.dosage"), "format=1", "--fam",
               dsx("1kg_p1_chr22.fam"), "--map", dsx("1kg_p1_chr22.dosage.map"), "--make-bed"),
             file.path(td, "ld"))
  L <- rpgen_read(file.path(td, "ld.bed"), runtime = rt)
  expect_same_calls(Rfmalloc::as.matrix(L), rule, "plink2 --import-dosage hardcalls")
})

# BGEN and GEN hardcalls (the hardcall destination) equal plink2 --make-bed
# of the same file: one rule, plink2's (docs/formats/conventions.md). With
# the earlier rule (the most probable genotype when its probability is
# >= 0.9) the 8-bit BGEN differed in 129 calls and the 16-bit ones in 3.
# The BGEN reader's full decode gives the same hardcalls as this 2-bit path
# (core/tests/formats/fmt_bgen: fm_test_check_hardcall_only on these files).
test_that("BGEN and GEN hardcalls equal plink2 --make-bed of the same file", {
  rt <- new_runtime()
  plink2_or_skip()
  td <- tempfile("bgen")
  dir.create(td)
  on.exit(unlink(td, recursive = TRUE), add = TRUE)
  files <- list(
    list(dsx("1kg_p1_chr22.8bit.bgen"), "--bgen", dsx("1kg_p1_chr22.8bit.sample"), 1496),
    list(dsx("1kg_p1_chr22.16bit.bgen"), "--bgen", dsx("1kg_p1_chr22.16bit.sample"), 1370),
    list(dsx("1kg_p1_chr22.16bit.zstd.bgen"), "--bgen", dsx("1kg_p1_chr22.16bit.zstd.sample"), 1370),
    list(dsx("1kg_p1_chr22.gen"), "--gen", dsx("1kg_p1_chr22.sample"), 1370),
    list(kg("1kg_bi.phased.8bit.bgen"), "--bgen", kg("1kg_bi.phased.8bit.sample"), 0))
  for (f in files) {
    out <- file.path(td, "p")
    run_plink2(c(f[[2]], f[[1]], "ref-first", "--sample", f[[3]], "--make-bed"), out)
    P <- Rfmalloc::as.matrix(rpgen_read(paste0(out, ".bed"), runtime = rt))
    X <- Rfmalloc::as.matrix(rpgen_read(f[[1]], runtime = rt, destination = "hardcall"))
    expect_equal(sum(is.na(P)), f[[4]], label = paste(basename(f[[1]]), "plink2 missing calls"))
    expect_same_calls(X, P, paste(basename(f[[1]]), "hardcalls vs plink2 --make-bed"))
  }
})
