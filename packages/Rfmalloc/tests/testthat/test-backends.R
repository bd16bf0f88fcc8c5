test_that("the reference path is always listed last", {
  b <- fmalloc_backends()
  expect_identical(b[length(b)], "reference")
})

test_that("a backend that declines everything and one that accepts only some shapes match the reference", {
  on.exit({
    .test_backend("decline_all", FALSE)
    .test_backend("xb_k1", FALSE)
  })
  set.seed(7)
  # an external-codec matrix, which no built-in backend serves
  X <- .test_ext_matrix(matrix(rnorm(61 * 19), 61, 19))
  B1 <- matrix(rnorm(19), 19, 1)
  B3 <- matrix(rnorm(19 * 3), 19, 3)
  C <- matrix(rnorm(61 * 2), 61, 2)
  ref <- list(X %*% B1, X %*% B3, crossprod(X, C))
  expect_identical(fmalloc_last_backend(), "reference")

  .test_backend("decline_all", TRUE)
  expect_true("decline_all" %in% fmalloc_backends())
  got <- list(X %*% B1, X %*% B3, crossprod(X, C))
  expect_identical(got, ref)
  expect_identical(fmalloc_last_backend(), "reference")

  .test_backend("xb_k1", TRUE)
  expect_equal(X %*% B1, ref[[1]], tolerance = 1e-12)
  expect_identical(fmalloc_last_backend(), "xb_k1")
  expect_identical(X %*% B3, ref[[2]])
  expect_identical(fmalloc_last_backend(), "reference")
})

test_that("the fused backend is registered first", {
  expect_identical(fmalloc_backends()[1], "fused")
  info <- fmalloc_backend_info()
  expect_identical(info$backends, fmalloc_backends())
  expect_true(info$fused_isa %in% c("avx512", "avx2", "portable"))
  expect_identical(info$threads, fmalloc_threads())
})

test_that("FM_ISA (make test ISA=...) limits the kernels' instruction set", {
  levels <- c("portable", "avx2", "avx512")
  env <- Sys.getenv("FM_ISA")
  if (!env %in% levels) skip(sprintf("FM_ISA is '%s': no limit to check", env))
  used <- fmalloc_backend_info()$fused_isa
  expect_lte(match(used, levels), match(env, levels))
  if (env == "portable") expect_identical(used, "portable")
  # The test hook cannot raise the level above the limit.
  on.exit(.test_fused_isa("auto"))
  expect_identical(.test_fused_isa("avx512"), used)
})

test_that("option fmalloc.backend forces one backend, the reference path, or raises", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit({
    options(fmalloc.backend = NULL)
    .test_backend("decline_all", FALSE)
    .test_backend("xb_k1", FALSE)
    cleanup_fmalloc(rt)
  })
  set.seed(8)
  g <- matrix(sample(0:2, 45 * 13, replace = TRUE), 45, 13)
  X <- suppressMessages(fmalloc_standardize(fmalloc_bed(g, rt), scale = TRUE))
  B1 <- matrix(rnorm(13), 13, 1)
  B3 <- matrix(rnorm(13 * 3), 13, 3)
  ref1 <- fmalloc_with_backend("reference", X %*% B1)
  expect_identical(fmalloc_last_backend(), "reference")
  ref3 <- fmalloc_with_backend("reference", X %*% B3)

  .test_backend("xb_k1", TRUE)
  .test_backend("decline_all", TRUE)
  # forced on: only that backend; a decline names backend, product, k and codec
  expect_equal(fmalloc_with_backend("xb_k1", X %*% B1), ref1, tolerance = 1e-12)
  expect_identical(fmalloc_last_backend(), "xb_k1")
  e <- expect_error(fmalloc_with_backend("xb_k1", X %*% B3), class = "fm_error_eunsupported")
  expect_match(conditionMessage(e), "backend 'xb_k1' does not support X %*% B with B of 3 columns on codec bed2 (45 x 13)", fixed = TRUE)
  expect_match(conditionMessage(e), "xb_k1 only computes", fixed = TRUE) # the backend's reason
  e <- expect_error(fmalloc_with_backend("decline_all", crossprod(X, matrix(1, 45, 2))),
                    class = "fm_error_eunsupported")
  expect_match(conditionMessage(e), "crossprod(X, B) with B of 2 columns", fixed = TRUE)
  expect_error(fmalloc_with_backend("decline_all", colSums(X)), "column sums", class = "fm_error_eunsupported")
  # products inside the core (PCA) are forced too
  expect_error(fmalloc_with_backend("decline_all", suppressMessages(fmalloc_pca(fmalloc_bed(g, rt), k = 2))),
               "decline_all", class = "fm_error_eunsupported")
  # "reference" skips every backend
  expect_identical(fmalloc_with_backend("reference", X %*% B1), ref1)
  expect_identical(fmalloc_last_backend(), "reference")
  # the option itself, and its restoration (also after an error)
  options(fmalloc.backend = "xb_k1")
  expect_equal(X %*% B1, ref1, tolerance = 1e-12)
  expect_identical(fmalloc_last_backend(), "xb_k1")
  options(fmalloc.backend = NULL)
  expect_equal(X %*% B3, ref3, tolerance = 1e-12) # unforced: the first that accepts
  try(fmalloc_with_backend("decline_all", X %*% B1), silent = TRUE)
  expect_null(getOption("fmalloc.backend"))
  expect_equal(X %*% B1, ref1, tolerance = 1e-12)
  # unknown names
  e <- expect_error(fmalloc_with_backend("nope", 1), class = "fm_error_earg")
  expect_match(conditionMessage(e), "'xb_k1'", fixed = TRUE)
  options(fmalloc.backend = "nope")
  e <- expect_error(X %*% B1, class = "fm_error_earg")
  expect_match(conditionMessage(e), "option fmalloc.backend: no backend named 'nope' is registered", fixed = TRUE)
  expect_error(fmalloc_colVars(X), class = "fm_error_earg")
  options(fmalloc.backend = c("a", "b"))
  expect_error(X %*% B1, "fmalloc.backend", class = "fm_error_earg")
  options(fmalloc.backend = NULL)
  # a forced backend that is removed: products fail until the option changes
  expect_error(fmalloc_with_backend("xb_k1", {
    .test_backend("xb_k1", FALSE)
    X %*% B1
  }), "xb_k1", class = "fm_error_earg")
  expect_equal(X %*% B3, ref3, tolerance = 1e-12)
})

test_that("the fused and alp backends give their reason when they decline", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(21)
  g <- matrix(sample(0:2, 20 * 4, replace = TRUE), 20, 4)
  X <- fmalloc_bed(g, rt)
  B <- matrix(rnorm(8), 4, 2)
  B[2, 1] <- NA
  # the decline names the product, then the backend's reason after a colon
  e <- expect_error(fmalloc_with_backend("fused", X %*% B), class = "fm_error_eunsupported")
  expect_match(conditionMessage(e), paste0(
    "backend 'fused' does not support X %*% B with B of 2 columns on codec bed2 (20 x 4): ",
    "B[2, 1] is not finite"), fixed = TRUE)
  # unforced, the reference path computes it as base R does
  expect_equal(X %*% B, g %*% B, ignore_attr = TRUE)
  e <- expect_error(fmalloc_with_backend("fused", X %*% matrix(1, 4, 65)),
                    class = "fm_error_eunsupported")
  expect_match(conditionMessage(e), "B of 65 columns on codec bed2 (20 x 4): B has 65 columns, outside the 1 to 64 it takes",
               fixed = TRUE)
  e <- expect_error(fmalloc_with_backend("fused", crossprod(X, c(1, Inf, rep(0, 18)))),
                    class = "fm_error_eunsupported")
  expect_match(conditionMessage(e), ": B[2, 1] is not finite", fixed = TRUE)
  if ("alp" %in% fmalloc_backends()) {
    A <- fmalloc_alp(matrix(round(runif(40), 2), 10, 4), rt)
    e <- expect_error(fmalloc_with_backend("alp", colSums(A)), class = "fm_error_eunsupported")
    expect_match(conditionMessage(e), "backend 'alp' does not support column sums", fixed = TRUE)
    expect_match(conditionMessage(e), ": the alp backend computes X b and X' b only", fixed = TRUE)
    e <- expect_error(fmalloc_with_backend("alp", colSums(X)), class = "fm_error_eunsupported")
    expect_match(conditionMessage(e), ": the alp backend takes alp matrices only", fixed = TRUE)
  }
})

test_that("fmalloc_threads sets, queries and restores the thread count", {
  old <- fmalloc_threads()
  on.exit(fmalloc_threads(old))
  expect_true(is.integer(old) && old >= 1)
  expect_identical(fmalloc_threads(3), 3L)
  expect_identical(fmalloc_threads(), 3L)
  fmalloc_threads(0)
  default <- fmalloc_threads()
  fmalloc_threads(5)
  fmalloc_threads(NA)
  expect_identical(fmalloc_threads(), default)
  # the CPUs of the affinity mask (detectCores() counts all CPUs online)
  cpus <- parallel::mcaffinity()
  cpus <- if (is.null(cpus)) parallel::detectCores() else length(cpus)
  expect_identical(default, as.integer(min(256, max(1, cpus))))
  for (bad in list(-1, 1.5, "2", c(1, 2), Inf, 257, 1e9)) {
    expect_error(fmalloc_threads(bad), class = "fm_error_earg")
  }
})

test_that("a refused setting reports the setter's call and argument, not the option", {
  old <- c(fmalloc_threads(), fmalloc_panel_budget())
  e <- tryCatch(fmalloc_threads(-1), error = identity)
  expect_s3_class(e, "fm_error_earg")
  expect_identical(conditionCall(e), quote(fmalloc_threads(-1)))
  expect_identical(conditionMessage(e), "n must be NULL, NA or one whole number from 0 to 256, not -1")
  e <- tryCatch(fmalloc_panel_budget(-1), error = identity)
  expect_s3_class(e, "fm_error_earg")
  expect_identical(conditionCall(e), quote(fmalloc_panel_budget(-1)))
  expect_match(conditionMessage(e), "^bytes must be NULL or one whole number from 0 to .*, not -1$")
  # refused values leave the settings (and their options) as they were
  expect_identical(c(fmalloc_threads(), fmalloc_panel_budget()), old)
})

test_that("colSums and colMeans of codec matrices match base R on the decoded matrix", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(12)
  g <- matrix(sample(0:2, 37 * 9, replace = TRUE), 37, 9,
              dimnames = list(NULL, paste0("rs", 1:9)))
  g[sample(length(g), 20)] <- NA
  g[, 4] <- NA
  d <- matrix(sample(0:254, 37 * 9, replace = TRUE) / 127, 37, 9)
  d[sample(length(d), 20)] <- NA
  mats <- list(bed2 = fmalloc_bed(g, rt), dos8 = fmalloc_dosage(d, rt))
  for (nm in names(mats)) {
    X <- mats[[nm]]
    # transforms set directly (fmalloc_standardize refuses the all-missing column)
    centred <- X
    centred@transform <- list(center = seq(0.1, 0.9, by = 0.1), scale = rep(3, 9), fill = NULL)
    imputed <- X
    imputed@transform <- list(center = NULL, scale = rep(0.5, 9), fill = seq(-1, 1, length.out = 9))
    views <- list(raw = X, select = fmalloc_select(X, c(9, 1, 1, 4)), centred = centred,
                  imputed = imputed, select_centred = fmalloc_select(centred, c(4, 2)))
    for (vn in names(views)) {
      V <- views[[vn]]
      D <- as.matrix(V)
      for (na_rm in c(FALSE, TRUE)) {
        info <- paste(nm, vn, na_rm)
        expect_equal(colSums(V, na.rm = na_rm), colSums(D, na.rm = na_rm), tolerance = 1e-13, info = info)
        expect_equal(colMeans(V, na.rm = na_rm), colMeans(D, na.rm = na_rm), tolerance = 1e-13, info = info)
        expect_identical(is.na(colSums(V, na.rm = na_rm)), is.na(colSums(D, na.rm = na_rm)), info = info)
      }
    }
  }
  expect_identical(names(colSums(mats$bed2)), paste0("rs", 1:9))
  expect_true(is.na(colSums(mats$bed2)[4]) && identical(colSums(mats$bed2, na.rm = TRUE)[[4]], 0))
  expect_true(is.nan(colMeans(mats$bed2, na.rm = TRUE)[[4]]))
  expect_error(colSums(mats$bed2, dims = 2), class = "fm_error_earg")
  expect_error(colSums(mats$bed2, na.rm = NA), class = "fm_error_earg")
  expect_error(colMeans(mats$bed2, dims = 0), "dims must be 1", class = "fm_error_earg")
  expect_error(colMeans(mats$bed2, na.rm = "yes"), "na.rm must be TRUE or FALSE",
               class = "fm_error_earg")
  # empty shapes
  E <- fmalloc_bed(matrix(integer(0), 0, 3), rt)
  expect_identical(unname(colSums(E)), c(0, 0, 0))
  expect_identical(unname(colMeans(E)), c(NaN, NaN, NaN))
  # base matrices still use base colSums
  expect_identical(colSums(matrix(1:4, 2)), c(3, 7))
})

test_that("fmalloc_last_backend names what ran: products, column sums, colVars and the passes of a PCA", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.05, mode = "scratch")
  on.exit({
    options(fmalloc.backend = NULL)
    cleanup_fmalloc(rt)
  })
  set.seed(9)
  g <- matrix(rbinom(120 * 40, 2, 0.3), 120, 40)
  X <- fmalloc_bed(g, rt)
  pca <- function(X) suppressWarnings(fmalloc_pca(X, k = 2, max_iter = 3))
  expect_equal(fmalloc_with_backend("reference", colSums(X)), colSums(g), ignore_attr = TRUE)
  expect_identical(fmalloc_last_backend(), "reference")
  expect_equal(fmalloc_colVars(X), apply(g, 2, var))
  expect_identical(fmalloc_last_backend(), "colvar")
  fmalloc_with_backend("reference", pca(X))
  expect_identical(fmalloc_last_backend(), "reference")
  fmalloc_colMeans(X)
  fmalloc_with_backend("fused", pca(X))
  expect_identical(fmalloc_last_backend(), "fused")
  # a failing computation leaves the last one's name
  expect_error(fmalloc_with_backend("fused", X %*% matrix(1, 40, 65)), class = "fm_error_eunsupported")
  expect_identical(fmalloc_last_backend(), "fused")
  # ALP storage: the alp backend declines the X X' B passes (the reference
  # path computes them) and computes the final X' B
  if ("alp" %in% fmalloc_backends()) {
    A <- fmalloc_alp(matrix(round(rnorm(120 * 40), 2), 120, 40), rt)
    pca(A)
    expect_identical(fmalloc_last_backend(), "reference+alp")
    fmalloc_with_backend("reference", pca(A))
    expect_identical(fmalloc_last_backend(), "reference")
  }
})
