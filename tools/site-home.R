# The monorepo's home page of the documentation site (tools/site.sh): the
# top README.md through pandoc, under a list that links each package's
# pkgdown site, reference index and articles. Run after the package sites are
# built: every link it writes is checked to name a file of the site.
# Usage: Rscript tools/site-home.R <repository root> <site folder>
args <- commandArgs(trailingOnly = TRUE)
root <- normalizePath(args[1])
dest <- normalizePath(args[2])
pkgs <- readLines(file.path(root, "tools", "packages"))

esc <- function(x) {
  x <- gsub("&", "&amp;", x, fixed = TRUE)
  x <- gsub("<", "&lt;", x, fixed = TRUE)
  gsub(">", "&gt;", x, fixed = TRUE)
}
link <- function(href, text) {
  if (!file.exists(file.path(dest, href)))
    stop("site: the home page would link ", href, ", which the build did not write", call. = FALSE)
  sprintf('<a href="%s">%s</a>', href, esc(text))
}

items <- vapply(pkgs, function(p) {
  src <- file.path(root, "packages", p)
  title <- read.dcf(file.path(src, "DESCRIPTION"), fields = "Title")[1, 1]
  vig <- pkgdown::as_pkgdown(src)$vignettes
  articles <- if (nrow(vig)) {
    paste0("; articles: ", paste(mapply(link, file.path(p, vig$file_out), vig$title), collapse = ", "))
  } else ""
  sprintf("<li>%s: %s<br>%s%s</li>", link(file.path(p, "index.html"), p), esc(gsub("\\s+", " ", title)),
          link(file.path(p, "reference", "index.html"), "reference"), articles)
}, character(1))

nav <- tempfile(fileext = ".html")
writeLines(c('<nav class="packages">', "<h2>Package documentation</h2>", "<ul>", items, "</ul>", "</nav>"), nav)
css <- tempfile(fileext = ".html")
writeLines(c("<style>",
             "body { max-width: 60em; }",
             "nav.packages { border: 1px solid #ccc; border-radius: 6px; padding: 0.5em 1.2em; background: #f6f8fa; }",
             "nav.packages h2 { margin-top: 0.4em; }",
             "nav.packages li { margin-bottom: 0.5em; }",
             "div.sourceCode, pre { background: #f6f8fa; border-radius: 4px; }", "pre { padding: 0.6em; overflow-x: auto; }",
             "table { border-collapse: collapse; } th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; }",
             "</style>"), css)
out <- file.path(dest, "index.html")
rmarkdown::pandoc_convert(file.path(root, "README.md"), to = "html5", from = "gfm", output = out,
                          options = c("--standalone", "--wrap=none", "--metadata", "pagetitle=Rfmalloc: documentation",
                                      "--include-in-header", css, "--include-before-body", nav))
cat("site: home page", out, "\n")
