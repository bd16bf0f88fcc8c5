# statgen_gwas() refuses bad input with classed fm_error_earg conditions whose
# messages name the problem (the phenotype, covariate, sample or variant),
# and handles the input it documents: a missing covariate drops the sample,
# factor covariates expand to indicators, phenotypes match samples by ID
# (FID and IID, IID alone, or row names).

err_data <- function(n = 60, p = 5, seed = 11) {
  set.seed(seed)
  g <- matrix(stats::rbinom(n * p, 2, 0.35), n, p)
  list(g = g, y = stats::rnorm(n) + 0.3 * g[, 2], n = n, p = p,
       samples = data.frame(iid = sprintf("s%02d", seq_len(n)), fid = sprintf("f%02d", seq_len(n)),
                            sex = rep(1:2, length.out = n), stringsAsFactors = FALSE))
}

# lm()'s row for x in y ~ covariates + x
lm_x <- function(y, x, covar = NULL) {
  d <- if (is.null(covar)) data.frame(x = x) else data.frame(covar, x = x)
  stats::coef(summary(stats::lm(y ~ ., data = cbind(y = y, d))))["x", ]
}

test_that("y of another length than nrow(X) without IDs is refused", {
  s <- err_data()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  expect_error(statgen_gwas(X, s$y[-1]), class = "fm_error_earg",
               regexp = "y has 59 samples but X has 60 rows")
  expect_error(statgen_gwas(X, s$y, covar = data.frame(age = 1:59)), class = "fm_error_earg",
               regexp = "covar has 59 samples but X has 60 rows")
})

test_that("IDs that match no sample, and duplicated IDs, are refused naming them", {
  s <- err_data()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  ids <- s$samples
  expect_error(statgen_gwas(X, data.frame(IID = sprintf("z%02d", 1:60), Y = s$y), samples = ids),
               class = "fm_error_earg", regexp = "no sample ID of y matches X's samples \\(e\\.g\\. 'z01' vs 's01'\\)")
  # FID + IID: right IIDs under the wrong FIDs match nothing
  expect_error(statgen_gwas(X, data.frame(FID = "0", IID = ids$iid, Y = s$y), samples = ids),
               class = "fm_error_earg", regexp = "no sample ID of y matches X's samples \\(e\\.g\\. '0 s01' vs 'f01 s01'\\)")
  dup <- data.frame(IID = c("s01", ids$iid[-60]), Y = s$y)
  expect_error(statgen_gwas(X, dup, samples = ids), class = "fm_error_earg",
               regexp = "y has sample ID 's01' more than once")
  dup2 <- data.frame(FID = c("f01", ids$fid[-60]), IID = c("s01", ids$iid[-60]), Y = s$y)
  expect_error(statgen_gwas(X, dup2, samples = ids), class = "fm_error_earg",
               regexp = "y has sample ID 'f01 s01' more than once")
  expect_error(statgen_gwas(X, s$y, covar = data.frame(IID = c("s02", ids$iid[-60]), age = 1:60),
                            samples = ids),
               class = "fm_error_earg", regexp = "covar has sample ID 's02' more than once")
})

test_that("phenotypes with no value, infinite, constant or not numeric are refused naming them", {
  s <- err_data()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  expect_error(statgen_gwas(X, data.frame(Y = s$y, empty = NA_real_)), class = "fm_error_earg",
               regexp = "phenotype 'empty' has no non-missing value")
  expect_error(statgen_gwas(X, data.frame(Yinf = replace(s$y, 7, Inf))), class = "fm_error_earg",
               regexp = "phenotype 'Yinf' is infinite for sample 7")
  expect_error(statgen_gwas(X, replace(s$y, 9, -Inf)), class = "fm_error_earg",
               regexp = "phenotype 'PHENO1' is infinite for sample 9")
  expect_error(statgen_gwas(X, data.frame(Y = s$y, flat = replace(rep(2.5, 60), 3, NA))),
               class = "fm_error_earg", regexp = "phenotype 'flat' is constant")
  expect_error(statgen_gwas(X, data.frame(Ychr = as.character(s$y))), class = "fm_error_earg",
               regexp = "phenotype 'Ychr' is character, not numeric or logical")
  expect_error(statgen_gwas(X, data.frame(Y = s$y, grp = factor(rep(c("a", "b"), 30)))),
               class = "fm_error_earg", regexp = "phenotype 'grp' is factor, not numeric or logical")
  expect_error(statgen_gwas(X, as.character(s$y)), class = "fm_error_earg",
               regexp = "y must be numeric or logical")
  # every phenotype value is on a sample that lacks a covariate
  expect_error(statgen_gwas(X, data.frame(Y = replace(rep(NA, 60), 1:2, c(1, 2))),
                            covar = data.frame(age = replace(stats::runif(60), 1:2, NA))),
               class = "fm_error_earg", regexp = "no sample has both a phenotype and every covariate")
  expect_error(statgen_gwas(X, data.frame(Y = s$y, late = replace(rep(NA, 60), 1:2, c(1, 2))),
                            covar = data.frame(age = replace(stats::runif(60), 1:2, NA))),
               class = "fm_error_earg", regexp = "phenotype 'late' has no sample with every covariate")
})

test_that("a phenotype constant over the samples with every covariate is refused naming it", {
  s <- err_data()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  # varies only on the samples a missing covariate leaves out
  y <- replace(s$y, 11:60, 1)
  age <- replace(stats::runif(60), 1:10, NA)
  expect_error(statgen_gwas(X, data.frame(Q = y), covar = data.frame(age = age)),
               class = "fm_error_earg",
               regexp = "phenotype 'Q' takes one value \\(1\\) over its 50 samples with every covariate")
  b <- replace(rep(0, 60), 1:10, 1)
  expect_error(suppressMessages(statgen_gwas(X, data.frame(B = b), covar = data.frame(age = age),
                                             family = "logistic")),
               class = "fm_error_earg", regexp = "phenotype 'B' takes one value \\(0\\)")
})

test_that("two phenotypes of one name are refused; unnamed ones are named PHENO<i>", {
  s <- err_data()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  expect_error(statgen_gwas(X, data.frame(A = s$y, A = rev(s$y), check.names = FALSE)),
               class = "fm_error_earg", regexp = "two phenotypes are named 'A'")
  res <- statgen_gwas(X, cbind(s$y, rev(s$y)))
  expect_identical(unique(res$PHENO), c("PHENO1", "PHENO2"))
  res <- statgen_gwas(X, cbind(Y = s$y, rev(s$y)))
  expect_identical(unique(res$PHENO), c("Y", "PHENO2"))
})

test_that("a sample ID of X that occurs twice is refused when matching by ID", {
  s <- err_data()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  ids <- s$samples
  ids$iid[2] <- ids$iid[1]
  expect_error(statgen_gwas(X, data.frame(IID = s$samples$iid, Y = s$y), samples = ids),
               class = "fm_error_earg",
               regexp = "X has sample ID 's01' more than once: y cannot be matched by ID")
  # in X's order (no IDs to match) it is fine
  expect_s3_class(statgen_gwas(X, s$y, samples = ids), "statgen_gwas")
})

test_that("constant, collinear and infinite covariates are refused naming them", {
  s <- err_data()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  set.seed(3)
  age <- stats::runif(60, 20, 70)
  expect_error(statgen_gwas(X, s$y, covar = data.frame(age = age, batch = 4)), class = "fm_error_earg",
               regexp = "covariate 'batch' is constant over the samples used")
  # constant only over the samples with a phenotype value
  expect_error(statgen_gwas(X, replace(s$y, 1, NA), covar = data.frame(b = c(9, rep(4, 59)))),
               class = "fm_error_earg", regexp = "covariate 'b' is constant")
  expect_error(statgen_gwas(X, s$y, covar = data.frame(age = age, age_months = 12 * age + 3)),
               class = "fm_error_earg",
               regexp = "covariate 'age_months' is collinear with the other covariates over the 60 samples of phenotype 'PHENO1'")
  # a factor's indicators collinear with a numeric covariate
  site <- rep(c("a", "b", "c"), 20)
  expect_error(statgen_gwas(X, s$y, covar = data.frame(is_b = as.numeric(site == "b"), site = site)),
               class = "fm_error_earg", regexp = "covariate 'site=b' is collinear")
  expect_error(statgen_gwas(X, s$y, covar = data.frame(age = age, site = "a")), class = "fm_error_earg",
               regexp = "covariate 'site' is constant \\(one level, 'a'\\)")
  expect_error(statgen_gwas(X, s$y, covar = data.frame(age = age, site = factor(NA))),
               class = "fm_error_earg", regexp = "covariate 'site' is constant \\(no value\\)")
  expect_error(statgen_gwas(X, s$y, covar = data.frame(age = replace(age, 5, Inf))), class = "fm_error_earg",
               regexp = "covariate 'age' is infinite")
  expect_error(statgen_gwas(X, s$y, covar = data.frame(when = as.Date("2020-01-01") + 1:60)),
               class = "fm_error_earg", regexp = "covariate 'when' is Date")
})

test_that("logistic phenotypes other than 0/1 or 1/2, or with one class, are refused naming them", {
  s <- err_data()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  expect_error(statgen_gwas(X, data.frame(BT = rep(0:2, 20)), family = "logistic"), class = "fm_error_earg",
               regexp = "phenotype 'BT' has values 0, 1, 2; a case/control phenotype is coded 0/1 or plink's 1/2")
  expect_error(statgen_gwas(X, data.frame(Y = s$y), family = "logistic"), class = "fm_error_earg",
               regexp = "phenotype 'Y' has values")
  expect_error(statgen_gwas(X, data.frame(BT = replace(rep(0, 60), 4, NA)), family = "logistic"),
               class = "fm_error_earg", regexp = "phenotype 'BT' has only controls")
  expect_error(statgen_gwas(X, data.frame(cases = rep(2, 60)), family = "logistic"), class = "fm_error_earg",
               regexp = "phenotype 'cases' has only cases")
})

test_that("unknown arguments and bad choices are refused", {
  s <- err_data()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  # no `...`: R itself refuses a misspelt argument
  expect_error(statgen_gwas(X, s$y, famliy = "linear"), regexp = "unused argument \\(famliy = \"linear\"\\)")
  expect_error(statgen_gwas(X, s$y, covariates = NULL), regexp = "unused argument")
  expect_error(statgen_gwas(X, s$y, family = "bogus"), class = "fm_error_earg",
               regexp = "family must be one of 'linear', 'logistic', not 'bogus'")
  expect_error(statgen_gwas(X, s$y, impute = "zero"), class = "fm_error_earg", regexp = "impute must be one of")
  expect_error(statgen_gwas(X, s$y, chrX = "haploid"), class = "fm_error_earg", regexp = "chrX must be one of")
  expect_error(statgen_gwas(X, s$y, a1 = "ref"), class = "fm_error_earg", regexp = "a1 must be one of")
  expect_error(statgen_gwas(X, s$y, firth = "sometimes"), class = "fm_error_earg", regexp = "firth must be one of")
  expect_error(statgen_gwas(X, s$y, max_iter = 0), class = "fm_error_earg", regexp = "max_iter")
  expect_error(statgen_gwas(X, s$y, tol = -1), class = "fm_error_earg", regexp = "tol must be a finite number > 0")
  expect_error(statgen_gwas(X, s$y, tol = Inf), class = "fm_error_earg", regexp = "tol must be a finite")
  for (mi in list(Inf, 1e12, 1.5, NA_real_)) {
    expect_error(statgen_gwas(X, s$y, max_iter = mi), class = "fm_error_earg",
                 regexp = "max_iter must be a whole number from 1 to 1e6")
  }
  for (ch in list(Inf, 1.5, 0)) {
    expect_error(statgen_gwas(X, s$y, chunk = ch, out = tempfile()), class = "fm_error_earg",
                 regexp = "chunk must be a whole number of variants >= 1")
  }
  expect_error(statgen_gwas(Rfmalloc::fmalloc_select(X, integer(0)), s$y), class = "fm_error_earg",
               regexp = "X has no variant \\(0 columns\\)")
  expect_error(statgen_gwas(1:10, s$y), class = "fm_error_earg", regexp = "X must be a samples x variants matrix")
  expect_error(statgen_gwas(X, NULL), class = "fm_error_earg", regexp = "y is required")
  expect_error(statgen_gwas(X, s$y, samples = data.frame(iid = 1:3)), class = "fm_error_earg",
               regexp = "samples must be a data frame of 60 rows")
  expect_error(statgen_gwas(X, s$y, variants = data.frame(id = "a")), class = "fm_error_earg",
               regexp = "variants must be a data frame of 5 rows")
})

test_that("an infinite genotype in a dense double matrix is refused naming the variant and the row", {
  s <- err_data()
  g <- matrix(as.double(s$g), s$n, s$p)
  g[4, 3] <- Inf
  expect_error(statgen_gwas(g, s$y), class = "fm_error_earg",
               regexp = "the genotype of variant 3 \\(V3\\) is infinite at row 4")
  rt <- new_runtime(size_gb = 0.05)
  M <- Rfmalloc::create_fmalloc_matrix("double", s$n, s$p, rt)
  g[4, 3] <- 1
  g[17, 5] <- -Inf
  M[, ] <- g
  expect_true(Rfmalloc::fmalloc_is_mapped(M))
  expect_error(statgen_gwas(M, s$y), class = "fm_error_earg",
               regexp = "the genotype of variant 5 \\(.*\\) is infinite at row 17")
  # the check does not depend on the sample having a phenotype
  expect_error(statgen_gwas(M, replace(s$y, 17, NA)), class = "fm_error_earg",
               regexp = "variant 5 \\(.*\\) is infinite at row 17")
  # NaN/NA is a missing call, not an error: that sample leaves the variant's fit
  g[17, 5] <- NaN
  res <- statgen_gwas(g, s$y, a1 = "alt")
  expect_identical(res$OBS_CT, c(60L, 60L, 60L, 60L, 59L))
  want <- lm_x(s$y[-17], g[-17, 5])
  expect_equal(res$BETA[5], unname(want[1]), tolerance = 1e-8)
})

test_that("an infinite genotype on chrX names X's column, not its place among the chrX columns", {
  s <- err_data()
  g <- matrix(as.double(s$g), s$n, s$p)
  g[6, 4] <- Inf
  vars <- data.frame(chr = c("1", "X", "1", "X", "1"), pos = 1:5, id = paste0("rs", 1:5), ref = "A", alt = "C")
  expect_error(statgen_gwas(g, s$y, variants = vars, samples = s$samples), class = "fm_error_earg",
               regexp = "variant 4 \\(rs4\\) is infinite at row 6 \\(sample")
})

test_that("statgen_write_glm() refuses what is not a result, and a bad prefix", {
  s <- err_data()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  res <- statgen_gwas(X, data.frame(Y = s$y))
  expect_error(statgen_write_glm(as.data.frame(res), tempfile()), class = "fm_error_earg",
               regexp = "res must be a statgen_gwas\\(\\) result")
  expect_error(statgen_write_glm(list(), tempfile()), class = "fm_error_earg", regexp = "res must be")
  expect_error(statgen_write_glm(res, c("a", "b")), class = "fm_error_earg", regexp = "prefix must be one path")
  expect_error(statgen_write_glm(res, NA_character_), class = "fm_error_earg", regexp = "prefix must be one path")
  missing_dir <- file.path(tempfile("no_such_dir"), "out")
  expect_error(statgen_write_glm(res, missing_dir), class = "fm_error_eio",
               regexp = "cannot write '.*out\\.Y\\.glm\\.linear'")
  expect_false(file.exists(paste0(missing_dir, ".Y.glm.linear.tmp")))
})

test_that("a missing covariate drops that sample only (OBS_CT one less), as lm() does", {
  s <- err_data()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  set.seed(4)
  age <- stats::runif(60, 20, 70)
  age[8] <- NA
  res <- statgen_gwas(X, s$y, covar = data.frame(age = age), a1 = "alt")
  expect_identical(res$OBS_CT, rep(59L, 5))
  full <- statgen_gwas(X, s$y, covar = data.frame(age = replace(age, 8, 40)), a1 = "alt")
  expect_identical(full$OBS_CT, rep(60L, 5))
  for (j in seq_len(5)) {
    want <- lm_x(s$y, s$g[, j], data.frame(age = age)) # lm drops row 8 (na.omit)
    expect_equal(res$BETA[j], unname(want[1]), tolerance = 1e-8)
    expect_equal(res$SE[j], unname(want[2]), tolerance = 1e-8)
    expect_equal(res$P[j], unname(want[4]), tolerance = 1e-8)
  }
  # a missing covariate and a missing call on the same variant remove two
  g <- matrix(as.double(s$g), 60, 5)
  g[3, 2] <- NA
  r2 <- statgen_gwas(g, s$y, covar = data.frame(age = age), a1 = "alt")
  expect_identical(r2$OBS_CT, c(59L, 58L, 59L, 59L, 59L))
})

test_that("factor and character covariates expand to indicators of every level but the first, as lm() does", {
  s <- err_data(n = 90, seed = 12)
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  set.seed(5)
  cov <- data.frame(age = stats::runif(90, 20, 70),
                    site = factor(sample(c("north", "south", "east"), 90, TRUE)),
                    batch = sample(c("b1", "b2"), 90, TRUE), stringsAsFactors = FALSE)
  cov$site[c(2, 50)] <- NA
  y <- s$y + 0.5 * (cov$batch == "b2")
  res <- statgen_gwas(X, y, covar = cov, a1 = "alt")
  expect_identical(res$OBS_CT, rep(88L, 5))
  for (j in seq_len(5)) {
    want <- lm_x(y, s$g[, j], cov)
    expect_equal(res$BETA[j], unname(want[1]), tolerance = 1e-8)
    expect_equal(res$SE[j], unname(want[2]), tolerance = 1e-8)
    expect_equal(res$T_STAT[j], unname(want[3]), tolerance = 1e-8)
    expect_equal(res$P[j], unname(want[4]), tolerance = 1e-8)
  }
  # the same as giving the indicators as numbers
  ind <- data.frame(age = cov$age, `site=north` = as.numeric(cov$site == "north"),
                    `site=south` = as.numeric(cov$site == "south"), `batch=b2` = as.numeric(cov$batch == "b2"),
                    check.names = FALSE)
  res2 <- statgen_gwas(X, y, covar = ind, a1 = "alt")
  expect_equal(res2$BETA, res$BETA, tolerance = 1e-12)
  expect_equal(res2$SE, res$SE, tolerance = 1e-12)
})

test_that("y as a data frame with row names is matched by IID", {
  s <- err_data()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  ids <- s$samples
  ref <- statgen_gwas(X, data.frame(Y = s$y), samples = ids)
  set.seed(6)
  o <- sample(60)
  yr <- data.frame(Y = s$y[o], row.names = ids$iid[o])
  res <- statgen_gwas(X, yr, samples = ids)
  expect_identical(res$BETA, ref$BETA)
  expect_identical(res$SE, ref$SE)
  expect_identical(res$OBS_CT, rep(60L, 5))
  # X's samples absent from y are missing; IDs of y not in X are dropped
  part <- yr[!(rownames(yr) %in% c("s03", "s40")), , drop = FALSE]
  part <- rbind(part, data.frame(Y = 100, row.names = "not_in_X"))
  r2 <- statgen_gwas(X, part, samples = ids, a1 = "alt")
  expect_identical(r2$OBS_CT, rep(58L, 5))
  keep <- !(ids$iid %in% c("s03", "s40"))
  want <- lm_x(s$y[keep], s$g[keep, 2])
  expect_equal(r2$BETA[2], unname(want[1]), tolerance = 1e-8)
  # a named vector is matched the same way
  r3 <- statgen_gwas(X, stats::setNames(s$y[o], ids$iid[o]), samples = ids)
  expect_identical(r3$BETA, ref$BETA)
})

test_that("IDs are matched on FID and IID when both sides have FID, else on IID alone", {
  s <- err_data()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime(size_gb = 0.05))
  ids <- s$samples
  ref <- statgen_gwas(X, data.frame(Y = s$y), samples = ids)
  set.seed(7)
  o <- sample(60)
  both <- data.frame(`#FID` = ids$fid[o], IID = ids$iid[o], Y = s$y[o], check.names = FALSE)
  expect_identical(statgen_gwas(X, both, samples = ids)$BETA, ref$BETA)
  iid_only <- data.frame(IID = ids$iid[o], Y = s$y[o])
  expect_identical(statgen_gwas(X, iid_only, samples = ids)$BETA, ref$BETA)
  # FID is part of the key: the samples whose FID differs are not matched
  wrong <- both
  wrong[["#FID"]][wrong$IID %in% c("s05", "s06", "s07")] <- "other"
  r <- statgen_gwas(X, wrong, samples = ids, a1 = "alt")
  expect_identical(r$OBS_CT, rep(57L, 5))
  keep <- !(ids$iid %in% c("s05", "s06", "s07"))
  want <- lm_x(s$y[keep], s$g[keep, 4])
  expect_equal(r$BETA[4], unname(want[1]), tolerance = 1e-8)
  # X without FIDs: the FID column of y is ignored, IID matches
  no_fid <- ids[c("iid", "sex")]
  expect_identical(statgen_gwas(X, wrong, samples = no_fid)$BETA, ref$BETA)
  # covariates follow the same rule
  cv <- data.frame(FID = ids$fid[o], IID = ids$iid[o], age = seq(20, 79)[o])
  rc <- statgen_gwas(X, both, covar = cv, samples = ids, a1 = "alt")
  want <- lm_x(s$y, s$g[, 1], data.frame(age = seq(20, 79)))
  expect_equal(rc$BETA[1], unname(want[1]), tolerance = 1e-8)
  expect_equal(rc$SE[1], unname(want[2]), tolerance = 1e-8)
})
