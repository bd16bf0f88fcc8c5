types <- list(double = list(type = "double", zero = 0, vals = c(1.5, -2, NA, Inf)),
              integer = list(type = "integer", zero = 0L, vals = c(1L, -2L, NA, 7L)),
              logical = list(type = "logical", zero = FALSE, vals = c(TRUE, FALSE, NA, TRUE)),
              raw = list(type = "raw", zero = as.raw(0), vals = as.raw(c(1, 255, 0, 7))))

test_that("all four types start at zero and hold values", {
  rt <- fm_runtime()
  for (t in types) {
    x <- create_fmalloc_vector(t$type, 4, rt)
    expect_true(fmalloc_is_mapped(x))
    expect_identical(typeof(x), typeof(t$zero))
    expect_identical(x[], rep(t$zero, 4))
    x[] <- t$vals
    expect_identical(x[], t$vals)
    expect_identical(fm_elt(x, 3), t$vals[4])
    expect_identical(fm_region(x, 1, 10), t$vals[2:4])
    expect_identical(fm_region(x, 4, 2), t$vals[0])
    expect_error(fm_elt(x, 4), class = "fm_error_earg")
    expect_error(fm_elt(x, -1), class = "fm_error_earg")
    expect_true(fmalloc_is_mapped(x)) # in-place, no copy
  }
  expect_identical(create_fmalloc_vector("numeric", 2, rt)[], c(0, 0))
  expect_error(create_fmalloc_vector("complex", 2, rt), class = "fm_error_earg")
  expect_error(create_fmalloc_vector("double", -1, rt), class = "fm_error_earg")
  expect_error(create_fmalloc_vector("double", 1.5, rt), class = "fm_error_earg")
  expect_length(create_fmalloc_vector("double", 0, rt), 0)
})

test_that("matrices carry dim and dimnames", {
  rt <- fm_runtime()
  dn <- list(paste0("r", 1:3), c("a", "b"))
  for (t in types) {
    m <- create_fmalloc_matrix(t$type, 3, 2, rt, dimnames = dn)
    expect_true(fmalloc_is_mapped(m))
    expect_identical(dim(m), c(3L, 2L))
    expect_identical(dimnames(m), dn)
    m[, "b"] <- t$vals[1:3]
    expect_identical(m["r2", "b"], t$vals[2])
    expect_identical(unname(m[, 1]), rep(t$zero, 3))
    expect_true(fmalloc_is_mapped(m))
  }
  expect_error(create_fmalloc_matrix("double", 3, 2, rt, dimnames = list("a", NULL)),
               class = "fm_error_earg")
  expect_error(create_fmalloc_matrix("double", 2^31, 2, rt), class = "fm_error_earg")
})

test_that("value semantics: copies never modify the original", {
  rt <- fm_runtime()
  x <- create_fmalloc_vector("double", 10, rt)
  x[] <- 1:10
  y <- x
  y[1] <- 0
  expect_equal(x[1], 1)
  expect_equal(y[1], 0)
  expect_true(fmalloc_is_mapped(y)) # Duplicate made a new block, not a heap copy
  expect_false(fmalloc_describe(y)$off == fmalloc_describe(x)$off)
  f <- function(z) {
    z[2] <- -5
    z
  }
  z <- f(x)
  expect_equal(x[2], 2)
  expect_equal(z[2], -5)
  m <- create_fmalloc_matrix("integer", 2, 2, rt)
  m2 <- m
  m2[1, 1] <- 5L
  expect_equal(m[1, 1], 0L)
  l <- list(a = x)
  l$a[3] <- 99
  expect_equal(x[3], 3)
})

test_that("fresh unnamed vectors are written in place", {
  rt <- fm_runtime()
  x <- create_fmalloc_vector("double", 1000, rt)
  off <- fmalloc_describe(x)$off
  x[] <- seq_len(1000) * 0.5
  expect_equal(fmalloc_describe(x)$off, off) # no copy was made
  x[10] <- -1
  expect_equal(fmalloc_describe(x)$off, off)
  expect_equal(x[c(1, 10, 1000)], c(0.5, -1, 500))
  m <- create_fmalloc_matrix("integer", 3, 2, rt)
  moff <- fmalloc_describe(m)$off
  m[2, 2] <- 7L
  m[, 1] <- 1:3
  expect_equal(fmalloc_describe(m)$off, moff)
  expect_identical(m[], matrix(c(1:3, 0L, 7L, 0L), 3, 2))
  # saving names the block in place: the stored object has those values
  fmalloc_save(x, "x")
  expect_equal(fmalloc_describe(x)$off, off)
  expect_equal(fmalloc_get(rt, "x")[c(1, 10, 1000)], c(0.5, -1, 500))
})

test_that("no R variable changes because another one was modified", {
  rt <- fm_runtime()
  m <- create_fmalloc_vector("double", 3, rt)
  m[] <- c(1, NA, 3)
  fmalloc_save(m, "m", rt)
  keep <- fmalloc_get(rt, "m")
  x <- fmalloc_get(rt, "m")
  x[1] <- 42
  expect_identical(x[], c(42, NA, 3))
  expect_identical(keep[], c(1, NA, 3))
  expect_identical(m[], c(1, NA, 3))
  expect_identical(fmalloc_get(rt, "m")[], c(1, NA, 3))
  expect_true(fmalloc_is_mapped(x)) # the copy is a new unnamed block
  expect_null(fmalloc_describe(x)$name)
  expect_false(fmalloc_describe(x)$off == fmalloc_describe(keep)$off)
  clean_mean <- function(v) {
    v[is.na(v)] <- 0
    mean(v)
  }
  expect_equal(clean_mean(fmalloc_get(rt, "m")), 4 / 3)
  expect_identical(fmalloc_get(rt, "m")[], c(1, NA, 3))
  expect_identical(keep[], c(1, NA, 3))
  # the caller's object of fmalloc_save views the stored object: it is copied
  # before a change too
  m[2] <- 0
  expect_identical(m[], c(1, 0, 3))
  expect_identical(keep[], c(1, NA, 3))
  expect_identical(fmalloc_get(rt, "m")[], c(1, NA, 3))
  # the value fmalloc_save returns, for a copied heap vector as well
  y <- fmalloc_save(as.double(1:4), "y", rt)
  y2 <- fmalloc_get(rt, "y")
  y[] <- 0
  expect_identical(y[], rep(0, 4))
  expect_identical(y2[], as.double(1:4))
  expect_identical(fmalloc_get(rt, "y")[], as.double(1:4))
  # matrices, subassignment by row and column, and replacement functions
  a <- fmalloc_save(matrix(1:6, 2, 3), "a", rt)
  b <- fmalloc_get(rt, "a")
  b[1, ] <- 0L
  dim(b) <- NULL
  names(a) <- NULL
  a[2, 3] <- -1L
  expect_identical(fmalloc_get(rt, "a")[], matrix(1:6, 2, 3))
  # writing into a stored object on purpose: fmalloc_write_cols, seen by every view
  v1 <- fmalloc_get(rt, "a")
  v2 <- fmalloc_get(rt, "a")
  fmalloc_write_cols(v1, 2, c(30L, 40L))
  expect_identical(v2[, 2], c(30L, 40L))
  expect_identical(fmalloc_get(rt, "a")[, 2], c(30L, 40L))
  # or by saving a new object under the name (old views keep their values)
  fmalloc_save(c(9, 9, 9), "m", rt)
  expect_identical(keep[], c(1, NA, 3))
  expect_identical(fmalloc_get(rt, "m")[], c(9, 9, 9))
})

test_that("access after cleanup raises fm_error_eclosed and never crashes", {
  rt <- open_fmalloc(fm_tmp(), size_gb = 0.05)
  x <- create_fmalloc_vector("double", 10, rt)
  i <- create_fmalloc_vector("integer", 10, rt)
  r <- create_fmalloc_vector("raw", 10, rt)
  m <- create_fmalloc_matrix("double", 2, 5, rt)
  cleanup_fmalloc(rt)
  expect_equal(length(x), 10)
  expect_error(x[1], class = "fm_error_eclosed")
  expect_error(sum(x), class = "fm_error_eclosed")
  expect_error(x[] <- 1, class = "fm_error_eclosed")
  expect_error(i[2], class = "fm_error_eclosed")
  expect_error(r[2], class = "fm_error_eclosed")
  expect_error(m %*% 1:5, class = "fm_error_eclosed")
  expect_error(fm_elt(x, 0), class = "fm_error_eclosed")
  expect_error(fm_region(x, 0, 3), class = "fm_error_eclosed")
  expect_error(capture.output(print(x)), class = "fm_error_eclosed")
  expect_error(y <- x + 1, class = "fm_error_eclosed")
  expect_error(serialize(x, NULL), class = "fm_error_eclosed")
  expect_false(fmalloc_describe(x)$is_open)
  expect_error(create_fmalloc_vector("double", 1, rt), class = "fm_error_eclosed")
  rm(x, i, r, m)
  invisible(gc())
  succeed()
})

test_that("base %*% and crossprod on a mapped matrix equal the heap result", {
  rt <- fm_runtime()
  set.seed(1)
  h <- matrix(rnorm(301 * 17), 301, 17)
  m <- create_fmalloc_matrix("double", 301, 17, rt)
  m[] <- h
  b <- matrix(rnorm(17 * 3), 17, 3)
  expect_identical(m %*% b, h %*% b)
  expect_identical(crossprod(m), crossprod(h))
  expect_identical(tcrossprod(m), tcrossprod(h))
  expect_identical(colSums(m), colSums(h))
  expect_true(fmalloc_is_mapped(m))
})

test_that("RSpectra::svds and irlba::irlba on a mapped matrix equal heap results", {
  rt <- fm_runtime()
  set.seed(2)
  h <- matrix(rnorm(400 * 60), 400, 60) + outer(1:400, 1:60) / 1000
  m <- create_fmalloc_matrix("double", 400, 60, rt)
  m[] <- h
  if (requireNamespace("RSpectra", quietly = TRUE)) {
    a <- RSpectra::svds(m, k = 4)
    b <- RSpectra::svds(h, k = 4)
    expect_equal(a$d, b$d, tolerance = 1e-10)
    expect_equal(abs(a$u), abs(b$u), tolerance = 1e-8)
  }
  if (requireNamespace("irlba", quietly = TRUE)) {
    set.seed(3)
    a <- irlba::irlba(m, nv = 4)
    set.seed(3)
    b <- irlba::irlba(h, nv = 4)
    expect_equal(a$d, b$d, tolerance = 1e-10)
  }
  skip_if_not(requireNamespace("RSpectra", quietly = TRUE) &&
                requireNamespace("irlba", quietly = TRUE), "RSpectra or irlba not installed")
})

test_that("forked workers fill their own columns of one mapped matrix", {
  skip_if_no_fork()
  rt <- fm_runtime()
  nr <- 1237L # not a multiple of a page of doubles
  nc <- 8L
  m <- create_fmalloc_matrix("double", nr, nc, rt)
  expected <- outer(seq_len(nr), seq_len(nc), function(i, j) i * 1000 + j)
  res <- fork_children(function(w) {
    for (j in c(w, w + 4L)) fmalloc_write_cols(m, j, seq_len(nr) * 1000 + j)
    # a forked child must not allocate in the parent's runtime
    tryCatch({ create_fmalloc_vector("double", 1, rt); "allocated" },
             fm_error_earg = function(e) "refused")
  }, n = 4)
  expect_children_returned(res)
  expect_true(all(unlist(child_values(res)) == "refused"))
  expect_identical(m[], expected)
  expect_true(fmalloc_is_mapped(m))
  expect_error(fmalloc_write_cols(m, 9, 1:nr), class = "fm_error_earg")
  expect_error(fmalloc_write_cols(m, 1, 1:3), class = "fm_error_emismatch")
  expect_error(fmalloc_write_cols(1:3, 1, 1:3), class = "fm_error_earg")
})

test_that("fmalloc_write_cols stores only values the matrix type keeps", {
  rt <- open_fmalloc(fm_tmp(), size_gb = 0.01, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  I <- create_fmalloc_matrix("integer", 2, 2, rt)
  e <- tryCatch(fmalloc_write_cols(I, 1, c(1, 2.5)), error = identity)
  expect_s3_class(e, "fm_error_earg")
  expect_identical(conditionCall(e), quote(fmalloc_write_cols(I, 1, c(1, 2.5))))
  expect_match(conditionMessage(e), "^values\\[2\\] = 2.5 cannot be stored in a mapped integer matrix")
  expect_match(conditionMessage(e), "base R would make x a double matrix")
  for (bad in list(Inf, -Inf, 2^31, NA_character_)) {
    expect_error(fmalloc_write_cols(I, 1, c(1, bad)), class = "fm_error_earg")
  }
  expect_identical(I[], matrix(0L, 2, 2))
  fmalloc_write_cols(I, 1:2, c(1, NA, NaN, -7))
  fmalloc_write_cols(I, 1, c(TRUE, NA))
  expect_identical(I[], matrix(c(1L, NA, NA, -7L), 2, 2))
  X <- create_fmalloc_matrix("double", 4, 3, rt)
  e <- tryCatch(fmalloc_write_cols(X, 1, letters[1:4]), error = identity)
  expect_s3_class(e, "fm_error_earg")
  expect_identical(conditionMessage(e),
                   "values must be numbers or logicals for a mapped double matrix, not a character vector")
  for (bad in list(factor(1:4), 1:4 + 0i, as.raw(1:4), as.list(1:4))) {
    expect_error(fmalloc_write_cols(X, 1, bad), "values must be numbers or logicals", class = "fm_error_earg")
  }
  fmalloc_write_cols(X, 1:3, c(1.5, NA, NaN, Inf, 1:4, TRUE, FALSE, NA, TRUE))
  expect_identical(X[], matrix(c(1.5, NA, NaN, Inf, 1:4, 1, 0, NA, 1), 4, 3))
  L <- create_fmalloc_vector("logical", 3, rt)
  fmalloc_write_cols(L, 1, c(1, NA, 0))
  expect_identical(L[], c(TRUE, NA, FALSE))
  expect_error(fmalloc_write_cols(L, 1, c(1, 2, 0)), "values\\[2\\] = 2 cannot", class = "fm_error_earg")
  R <- create_fmalloc_vector("raw", 3, rt)
  fmalloc_write_cols(R, 1, c(0, 255L, 7))
  expect_identical(R[], as.raw(c(0, 255, 7)))
  for (bad in list(c(0, 256, 1), c(0, NA, 1), c(0, 1.5, 1))) {
    expect_error(fmalloc_write_cols(R, 1, bad), "cannot be stored in a mapped raw matrix", class = "fm_error_earg")
  }
  expect_error(fmalloc_write_cols(R, 1, c(TRUE, FALSE, TRUE)), "raw bytes or whole numbers", class = "fm_error_earg")
  expect_identical(R[], as.raw(c(0, 255, 7)))
})

test_that("a raw vector beyond 2^31 elements is written at both ends", {
  skip_if(identical(Sys.getenv("RFMALLOC_SKIP_BIG"), "true"), "RFMALLOC_SKIP_BIG=true")
  n <- 2^31 + 10
  dir <- tempdir()
  free <- fm_free_bytes(dir)
  if (is.na(free) || free < n + 2^30) {
    skip(sprintf("needs about 3 GiB free in %s (df reports %s)", dir, format(free)))
  }
  path <- fm_tmp()
  rt <- fm_runtime(path, size_gb = 2.1)
  x <- create_fmalloc_vector("raw", n, rt)
  expect_equal(length(x), n)
  x[1] <- as.raw(0x11)
  x[n] <- as.raw(0x22)
  x[2^31] <- as.raw(0x33)
  expect_identical(x[c(1, 2, 2^31, n - 1, n)], as.raw(c(0x11, 0, 0x33, 0, 0x22)))
  expect_identical(fm_elt(x, n - 1), as.raw(0x22))
  expect_true(fmalloc_is_mapped(x))
  rm(x)
  cleanup_fmalloc(rt, sync = FALSE)
  unlink(path)
  expect_false(file.exists(path))
})
