# Every format of the 1kg chr22 fixtures reads to plink2's .traw hardcalls.

test_that("bed (restricted to chr22 via variants) matches the .traw", {
  rt <- new_runtime()
  bim <- utils::read.table(kg("1kg_bi.bim"), colClasses = "character")
  chr22 <- which(bim$V1 == "22")
  X <- rpgen_read(kg("1kg_bi.bed"), runtime = rt, variants = chr22)
  expect_s4_class(X, "fmalloc_codec_matrix")
  expect_matches_traw(X, 1097)
  v <- Rfmalloc::fmalloc_variants(X)
  expect_named(v, c("chr", "pos", "id", "ref", "alt", "cm")) # a .bim stores centimorgans
  expect_equal(v$alt, bim$V5[chr22])
  expect_identical(v$cm, as.numeric(bim$V3[chr22]))
  # a bare prefix finds the fileset too
  Y <- rpgen_read(sub("\\.bed$", "", kg("1kg_bi.bed")), runtime = rt, variants = chr22[1:3])
  expect_equal(Rfmalloc::as.matrix(Y), Rfmalloc::as.matrix(X)[, 1:3])
  i <- rpgen_info(kg("1kg_bi.bed"))
  expect_equal(i[c("format", "n_samples", "n_variants")],
               list(format = "bed", n_samples = 1126, n_variants = nrow(bim)))
})

test_that("PGEN (restricted to chr22 via variants) matches the .traw", {
  rt <- new_runtime()
  pvar <- utils::read.table(kg("1kg_bi.pvar"), colClasses = "character", comment.char = "#")
  chr22 <- which(pvar$V1 == "22")
  X <- rpgen_read(kg("1kg_bi.pgen"), runtime = rt, variants = chr22)
  expect_matches_traw(X, 1097)
  # a bare prefix with only a .pgen beside it (1kg has no .bed)
  expect_equal(rpgen_info(sub("\\.pgen$", "", kg("1kg.pgen")))$format, "pgen")
  H <- rpgen_read(kg("1kg_bi.pgen"), destination = "haplotype", runtime = rt, variants = chr22[1:50])
  expect_equal(dim(H), c(50L, 2L * 1126L))
})

test_that("VCF.gz and BCF chr22 records match the .traw", {
  rt <- new_runtime()
  for (f in c("1kg.vcf.gz", "1kg.bcf")) {
    X <- rpgen_read(kg(f), runtime = rt, region = "22")
    expect_matches_traw(X, 1097)
  }
  i <- rpgen_info(kg("1kg.bcf"), region = "22", count = TRUE)
  expect_equal(i$format, "bcf")
  expect_true(i$n_variants >= 1097)
})

test_that("BGEN files (v1.1 chr22, genome-wide 8/16-bit, zstd, phased) match the .traw", {
  rt <- new_runtime()
  X <- rpgen_read(kg("text", "1kg_bi_chr22.v11.bgen"), runtime = rt)
  expect_matches_traw(X, 1097)
  bim <- utils::read.table(kg("1kg_bi.bim"), colClasses = "character")
  chr22 <- which(bim$V1 == "22")
  for (f in c("1kg_bi.8bit.bgen", "1kg_bi.16bit.bgen", "1kg_bi.16bit.zstd.bgen",
              "1kg_bi.phased.8bit.bgen")) {
    X <- rpgen_read(kg(f), runtime = rt, variants = chr22)
    expect_matches_traw(X, 1097)
  }
  D <- rpgen_read(kg("text", "1kg_bi_chr22.v11.bgen"), destination = "dosage", runtime = rt,
                  variants = 1:20)
  G <- traw_chr22()[, 1:20]
  expect_true(max(abs(Rfmalloc::as.matrix(D) - G), na.rm = TRUE) <= 0.01)
  expect_equal(rpgen_info(kg("1kg_bi.8bit.bgen"))$has_dosage, TRUE)
})

test_that("PED/MAP and TPED/TFAM with the .traw's counted alleles match it", {
  rt <- new_runtime()
  traw_chr22()
  cnt <- traw_cache$counted
  X <- rpgen_read(kg("text", "1kg_bi_chr22.ped"), runtime = rt, counted_alleles = cnt)
  expect_matches_traw(X, 1097)
  X <- rpgen_read(kg("text", "1kg_bi_chr22.tped"), runtime = rt, counted_alleles = cnt)
  expect_matches_traw(X, 1097)
})

test_that("GEN, HAPS, HAPS/LEGEND and EIGENSTRAT match the .traw", {
  rt <- new_runtime()
  expect_matches_traw(rpgen_read(kg("text", "1kg_bi_chr22.gen"), runtime = rt), 1097)
  expect_matches_traw(rpgen_read(kg("text", "1kg_bi_chr22.haps"), runtime = rt), 1097)
  hl <- rpgen_read(kg("text", "1kg_bi_chr22_hl.haps"), runtime = rt, chrom = "22")
  expect_equal(dim(hl), c(1126L, 1097L))
  expect_identical(unname(Rfmalloc::as.matrix(hl)), unname(traw_chr22()))
  X <- rpgen_read(kg("text", "1kg_bi_chr22.geno"), runtime = rt)
  expect_equal(ncol(X), 1010)
  expect_matches_traw(X, 1010)
})
