# gwas_accuracy.R (issue 15): the largest differences of
# RfmallocStatgen::statgen_gwas() from plink2 --glm (Debian plink2) on the
# 1kg fixture, every variant, for the closing note's table; the tests
# (packages/RfmallocStatgen/tests/testthat/test-*-plink2.R) assert the
# bounds, this prints the figures. No timing.
# Rows: linear QT without covariates, with plink2's 10 PCs, and with
# fmalloc_pca's 10 PCs (plink2 given the same PCs); logistic BT no-firth and
# hybrid (firth-fallback), without and with plink2's PCs. Columns: relative
# differences of BETA (or OR) and SE, P where P > 1e-300, rows compared,
# rows whose OBS_CT, ERRCODE or FIRTH? differ, and plink2's UNFINISHED rows
# (ours converge there; their OR gap is printed apart). Writes
# bench/results/gwas_accuracy.csv; then per-variant glm() and logistf
# oracles (printed).
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "lib.R"))
suppressPackageStartupMessages({library(Rfmalloc); library(RfmallocStatgen)})
if (!nzchar(Sys.which("plink2"))) stop("gwas_accuracy: plink2 is not installed (apt-get install plink2)")
root <- bench_root()
fx <- file.path(bench_fixtures(root), "genotypes", "1kg_phase3_subset")
if (!dir.exists(fx)) stop("gwas_accuracy: the 1kg fixture is absent: ", fx)
options(fmalloc.progress = FALSE)
work <- file.path(tempdir(), "gwas_accuracy")
dir.create(work, showWarnings = FALSE)
bfile <- file.path(fx, "1kg_bi")
pheno_file <- file.path(fx, "pheno", "1kg_pheno.tsv")
ph <- utils::read.delim(pheno_file, check.names = FALSE)
X <- fmalloc_bed_open(paste0(bfile, ".bed"))
s <- fmalloc_samples(X)

plink2 <- function(pheno, args, tag) {
  out <- file.path(work, tag)
  st <- system2("plink2", c("--bfile", bfile, "--pheno", pheno_file, "--pheno-name", pheno,
                            "--threads", "2", args, "--out", out), stdout = FALSE, stderr = FALSE)
  f <- Sys.glob(sprintf("%s.%s.glm.*", out, pheno))
  if (st != 0 || length(f) != 1L) stop("gwas_accuracy: plink2 failed: ", paste(args, collapse = " "))
  d <- utils::read.delim(f, check.names = FALSE)
  d[d$TEST == "ADD", ]
}
system2("plink2", c("--bfile", bfile, "--pca", "10", "--threads", "2", "--out",
                    file.path(work, "pca")), stdout = FALSE, stderr = FALSE)
pcs_file <- file.path(work, "pca.eigenvec")
pcs <- utils::read.delim(pcs_file, check.names = FALSE)
ours_pcs <- fmalloc_pca(X, k = 10, scale = "binomial", drop_constant = TRUE)
own <- data.frame(`#FID` = s$fid, IID = s$iid, ours_pcs$x[, 1:10], check.names = FALSE)
colnames(own)[-(1:2)] <- paste0("PC", 1:10)
own_file <- file.path(work, "own_pcs.tsv")
utils::write.table(own, own_file, sep = "\t", quote = FALSE, row.names = FALSE)

compare <- function(what, ours, p2) {
  beta <- if (is.null(p2$BETA)) "OR" else "BETA"
  se <- if (is.null(p2$SE)) "LOG(OR)_SE" else "SE"
  stopifnot(identical(ours$ID, p2$ID), identical(ours$A1, p2$A1))
  unf <- p2$ERRCODE == "UNFINISHED"
  ok <- p2$ERRCODE == "." & ours$ERRCODE == "."
  rel <- function(a, b) abs(a / b - 1)
  big <- ok & p2$P > 1e-300
  firth_diff <- if (is.null(p2[["FIRTH?"]])) 0L else sum(ours[["FIRTH?"]] != p2[["FIRTH?"]])
  data.frame(
    comparison = what, rows = sum(ok), beta_max = max(rel(ours[[beta]][ok], p2[[beta]][ok])),
    beta_median = stats::median(rel(ours[[beta]][ok], p2[[beta]][ok])),
    se_max = max(rel(ours[[se]][ok], p2[[se]][ok])), p_max = max(rel(ours$P[big], p2$P[big])),
    obs_ct_differ = sum(ours$OBS_CT != p2$OBS_CT),
    errcode_differ = sum(ours$ERRCODE[!unf] != p2$ERRCODE[!unf]), firth_differ = firth_diff,
    rows_beyond_1e3 = sum(rel(ours[[beta]][ok], p2[[beta]][ok]) > 1e-3),
    plink2_unfinished = sum(unf),
    unfinished_logor_gap_max = if (any(unf)) max(abs(log(ours$OR[unf]) - log(p2$OR[unf]))) else NA,
    stringsAsFactors = FALSE)
}

y <- function(col) ph[c("#FID", "IID", col)]
rows <- list(
  compare("linear QT, no covariates", statgen_gwas(X, y("QT")),
          plink2("QT", c("--glm", "allow-no-covars", "hide-covar"), "qt")),
  compare("linear QT, plink2's 10 PCs", statgen_gwas(X, y("QT"), covar = pcs),
          plink2("QT", c("--covar", pcs_file, "--glm", "hide-covar"), "qt_pc")),
  compare("linear QT, fmalloc_pca's 10 PCs", statgen_gwas(X, y("QT"), covar = own),
          plink2("QT", c("--covar", own_file, "--glm", "hide-covar"), "qt_own")),
  compare("logistic BT no-firth, no covariates",
          suppressMessages(statgen_gwas(X, y("BT"), family = "logistic", firth = "never")),
          plink2("BT", c("--glm", "allow-no-covars", "hide-covar", "no-firth"), "bt_nf")),
  compare("logistic BT hybrid, no covariates",
          suppressMessages(statgen_gwas(X, y("BT"), family = "logistic")),
          plink2("BT", c("--glm", "allow-no-covars", "hide-covar"), "bt_hy")),
  compare("logistic BT no-firth, plink2's 10 PCs",
          suppressMessages(statgen_gwas(X, y("BT"), covar = pcs, family = "logistic",
                                        firth = "never")),
          plink2("BT", c("--covar", pcs_file, "--glm", "hide-covar", "no-firth"), "bt_nf_pc")),
  compare("logistic BT hybrid, plink2's 10 PCs",
          suppressMessages(statgen_gwas(X, y("BT"), covar = pcs, family = "logistic")),
          plink2("BT", c("--covar", pcs_file, "--glm", "hide-covar"), "bt_hy_pc")))
res <- do.call(rbind, rows)
print(format(res, digits = 3), right = FALSE)
bench_write_csv(root, res, "gwas_accuracy.csv")

# Per-variant oracles with plink2's 10 PCs: glm(binomial, epsilon = 1e-14)
# polished by Newton steps on 200 random autosomal variants (plain fits),
# and logistf(pl = FALSE) on 50 of the Firth rows when it is installed
# (make bench installs it). Relative differences of log(OR) and its SE.
yb <- ph$BT[match(s$iid, ph$IID)] - 1
keep <- !is.na(yb)
C <- cbind(1, as.matrix(pcs[match(s$iid, pcs$IID), -(1:2)]))[keep, ]
plain <- suppressMessages(statgen_gwas(X, y("BT"), covar = pcs, family = "logistic", firth = "never",
                                       a1 = "alt"))
hy <- suppressMessages(statgen_gwas(X, y("BT"), covar = pcs, family = "logistic", a1 = "alt"))
auto <- plain[["#CHROM"]] != "X"
col_of <- function(j) X[, j][keep]
set.seed(7)
glm_rel <- t(vapply(sample(which(auto & plain$ERRCODE == "."), 200), function(j) {
  D <- cbind(C, col_of(j))
  f <- stats::glm.fit(D, yb[keep], family = stats::binomial(),
                      control = stats::glm.control(epsilon = 1e-14, maxit = 100))
  b <- f$coefficients
  for (it in 1:5) {
    p <- stats::plogis(drop(D %*% b))
    b <- b + solve(crossprod(D, D * (p * (1 - p))), crossprod(D, yb[keep] - p))
  }
  p <- stats::plogis(drop(D %*% b))
  se <- sqrt(diag(solve(crossprod(D, D * (p * (1 - p))))))[12]
  c(abs(log(plain$OR[j]) / b[12] - 1), abs(plain[["LOG(OR)_SE"]][j] / se - 1))
}, numeric(2)))
cat(sprintf("glm (200 variants, plain fits): log(OR) max rel %.2e, SE max rel %.2e\n",
            max(glm_rel[, 1]), max(glm_rel[, 2])))
if (requireNamespace("logistf", quietly = TRUE)) {
  firth_rows <- which(hy[["FIRTH?"]] %in% "Y" & hy$ERRCODE == "." & auto)
  set.seed(10)
  lf <- vapply(sample(firth_rows, 50), function(j) {
    dat <- data.frame(y = yb[keep], C[, -1], x = col_of(j))
    f <- logistf::logistf(y ~ ., data = dat, pl = FALSE,
                          control = logistf::logistf.control(maxit = 1000, maxstep = 5, xconv = 1e-12,
                                                             gconv = 1e-12, lconv = 1e-14))
    abs(log(hy$OR[j]) / unname(stats::coef(f)["x"]) - 1)
  }, numeric(1))
  cat(sprintf("logistf (50 Firth rows): log(OR) max rel %.2e\n", max(lf)))
} else {
  cat("logistf is not installed (tools/bench-setup.sh installs it): its comparison skipped\n")
}
