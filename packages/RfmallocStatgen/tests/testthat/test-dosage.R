# statgen_gwas(family = "linear") on dosages: the 1kg_phase1_chr22_dosage
# fixture (5 samples x 10,376 variants; 1,904 variants have a non-integer
# dosage, written in the VCF's DS with at most 2 decimals) read from its .pgen
# with Rpgen's destination = "dosage", against plink2 --glm on the same .pgen
# and against lm() on the decoded dosages.
#
# Quantization. The "dosage" destination is DOS8 (core fm_codec_dos8.h): a
# dosage d is stored as round(127 d) / 127, within 1/254 of d (a DS of 0.5 is
# a tie, 63.5 / 127, and lands exactly 1/254 away). plink2 stores d in units
# of 1/16384, within 1/32768 of d. On the variants whose dosages are all
# integers both hold d exactly, so those rows must agree with plink2 to its
# printed precision (expect_plink2_rows: 1e-4 relative). On the others the
# two programs regress on different x, and the difference has to be bounded
# from the data: see quantization_bounds() below.

dos_path <- function(...) fixture_path("genotypes", "1kg_phase1_chr22_dosage", ...)

read_dosages <- function(rt) {
  Rpgen::rpgen_read(dos_path("1kg_p1_chr22.pgen"), destination = "dosage", runtime = rt)
}

# The source dosages d (variants x samples transposed to samples x variants):
# the legacy dosage file holds the VCF's DS text as written (README).
source_dosages <- function() {
  f <- dos_path("1kg_p1_chr22.dosage")
  d <- utils::read.delim(f, header = FALSE, skip = 1L, colClasses = c(rep("character", 3), rep("numeric", 5)))
  m <- t(as.matrix(d[, 4:8]))
  colnames(m) <- d[[1]]
  m
}

# A simulated phenotype (fixed seed), with 4 decimals so that the file plink2
# reads holds exactly the values R uses.
sim_dosage_pheno <- function(X) {
  s <- Rfmalloc::fmalloc_samples(X)
  set.seed(20240611)
  data.frame(`#FID` = s$fid, IID = s$iid, Y = round(stats::rnorm(nrow(s)), 4), check.names = FALSE)
}

plink2_dosage_glm <- function(ph) {
  skip_if_no_plink2()
  f <- tempfile(fileext = ".pheno")
  utils::write.table(ph, f, sep = "\t", quote = FALSE, row.names = FALSE)
  out <- tempfile("p2_dos")
  log <- system2("plink2", c("--pfile", sub("\\.pgen$", "", dos_path("1kg_p1_chr22.pgen")),
                             "--pheno", f, "--pheno-name", "Y",
                             "--glm", "allow-no-covars", "hide-covar", "omit-ref",
                             "--threads", "2", "--out", out),
                 stdout = TRUE, stderr = TRUE)
  g <- paste0(out, ".Y.glm.linear")
  if (!file.exists(g)) stop("plink2 failed:\n", paste(log, collapse = "\n"))
  d <- utils::read.delim(g, check.names = FALSE, na.strings = "NA")
  d <- d[d$TEST == "ADD", ]
  rownames(d) <- NULL
  d
}

# Rigorous bounds on what plink2 can report for one variant, given our x
# (the DOS8 values, known exactly) and a bound eps_i >= |x'_i - x_i| on
# plink2's values x' (eps_i = |x_i - d_i| + 1/32768). No covariates, so with
# centred y~ and x~:
#   beta = Sxy / Sxx,  Sxy = sum(x~ y~),  Sxx = sum(x~^2),
#   SE^2 = (Syy - Sxy^2 / Sxx) / ((n - 2) Sxx).
# Moving x by delta (|delta_i| <= eps_i) moves
#   Sxy by u = sum(delta_i y~_i):  |u| <= a = sum(eps_i |y~_i|),
#   Sxx by v = 2 sum(x~_i delta_i) + sum((delta_i - mean(delta))^2):
#        |v| <= b = 2 sum(|x~_i| eps_i) + sum(eps_i^2),
# so, when b < Sxx,
#   |beta' - beta| = |u Sxx - v Sxy| / (Sxx (Sxx + v))
#                 <= (a Sxx + b |Sxy|) / (Sxx (Sxx - b)),
# and with Sxy'^2 in [max(|Sxy| - a, 0)^2, (|Sxy| + a)^2], Sxx' in
# [Sxx - b, Sxx + b], SE' lies in
#   [sqrt(max(Syy - hi2 / (Sxx - b), 0) / ((n - 2)(Sxx + b))),
#    sqrt((Syy - lo2 / (Sxx + b)) / ((n - 2)(Sxx - b)))],
# and P' = 2 pt(-|t'|, n - 2) between the values at the extreme |t'|.
quantization_bounds <- function(x, eps, y) {
  n <- length(y)
  yt <- y - mean(y)
  syy <- sum(yt^2)
  xt <- x - mean(x)
  sxx <- sum(xt^2)
  sxy <- sum(xt * yt)
  a <- sum(eps * abs(yt))
  b <- 2 * sum(abs(xt) * eps) + sum(eps^2)
  if (!(b < sxx)) return(c(ok = 0, dbeta = NA, se_lo = NA, se_hi = NA, p_lo = NA, p_hi = NA))
  dbeta <- (a * sxx + b * abs(sxy)) / (sxx * (sxx - b))
  lo2 <- max(abs(sxy) - a, 0)^2
  hi2 <- (abs(sxy) + a)^2
  se_lo <- sqrt(max(syy - hi2 / (sxx - b), 0) / ((n - 2) * (sxx + b)))
  se_hi <- sqrt((syy - lo2 / (sxx + b)) / ((n - 2) * (sxx - b)))
  beta <- sxy / sxx
  t_lo <- max(abs(beta) - dbeta, 0) / se_hi
  t_hi <- (abs(beta) + dbeta) / se_lo
  c(ok = 1, dbeta = dbeta, se_lo = se_lo, se_hi = se_hi,
    p_lo = 2 * stats::pt(-t_hi, n - 2), p_hi = 2 * stats::pt(-t_lo, n - 2))
}

test_that("dosages from the .pgen match plink2 --glm row by row (exactly where dosages are integers, within the DOS8 bound elsewhere)", {
  skip_without_rpgen_reader()
  rt <- new_runtime(size_gb = 0.1)
  X <- read_dosages(rt)
  expect_identical(dim(X), c(5L, 10376L))
  x <- as.matrix(X[, ])
  d <- source_dosages()
  expect_identical(colnames(d), Rfmalloc::fmalloc_variants(X)$id)
  # DOS8 holds round(127 d) / 127: within half a step of the source
  expect_lte(max(abs(x - d)), 1 / 254 + 1e-12)
  nonint <- colSums(abs(d - round(d)) > 0) > 0
  expect_identical(sum(nonint), 1904L)
  expect_identical(max(abs(x[, !nonint] - d[, !nonint])), 0)

  ph <- sim_dosage_pheno(X)
  res <- statgen_gwas(X, ph, a1 = "alt")
  p2 <- plink2_dosage_glm(ph)
  # every row: the same variants, A1 (ALT: omit-ref / a1 = "alt"), OBS_CT, ERRCODE
  expect_identical(res$ID, p2$ID)
  expect_identical(res$A1, p2$A1)
  expect_identical(res$OBS_CT, as.integer(p2$OBS_CT))
  expect_identical(res$ERRCODE, p2$ERRCODE)
  ok <- p2$ERRCODE == "."
  expect_identical(sum(ok), 3152L)
  expect_gt(sum(ok & nonint), 1000)

  # integer dosages: the same x in both programs
  int_rows <- which(!nonint)
  got <- expect_plink2_rows(res[int_rows, ], p2[int_rows, ])
  expect_lt(max(got), 1e-4)

  # non-integer dosages: plink2's BETA, SE and P inside the bounds around ours,
  # widened by plink2's printing (6 significant digits: 5e-6 relative).
  y <- ph$Y
  eps <- abs(x - d) + 1 / 32768
  rows <- which(ok & nonint)
  bnd <- vapply(rows, function(j) quantization_bounds(x[, j], eps[, j], y), numeric(6))
  expect_true(all(bnd["ok", ] == 1)) # b < Sxx on every fitted variant: the bound applies
  print_tol <- 5e-6
  beta_gap <- abs(res$BETA[rows] - p2$BETA[rows])
  beta_tol <- bnd["dbeta", ] + print_tol * abs(p2$BETA[rows])
  expect_true(all(beta_gap <= beta_tol))
  expect_true(all(p2$SE[rows] >= bnd["se_lo", ] * (1 - print_tol)))
  expect_true(all(p2$SE[rows] <= bnd["se_hi", ] * (1 + print_tol)))
  expect_true(all(p2$P[rows] >= bnd["p_lo", ] * (1 - print_tol)))
  expect_true(all(p2$P[rows] <= bnd["p_hi", ] * (1 + print_tol)))
  # and the bound is not vacuous: the gap reaches a sizeable part of it
  # somewhere (measured: 0.98 of it), while it is far below 1 relative for
  # most variants
  expect_gt(max(beta_gap / beta_tol), 0.5)
  expect_lt(stats::median(beta_gap / abs(p2$BETA[rows])), 0.05)
})

test_that("dosage rows equal lm() on the decoded DOS8 dosages (50 variants with non-integer dosages) to 1e-8", {
  skip_without_rpgen_reader()
  rt <- new_runtime(size_gb = 0.1)
  X <- read_dosages(rt)
  ph <- sim_dosage_pheno(X)
  res <- statgen_gwas(X, ph, a1 = "alt")
  x <- as.matrix(X[, ])
  nonint <- colSums(abs(x - round(x)) > 0) > 0
  cand <- nonint & res$ERRCODE == "."
  alt_total <- colSums(x) # ALT dosage total over 10 alleles
  # 25 where ALT is the minor allele and 25 where REF is (ALT total above 5)
  cols <- c(utils::head(which(cand & alt_total < 5 - 1e-6), 25),
            utils::head(which(cand & alt_total > 5 + 1e-6), 25))
  expect_length(cols, 50)
  y <- ph$Y
  for (j in cols) {
    want <- stats::coef(summary(stats::lm(y ~ x[, j])))[2, ]
    expect_equal(res$BETA[j], unname(want[1]), tolerance = 1e-8)
    expect_equal(res$SE[j], unname(want[2]), tolerance = 1e-8)
    expect_equal(res$T_STAT[j], unname(want[3]), tolerance = 1e-8)
    expect_equal(res$P[j], unname(want[4]), tolerance = 1e-8)
    expect_identical(res$OBS_CT[j], 5L)
  }
  # the default a1 = "minor" tests REF where ALT's dosage total exceeds 5:
  # the same fit with BETA and T_STAT negated
  minor <- statgen_gwas(X, ph)
  flip <- minor$A1 != minor$ALT
  expect_identical(flip[cols], unname(alt_total[cols] > 5))
  expect_identical(minor$BETA[cols], ifelse(flip[cols], -1, 1) * res$BETA[cols])
  expect_identical(minor$SE[cols], res$SE[cols])
  expect_identical(minor$P[cols], res$P[cols])
  expect_identical(minor$A1[flip], minor$REF[flip])
})
