# hapmap_snprelate: a .bed not written by our plink2 (SNPRelate's, integer
# SNP IDs, chromosome code 23 for X, every sex unknown, 1,009 missing
# calls). The oracle is plink2's own ALT (= .bim column 5) count table,
# computed here in a tempdir.

test_that("hapmap BED: chromosome 23 comes through as written, with positions and alleles", {
  rt <- new_runtime()
  pre <- sub("\\.bed$", "", gt_fixture("hapmap_snprelate", "plinkhapmap.bed"))
  bim <- utils::read.table(paste0(pre, ".bim"), colClasses = "character")
  X <- rpgen_read(paste0(pre, ".bed"), runtime = rt)
  expect_equal(dim(X), c(60L, 5000L))
  v <- Rfmalloc::fmalloc_variants(X)
  expect_identical(v$chr, bim$V1)
  expect_identical(v$id, bim$V2)
  expect_identical(v$pos, as.numeric(bim$V4))
  expect_equal(sum(v$chr == "23"), 203)
  expect_equal(sum(is.na(Rfmalloc::as.matrix(X))), 1009)
  expect_equal(rpgen_info(paste0(pre, ".bed"))[c("format", "n_samples", "n_variants")],
               list(format = "bed", n_samples = 60, n_variants = 5000))
})

test_that("hapmap BED with chromosome 23 equals plink2 --export Av, with chr metadata", {
  rt <- new_runtime()
  pre <- sub("\\.bed$", "", gt_fixture("hapmap_snprelate", "plinkhapmap.bed"))
  plink2_or_skip()
  bim <- utils::read.table(paste0(pre, ".bim"), colClasses = "character")
  td <- tempfile("hapmap")
  dir.create(td)
  on.exit(unlink(td, recursive = TRUE), add = TRUE)
  utils::write.table(bim[, c(2, 5)], file.path(td, "a1.txt"), sep = "\t", quote = FALSE,
                     row.names = FALSE, col.names = FALSE)
  run_plink2(c("--bfile", pre, "--export", "Av", "--export-allele", file.path(td, "a1.txt")),
             file.path(td, "h"))
  t <- read_traw(file.path(td, "h.traw"))
  expect_equal(dim(t$G), c(60L, 5000L))
  expect_identical(t$meta$COUNTED, bim$V5)
  expect_equal(sum(is.na(t$G)), 1009)

  X <- rpgen_read(paste0(pre, ".bed"), runtime = rt)
  expect_identical(colnames(X), bim$V2)
  expect_identical(rownames(X), rownames(t$G))
  expect_same_calls(Rfmalloc::as.matrix(X), t$G, "plinkhapmap.bed")

  # chromosome 23 comes through as written in the .bim, at the variants
  # plink2 reports as X, with positions and alleles
  v <- Rfmalloc::fmalloc_variants(X)
  expect_identical(v$chr, bim$V1)
  x <- which(v$chr == "23")
  expect_length(x, 203)
  expect_identical(x, which(t$meta$CHR == "X"))
  expect_identical(v$pos[x], as.numeric(bim$V4[x]))
  expect_identical(v$alt, bim$V5)
  expect_identical(v$ref, bim$V6)
  # every sex is unknown, so nothing on X is treated as haploid: the
  # heterozygous calls stay, as in plink2's table
  expect_true(sum(t$G[, x] == 1, na.rm = TRUE) > 0)
  # the same matrix through the dosage and dense destinations
  D <- rpgen_read(paste0(pre, ".bed"), runtime = rt, destination = "dosage", variants = x)
  expect_same_calls(Rfmalloc::as.matrix(D), t$G[, x], "chr 23 -> dosage")
  E <- rpgen_read(paste0(pre, ".bed"), runtime = rt, destination = "dense", variants = x)
  expect_same_calls(E[, ], t$G[, x], "chr 23 -> dense")
  expect_identical(attr(E, "variants")$chr, rep("23", 203))
})
