# Test harnesses for child R processes, shared by the testthat suites of
# Rfmalloc, Rgguf and Rllm. Each suite sources this file from its
# tests/testthat/helper-children.R through
#   system.file("testhelpers", "children.R", package = "Rfmalloc")
# so the definitions below land in the suite's test environment. They use
# testthat (skips and expectations) and parallel, both Suggests of the suites.
#
# Forked children (a copy of the test's session, made by parallel::mcparallel):
#   skip_if_no_fork()              skip, saying why, where fork() is unavailable.
#   fork_children(f, n, timeout)   run f(1), ..., f(n) in n forked children at
#                                  once; a list of n outcomes (below).
#   expect_children_returned(res)  one expectation per child: it returned a value.
#   child_values(res)              the values of the children that returned one.
#   children_hung(res)             TRUE when some child was killed as hung.
# An outcome is list(status, value, message, pid), status one of
#   "value"    f(i) returned value;
#   "error"    f(i) signalled an error; message is its message and class its
#              class vector;
#   "crashed"  the child ended without a result (killed by a signal, or it
#              exited): the failure a crash in native code shows;
#   "hung"     the child still ran after timeout seconds and was killed
#              (SIGKILL), so a child that would never return fails the test
#              instead of blocking the suite.
#
# Child Rscript processes (a fresh R session):
#   rscript_child(code, packages, prefix, env, timeout)
#     writes code (a character vector of lines) to a script, after a
#     library() call for each of packages (startup messages suppressed), and
#     runs it with `Rscript --vanilla`, optionally under a command prefix
#     (e.g. c("taskset", "-c", "0")). The child gets this session's library
#     paths (R_LIBS), this session's environment (RFMALLOC_FIXTURES among
#     it) and the name=value strings of env, quoted for a shell as system2's.
#     Returns its stdout and stderr lines (merged) with attribute "status":
#     the exit status, 0 on success, 124 when killed after timeout seconds.
#   expect_child_lines(out, lines)
#     one expectation per element of lines: it is a line of out (blanks
#     trimmed); a failure shows the whole output.

skip_if_no_fork <- function() {
  testthat::skip_if(.Platform$OS.type != "unix", "this platform has no fork()")
  testthat::skip_if_not_installed("parallel")
}

fork_children <- function(f, n = 2L, timeout = 120) {
  skip_if_no_fork()
  f <- match.fun(f)
  # the child reports an error as an outcome: mcparallel's own try() would
  # make it indistinguishable from a value of class try-error
  run <- function(i) {
    tryCatch(list(status = "value", value = f(i)),
             error = function(e) list(status = "error", message = conditionMessage(e),
                                      class = class(e)))
  }
  jobs <- lapply(seq_len(n), function(i) parallel::mcparallel(run(i)))
  pids <- vapply(jobs, function(j) as.character(j$pid), "")
  got <- list()
  left <- function() setdiff(pids, names(got))
  deadline <- Sys.time() + timeout
  while (length(left()) && Sys.time() < deadline) {
    # a child that died delivers NULL (and mccollect warns: reported below)
    r <- suppressWarnings(parallel::mccollect(jobs[pids %in% left()], wait = FALSE,
                                              timeout = 1))
    if (!is.null(r)) got[names(r)] <- r
  }
  hung <- left()
  for (p in hung) tools::pskill(as.integer(p), tools::SIGKILL)
  # reap them: their pipes close at the kill, so waiting ends at once
  if (length(hung)) suppressWarnings(parallel::mccollect(jobs[pids %in% hung], wait = TRUE))
  lapply(pids, function(p) {
    r <- if (p %in% hung) {
      list(status = "hung", message = sprintf(
        "forked child %s still ran after %g s and was killed", p, timeout))
    } else if (is.null(got[[p]])) {
      list(status = "crashed", message = sprintf(
        "forked child %s ended without a result (killed by a signal, or it exited)", p))
    } else {
      got[[p]]
    }
    c(r, pid = as.integer(p))
  })
}

expect_children_returned <- function(res) {
  for (i in seq_along(res)) {
    r <- res[[i]]
    testthat::expect(identical(r$status, "value"),
                     sprintf("forked child %d: %s: %s", i, r$status, r$message))
  }
  invisible(res)
}

child_values <- function(res) {
  lapply(Filter(function(r) identical(r$status, "value"), res), `[[`, "value")
}

children_hung <- function(res) any(vapply(res, function(r) identical(r$status, "hung"), NA))

rscript_child <- function(code, packages = character(), prefix = character(),
                          env = character(), timeout = 600) {
  script <- tempfile(fileext = ".R")
  on.exit(unlink(script), add = TRUE)
  load <- sprintf("suppressPackageStartupMessages(library(%s))", packages)
  writeLines(c(load, code), script)
  rscript <- file.path(R.home("bin"), "Rscript")
  cmd <- if (length(prefix)) prefix[1] else rscript
  args <- c(prefix[-1], if (length(prefix)) rscript, "--vanilla", shQuote(script))
  # system2 puts env before the command in a shell line: quote the value
  libs <- paste(.libPaths(), collapse = .Platform$path.sep)
  env <- c(paste0("R_LIBS=", shQuote(libs)), env)
  out <- suppressWarnings(system2(cmd, args, stdout = TRUE, stderr = TRUE, env = env,
                                  timeout = timeout))
  status <- attr(out, "status")
  attr(out, "status") <- if (is.null(status)) 0L else as.integer(status)
  out
}

expect_child_lines <- function(out, lines) {
  info <- paste(out, collapse = "\n")
  for (l in lines) testthat::expect_true(l %in% trimws(out), label = sprintf("line '%s' in the child's output", l), info = info)
}
