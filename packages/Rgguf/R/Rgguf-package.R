#' Rgguf: GGUF model files as zero-copy Rfmalloc spans
#'
#' Tensor views are Rfmalloc codec matrices: the package imports Rfmalloc's
#' namespace so that its S4 methods (`%*%`, `as.matrix`, `crossprod`, ...)
#' dispatch inside Rgguf too.
#'
#' @useDynLib Rgguf, .registration = TRUE, .fixes = "C_"
#' @import Rfmalloc
#' @keywords internal
"_PACKAGE"
