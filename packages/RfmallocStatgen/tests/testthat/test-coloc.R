# statgen_coloc_abf() and statgen_coloc_signals() against coloc (CRAN; make
# setup installs it, the comparisons skip without it): coloc.abf to 1e-8 on
# the posteriors, coloc.bf_bf / coloc.susie and per-pair combine.abf to
# 1e-10; the fixture's GWAS of QT and BT (chr21) and generated data
# (labelled as such); bad input.

skip_if_no_coloc <- function() {
  if (!requireNamespace("coloc", quietly = TRUE))
    skip("the R package coloc (the oracle) is not installed: make setup installs it")
}

pp_names <- paste0("PP.H", 0:4, ".abf")

# coloc.abf quietly (it prints and warns on sdY and priors).
coloc_abf <- function(...) {
  out <- NULL
  utils::capture.output(out <- suppressWarnings(suppressMessages(coloc::coloc.abf(...))))
  out
}

# Generated data (not real): m SNPs, one causal SNP per trait (the same one
# when shared), z-scores of strength z1/z2 at it, effects on the scale of
# each trait's standard error.
gen_pair <- function(m = 300, shared = TRUE, z1 = 7, z2 = 6, seed = 1) {
  set.seed(seed)
  maf <- stats::runif(m, 0.02, 0.5)
  se1 <- 1.3 / sqrt(2 * 4000 * maf * (1 - maf))
  se2 <- 1 / sqrt(2 * 2500 * maf * (1 - maf) * 0.4 * 0.6)
  b1 <- stats::rnorm(m, 0, se1)
  b2 <- stats::rnorm(m, 0, se2)
  k1 <- ceiling(m / 3)
  k2 <- if (shared) k1 else ceiling(2 * m / 3)
  b1[k1] <- z1 * se1[k1]
  b2[k2] <- z2 * se2[k2]
  snp <- paste0("rs", seq_len(m))
  list(q = list(beta = b1, varbeta = se1^2, snp = snp, type = "quant", sdY = 1.3, MAF = maf,
                N = 4000, position = 1e6 + 50 * seq_len(m)),
       cc = list(beta = b2, varbeta = se2^2, snp = snp, type = "cc", MAF = maf, N = 2500, s = 0.4),
       qp = list(pvalues = 2 * stats::pnorm(-abs(b1 / se1)), MAF = maf, N = 4000, snp = snp,
                 type = "quant"),
       ccp = list(pvalues = 2 * stats::pnorm(-abs(b2 / se2)), MAF = maf, N = 2500, s = 0.4,
                  snp = snp, type = "cc"))
}

# Ours against coloc.abf: posteriors to 1e-8, SNP.PP.H4 and the lABFs
# (matched by SNP) to 1e-8; returns the largest posterior difference.
expect_coloc_abf <- function(d1, d2, ...) {
  ours <- suppressMessages(suppressWarnings(statgen_coloc_abf(d1, d2, ...)))
  ref <- coloc_abf(d1, d2, ...)
  expect_equal(ours$summary[["nsnps"]], ref$summary[["nsnps"]])
  d <- max(abs(ours$summary[pp_names] - ref$summary[pp_names]))
  expect_lt(d, 1e-8)
  r <- ref$results[match(ours$results$snp, ref$results$snp), ]
  expect_lt(max(abs(ours$results$SNP.PP.H4 - r$SNP.PP.H4)), 1e-8)
  expect_lt(max(abs(ours$results$lABF.df1 - r$lABF.df1)), 1e-8)
  expect_lt(max(abs(ours$results$lABF.df2 - r$lABF.df2)), 1e-8)
  expect_equal(ours$priors, ref$priors)
  d
}

test_that("coloc.abf on generated data: beta/varbeta quant and cc, P values + MAF (1e-8)", {
  skip_if_no_coloc()
  for (shared in c(TRUE, FALSE)) {
    g <- gen_pair(shared = shared)
    expect_coloc_abf(g$q, g$cc)
    expect_coloc_abf(g$qp, g$ccp)
    expect_coloc_abf(g$q, g$ccp)
    expect_coloc_abf(g$cc, g$qp, p1 = 2e-4, p2 = 5e-5, p12 = 3e-6)
  }
  # the shared case is H4, the other H3, clearly
  g <- gen_pair(shared = TRUE)
  expect_gt(statgen_coloc_abf(g$q, g$cc)$summary[["PP.H4.abf"]], 0.9)
  g <- gen_pair(shared = FALSE)
  expect_gt(statgen_coloc_abf(g$q, g$cc)$summary[["PP.H3.abf"]], 0.9)
})

test_that("sdY estimated as coloc does (with a message), and priors adjusted as coloc does", {
  skip_if_no_coloc()
  g <- gen_pair(m = 200)
  q <- g$q
  q$sdY <- NULL
  expect_message(res <- statgen_coloc_abf(q, g$cc), "sdY estimated")
  expect_true(res$sdY$estimated[1])
  expect_equal(res$sdY$sdY[1], 1.3, tolerance = 0.05)
  expect_coloc_abf(q, g$cc)
  # p1 * nsnps >= 1: 1 / (nsnps + 1), with a classed warning
  expect_warning(res <- statgen_coloc_abf(g$q, g$cc, p1 = 0.01), class = "statgen_warning_prior")
  expect_equal(res$priors[["p1"]], 1 / 201)
  expect_coloc_abf(g$q, g$cc, p1 = 0.01)
})

test_that("partly overlapping SNP sets: the intersection, reported, in d1's order", {
  skip_if_no_coloc()
  g <- gen_pair(m = 300)
  a <- g$q
  keep <- c(1:250)
  a[c("beta", "varbeta", "snp", "MAF", "position")] <- lapply(a[c("beta", "varbeta", "snp", "MAF", "position")],
                                                            function(v) rev(v[keep]))
  b <- g$cc
  keep2 <- 40:300
  b[c("beta", "varbeta", "snp", "MAF")] <- lapply(b[c("beta", "varbeta", "snp", "MAF")], function(v) v[keep2])
  expect_message(res <- statgen_coloc_abf(a, b), "211 SNPs are in both data sets; 39 of d1 and 50 of d2")
  expect_equal(res$dropped, c(d1 = 39, d2 = 50))
  expect_identical(res$results$snp, intersect(a$snp, b$snp))
  expect_coloc_abf(a, b)
})

# The fixture's GWAS (1000 Genomes subset, simulated phenotypes QT and BT)
# on chr21, which holds both traits' strongest hits: coloc data sets from
# statgen_gwas() rows (variants with a fit), MAF from fmalloc_allele_freq().
kg_coloc_sets <- function() {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  v <- Rfmalloc::fmalloc_variants(X)
  X21 <- Rfmalloc::fmalloc_select(X, which(v$chr == "21"))
  ph <- kg_pheno()
  qt <- statgen_gwas(X21, ph[c("#FID", "IID", "QT")])
  bt <- suppressMessages(statgen_gwas(X21, ph[c("#FID", "IID", "BT")], family = "logistic"))
  af <- Rfmalloc::fmalloc_allele_freq(X21)
  ok <- qt$ERRCODE == "." & bt$ERRCODE == "."
  f <- af$alt_freq[ok]
  cases <- mean(ph$BT[!is.na(ph$BT)] == 2)
  list(qt_res = qt, bt_res = bt, maf = af$alt_freq,
       qt = list(beta = qt$BETA[ok], varbeta = qt$SE[ok]^2, snp = qt$ID[ok], position = qt$POS[ok],
                 type = "quant", sdY = stats::sd(ph$QT, na.rm = TRUE), MAF = f, N = qt$OBS_CT[ok]),
       bt = list(beta = log(bt$OR[ok]), varbeta = bt[["LOG(OR)_SE"]][ok]^2, snp = bt$ID[ok],
                 position = bt$POS[ok], type = "cc", MAF = f, N = bt$OBS_CT[ok], s = cases),
       qt_p = list(pvalues = qt$P[ok], MAF = f, N = qt$OBS_CT[ok], snp = qt$ID[ok], type = "quant"),
       bt_p = list(pvalues = bt$P[ok], MAF = f, N = bt$OBS_CT[ok], s = cases, snp = bt$ID[ok],
                   type = "cc"),
       se = qt$SE[ok], n_dropped = sum(!ok))
}

test_that("coloc.abf on the fixture's GWAS of QT and BT (chr21), both forms of data set", {
  skip_if_no_coloc()
  s <- kg_coloc_sets()
  expect_gt(length(s$qt$snp), 500)
  d1 <- expect_coloc_abf(s$qt, s$bt)
  d2 <- expect_coloc_abf(s$qt_p, s$bt_p)
  d3 <- expect_coloc_abf(s$qt, s$bt_p)
  # both traits were simulated from the chr21 hit: H4
  res <- statgen_coloc_abf(s$qt, s$bt)
  expect_gt(res$summary[["PP.H4.abf"]], 0.99)
  # real summary statistics raise no varbeta warning, their SE does
  expect_no_warning(statgen_coloc_abf(s$qt, s$bt))
  q <- s$qt
  q$varbeta <- s$se
  expect_warning(statgen_coloc_abf(q, s$bt), class = "statgen_warning_varbeta")
  # statgen_coloc_dataset() makes the same data sets from the results
  expect_message(q <- statgen_coloc_dataset(s$qt_res, maf = s$maf, sdY = s$qt$sdY), "left out")
  b <- suppressMessages(statgen_coloc_dataset(s$bt_res, maf = s$maf, s = s$bt$s))
  k <- match(s$qt$snp, q$snp)
  expect_equal(lapply(q[names(s$qt)], function(v) if (length(v) > 1L) v[k] else v), s$qt)
  k <- match(s$bt$snp, b$snp)
  expect_equal(lapply(b[names(s$bt)], function(v) if (length(v) > 1L) v[k] else v), s$bt)
  expect_equal(suppressMessages(statgen_coloc_abf(q, b))$summary, statgen_coloc_abf(s$qt, s$bt)$summary)
  expect_error(statgen_coloc_dataset(s$qt_res, pheno = "BT"), class = "fm_error_earg")
  expect_error(statgen_coloc_dataset(s$qt_res, maf = 1:3), class = "fm_error_earg")
  expect_error(statgen_coloc_dataset(data.frame(a = 1)), class = "fm_error_earg")
  # rows without a fit (monomorphic on chr21) have NA statistics: an error, not dropped
  if (s$n_dropped > 0) {
    q <- s$qt
    q$varbeta[3] <- NA
    expect_error(statgen_coloc_abf(q, s$bt), class = "fm_error_earg")
  }
})

# ---- the matrix form ----

# Generated log BF matrices (not real data): n signals x m SNPs, background
# noise and a peak per signal.
gen_bf <- function(n, m, peak = 12, seed = 1, snp = paste0("rs", seq_len(m))) {
  set.seed(seed)
  x <- matrix(stats::rnorm(n * m, -0.5, 0.7), n, m, dimnames = list(paste0("s", seq_len(n)), snp))
  for (i in seq_len(n)) x[i, sample.int(m, 1)] <- peak * stats::runif(1, 0.3, 1.5)
  x
}

# coloc's per-pair combine.abf on the rows of two matrices (same columns).
coloc_pairwise <- function(a, b, p1, p2, p12) {
  out <- array(NA_real_, c(nrow(a), nrow(b), 5))
  for (i in seq_len(nrow(a))) for (j in seq_len(nrow(b)))
    out[i, j, ] <- coloc:::combine.abf(a[i, ], b[j, ], p1, p2, p12, quiet = TRUE)
  out
}

test_that("every pair at once equals coloc.bf_bf and per-pair combine.abf to 1e-10", {
  skip_if_no_coloc()
  a <- gen_bf(9, 400, seed = 1)
  b <- gen_bf(7, 400, seed = 2)
  b[3, ] <- a[2, ] + stats::rnorm(400, 0, 0.01) # a shared signal
  res <- statgen_coloc_signals(a, b)
  ref <- coloc::coloc.bf_bf(a, b, trim_by_posterior = FALSE)$summary
  ours <- as.data.frame(res)
  expect_identical(ours$idx1, ref$idx1)
  expect_identical(ours$idx2, ref$idx2)
  expect_identical(ours$hit1, ref$hit1)
  expect_identical(ours$hit2, ref$hit2)
  expect_lt(max(abs(as.matrix(ours[pp_names]) - as.matrix(ref[, pp_names, with = FALSE]))), 1e-10)
  # coloc.bf_bf's default (trim_by_posterior = TRUE) trims nothing here: same SNPs
  ref2 <- coloc::coloc.bf_bf(a, b)$summary
  expect_lt(max(abs(as.matrix(ours[pp_names]) - as.matrix(ref2[, pp_names, with = FALSE]))), 1e-10)
  pw <- coloc_pairwise(a, b, 1e-4, 1e-4, 5e-6)
  expect_lt(max(abs(res$pp - pw)), 1e-10)
  expect_identical(which(res$pp[, , "PP.H4.abf"] == max(res$pp[, , "PP.H4.abf"]), arr.ind = TRUE)[1, ],
                   c(row = 2L, col = 3L))
  # the single-pair function agrees with the matrix form
  expect_equal(unname(res$log_numerators[4, 5, ]),
               unname(.coloc_pairs(a[4, , drop = FALSE], b[5, , drop = FALSE], 1e-4, 1e-4, 5e-6)$lh[1, 1, ]),
               tolerance = 1e-13)
})

test_that("the matrix form is independent of the panel budget (many panels)", {
  a <- gen_bf(23, 150, seed = 3)
  b <- gen_bf(17, 150, seed = 4)
  r1 <- statgen_coloc_signals(a, b)
  old <- Rfmalloc::fmalloc_panel_budget()
  withr::defer(Rfmalloc::fmalloc_panel_budget(old))
  Rfmalloc::fmalloc_panel_budget(8 * (2 * 150 * 4 + 16))
  r2 <- statgen_coloc_signals(a, b)
  expect_lt(max(abs(r1$pp - r2$pp)), 1e-13)
})

test_that("underflow and near-cancellation pairs equal the per-pair computation", {
  skip_if_no_coloc()
  m <- 60
  snp <- paste0("rs", seq_len(m))
  # disjoint peaks of 700 to 1500 (products of exp() underflow) and very
  # negative log BFs (-3000)
  a <- matrix(0, 4, m, dimnames = list(NULL, snp))
  b <- matrix(0, 3, m, dimnames = list(NULL, snp))
  for (i in 1:4) a[i, 2 * i] <- 500 + 250 * i
  for (j in 1:3) b[j, 2 * j + 21] <- 1500 - 200 * j
  a[4, ] <- a[4, ] - 3000
  res <- statgen_coloc_signals(a, b)
  expect_gt(res$exact[["underflow"]], 0)
  expect_lt(max(abs(res$pp - coloc_pairwise(a, b, 1e-4, 1e-4, 5e-6))), 1e-10)
  # both signals on one SNP: H3 from the exact path
  a2 <- gen_bf(3, m, peak = 0, seed = 5, snp = snp)
  b2 <- gen_bf(2, m, peak = 0, seed = 6, snp = snp)
  a2[, 17] <- 45
  b2[, 17] <- 40
  res2 <- statgen_coloc_signals(a2, b2)
  expect_equal(res2$exact[["h3"]], 6)
  expect_lt(max(abs(res2$pp - coloc_pairwise(a2, b2, 1e-4, 1e-4, 5e-6))), 1e-10)
  # lH3 against the definition: log sum_{k != l} exp(L1k + L2l), in R
  x <- a2[1, ]
  y <- b2[2, ]
  o <- outer(x, y, "+")
  diag(o) <- -Inf
  l3 <- log(1e-4) + log(1e-4) + max(o) + log(sum(exp(o - max(o))))
  expect_equal(res2$log_numerators[1, 2, "H3"], l3, tolerance = 1e-12)
})

test_that("a 'null' column and different SNP sets are handled as coloc.bf_bf does", {
  skip_if_no_coloc()
  a <- gen_bf(5, 200, seed = 7)
  b <- gen_bf(4, 200, seed = 8)
  a <- cbind(a, null = stats::rnorm(5, 0, 0.3))
  b <- cbind(b, null = 0)
  res <- statgen_coloc_signals(a, b)
  ref <- coloc::coloc.bf_bf(a, b, trim_by_posterior = FALSE)$summary
  expect_lt(max(abs(as.matrix(as.data.frame(res)[pp_names]) -
                      as.matrix(ref[, pp_names, with = FALSE]))), 1e-10)
  # partly shared SNPs: pairs over the intersection; a signal peaking
  # outside it is trimmed (NA), as overlap.min says
  a <- gen_bf(4, 200, peak = 0, seed = 9)
  b <- gen_bf(3, 200, peak = 0, seed = 10, snp = paste0("rs", 51:250))
  a[1, "rs10"] <- 30 # outside the shared SNPs rs51 .. rs200
  a[2, "rs60"] <- 20
  a[3, "rs120"] <- 15
  a[4, "rs190"] <- 18
  b[1, "rs70"] <- 20
  b[2, "rs150"] <- 12
  b[3, "rs190"] <- 25
  expect_message(expect_message(res <- statgen_coloc_signals(a, b), "150 SNPs are in both"),
                 "3 of 12 pairs")
  expect_true(all(res$trimmed[1, ]) && !any(res$trimmed[-1, ]))
  expect_true(all(is.na(res$pp[1, , ])))
  expect_lt(res$share1[[1]], 1e-6)
  ref <- coloc::coloc.bf_bf(a, b, trim_by_posterior = FALSE)$summary
  ours <- as.data.frame(suppressMessages(statgen_coloc_signals(a, b, overlap_min = 0)))
  expect_lt(max(abs(as.matrix(ours[pp_names]) - as.matrix(ref[, pp_names, with = FALSE]))), 1e-10)
})

test_that("susie fits: the credible sets' signals, as coloc.susie", {
  skip_if_no_coloc()
  skip_if_not_installed("susieR")
  # generated genotypes and traits (not real data)
  set.seed(11)
  n <- 600
  m <- 120
  X <- matrix(stats::rbinom(n * m, 2, 0.3), n, m)
  for (k in 2:m) { # some LD: copy part of the previous column
    cp <- stats::runif(n) < 0.5
    X[cp, k] <- X[cp, k - 1]
  }
  storage.mode(X) <- "double"
  colnames(X) <- paste0("rs", seq_len(m))
  y1 <- drop(X[, c(20, 80)] %*% c(0.5, -0.4)) + stats::rnorm(n)
  y2 <- 0.45 * X[, 20] + stats::rnorm(n)
  f1 <- susieR::susie(X, y1, L = 5)
  f2 <- susieR::susie(X, y2, L = 5)
  skip_if(length(f1$sets$cs) < 2 || length(f2$sets$cs) < 1, "susie found fewer credible sets than simulated")
  res <- statgen_coloc_signals(f1, f2)
  ref <- coloc::coloc.susie(f1, f2)$summary
  expect_identical(dim(res$pp)[1:2], c(length(f1$sets$cs), length(f2$sets$cs)))
  ours <- as.data.frame(res)
  expect_identical(ours$hit1, ref$hit1)
  expect_identical(ours$hit2, ref$hit2)
  expect_lt(max(abs(as.matrix(ours[pp_names]) - as.matrix(ref[, pp_names, with = FALSE]))), 1e-10)
  expect_gt(max(res$pp[, , "PP.H4.abf"]), 0.8)
})

# ---- bad input ----

test_that("bad data sets are classed errors naming the field", {
  g <- gen_pair(m = 50)
  q <- g$q
  cc <- g$cc
  bad <- function(d, class, pattern = NULL, other = cc) {
    expect_error(suppressMessages(statgen_coloc_abf(d, other)), class = class, regexp = pattern)
  }
  d <- q; d$varbeta[5] <- NA; bad(d, "fm_error_earg", "varbeta has 1 missing")
  d <- q; d$varbeta[7] <- 0; bad(d, "fm_error_earg", "rs7")
  d <- q; d$varbeta[7] <- -1e-3; bad(d, "fm_error_earg", "positive")
  d <- q; d$varbeta[7] <- Inf; bad(d, "fm_error_earg")
  d <- q; d$beta[2] <- NaN; bad(d, "fm_error_earg")
  d <- q; d$beta[2] <- Inf; bad(d, "fm_error_earg", "not finite")
  # the varbeta trap: an se under another name, or varbeta equal to it
  d <- q; d$se <- sqrt(d$varbeta); d$varbeta <- NULL; bad(d, "fm_error_earg", "varbeta = se\\^2")
  d <- q; d$se <- sqrt(d$varbeta); d$varbeta <- d$se; bad(d, "fm_error_earg", "not the standard error")
  d <- q; d$SE <- sqrt(d$varbeta) * 2; bad(d, "fm_error_emismatch")
  d <- q; d$se <- sqrt(d$varbeta)
  expect_s3_class(statgen_coloc_abf(d, cc), "statgen_coloc") # consistent: fine
  # varbeta given the SE (or a variance squared once more): a warning
  d <- q; d$varbeta <- sqrt(d$varbeta)
  expect_warning(statgen_coloc_abf(d, cc), class = "statgen_warning_varbeta")
  d <- q; d$varbeta <- d$varbeta^2
  expect_warning(statgen_coloc_abf(d, cc), "squared")
  # P values without N, s; bad P values, MAF, N
  p <- g$qp
  d <- p; d$N <- NULL; bad(d, "fm_error_earg", "without N")
  d <- g$ccp; d$s <- NULL; bad(d, "fm_error_earg", "without s")
  d <- p; d$pvalues[3] <- 0; bad(d, "fm_error_earg", "pvalues")
  d <- p; d$pvalues[3] <- 1.2; bad(d, "fm_error_earg")
  d <- p; d$MAF[4] <- 0; bad(d, "fm_error_earg", "MAF")
  d <- p; d$MAF[4] <- 1; bad(d, "fm_error_earg", "MAF")
  d <- p; d$MAF[4] <- NA; bad(d, "fm_error_earg", "MAF has 1 missing")
  d <- p; d$N <- -5; bad(d, "fm_error_earg", "N")
  d <- g$ccp; d$s <- 1.5; bad(d, "fm_error_earg", "proportion of cases")
  d <- g$ccp; d$s <- c(0.3, 0.4); bad(d, "fm_error_earg", "one number")
  d <- q; d$sdY <- NA_real_; bad(d, "fm_error_earg", "sdY has 1 missing")
  d <- q; d$sdY <- -1; bad(d, "fm_error_earg", "sdY")
  d <- p; d$pvalues <- NULL; bad(d, "fm_error_earg", "needs beta and varbeta")
  d <- q; d$sdY <- NULL; d$MAF <- NULL; bad(d, "fm_error_earg", "sdY")
  d <- q; d$type <- "binary"; bad(d, "fm_error_earg", "type")
  d <- q; d$snp[2] <- d$snp[1]; bad(d, "fm_error_earg", "duplicated")
  d <- q; d$snp <- NULL; bad(d, "fm_error_earg", "snp")
  d <- q; d$beta <- d$beta[-1]; bad(d, "fm_error_emismatch", "49 values for 50 SNPs")
  d <- q; d$snp <- paste0("x", d$snp); bad(d, "fm_error_emismatch", "share no SNP")
  bad(list(1, 2), "fm_error_earg")
  d <- cc; d$position <- q$position; d$position[9] <- 1; bad(q, "fm_error_emismatch", "positions", other = d)
  expect_error(statgen_coloc_abf(q, cc, p12 = 0), class = "fm_error_earg")
  expect_error(statgen_coloc_abf(q, cc, p1 = NA), class = "fm_error_earg")
})

test_that("bad signal matrices are classed errors", {
  a <- gen_bf(3, 20)
  b <- gen_bf(2, 20)
  x <- a; x[2, 5] <- NA
  expect_error(statgen_coloc_signals(x, b), class = "fm_error_earg", regexp = "bf1\\[2, 'rs5'\\]")
  x <- b; x[1, 3] <- Inf
  expect_error(statgen_coloc_signals(a, x), class = "fm_error_earg", regexp = "finite")
  x <- a; colnames(x) <- NULL
  expect_error(statgen_coloc_signals(x, b), class = "fm_error_earg", regexp = "column names")
  x <- a; colnames(x)[2] <- colnames(x)[1]
  expect_error(statgen_coloc_signals(x, b), class = "fm_error_earg", regexp = "twice")
  x <- b; colnames(x) <- paste0("z", colnames(x))
  expect_error(statgen_coloc_signals(a, x), class = "fm_error_emismatch")
  expect_error(statgen_coloc_signals(a, "b"), class = "fm_error_earg")
  expect_error(statgen_coloc_signals(a, b, p12 = 2), class = "fm_error_earg")
  expect_error(statgen_coloc_signals(a, b, overlap_min = -1), class = "fm_error_earg")
  # one signal as a named vector
  r <- statgen_coloc_signals(a[1, ], b)
  expect_identical(dim(r$pp), c(1L, 2L, 5L))
  # no signal (a susie fit without credible set gives none): no pair
  r <- statgen_coloc_signals(a[0, , drop = FALSE], b)
  expect_identical(dim(r$pp), c(0L, 2L, 5L))
  expect_identical(nrow(as.data.frame(r)), 0L)
  expect_error(plot(r), class = "fm_error_earg")
})

test_that("print, summary and plot methods", {
  g <- gen_pair(m = 80)
  res <- statgen_coloc_abf(g$q, g$cc)
  expect_output(print(res), "posteriors")
  s <- summary(res)
  expect_identical(names(s), c("nsnps", pp_names, "top_snp", "top_snp_pp"))
  expect_true(s$top_snp %in% g$q$snp)
  f <- tempfile(fileext = ".png")
  grDevices::png(f)
  plot(res)
  plot(res, which = "snps")
  sig <- statgen_coloc_signals(gen_bf(4, 50), gen_bf(3, 50, seed = 2))
  plot(sig)
  grDevices::dev.off()
  expect_gt(file.size(f), 1000)
  expect_output(print(sig), "largest PP.H4")
  expect_error(plot(res, which = "bars"), class = "fm_error_earg")
})
