# ALP-compressed double matrices (fmalloc_alp): bit-exact round trips,
# subsets, products against dense base R and against the reference path
# (the "alp" backend switched off), statistics, PCA, printing and errors.
# All data here is generated.

alp_rt <- function(env = parent.frame()) {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.5, mode = "scratch")
  withr::defer(cleanup_fmalloc(rt), envir = env)
  rt
}

bits <- function(x) writeBin(as.vector(x), raw())

# Doubles that are not decimals: NA, NaN with payloads, infinities, -0,
# denormals, integers past 2^53, extremes, and random bit patterns.
adversarial <- function(n) {
  specials <- c(NA, NaN, Inf, -Inf, -0, 4.9e-324, -2.2e-308 / 3, 2^53 + 2, 2^60, -1e300,
                .Machine$double.xmax, 2^51, readBin(as.raw(c(0x23, 1, 0, 0, 0, 0, 0xf8, 0xff)), "double"))
  random <- readBin(as.raw(sample(0:255, 8 * n, replace = TRUE)), "double", n = n)
  x <- round(runif(n, -1000, 1000), 2)
  hit <- sample(n, n %/% 5)
  x[hit] <- c(specials, random)[sample(length(specials) + n, length(hit), replace = TRUE)]
  x
}

test_that("every double comes back bit for bit: NA, NaN, Inf, -0, denormals, random bits", {
  rt <- alp_rt()
  set.seed(11)
  x <- matrix(adversarial(2500 * 3), 2500, 3) # 2500 is not a multiple of 1024
  x[1:1024, 2] <- readBin(as.raw(sample(0:255, 8 * 1024, TRUE)), "double", n = 1024)
  x[, 3] <- rep(c(NA, -0), length.out = 2500) # a column of exceptions only
  A <- fmalloc_alp(x, rt)
  y <- as.matrix(A)
  expect_identical(bits(y), bits(x))
  expect_identical(is.na(y) & !is.nan(y), is.na(x) & !is.nan(x)) # NA stays NA, NaN stays NaN
  expect_identical(1 / y[2, 3], -Inf)                              # -0 stays -0
  expect_identical(dim(A), c(2500L, 3L))
  info <- fmalloc_alp_info(A)
  expect_gt(info$exceptions, 0)
  expect_gt(info$raw_vectors, 0) # the random-bit vector is stored raw
  expect_lte(info$bits_per_value, 64.5)
})

test_that("shapes: one row, one column, no rows, no columns, integers and logicals", {
  rt <- alp_rt()
  one_row <- matrix(c(1.5, -0, NA, 1e300, 0.1), 1, 5)
  expect_identical(bits(as.matrix(fmalloc_alp(one_row, rt))), bits(one_row))
  one_col <- matrix(c(0.25, NaN, 3), 3, 1)
  expect_identical(bits(as.matrix(fmalloc_alp(one_col, rt))), bits(one_col))
  for (m in list(matrix(0, 0, 3), matrix(0, 4, 0), matrix(0, 0, 0))) {
    A <- fmalloc_alp(m, rt)
    expect_identical(dim(A), dim(m))
    expect_identical(as.matrix(A), m)
  }
  i <- matrix(c(1L, NA, -3L, 2147483647L), 2, 2)
  expect_identical(as.matrix(fmalloc_alp(i, rt)), i * 1)
  l <- matrix(c(TRUE, NA, FALSE, TRUE), 2, 2)
  expect_identical(as.matrix(fmalloc_alp(l, rt)), l * 1)
})

test_that("decimals compress: prices with 2 decimals take about 17 bits", {
  rt <- alp_rt()
  set.seed(3)
  x <- matrix(round(runif(50000, 1, 1000), 2), 25000, 2)
  A <- fmalloc_alp(x, rt)
  expect_identical(as.matrix(A), x)
  info <- fmalloc_alp_info(A)
  expect_lt(info$bits_per_value, 20)
  expect_equal(info$bytes, length(A@storage))
  expect_equal(info$raw_vectors, 0)
  out <- capture.output(print(A))
  expect_match(out[1], "alp matrix: 25,000 x 2, ALP-compressed doubles at 1[0-9]\\.[0-9]+ bits/value")
  expect_error(fmalloc_alp_info(x), class = "fm_error_earg")
})

test_that("subsets and dimnames work as for a dense matrix", {
  rt <- alp_rt()
  set.seed(5)
  x <- matrix(round(rnorm(3000 * 6), 3), 3000, 6,
              dimnames = list(paste0("r", 1:3000), paste0("c", 1:6)))
  x[sample(length(x), 50)] <- NA
  A <- fmalloc_alp(x, rt)
  expect_identical(dimnames(A), dimnames(x))
  i <- c(3000, 1, 1024, 1025, 2048, 7)
  expect_identical(A[i, c(6, 2, 2)], x[i, c(6, 2, 2)])
  expect_identical(A[-(1:2990), "c4"], x[-(1:2990), "c4"])
  expect_identical(A[c(TRUE, FALSE), 1:2], x[c(TRUE, FALSE), 1:2])
  cells <- cbind(sample(3000, 20), sample(6, 20, TRUE))
  expect_identical(A[cells], x[cells])
  S <- fmalloc_select(A, c(5, 1))
  expect_identical(as.matrix(S), x[, c(5, 1)])
})

test_that("products match dense base R, and the alp backend matches the reference path", {
  rt <- alp_rt()
  set.seed(9)
  n <- 2600
  x <- matrix(round(runif(n * 12, -50, 50), 2), n, 12)
  x[1:40, 3] <- rnorm(40) # a vector with exceptions or raw storage
  A <- fmalloc_alp(x, rt)
  B1 <- rnorm(12)
  B10 <- matrix(rnorm(12 * 10), 12, 10)
  C <- matrix(rnorm(n * 10), n, 10)
  old <- fmalloc_panel_budget()
  withr::defer({ fmalloc_panel_budget(old); Rfmalloc:::.alp_backend(TRUE) })
  for (budget in c(256, 0)) {
    fmalloc_panel_budget(budget)
    Rfmalloc:::.alp_backend(TRUE)
    on <- list(A %*% B1, A %*% B10, crossprod(A, C), crossprod(C, A), tcrossprod(A, t(B10)))
    expect_identical(fmalloc_last_backend(), "alp")
    Rfmalloc:::.alp_backend(FALSE)
    off <- list(A %*% B1, A %*% B10, crossprod(A, C), crossprod(C, A), tcrossprod(A, t(B10)))
    expect_identical(fmalloc_last_backend(), "reference")
    dense <- list(x %*% B1, x %*% B10, crossprod(x, C), crossprod(C, x), tcrossprod(x, t(B10)))
    mag <- list(abs(x) %*% abs(B1), abs(x) %*% abs(B10), crossprod(abs(x), abs(C)),
                crossprod(abs(C), abs(x)), abs(x) %*% abs(B10))
    inner <- c(12, 12, n, n, 12)
    for (k in seq_along(on)) {
      expect_product_equal(on[[k]], off[[k]], mag[[k]], inner[k], label = paste("alp vs reference", k))
      expect_product_equal(on[[k]], dense[[k]], mag[[k]], inner[k], label = paste("alp vs base R", k))
    }
  }
  Rfmalloc:::.alp_backend(TRUE)
  expect_true("alp" %in% fmalloc_backends())
  # A column selection and a standardized view go through the backend too.
  S <- fmalloc_select(A, c(12, 1, 1, 5))
  expect_product_equal(S %*% B10[1:4, ], x[, c(12, 1, 1, 5)] %*% B10[1:4, ],
                       abs(x[, c(12, 1, 1, 5)]) %*% abs(B10[1:4, ]), 4, label = "column selection")
  Z <- fmalloc_standardize(A, scale = TRUE)
  z <- scale(x)
  expect_equal(crossprod(Z, C), crossprod(z, C), tolerance = 1e-10, ignore_attr = TRUE)
  expect_identical(fmalloc_last_backend(), "alp")
  # Missing values propagate as in base R.
  x[5, 2] <- NA
  A2 <- fmalloc_alp(x, rt)
  expect_true(is.na((A2 %*% B1)[5]))
  expect_identical(is.na(crossprod(A2, C)), is.na(crossprod(x, C)))
})

test_that("column statistics and PCA match base R", {
  rt <- alp_rt()
  set.seed(21)
  n <- 3000
  f <- matrix(rnorm(n * 3), n, 3) %*% matrix(rnorm(3 * 15), 3, 15)
  x <- round(f + matrix(rnorm(n * 15, sd = 0.3), n, 15), 3)
  xm <- x
  xm[sample(length(xm), 40)] <- NA
  A <- fmalloc_alp(xm, rt)
  expect_equal(fmalloc_colVars(A), apply(xm, 2, var, na.rm = TRUE), tolerance = 1e-13)
  expect_equal(fmalloc_colMeans(A), colMeans(xm, na.rm = TRUE), tolerance = 1e-13)
  expect_equal(fmalloc_colVars(A, na.rm = FALSE), apply(xm, 2, var))
  P <- fmalloc_pca(fmalloc_alp(x, rt), k = 3, tol = 1e-12)
  ref <- prcomp(x)
  expect_equal(P$sdev, ref$sdev[1:3], tolerance = 1e-8)
  expect_gt(min(abs(diag(cor(P$x, ref$x[, 1:3])))), 0.99999)
})

test_that("a damaged blob is an error naming the byte, never a crash", {
  rt <- alp_rt()
  x <- matrix(round(runif(300), 2), 150, 2)
  A <- fmalloc_alp(x, rt)
  B <- A
  s <- B@storage[]
  s[5] <- as.raw(7) # the version
  B@storage <- s
  expect_error(as.matrix(B), "byte 4: version 1 expected", class = "fm_error_eformat")
  expect_error(B %*% c(1, 1), class = "fm_error_eformat")
  expect_error(fmalloc_colVars(B), class = "fm_error_eformat")
  C <- A
  C@storage <- A@storage[1:100]
  expect_error(as.matrix(C), class = "fm_error_earg")
  expect_identical(as.matrix(A), x) # the original is untouched
  expect_error(fmalloc_alp("a", rt), class = "fm_error_earg")
  expect_error(fmalloc_alp(matrix(1, 2, 2), rt, dimnames = list(c("a", "b", "c"), NULL)),
               class = "fm_error_emismatch")
})

test_that("the structure of a blob is checked, its digits are not (no checksum)", {
  rt <- alp_rt()
  x <- matrix(round(runif(300), 2), 150, 2)
  A <- fmalloc_alp(x, rt)
  s <- A@storage[]
  # layout (docs/formats/alp.md): 48-byte header, offsets of 2 columns
  # (bytes 48..71), column 0's one vector header at byte 72, its digits at 96
  expect_identical(readBin(s[49:56], "integer", size = 8), 72L)
  B <- A
  d <- s
  d[72 + 1 + 1] <- as.raw(19) # the exponent e of column 0's vector (at most 18)
  B@storage <- d
  expect_error(as.matrix(B), "byte 73: exponent at most 18 expected", class = "fm_error_eformat")
  d <- s
  d[72 + 1 + 1] <- as.raw(as.integer(s[72 + 1 + 1]) - 1L) # e one lower: still in range
  if (as.integer(s[72 + 2 + 1]) <= as.integer(d[72 + 1 + 1])) { # f <= e still holds
    B@storage <- d
    expect_false(isTRUE(all.equal(as.matrix(B)[, 1], x[, 1]))) # silently other values
  }
  d <- s
  d[96 + 1] <- xor(s[96 + 1], as.raw(0xff)) # packed digits of rows 1 and 2
  B@storage <- d
  got <- as.matrix(B) # no error: digits carry no checksum
  expect_false(identical(got[1:2, 1], x[1:2, 1]))
  expect_identical(got[3:150, 1], x[3:150, 1])
  expect_identical(got[, 2], x[, 2])
})

test_that("an alp matrix survives serialization", {
  rt <- alp_rt()
  x <- matrix(c(1.25, NA, -0, 3e-310), 2, 2)
  A <- fmalloc_alp(x, rt)
  A2 <- unserialize(serialize(A, NULL))
  expect_identical(bits(as.matrix(A2)), bits(x))
})
