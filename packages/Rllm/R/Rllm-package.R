#' Rllm: llama-family language models on mapped GGUF weights
#'
#' @useDynLib Rllm, .registration = TRUE, .fixes = "C_"
#' @importFrom Rfmalloc fm_abort
#' @importFrom Rgguf gguf_open
#' @keywords internal
"_PACKAGE"

# Registers the glue's fork handler (evaluation in a forked child is
# single-threaded; see rllm_threads()).
.onLoad <- function(libname, pkgname) {
  .Call(C_rllm_glue_init)
  invisible()
}
