# statgen_gwas(family = "logistic") against glm() per variant (R's default
# tolerance alone leaves 1e-3, hence epsilon = 1e-14), and Firth's rows
# against an R oracle; several phenotypes in one pass.

test_that("200 random variants equal glm(binomial) to 1e-8 (10 PCs)", {
  # glm(epsilon = 1e-14), polished by Newton steps (logit_oracle)
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  pcs <- plink2_pcs()
  ph <- kg_pheno()
  res <- suppressMessages(statgen_gwas(X, ph[c("#FID", "IID", "BT")], covar = pcs,
                                       family = "logistic", firth = "never", a1 = "alt"))
  s <- Rfmalloc::fmalloc_samples(X)
  y <- ph$BT[match(s$iid, ph$IID)] - 1
  C <- cbind(1, as.matrix(pcs[match(s$iid, pcs$IID), -(1:2)]))
  keep <- !is.na(y)
  auto <- which(res[["#CHROM"]] != "X" & res$ERRCODE == ".")
  set.seed(7)
  for (j in sample(auto, 200)) {
    o <- logit_oracle(cbind(C, X[, j])[keep, ], y[keep])
    expect_equal(log(res$OR[j]), o$coef[12], tolerance = 1e-8)
    expect_equal(res[["LOG(OR)_SE"]][j], o$se[12], tolerance = 1e-8)
    expect_equal(res$P[j], 2 * stats::pnorm(-abs(o$coef[12] / o$se[12])), tolerance = 1e-8)
  }
})

test_that("Firth rows equal an R oracle of Firth's method to 1e-6 (50 separated variants)", {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  pcs <- plink2_pcs()
  ph <- kg_pheno()
  res <- suppressMessages(statgen_gwas(X, ph[c("#FID", "IID", "BT")], covar = pcs,
                                       family = "logistic", a1 = "alt"))
  s <- Rfmalloc::fmalloc_samples(X)
  y <- ph$BT[match(s$iid, ph$IID)] - 1
  C <- cbind(1, as.matrix(pcs[match(s$iid, pcs$IID), -(1:2)]))
  keep <- !is.na(y)
  firth <- which(res[["FIRTH?"]] == "Y" & res$ERRCODE == "." & res[["#CHROM"]] != "X")
  set.seed(8)
  conv <- 0
  for (j in sample(firth, 50)) {
    D <- cbind(C, X[, j])[keep, ]
    o <- firth_oracle(D, y[keep])
    if (!o$converged) next
    conv <- conv + 1
    expect_equal(log(res$OR[j]), unname(o$coef[12]), tolerance = 1e-6)
    # plink2's SE: sqrt(diag((X'WX)^-1)) at the penalized estimate
    p <- stats::plogis(drop(D %*% o$coef))
    se <- sqrt(diag(solve(crossprod(D, D * (p * (1 - p))))))[12]
    expect_equal(res[["LOG(OR)_SE"]][j], unname(se), tolerance = 1e-6)
  }
  expect_gte(conv, 45)
})

test_that("several case/control phenotypes in one pass give each one's rows alone", {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  ph <- kg_pheno()
  set.seed(9)
  ph$BT2 <- ifelse(runif(nrow(ph)) < 0.05, NA, stats::rbinom(nrow(ph), 1, 0.4))
  cols <- which(Rfmalloc::fmalloc_variants(X)$chr == "22")
  G <- Rfmalloc::fmalloc_select(X, cols)
  both <- suppressMessages(statgen_gwas(G, ph[c("#FID", "IID", "BT", "BT2")], family = "logistic"))
  for (b in c("BT", "BT2")) {
    one <- suppressMessages(statgen_gwas(G, ph[c("#FID", "IID", b)], family = "logistic"))
    mine <- both[both$PHENO == b, ]
    expect_identical(mine$OR, one$OR)
    expect_identical(mine[["LOG(OR)_SE"]], one[["LOG(OR)_SE"]])
    expect_identical(mine$ERRCODE, one$ERRCODE)
  }
})
