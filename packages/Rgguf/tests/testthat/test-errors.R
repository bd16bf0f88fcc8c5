# Bad GGUF files give R errors of class fm_error_eformat naming the file (and
# the byte offset), never an abort: each case below runs in this R session.

expect_bad_gguf <- function(bytes, pattern = NULL, class = "fm_error_eformat") {
  f <- tempfile(fileext = ".gguf")
  on.exit(unlink(f))
  writeBin(bytes, f)
  e <- tryCatch(gguf_open(f), error = function(e) e)
  testthat::expect_s3_class(e, class)
  testthat::expect_match(conditionMessage(e), basename(f), fixed = TRUE)
  if (!is.null(pattern)) testthat::expect_match(conditionMessage(e), pattern)
  invisible(conditionMessage(e))
}

good_small <- function(...) {
  gguf_bytes(list(kv_str("general.architecture", "llama"), kv_u32("general.alignment", 32)),
             list(gguf_tensor_spec("t", c(4, 2), 0, writeBin(as.double(1:8), raw(), size = 4))), ...)
}

test_that("a hand-written small file opens (the base of the bad cases below)", {
  f <- write_gguf(good_small())
  g <- gguf_open(f)
  expect_identical(gguf_tensor(g, "t", "numeric"), matrix(as.double(1:8), 2, 4, byrow = TRUE))
})

test_that("a header cut short", {
  real <- readBin(fixture_path("gguf", "stories260K.gguf"), "raw", 20000)
  for (n in c(0, 3, 4, 7, 15, 23, 100, 5000, 14000)) {
    expect_bad_gguf(real[seq_len(n)], "offset|bytes|short|end")
  }
  good <- good_small()
  for (n in c(10, 30, 60, length(good) - 40, length(good) - 1)) {
    expect_bad_gguf(good[seq_len(n)])
  }
})

test_that("wrong magic", {
  b <- good_small()
  b[1:4] <- charToRaw("GGUX")
  expect_bad_gguf(b, "magic")
  expect_bad_gguf(charToRaw("this is not a model file at all, just some text"), "magic")
})

test_that("a tensor past the end of the file", {
  b <- good_small(offsets = 4096)
  expect_bad_gguf(b, "t")
  # the data section cut short by one byte
  b <- good_small()
  expect_bad_gguf(b[-length(b)])
})

test_that("a metadata array claiming 2^62 elements (and a string of 2^62 bytes)", {
  kv <- kv_array("big", 4, 2^62, le_u32(1:4))
  b <- gguf_bytes(list(kv_str("general.architecture", "llama"), kv))
  msg <- expect_bad_gguf(b)
  kv <- gguf_kv("s", 8, c(le_u64(2^62), charToRaw("abc")))
  expect_bad_gguf(gguf_bytes(list(kv)))
  # counts of keys and tensors beyond what the bytes can hold
  expect_bad_gguf(gguf_bytes(list(kv_u32("a", 1)), n_kv = 2^40))
})

test_that("a bad alignment: not a power of two, zero, or the wrong type", {
  mk <- function(kv) {
    gguf_bytes(list(kv), list(gguf_tensor_spec("t", c(4), 0, writeBin(as.double(1:4), raw(), size = 4))),
               alignment = 32)
  }
  expect_bad_gguf(mk(kv_u32("general.alignment", 3)), "alignment")
  expect_bad_gguf(mk(kv_u32("general.alignment", 0)), "alignment")
  expect_bad_gguf(mk(kv_str("general.alignment", "32")), "alignment")
  expect_bad_gguf(mk(gguf_kv("general.alignment", 10, le_u64(32))), "alignment")
})

test_that("other malformed directories", {
  # an unknown tensor type, a row that is not a whole number of blocks,
  # duplicate keys
  expect_bad_gguf(gguf_bytes(list(), list(gguf_tensor_spec("t", c(4), 999, raw(16)))))
  expect_bad_gguf(gguf_bytes(list(), list(gguf_tensor_spec("t", c(40), 2, raw(18 * 2)))))
  expect_bad_gguf(gguf_bytes(list(kv_u32("a", 1), kv_u32("a", 2))))
  # version 1 and big versions are unsupported rather than malformed
  expect_bad_gguf(gguf_bytes(version = 1), class = "fm_error_eunsupported")
  expect_bad_gguf(gguf_bytes(version = 99), class = "fm_error_eunsupported")
})

test_that("R is still fine after all of the above", {
  g <- gguf_open(fixture_path("gguf", "stories260K.gguf"))
  expect_identical(nrow(gguf_tensors(g)), 48L)
})
