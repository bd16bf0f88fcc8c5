# External codecs (codec "ext"): a matrix whose bytes another package decodes.
# The test codec stores a double matrix row by row (the layout of a GGML
# tensor); every codec-matrix operation must equal base R on the same matrix.

test_that("an external-codec matrix decodes, subsets and multiplies like base R", {
  set.seed(11)
  m <- matrix(rnorm(13 * 37), 13, 37)
  m[5, 7] <- NA
  X <- .test_ext_matrix(m)
  expect_s4_class(X, "fmalloc_codec_matrix")
  expect_identical(dim(X), c(13L, 37L))
  old <- fmalloc_panel_budget()
  on.exit(fmalloc_panel_budget(old), add = TRUE)
  for (budget in c(8, 8 * 5, 8 * 13 * 3, 0)) {
    fmalloc_panel_budget(budget)
    expect_identical(as.matrix(X), m)
    expect_identical(X[2:6, c(9, 3, 3, 36)], m[2:6, c(9, 3, 3, 36)])
    expect_identical(X[cbind(c(5, 1), c(7, 37))], m[cbind(c(5, 1), c(7, 37))])
    expect_identical(as.matrix(fmalloc_select(X, c(37, 1, 2, 3))), m[, c(37, 1, 2, 3)])
  }
  fmalloc_panel_budget(8 * 13 * 2)
  b <- matrix(rnorm(37 * 3), 37, 3)
  m2 <- m
  m2[5, 7] <- 0.5
  X2 <- .test_ext_matrix(m2)
  expect_equal(X2 %*% b, m2 %*% b, tolerance = 1e-12)
  expect_identical(fmalloc_last_backend(), "reference")
  cc <- matrix(rnorm(13 * 2), 13, 2)
  expect_equal(crossprod(X2, cc), crossprod(m2, cc), tolerance = 1e-12)
  expect_equal(crossprod(X2), crossprod(m2), tolerance = 1e-12)
  expect_equal(tcrossprod(X2), tcrossprod(m2), tolerance = 1e-12)
  expect_equal(t(cc) %*% X2, t(cc) %*% m2, tolerance = 1e-12)
  # NA propagates through the product, as base %*% does
  y <- X %*% b
  expect_true(all(is.na(y[5, ])))
  expect_equal(y[-5, ], (m %*% b)[-5, ], tolerance = 1e-12)
  expect_output(print(X), "test rowmajor f64")
})

test_that("a backend registered through the C callable takes what it supports and declines the rest", {
  on.exit(.test_ext_backend(FALSE), add = TRUE)
  set.seed(12)
  m <- matrix(rnorm(9 * 20), 9, 20)
  X <- .test_ext_matrix(m)
  b <- matrix(rnorm(20 * 2), 20, 2)
  ref <- X %*% b
  expect_identical(fmalloc_last_backend(), "reference")
  .test_ext_backend(TRUE)
  expect_true("ext_rowmajor" %in% fmalloc_backends())
  expect_equal(X %*% b, ref, tolerance = 1e-12)
  expect_identical(fmalloc_last_backend(), "ext_rowmajor")
  # a column subset, a transposed product: declined, computed by the reference path
  expect_equal(fmalloc_select(X, 20:1) %*% b[20:1, ], ref, tolerance = 1e-12)
  expect_identical(fmalloc_last_backend(), "reference")
  cc <- matrix(rnorm(9), 9, 1)
  expect_equal(crossprod(X, cc), crossprod(m, cc), tolerance = 1e-12)
  expect_identical(fmalloc_last_backend(), "reference")
  # registering the same name twice is an error, not a second entry
  expect_error(.test_ext_backend(TRUE), NA)
  expect_identical(sum(fmalloc_backends() == "ext_rowmajor"), 1L)
  .test_ext_backend(FALSE)
  expect_false("ext_rowmajor" %in% fmalloc_backends())
})

test_that("an external-codec matrix after saveRDS() raises fm_error_eclosed", {
  X <- .test_ext_matrix(matrix(1:6, 2, 3))
  f <- tempfile(fileext = ".rds")
  on.exit(unlink(f))
  saveRDS(X, f)
  Y <- readRDS(f)
  expect_error(as.matrix(Y), class = "fm_error_eclosed")
  expect_error(Y %*% 1:3, class = "fm_error_eclosed")
  expect_identical(as.matrix(X), matrix(as.double(1:6), 2, 3))
})

test_that("a released codec (its package unloaded) makes its matrices raise fm_error_eclosed", {
  X <- .test_ext_matrix(matrix(1:6, 2, 3))
  Y <- .test_ext_matrix(matrix(1:4, 2, 2))
  expect_identical(as.matrix(X), matrix(as.double(1:6), 2, 3))
  expect_gte(.Call(Rfmalloc:::C_fmr_test_ext_release), 2L)
  expect_error(as.matrix(X), class = "fm_error_eclosed")
  expect_error(Y %*% 1:2, class = "fm_error_eclosed")
  # a new matrix over the same codec works again
  Z <- .test_ext_matrix(matrix(1:4, 2, 2))
  expect_identical(as.matrix(Z), matrix(as.double(1:4), 2, 2))
})
