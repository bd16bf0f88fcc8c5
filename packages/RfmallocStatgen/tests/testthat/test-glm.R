# statgen_gwas(family = "logistic") against glm() per variant (R's default
# tolerance alone leaves 1e-3, hence epsilon = 1e-14), and Firth's rows
# against an R oracle; several phenotypes in one pass.

test_that("200 random variants equal glm(binomial) to 1e-8 (10 PCs)", {
  # glm(epsilon = 1e-14), polished by Newton steps (logit_oracle)
  d <- kg_bt_pcs("never")
  res <- d$res
  auto <- which(res[["#CHROM"]] != "X" & res$ERRCODE == ".")
  set.seed(7)
  for (j in sample(auto, 200)) {
    o <- logit_oracle(cbind(d$C, d$X[, j])[d$keep, ], d$y[d$keep])
    expect_equal(log(res$OR[j]), o$coef[12], tolerance = 1e-8)
    expect_equal(res[["LOG(OR)_SE"]][j], o$se[12], tolerance = 1e-8)
    expect_equal(res$P[j], 2 * stats::pnorm(-abs(o$coef[12] / o$se[12])), tolerance = 1e-8)
  }
})

test_that("Firth rows equal an R oracle of Firth's method to 1e-6 (50 separated variants)", {
  d <- kg_bt_pcs()
  set.seed(8)
  conv <- 0
  for (j in sample(d$firth_rows, 50)) {
    D <- cbind(d$C, d$X[, j])[d$keep, ]
    o <- firth_oracle(D, d$y[d$keep])
    if (!o$converged) next
    conv <- conv + 1
    expect_equal(log(d$res$OR[j]), unname(o$coef[12]), tolerance = 1e-6)
    # plink2's SE: sqrt(diag((X'WX)^-1)) at the penalized estimate
    p <- stats::plogis(drop(D %*% o$coef))
    se <- sqrt(diag(solve(crossprod(D, D * (p * (1 - p))))))[12]
    expect_equal(d$res[["LOG(OR)_SE"]][j], unname(se), tolerance = 1e-6)
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

test_that("logistic results are bit-identical for every block size and thread count", {
  set.seed(12)
  n <- 300
  g <- matrix(stats::rbinom(n * 40, 2, rep(c(0.01, 0.3), each = n * 20)), n, 40)
  g[sample(length(g), 100)] <- NA
  X <- Rfmalloc::fmalloc_bed(g, new_runtime())
  y <- data.frame(b1 = stats::rbinom(n, 1, 0.3), b2 = replace(stats::rbinom(n, 1, 0.5), 1:9, NA))
  cov <- data.frame(a = stats::rnorm(n))
  old <- list(Rfmalloc::fmalloc_panel_budget(), Rfmalloc::fmalloc_threads())
  on.exit({
    Rfmalloc::fmalloc_panel_budget(old[[1]])
    Rfmalloc::fmalloc_threads(old[[2]])
  })
  ref <- suppressMessages(statgen_gwas(X, y, covar = cov, family = "logistic"))
  expect_gt(sum(ref[["FIRTH?"]] == "Y"), 5)
  for (cols in c(1, 7, 4096)) for (th in 1:2) {
    Rfmalloc::fmalloc_panel_budget(8 * n * cols)
    Rfmalloc::fmalloc_threads(th)
    r <- suppressMessages(statgen_gwas(X, y, covar = cov, family = "logistic"))
    expect_identical(r$OR, ref$OR)
    expect_identical(r[["LOG(OR)_SE"]], ref[["LOG(OR)_SE"]])
    expect_identical(r$ERRCODE, ref$ERRCODE)
  }
})
