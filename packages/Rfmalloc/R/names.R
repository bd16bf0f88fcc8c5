#' Named objects: save, get, list, delete
#'
#' A runtime keeps a directory of named objects. In a persistent runtime they
#' survive the process: reopen the file with [open_fmalloc()] (in any later R
#' process) and fetch them with `fmalloc_get()`. Unnamed blocks are
#' temporaries and are not kept across a reopen.
#'
#' `fmalloc_save(x, name)` stores `x` under `name`, replacing an object already
#' stored under it:
#' * a mapped temporary of the same runtime (from [create_fmalloc_vector()] or
#'   a copy of a mapped vector) is named in place, without copying its bytes,
#'   and `x` itself becomes a view of the stored object (and is marked not
#'   mutable, see below);
#' * anything else (a heap vector, a vector of another runtime, a vector
#'   already stored under another name) is copied into a new block.
#'
#' The directory records the type and dims (up to 4). Other attributes
#' (`dimnames`, `names`, `class`, `levels`, ...) are stored too, serialized in
#' a hidden companion object `.fm/attr/<name>`.
#'
#' Saving, like every change, becomes durable (and visible to other processes)
#' at the next sync; `fmalloc_save()` and `fmalloc_delete()` sync by default.
#'
#' Views and value semantics: `fmalloc_get()` returns a view of the stored
#' bytes, not a copy. Every view of a stored object (the vectors returned by
#' `fmalloc_get()` and by [readRDS()] / [unserialize()] of a reference, the
#' value `fmalloc_save()` returns, and the caller's `x` once it was named in
#' place) is marked not mutable (`MARK_NOT_MUTABLE`): modifying it in R
#' (`x[i] <- v`, `x[is.na(x)] <- 0` inside a function, `dim(x) <- ...`)
#' first copies it into a new unnamed block of the same runtime, so the
#' stored object and every other view keep their values. No R variable ever
#' changes value because another one was modified. To write into a stored
#' object on purpose, use [fmalloc_write_cols()] (explicit, seen by every
#' view, also from forked workers), or save a new object under the name.
#' Fresh unnamed vectors from [create_fmalloc_vector()] stay writable in place
#' until they are saved. Deleting or replacing a name moves its live views
#' onto an unnamed copy first, so they keep their values too.
#'
#' Serialization: a view of a named object of a persistent runtime serializes
#' ([saveRDS()], [serialize()]) as a reference (path, name, dtype, length,
#' uid and the file's random identity), not as its values. Reading it back
#' reopens the file (or reuses a runtime already open on it in this process,
#' provided the path still names that very file: not one renamed over it,
#' created again after a delete, or rewritten in place; else it opens the path
#' read-only), checks that it is the file the reference was made in (uids
#' start over in a file created again at the same path, the identity does
#' not), finds the name and checks that the object was not replaced since.
#' The restored vector is a view, marked not mutable. Unnamed and scratch
#' vectors serialize by value.
#'
#' @param x A double, integer, logical or raw vector, matrix or array (at most
#'   4 dims), mapped or not.
#' @param name Object name: a string of 1 to 246 bytes (UTF-8) that does not
#'   start with `".fm/"` (reserved for companions).
#' @param runtime A runtime from [open_fmalloc()]; for `fmalloc_save()` the
#'   runtime of `x` by default (required when `x` is not mapped).
#' @param sync Commit the runtime afterwards (persistent runtimes only).
#' @return `fmalloc_save()`: invisibly, the stored object as a mapped vector
#'   with `x`'s attributes, marked not mutable. `fmalloc_get()`: the mapped
#'   vector with its dims and attributes, marked not mutable (R copies it
#'   before any modification).
#'   `fmalloc_list()`: a data frame with columns `name`, `type` (`"double"`,
#'   `"integer"`, `"logical"`, `"raw"`, or a codec dtype), `dims` (e.g.
#'   `"3000 x 600"`) and `bytes` (payload bytes, double), sorted by name.
#'   `fmalloc_delete()`: invisibly `TRUE`.
#' @section Errors:
#' `fm_error_earg` for an absent name (also in `fmalloc_delete()`), a bad name
#' or type, a runtime that is not one (for example swapped arguments), a
#' read-only runtime or a call from a forked child; `fm_error_enospc` (after
#' one garbage collection to reclaim dead temporaries); `fm_error_eclosed`;
#' `fm_error_eformat` for a file truncated from outside. Restoring a
#' reference raises `fm_error_eio` when the backing file no longer exists,
#' `fm_error_emismatch` when the path now names another file (created again
#' after a delete: "refers to object 'x' of another file") or when the object
#' was replaced, `fm_error_eformat` when the file was rewritten or truncated
#' in place or is not an fmalloc file, `fm_error_earg` when the name is gone,
#' and `fm_error_ebusy` when another process holds the file for writing.
#' @examples
#' path <- tempfile(fileext = ".bin")
#' rt <- open_fmalloc(path, size_gb = 0.01)
#' m <- create_fmalloc_matrix("double", 2, 2, rt, dimnames = list(c("a", "b"), NULL))
#' m[] <- 1:4
#' fmalloc_save(m, "m")
#' fmalloc_list(rt)
#' cleanup_fmalloc(rt)
#' rt <- open_fmalloc(path, read_only = TRUE)
#' fmalloc_get(rt, "m")
#' cleanup_fmalloc(rt)
#' unlink(path)
#' @name fmalloc_save
NULL

fm_attr_name <- function(name) paste0(".fm/attr/", name)

fm_check_name <- function(name) {
  if (!is.character(name) || length(name) != 1L || is.na(name))
    fm_abort("earg", "name must be a single non-missing string")
  n <- nchar(enc2utf8(name), type = "bytes")
  if (n < 1L || n > 246L)
    fm_abort("earg", "name must have 1 to 246 bytes, not ", n)
  if (startsWith(name, ".fm/"))
    fm_abort("earg", "names starting with \".fm/\" are reserved, not '", name, "'")
  invisible(name)
}

#' @rdname fmalloc_save
#' @export
fmalloc_save <- function(x, name, runtime = fmalloc_runtime_of(x), sync = TRUE) {
  if (is.null(runtime))
    fm_abort("earg", "runtime is required when x is not a mapped vector")
  fm_check_runtime(runtime)
  fm_check_name(name)
  attrs <- attributes(x)
  dim <- attrs$dim
  attrs$dim <- NULL
  y <- .Call(C_fmr_altrep_save, x, name, runtime)
  comp <- fm_attr_name(name)
  if (length(attrs)) {
    .Call(C_fmr_altrep_save, serialize(attrs, NULL, xdr = TRUE), comp, runtime)
  } else {
    .Call(C_fmr_runtime_delete, runtime, comp)
  }
  if (is.null(attributes(y)) && (length(attrs) || !is.null(dim)))
    .Call(C_fmr_altrep_set_attrs, y, c(list(dim = dim), attrs))
  if (isTRUE(sync) && fmalloc_info(runtime)$mode == "persistent") fmalloc_sync(runtime)
  invisible(y)
}

#' @rdname fmalloc_save
#' @export
fmalloc_get <- function(runtime, name) {
  fm_check_runtime(runtime)
  fm_check_name(name)
  comp <- tryCatch(.Call(C_fmr_altrep_get, runtime, fm_attr_name(name)),
                   fm_error_earg = function(e) NULL)
  attrs <- if (is.null(comp)) list() else unserialize(comp)
  # The view is marked not mutable in C (r_altrep.c), so R copies it before
  # any change; attributes are set on it in place.
  .Call(C_fmr_altrep_set_attrs, .Call(C_fmr_altrep_get, runtime, name), attrs)
}

#' @rdname fmalloc_save
#' @export
fmalloc_list <- function(runtime) {
  fm_check_runtime(runtime)
  d <- .Call(C_fmr_runtime_dir, runtime)
  keep <- !startsWith(d$name, ".fm/")
  data.frame(name = d$name[keep], type = d$dtype[keep],
             dims = vapply(d$dims[keep], function(v) paste(format(v, scientific = FALSE,
                                                                    trim = TRUE),
                                                           collapse = " x "), ""),
             bytes = d$bytes[keep], stringsAsFactors = FALSE)
}

#' @rdname fmalloc_save
#' @export
fmalloc_delete <- function(runtime, name, sync = TRUE) {
  fm_check_runtime(runtime)
  fm_check_name(name)
  if (!.Call(C_fmr_runtime_delete, runtime, name))
    fm_abort("earg", "no object named '", name, "' in '", fmalloc_info(runtime)$path, "'")
  .Call(C_fmr_runtime_delete, runtime, fm_attr_name(name))
  if (isTRUE(sync) && fmalloc_info(runtime)$mode == "persistent") fmalloc_sync(runtime)
  invisible(TRUE)
}
