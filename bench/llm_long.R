# make bench (llm, long prompts): prefill of a 2,000-token prompt on
# stories260K (real, F32; ../shared/fixtures/gguf) at one thread, one batch
# on an empty cache: ours as rllm_gguf_model() defaults (flash attention for
# batches of >= 64 tokens, fused batch products), ours with flash attention
# off (the explicit attention path), with both off (and GGML's products),
# llama.cpp (node-llama-cpp
# through tools/llama-oracle, its default flash attention "auto"), and,
# when BENCH_BASELINE_LIB names an R library holding an earlier build of
# Rfmalloc/Rgguf/Rllm (e.g. one installed from commit 7e7f9ed, before
# flash attention), that build, in a child process (labelled
# BENCH_BASELINE_LABEL). Seconds are the
# minimum of BENCH_REPS runs after one warm-up; ratios are that engine's
# seconds / ours (> 1: we are faster). Writes bench/results/llm_long.csv
# (BENCH_OUT). Tokens: ids 3 + (i * 7919) mod 509 after BOS, as the tests'.

args <- commandArgs(trailingOnly = FALSE)
root <- normalizePath(file.path(dirname(sub("^--file=", "", args[grep("^--file=", args)])), ".."))
fixtures <- Sys.getenv("RFMALLOC_FIXTURES", file.path(root, "..", "shared", "fixtures"))
path <- file.path(fixtures, "gguf", "stories260K.gguf")
if (!file.exists(path)) {
  cat("bench llm_long: stories260K.gguf absent (", path, "): skipped\n", sep = "")
  quit(save = "no")
}
n <- as.integer(Sys.getenv("BENCH_LONG_TOKENS", "2000"))
reps <- as.integer(Sys.getenv("BENCH_REPS", "3"))
ids <- c(1L, 3L + (seq_len(n - 1L) * 7919L) %% 509L)

# One engine's best time: `run()` evaluates the prompt once.
best_of <- function(run) min(vapply(0:reps, function(r) run(), 0)[-1])

ours <- function(...) {
  m <- Rllm::rllm_gguf_model(path, threads = 1, ...)
  best_of(function() {
    kv <- Rllm::rllm_cache(m, n)
    system.time(Rllm::rllm_logits(m, ids, cache = kv))[["elapsed"]]
  })
}

baseline <- function(lib) {
  code <- sprintf(paste0("m <- Rllm::rllm_gguf_model(%s, threads = 1); ids <- c(%s); ",
                         "t <- vapply(0:%d, function(r) { kv <- Rllm::rllm_cache(m, %d); ",
                         "system.time(Rllm::rllm_logits(m, ids, cache = kv))[['elapsed']] }, 0); ",
                         "cat(min(t[-1]))"),
                  deparse(path), paste(ids, collapse = ","), reps, n)
  f <- tempfile(fileext = ".R")
  writeLines(code, f)
  env <- sprintf("R_LIBS=%s", paste(c(lib, .libPaths()), collapse = ":"))
  out <- suppressWarnings(system2(file.path(R.home("bin"), "Rscript"), f, stdout = TRUE, stderr = FALSE,
                                  env = env))
  as.numeric(utils::tail(out, 1))
}

llamacpp <- function() {
  source(file.path(root, "tools", "llama-oracle", "client.R"), local = TRUE)
  b <- tryCatch(llama_oracle("bench", path, tokens = ids, decode_tokens = ids[1:2], gen_tokens = 2L,
                             reps = reps, ctx = n + 16L, threads = 1L),
                error = function(e) NULL)
  if (is.null(b) || is.null(b$prefill_tps)) NA_real_ else n / b$prefill_tps
}

rows <- list(
  c(engine = "ours (flash attention, fused products)", s = ours()),
  c(engine = "ours (explicit attention, fused products)", s = ours(flash_attn = FALSE)),
  c(engine = "ours (explicit attention, GGML products)", s = ours(flash_attn = FALSE, fused_gemm = FALSE)),
  c(engine = "llama.cpp", s = llamacpp()))
lib <- Sys.getenv("BENCH_BASELINE_LIB")
if (nzchar(lib)) {
  rows[[length(rows) + 1]] <- c(engine = paste("baseline", Sys.getenv("BENCH_BASELINE_LABEL", basename(lib))),
                                s = baseline(lib))
}
res <- data.frame(engine = vapply(rows, `[[`, "", "engine"),
                  seconds = as.numeric(vapply(rows, `[[`, "", "s")))
res$ratio_to_ours <- res$seconds / res$seconds[1]
res$tokens <- n
res$threads <- 1L
print(res, row.names = FALSE, digits = 3)
out <- Sys.getenv("BENCH_OUT", "llm_long.csv")
dir.create(file.path(root, "bench", "results"), recursive = TRUE, showWarnings = FALSE)
utils::write.csv(res, file.path(root, "bench", "results", out), row.names = FALSE)
cat("wrote bench/results/", out, "\n", sep = "")
