#!/usr/bin/env Rscript
# Write the small random-weight GGUF models that Rllm's test-arch.R builds
# (qwen2, qwen3, qwen3moe, gemma-embedding, lfm2) to a folder, for looking at
# them with llama.cpp or other tools. GENERATED DATA: pseudo-random weights,
# a made-up vocab; not trained models. The recipe is Rllm's installed
# inst/arch/arch_gguf.R (one source for the package's tests and this tool);
# files are written with Rgguf::gguf_write (GGML's own GGUF writer).
#
# Usage: R_LIBS=build/rlib Rscript tools/gen-arch-ggufs.R [out_dir] [seed] [type]
#   out_dir  default build/arch-ggufs
#   seed     default 1
#   type     GGML type of the weight matrices, F32 (default) or F16
args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args) >= 1L) args[[1L]] else "build/arch-ggufs"
seed <- if (length(args) >= 2L) as.integer(args[[2L]]) else 1L
type <- if (length(args) >= 3L) args[[3L]] else "F32"
suppressPackageStartupMessages(library(Rgguf))
source(system.file("arch", "arch_gguf.R", package = "Rllm", mustWork = TRUE))
dir.create(out, recursive = TRUE, showWarnings = FALSE)
for (a in arch_gguf_names) {
  f <- file.path(out, paste0("random-", a, ".gguf"))
  arch_gguf_write(a, f, seed = seed, type = type)
  cat(sprintf("%-16s %s (%d bytes)\n", a, f, file.size(f)))
}
