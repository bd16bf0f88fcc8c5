#' Rllm: llama-family language models on mapped GGUF weights
#'
#' @useDynLib Rllm, .registration = TRUE, .fixes = "C_"
#' @keywords internal
"_PACKAGE"
