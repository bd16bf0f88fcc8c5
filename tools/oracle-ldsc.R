# bigsnpr's reference values for the LD tests of RfmallocStatgen (issue 16):
# snp_cor on chr22, snp_ld_scores genome-wide and snp_ldsc on the 1000
# Genomes fixture (fixtures/genotypes/1kg_phase3_subset/1kg_bi), computed
# with bigsnpr alone (no package of this repository) and saved, compactly,
# xz-compressed, to
#   packages/RfmallocStatgen/tests/testthat/ref/ldsc-bigsnpr.rds
# which test-ldsc.R reads (bigsnpr takes about 20 minutes to build from
# source, too heavy for make test). Command, from the repository root, with
# bigsnpr installed in /work/oracle-lib (install.packages("bigsnpr")):
#
#   R_LIBS=/work/oracle-lib Rscript tools/oracle-ldsc.R ../shared/fixtures
#
# What it computes (all samples: 1126; the fixture has no missing calls,
# which the script checks, so bigsnpr's missing-value rules do not come into
# play: snp_cor() and snp_ld_scores() take each pair's complete cases, as
# cor(use = "pairwise.complete.obs"), checked on generated data with bigsnpr
# 1.12.21; big_univLinReg() refuses missing calls, which
# snp_fastImputeSimple() must fill first, by mean, mode or at random):
# - cor22: snp_cor() of the 1097 chr22 variants, size = 1000 with
#   infos.pos = the .bim positions (bigsnpr then reads size in kb: pairs at
#   most 1,000,000 bp apart), alpha = 1 and thr_r2 = 0 (nothing thresholded);
#   the upper triangle with the diagonal as a column-compressed matrix
#   (p, i, x of the dsCMatrix snp_cor() returns, 0-based), and the chr22 variants whose
#   correlations are NaN (the constant ones).
# - ld_scores: snp_ld_scores() of every variant, per chromosome (bigsnpr
#   wants positions sorted), size = 1000 kb, in .bim order.
# - chi2, n: big_univLinReg() of QT on the genotypes, no covariates, over the
#   samples whose QT is not NA; chi2 = (estim / std.err)^2 (NA where the
#   variant is constant over those samples), n the samples used.
# - ldsc: snp_ldsc(ld_scores, ld_size = all variants, chi2, n) over the
#   variants with a chi2, for several argument sets (args and value of each);
#   ldsc22: the same on the chr22 variants alone with ld_size = their number,
#   without and with the jackknife (h2 about 1.49 and 1.47: the issue's
#   "bigsnpr gives 1.49 on the fixture").
suppressPackageStartupMessages({
  library(bigsnpr)
  library(Matrix)
})
args <- commandArgs(TRUE)
fx <- if (length(args)) args[1] else "../shared/fixtures"
prefix <- file.path(fx, "genotypes", "1kg_phase3_subset", "1kg_bi")
top <- normalizePath(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE),
                                                                 value = TRUE))), ".."))
out <- file.path(top, "packages", "RfmallocStatgen", "tests", "testthat", "ref",
                 "ldsc-bigsnpr.rds")

tmp <- tempfile("oracle-ldsc")
rds <- snp_readBed(paste0(prefix, ".bed"), backingfile = tmp)
obj <- snp_attach(rds)
G <- obj$genotypes
map <- obj$map
stopifnot(nrow(map) == 25161, !anyNA(G[, 1:10]))
n_missing <- sum(big_counts(G)[4, ], na.rm = TRUE)
stopifnot(n_missing == 0)

# chr22 correlations within 1000 kb
j22 <- which(map$chromosome == "22")
cor22 <- snp_cor(G, ind.col = j22, size = 1000, alpha = 1, thr_r2 = 0,
                 infos.pos = map$physical.pos[j22])
stopifnot(is(cor22, "dsCMatrix"), cor22@uplo == "U")
up <- cor22 # the upper triangle with the diagonal, column-compressed
# a constant variant: every correlation with another variant NaN
ends <- cbind(up@i + 1L, rep(seq_len(ncol(up)), diff(up@p)))
off <- ends[, 1] != ends[, 2]
count <- function(k) tabulate(c(ends[k, 1], ends[k, 2]), ncol(up))
nan_cols <- which(count(off & is.nan(up@x)) == count(off) & count(off) > 0)

# LD scores, per chromosome
ld_scores <- numeric(nrow(map))
for (chr in unique(map$chromosome)) {
  j <- which(map$chromosome == chr)
  ld_scores[j] <- snp_ld_scores(G, ind.col = j, size = 1000, infos.pos = map$physical.pos[j])
}

# GWAS of QT, all samples with a value, no covariates
ph <- read.delim(file.path(fx, "genotypes", "1kg_phase3_subset", "pheno", "1kg_pheno.tsv"),
                 check.names = FALSE)
y <- ph$QT[match(obj$fam$sample.ID, ph$IID)]
ind <- which(!is.na(y))
gw <- big_univLinReg(G, y[ind], ind.train = ind)
chi2 <- (gw$estim / gw$std.err)^2
# a variant constant over these samples has no test: bigsnpr gives NaN for
# most of them, but a rounding residue (chi2 about 1e-17) for some; NA for all
chi2[!is.finite(chi2) | big_colstats(G, ind.row = ind)$var == 0] <- NA
ok <- which(!is.na(chi2))

settings <- list(
  default = list(),
  intercept1 = list(intercept = 1),
  noblocks = list(blocks = NULL),
  noblocks_int1 = list(blocks = NULL, intercept = 1),
  blocks50_thr = list(blocks = 50, chi2_thr1 = 10, chi2_thr2 = 60),
  chrom_blocks = list(blocks = as.integer(factor(map$chromosome[ok],
                                                 levels = unique(map$chromosome)))))
ldsc <- lapply(settings, function(a) {
  v <- do.call(snp_ldsc, c(list(ld_score = ld_scores[ok], ld_size = nrow(map), chi2 = chi2[ok],
                                sample_size = length(ind)), a))
  list(args = a, value = v)
})

# The issue's "h2 = 1.49": chr22 alone (its variants with a chi2, which
# are also ld_size), intercept estimated, no jackknife (and with one)
ok22 <- intersect(ok, j22)
ldsc22 <- lapply(list(noblocks = NULL, blocks200 = 200), function(b)
  snp_ldsc(ld_scores[ok22], ld_size = length(ok22), chi2 = chi2[ok22], sample_size = length(ind),
           blocks = b))

ref <- list(
  meta = list(command = "R_LIBS=/work/oracle-lib Rscript tools/oracle-ldsc.R ../shared/fixtures",
              bigsnpr = as.character(packageVersion("bigsnpr")),
              bigstatsr = as.character(packageVersion("bigstatsr")),
              date = format(Sys.time(), "%Y-%m-%d"), n_samples = nrow(G),
              n_missing_calls = n_missing),
  ids = map$marker.ID,
  cor22 = list(ids = map$marker.ID[j22], p = up@p, i = up@i, x = up@x,
               nan_ids = map$marker.ID[j22][nan_cols]),
  ld_scores = ld_scores,
  chi2 = chi2, n = length(ind),
  ldsc = ldsc, ldsc22 = ldsc22)
saveRDS(ref, out, compress = "xz")
cat(sprintf("wrote %s (%.0f kB): %d chr22 pairs, %d NaN variants, h2 = %.6g, chr22 h2 = %.6g\n",
            out, file.size(out) / 1024, length(up@x), length(nan_cols),
            ldsc$default$value[["h2"]], ldsc22$noblocks[["h2"]]))
