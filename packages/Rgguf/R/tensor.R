# Tensors of a GGUF file: zero-copy views (Rfmalloc codec matrices over an
# external codec decoded by GGML) and dequantized R arrays; the GGML backend.

#' A tensor of a GGUF file
#'
#' @description
#' `as = "view"` returns a zero-copy view of the tensor's bytes inside the
#' file's mapping: an [Rfmalloc::fmalloc_codec_matrix-class] object over an
#' external codec (`"gguf <type>"`). Quantized blocks stay quantized; they
#' are decoded through GGML's `to_float` in bounded panels (at most
#' [Rfmalloc::fmalloc_panel_budget()] bytes of doubles at a time, decoding
#' only the blocks a panel needs) whenever a panel is asked for: `dim()`,
#' `print()`, `X[i, j]` (decodes only that block), `as.matrix()`,
#' `crossprod()`, `tcrossprod()`, `fmalloc_select()`. `X %*% B` goes
#' through Rfmalloc's backend registry, where Rgguf registers a GGML
#' backend named `"ggml"` when it loads (see Products below).
#'
#' `as = "numeric"` dequantizes the whole tensor with one call of GGML's
#' `to_float` and returns doubles.
#'
#' @section Orientation:
#' A GGML tensor of shape `ne = c(ne0, ne1)` (`ne0` contiguous) is an R
#' matrix of `ne1` rows and `ne0` columns: element `[i, j]` is GGML's
#' element `(j - 1, i - 1)`, so row `i` is GGML row `i - 1` and
#' `W %*% x`, with `x` of `ne0` rows, is GGML's `mul_mat(W, x)` (the product
#' a model computes). With `as = "numeric"` a 1-D tensor is a numeric
#' vector of length `ne0`, a 2-D tensor an `ne1 x ne0` matrix, and a 3-D or
#' 4-D tensor an array of dim `c(ne1, ne0, ne2[, ne3])` (the first two GGML
#' dimensions swapped). A view is always a matrix: a 1-D tensor is one row,
#' and `ne2`, `ne3` stack `ne1 * ne2 * ne3` rows. So a 1-D tensor is a
#' vector of length `ne0` as numbers and a 1 x `ne0` view, with the same
#' values (`as.matrix(view)` is `matrix(v, nrow = 1)` of that vector `v`; for
#' a 2-D tensor it equals the numeric matrix). GGML's writer stores a
#' tensor whose trailing extents are 1 with fewer dimensions (see
#' [gguf_tensor_data()]): a 1 x n matrix written by [gguf_write()] is such a
#' 1-D tensor.
#'
#' @section Products:
#' For `X %*% B` with a view `X` and a numeric `B` (`ne0` rows, `k`
#' columns), the `"ggml"` backend runs GGML's CPU `mul_mat` on the view's
#' own blocks: `B` is converted to single precision and GGML quantizes it
#' to the weight type's dot-product type (`q8_0` for `q4_0`, `q5_0`,
#' `q8_0`; `q8_1` for `q4_1`, `q5_1`; `q8_K` for the K-quants; `f16` for
#' `f16`; `bf16` for `bf16`; `f32` for `f32`), as llama.cpp does, and the
#' result is accumulated in single precision. It therefore differs from the
#' reference path (decode panels to doubles, then BLAS `dgemm`) by the
#' quantization error of `B`. Per output element `y_i` the difference is at
#' most `sum_l |w_il| e_l` plus float rounding, where `e_l` bounds the
#' error of the quantized `B[l, ]`: for `q8_0`/`q8_1` blocks of 32 with
#' scale `d = max|b|/127` (stored as f16), `e <= d/2 + 127 d 2^-11`; for
#' `q8_K` blocks of 256 with an f32 scale, `e <= d/2`; for `f16`,
#' `e <= |b| 2^-11` (normal range); for `bf16`, `e <= |b| 2^-8`; for
#' `f32`, 0. The backend declines (and the reference path computes the
#' product) for `t(X) %*% B` and `crossprod()`, column subsets, transformed
#' matrices, and a `B` with `NA`, `NaN`, `Inf` or values beyond single
#' precision, so missing values propagate as in base R.
#' [Rfmalloc::fmalloc_last_backend()] names the backend that ran;
#' [gguf_threads()] sets GGML's thread count.
#'
#' @param x a `"gguf_file"` from [gguf_open()].
#' @param name the tensor's name (see [gguf_tensors()]).
#' @param as `"view"` (zero copy) or `"numeric"` (dequantized doubles).
#' @return For `"view"`: an `fmalloc_codec_matrix` of `ne1 * ne2 * ne3`
#'   rows and `ne0` columns that keeps the file's mapping alive (it does not
#'   survive `saveRDS()`). For `"numeric"`: a double vector, matrix or array
#'   as described under Orientation. Values are GGML's `to_float` of the
#'   stored blocks, exactly (single precision values widened to double).
#' @section Errors: `fm_error_earg` for an unknown tensor name (a name
#'   marked `"bytes"` is looked up by its bytes) or a bad argument;
#'   `fm_error_eunsupported` for a tensor type GGML cannot decode to floats
#'   (integer tensors); `fm_error_eclosed` for a handle from another
#'   session; `fm_error_eformat` when the file shrank or was rewritten since
#'   it was opened.
#' @section A file changed on disk:
#' A view reads the file's mapping whenever a panel is decoded or a product
#' runs. Each of these first checks the file (one `fstat()` per panel or
#' product): a file truncated since [gguf_open()], or whose header was
#' rewritten in place, raises `fm_error_eformat` at the next call instead
#' of killing R with SIGBUS; growth is fine; tensor bytes rewritten in
#' place are read as they are now. A truncation during a call can still
#' crash R (memory-mapping semantics). See "A file changed on disk while
#' open" in [gguf_open()].
#' @section On mirai daemons:
#' With `options(fmalloc.parallel = "mirai")` (see
#' [Rfmalloc::fmalloc_parallel_info()]) a view's products, column
#' statistics and PCA run in blocks of columns on mirai daemons: each
#' daemon opens the file by its path (refusing one whose size, modification
#' time or sampled bytes differ from the driver's) and makes the view of
#' the tensor at the same byte offset. The blocks are decoded in double (the
#' reference path), so they agree with `fmalloc_with_backend("reference",
#' ...)` to rounding, not with GGML's product, which rounds the other
#' operand to 8 bits.
#' @source Block formats: GGML's `ggml-common.h` (block structs) and
#'   `ggml-quants.c` (`dequantize_row_*`), reached through
#'   `ggml_get_type_traits()`; products: `ggml_mul_mat` on GGML's CPU
#'   backend (`ggml-cpu.h`).
#' @examples
#' f <- Sys.getenv("RFMALLOC_FIXTURES")
#' p <- file.path(f, "gguf", "derived", "quant-zoo-stories260K.gguf")
#' if (nzchar(f) && file.exists(p)) {
#'   g <- gguf_open(p)
#'   W <- gguf_tensor(g, "w.Q4_K")
#'   x <- gguf_tensor(g, "x", "numeric") # 4 x 256
#'   y <- W %*% t(x)                      # GGML's quantized kernel
#'   Rfmalloc::fmalloc_last_backend()
#'   W[1:3, 1:4]
#' }
#' @export
gguf_tensor <- function(x, name, as = c("view", "numeric")) {
  .check_file(x)
  as <- Rfmalloc::fm_arg_choice(as, c("view", "numeric"))
  if (!is.character(name) || length(name) != 1L || is.na(name)) {
    Rfmalloc::fm_abort("earg", "name must be a single string, not ", .describe(name))
  }
  if (as == "numeric") return(.Call(C_rgguf_tensor_numeric, x, name))
  # a string marked "bytes" cannot be translated (it names no tensor: the C
  # lookup raises fm_error_earg)
  shown <- if (identical(Encoding(name), "bytes")) encodeString(name) else name
  source <- sprintf("tensor '%s' of %s", shown, basename(attr(x, "path")))
  .Call(C_rgguf_tensor_view, x, name, source)
}

# On a mirai daemon (Rfmalloc's option fmalloc.parallel = "mirai"; the
# file registered by gguf_open(), src/r_file.c): the view of the GGUF at
# path whose tensor data starts at byte offset, with the driver's shape
# (n_rows x n_cols); the file is opened once per checked mapping (cache,
# Rfmalloc's environment for it).
.gguf_parallel_view <- function(path, offset, n_rows, n_cols, cache) {
  if (is.null(cache$gguf)) cache$gguf <- gguf_open(path)
  tt <- gguf_tensors(cache$gguf)
  i <- which(tt$offset == offset & tt$ne0 == n_cols & tt$ne1 * tt$ne2 * tt$ne3 == n_rows)
  if (!length(i)) {
    Rfmalloc::fm_abort("emismatch", sprintf("GGUF file '%s' on host %s has no %s x %s tensor at byte %s", path,
                                            Sys.info()[["nodename"]], format(n_rows), format(n_cols),
                                            format(offset, scientific = FALSE)), call = NULL)
  }
  gguf_tensor(cache$gguf, tt$name[i[1L]])
}

#' Threads of the GGML backend
#'
#' A documented alias of [Rfmalloc::fmalloc_threads()], kept for scripts
#' written before the stack had one thread setting: GGML's products of GGUF
#' tensor views ([gguf_tensor()]) use the stack's thread count (option
#' `fmalloc.threads`), like Rfmalloc's kernels and Rllm's evaluations.
#' `gguf_threads(n)` sets that count for all of them.
#'
#' In a child process made by `fork()` (`parallel::mclapply()`,
#' `parallel::mcparallel()`), the backend runs on one thread: GGML's
#' threads come from GNU OpenMP, whose thread pool does not survive a fork,
#' and once the parent has run a multi-threaded GGML product, a
#' multi-threaded one in the child would never return. Rfmalloc registers
#' one `pthread_atfork()` handler for the stack, and every call's control
#' block in a child says so; there `gguf_threads()` reports 1. Results do
#' not depend on the thread count, so a child's products equal the
#' parent's.
#' @param n `NULL` to query, or a whole number in 1..256 (set with
#'   [Rfmalloc::fmalloc_threads()]).
#' @return The thread count GGML products use (invisibly when setting): the
#'   stack's, or 1 in a forked child.
#' @section Errors: `fm_error_earg` for a bad `n`.
#' @examples
#' old <- gguf_threads()
#' gguf_threads(2)
#' gguf_threads(old)
#' @export
gguf_threads <- function(n = NULL) {
  if (!is.null(n)) {
    if (!is.numeric(n) || length(n) != 1L || is.na(n) || n != round(n) || n < 1 || n > 256) {
      Rfmalloc::fm_abort("earg", "n must be a whole number in 1..256")
    }
    Rfmalloc::fmalloc_threads(n)
  }
  info <- Rfmalloc::fmalloc_backend_info()
  used <- if (isTRUE(info$forked)) 1L else info$threads
  if (is.null(n)) used else invisible(used)
}

# Register (TRUE) or remove (FALSE) the "ggml" backend; tests remove it to
# force the reference path.
.gguf_backend <- function(on) invisible(.Call(C_rgguf_backend_register, isTRUE(on)))

# GGML's name of the type a product quantizes the operand to, for a type id.
.gguf_vec_dot_type <- function(type_id) .Call(C_rgguf_vec_dot_type, as.integer(type_id))

# Views made over Rgguf's codecs raise fm_error_eclosed afterwards; the
# "ggml" backend leaves the registry; open files are closed.
.onUnload <- function(libpath) {
  .Call(C_rgguf_unload)
  library.dynam.unload("Rgguf", libpath)
}

.onLoad <- function(libname, pkgname) {
  loadNamespace("Rfmalloc") # the registry's C callables (imported; loaded first)
  .gguf_backend(TRUE)
}
