# summary() of a codec matrix against the same statistics of its dense copy.

# What summary() should give, from the decoded matrix by base R.
dense_summary <- function(m) {
  obs <- colSums(!is.na(m))
  mean <- colMeans(m, na.rm = TRUE)
  sd <- apply(m, 2, function(v) if (sum(!is.na(v)) > 1) sd(v, na.rm = TRUE) else NA_real_)
  spread <- function(v) { v <- v[is.finite(v)]; unname(c(quantile(v)[1:3], mean(v), quantile(v)[4:5])) }
  list(n_missing = sum(is.na(m)), n_empty = sum(obs == 0), mean = spread(mean), sd = spread(sd),
       missing_rate = spread(1 - obs / nrow(m)))
}

expect_summary_matches <- function(s, m) {
  ref <- dense_summary(m)
  expect_identical(s$dim, dim(m))
  expect_equal(s$n_missing, ref$n_missing)
  expect_equal(s$n_empty, ref$n_empty)
  expect_equal(s$missing_rate, ref$n_missing / length(m))
  # sums over <= 300 rows of values <= 2 in magnitude: relative error far below 1e-12
  for (stat in c("mean", "sd", "missing_rate")) expect_equal(unname(s$columns[stat, ]), ref[[stat]], tolerance = 1e-12)
}

test_that("summary() of hardcalls counts genotypes and matches the dense statistics", {
  set.seed(7)
  g <- matrix(sample(c(0, 1, 2, NA), 300 * 40, replace = TRUE, prob = c(.5, .3, .15, .05)), 300, 40)
  g[, 3] <- 2          # monomorphic
  g[, 5] <- NA         # no call
  g[, 8] <- c(1, rep(NA, 299)) # one call: no sd
  X <- fmalloc_bed(g)
  s <- summary(X)
  expect_s3_class(s, "summary_fmalloc_codec_matrix")
  expect_summary_matches(s, g)
  expect_identical(s$codec, "bed2")
  expect_equal(s$genotype_counts, c(hom_ref = sum(g == 0, na.rm = TRUE), het = sum(g == 1, na.rm = TRUE),
                                    hom_alt = sum(g == 2, na.rm = TRUE), missing = sum(is.na(g))))
  af <- fmalloc_allele_freq(X)
  expect_equal(unname(s$columns["maf", ]), dense_summary(matrix(af$maf, 1))$mean, tolerance = 1e-12)
  expect_equal(s$n_monomorphic, 2) # column 3, and column 8 with its single call
  expect_equal(s$storage_bytes, fmalloc_storage_bytes(X))
  expect_equal(s$dense_bytes, 8 * 300 * 40)
  out <- capture.output(print(s))
  expect_match(out[1], "<fmalloc bed2 matrix: 300 x 40")
  expect_match(out[2], sprintf("missing: %s entries \\(%.2f%%\\); 1 column", format(sum(is.na(g)), big.mark = ","),
                               100 * mean(is.na(g))))
  expect_true(any(grepl("^monomorphic variants: 2$", out)))
})

test_that("summary() of dosages, a standardized view and an external codec match their dense copies", {
  set.seed(8)
  d <- matrix(round(runif(120 * 9, 0, 2) * 127.5) / 127.5, 120, 9)
  d[sample(length(d), 30)] <- NA
  D <- fmalloc_dosage(d)
  expect_summary_matches(summary(D), as.matrix(D))
  expect_null(summary(D)$genotype_counts)
  g <- matrix(sample(c(0, 1, 2, NA), 200 * 6, replace = TRUE), 200, 6)
  S <- fmalloc_standardize(fmalloc_bed(g), scale = TRUE)
  s <- summary(S)
  expect_equal(s$n_missing, 0)  # imputed by the view
  expect_summary_matches(s, as.matrix(S))
  m <- matrix(rnorm(50 * 7), 50, 7)
  E <- Rfmalloc:::.test_ext_matrix(m)
  expect_summary_matches(summary(E), m)
})

test_that("summary() refuses extra arguments and transposed views", {
  X <- fmalloc_bed(matrix(c(0, 1, 2, 2), 2))
  expect_error(summary(X, digits = 3), class = "fm_error_earg", regexp = "no other arguments; got digits")
  expect_error(summary(t(X)), class = "fm_error_eunsupported", regexp = "summary\\(X\\)")
})
