# Run an R script in a fresh Rscript with working directory dir; returns its
# output lines, with attribute "status" (0 when it ran to the end).
run_script <- function(lines, dir = tempdir()) {
  f <- tempfile(fileext = ".R")
  writeLines(lines, f)
  old <- setwd(dir)
  on.exit(setwd(old), add = TRUE)
  out <- suppressWarnings(system2(file.path(R.home("bin"), "Rscript"), shQuote(f),
                                  stdout = TRUE, stderr = TRUE))
  attr(out, "status") <- if (is.null(attr(out, "status"))) 0L else attr(out, "status")
  out
}

expect_script_ran <- function(out, last, label) {
  ok <- identical(attr(out, "status"), 0L) && identical(utils::tail(out, 1), last)
  if (!ok) cat(utils::tail(out, 40), sep = "\n")
  expect_true(ok, label = label)
}

# The stack's R packages in install order (tools/packages, the one list).
stack_packages <- function() {
  readLines(file.path(testthat::test_path(), "..", "..", "tools", "packages"))
}
