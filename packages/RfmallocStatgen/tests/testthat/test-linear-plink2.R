# statgen_gwas(family = "linear") against plink2 --glm on the 1kg fixture,
# every variant (chrX with plink2's SEX covariate included).

test_that("linear QT without covariates matches plink2 --glm row by row", {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  ph <- kg_pheno()
  res <- statgen_gwas(X, ph[c("#FID", "IID", "QT")])
  p2 <- plink2_glm("QT", "linear", c("--glm", "allow-no-covars", "hide-covar"))
  d <- expect_plink2_rows(res, p2)
  expect_gt(sum(res$ERRCODE == "CONST_OMITTED_ALLELE"), 300)
  expect_true(any(res$A1 != res$ALT)) # plink2 tests the minor allele
})

test_that("linear QT with plink2's 10 PCs matches plink2 --glm", {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  pcs <- plink2_pcs()
  res <- statgen_gwas(X, kg_pheno()[c("#FID", "IID", "QT")], covar = pcs)
  p2 <- plink2_glm("QT", "linear", c("--covar", file.path(tempdir(), "p2_pca.eigenvec"),
                                     "--glm", "hide-covar"))
  expect_plink2_rows(res, p2)
})

test_that("linear QT with fmalloc_pca's 10 PCs matches plink2 given the same PCs", {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  pca <- suppressMessages(Rfmalloc::fmalloc_pca(X, k = 10))
  s <- Rfmalloc::fmalloc_samples(X)
  cov <- data.frame(`#FID` = s$fid, IID = s$iid, pca$x, check.names = FALSE)
  f <- tempfile(fileext = ".cov")
  utils::write.table(cov, f, sep = "\t", quote = FALSE, row.names = FALSE)
  res <- statgen_gwas(X, kg_pheno()[c("#FID", "IID", "QT")], covar = cov)
  p2 <- plink2_glm("QT", "linear", c("--covar", f, "--glm", "hide-covar"))
  expect_plink2_rows(res, p2)
})
