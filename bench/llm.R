# make bench (llm): prefill and decode tokens per second on the same GGUF
# files for us (Rllm), llama.cpp (node-llama-cpp 3.21.1 through
# tools/llama-oracle/oracle.mjs) and the CRAN package llamaR (llama.cpp
# vendored in an R package, linking ggmlR: a gap to it is graph and
# scheduling, not kernels). Ratios are ours / peer, so > 1 means we are
# faster. Writes bench/results/llm.csv (one row per model, weights, threads,
# prompt and generated length).
#
# Models:
#  - stories260K (real, F32; ../shared/fixtures/gguf) and its derived Q8_0
#    and Q4_K_M files: per-token overhead dominates, weights fit in L2;
#  - generated random-weight llama models of realistic size, written by
#    tools/gen-bench-models.R into build/bench-models (run first when
#    absent): llama85m (n_embd 768, 12 layers, 12/4 heads, n_ff 2048, vocab
#    512) and smollm135m (SmolLM2-135M's shape, vocab 49,152), each in F16,
#    Q8_0, Q4_K_M and Q4_0. GENERATED weights: speed does not depend on
#    the values.
# Workload, identical for every engine: a fixed English text tokenized by
# llama.cpp (BOS first), its first P tokens evaluated as one batch on an
# empty cache (prefill: P / seconds), then G greedy tokens (decode: the G - 1
# one-token evaluations after the first token / their seconds).
# Times are each engine's own clock around its evaluations: ours,
# rllm_generate()'s timings; llama.cpp, llama_perf_context (time inside
# llama_decode) read by oracle.mjs bench (its JS wall time is in the CSV too);
# llamaR, llama_perf() after llama_generate(). Median of BENCH_REPS runs after
# one warm-up. Flash attention: ours as rllm_gguf_model() defaults (batches
# of >= 64 tokens); the peers with llama.cpp's own default, "auto"
# (BENCH_PEER_FA=off|on|auto).
# Decode bound: bytes of weights one decoded token reads (every matrix; one
# row of an untied token_embd) / the single-thread read rate of memory
# measured here (bench/membw.c: a read with each line requested 4 KB ahead,
# the fastest way one thread reads; its memcpy rate is in the CSV too);
# decode_bound_pct = ours / bound.
#
# Settings (environment; lists are comma-separated):
#   BENCH_MODELS   stories260K,llama85m,smollm135m
#   BENCH_TYPES    weights types of the generated models: F16,Q8_0,Q4_K_M,Q4_0
#   BENCH_PROMPTS  128,512      BENCH_GENS  64,256   (every pair)
#   BENCH_THREADS  1,2          BENCH_REPS  3
#   BENCH_LLAMAR=0 skips llamaR (installed from CRAN when absent: minutes)
#   RLLM_ORACLE_DIR  the llama.cpp oracle (default tools/llama-oracle, whose
#                  node-llama-cpp loads the best CPU variant it has: AVX-512
#                  where the CPU has it; make bench ISA=avx2, or
#                  tools/llama-oracle/variant.sh avx2 DIR, runs llama.cpp's
#                  AVX2 kernels, as ggmlR's build)
# A peer that is unavailable is NA. Run on an idle machine: with 2 threads on
# 2 cores any other process stalls GGML's thread barrier. All rows take
# about an hour and a half on 2 cores.

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "lib.R"))
root <- bench_root()
fixtures <- Sys.getenv("RFMALLOC_FIXTURES", file.path(root, "..", "shared", "fixtures"))
env_list <- function(name, default) trimws(strsplit(Sys.getenv(name, default), ",")[[1]])
env_int <- function(name, default) as.integer(env_list(name, default))
want_models <- env_list("BENCH_MODELS", "stories260K,llama85m,smollm135m")
gen_types <- env_list("BENCH_TYPES", "F16,Q8_0,Q4_K_M,Q4_0")
prompts <- env_int("BENCH_PROMPTS", "128,512")
gens <- env_int("BENCH_GENS", "64,256")
thread_counts <- env_int("BENCH_THREADS", "1,2")
reps <- as.integer(Sys.getenv("BENCH_REPS", "3"))
peer_fa <- Sys.getenv("BENCH_PEER_FA", "auto")
median_of <- function(x) if (length(x) && all(is.finite(x))) stats::median(x) else NA_real_

# ---- the files -------------------------------------------------------------
files <- list()
story_dir <- file.path(fixtures, "gguf")
if ("stories260K" %in% want_models) {
  s <- c(F32 = "stories260K.gguf", Q8_0 = "derived/stories260K-Q8_0.gguf",
         Q4_K_M = "derived/stories260K-Q4_K_M.gguf")
  s <- s[file.exists(file.path(story_dir, s))]
  if (!length(s)) cat("bench llm: stories260K fixtures absent (", story_dir, ")\n", sep = "")
  for (t in names(s)) files[[length(files) + 1L]] <- list(model = "stories260K", weights = t,
                                                          path = file.path(story_dir, s[[t]]))
}
gen_models <- intersect(want_models, c("llama85m", "smollm135m"))
if (length(gen_models)) {
  gen_dir <- file.path(root, "build", "bench-models")
  st <- system2(file.path(R.home("bin"), "Rscript"),
                c(shQuote(file.path(root, "tools", "gen-bench-models.R")), shQuote(gen_dir), gen_models))
  if (st != 0) cat("bench llm: tools/gen-bench-models.R failed; generated models skipped\n")
  for (id in gen_models) for (t in gen_types) {
    p <- file.path(gen_dir, sprintf("%s-%s.gguf", id, t))
    if (file.exists(p)) files[[length(files) + 1L]] <- list(model = id, weights = t, path = p)
  }
}
if (!length(files)) {
  cat("bench llm: no model files; nothing to compare on.\n")
  quit(status = 0)
}

# ---- llama.cpp oracle (tools/llama-oracle/client.R; RLLM_ORACLE_DIR picks
# another CPU variant, as the Makefile's ISA= sets it) ----------------------
oracle_home <- file.path(root, "tools", "llama-oracle")
source(file.path(oracle_home, "client.R"))
why <- oracle_unavailable()
oracle_ok <- is.null(why)
if (!oracle_ok) cat("bench llm: llama.cpp oracle unavailable:", why, "\n")
oracle <- function(cmd, model, threads = 1L, ...) llama_oracle(cmd, model, ..., threads = threads)

# ---- the workload ------------------------------------------------------------
story <- paste(rep(paste(
  "Once upon a time, there was a little girl named Lily. She loved to play outside in the park",
  "with her friends. One day, she saw a big red ball under a tree. She ran to the ball and",
  "picked it up. Her mom smiled and said they could take it home. Lily was very happy.",
  "The next morning the sun was bright and the birds sang in the tall green trees."), 24),
  collapse = " ")
# every model here has stories260K's 512 tokens first: one tokenization
tok_model <- files[[1]]$path
all_ids <- if (oracle_ok) {
  as.integer(oracle("tokenize", tok_model, text = story, add_special = TRUE)$tokens)
} else {
  Rllm::rllm_tokenize(Rllm::rllm_tokenizer(tok_model), story, add_special = TRUE)
}
if (length(all_ids) < max(prompts)) stop("bench llm: the text gives ", length(all_ids),
                                        " tokens, fewer than the longest prompt")
prompt_of <- function(P) utils::head(as.integer(all_ids), P)
# the same prompts as text, for llamaR (which tokenizes text itself)
text_of <- function(P) if (oracle_ok) oracle("detokenize", tok_model, tokens = prompt_of(P)[-1])$text else NA_character_
texts <- stats::setNames(lapply(prompts, text_of), prompts)

# ---- memory bandwidth and the decode bound ------------------------------------
# single-thread memory rates (bench/membw.c, compiled here): memcpy of 1
# GiB and a read-only pass; the bound uses the read rate (decode reads the
# weights, writes almost nothing)
mem <- local({
  dir.create(file.path(root, "build"), showWarnings = FALSE)
  exe <- file.path(root, "build", "membw")
  cc <- Sys.getenv("CC", "cc")
  if (system2(cc, c("-O2", "-o", shQuote(exe), shQuote(file.path(root, "bench", "membw.c")))) != 0)
    stop("bench llm: cannot compile bench/membw.c with ", cc)
  as.numeric(strsplit(system2(exe, stdout = TRUE), " ")[[1]]) * 1e9
})
read_rate <- mem[2]
bytes_per_token <- function(path) {
  td <- Rgguf::gguf_tensors(Rgguf::gguf_open(path))
  b <- sum(td$bytes)
  if ("output.weight" %in% td$name) b <- b - td$bytes[td$name == "token_embd.weight"] *
    (1 - 1 / td$ne1[td$name == "token_embd.weight"])
  b
}

# ---- ours (Rllm) -------------------------------------------------------------
bench_ours <- function(path, threads, P, G) {
  m <- Rllm::rllm_gguf_model(path, threads = threads)
  pre <- dec <- numeric()
  for (r in 0:reps) {
    tm <- Rllm::rllm_generate(m, prompt_of(P), n_new = G, temperature = 0, stop_at_eog = FALSE)$timings
    if (r > 0) {
      pre <- c(pre, tm$n_prefill / tm$prefill_s)
      dec <- c(dec, tm$n_decode / tm$decode_s)
    }
  }
  c(prefill = median_of(pre), decode = median_of(dec))
}

# ---- llama.cpp (node-llama-cpp) -----------------------------------------------
bench_llamacpp <- function(path, threads, P, G) {
  ids <- prompt_of(P)
  b <- oracle("bench", path, threads = threads, tokens = ids, decode_tokens = ids,
              gen_tokens = G, reps = reps, ctx = P + G + 16L, flash_attn = peer_fa)
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
bench_llamar <- function(path, threads, P, G) {
  L <- asNamespace("llamaR")
  try(L$llama_set_verbosity(0L), silent = TRUE)
  m <- L$llama_load_model(path, n_gpu_layers = 0L)
  ctx <- L$llama_new_context(m, n_ctx = P + G + 16L, n_threads = threads, n_threads_batch = threads,
                             n_batch = 512L, n_ubatch = 512L, flash_attn = peer_fa)
  on.exit({ L$llama_free_context(ctx); L$llama_free_model(m) }, add = TRUE)
  pre <- dec <- numeric()
  for (r in 0:reps) {
    try(L$llama_memory_clear(ctx), silent = TRUE)
    L$llama_perf_reset(ctx)
    L$llama_generate(ctx, texts[[as.character(P)]], max_new_tokens = G, temp = 0)
    p <- L$llama_perf(ctx)
    if (r > 0) {
      pre <- c(pre, p$n_p_eval / (p$t_p_eval_ms / 1000))
      dec <- c(dec, p$n_eval / (p$t_eval_ms / 1000))
    }
  }
  c(prefill = median_of(pre), decode = median_of(dec))
}

# ---- run -------------------------------------------------------------------
na2 <- c(prefill = NA_real_, decode = NA_real_)
safely <- function(what, f, ...) {
  tryCatch(f(...), error = function(e) {
    cat(sprintf("bench llm: %s failed: %s\n", what, conditionMessage(e)))
    na2
  })
}
# the CSV is rewritten after every row, so a run stopped part-way keeps its rows
dir.create(file.path(root, "bench", "results"), recursive = TRUE, showWarnings = FALSE)
out <- Sys.getenv("BENCH_OUT", "llm.csv")
out_path <- file.path(root, "bench", "results", out)
rows <- list()
for (fl in files) {
  bpt <- bytes_per_token(fl$path)
  for (threads in thread_counts) for (P in prompts) for (G in gens) {
    ours <- safely("Rllm", bench_ours, fl$path, threads, P, G)
    lcpp <- if (oracle_ok) safely("llama.cpp", bench_llamacpp, fl$path, threads, P, G) else na2
    lr <- if (llamar_ok && !is.na(texts[[as.character(P)]])) safely("llamaR", bench_llamar, fl$path, threads, P, G) else na2
    bound <- read_rate / bpt
    row <- data.frame(
      model = fl$model, weights = fl$weights, threads = threads, prompt_tokens = P, gen_tokens = G,
      ours_prefill_tps = ours[["prefill"]], llamacpp_prefill_tps = lcpp[["prefill"]],
      llamar_prefill_tps = lr[["prefill"]],
      ours_decode_tps = ours[["decode"]], llamacpp_decode_tps = lcpp[["decode"]],
      llamar_decode_tps = lr[["decode"]],
      prefill_ratio_llamacpp = ours[["prefill"]] / lcpp[["prefill"]],
      decode_ratio_llamacpp = ours[["decode"]] / lcpp[["decode"]],
      prefill_ratio_llamar = ours[["prefill"]] / lr[["prefill"]],
      decode_ratio_llamar = ours[["decode"]] / lr[["decode"]],
      weight_bytes_per_token = bpt, read_gbps = read_rate / 1e9, memcpy_gbps = mem[1] / 1e9, decode_bound_tps = bound,
      decode_bound_pct = 100 * ours[["decode"]] / bound,
      llamacpp_prefill_wall_tps = if (length(lcpp) > 2) lcpp[["prefill_wall"]] else NA_real_,
      llamacpp_decode_wall_tps = if (length(lcpp) > 2) lcpp[["decode_wall"]] else NA_real_,
      peer_flash_attn = peer_fa, stringsAsFactors = FALSE)
    rows[[length(rows) + 1L]] <- row
    utils::write.csv(do.call(rbind, rows), out_path, row.names = FALSE)
    with(row, cat(sprintf(
      "%-11s %-6s t%d P%-3d G%-3d prefill %7.1f / %7.1f / %7.1f (%4.2f, %4.2f)  decode %6.1f / %6.1f / %6.1f (%4.2f, %4.2f)  bound %6.1f (%3.0f%%)\n",
      model, weights, threads, P, G, ours_prefill_tps, llamacpp_prefill_tps, llamar_prefill_tps,
      prefill_ratio_llamacpp, prefill_ratio_llamar, ours_decode_tps, llamacpp_decode_tps,
      llamar_decode_tps, decode_ratio_llamacpp, decode_ratio_llamar, decode_bound_tps,
      decode_bound_pct)))
  }
}
cat(sprintf("\ncolumns: tokens/s ours / llama.cpp / llamaR (ours/llama.cpp, ours/llamaR); decode bound = %.1f GB/s (one thread reading memory) / weight bytes per token\n",
            read_rate / 1e9))
cat("goal: ratios >= 1.0 on every row; decode >= 80% of the bound at 1 thread\n")
cat("wrote bench/results/", out, "\n", sep = "")
