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
  out <- rscript_child(code)
  expect_identical(attr(out, "status"), 0L)
  expect_identical(trimws(out[length(out)]), "TRUE fm_error_eclosed fm_error_eclosed FALSE")
})

test_that("Rgguf (and Rfmalloc under it) unload and load again: views, products and the backend work", {
  p <- quant_zoo()
  code <- sprintf('
    suppressMessages(library(Rgguf))
    g <- gguf_open("%s")
    x <- t(gguf_tensor(g, "x", "numeric"))
    ref <- gguf_tensor(g, "w.Q4_K") %%*%% x
    out <- character()
    for (cycle in 1:2) {
      W <- gguf_tensor(g, "w.Q4_K")
      detach("package:Rgguf", unload = TRUE)
      if (cycle == 2) detach("package:Rfmalloc", unload = TRUE)
      suppressMessages(library(Rgguf))
      old <- tryCatch(W[1, 1], error = function(e) class(e)[1])
      oldg <- tryCatch(gguf_tensors(g), error = function(e) class(e)[1])
      g <- gguf_open("%s")
      V <- gguf_tensor(g, "w.Q4_K")
      same <- identical(as.matrix(V), gguf_tensor(g, "w.Q4_K", "numeric"))
      y <- V %%*%% x
      out <- c(out, old, oldg, same, identical(y, ref), Rfmalloc::fmalloc_last_backend(),
               sum(Rfmalloc::fmalloc_backends() == "ggml"),
               identical(Rfmalloc::fmalloc_colVars(V), apply(as.matrix(V), 2, var)) ||
                 isTRUE(all.equal(Rfmalloc::fmalloc_colVars(V), apply(as.matrix(V), 2, var))))
    }
    cat(out, "\\n")', p, p)
  out <- rscript_child(code)
  expect_identical(attr(out, "status"), 0L)
  one <- "fm_error_eclosed fm_error_eclosed TRUE TRUE ggml 1 TRUE"
  expect_identical(trimws(out[length(out)]), paste(one, one))
})
