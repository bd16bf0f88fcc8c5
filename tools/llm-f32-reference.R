# Both engines' logits on the quantized stories260K variants against an F32
# reference: the same weights dequantized by GGML's to_float (gguf_tensor(as
# = "numeric")), written as an all-F32 GGUF and evaluated in F32 by each
# engine. It tells which engine moves with the CPU path (Rllm's GGML build,
# llama.cpp's CPU variant) and by how much.
#
#   R_LIBS=build/rlib RLLM_ORACLE_DIR=tools/llama-oracle \
#     RFMALLOC_FIXTURES=../shared/fixtures Rscript tools/llm-f32-reference.R [out.csv]
#
# Prints, per variant and position, max |log-softmax difference| of ours and
# of llama.cpp against the F32 reference (ours in F32; llama.cpp in F32 agrees
# with it to the third column), and appends the rows to out.csv when given.
# bench/results/llm_f32_reference.csv holds the runs of issue 12: both GGML
# builds (avx2, portable: R_LIBS=build/isa-portable/rlib) against the three
# llama.cpp CPU variants (RLLM_ORACLE_DIR of make ISA=...).
suppressPackageStartupMessages({
  library(Rllm)
})
top <- normalizePath(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), ".."))
oracle_home <- file.path(top, "tools", "llama-oracle")
source(file.path(oracle_home, "client.R"))
out_csv <- commandArgs(TRUE)[1]

# An all-F32 copy of a GGUF: every tensor through GGML's to_float, metadata
# with the types the file gives them.
dequantized_copy <- function(path) {
  g <- gguf_open(path)
  meta <- typed_metadata(gguf_metadata(g))
  meta$general.alignment <- NULL
  meta$general.file_type <- gguf_u32(0) # all F32
  td <- gguf_tensors(g)
  tens <- lapply(td$name, function(nm) {
    x <- gguf_tensor(g, nm, as = "numeric")
    gguf_tensor_data(x, "F32")
  })
  names(tens) <- td$name
  f <- tempfile(fileext = "-f32.gguf")
  gguf_write(f, metadata = meta, tensors = tens)
  f
}

fixtures <- Sys.getenv("RFMALLOC_FIXTURES", file.path(top, "..", "shared", "fixtures"))
why <- oracle_unavailable()
if (!is.null(why)) stop("llm-f32-reference: the llama.cpp oracle is unavailable: ", why)
ids <- c(1L, 403L, 407L, 261L, 378L) # test-model.R's prompt
variants <- c("derived/stories260K-F16.gguf", "derived/stories260K-Q8_0.gguf",
              "derived/stories260K-Q4_0.gguf", "derived/stories260K-Q4_K_M.gguf")
ggml_isa <- rllm_ggml_info()$isa
sysinfo <- system2(oracle_node(), c(shQuote(file.path(oracle_dir(), "check.mjs")), "--system-info"),
                   stdout = TRUE, stderr = FALSE)
cat(sprintf("Rllm's GGML: %s build; llama.cpp: %s\n", ggml_isa, paste(sysinfo, collapse = " ")))
rows <- list()
for (v in variants) {
  q <- file.path(fixtures, "gguf", v)
  if (!file.exists(q)) stop("llm-f32-reference: fixture not found: ", q)
  f <- dequantized_copy(q)
  ref <- log_softmax(rllm_logits(rllm_gguf_model(f, threads = 1), ids, all = TRUE))
  ours <- log_softmax(rllm_logits(rllm_gguf_model(q, threads = 1), ids, all = TRUE))
  lq <- llama_oracle("logits", q, tokens = ids, all = TRUE, threads = 1)$logits
  lf <- llama_oracle("logits", f, tokens = ids, all = TRUE, threads = 1)$logits
  for (j in seq_along(ids)) {
    ok <- is.finite(lq[, j]) & is.finite(lf[, j])
    rows[[length(rows) + 1L]] <- data.frame(
      variant = basename(v), position = j, rllm_ggml = ggml_isa,
      llama_cpu = sub("^CPU : ", "", paste(sysinfo, collapse = " ")),
      ours_vs_f32 = max(abs(ours[, j] - ref[, j])),
      llama_vs_f32 = max(abs(lq[ok, j] - ref[ok, j])),
      llama_f32_vs_ours_f32 = max(abs(lf[ok, j] - ref[ok, j])),
      ours_vs_llama = max(abs(ours[ok, j] - lq[ok, j])))
  }
  unlink(f)
}
res <- do.call(rbind, rows)
print(res[, c("variant", "position", "ours_vs_f32", "llama_vs_f32", "llama_f32_vs_ours_f32", "ours_vs_llama")],
      digits = 3, row.names = FALSE)
if (!is.na(out_csv)) {
  write.table(res, out_csv, sep = ",", row.names = FALSE, append = file.exists(out_csv),
              col.names = !file.exists(out_csv))
}
