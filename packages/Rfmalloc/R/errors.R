#' Errors raised by Rfmalloc
#'
#' Every error of the package is an R condition of class
#' `c("fm_error_<status>", "fm_error", "error", "condition")` with a one
#' sentence message naming the file or argument and the numbers involved.
#' Match on the class, not the text: the classes and their meanings are
#' listed under Details. Warnings the package gives have classes
#' `c("fm_warning_<status>", "warning", "condition")`: `fm_warning_emismatch`
#' when a `.fam` lists one sample more than the `.bed` holds (see
#' [fmalloc_bed_open()]) and `fm_warning_eformat` when [cleanup_fmalloc()]
#' closes a runtime whose file was truncated from outside.
#'
#' | class | meaning |
#' | --- | --- |
#' | `fm_error_enomem` | heap allocation failed |
#' | `fm_error_eio` | an OS call on a file failed (also: a backing file is missing, or a mapped file was truncated by another process during a call that read it) |
#' | `fm_error_eformat` | malformed bytes: bad magic, foreign, corrupt or truncated file (also every later access to the data of a runtime whose file was truncated from outside) |
#' | `fm_error_emismatch` | inputs inconsistent with each other (dims, sizes, replaced object) |
#' | `fm_error_earg` | a documented precondition was broken (bad argument, absent name, read-only runtime) |
#' | `fm_error_enospc` | the size cap, disk or file-size limit is reached |
#' | `fm_error_ebusy` | another writer holds the file lock |
#' | `fm_error_eclosed` | the runtime was closed: "mapping of '/path/x.fm' is closed" |
#' | `fm_error_eunsupported` | valid input this code does not handle (a type, layout or product not implemented here; a forced backend that declines) |
#' | `fm_error_edegenerate` | valid input whose mathematics is degenerate (a column of zero variance to scale) |
#' | `fm_error_einternal` | a bug: an internal invariant failed (please report it) |
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

# Signal an fm_error condition from C (r_err.c), for the R function that
# made the .Call.
.fm_raise <- function(code, message) {
  fm_abort(code, message, call = if (sys.nframe() > 1L) sys.call(-1L) else NULL)
}

# What a wrong argument is, for messages: "a character string", "NULL", ...
fm_describe <- function(x) {
  if (is.object(x)) return(paste0("an object of class '", class(x)[1L], "'"))
  if (is.matrix(x)) return(paste0("a ", if (is.numeric(x)) "numeric" else typeof(x), " matrix"))
  one <- length(x) == 1L
  if (one && is.atomic(x) && is.na(x)) return(if (is.character(x)) "NA_character_" else "NA")
  switch(typeof(x),
         "NULL" = "NULL",
         character = if (one) "a character string" else "a character vector",
         double = , integer = if (one) "a number" else "a numeric vector",
         logical = if (one) "a logical value" else "a logical vector",
         list = "a list",
         closure = , builtin = , special = "a function",
         environment = "an environment",
         externalptr = "an external pointer of another kind",
         paste0("an object of type ", typeof(x)))
}

#' @rdname fm_error
#' @param runtime a value that should be an open or closed runtime
#'   ([open_fmalloc()], [fmalloc_default_runtime()]).
#' @details `fm_check_runtime()` raises `fm_error_earg` unless `runtime`
#'   is an `"fmalloc_runtime"`, describing what it is instead; packages
#'   built on Rfmalloc check their `runtime` arguments with it (first, so
#'   that swapped arguments are reported as such). It returns `runtime`
#'   invisibly.
#' @export
fm_check_runtime <- function(runtime) {
  if (!inherits(runtime, "fmalloc_runtime") || typeof(runtime) != "externalptr")
    fm_abort("earg", "runtime must be an fmalloc runtime (from open_fmalloc()), not ",
             fm_describe(runtime), call = if (sys.nframe() > 1L) sys.call(-1L) else NULL)
  invisible(runtime)
}

#' @rdname fm_error
#' @param code the status name without its prefix: `"earg"`, `"eio"`,
#'   `"eformat"`, `"emismatch"`, `"eunsupported"`, `"enospc"`, ... ;
#'   `"ecancelled"` signals an interrupt.
#' @param ... pieces of the message, pasted together.
#' @param call the call the condition reports; by default the caller's.
#' @details `fm_abort()` raises these conditions; packages built on Rfmalloc
#'   (such as Rpgen) use it so their errors have the same classes.
#' @export
fm_abort <- function(code, ..., call) {
  if (missing(call)) call <- if (sys.nframe() > 1L) sys.call(-1L) else NULL
  message <- paste0(...)
  if (identical(code, "ecancelled")) {
    cond <- structure(class = c("fm_error_ecancelled", "fm_error", "interrupt", "condition"),
                      list(message = message, call = call))
    signalCondition(cond)
    invokeRestart("abort")
  }
  stop(structure(class = c(paste0("fm_error_", code), "fm_error", "error", "condition"),
                 list(message = message, call = call)))
}

#' @rdname fm_error
#' @param arg the argument's value: one string, or the vector of choices
#'   itself (the formal's default), which gives the first.
#' @param choices the strings `arg` may be (or uniquely abbreviate, as
#'   [match.arg()]).
#' @param name the argument's name, for the message.
#' @details `fm_arg_choice()` is [match.arg()] with the stack's error:
#'   `fm_error_earg` naming the argument, its choices and the value given.
#' @export
fm_arg_choice <- function(arg, choices, name = deparse(substitute(arg))) {
  if (identical(arg, choices)) return(choices[1L])
  hit <- if (is.character(arg) && length(arg) == 1L && !is.na(arg)) pmatch(arg, choices) else NA
  if (is.na(hit)) {
    fm_abort("earg", name, " must be one of ", paste0("'", choices, "'", collapse = ", "), ", not ",
             if (is.character(arg) && length(arg) == 1L) paste0("'", arg, "'") else fm_describe(arg),
             call = if (sys.nframe() > 1L) sys.call(-1L) else NULL)
  }
  choices[hit]
}
