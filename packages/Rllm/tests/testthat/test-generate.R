# Generation: greedy tokens against llama.cpp, the tie-break rule, seeded
# sampling, caches and timings; pooled embeddings.

gen_variants <- c("stories260K.gguf", "derived/stories260K-F16.gguf",
                  "derived/stories260K-Q8_0.gguf", "derived/stories260K-Q4_0.gguf",
                  "derived/stories260K-Q4_K_M.gguf")

test_that("64 greedy tokens after 'Once upon a time' equal llama.cpp's", {
  skip_if_no_oracle()
  for (f in gen_variants) {
    path <- gguf_fixture(f)
    m <- test_model(path, threads = 1)
    ref <- llama_oracle("generate", path, prompt = "Once upon a time", add_special = TRUE, n = 64,
                        threads = 1)
    ours <- rllm_generate(m, ref$prompt_tokens, n_new = 64, stop_at_eog = FALSE)
    expect_identical(ours$tokens, ref$tokens, label = f)
  }
})

test_that("greedy generation on stories260K gives the recorded story", {
  m <- test_model(gguf_fixture("stories260K.gguf"), threads = 1)
  g <- rllm_generate(m, c(1L, 403L, 407L, 261L, 378L), n_new = 16)
  # llama.cpp's (node-llama-cpp 3.21.1) first 16 greedy tokens.
  expect_identical(g$tokens, c(432L, 383L, 286L, 261L, 376L, 298L, 315L, 421L, 395L, 317L,
                               426L, 338L, 401L, 396L, 267L, 337L))
  expect_identical(g$prompt_tokens, c(1L, 403L, 407L, 261L, 378L))
  expect_identical(g$timings$n_prefill, 5L)
  expect_identical(g$timings$n_decode, 15L)
  expect_identical(Rllm:::.rllm_eog_ids(m), 2L) # </s>: generation stops after it
  expect_true(g$timings$prefill_s >= 0 && g$timings$decode_s >= 0)
  skip_if(is.null(m$tokenizer), "tokenizer not available")
  expect_identical(rawToChar(g$raw), ", there was a little girl named Lily. She loved to play")
  expect_s3_class(g, "rllm_generation")
  out <- capture.output(print(g))
  expect_match(out[1], "^<rllm_generation> 16 token\\(s\\) after a prompt of 5; [0-9.]+ tokens/s \\(decode\\), 1 thread")
  expect_identical(out[2], ", there was a little girl named Lily. She loved to play")
  # A text prompt is tokenized with BOS (add_bos by default for SentencePiece).
  g2 <- rllm_generate(m, "Once upon a time", n_new = 16)
  expect_identical(g2$tokens, g$tokens)
  expect_identical(rllm_generate(m, charToRaw("Once upon a time"), n_new = 16)$tokens, g$tokens)
  # The bytes continue the prompt's: a generated token's leading space stays
  # (after "time," the story goes on with "▁there").
  g3 <- rllm_generate(m, "Once upon a time,", n_new = 8)
  expect_identical(substr(rawToChar(g3$raw), 1, 1), " ")
  expect_identical(paste0("Once upon a time,", rawToChar(g3$raw)),
                   rawToChar(rllm_detokenize(m, c(g3$prompt_tokens, g3$tokens))))
})

test_that("greedy ties go to the lowest token id; -Inf never wins", {
  expect_identical(rllm_sample(c(1, 3, 3, 2)), 1L)
  # NaN logits are refused (issue 14; they were skipped): -Inf masks a token
  expect_error(rllm_sample(c(NaN, 5, 7, 7, NaN)), "logits\\[1\\] is NaN", class = "fm_error_earg")
  expect_identical(rllm_sample(c(-Inf, 5, 7, 7, -Inf)), 2L)
  expect_identical(rllm_sample(c(-Inf, -Inf, 0)), 2L)
  expect_error(rllm_sample(c(NaN, NaN)), "must not contain NA or NaN", class = "fm_error_earg")
  # top_k = 1 or a tiny top_p also pick the lowest-id maximum.
  expect_identical(rllm_sample(c(1, 3, 3, 2), temperature = 1, top_k = 1, n = 10), rep(1L, 10))
  expect_identical(rllm_sample(c(1, 3, 3, 2), temperature = 1, top_k = 0, top_p = 1e-9, n = 10),
                   rep(1L, 10))
})

test_that("logits that are NA, NaN, Inf or all -Inf are refused by name (issue 14)", {
  bad <- function(x, ...) tryCatch(rllm_sample(x, ...), error = identity)
  for (t in c(0, 1)) {
    e <- bad(c(-Inf, -Inf), temperature = t)
    expect_s3_class(e, "fm_error_earg")
    expect_match(conditionMessage(e), "logits have no finite value: all 2 are -Inf", fixed = TRUE)
    e <- bad(c(1, NA, 3, NA), temperature = t)
    expect_s3_class(e, "fm_error_earg")
    expect_match(conditionMessage(e), "logits must not contain NA or NaN: logits[2] is NA", fixed = TRUE)
    e <- bad(c(1, 2, NaN), temperature = t)
    expect_s3_class(e, "fm_error_earg")
    expect_match(conditionMessage(e), "logits must not contain NA or NaN: logits[3] is NaN", fixed = TRUE)
    # +Inf (before, a temperature drew the smallest logit: exp(Inf - Inf) is NaN)
    e <- bad(c(1, Inf, 3), temperature = t)
    expect_s3_class(e, "fm_error_earg")
    expect_match(conditionMessage(e), "logits[2] is Inf: a logit must be finite or -Inf", fixed = TRUE)
    # beyond a float's range: +Inf or -Inf as the sampler's float
    e <- bad(c(1, 1e39), temperature = t)
    expect_s3_class(e, "fm_error_earg")
    expect_match(conditionMessage(e), "logits[2] is 1e+39, beyond a float's range", fixed = TRUE)
    e <- bad(c(-1e39, -Inf), temperature = t)
    expect_s3_class(e, "fm_error_earg")
    expect_match(conditionMessage(e), "no finite value", fixed = TRUE)
  }
  # n = 0 checks the logits too; finite values beside -Inf are fine
  expect_error(rllm_sample(c(1, NA), n = 0), class = "fm_error_earg")
  expect_identical(rllm_sample(c(-Inf, 1e38, -3e38)), 1L)
  expect_identical(rllm_sample(c(-Inf, 2, -Inf), temperature = 1, seed = 1, n = 3), rep(1L, 3))
})

test_that("generation: logits with no value above -Inf stop it as fm_error_edegenerate", {
  # Generated random-weight qwen2 models (arch_gguf.R): NaN output weights
  # make every logit NaN; one NaN weight of a token makes its logit NaN.
  nan_out <- function(ids) function(tn) {
    w <- tn$output.weight
    x <- w$data
    for (id in ids) x[id * w$dim[1] + 1] <- NaN
    tn$output.weight <- Rgguf::gguf_tensor_data(x, "F32", dim = w$dim)
    tn
  }
  f0 <- tempfile(fileext = ".gguf")
  f1 <- tempfile(fileext = ".gguf")
  f2 <- tempfile(fileext = ".gguf")
  on.exit(unlink(c(f0, f1, f2)), add = TRUE)
  arch_gguf_write("qwen2", f0)
  arch_gguf_write("qwen2", f1, edit = nan_out(0:511))
  m0 <- test_model(f0, threads = 1)
  m1 <- test_model(f1, threads = 1)
  ids <- arch_gguf_tokens()
  expect_true(all(is.nan(rllm_logits(m1, ids))))
  for (t in c(0, 1)) {
    e <- tryCatch(rllm_generate(m1, ids, n_new = 3, temperature = t, seed = 1), error = identity)
    expect_s3_class(e, "fm_error_edegenerate")
    expect_match(conditionMessage(e), "every logit is NaN or -Inf at generated token 1", fixed = TRUE)
  }
  # A NaN logit of the greedy choice: generation goes on with the next best
  # (the core's sampler never draws NaN), as before issue 14.
  g0 <- rllm_generate(m0, ids, n_new = 8, stop_at_eog = FALSE)
  l0 <- rllm_logits(m0, ids)
  expect_identical(g0$tokens[1], rllm_sample(l0))
  arch_gguf_write("qwen2", f2, edit = nan_out(g0$tokens[1]))
  m2 <- test_model(f2, threads = 1)
  second <- order(-l0)[2] - 1L
  g2 <- rllm_generate(m2, ids, n_new = 8, stop_at_eog = FALSE)
  expect_identical(g2$tokens[1], second)
  expect_length(g2$tokens, 8L)
  expect_false(g0$tokens[1] %in% g2$tokens)
})

test_that("sampling follows softmax(logits / temperature) and is deterministic per seed", {
  x <- c(0, 1, 2, 3)
  d <- rllm_sample(x, temperature = 1, top_k = 0, top_p = 1, seed = 1, n = 20000)
  p <- exp(x) / sum(exp(x))
  expect_lt(max(abs(tabulate(d + 1L, 4) / 20000 - p)), 0.015)
  # top_k = 2 keeps ids 3 and 2 only.
  d2 <- rllm_sample(x, temperature = 1, top_k = 2, top_p = 1, seed = 1, n = 2000)
  expect_setequal(unique(d2), c(2L, 3L))
  # top_p = 0.6: p(3) = 0.64 reaches it alone.
  expect_identical(unique(rllm_sample(x, temperature = 1, top_k = 0, top_p = 0.6, n = 100)), 3L)
  expect_identical(rllm_sample(x, temperature = 2, seed = 9, n = 50),
                   rllm_sample(x, temperature = 2, seed = 9, n = 50))
  set.seed(3)
  a <- rllm_sample(x, temperature = 1, n = 50)
  set.seed(3)
  expect_identical(rllm_sample(x, temperature = 1, n = 50), a)

  m <- test_model(gguf_fixture("stories260K.gguf"), threads = 1)
  ids <- c(1L, 403L, 407L, 261L, 378L)
  g1 <- rllm_generate(m, ids, n_new = 32, temperature = 0.9, seed = 11, stop_at_eog = FALSE)
  g2 <- rllm_generate(m, ids, n_new = 32, temperature = 0.9, seed = 11, stop_at_eog = FALSE)
  g3 <- rllm_generate(m, ids, n_new = 32, temperature = 0.9, seed = 12, stop_at_eog = FALSE)
  expect_identical(g1$tokens, g2$tokens)
  expect_false(identical(g1$tokens, g3$tokens))
  expect_error(rllm_generate(m, ids, temperature = -1), class = "fm_error_earg")
  expect_error(rllm_generate(m, ids, top_p = 0), class = "fm_error_earg")
})

test_that("generation continues a cache, and a runtime cache gives the same tokens", {
  m <- test_model(gguf_fixture("stories260K.gguf"), threads = 1)
  ids <- c(1L, 403L, 407L, 261L, 378L)
  full <- rllm_generate(m, ids, n_new = 20)
  kv <- rllm_cache(m, 64)
  a <- rllm_generate(m, ids, n_new = 10, cache = kv)
  expect_identical(rllm_cache_n_past(kv), 5L + 9L) # the last token is not evaluated
  b <- rllm_generate(m, a$tokens[10], n_new = 10, cache = kv)
  expect_identical(c(a$tokens, b$tokens), full$tokens)
  small <- rllm_cache(m, 8)
  expect_error(rllm_generate(m, ids, n_new = 10, cache = small), class = "fm_error_enospc")
  # counts near .Machine$integer.max: one error naming them, before any work
  expect_error(rllm_generate(m, ids, n_new = .Machine$integer.max),
               "0 cached + 5 prompt + 2147483647 new positions make 2147483652", fixed = TRUE,
               class = "fm_error_earg")
  expect_error(rllm_generate(m, "", add_special = FALSE),
               "the prompt is 0 bytes that tokenize to no token (add_special = FALSE adds none)",
               fixed = TRUE, class = "fm_error_earg")
  expect_error(rllm_embed(m, c("Once", ""), add_special = FALSE), "sequence 2 is 0 bytes",
               fixed = TRUE, class = "fm_error_earg")

  skip_on_device("a device's caches live in its memory, not in an Rfmalloc runtime")
  rt <- scratch_runtime()
  expect_identical(rllm_generate(m, ids, n_new = 20, runtime = rt)$tokens, full$tokens)
  mr <- rllm_gguf_model(gguf_fixture("stories260K.gguf"), runtime = rt, threads = 1)
  expect_identical(rllm_generate(mr, ids, n_new = 20)$tokens, full$tokens)
})

test_that("pooled embeddings: mean, cls and last of the final normed states", {
  m <- test_model(gguf_fixture("stories260K.gguf"), threads = 1)
  ids <- c(1L, 403L, 407L, 261L, 378L)
  e <- rllm_embed(m, ids, pooling = "mean")
  expect_identical(dim(e), c(64L, 1L))
  expect_true(all(is.finite(e)))
  # Causal model: "cls" is the first token's state, which sees only itself,
  # so it is the same for any continuation.
  c1 <- rllm_embed(m, ids, pooling = "cls")
  c2 <- rllm_embed(m, ids[1:2], pooling = "cls")
  expect_lt(max(abs(c1 - c2)), 1e-5)
  # mean of one token equals its last and cls.
  one <- sapply(c("mean", "cls", "last"), function(p) rllm_embed(m, ids[1], pooling = p))
  expect_lt(max(abs(one - one[, 1])), 1e-5)
  # normalize gives unit columns; a list gives one column per sequence.
  en <- rllm_embed(m, list(ids, ids[1:3]), normalize = TRUE)
  expect_equal(colSums(en^2), c(1, 1), tolerance = 1e-6)
  expect_equal(en[, 1], as.numeric(e / sqrt(sum(e^2))), tolerance = 1e-6)
  expect_error(rllm_embed(m, integer()), class = "fm_error_earg")
})

test_that("embeddings match llama.cpp's pooled embedding", {
  skip_if_no_oracle()
  path <- gguf_fixture("stories260K.gguf")
  m <- test_model(path, threads = 1)
  ids <- c(1L, 403L, 407L, 261L, 378L)
  for (p in c("mean", "last")) {
    ref <- llama_oracle("embed", path, tokens = ids, pooling = p, threads = 1)
    ours <- rllm_embed(m, ids, pooling = p)[, 1]
    cosine <- sum(ours * ref$embedding) / sqrt(sum(ours^2) * sum(ref$embedding^2))
    expect_gt(cosine, 0.9999, label = p)
  }
})
