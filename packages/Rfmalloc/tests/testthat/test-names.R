test_that("save, get, list and delete named objects", {
  rt <- fm_runtime()
  x <- create_fmalloc_vector("double", 10, rt)
  x[] <- 1:10
  y <- fmalloc_save(x, "x")
  expect_true(fmalloc_is_mapped(y))
  expect_equal(fmalloc_describe(x)$name, "x") # named in place
  expect_equal(fmalloc_describe(y)$off, fmalloc_describe(x)$off)
  m <- fmalloc_save(matrix(1:6, 2, 3, dimnames = list(c("a", "b"), NULL)), "m", rt)
  expect_true(fmalloc_is_mapped(m))
  expect_identical(m[], matrix(1:6, 2, 3, dimnames = list(c("a", "b"), NULL)))
  fmalloc_save(c(u = TRUE, v = NA), "l", rt)
  fmalloc_save(as.raw(1:3), "r", rt)
  fmalloc_save(factor(c("p", "q", "p")), "f", rt)
  lst <- fmalloc_list(rt)
  expect_s3_class(lst, "data.frame")
  expect_named(lst, c("name", "type", "dims", "bytes"))
  expect_identical(lst$name, c("f", "l", "m", "r", "x"))
  expect_identical(lst$type, c("integer", "logical", "integer", "raw", "double"))
  expect_identical(lst$dims, c("3", "2", "2 x 3", "3", "10"))
  expect_equal(lst$bytes, c(12, 8, 24, 3, 80))
  expect_identical(fmalloc_get(rt, "m")[], m[])
  expect_identical(fmalloc_get(rt, "l")[], c(u = TRUE, v = NA))
  expect_identical(fmalloc_get(rt, "r")[], as.raw(1:3))
  expect_identical(fmalloc_get(rt, "f")[], factor(c("p", "q", "p")))
  expect_error(fmalloc_get(rt, "nope"), class = "fm_error_earg")
  expect_error(fmalloc_save(1:3, ".fm/attr/x", rt), class = "fm_error_earg")
  expect_error(fmalloc_save(1:3, "", rt), class = "fm_error_earg")
  expect_error(fmalloc_save(1:3, strrep("a", 247), rt), class = "fm_error_earg")
  expect_error(fmalloc_save(list(1), "w", rt), class = "fm_error_earg")
  expect_error(fmalloc_save(1:3, "w"), class = "fm_error_earg") # no runtime
  expect_true(fmalloc_delete(rt, "m"))
  expect_error(fmalloc_delete(rt, "m"), class = "fm_error_earg")
  expect_identical(m[1, 2], c(a = 3L)) # the live view survives the delete
  expect_null(fmalloc_describe(m)$name)
  expect_identical(fmalloc_list(rt)$name, c("f", "l", "r", "x"))
})

test_that("saving under an existing name replaces it; live views keep values", {
  rt <- fm_runtime()
  a <- fmalloc_save(as.double(1:5), "a", rt)
  v <- fmalloc_get(rt, "a")
  fmalloc_save(as.double(6:10), "a", rt)
  expect_identical(a[], as.double(1:5))
  expect_identical(v[], as.double(1:5))
  expect_identical(fmalloc_get(rt, "a")[], as.double(6:10))
  # saving a view of one name under another name copies
  b <- fmalloc_save(fmalloc_get(rt, "a"), "b", rt)
  expect_identical(sort(fmalloc_list(rt)$name), c("a", "b"))
  b[1] <- 0
  expect_identical(fmalloc_get(rt, "a")[1], 6)
  # old views of "a" were detached onto temporaries, freed by GC
  n_before <- fmalloc_info(rt)$n_blocks
  rm(a, v)
  invisible(gc())
  expect_lt(fmalloc_info(rt)$n_blocks, n_before)
})

test_that("named objects with dims and dimnames survive sync and reopen in a new process", {
  path <- fm_tmp()
  rt <- open_fmalloc(path, size_gb = 0.05)
  dn <- list(paste0("s", 1:5), paste0("g", 1:3))
  m <- create_fmalloc_matrix("double", 5, 3, rt, dimnames = dn)
  m[] <- (1:15) / 4
  fmalloc_save(m, "expr")
  i <- create_fmalloc_vector("integer", 7, rt)
  i[] <- -3:3
  fmalloc_save(i, "ints")
  t <- create_fmalloc_vector("double", 100, rt) # a temporary: not kept
  cleanup_fmalloc(rt)
  res <- run_r('rt <- open_fmalloc("@p@")
                m <- fmalloc_get(rt, "expr")
                m0 <- fmalloc_get(rt, "expr")
                m0[1, 1] <- -5  # a copy: the stored object is unchanged
                fmalloc_write_cols(m, 1, c(100, m[2:5, 1]))  # writes into it on purpose
                fmalloc_sync(rt)
                result <- list(m = m * 1, m0 = m0[1, 1], mapped = fmalloc_is_mapped(m),
                               ints = fmalloc_get(rt, "ints") + 0L,
                               list = fmalloc_list(rt), blocks = fmalloc_info(rt)$n_blocks)
                cleanup_fmalloc(rt)', p = path)
  expect_true(res$mapped)
  expected <- matrix((1:15) / 4, 5, 3, dimnames = dn)
  expected[1, 1] <- 100
  expect_identical(res$m, expected)
  expect_identical(res$m0, -5)
  expect_identical(res$ints, -3:3)
  expect_identical(res$list$name, c("expr", "ints"))
  expect_identical(res$list$dims, c("5 x 3", "7"))
  expect_equal(res$blocks, 4) # two objects, the dimnames companion and the copy m0
  rt <- open_fmalloc(path, read_only = TRUE)
  expect_equal(fmalloc_get(rt, "expr")[1, 1], 100)
  cleanup_fmalloc(rt)
})

test_that("saving a vector of another runtime copies it into the target runtime", {
  rt1 <- fm_runtime()
  rt2 <- fm_runtime(mode = "scratch")
  x <- create_fmalloc_vector("integer", 6, rt1)
  x[] <- 6:1
  y <- fmalloc_save(x, "x", rt2)
  expect_true(fmalloc_is_mapped(y))
  expect_equal(fmalloc_describe(y)$mode, "scratch")
  expect_null(fmalloc_describe(x)$name)
  y[1] <- 0L # a copy: y views the stored object
  expect_identical(y[], c(0L, 5:1))
  expect_identical(x[], 6:1)
  expect_identical(fmalloc_get(rt2, "x")[], 6:1)
})
