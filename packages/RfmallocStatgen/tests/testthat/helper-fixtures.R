# Fixtures live in ../shared/fixtures (env RFMALLOC_FIXTURES, set by the
# Makefile); tests that need them skip, saying why, when they are absent.
kg <- function(...) fixture_path("genotypes", "1kg_phase3_subset", ...)

new_runtime <- function(env = parent.frame(), size_gb = 0.5) {
  rt <- Rfmalloc::open_fmalloc(tempfile(fileext = ".fm"), size_gb = size_gb, mode = "scratch")
  withr::defer(Rfmalloc::cleanup_fmalloc(rt), envir = env)
  rt
}

# plink2 on the fixture's 1kg_bi fileset with the fixture's phenotypes;
# returns the ADD rows of <out>.<pheno>.glm.<ext> (cached per argument set).
plink2_cache <- new.env()
plink2_glm <- function(pheno, ext, args = character(0)) {
  key <- paste(c(pheno, ext, args), collapse = " ")
  if (!is.null(plink2_cache[[key]])) return(plink2_cache[[key]])
  skip_if_no_plink2()
  out <- file.path(tempdir(), sprintf("p2_%d", length(ls(plink2_cache)) + 1))
  res <- system2("plink2", c("--bfile", sub("\\.bed$", "", kg("1kg_bi.bed")), "--pheno", kg("pheno", "1kg_pheno.tsv"),
                             "--pheno-name", pheno, "--threads", "2", args, "--out", out),
                 stdout = TRUE, stderr = TRUE)
  f <- sprintf("%s.%s.glm.%s", out, pheno, ext)
  if (!file.exists(f)) stop("plink2 failed:\n", paste(res, collapse = "\n"))
  d <- utils::read.delim(f, check.names = FALSE, na.strings = "NA")
  d <- d[d$TEST == "ADD", ]
  rownames(d) <- NULL
  plink2_cache[[key]] <- d
  d
}

# plink2 --pca 10 of the fixture: its .eigenvec as a data frame (#FID IID PC1..).
plink2_pcs <- function() {
  if (!is.null(plink2_cache$pcs)) return(plink2_cache$pcs)
  skip_if_no_plink2()
  out <- file.path(tempdir(), "p2_pca")
  system2("plink2", c("--bfile", sub("\\.bed$", "", kg("1kg_bi.bed")), "--pca", "10", "--threads", "2", "--out", out),
          stdout = FALSE, stderr = FALSE)
  plink2_cache$pcs <- utils::read.delim(paste0(out, ".eigenvec"), check.names = FALSE)
  plink2_cache$pcs
}

kg_pheno <- function() utils::read.delim(kg("pheno", "1kg_pheno.tsv"), check.names = FALSE)

# The fixture's BT with plink2's 10 PCs as the tests' oracles see it: the
# result (firth as given, A1 = ALT), and in X's sample order the 0/1
# phenotype y, the covariates C with the intercept, and the rows with a
# phenotype (keep); Firth's autosomal rows that fitted (firth_rows).
kg_bt_pcs <- function(firth = "fallback") {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  pcs <- plink2_pcs()
  ph <- kg_pheno()
  res <- suppressMessages(statgen_gwas(X, ph[c("#FID", "IID", "BT")], covar = pcs,
                                       family = "logistic", firth = firth, a1 = "alt"))
  s <- Rfmalloc::fmalloc_samples(X)
  y <- ph$BT[match(s$iid, ph$IID)] - 1
  list(X = X, res = res, y = y, keep = !is.na(y),
       C = cbind(1, as.matrix(pcs[match(s$iid, pcs$IID), -(1:2)])),
       firth_rows = which(res[["FIRTH?"]] %in% "Y" & res$ERRCODE == "." & res[["#CHROM"]] != "X"))
}

# Every row agrees with plink2's: same variants, OBS_CT and ERRCODE; BETA and
# SE within 1e-4 relative (plink2 prints 6 significant digits: its value
# carries up to 5e-6 relative rounding), P within 1e-3 relative where
# P > 1e-300. Returns the largest relative differences seen.
expect_plink2_rows <- function(ours, p2, beta = "BETA", se = "SE") {
  expect_identical(ours$ID, p2$ID)
  expect_identical(ours$A1, p2$A1)
  expect_identical(ours$OBS_CT, as.integer(p2$OBS_CT))
  expect_identical(ours$ERRCODE, p2$ERRCODE)
  ok <- p2$ERRCODE == "."
  rel <- function(a, b) abs(a - b) / abs(b)
  rb <- rel(ours[[beta]][ok], p2[[beta]][ok])
  rs <- rel(ours[[se]][ok], p2[[se]][ok])
  big <- ok & p2$P > 1e-300
  rp <- rel(ours$P[big], p2$P[big])
  expect_lt(max(rb), 1e-4)
  expect_lt(max(rs), 1e-4)
  expect_lt(max(rp), 1e-3)
  c(beta = max(rb), se = max(rs), p = max(rp))
}

# Rpgen is a suggested package: the reader tests skip, saying why, without it.
skip_without_rpgen_reader <- function() {
  ok <- tryCatch({
    loadNamespace("Rpgen")
    TRUE
  }, error = function(e) conditionMessage(e))
  if (!isTRUE(ok)) testthat::skip(paste("Rpgen does not load:", ok))
}
