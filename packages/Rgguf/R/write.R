# Writing GGUF files through GGML's own GGUF writer (core: fm_gguf_write.h;
# glue: src/r_write.c).

.gguf_describe <- function(x) {
  if (is.object(x)) return(paste0("an object of class '", class(x)[1L], "'"))
  paste0("a ", typeof(x), " of length ", length(x))
}

# GGUF metadata value types, in GGUF numbering (0..12), with the spec's names.
.gguf_vtypes <- c("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                  "bool", "string", "array", "uint64", "int64", "float64")
.gguf_vtype_alias <- c(u8 = "uint8", i8 = "int8", u16 = "uint16", i16 = "int16",
                       u32 = "uint32", i32 = "int32", f32 = "float32", str = "string",
                       u64 = "uint64", i64 = "int64", f64 = "float64", float = "float32",
                       double = "float64", logical = "bool", character = "string")

.gguf_vtype_id <- function(type, what, call) {
  if (!is.character(type) || length(type) != 1L || is.na(type))
    Rfmalloc::fm_abort("earg", what, ": type must be a single string", call = call)
  t <- tolower(type)
  if (t %in% names(.gguf_vtype_alias)) t <- .gguf_vtype_alias[[t]]
  id <- match(t, .gguf_vtypes) - 1L
  if (is.na(id) || t == "array")
    Rfmalloc::fm_abort("earg", what, ": unknown GGUF value type '", type, "' (one of ",
                       paste(.gguf_vtypes[-10L], collapse = ", "), ")", call = call)
  id
}

#' Typed GGUF metadata values
#'
#' Mark an R vector with the exact GGUF type that [gguf_write()] stores it
#' as. GGUF distinguishes scalars from arrays, so `array` says which: by
#' default a vector of length 1 is a scalar and any other length an array
#' (use `array = TRUE` for an array of one element).
#'
#' @param x the value(s): numbers for the integer and float types (integers
#'   must be whole and within the type's range; `uint64` and `int64` also
#'   take decimal strings for values beyond 2^53), `TRUE`/`FALSE` for `bool`,
#'   strings (UTF-8) for `string`. `NA` is refused by [gguf_write()].
#' @param type one of `"uint8"`, `"int8"`, `"uint16"`, `"int16"`,
#'   `"uint32"`, `"int32"`, `"float32"`, `"bool"`, `"string"`, `"uint64"`,
#'   `"int64"`, `"float64"` (the GGUF spec's names; short forms `"u32"`,
#'   `"f32"`, `"str"`, ... are accepted).
#' @param array `TRUE` to store an array of that element type, `FALSE` for a
#'   scalar (which needs exactly one value).
#' @return `x` with class `"gguf_value"` and attributes `gguf_type` (the
#'   spec name) and `gguf_array`.
#' @seealso [gguf_write()]
#' @examples
#' gguf_value(64, "uint32")
#' gguf_u32(64)
#' gguf_str(c("<unk>", "<s>", "</s>"))
#' gguf_f32(0.5, array = TRUE)
#' @export
gguf_value <- function(x, type, array = length(x) != 1L) {
  .gguf_value(x, type, array, sys.call())
}

# gguf_value() and its short forms, raising errors with the user's call.
.gguf_value <- function(x, type, array, call) {
  id <- .gguf_vtype_id(type, "type", call)
  if (!is.logical(array) || length(array) != 1L || is.na(array))
    Rfmalloc::fm_abort("earg", "array must be TRUE or FALSE", call = call)
  if (!is.atomic(x) || is.null(x))
    Rfmalloc::fm_abort("earg", "x must be an atomic vector, not ", .gguf_describe(x), call = call)
  x <- unclass(x)
  attributes(x) <- NULL
  structure(x, gguf_type = .gguf_vtypes[id + 1L], gguf_array = array, class = "gguf_value")
}

#' @rdname gguf_value
#' @export
gguf_u8 <- function(x, array = length(x) != 1L) .gguf_value(x, "uint8", array, sys.call())
#' @rdname gguf_value
#' @export
gguf_i8 <- function(x, array = length(x) != 1L) .gguf_value(x, "int8", array, sys.call())
#' @rdname gguf_value
#' @export
gguf_u16 <- function(x, array = length(x) != 1L) .gguf_value(x, "uint16", array, sys.call())
#' @rdname gguf_value
#' @export
gguf_i16 <- function(x, array = length(x) != 1L) .gguf_value(x, "int16", array, sys.call())
#' @rdname gguf_value
#' @export
gguf_u32 <- function(x, array = length(x) != 1L) .gguf_value(x, "uint32", array, sys.call())
#' @rdname gguf_value
#' @export
gguf_i32 <- function(x, array = length(x) != 1L) .gguf_value(x, "int32", array, sys.call())
#' @rdname gguf_value
#' @export
gguf_u64 <- function(x, array = length(x) != 1L) .gguf_value(x, "uint64", array, sys.call())
#' @rdname gguf_value
#' @export
gguf_i64 <- function(x, array = length(x) != 1L) .gguf_value(x, "int64", array, sys.call())
#' @rdname gguf_value
#' @export
gguf_f32 <- function(x, array = length(x) != 1L) .gguf_value(x, "float32", array, sys.call())
#' @rdname gguf_value
#' @export
gguf_f64 <- function(x, array = length(x) != 1L) .gguf_value(x, "float64", array, sys.call())
#' @rdname gguf_value
#' @export
gguf_bool <- function(x, array = length(x) != 1L) .gguf_value(x, "bool", array, sys.call())
#' @rdname gguf_value
#' @export
gguf_str <- function(x, array = length(x) != 1L) .gguf_value(x, "string", array, sys.call())

#' @export
print.gguf_value <- function(x, ...) {
  cat("<gguf_value ", attr(x, "gguf_type"), if (isTRUE(attr(x, "gguf_array")))
    paste0(" array[", length(x), "]"), ">\n", sep = "")
  v <- unclass(x)
  attributes(v) <- NULL
  print(v, ...)
  invisible(x)
}

# GGML's tensor type table: id, name (as GGML spells it), block, type_size.
.ggml_type_table <- function() {
  ids <- 0:63
  tr <- .Call(C_fmr_gguf_ggml_types, ids)
  ok <- !is.na(tr[[1L]])
  data.frame(id = ids[ok], name = tr[[1L]][ok], block = tr[[2L]][ok],
             type_size = tr[[3L]][ok], stringsAsFactors = FALSE)
}

.ggml_type_id <- function(type, call) {
  tab <- .ggml_type_table()
  if (is.numeric(type) && length(type) == 1L && !is.na(type) && type %in% tab$id)
    return(as.integer(type))
  if (!is.character(type) || length(type) != 1L || is.na(type))
    Rfmalloc::fm_abort("earg", "type must be a single string such as \"F32\" or \"Q8_0\"", call = call)
  id <- tab$id[match(tolower(type), tolower(tab$name))]
  if (is.na(id))
    Rfmalloc::fm_abort("earg", "unknown GGML type '", type, "' (one of ",
                       paste(toupper(tab$name), collapse = ", "), ")", call = call)
  id
}

# x[i] (or x[i, j, ...] for an array), the element of `label` at index i.
.gguf_element <- function(x, i, label) {
  d <- base::dim(x)
  at <- if (length(d) >= 2L) paste(arrayInd(i, d), collapse = ", ") else i
  paste0(label, "[", at, "]")
}

# Refuse NA and numbers GGML type `id` cannot hold (the core's range:
# fm_gguf_wrange_of), naming the element of `label` and the range.
.gguf_check_values <- function(x, id, label, call) {
  na <- which(is.na(x) & !is.nan(x))
  if (length(na))
    Rfmalloc::fm_abort("earg", .gguf_element(x, na[1L], label), " is NA: GGUF tensors have no ",
                       "missing values (NaN is kept by the float types F32, F16 and BF16)", call = call)
  bad <- .Call(C_fmr_gguf_first_bad, id, if (is.logical(x)) as.integer(x) else x)
  if (!is.null(bad))
    Rfmalloc::fm_abort("earg", .gguf_element(x, bad[[1L]], label), " is ",
                       format(x[[bad[[1L]]]], digits = 15), ", but ", bad[[2L]], call = call)
}

#' A tensor for gguf_write() with its GGML type
#'
#' Pairs tensor values (or already encoded bytes) with the GGML type and
#' shape that [gguf_write()] stores.
#'
#' @section Orientation:
#' The same as [gguf_tensor()]'s: a GGML tensor of shape `ne = c(ne0, ne1)`
#' (`ne0` contiguous) is an R matrix of `ne1` rows and `ne0` columns (a
#' weight `W` with `W %*% x` the model's product), a vector is a 1-D tensor
#' of `ne0 = length(x)`, and an array of dim `c(ne1, ne0, ne2[, ne3])` is a
#' 3-D or 4-D tensor. So `gguf_tensor(g, name, "numeric")` gives back what
#' was written (rounded to the type), except that GGML's writer drops
#' trailing extents of 1: a 1 x n matrix is stored as the 1-D tensor
#' `ne = n`, which `gguf_tensor(g, name, "numeric")` gives back as a vector
#' of length n and `gguf_tensor(g, name)` (a view, always a matrix) as a
#' 1 x n matrix, the same values either way. With `dim` given, `x` is
#' instead a plain vector in GGML's memory order (`ne0` fastest) and `dim`
#' is `ne`.
#'
#' @section Values:
#' Every number must be one the type holds, or `gguf_tensor_data()` refuses
#' it, naming the element: `F32`, `F16` and `BF16` take finite values up to
#' their largest (about 3.4e38, 65504 and 3.39e38: a larger one would
#' become `Inf`), and `NaN`, `Inf` and `-Inf` as given; the quantized
#' types take finite values within F16's range (-65504 to 65504: their
#' blocks' scales are F16, and one `NaN`, `Inf` or larger value would turn
#' its whole block into `NaN`); `I8`, `I16` and `I32` take whole numbers
#' in their range (`I8`: -128 to 127). `NA` is refused for every type
#' (GGUF tensors have no missing values).
#'
#' @param x numbers (a numeric or logical vector, matrix or array; see
#'   Values) or a raw vector holding the tensor's encoded bytes exactly as
#'   GGML lays them out (blocks of `type`, `ne0` fastest; not checked).
#' @param type GGML type name, case-insensitive: `"F32"`, `"F16"`, `"BF16"`,
#'   `"I8"`, `"I16"`, `"I32"` and the quantized `"Q4_0"`, `"Q4_1"`,
#'   `"Q5_0"`, `"Q5_1"`, `"Q8_0"`, `"Q2_K"`, `"Q3_K"`, `"Q4_K"`, `"Q5_K"`,
#'   `"Q6_K"` from numbers (quantized by GGML's `ggml_quantize_chunk`
#'   without an importance matrix, after rounding to float32); from raw
#'   bytes any type GGML knows.
#' @param dim `NULL` (the shape follows `x`, see Orientation) or the GGML
#'   shape `ne` (1 to 4 extents, `ne0` first) of `x` taken as a flat vector
#'   in GGML's memory order; required for raw bytes.
#' @return an object of class `"gguf_tensor_data"` (a list: `data` in
#'   GGML's memory order, `type` (GGML type id), `dim` (`ne`)).
#' @section Errors: `fm_error_earg` for an unknown type, an `x` that is not
#'   numeric, logical or raw, raw bytes without `dim`, more than 4
#'   dimensions, and a value the type does not hold (see Values; the
#'   message names the element, e.g. `x[1, 1]`, its value and the type's
#'   range).
#' @seealso [gguf_write()]
#' @examples
#' # a 2 x 32 weight (ne = c(32, 2)) quantized to Q8_0
#' gguf_tensor_data(matrix(rnorm(64), 2, 32), "Q8_0")
#' # the same shape from values in GGML order
#' gguf_tensor_data(rnorm(64), "F16", dim = c(32, 2))
#' @export
gguf_tensor_data <- function(x, type = "F32", dim = NULL) {
  .gguf_tensor_data(x, type, dim, "x", sys.call())
}

# gguf_tensor_data() for x named `label` in messages, raising with `call`.
.gguf_tensor_data <- function(x, type, dim, label, call) {
  id <- .ggml_type_id(type, call)
  if (!is.raw(x) && !is.numeric(x) && !is.logical(x))
    Rfmalloc::fm_abort("earg", label, " must be numeric or raw, not ", .gguf_describe(x), call = call)
  if (!is.raw(x)) .gguf_check_values(x, id, label, call)
  if (is.null(dim)) {
    if (is.raw(x))
      Rfmalloc::fm_abort("earg", "raw bytes need dim (the GGML shape ne)", call = call)
    d <- base::dim(x)
    if (length(d) > 4L)
      Rfmalloc::fm_abort("earg", label, " has ", length(d), " dimensions; GGUF tensors have 1 to 4",
                         call = call)
    if (length(d) >= 2L) {
      # R's [ne1, ne0, ne2, ne3] to GGML's memory order (ne0 fastest)
      x <- aperm(x, c(2L, 1L, seq_along(d)[-(1:2)]))
      dim <- c(d[2L], d[1L], d[-(1:2)])
    } else {
      dim <- length(x)
    }
  }
  if (is.logical(x)) x <- as.integer(x)
  data <- x
  attributes(data) <- NULL
  structure(list(data = data, type = id, dim = as.numeric(dim)), class = "gguf_tensor_data")
}

#' @export
print.gguf_tensor_data <- function(x, ...) {
  tab <- .ggml_type_table()
  cat("<gguf_tensor_data ", tab$name[match(x$type, tab$id)], " ",
      paste(x$dim, collapse = " x "), if (is.raw(x$data)) " (encoded bytes)", ">\n", sep = "")
  invisible(x)
}

.gguf_infer_value <- function(v, key, call) {
  if (inherits(v, "gguf_value"))
    return(list(type = .gguf_vtype_id(attr(v, "gguf_type"), paste0("metadata '", key, "'"), call),
                array = isTRUE(attr(v, "gguf_array")),
                value = {
                  a <- unclass(v)
                  attributes(a) <- NULL
                  a
                }))
  if (is.factor(v)) v <- as.character(v)
  if (!is.atomic(v) || is.null(v) || length(v) == 0L)
    Rfmalloc::fm_abort("earg", "metadata '", key, "': must be a non-empty atomic vector or ",
                       "a gguf_value(), not ", .gguf_describe(v), call = call)
  type <- if (is.character(v)) "string" else if (is.logical(v)) "bool" else
    if (is.integer(v)) "int32" else if (is.double(v)) "float64" else
      Rfmalloc::fm_abort("earg", "metadata '", key, "': cannot store an R ", typeof(v),
                         "; use gguf_value()", call = call)
  attributes(v) <- NULL
  list(type = .gguf_vtype_id(type, key, call), array = length(v) != 1L, value = v)
}

#' Write a GGUF file with GGML's own GGUF writer
#'
#' A thin layer over GGML's GGUF writer (`gguf_init_empty`, `gguf_set_val_*`,
#' `gguf_set_arr_*`, `gguf_add_tensor`, `gguf_write_to_file_ptr` from the
#' GGML that ggmlR ships): writes GGUF version 3 with the metadata in the
#' order given and the tensors in the order given, each at an offset aligned
#' to `alignment`, the same bytes as GGML's `gguf_write_to_file`. Tensors are
#' encoded a bounded chunk of rows at a time. Every argument is checked before
#' GGML sees it, so a bad argument is an R error, never a GGML assertion.
#'
#' @param path file to write (overwritten if it exists).
#' @param metadata named list of metadata values, one per key. Give exact
#'   types with [gguf_value()] and its short forms ([gguf_u32()],
#'   [gguf_f32()], [gguf_str()], ...). Untyped vectors are stored as:
#'   character -> `string`, logical -> `bool`, integer -> `int32`, double ->
#'   `float64`; a vector of length 1 as a scalar, any other length as an
#'   array. `NA` values are refused. The key `general.alignment` is written
#'   from `alignment` (when it differs from 32) and may not be given here.
#' @param tensors named list of tensors: numeric vectors, matrices or arrays
#'   (stored as F32, oriented as [gguf_tensor()] returns them: a matrix of
#'   `ne1` rows and `ne0` columns, see [gguf_tensor_data()]), or
#'   [gguf_tensor_data()] objects for other types and for encoded bytes.
#'   Numbers follow the rules of [gguf_tensor_data()] (Values: no `NA`,
#'   nothing beyond the type's range; a plain numeric tensor is F32).
#'   Names are the tensor names (at most 63 bytes, unique). Quantized types
#'   need `ne0` to be a multiple of their block (32 or 256 values).
#' @param alignment alignment of the data section and of every tensor, in
#'   bytes: a power of two from 1 to 65536 (GGUF's default is 32). Other
#'   values are written as the key `general.alignment` (uint32), first.
#' @return `path`, invisibly.
#' @section Errors: `fm_error_earg` for a malformed argument (naming the key
#'   or tensor and what was expected, e.g. `tensors[["w"]][2, 3] is NA`), `fm_error_eunsupported` for a type
#'   that cannot be encoded from numbers, `fm_error_eio` when the file cannot
#'   be written (with the system's reason). A user interrupt raises
#'   `fm_error_ecancelled`; a write that fails or is interrupted removes the
#'   partial file.
#' @section Source: the GGUF specification, GGML's `docs/gguf.md`
#'   (<https://github.com/ggml-org/ggml/blob/master/docs/gguf.md>); the
#'   writer is GGML's own.
#' @seealso [gguf_open()] to read it back.
#' @examples
#' f <- tempfile(fileext = ".gguf")
#' gguf_write(f,
#'   metadata = list(general.architecture = "demo",
#'                   demo.block_count = gguf_u32(2),
#'                   demo.scale = gguf_f32(0.5)),
#'   tensors = list(w = matrix(as.numeric(1:64), 2, 32),
#'                  w8 = gguf_tensor_data(matrix(as.numeric(1:64), 2, 32), "Q8_0")))
#' g <- gguf_open(f)
#' gguf_tensors(g)
#' gguf_tensor(g, "w", "numeric")[, 1:4]
#' rm(g)
#' unlink(f)
#' @export
gguf_write <- function(path, metadata = list(), tensors = list(), alignment = 32L) {
  call <- sys.call()
  if (!is.character(path) || length(path) != 1L || is.na(path) || !nzchar(path))
    Rfmalloc::fm_abort("earg", "path must be a single non-empty string")
  if (!is.list(metadata) || (length(metadata) && (is.null(names(metadata)) ||
                                                  anyNA(names(metadata)) ||
                                                  !all(nzchar(names(metadata))))))
    Rfmalloc::fm_abort("earg", "metadata must be a named list (one entry per key)")
  if (!is.list(tensors) || inherits(tensors, "gguf_tensor_data") ||
      (length(tensors) && (is.null(names(tensors)) || anyNA(names(tensors)) ||
                           !all(nzchar(names(tensors))))))
    Rfmalloc::fm_abort("earg", "tensors must be a named list (one entry per tensor)")
  if (!is.numeric(alignment) || length(alignment) != 1L || is.na(alignment) ||
      alignment != round(alignment) || alignment < 1 || alignment > 65536)
    Rfmalloc::fm_abort("earg", "alignment must be a power of two from 1 to 65536")
  dir <- dirname(path.expand(path))
  if (!dir.exists(dir))
    Rfmalloc::fm_abort("eio", "cannot write '", path, "': directory '", dir, "' does not exist")
  keys <- names(metadata)
  if (anyDuplicated(keys))
    Rfmalloc::fm_abort("earg", "metadata key '", keys[anyDuplicated(keys)], "' is given twice")
  if ("general.alignment" %in% keys)
    Rfmalloc::fm_abort("earg", "metadata must not set general.alignment; use the alignment argument")
  kv <- Map(.gguf_infer_value, metadata, keys, list(call))
  tn <- names(tensors)
  if (anyDuplicated(tn))
    Rfmalloc::fm_abort("earg", "tensor '", tn[anyDuplicated(tn)], "' is given twice")
  td <- lapply(seq_along(tensors), function(i) {
    x <- tensors[[i]]
    if (inherits(x, "gguf_tensor_data")) return(x)
    if (!is.numeric(x))
      Rfmalloc::fm_abort("earg", "tensor '", tn[i], "' must be numeric or a gguf_tensor_data(), not ",
                         .gguf_describe(x), call = call)
    .gguf_tensor_data(x, "F32", NULL, sprintf("tensors[[\"%s\"]]", tn[i]), call)
  })
  .Call(C_fmr_gguf_write, path.expand(path),
        as.character(keys), vapply(kv, `[[`, 0L, "type"),
        vapply(kv, `[[`, NA, "array"), unname(lapply(kv, `[[`, "value")),
        as.character(tn), vapply(td, function(t) as.integer(t$type), 0L),
        lapply(td, `[[`, "dim"), lapply(td, `[[`, "data"), as.integer(alignment))
  invisible(path)
}
