# plink2 runs of the tests (fixture_path() and skip_if_no_plink2() are in
# helper-shared.R, from Rfmalloc's inst/testhelpers/fixtures.R).
# Run plink2 quietly in a temporary folder; returns the output prefix.
run_plink2 <- function(args) {
  out <- file.path(tempfile("plink2_"), "out")
  dir.create(dirname(out))
  log <- system2("plink2", c(args, "--threads", "2", "--out", out), stdout = TRUE, stderr = TRUE)
  status <- attr(log, "status")
  if (!is.null(status) && status != 0) stop("plink2 failed:\n", paste(log, collapse = "\n"))
  out
}

# A small .bed/.bim/.fam written byte by byte, for bad-input tests.
write_plink <- function(prefix, n, m, bed_bytes) {
  writeBin(as.raw(bed_bytes), paste0(prefix, ".bed"))
  writeLines(sprintf("f%d s%d 0 0 1 -9", seq_len(n), seq_len(n)), paste0(prefix, ".fam"))
  writeLines(sprintf("1 rs%d 0 %d A G", seq_len(m), seq_len(m) * 100), paste0(prefix, ".bim"))
  prefix
}
