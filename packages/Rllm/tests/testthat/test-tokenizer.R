# The tokenizer (rllm_tokenizer, rllm_tokenize, rllm_detokenize, rllm_vocab)
# against llama.cpp's upstream test vectors (../shared/fixtures/gguf/vocab:
# 46 cases for each of five vocabularies, tokenized with add_special and
# parse_special FALSE), hand-checked ids of stories260K's 512-token
# SentencePiece vocabulary, and, when node is there, llama.cpp itself.

# The cases of one vocabulary: list(text = list of raw, ids = list of integer).
vocab_cases <- function(name) {
  v <- gguf_fixture("vocab", paste0("ggml-vocab-", name, ".gguf"))
  inp <- paste0(v, ".inp")
  txt <- rawToChar(readBin(inp, "raw", file.size(inp)))
  # strsplit drops the empty piece after the final separator, as the format says
  cases <- strsplit(txt, "\n__ggml_vocab_test__\n", fixed = TRUE, useBytes = TRUE)[[1]]
  out <- readLines(paste0(v, ".out"), warn = FALSE, encoding = "bytes")
  ids <- lapply(out, function(l) {
    l <- trimws(l)
    if (!nzchar(l)) integer() else as.integer(strsplit(l, " ", fixed = TRUE)[[1]])
  })
  list(path = v, text = lapply(cases, charToRaw), ids = ids)
}

vocab_names <- c("llama-spm", "gpt-2", "deepseek-coder", "falcon", "bert-bge")

test_that("all 46 upstream cases of each of the 5 vocabularies give llama.cpp's ids (230/230)", {
  total <- 0L
  for (name in vocab_names) {
    cs <- vocab_cases(name)
    expect_length(cs$text, 46L)
    expect_length(cs$ids, 46L)
    tok <- rllm_tokenizer(cs$path)
    got <- lapply(cs$text, function(b) rllm_tokenize(tok, b, add_special = FALSE, parse_special = FALSE))
    same <- mapply(identical, got, cs$ids)
    expect_true(all(same), label = sprintf("%s: cases %s", name, paste(which(!same), collapse = ",")))
    total <- total + sum(same)
    # SentencePiece and byte-level BPE are lossless on these texts
    if (name != "bert-bge") {
      back <- lapply(got, function(ids) rllm_detokenize(tok, ids))
      expect_identical(back, cs$text, label = sprintf("%s round trips", name))
    }
  }
  expect_identical(total, 230L)
})

test_that("a string and its UTF-8 bytes tokenize alike", {
  tok <- rllm_tokenizer(gguf_fixture("vocab", "ggml-vocab-gpt-2.gguf"))
  s <- "Gr\u00fc\u00dfe, \u4e16\u754c! \U0001F999"
  expect_identical(rllm_tokenize(tok, s), rllm_tokenize(tok, charToRaw(enc2utf8(s))))
  latin1 <- iconv(s <- "caf\u00e9", "UTF-8", "latin1")
  expect_identical(rllm_tokenize(tok, latin1), rllm_tokenize(tok, charToRaw(enc2utf8(s))))
  b <- rawToChar(as.raw(c(0x61, 0xff, 0x62)))
  Encoding(b) <- "bytes"
  expect_identical(rllm_tokenize(tok, b), rllm_tokenize(tok, as.raw(c(0x61, 0xff, 0x62))))
})

test_that("a string holding bytes that are not UTF-8 tokenizes as those bytes (byte fallback)", {
  tok <- rllm_tokenizer(gguf_fixture("stories260K.gguf"))
  bytes <- as.raw(c(0xff, 0xfe))
  s <- "\xff\xfe"
  expect_identical(Encoding(s), "unknown")
  ids <- rllm_tokenize(tok, s, add_special = FALSE)
  expect_identical(ids, rllm_tokenize(tok, bytes, add_special = FALSE))
  expect_identical(rllm_vocab(tok)$text[ids + 1L], c("\u2581", "<0xFF>", "<0xFE>")) # space prefix, bytes
  expect_identical(rllm_detokenize(tok, rllm_tokenize(tok, s)), bytes)
  # marked UTF-8 but malformed: its bytes as well, not R's "<ff>" escapes
  u <- "a\xffb"
  Encoding(u) <- "UTF-8"
  expect_identical(rllm_tokenize(tok, u), rllm_tokenize(tok, as.raw(c(0x61, 0xff, 0x62))))
  # latin1 is translated: e-acute is C3 A9 in UTF-8, not the latin1 byte E9
  l <- "caf\xe9"
  Encoding(l) <- "latin1"
  expect_identical(rllm_tokenize(tok, l), rllm_tokenize(tok, charToRaw("caf\u00e9")))
  expect_false(identical(rllm_tokenize(tok, l), rllm_tokenize(tok, charToRaw(l))))
})

test_that("stories260K: ids, BOS, byte fallback and a character split across tokens", {
  tok <- rllm_tokenizer(gguf_fixture("stories260K.gguf"))
  expect_s3_class(tok, "rllm_tokenizer")
  expect_identical(tok$model, "llama")
  expect_identical(tok$n_vocab, 512L)
  expect_identical(c(tok$bos, tok$eos, tok$unk), c(1L, 2L, 0L))
  expect_true(tok$add_bos)
  expect_false(tok$add_eos)
  expect_true(is.na(tok$sep)) # stored as 4294967295: none
  # ids read from tokenizer.ggml.tokens: 1 <s>, 403 "\u2581Once", 407 "\u2581upon",
  # 261 "\u2581a", 378 "\u2581time"
  expect_identical(rllm_tokenize(tok, "Once upon a time"), c(1L, 403L, 407L, 261L, 378L))
  expect_identical(rllm_tokenize(tok, "Once upon a time", add_special = FALSE), c(403L, 407L, 261L, 378L))
  expect_identical(rllm_tokenize(tok, ""), 1L)
  expect_identical(rllm_tokenize(tok, raw(0), add_special = FALSE), integer())
  # "\u0436" (D0 B6) is not in the vocabulary: "\u2581" (410), then <0xD0> <0xB6> = 3 + byte
  ids <- rllm_tokenize(tok, "\u0436", add_special = FALSE)
  expect_identical(ids, c(410L, 3L + 0xD0L, 3L + 0xB6L))
  # each byte token alone is half a character; together they are the character
  expect_identical(rllm_detokenize(tok, ids[2]), as.raw(0xD0))
  expect_identical(rllm_detokenize(tok, ids[3]), as.raw(0xB6))
  expect_identical(c(rllm_detokenize(tok, ids[2]), rllm_detokenize(tok, ids[3])), charToRaw("\u0436"))
  expect_identical(rawToChar(rllm_detokenize(tok, ids)), "\u0436")
  v <- rllm_vocab(tok)
  expect_identical(v$bytes[[ids[2] + 1L]], as.raw(0xD0))
  expect_identical(v$type[1:4], c("unknown", "control", "control", "byte"))
  # 4-byte character: four byte tokens, reassembled
  s <- "a\U0001F600b"
  ids <- rllm_tokenize(tok, s, add_special = FALSE)
  expect_true(all(3L + c(0xF0L, 0x9FL, 0x98L, 0x80L) %in% ids))
  expect_identical(rllm_detokenize(tok, ids), charToRaw(s))
  # bytes that are not UTF-8 survive as byte tokens
  bad <- as.raw(c(0x61, 0xC3, 0x28, 0xFF, 0x80, 0x62))
  expect_identical(rllm_detokenize(tok, rllm_tokenize(tok, bad)), bad)
  # a round trip with BOS: the control token gives nothing, the space prefix is dropped
  expect_identical(rawToChar(rllm_detokenize(tok, c(1L, 403L, 407L, 261L, 378L))), "Once upon a time")
  expect_identical(rawToChar(rllm_detokenize(tok, c(1L, 403L), special = TRUE)), "<s> Once")
  # a continuation keeps its space
  expect_identical(rawToChar(rllm_detokenize(tok, c(407L, 261L), strip_space = FALSE)), " upon a")
})

test_that("special tokens in text are plain text unless parse_special", {
  tok <- rllm_tokenizer(gguf_fixture("stories260K.gguf"))
  plain <- rllm_tokenize(tok, "<s>hi</s>", add_special = FALSE)
  expect_false(any(c(1L, 2L) %in% plain))
  expect_identical(rawToChar(rllm_detokenize(tok, plain)), "<s>hi</s>")
  parsed <- rllm_tokenize(tok, "<s>hi</s>", add_special = FALSE, parse_special = TRUE)
  hi <- rllm_tokenize(tok, "hi", add_special = FALSE) # text after a special token gets the space prefix
  expect_identical(parsed, c(1L, hi, 2L))
  expect_identical(rawToChar(rllm_detokenize(tok, parsed)), "hi")
  expect_identical(rawToChar(rllm_detokenize(tok, parsed, special = TRUE)), "<s> hi</s>")

  gpt <- rllm_tokenizer(gguf_fixture("vocab", "ggml-vocab-gpt-2.gguf"))
  expect_identical(gpt$pre, "gpt-2")
  expect_false(gpt$add_bos)
  txt <- "a<|endoftext|>b"
  expect_false(50256L %in% rllm_tokenize(gpt, txt))
  expect_identical(rllm_tokenize(gpt, txt, parse_special = TRUE), c(64L, 50256L, 65L))

  bert <- rllm_tokenizer(gguf_fixture("vocab", "ggml-vocab-bert-bge.gguf"))
  expect_identical(rllm_tokenize(bert, "Hello world"), c(101L, 7592L, 2088L, 102L))
  expect_identical(rllm_tokenize(bert, "a [SEP] b", add_special = FALSE), c(1037L, 1031L, 19802L, 1033L, 1038L))
  expect_identical(rllm_tokenize(bert, "a [SEP] b", add_special = FALSE, parse_special = TRUE),
                   c(1037L, 102L, 1038L))
  expect_identical(rawToChar(rllm_detokenize(bert, c(101L, 7592L, 2088L, 102L))), "hello world")

  # deepseek-coder's user-defined tokens (the bytes F5.. FF as GPT-2
  # characters, e.g. 32009 "\u00fc") are matched even without parse_special
  ds <- rllm_tokenizer(gguf_fixture("vocab", "ggml-vocab-deepseek-coder.gguf"))
  expect_identical(rllm_tokenize(ds, "F\u00fchrer", add_special = FALSE), c(37L, 32009L, 71L, 6247L))
  expect_identical(ds$bos, 32013L)
  expect_identical(rllm_tokenize(ds, "x")[1], 32013L) # add_bos_token TRUE
})

test_that("tokenizers come from paths, gguf_file handles and model objects, and survive saving", {
  path <- gguf_fixture("stories260K.gguf")
  tok <- rllm_tokenizer(path)
  g <- Rgguf::gguf_open(path)
  tg <- rllm_tokenizer(g)
  expect_identical(rllm_tokenize(tg, "Once upon a time"), rllm_tokenize(tok, "Once upon a time"))
  model <- structure(list(tokenizer = tok), class = "rllm_model")
  expect_identical(rllm_tokenize(model, "Once"), c(1L, 403L))
  expect_identical(rllm_detokenize(model, c(403L, 407L)), charToRaw("Once upon"))
  expect_identical(rllm_tokenizer(model), tok)
  f <- tempfile(fileext = ".rds")
  on.exit(unlink(f))
  saveRDS(tok, f)
  tok2 <- readRDS(f) # the external pointer is gone; the file rebuilds it
  expect_identical(rllm_tokenize(tok2, "Once upon a time"), c(1L, 403L, 407L, 261L, 378L))
  out <- format(tok)
  expect_match(out[1], "SentencePiece")
  expect_match(out[1], "512 tokens")
  expect_true(any(grepl("bos 1 '<s>'", out, fixed = TRUE)))
  expect_output(print(tok), "rllm_tokenizer")
})

test_that("bad inputs raise fm_error conditions", {
  tok <- rllm_tokenizer(gguf_fixture("stories260K.gguf"))
  expect_error(rllm_tokenize(tok, c("a", "b")), class = "fm_error_earg")
  expect_error(rllm_tokenize(tok, NA_character_), class = "fm_error_earg")
  expect_error(rllm_tokenize(tok, 1), class = "fm_error_earg")
  expect_error(rllm_tokenize(tok, "a", add_special = NA), class = "fm_error_earg")
  expect_error(rllm_tokenize(list(), "a"), class = "fm_error_earg")
  expect_error(rllm_detokenize(tok, c(1, 512)), class = "fm_error_earg")
  e <- tryCatch(rllm_detokenize(tok, c(1, 512)), error = identity)
  expect_match(conditionMessage(e), "token 2 has id 512")
  expect_error(rllm_detokenize(tok, c(1, NA)), class = "fm_error_earg")
  expect_error(rllm_detokenize(tok, 1.5), class = "fm_error_earg")
  expect_error(rllm_detokenize(tok, -1), class = "fm_error_earg")
  # issue 14: the message names the position, the id, the vocabulary's size
  # and the valid ids, also for ids beyond an int (2^40 was "not a numeric
  # vector") and for NA or fractional ids
  msg <- function(ids) {
    e <- tryCatch(rllm_detokenize(tok, ids), error = identity)
    expect_s3_class(e, "fm_error_earg")
    conditionMessage(e)
  }
  expect_identical(msg(2^40), paste("token 1 has id 1099511627776, outside the vocabulary:",
                                    "the vocabulary has 512 tokens, so ids are 0..511"))
  expect_match(msg(c(1L, 2L, -1L)), "token 3 has id -1, outside the vocabulary: the vocabulary has 512 tokens, so ids are 0..511", fixed = TRUE)
  expect_match(msg(c(1, NA)), "token 2 has id NA, not a whole number: the vocabulary has 512 tokens, so ids are 0..511", fixed = TRUE)
  expect_match(msg(c(3, 1.5, 2^40)), "token 2 has id 1.5, not a whole number", fixed = TRUE)
  expect_identical(rllm_detokenize(tok, integer()), raw(0))
  expect_error(rllm_tokenizer(file.path(tempdir(), "no-such.gguf")), class = "fm_error_eio")
  expect_error(rllm_tokenizer(3), class = "fm_error_earg")
  # a GGUF without a tokenizer
  zoo <- gguf_fixture("derived", "quant-zoo-stories260K.gguf")
  expect_error(rllm_tokenizer(zoo), class = "fm_error_eunsupported")
  # not a GGUF file at all
  f <- tempfile(fileext = ".gguf")
  on.exit(unlink(f))
  writeBin(charToRaw("not a model"), f)
  expect_error(rllm_tokenizer(f), class = "fm_error_eformat")
  # a tokenizer model we do not implement, from GGML's own writer
  skip_if_not(exists("gguf_write", envir = asNamespace("Rgguf")), "Rgguf::gguf_write not available")
  md <- list(tokenizer.ggml.model = "t5",
             tokenizer.ggml.tokens = Rgguf::gguf_str(c("<pad>", "a"), array = TRUE))
  Rgguf::gguf_write(f, metadata = md)
  e <- tryCatch(rllm_tokenizer(f), error = identity)
  expect_s3_class(e, "fm_error_eunsupported")
  expect_match(conditionMessage(e), "t5")
})

test_that("extra strings tokenize as llama.cpp does (oracle)", {
  skip_if_not(exists("skip_if_no_oracle"), "helper-oracle.R not loaded")
  skip_if_no_oracle()
  # one node start per call: two texts per vocabulary
  texts <- c(paste("Hello, y'all! How're you?\n\n  Fine...\t42 * 3.14 = 131.88",
                   "Gr\u00fc\u00dfe aus K\u00f6ln \u2014 \u4e16\u754c\u4f60\u597d \U0001F999\U0001F600",
                   "\u0436\u0451\u043b\u0442\u044b\u0439 caf\u00e9 na\u0308ive \u0915\u093e a\u20ddb 1234567"),
             "def f(x):\n    return x**2  # square\r\n<|endoftext|><s>[CLS]")
  for (name in c("llama-spm", "gpt-2", "deepseek-coder", "falcon", "bert-bge")) {
    v <- gguf_fixture("vocab", paste0("ggml-vocab-", name, ".gguf"))
    tok <- rllm_tokenizer(v)
    s <- texts[1]
    want <- llama_oracle("tokenize", v, text = s)$tokens
    expect_identical(rllm_tokenize(tok, s, add_special = FALSE), want, label = sprintf("%s on mixed text", name))
    s <- texts[2]
    want <- llama_oracle("tokenize", v, text = s, add_special = TRUE, parse_special = TRUE)$tokens
    expect_identical(rllm_tokenize(tok, s, add_special = TRUE, parse_special = TRUE), want,
                     label = sprintf("%s with add_special and parse_special", name))
  }
  m <- gguf_fixture("stories260K.gguf")
  tok <- rllm_tokenizer(m)
  s <- "Once upon a time, Lily met a big \u0436 dog. <s> The end.</s>"
  expect_identical(rllm_tokenize(tok, s), llama_oracle("tokenize", m, text = s, add_special = TRUE)$tokens)
  expect_identical(rllm_tokenize(tok, s, parse_special = TRUE),
                   llama_oracle("tokenize", m, text = s, add_special = TRUE, parse_special = TRUE)$tokens)
})

test_that("the llama3, qwen2 and starcoder pre-tokenizers split as llama.cpp's (oracle)", {
  skip_if_not(exists("skip_if_no_oracle"), "helper-oracle.R not loaded")
  skip_if_no_oracle()
  skip_if_not(exists("gguf_write", envir = asNamespace("Rgguf")), "Rgguf::gguf_write not available")
  # GPT-2's vocabulary and merges, rewritten by GGML's GGUF writer with another
  # tokenizer.ggml.pre: the pre-tokenizer alone decides the differences
  src <- gguf_fixture("vocab", "ggml-vocab-gpt-2.gguf")
  vals <- typed_metadata(Rgguf::gguf_metadata(Rgguf::gguf_open(src)))
  s <- paste("Hello, Y'ALL! How're you?\n\n  Fine...\t42 * 3.14 = 131.88 1234567 x\r\n\r\n y",
             "Gr\u00fc\u00dfe \u4e16\u754c\u4f60\u597d \U0001F999 \u0436\u0451\u043b\u0442\u044b\u0439  \n\t end   ")
  for (pre in c("llama3", "qwen2", "starcoder")) {
    f <- tempfile(fileext = ".gguf")
    vals[["tokenizer.ggml.pre"]] <- Rgguf::gguf_str(pre)
    Rgguf::gguf_write(f, metadata = vals)
    tok <- rllm_tokenizer(f)
    expect_identical(tok$pre, pre)
    expect_identical(rllm_tokenize(tok, s, add_special = FALSE), llama_oracle("tokenize", f, text = s)$tokens,
                     label = sprintf("pre %s", pre))
    unlink(f)
  }
})
