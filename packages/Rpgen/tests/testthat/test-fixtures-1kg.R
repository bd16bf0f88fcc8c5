# 1kg_phase3_subset genome-wide (1126 samples, chr1-22 and X): every binary
# format reads to exactly the hardcalls of 1kg_bi.bed, which plink2 wrote.
# The reference is the .bed's own bytes; each destination is compared byte
# for byte (bed2 codes are canonical: one code per call, zero padding).
# chr22 of the text formats is checked against the .traw in test-formats.R.

test_that("1kg_bi.bed reads to its own bytes, with the .bim/.fam metadata", {
  rt <- new_runtime()
  bim <- utils::read.table(kg("1kg_bi.bim"), colClasses = "character")
  fam <- utils::read.table(kg("1kg_bi.fam"), colClasses = "character")
  ref <- bed_bytes(kg("1kg_bi.bed"), nrow(fam))
  X <- rpgen_read(kg("1kg_bi.bed"), runtime = rt)
  expect_equal(dim(X), c(1126L, 25161L))
  expect_same_bytes(hardcall_bytes(X), ref, bim$V2, "1kg_bi.bed")
  v <- Rfmalloc::fmalloc_variants(X)
  expect_identical(v$chr, bim$V1)
  expect_identical(v$id, bim$V2)
  expect_identical(v$pos, as.numeric(bim$V4))
  expect_identical(v$alt, bim$V5)
  expect_identical(v$ref, bim$V6)
  expect_identical(rownames(X), fam$V2)
  # chrX non-PAR: males (sex 1) are haploid, coded 0/2, never 1
  x <- which(bim$V1 == "X")
  expect_length(x, 1017)
  Gx <- X[fam$V5 == "1", x]
  expect_false(any(Gx == 1))
  expect_true(all(Gx %in% c(0, 2)))
  expect_true(any(X[fam$V5 == "2", x] == 1))
})

test_that("PGEN and every BGEN of 1kg_bi read to the .bed's hardcalls, genome-wide", {
  rt <- new_runtime(size_gb = 2)
  bim <- utils::read.table(kg("1kg_bi.bim"), colClasses = "character")
  fam <- utils::read.table(kg("1kg_bi.fam"), colClasses = "character")
  ref <- bed_bytes(kg("1kg_bi.bed"), nrow(fam))
  for (f in c("1kg_bi.pgen", "1kg_bi.8bit.bgen", "1kg_bi.16bit.bgen", "1kg_bi.16bit.zstd.bgen",
              "1kg_bi.phased.8bit.bgen")) {
    X <- rpgen_read(kg(f), runtime = rt)
    expect_same_bytes(hardcall_bytes(X), ref, bim$V2, f)
    v <- Rfmalloc::fmalloc_variants(X)
    expect_identical(v$id, bim$V2, label = paste(f, "ids"))
    expect_identical(v$pos, as.numeric(bim$V4), label = paste(f, "positions"))
    expect_identical(v$alt, bim$V5, label = paste(f, "counted alleles"))
    expect_identical(v$ref, bim$V6, label = paste(f, "other alleles"))
    expect_identical(rownames(X), fam$V2, label = paste(f, "sample ids"))
  }
})

test_that("1kg.pgen, VCF.gz and BCF: split records of biallelic sites equal the .bed, and all records agree", {
  rt <- new_runtime(size_gb = 2)
  bim <- utils::read.table(kg("1kg_bi.bim"), colClasses = "character")
  ref <- bed_bytes(kg("1kg_bi.bed"), 1126)
  sp <- split_plan(read_pvar(kg("1kg.pvar")))
  expect_equal(nrow(sp), 26218)
  bi <- which(sp$k == 1)
  # the biallelic sites of the full set are exactly the .bed's variants,
  # matched by ID and position, in order
  expect_identical(sp$id[bi], bim$V2)
  expect_identical(sp$pos[bi], as.numeric(bim$V4))
  P <- rpgen_read(kg("1kg.pgen"), runtime = rt)
  pb <- hardcall_bytes(P)
  expect_same_bytes(pb[, bi], ref, bim$V2, "1kg.pgen biallelic sites")
  v <- Rfmalloc::fmalloc_variants(P)
  expect_identical(v[, c("chr", "pos", "id", "ref", "alt")],
                   sp[, c("chr", "pos", "id", "ref", "alt")], ignore_attr = TRUE)
  for (f in c("1kg.vcf.gz", "1kg.bcf")) {
    X <- rpgen_read(kg(f), runtime = rt)
    expect_equal(dim(X), c(1126L, 26218L))
    xb <- hardcall_bytes(X)
    expect_same_bytes(xb[, bi], ref, bim$V2, paste(f, "biallelic sites"))
    # multi-allelic sites too: every split record equals the PGEN's
    expect_same_bytes(xb, pb, sp$id, paste(f, "vs 1kg.pgen, all records"))
    w <- Rfmalloc::fmalloc_variants(X)
    expect_identical(w$pos, sp$pos)
    expect_identical(w$alt, sp$alt)
    expect_identical(w$ref, sp$ref)
    expect_identical(w$id, sp$id)
    expect_identical(rownames(X), rownames(P))
  }
})
