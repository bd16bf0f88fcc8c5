# GGUF tensor views on mirai daemons (Rfmalloc's option fmalloc.parallel =
# "mirai"): gguf_open() registers the file with Rfmalloc, daemons open it
# by path and make the view of the tensor at the same byte offset
# (.gguf_parallel_view); products, column variances and a PCA are the same
# bit for bit for 0 to 3 daemons. The blocks are column selections, which
# the GGML backend declines: they decode in double, as the reference path
# does, so they agree with the unblocked reference path to rounding (GGML's
# own product quantizes the other operand to 8 bits first).
skip_if_not_installed("mirai")


test_that("products, column variances and PCA of GGUF views: 1, 2 and 3 daemons give the serial result bit for bit", {
  path <- quant_zoo()
  g <- gguf_open(path)
  views <- lapply(c(q4k = "w.Q4_K", q80 = "w.Q8_0", f16 = "w.F16"), function(n) gguf_tensor(g, n))
  set.seed(6)
  B <- matrix(rnorm(256 * 2), 256, 2)
  C <- matrix(rnorm(128 * 3), 128, 3)
  ops <- function(W) {
    list(xb = W %*% B, xtc = crossprod(W, C), vars = Rfmalloc::fmalloc_colVars(W),
         pca = Rfmalloc::fmalloc_pca(W, k = 2, seed = 1, tol = 1e-9))
  }
  withr::local_options(fmalloc.parallel_block = 48, fmalloc.progress = FALSE)
  unblocked <- Rfmalloc::fmalloc_with_backend("reference", lapply(views, ops))
  withr::local_options(fmalloc.parallel = "mirai")
  local_daemons(0)
  serial <- lapply(views, ops)
  expect_match(Rfmalloc::fmalloc_last_backend(), "^mirai")
  for (n in 1:3) {
    local_daemons(n)
    expect_identical(lapply(views, ops), serial, label = sprintf("%d daemons", n))
    opened <- unlist(mirai::everywhere(ls(get(".fm_daemon_files", asNamespace("Rfmalloc"))))[])
    expect_true(length(opened) >= 1L && all(opened == normalizePath(path)))
  }
  for (v in names(views)) {
    # sums of 256 (X B) or 128 (X'C) products regrouped by block: 1e-12 of the values' scale
    expect_equal(serial[[v]]$xb, unblocked[[v]]$xb, tolerance = 1e-12, label = v)
    expect_equal(serial[[v]]$xtc, unblocked[[v]]$xtc, tolerance = 1e-12, label = v)
    expect_identical(serial[[v]]$vars, unblocked[[v]]$vars, label = v)
    expect_equal(serial[[v]]$pca$sdev, unblocked[[v]]$pca$sdev, tolerance = 1e-8, label = v)
  }
})
