# A .bed truncated by another process while a product reads its mapping:
# the SIGBUS of the read becomes fm_error_eio naming the file (core
# fm_fault.h), instead of killing R, and R keeps working.

sigbus_bed <- function(dir, n, m) {
  prefix <- file.path(dir, "big")
  set.seed(11)
  body <- as.raw(sample.int(256L, n / 4 * m, replace = TRUE) - 1L)
  writeBin(c(as.raw(c(0x6c, 0x1b, 0x01)), body), paste0(prefix, ".bed"))
  writeLines(sprintf("f%d s%d 0 0 1 -9", seq_len(n), seq_len(n)), paste0(prefix, ".fam"))
  writeLines(sprintf("1 rs%d 0 %d A G", seq_len(m), seq_len(m) * 100), paste0(prefix, ".bim"))
  paste0(prefix, ".bed")
}

# Products in a loop while a background shell truncates the file after
# `delay` seconds: "eio" (the cut hit a product: the condition is returned),
# "between" (it fell between two products: the next one's check saw it),
# "none" (no cut within the time).
product_until_cut <- function(bed, backend, delay) {
  G <- suppressMessages(fmalloc_standardize(fmalloc_bed_open(bed, variants = FALSE)))
  b <- matrix(1, ncol(G), 2)
  system2("sh", c("-c", shQuote(sprintf("sleep %.2f; truncate -s 4096 '%s'", delay, bed))),
          wait = FALSE)
  t0 <- Sys.time()
  tryCatch({
    while (difftime(Sys.time(), t0, units = "secs") < delay + 20) {
      fmalloc_with_backend(backend, G %*% b)
    }
    "none"
  }, fm_error_eio = function(e) e, fm_error_eformat = function(e) "between")
}

test_that("a .bed truncated from another process during a product is fm_error_eio naming it; R goes on", {
  skip_if_not(Sys.info()[["sysname"]] == "Linux", "SIGBUS on truncated mappings: Linux")
  skip_if(!nzchar(Sys.which("truncate")) || !nzchar(Sys.which("sh")), "needs sh and truncate")
  dir <- tempfile("sigbus_")
  dir.create(dir)
  on.exit(unlink(dir, recursive = TRUE), add = TRUE)
  old <- fmalloc_panel_budget(256 * 1024) # many small panels: a product takes a while
  on.exit(fmalloc_panel_budget(old), add = TRUE)
  for (backend in c("fused", "reference")) {
    got <- NULL
    for (attempt in 1:6) { # timing: the cut may fall between two products
      bed <- sigbus_bed(dir, 2000L, 8000L) # 4 MB
      got <- product_until_cut(bed, backend, delay = 0.3 + 0.2 * attempt)
      if (inherits(got, "fm_error_eio")) break
    }
    expect_s3_class(got, "fm_error_eio")
    expect_match(conditionMessage(got), "big.bed", fixed = TRUE)
    expect_match(conditionMessage(got), "SIGBUS.*truncated")
    gc() # the views of the cut file go; their mappings with them
  }
  # R keeps working: another file, another product, checked against R's own.
  dir2 <- file.path(dir, "again")
  dir.create(dir2)
  G <- suppressMessages(fmalloc_standardize(fmalloc_bed_open(sigbus_bed(dir2, 40L, 30L),
                                                              variants = FALSE)))
  b <- matrix(rnorm(60), 30, 2)
  expect_equal(unname(G %*% b), unname(as.matrix(G) %*% b), tolerance = 1e-10)
  expect_equal(sum(seq_len(10)), 55L)
})
