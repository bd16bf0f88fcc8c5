test_that("open_fmalloc returns a runtime with info and a print method", {
  path <- fm_tmp()
  rt <- open_fmalloc(path, size_gb = 0.05)
  expect_s3_class(rt, "fmalloc_runtime")
  expect_true(file.exists(path))
  info <- fmalloc_info(rt)
  expect_named(info, c("path", "mode", "read_only", "cap_bytes", "file_bytes", "used_bytes",
                       "n_blocks", "n_named", "sync_seq", "format_version", "file_id",
                       "is_broken"))
  expect_identical(info$format_version, 2L)
  expect_match(info$file_id, "^[0-9a-f]{32}$")
  expect_false(info$is_broken)
  expect_equal(info$path, normalizePath(path))
  expect_equal(info$mode, "persistent")
  expect_false(info$read_only)
  expect_equal(info$cap_bytes, ceiling(0.05 * 2^30))
  expect_equal(info$used_bytes, 0)
  expect_equal(info$n_blocks, 0)
  expect_output(print(rt), "fmalloc_runtime")
  expect_true(fmalloc_is_open(rt))
  expect_true(cleanup_fmalloc(rt))
  expect_false(fmalloc_is_open(rt))
  expect_false(cleanup_fmalloc(rt))
  expect_output(print(rt), "closed")
  expect_error(fmalloc_info(rt), class = "fm_error_eclosed")
  expect_error(fmalloc_sync(rt), class = "fm_error_eclosed")
})

test_that("bad arguments raise fm_error_earg", {
  path <- fm_tmp()
  expect_error(open_fmalloc(path), class = "fm_error_earg")
  expect_error(open_fmalloc(path, size_gb = -1), class = "fm_error_earg")
  expect_error(open_fmalloc(c(path, path), size_gb = 1), class = "fm_error_earg")
  expect_error(open_fmalloc(path, size_gb = 1, mode = "scratch", read_only = TRUE),
               class = "fm_error_earg")
  expect_error(open_fmalloc(fm_tmp(), read_only = TRUE, size_gb = 1), class = "fm_error")
  expect_error(cleanup_fmalloc(list()), class = "fm_error_earg")
})

test_that("a second writer gets fm_error_ebusy, readers share", {
  path <- fm_tmp()
  rt <- fm_runtime(path)
  expect_error(open_fmalloc(path, size_gb = 0.05), class = "fm_error_ebusy")
  expect_error(open_fmalloc(path, read_only = TRUE), class = "fm_error_ebusy")
  # another process, too
  res <- run_r('result <- tryCatch({ open_fmalloc("@p@", size_gb = 0.05); "opened" },
                  fm_error = function(e) class(e)[1])', p = path)
  expect_equal(res, "fm_error_ebusy")
  cleanup_fmalloc(rt)
  r1 <- open_fmalloc(path, read_only = TRUE)
  r2 <- open_fmalloc(path, read_only = TRUE)
  expect_true(fmalloc_info(r1)$read_only)
  expect_error(open_fmalloc(path, size_gb = 0.05), class = "fm_error_ebusy")
  cleanup_fmalloc(r1)
  cleanup_fmalloc(r2)
  rt <- open_fmalloc(path)
  expect_true(fmalloc_is_open(rt))
  cleanup_fmalloc(rt)
})

test_that("a foreign or corrupt file is fm_error_eformat naming the file", {
  path <- fm_tmp()
  writeBin(as.raw(rep(c(1:255), 40000)), path)
  err <- tryCatch(open_fmalloc(path, size_gb = 0.05), error = function(e) e)
  expect_s3_class(err, "fm_error_eformat")
  expect_true(grepl(path, conditionMessage(err), fixed = TRUE))
  err <- tryCatch(open_fmalloc(path, read_only = TRUE), error = function(e) e)
  expect_s3_class(err, "fm_error_eformat")
  # a valid file with a damaged header
  path2 <- fm_tmp()
  rt <- open_fmalloc(path2, size_gb = 0.05)
  cleanup_fmalloc(rt)
  con <- file(path2, "r+b")
  writeBin(charToRaw("NOTMAGIC"), con)
  close(con)
  err <- tryCatch(open_fmalloc(path2), error = function(e) e)
  expect_s3_class(err, "fm_error_eformat")
  expect_true(grepl(path2, conditionMessage(err), fixed = TRUE))
})

test_that("truncation from outside is detected at fmalloc_sync", {
  path <- fm_tmp()
  rt <- fm_runtime(path)
  x <- create_fmalloc_vector("double", 1e5, rt)
  fmalloc_save(x, "x")
  expect_true(fmalloc_check(rt))
  shrink_to <- 65536
  ok <- system2("truncate", c("-s", shrink_to, shQuote(path))) == 0L
  skip_if_not(ok, "truncate(1) is not available")
  expect_equal(file.size(path), shrink_to)
  expect_error(fmalloc_check(rt), class = "fm_error_eformat")
  err <- tryCatch(fmalloc_sync(rt), error = function(e) e)
  expect_s3_class(err, "fm_error_eformat")
  expect_true(grepl(path, conditionMessage(err), fixed = TRUE))
  # cleanup closes it, with a warning that the commit was impossible
  w <- tryCatch(cleanup_fmalloc(rt), warning = identity)
  expect_s3_class(w, "fm_warning_eformat")
  expect_identical(conditionCall(w), quote(cleanup_fmalloc(rt)))
  expect_match(conditionMessage(w), "; the runtime is closed without a commit (changes since the last sync are lost)",
               fixed = TRUE)
  expect_true(grepl(path, conditionMessage(w), fixed = TRUE))
  expect_false(fmalloc_is_open(rt))
  expect_silent(expect_false(cleanup_fmalloc(rt)))
  # the value (TRUE: it was open) comes with the warning
  rt <- open_fmalloc(fm_tmp(), size_gb = 0.05)
  p2 <- fmalloc_info(rt)$path
  create_fmalloc_vector("double", 1e5, rt)
  fmalloc_sync(rt)
  system2("truncate", c("-s", shrink_to, shQuote(p2)))
  expect_error(fmalloc_check(rt), class = "fm_error_eformat")
  expect_warning(expect_true(cleanup_fmalloc(rt)), class = "fm_warning_eformat")
})

test_that("replacing the file by rename leaves mapped values unchanged", {
  path <- fm_tmp()
  rt <- fm_runtime(path)
  x <- create_fmalloc_vector("double", 1000, rt)
  x[] <- seq_len(1000) / 7
  fmalloc_save(x, "x")
  other <- fm_tmp()
  writeBin(as.raw(rep(0xff, 1e6)), other)
  expect_true(file.rename(other, path))
  expect_equal(x[], seq_len(1000) / 7)
  expect_true(fmalloc_check(rt))
  y <- fmalloc_get(rt, "x")
  expect_equal(y[1000], 1000 / 7)
  fmalloc_write_cols(x, 1, c(-1, x[-1]))
  expect_equal(y[1], -1)
})

test_that("scratch runtimes unlink their file at once", {
  path <- fm_tmp()
  rt <- open_fmalloc(path, size_gb = 0.05, mode = "scratch")
  expect_false(file.exists(path))
  expect_equal(fmalloc_info(rt)$mode, "scratch")
  x <- create_fmalloc_vector("integer", 10, rt)
  x[] <- 1:10
  expect_equal(sum(x), 55L)
  cleanup_fmalloc(rt)
  expect_error(x[1], class = "fm_error_eclosed")
})

test_that("temporaries are freed when R collects them", {
  rt <- fm_runtime()
  base <- fmalloc_info(rt)$used_bytes
  x <- create_fmalloc_vector("double", 1e5, rt)
  y <- create_fmalloc_vector("integer", 1e5, rt)
  used <- fmalloc_info(rt)$used_bytes
  expect_gte(used - base, 1e5 * 12)
  expect_equal(fmalloc_info(rt)$n_blocks, 2)
  rm(x, y)
  invisible(gc())
  expect_equal(fmalloc_info(rt)$used_bytes, base)
  expect_equal(fmalloc_info(rt)$n_blocks, 0)
  # a named object is not freed by GC
  z <- create_fmalloc_vector("double", 10, rt)
  fmalloc_save(z, "z")
  rm(z)
  invisible(gc())
  expect_equal(fmalloc_info(rt)$n_blocks, 1)
  expect_equal(fmalloc_get(rt, "z")[], rep(0, 10))
})

test_that("the size cap is an fm_error_enospc, and the runtime stays usable", {
  rt <- fm_runtime(size_gb = 0.01)
  expect_error(create_fmalloc_vector("double", 2e6, rt), class = "fm_error_enospc")
  x <- create_fmalloc_vector("double", 10, rt)
  x[] <- 1
  expect_equal(sum(x), 10)
})

test_that("read-only runtimes refuse changes and copy on write", {
  path <- fm_tmp()
  rt <- open_fmalloc(path, size_gb = 0.05)
  x <- create_fmalloc_vector("double", 5, rt)
  x[] <- 1:5
  fmalloc_save(x, "x")
  cleanup_fmalloc(rt)
  ro <- open_fmalloc(path, read_only = TRUE)
  on.exit(cleanup_fmalloc(ro))
  expect_error(create_fmalloc_vector("double", 5, ro), class = "fm_error_earg")
  expect_error(fmalloc_save(1:3, "y", ro), class = "fm_error_earg")
  expect_error(fmalloc_sync(ro), class = "fm_error_earg")
  v <- fmalloc_get(ro, "x")
  expect_true(fmalloc_is_mapped(v))
  w <- v
  w[2] <- 100
  expect_false(fmalloc_is_mapped(w))
  expect_equal(v[], as.double(1:5))
  v[1] <- 9 # v is not mutable: R copies into the heap
  expect_equal(v[1], 9)
  expect_equal(fmalloc_get(ro, "x")[1], 1)
})

test_that("a persistent runtime reopens in another process", {
  path <- fm_tmp()
  rt <- open_fmalloc(path, size_gb = 0.05)
  x <- create_fmalloc_vector("double", 100, rt)
  x[] <- sqrt(1:100)
  fmalloc_save(x, "x", sync = FALSE)
  fmalloc_sync(rt)
  expect_gte(fmalloc_info(rt)$sync_seq, 1)
  cleanup_fmalloc(rt, sync = FALSE)
  res <- run_r('rt <- open_fmalloc("@p@", read_only = TRUE)
                x <- fmalloc_get(rt, "x")
                result <- list(mapped = fmalloc_is_mapped(x), x = x[], list = fmalloc_list(rt))',
               p = path)
  expect_true(res$mapped)
  expect_equal(res$x, sqrt(1:100))
  expect_equal(res$list$name, "x")
})

test_that("unloading the namespace closes every map", {
  path <- fm_tmp()
  res <- run_r('rt <- open_fmalloc("@p@", size_gb = 0.05)
                x <- create_fmalloc_vector("double", 3, rt)
                unloadNamespace("Rfmalloc")
                a <- tryCatch({ x[1]; "read" }, error = function(e) "error")
                rt2 <- Rfmalloc::open_fmalloc("@p@")  # the lock was released
                b <- tryCatch(x[1], error = function(e) class(e)[1])
                result <- list(a = a, b = b, open = Rfmalloc::fmalloc_is_open(rt2))',
               p = path)
  expect_equal(res$a, "error")
  expect_equal(res$b, "fm_error_eclosed")
  expect_true(res$open)
})

test_that("the namespace unloads and reloads: maps closed by .onUnload, everything works again", {
  path <- fm_tmp()
  res <- run_r('rt <- open_fmalloc("@p@", size_gb = 0.05)
                x <- create_fmalloc_vector("double", 3, rt)
                x[] <- c(2, 4, 9)
                fmalloc_save(x, "x")
                fmalloc_sync(rt)
                E <- Rfmalloc:::.test_ext_matrix(matrix(c(1, 2, 3, 4, 5, 7), 2, 3))
                n_backends <- length(fmalloc_backends())
                out <- list()
                for (cycle in 1:2) {
                  unloadNamespace("Rfmalloc")
                  loaded <- "Rfmalloc" %in% loadedNamespaces()
                  suppressPackageStartupMessages(library(Rfmalloc)) # S4 methods need it attached
                  rt2 <- Rfmalloc::open_fmalloc("@p@")  # the lock was released
                  y <- Rfmalloc::fmalloc_get(rt2, "x")
                  z <- Rfmalloc::create_fmalloc_matrix("double", 4, 2, rt2)
                  z[] <- c(1, 2, 3, 6, 0, 0, 0, 4)
                  out[[cycle]] <- list(
                    loaded = loaded,
                    old = tryCatch(x[1], error = function(e) class(e)[1]),
                    y = y * 1, colvars = Rfmalloc::fmalloc_colVars(z),
                    ext = as.matrix(E), ext_colvars = Rfmalloc::fmalloc_colVars(E),
                    product = E %*% c(1, 1, 1),
                    n_backends = length(Rfmalloc::fmalloc_backends()),
                    n_dll = sum(names(getLoadedDLLs()) == "Rfmalloc"))
                  x <- y
                }
                result <- list(out = out, n_backends = n_backends)', p = path)
  for (o in res$out) {
    expect_false(o$loaded)
    expect_identical(o$old, "fm_error_eclosed")
    expect_identical(o$y, c(2, 4, 9))
    expect_identical(o$colvars, c(var(c(1, 2, 3, 6)), var(c(0, 0, 0, 4))))
    expect_identical(o$ext, matrix(c(1, 2, 3, 4, 5, 7), 2, 3))
    expect_identical(o$ext_colvars, c(0.5, 0.5, 2))
    expect_equal(o$product, matrix(c(9, 13), 2, 1))
    expect_identical(o$n_backends, res$n_backends)
    expect_identical(o$n_dll, 1L) # the DLL stayed loaded and was reused
  }
})

test_that("truncation from outside is detected by a streamed pass and at the next open", {
  path <- fm_tmp()
  rt <- fm_runtime(path)
  x <- create_fmalloc_matrix("double", 2000, 50, rt)
  x[] <- 1
  fmalloc_save(x, "x")
  ok <- system2("truncate", c("-s", 65536, shQuote(path))) == 0L
  skip_if_not(ok, "truncate(1) is not available")
  err <- tryCatch(fmalloc_colVars(x), error = function(e) e)
  expect_s3_class(err, "fm_error_eformat")
  expect_true(grepl(path, conditionMessage(err), fixed = TRUE))
  expect_error(fmalloc_pca(x, k = 2), class = "fm_error_eformat")
  expect_warning(cleanup_fmalloc(rt), class = "fm_warning_eformat")
  err <- tryCatch(open_fmalloc(path), error = function(e) e)
  expect_s3_class(err, "fm_error_eformat")
  expect_true(grepl(path, conditionMessage(err), fixed = TRUE))
})

test_that("deleting the backing file while objects live behaves as documented", {
  path <- fm_tmp()
  rt <- fm_runtime(path)
  x <- create_fmalloc_vector("double", 1000, rt)
  x[] <- seq_len(1000)
  fmalloc_save(x, "x")
  rds <- tempfile(fileext = ".rds")
  saveRDS(x, rds)
  unlink(path)
  expect_false(file.exists(path))
  expect_identical(x[c(1, 1000)], c(1, 1000))
  y <- create_fmalloc_vector("integer", 10, rt)
  y[] <- 1:10
  expect_identical(sum(y), 55L)
  expect_silent(fmalloc_sync(rt))
  cleanup_fmalloc(rt)
  expect_error(x[1], class = "fm_error_eclosed")
  expect_error(readRDS(rds), class = "fm_error_eio")
})

test_that("after a truncation is detected, data access raises instead of SIGBUS", {
  skip_on_os("windows")
  skip_if(Sys.which("truncate") == "", "truncate(1) is not available")
  path <- fm_tmp()
  # In a child process: without the fix R dies of SIGBUS.
  res <- run_r('
    rt <- open_fmalloc("@p@", size_gb = 0.05)
    X <- create_fmalloc_matrix("double", 1e5, 10, rt)
    X[] <- 1
    x <- X[, 1] * 0  # a heap vector, unaffected
    fmalloc_sync(rt)
    stopifnot(system2("truncate", c("-s", "2200000", shQuote("@p@"))) == 0L)
    cls <- function(expr) tryCatch({ force(expr); "no error" }, error = function(e) class(e)[1])
    msg <- function(expr) tryCatch({ force(expr); "" }, error = conditionMessage)
    result <- list(colmeans = cls(fmalloc_colMeans(X)),
                   broken = fmalloc_info(rt)$is_broken,
                   crossprod = cls(crossprod(X)), sum = cls(sum(X)),
                   sum_msg = msg(sum(X)), elt = cls(X[1]), elt_far = cls(X[1e5, 10]),
                   fm_elt = cls(Rfmalloc:::fm_elt(X, 999999)),
                   region = cls(Rfmalloc:::fm_region(X, 0, 3)),
                   dup = cls({ Y <- X; Y[1] <- 0 }),
                   write = cls(fmalloc_write_cols(X, 1, rep(0, 1e5))),
                   print = cls(capture.output(print(X[1:2, ]))),
                   alloc = cls(create_fmalloc_vector("double", 10, rt)),
                   save = cls(fmalloc_save(1:3, "y", rt)),
                   sync = cls(fmalloc_sync(rt)), heap = sum(x),
                   cleanup = tryCatch(cleanup_fmalloc(rt), warning = function(w) class(w)[1]),
                   after = cls(sum(X)))', p = path)
  expect_equal(res$colmeans, "fm_error_eformat")
  expect_true(res$broken)
  for (k in c("crossprod", "sum", "elt", "elt_far", "fm_elt", "region", "dup", "write",
              "print", "alloc", "save", "sync"))
    expect_equal(res[[k]], "fm_error_eformat", label = k)
  expect_equal(res$cleanup, "fm_warning_eformat")
  expect_match(res$sum_msg, path, fixed = TRUE)
  expect_equal(res$heap, 0)
  expect_equal(res$after, "fm_error_eclosed")
})

test_that("data pointers check the file: an undetected truncation is an error, not SIGBUS", {
  skip_on_os("windows")
  skip_if(Sys.which("truncate") == "", "truncate(1) is not available")
  path <- fm_tmp()
  res <- run_r('
    rt <- open_fmalloc("@p@", size_gb = 0.05)
    X <- create_fmalloc_matrix("double", 1e5, 10, rt)
    X[] <- 1
    v <- create_fmalloc_vector("double", 1e6, rt)
    v[] <- 2
    fmalloc_sync(rt)
    stopifnot(system2("truncate", c("-s", "2200000", shQuote("@p@"))) == 0L)
    cls <- function(expr) tryCatch({ force(expr); "no error" }, error = function(e) class(e)[1])
    result <- list(crossprod = cls(crossprod(X)), broken = fmalloc_info(rt)$is_broken,
                   sum = cls(sum(v)), mean = cls(mean(v)), arith = cls(v + 1),
                   assign = cls(v[] <- 3))', p = path)
  expect_equal(res$crossprod, "fm_error_eformat")
  expect_true(res$broken)
  for (k in c("sum", "mean", "arith", "assign"))
    expect_equal(res[[k]], "fm_error_eformat", label = k)
  # each of sum() and %*% finds the truncation by itself, too
  res <- run_r('
    rt <- open_fmalloc("@p@", size_gb = 0.05)
    v <- create_fmalloc_vector("double", 1e6, rt)
    v[] <- 2
    X <- create_fmalloc_matrix("double", 1e5, 10, rt)
    stopifnot(system2("truncate", c("-s", "2200000", shQuote("@p@"))) == 0L)
    a <- tryCatch(sum(v), error = function(e) class(e)[1])
    rt2 <- open_fmalloc("@p@.2", size_gb = 0.05)
    M <- create_fmalloc_matrix("double", 1e5, 10, rt2)
    M[] <- 1
    stopifnot(system2("truncate", c("-s", "2200000", shQuote("@p@.2"))) == 0L)
    b <- tryCatch(M %*% rep(1, 10), error = function(e) class(e)[1])
    unlink("@p@.2")
    result <- list(sum = a, prod = b)', p = path)
  expect_equal(res$sum, "fm_error_eformat")
  expect_equal(res$prod, "fm_error_eformat")
})

test_that("allocation collects garbage before it reports a full runtime", {
  rt2 <- fm_runtime(size_gb = 0.01, mode = "scratch")
  for (i in 1:100) y <- create_fmalloc_vector("double", 1e5, rt2)
  expect_true(fmalloc_is_mapped(y))
  expect_lte(fmalloc_info(rt2)$n_blocks, 20)
  # saving heap vectors copies them into new blocks: the same applies
  for (i in 1:100) z <- fmalloc_save(as.double(1:1e5) + i, "z", rt2)
  expect_identical(fmalloc_get(rt2, "z")[c(1, 1e5)], c(101, 1e5 + 100))
  # copies made by R (Duplicate) never fail: a heap copy when the cap is full
  for (i in 1:100) {
    w <- y
    w[1] <- i
  }
  expect_identical(w[1:2], c(100, 0))
  # live data beyond the cap are still an error, and the runtime stays usable
  live <- list()
  err <- tryCatch({
    for (i in 1:20) live[[i]] <- create_fmalloc_vector("double", 1e5, rt2)
    NULL
  }, error = function(e) e)
  expect_s3_class(err, "fm_error_enospc")
  rm(live)
  expect_true(fmalloc_is_mapped(create_fmalloc_vector("double", 1e5, rt2)))
})

test_that("errors name the closed file and swapped arguments", {
  path <- fm_tmp()
  rt <- open_fmalloc(path, size_gb = 0.05)
  x <- create_fmalloc_vector("double", 3, rt)
  fmalloc_save(x, "m")
  cleanup_fmalloc(rt)
  for (f in list(function() x[1], function() sum(x), function() fmalloc_info(rt),
                 function() fmalloc_get(rt, "m"), function() fmalloc_sync(rt))) {
    err <- tryCatch(f(), error = function(e) e)
    expect_s3_class(err, "fm_error_eclosed")
    expect_equal(conditionMessage(err),
                 sprintf("mapping of '%s' is closed", normalizePath(path)))
  }
  rt <- fm_runtime()
  fmalloc_save(1:3, "m", rt)
  err <- tryCatch(fmalloc_get("m", rt), error = function(e) e)
  expect_s3_class(err, "fm_error_earg")
  expect_equal(conditionMessage(err),
               "runtime must be an fmalloc runtime (from open_fmalloc()), not a character string")
  expect_error(fmalloc_list(NULL), "not NULL", class = "fm_error_earg")
  expect_error(fmalloc_delete("m", rt), "not a character string", class = "fm_error_earg")
  expect_error(create_fmalloc_vector("double", 3, list()), "not a list", class = "fm_error_earg")
  expect_error(fmalloc_save(1:3, "k", 1), "not a number", class = "fm_error_earg")
  # straight to C, too
  err <- tryCatch(.Call(Rfmalloc:::C_fmr_runtime_info, "x"), error = function(e) e)
  expect_s3_class(err, "fm_error_earg")
  expect_match(conditionMessage(err), "not a character string", fixed = TRUE)
})

test_that("element and region reads right after an undetected truncation raise, never SIGBUS", {
  # run in a child process so that a regression fails this test instead of
  # killing the suite
  out <- rscript_child(packages = "Rfmalloc", c(
    "p <- tempfile(fileext = '.fm'); rt <- open_fmalloc(p, size_gb = 0.05)",
    "x <- create_fmalloc_vector('double', 1e6, rt); x[] <- 1",
    "xi <- create_fmalloc_vector('integer', 1e6, rt); xi[] <- 1L",
    "stopifnot(system2('truncate', c('-s', '2200000', p)) == 0)",
    "r <- c(tryCatch({x[1e6]; 'no error'}, fm_error_eformat = function(e) 'eformat'),",
    "       tryCatch({rev(xi); 'no error'}, fm_error_eformat = function(e) 'eformat'),",
    "       tryCatch({x[999999:1e6]; 'no error'}, fm_error_eformat = function(e) 'eformat'))",
    "cat(r, sep = '\\n')"))
  expect_identical(tail(out, 3), rep("eformat", 3))
})

test_that("functions taking a runtime use the session's default scratch runtime (issue 14, defect 7)", {
  rt <- fmalloc_default_runtime()
  expect_s3_class(rt, "fmalloc_runtime")
  expect_identical(fmalloc_default_runtime(), rt) # one per session
  info <- fmalloc_info(rt)
  expect_identical(info$mode, "scratch")
  expect_identical(dirname(info$path), normalizePath(tempdir()))
  expect_match(paste(capture.output(print(rt)), collapse = "\n"), info$path, fixed = TRUE)
  before <- info$used_bytes
  g <- matrix(c(0, 1, 2, NA, 2, 0), 3, 2)
  X <- fmalloc_bed(g)
  expect_equal(unname(as.matrix(X)), g)
  v <- create_fmalloc_vector("double", 100)
  expect_identical(fmalloc_runtime_of(v), rt)
  m <- create_fmalloc_matrix("integer", 4, 5)
  expect_identical(dim(m), c(4L, 5L))
  D <- fmalloc_dosage(g)
  expect_equal(unname(as.matrix(D)), g)
  expect_gt(fmalloc_info(rt)$used_bytes, before)
  # an explicit runtime wins
  own <- open_fmalloc(tempfile(), size_gb = 0.01, mode = "scratch")
  on.exit(cleanup_fmalloc(own), add = TRUE)
  expect_identical(fmalloc_runtime_of(create_fmalloc_vector("double", 3, own)), own)
  # closed: the next use makes a new one in a fresh child process
  out <- rscript_child(c(
    "suppressPackageStartupMessages(library(Rfmalloc))",
    "a <- fmalloc_default_runtime(); p <- fmalloc_info(a)$path",
    "cleanup_fmalloc(a)",
    "b <- fmalloc_default_runtime()",
    "cat('renewed', fmalloc_is_open(b), fmalloc_info(b)$path != p, '\\n')",
    "options(fmalloc.default_runtime_gb = -1); cleanup_fmalloc(b)",
    "e <- tryCatch(fmalloc_bed(matrix(0, 1, 1)), error = function(e) e)",
    "cat('bad option', inherits(e, 'fm_error_earg'), grepl('fmalloc.default_runtime_gb', conditionMessage(e)), '\\n')"))
  expect_child_lines(out, c("renewed TRUE TRUE", "bad option TRUE TRUE"))
})

test_that("under a virtual-memory limit the default runtime takes a smaller cap, or says how to set one", {
  # a child shell with ulimit -v (KiB) as on clusters (SGE h_vmem)
  limited <- function(kib) c("bash", "-c", shQuote(sprintf('ulimit -v %d; exec "$0" "$@"', kib)))
  out <- rscript_child(c(
    "x <- create_fmalloc_vector('double', 3); x[] <- 1:3",
    "cap <- fmalloc_info(fmalloc_default_runtime())$cap_bytes / 2^30",
    "cat('cap', cap %in% 2^(0:2), sum(x), '\\n')",
    "options(fmalloc.default_runtime_gb = 1024); cleanup_fmalloc(fmalloc_default_runtime())",
    "e <- tryCatch(create_fmalloc_vector('double', 3), error = identity)",
    "cat('set', class(e)[1], deparse(conditionCall(e)), '\\n')",
    "cat(conditionMessage(e), '\\n')"),
    packages = "Rfmalloc", prefix = limited(4000000))
  expect_child_lines(out, c("cap TRUE 6", "set fm_error_enospc fmalloc_default_runtime()"))
  expect_true(any(grepl("Rfmalloc: the default runtime's cap is [124] GiB, not 1024", out)),
              info = paste(out, collapse = "\n"))
  expect_true(any(grepl("^cannot reserve 1099511627776 bytes of address space .*options\\(fmalloc.default_runtime_gb = <GiB>\\)",
                        out)), info = paste(out, collapse = "\n"))
})

test_that("choice arguments raise fm_error_earg naming the choices", {
  e <- expect_error(open_fmalloc(tempfile(), 0.01, mode = "scrach"), class = "fm_error_earg")
  expect_match(conditionMessage(e), "mode must be one of 'persistent', 'scratch', not 'scrach'", fixed = TRUE)
  expect_error(open_fmalloc(tempfile(), 0.01, mode = NA), "not NA$", class = "fm_error_earg")
  expect_identical(fm_arg_choice(c("a", "b"), c("a", "b")), "a")
  expect_identical(fm_arg_choice("sc", c("persistent", "scratch")), "scratch")
})

test_that("a scratch runtime over an existing file says so (issue 14, 5)", {
  p <- tempfile(fileext = ".fm")
  rt <- open_fmalloc(p, size_gb = 0.01)
  cleanup_fmalloc(rt)
  e <- expect_error(open_fmalloc(p, mode = "scratch"), class = "fm_error_earg")
  expect_match(conditionMessage(e), "creates a new file, but '.*' already exists")
  expect_true(file.exists(p)) # nothing written is lost
})
