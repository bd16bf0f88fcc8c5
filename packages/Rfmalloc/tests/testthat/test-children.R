# The shared harnesses of inst/testhelpers/children.R (sourced by
# helper-children.R) report how a child ended: a forked child's value, error,
# crash (killed by a signal) or hang, and a child Rscript's output and exit
# status.

test_that("fork_children tells a value, an error, a crash and a hang apart", {
  skip_if_no_fork()
  res <- fork_children(function(i) {
    switch(i,
      list(i = i, pid = Sys.getpid()),
      stop("child failed on purpose"),
      tools::pskill(Sys.getpid(), tools::SIGKILL),
      Sys.sleep(60))
  }, n = 4, timeout = 3)
  status <- vapply(res, `[[`, "", "status")
  expect_identical(status, c("value", "error", "crashed", "hung"))
  expect_identical(res[[1]]$value$i, 1L)
  expect_false(identical(res[[1]]$value$pid, Sys.getpid())) # ran in another process
  expect_identical(res[[2]]$message, "child failed on purpose")
  expect_true("simpleError" %in% res[[2]]$class)
  expect_match(res[[3]]$message, "without a result")
  expect_match(res[[4]]$message, "still ran after 3 s")
  expect_identical(child_values(res), list(res[[1]]$value))
  expect_true(children_hung(res))
  expect_false(children_hung(res[1:3]))
  # the killed child is reaped, not left running or a zombie
  expect_false(tools::pskill(res[[4]]$pid, 0L))
})

test_that("rscript_child returns the output and exit status of a fresh R session", {
  out <- rscript_child(c("cat('loaded', 'package:Rfmalloc' %in% search(), '\\n')",
                         "message('to stderr')",
                         "cat('libs', identical(.libPaths()[1], normalizePath(Sys.getenv('R_LIBS_WANT'))), '\\n')"),
                       packages = "Rfmalloc",
                       env = paste0("R_LIBS_WANT=", shQuote(.libPaths()[1])))
  expect_identical(attr(out, "status"), 0L)
  expect_child_lines(out, c("loaded TRUE", "to stderr", "libs TRUE"))
  out <- rscript_child(c("cat('before\\n')", "stop('halt here')", "cat('after\\n')"))
  expect_identical(attr(out, "status"), 1L)
  expect_true("before" %in% out)
  expect_false("after" %in% out)
  expect_true(any(grepl("halt here", out)))
  out <- rscript_child("Sys.sleep(60)", timeout = 2)
  expect_identical(attr(out, "status"), 124L)
})
