test_that("the reference path is always listed last", {
  b <- fmalloc_backends()
  expect_identical(b[length(b)], "reference")
})

test_that("a backend that declines everything and one that accepts only some shapes match the reference", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit({
    fmalloc_test_backend("decline_all", FALSE)
    fmalloc_test_backend("xb_k1", FALSE)
    cleanup_fmalloc(rt)
  })
  set.seed(7)
  g <- matrix(sample(0:2, 61 * 19, replace = TRUE), 61, 19)
  X <- fmalloc_standardize(fmalloc_bed(g, rt), scale = TRUE)
  B1 <- matrix(rnorm(19), 19, 1)
  B3 <- matrix(rnorm(19 * 3), 19, 3)
  C <- matrix(rnorm(61 * 2), 61, 2)
  ref <- list(X %*% B1, X %*% B3, crossprod(X, C))
  expect_identical(fmalloc_last_backend(), "reference")

  fmalloc_test_backend("decline_all", TRUE)
  expect_true("decline_all" %in% fmalloc_backends())
  got <- list(X %*% B1, X %*% B3, crossprod(X, C))
  expect_identical(got, ref)
  expect_identical(fmalloc_last_backend(), "reference")

  fmalloc_test_backend("xb_k1", TRUE)
  expect_equal(X %*% B1, ref[[1]], tolerance = 1e-12)
  expect_identical(fmalloc_last_backend(), "xb_k1")
  expect_identical(X %*% B3, ref[[2]])
  expect_identical(fmalloc_last_backend(), "reference")
})
