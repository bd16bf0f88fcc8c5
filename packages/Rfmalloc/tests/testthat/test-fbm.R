# bigstatsr / bigsnpr interop: fmalloc_as_FBM(), fmalloc_as_bigSNP(),
# fmalloc_from_FBM() (R/fbm.R).

skip_if_no_bigstatsr <- function() {
  if (!requireNamespace("bigstatsr", quietly = TRUE))
    skip("bigstatsr is not installed (CRAN package; install.packages(\"bigstatsr\"))")
}
skip_if_no_bigsnpr <- function() {
  skip_if_no_bigstatsr()
  if (!requireNamespace("bigsnpr", quietly = TRUE))
    skip("bigsnpr is not installed (CRAN package; install.packages(\"bigsnpr\"))")
}

# A samples x variants matrix of 0, 1, 2 and NA (about 10% missing).
gen_calls <- function(n, m) {
  g <- matrix(sample(0:2, n * m, TRUE), n, m)
  g[sample(length(g), length(g) %/% 10)] <- NA
  g
}

test_that("a mapped double matrix goes to an FBM and back exactly, NA and NaN kept, in blocks", {
  skip_if_no_bigstatsr()
  rt <- fm_runtime()
  X <- create_fmalloc_matrix("double", 13, 11, rt)
  X[] <- c(rnorm(13 * 11 - 3), NA, NaN, -Inf)
  F <- fmalloc_as_FBM(X, backingfile = fm_tmp(""), block_cols = 4)
  expect_s4_class(F, "FBM")
  expect_identical(F$type_chr, "double")
  expect_identical(F[], X[, ])
  Y <- fmalloc_from_FBM(F, rt, block_cols = 3, dimnames = list(NULL, letters[1:11]))
  expect_true(fmalloc_is_mapped(Y))
  expect_identical(unname(Y[, ]), X[, ])
  expect_identical(colnames(Y), letters[1:11])
  # an FBM of another numeric type converts to doubles
  I <- bigstatsr::FBM(3, 2, type = "integer", init = c(1:5, NA))
  expect_identical(fmalloc_from_FBM(I, rt)[, ], matrix(c(1:5, NA_real_), 3, 2))
})

test_that("hardcalls round-trip exactly through FBM.code256 (CODE_012) for every block size", {
  skip_if_no_bigstatsr()
  rt <- fm_runtime()
  for (n in c(1, 4, 5, 23)) {
    g <- gen_calls(n, 17)
    G <- fmalloc_bed(g, rt)
    for (b in c(1, 5, 17)) {
      C <- fmalloc_as_FBM(G, backingfile = fm_tmp(""), block_cols = b)
      expect_s4_class(C, "FBM.code256")
      codes <- readBin(C$bk, "raw", n * 17)           # bytes 0, 1, 2; NA is 3
      expect_identical(as.integer(codes), ifelse(is.na(c(g)), 3L, c(g)))
      expect_identical(C[, , drop = FALSE], { d <- g; storage.mode(d) <- "double"; d })
      G2 <- fmalloc_from_FBM(C, rt, block_cols = b)
      expect_identical(.codec_name(G2), "bed2")
      expect_identical(as.matrix(G2), as.matrix(G))
    }
  }
})

test_that("dosage codes (CODE_DOSAGE) become a dos8 matrix; codec = 'bed2' refuses them, naming the cell", {
  skip_if_no_bigsnpr()
  rt <- fm_runtime()
  bytes <- matrix(as.raw(c(0, 1, 2, 3, 7, 57, 107, 4)), 4, 2)   # 0, 1, 2, NA, 0, 0.5, 1, 0
  D <- bigstatsr::FBM.code256(4, 2, code = bigsnpr::CODE_DOSAGE, backingfile = fm_tmp(""))
  D[] <- bytes
  X <- fmalloc_from_FBM(D, rt)
  expect_identical(.codec_name(X), "dos8")
  expect_lte(max(abs(as.matrix(X) - D[]), na.rm = TRUE), 1 / 254)
  expect_identical(is.na(as.matrix(X)), is.na(D[]))
  expect_error(fmalloc_from_FBM(D, rt, codec = "bed2"), class = "fm_error_earg",
               regexp = "x\\[2, 2\\] decodes to 0.5")
  # CODE_IMPUTE_PRED takes only 0, 1, 2, NA: hardcalls
  P <- bigstatsr::FBM.code256(4, 2, code = bigsnpr::CODE_IMPUTE_PRED, backingfile = fm_tmp(""))
  P[] <- matrix(as.raw(c(0, 1, 2, 3, 4, 5, 6, 7)), 4, 2)
  expect_identical(as.matrix(fmalloc_from_FBM(P, rt)), P[])
})

test_that("the 1kg .bed converts to what snp_readBed() makes, byte for byte, and back; big_prodMat agrees", {
  skip_if_no_bigsnpr()
  prefix <- sub("\\.bed$", "", fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed"))
  rt <- fm_runtime(size_gb = 0.2)
  old <- fmalloc_panel_budget(); fmalloc_panel_budget(2^20)     # many blocks
  withr::defer(fmalloc_panel_budget(old))
  B <- fmalloc_bed_open(prefix)
  S <- fmalloc_as_bigSNP(B, backingfile = fm_tmp(""))
  withr::defer(unlink(S$genotypes$rds))
  ref <- bigsnpr::snp_attach(bigsnpr::snp_readBed(paste0(prefix, ".bed"), backingfile = fm_tmp("")))
  withr::defer(unlink(ref$genotypes$rds))
  expect_identical(dim(S$genotypes), dim(ref$genotypes))
  expect_identical(S$genotypes$code256, ref$genotypes$code256)
  expect_identical(readBin(S$genotypes$bk, "raw", 1e8), readBin(ref$genotypes$bk, "raw", 1e8))
  # metadata: same values (fread guesses integer parents and cM; ours keep IDs as text)
  expect_equal(S$map, ref$map)
  expect_equal(S$fam[c("family.ID", "sample.ID", "sex", "affection")],
               ref$fam[c("family.ID", "sample.ID", "sex", "affection")])
  expect_identical(bigsnpr::snp_attach(S$genotypes$rds)$genotypes[, 1:5], ref$genotypes[, 1:5])

  # back: the .rds of snp_readBed() (a bigsnpr user's file) to a hardcall matrix
  B2 <- fmalloc_from_FBM(ref$genotypes$rds, rt)
  expect_identical(.codec_name(B2), "bed2")
  expect_identical(dimnames(B2), dimnames(B))
  expect_equal(fmalloc_variants(B2), fmalloc_variants(B))
  expect_equal(fmalloc_samples(B2), fmalloc_samples(B))
  for (j in split(seq_len(ncol(B)), ceiling(seq_len(ncol(B)) / 5000)))
    expect_identical(B2[, j], B[, j])

  # a product on the converted FBM.code256 equals ours
  W <- matrix(rnorm(ncol(B) * 3), ncol(B), 3)
  XB <- B %*% W
  P <- bigstatsr::big_prodMat(S$genotypes, W)
  expect_product_equal(P, unname(XB), abs(bigstatsr::big_prodMat(S$genotypes, abs(W))), ncol(B))
})

test_that("fmalloc_as_bigSNP fills metadata a matrix does not carry", {
  skip_if_no_bigstatsr()
  rt <- fm_runtime()
  G <- fmalloc_bed(gen_calls(6, 3), rt, dimnames = list(paste0("s", 1:6), NULL))
  S <- fmalloc_as_bigSNP(G, backingfile = fm_tmp(""))
  withr::defer(unlink(S$genotypes$rds))
  expect_s3_class(S, "bigSNP")
  expect_identical(S$fam$sample.ID, paste0("s", 1:6))
  expect_identical(S$map$marker.ID, paste0("variant", 1:3))
  expect_true(file.exists(S$genotypes$rds))
  back <- fmalloc_from_FBM(S, rt)
  expect_identical(unname(as.matrix(back)), unname(as.matrix(G)))
  expect_identical(rownames(back), paste0("s", 1:6))
})

test_that("conversions refuse what they cannot carry, with the stack's error classes", {
  skip_if_no_bigstatsr()
  rt <- fm_runtime()
  G <- fmalloc_bed(gen_calls(8, 4), rt)
  Z <- suppressMessages(fmalloc_standardize(G))
  expect_error(fmalloc_as_FBM(Z), class = "fm_error_eunsupported", regexp = "transform")
  D <- fmalloc_dosage(matrix(c(0, 0.5, 1, NA), 2, 2), rt)
  expect_error(fmalloc_as_FBM(D), class = "fm_error_eunsupported", regexp = "dos8")
  # type = "double": the decoded values, transform included
  F <- fmalloc_as_FBM(Z, backingfile = fm_tmp(""), type = "double", block_cols = 3)
  expect_identical(F[], unname(as.matrix(Z)))
  expect_error(fmalloc_as_FBM(1:3), class = "fm_error_earg")
  expect_error(fmalloc_as_FBM(matrix(1:4, 2)), class = "fm_error_earg")
  expect_error(fmalloc_as_FBM(G, type = "float"), class = "fm_error_earg")
  expect_error(fmalloc_as_FBM(G, block_cols = 0), class = "fm_error_earg")
  expect_error(fmalloc_from_FBM(matrix(0, 2, 2), rt), class = "fm_error_earg")
  expect_error(fmalloc_from_FBM(bigstatsr::FBM(2, 2), rt, dimnames = list(1:3, NULL)),
               class = "fm_error_emismatch")
  expect_error(fmalloc_from_FBM(bigstatsr::FBM(2, 2), "rt"), class = "fm_error_earg")
})

test_that("without bigstatsr the functions raise fm_error_eunsupported naming it", {
  # a library holding Rfmalloc alone (and not bigstatsr/bigsnpr)
  lib <- tempfile("lib-")
  dir.create(lib)
  withr::defer(unlink(lib, recursive = TRUE))
  file.symlink(find.package("Rfmalloc"), file.path(lib, "Rfmalloc"))
  code <- c(
    "library(Rfmalloc)",
    "stopifnot(!requireNamespace('bigstatsr', quietly = TRUE))",
    "f <- function(e) cat(class(e)[1], conditionMessage(e), '\\n')",
    "tryCatch(fmalloc_as_FBM(matrix(0, 2, 2)), error = f)",
    "tryCatch(fmalloc_as_bigSNP(1), error = f)",
    "tryCatch(fmalloc_from_FBM('x.rds'), error = f)",
    "tryCatch(fmalloc_from_FBM(1), error = f)")
  script <- tempfile(fileext = ".R")
  writeLines(code, script)
  withr::defer(unlink(script))
  out <- system2(file.path(R.home("bin"), "Rscript"), c("--vanilla", script), stdout = TRUE, stderr = TRUE,
                 env = c(paste0("R_LIBS=", lib), "R_LIBS_USER=NULL"))
  expect_null(attr(out, "status"), info = paste(out, collapse = "\n"))
  out <- grep("^fm_error", out, value = TRUE)
  expect_length(out, 4)
  expect_true(all(startsWith(out, "fm_error_eunsupported")))
  expect_match(out[1], "fmalloc_as_FBM() needs the package 'bigstatsr'", fixed = TRUE)
  expect_match(out[3], "needs the package 'bigsnpr'", fixed = TRUE)
  expect_match(out[4], "needs the package 'bigstatsr'", fixed = TRUE)
})
