# DelayedArray interop (fmalloc_as_DelayedArray, the fmalloc_seed class):
# the seed contract (dim, dimnames, extract_array, type, is_sparse) over every
# kind of Rfmalloc matrix, values against as.matrix() for random blocks, and
# DelayedArray::blockApply() column sums against ours with a small block
# size, on the 1000 Genomes .bed fixture and on generated data.

skip_if_no_delayedarray <- function() {
  if (!requireNamespace("DelayedArray", quietly = TRUE)) {
    testthat::skip("DelayedArray is not installed (Bioconductor; Debian package r-bioc-delayedarray)")
  }
}

# A small auto block size for the calling test, restored when it ends.
small_blocks <- function(bytes, env = parent.frame()) {
  old <- DelayedArray::getAutoBlockSize()
  suppressMessages(DelayedArray::setAutoBlockSize(bytes))
  withr::defer(suppressMessages(DelayedArray::setAutoBlockSize(old)), envir = env)
}

# Column sums block by block: full-column blocks of the auto block size.
block_colsums <- function(D, na.rm = FALSE) {
  unlist(DelayedArray::blockApply(D, colSums, na.rm = na.rm, grid = DelayedArray::colAutoGrid(D)))
}

# Every kind of matrix, generated, with names: .bed hardcalls, dosages, ALP
# doubles, a dense mapped matrix (double and integer), a column selection
# and an external-codec matrix (the kind Rgguf's tensor views are).
delayed_mats <- function(rt) {
  set.seed(14)
  n <- 37
  m <- 11
  dn <- list(sprintf("s%d", seq_len(n)), sprintf("v%d", seq_len(m)))
  g <- matrix(sample(c(0, 1, 2, NA), n * m, TRUE, prob = c(.4, .3, .2, .1)), n, m, dimnames = dn)
  d <- matrix(runif(n * m, 0, 2), n, m, dimnames = dn)
  d[sample(n * m, 9)] <- NA
  a <- matrix(round(rnorm(n * m), 3), n, m)
  dense <- create_fmalloc_matrix("double", n, m, rt, dimnames = dn)
  dense[] <- rnorm(n * m)
  int <- create_fmalloc_matrix("integer", n, m, rt)
  int[] <- sample(-50:50, n * m, TRUE)
  X <- fmalloc_bed(g, rt)
  list(bed = X, dosage = fmalloc_dosage(d, rt), alp = fmalloc_alp(a, rt),
       dense = dense, integer = int, select = fmalloc_select(X, c(9, 2, 2, 5)),
       ext = Rfmalloc:::.test_ext_matrix(a))
}

test_that("every Rfmalloc matrix is a DelayedMatrix with its dim, dimnames, type and values", {
  skip_if_no_delayedarray()
  rt <- fm_runtime(mode = "scratch")
  mats <- delayed_mats(rt)
  set.seed(3)
  for (k in names(mats)) {
    x <- mats[[k]]
    full <- as.matrix(x)
    D <- fmalloc_as_DelayedArray(x)
    expect_s4_class(D, "DelayedMatrix")
    expect_s4_class(DelayedArray::seed(D), "fmalloc_seed")
    expect_identical(dim(D), dim(x), info = k)
    expect_identical(dimnames(D), dimnames(full), info = k) # NULL when x has no names
    if (k %in% c("bed", "dosage", "dense")) expect_identical(dimnames(D), dimnames(x), info = k)
    expect_identical(DelayedArray::type(D), if (k == "integer") "integer" else "double", info = k)
    expect_false(DelayedArray::is_sparse(DelayedArray::seed(D)))
    expect_identical(as.matrix(D), full, info = k)
    for (r in 1:5) {
      i <- sample(nrow(x), sample(1:6, 1), replace = TRUE)
      j <- sample(ncol(x), sample(1:4, 1))
      block <- DelayedArray::extract_array(DelayedArray::seed(D), list(i, j))
      expect_identical(block, unname(full[i, j, drop = FALSE]), info = k)
      expect_identical(DelayedArray::extract_array(DelayedArray::seed(D), list(NULL, j)),
                       unname(full[, j, drop = FALSE]), info = k)
      expect_identical(DelayedArray::extract_array(DelayedArray::seed(D), list(i, NULL)),
                       unname(full[i, , drop = FALSE]), info = k)
      expect_identical(as.matrix(D[i, j, drop = FALSE]), full[i, j, drop = FALSE], info = k)
    }
    empty <- DelayedArray::extract_array(DelayedArray::seed(D), list(integer(0), NULL))
    expect_identical(dim(empty), c(0L, ncol(x)))
    expect_identical(typeof(empty), DelayedArray::type(D))
  }
})

test_that("blockApply column sums over small blocks equal colSums of the codec matrix", {
  skip_if_no_delayedarray()
  rt <- fm_runtime(mode = "scratch")
  mats <- delayed_mats(rt)
  small_blocks(8 * 37 * 2) # two full columns per block
  for (k in c("bed", "dosage", "alp", "select", "ext", "dense")) {
    x <- mats[[k]]
    D <- fmalloc_as_DelayedArray(x)
    grid <- DelayedArray::colAutoGrid(D)
    expect_gt(length(grid), 1)
    expect_equal(unname(block_colsums(D, na.rm = TRUE)), unname(colSums(x, na.rm = TRUE)), info = k)
    expect_equal(unname(block_colsums(D)), unname(colSums(x)), info = k)
  }
  # DelayedArray's own colSums() over default (not column) blocks
  X <- mats$bed
  expect_equal(DelayedArray::colSums(fmalloc_as_DelayedArray(X), na.rm = TRUE),
               colSums(X, na.rm = TRUE))
})

test_that("blockApply over the 1000 Genomes .bed gives our column sums", {
  skip_if_no_delayedarray()
  prefix <- sub("\\.bed$", "", fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed"))
  G <- fmalloc_bed_open(prefix)
  D <- fmalloc_as_DelayedArray(G)
  expect_identical(dim(D), c(1126L, 25161L))
  expect_identical(dimnames(D), dimnames(G))
  small_blocks(8e6) # about 890 variants (8 MB of doubles) per block
  sums <- block_colsums(D, na.rm = TRUE)
  expect_length(sums, ncol(G))
  expect_equal(unname(sums), unname(colSums(G, na.rm = TRUE)))
  expect_identical(as.matrix(D[1:4, c(5, 25161)]), G[1:4, c(5, 25161), drop = FALSE])
})

test_that("a block reads only its cells, within a small panel budget", {
  skip_if_no_delayedarray()
  prefix <- sub("\\.bed$", "", fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed"))
  G <- fmalloc_bed_open(prefix)
  old <- fmalloc_panel_budget()
  withr::defer(fmalloc_panel_budget(old))
  fmalloc_panel_budget(64 * 1024)
  seed <- DelayedArray::seed(fmalloc_as_DelayedArray(G))
  # a 3 x 4 block of a 1126 x 25161 matrix: the gather decodes only these
  # columns' requested rows, a bounded panel at a time
  block <- DelayedArray::extract_array(seed, list(c(1126L, 1L, 500L), c(25161L, 7L, 7L, 12000L)))
  expect_identical(dim(block), c(3L, 4L))
  expect_identical(block, unname(G[c(1126, 1, 500), c(25161, 7, 7, 12000)]))
  expect_true(all(block %in% c(0, 1, 2, NA)))
})

test_that("DelayedArray(X) of a codec matrix works directly; bad input is refused", {
  skip_if_no_delayedarray()
  rt <- fm_runtime(mode = "scratch")
  g <- matrix(c(0, 1, 2, NA, 2, 1), 3, 2)
  X <- fmalloc_bed(g, rt)
  fmalloc_as_DelayedArray(X) # DelayedArray's methods are registered by now
  D <- DelayedArray::DelayedArray(X)
  expect_s4_class(D, "DelayedMatrix")
  expect_identical(unname(as.matrix(D)), g)
  expect_identical(DelayedArray::type(X), "double")
  expect_error(fmalloc_as_DelayedArray(1:3), class = "fm_error_earg")
  expect_error(fmalloc_as_DelayedArray(matrix("a")), class = "fm_error_earg")
  expect_error(DelayedArray::extract_array(fmalloc_seed(X), list(1L)), class = "fm_error_earg")
})

test_that("without DelayedArray, fmalloc_as_DelayedArray() says what to install", {
  # a child session whose DelayedArray lookup answers "not installed"
  res <- run_r(c(
    "ns <- asNamespace('Rfmalloc')",
    "unlockBinding('.has_delayed', ns)",
    "assign('.has_delayed', function() FALSE, envir = ns)",
    "result <- tryCatch(fmalloc_as_DelayedArray(matrix(1)),",
    "  error = function(e) list(class = class(e), message = conditionMessage(e)))",
    "result$loaded <- 'DelayedArray' %in% loadedNamespaces()"
  ))
  expect_true("fm_error_eunsupported" %in% res$class)
  expect_match(res$message, "r-bioc-delayedarray", fixed = TRUE)
  expect_false(res$loaded) # loading Rfmalloc does not load DelayedArray
})
