test_that("column means and variances match base R on dense data to 1e-12", {
  set.seed(10)
  x <- matrix(rnorm(500 * 40, mean = 1e6, sd = 3), 500, 40)
  x[sample(length(x), 200)] <- NA
  colnames(x) <- paste0("c", 1:40)
  expect_equal(fmalloc_colMeans(x), colMeans(x, na.rm = TRUE), tolerance = 1e-12)
  expect_equal(fmalloc_colVars(x), apply(x, 2, var, na.rm = TRUE), tolerance = 1e-12)
  full <- matrix(rnorm(300 * 7), 300, 7)
  expect_equal(fmalloc_colVars(full, na.rm = FALSE), apply(full, 2, var), tolerance = 1e-12)
  expect_true(all(is.na(fmalloc_colVars(x, na.rm = FALSE)[colSums(is.na(x)) > 0])))

  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  X <- create_fmalloc_matrix("double", 500, 40, runtime = rt)
  X[] <- x
  expect_equal(unname(fmalloc_colVars(X)), unname(apply(x, 2, var, na.rm = TRUE)), tolerance = 1e-12)
  I <- create_fmalloc_matrix("integer", 50, 3, runtime = rt)
  iv <- matrix(sample(c(1:9, NA), 150, replace = TRUE), 50, 3)
  I[] <- iv
  expect_equal(fmalloc_colMeans(I), colMeans(iv, na.rm = TRUE), tolerance = 1e-12)
})

test_that("a column holding NA, 1, 2 has mean 1.5 and variance 0.5 in every storage type", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  v <- matrix(c(NA, 1, 2), 3, 1)
  X <- create_fmalloc_matrix("double", 3, 1, runtime = rt)
  X[] <- v
  stores <- list(plain = v, mapped = X, integer = matrix(c(NA, 1L, 2L), 3, 1),
                 dosage = fmalloc_dosage(v, rt), bed = fmalloc_bed(v, rt))
  for (nm in names(stores)) {
    expect_equal(unname(fmalloc_colMeans(stores[[nm]])), 1.5, info = nm)
    expect_equal(unname(fmalloc_colVars(stores[[nm]])), 0.5, info = nm)
  }
})

test_that("genotype column statistics match base R on bed and dosage storage", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(11)
  g <- matrix(sample(c(0:2, NA), 103 * 30, replace = TRUE, prob = c(.4, .3, .2, .1)), 103, 30)
  X <- fmalloc_bed(g, rt)
  expect_equal(fmalloc_colMeans(X), colMeans(g, na.rm = TRUE), tolerance = 1e-12)
  expect_equal(fmalloc_colVars(X), apply(g, 2, var, na.rm = TRUE), tolerance = 1e-12)
  af <- fmalloc_allele_freq(X)
  expect_equal(af$alt_freq, colMeans(g, na.rm = TRUE) / 2, tolerance = 1e-12)
  expect_equal(af$n_missing, colSums(is.na(g)))
  D <- fmalloc_dosage(g * 1.0, rt)
  expect_equal(fmalloc_colVars(D), apply(g, 2, var, na.rm = TRUE), tolerance = 1e-12)
})

test_that("genotype counts are exact under every kernel level (portable, AVX2)", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit({
    .test_fused_isa("auto")
    cleanup_fmalloc(rt)
  })
  set.seed(12)
  # 2003 samples: whole 32-byte AVX2 steps and a tail of words and samples
  g <- matrix(sample(c(0:2, NA), 2003 * 7, replace = TRUE, prob = c(.4, .3, .2, .1)), 2003, 7)
  X <- fmalloc_bed(g, rt)
  want <- rbind(colSums(g == 0, na.rm = TRUE), colSums(g == 1, na.rm = TRUE),
                colSums(g == 2, na.rm = TRUE), colSums(is.na(g)))
  for (isa in c("portable", "avx2", "auto")) {
    used <- .test_fused_isa(isa)
    af <- fmalloc_allele_freq(X)
    expect_equal(rbind(af$n_hom_ref, af$n_het, af$n_hom_alt, af$n_missing), want,
                 ignore_attr = TRUE, label = paste("counts with the", used, "kernels"))
    expect_equal(fmalloc_colVars(X), apply(g, 2, var, na.rm = TRUE), tolerance = 1e-12,
                 label = paste("colVars with the", used, "kernels"))
  }
})

test_that("allele frequencies on the 1000 Genomes .bed match plink2 --freq", {
  skip_if_no_plink2()
  prefix <- sub("\\.bed$", "", fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed"))
  G <- fmalloc_bed_open(prefix)
  out <- run_plink2(c("--bfile", prefix, "--autosome", "--freq"))
  pf <- utils::read.table(paste0(out, ".afreq"), header = FALSE, comment.char = "#",
                          col.names = c("chr", "id", "ref", "alt", "alt_freq", "obs_ct"))
  af <- fmalloc_allele_freq(G)
  ours <- af[match(pf$id, af$id), ]
  expect_identical(ours$alt, pf$alt)
  expect_equal(ours$alt_freq, pf$alt_freq, tolerance = 1e-5)
  expect_equal(2 * (ours$n_hom_ref + ours$n_het + ours$n_hom_alt), pf$obs_ct)
})

test_that("the option fmalloc.panel_bytes sets the panel budget at load", {
  out <- rscript_child("options(fmalloc.panel_bytes = 4096); cat(Rfmalloc::fmalloc_panel_budget(), '\\n')")
  expect_identical(trimws(tail(out, 1)), "4096")
})

test_that("statistics of a standardized view are those of its standardized values", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(12)
  g <- matrix(sample(c(0:2, NA), 57 * 6, replace = TRUE, prob = c(.4, .3, .2, .1)), 57, 6)
  X <- fmalloc_bed(g, rt)
  for (S in list(suppressMessages(fmalloc_standardize(X, scale = TRUE)),
                 suppressMessages(fmalloc_standardize(X, scale = "binomial")),
                 fmalloc_standardize(X, center = FALSE, scale = TRUE, impute = FALSE))) {
    m <- as.matrix(S)
    expect_equal(fmalloc_colMeans(S), colMeans(m, na.rm = TRUE), tolerance = 1e-12)
    expect_equal(fmalloc_colVars(S), apply(m, 2, var, na.rm = TRUE), tolerance = 1e-12)
  }
})

test_that("a vector on the left of %*% is a row, and bad budgets are refused", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  g <- matrix(sample(0:2, 30 * 7, replace = TRUE), 30, 7)
  X <- fmalloc_bed(g, rt)
  expect_equal((1:30) %*% X, (1:30) %*% (g * 1.0), ignore_attr = TRUE)
  for (bad in list(Inf, -1, NA, c(1, 2), "abc")) {
    expect_error(fmalloc_panel_budget(bad), class = "fm_error_earg")
  }
})

test_that("column statistics of an external-codec matrix stream through panel decode", {
  set.seed(31)
  m <- matrix(rnorm(41 * 23, mean = 1e6, sd = 3), 41, 23)
  m[sample(length(m), 60)] <- NA
  m[, 5] <- NA          # all missing
  m[-1, 6] <- NA        # one observed
  m[3, 7] <- Inf        # an infinite value: mean Inf, variance NaN, as base R
  X <- .test_ext_matrix(m)
  old <- fmalloc_panel_budget()
  on.exit(fmalloc_panel_budget(old), add = TRUE)
  v <- fmalloc_colVars(m)
  mu <- fmalloc_colMeans(m)
  for (budget in c(0, 8, 8 * 7 * 3)) { # whole columns, 1 x 1 panels, row tiles of 7
    fmalloc_panel_budget(budget)
    # the dense two-pass over the decoded doubles: identical to dense storage
    expect_identical(fmalloc_colVars(X), v)
    expect_identical(fmalloc_colMeans(X), mu)
  }
  fmalloc_panel_budget(0)
  expect_equal(mu, colMeans(m, na.rm = TRUE), tolerance = 1e-12)
  expect_equal(v[-7], apply(m, 2, var, na.rm = TRUE)[-7], tolerance = 1e-12)
  expect_identical(mu[7], Inf)
  expect_true(is.nan(v[7]))
  expect_true(is.na(mu[5]) && is.na(v[5]) && is.na(v[6]))
  expect_identical(mu[6], m[1, 6])
  expect_identical(fmalloc_colVars(X, na.rm = FALSE), fmalloc_colVars(m, na.rm = FALSE))
  expect_identical(fmalloc_colVars(fmalloc_select(X, c(23, 1, 1))), v[c(23, 1, 1)])
})

test_that("fmalloc_colVars follows var(): NA with one observed value; na.rm and x are checked as fmalloc_pca checks", {
  m <- matrix(c(NA, 1, 1, 2, NA, NA), 2)
  expect_identical(fmalloc_colVars(m), c(var(m[, 1], na.rm = TRUE), var(m[, 2], na.rm = TRUE), NA))
  expect_identical(fmalloc_colVars(m)[1], NA_real_)
  G <- fmalloc_bed(matrix(c(NA, 1, 0, 2), 2))
  expect_identical(fmalloc_colVars(G), c(NA, 2))
  C <- fmalloc_bed_open(sub("\\.bed$", "", fixture_path("genotypes", "ceu_exon", "ceu_exon_bi.bed")))
  e <- expect_error(fmalloc_colVars(C, na.rm = NA), "na.rm must be TRUE or FALSE", class = "fm_error_earg")
  expect_identical(conditionCall(e), quote(fmalloc_colVars(C, na.rm = NA)))
  expect_error(fmalloc_colMeans(C, na.rm = c(TRUE, FALSE)), "na.rm must be TRUE or FALSE", class = "fm_error_earg")
  df <- data.frame(a = c(1, 2, 4))
  expect_error(fmalloc_colVars(df), "not an object of class 'data.frame'; convert it with as.matrix",
               class = "fm_error_earg")
  expect_error(fmalloc_pca(df, k = 1), "not an object of class 'data.frame'; convert it with as.matrix",
               class = "fm_error_earg")
  expect_error(fmalloc_colVars(t(G)), "colMeans\\(t\\(X\\)\\)", class = "fm_error_earg")
  expect_equal(fmalloc_colVars(as.matrix(df)), c(a = var(df$a)))
})
