# A file truncated or rewritten under an open handle: every call that reads
# its mapped bytes checks the file first (one fstat) and raises
# fm_error_eformat instead of R dying of SIGBUS. Growth is fine.

zoo_copy <- function(env = parent.frame()) {
  f <- tempfile(fileext = ".gguf")
  file.copy(quant_zoo(), f)
  do.call(on.exit, list(substitute(unlink(f), list(f = f)), add = TRUE), envir = env)
  f
}

cut_file <- function(f, n) {
  con <- file(f, "r+b")
  on.exit(close(con))
  seek(con, n, rw = "write")
  truncate(con)
}

poke <- function(f, at, bytes) { # overwrite bytes in place at offset `at`
  con <- file(f, "r+b")
  on.exit(close(con))
  seek(con, at, rw = "write")
  writeBin(bytes, con)
}

test_that("after a truncation, views, products, decodes and the directory raise fm_error_eformat", {
  f <- zoo_copy()
  g <- gguf_open(f)
  W <- gguf_tensor(g, "w.Q6_K")
  x <- t(gguf_tensor(g, "x", "numeric"))
  before <- W[1:3, 1]
  y <- W %*% x
  cut_file(f, 2000)
  expect_identical(file.size(f), 2000)
  shrank <- "shrank from 480960 to 2000 bytes since it was opened"
  expect_error(W[1:3, 1], shrank, class = "fm_error_eformat")
  expect_error(W %*% x, shrank, class = "fm_error_eformat")
  expect_error(as.matrix(W), shrank, class = "fm_error_eformat")
  expect_error(crossprod(W), shrank, class = "fm_error_eformat")
  expect_error(Rfmalloc::fmalloc_colVars(W), shrank, class = "fm_error_eformat")
  expect_error(gguf_tensor(g, "w.Q6_K", "numeric"), shrank, class = "fm_error_eformat")
  expect_error(gguf_tensor(g, "w.Q4_K"), shrank, class = "fm_error_eformat")
  expect_error(gguf_metadata(g), shrank, class = "fm_error_eformat")
  expect_error(gguf_tensors(g), shrank, class = "fm_error_eformat")
  # the reference path too (the backend removed)
  .gguf_backend(FALSE)
  on.exit(.gguf_backend(TRUE), add = TRUE)
  expect_error(W %*% x, shrank, class = "fm_error_eformat")
  .gguf_backend(TRUE)
  # a fresh copy opens and reads as before
  f2 <- zoo_copy()
  g2 <- gguf_open(f2)
  expect_identical(gguf_tensor(g2, "w.Q6_K")[1:3, 1], before)
  expect_identical(gguf_tensor(g2, "w.Q6_K") %*% x, y)
})

test_that("growth is fine; a header rewritten in place is detected, tensor bytes are not", {
  f <- zoo_copy()
  g <- gguf_open(f)
  W <- gguf_tensor(g, "w.Q8_0")
  x <- t(gguf_tensor(g, "x", "numeric"))
  y <- W %*% x
  a <- as.matrix(W)
  con <- file(f, "ab")
  writeBin(as.raw(1:100), con)
  close(con)
  expect_identical(W %*% x, y)
  expect_identical(as.matrix(W), a)
  expect_identical(gguf_tensors(g)$name[1], "w.F32")
  # "general.architecture" is the first key: its bytes start at byte 32
  raw0 <- readBin(f, "raw", 40)
  expect_identical(rawToChar(raw0[33:39]), "general")
  poke(f, 32, charToRaw("G"))
  expect_error(gguf_metadata(g), "rewritten since it was opened", class = "fm_error_eformat")
  expect_error(W %*% x, "rewritten", class = "fm_error_eformat")
  expect_error(W[1, 1], "rewritten", class = "fm_error_eformat")
  poke(f, 32, charToRaw("g")) # restored: the header is what was parsed
  expect_identical(W %*% x, y)
  # a tensor byte changed in place is read as it is now (documented)
  off <- gguf_tensors(g)
  off <- off$offset[off$name == "w.Q8_0"]
  poke(f, off + 2, as.raw(0))   # the first block's first quant
  expect_identical(W[1, 1], 0)
  expect_identical(W[1, 2], a[1, 2])
})
