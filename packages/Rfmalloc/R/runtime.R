#' Open a mapped-file runtime
#'
#' Maps the file at `path` (creating it when absent) and returns a runtime in
#' which [create_fmalloc_vector()], [create_fmalloc_matrix()] and
#' [fmalloc_save()] allocate. The file grows on demand up to the size cap;
#' virtual address space for the whole cap is reserved at open, so pointers
#' into the mapping never move.
#'
#' @param path Path of the backing file. It is normalised to an absolute path;
#'   that path is what serialized references record.
#' @param size_gb Size cap in GiB (\eqn{2^{30}} bytes), a positive number;
#'   fractions are allowed. Required to create a file; for an existing file
#'   `NULL` keeps the stored cap and a larger value raises it. Ignored for
#'   read-only opens.
#' @param mode `"persistent"`: the file and its *named* objects (see
#'   [fmalloc_save()]) survive the process and can be reopened; unnamed
#'   objects are temporaries, freed when R garbage-collects them and never
#'   kept across a reopen. `"scratch"`: the file is unlinked as soon as it is
#'   created, so it disappears at cleanup or at any process exit (even
#'   `kill -9`); its vectors serialize by value.
#' @param read_only `TRUE` maps the file read-only with a shared lock (the file
#'   must exist; several readers may share it). Vectors of a read-only runtime
#'   are marked not mutable, so modifying one makes a heap copy.
#' @return An object of class `"fmalloc_runtime"` (an external pointer). When
#'   it is garbage-collected, or R exits, the map is closed without a sync.
#'   A new file gets a random 128-bit identity (`fmalloc_info()$file_id`), so
#'   references to its objects are not taken for objects of a file created
#'   again at the same path later.
#' @section Errors:
#' `fm_error_ebusy` when another writer holds the file (also a second writable
#' open in the same process), `fm_error_eformat` for a truncated, foreign or
#' corrupt file (the message names the file), `fm_error_enospc` when the cap
#' cannot be reserved, `fm_error_eio`, `fm_error_earg` for bad arguments.
#' @section Changes to the backing file from outside:
#' * Replaced by rename (`mv new path`): the runtime keeps mapping the old
#'   file, so live objects keep their values; a later open sees the new file.
#' * Truncated: detected (as `fm_error_eformat` naming the file, the expected
#'   and the actual size) at the next [fmalloc_sync()], [fmalloc_check()],
#'   allocation, streamed pass ([fmalloc_colMeans()], [fmalloc_colVars()],
#'   [fmalloc_pca()], codec products), open, and whenever R or C code takes a
#'   vector's data pointer (once per operation: `crossprod(x)`, `sum(x)`,
#'   `x + 1`, `x[] <- v`, BLAS and packages that take the pointer). Once
#'   detected, the runtime is marked broken for good (`fmalloc_info()$is_broken`):
#'   every later access to the values of its vectors, also element by element,
#'   raises `fm_error_eformat` instead of touching the lost pages; close it
#'   with [cleanup_fmalloc()]. Element and region reads (`x[i]`, `rev(x)`,
#'   `REAL_ELT()`) check the file at most once a millisecond, so only a
#'   truncation by another process in the middle of a tight loop of element
#'   reads (R's own, or C code's through the data pointer) can still kill R
#'   with SIGBUS, as for any mapped file. A truncation during one of the
#'   stack's own passes over the file (codec products, `crossprod()`,
#'   `X[i, j]`, [fmalloc_colVars()], [fmalloc_pca()]) is caught instead:
#'   `fm_error_eio` naming the file.
#' * Rewritten in place (`cp other path`, `writeLines(..., path)`: same file,
#'   other contents): the mapping shows the new bytes, which this runtime
#'   cannot interpret; restoring a serialized reference (see
#'   [fmalloc_save()]) notices it and raises `fm_error_eformat`.
#' * Deleted (`unlink(path)`): the mapping stays valid and live objects keep
#'   working in this process; the data disappear with the last mapping (at
#'   cleanup or exit), and a later [readRDS()] of a reference fails with
#'   `fm_error_eio` naming the missing file. Syncing a deleted file succeeds
#'   but preserves nothing.
#' @section Source:
#' This package's own file format: a header, then the objects' blocks
#' (its byte layout is `docs/formats/fmalloc.md` in the source repository).
#' @seealso [cleanup_fmalloc()], [fmalloc_sync()], [fmalloc_info()]
#' @examples
#' rt <- open_fmalloc(tempfile(fileext = ".bin"), size_gb = 0.01)
#' x <- create_fmalloc_vector("double", 5, rt)
#' x[] <- 1:5
#' fmalloc_info(rt)$used_bytes
#' cleanup_fmalloc(rt)
#' @export
open_fmalloc <- function(path, size_gb = NULL, mode = c("persistent", "scratch"),
                         read_only = FALSE) {
  mode <- fm_arg_choice(mode, c("persistent", "scratch"))
  if (!is.character(path) || length(path) != 1L || is.na(path) || !nzchar(path))
    fm_abort("earg", "path must be a single non-empty string")
  if (!is.logical(read_only) || length(read_only) != 1L || is.na(read_only))
    fm_abort("earg", "read_only must be TRUE or FALSE")
  if (read_only && mode == "scratch")
    fm_abort("earg", "a scratch runtime cannot be opened read-only")
  path <- fm_abs_path(path)
  if (mode == "scratch" && file.exists(path))
    fm_abort("earg", "mode = \"scratch\" creates a new file, but '", path, "' already exists ",
             "(open it with mode = \"persistent\", or give a new path)")
  cap <- 0
  if (!is.null(size_gb)) {
    if (!is.numeric(size_gb) || length(size_gb) != 1L || is.na(size_gb) || size_gb <= 0)
      fm_abort("earg", "size_gb must be a single positive number, not ", deparse(size_gb))
    cap <- ceiling(size_gb * 2^30)
  } else if (!read_only && (mode == "scratch" || !file.exists(path))) {
    fm_abort("earg", "size_gb is required to create '", path, "'")
  }
  .Call(C_fmr_runtime_open, path, as.double(cap), mode, read_only)
}

fm_abs_path <- function(path) {
  path <- path.expand(path)
  dir <- normalizePath(dirname(path), winslash = "/", mustWork = FALSE)
  file.path(dir, basename(path))
}

#' The session's default runtime
#'
#' The runtime that functions taking a `runtime` argument use when none is
#' given ([fmalloc_bed()], [fmalloc_dosage()], [fmalloc_haplotypes()],
#' [fmalloc_alp()], [create_fmalloc_vector()], [create_fmalloc_matrix()],
#' `Rpgen::rpgen_read()`), so that `X <- rpgen_read("file.bgen")` works as
#' an R user expects. It is a scratch runtime ([open_fmalloc()] with
#' `mode = "scratch"`) in [tempdir()], made at its first use in the session:
#' its file is unlinked as soon as it is created, so it is removed at exit
#' (also when R is killed) and its objects are not persistent. The file
#' grows on demand up to a cap of option `fmalloc.default_runtime_gb` GiB
#' (default 1024; only the bytes written take disk space, the cap reserves
#' address space), read when the runtime is made. When the option is unset
#' and the process's address space is limited (`ulimit -v`, a batch
#' scheduler's `h_vmem`) so that 1024 GiB cannot be reserved, the cap is the
#' largest of 512, 256, ..., 1 GiB that can, with a message saying so. An explicit `runtime =`
#' always wins; use a persistent runtime for objects to keep.
#'
#' If the default runtime is closed ([cleanup_fmalloc()]), the next use
#' makes a new one; objects in the closed one raise `fm_error_eclosed`.
#' @return The runtime (class `"fmalloc_runtime"`). Its path (under
#'   [tempdir()], already unlinked) and its size are shown by `print()` and
#'   given by [fmalloc_info()] (`path`, `used_bytes`, `file_bytes`,
#'   `cap_bytes`).
#' @section Errors: `fm_error_earg` when option `fmalloc.default_runtime_gb`
#'   is not one positive number; the errors of [open_fmalloc()], such as
#'   `fm_error_enospc` when the cap set by the option (or, unset, even 1
#'   GiB) cannot be reserved, whose message says to set a smaller cap with
#'   `options(fmalloc.default_runtime_gb = <GiB>)`.
#' @section Source: this package's runtime (see [open_fmalloc()]).
#' @examples
#' rt <- fmalloc_default_runtime()
#' rt
#' X <- fmalloc_bed(matrix(c(0, 1, 2, 2), 2, 2)) # in the default runtime
#' fmalloc_info(rt)$used_bytes > 0
#' @export
fmalloc_default_runtime <- function() {
  rt <- .session$runtime
  if (is.null(rt) || !fmalloc_is_open(rt)) {
    gb <- getOption("fmalloc.default_runtime_gb")
    if (!is.null(gb) && (!is.numeric(gb) || length(gb) != 1L || is.na(gb) || gb <= 0))
      fm_abort("earg", "option fmalloc.default_runtime_gb must be one positive number of GiB, not ",
               fm_describe(gb))
    rt <- .open_default_runtime(gb)
    .session$runtime <- rt
  }
  rt
}

# The default runtime with a cap of `gb` GiB, or, when the option is unset,
# of the largest of 1024, 512, ..., 1 GiB whose address space can be
# reserved (a virtual-memory limit: ulimit -v, SGE h_vmem), with a message
# when it is less than 1024. A reservation refused raises the error with
# the way to set the cap.
.open_default_runtime <- function(gb) {
  sizes <- if (is.null(gb)) 2^(10:0) else gb
  for (size in sizes) {
    rt <- tryCatch(open_fmalloc(tempfile("fmalloc-session-", fileext = ".fm"), size_gb = size,
                                mode = "scratch"),
                   fm_error_enospc = function(e) e)
    if (!inherits(rt, "condition")) break
    if (!grepl("address space", conditionMessage(rt), fixed = TRUE)) stop(rt)
  }
  if (inherits(rt, "condition")) {
    fm_abort("enospc", conditionMessage(rt), ": the address space of this process is limited ",
             "(ulimit -v, a batch scheduler's h_vmem); set a smaller cap for the session's default runtime ",
             "with options(fmalloc.default_runtime_gb = <GiB>), or pass runtime = open_fmalloc(path, size_gb = <GiB>)",
             call = sys.call(-1L))
  }
  if (is.null(gb) && size < 1024) {
    message(sprintf(paste("Rfmalloc: the default runtime's cap is %s GiB, not 1024: the address space",
                          "of this process is limited (ulimit -v); options(fmalloc.default_runtime_gb =",
                          "<GiB>) sets it"), format(size)))
  }
  rt
}

# State of this R session: the default runtime (fmalloc_default_runtime()).
.session <- new.env(parent = emptyenv())

#' Close a runtime
#'
#' Commits a writable persistent runtime (unless `sync = FALSE`), then unmaps
#' the file and releases its lock. Vectors of the runtime stay valid R objects
#' but any later access to their values raises `fm_error_eclosed`
#' ("mapping of '/path/to/file' is closed"); it never crashes. A scratch file
#' is gone after this. Closing a closed runtime does nothing.
#'
#' @param runtime An `"fmalloc_runtime"`.
#' @param sync Commit first (see [fmalloc_sync()]). The map is closed even when
#'   the commit fails. A file damaged from outside (truncated: the commit is
#'   impossible, and what changed since the last sync is lost) gives a
#'   warning (class `fm_warning_eformat`) saying so, as closing is what to
#'   do then; another failure of the commit (`fm_error_eio`) is raised after
#'   closing.
#' @return Invisibly, `TRUE` if the runtime was open.
#' @export
cleanup_fmalloc <- function(runtime, sync = TRUE) {
  fm_check_runtime(runtime)
  call <- sys.call()
  invisible(tryCatch(.Call(C_fmr_runtime_close, runtime, isTRUE(sync)), fm_error_eformat = function(e) {
    warning(warningCondition(paste0(conditionMessage(e), "; the runtime is closed without a commit ",
                                    "(changes since the last sync are lost)"),
                             class = "fm_warning_eformat", call = call))
    TRUE
  }))
}

#' Commit a runtime durably
#'
#' Flushes the data to the file, then writes the block table and the name
#' directory into the inactive metadata slot and flushes it. A crash (or an
#' exit without sync) loses what changed since the last sync, never the
#' directory. Named objects become visible to other processes at a sync
#' ([fmalloc_save()] and [fmalloc_delete()] sync by default).
#'
#' @param runtime A writable `"fmalloc_runtime"`.
#' @return Invisibly, `runtime`.
#' @section Errors:
#' `fm_error_eformat` when the file was truncated from outside (the message
#' names the file and both sizes; the runtime is then marked broken, see
#' [open_fmalloc()]), `fm_error_eio`, `fm_error_earg` for a read-only runtime
#' or a call from a forked child, `fm_error_eclosed`.
#' @export
fmalloc_sync <- function(runtime) {
  fm_check_runtime(runtime)
  .Call(C_fmr_runtime_sync, runtime)
  invisible(runtime)
}

#' Check that a runtime's file was not truncated
#'
#' A cheap `fstat` comparison of the file size with what the map relies on;
#' call it before a long pass over data that another process might shrink.
#' @param runtime An `"fmalloc_runtime"`.
#' @return Invisibly `TRUE`; raises `fm_error_eformat` when the file shrank
#'   (and marks the runtime broken: see "Changes to the backing file from
#'   outside" in [open_fmalloc()]).
#' @export
fmalloc_check <- function(runtime) {
  fm_check_runtime(runtime)
  invisible(.Call(C_fmr_runtime_check, runtime))
}

#' State of a runtime
#'
#' @param runtime An open `"fmalloc_runtime"`.
#' @return A list: `path` (absolute), `mode` (`"persistent"` or `"scratch"`),
#'   `read_only`, `cap_bytes` (size cap, bytes), `file_bytes` (current file
#'   size, bytes), `used_bytes` (bytes in live blocks, each rounded up to 64),
#'   `n_blocks` (live blocks, named or not), `n_named` (directory entries,
#'   including the hidden `.fm/` companions that hold attributes),
#'   `sync_seq` (sequence number of the last committed metadata),
#'   `format_version` (of the file, an integer), `file_id` (the file's random
#'   identity as 32 hex digits; all zeros for a version-1 file) and
#'   `is_broken` (`TRUE` once the file was found truncated from outside). Byte
#'   counts are doubles. Raises `fm_error_eclosed` after [cleanup_fmalloc()].
#' @export
fmalloc_info <- function(runtime) {
  fm_check_runtime(runtime)
  .Call(C_fmr_runtime_info, runtime)
}

#' Is a runtime open?
#' @param runtime An `"fmalloc_runtime"`.
#' @return `TRUE` or `FALSE`.
#' @export
fmalloc_is_open <- function(runtime) {
  fm_check_runtime(runtime)
  .Call(C_fmr_runtime_state, runtime)$is_open
}

#' @export
print.fmalloc_runtime <- function(x, ...) {
  st <- .Call(C_fmr_runtime_state, x)
  if (!isTRUE(st$is_open)) {
    cat("<fmalloc_runtime> ", st$path, " (closed)\n", sep = "")
    return(invisible(x))
  }
  info <- fmalloc_info(x)
  cat("<fmalloc_runtime> ", info$path, "\n", sep = "")
  cat("  mode: ", info$mode, if (info$read_only) ", read-only" else "", "\n", sep = "")
  cat("  used: ", fm_bytes(info$used_bytes), " of ", fm_bytes(info$cap_bytes), " cap (file ",
      fm_bytes(info$file_bytes), ")\n", sep = "")
  cat("  blocks: ", format(info$n_blocks), ", named: ", format(info$n_named),
      ", sync: ", format(info$sync_seq), "\n", sep = "")
  invisible(x)
}

#' @export
format.fmalloc_runtime <- function(x, ...) {
  st <- .Call(C_fmr_runtime_state, x)
  sprintf("<fmalloc_runtime %s%s>", st$path, if (isTRUE(st$is_open)) "" else " (closed)")
}

fm_bytes <- function(b) {
  units <- c("B", "KiB", "MiB", "GiB", "TiB")
  k <- if (b > 0) min(length(units) - 1, floor(log(b, 1024))) else 0
  paste0(format(signif(b / 1024^k, 4)), " ", units[k + 1])
}
