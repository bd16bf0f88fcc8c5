# make demo, second part: 64 greedy tokens from the real TinyStories model.
#
# Maps ../shared/fixtures/gguf/stories260K.gguf (llama architecture, trained
# weights) without copying its tensors, generates 64 tokens after
# "Once upon a time" on the CPU with 2 threads, and prints the text (raw
# bytes turned into a string here, by the caller) and tokens per second.
suppressPackageStartupMessages(library(Rllm))

args <- commandArgs(trailingOnly = FALSE)
script <- sub("^--file=", "", args[grep("^--file=", args)])
root <- normalizePath(file.path(dirname(script), ".."))
fixtures <- Sys.getenv("RFMALLOC_FIXTURES", file.path(dirname(root), "shared", "fixtures"))
path <- file.path(fixtures, "gguf", "stories260K.gguf")

cat("\n== Language model: 64 tokens from a GGUF file mapped in place ==\n")
if (!file.exists(path)) {
  cat("The model", path, "is absent (fixtures folder missing); skipping generation.\n")
  quit(status = 0)
}
cat("Model: karpathy's TinyStories stories260K (real, F32), ", normalizePath(path), "\n", sep = "")
model <- rllm_gguf_model(path, threads = 2L)
print(model)
prompt <- "Once upon a time"
gen <- rllm_generate(model, prompt, n_new = 64L, stop_at_eog = FALSE)
cat("\n", prompt, rawToChar(gen$raw), "\n\n", sep = "")
tm <- gen$timings
cat(sprintf("Prompt: %d tokens, prefill %.0f tokens/s; generated %d tokens, decode %.0f tokens/s (greedy, 2 threads)\n",
            tm$n_prefill, tm$prefill_tps, length(gen$tokens), tm$decode_tps))
