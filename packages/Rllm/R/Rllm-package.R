#' Rllm: llama-family language models on mapped GGUF weights
#'
#' @useDynLib Rllm, .registration = TRUE, .fixes = "C_"
#' @importFrom Rfmalloc fm_abort fm_arg_choice
#' @importFrom Rgguf gguf_open
#' @keywords internal
"_PACKAGE"

