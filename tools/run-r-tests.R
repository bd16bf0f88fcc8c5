# Run each package's testthat suite against the installed package, and the
# cross-package tests of a folder that is not a package (tests/: they load
# the installed packages themselves), and print one closing line
# "N passed, N failed, N skipped". Exits non-zero on failure.
args <- commandArgs(trailingOnly = TRUE)
suppressPackageStartupMessages(library(testthat))
here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)))
source(file.path(here, "test-count.R"))
options(cli.progress_show_after = Inf) # exercise progress code, keep the log readable
passed <- failed <- skipped <- 0L
for (pkg_dir in args) {
  counter <- CountFailures$new()
  reporter <- MultiReporter$new(list(SummaryReporter$new(max_reports = Inf), counter))
  res <- if (file.exists(file.path(pkg_dir, "DESCRIPTION"))) {
    test_dir(file.path(pkg_dir, "tests", "testthat"), package = basename(pkg_dir),
             load_package = "installed", reporter = reporter, stop_on_failure = FALSE)
  } else {
    test_dir(file.path(pkg_dir, "testthat"), reporter = reporter, stop_on_failure = FALSE)
  }
  res <- as.data.frame(res)
  passed <- passed + sum(res$passed)
  failed <- failed + counter$n
  skipped <- skipped + sum(res$skipped)
}
cat(sprintf("%d passed, %d failed, %d skipped\n", passed, failed, skipped))
quit(status = if (failed > 0) 1L else 0L)
