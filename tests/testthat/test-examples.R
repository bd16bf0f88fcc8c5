# Every package's help-page examples run (issue 14, defect 2): the
# \examples of each installed package, extracted with tools::Rd2ex() as
# R CMD check does, run in one fresh session per package.
for (pkg in stack_packages()) {
  test_that(paste("every example of", pkg, "runs"), {
    db <- tools::Rd_db(pkg)
    code <- unlist(lapply(names(db), function(topic) {
      f <- tempfile(fileext = ".R")
      tools::Rd2ex(db[[topic]], f, commentDontrun = TRUE)
      if (file.exists(f)) c(sprintf("cat('## %s\\n')", topic), readLines(f)) else character()
    }))
    expect_gt(length(code), 0)
    # an example that does not run is not checked: none is hidden in \dontrun
    hidden <- names(db)[vapply(db, function(rd) any(grepl("\\dontrun", as.character(rd), fixed = TRUE)), NA)]
    expect_identical(hidden, character(0), label = paste(pkg, "pages with \\dontrun examples"))
    out <- run_script(c(sprintf("suppressPackageStartupMessages(library(%s))", pkg), code,
                        sprintf('cat("%s EXAMPLES OK\\n")', pkg)))
    expect_script_ran(out, paste(pkg, "EXAMPLES OK"), paste(pkg, "examples"))
  })
}
