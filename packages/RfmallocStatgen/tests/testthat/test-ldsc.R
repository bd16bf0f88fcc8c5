# LD scores (statgen_ld_scores) and LD score regression (statgen_ldsc):
# on generated data against direct computations, and on the 1000 Genomes
# fixture against bigsnpr (snp_cor, snp_ld_scores, snp_ldsc), whose values
# tools/oracle-ldsc.R computed once into ref/ldsc-bigsnpr.rds.

ldsc_ref <- function() {
  path <- test_path("ref", "ldsc-bigsnpr.rds")
  if (!file.exists(path)) skip("ref/ldsc-bigsnpr.rds is absent (tools/oracle-ldsc.R writes it)")
  readRDS(path)
}

# The fixture's genotypes and its band within 1000 kb from statgen_ld(),
# made once for the file (the plain-R band of helper-ld.R checks chr22).
ldsc_cache <- new.env()
fixture_ld <- function() {
  if (is.null(ldsc_cache$ld)) {
    G <- Rfmalloc::fmalloc_bed_open(sub("\\.bed$", "", kg("1kg_bi.bed")))
    ldsc_cache$G <- G
    ldsc_cache$ld <- statgen_ld(G, window = 1000, unit = "kb")
  }
  ldsc_cache$ld
}

# A generated symmetric banded correlation matrix of n variants (window w).
gen_band <- function(n = 30, w = 4, m = 100, seed = 1) {
  set.seed(seed)
  g <- matrix(rbinom(m * n, 2, 0.3), m, n)
  g[, 2:n] <- ifelse(matrix(runif(m * (n - 1)) < 0.6, m), g[, 1:(n - 1)], g[, 2:n])
  g[, 5] <- 1 # a constant variant
  R <- suppressWarnings(cor(g))
  R[is.na(R)] <- 0
  diag(R) <- 1
  R[abs(row(R) - col(R)) > w] <- 0
  R
}

test_that("LD scores are the column sums of squared correlations of the band", {
  R <- gen_band()
  ids <- sprintf("rs%d", seq_len(ncol(R)))
  ld <- .ld_from_dense(R, variants = data.frame(ID = ids))
  s <- statgen_ld_scores(ld)
  expect_named(s, ids)
  expect_equal(unname(s), colSums(R^2), tolerance = 1e-14)
  expect_identical(s[[5]], 1) # the constant variant
  expect_true(all(s >= 1))
  s32 <- statgen_ld_scores(.ld_from_dense(R, dtype = "f32", variants = data.frame(ID = ids)))
  expect_equal(s32, s, tolerance = 1e-6)
  # band = FALSE stores only nonzero entries: the same scores
  expect_equal(statgen_ld_scores(.ld_from_dense(R, band = FALSE)), unname(s) + 0 * s,
               tolerance = 1e-14, ignore_attr = TRUE)
})

test_that("adjust = 'ldsc' sums r^2 - (1 - r^2) / (n - 2) over the stored entries", {
  R <- gen_band()
  ld <- .ld_from_dense(R)
  stored <- matrix(FALSE, ncol(R), ncol(R)) # the entries the band stores
  stored[cbind(ld$rowidx + 1L, rep(seq_len(ncol(R)), diff(ld$colptr)))] <- TRUE
  r2 <- R^2
  want <- colSums(ifelse(stored, r2 - (1 - r2) / 98, 0))
  expect_equal(unname(statgen_ld_scores(ld, "ldsc", n_samples = 100)), want, tolerance = 1e-13)
  ld$info$n_samples <- 100
  expect_equal(statgen_ld_scores(ld, "ldsc"), statgen_ld_scores(ld, "ldsc", 100))
})

test_that("statgen_ld_scores() errors are classed", {
  R <- gen_band()
  ld <- .ld_from_dense(R)
  expect_error(statgen_ld_scores(R), class = "fm_error_earg")
  expect_error(statgen_ld_scores(ld, "ldsc"), class = "fm_error_earg") # no n_samples known
  expect_error(statgen_ld_scores(ld, "ldsc", n_samples = 2), class = "fm_error_earg")
  expect_error(statgen_ld_scores(ld, "ldsc", n_samples = 10.5), class = "fm_error_earg")
  expect_error(statgen_ld_scores(ld, "other"), class = "fm_error_earg")
  bad <- ld
  bad$values[3] <- 1.5
  expect_error(statgen_ld_scores(bad), class = "fm_error_earg")
  bad$values[3] <- NaN
  expect_error(statgen_ld_scores(bad), class = "fm_error_earg")
  bad <- ld
  bad$rowidx[2] <- 1000L
  expect_error(statgen_ld_scores(bad), "outside")
})

# Generated regression data: chi2 exactly on the model line (intercept a,
# slope h2) recovers both, whatever the weights.
exact_data <- function(m = 1000, a = 1.1, h2 = 0.4, n = 5000) {
  set.seed(2)
  l <- 1 + rgamma(m, 2, 2)
  list(l = l, n = n, chi2 = a + h2 * n * l / m)
}

test_that("statgen_ldsc() recovers intercept and h2 from exact data", {
  d <- exact_data()
  r <- statgen_ldsc(d$l, d$chi2, d$n)
  expect_s3_class(r, "statgen_ldsc")
  # 1e-8 is added to every chi2 (bigsnpr's guard; twice with the
  # jackknife), i.e. to the intercept
  expect_equal(r$int, 1.1 + 2e-8, tolerance = 1e-12)
  expect_equal(r$h2, 0.4, tolerance = 1e-10)
  expect_lt(r$h2_se, 1e-8)
  expect_identical(r$n_blocks, 200L)
  r1 <- statgen_ldsc(d$l, d$chi2, d$n, intercept = 1.1, blocks = NULL)
  expect_equal(r1$h2, 0.4, tolerance = 1e-7)
  expect_true(r1$intercept_fixed)
  expect_true(is.na(r1$h2_se))
  # the default blocks are 200 contiguous runs, the larger first
  lab <- sort(rep_len(1:200, 1000))
  d$chi2 <- d$chi2 + rnorm(1000, sd = 0.1)
  expect_identical(statgen_ldsc(d$l, d$chi2, d$n), statgen_ldsc(d$l, d$chi2, d$n, blocks = lab))
  # a factor with unused levels: empty groups are dropped, not jackknifed
  expect_identical(statgen_ldsc(d$l, d$chi2, d$n, blocks = factor(lab, levels = 0:201)),
                   statgen_ldsc(d$l, d$chi2, d$n, blocks = lab))
  expect_output(print(r), "h2 +0.4 \\(SE")
})

test_that("h2 above 1 warns and says why", {
  d <- exact_data(h2 = 1.5, n = 2000)
  w <- expect_warning(r <- statgen_ldsc(d$l, d$chi2, d$n, blocks = 20),
                      class = "statgen_warning_h2")
  expect_s3_class(w, "fm_warning_edegenerate")
  expect_match(conditionMessage(w), "above 1")
  expect_match(conditionMessage(w), "only 1000 variants")
  expect_match(conditionMessage(w), "small sample")
  expect_match(conditionMessage(w), "stratification")
  expect_equal(r$h2, 1.5, tolerance = 1e-8)
  expect_no_warning(statgen_ldsc(d$l, d$chi2 / 2, d$n, blocks = 20))
})

test_that("statgen_ldsc() bad input is a classed error or a reported drop", {
  d <- exact_data()
  l <- d$l
  chi2 <- d$chi2
  chi2[c(3, 9)] <- NA
  expect_error(statgen_ldsc(l, chi2, d$n), class = "fm_error_earg")
  r <- statgen_ldsc(l, chi2, d$n, na_rm = TRUE)
  expect_identical(r$n_dropped, 2L)
  expect_identical(r$n_variants, 998L)
  expect_identical(r$ld_size, 1000) # M from before the drop
  expect_equal(r$h2, statgen_ldsc(l[-c(3, 9)], chi2[-c(3, 9)], d$n, ld_size = 1000)$h2)
  expect_output(print(r), "2 with missing values left out")
  nv <- rep(d$n, 1000)
  nv[4] <- NA
  expect_error(statgen_ldsc(l, d$chi2, nv), class = "fm_error_earg")
  expect_identical(statgen_ldsc(l, d$chi2, nv, na_rm = TRUE)$n_dropped, 1L)
  expect_error(statgen_ldsc(l, d$chi2[-1], d$n), class = "fm_error_emismatch")
  expect_error(statgen_ldsc(l, d$chi2, c(1, 2)), class = "fm_error_emismatch")
  ids <- sprintf("v%d", 1:1000)
  expect_error(statgen_ldsc(setNames(l, ids), setNames(d$chi2, rev(ids)), d$n),
               class = "fm_error_emismatch")
  expect_identical(statgen_ldsc(setNames(l, ids), setNames(d$chi2, ids), d$n),
                   statgen_ldsc(l, d$chi2, d$n))
  expect_error(statgen_ldsc(l, d$chi2, 0), class = "fm_error_earg")
  expect_error(statgen_ldsc(l, d$chi2, -5), class = "fm_error_earg")
  expect_error(statgen_ldsc(l, d$chi2, Inf), class = "fm_error_earg")
  expect_error(statgen_ldsc(l, -d$chi2, d$n), class = "fm_error_earg")
  expect_error(statgen_ldsc(l, as.character(d$chi2), d$n), class = "fm_error_earg")
  expect_error(statgen_ldsc(replace(l, 1, NA), d$chi2, d$n), class = "fm_error_earg")
  expect_error(statgen_ldsc(l, d$chi2, d$n, ld_size = 0), class = "fm_error_earg")
  expect_error(statgen_ldsc(l, d$chi2, d$n, ld_size = 10.5), class = "fm_error_earg")
  expect_error(statgen_ldsc(l, d$chi2, d$n, blocks = 1), class = "fm_error_earg")
  expect_error(statgen_ldsc(l, d$chi2, d$n, blocks = 1001), class = "fm_error_earg")
  expect_error(statgen_ldsc(l, d$chi2, d$n, blocks = rep(1, 1000)), class = "fm_error_earg")
  expect_error(statgen_ldsc(l, d$chi2, d$n, blocks = 1:10), class = "fm_error_emismatch")
  expect_error(statgen_ldsc(l, d$chi2, d$n, intercept = NA), class = "fm_error_earg")
  expect_error(statgen_ldsc(l, d$chi2, d$n, chi2_thr1 = 0), class = "fm_error_earg")
  expect_error(statgen_ldsc(l, d$chi2, d$n, na_rm = NA), class = "fm_error_earg")
  expect_error(statgen_ldsc(rep(2, 1000), d$chi2, d$n), class = "fm_error_edegenerate")
  # a step 1 threshold below every chi2 leaves nothing to fit
  expect_error(statgen_ldsc(l, d$chi2, d$n, chi2_thr1 = 0.5), class = "fm_error_edegenerate")
})

test_that("bigsnpr's snp_cor reference of chr22 is the plain-R correlation band", {
  ref <- ldsc_ref()
  ld <- fixture_ld() # skips without the fixture
  R <- fixture_cor_dense(ldsc_cache$G, "22")
  c22 <- ref$cor22
  expect_identical(c22$ids, colnames(R))
  n <- length(c22$ids)
  j <- rep(seq_len(n), diff(c22$p))
  i <- c22$i + 1L
  # the same set of pairs: every pair at most 1000 kb apart, upper triangle and diagonal
  pos <- ld$variants$POS[ld$variants$CHR == "22"]
  near <- upper.tri(R, diag = TRUE) & abs(outer(pos, pos, "-")) <= 1e6
  got_pairs <- cbind(i, j)
  expect_true(all(near[got_pairs]))
  expect_identical(length(i), sum(near))
  both <- !is.nan(c22$x) & !is.na(R[got_pairs])
  expect_lt(max(abs(c22$x[both] - R[got_pairs][both])), 1e-12)
  # NaN exactly for the pairs of the constant variants
  expect_identical(is.nan(c22$x), is.na(R[got_pairs]))
  g22 <- ldsc_cache$G[, which(ld$variants$CHR == "22")]
  const <- colnames(R)[apply(g22, 2, stats::var) == 0]
  expect_identical(sort(c22$nan_ids), sort(const))
  expect_length(const, 14L)
  expect_identical(ref$meta$n_missing_calls, 0L)
})

test_that("statgen_ld()'s signed r is snp_cor's on chr22 (1e-12 f64, 1e-7 f32), never NaN", {
  ref <- ldsc_ref()
  fixture_ld()
  c22 <- ref$cor22
  G <- ldsc_cache$G
  k <- which(Rfmalloc::fmalloc_variants(G)$chr == "22")
  X22 <- Rfmalloc::fmalloc_select(G, k)
  j <- rep(seq_along(c22$ids), diff(c22$p))
  i <- c22$i + 1L
  nan <- is.nan(c22$x)
  for (dt in c("f64", "f32")) {
    ld <- statgen_ld(X22, window = 1000, unit = "kb", dtype = dt)
    expect_identical(rownames(ld), c22$ids)
    got <- ld[, , drop = FALSE][cbind(i, j)]
    expect_false(anyNA(got))
    # |r| <= 1: the f32 rounding of r is at most 2^-24 < 1e-7
    expect_lt(max(abs(got[!nan] - c22$x[!nan])), if (dt == "f64") 1e-12 else 1e-7)
    # where snp_cor gives NaN (a constant variant), 0 off the diagonal and 1 on it
    expect_identical(got[nan], ifelse(i[nan] == j[nan], 1, 0))
    # the band stores exactly snp_cor's pairs: both triangles, then the diagonal once
    expect_identical(ld$colptr[length(ld$colptr)], 2 * length(i) - length(c22$ids))
  }
})

test_that("LD scores of the fixture band are bigsnpr's snp_ld_scores()", {
  ref <- ldsc_ref()
  ld <- fixture_ld()
  s <- statgen_ld_scores(ld)
  expect_identical(names(s), ref$ids)
  expect_lt(max(abs(s - ref$ld_scores) / ref$ld_scores), 1e-12)
  # stored as floats (r to about 6e-8 relative)
  ld32 <- statgen_ld(ldsc_cache$G, window = 1000, unit = "kb", dtype = "f32")
  expect_lt(max(abs(statgen_ld_scores(ld32) - ref$ld_scores) / ref$ld_scores), 1e-7)
  # and the plain-R band of chr22 (cor() of the genotype columns)
  b22 <- fixture_ld_band(ldsc_cache$G, chroms = "22")
  k <- ld$variants$CHR == "22"
  expect_lt(max(abs(statgen_ld_scores(b22) - ref$ld_scores[k]) / ref$ld_scores[k]), 1e-12)
})

test_that("statgen_ldsc() is bigsnpr's snp_ldsc() on the same inputs", {
  ref <- ldsc_ref()
  ok <- !is.na(ref$chi2)
  for (nm in names(ref$ldsc)) {
    a <- ref$ldsc[[nm]]$args
    want <- ref$ldsc[[nm]]$value
    got <- suppressWarnings(do.call(statgen_ldsc, c(list(ref$ld_scores[ok], ref$chi2[ok], ref$n,
                                                         ld_size = length(ref$ld_scores)), a)))
    got <- unlist(got[names(want)])
    # relative, or absolute for an SE of 0 (intercept fixed)
    expect_lt(max(abs(got - want) / pmax(abs(want), 1e-6)), 1e-10, label = nm)
  }
})

test_that("the fixture pipeline (our band, our GWAS) gives bigsnpr's LDSC values", {
  ref <- ldsc_ref()
  ld <- fixture_ld()
  ph <- utils::read.delim(kg("pheno", "1kg_pheno.tsv"), check.names = FALSE)
  # chrX = "none": bigsnpr's big_univLinReg adds no sex covariate on chrX
  qt <- statgen_gwas(ldsc_cache$G, ph[c("#FID", "IID", "QT")], chrX = "none")
  expect_identical(qt$ID, ref$ids)
  chi2 <- (qt$BETA / qt$SE)^2
  expect_identical(is.na(chi2), is.na(ref$chi2))
  expect_lt(max(abs(chi2 - ref$chi2) / pmax(ref$chi2, 1), na.rm = TRUE), 1e-9)
  expect_true(all(qt$OBS_CT[!is.na(chi2)] == ref$n))
  w <- expect_warning(r <- statgen_ldsc(statgen_ld_scores(ld), chi2, qt$OBS_CT, na_rm = TRUE),
                      class = "statgen_warning_h2")
  want <- ref$ldsc$default$value
  expect_identical(r$n_dropped, sum(is.na(ref$chi2)))
  got <- unlist(r[names(want)])
  expect_lt(max(abs(got - want) / abs(want)), 1e-8)
})

test_that("the issue's h2 = 1.49 (chr22 alone) is bigsnpr's and warns", {
  # Pipeline: GWAS of QT on the 1111 samples with a value, no covariates;
  # LD scores of the band (statgen_ld: 1126 samples, 1000 kb); the chr22 variants
  # with a chi2 (1080), which are also ld_size; intercept estimated.
  ref <- ldsc_ref()
  ld <- fixture_ld()
  ph <- utils::read.delim(kg("pheno", "1kg_pheno.tsv"), check.names = FALSE)
  qt <- statgen_gwas(ldsc_cache$G, ph[c("#FID", "IID", "QT")], chrX = "none")
  chi2 <- (qt$BETA / qt$SE)^2
  k <- ld$variants$CHR == "22" & !is.na(chi2)
  expect_identical(sum(k), 1080L)
  s <- statgen_ld_scores(ld)[k]
  for (b in names(ref$ldsc22)) {
    want <- ref$ldsc22[[b]]
    w <- expect_warning(r <- statgen_ldsc(s, chi2[k], qt$OBS_CT[k], ld_size = sum(k),
                                          blocks = if (b == "blocks200") 200),
                        class = "statgen_warning_h2")
    expect_match(conditionMessage(w), "only 1080 variants")
    got <- unlist(r[names(want)])
    expect_lt(max(abs(got - want) / abs(want)), 1e-8, label = b)
  }
  expect_equal(ref$ldsc22$noblocks[["h2"]], 1.49, tolerance = 0.01)
})
