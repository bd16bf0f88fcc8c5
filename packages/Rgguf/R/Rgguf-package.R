#' Rgguf: GGUF model files as zero-copy Rfmalloc spans
#'
#' @useDynLib Rgguf, .registration = TRUE, .fixes = "C_"
#' @keywords internal
"_PACKAGE"
