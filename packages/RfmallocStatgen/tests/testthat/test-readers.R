# statgen_gwas(family = "linear") gives the same rows, bit for bit, whichever
# reader produced the genotypes of the 1kg fixture: the .bed mapped by
# fmalloc_bed_open(), and Rpgen::rpgen_read(destination = "hardcall") of the
# .pgen, the 8-bit and the 16-bit BGEN (their probabilities are all 0/1, so
# plink2's hardcall rule gives back the calls exactly; the fixture's README
# checks that every format holds the same calls), and the VCF.
#
# The fixture has no biallelic VCF: 1kg.vcf.gz keeps the 516 multi-allelic
# sites, which the reader splits into one record per ALT, all sharing the
# site's ID. The VCF comparison reads chr22 (region = "22") and keeps the
# records whose ID no other record holds; each must be a record of 1kg_bi.
#
# Sample IDs: the .fam, .psam and the BGEN's .sample (ID_1 = FID) give FID and
# IID, so the phenotypes are matched on both; a VCF names samples by IID only,
# so there statgen_gwas() matches the same phenotype table by IID alone.

read_kg_hardcall <- function(file, rt, ...) {
  Rpgen::rpgen_read(kg(file), destination = "hardcall", runtime = rt, ...)
}

# Every column of the result, compared with identical(): same variants, same
# A1, same OBS_CT and ERRCODE, and the same doubles.
expect_same_gwas <- function(a, b, what) {
  expect_identical(names(a), names(b))
  for (nm in names(a)) {
    expect_identical(a[[nm]], b[[nm]], label = sprintf("%s: column %s", what, nm))
  }
}

# The phenotypes in a shuffled order (fixed seed), so that only matching by ID
# can put them back.
shuffled_pheno <- function(cols = c("#FID", "IID", "QT")) {
  ph <- kg_pheno()[cols]
  set.seed(20240610)
  ph[sample(nrow(ph)), , drop = FALSE]
}

test_that("the .bed, .pgen, 8-bit and 16-bit BGEN give identical rows (all 25,161 variants)", {
  skip_without_rpgen_reader()
  rt <- new_runtime(size_gb = 0.5)
  bed <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  readers <- list(
    pgen = read_kg_hardcall("1kg_bi.pgen", rt),
    bgen8 = read_kg_hardcall("1kg_bi.8bit.bgen", rt),
    bgen16 = read_kg_hardcall("1kg_bi.16bit.bgen", rt)
  )
  vb <- Rfmalloc::fmalloc_variants(bed)
  sb <- Rfmalloc::fmalloc_samples(bed)
  ph <- shuffled_pheno()
  ref <- statgen_gwas(bed, ph)
  # the .bed's own result, with the phenotypes given in its row order
  ordered <- kg_pheno()
  expect_identical(ordered$IID, sb$iid)
  expect_same_gwas(statgen_gwas(bed, ordered$QT), `[[<-`(ref, "PHENO", value = "PHENO1"),
                   "bed, phenotype by position")
  # the reference itself is a real result: plink2's CONST_OMITTED_ALLELE rows
  # (monomorphic in this subset) and finite statistics elsewhere
  expect_identical(nrow(ref), 25161L)
  expect_identical(sum(ref$ERRCODE == "."), 24800L)
  expect_identical(sum(ref$ERRCODE == "CONST_OMITTED_ALLELE"), 361L)
  expect_true(all(is.finite(ref$BETA[ref$ERRCODE == "."])))
  expect_identical(unique(ref$OBS_CT), 1111L) # 1126 samples, 15 QT missing
  for (nm in names(readers)) {
    X <- readers[[nm]]
    expect_identical(dim(X), dim(bed))
    v <- Rfmalloc::fmalloc_variants(X)
    s <- Rfmalloc::fmalloc_samples(X)
    # the inputs agree, so any difference below is statgen_gwas()'s
    for (col in c("chr", "pos", "id", "ref", "alt")) {
      expect_identical(v[[col]], vb[[col]], label = sprintf("%s: variants$%s", nm, col))
    }
    expect_identical(s$iid, sb$iid)
    expect_identical(s$fid, sb$fid) # the BGEN's .sample gives FID as ID_1
    expect_identical(as.integer(s$sex), as.integer(sb$sex)) # chrX uses SEX
    expect_same_gwas(statgen_gwas(X, ph), ref, nm)
  }
})

test_that("the chr22 records of the VCF give the .bed's rows, phenotypes matched by IID only", {
  skip_without_rpgen_reader()
  rt <- new_runtime(size_gb = 0.5)
  vcf <- read_kg_hardcall("1kg.vcf.gz", rt, region = "22")
  s <- Rfmalloc::fmalloc_samples(vcf)
  expect_null(s$fid) # a VCF names samples by IID only
  bed <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  vb <- Rfmalloc::fmalloc_variants(bed)
  vv <- Rfmalloc::fmalloc_variants(vcf)
  expect_true(all(vv$chr == "22"))
  single <- !(vv$id %in% vv$id[duplicated(vv$id)])
  keep <- which(single)
  at <- match(paste(vv$id, vv$ref, vv$alt)[keep], paste(vb$id, vb$ref, vb$alt))
  expect_false(anyNA(at))
  # every biallelic chr22 record of the fixture (1,097) is there once
  expect_identical(sort(at), which(vb$chr == "22"))
  ph <- shuffled_pheno()
  # with `#FID` in the table but no FID in X, the match is by IID
  res_vcf <- statgen_gwas(vcf, ph)[keep, ]
  res_iid <- statgen_gwas(vcf, ph[c("IID", "QT")])[keep, ]
  res_bed <- statgen_gwas(bed, ph)[at, ]
  rownames(res_vcf) <- rownames(res_iid) <- rownames(res_bed) <- NULL
  expect_same_gwas(res_vcf, res_bed, "vcf chr22 vs bed")
  expect_same_gwas(res_iid, res_bed, "vcf chr22 (IID column only) vs bed")
  expect_identical(unique(res_vcf$OBS_CT), 1111L)
  expect_gt(sum(res_vcf$ERRCODE == "."), 1000)
})
