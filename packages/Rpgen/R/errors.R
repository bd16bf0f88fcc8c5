#' Errors raised by Rpgen
#'
#' Errors of the readers are R conditions of class
#' `c("fm_error_<status>", "fm_error", "error", "condition")`, as in Rfmalloc
#' (see `?Rfmalloc::fm_error`), whose message names the file and the record,
#' line or byte offset: `fm_error_eio` (a file cannot be opened or read),
#' `fm_error_eformat` (malformed or truncated bytes, wrong magic),
#' `fm_error_emismatch` (companion files disagree), `fm_error_earg` (a bad
#' argument), `fm_error_eunsupported` (valid but not handled). An interrupted
#' read signals R's own `interrupt` condition once the reader has stopped and
#' released its state (see "Progress and interrupts" in [rpgen_read()]).
#' @name rpgen_errors
NULL
