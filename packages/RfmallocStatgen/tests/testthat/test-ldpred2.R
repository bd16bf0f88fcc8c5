# LDpred2 (statgen_ldpred2_inf/grid/auto): against dense solve(), against
# bigsnpr's values on the fixture (ref/ldpred2-bigsnpr.rds, written by
# tools/oracle-ldpred2.R from the same inputs: helper-ldpred2.R), seeds and
# threads, and bad input.

# Generated data: n samples x m variants of a few correlated blocks, a
# phenotype with a few causal variants, summary statistics by lm().
ldp_generated <- function(n = 400, m = 40, window = 6, seed = 1) {
  set.seed(seed)
  base <- matrix(rnorm(n * 8), n, 8)
  g <- sapply(seq_len(m), function(j) {
    z <- base[, (j - 1) %/% 5 + 1] + rnorm(n)
    findInterval(z, stats::quantile(z, c(0.5, 0.85)))
  })
  causal <- unique(pmin(c(3, 17, 30), m))
  y <- drop(g[, causal] %*% c(0.3, -0.25, 0.2)[seq_along(causal)]) + rnorm(n)
  est <- t(apply(g, 2, function(x) summary(stats::lm(y ~ x))$coefficients[2, 1:2]))
  ss <- data.frame(ID = sprintf("v%d", seq_len(m)), beta = est[, 1], beta_se = est[, 2],
                   n_eff = n)
  R <- stats::cor(g)
  R[abs(row(R) - col(R)) > window] <- 0
  list(g = g, ss = ss, R = R)
}

# The inf solution by dense solve() (bigsnpr's definition, on the allele scale).
dense_inf <- function(R, ss, h2) {
  sc <- with(ss, sqrt(n_eff * beta_se^2 + beta^2))
  drop(solve(R + diag(nrow(R) / (h2 * ss$n_eff)), ss$beta / sc)) * sc
}

rel_l2 <- function(a, b) sqrt(sum((a - b)^2) / sum(b^2))

# The fixture pipeline of helper-ldpred2.R (skips without the fixture).
ldp_fx <- function() ldp_fixture(dirname(dirname(dirname(kg("1kg_bi.bed")))))

test_that("inf equals dense solve() to 1e-10 on a small window (f64 and f32 bands)", {
  gd <- ldp_generated()
  ref <- dense_inf(gd$R, gd$ss, 0.3)
  ld <- RfmallocStatgen:::.ld_from_dense(gd$R)
  fit <- statgen_ldpred2_inf(ld, gd$ss, h2 = 0.3, quiet = TRUE)
  expect_s3_class(fit, "statgen_ldpred2")
  expect_lt(rel_l2(coef(fit), ref), 1e-10)
  expect_identical(names(coef(fit)), gd$ss$ID)
  ld32 <- RfmallocStatgen:::.ld_from_dense(gd$R, dtype = "f32")
  R32 <- gd$R
  R32[] <- RfmallocStatgen:::.f32_values(RfmallocStatgen:::.f32_bytes(gd$R))
  fit32 <- statgen_ldpred2_inf(ld32, gd$ss, h2 = 0.3, quiet = TRUE)
  expect_lt(rel_l2(coef(fit32), dense_inf(R32, gd$ss, 0.3)), 1e-10)
  expect_output(print(fit), "LDpred2-inf: 40 variants")
})

test_that("inf equals dense solve() to 1e-10 on the fixture's chr22 band", {
  fx <- ldp_fx()
  k <- which(fx$ld$variants$CHR == "22")
  R <- as.matrix(ldp_as_dgc(fx$ld)[k, k])
  d <- RfmallocStatgen:::.ld_match(fx$gwas, fx$ld, NULL, quiet = TRUE)[k, ]
  ld22 <- RfmallocStatgen:::.ld_from_dense(R, variants = fx$ld$variants[k, ])
  ss <- data.frame(ID = d$ID, beta = d$beta, beta_se = d$beta_se, n_eff = d$n_eff)
  fit <- statgen_ldpred2_inf(ld22, ss, h2 = 0.4 * length(k) / nrow(fx$ld$variants), quiet = TRUE)
  expect_lt(rel_l2(coef(fit), dense_inf(R, ss, 0.4 * length(k) / nrow(fx$ld$variants))), 1e-10)
})

test_that("the fixture's LD (statgen_ld(samples =)) is cor() of the training half, as bigsnpr got", {
  fx <- ldp_fx()
  k <- which(fx$ld$variants$CHR == "22")
  R <- suppressWarnings(stats::cor(fx$X[fx$split$train, fx$cols[k], drop = FALSE]))
  R[is.na(R)] <- 0
  diag(R) <- 1
  pos <- fx$ld$variants$POS[k]
  R[abs(outer(pos, pos, "-")) > 1e6] <- 0
  expect_lt(max(abs(fx$ld[k, k] - R)), 1e-13)
  expect_identical(fx$ld$info$n_samples, length(fx$split$train))
})

ldp_ref <- function() {
  f <- test_path("ref", "ldpred2-bigsnpr.rds")
  if (!file.exists(f)) skip("ref/ldpred2-bigsnpr.rds is absent (tools/oracle-ldpred2.R writes it)")
  readRDS(f)
}

# The summary statistics bigsnpr was given (matched to the LD, as stored).
ldp_ref_sumstats <- function(ref, fx) {
  data.frame(ID = fx$ld$variants$ID, beta = ldp_from_f32(ref$sumstats$beta),
             beta_se = ldp_from_f32(ref$sumstats$beta_se), n_eff = ref$sumstats$n_eff)
}

test_that("the fixture pipeline reproduces the summary statistics and LD the oracle used", {
  ref <- ldp_ref()
  fx <- ldp_fx()
  expect_identical(nrow(fx$ld$variants), ref$m)
  expect_identical(fx$ld$variants$ID[c(1, ref$m)], ref$ids)
  d <- RfmallocStatgen:::.ld_match(fx$gwas, fx$ld, NULL, quiet = TRUE)
  s <- ldp_ref_sumstats(ref, fx)
  # In standard errors, not relative to beta: the GWAS's covariates are
  # fmalloc_pca's PCs (tol = 1e-10 on the singular values, so vectors to
  # about sqrt(1e-10) = 1e-5), whose last digits follow the kernels' ISA
  # path; a beta near 0 (1e-4 SE) then changes by 0.2% of itself on the
  # portable path, which no statistic sees. (Measured: 4e-7 SE AVX-512,
  # 7e-7 SE portable, f32 storage of beta included.)
  expect_lt(max(abs(d$beta - s$beta) / s$beta_se), 1e-5,
            label = "change of beta since tools/oracle-ldpred2.R ran, in standard errors")
  expect_lt(max(abs(d$beta_se / s$beta_se - 1)), 1e-6)
  expect_identical(as.integer(d$n_eff), s$n_eff)
})

test_that("inf matches bigsnpr on the fixture within 1e-6 (relative L2)", {
  ref <- ldp_ref()
  fx <- ldp_fx()
  # statgen_gwas's table as it is, flipped alleles matched
  expect_message(statgen_ldpred2_inf(fx$ld, fx$gwas, h2 = ref$h2),
                 "18820 variants matched by ID.* 873 flipped")
  fit <- statgen_ldpred2_inf(fx$ld, ldp_ref_sumstats(ref, fx), h2 = ref$h2, quiet = TRUE)
  expect_identical(length(coef(fit)), ref$m)
  d <- rel_l2(coef(fit), ldp_from_f32(ref$inf))
  expect_lt(d, 1e-6)
})

test_that("grid columns correlate >= 0.99 with bigsnpr's for the same grid", {
  ref <- ldp_ref()
  fx <- ldp_fx()
  g <- ref$grid[c("p", "h2", "sparse")]
  attr(g, "out.attrs") <- NULL
  fit <- statgen_ldpred2_grid(fx$ld, ldp_ref_sumstats(ref, fx), g, seed = 1, quiet = TRUE)
  expect_true(all(fit$grid$status == "ok"))
  b <- coef(fit)
  expect_false(anyNA(b))
  r <- sapply(seq_len(nrow(g)), function(k) stats::cor(b[, k], ldp_from_i16(ref$grid_beta[[k]])))
  expect_true(all(r >= 0.99), info = paste(signif(r, 4), collapse = " "))
  # sparse sets have exact zeros, as bigsnpr's
  expect_true(all(colSums(b[, g$sparse] == 0) > 0))
})

test_that("auto's h2 within 0.05 and p within a factor 2 of bigsnpr's chain means, no NA", {
  ref <- ldp_ref()
  fx <- ldp_fx()
  fit <- statgen_ldpred2_auto(fx$ld, ldp_ref_sumstats(ref, fx), h2_init = ref$h2,
                              p_init = exp(seq(log(1e-4), log(0.2), length.out = 16)),
                              burn_in = 500, num_iter = 1000, allow_jump_sign = FALSE,
                              shrink = 0.95, seed = 1, quiet = TRUE)
  expect_false(anyNA(coef(fit)))
  expect_true(all(fit$chains$status == "ok"))
  expect_lt(abs(fit$h2_est - ref$auto$h2), 0.05)
  expect_lt(abs(log(fit$p_est / ref$auto$p)), log(2))
  expect_gt(stats::cor(coef(fit), ldp_from_i16(ref$auto_beta)), 0.98)
  expect_output(print(fit), "16 chains")
  # scores on the other half predict as bigsnpr's do
  G <- fx$X[fx$split$test, fx$cols]
  r <- stats::cor(drop(G %*% coef(fit)), fx$qt[fx$split$test])
  expect_lt(abs(r - ref$score_r[["auto"]]), 0.03)
})

test_that("a seed reproduces the samplers whatever the thread count", {
  gd <- ldp_generated()
  ld <- RfmallocStatgen:::.ld_from_dense(gd$R)
  grid <- expand.grid(p = c(0.01, 0.1, 1), h2 = 0.2, sparse = c(FALSE, TRUE))
  withr::local_options(fmalloc.threads = 1)
  g1 <- statgen_ldpred2_grid(ld, gd$ss, grid, seed = 7, quiet = TRUE)
  a1 <- statgen_ldpred2_auto(ld, gd$ss, h2_init = 0.2, seed = 7, burn_in = 50, num_iter = 50,
                             quiet = TRUE)
  withr::local_options(fmalloc.threads = 2)
  g2 <- statgen_ldpred2_grid(ld, gd$ss, grid, seed = 7, quiet = TRUE)
  a2 <- statgen_ldpred2_auto(ld, gd$ss, h2_init = 0.2, seed = 7, burn_in = 50, num_iter = 50,
                             quiet = TRUE)
  expect_identical(coef(g1), coef(g2))
  expect_identical(a1$path_h2, a2$path_h2)
  expect_identical(coef(a1), coef(a2))
  g3 <- statgen_ldpred2_grid(ld, gd$ss, grid, seed = 8, quiet = TRUE)
  expect_false(identical(coef(g1), coef(g3)))
  set.seed(3)
  s1 <- statgen_ldpred2_grid(ld, gd$ss, grid, quiet = TRUE)
  set.seed(3)
  s2 <- statgen_ldpred2_grid(ld, gd$ss, grid, quiet = TRUE)
  expect_identical(coef(s1), coef(s2))
})

test_that("summary statistics are matched by ID and alleles; flips are handled and reported", {
  gd <- ldp_generated()
  v <- data.frame(ID = gd$ss$ID, A1 = "A", A2 = "G")
  ld <- RfmallocStatgen:::.ld_from_dense(gd$R, variants = v)
  ss <- cbind(gd$ss, a1 = "A", a0 = "G")
  ref <- coef(statgen_ldpred2_inf(ld, ss, h2 = 0.3, quiet = TRUE))
  sw <- ss[rev(seq_len(nrow(ss))), ] # another order, some alleles swapped, extra rows
  flip <- sw$ID %in% c("v3", "v10")
  sw$beta[flip] <- -sw$beta[flip]
  sw$a1[flip] <- "G"
  sw$a0[flip] <- "A"
  sw <- rbind(sw, data.frame(ID = "extra", beta = 0.1, beta_se = 0.1, n_eff = 400, a1 = "C",
                             a0 = "T"))
  expect_message(fit <- statgen_ldpred2_inf(ld, sw, h2 = 0.3),
                 "40 variants matched by ID, 40 with their alleles checked, 2 flipped.*1 rows")
  expect_equal(coef(fit), ref, tolerance = 1e-12)
  expect_identical(unname(fit$match[["flipped"]]), 2L)
  # a variant of the LD without summary statistics, other alleles, duplicates
  expect_error(statgen_ldpred2_inf(ld, ss[-5, ], h2 = 0.3, quiet = TRUE),
               class = "fm_error_emismatch", regexp = "v5")
  bad <- ss
  bad$a1[7] <- "C"
  expect_error(statgen_ldpred2_inf(ld, bad, h2 = 0.3, quiet = TRUE),
               class = "fm_error_emismatch", regexp = "v7")
  expect_error(statgen_ldpred2_inf(ld, rbind(ss, ss[1, ]), h2 = 0.3, quiet = TRUE),
               class = "fm_error_emismatch", regexp = "duplicated")
  # no ID: row order, then one row per variant
  noid <- gd$ss[c("beta", "beta_se", "n_eff")]
  expect_message(statgen_ldpred2_inf(ld, noid, h2 = 0.3), "in row order")
  expect_error(statgen_ldpred2_inf(ld, noid[-1, ], h2 = 0.3, quiet = TRUE),
               class = "fm_error_emismatch")
})

test_that("a statgen_gwas table is read directly (A1 against REF/ALT)", {
  gd <- ldp_generated(m = 12, window = 3)
  gw <- data.frame(PHENO = "y", ID = gd$ss$ID, REF = "G", ALT = "A",
                   A1 = rep(c("A", "G"), 6), OBS_CT = 400L,
                   BETA = gd$ss$beta * rep(c(1, -1), 6), SE = gd$ss$beta_se, ERRCODE = ".")
  ld <- RfmallocStatgen:::.ld_from_dense(gd$R, variants = data.frame(ID = gd$ss$ID, A1 = "A",
                                                                     A2 = "G"))
  a <- statgen_ldpred2_inf(ld, gw, h2 = 0.2, quiet = TRUE)
  b <- statgen_ldpred2_inf(ld, gd$ss, h2 = 0.2, quiet = TRUE)
  expect_equal(coef(a), coef(b), tolerance = 1e-12)
  expect_identical(sum(a$flipped), 6L)
  expect_error(statgen_ldpred2_inf(ld, rbind(gw, transform(gw, PHENO = "z")), h2 = 0.2),
               class = "fm_error_earg", regexp = "phenotypes")
  lg <- gw
  names(lg)[names(lg) == "BETA"] <- "OR"
  expect_error(statgen_ldpred2_inf(ld, lg, h2 = 0.2), class = "fm_error_earg", regexp = "n_eff")
})

test_that("bad summary statistics and arguments are classed errors naming the variants", {
  gd <- ldp_generated()
  ld <- RfmallocStatgen:::.ld_from_dense(gd$R)
  ss <- gd$ss
  na_se <- ss
  na_se$beta_se[4] <- NA
  expect_error(statgen_ldpred2_inf(ld, na_se, h2 = 0.3, quiet = TRUE), class = "fm_error_earg",
               regexp = "v4")
  neg <- ss
  neg$beta_se[9] <- 0
  expect_error(statgen_ldpred2_grid(ld, neg, data.frame(p = 0.1, h2 = 0.3, sparse = FALSE),
                                    quiet = TRUE), class = "fm_error_earg", regexp = "v9")
  non <- ss
  non$n_eff[2] <- NA
  expect_error(statgen_ldpred2_auto(ld, non, h2_init = 0.3, quiet = TRUE),
               class = "fm_error_earg", regexp = "n_eff")
  expect_error(statgen_ldpred2_inf(ld, ss[c("ID", "beta", "beta_se")], h2 = 0.3),
               class = "fm_error_earg", regexp = "n_eff")
  na_b <- ss
  na_b$beta[1] <- NA
  expect_error(statgen_ldpred2_inf(ld, na_b, h2 = 0.3, quiet = TRUE), class = "fm_error_earg")
  expect_error(statgen_ldpred2_inf(ld, ss, h2 = -1), class = "fm_error_earg")
  expect_error(statgen_ldpred2_inf(ld, ss, h2 = 0.3, shrink = 0), class = "fm_error_earg")
  expect_error(statgen_ldpred2_grid(ld, ss, data.frame(p = 2, h2 = 0.3, sparse = FALSE)),
               class = "fm_error_earg")
  expect_error(statgen_ldpred2_auto(ld, ss, h2_init = 0.3, seed = -1), class = "fm_error_earg")
  expect_error(statgen_ldpred2_inf(gd$R, ss, h2 = 0.3), class = "fm_error_earg")
  R2 <- gd$R
  diag(R2) <- 0.5
  expect_error(statgen_ldpred2_inf(RfmallocStatgen:::.ld_from_dense(R2), ss, h2 = 0.3,
                                   quiet = TRUE), class = "fm_error_eformat")
})

# An "LD matrix" far from positive semi-definite: r12 = r23 = 0.99, r13 = -0.99.
bad_ld <- function() {
  R <- matrix(c(1, 0.99, -0.99, 0.99, 1, 0.99, -0.99, 0.99, 1), 3)
  ss <- data.frame(ID = c("v1", "v2", "v3"), beta = c(0.5, -0.4, 0.5), beta_se = 1e-3,
                   n_eff = 1e6)
  list(ld = RfmallocStatgen:::.ld_from_dense(R), ss = ss)
}

test_that("an LD matrix not positive definite enough is reported with the shrinkage used", {
  b <- bad_ld()
  expect_error(statgen_ldpred2_inf(b$ld, b$ss, h2 = 1, quiet = TRUE),
               class = "fm_error_edegenerate", regexp = "shrink = 1")
  expect_error(statgen_ldpred2_inf(b$ld, b$ss, h2 = 1, shrink = 0.9, quiet = TRUE),
               class = "fm_error_edegenerate", regexp = "shrink = 0.9")
  expect_s3_class(statgen_ldpred2_inf(b$ld, b$ss, h2 = 1, shrink = 0.4, quiet = TRUE),
                  "statgen_ldpred2")
})

test_that("a diverging set or chain is reported, never returned as effects", {
  b <- bad_ld()
  expect_warning(g <- statgen_ldpred2_grid(b$ld, b$ss, data.frame(p = 1, h2 = 1, sparse = FALSE),
                                           seed = 1, quiet = TRUE), "diverged")
  expect_true(g$grid$status != "ok" && g$grid$diverged_at >= 1)
  expect_true(all(is.na(coef(g))))
  expect_error(statgen_ldpred2_auto(b$ld, b$ss, h2_init = 1, p_init = c(1, 0.9), seed = 1,
                                    burn_in = 10, num_iter = 10, quiet = TRUE),
               class = "fm_error_edegenerate", regexp = "every LDpred2-auto chain diverged")
})

test_that("bigsnpr live: the same inf on generated data (skipped without bigsnpr)", {
  skip_if_not_installed("bigsnpr")
  gd <- ldp_generated()
  ld <- RfmallocStatgen:::.ld_from_dense(gd$R)
  corr <- bigsnpr::as_SFBM(methods::as(gd$R, "dgCMatrix"), tempfile())
  b <- bigsnpr::snp_ldpred2_inf(corr, gd$ss[c("beta", "beta_se", "n_eff")], h2 = 0.3)
  expect_lt(rel_l2(coef(statgen_ldpred2_inf(ld, gd$ss, h2 = 0.3, quiet = TRUE)), b), 1e-6)
})

test_that("samplers report progress; an interrupt stops them, and the seed gives the same run again", {
  skip_on_os("windows")
  gd <- ldp_generated()
  ld <- RfmallocStatgen:::.ld_from_dense(gd$R)
  run <- function() statgen_ldpred2_auto(ld, gd$ss, h2_init = 0.2, p_init = c(0.01, 0.1),
                                         burn_in = 3e5, num_iter = 10, seed = 5, quiet = TRUE)
  r <- with_every_tick(collect_updates(run()))
  expect_gte(length(r$updates), 3)
  expect_match(r$updates[length(r$updates)], "LDpred2-auto: sweeps.*100%")
  after <- 0
  cond <- with_every_tick(tryCatch(
    collect_updates(run(), function(n) {
      if (n == 2) tools::pskill(Sys.getpid(), tools::SIGINT) else if (n > 2) after <<- after + 1
    }),
    interrupt = function(e) e))
  # the signal lands either in the sampler's C loop (which stops with
  # fm_error_ecancelled) or while R runs the progress callback (R's own
  # interrupt): both stop the run; which one is a matter of timing
  expect_true(inherits(cond, "fm_error_ecancelled") || inherits(cond, "interrupt"), label = class(cond)[1L])
  expect_lte(after, 1)
  expect_identical(coef(suppressWarnings(run())), coef(r$value))
})

test_that("a band from statgen_ld() (mapped, f64 or f32) gives inf = dense solve() and the samplers run", {
  gd <- ldp_generated()
  X <- Rfmalloc::fmalloc_bed(gd$g, new_runtime())
  for (dtype in c("f64", "f32")) {
    ld <- statgen_ld(X, window = 6, unit = "variants", dtype = dtype, runtime = new_runtime())
    ss <- gd$ss
    ss$ID <- ld$variants$ID
    R <- gd$R
    if (dtype == "f32") R[] <- RfmallocStatgen:::.f32_values(RfmallocStatgen:::.f32_bytes(R))
    fit <- statgen_ldpred2_inf(ld, ss, h2 = 0.3, quiet = TRUE)
    expect_lt(rel_l2(coef(fit), dense_inf(R, ss, 0.3)), if (dtype == "f64") 1e-10 else 1e-6)
    g <- statgen_ldpred2_grid(ld, ss, data.frame(p = c(0.05, 0.5), h2 = 0.3, sparse = FALSE),
                              seed = 2, quiet = TRUE)
    expect_false(anyNA(coef(g)))
    a <- statgen_ldpred2_auto(ld, ss, h2_init = 0.3, burn_in = 100, num_iter = 100, seed = 2,
                              quiet = TRUE)
    expect_false(anyNA(coef(a)))
  }
})

test_that("sumstats matched by ID need complete, unique IDs in the LD matrix", {
  set.seed(12)
  G <- matrix(rbinom(200 * 10, 2, 0.3), 200, 10)
  v <- data.frame(chr = "1", pos = seq(1000, by = 20000, length.out = 10), id = paste0("rs", 1:10),
                  ref = "A", alt = "G")
  ss <- data.frame(ID = v$id, a1 = "G", a0 = "A", beta = rnorm(10, 0, 0.05), beta_se = 0.05, n_eff = 200)
  X <- Rfmalloc::fmalloc_bed(G)
  vna <- v
  vna$id[7] <- NA
  expect_error(statgen_ldpred2_inf(statgen_ld(X, 100, variants = vna), ss[10:1, ], h2 = 0.2, quiet = TRUE),
               "no ID for variant 7", class = "fm_error_emismatch")
  vd <- v
  vd$id[2] <- "rs1"
  expect_error(statgen_ldpred2_inf(statgen_ld(X, 100, variants = vd), ss[-2, ], h2 = 0.2, quiet = TRUE),
               "the ID 'rs1' twice", class = "fm_error_emismatch")
  a <- statgen_ldpred2_inf(statgen_ld(X, 100, variants = v), ss[10:1, ], h2 = 0.2, quiet = TRUE)
  b <- statgen_ldpred2_inf(statgen_ld(X, 100, variants = v), ss, h2 = 0.2, quiet = TRUE)
  expect_identical(coef(a), coef(b))
})
