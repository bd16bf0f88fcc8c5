# The test helpers shared by the stack's suites (fixture_path(),
# skip_if_no_plink2(), with_every_tick(), collect_updates(), local_daemons()):
# installed with Rfmalloc (inst/testhelpers/fixtures.R).
local({
  path <- system.file("testhelpers", "fixtures.R", package = "Rfmalloc")
  if (!nzchar(path)) stop("Rfmalloc's testhelpers/fixtures.R is not installed: reinstall Rfmalloc")
  sys.source(path, envir = parent.env(environment()))
})
