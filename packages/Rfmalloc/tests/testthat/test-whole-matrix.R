# Base R's whole-matrix functions on codec matrices and transposed views
# (R/whole_matrix.R), and the argument errors of their neighbours.

ceu <- function() fmalloc_bed_open(sub("\\.bed$", "", fixture_path("genotypes", "ceu_exon", "ceu_exon_bi.bed")))

test_that("anyNA, mean and the Summary group equal base R on the real CEU exome genotypes", {
  C <- ceu() # 90 x 1346, 8,603 missing calls
  D <- as.matrix(C)
  expect_equal(sum(is.na(D)), 8603)
  for (X in list(C, t(C))) {
    expect_true(anyNA(X))
    expect_identical(mean(X), NA_real_)
    expect_equal(mean(X, na.rm = TRUE), mean(D, na.rm = TRUE))
    expect_identical(sum(X), NA_real_)
    expect_equal(sum(X, na.rm = TRUE), sum(D, na.rm = TRUE))
    expect_identical(range(X), c(NA_real_, NA_real_))
    expect_identical(range(X, na.rm = TRUE), c(0, 2))
    expect_identical(max(X, 3, na.rm = TRUE), 3)
    expect_identical(min(X, na.rm = TRUE), 0)
    expect_identical(any(X, na.rm = TRUE), TRUE)
    expect_identical(all(X, na.rm = TRUE), FALSE)
    expect_identical(prod(X, na.rm = TRUE), 0)
  }
  # imputed by the view: nothing decodes as missing, and the summaries are those of the decoded values
  S <- suppressMessages(fmalloc_standardize(C))
  DS <- as.matrix(S)
  expect_false(anyNA(S))
  expect_equal(mean(S), mean(DS))
  expect_equal(range(S), range(DS))
  # the block path (a transform), a budget of two columns at a time
  withr::defer(fmalloc_panel_budget(0))
  fmalloc_panel_budget(8 * nrow(C) * 2)
  expect_equal(range(S), range(DS))
  expect_equal(range(fmalloc_select(C, 1:9), na.rm = TRUE), range(D[, 1:9], na.rm = TRUE))
})

test_that("the summaries on the 1000 Genomes matrix (no missing call) need no decode and match base R", {
  G <- fmalloc_bed_open(sub("\\.bed$", "", fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed")))
  V <- fmalloc_select(G, 1:2000)
  D <- as.matrix(V)
  expect_false(anyNA(G))
  expect_equal(mean(V), mean(D))
  expect_identical(sum(V), sum(D))
  expect_identical(range(G), c(0, 2))
  expect_identical(max(t(G)), 2)
  expect_silent(mean(G))
})

test_that("alp and external codecs: NaN and NA count as missing, as for base R", {
  m <- matrix(c(1.5, NA, -3, 4, NaN, 6, 7, 8, 9), 3)
  for (X in list(fmalloc_alp(m), .test_ext_matrix(m))) {
    expect_true(anyNA(X))
    expect_equal(mean(X, na.rm = TRUE), mean(m, na.rm = TRUE))
    expect_true(is.na(mean(X)))
    expect_identical(range(X, na.rm = TRUE), c(-3, 9))
    expect_identical(prod(X, na.rm = TRUE), prod(m, na.rm = TRUE))
    expect_identical(all(X), NA)
  }
  B <- fmalloc_bed(matrix(NA_integer_, 4, 3))
  expect_warning(r <- min(B, na.rm = TRUE), "no non-missing arguments to min")
  expect_identical(r, Inf)
  expect_identical(mean(B, na.rm = TRUE), NaN)
})

test_that("summary arguments are checked, with classed errors naming the user's call", {
  X <- fmalloc_bed(matrix(c(0, 1, 2, NA), 2))
  e <- expect_error(sum(X, na.rm = NA), class = "fm_error_earg")
  expect_match(conditionMessage(e), "na.rm must be TRUE or FALSE")
  expect_identical(conditionCall(e), quote(sum(x, na.rm = NA)))
  expect_error(mean(X, na.rm = "yes"), "na.rm must be TRUE or FALSE", class = "fm_error_earg")
  expect_error(mean(X, trim = 0.1), "trim = 0 only", class = "fm_error_eunsupported")
})

test_that("elementwise operations are refused with a classed error naming the dense size", {
  X <- fmalloc_bed(matrix(c(0, 1, 2, NA, 2, 0), 3))
  tX <- t(X)
  for (f in list(function() X + 1, function() 1 + X, function() X == 0, function() -X, function() !X,
                 function() log(X), function() round(X), function() X + X, function() tX * 2,
                 function() X + tX, function() is.na(X), function() is.na(tX), function() exp(tX))) {
    expect_error(f(), "would be a dense 3 x 2 matrix|would be a dense 2 x 3 matrix",
                 class = "fm_error_eunsupported")
  }
  e <- expect_error(X + 1, class = "fm_error_eunsupported")
  expect_identical(conditionCall(e), quote(X + 1))
  expect_match(conditionMessage(e), "'+' of a codec matrix is not computed", fixed = TRUE)
  expect_match(conditionMessage(e), "as.matrix(x)", fixed = TRUE)
  expect_equal(as.matrix(X) + 1, matrix(c(1, 2, 3, NA, 3, 1), 3))
})

test_that("products of two codec matrices are refused without S4 ambiguity notes", {
  X <- fmalloc_bed(matrix(c(0, 1, 2, 1, 2, 0), 3))
  tX <- t(X)
  calls <- list(quote(X %*% tX), quote(tX %*% X), quote(tX %*% tX), quote(X %*% X),
                quote(crossprod(X, X)), quote(crossprod(X, tX)), quote(crossprod(tX, X)),
                quote(crossprod(tX, tX)), quote(tcrossprod(X, X)), quote(tcrossprod(X, tX)),
                quote(tcrossprod(tX, X)), quote(tcrossprod(tX, tX)))
  for (cl in calls) {
    expect_silent(e <- tryCatch(eval(cl), fm_error_eunsupported = function(e) e))
    expect_s3_class(e, "fm_error_eunsupported")
    expect_match(conditionMessage(e), "products of two codec matrices are not supported")
    expect_identical(conditionCall(e), cl)
  }
  expect_equal(tcrossprod(X), tcrossprod(as.matrix(X))) # what X %*% t(X) points to
})

test_that("a product with NULL or a non-numeric operand is a classed error for the user's call", {
  X <- fmalloc_bed(matrix(c(0, 1, 2, 1, 2, 0), 3))
  for (cl in list(quote(X %*% NULL), quote(NULL %*% X), quote(crossprod(X, list(1))),
                  quote(crossprod(NULL, X)), quote(tcrossprod(NULL, X)))) {
    e <- expect_error(eval(cl), "the other operand must be a numeric matrix or vector", class = "fm_error_earg")
    expect_identical(conditionCall(e), cl)
  }
  e <- expect_error(X %*% matrix(1, 3, 1), "non-conformable", class = "fm_error_emismatch")
  expect_identical(conditionCall(e), quote(X %*% matrix(1, 3, 1)))
  # errors inside a transposed result keep their class (no S4 "error in evaluating the argument")
  expect_error(crossprod(matrix(1, 2, 2), X), "non-conformable", class = "fm_error_emismatch")
  expect_error(t(X)[1, 9], "out of bounds", class = "fm_error_earg")
})

test_that("x[i, j, k] is refused as base R refuses it, on codec matrices and transposed views", {
  X <- fmalloc_bed(matrix(c(0, 1, 2, 1, 2, 0), 3))
  expect_error(matrix(1, 3, 2)[1:3, 1:2, 1], "incorrect number of dimensions")
  expect_error(X[1:3, 1:2, 1], "incorrect number of dimensions", class = "fm_error_earg")
  expect_error(t(X)[1:2, 1:3, 1], "incorrect number of dimensions", class = "fm_error_earg")
  expect_error(X[1, , ], "incorrect number of dimensions", class = "fm_error_earg")
  expect_equal(X[1:3, 1:2], matrix(c(0, 1, 2, 1, 2, 0), 3))
})

test_that("fmalloc_select refuses what is not a codec matrix with a classed error saying what to do", {
  X <- fmalloc_bed(matrix(c(0, 1, 2, 1, 2, 0), 3))
  expect_error(fmalloc_select(t(X), 1), "t\\(fmalloc_select\\(X, j\\)\\)", class = "fm_error_earg")
  expect_error(fmalloc_select(as.matrix(X), 1), "not a numeric matrix; a dense matrix takes x\\[, j\\]",
               class = "fm_error_earg")
})

test_that("a column view reports its own share of the payload, so bits per genotype stay true", {
  G <- fmalloc_bed_open(sub("\\.bed$", "", fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed"))) # 1126 x 25161
  V <- fmalloc_select(G, 1:1000)
  expect_identical(fmalloc_storage_bytes(G), 282 * 25161)
  expect_identical(fmalloc_storage_bytes(V), 282 * 1000)
  expect_identical(fmalloc_storage_bytes(fmalloc_select(G, c(1, 1))), 2 * 282)
  expect_identical(fmalloc_storage_bytes(fmalloc_select(G, integer(0))), 0)
  expect_lt(8 * fmalloc_storage_bytes(V) / length(V), 2.01) # 282 bytes hold 1126 samples
  expect_output(print(V), "1,126 x 1,000, 2-bit hardcalls, 275.4 KiB \\(a view of 1,000 of 25,161 stored columns\\)")
  expect_identical(summary(V)$storage_bytes, 282000)
  D <- fmalloc_dosage(matrix(0.5, 10, 4))
  expect_identical(fmalloc_storage_bytes(fmalloc_select(D, 2:3)), 20)
  A <- fmalloc_alp(matrix(as.double(1:40), 10))
  expect_equal(fmalloc_storage_bytes(fmalloc_select(A, 1)), fmalloc_storage_bytes(A) / 4)
})

test_that("summary() of a view without columns prints no NaN percentage", {
  X <- fmalloc_bed(matrix(c(0, 1, 2, 1, 2, 0), 3))
  s <- summary(fmalloc_select(X, integer(0)))
  expect_identical(s$missing_rate, NaN)
  out <- capture.output(print(s))
  expect_true("missing: 0 entries" %in% out)
  expect_false(any(grepl("NaN", out)))
})

test_that("codec matrices are read-only and not combined: classed refusals (issue 14, second new-user pass)", {
  X <- fmalloc_bed(matrix(c(0, 1, 2, NA, 2, 0), 3, 2))
  expect_error(X[1, 1] <- 0, class = "fm_error_eunsupported", regexp = "read-only")
  expect_silent(tryCatch(cbind(X, X), fm_error_eunsupported = function(e) NULL)) # no S4 ambiguity note
  expect_error(cbind(X, X), class = "fm_error_eunsupported", regexp = "cbind\\(\\) of codec matrices")
  expect_error(rbind(X, 1), class = "fm_error_eunsupported", regexp = "rbind\\(\\)")
  expect_error(cbind(1, t(X)), class = "fm_error_eunsupported")
  expect_error(as.vector(X), class = "fm_error_eunsupported", regexp = "as.vector\\(\\) of a codec matrix")
  expect_identical(as.vector(as.matrix(X)), c(0, 1, 2, NA, 2, 0))
})

test_that("dimnames<- names a codec matrix (and t(), and a column view); [[, quantile, median, unique are refused, classed", {
  g <- matrix(c(0, 1, 2, NA, 2, 0), 3, 2)
  X <- fmalloc_bed(g)
  rownames(X) <- paste0("s", 1:3)
  colnames(X) <- c("rs1", "rs2")
  expect_identical(dimnames(X), list(paste0("s", 1:3), c("rs1", "rs2")))
  expect_identical(X["s2", "rs2"], g[2, 2])
  V <- fmalloc_select(X, 2)
  colnames(V) <- "renamed"
  expect_identical(colnames(V), "renamed")
  expect_identical(colnames(X), c("rs1", "rs2")) # value semantics
  tX <- t(X)
  rownames(tX) <- c("a", "b")
  expect_identical(colnames(t(tX)), c("a", "b"))
  dimnames(X) <- NULL
  expect_null(dimnames(X))
  expect_error(rownames(X) <- c("a", "b"), class = "fm_error_earg", regexp = "of length 3 and 2")
  expect_error(X[[1, 1]], class = "fm_error_eunsupported", regexp = "use x\\[i, j\\]")
  for (f in list(quantile, median, unique)) expect_error(f(X), class = "fm_error_eunsupported", regexp = "not streamed")
  expect_error(quantile(t(X), na.rm = TRUE), class = "fm_error_eunsupported")
})
