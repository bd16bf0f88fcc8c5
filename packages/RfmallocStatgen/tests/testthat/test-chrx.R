# chrX in statgen_gwas(family = "linear") on the 1kg fixture's 1,017 chrX
# (non-PAR) variants: the .bed gives male calls as 0/2 (plink2 a3.5 reads
# them so), and the .fam gives sex (551 male, 575 female).
#   chrX = "sex" (default, plink2 a3.5's): SEX (1/2) is a covariate there;
#     samples of unknown sex are left out there; SEX is not added when the
#     samples used all have one sex (plink2: "Not including covariate 'SEX'").
#   chrX = "none": chrX like an autosome.
#   chrX = "sex-haploid": male calls counted 0/1, SEX a covariate.

kg_chrx <- function() {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  v <- Rfmalloc::fmalloc_variants(X)
  list(X = X, xc = which(v$chr == "X"), s = Rfmalloc::fmalloc_samples(X))
}

# lm()'s row for the genotype, with or without SEX
lm_chrx <- function(y, x, sex = NULL) {
  f <- if (is.null(sex)) stats::lm(y ~ x) else stats::lm(y ~ sex + x)
  stats::coef(summary(f))["x", ]
}

expect_lm_row <- function(r, want, obs) {
  expect_equal(r$BETA, unname(want[1]), tolerance = 1e-8)
  expect_equal(r$SE, unname(want[2]), tolerance = 1e-8)
  expect_equal(r$T_STAT, unname(want[3]), tolerance = 1e-8)
  expect_equal(r$P, unname(want[4]), tolerance = 1e-8)
  expect_identical(r$OBS_CT, obs)
}

# a few chrX variants with male carriers (where the male coding matters)
chrx_pick <- function(k) {
  g <- as.matrix(k$X[, k$xc])
  male <- k$s$sex == 1
  carriers <- colSums(g[male, , drop = FALSE] > 0)
  fem_var <- apply(g[!male, , drop = FALSE], 2, stats::var)
  k$xc[carriers >= 20 & fem_var > 0][c(1, 5, 10, 20, 40)]
}

test_that("chrX rows match plink2 --glm (SEX added on chrX), with males 0/2", {
  k <- kg_chrx()
  expect_identical(length(k$xc), 1017L)
  res <- statgen_gwas(k$X, kg_pheno()[c("#FID", "IID", "QT")])
  p2 <- plink2_glm("QT", "linear", c("--glm", "allow-no-covars", "hide-covar"))
  on_x <- p2[["#CHROM"]] == "X"
  expect_identical(which(on_x), k$xc)
  d <- expect_plink2_rows(res[k$xc, ], p2[on_x, ])
  expect_lt(max(d), 1e-4)
  expect_identical(unique(res$OBS_CT[k$xc]), 1111L)
  expect_identical(sum(res$ERRCODE[k$xc] == "."), 1004L)
  # A1 on chrX counts a male call as one allele (plink2's frequencies)
  expect_identical(res$A1[k$xc], p2$A1[on_x])
  # SEX really enters: chrX = "none" differs on chrX, not elsewhere
  none <- statgen_gwas(k$X, kg_pheno()[c("#FID", "IID", "QT")], chrX = "none")
  ok <- res$ERRCODE[k$xc] == "."
  expect_gt(mean(none$BETA[k$xc][ok] != res$BETA[k$xc][ok]), 0.9)
  expect_identical(none$BETA[-k$xc], res$BETA[-k$xc])
  expect_identical(none$SE[-k$xc], res$SE[-k$xc])
})

test_that("chrX = 'none' equals lm() without SEX, on the genotypes as read (males 0/2)", {
  k <- kg_chrx()
  ph <- kg_pheno()
  res <- statgen_gwas(k$X, ph[c("#FID", "IID", "QT")], chrX = "none", a1 = "alt")
  cols <- chrx_pick(k)
  expect_length(cols, 5)
  male <- k$s$sex == 1
  for (j in cols) {
    x <- as.matrix(k$X[, j])[, 1]
    expect_true(all(x[male] %in% c(0, 2))) # haploid calls read as 0/2
    expect_lm_row(res[j, ], lm_chrx(ph$QT, x), sum(!is.na(ph$QT)))
  }
})

test_that("chrX = 'sex-haploid' equals lm() with male genotypes halved, plus SEX", {
  k <- kg_chrx()
  ph <- kg_pheno()
  res <- statgen_gwas(k$X, ph[c("#FID", "IID", "QT")], chrX = "sex-haploid", a1 = "alt")
  dflt <- statgen_gwas(k$X, ph[c("#FID", "IID", "QT")], a1 = "alt")
  male <- k$s$sex == 1
  sex <- k$s$sex
  for (j in chrx_pick(k)) {
    x <- as.matrix(k$X[, j])[, 1]
    xh <- ifelse(male, x / 2, x)
    expect_lm_row(res[j, ], lm_chrx(ph$QT, xh, sex), sum(!is.na(ph$QT)))
    # and the default ("sex") is lm() with SEX on the 0/2 coding
    expect_lm_row(dflt[j, ], lm_chrx(ph$QT, x, sex), sum(!is.na(ph$QT)))
    expect_false(isTRUE(all.equal(res$BETA[j], dflt$BETA[j])))
  }
  # with SEX in the model, halving the male calls changes nothing on a
  # variant without male carriers
  g <- as.matrix(k$X[male, k$xc])
  no_male <- k$xc[colSums(g > 0) == 0 & dflt$ERRCODE[k$xc] == "."]
  expect_gt(length(no_male), 100)
  expect_equal(res$BETA[no_male], dflt$BETA[no_male], tolerance = 1e-10)
  # autosomes are untouched
  expect_identical(res$BETA[-k$xc], dflt$BETA[-k$xc])
})

test_that("samples of unknown sex are left out on chrX only, as plink2 leaves them out", {
  k <- kg_chrx()
  s <- k$s
  unknown <- seq(1, 400, by = 10) # 40 samples, none with QT missing
  ph <- kg_pheno()
  expect_false(anyNA(ph$QT[unknown]))
  s2 <- s
  s2$sex[unknown] <- 0L
  res <- statgen_gwas(k$X, ph[c("#FID", "IID", "QT")], samples = s2)
  expect_identical(unique(res$OBS_CT[k$xc]), 1071L)
  expect_identical(unique(res$OBS_CT[-k$xc]), 1111L)
  f <- tempfile(fileext = ".sex")
  utils::write.table(data.frame(`#FID` = s$fid[unknown], IID = s$iid[unknown], SEX = "NA", check.names = FALSE),
                     f, sep = "\t", quote = FALSE, row.names = FALSE)
  p2 <- plink2_glm("QT", "linear", c("--update-sex", f, "--chr", "X", "--glm", "allow-no-covars", "hide-covar"))
  expect_plink2_rows(res[k$xc, ], p2)
})

test_that("SEX is not added when the samples used have one sex; unknown sex then stays in, as in plink2", {
  k <- kg_chrx()
  s <- k$s
  ph <- kg_pheno()
  unknown_males <- which(s$sex == 1)[1:40]
  # QT kept for the females and 40 males whose sex is then made unknown
  ph$QT[s$sex == 1 & !(seq_len(nrow(s)) %in% unknown_males)] <- NA
  s2 <- s
  s2$sex[unknown_males] <- 0L
  res <- statgen_gwas(k$X, ph[c("#FID", "IID", "QT")], samples = s2, a1 = "alt")
  n_used <- sum(!is.na(ph$QT))
  expect_identical(unique(res$OBS_CT[k$xc]), n_used)
  # = lm() without SEX over those samples
  j <- k$xc[which(res$ERRCODE[k$xc] == ".")[c(1, 50, 200)]]
  for (jj in j) expect_lm_row(res[jj, ], lm_chrx(ph$QT, as.matrix(k$X[, jj])[, 1]), n_used)
  # plink2 given the same samples (--update-sex, --remove-males keeps the
  # females and the samples of unknown sex)
  skip_if_no_plink2()
  f <- tempfile(fileext = ".sex")
  utils::write.table(data.frame(`#FID` = s$fid[unknown_males], IID = s$iid[unknown_males], SEX = "NA",
                                check.names = FALSE), f, sep = "\t", quote = FALSE, row.names = FALSE)
  p2 <- plink2_glm("QT", "linear", c("--update-sex", f, "--remove-males", "--chr", "X",
                                     "--glm", "allow-no-covars", "hide-covar", "omit-ref"))
  expect_plink2_rows(res[k$xc, ], p2)
})
