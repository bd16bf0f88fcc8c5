test_that("the SPEC's 3000 x 600 example matches prcomp to 1e-6 in the top 6 sdev", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(1)
  factors <- matrix(rnorm(3000 * 4), 3000, 4)
  loadings <- matrix(rnorm(4 * 600), 4, 600)
  X <- create_fmalloc_matrix("double", nrow = 3000, ncol = 600, runtime = rt)
  X[] <- 3 * (factors %*% loadings) + matrix(rnorm(3000 * 600), 3000, 600)
  pca <- fmalloc_pca(X, k = 6)
  ref <- prcomp(X[, ], center = TRUE, scale. = FALSE)
  expect_equal(pca$sdev, ref$sdev[1:6], tolerance = 1e-6)
  expect_true(all(abs(colSums(pca$rotation * ref$rotation[, 1:6])) > 1 - 1e-6))
  expect_equal(dim(pca$x), c(3000, 6))
  expect_s3_class(pca, "prcomp")
})

test_that("implicit centring and scaling equal the SVD of the explicitly standardized matrix", {
  set.seed(2)
  x <- matrix(rnorm(120 * 30), 120, 30) %*% diag(seq(1, 3, length.out = 30)) + 5
  for (opt in list(c(TRUE, FALSE), c(FALSE, TRUE), c(TRUE, TRUE))) {
    pca <- fmalloc_pca(x, k = 5, center = opt[1], scale = opt[2], max_iter = 500, tol = 1e-13)
    xs <- scale(x, center = opt[1], scale = if (opt[2]) {
      if (opt[1]) TRUE else apply(x, 2, sd)
    } else FALSE)
    s <- svd(xs)
    expect_equal(pca$sdev, s$d[1:5] / sqrt(119), tolerance = 1e-8, info = paste(opt))
    expect_true(all(abs(colSums(pca$rotation * s$v[, 1:5])) > 1 - 1e-8))
  }
})

test_that("PCA on hardcalls mean-imputes missing genotypes (with a message), never zero-fills", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(3)
  g <- matrix(sample(0:2, 200 * 60, replace = TRUE), 200, 60)
  g[sample(length(g), 300)] <- NA
  X <- fmalloc_bed(g, rt)
  expect_message(pca <- fmalloc_pca(X, k = 4, scale = "binomial", max_iter = 500, tol = 1e-13),
                 "mean-imputed 300 missing")
  mu <- colMeans(g, na.rm = TRUE)
  imp <- g * 1.0
  for (j in seq_len(ncol(g))) imp[is.na(g[, j]), j] <- mu[j]
  xs <- sweep(sweep(imp, 2, mu), 2, sqrt(2 * (mu / 2) * (1 - mu / 2)), "/")
  s <- svd(xs)
  expect_equal(pca$sdev, s$d[1:4] / sqrt(199), tolerance = 1e-8)
  zero <- g * 1.0
  zero[is.na(zero)] <- 0
  expect_false(isTRUE(all.equal(pca$sdev, svd(scale(zero))$d[1:4] / sqrt(199))))
})

test_that("a constant column under scaling is an error naming it, or dropped on request", {
  set.seed(4)
  x <- matrix(rnorm(50 * 6), 50, 6, dimnames = list(NULL, paste0("v", 1:6)))
  x[, 4] <- 7
  expect_error(fmalloc_pca(x, k = 2, scale = TRUE), "v4", class = "fm_error_edegenerate")
  expect_message(p <- fmalloc_pca(x, k = 2, scale = TRUE, drop_constant = TRUE), "dropped 1")
  expect_equal(rownames(p$rotation), paste0("v", c(1:3, 5:6)))
  expect_error(fmalloc_pca(x, k = 7), class = "fm_error_earg")
})

test_that("the same seed gives the same PCA", {
  x <- matrix(rnorm(80 * 20), 80, 20)
  expect_identical(fmalloc_pca(x, k = 3, seed = 9), fmalloc_pca(x, k = 3, seed = 9))
})

test_that("PCA of the 1000 Genomes .bed matches plink2's exact --pca 10", {
  skip_if_no_plink2()
  prefix <- sub("\\.bed$", "", fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed"))
  G <- fmalloc_bed_open(prefix)
  af <- fmalloc_allele_freq(G)
  keep <- which(af$chr %in% as.character(1:22) & af$maf >= 0.05)
  expect_equal(length(keep), 3688)
  X <- fmalloc_select(G, keep)
  pca <- fmalloc_pca(X, k = 10, scale = "binomial")
  lambda <- pca$sdev^2 * (nrow(X) - 1) / ncol(X)

  out <- run_plink2(c("--bfile", prefix, "--autosome", "--maf", "0.05", "--pca", "10"))
  ev <- scan(paste0(out, ".eigenval"), quiet = TRUE)
  vec <- utils::read.table(paste0(out, ".eigenvec"), header = FALSE, comment.char = "#")
  expect_equal(lambda[1:5], ev[1:5], tolerance = 1e-3)
  scores <- as.matrix(vec[match(rownames(G), vec[[2]]), 3:12])
  r <- abs(diag(cor(pca$x[, 1:5], scores[, 1:5])))
  expect_true(all(r >= 0.999), info = paste(round(r, 5), collapse = " "))
})

test_that("bad PCA arguments and data give clear errors naming the column", {
  set.seed(5)
  x <- matrix(rnorm(40 * 5), 40, 5, dimnames = list(NULL, paste0("v", 1:5)))
  expect_error(fmalloc_pca(x, k = 2.5), class = "fm_error_earg")
  expect_error(fmalloc_pca(x, k = "2"), class = "fm_error_earg")
  expect_error(fmalloc_pca(x, k = 0), class = "fm_error_earg")
  expect_error(fmalloc_pca(x, k = 2, oversample = NA), class = "fm_error_earg")
  expect_error(fmalloc_pca(x, k = 2, tol = NA), class = "fm_error_earg")
  expect_error(fmalloc_pca(x, k = 2, seed = NA), class = "fm_error_earg")
  # beyond what the C glue converts exactly: R errors naming the bounds
  expect_error(fmalloc_pca(x, k = 2, max_iter = 2^31), "max_iter must be a whole number in \\[0, 2,147,483,647\\]",
               class = "fm_error_earg")
  expect_error(fmalloc_pca(x, k = 2, oversample = 1e300), "oversample", class = "fm_error_earg")
  expect_error(fmalloc_pca(x, k = 2, seed = 2^64), "seed must be a whole number in \\[0, 9,007,199,254,740,992\\]",
               class = "fm_error_earg")
  expect_equal(fmalloc_pca(x, k = 2, seed = 2^53)$sdev, fmalloc_pca(x, k = 2, seed = 1)$sdev, tolerance = 1e-10)
  expect_error(fmalloc_pca(x, k = 2, scale = "bogus"), class = "fm_error_earg")
  expect_error(fmalloc_pca(x, k = 2, scale = c(1, 1, -1, 1, 1)), class = "fm_error_earg")
  expect_error(fmalloc_pca(x, k = 2, center = rep(NA, 5)), class = "fm_error_earg")
  expect_error(fmalloc_pca(x, k = 2, scale = "binomial"), "binomial", class = "fm_error_earg")
  expect_error(fmalloc_pca(1:10, k = 1), class = "fm_error_earg")
  y <- x
  y[3, 2] <- Inf
  expect_error(fmalloc_pca(y, k = 2), "v2", class = "fm_error_earg")
  y <- x
  y[, 4] <- NA
  expect_error(fmalloc_pca(y, k = 2), "v4", class = "fm_error_edegenerate")
})

test_that("fmalloc_standardize can drop constant columns", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  g <- cbind(c(0L, 1L, 2L, 1L), 1L, c(2L, 2L, 0L, 1L))
  X <- fmalloc_bed(g, rt)
  expect_error(fmalloc_standardize(X, scale = TRUE), class = "fm_error_edegenerate")
  expect_message(S <- fmalloc_standardize(X, scale = TRUE, drop_constant = TRUE), "dropped 1")
  expect_equal(dim(S), c(4L, 2L))
  expect_equal(as.matrix(S), scale(g[, c(1, 3)] * 1.0), ignore_attr = TRUE, tolerance = 1e-12)
})

test_that("the p x k loadings are allocated once, by the C glue, and never copied", {
  skip_if_not(capabilities("profmem"), "R was built without memory profiling")
  set.seed(6)
  n <- 30
  p <- 20000
  k <- 3
  x <- matrix(rnorm(n * p), n, p, dimnames = list(NULL, paste0("v", seq_len(p))))
  f <- tempfile()
  Rprofmem(f, threshold = p * k * 8) # only allocations of at least p x k doubles
  pca <- fmalloc_pca(x, k = k)
  Rprofmem(NULL)
  log <- readLines(f)
  sizes <- as.numeric(sub(" *:.*", "", grep("^[0-9]+ *:", log, value = TRUE)))
  expect_equal(sum(sizes >= p * k * 8), 1, info = paste(log, collapse = "\n"))
  expect_identical(rownames(pca$rotation), colnames(x))
  expect_identical(colnames(pca$rotation), paste0("PC", 1:3))
  ref <- prcomp(x, rank. = 3)
  expect_equal(pca$sdev, ref$sdev[1:3], tolerance = 1e-8)
})

test_that("summary() gives each PC's share of the total variance, as prcomp() over all components", {
  set.seed(21)
  x <- matrix(rnorm(200 * 30), 200, 30) + matrix(rnorm(200 * 3), 200, 3) %*% matrix(rnorm(3 * 30), 3, 30)
  full <- summary(prcomp(x, scale. = TRUE))$importance
  s <- summary(suppressMessages(fmalloc_pca(x, k = 5, scale = TRUE)))
  expect_s3_class(s, "summary.prcomp")
  # sdev to the iteration's tolerance; the proportions are rounded to 5 digits as prcomp's
  expect_equal(unname(s$importance), unname(full[, 1:5]), tolerance = 1e-5)
  expect_output(print(s), "Proportion of Variance")
  # missing calls, mean-imputed, and the plink2 scaling: the total is that of
  # the standardized, imputed matrix
  g <- matrix(rbinom(150 * 40, 2, 0.3), 150, 40)
  g[sample(length(g), 120)] <- NA
  G <- fmalloc_bed(g)
  p <- suppressMessages(fmalloc_pca(G, k = 4, scale = "binomial"))
  mu <- colMeans(g, na.rm = TRUE)
  z <- sweep(sweep(g, 2, mu), 2, sqrt(mu * (1 - mu / 2)), "/")
  z[is.na(z)] <- 0
  expect_equal(p$total_var, sum(z^2) / (nrow(z) - 1), tolerance = 1e-12)
  expect_equal(unname(summary(p)$importance[2, ]), round(p$sdev^2 / sum(prcomp(z, center = FALSE)$sdev^2), 5),
               tolerance = 1e-5)
  # without centring the total is the sum of squares, as prcomp(center = FALSE)
  q <- fmalloc_pca(x, k = 2, center = FALSE)
  expect_equal(q$total_var, sum(x^2) / (nrow(x) - 1), tolerance = 1e-12)
})

test_that("a matrix that is zero once centred (one row) is refused in the user's terms", {
  X <- matrix(rnorm(30), 1, 30)
  e <- tryCatch(fmalloc_pca(X, k = 1), error = identity)
  expect_s3_class(e, "fm_error_edegenerate")
  expect_false(grepl("fm_stats_rpca", conditionMessage(e), fixed = TRUE))
  expect_match(conditionMessage(e), "^the 1 x 30 matrix, centred and scaled as asked, is numerically zero")
  expect_match(conditionMessage(e), "(one row centred at its mean is zero; do not centre, or give more rows)", fixed = TRUE)
})

test_that("predict() projects new rows as the fit did: centred, scaled, missing values at the fitted mean", {
  set.seed(23)
  g <- matrix(rbinom(120 * 30, 2, 0.3), 120, 30, dimnames = list(paste0("s", 1:120), paste0("v", 1:30)))
  g[, 7] <- 1 # constant: dropped
  g[sample(length(g), 200)] <- NA
  G <- fmalloc_bed(g)
  p <- suppressMessages(fmalloc_pca(G, k = 3, scale = "binomial", drop_constant = TRUE))
  # the fitting rows give the fitted scores (R's predict.prcomp gave NA for any row with a missing call)
  expect_equal(predict(p, G), p$x, tolerance = 1e-8)
  expect_identical(predict(p), p$x)
  expect_equal(predict(p, g), p$x, tolerance = 1e-8)
  expect_equal(predict(p, g[, p$kept]), p$x, tolerance = 1e-8)
  # new rows by hand: standardize with the fit's centre and scale, missing at 0
  new <- g[1:5, ]
  new[1, 3] <- NA
  z <- sweep(sweep(unname(new[, p$kept]), 2, p$center), 2, p$scale, "/")
  z[is.na(z)] <- 0
  expect_equal(unname(predict(p, fmalloc_bed(new))), z %*% unname(p$rotation), tolerance = 1e-10)
  # without centring, a missing value is the fitted column mean
  x <- matrix(rnorm(80 * 6), 80, 6)
  x[3, 2] <- NA
  q <- suppressMessages(fmalloc_pca(x, k = 2, center = FALSE))
  expect_equal(predict(q, x), q$x, tolerance = 1e-8)
  expect_error(predict(q, x[, 1:4]), class = "fm_error_emismatch", regexp = "newdata has 4 columns")
  expect_error(predict(p, suppressMessages(fmalloc_standardize(G))), class = "fm_error_earg")
  expect_error(predict(p, G, type = "x"), class = "fm_error_earg")
})

test_that("k beyond the shape is refused before the statistics pass (no imputation message first)", {
  g <- matrix(c(0, 1, NA, 2, 1, 0), 3, 2)
  msgs <- character()
  e <- tryCatch(withCallingHandlers(fmalloc_pca(fmalloc_bed(g), k = 5), message = function(m) {
    msgs <<- c(msgs, conditionMessage(m))
    invokeRestart("muffleMessage")
  }), error = identity)
  expect_length(msgs, 0)
  expect_s3_class(e, "fm_error_earg")
  expect_match(conditionMessage(e), "k = 5 must be between 1 and min\\(n, p\\) = 2")
  expect_match(deparse(conditionCall(e))[1], "^fmalloc_pca\\(")
})
