# Keys and tensor names are UTF-8 text without NUL (the reader refuses other
# bytes with fm_error_eformat naming the byte offset); R gets them as UTF-8
# strings that look the tensor up again. Metadata string values may hold any
# bytes: an entry with a NUL or bytes that are not UTF-8 is a list of raw
# vectors.

le_bytes <- function(b) c(le_u64(length(b)), b) # a GGUF string of raw bytes

expect_bad_name <- function(bytes, pattern) {
  f <- write_gguf(bytes)
  e <- tryCatch(gguf_open(f), error = function(e) e)
  expect_s3_class(e, "fm_error_eformat")
  expect_match(conditionMessage(e), basename(f), fixed = TRUE)
  expect_match(conditionMessage(e), pattern)
}

test_that("a key or tensor name with a NUL or bytes that are not UTF-8 is fm_error_eformat at its byte", {
  key <- function(b) c(le_bytes(b), le_u32(0), as.raw(1)) # a uint8 entry
  # the first key's bytes start at byte 32
  expect_bad_name(gguf_bytes(list(key(as.raw(c(0x61, 0x62, 0x00, 0x63))))),
                  "metadata key at byte 24 holds a NUL byte at byte 34 .*'ab'")
  expect_bad_name(gguf_bytes(list(key(as.raw(c(0x61, 0xff))))),
                  "metadata key at byte 24 is not valid UTF-8 at byte 33 \\(byte 0xff")
  expect_bad_name(gguf_bytes(list(key(as.raw(c(0x6b, 0xc0, 0x80))))), "not valid UTF-8 at byte 33")
  expect_bad_name(gguf_bytes(list(key(as.raw(c(0xed, 0xa0, 0x80))))), "not valid UTF-8 at byte 32")
  tensor <- function(name) c(le_bytes(name), le_u32(1), le_u64(8), le_u32(0), le_u64(0))
  for (nm in list(as.raw(c(0x74, 0x00, 0x75)), as.raw(c(0x74, 0xe9)))) {
    b <- c(charToRaw("GGUF"), le_u32(3), le_u64(1), le_u64(0), tensor(nm))
    b <- c(b, raw((32 - length(b) %% 32) %% 32), raw(32))
    expect_bad_name(b, "tensor name at byte 24 .* at byte 33")
  }
})

test_that("a real model with a NUL written into a key or a tensor name is refused (QA fuzz cases)", {
  real <- readBin(fixture_path("gguf", "stories260K.gguf"), "raw", file.size(fixture_path("gguf", "stories260K.gguf")))
  for (word in c("tokenizer.ggml.bos_token_id", "blk.2.ffn_up.weight")) {
    at <- grepRaw(word, real, fixed = TRUE)
    b <- real
    b[at + 3L] <- as.raw(0)
    expect_bad_name(b, sprintf("holds a NUL byte at byte %d", at + 2L))
    b[at + 3L] <- as.raw(0xfe)
    expect_bad_name(b, sprintf("not valid UTF-8 at byte %d", at + 2L))
  }
})

test_that("UTF-8 keys and tensor names come back as UTF-8 and find their tensor", {
  v <- as.double(1:8)
  name <- "w\u00e9.\u00df\U0001F600"
  f <- write_gguf(gguf_bytes(list(kv_str("cl\u00e9", "valeur \u00e0")),
                             list(gguf_tensor_spec(name, c(4, 2), 0, writeBin(v, raw(), size = 4)))))
  g <- gguf_open(f)
  md <- gguf_metadata(g)
  expect_identical(names(md), "cl\u00e9")
  expect_identical(Encoding(names(md)), "UTF-8")
  expect_identical(md[["cl\u00e9"]], "valeur \u00e0")
  d <- gguf_tensors(g)
  expect_identical(d$name, name)
  expect_identical(Encoding(d$name), "UTF-8")
  want <- matrix(v, 2, 4, byrow = TRUE)
  expect_identical(gguf_tensor(g, d$name[1], "numeric"), want)
  expect_identical(as.matrix(gguf_tensor(g, d$name[1])), want)
  # the same text in another encoding is the same name
  latin <- iconv("w\u00e9", "UTF-8", "latin1")
  f2 <- write_gguf(gguf_bytes(list(), list(gguf_tensor_spec("w\u00e9", 4, 0, writeBin(v[1:4], raw(), size = 4)))))
  expect_identical(gguf_tensor(gguf_open(f2), latin, "numeric"), v[1:4])
  # a string marked "bytes" is looked up by its bytes: not found, an fm_error
  b <- rawToChar(as.raw(c(0x77, 0xe9)))
  Encoding(b) <- "bytes"
  expect_error(gguf_tensor(g, b), "no tensor named", class = "fm_error_earg")
  expect_error(gguf_tensor(g, b, "numeric"), class = "fm_error_earg")
})

test_that("string values with a NUL or bytes that are not UTF-8 are lists of raw vectors", {
  kvs <- list(
    gguf_kv("general.name", 8, le_bytes(as.raw(c(0x61, 0xff)))),
    gguf_kv("nul", 8, le_bytes(as.raw(c(0x61, 0x00, 0x62)))),
    kv_array("tokens", 8, 3, c(le_str("a"), le_bytes(as.raw(0xc3)), le_str("\u00e9"))),
    kv_array("ok", 8, 2, c(le_str("a"), le_str("\u00e9"))),
    kv_str("general.architecture", "llama"))
  g <- gguf_open(write_gguf(gguf_bytes(kvs)))
  md <- gguf_metadata(g)
  expect_identical(md$general.name, list(as.raw(c(0x61, 0xff))))
  expect_identical(md$nul, list(as.raw(c(0x61, 0x00, 0x62))))
  expect_identical(md$tokens, list(charToRaw("a"), as.raw(0xc3), as.raw(c(0xc3, 0xa9))))
  expect_identical(md$ok, c("a", "\u00e9"))
  expect_identical(unname(attr(md, "gguf_type")), c("string", "string", "array<string>", "array<string>", "string"))
  expect_output(print(g), "architecture llama") # a raw general.name is left out
})
