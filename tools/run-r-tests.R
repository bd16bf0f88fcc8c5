# Run each package's testthat suite against the installed package and print
# one closing line "N passed, N failed, N skipped". Exits non-zero on failure.
args <- commandArgs(trailingOnly = TRUE)
suppressPackageStartupMessages(library(testthat))
options(cli.progress_show_after = Inf) # exercise progress code, keep the log readable
passed <- failed <- skipped <- 0L
for (pkg_dir in args) {
  pkg <- basename(pkg_dir)
  res <- as.data.frame(test_dir(file.path(pkg_dir, "tests", "testthat"), package = pkg,
                                load_package = "installed", reporter = testthat::SummaryReporter$new(max_reports = Inf),
                                stop_on_failure = FALSE))
  passed <- passed + sum(res$passed)
  failed <- failed + sum(res$failed) + sum(res$error)
  skipped <- skipped + sum(res$skipped)
}
cat(sprintf("%d passed, %d failed, %d skipped\n", passed, failed, skipped))
quit(status = if (failed > 0) 1L else 0L)
