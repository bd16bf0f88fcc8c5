# Block-partitioned products on mirai daemons: the R side of the "mirai"
# backend (src/r_parallel.c). A product forced to it arrives in
# .fm_parallel_product() with its mapped file's path, identity and layout;
# its columns are cut into blocks of fmalloc.parallel_block columns (a
# geometry that depends on the matrix only, never on the daemons), each
# block's product is computed by .fm_block_task() on a daemon (or here,
# when no daemons run), and the blocks are reduced in their order: a sum
# for X B and X X'B, rows for X'B and column sums. So the result is the
# same, bit for bit, whatever the number of daemons.

#' Products, statistics and PCA on mirai daemons
#'
#' With `options(fmalloc.parallel = "mirai")` (or `parallel = "mirai"` on
#' [fmalloc_pca()]), the products of a matrix held in a file (a `.bed` of
#' [fmalloc_bed_open()], or a persistent runtime's codec matrix or mapped
#' matrix): `X %*% B`, `crossprod(X, B)`, column sums and means,
#' [fmalloc_colVars()], and every pass of [fmalloc_pca()], are computed in blocks of
#' variants (columns) on the daemons of the CRAN package mirai, which the
#' user starts with mirai's own API: `mirai::daemons(4)` on this host, or
#' `mirai::daemons(url = mirai::host_url(tls = TRUE), remote =
#' mirai::ssh_config(...))` (or `mirai::cluster_config()` for a scheduler)
#' for other hosts. Each daemon maps the same file read-only by its path
#' (a runtime's file without its lock: the driver holds that) and computes
#' a block with its own threads (its `fmalloc.threads`); the driver adds
#' the blocks' partial sums, or places their rows, in block order.
#'
#' **Identical results.** Blocks are `fmalloc.parallel_block` columns
#' (default 8192), whatever the number of daemons, and are reduced in their
#' order, so a result is bit-identical for any number of daemons, and to a
#' run without daemons (the blocks are then computed in this process, one
#' after the other). Against the unblocked path (option unset) results agree
#' to rounding: the sums over variants are grouped by block.
#'
#' **File identity.** The driver sends each block the file's size,
#' modification time and a checksum of its first 64 KiB and of 16 pages
#' spread over it; a daemon whose file differs in any of these refuses the
#' block (`fm_error_emismatch` naming the file, the host and what differs).
#' This is a guard against the wrong file (another version, a file
#' replaced), not a proof that every byte is the driver's: a copy that
#' differs only outside the sampled pages and has the same size and
#' modification time (a stale copy made with `cp -p` or `rsync -t`, then
#' changed in place with its time restored) is not seen. Give daemons on
#' other hosts the driver's file itself (a shared filesystem), or copies
#' checked byte for byte (`sha256sum`). A daemon checks a file once per
#' identity and keeps it mapped.
#'
#' **Faults.** A block whose daemon dies, errors, or does not answer within
#' `fmalloc.parallel_timeout` seconds (default: no limit) is sent again,
#' to whichever daemon is free, up to `fmalloc.parallel_retries` times
#' (default 2); then the call fails with `fm_error_eio` naming the block,
#' its columns and the last failure (`fm_error_emismatch` when that was a
#' file refusal). No partial result is returned. At most
#' `fmalloc.parallel_inflight` blocks (default twice the daemons) are out
#' at once, and a block's result waits only for the blocks before it, so
#' the driver holds at most that many partial results. A progress bar
#' counts the blocks (option `fmalloc.progress`); an interrupt cancels the
#' blocks still out (`mirai::stop_mirai()`).
#'
#' **What runs where.** Only a matrix that daemons can open by path goes to
#' them, with any column selection or [fmalloc_standardize()] transform: a
#' `.bed` mapped by [fmalloc_bed_open()]; a codec matrix
#' ([fmalloc_bed()], [fmalloc_dosage()], [fmalloc_alp()]) or a double or
#' integer matrix ([create_fmalloc_matrix()]) in a runtime opened with
#' `mode = "persistent"` (named with [fmalloc_save()] or not); a GGUF
#' tensor view (Rgguf's `gguf_tensor()`: `gguf_open()` registers the file,
#' and a daemon opens it and makes the view of the tensor at the same byte
#' offset). A GGUF block is a column selection, which GGML's backend
#' declines: it is decoded in double, as the reference path does. Before each
#' call the driver writes the runtime's pages to its file (`msync`, not a
#' commit: that is [fmalloc_sync()]), so daemons on hosts that share the
#' file read what the driver sees; a write between calls gives the file a
#' new identity and the daemons map it again. The products of a mapped
#' dense matrix (`M %*% B`) are base R's; its column statistics and PCA are
#' blocked. Any other matrix (in memory, in a scratch runtime, over
#' another external codec) is computed in this process as without the
#' option. Without daemons, or when none is connected (a message says so),
#' the blocks are computed in this process on its own mapping, with the
#' same result. Daemons on hosts whose CPUs run another kernel path (see
#' [fmalloc_backend_info()]) may round differently: pin the path with
#' `FM_ISA` for bit-identical results across such hosts. Without mirai
#' installed, `"mirai"` raises `fm_error_eunsupported`.
#'
#' @param x ignored; the options are the interface (this page documents
#'   them).
#' @return `fmalloc_parallel_info()`: a list: `mode` (the option's value),
#'   `daemons` (connected daemons, 0 without mirai or daemons), `block`
#'   (columns per block), `inflight`, `timeout`, `retries`.
#' @section Options:
#' * `fmalloc.parallel`: `NULL` or `"none"` (default), or `"mirai"`.
#' * `fmalloc.parallel_block`: columns per block (a whole number >= 1).
#' * `fmalloc.parallel_inflight`: blocks out at once (default twice the
#'   connected daemons, at least 2).
#' * `fmalloc.parallel_timeout`: seconds a block may take on a daemon
#'   before it is sent again (`NULL`: no limit).
#' * `fmalloc.parallel_retries`: times a failed block is sent again.
#' @source The mirai package (Gao 2024, <https://CRAN.R-project.org/package=mirai>);
#'   the block products are those of the backend registry
#'   ([fmalloc_backends()]).
#' @examples
#' # a .bed of 5 samples x 2 variants, written byte by byte
#' prefix <- file.path(tempdir(), "parallel_example")
#' writeBin(as.raw(c(0x6c, 0x1b, 0x01, 0xe4, 0x00, 0x1b, 0x03)), paste0(prefix, ".bed"))
#' writeLines(sprintf("f%d s%d 0 0 1 -9", 1:5, 1:5), paste0(prefix, ".fam"))
#' writeLines(c("1 rs1 0 100 A G", "1 rs2 0 200 C T"), paste0(prefix, ".bim"))
#' X <- fmalloc_bed_open(prefix)
#' fmalloc_parallel_info()
#' if (requireNamespace("mirai", quietly = TRUE)) {
#'   mirai::daemons(1)                     # or more, or on other hosts
#'   old <- options(fmalloc.parallel = "mirai", fmalloc.parallel_block = 1)
#'   print(colSums(X, na.rm = TRUE))       # two blocks, on the daemon
#'   print(fmalloc_last_backend())
#'   options(old)
#'   mirai::daemons(0)
#' }
#' @export
fmalloc_parallel_info <- function(x = NULL) {
  mode <- getOption("fmalloc.parallel", "none")
  if (!(is.character(mode) && length(mode) == 1L && mode %in% c("none", "mirai"))) {
    fm_abort("earg", "option fmalloc.parallel must be NULL, \"none\" or \"mirai\"")
  }
  list(mode = mode, daemons = .fm_daemons(), block = .fm_par_opt("block"),
       inflight = .fm_par_opt("inflight"), timeout = .fm_par_opt("timeout"), retries = .fm_par_opt("retries"))
}

#' @rdname fm_parallel_on
#' @param parallel for `fm_local_parallel()`: `NULL`, `"none"` or
#'   `"mirai"` (exactly), the argument of a user's function, set as option
#'   `fmalloc.parallel` until the function calling `fm_local_parallel()`
#'   returns (`fm_error_earg` for another value, naming it).
#' @param envir the function's frame.
#' @export
fm_local_parallel <- function(parallel, envir = parent.frame()) {
  if (!is.null(parallel) && !(is.character(parallel) && length(parallel) == 1L && !is.na(parallel) &&
                              parallel %in% c("none", "mirai"))) {
    fm_abort("earg", "parallel must be NULL, \"none\" or \"mirai\", not ",
             paste(deparse(parallel, nlines = 1L), collapse = " "), call = sys.call(-1L))
  }
  old <- options(fmalloc.parallel = parallel)
  do.call(on.exit, list(substitute(options(old), list(old = old)), add = TRUE), envir = envir)
  invisible(parallel)
}

# Connected daemons (0 without mirai or daemons).
.fm_daemons <- function() {
  if (!requireNamespace("mirai", quietly = TRUE) || !mirai::daemons_set()) return(0L)
  as.integer(mirai::info()[["connections"]])
}

# The options, checked.
.fm_par_opt <- function(what) {
  name <- paste0("fmalloc.parallel_", what)
  v <- getOption(name)
  whole <- function(v, lo) is.numeric(v) && length(v) == 1L && is.finite(v) && v == round(v) && v >= lo
  switch(what,
    block = if (is.null(v)) 8192 else if (whole(v, 1)) v else fm_abort("earg", "option ", name, " must be a whole number >= 1"),
    inflight = if (is.null(v)) max(2L, 2L * .fm_daemons()) else if (whole(v, 1)) v
               else fm_abort("earg", "option ", name, " must be a whole number >= 1"),
    timeout = if (is.null(v) || (is.numeric(v) && length(v) == 1L && is.finite(v) && v > 0)) v
              else fm_abort("earg", "option ", name, " must be NULL or a positive number of seconds"),
    retries = if (is.null(v)) 2 else if (whole(v, 0)) v else fm_abort("earg", "option ", name, " must be a whole number >= 0"))
}

# Called from C (fmr_mirai_backend) for one product: spec (the file and the
# matrix's columns in it), op (fm_op), b, k, aff (list(center, scale, fill,
# fill_all)). The blocks are reduced into the product's output in C
# (fmr_consume_block). Returns NULL, or list(status, message) with the
# status's name (fm_status_name: the class of an fm_error is
# fm_error_<status>); never raises.
.fm_parallel_product <- function(spec, op, b, k, aff) {
  status_of <- function(e) {
    cls <- grep("^fm_error_", class(e), value = TRUE)
    if (length(cls)) sub("^fm_error_", "", cls[1L]) else "einternal"
  }
  tryCatch({
    .fm_blocks_product(spec, op, b, k, aff)
    NULL
  }, fm_error = function(e) list(status = status_of(e), message = conditionMessage(e)),
  interrupt = function(e) list(status = "ecancelled", message = "interrupted"),
  error = function(e) list(status = "einternal", message = conditionMessage(e)))
}

.fm_op_labels <- c("X %*% B", "crossprod(X, B)", "X %*% crossprod(X, B)", "column sums")

.fm_blocks_product <- function(spec, op, b, k, aff) {
  if (!requireNamespace("mirai", quietly = TRUE)) {
    fm_abort("eunsupported", "option fmalloc.parallel = \"mirai\" needs the CRAN package mirai")
  }
  p <- spec$n_cols
  blocks <- .fm_blocks(p)
  cols_of <- blocks$cols_of
  slice <- function(v, cols) if (is.null(v)) NULL else v[cols]
  file <- spec[c("path", "identity", "codec", "n_rows", "n_stored", "offset", "stride", "opener")]
  task_of <- function(j) {
    cols <- cols_of(j)
    list(block = j, file = file, cols = if (is.null(spec$cols)) cols else spec$cols[cols], op = op, k = k,
         b = if (op == 1L) b[cols, , drop = FALSE] else b,
         transform = list(center = slice(aff$center, cols), scale = slice(aff$scale, cols),
                          fill = slice(aff$fill, cols)),
         na_fill = if (is.na(aff$fill_all)) NULL else aff$fill_all)
  }
  # without daemons, the same blocks on this process's own mapping
  here <- function(j) {
    cols <- cols_of(j)
    .Call(C_fmr_local_block, cols[1L] - 1, length(cols), if (op == 1L) b[cols, , drop = FALSE] else b)
  }
  consume <- function(j, r) {
    cols <- cols_of(j)
    .Call(C_fmr_consume_block, cols[1L] - 1, length(cols), r)
  }
  .fm_run_blocks(blocks$n, task_of, here, consume, cols_of, .fm_op_labels[op])
}

# The block geometry of p columns (option fmalloc.parallel_block; never the
# daemons): n blocks, cols_of(j) the columns of block j.
.fm_blocks <- function(p) {
  size <- .fm_par_opt("block")
  starts <- if (p > 0) seq.int(1, p, by = size) else numeric(0)
  list(n = length(starts), cols_of = function(j) starts[j]:min(p, starts[j] + size - 1))
}

# Run tasks 1..n (task_of(j)) through .fm_block_task on the daemons, or
# here(j) in this process when there are none, handing each result to
# consume(j, result) in block order.
.fm_run_blocks <- function(n, task_of, here, consume, cols_of, label) {
  window <- .fm_par_opt("inflight")
  timeout <- .fm_par_opt("timeout")
  retries <- .fm_par_opt("retries")
  daemons <- .fm_daemons()
  if (daemons == 0L && mirai::daemons_set()) {
    cli::cli_inform(c(i = "fmalloc: mirai daemons are set but none is connected: the blocks run in this process"),
                    class = "fmalloc_message_no_daemons", .frequency = "regularly", .frequency_id = "fm_no_daemons")
  }
  bar <- NULL
  if (n > 1L && isTRUE(getOption("fmalloc.progress", TRUE))) {
    bar <- cli::cli_progress_bar(sprintf("fmalloc: %s in %d blocks %s", label, n,
                                         if (daemons) sprintf("on %d mirai daemons", daemons) else "in this process"),
                                 total = n, .envir = environment())
  }
  if (daemons == 0L) {
    for (j in seq_len(n)) {
      r <- here(j) # computed now, whether or not consume uses it
      consume(j, r)
      if (!is.null(bar)) cli::cli_progress_update(id = bar)
    }
    return(invisible())
  }
  out <- vector("list", n)
  tries <- integer(n)
  # the function found by name in the daemon's own Rfmalloc (a language
  # object: its `task` is the mirai's argument, not a variable here)
  run <- quote(get(".fm_block_task", envir = asNamespace("Rfmalloc"))(task))
  submit <- function(j) {
    out[[j]] <<- mirai::mirai(.expr = run, task = task_of(j), .timeout = if (!is.null(timeout)) timeout * 1000)
  }
  on.exit(for (m in out) if (!is.null(m) && mirai::unresolved(m)) mirai::stop_mirai(m), add = TRUE)
  nxt <- 1L
  for (j in seq_len(n)) {
    repeat {
      while (nxt <= n && nxt - j < window) {
        submit(nxt)
        nxt <- nxt + 1L
      }
      r <- .fm_await(out[[j]])
      if (!mirai::is_error_value(r)) break
      tries[j] <- tries[j] + 1L
      if (tries[j] > retries) .fm_block_failed(j, n, cols_of(j), tries[j], r)
      submit(j)
    }
    out[j] <- list(NULL)
    consume(j, r)
    if (!is.null(bar)) cli::cli_progress_update(id = bar)
  }
  invisible()
}

# The value of mirai m, waiting; a lost connection to every daemon is a
# failure of the block (mirai would wait for a daemon to come).
.fm_await <- function(m) {
  t <- 0
  while (mirai::unresolved(m)) {
    Sys.sleep(0.002)
    t <- t + 1
    if (t %% 250 == 0 && .fm_daemons() == 0L) {
      mirai::stop_mirai(m)
      return(structure(19L, class = "errorValue", message = "no daemon is connected"))
    }
  }
  m$data
}

.fm_block_failed <- function(j, n, cols, tries, r) {
  why <- if (mirai::is_mirai_error(r)) conditionMessage(r) else {
    msg <- attr(r, "message")
    if (is.null(msg)) {
      msg <- switch(as.character(as.integer(r)), "5" = "timed out (option fmalloc.parallel_timeout)",
                    "19" = "connection reset (the daemon died)", "20" = "cancelled",
                    paste("mirai error value", as.integer(r)))
    }
    msg
  }
  code <- if (mirai::is_mirai_error(r) && "fm_error_emismatch" %in% attr(r, "condition.class")) "emismatch" else "eio"
  fm_abort(code, sprintf("block %d of %d (columns %d-%d) failed %d times on mirai daemons; last: %s",
                         j, n, cols[1L], cols[length(cols)], tries, why), call = NULL)
}

# The storage (an environment holding the read-only view `ptr` of the
# file, as a mapped .bed's storage) of file f (path, identity) where a block
# runs (a daemon, or the driver): mapped once per identity, and refused when
# it is not the driver's file.
.fm_daemon_files <- new.env(parent = emptyenv())
.fm_verified_storage <- function(f) {
  known <- .fm_daemon_files[[f$path]]
  if (is.null(known) || !identical(known$identity, f$identity)) {
    where <- sprintf("on host %s (pid %d)", Sys.info()[["nodename"]], Sys.getpid())
    if (!file.exists(f$path)) fm_abort("eio", sprintf("'%s' does not exist %s", f$path, where), call = NULL)
    storage <- new.env(parent = emptyenv())
    storage$path <- f$path
    storage$ptr <- .Call(C_fmr_fileview_open, f$path)
    id <- .Call(C_fmr_fileview_identity, storage$ptr)
    if (!identical(id, f$identity)) {
      what <- c("size", "modification time", "sampled bytes")[id != f$identity]
      fm_abort("emismatch", sprintf("'%s' %s is not the driver's file: its %s differ%s", f$path, where,
                                    paste(what, collapse = " and "), if (length(what) == 1L) "s" else ""),
               call = NULL)
    }
    known <- .fm_daemon_files[[f$path]] <- list(storage = storage, identity = id)
  }
  known$storage
}

# The external-codec matrix of file f whose store starts at f$offset, made
# where the block runs by the registrant's opener (Rfmalloc_file_add: for
# Rgguf, the GGUF tensor there), once per checked mapping.
.fm_opened <- function(storage, f, n_rows, n_cols) {
  key <- format(f$offset, scientific = FALSE)
  if (is.null(storage$opened)) storage$opened <- new.env(parent = emptyenv())
  if (is.null(storage$opened[[key]])) {
    parts <- strsplit(f$opener, "::", fixed = TRUE)[[1L]]
    fun <- get(parts[2L], envir = asNamespace(parts[1L]))
    storage$opened[[key]] <- fun(f$path, f$offset, n_rows, n_cols, storage)
  }
  storage$opened[[key]]
}

# One block where it runs: a product of the block's columns with their
# transform (task$op), or fun(x, args) of fm_parallel_apply() (task$fun),
# through this process's backends.
.fm_block_task <- function(task) {
  f <- task$file
  storage <- .fm_verified_storage(f)
  fm_local_parallel(NULL) # the block itself runs here
  if (!is.null(task$fun)) {
    x <- task$x
    if (is.null(f$opener)) {
      x@storage <- storage
      x@spec[4L] <- x@spec[4L] + f$offset # the storage's bytes start there in the file
    } else {
      x@storage <- .fm_opened(storage, f, x@spec[2L], x@spec[3L])@storage
    }
    return(do.call(task$fun, c(list(.remade(x)), task$args)))
  }
  # the block's view, made once
  view <- if (is.null(f$opener)) {
    .Call(C_fmr_view_new, storage$ptr, c(f$codec, f$n_rows, f$n_stored, f$offset, f$stride), task$cols, task$transform)
  } else {
    m <- .fm_opened(storage, f, f$n_rows, f$n_stored)
    .Call(C_fmr_view_new, m@storage, m@spec, task$cols, task$transform)
  }
  y <- .Call(C_fmr_product, view, task$op, task$b, task$na_fill)
  if (task$op == 4L) y[, seq_len(task$k), drop = FALSE] else y
}

# x as a codec matrix whose bytes daemons can map by path, with that file
# (list(path, identity, offset of the storage's first byte, opener); the
# identity, which reads the file, only when asked), or
# NULL: a codec matrix of a mapped .bed or of a persistent runtime, or a
# double or integer matrix mapped from a persistent runtime (wrapped,
# sharing its bytes), or an external-codec matrix in a file its package
# registered (a GGUF tensor view). Matrices in memory or in a scratch
# runtime have no such file.
.fm_file_matrix <- function(x, identity = TRUE) {
  if (!methods::is(x, "fmalloc_codec_matrix")) {
    if (!is.matrix(x) || !(is.double(x) || is.integer(x)) || !fmalloc_is_mapped(x)) return(NULL)
    x <- .new_codec_matrix(x, if (is.double(x)) "double" else "integer", nrow(x), ncol(x), 0,
                           nrow(x) * if (is.double(x)) 8 else 4, dimnames = dimnames(x))
  }
  if (ncol(x) == 0) return(NULL) # nothing to cut into blocks
  file <- .Call(C_fmr_storage_file, .storage(x), identity)
  if (is.null(file)) NULL else list(x = x, file = file)
}

#' Run a function over blocks of variants, on mirai daemons
#'
#' For the packages of the stack (RfmallocStatgen's `statgen_gwas()`):
#' `fm_parallel_on(X)` says whether option `fmalloc.parallel` is `"mirai"`
#' and `X` is held in a file that daemons can open by path (see "What runs
#' where" in [fmalloc_parallel_info()]); `fm_parallel_apply()` then calls
#' `fun(X_block, <.slice cut to the block>, ...)` for each block of
#' `fmalloc.parallel_block` columns of `X` (in order), on the daemons (or
#' in this process without daemons), and hands each result to
#' `.consume(j, cols, result)` in block order. `X_block` is `X`'s block of
#' columns (with its transform) as a codec matrix (a mapped dense matrix
#' wrapped as one, codec `"double"` or `"integer"`; a GGUF tensor view made
#' again on the daemon) without sample and variant metadata; the daemon
#' checks that its file is the driver's. Faults, retries, the
#' timeout, the progress bar and interrupts are those of the products.
#'
#' @param X a matrix held in a file daemons can open (above).
#' @param fun a function of the package's namespace (it travels by
#'   reference to its namespace, which daemons load).
#' @param ... further arguments of `fun`, the same for every block.
#' @param .slice a named list of vectors or data frames of `ncol(X)`
#'   elements or rows, cut to the block's columns (or span) for each call.
#' @param .span `NULL`, or `function(cols)` giving the first and last
#'   column of `X` a block of columns `cols` needs (a window around it, for
#'   LD): `fun` then gets those columns, and also `span` (the two numbers)
#'   and `block` (the positions of `cols` among them).
#' @param .consume `function(j, cols, result)`: block `j`'s result, `cols`
#'   its columns of `X`.
#' @param .label what the progress bar shows.
#' @return `fm_parallel_on()`: `TRUE` or `FALSE`; `fm_parallel_apply()`:
#'   `NULL`, invisibly.
#' @section Errors: as the products' (see [fmalloc_parallel_info()]): a
#'   block failing on every try raises `fm_error_eio` naming it (or
#'   `fm_error_emismatch` for a daemon refusing the file, `fm_error_eio`
#'   when the file does not exist there); `fm_error_earg` for `X` that is
#'   not held in such a file.
#' @export
fm_parallel_on <- function(X) {
  identical(getOption("fmalloc.parallel"), "mirai") && !is.null(.fm_file_matrix(X, identity = FALSE))
}

#' @rdname fm_parallel_on
#' @export
fm_parallel_apply <- function(X, fun, ..., .slice = list(), .span = NULL, .consume, .label = "blocks") {
  fx <- .fm_file_matrix(X)
  if (is.null(fx)) {
    fm_abort("earg", "fm_parallel_apply: X must be a matrix in a file daemons can map (a mapped .bed, ",
             "a persistent runtime's codec matrix or mapped matrix)")
  }
  if (!requireNamespace("mirai", quietly = TRUE)) {
    fm_abort("eunsupported", "option fmalloc.parallel = \"mirai\" needs the CRAN package mirai")
  }
  X <- fx$x
  p <- ncol(X)
  blocks <- .fm_blocks(p)
  cols_of <- blocks$cols_of
  file <- fx$file
  lean <- X
  lean@variants <- NULL
  lean@samples <- NULL
  lean@dimnames <- list(NULL, NULL)
  args <- list(...)
  if (!is.list(.slice) || (length(.slice) && is.null(names(.slice)))) fm_abort("earg", "fm_parallel_apply: .slice must be a named list")
  for (nm in names(.slice)) {
    len <- NROW(.slice[[nm]])
    if (len != p) fm_abort("earg", sprintf("fm_parallel_apply: .slice$%s has %d elements or rows, X %d columns", nm, len, p))
  }
  cut <- function(v, cols) if (is.data.frame(v)) v[cols, , drop = FALSE] else v[cols]
  span_of <- function(cols) {
    span <- .span(cols)
    if (!is.numeric(span) || length(span) != 2L || anyNA(span) || span[1L] < 1 || span[2L] > p ||
        span[1L] > cols[1L] || span[2L] < cols[length(cols)]) {
      fm_abort("earg", sprintf("fm_parallel_apply: .span(columns %d-%d) must give two column numbers in 1..%d around them, not %s",
                               cols[1L], cols[length(cols)], p, paste(deparse(span, nlines = 1L), collapse = " ")))
    }
    span
  }
  task_of <- function(j, storage = NULL) {
    cols <- cols_of(j)
    span <- if (is.null(.span)) NULL else span_of(cols)
    sent <- if (is.null(span)) cols else span[1L]:span[2L]
    x <- fmalloc_select(lean, sent)
    x@storage <- storage # on a daemon its own, checked
    list(block = j, file = file, x = x, fun = fun,
         args = c(lapply(.slice, cut, sent), args, if (!is.null(span)) list(span = span, block = cols - span[1L] + 1L)))
  }
  # without daemons, on this process's own mapping
  here <- function(j) {
    t <- task_of(j, X@storage)
    fm_local_parallel(NULL)
    do.call(t$fun, c(list(.remade(t$x)), t$args))
  }
  .fm_run_blocks(blocks$n, task_of, here, function(j, r) .consume(j, cols_of(j), r), cols_of, .label)
}
