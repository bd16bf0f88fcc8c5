# statgen_gwas(family = "linear") against lm() per variant, with missing
# calls (dropped per variant, or mean-imputed), several phenotypes with their
# own missing samples, and factor covariates.

sim_data <- function(n = 300, p = 60, seed = 1) {
  set.seed(seed)
  g <- matrix(rbinom(n * p, 2, rep(runif(p, 0.05, 0.5), each = n)), n, p)
  g[sample(length(g), 0.03 * length(g))] <- NA
  covar <- data.frame(age = runif(n, 20, 70), site = factor(sample(c("a", "b", "c"), n, TRUE)))
  y <- data.frame(y1 = rnorm(n) + 0.3 * ifelse(is.na(g[, 5]), 0, g[, 5]) + covar$age / 50,
                  y2 = rnorm(n), y3 = rnorm(n))
  y$y2[sample(n, 20)] <- NA
  y$y3[sample(n, 35)] <- NA
  covar$age[c(3, 17)] <- NA
  list(g = g, covar = covar, y = y)
}

lm_row <- function(y, x, covar) {
  f <- stats::lm(y ~ ., data = data.frame(covar, x = x))
  stats::coef(summary(f))["x", ]
}

test_that("every variant and phenotype equals lm() to 1e-8 (missing calls dropped)", {
  s <- sim_data()
  rt <- new_runtime()
  X <- Rfmalloc::fmalloc_bed(s$g, rt)
  res <- statgen_gwas(X, s$y, covar = s$covar, a1 = "alt")
  expect_identical(unique(res$PHENO), c("y1", "y2", "y3"))
  for (ph in names(s$y)) for (j in seq_len(ncol(s$g))) {
    r <- res[res$PHENO == ph, ][j, ]
    want <- lm_row(s$y[[ph]], s$g[, j], s$covar)
    expect_equal(r$BETA, unname(want[1]), tolerance = 1e-8)
    expect_equal(r$SE, unname(want[2]), tolerance = 1e-8)
    expect_equal(r$T_STAT, unname(want[3]), tolerance = 1e-8)
    expect_equal(r$P, unname(want[4]), tolerance = 1e-8)
    used <- !is.na(s$y[[ph]]) & !is.na(s$g[, j]) & stats::complete.cases(s$covar)
    expect_identical(r$OBS_CT, sum(used))
  }
})

test_that("impute = 'mean' equals lm() on the mean-filled genotypes", {
  s <- sim_data(seed = 2)
  rt <- new_runtime()
  X <- Rfmalloc::fmalloc_bed(s$g, rt)
  res <- statgen_gwas(X, s$y["y1"], impute = "mean", a1 = "alt")
  for (j in seq_len(ncol(s$g))) {
    x <- s$g[, j]
    x[is.na(x)] <- mean(x, na.rm = TRUE)
    want <- lm_row(s$y$y1, x, data.frame(row.names = seq_along(x)))
    expect_equal(res$BETA[j], unname(want[1]), tolerance = 1e-8)
    expect_equal(res$SE[j], unname(want[2]), tolerance = 1e-8)
    expect_identical(res$OBS_CT[j], nrow(s$g))
  }
})

test_that("several phenotypes in one pass give each one's rows alone, bit for bit", {
  s <- sim_data(seed = 3)
  rt <- new_runtime()
  X <- Rfmalloc::fmalloc_bed(s$g, rt)
  all3 <- statgen_gwas(X, s$y, covar = s$covar)
  for (ph in names(s$y)) {
    one <- statgen_gwas(X, s$y[ph], covar = s$covar)
    mine <- all3[all3$PHENO == ph, ]
    expect_identical(mine$BETA, one$BETA)
    expect_identical(mine$SE, one$SE)
    expect_identical(mine$P, one$P)
  }
})

test_that("results are bit-identical for every block size and thread count", {
  s <- sim_data(n = 400, p = 90, seed = 4)
  rt <- new_runtime()
  X <- Rfmalloc::fmalloc_bed(s$g, rt)
  old <- list(Rfmalloc::fmalloc_panel_budget(), Rfmalloc::fmalloc_threads())
  on.exit({
    Rfmalloc::fmalloc_panel_budget(old[[1]])
    Rfmalloc::fmalloc_threads(old[[2]])
  })
  ref <- statgen_gwas(X, s$y, covar = s$covar)
  # blocks of 1, 7, 4096 and all columns: hardcalls are streamed as codes (a
  # block is the budget over n / 4 bytes), other storage decoded (over 8 n)
  for (cols in c(1, 7, 4096)) for (th in 1:2) {
    Rfmalloc::fmalloc_panel_budget(400 * cols / 4)
    Rfmalloc::fmalloc_threads(th)
    r <- statgen_gwas(X, s$y, covar = s$covar)
    expect_identical(r$BETA, ref$BETA)
    expect_identical(r$SE, ref$SE)
  }
})
