# Conditions that arrive while the core computes (r_err.c): the error of
# setTimeLimit() reaches tryCatch(error = ) with its own message and nothing
# printed, a user interrupt becomes fm_error_ecancelled, and R carries on.
# Each case runs in a child Rscript, where an uncaught error halts the
# process (the failure this guards against: "Execution halted").

# Child code that maps a generated .bed of random bytes (8,000 samples x
# 40,000 variants, 80 MB: products with 64 columns take seconds) as `big`,
# with B (40,000 x 64) and one thread; small_ok() checks a small product
# against base R afterwards.
big_bed_code <- c(
  "prefix <- tempfile()",
  "n <- 8000; m <- 40000",
  "set.seed(1)",
  "writeBin(c(as.raw(c(0x6c, 0x1b, 0x01)), as.raw(sample(0:255, n / 4 * m, TRUE))),",
  "         paste0(prefix, '.bed'))",
  "writeLines(sprintf('f%d s%d 0 0 1 -9', 1:n, 1:n), paste0(prefix, '.fam'))",
  "writeLines(sprintf('1 rs%d 0 %d A G', 1:m, 1:m), paste0(prefix, '.bim'))",
  "big <- fmalloc_bed_open(prefix)",
  "B <- matrix(rnorm(m * 64), m, 64)",
  "invisible(fmalloc_threads(1))",
  "small_ok <- function() {",
  "  rt <- open_fmalloc(tempfile(), 0.01, mode = 'scratch')",
  "  g <- matrix(rbinom(60 * 30, 2, 0.3), 60, 30); b <- matrix(rnorm(30 * 3), 30, 3)",
  "  ok <- isTRUE(all.equal(fmalloc_bed(g, rt) %*% b, g %*% b, check.attributes = FALSE))",
  "  cleanup_fmalloc(rt)",
  "  ok && identical(dim(big[1:3, 1:4]), c(3L, 4L))",
  "}")

test_that("setTimeLimit stops a product with its own error, caught by tryCatch, nothing printed", {
  skip_on_os("windows")
  out <- rscript_child(packages = "Rfmalloc", c(
    big_bed_code,
    "for (backend in c('default', 'reference')) {",
    "  options(fmalloc.backend = if (backend == 'default') NULL else backend)",
    "  r <- tryCatch({",
    "    setTimeLimit(elapsed = 0.3, transient = TRUE)",
    "    for (i in 1:100) big %*% B",
    "    'done'",
    "  }, error = function(e) e)",
    "  setTimeLimit()",
    "  cat('limit', backend, class(r)[1], if (inherits(r, 'condition')) conditionMessage(r), '\\n')",
    "}",
    "options(fmalloc.backend = NULL)",
    "# colVars and PCA poll the same way",
    "r <- tryCatch({ setTimeLimit(elapsed = 0.3, transient = TRUE)",
    "                for (i in 1:100) fmalloc_pca(big, k = 5, max_iter = 50, tol = 1e-300); 'done' },",
    "              error = function(e) conditionMessage(e))",
    "setTimeLimit()",
    "cat('pca', r, '\\n')",
    "cat('after', small_ok(), '\\n')"))
  info <- paste(out, collapse = "\n")
  expect_child_lines(out, c(
    "limit default simpleError reached elapsed time limit",
    "limit reference simpleError reached elapsed time limit",
    "pca reached elapsed time limit",
    "after TRUE"))
  expect_false(any(grepl("^Error|halted", out)), info = info)
})

test_that("a user interrupt during a product raises fm_error_ecancelled, and R carries on", {
  skip_on_os("windows")
  out <- rscript_child(packages = "Rfmalloc", c(
    big_bed_code,
    "system(sprintf('(sleep 1; kill -INT %d) &', Sys.getpid()))",
    "r <- tryCatch({ for (i in 1:100) big %*% B; 'done' }, interrupt = function(e) e)",
    "cat('interrupt', class(r)[1], inherits(r, 'interrupt'), '\\n')",
    "cat('after', small_ok(), '\\n')"))
  expect_child_lines(out, c(
    "interrupt fm_error_ecancelled TRUE",
    "after TRUE"))
})

test_that("PCA's progress bar runs with the caller's handlers; an error there reaches the caller", {
  skip_if_not_installed("cli")
  skip_if_not(exists("cli_with_ticks", asNamespace("cli"), inherits = FALSE),
              "this cli has no cli_with_ticks() to lift its update throttle")
  # in a child: a bar left mid-update by the error stays in cli's state
  out <- rscript_child(packages = "Rfmalloc", c(
    "rt <- open_fmalloc(tempfile(), 0.05, mode = 'scratch')",
    "set.seed(3)",
    "X <- fmalloc_bed(matrix(rbinom(300 * 200, 2, 0.3), 300, 200), rt)",
    "options(fmalloc.progress = TRUE, cli.progress_show_after = 0, cli.dynamic = FALSE,",
    "        cli.ansi = FALSE)",
    "# at most 20 iterations (tol = 1e-300: until the values settle at rounding level)",
    "pca <- function() suppressWarnings(fmalloc_pca(X, k = 3, max_iter = 20, tol = 1e-300))",
    "# every pass updates the bar (a cli message) while the core computes; a",
    "# calling handler sees each message and may muffle it",
    "seen <- character()",
    "pc <- cli:::cli_with_ticks(withCallingHandlers(pca(), cliMessage = function(m) {",
    "  seen <<- c(seen, conditionMessage(m))",
    "  tryInvokeRestart('cli_message_handled')",
    "}))",
    "# one update per pass (iterations + 2), and one jumping to the bound when it converged early",
    "cat('messages', length(seen) - pc$iterations - pc$converged, grepl('100%', seen[length(seen)]), '\\n')",
    "# an error raised by that handler during a pass cancels the PCA and",
    "# reaches tryCatch with its message",
    "n_msg <- 0",
    "r <- tryCatch(cli:::cli_with_ticks(withCallingHandlers(pca(), cliMessage = function(m) {",
    "  n_msg <<- n_msg + 1",
    "  if (n_msg == 4) stop('stop at update 4')",
    "  tryInvokeRestart('cli_message_handled')",
    "})), error = function(e) conditionMessage(e))",
    "cat('error', r, n_msg, '\\n')",
    "# a restart invoked from a handler unwinds the PCA the same way",
    "got <- cli:::cli_with_ticks(withRestarts(",
    "  withCallingHandlers(pca(), cliMessage = function(m) invokeRestart('give_up', 'gave up')),",
    "  give_up = function(msg) msg))",
    "cat('restart', got, '\\n')",
    "options(fmalloc.progress = FALSE)",
    "cat('again', identical(pca()$d, pc$d), '\\n')"))
  expect_child_lines(out, c(
    "messages 2 TRUE",
    "error stop at update 4 4",
    "restart gave up",
    "again TRUE"))
})

test_that("an error from PCA's progress function at its last report reaches the caller", {
  # the .Call of fmalloc_pca with a plain R progress function (fmalloc_pca
  # itself passes a cli bar's update): the core has finished all passes and
  # returns success after that report, and the error must not be dropped
  rt <- open_fmalloc(tempfile(), 0.05, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(3)
  X <- fmalloc_bed(matrix(rbinom(300 * 200, 2, 0.3), 300, 200), rt)
  h <- Rfmalloc:::.view_of(X)
  rpca <- function(progress) {
    .Call(Rfmalloc:::C_fmr_rpca, h, NULL, NULL, NULL, c(3, 5, 4, 1e-300, 1), progress, NULL, NULL)
  }
  reports <- 0
  fails_last <- function(done, total) {
    reports <<- reports + 1
    if (done >= total) stop(sprintf("progress failed at %g of %g", done, total))
  }
  expect_error(rpca(fails_last), "^progress failed at ([0-9.]+) of \\1$")
  expect_gt(reports, 1) # the earlier reports returned
  fails_first <- function(done, total) stop("progress failed first")
  expect_error(rpca(fails_first), "progress failed first")
  # R carries on: the same PCA with a progress function that returns
  r <- rpca(function(done, total) NULL)
  expect_equal(r[[1]], rpca(NULL)[[1]])
  expect_length(r[[1]], 3)
})
