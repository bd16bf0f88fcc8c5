test_that("named persistent vectors serialize as a reference, in process", {
  rt <- fm_runtime()
  m <- create_fmalloc_matrix("double", 4, 3, rt, dimnames = list(letters[1:4], NULL))
  m[] <- 1:12
  fmalloc_save(m, "m")
  bytes <- serialize(m, NULL)
  expect_lt(length(bytes), 12 * 8 + 100 + 400) # a recipe, not the values
  back <- unserialize(bytes)
  expect_true(fmalloc_is_mapped(back))
  expect_identical(back[], m[])
  expect_identical(dimnames(back), dimnames(m))
  # the open runtime of this process is reused: both view the same block
  expect_equal(fmalloc_describe(back)$off, fmalloc_describe(m)$off)
  expect_false(fmalloc_describe(back)$read_only)
})

test_that("unnamed and scratch vectors serialize by value", {
  rt <- fm_runtime()
  x <- create_fmalloc_vector("integer", 1000, rt)
  x[] <- 1:1000
  back <- unserialize(serialize(x, NULL))
  expect_false(fmalloc_is_mapped(back))
  expect_identical(back, 1:1000)
  sc <- fm_runtime(mode = "scratch")
  y <- create_fmalloc_vector("double", 5, sc)
  y[] <- 1:5
  fmalloc_save(y, "y")
  back <- unserialize(serialize(y, NULL))
  expect_false(fmalloc_is_mapped(back))
  expect_identical(back, as.double(1:5))
})

test_that("saveRDS/readRDS in another process restores a reference", {
  path <- fm_tmp()
  rds <- fm_tmp(".rds")
  rt <- open_fmalloc(path, size_gb = 0.05)
  m <- create_fmalloc_matrix("double", 50, 4, rt, dimnames = list(NULL, c("a", "b", "c", "d")))
  m[] <- seq_len(200) / 3
  fmalloc_save(m, "m")
  saveRDS(m, rds)
  expect_lt(file.size(rds), 1000)
  cleanup_fmalloc(rt)
  res <- run_r('m <- readRDS("@rds@")
                d <- fmalloc_describe(m)
                result <- list(mapped = fmalloc_is_mapped(m), values = m * 1, dimnames = dimnames(m),
                               read_only = d$read_only, name = d$name, path = d$path,
                               cp = crossprod(m))', rds = rds)
  expect_true(res$mapped)
  expect_true(res$read_only)
  expect_equal(res$name, "m")
  expect_equal(res$path, normalizePath(path))
  expect_identical(res$values, matrix(seq_len(200) / 3, 50, 4,
                                      dimnames = list(NULL, c("a", "b", "c", "d"))))
  expect_equal(res$cp, crossprod(res$values))
})

test_that("scratch objects are restored by value in another process", {
  rds <- fm_tmp(".rds")
  sc <- fm_runtime(mode = "scratch")
  y <- create_fmalloc_vector("logical", 6, sc)
  y[] <- c(TRUE, NA, FALSE, TRUE, TRUE, FALSE)
  fmalloc_save(y, "y")
  saveRDS(y, rds)
  res <- run_r('y <- readRDS("@rds@"); result <- list(mapped = fmalloc_is_mapped(y), y = y)',
               rds = rds)
  expect_false(res$mapped)
  expect_identical(res$y, c(TRUE, NA, FALSE, TRUE, TRUE, FALSE))
})

test_that("a missing backing file, name or replaced object is an fm_error", {
  path <- fm_tmp()
  rt <- open_fmalloc(path, size_gb = 0.05)
  x <- fmalloc_save(as.double(1:10), "x", rt)
  y <- fmalloc_save(1:3, "y", rt)
  bx <- serialize(x, NULL)
  by <- serialize(y, NULL)
  fmalloc_save(4:6, "y", rt) # replaced: new uid
  err <- tryCatch(unserialize(by), error = function(e) e)
  expect_s3_class(err, "fm_error_emismatch")
  expect_identical(y[], 1:3) # the old view keeps its values
  fmalloc_delete(rt, "x")
  expect_error(unserialize(bx), class = "fm_error_earg")
  expect_identical(x[], as.double(1:10))
  bx2 <- serialize(fmalloc_save(as.double(1:10), "x", rt), NULL)
  cleanup_fmalloc(rt)
  unlink(path)
  err <- tryCatch(unserialize(bx2), error = function(e) e)
  expect_s3_class(err, "fm_error")
  expect_s3_class(err, "fm_error_eio")
  expect_match(conditionMessage(err), "does not exist")
  # in another process too
  rds <- fm_tmp(".rds")
  writeBin(bx2, rds)
  res <- run_r('result <- tryCatch({ unserialize(readBin("@rds@", "raw", 1e6)); "restored" },
                  error = function(e) class(e))', rds = rds)
  expect_true("fm_error" %in% res)
})

test_that("serializing while another process holds the writer lock is fm_error_ebusy", {
  path <- fm_tmp()
  rds <- fm_tmp(".rds")
  rt <- fm_runtime(path)
  x <- fmalloc_save(as.double(1:5), "x", rt)
  saveRDS(x, rds)
  res <- run_r('result <- tryCatch({ readRDS("@rds@"); "restored" },
                  error = function(e) class(e)[1])', rds = rds)
  expect_equal(res, "fm_error_ebusy")
})

test_that("restored references are not mutable: a change copies", {
  rt <- fm_runtime()
  m <- fmalloc_save(c(1, NA, 3), "m", rt)
  bytes <- serialize(m, NULL)
  back <- unserialize(bytes) # a view of the same block (runtime reused)
  back[2] <- 0
  expect_identical(back[], c(1, 0, 3))
  expect_identical(m[], c(1, NA, 3))
  expect_identical(fmalloc_get(rt, "m")[], c(1, NA, 3))
  clean <- function(v) {
    v[is.na(v)] <- 0
    sum(v)
  }
  expect_equal(clean(unserialize(bytes)), 4)
  expect_identical(fmalloc_get(rt, "m")[], c(1, NA, 3))
  # in a process that opens the file read-only as well
  rds <- fm_tmp(".rds")
  saveRDS(m, rds)
  path <- fmalloc_info(rt)$path
  cleanup_fmalloc(rt)
  res <- run_r('a <- readRDS("@rds@"); b <- readRDS("@rds@"); a[1] <- 42
                result <- list(a = a[], b = b[], again = readRDS("@rds@")[])', rds = rds)
  expect_identical(res$a, c(42, NA, 3))
  expect_identical(res$b, c(1, NA, 3))
  expect_identical(res$again, c(1, NA, 3))
})

test_that("a reference never resolves to an object of a file created again at its path", {
  path <- fm_tmp()
  rds <- fm_tmp(".rds")
  rt <- open_fmalloc(path, size_gb = 0.05)
  x <- fmalloc_save(1:5, "x", rt)
  id1 <- fmalloc_info(rt)$file_id
  saveRDS(x, rds)
  cleanup_fmalloc(rt)
  unlink(path)
  rt <- open_fmalloc(path, size_gb = 0.05) # uids start over in the new file
  y <- fmalloc_save(6:10, "x", rt)
  expect_false(identical(fmalloc_info(rt)$file_id, id1))
  expect_identical(fmalloc_describe(y)$uid, fmalloc_describe(x)$uid)
  # in this process, with the new file open for writing
  err <- tryCatch(readRDS(rds), error = function(e) e)
  expect_s3_class(err, "fm_error_emismatch")
  expect_match(conditionMessage(err), "refers to object 'x' of another file", fixed = TRUE)
  expect_identical(y[], 6:10)
  cleanup_fmalloc(rt)
  # in a fresh process
  res <- run_r('result <- tryCatch({ readRDS("@rds@")[] },
                  error = function(e) list(class = class(e)[1], msg = conditionMessage(e)))',
               rds = rds)
  expect_equal(res$class, "fm_error_emismatch")
  expect_match(res$msg, "refers to object 'x' of another file", fixed = TRUE)
})

test_that("a runtime cached by unserialize is reused only while the path names its file", {
  path <- fm_tmp()
  rds <- fm_tmp(".rds")
  rt <- open_fmalloc(path, size_gb = 0.05)
  saveRDS(fmalloc_save(1:5, "x", rt), rds)
  cleanup_fmalloc(rt)
  a <- readRDS(rds) # opens the file read-only and keeps that runtime
  expect_identical(a[], 1:5)
  expect_true(fmalloc_describe(a)$read_only)
  expect_identical(readRDS(rds)[], 1:5) # reused
  # replaced by rename with a file created elsewhere (same name, same uid)
  other <- fm_tmp()
  rt2 <- open_fmalloc(other, size_gb = 0.05)
  fmalloc_save(6:10, "x", rt2)
  cleanup_fmalloc(rt2)
  expect_true(file.rename(other, path))
  err <- tryCatch(readRDS(rds), error = function(e) e)
  expect_s3_class(err, "fm_error_emismatch")
  expect_identical(a[], 1:5) # a still maps the old file
  # rewritten in place: the cached runtime must not be used (its pages are gone)
  path2 <- fm_tmp()
  rds2 <- fm_tmp(".rds")
  rt <- open_fmalloc(path2, size_gb = 0.05)
  saveRDS(fmalloc_save(1:5, "x", rt), rds2)
  cleanup_fmalloc(rt)
  b <- readRDS(rds2)
  expect_identical(b[], 1:5)
  writeLines("garbage", path2)
  err <- tryCatch(readRDS(rds2), error = function(e) e)
  expect_s3_class(err, "fm_error_eformat")
  expect_match(conditionMessage(err), path2, fixed = TRUE)
  expect_error(b[], class = "fm_error_eformat") # never a SIGBUS
  expect_error(sum(b), class = "fm_error_eformat")
  # deleted: fm_error_eio as before
  unlink(path2)
  expect_error(readRDS(rds2), class = "fm_error_eio")
})
