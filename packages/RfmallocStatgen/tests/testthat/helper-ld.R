# The fixture's LD band for the LD tests, computed in plain R: per
# chromosome, cor() of the genotype columns over all samples (the fixture
# has no missing calls), 0 for pairs more than window_bp apart, and for a
# constant variant 0 off the diagonal and 1 on it (the band's convention);
# the chromosomes' bands are joined block-diagonally. test-ldsc.R uses it
# on chr22 as an oracle independent of statgen_ld() (which gives the
# genome-wide band there).
fixture_ld_band <- function(G, window_bp = 1e6, chroms = NULL, dtype = "f64") {
  v <- Rfmalloc::fmalloc_variants(G)
  if (!is.null(chroms)) v$keep <- v$chr %in% chroms else v$keep <- TRUE
  cols <- split(which(v$keep), factor(v$chr[v$keep], levels = unique(v$chr[v$keep])))
  bands <- lapply(cols, function(j) {
    R <- suppressWarnings(stats::cor(G[, j]))
    R[is.na(R)] <- 0
    diag(R) <- 1
    R[abs(outer(v$pos[j], v$pos[j], "-")) > window_bp] <- 0
    .ld_from_dense(R, dtype = dtype)
  })
  offs <- c(0, cumsum(vapply(cols, length, 0)))
  nnz <- c(0, cumsum(vapply(bands, function(b) b$colptr[length(b$colptr)], 0)))
  colptr <- c(0, unlist(lapply(seq_along(bands), function(k) bands[[k]]$colptr[-1] + nnz[k])))
  rowidx <- unlist(lapply(seq_along(bands), function(k) bands[[k]]$rowidx + as.integer(offs[k])))
  values <- unlist(lapply(bands, `[[`, "values")) # doubles, or raw bytes of floats
  j <- unlist(cols)
  variants <- data.frame(CHR = v$chr[j], ID = v$id[j], POS = v$pos[j], A1 = v$alt[j],
                         A2 = v$ref[j])
  new_statgen_ld(colptr, rowidx, values, dtype, variants,
                 info = list(n_samples = nrow(G), window = c(bp = window_bp)))
}

# The chr22 block of fixture_ld_band() as a dense matrix (for the snp_cor
# reference test).
fixture_cor_dense <- function(G, chrom, window_bp = 1e6) {
  v <- Rfmalloc::fmalloc_variants(G)
  j <- which(v$chr == chrom)
  R <- suppressWarnings(stats::cor(G[, j]))
  R[abs(outer(v$pos[j], v$pos[j], "-")) > window_bp] <- 0
  R
}

# plink 1.9 (Debian's plink1.9) is the oracle of --r2 and --clump.
skip_if_no_plink19 <- function() {
  if (!nzchar(Sys.which("plink1.9"))) skip("plink1.9 is not installed (Debian package plink1.9)")
}
