# The documentation site (issue 14): tools/site.sh, the build behind
# `make site`, writes the site into a temporary folder; its pages are checked
# as HTML, and as headless Chromium screenshots (home page, one reference
# page, one article), kept in build/site-shots/ for a person to look at.
chromium <- "/usr/bin/chromium"
site_pkgs <- stack_packages()
repo_root <- normalizePath(file.path(testthat::test_path(), "..", ".."))

skip_without_pkgdown <- function() {
  if (!requireNamespace("pkgdown", quietly = TRUE))
    skip("pkgdown is absent (Debian package r-cran-pkgdown; `make site` installs it)")
}
skip_without_chromium <- function() {
  skip_without_pkgdown()
  if (!file.exists(chromium))
    skip(paste0("headless Chromium is absent (", chromium, ", Debian package chromium)"))
}

# One build for every case of this file, on first use.
site_dir <- local({
  dir <- NULL
  function() {
    if (is.null(dir)) {
      d <- tempfile("site-")
      out <- suppressWarnings(system2("bash", c(shQuote(file.path(repo_root, "tools", "site.sh")), shQuote(d)),
                                      stdout = TRUE, stderr = TRUE))
      if (!is.null(attr(out, "status"))) {
        cat(utils::tail(out, 40), sep = "\n")
        stop("tools/site.sh failed")
      }
      dir <<- d
    }
    dir
  }
})

# Width and height from the PNG signature and IHDR chunk (bytes 17-24).
png_size <- function(file) {
  b <- readBin(file, "raw", 24)
  stopifnot(identical(b[1:8], as.raw(c(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a))),
            identical(rawToChar(b[13:16]), "IHDR"))
  be32 <- function(x) sum(as.integer(x) * 256^(3:0))
  c(width = be32(b[17:20]), height = be32(b[21:24]))
}

shot <- function(page, name, width = 1280, height = 1000) {
  dir.create(shots <- file.path(repo_root, "build", "site-shots"), recursive = TRUE, showWarnings = FALSE)
  png <- file.path(shots, paste0(name, ".png"))
  unlink(png)
  out <- suppressWarnings(system2(chromium, c("--headless", "--no-sandbox", "--disable-gpu",
                                              paste0("--user-data-dir=", tempfile("chromium-")),
                                              paste0("--screenshot=", png),
                                              sprintf("--window-size=%d,%d", width, height),
                                              paste0("file://", page)),
                                  stdout = TRUE, stderr = TRUE, timeout = 120))
  if (!file.exists(png)) cat(utils::tail(out, 20), sep = "\n")
  png
}

expect_screenshot <- function(png, width = 1280, height = 1000) {
  expect_true(file.exists(png), label = paste(basename(png), "was written"))
  expect_equal(png_size(png), c(width = width, height = height))
  if (!requireNamespace("png", quietly = TRUE)) {
    skip("the png package is absent (Debian r-cran-png): pixel content of the screenshots not checked")
  }
  px <- png::readPNG(png)
  grey <- (px[, , 1] + px[, , 2] + px[, , 3]) / 3
  # a blank page is one colour: variance 0 and a handful of distinct values
  expect_gt(stats::var(as.vector(grey)), 0.001)
  expect_gt(length(unique(round(as.vector(grey), 2))), 20)
}

page_text <- function(file) paste(readLines(file, warn = FALSE), collapse = "\n")
# expect_match() on a whole page prints the page when it fails; this names the pattern only
expect_has <- function(html, pattern, ...) expect_true(grepl(pattern, html, ...), label = paste("page has", pattern))

test_that("the site links every package, and every relative link of every page names a file", {
  skip_without_pkgdown()
  d <- site_dir()
  home <- page_text(file.path(d, "index.html"))
  # the README, under its own title
  title <- sub("^# ", "", readLines(file.path(repo_root, "README.md"), n = 1))
  expect_has(home, paste0(">", title, "</h1>"), fixed = TRUE)
  for (p in site_pkgs) {
    expect_has(home, sprintf('href="%s/reference/index.html"', p), fixed = TRUE)
    expect_true(file.exists(file.path(d, p, "reference", "index.html")), label = p)
    # each package site links back to the home page
    expect_has(page_text(file.path(d, p, "index.html")), 'href="../index.html">All packages', fixed = TRUE)
  }
  pages <- list.files(d, "\\.html$", recursive = TRUE)
  expect_gt(length(pages), 40)
  broken <- unlist(lapply(pages, function(f) {
    html <- page_text(file.path(d, f))
    h <- regmatches(html, gregexpr('(href|src)="[^"]*"', html))[[1]]
    h <- sub('^(href|src)="([^"]*)"$', "\\2", h)
    h <- sub("[#?].*$", "", h[!grepl("^(#|[a-z]+:)", h)])
    h <- unique(h[nzchar(h)])
    h <- h[!file.exists(file.path(d, dirname(f), h))]
    if (length(h)) paste(f, "->", h)
  }))
  expect_identical(broken, NULL)
  # nothing was written into the package sources
  expect_false(any(dir.exists(file.path(repo_root, "packages", site_pkgs, "docs"))))
})

test_that("a reference page has its title, its Usage and its examples' output; no example printed an error", {
  skip_without_pkgdown()
  d <- site_dir()
  html <- page_text(file.path(d, "Rfmalloc", "reference", "fmalloc_pca.html"))
  expect_has(html, "<title>Randomized PCA[^<]*fmalloc_pca", perl = TRUE)
  expect_has(html, '(?s)<h2 id="ref-usage">Usage.*?<code><span><span class="fu">fmalloc_pca</span><span class="op">\\(', perl = TRUE)
  expect_has(html, "(?s)<h2 id=\"ref-examples\">Examples.*<span class=[\"']r-out", perl = TRUE)
  expect_has(html, "../deps/bootstrap-5[^\"]*/bootstrap.min.css", perl = TRUE)
  refs <- list.files(file.path(d, site_pkgs, "reference"), "\\.html$", full.names = TRUE)
  err <- refs[vapply(refs, function(f) grepl("class=[\"']r-err", page_text(f)), logical(1))]
  expect_identical(basename(err), character())
})

# Every vignette of every package, as (package, path of its article in the site, title).
site_articles <- function() {
  do.call(rbind, lapply(site_pkgs, function(p) {
    v <- pkgdown::as_pkgdown(file.path(repo_root, "packages", p))$vignettes
    data.frame(pkg = rep(p, nrow(v)), file = file.path(p, v$file_out), title = v$title)
  }))
}

test_that("every vignette is an article with its title, linked from the home page", {
  skip_without_pkgdown()
  arts <- site_articles()
  if (!nrow(arts)) skip("no package has a vignette yet: no article to check")
  d <- site_dir()
  home <- page_text(file.path(d, "index.html"))
  for (i in seq_len(nrow(arts))) {
    html <- page_text(file.path(d, arts$file[i]))
    title <- gsub(">", "&gt;", gsub("<", "&lt;", gsub("&", "&amp;", arts$title[i], fixed = TRUE), fixed = TRUE), fixed = TRUE)
    expect_has(html, paste0("<h1>", title, "</h1>"), fixed = TRUE)
    expect_has(html, "<(p|pre)[ >]", perl = TRUE)
    expect_has(home, sprintf('href="%s"', arts$file[i]), fixed = TRUE)
  }
})

test_that("headless Chromium renders the home page and a reference page with content", {
  skip_without_chromium()
  d <- site_dir()
  expect_screenshot(shot(file.path(d, "index.html"), "home"))
  expect_screenshot(shot(file.path(d, "Rfmalloc", "reference", "fmalloc_pca.html"), "reference-fmalloc_pca"))
})

test_that("headless Chromium renders an article with content", {
  skip_without_chromium()
  arts <- site_articles()
  if (!nrow(arts)) skip("no package has a vignette yet: no article page to render")
  d <- site_dir()
  name <- paste0("article-", arts$pkg[1], "-", sub("\\.html$", "", basename(arts$file[1])))
  expect_screenshot(shot(file.path(d, arts$file[1]), name))
})
