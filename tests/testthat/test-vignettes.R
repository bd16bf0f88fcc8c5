# Every package's vignette renders as R CMD build renders it (knitr +
# rmarkdown), on the fixtures when they are present and on its labelled
# generated data when they are not (issue 14, docs).
vignettes <- Sys.glob(file.path(test_path(), "..", "..", "packages", "*", "vignettes", "*.Rmd"))

render_vignette <- function(rmd, fixtures) {
  out_dir <- tempfile("vignette")
  dir.create(out_dir)
  # a copy, so that knitr's figures and caches stay out of the repository
  file.copy(rmd, out_dir)
  code <- c(sprintf('Sys.setenv(RFMALLOC_FIXTURES = "%s")', fixtures),
            sprintf('html <- rmarkdown::render("%s", quiet = TRUE)', file.path(out_dir, basename(rmd))),
            'cat("RENDERED", html, "\\n")')
  out <- run_script(code, dir = out_dir)
  html <- file.path(out_dir, sub("\\.Rmd$", ".html", basename(rmd)))
  list(out = out, text = if (file.exists(html)) paste(readLines(html, warn = FALSE), collapse = "\n"))
}

test_that("every package has its vignette", {
  expect_setequal(basename(vignettes), c("out-of-core-arrays.Rmd", "genotypes-to-pca.Rmd",
                                         "language-models.Rmd", "gwas-to-pgs-and-coloc.Rmd"))
})

for (rmd in vignettes) {
  test_that(paste("the vignette", basename(rmd), "renders on the fixtures and on generated data"), {
    skip_if_not(rmarkdown::pandoc_available(), "pandoc is not installed")
    title <- sub('^title: *"(.*)"$', "\\1", grep("^title:", readLines(rmd), value = TRUE)[1])
    fx <- Sys.getenv("RFMALLOC_FIXTURES", "")
    for (mode in c("fixtures", "generated")) {
      if (mode == "fixtures" && !dir.exists(fx)) next
      r <- render_vignette(rmd, if (mode == "fixtures") normalizePath(fx) else tempfile("no-fixtures"))
      ok <- identical(attr(r$out, "status"), 0L) && !is.null(r$text)
      if (!ok) cat(utils::tail(r$out, 40), sep = "\n")
      expect_true(ok, label = paste(basename(rmd), mode))
      expect_match(r$text, title, fixed = TRUE)
      expect_false(grepl("## Error", r$text, fixed = TRUE))
      # the note that labels generated data, shown exactly when it is used
      expect_identical(grepl("fixtures were not found", r$text, ignore.case = TRUE), mode == "generated",
                       label = paste(basename(rmd), mode, "note"))
    }
  })
}
