# Product backends: which ones are registered, forcing one of them (or the
# reference path), worker threads, introspection, and the test hooks.

#' Product backends
#'
#' Products over codec matrices (`X %*% B`, `crossprod(X, B)`,
#' `tcrossprod(X, B)`, `colSums()`, `colMeans()`) and [fmalloc_pca()] are
#' offered to each registered backend in turn; a backend computes the whole
#' product or declines it, and when every backend declines the reference
#' path computes it: decode bounded panels (see [fmalloc_panel_budget()]),
#' then BLAS `dgemm`. Backends change speed, never results beyond
#' floating-point rounding.
#'
#' Built in, and tried first in this order:
#' * `"fused"`: kernels for `"bed2"` hardcalls and `"dos8"` dosages that
#'   decode and multiply in one pass with the standardization of
#'   [fmalloc_standardize()] folded into lookup tables (AVX2 when the CPU
#'   has it, portable C otherwise; see [fmalloc_backend_info()]);
#' * `"alp"`: `X %*% B` and `crossprod(X, B)` for ALP-compressed doubles
#'   ([fmalloc_alp()]), decoding a cache-sized vector at a time.
#'
#' Other packages may register their own (Rgguf for GGUF tensors).
#'
#' `fmalloc_backends()` lists the registered backends in the order they are
#' tried, then `"reference"`.
#'
#' `fmalloc_with_backend(name, expr)` evaluates `expr` with option
#' `fmalloc.backend` set to `name`, and restores the option afterwards. The
#' option, read at every product:
#' * `NULL` (the default): every registered backend in order, then the
#'   reference path;
#' * `"reference"`: the reference path only;
#' * a backend's name: only that backend. A product it declines raises
#'   `fm_error_eunsupported` naming the backend, the product, the columns of
#'   `B` and the codec, e.g. "backend 'fused' does not support X %*% B with B
#'   of 65 columns on codec bed2 (1000 x 20)". Use it to test or time one
#'   backend; everyday code leaves the option unset.
#'
#' [fmalloc_last_backend()] names the backend that computed the most recent
#' product, statistic or PCA.
#'
#' @param name `NULL`, `"reference"` or the name of a registered backend
#'   (one of `fmalloc_backends()`).
#' @param expr an expression, evaluated with the option set.
#' @return `fmalloc_backends()`: a character vector. `fmalloc_with_backend()`:
#'   the value of `expr`.
#' @section Errors: `fm_error_earg` when `name` (or option `fmalloc.backend`
#'   at a product) is neither `NULL` nor one of `fmalloc_backends()`; the
#'   message lists them. `fm_error_eunsupported` from a product that a forced
#'   backend declines.
#' @section Source: this package's design: each product is offered to the
#'   backends in order and the first that accepts computes it; the
#'   reference path (decode panels, then BLAS `dgemm`) accepts every
#'   product. The C contract is `core/include/fm/fm_backend.h` in the
#'   source repository.
#' @examples
#' fmalloc_backends()
#' g <- matrix(rbinom(40 * 6, 2, 0.3), 40, 6)
#' rt <- open_fmalloc(tempfile(), size_gb = 0.01, mode = "scratch")
#' X <- fmalloc_bed(g, rt)
#' b <- rnorm(6)
#' y1 <- fmalloc_with_backend("reference", X %*% b)
#' fmalloc_last_backend()
#' y2 <- X %*% b
#' all.equal(y1, y2)
#' cleanup_fmalloc(rt)
#' @export
fmalloc_backends <- function() .Call(C_fmr_backends)

#' @rdname fmalloc_backends
#' @export
fmalloc_with_backend <- function(name, expr) {
  if (!is.null(name)) {
    known <- fmalloc_backends()
    if (!is.character(name) || length(name) != 1L || is.na(name) || !(name %in% known)) {
      fm_abort("earg", "fmalloc_with_backend: name must be NULL or one of ",
               paste0("'", known, "'", collapse = ", "), ", not ",
               if (is.character(name) && length(name) == 1L) paste0("'", name, "'") else fm_describe(name))
    }
  }
  old <- options(fmalloc.backend = name)
  on.exit(options(old), add = TRUE)
  expr
}

#' Worker threads of products and statistics
#'
#' Sets or reports how many threads the fused product kernels (and other
#' threaded core code) use per call. The default is the number of CPUs this
#' process may run on: its CPU affinity mask on Linux (so `taskset`, cpusets
#' of containers and batch schedulers count), else the CPUs online; a CPU
#' quota (cgroup `cpu.max`, `docker --cpus`) is not seen, so set the count
#' there; under `R CMD check` (environment variable `_R_CHECK_LIMIT_CORES_`
#' set) the default is at most 2. The count is the option `fmalloc.threads`, which
#' `fmalloc_threads(n)` sets and every core call of the stack reads (the
#' products and statistics of Rfmalloc, Rgguf's GGML products, Rllm's
#' evaluations): one setting for all of them. An invalid value set before
#' the package loads is ignored with a warning; one set later raises
#' `fm_error_earg` at the next call. At most 256 threads are used
#' (the default is capped at 256 as well).
#'
#' Results do not depend on the thread count: every output element is summed
#' by one thread in an order fixed by the data alone. A block of variants is
#' processed in up to two phases: in the first each thread takes whole
#' variants (their lookup tables and code counts; for `crossprod(X, B)` and
#' column sums the output rows of those variants, the variant's rows summed
#' in fixed segments); in the second, for `X %*% B` and `X %*% crossprod(X,
#' B)`, each thread takes a range of rows (samples) and adds every variant
#' of the block to those rows, variants in order. So products are
#' bit-identical for 1, 2 or more threads and any panel budget (the tests
#' check this). In a forked child (for example under
#' `parallel::mclapply()`) the count in effect in the parent is inherited;
#' the kernels start their own threads (POSIX threads) at each call, so
#' they work in the child. With several forked workers, set
#' `fmalloc_threads(1)` in them to avoid oversubscribing the CPUs.
#'
#' @param n `NULL` to query; a whole number from 1 to 256 to set; `0` or `NA`
#'   to restore the default (the CPUs available).
#' @return The thread count in effect, an integer (invisibly when setting).
#' @section Errors: `fm_error_earg` naming `n` when it is not `NULL`, `NA`
#'   or a whole number from 0 to 256.
#' @section Source: the threading and the order of summation of the fused
#'   kernels are this package's design (each output element is summed in a
#'   fixed order whatever the thread count); the default count comes from
#'   `sched_getaffinity(2)` (Linux) or `sysconf(_SC_NPROCESSORS_ONLN)`.
#' @examples
#' fmalloc_threads()
#' old <- fmalloc_threads()
#' fmalloc_threads(1)
#' fmalloc_threads(old)
#' @export
fmalloc_threads <- function(n = NULL) {
  if (is.null(n)) return(.Call(C_fmr_setting, "threads"))
  invisible(.set_setting("fmalloc.threads", n, "threads"))
}

# Set option `name` to `value` and read that setting back through its one
# reader (r_settings.c, behind every call's fm_ctl), which holds its
# validity rule; a value it refuses leaves the option as it was, and the
# error is the setter's: its call, and its argument (the caller's name for
# `value`) in place of the option. 0 and NA (the default) are stored as an
# unset option.
.set_setting <- function(name, value, field) {
  call <- sys.call(-1L)
  arg <- deparse(substitute(value))
  old <- options(structure(list(value), names = name))
  now <- tryCatch(.Call(C_fmr_setting, field), fm_error = function(e) {
    options(old)
    fm_abort(sub("^fm_error_", "", class(e)[1L]),
             sub(paste0("option ", name), arg, conditionMessage(e), fixed = TRUE), call = call)
  })
  if (is.na(value) || value == 0) options(structure(list(NULL), names = name))
  now
}

#' What computes products
#'
#' A summary of the product machinery in this session.
#' @return A list: `backends` ([fmalloc_backends()]), `forced` (option
#'   `fmalloc.backend`, `NULL` when unset), `threads` ([fmalloc_threads()]),
#'   `fused_isa` (the instruction set of the kernels chosen at run time, the
#'   fused products' and the `.bed` genotype counts': `"avx512"`, `"avx2"`
#'   or `"portable"`: the best the CPU runs, lowered by the environment
#'   variable `FM_ISA` when it is set to `"portable"`, `"avx2"` or
#'   `"avx512"` before the package loads, to run one path on any machine),
#'   `panel_bytes` ([fmalloc_panel_budget()]),
#'   `last_backend` ([fmalloc_last_backend()]), `forked` (`TRUE` in a child
#'   made by `fork()` after Rfmalloc loaded: GGML runs one thread there) and
#'   `last_call`, the settings
#'   of the control block of the most recent core call made by any package
#'   of the stack (a product, statistic, read, GGML product or model
#'   evaluation): a list of `threads`, `panel_bytes` and `forked` (whether
#'   the process is a forked child, where GGML runs one thread), with the
#'   defaults resolved.
#' @section Errors: `fm_error_earg` naming option `fmalloc.threads` or
#'   `fmalloc.panel_bytes` when one is set to an unusable value (as every
#'   call raises then); otherwise none: it only reads the state of the
#'   session. An invalid option `fmalloc.backend` is returned as set (it
#'   raises `fm_error_earg` at the next product), and a closed runtime does
#'   not matter here.
#' @section Source: the kernels' instruction set is read from the CPU
#'   (CPUID) at run time, once, and limited by the environment variable
#'   `FM_ISA`; the other fields are the settings described above.
#' @examples
#' str(fmalloc_backend_info())
#' @export
fmalloc_backend_info <- function() {
  list(backends = fmalloc_backends(), forced = getOption("fmalloc.backend"),
       threads = .Call(C_fmr_setting, "threads"), fused_isa = .Call(C_fmr_cpu_isa),
       panel_bytes = .Call(C_fmr_setting, "panel_bytes"), last_backend = fmalloc_last_backend(),
       forked = .Call(C_fmr_setting, "forked"), last_call = .Call(C_fmr_setting, "last_call"))
}

#' Backend introspection for tests
#'
#' `fmalloc_last_backend()` names what computed the most recent successful
#' codec-matrix product (`%*%`, `crossprod`, `tcrossprod`, `colSums`,
#' `colMeans`), streamed statistic or PCA in this session: a backend's name
#' (one of [fmalloc_backends()]), `"reference"` for the decode-and-BLAS
#' path, `"none"` when the result was empty or zero by shape; `"gram"`
#' after `crossprod(X)` and `tcrossprod(X)` (one pass of the core's
#' `fm_gram`: decoded panels and BLAS `dsyrk`, no product backend);
#' `"colvar"`
#' after [fmalloc_colVars()] and [fmalloc_colMeans()] (also when
#' [fmalloc_standardize()] or [fmalloc_pca()] compute their column
#' statistics), which stream through the core's statistics
#' (one streamed pass per call) and no product backend; after
#' [fmalloc_pca()], the backends of its passes over the matrix, distinct,
#' in the order of first use and joined by `"+"` (e.g. `"fused"`, or
#' `"reference+alp"` on ALP storage, whose backend declines the passes
#' `X %*% crossprod(X, B)`). `NULL` before the first.
#' @return A string or `NULL`.
#' @keywords internal
#' @export
fmalloc_last_backend <- function() .Call(C_fmr_last_backend)

# Test hooks of the suite, not exported (tests reach them in the namespace,
# tools through Rfmalloc:::).
# .test_backend(name, on) registers or removes one of two test backends
# compiled into the package: "decline_all" declines every product, "xb_k1"
# computes only X %*% b with one column of b. NULL, invisibly.
.test_backend <- function(name, on = TRUE) {
  invisible(.Call(C_fmr_test_backend, name, on))
}

# .test_fused_isa(isa) caps the instruction set of every kernel chosen at
# run time (the fused products and the .bed genotype counts of
# fmalloc_allele_freq() and friends, through fm_cpu_cap() of
# core/include/fm/fm_cpu.h), so that they are tested against each other on
# one machine ("avx2" falls back to portable code on a CPU without AVX2,
# FMA, BMI1/2 and POPCNT, "avx512" to the best the CPU has; "auto" restores
# the default). Returns the instruction set then in use.
.test_fused_isa <- function(isa = c("auto", "portable", "avx2", "avx512")) {
  .Call(C_fmr_test_cpu_cap, match.arg(isa))
}
