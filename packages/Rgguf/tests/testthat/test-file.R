# gguf_open, gguf_metadata and gguf_tensors on the real stories260K model and
# on hand-written files.

test_that("stories260K: header, metadata with exact types, tensor directory", {
  g <- gguf_open(fixture_path("gguf", "stories260K.gguf"))
  expect_s3_class(g, "gguf_file")
  expect_output(print(g), "GGUF v3 file .*stories260K.gguf")
  expect_output(print(g), "19 metadata keys, 48 tensors, alignment 32")
  expect_output(print(g), "architecture llama")

  md <- gguf_metadata(g)
  ty <- attr(md, "gguf_type")
  expect_length(md, 19L)
  expect_identical(names(ty), names(md))
  expect_identical(md[["general.architecture"]], "llama")
  expect_identical(ty[["general.architecture"]], "string")
  expect_identical(md[["llama.block_count"]], 5)
  expect_identical(ty[["llama.block_count"]], "uint32")
  expect_identical(md[["llama.embedding_length"]], 64)
  expect_identical(md[["llama.attention.head_count_kv"]], 4)
  expect_identical(ty[["llama.attention.layer_norm_rms_epsilon"]], "float32")
  expect_identical(md[["llama.attention.layer_norm_rms_epsilon"]], readBin(writeBin(1e-5, raw(), size = 4), "double", size = 4)) # 1e-5 as float32
  # uint32 4294967295 stays exact (llama.cpp maps it to -1; we do not)
  expect_identical(md[["tokenizer.ggml.padding_token_id"]], 4294967295)
  tok <- md[["tokenizer.ggml.tokens"]]
  expect_identical(ty[["tokenizer.ggml.tokens"]], "array<string>")
  expect_length(tok, 512L)
  expect_identical(tok[1:3], c("<unk>", "<s>", "</s>"))
  expect_identical(tok[4], "<0x00>")
  expect_identical(ty[["tokenizer.ggml.token_type"]], "array<int32>")
  expect_type(md[["tokenizer.ggml.token_type"]], "integer")
  expect_identical(md[["tokenizer.ggml.token_type"]][1:4], c(2L, 3L, 3L, 6L))
  expect_identical(ty[["tokenizer.ggml.scores"]], "array<float32>")
  expect_type(md[["tokenizer.ggml.scores"]], "double")

  d <- gguf_tensors(g)
  expect_s3_class(d, "data.frame")
  expect_identical(nrow(d), 48L)
  expect_identical(names(d), c("name", "type", "type_id", "n_dims", "ne0", "ne1", "ne2", "ne3",
                               "offset", "bytes"))
  expect_true(all(d$type == "f32"))
  e <- d[d$name == "token_embd.weight", ]
  expect_identical(c(e$n_dims, e$ne0, e$ne1, e$ne2, e$ne3), c(2, 64, 512, 1, 1))
  expect_identical(e$bytes, 64 * 512 * 4)
  n <- d[d$name == "blk.0.attn_norm.weight", ]
  expect_identical(c(n$n_dims, n$ne0, n$ne1), c(1, 64, 1))
  # every tensor lies inside the file, 32-byte aligned, not overlapping
  expect_true(all(d$offset %% 32 == 0))
  expect_true(all(d$offset + d$bytes <= file.size(fixture_path("gguf", "stories260K.gguf"))))
  o <- order(d$offset)
  expect_true(all(utils::head(d$offset[o] + d$bytes[o], -1) <= d$offset[o][-1]))
  expect_identical(sum(d$bytes / 4), 292800) # the model's parameter count (README)
})

test_that("the tensor bytes are the file's bytes: a view of an F32 tensor equals readBin at its offset", {
  p <- fixture_path("gguf", "stories260K.gguf")
  g <- gguf_open(p)
  d <- gguf_tensors(g)
  e <- d[d$name == "output.weight", ]
  con <- file(p, "rb")
  on.exit(close(con))
  seek(con, e$offset)
  v <- readBin(con, "double", n = e$ne0 * e$ne1, size = 4, endian = "little")
  W <- gguf_tensor(g, "output.weight", "numeric")
  expect_identical(dim(W), c(512L, 64L))
  expect_identical(W, t(matrix(v, e$ne0, e$ne1)))
  expect_identical(as.matrix(gguf_tensor(g, "output.weight")), W)
  nw <- gguf_tensor(g, "blk.0.attn_norm.weight", "numeric")
  expect_null(dim(nw))
  expect_length(nw, 64L)
  nv <- gguf_tensor(g, "blk.0.attn_norm.weight")
  expect_identical(dim(nv), c(1L, 64L))
  expect_identical(as.vector(as.matrix(nv)), nw)
})

test_that("metadata of every value type, written by hand, reads back exactly", {
  kvs <- list(
    gguf_kv("u8", 0, as.raw(250)),
    gguf_kv("i8", 1, as.raw(0xFE)),                 # -2
    gguf_kv("u16", 2, as.raw(c(0xFF, 0xFF))),       # 65535
    gguf_kv("i16", 3, as.raw(c(0x00, 0x80))),       # -32768
    kv_u32("u32", 4294967295),
    gguf_kv("i32", 5, le_u32(-7)),
    gguf_kv("f32", 6, writeBin(0.1, raw(), size = 4, endian = "little")),
    gguf_kv("bool", 7, as.raw(1)),
    kv_str("str", "h\u00e9llo"),
    gguf_kv("u64", 10, le_u64(2^53)),
    gguf_kv("u64big", 10, as.raw(rep(0xFF, 8))),    # 2^64 - 1
    gguf_kv("i64", 11, c(as.raw(0xFB), as.raw(rep(0xFF, 7)))), # -5
    gguf_kv("i64min", 11, c(raw(7), as.raw(0x80))),  # -2^63
    gguf_kv("f64", 12, writeBin(pi, raw(), endian = "little")),
    kv_array("a_u32", 4, 3, le_u32(c(1, 2, 3e9))),
    kv_array("a_str", 8, 2, c(le_str("a"), le_str(""))),
    kv_array("a_empty", 6, 0, raw(0)),
    kv_array("a_bool", 7, 3, as.raw(c(0, 1, 0))),
    gguf_kv("bytes", 8, c(le_u64(2), as.raw(c(0x61, 0xff)))), # not UTF-8
    gguf_kv("nul", 8, c(le_u64(3), as.raw(c(0x61, 0x00, 0x62))))
  )
  f <- write_gguf(gguf_bytes(kvs))
  md <- gguf_metadata(gguf_open(f))
  ty <- attr(md, "gguf_type")
  expect_identical(unname(ty), c("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                 "bool", "string", "uint64", "uint64", "int64", "int64", "float64",
                                 "array<uint32>", "array<string>", "array<float32>", "array<bool>",
                                 "string", "string"))
  expect_identical(md$u8, 250L)
  expect_identical(md$i8, -2L)
  expect_identical(md$u16, 65535L)
  expect_identical(md$i16, -32768L)
  expect_identical(md$u32, 4294967295)
  expect_identical(md$i32, -7L)
  expect_identical(md$f32, readBin(writeBin(0.1, raw(), size = 4), "double", size = 4))
  expect_identical(md$bool, TRUE)
  expect_identical(md$str, "h\u00e9llo")
  expect_identical(Encoding(md$str), "UTF-8")
  expect_identical(md$u64, 2^53)
  expect_identical(md$u64big, "18446744073709551615")
  expect_identical(md$i64, -5)
  expect_identical(md$i64min, "-9223372036854775808")
  expect_identical(md$f64, pi)
  expect_identical(md$a_u32, c(1, 2, 3e9))
  expect_identical(md$a_str, c("a", ""))
  expect_identical(md$a_empty, numeric(0))
  expect_identical(md$a_bool, c(FALSE, TRUE, FALSE))
  expect_identical(md$bytes, list(as.raw(c(0x61, 0xff))))
  expect_identical(md$nul, list(as.raw(c(0x61, 0x00, 0x62))))
})

test_that("arguments are checked", {
  expect_error(gguf_open(1), class = "fm_error_earg")
  expect_error(gguf_open(c("a", "b")), class = "fm_error_earg")
  # issue 14: NA was "not an object of type character"
  for (p in list(NA_character_, character(0), c("a", "b"), 1, NULL, NA)) {
    e <- tryCatch(gguf_open(p), error = identity)
    expect_s3_class(e, "fm_error_earg")
    expect_match(conditionMessage(e), "path must be one non-NA string (the GGUF file's name), not ",
                 fixed = TRUE)
  }
  msg <- function(p) conditionMessage(tryCatch(gguf_open(p), error = identity))
  expect_match(msg(NA_character_), "not NA_character_$")
  expect_match(msg(NA), "not NA \\(logical\\)$")
  expect_match(msg(character(0)), "not a character vector of length 0$")
  expect_match(msg(c("a", "b")), "not a character vector of length 2$")
  expect_match(msg(1), "not a double vector of length 1$")
  expect_error(gguf_open(tempfile()), class = "fm_error_eio")
  expect_error(gguf_open(tempdir()), class = "fm_error_eio")
  expect_error(gguf_metadata(list()), class = "fm_error_earg")
  expect_error(gguf_tensors("x.gguf"), class = "fm_error_earg")
  g <- gguf_open(fixture_path("gguf", "stories260K.gguf"))
  expect_error(gguf_tensor(g, "no.such.tensor"), "no tensor named 'no.such.tensor'",
               class = "fm_error_earg")
  expect_error(gguf_tensor(g, 3), class = "fm_error_earg")
  expect_error(gguf_tensor(g, "output.weight", as = "raw"))
  expect_error(gguf_threads(0), class = "fm_error_earg")
  expect_error(gguf_threads(1.5), class = "fm_error_earg")
})

test_that("a handle from another session raises fm_error_eclosed", {
  g <- gguf_open(fixture_path("gguf", "stories260K.gguf"))
  f <- tempfile(fileext = ".rds")
  on.exit(unlink(f))
  saveRDS(g, f)
  g2 <- readRDS(f)
  expect_error(gguf_metadata(g2), class = "fm_error_eclosed")
  expect_output(print(g2), "closed")
  expect_length(gguf_metadata(g), 19L)
})

test_that("a 3-D tensor: numeric is an (ne1, ne0, ne2) array, a view stacks ne1 * ne2 rows", {
  v <- as.double(1:12) # GGML element (i0, i1, i2) = 1 + i0 + 3 i1 + 6 i2
  f <- write_gguf(gguf_bytes(list(), list(gguf_tensor_spec("t3", c(3, 2, 2), 0,
                                                           writeBin(v, raw(), size = 4)))))
  g <- gguf_open(f)
  a <- gguf_tensor(g, "t3", "numeric")
  expect_identical(dim(a), c(2L, 3L, 2L))
  expect_identical(a[2, 3, 2], 1 + 2 + 3 * 1 + 6 * 1)  # R [i, j, k] = GGML (j-1, i-1, k-1)
  expect_identical(a[, , 1], matrix(v[1:6], 2, 3, byrow = TRUE))
  V <- gguf_tensor(g, "t3")
  expect_identical(dim(V), c(4L, 3L))
  expect_identical(as.matrix(V), matrix(v, 4, 3, byrow = TRUE))
  expect_identical(V %*% c(1, 0, 0), matrix(v[c(1, 4, 7, 10)], 4, 1))
  expect_identical(Rfmalloc::fmalloc_last_backend(), "ggml")
})
