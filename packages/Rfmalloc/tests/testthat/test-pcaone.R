test_that("pcaone consumes a 2e6 x 40 mapped matrix without copying it onto the R heap", {
  skip_if_not_installed("pcaone")
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  m <- 2e6L
  n <- 40L
  G <- create_fmalloc_matrix("double", nrow = m, ncol = n, runtime = rt)
  set.seed(1)
  for (j in seq_len(n)) G[, j] <- rnorm(m)
  expect_true(fmalloc_is_mapped(G))

  invisible(gc(reset = TRUE))
  base_mapped <- gc()["Vcells", "used"] * 8
  fit <- pcaone::pcaone(G, k = 5)
  peak_mapped <- gc()["Vcells", "max used"] * 8 - base_mapped
  result <- as.numeric(utils::object.size(fit))
  sv_mapped <- fit$d
  rm(fit)
  heap <- matrix(G[], m, n)
  invisible(gc(reset = TRUE))
  sv_heap <- pcaone::pcaone(heap, k = 5)$d
  peak_heap <- gc()["Vcells", "max used"] * 8
  payload <- as.numeric(m) * n * 8
  # Beyond the result pcaone returns (u alone is m x k doubles, 12.5% of the
  # payload here), the mapped run's heap peak stays under 5% of the payload;
  # the heap run holds the payload itself.
  expect_lt(peak_mapped - result, 0.05 * payload)
  expect_gt(peak_heap, payload)
  expect_identical(sv_mapped, sv_heap)
})
