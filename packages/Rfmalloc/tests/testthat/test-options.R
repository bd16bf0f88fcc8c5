# The thread count and the package options read at load time: the default
# follows the CPU affinity mask, counts above FM_THREADS_MAX (256) are
# refused, and a bad option value warns instead of failing library().

test_that("the default thread count follows the CPU affinity mask (taskset)", {
  taskset <- Sys.which("taskset")
  skip_if(!nzchar(taskset), "taskset (util-linux) is not installed")
  skip_if(is.null(parallel::mcaffinity()), "this platform has no CPU affinity")
  cpu <- parallel::mcaffinity()[1] - 1L # taskset numbers CPUs from 0
  out <- rscript_child("cat('threads', Rfmalloc::fmalloc_threads(), '\\n')",
                         prefix = c(taskset, "-c", as.character(cpu)))
  expect_child_lines(out, "threads 1")
  # and products still agree with base R there
  out <- rscript_child(c(
    "suppressPackageStartupMessages(library(Rfmalloc))",
    "rt <- open_fmalloc(tempfile(), 0.01, mode = 'scratch')",
    "set.seed(2); g <- matrix(rbinom(300 * 40, 2, 0.4), 300, 40); b <- matrix(rnorm(80), 40, 2)",
    "cat('same', isTRUE(all.equal(fmalloc_bed(g, rt) %*% b, g %*% b, check.attributes = FALSE)), '\\n')"),
    prefix = c(taskset, "-c", as.character(cpu)))
  expect_child_lines(out, "same TRUE")
})

test_that("thread counts above 256 are refused, 256 is accepted", {
  old <- fmalloc_threads()
  on.exit(fmalloc_threads(old))
  expect_identical(fmalloc_threads(256), 256L)
  expect_identical(fmalloc_threads(), 256L)
  fmalloc_threads(2)
  for (bad in list(257, 1e9, .Machine$integer.max, 2^40)) {
    expect_error(fmalloc_threads(bad), "from 0 to 256", class = "fm_error_earg")
  }
  # a refused count leaves the count in effect unchanged
  expect_identical(fmalloc_threads(), 2L)
  expect_identical(fmalloc_backend_info()$threads, 2L)
})

test_that("a bad fmalloc.threads or fmalloc.panel_bytes option warns at load and keeps the default", {
  out <- rscript_child(c(
    "default_threads <- local({ loadNamespace('Rfmalloc'); Rfmalloc::fmalloc_threads() })",
    "default_budget <- Rfmalloc::fmalloc_panel_budget()",
    "unloadNamespace('Rfmalloc')",
    "options(fmalloc.threads = 'a', fmalloc.panel_bytes = -1)",
    "w <- character()",
    "ok <- withCallingHandlers(tryCatch({ library(Rfmalloc); TRUE }, error = function(e) conditionMessage(e)),",
    "  warning = function(w_) { w <<- c(w, conditionMessage(w_)); invokeRestart('muffleWarning') })",
    "cat('loaded', ok, '\\n')",
    "cat('warnings', length(w), '\\n')",
    "cat('threads warning', any(grepl('option fmalloc.threads is ignored', w)), '\\n')",
    "cat('budget warning', any(grepl('option fmalloc.panel_bytes is ignored', w)), '\\n')",
    "cat('defaults kept', fmalloc_threads() == default_threads,",
    "    fmalloc_panel_budget() == default_budget, '\\n')",
    "options(fmalloc.threads = 1e9, fmalloc.panel_bytes = NULL)",
    "unloadNamespace('Rfmalloc')",
    "w <- character()",
    "withCallingHandlers(library(Rfmalloc),",
    "  warning = function(w_) { w <<- c(w, conditionMessage(w_)); invokeRestart('muffleWarning') })",
    "cat('too many', length(w), grepl('fmalloc.threads.*from 0 to 256', w[1]), fmalloc_threads() == default_threads, '\\n')",
    "options(fmalloc.threads = 3, fmalloc.panel_bytes = 4096)",
    "unloadNamespace('Rfmalloc')",
    "library(Rfmalloc)",
    "cat('good options', fmalloc_threads(), fmalloc_panel_budget(), '\\n')"))
  expect_child_lines(out, c(
    "loaded TRUE",
    "warnings 2",
    "threads warning TRUE",
    "budget warning TRUE",
    "defaults kept TRUE TRUE",
    "too many 1 TRUE TRUE",
    "good options 3 4096"))
})

test_that("one bad setting neither drops nor blocks the others", {
  # at load: only the bad option is ignored, with its own reason
  out <- rscript_child(c(
    "options(fmalloc.threads = -3, fmalloc.panel_bytes = 4096)",
    "w <- character()",
    "withCallingHandlers(library(Rfmalloc),",
    "  warning = function(w_) { w <<- c(w, conditionMessage(w_)); invokeRestart('muffleWarning') })",
    "cat('warnings', length(w), grepl('option fmalloc.threads is ignored .option fmalloc.threads', w), '\\n')",
    "cat('budget kept', fmalloc_panel_budget(), '\\n')"))
  expect_child_lines(out, c("warnings 1 TRUE", "budget kept 4096"))
  # after load: a bad backend or budget does not stop the thread setter or queries
  old_threads <- fmalloc_threads()
  old <- options(fmalloc.backend = "no_such_backend")
  on.exit({ options(old); fmalloc_threads(old_threads) }, add = TRUE)
  expect_identical(fmalloc_threads(1), 1L)
  expect_identical(fmalloc_threads(), 1L)
  info <- fmalloc_backend_info()
  expect_identical(info$forced, "no_such_backend")
  expect_identical(info$threads, 1L)
  options(fmalloc.backend = NULL, fmalloc.panel_bytes = "x")
  expect_identical(fmalloc_threads(2), 2L)
  expect_error(fmalloc_panel_budget(), "option fmalloc.panel_bytes", class = "fm_error_earg")
  options(fmalloc.panel_bytes = NULL)
})

test_that("settings refuse classed values and name NA", {
  old_threads <- fmalloc_threads()
  on.exit(fmalloc_threads(old_threads), add = TRUE)
  expect_error(fmalloc_threads(factor(8)), "classed", class = "fm_error_earg")
  expect_identical(fmalloc_threads(), old_threads)
  expect_error(fmalloc_panel_budget(NA_real_), "not NA$", class = "fm_error_earg")
  expect_error(fmalloc_panel_budget(NaN), "not NaN$", class = "fm_error_earg")
})

test_that("a bad fmalloc.backend option is reported at the product, not at load", {
  rt <- fm_runtime(mode = "scratch")
  X <- fmalloc_bed(matrix(c(0L, 1L, 2L, 1L), 2, 2), rt)
  old <- options(fmalloc.backend = "no_such_backend")
  on.exit(options(old), add = TRUE)
  expect_error(X %*% diag(2), "fmalloc.backend|no_such_backend", class = "fm_error_earg")
  options(fmalloc.backend = NULL)
  expect_equal(X %*% diag(2), matrix(c(0, 1, 2, 1), 2, 2), ignore_attr = TRUE)
})
