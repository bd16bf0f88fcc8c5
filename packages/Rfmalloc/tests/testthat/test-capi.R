test_that("another package's C code reads haplotype rows through Rfmalloc.h", {
  inc <- system.file("include", package = "Rfmalloc")
  skip_if(!nzchar(inc), "Rfmalloc headers are not installed")
  d <- tempfile("capi")
  dir.create(d)
  src <- file.path(d, "hap_reader.c")
  writeLines(c(
    "#include <Rfmalloc.h>",
    "/* allele of haplotype h at locus l (both 0-based) for every (l, h) pair */",
    "SEXP read_alleles(SEXP storage, SEXP n_haps, SEXP loci, SEXP haps) {",
    "  int dtype = 0; double n_bytes = 0;",
    "  const void *data = Rfmalloc_vec_ptr(storage, &dtype, &n_bytes);",
    "  if (!data) Rf_error(\"not a mapped vector\");",
    "  R_xlen_t n = XLENGTH(loci);",
    "  SEXP out = PROTECT(Rf_allocVector(INTSXP, n));",
    "  for (R_xlen_t i = 0; i < n; i++) {",
    "    const unsigned long long *row = Rfmalloc_hap1_row(data, Rf_asReal(n_haps), INTEGER(loci)[i]);",
    "    int h = INTEGER(haps)[i];",
    "    INTEGER(out)[i] = (int)((row[h / 64] >> (h % 64)) & 1ULL);",
    "  }",
    "  UNPROTECT(1);",
    "  return out;",
    "}"), src)
  r <- file.path(R.home("bin"), "R")
  log <- suppressWarnings(system2(r, c("CMD", "SHLIB", shQuote(src)), stdout = TRUE, stderr = TRUE,
                                  env = paste0("PKG_CPPFLAGS=-I", shQuote(inc))))
  so <- sub("\\.c$", .Platform$dynlib.ext, src)
  skip_if(!file.exists(so), paste("cannot compile C code here:", paste(log, collapse = " ")))
  dll <- dyn.load(so)
  on.exit(dyn.unload(so), add = TRUE)

  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
  on.exit(cleanup_fmalloc(rt), add = TRUE)
  set.seed(8)
  h <- matrix(sample(0:1, 9 * 700, replace = TRUE), 9, 700)
  H <- fmalloc_haplotypes(h, rt)
  loci <- rep(0:8, each = 700)
  haps <- rep(0:699, times = 9)
  got <- .Call(dll$read_alleles, H$storage, 700, as.integer(loci), as.integer(haps))
  expect_identical(got, h[cbind(loci + 1, haps + 1)])
})
