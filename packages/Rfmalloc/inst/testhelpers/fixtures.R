# Test helpers shared by the testthat suites of the stack's packages (each
# sources this file from its tests/testthat/helper-shared.R through
# system.file("testhelpers", "fixtures.R", package = "Rfmalloc")).
#
# fixture_path(...)   the path of a file under ../shared/fixtures (beside the
#                     repository; env RFMALLOC_FIXTURES, which the Makefile
#                     sets, names it elsewhere), or a skip that says it is
#                     absent.
# skip_if_no_plink2() skip, saying why, where plink2 is not installed.
# with_every_tick(expr), collect_updates(expr, on_update)
#                     cli progress bars in tests: the update throttle lifted
#                     (cli:::cli_with_ticks, so short runs show their bar),
#                     and each progress message recorded (kept out of the
#                     output) with on_update(n) called on the n-th.
# local_daemons(n)    n mirai daemons on this host for the rest of the test.
fixture_path <- function(...) {
  root <- Sys.getenv("RFMALLOC_FIXTURES", "")
  if (!nzchar(root)) {
    root <- file.path(testthat::test_path(), "..", "..", "..", "..", "..", "shared", "fixtures")
  }
  p <- file.path(root, ...)
  if (!file.exists(p)) {
    testthat::skip(sprintf("fixture %s not found: ../shared/fixtures is absent", file.path(...)))
  }
  normalizePath(p)
}

skip_if_no_plink2 <- function() {
  if (!nzchar(Sys.which("plink2"))) testthat::skip("plink2 is not installed (Debian package plink2)")
}

with_every_tick <- function(expr) {
  testthat::skip_if_not(exists("cli_with_ticks", asNamespace("cli"), inherits = FALSE),
                        "this cli has no cli_with_ticks() to lift its update throttle")
  op <- options(cli.dynamic = FALSE, cli.ansi = FALSE, fmalloc.progress = TRUE)
  on.exit(options(op))
  utils::getFromNamespace("cli_with_ticks", "cli")(expr)
}

collect_updates <- function(expr, on_update = function(n) NULL) {
  seen <- character()
  res <- withCallingHandlers(expr, cliMessage = function(m) {
    seen <<- c(seen, conditionMessage(m))
    on_update(length(seen))
    tryInvokeRestart("cli_message_handled")
  })
  list(value = res, updates = seen)
}

local_daemons <- function(n, env = parent.frame()) {
  mirai::daemons(0)
  if (n > 0) mirai::daemons(n)
  withr::defer(mirai::daemons(0), envir = env)
  invisible(n)
}
