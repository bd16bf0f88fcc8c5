# t() of a codec matrix is a transposed view that decodes nothing, and
# rowSums()/rowMeans() stream (issue 14, interop): every method against
# base R on the decoded matrix, with missing values, a selection and a
# standardized matrix.
test_that("t(X), rowSums and rowMeans of codec matrices equal base R on the decoded matrix", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(41)
  g <- matrix(sample(c(0:2, NA), 57 * 23, replace = TRUE, prob = c(.4, .3, .2, .1)), 57, 23,
              dimnames = list(paste0("s", 1:57), paste0("v", 1:23)))
  g[5, ] <- NA # a row with nothing observed
  X <- fmalloc_bed(g, rt)
  S <- suppressMessages(fmalloc_standardize(fmalloc_select(X, 3:20), center = TRUE, scale = "binomial",
                                            impute = TRUE))
  for (M in list(X, fmalloc_dosage(g, rt), fmalloc_select(X, c(4, 2, 9)), S)) {
    d <- as.matrix(M)
    expect_equal(rowSums(M), rowSums(d), tolerance = 1e-12)
    expect_equal(rowSums(M, na.rm = TRUE), rowSums(d, na.rm = TRUE), tolerance = 1e-12)
    expect_equal(rowMeans(M), rowMeans(d), tolerance = 1e-12)
    expect_equal(rowMeans(M, na.rm = TRUE), rowMeans(d, na.rm = TRUE), tolerance = 1e-12)
    tM <- t(M)
    expect_s4_class(tM, "fmalloc_transposed")
    expect_identical(dim(tM), rev(dim(M)))
    expect_identical(dimnames(tM), dimnames(t(d)))
    expect_identical(t(tM), M)
    expect_identical(as.matrix(tM), t(d))
    expect_identical(tM[2:3, c(5, 1)], t(d)[2:3, c(5, 1)])
    expect_identical(tM[, 4], t(d)[, 4])
    expect_identical(tM[3, , drop = FALSE], t(d)[3, , drop = FALSE])
    b <- matrix(rnorm(nrow(M) * 2), nrow(M), 2)
    c2 <- matrix(rnorm(ncol(M) * 2), 2, ncol(M))
    expect_equal(tM %*% b, t(d) %*% b, tolerance = 1e-12)
    expect_equal(c2 %*% tM, c2 %*% t(d), tolerance = 1e-12)
    expect_equal(crossprod(tM), crossprod(t(d)), tolerance = 1e-12)
    expect_equal(tcrossprod(tM), tcrossprod(t(d)), tolerance = 1e-12)
    expect_equal(crossprod(tM, t(c2)), crossprod(t(d), t(c2)), tolerance = 1e-12)
    expect_equal(tcrossprod(tM, t(b)), tcrossprod(t(d), t(b)), tolerance = 1e-12)
    expect_equal(crossprod(t(c2), tM), crossprod(t(c2), t(d)), tolerance = 1e-12)
    expect_equal(tcrossprod(t(b), tM), tcrossprod(t(b), t(d)), tolerance = 1e-12)
    expect_equal(colSums(tM, na.rm = TRUE), colSums(t(d), na.rm = TRUE), tolerance = 1e-12)
    expect_equal(rowMeans(tM, na.rm = TRUE), rowMeans(t(d), na.rm = TRUE), tolerance = 1e-12)
    out <- capture.output(print(tM))
    expect_match(out[1], sprintf("^transposed view \\(%d x %d\\) of <fmalloc .* matrix: %d x %d, ", ncol(M), nrow(M),
                                 nrow(M), ncol(M)))
    # the corner printed is t(X)'s (was X's): its first row is X's first column
    expect_equal(suppressWarnings(as.numeric(strsplit(trimws(sub("^\\S+", "", out[3])), " +")[[1]])),
                 unname(d[seq_len(min(6, nrow(M))), 1]), tolerance = 1e-6)
  }
  expect_error(t(X)[3], class = "fm_error_eunsupported")
  expect_error(rowSums(X, dims = 2), class = "fm_error_earg")
})

test_that("fmalloc_variants and fmalloc_samples read every object that carries metadata", {
  G <- fmalloc_bed_open(sub("\\.bed$", "", fixture_path("genotypes", "ceu_exon", "ceu_exon_bi.bed")))
  expect_identical(fmalloc_variants(t(G)), fmalloc_variants(G)) # the rows of t(G)
  expect_identical(fmalloc_samples(t(G)), fmalloc_samples(G))
  expect_identical(nrow(fmalloc_variants(t(G))), nrow(t(G)))
  D <- G[, 1:3]
  attr(D, "variants") <- fmalloc_variants(G)[1:3, ]
  expect_identical(fmalloc_variants(D), fmalloc_variants(G)[1:3, ])
  expect_null(fmalloc_samples(D))
  H <- structure(list(variants = data.frame(id = "rs1"), samples = data.frame(iid = "s1")),
                 class = "fmalloc_haplotypes")
  expect_identical(fmalloc_variants(H), data.frame(id = "rs1"))
  expect_identical(fmalloc_samples(H), data.frame(iid = "s1"))
  for (bad in list(1:3, NULL, data.frame(a = 1))) {
    expect_error(fmalloc_variants(bad), "x must be a genotype matrix", class = "fm_error_earg")
    expect_error(fmalloc_samples(bad), "x must be a genotype matrix", class = "fm_error_earg")
  }
})

test_that("what takes a samples x variants matrix refuses t(X) with a classed error", {
  X <- fmalloc_bed(matrix(c(0, 1, 2, 1, 2, 0), 3))
  expect_error(fmalloc_allele_freq(t(X)), class = "fm_error_earg")
  expect_error(summary(t(X)), class = "fm_error_eunsupported")
  expect_error(fmalloc_pca(t(X), k = 1), class = "fm_error_earg")
  expect_error(t(X)[cbind(1, 1)], class = "fm_error_eunsupported")
})
