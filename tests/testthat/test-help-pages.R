# Every help page is whole for a user of the installed packages (review):
# a file of the source repository (docs/, core/, bench/, tools/, a core
# header fm_*.h) is named only as such ("in the source repository"), the
# GGUF specification by its URL, and ?fm_error states every error class's
# meaning instead of pointing to a header.
help_text <- function(pkg) {
  db <- tools::Rd_db(pkg)
  vapply(db, function(rd) {
    f <- tempfile(fileext = ".txt")
    on.exit(unlink(f))
    tools::Rd2txt(rd, out = f, options = list(underline_titles = FALSE))
    paste(readLines(f, warn = FALSE), collapse = " ")
  }, "")
}

for (pkg in stack_packages()) {
  test_that(paste("the help pages of", pkg, "cite no uninstalled file as if it were there"), {
    pages <- help_text(pkg)
    bad <- unlist(lapply(names(pages), function(topic) {
      text <- gsub("\\s+", " ", pages[[topic]])
      at <- gregexpr("(docs|core|bench|tools)/[A-Za-z0-9_./*-]+|fm_[a-z0-9_]+\\.h", text)[[1]]
      if (at[1] < 0) return(character())
      hits <- regmatches(text, list(at))[[1]]
      around <- substring(text, pmax(1, at - 60), at + attr(at, "match.length") + 60)
      ok <- grepl("source repository", around) | grepl("ggml-org/ggml", around)
      sprintf("%s: %s", topic, hits[!ok])
    }))
    expect_identical(bad, character(0))
  })
}

test_that("?fm_error gives every error class a meaning", {
  text <- help_text("Rfmalloc")[["fm_error.Rd"]]
  for (cls in c("enomem", "eio", "eformat", "emismatch", "earg", "enospc", "ebusy", "eclosed",
                "eunsupported", "edegenerate", "einternal", "ecancelled"))
    expect_match(text, paste0("fm_error_", cls), fixed = TRUE)
  expect_match(text, "degenerate", fixed = TRUE)
  expect_match(text, "a bug", fixed = TRUE)
  expect_no_match(text, "fm_base.h", fixed = TRUE)
})
