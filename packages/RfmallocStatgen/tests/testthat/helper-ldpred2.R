# The LDpred2 fixture pipeline, shared by test-ldpred2.R and the oracle
# script tools/oracle-ldpred2.R (which sources this file): the 1kg fixture's
# samples with a QT value split in halves (training: GWAS and LD; the
# other half: scores), the GWAS of QT with fmalloc_pca's 10 PCs on the
# training half (statgen_gwas, A1 the minor allele, so that some variants
# are flipped against the LD's A1 = ALT), its autosomal rows without an
# ERRCODE, and the LD matrix of those variants on the training half
# (fixture_corr(): statgen_ld(samples =)). Generated data are never
# involved.

# The .bed prefix's path; `root` is the fixtures folder.
ldp_bed <- function(root = Sys.getenv("RFMALLOC_FIXTURES")) {
  file.path(root, "genotypes", "1kg_phase3_subset", "1kg_bi.bed")
}

# Training samples: half of those with a QT value, drawn with R's generator
# from seed 20261202 (sample.kind "Rejection", R >= 3.6), in .fam order.
ldp_split <- function(iid, qt) {
  ok <- which(!is.na(qt))
  old <- if (exists(".Random.seed", globalenv())) get(".Random.seed", globalenv()) else NULL
  on.exit(if (is.null(old)) rm(".Random.seed", envir = globalenv()) else
    assign(".Random.seed", old, envir = globalenv()))
  set.seed(20261202, kind = "Mersenne-Twister", normal.kind = "Inversion",
           sample.kind = "Rejection")
  train <- sort(sample(ok, length(ok) %/% 2L))
  list(train = train, test = setdiff(ok, train))
}

# The LD matrix of variants `cols` of X over samples `rows`: statgen_ld()
# of those columns with samples = rows, within window_bp on each
# chromosome, missing calls mean-imputed (the fixture has none), so that it
# is cor() of the training half's genotype columns, the matrix bigsnpr was
# given by tools/oracle-ldpred2.R (there built with cor() in R, equal to
# this band within 1e-13).
fixture_corr <- function(X, rows, cols, variants, window_bp = 1e6) {
  v <- data.frame(chr = variants$CHR, pos = variants$POS, id = variants$ID, ref = variants$A2,
                  alt = variants$A1, stringsAsFactors = FALSE)
  RfmallocStatgen::statgen_ld(Rfmalloc::fmalloc_select(X, cols), window = window_bp / 1000,
                              unit = "kb", missing = "mean", variants = v, samples = rows)
}

# The whole pipeline (cached per process): list(X, split, gwas (the rows
# used), ld, cols).
ldp_fixture <- local({
  cache <- NULL
  function(root = Sys.getenv("RFMALLOC_FIXTURES")) {
    if (!is.null(cache)) return(cache)
    X <- Rfmalloc::fmalloc_bed_open(ldp_bed(root))
    s <- Rfmalloc::fmalloc_samples(X)
    ph <- utils::read.delim(file.path(root, "genotypes", "1kg_phase3_subset", "pheno",
                                      "1kg_pheno.tsv"), check.names = FALSE)
    qt <- ph$QT[match(s$iid, ph$IID)]
    sp <- ldp_split(s$iid, qt)
    pca <- suppressMessages(Rfmalloc::fmalloc_pca(X, k = 10))
    y <- rep(NA_real_, nrow(s))
    y[sp$train] <- qt[sp$train]
    gw <- suppressMessages(RfmallocStatgen::statgen_gwas(X, y, covar = pca$x))
    v <- Rfmalloc::fmalloc_variants(X)
    use <- which(gw$ERRCODE == "." & v$chr %in% as.character(1:22))
    gw <- gw[use, ]
    variants <- data.frame(CHR = v$chr[use], ID = v$id[use], POS = v$pos[use], A1 = v$alt[use],
                           A2 = v$ref[use], stringsAsFactors = FALSE)
    ld <- fixture_corr(X, sp$train, use, variants)
    cache <<- list(X = X, split = sp, qt = qt, gwas = gw, ld = ld, cols = use)
    cache
  }
})

# A statgen_ld as a Matrix::dgCMatrix (both triangles), for bigsnpr.
ldp_as_dgc <- function(ld) {
  Matrix::sparseMatrix(i = ld$rowidx + 1L, p = as.integer(ld$colptr), x = ld$values,
                       dims = rep(length(ld$colptr) - 1L, 2))
}

# Effects stored compactly in the reference file: f32 bytes (inf) or
# int16 scaled by max |x| (grid, auto: compared by correlation).
ldp_f32 <- function(x) writeBin(as.double(x), raw(), size = 4L)
ldp_from_f32 <- function(b) readBin(b, "double", n = length(b) %/% 4L, size = 4L)
ldp_i16 <- function(x) {
  s <- max(abs(x)) / 32767
  list(scale = s, bytes = writeBin(as.integer(round(x / s)), raw(), size = 2L))
}
ldp_from_i16 <- function(q) readBin(q$bytes, "integer", n = length(q$bytes) %/% 2L, size = 2L) * q$scale
