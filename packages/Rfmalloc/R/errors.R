#' Errors raised by Rfmalloc
#'
#' Every error of the package is an R condition of class
#' `c("fm_error_<status>", "fm_error", "error", "condition")` with a one
#' sentence message naming the file or argument and the numbers involved.
#' Match on the class, not the text:
#'
#' | class | meaning |
#' | --- | --- |
#' | `fm_error_enomem` | heap allocation failed |
#' | `fm_error_eio` | an OS call on a file failed (also: a backing file is missing) |
#' | `fm_error_eformat` | malformed bytes: bad magic, foreign, corrupt or truncated file |
#' | `fm_error_emismatch` | inputs inconsistent with each other (dims, sizes, replaced object) |
#' | `fm_error_earg` | a documented precondition was broken (bad argument, absent name, read-only runtime) |
#' | `fm_error_enospc` | the size cap, disk or file-size limit is reached |
#' | `fm_error_ebusy` | another writer holds the file lock |
#' | `fm_error_eclosed` | the runtime was closed: "mapping is closed" |
#' | `fm_error_eunsupported`, `fm_error_edegenerate`, `fm_error_einternal` | see `fm_base.h` |
#'
#' An interrupted long computation raises `fm_error_ecancelled`, which is an
#' `interrupt` condition rather than an `error`.
#'
#' @name fm_error
#' @examples
#' rt <- open_fmalloc(tempfile(), size_gb = 0.01, mode = "scratch")
#' x <- create_fmalloc_vector("double", 3, rt)
#' cleanup_fmalloc(rt)
#' tryCatch(x[1], fm_error_eclosed = function(e) conditionMessage(e))
NULL

# Signal an fm_error condition; called from C (r_err.c) and from R code.
.fm_raise <- function(code, message) {
  call <- if (sys.nframe() > 1L) sys.call(-1L) else NULL
  if (identical(code, "ecancelled")) {
    cond <- structure(class = c("fm_error_ecancelled", "fm_error", "interrupt", "condition"),
                      list(message = message, call = call))
    signalCondition(cond)
    invokeRestart("abort")
  }
  cond <- structure(class = c(paste0("fm_error_", code), "fm_error", "error", "condition"),
                    list(message = message, call = call))
  stop(cond)
}

fm_abort <- function(code, ...) {
  call <- if (sys.nframe() > 1L) sys.call(-1L) else NULL
  cond <- structure(class = c(paste0("fm_error_", code), "fm_error", "error", "condition"),
                    list(message = paste0(...), call = call))
  stop(cond)
}
