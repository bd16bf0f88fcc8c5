# fmalloc_pca's rotation in a file-backed fmalloc matrix (issue 5): the
# mapped result equals the heap one and behaves as an ordinary matrix.
# Generated data only.

pca_data <- function() {
  set.seed(41)
  n <- 120; p <- 900
  x <- matrix(rnorm(n * 4), n, 4) %*% matrix(rnorm(4 * p), 4, p) + matrix(rnorm(n * p), n, p)
  dimnames(x) <- list(paste0("s", seq_len(n)), paste0("v", seq_len(p)))
  x
}

test_that("a mapped rotation equals the heap one (automatic scratch runtime)", {
  x <- pca_data()
  heap <- withr::with_options(list(fmalloc.pca_mapped_bytes = Inf, fmalloc.progress = FALSE),
                              fmalloc_pca(x, k = 4, tol = 1e-12))
  mapped <- withr::with_options(list(fmalloc.pca_mapped_bytes = 0, fmalloc.progress = FALSE),
                                fmalloc_pca(x, k = 4, tol = 1e-12))
  expect_false(fmalloc_is_mapped(heap$rotation))
  expect_true(fmalloc_is_mapped(mapped$rotation))
  expect_equal(mapped$sdev, heap$sdev, tolerance = 1e-12)
  expect_equal(mapped$x, heap$x, tolerance = 1e-10)
  expect_equal(mapped$rotation[, ], heap$rotation, tolerance = 1e-10)
  expect_identical(dimnames(mapped$rotation), dimnames(heap$rotation))
  expect_identical(dim(mapped$rotation), c(900L, 4L))
  # against prcomp
  ref <- prcomp(x)
  expect_equal(abs(colSums(mapped$rotation * ref$rotation[, 1:4])), rep(1, 4), tolerance = 1e-8,
               ignore_attr = TRUE)
  # arithmetic and BLAS
  expect_equal(crossprod(mapped$rotation), diag(4), tolerance = 1e-12, ignore_attr = TRUE)
  expect_equal(mapped$rotation * 2, heap$rotation * 2, tolerance = 1e-10)
  expect_equal(predict(mapped, x[1:5, ]), predict(heap, x[1:5, ]), tolerance = 1e-9)
  # value semantics: a modified copy leaves the original unchanged
  r <- mapped$rotation
  r2 <- r
  r2[1, 1] <- 99
  expect_equal(r[1, 1], heap$rotation[1, 1], tolerance = 1e-10)
  expect_equal(mapped$rotation[1, 1], heap$rotation[1, 1], tolerance = 1e-10)
  # saveRDS / readRDS (a scratch rotation is written by value)
  f <- tempfile(fileext = ".rds")
  on.exit(unlink(f), add = TRUE)
  saveRDS(mapped, f)
  back <- readRDS(f)
  expect_equal(back$rotation[, ], heap$rotation, tolerance = 1e-10)
  expect_identical(dimnames(back$rotation), dimnames(heap$rotation))
  # the scratch runtime stays alive with the rotation after garbage collection
  gc()
  expect_equal(sum(mapped$rotation^2), 4, tolerance = 1e-12)
})

test_that("a rotation in a caller's runtime, on a codec matrix with scaling", {
  set.seed(42)
  g <- matrix(rbinom(150 * 300, 2, 0.3), 150, 300)
  g[sample(length(g), 200)] <- NA
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.05, mode = "scratch")
  on.exit(cleanup_fmalloc(rt), add = TRUE)
  G <- fmalloc_bed(g, rt)
  heap <- withr::with_options(list(fmalloc.progress = FALSE),
                              suppressMessages(fmalloc_pca(G, k = 3, scale = "binomial", tol = 1e-12)))
  mapped <- withr::with_options(list(fmalloc.progress = FALSE),
                                suppressMessages(fmalloc_pca(G, k = 3, scale = "binomial", tol = 1e-12,
                                                             runtime = rt)))
  expect_true(fmalloc_is_mapped(mapped$rotation))
  expect_false(fmalloc_is_mapped(heap$rotation))
  expect_equal(mapped$sdev, heap$sdev, tolerance = 1e-12)
  expect_equal(mapped$rotation[, ], heap$rotation, tolerance = 1e-10)
  expect_equal(mapped$x, heap$x, tolerance = 1e-10)
})

test_that("bad runtime and option values are refused", {
  x <- pca_data()
  expect_error(fmalloc_pca(x, k = 2, runtime = "nope"), class = "fm_error_earg")
  expect_error(withr::with_options(list(fmalloc.pca_mapped_bytes = "x"), fmalloc_pca(x, k = 2)),
               class = "fm_error_earg")
})

test_that("on the 1000 Genomes .bed (a column index, constant columns dropped), the mapped rotation equals the heap one", {
  prefix <- sub("\\.bed$", "", fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed"))
  G <- fmalloc_bed_open(prefix)
  X <- fmalloc_select(G, seq(1, ncol(G), by = 3))
  run <- function(bytes) {
    withr::with_options(list(fmalloc.pca_mapped_bytes = bytes, fmalloc.progress = FALSE),
                        suppressMessages(fmalloc_pca(X, k = 10, scale = "binomial", tol = 1e-6,
                                                     drop_constant = TRUE)))
  }
  heap <- run(Inf)
  mapped <- run(0)
  expect_true(fmalloc_is_mapped(mapped$rotation))
  expect_equal(mapped$sdev, heap$sdev, tolerance = 1e-12)
  expect_equal(mapped$rotation[, ], heap$rotation, tolerance = 1e-10)
  expect_equal(mapped$x, heap$x, tolerance = 1e-10)
  expect_identical(dimnames(mapped$rotation), dimnames(heap$rotation))
})
