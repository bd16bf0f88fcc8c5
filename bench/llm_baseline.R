# Prefill and decode of the realistic-size bench models (build/bench-models,
# tools/gen-bench-models.R), ours against an earlier build of the packages
# in the R library BENCH_BASELINE_LIB (labelled BENCH_BASELINE_LABEL): for
# example the C architecture builders before issue 18 made every model a
# program. Each engine runs in child processes, alternately,
# BENCH_ALTERNATIONS times (4): 128-token prompt, 64 greedy tokens, one
# thread, the median of 6 generations after a warm-up; the best of the
# alternations is kept per engine (this machine's run-to-run noise is
# +-10%). Ratio: ours / baseline (> 1: faster). Writes
# bench/results/llm_baseline.csv (BENCH_OUT). Skipped without a baseline.

source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "lib.R"))
root <- bench_root()
lib <- Sys.getenv("BENCH_BASELINE_LIB")
if (!nzchar(lib)) {
  cat("bench llm_baseline: BENCH_BASELINE_LIB names no earlier build: skipped\n")
  quit(save = "no")
}
models <- file.path(root, "build", "bench-models",
                    paste0(c("llama85m-F16", "llama85m-Q8_0", "llama85m-Q4_K_M", "llama85m-Q4_0",
                             "smollm135m-F16"), ".gguf"))
models <- models[file.exists(models)]
if (!length(models)) {
  cat("bench llm_baseline: no model in build/bench-models (bench/llm.R writes them): skipped\n")
  quit(save = "no")
}
child <- tempfile(fileext = ".R")
writeLines(c(
  "suppressPackageStartupMessages(library(Rllm))",
  "ids <- c(1L, 3L + (seq_len(127) * 7919L) %% 509L)",
  "for (p in commandArgs(TRUE)) {",
  "  m <- rllm_gguf_model(p, threads = 1)",
  "  t <- sapply(1:7, function(r) unlist(rllm_generate(m, ids, n_new = 64)$timing[c('prefill_tps', 'decode_tps')]))",
  "  cat(basename(p), apply(t[, -1], 1, stats::median), '\\n')",
  "}"), child)
run <- function(libs) {
  out <- system2(file.path(R.home("bin"), "Rscript"), c(child, models), stdout = TRUE,
                 env = paste0("R_LIBS=", paste(libs, collapse = ":")))
  read.table(text = out, col.names = c("model", "prefill", "decode"))
}
ours_libs <- .libPaths()
n_alt <- bench_env_int("BENCH_ALTERNATIONS", 4L)
ours <- base <- NULL
for (i in seq_len(n_alt)) {
  ours <- rbind(ours, run(ours_libs))
  base <- rbind(base, run(c(lib, ours_libs)))
}
best <- function(d) aggregate(cbind(prefill, decode) ~ model, d, max)
o <- best(ours)
b <- best(base)
res <- data.frame(model = sub("\\.gguf$", "", o$model), ours_prefill = o$prefill, base_prefill = b$prefill,
                  prefill_ratio = o$prefill / b$prefill, ours_decode = o$decode, base_decode = b$decode,
                  decode_ratio = o$decode / b$decode,
                  baseline = Sys.getenv("BENCH_BASELINE_LABEL", basename(lib)))
print(res, row.names = FALSE, digits = 3)
out <- Sys.getenv("BENCH_OUT", "llm_baseline.csv")
utils::write.csv(res, file.path(root, "bench", "results", out), row.names = FALSE)
cat("wrote bench/results/", out, "\n", sep = "")
