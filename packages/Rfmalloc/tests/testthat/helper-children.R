# The harnesses for forked children and child Rscript processes, shared with
# the other packages' suites: installed with Rfmalloc (inst/testhelpers).
local({
  path <- system.file("testhelpers", "children.R", package = "Rfmalloc")
  if (!nzchar(path)) stop("Rfmalloc's testhelpers/children.R is not installed: reinstall Rfmalloc")
  sys.source(path, envir = parent.env(environment()))
})
