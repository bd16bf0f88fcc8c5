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
#' Codec matrices ([fmalloc_codec_matrix-class], e.g. from [fmalloc_bed()],
#' [fmalloc_dosage()], [fmalloc_alp()], [fmalloc_bed_open()] or
#' `Rpgen::rpgen_read()`) and their transposed views (`t(X)`) are saved
#' too: their payload (the raw storage vector, the whole of it also for a
#' column selection) under `name`, by the rules above (named in place when
#' it is an unnamed vector of the runtime, else copied), with the directory
#' recording the codec (`"bed2"`, `"dos8"`; `"raw"` for `"alp"`) and the
#' matrix's dims; and their description (codec and shape, column selection,
#' transform of [fmalloc_standardize()], dimnames, the variant and sample
#' metadata of [fmalloc_variants()]) in the companion. `fmalloc_get()`
#' returns an equal codec matrix over the stored payload, mapped, not
#' copied, and `fmalloc_runtime_of()` of it is the runtime. The payload of a
#' matrix mapped from a `.bed` file by [fmalloc_bed_open()] lies outside any
#' runtime: its genotype bytes (the file without its 3-byte header) are
#' copied into `runtime`, which must be given; the saved matrix no longer
#' depends on the file. A matrix of an external codec (`"ext"`, made by
#' another package, e.g. Rgguf's tensor views) holds bytes only that package
#' can read and is refused; save `as.matrix(x)` instead.
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
#'   4 dims), mapped or not; or a codec matrix or its transposed view (see
#'   Details).
#' @param name Object name: a string of 1 to 246 bytes (UTF-8) that does not
#'   start with `".fm/"` (reserved for companions).
#' @param runtime A runtime from [open_fmalloc()]; for `fmalloc_save()` the
#'   runtime of `x` by default, [fmalloc_runtime_of()] (required when `x`
#'   is not mapped, or is a codec matrix whose payload is in no runtime).
#' @param sync Commit the runtime afterwards (persistent runtimes only).
#' @return `fmalloc_save()`: invisibly, the stored object as a mapped vector
#'   with `x`'s attributes, marked not mutable (for a codec matrix, the codec
#'   matrix over the stored payload). `fmalloc_get()`: the mapped
#'   vector with its dims and attributes, marked not mutable (R copies it
#'   before any modification), or the codec matrix saved under `name`.
#'   `fmalloc_list()`: a data frame with columns `name`, `type` (`"double"`,
#'   `"integer"`, `"logical"`, `"raw"`, or for a codec matrix its codec:
#'   `"bed2"`, `"dos8"`, `"alp"`), `dims` (e.g. `"3000 x 600"`, for a codec
#'   matrix its shape) and `bytes` (payload bytes, double), sorted by name.
#'   `fmalloc_delete()`: invisibly `TRUE`.
#' @section Errors:
#' `fm_error_earg` for an absent name (also in `fmalloc_delete()`), a bad name
#' or type, a runtime that is not one (for example swapped arguments), a
#' missing runtime for a value in none (a heap vector, a matrix of
#' [fmalloc_bed_open()]), a read-only runtime or a call from a forked child;
#' `fm_error_eunsupported` for a matrix of an external codec;
#' `fm_error_eio` when a `.bed` file being copied was truncated meanwhile;
#' `fm_error_enospc` (after
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
#' # a codec matrix: 2-bit hardcalls, stored and fetched mapped
#' rt <- open_fmalloc(path)
#' G <- fmalloc_bed(matrix(c(0L, 1L, 2L, NA), 2, 2), rt)
#' fmalloc_save(G, "G")
#' fmalloc_list(rt)
#' as.matrix(fmalloc_get(rt, "G"))
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
  codec <- .is_codec_object(x)
  if (codec) .check_codec_save(x, runtime)
  if (is.null(runtime))
    fm_abort("earg", "runtime is required when x is not a mapped vector")
  fm_check_runtime(runtime)
  fm_check_name(name)
  if (codec) {
    p <- .codec_parts(x, runtime)
    .Call(C_fmr_altrep_save, p$payload, name, runtime, p$entry)
    .Call(C_fmr_altrep_save, serialize(p$desc, NULL, xdr = TRUE), fm_attr_name(name), runtime, NULL)
    fm_sync_saved(runtime, sync)
    return(invisible(.codec_from(p$desc, .Call(C_fmr_altrep_get, runtime, name))))
  }
  attrs <- attributes(x)
  dim <- attrs$dim
  attrs$dim <- NULL
  y <- .Call(C_fmr_altrep_save, x, name, runtime, NULL)
  comp <- fm_attr_name(name)
  if (length(attrs)) {
    .Call(C_fmr_altrep_save, serialize(attrs, NULL, xdr = TRUE), comp, runtime, NULL)
  } else {
    .Call(C_fmr_runtime_delete, runtime, comp)
  }
  if (is.null(attributes(y)) && (length(attrs) || !is.null(dim)))
    .Call(C_fmr_altrep_set_attrs, y, c(list(dim = dim), attrs))
  fm_sync_saved(runtime, sync)
  invisible(y)
}

fm_sync_saved <- function(runtime, sync) {
  if (isTRUE(sync) && fmalloc_info(runtime)$mode == "persistent") fmalloc_sync(runtime)
}

.is_codec_object <- function(x) {
  isS4(x) && (methods::is(x, "fmalloc_codec_matrix") || methods::is(x, "fmalloc_transposed"))
}

.codec_of <- function(x) if (methods::is(x, "fmalloc_transposed")) x@x else x

# The codec matrices fmalloc_save() refuses: an external codec's (bytes only
# its package reads), and one whose payload is in no runtime when none is
# given. Errors name fmalloc_save()'s call.
.check_codec_save <- function(x, runtime) {
  m <- .codec_of(x)
  if (.codec_name(m) == "ext") {
    fm_abort("eunsupported", sprintf(paste(
      "cannot save a matrix of the external codec '%s' (from %s): its bytes belong to that",
      "package; save as.matrix(x), or what it was made from with that package"),
      .Call(C_fmr_ext_info, .storage(m))$name, m@source), call = sys.call(-1L))
  }
  if (is.null(runtime)) {
    fm_abort("earg", if (is.environment(m@storage))
      "runtime is required to save a matrix mapped from a .bed file: its genotype bytes are copied into it"
      else "runtime is required when the payload of x is not in a runtime", call = sys.call(-1L))
  }
}

# A codec matrix (or its transposed view) by name: its payload (the raw
# storage vector, named in place when it is an unnamed vector of the
# runtime, else copied; a mapped .bed's genotype bytes are copied here),
# the directory entry's dtype and dims (the codec's and the matrix's shape;
# raw and the payload's length for "alp", whose bytes are no fixed number
# per value), and the description (every slot but the storage and the view)
# for the companion.
.codec_parts <- function(x, runtime) {
  m <- .codec_of(x)
  codec <- .codec_name(m)
  spec <- m@spec
  source <- m@source
  payload <- m@storage
  if (is.environment(payload)) {
    payload <- .bed_payload_copy(m, runtime)
    spec[4] <- 0
    source <- "fmalloc"
  }
  desc <- structure(list(codec = codec, spec = spec[-1], cols = m@cols, dimnames = m@dimnames,
                         transform = m@transform, variants = m@variants, samples = m@samples,
                         source = source, transposed = methods::is(x, "fmalloc_transposed")),
                    class = "fmalloc_codec_description")
  dtype <- if (codec %in% c("bed2", "dos8")) codec else "raw"
  dims <- if (dtype == "raw") length(payload) else .desc_dims(desc)
  list(payload = payload, entry = list(dtype = dtype, dims = as.numeric(dims)), desc = desc)
}

# The shape of the matrix a description makes.
.desc_dims <- function(desc) {
  d <- c(desc$spec[1], if (is.null(desc$cols)) desc$spec[2] else length(desc$cols))
  if (isTRUE(desc$transposed)) rev(d) else d
}

# The codec matrix a description makes over its stored payload (a mapped
# raw vector), validated as every codec matrix is when made.
.codec_from <- function(desc, payload) {
  x <- .remade(methods::new("fmalloc_codec_matrix",
    storage = payload, spec = c(.codec_ids()[[desc$codec]], desc$spec), cols = desc$cols,
    dimnames = desc$dimnames, transform = desc$transform, variants = desc$variants,
    samples = desc$samples, source = desc$source))
  if (isTRUE(desc$transposed)) t(x) else x
}

# The genotype bytes of a mapped .bed (after its header) in a new raw vector
# of runtime, copied a panel budget at a time through R's file reader, so
# that a file truncated meanwhile is an error, not a fault.
.bed_payload_copy <- function(m, runtime) {
  .storage(m) # maps and validates the file again when it is not mapped
  path <- m@storage$path
  stride <- m@spec[5]
  n_cols <- m@spec[3]
  out <- create_fmalloc_matrix("raw", stride, n_cols, runtime)
  if (stride * n_cols == 0) return(out)
  per <- max(1, min(floor(fmalloc_panel_budget() / stride), floor(.Machine$integer.max / stride)))
  con <- file(path, "rb")
  on.exit(close(con))
  seek(con, m@spec[4])
  for (j0 in seq(1, n_cols, by = per)) {
    j <- seq(j0, min(n_cols, j0 + per - 1))
    b <- readBin(con, "raw", stride * length(j))
    if (length(b) != stride * length(j)) {
      fm_abort("eio", sprintf(".bed file '%s' ends before the bytes of variant %s: it was truncated while copied",
                              path, format(j0 + length(b) %/% stride)))
    }
    fmalloc_write_cols(out, j, b)
  }
  out
}

#' @rdname fmalloc_save
#' @export
fmalloc_get <- function(runtime, name) {
  fm_check_runtime(runtime)
  fm_check_name(name)
  comp <- tryCatch(.Call(C_fmr_altrep_get, runtime, fm_attr_name(name)),
                   fm_error_earg = function(e) NULL)
  attrs <- if (is.null(comp)) list() else unserialize(comp)
  value <- .Call(C_fmr_altrep_get, runtime, name)
  if (inherits(attrs, "fmalloc_codec_description")) return(.codec_from(attrs, value))
  # The view is marked not mutable in C (r_altrep.c), so R copies it before
  # any change; attributes are set on it in place.
  .Call(C_fmr_altrep_set_attrs, value, attrs)
}

#' @rdname fmalloc_save
#' @export
fmalloc_list <- function(runtime) {
  fm_check_runtime(runtime)
  d <- .Call(C_fmr_runtime_dir, runtime)
  keep <- !startsWith(d$name, ".fm/")
  name <- d$name[keep]
  type <- d$dtype[keep]
  dims <- d$dims[keep]
  # an "alp" matrix's payload is raw bytes: its description tells the codec
  for (i in which(type == "raw" & fm_attr_name(name) %in% d$name)) {
    desc <- unserialize(.Call(C_fmr_altrep_get, runtime, fm_attr_name(name[i])))
    if (inherits(desc, "fmalloc_codec_description")) {
      type[i] <- desc$codec
      dims[[i]] <- .desc_dims(desc)
    }
  }
  data.frame(name = name, type = type,
             dims = vapply(dims, function(v) paste(format(v, scientific = FALSE, trim = TRUE),
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
  fm_sync_saved(runtime, sync)
  invisible(TRUE)
}
