# Fixtures live in ../shared/fixtures (env RFMALLOC_FIXTURES, set by the
# Makefile); tests that need them skip, saying why, when they are absent.
kg <- function(...) fixture_path("genotypes", "1kg_phase3_subset", ...)

new_runtime <- function(env = parent.frame(), size_gb = 1) {
  rt <- Rfmalloc::open_fmalloc(tempfile(fileext = ".fm"), size_gb = size_gb, mode = "scratch")
  withr_defer <- function() Rfmalloc::cleanup_fmalloc(rt)
  do.call(on.exit, list(quote(withr_defer()), add = TRUE), envir = env)
  assign("withr_defer", withr_defer, envir = env)
  rt
}

# plink2's ALT-count .traw of chr22 as samples x variants (cached).
traw_cache <- new.env()
traw_chr22 <- function() {
  if (is.null(traw_cache$G)) {
    tr <- read_traw(kg("text", "1kg_bi_chr22.traw"))  # helper-oracles.R
    traw_cache$G <- tr$G
    traw_cache$counted <- tr$meta$COUNTED
  }
  traw_cache$G
}

# Every column of X whose ID the .traw lists equals the .traw's column;
# returns how many columns matched.
expect_matches_traw <- function(X, n_expected) {
  G <- traw_chr22()
  M <- Rfmalloc::as.matrix(X)
  k <- colnames(M) %in% colnames(G)
  testthat::expect_equal(sum(k), n_expected)
  testthat::expect_equal(rownames(M), rownames(G))
  testthat::expect_identical(M[, k, drop = FALSE], G[, colnames(M)[k], drop = FALSE])
  invisible(sum(k))
}
