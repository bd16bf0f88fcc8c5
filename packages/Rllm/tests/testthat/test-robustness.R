# Robustness of the model glue: a GGUF file truncated under an open model,
# forked children, tensors missing at load, the trained context, objects
# restored from a saved session or whose runtime was closed, and the
# conditions of setTimeLimit() and interrupts.

stories <- function() gguf_fixture("stories260K.gguf")

# A copy of stories260K with bytes changed by patch(b) (b: the raw bytes).
patched_stories <- function(patch) {
  b <- readBin(stories(), "raw", file.size(stories()))
  f <- tempfile(fileext = ".gguf")
  writeBin(patch(b), f)
  f
}

test_that("a model whose GGUF file was truncated on disk gives fm_error_eformat, not SIGBUS", {
  src <- stories()
  out <- rscript_child(packages = "Rllm", c(
    "f <- tempfile(fileext = '.gguf')",
    sprintf("stopifnot(file.copy(%s, f))", deparse(src)),
    "m <- rllm_gguf_model(f, threads = 1)",
    "kv <- rllm_cache(m, 64)",
    "ok <- rllm_generate(m, 'Once upon a time', n_new = 4)$tokens",
    "cat('before', ok, '\\n')",
    "b <- readBin(f, 'raw', 20000)",
    "writeBin(b, f) # the same file, now 20000 bytes",
    "try_one <- function(name, expr) {",
    "  r <- tryCatch({ expr; 'no error' }, error = function(e) paste(class(e)[1], conditionMessage(e)))",
    "  cat(name, ':', r, '\\n', sep = '')",
    "}",
    "try_one('logits', rllm_logits(m, c(1L, 403L)))",
    "try_one('logits_cache', rllm_logits(m, c(1L, 403L), cache = kv))",
    "try_one('generate', rllm_generate(m, 'Once upon a time', n_new = 4))",
    "try_one('embed', rllm_embed(m, 'Once upon a time'))",
    "cat('cache n_past', rllm_cache_n_past(kv), '\\n')",
    "cat('survived\\n')"))
  expect_child_lines(out, "survived")
  for (what in c("logits", "logits_cache", "generate", "embed")) {
    line <- grep(paste0("^", what, ":"), out, value = TRUE)
    expect_length(line, 1L)
    expect_match(line, paste0("^", what, ":fm_error_eformat .*shrank from ",
                              file.size(src), " to 20000 bytes"))
  }
  expect_child_lines(out, "cache n_past 0")
})

test_that("forked children evaluate on one thread and get the parent's logits", {
  skip_if_no_fork()
  m <- rllm_gguf_model(stories(), threads = 2L)
  ids <- rllm_tokenize(m, strrep("The cat sat on the mat. ", 40))[1:300]
  expect_length(ids, 300L)
  a <- rllm_logits(m, ids) # multi-threaded in the parent first (300 tokens)
  expect_identical(rllm_threads() >= 1L, TRUE)
  child <- function(i) {
    list(threads = rllm_threads(), model_threads = .Call(Rllm:::C_rllm_model_threads, m$ptr),
         set = rllm_set_threads(m, 4L)$info$threads, logits = rllm_logits(m, ids),
         printed = utils::capture.output(print(m)))
  }
  # children that hang are killed after 120 s (the test then fails)
  res <- fork_children(child, n = 2, timeout = 120)
  expect_children_returned(res)
  expect_length(child_values(res), 2L)
  for (r in child_values(res)) {
    expect_identical(r$threads, 1L)
    expect_identical(r$model_threads, 1L)
    expect_identical(r$set, 1L)
    expect_identical(r$logits, a)
    expect_true(any(grepl("1 thread (forked child: single-threaded)", r$printed, fixed = TRUE)))
  }
  # the parent keeps its thread count
  expect_identical(.Call(Rllm:::C_rllm_model_threads, m$ptr), 2L)
  if (!children_hung(res)) {
    r <- parallel::mclapply(1:2, function(i) identical(rllm_logits(m, ids), a), mc.cores = 2)
    expect_identical(unlist(r), c(TRUE, TRUE))
  }
})

test_that("a tensor missing from any layer is an error at load, naming it", {
  rename <- function(name) {
    force(name)
    function(b) {
      o <- grepRaw(charToRaw(name), b, fixed = TRUE)
      expect_length(o, 1L)
      b[o + nchar(name) - nchar(".weight") - 1L] <- charToRaw("X")
      b
    }
  }
  for (name in c("blk.2.ffn_gate.weight", "blk.4.ffn_down.weight", "blk.3.attn_v.weight",
                 "output_norm.weight")) {
    f <- patched_stories(rename(name))
    expect_error(rllm_gguf_model(f, threads = 1), paste0("tensor '", name, "' is missing"),
                 fixed = TRUE, class = "fm_error_eformat")
    unlink(f)
  }
})

test_that("metadata the model would ignore, or a tokenizer not of its vocabulary, is refused at load", {
  f <- tempfile(fileext = ".gguf")
  on.exit(unlink(f), add = TRUE)
  load_with <- function(edit_md) {
    arch_gguf_write("qwen2", f, edit_md = edit_md)
    rllm_gguf_model(f, threads = 1)
  }
  # expert_count declares a mixture of experts: its router must be there
  expect_error(load_with(function(md) {
    md$qwen2.expert_count <- Rgguf::gguf_u32(4)
    md$qwen2.expert_used_count <- Rgguf::gguf_u32(2)
    md
  }), "tensor 'blk.0.ffn_gate_inp.weight' is missing", fixed = TRUE, class = "fm_error_eformat")
  expect_error(load_with(function(md) { md$qwen2.rope.freq_base <- Rgguf::gguf_f32(Inf); md }),
               "'qwen2.rope.freq_base' is inf, expected a finite number", fixed = TRUE,
               class = "fm_error_eformat")
  expect_error(load_with(function(md) {
    md$qwen2.attention.layer_norm_rms_epsilon <- Rgguf::gguf_f32(-1)
    md
  }), "'qwen2.attention.layer_norm_rms_epsilon' is -1", fixed = TRUE, class = "fm_error_eformat")
  # 256 tokens for 512 rows of token_embd: ids would not mean the same
  expect_error(load_with(function(md) {
    for (k in c("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"))
      md[[k]] <- Rgguf::gguf_value(md[[k]][1:256], attr(md[[k]], "gguf_type"), array = TRUE)
    md
  }), paste0(basename(f), ": the tokenizer has 256 tokens"), fixed = TRUE,
  class = "fm_error_eformat")
  # tokenizer errors name the file
  expect_error(load_with(function(md) { md$tokenizer.ggml.model <- "foo"; md }),
               paste0(basename(f), ": "), fixed = TRUE,
               class = "fm_error_eunsupported")
})

test_that("a model without a tokenizer loads and takes token ids", {
  f <- tempfile(fileext = ".gguf")
  on.exit(unlink(f), add = TRUE)
  arch_gguf_write("qwen2", f, edit_md = function(md) md[!startsWith(names(md), "tokenizer.")])
  m <- rllm_gguf_model(f, threads = 1)
  expect_null(m$tokenizer)
  expect_identical(m$info$eog, integer())
  ids <- arch_gguf_tokens()
  g <- rllm_generate(m, ids, n_new = 3)
  expect_length(g$tokens, 3L)
  expect_identical(g$raw, raw(0))
  # the same weights with a tokenizer give the same tokens
  f2 <- tempfile(fileext = ".gguf")
  on.exit(unlink(f2), add = TRUE)
  arch_gguf_write("qwen2", f2)
  expect_identical(rllm_generate(rllm_gguf_model(f2, threads = 1), ids, n_new = 3,
                                 stop_at_eog = FALSE)$tokens, g$tokens)
  expect_error(rllm_generate(m, "Once"), "this model has no tokenizer", class = "fm_error_earg")
  expect_error(rllm_tokenize(m, "Once"), "this model has no tokenizer", class = "fm_error_earg")
  expect_error(rllm_embed(m, "Once"), "this model has no tokenizer", class = "fm_error_earg")
})

test_that("positions beyond the trained context give an rllm_warning_context naming both numbers", {
  m <- rllm_gguf_model(stories(), threads = 1)
  expect_identical(m$info$n_ctx_train, 2048)
  # default cache: the trained context, no warning
  expect_no_warning(kv <- rllm_cache(m))
  expect_identical(kv$n_ctx, 2048L)
  w <- tryCatch(rllm_cache(m, 3000), warning = function(w) w)
  expect_s3_class(w, "rllm_warning_context")
  expect_match(conditionMessage(w), "a cache of 3000 positions, more than the 2048", fixed = TRUE)
  expect_match(conditionMessage(w), "(llama.context_length)", fixed = TRUE)

  # evaluation on a random-weight qwen2 model trained (per its metadata) on
  # 256 positions, so that crossing the limit is quick
  f <- tempfile(fileext = ".gguf")
  on.exit(unlink(f), add = TRUE)
  arch_gguf_write("qwen2", f)
  m <- rllm_gguf_model(f, threads = 1)
  expect_identical(m$info$n_ctx_train, 256)
  toks <- function(n) rep_len(arch_gguf_tokens(), n)
  # logits: warned when a call crosses the limit, once per sequence
  kv <- suppressWarnings(rllm_cache(m, 300))
  expect_no_warning(rllm_logits(m, toks(250), cache = kv))
  w <- tryCatch(rllm_logits(m, toks(10), cache = kv), warning = function(w) w)
  expect_s3_class(w, "rllm_warning_context")
  expect_match(conditionMessage(w), "evaluating 260 positions, more than the 256", fixed = TRUE)
  expect_match(conditionMessage(w), "(qwen2.context_length)", fixed = TRUE)
  expect_identical(rllm_cache_n_past(kv), 250L) # the warning left before evaluating
  expect_warning(l1 <- rllm_logits(m, toks(10), cache = kv), class = "rllm_warning_context")
  expect_identical(rllm_cache_n_past(kv), 260L)
  expect_no_warning(rllm_logits(m, 5L, cache = kv)) # already past it
  expect_identical(dim(l1), c(as.integer(m$info$n_vocab), 1L))
  # without a cache, and generation (prompt + n_new - 1 positions)
  expect_warning(rllm_logits(m, toks(257)), "evaluating 257 positions",
                 class = "rllm_warning_context")
  expect_no_warning(rllm_logits(m, toks(256)))
  prompt <- toks(250)
  expect_no_warning(rllm_generate(m, prompt, n_new = 7, stop_at_eog = FALSE))
  ws <- list()
  g <- withCallingHandlers(rllm_generate(m, prompt, n_new = 20, stop_at_eog = FALSE),
                           warning = function(w) {
                             ws[[length(ws) + 1L]] <<- w
                             invokeRestart("muffleWarning")
                           })
  expect_length(ws, 1L) # one warning, not another for the fresh cache
  expect_s3_class(ws[[1]], "rllm_warning_context")
  expect_match(conditionMessage(ws[[1]]), "evaluating 269 positions, more than the 256",
               fixed = TRUE)
  expect_length(g$tokens, 20L)
  expect_warning(rllm_embed(m, list(toks(257))), "sequence 1 has 257 positions",
                 class = "rllm_warning_context")
})

test_that("objects restored from a saved session or with a closed runtime say so", {
  m <- rllm_gguf_model(stories(), threads = 1)
  kv <- rllm_cache(m, 16)
  f <- tempfile(fileext = ".rds")
  saveRDS(list(m = m, kv = kv), f)
  x <- readRDS(f)
  unlink(f)
  expect_output(print(x$kv), "(freed) 16 positions", fixed = TRUE)
  expect_output(print(x$kv), "does not survive saveRDS", fixed = TRUE)
  expect_error(rllm_logits(m, 1:3, cache = x$kv), "the cache was freed .*saveRDS",
               class = "fm_error_eclosed")
  expect_error(rllm_generate(m, 1:3, n_new = 2, cache = x$kv), "the cache was freed",
               class = "fm_error_eclosed")
  expect_error(rllm_cache_n_past(x$kv), "the cache was freed", class = "fm_error_eclosed")
  expect_error(rllm_logits(x$m, 1:3), "the model was freed .*rllm_gguf_model",
               class = "fm_error_eclosed")
  expect_output(print(x$m), "(freed: a model does not survive saveRDS()", fixed = TRUE)
  # a runtime-backed cache after its runtime was closed
  backing <- tempfile(fileext = ".bin")
  rt <- Rfmalloc::open_fmalloc(backing, size_gb = 0.05, mode = "scratch")
  kv2 <- rllm_cache(m, 32, runtime = rt)
  expect_output(print(kv2), "0 of 32 positions filled, f16, .* on an Rfmalloc runtime")
  Rfmalloc::cleanup_fmalloc(rt)
  unlink(backing)
  expect_output(print(kv2), "<rllm_cache> (closed) 32 positions", fixed = TRUE)
  expect_error(rllm_logits(m, 1:3, cache = kv2), "the cache's Rfmalloc runtime was closed",
               class = "fm_error_eclosed")
  # a closed runtime is refused where it is given, naming the user's call (issue 14, review)
  expect_error(rllm_gguf_model(stories(), runtime = rt), "the runtime was closed \\(<fmalloc_runtime .*>\\)",
               class = "fm_error_eclosed")
  e <- expect_error(rllm_generate(m, "Once", n_new = 2, runtime = rt), class = "fm_error_eclosed")
  expect_match(deparse(conditionCall(e))[1], "^rllm_generate\\(")
  expect_error(rllm_cache(m, 8, runtime = rt), "runtime was closed", class = "fm_error_eclosed")
  # NA text
  expect_error(rllm_tokenize(m, NA_character_), "text is NA.*not allowed",
               class = "fm_error_earg")
  expect_error(rllm_tokenize(m, NA), "text is NA", class = "fm_error_earg")
})

test_that("setTimeLimit stops generation with its own error and prints nothing; interrupts cancel", {
  skip_on_os("windows")
  src <- stories()
  out <- rscript_child(packages = "Rllm", c(
    sprintf("m <- rllm_gguf_model(%s, threads = 1)", deparse(src)),
    "kv <- rllm_cache(m, 4000)",
    "local({",
    "  setTimeLimit(elapsed = 0.3, transient = TRUE)",
    "  r <- tryCatch(rllm_generate(m, 'Once upon a time', n_new = 3990, cache = kv,",
    "                              stop_at_eog = FALSE), error = function(e) e)",
    "  setTimeLimit()",
    "  cat('limit:', class(r)[1], if (inherits(r, 'condition')) conditionMessage(r), '\\n')",
    "})",
    "cat('after limit n_past', rllm_cache_n_past(kv) < 3990, '\\n')",
    "local({",
    "  system(sprintf('(sleep 1; kill -INT %d) &', Sys.getpid()))",
    "  r <- tryCatch(for (i in 1:200) rllm_generate(m, 'Once upon a time', n_new = 1000,",
    "                                              stop_at_eog = FALSE),",
    "                interrupt = function(e) e)",
    "  cat('interrupt:', class(r)[1], inherits(r, 'interrupt'), '\\n')",
    "})",
    "cat('later', rllm_generate(m, 'Once upon a time', n_new = 3)$tokens, '\\n')"))
  expect_false(any(grepl("Error in", out)), info = paste(out, collapse = "\n"))
  expect_child_lines(out, c("limit: simpleError reached elapsed time limit", "after limit n_past TRUE",
                            "interrupt: fm_error_ecancelled TRUE", "later 432 383 286"))
})
