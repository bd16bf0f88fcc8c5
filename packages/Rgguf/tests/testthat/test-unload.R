# Unloading Rgguf's DLL while views exist: the views raise fm_error_eclosed
# (their codec is released, the mapping closed), R does not crash, and the
# "ggml" backend has left Rfmalloc's registry. Run in a child R process.

test_that("views of an unloaded Rgguf raise fm_error_eclosed instead of crashing", {
  p <- quant_zoo()
  code <- sprintf('
    suppressMessages(library(Rgguf))
    g <- gguf_open("%s")
    W <- gguf_tensor(g, "w.Q4_K")
    before <- W[1, 1]
    detach("package:Rgguf", unload = TRUE)
    r1 <- tryCatch(W[1, 1], error = function(e) class(e)[1])
    r2 <- tryCatch(W %%*%% rep(1, 256), error = function(e) class(e)[1])
    cat(is.numeric(before), r1, r2, "ggml" %%in%% Rfmalloc::fmalloc_backends(), "\\n")', p)
  f <- tempfile(fileext = ".R")
  on.exit(unlink(f))
  writeLines(code, f)
  out <- system2(file.path(R.home("bin"), "Rscript"), f, stdout = TRUE, stderr = TRUE,
                 env = paste0("R_LIBS=", paste(.libPaths(), collapse = ":")))
  expect_identical(attr(out, "status"), NULL)
  expect_identical(trimws(out[length(out)]), "TRUE fm_error_eclosed fm_error_eclosed FALSE")
})
