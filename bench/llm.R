# make bench (llm): prefill and decode tokens per second on the same GGUF
# files, threads = 2, for us (Rllm), llama.cpp (node-llama-cpp 3.21.1 through
# tools/llama-oracle/oracle.mjs) and the CRAN package llamaR (llama.cpp
# vendored in an R package, linking ggmlR). Ratios are ours / peer, so
# > 1 means we are faster. Writes bench/results/llm.csv.
#
# Models: ../shared/fixtures/gguf/stories260K.gguf (real, F32) and its
# quantized variants derived/stories260K-Q8_0.gguf and -Q4_K_M.gguf.
# Workload, identical for every engine:
#  - prefill: the first BENCH_PROMPT (default 128) tokens of a fixed English
#    text (BOS first, as llama.cpp tokenizes it), evaluated as one batch on an
#    empty cache; rate = prompt tokens / time.
#  - decode: greedy generation of BENCH_GEN (default 64) tokens after
#    "Once upon a time" (5 tokens with BOS); rate = one-token evaluations
#    (the generated tokens after the first, which comes from the prompt's
#    batch) / their time.
# Times are each engine's own clock around its evaluations:
#  - ours: rllm_generate()'s timings (wall clock in C around the GGML
#    evaluations of the prompt and of each generated token);
#  - llama.cpp: llama_perf_context (time inside llama_decode), read by
#    oracle.mjs bench; its JS wall time is reported too (llamacpp_*_wall);
#  - llamaR: llama_perf() (the same llama.cpp counters) after llama_generate().
# Median of BENCH_REPS (default 3) runs after one warm-up. The machine's load
# matters: with threads = 2 on a 2-core machine any other process stalls
# GGML's thread barrier, so run it on an idle machine.
# llamaR is installed into the first library path when absent
# (install.packages("llamaR"), which compiles llama.cpp: several minutes);
# BENCH_LLAMAR=0 skips it. A peer that is unavailable is reported as NA.
# BENCH_THREADS (default 2) sets every engine's thread count; a count other
# than 2 writes bench/results/llm_threads<N>.csv.

args <- commandArgs(trailingOnly = FALSE)
root <- normalizePath(file.path(dirname(sub("^--file=", "", args[grep("^--file=", args)])), ".."))
fixtures <- Sys.getenv("RFMALLOC_FIXTURES", file.path(root, "..", "shared", "fixtures"))
gguf_dir <- file.path(fixtures, "gguf")
models <- c(F32 = "stories260K.gguf", Q8_0 = "derived/stories260K-Q8_0.gguf",
            Q4_K_M = "derived/stories260K-Q4_K_M.gguf")
if (!file.exists(file.path(gguf_dir, models[[1]]))) {
  cat("bench llm: fixtures absent (", gguf_dir, "); nothing to compare on.\n", sep = "")
  quit(status = 0)
}
models <- models[file.exists(file.path(gguf_dir, models))]
threads <- as.integer(Sys.getenv("BENCH_THREADS", "2"))
reps <- as.integer(Sys.getenv("BENCH_REPS", "3"))
n_prompt <- as.integer(Sys.getenv("BENCH_PROMPT", "128"))
n_gen <- as.integer(Sys.getenv("BENCH_GEN", "64"))
oracle_dir <- file.path(root, "tools", "llama-oracle")
median_of <- function(x) if (length(x) && all(is.finite(x))) stats::median(x) else NA_real_

# ---- llama.cpp oracle ------------------------------------------------------
oracle_ok <- nzchar(Sys.which("node")) && dir.exists(file.path(oracle_dir, "node_modules", "node-llama-cpp"))
if (!oracle_ok) cat("bench llm: llama.cpp oracle unavailable (node or tools/llama-oracle/node_modules missing; run tools/llama-oracle/install.sh)\n")
oracle <- function(cmd, model, ...) {
  a <- list(...)
  opt <- unlist(lapply(names(a), function(k) {
    v <- a[[k]]
    if (isTRUE(v)) return(paste0("--", k))
    c(paste0("--", k), shQuote(if (is.numeric(v)) paste(v, collapse = ",") else v))
  }))
  out <- suppressWarnings(system2("node", c(shQuote(file.path(oracle_dir, "oracle.mjs")), cmd,
                                            "--model", shQuote(model), "--threads", threads, opt),
                                  stdout = TRUE, stderr = FALSE))
  res <- jsonlite_or_min(paste(out, collapse = "\n"))
  if (!is.null(res$error) || !is.null(attr(out, "status"))) {
    stop("oracle ", cmd, ": ", if (is.null(res$error)) paste(out, collapse = " ") else res$error)
  }
  res
}
jsonlite_or_min <- function(txt) {
  if (requireNamespace("jsonlite", quietly = TRUE)) return(jsonlite::fromJSON(txt))
  # oracle.mjs output used here is flat: numbers, strings, numeric arrays
  txt <- gsub("^\\{|\\}$", "", txt)
  parts <- regmatches(txt, gregexpr('"[^"]+":(\\[[^]]*\\]|"[^"]*"|[^,]+)', txt))[[1]]
  keys <- sub('^"([^"]+)":.*$', "\\1", parts)
  vals <- lapply(sub('^"[^"]+":', "", parts), function(v) {
    if (grepl('^"', v)) return(gsub('^"|"$', "", v))
    if (v == "null") return(NULL)
    as.numeric(strsplit(gsub("\\[|\\]", "", v), ",")[[1]])
  })
  stats::setNames(vals, keys)
}

# ---- the workload ------------------------------------------------------------
story <- paste(rep(paste(
  "Once upon a time, there was a little girl named Lily. She loved to play outside in the park",
  "with her friends. One day, she saw a big red ball under a tree. She ran to the ball and",
  "picked it up. Her mom smiled and said they could take it home. Lily was very happy."), 4),
  collapse = " ")
base <- file.path(gguf_dir, models[[1]])
if (oracle_ok) {
  all_ids <- as.integer(oracle("tokenize", base, text = story, "add-special" = TRUE)$tokens)
  decode_ids <- as.integer(oracle("tokenize", base, text = "Once upon a time", "add-special" = TRUE)$tokens)
} else {
  all_ids <- integer()
  decode_ids <- c(1L, 403L, 407L, 261L, 378L) # llama.cpp's ids for stories260K
}
if (length(all_ids) < n_prompt) {
  # without the oracle: the same fixed-text prompt through our tokenizer
  if (exists("rllm_tokenize", where = asNamespace("Rllm"), inherits = FALSE)) {
    all_ids <- Rllm::rllm_tokenize(Rllm::rllm_tokenizer(base), story, add_special = TRUE)
  }
}
prompt_ids <- utils::head(as.integer(all_ids), n_prompt)
# the same prompt as text, for llamaR (which tokenizes text itself)
prompt_text <- if (oracle_ok) oracle("detokenize", base, tokens = prompt_ids[-1])$text else NA_character_

# ---- ours (Rllm) ---------------------------------------------------------------
ours_ok <- requireNamespace("Rllm", quietly = TRUE) &&
  all(c("rllm_gguf_model", "rllm_generate") %in% getNamespaceExports("Rllm"))
if (!ours_ok) cat("bench llm: Rllm's rllm_gguf_model()/rllm_generate() are not available; ours is NA\n")
ours_model <- function(path) {
  f <- names(formals(Rllm::rllm_gguf_model))
  if ("threads" %in% f) Rllm::rllm_gguf_model(path, threads = threads) else Rllm::rllm_gguf_model(path)
}
# Rates from rllm_generate()'s timings: prefill = prompt tokens / prefill
# seconds, decode = one-token evaluations / decode seconds.
ours_rates <- function(tm, n_prompt_tokens) {
  g <- function(...) { for (k in c(...)) if (!is.null(tm[[k]])) return(as.numeric(tm[[k]])); NA_real_ }
  pre <- g("prefill_tps")
  if (is.na(pre)) pre <- g("n_prefill", "prefill_tokens") / g("prefill_s", "prefill_seconds")
  if (is.na(pre)) pre <- n_prompt_tokens / g("prefill_s", "prefill_seconds")
  dec <- g("decode_tps")
  if (is.na(dec)) dec <- g("n_decode", "decode_tokens") / g("decode_s", "decode_seconds")
  c(prefill = pre, decode = dec)
}
bench_ours <- function(path) {
  m <- ours_model(path)
  # the whole n tokens even past an end-of-generation token, as the peers
  gen <- function(prompt, n) {
    if ("stop_at_eog" %in% names(formals(Rllm::rllm_generate))) {
      Rllm::rllm_generate(m, prompt, n_new = n, temperature = 0, stop_at_eog = FALSE)
    } else {
      Rllm::rllm_generate(m, prompt, n_new = n, temperature = 0)
    }
  }
  pre <- dec <- numeric()
  for (r in 0:reps) {
    p <- ours_rates(gen(prompt_ids, 1L)$timings, length(prompt_ids))[["prefill"]]
    d <- ours_rates(gen(decode_ids, n_gen)$timings, length(decode_ids))[["decode"]]
    if (r > 0) { pre <- c(pre, p); dec <- c(dec, d) }
  }
  c(prefill = median_of(pre), decode = median_of(dec))
}

# ---- llama.cpp (node-llama-cpp) ---------------------------------------------------
bench_llamacpp <- function(path) {
  b <- oracle("bench", path, tokens = prompt_ids, "decode-tokens" = decode_ids,
              "gen-tokens" = n_gen, reps = reps)
  c(prefill = b$prefill_tps, decode = b$decode_tps,
    prefill_wall = b$prefill_wall_tps, decode_wall = b$decode_wall_tps)
}

# ---- llamaR (CRAN) ------------------------------------------------------------
llamar_ok <- FALSE
if (Sys.getenv("BENCH_LLAMAR", "1") != "0") {
  if (!requireNamespace("llamaR", quietly = TRUE)) {
    cat("bench llm: installing llamaR from CRAN (compiles llama.cpp; takes several minutes)\n")
    repos <- getOption("repos")
    if (is.null(repos) || identical(unname(repos["CRAN"]), "@CRAN@")) repos <- c(CRAN = "https://cloud.r-project.org")
    if (!nzchar(Sys.getenv("MAKEFLAGS"))) Sys.setenv(MAKEFLAGS = "-j2")
    try(utils::install.packages("llamaR", lib = .libPaths()[1], repos = repos, quiet = TRUE), silent = TRUE)
  }
  llamar_ok <- requireNamespace("llamaR", quietly = TRUE)
  if (!llamar_ok) cat("bench llm: llamaR could not be installed; its columns are NA\n")
}
bench_llamar <- function(path) {
  L <- asNamespace("llamaR")
  try(L$llama_set_verbosity(0L), silent = TRUE)
  m <- L$llama_load_model(path, n_gpu_layers = 0L)
  ctx <- L$llama_new_context(m, n_ctx = 512L, n_threads = threads, n_threads_batch = threads,
                             n_batch = 512L, n_ubatch = 512L, flash_attn = "off")
  on.exit({ L$llama_free_context(ctx); L$llama_free_model(m) }, add = TRUE)
  run <- function(text, n) {
    L$llama_perf_reset(ctx)
    L$llama_generate(ctx, text, max_new_tokens = n, temp = 0)
    L$llama_perf(ctx)
  }
  pre <- dec <- numeric()
  for (r in 0:reps) {
    p <- run(prompt_text, 1L)
    d <- run("Once upon a time", n_gen)
    if (r > 0) {
      pre <- c(pre, p$n_p_eval / (p$t_p_eval_ms / 1000))
      dec <- c(dec, d$n_eval / (d$t_eval_ms / 1000))
    }
  }
  c(prefill = median_of(pre), decode = median_of(dec))
}

# ---- run -------------------------------------------------------------------
safely <- function(what, f, path) {
  tryCatch(f(path), error = function(e) {
    cat(sprintf("bench llm: %s on %s failed: %s\n", what, basename(path), conditionMessage(e)))
    c(prefill = NA_real_, decode = NA_real_)
  })
}
na2 <- c(prefill = NA_real_, decode = NA_real_)
rows <- list()
for (type in names(models)) {
  path <- file.path(gguf_dir, models[[type]])
  ours <- if (ours_ok) safely("Rllm", bench_ours, path) else na2
  lcpp <- if (oracle_ok) safely("llama.cpp", bench_llamacpp, path) else na2
  lr <- if (llamar_ok && !is.na(prompt_text)) safely("llamaR", bench_llamar, path) else na2
  rows[[type]] <- data.frame(
    model = basename(path), weights = type, threads = threads,
    prompt_tokens = length(prompt_ids), gen_tokens = n_gen,
    ours_prefill_tps = ours[["prefill"]], llamacpp_prefill_tps = lcpp[["prefill"]],
    llamar_prefill_tps = lr[["prefill"]],
    ours_decode_tps = ours[["decode"]], llamacpp_decode_tps = lcpp[["decode"]],
    llamar_decode_tps = lr[["decode"]],
    prefill_ratio_llamacpp = ours[["prefill"]] / lcpp[["prefill"]],
    decode_ratio_llamacpp = ours[["decode"]] / lcpp[["decode"]],
    prefill_ratio_llamar = ours[["prefill"]] / lr[["prefill"]],
    decode_ratio_llamar = ours[["decode"]] / lr[["decode"]],
    llamacpp_prefill_wall_tps = if (length(lcpp) > 2) lcpp[["prefill_wall"]] else NA_real_,
    llamacpp_decode_wall_tps = if (length(lcpp) > 2) lcpp[["decode_wall"]] else NA_real_,
    stringsAsFactors = FALSE)
}
res <- do.call(rbind, rows)
rownames(res) <- NULL

cat(sprintf("\n== LLM: tokens/s, threads = %d, prompt %d tokens, %d generated (median of %d) ==\n",
            threads, length(prompt_ids), n_gen, reps))
f <- function(x) ifelse(is.na(x), "   NA", sprintf("%8.1f", x))
r <- function(x) ifelse(is.na(x), "  NA", sprintf("%5.2f", x))
cat(sprintf("%-26s %-7s %9s %9s %9s %6s %6s | %9s %9s %9s %6s %6s\n", "model", "weights",
            "ours", "llama.cpp", "llamaR", "/lcpp", "/lR", "ours", "llama.cpp", "llamaR", "/lcpp", "/lR"))
cat(sprintf("%-26s %-7s %-45s | %-45s\n", "", "", "prefill", "decode"))
for (i in seq_len(nrow(res))) with(res[i, ], cat(sprintf(
  "%-26s %-7s %9s %9s %9s %6s %6s | %9s %9s %9s %6s %6s\n", model, weights,
  f(ours_prefill_tps), f(llamacpp_prefill_tps), f(llamar_prefill_tps),
  r(prefill_ratio_llamacpp), r(prefill_ratio_llamar),
  f(ours_decode_tps), f(llamacpp_decode_tps), f(llamar_decode_tps),
  r(decode_ratio_llamacpp), r(decode_ratio_llamar))))
cat("ratio = ours / peer (> 1: ours faster); goal: >= 1.0 against llama.cpp for prefill and decode\n")
dir.create(file.path(root, "bench", "results"), recursive = TRUE, showWarnings = FALSE)
out <- if (threads == 2L) "llm.csv" else sprintf("llm_threads%d.csv", threads)
utils::write.csv(res, file.path(root, "bench", "results", out), row.names = FALSE)
cat("wrote bench/results/", out, "\n", sep = "")
