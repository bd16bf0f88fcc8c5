# Fixtures live in ../shared/fixtures (env RFMALLOC_FIXTURES, set by the
# Makefile); tests that need them skip, saying why, when they are absent.
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

quant_zoo <- function() fixture_path("gguf", "derived", "quant-zoo-stories260K.gguf")
