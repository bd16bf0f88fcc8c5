# The shared fixtures (../shared/fixtures beside the project root, or
# $RFMALLOC_FIXTURES); cases that need one skip with its name when absent.
fixture <- function(...) {
  root <- Sys.getenv("RFMALLOC_FIXTURES", "")
  if (!nzchar(root)) root <- file.path(testthat::test_path(), "..", "..", "..", "shared", "fixtures")
  p <- file.path(root, ...)
  if (!file.exists(p)) testthat::skip(paste("fixture not found:", file.path(...)))
  normalizePath(p)
}
