# The llama.cpp oracle itself (tools/llama-oracle/oracle.mjs): the other
# tests trust its answers, so its commands are checked on the fixtures here.

test_that("the oracle tokenizes 'Once upon a time' as llama.cpp's SentencePiece does", {
  skip_if_no_oracle()
  m <- gguf_fixture("stories260K.gguf")
  # Ids read by hand from tokenizer.ggml.tokens of stories260K.gguf:
  # 1 "<s>", 403 "\u2581Once", 407 "\u2581upon", 261 "\u2581a", 378 "\u2581time"
  # (SentencePiece adds the space prefix; add_bos_token is absent, and
  # llama.cpp's default for an spm vocab is to add BOS).
  tok <- llama_oracle("tokenize", m, text = "Once upon a time", add_special = TRUE)
  expect_identical(tok$tokens, c(1L, 403L, 407L, 261L, 378L))
  tok <- llama_oracle("tokenize", m, text = "Once upon a time")
  expect_identical(tok$tokens, c(403L, 407L, 261L, 378L))
  # byte fallback: "\u0436" is not in the 512-token vocab, so its UTF-8
  # bytes D0 B6 become <0xD0> <0xB6> (ids 3 + byte) after "\u2581" (410)
  tok <- llama_oracle("tokenize", m, text = "\u0436")
  expect_identical(tok$tokens, c(410L, 3L + c(0xD0L, 0xB6L)))
  # special tokens in text are plain text unless parsed
  plain <- llama_oracle("tokenize", m, text = "<s>")$tokens
  expect_false(1L %in% plain)
  expect_identical(llama_oracle("tokenize", m, text = "<s>", parse_special = TRUE)$tokens, 1L)
})

test_that("the oracle detokenizes to bytes", {
  skip_if_no_oracle()
  m <- gguf_fixture("stories260K.gguf")
  # llama.cpp drops the space prefix of the first piece, but not after BOS
  d <- llama_oracle("detokenize", m, tokens = c(403, 407, 261, 378))
  expect_identical(d$bytes, charToRaw("Once upon a time"))
  d <- llama_oracle("detokenize", m, tokens = c(1, 403, 407, 261, 378))
  expect_identical(d$bytes, charToRaw(" Once upon a time"))
  d <- llama_oracle("detokenize", m, tokens = 3 + c(0xD0, 0xB6))
  expect_identical(d$bytes, as.raw(c(0xD0, 0xB6)))
})

test_that("the oracle loads vocab-only GGUFs and matches an upstream tokenizer vector", {
  skip_if_no_oracle()
  v <- gguf_fixture("vocab", "ggml-vocab-llama-spm.gguf")
  inp <- readBin(paste0(v, ".inp"), "raw", file.size(paste0(v, ".inp")))
  cases <- strsplit(rawToChar(inp), "\n__ggml_vocab_test__\n", fixed = TRUE)[[1]]
  out <- readLines(paste0(v, ".out"), warn = FALSE)
  expect_length(cases, 46L)
  for (i in c(1L, 10L, 46L)) {
    want <- if (nzchar(trimws(out[i]))) as.integer(strsplit(trimws(out[i]), " +")[[1]]) else integer()
    got <- llama_oracle("tokenize", v, text = cases[i])$tokens
    expect_identical(got, want, info = sprintf("case %d", i))
  }
  info <- llama_oracle("info", v, vocab_only = TRUE)
  expect_equal(info$n_vocab, 32000)
  expect_identical(info$vocabulary_type, "spm")
})

test_that("the oracle generates 64 greedy tokens, the same from text and from ids", {
  skip_if_no_oracle()
  m <- gguf_fixture("stories260K.gguf")
  g <- llama_oracle("generate", m, prompt = "Once upon a time", add_special = TRUE, n = 64)
  expect_identical(g$prompt_tokens, c(1L, 403L, 407L, 261L, 378L))
  expect_length(g$tokens, 64L)
  expect_true(all(g$tokens >= 0L & g$tokens < 512L))
  g2 <- llama_oracle("generate", m, tokens = g$prompt_tokens, n = 8)
  expect_identical(g2$tokens, g$tokens[1:8])
  # greedy: each generated token is the argmax of the logits before it
  l <- llama_oracle("logits", m, tokens = c(g$prompt_tokens, g$tokens[1:3]), all = TRUE)
  expect_identical(apply(l$logits[, 5:8], 2, which.max) - 1L, g$tokens[1:4])
})

test_that("the oracle's logits are a full log-softmax per position with a top5", {
  skip_if_no_oracle()
  m <- gguf_fixture("stories260K.gguf")
  ids <- c(1L, 403L, 407L, 261L, 378L)
  last <- llama_oracle("logits", m, tokens = ids)
  expect_identical(dim(last$logits), c(512L, 1L))
  expect_identical(last$positions, 4L)
  expect_equal(sum(exp(last$logits)), 1, tolerance = 1e-5)
  expect_length(unique(last$top5), 5L)
  expect_true(all(last$top5 >= 0L & last$top5 < 512L))
  expect_identical(last$top5, order(-last$logits[, 1], seq_len(512))[1:5] - 1L)
  all <- llama_oracle("logits", m, tokens = ids, all = TRUE)
  expect_identical(dim(all$logits), c(512L, 5L))
  expect_identical(all$positions, 0:4)
  # whole-prefix evaluation in one batch equals the last-only request
  expect_equal(all$logits[, 5], last$logits[, 1], tolerance = 1e-6)
  # the first position after BOS differs from the last
  expect_gt(max(abs(all$logits[, 1] - all$logits[, 5])), 1)
})

test_that("the oracle returns an embedding of n_embd values and reports errors", {
  skip_if_no_oracle()
  m <- gguf_fixture("stories260K.gguf")
  e <- llama_oracle("embed", m, tokens = c(1, 403, 407), pooling = "mean")
  expect_length(e$embedding, 64L)
  expect_true(all(is.finite(e$embedding)))
  e_last <- llama_oracle("embed", m, tokens = c(1, 403, 407), pooling = "last")
  expect_gt(max(abs(e$embedding - e_last$embedding)), 1e-3)
  expect_error(llama_oracle("logits", m, tokens = 999), "not an integer in \\[0, 512\\)")
  expect_error(llama_oracle("logits", tempfile(fileext = ".gguf"), tokens = 1), "does not exist|cannot open")
})

test_that("the minimal JSON parser reads what the oracle prints", {
  x <- json_parse_min('{"a":[1,2.5,-3e-2,null],"b":"x\\"y\\u00e9\\n","c":[[1,2],[3,4]],"d":true,"e":null,"f":[],"g":{"h":[1]}}')
  expect_identical(x$a, c(1, 2.5, -0.03, NA))
  expect_identical(x$b, "x\"y\u00e9\n")
  expect_identical(x$c, rbind(c(1, 2), c(3, 4)))
  expect_true(x$d)
  expect_null(x$e)
  expect_length(x$f, 0L)
  expect_identical(x$g$h, 1)
  expect_identical(oracle_convert(list(logits = x$c))$logits, cbind(c(1, 2), c(3, 4)))
})
