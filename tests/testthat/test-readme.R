# The README's R code runs as written (issue 14, defect 2): every ```r block,
# in order, in one fresh session started in the repository root, where the
# blocks read the real data under ../shared/fixtures.
test_that("every R block of the README runs verbatim, in order, from the repository root", {
  root <- normalizePath(file.path(testthat::test_path(), "..", ".."))
  if (!dir.exists(file.path(root, "..", "shared", "fixtures")))
    skip("../shared/fixtures is absent beside the repository: the README's examples read it")
  readme <- readLines(file.path(root, "README.md"))
  starts <- grep("^```r$", readme)
  ends <- grep("^```$", readme)
  expect_gte(length(starts), 4)
  code <- unlist(lapply(starts, function(s) readme[(s + 1):(ends[ends > s][1] - 1)]))
  out <- run_script(c(code, 'cat("README OK\\n")'), root)
  expect_script_ran(out, "README OK", "the README's R blocks")
})
