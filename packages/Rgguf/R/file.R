# GGUF files: open (validated by the core reader before GGML sees them),
# metadata with exact types, the tensor directory.

.check_file <- function(x) {
  if (!inherits(x, "gguf_file")) {
    Rfmalloc::fm_abort("earg", "x must be a GGUF file from gguf_open(), not ",
                       .describe(x), call = sys.call(-1L))
  }
  x
}

.describe <- function(x) {
  if (is.object(x)) return(paste0("an object of class '", class(x)[1L], "'"))
  if (is.null(x)) return("NULL")
  if (is.atomic(x) && length(x) == 1L && is.na(x)) {
    return(if (is.character(x)) "NA_character_" else paste0("NA (", typeof(x), ")"))
  }
  if (is.atomic(x)) return(paste0("a ", typeof(x), " vector of length ", length(x)))
  paste0("an object of type ", typeof(x))
}

#' Open a GGUF model file
#'
#' Maps a GGUF file (versions 2 and 3) read-only and validates its header
#' with Rfmalloc's own reader before anything else, GGML included, reads
#' it: the magic and version; every count and length against the bytes
#' that remain (a metadata array claiming 2^62 elements is an error, not an
#' allocation); the type and value of `general.alignment`; tensor types,
#' dimensions, and every tensor's bytes inside the file, aligned and not
#' overlapping; keys and tensor names UTF-8 text without NUL (GGUF strings
#' are UTF-8; GGML keeps names as C strings). A file that fails a check
#' raises an R error; nothing aborts R.
#'
#' The handle keeps the file's mapping alive; tensor views made by
#' [gguf_tensor()] borrow it (no tensor byte is copied). The mapping is
#' released when the handle and every view are garbage collected. A handle
#' does not survive `saveRDS()` or a new session: open the file again.
#'
#' @section A file changed on disk while open:
#' The mapping shows the file's bytes as they are now. Every call that
#' reads through a handle or a view (metadata, the directory, a view's
#' decode, `%*%`, `as = "numeric"`; Rllm before each evaluation through the
#' C callable `Rgguf_check()`) first checks the file with one `fstat()`. A
#' file truncated below its size at opening, or whose header and tensor
#' directory were rewritten in place, raises `fm_error_eformat` ("the file
#' shrank from N to M bytes since it was opened", "the file was rewritten
#' since it was opened") at the next call instead of killing R with
#' SIGBUS; open it again. Growth (an append) is fine. Tensor bytes rewritten
#' in place, the file keeping its size and header, are not detected: views
#' then read the new values. A truncation *during* a call cannot be caught
#' and can still crash R: that is how memory mappings work, so do not
#' truncate or rewrite a model file that an R session is using (replacing
#' it with a new file, as `mv` or `file.rename()` do, is safe: the handle
#' keeps the old file).
#'
#' @param path path of a `.gguf` file.
#' @return An object of class `"gguf_file"` (an external pointer, with the
#'   normalized path as attribute `path`). Other packages reach the parsed
#'   file from C through `Rgguf_file()` and check it through
#'   `Rgguf_check()` (`system.file("include", "Rgguf.h", package = "Rgguf")`).
#' @section Errors: conditions raised through [Rfmalloc::fm_abort()]:
#'   `fm_error_eio` when the file does not exist or cannot be mapped;
#'   `fm_error_eformat` for malformed bytes (wrong magic, a header cut
#'   short, a count or length beyond the file, a bad alignment, a tensor
#'   past the end of the file, a key or tensor name holding a NUL byte or
#'   bytes that are not UTF-8), naming the file and the byte offset, and
#'   for a file that shrank or was rewritten since it was opened (above);
#'   `fm_error_eunsupported` for GGUF version 1, versions above 3,
#'   big-endian files and arrays of arrays; `fm_error_earg` for a `path`
#'   that is not one non-`NA` string (`NA`, `character(0)`, several strings,
#'   a number).
#' @source The GGUF specification, GGML's `docs/gguf.md`
#'   (<https://github.com/ggml-org/ggml/blob/master/docs/gguf.md>); the checks are those
#'   listed under Errors (in full in `docs/formats/gguf.md` in the source
#'   repository).
#' @seealso [gguf_metadata()], [gguf_tensors()], [gguf_tensor()].
#' @examples
#' f <- Sys.getenv("RFMALLOC_FIXTURES")
#' p <- file.path(f, "gguf", "stories260K.gguf")
#' if (nzchar(f) && file.exists(p)) {
#'   g <- gguf_open(p)
#'   print(g)
#'   head(gguf_tensors(g))
#' }
#' @export
gguf_open <- function(path) {
  if (!is.character(path) || length(path) != 1L || is.na(path)) {
    Rfmalloc::fm_abort("earg", "path must be one non-NA string (the GGUF file's name), not ",
                       .describe(path))
  }
  full <- normalizePath(path.expand(path), mustWork = FALSE)
  if (!file.exists(full)) {
    Rfmalloc::fm_abort("eio", sprintf("GGUF file '%s' does not exist", path))
  }
  if (dir.exists(full)) {
    Rfmalloc::fm_abort("eio", sprintf("'%s' is a directory, not a GGUF file", path))
  }
  ptr <- .Call(C_rgguf_open, full)
  attr(ptr, "path") <- full
  class(ptr) <- "gguf_file"
  ptr
}

.info <- function(x) .Call(C_rgguf_info, .check_file(x))

#' @rdname gguf_open
#' @param x a `"gguf_file"`.
#' @param ... ignored.
#' @export
format.gguf_file <- function(x, ...) {
  if (!.Call(C_rgguf_is_open, x)) {
    return(sprintf("<GGUF file '%s' (closed)>", attr(x, "path")))
  }
  i <- .info(x)
  md <- .Call(C_rgguf_metadata, x)[[1]]
  arch <- md[["general.architecture"]]
  name <- md[["general.name"]]
  c(sprintf("<GGUF v%d file '%s'>", i$version, i$path),
    sprintf("  %s bytes, %s metadata keys, %s tensors, alignment %s, data at byte %s",
            format(i$size, big.mark = ",", scientific = FALSE), format(i$n_kv),
            format(i$n_tensors), format(i$alignment),
            format(i$data_offset, scientific = FALSE)),
    if (is.character(arch) && length(arch) == 1L) {
      sprintf("  architecture %s%s", arch,
              if (is.character(name) && length(name) == 1L) paste0(", name '", name, "'") else "")
    })
}

#' @rdname gguf_open
#' @export
print.gguf_file <- function(x, ...) {
  cat(format(x), sep = "\n")
  invisible(x)
}

#' Metadata of a GGUF file, with exact types
#'
#' Every key-value pair of the file's header, in file order.
#'
#' Values are converted losslessly:
#'
#' | GGUF type | R value |
#' | --- | --- |
#' | `uint8`, `int8`, `uint16`, `int16`, `int32` | integer |
#' | `uint32`, `float32`, `float64` | double (exact) |
#' | `uint64`, `int64` | double when every value of the key is at most 2^53 in magnitude (exact); otherwise character, the decimal digits |
#' | `bool` | logical |
#' | `string` | character in UTF-8 when every string of the key is UTF-8 text without NUL; otherwise the key's value is a list of raw vectors, one per string, holding its bytes exactly (tokenizer tokens may be arbitrary bytes; R strings cannot hold a NUL, and strings that are not valid UTF-8 cannot be translated) |
#'
#' An array is a vector of its element type's representation (for example
#' `array<string>` is a character vector, `array<int32>` an integer
#' vector), of length 0 for an empty array. Arrays of arrays are refused
#' when the file is opened.
#'
#' @param x a `"gguf_file"` from [gguf_open()].
#' @return A named list, one element per key, with attribute `"gguf_type"`:
#'   a named character vector giving each key's GGUF type (`"uint32"`,
#'   `"string"`, `"array<float32>"`, ...). Key names are the file's (UTF-8
#'   strings; the reader refuses others), so a list element is reached with
#'   `md[["general.architecture"]]`. Use `rawToChar()` or `iconv(x, "UTF-8",
#'   ..., sub = "byte")` on a raw string value as suits the caller.
#' @section Errors: `fm_error_earg` when `x` is not a GGUF file;
#'   `fm_error_eclosed` for a handle from another session;
#'   `fm_error_eformat` when the file shrank or was rewritten since it was
#'   opened (see [gguf_open()]).
#' @source The GGUF specification (value types and their numbering),
#'   <https://github.com/ggml-org/ggml/blob/master/docs/gguf.md>.
#' @examples
#' f <- Sys.getenv("RFMALLOC_FIXTURES")
#' p <- file.path(f, "gguf", "stories260K.gguf")
#' if (nzchar(f) && file.exists(p)) {
#'   md <- gguf_metadata(gguf_open(p))
#'   md[["llama.block_count"]]
#'   attr(md, "gguf_type")[["llama.block_count"]]
#' }
#' @export
gguf_metadata <- function(x) {
  res <- .Call(C_rgguf_metadata, .check_file(x))
  out <- res[[1]]
  attr(out, "gguf_type") <- res[[2]]
  out
}

#' The tensor directory of a GGUF file
#'
#' @param x a `"gguf_file"` from [gguf_open()].
#' @return A data frame with one row per tensor, in file order:
#'   `name` (UTF-8; `gguf_tensor(x, name)` finds it); `type` (GGML's type name, such as `"f32"`, `"q4_0"`, `"q4_K"`);
#'   `type_id` (GGML's type number); `n_dims`; `ne0`, `ne1`, `ne2`, `ne3`
#'   (the GGML shape, `ne0` the contiguous dimension, unused dimensions 1);
#'   `offset` (absolute byte offset of the tensor's data in the file) and
#'   `bytes` (its size in bytes). Counts and offsets are doubles (exact up
#'   to 2^53). In R terms a 2-D tensor is a matrix of `ne1` rows and `ne0`
#'   columns (see [gguf_tensor()]).
#' @section Errors: as [gguf_metadata()].
#' @source The GGUF specification (tensor info),
#'   <https://github.com/ggml-org/ggml/blob/master/docs/gguf.md>, and GGML's `ggml.h` (type traits).
#' @examples
#' f <- Sys.getenv("RFMALLOC_FIXTURES")
#' p <- file.path(f, "gguf", "stories260K.gguf")
#' if (nzchar(f) && file.exists(p)) head(gguf_tensors(gguf_open(p)))
#' @export
gguf_tensors <- function(x) {
  d <- .Call(C_rgguf_tensors, .check_file(x))
  as.data.frame(d, stringsAsFactors = FALSE)
}
