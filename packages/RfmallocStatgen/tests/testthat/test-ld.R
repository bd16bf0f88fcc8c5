# statgen_ld(): against plink 1.9's --r2 (plain r^2 of allele counts), R's
# cor() on the decoded genotypes, and its own layout, storage and products.

# plink1.9 --r2 over a fileset prefix: its pairs as a data frame (SNP_A,
# SNP_B, R2), every pair within window_kb (no variant-count limit).
plink19_r2 <- function(prefix, window_kb, r2_min = 0, args = character(0)) {
  skip_if_no_plink19()
  out <- tempfile("p19_")
  res <- system2("plink1.9", c("--bfile", prefix, "--r2", "--ld-window", "999999", "--ld-window-kb",
                               window_kb, "--ld-window-r2", r2_min, "--threads", "2", args, "--out", out),
                 stdout = TRUE, stderr = TRUE)
  f <- paste0(out, ".ld")
  if (!file.exists(f)) stop("plink1.9 failed:\n", paste(res, collapse = "\n"))
  utils::read.table(f, header = TRUE, stringsAsFactors = FALSE)[c("SNP_A", "SNP_B", "R2")]
}

# The band's pairs (upper triangle, off the diagonal) as SNP_A, SNP_B, r.
band_pairs <- function(ld) {
  n <- dim(ld)[1]
  cols <- rep.int(seq_len(n), diff(ld$colptr[]))
  rows <- ld$rowidx[] + 1L
  v <- if (ld$dtype == "f32") RfmallocStatgen:::.f32_values(ld$values[]) else ld$values[]
  up <- rows < cols
  ids <- ld$variants$ID
  data.frame(SNP_A = ids[rows[up]], SNP_B = ids[cols[up]], r = v[up], stringsAsFactors = FALSE)
}

kg22 <- function() {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  Rfmalloc::fmalloc_select(X, which(Rfmalloc::fmalloc_variants(X)$chr == "22"))
}

# Dense oracle: cor() of G (mean-imputed when asked), zero outside |pos| <= w,
# 0 where undefined, 1 on the diagonal.
dense_ld <- function(G, pos, w, impute = TRUE) {
  if (impute) G <- apply(G, 2, function(x) replace(x, is.na(x), mean(x, na.rm = TRUE)))
  C <- suppressWarnings(stats::cor(G, use = if (impute) "everything" else "pairwise.complete.obs"))
  C[abs(outer(pos, pos, "-")) > w] <- 0
  C[is.na(C)] <- 0
  diag(C) <- 1
  C
}

test_that("r^2 equals plink1.9 --r2 on chr22 within 1000 kb, pair for pair", {
  X <- kg22()
  ld <- statgen_ld(X, window = 1000)
  ours <- band_pairs(ld)
  p19 <- plink19_r2(sub("\\.bed$", "", kg("1kg_bi.bed")), 1000, args = c("--chr", "22"))
  key <- function(d) paste(d$SNP_A, d$SNP_B)
  # plink leaves out the pairs of its 14 monomorphic chr22 variants; we
  # store them as 0 (documented), and every other pair is in both
  mono <- ld$variants$ID[Rfmalloc::fmalloc_colVars(X) == 0]
  expect_length(mono, 14L)
  with_mono <- ours$SNP_A %in% mono | ours$SNP_B %in% mono
  expect_true(all(ours$r[with_mono] == 0))
  expect_setequal(key(ours[!with_mono, ]), key(p19))
  m <- match(key(p19), key(ours))
  expect_lt(max(abs(ours$r[m]^2 - p19$R2)), 1e-6)
  expect_false(anyNA(ld$values[]))
  # the thresholded band holds exactly plink's pairs with r^2 >= 0.2
  ld2 <- statgen_ld(X, window = 1000, r2_min = 0.2, missing = "pairwise")
  p19b <- plink19_r2(sub("\\.bed$", "", kg("1kg_bi.bed")), 1000, 0.2, c("--chr", "22"))
  expect_setequal(key(band_pairs(ld2)), key(p19b))
})

test_that("the band equals cor() of the decoded genotypes, zeros and ones where undefined", {
  X <- kg22()
  G <- X[, seq_len(ncol(X))]
  pos <- Rfmalloc::fmalloc_variants(X)$pos
  ld <- statgen_ld(X, window = 1000)
  expect_equal(dim(ld), c(1097L, 1097L))
  expect_identical(dimnames(ld)[[1]], Rfmalloc::fmalloc_variants(X)$id)
  B <- ld[, , drop = FALSE]
  expect_lt(max(abs(B - dense_ld(G, pos, 1e6))), 1e-13)
  expect_identical(B, t(B)) # both triangles hold the same bits
  mono <- which(apply(G, 2, stats::var) == 0)
  expect_true(all(B[-mono, mono] == 0) && all(diag(B) == 1))
  # f32 storage: the doubles rounded to floats
  ld32 <- statgen_ld(X, window = 1000, dtype = "f32")
  expect_lt(max(abs(ld32[, , drop = FALSE] - B)), 6e-8)
})

# chr22's first 300 variants with 5% of calls set missing, written as a
# .bed/.bim/.fam fileset: the missing-call rules against plink and cor().
missing_fileset <- function() {
  X <- kg22()
  j <- 1:300
  G <- X[, j]
  set.seed(3)
  G[sample(length(G), 0.05 * length(G))] <- NA
  v <- Rfmalloc::fmalloc_variants(X)[j, ]
  prefix <- tempfile("miss_")
  Y <- Rfmalloc::fmalloc_bed(G)
  bytes <- Y@storage[]
  con <- file(paste0(prefix, ".bed"), "wb")
  writeBin(as.raw(c(0x6c, 0x1b, 0x01)), con)
  writeBin(bytes, con)
  close(con)
  utils::write.table(data.frame(v$chr, v$id, 0, v$pos, v$alt, v$ref), paste0(prefix, ".bim"),
                     quote = FALSE, col.names = FALSE, row.names = FALSE, sep = "\t")
  file.copy(kg("1kg_bi.fam"), paste0(prefix, ".fam"))
  list(prefix = prefix, G = G, v = v, X = Rfmalloc::fmalloc_bed_open(paste0(prefix, ".bed")))
}

test_that("missing calls: pairwise as plink1.9, mean-imputed as cor() after imputation", {
  m <- missing_fileset()
  expect_equal(m$X[, 1:300], m$G)
  pw <- statgen_ld(m$X, window = 1000, missing = "pairwise")
  p19 <- plink19_r2(m$prefix, 1000)
  ours <- band_pairs(pw)
  k <- match(paste(p19$SNP_A, p19$SNP_B), paste(ours$SNP_A, ours$SNP_B))
  expect_false(anyNA(k))
  expect_lt(max(abs(ours$r[k]^2 - p19$R2)), 1e-6)
  expect_lt(max(abs(pw[, , drop = FALSE] - dense_ld(m$G, m$v$pos, 1e6, impute = FALSE))), 1e-13)
  mi <- statgen_ld(m$X, window = 1000, missing = "mean")
  expect_lt(max(abs(mi[, , drop = FALSE] - dense_ld(m$G, m$v$pos, 1e6))), 1e-13)
  # decoded codecs (doubles) give the same band within rounding
  D <- Rfmalloc::fmalloc_dosage(m$G)
  expect_lt(max(abs(statgen_ld(D, 1000, variants = m$v, missing = "pairwise")[, , drop = FALSE] -
                      pw[, , drop = FALSE])), 1e-12)
})

test_that("samples: the band of the kept samples, as cor() of the imputed subset and plink1.9 --keep", {
  m <- missing_fileset()
  set.seed(8)
  s <- sort(sample(nrow(m$G), 0.6 * nrow(m$G)))
  Gs <- m$G[s, ]
  mi <- statgen_ld(m$X, window = 1000, missing = "mean", samples = s)
  expect_lt(max(abs(mi[, , drop = FALSE] - dense_ld(Gs, m$v$pos, 1e6))), 1e-12)
  expect_identical(mi$info$n_samples, length(s))
  keep <- seq_len(nrow(m$G)) %in% s
  expect_identical(statgen_ld(m$X, window = 1000, samples = keep)$values[], mi$values[])
  expect_identical(statgen_ld(m$X, window = 1000, samples = rev(s))$values[], mi$values[])
  pw <- statgen_ld(m$X, window = 1000, missing = "pairwise", samples = s)
  expect_lt(max(abs(pw[, , drop = FALSE] - dense_ld(Gs, m$v$pos, 1e6, impute = FALSE))), 1e-12)
  # decoded codecs (doubles) select the same rows
  D <- Rfmalloc::fmalloc_dosage(m$G)
  expect_lt(max(abs(statgen_ld(D, 1000, variants = m$v, missing = "pairwise", samples = s)[, , drop = FALSE] -
                      pw[, , drop = FALSE])), 1e-12)
  expect_lt(max(abs(statgen_ld(D, 1000, variants = m$v, samples = s)[, , drop = FALSE] -
                      mi[, , drop = FALSE])), 1e-12)
  # plink1.9 --keep with --r2 on the same samples, pair for pair
  fam <- utils::read.table(paste0(m$prefix, ".fam"), colClasses = "character")
  keep_file <- tempfile(fileext = ".txt")
  utils::write.table(fam[s, 1:2], keep_file, quote = FALSE, row.names = FALSE, col.names = FALSE)
  p19 <- plink19_r2(m$prefix, 1000, args = c("--keep", keep_file))
  ours <- band_pairs(pw)
  k <- match(paste(p19$SNP_A, p19$SNP_B), paste(ours$SNP_A, ours$SNP_B))
  expect_false(anyNA(k))
  expect_lt(max(abs(ours$r[k]^2 - p19$R2)), 1e-6)
  # a subset differs from the whole
  expect_gt(max(abs(pw$values[] - statgen_ld(m$X, window = 1000, missing = "pairwise")$values[])), 1e-3)
  n <- nrow(m$G)
  expect_error(statgen_ld(m$X, 1000, samples = c(1, 1, 2)), "given twice", class = "fm_error_earg")
  expect_error(statgen_ld(m$X, 1000, samples = c(1, n + 1)), "1\\.\\.", class = "fm_error_earg")
  expect_error(statgen_ld(m$X, 1000, samples = c(1, NA)), class = "fm_error_earg")
  expect_error(statgen_ld(m$X, 1000, samples = 3), "at least 2", class = "fm_error_earg")
  expect_error(statgen_ld(m$X, 1000, samples = c(TRUE, FALSE)), "one TRUE or FALSE",
               class = "fm_error_earg")
  expect_error(statgen_ld(m$X, 1000, samples = 1.5), class = "fm_error_earg")
})

test_that("windows in variants and centimorgans; chromosomes never pair", {
  set.seed(1)
  G <- matrix(rbinom(150 * 40, 2, 0.3), 150, 40)
  X <- Rfmalloc::fmalloc_bed(G)
  v <- data.frame(chr = rep(c("1", "2"), c(25, 15)), pos = c(seq(1, by = 1000, length.out = 25),
                                                             seq(1, by = 500, length.out = 15)),
                  id = paste0("rs", 1:40), ref = "A", alt = "G", cm = c(seq(0, 2.4, by = 0.1), seq(0, 1.4, by = 0.1)))
  same <- outer(v$chr, v$chr, "==")
  C <- stats::cor(G)
  want <- function(near) { W <- C * (near & same); diag(W) <- 1; W }
  expect_equal(statgen_ld(X, 3, "variants", variants = v)[, , drop = FALSE],
               want(abs(outer(1:40, 1:40, "-")) <= 3), ignore_attr = TRUE, tolerance = 1e-13)
  expect_equal(statgen_ld(X, 0.25, "cM", variants = v)[, , drop = FALSE],
               want(abs(outer(v$cm, v$cm, "-")) <= 0.25 + 1e-12), ignore_attr = TRUE, tolerance = 1e-13)
  # a window of exactly the distance includes the pair (|d| <= window)
  expect_equal(statgen_ld(X, 2, "kb", variants = v)[, , drop = FALSE],
               want(abs(outer(v$pos, v$pos, "-")) <= 2000), ignore_attr = TRUE, tolerance = 1e-13)
  expect_equal(sum(statgen_ld(X, 0, "kb", variants = v)[, , drop = FALSE] != 0), 40)
  # the same map from a .bim file (its third column is the cM position)
  bim <- tempfile(fileext = ".bim")
  on.exit(unlink(bim))
  utils::write.table(data.frame(v$chr, v$id, v$cm, v$pos, v$alt, v$ref), bim, quote = FALSE,
                     sep = "\t", row.names = FALSE, col.names = FALSE)
  ld <- statgen_ld(X, 0.25, "cM", variants = bim)
  expect_equal(ld[, , drop = FALSE], want(abs(outer(v$cm, v$cm, "-")) <= 0.25 + 1e-12),
               ignore_attr = TRUE, tolerance = 1e-13)
  expect_equal(ld$variants$CM, v$cm)
  expect_identical(ld$variants$A1, v$alt)
})

test_that("products, blocks, sparse conversion", {
  set.seed(2)
  G <- matrix(rbinom(120 * 60, 2, 0.4), 120, 60)
  v <- data.frame(chr = "3", pos = cumsum(rpois(60, 3000)), id = sprintf("v%02d", 1:60), ref = "C", alt = "T")
  ld <- statgen_ld(Rfmalloc::fmalloc_bed(G), window = 20, variants = v)
  B <- ld[, , drop = FALSE]
  y <- matrix(rnorm(120), 60, 2)
  expect_equal(ld %*% y, B %*% y, tolerance = 1e-13, ignore_attr = TRUE)
  expect_equal(drop(ld %*% y[, 1]), drop(B %*% y[, 1]), tolerance = 1e-13, ignore_attr = TRUE)
  expect_equal(t(y) %*% ld, t(y) %*% B, tolerance = 1e-13, ignore_attr = TRUE)
  expect_identical(rownames(ld %*% y), v$id)
  expect_equal(ld[c("v03", "v05"), 5:7], B[c(3, 5), 5:7])
  expect_equal(ld[2, ], B[2, ])
  expect_equal(ld[10:12, 1:40], B[10:12, 1:40])
  skip_if_not_installed("Matrix")
  S <- statgen_ld_sparse(ld)
  expect_s4_class(S, "dsCMatrix")
  expect_equal(as.matrix(S), B)
  expect_error(statgen_ld_sparse(ld, max_entries = 10), class = "fm_error_earg")
  expect_error(ld %*% 1:3, "non-conformable", class = "fm_error_earg")
  expect_error(ld %*% "a", class = "fm_error_earg")
  expect_error(ld["nope", 1], "not in the LD band", class = "fm_error_earg")
  expect_error(ld[0, 1], class = "fm_error_earg")
  expect_output(print(ld), "60 x 60 LD band")
})

test_that("a band in a runtime gives the same products whatever the memory budget", {
  set.seed(3)
  G <- matrix(rbinom(90 * 200, 2, 0.3), 90, 200)
  rt <- Rfmalloc::open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
  on.exit(Rfmalloc::cleanup_fmalloc(rt))
  ld <- statgen_ld(Rfmalloc::fmalloc_bed(G), window = 50, unit = "variants", runtime = rt)
  y <- matrix(rnorm(400), 200, 2)
  want <- ld[, , drop = FALSE] %*% y
  for (b in list(NULL, 0, 1, 1e3, Inf)) { # default, default, always dropped, dropped, never
    withr::local_options(RfmallocStatgen.ld_budget = b)
    expect_equal(ld %*% y, want, tolerance = 1e-13, ignore_attr = TRUE)
    expect_equal(ld %*% y, ld %*% y) # repeated products read the same band
  }
  withr::local_options(RfmallocStatgen.ld_budget = -1)
  expect_error(ld %*% y, "RfmallocStatgen.ld_budget", class = "fm_error_earg")
})

test_that("a named band in a persistent runtime reopens in a new process", {
  set.seed(4)
  G <- matrix(rbinom(80 * 30, 2, 0.3), 80, 30)
  path <- tempfile(fileext = ".fm")
  on.exit(unlink(path))
  rt <- Rfmalloc::open_fmalloc(path, size_gb = 0.01)
  ld <- statgen_ld(Rfmalloc::fmalloc_bed(G, rt), window = 5, unit = "variants", runtime = rt,
                   name = "chr1", dtype = "f32")
  want <- ld[, , drop = FALSE]
  Rfmalloc::cleanup_fmalloc(rt)
  out <- tempfile(fileext = ".rds")
  code <- sprintf("library(RfmallocStatgen); rt <- Rfmalloc::open_fmalloc('%s', read_only = TRUE);
                   ld <- statgen_ld_open(rt, 'chr1'); saveRDS(list(ld[, , drop = FALSE], ld$dtype), '%s')",
                  path, out)
  res <- system2(file.path(R.home("bin"), "Rscript"), c("-e", shQuote(code)), stdout = TRUE, stderr = TRUE)
  got <- readRDS(out)
  expect_identical(got[[1]], want)
  expect_identical(got[[2]], "f32")
  rt <- Rfmalloc::open_fmalloc(path, read_only = TRUE)
  on.exit(Rfmalloc::cleanup_fmalloc(rt), add = TRUE)
  expect_error(statgen_ld_open(rt, "nope"), "not an LD band", class = "fm_error_earg")
})

test_that("a damaged saved band is a clear error when it is opened, not a crash", {
  set.seed(5)
  G <- matrix(rbinom(60 * 20, 2, 0.4), 60, 20)
  path <- tempfile(fileext = ".fm")
  on.exit(unlink(path))
  rt <- Rfmalloc::open_fmalloc(path, size_gb = 0.01)
  ld <- statgen_ld(Rfmalloc::fmalloc_bed(G), window = 4, unit = "variants", runtime = rt, name = "b")
  ri <- integer(length(ld$rowidx))
  ri[] <- ld$rowidx # a heap copy (arithmetic would stay in the runtime)
  bad <- ri
  bad[length(bad) - 3L] <- 1e6L # a row index far outside the band
  Rfmalloc::fmalloc_delete(rt, "b/rowidx")
  Rfmalloc::fmalloc_save(bad, "b/rowidx", rt)
  Rfmalloc::fmalloc_delete(rt, "b/colptr")
  cp <- numeric(length(ld$colptr))
  cp[] <- ld$colptr
  Rfmalloc::fmalloc_save(replace(cp, 5:6, cp[6:5]), "b/colptr2", rt) # non-monotone, same ends
  Rfmalloc::fmalloc_save(cp, "b/colptr", rt)
  Rfmalloc::cleanup_fmalloc(rt)
  rt <- Rfmalloc::open_fmalloc(path, read_only = TRUE)
  expect_error(statgen_ld_open(rt, "b"),
               "'b' in this runtime is damaged: .*rowidx\\[[0-9]+\\] = 1000000 is outside",
               class = "fm_error_eformat")
  Rfmalloc::cleanup_fmalloc(rt)
  rt <- Rfmalloc::open_fmalloc(path)
  Rfmalloc::fmalloc_delete(rt, "b/rowidx")
  Rfmalloc::fmalloc_save(ri, "b/rowidx", rt)
  Rfmalloc::fmalloc_delete(rt, "b/colptr")
  Rfmalloc::fmalloc_save(Rfmalloc::fmalloc_get(rt, "b/colptr2")[], "b/colptr", rt)
  expect_error(statgen_ld_open(rt, "b"), "damaged: .*colptr must be nondecreasing",
               class = "fm_error_eformat")
  Rfmalloc::cleanup_fmalloc(rt)
})

test_that("the layout is checked once per band, and again when its arrays change", {
  set.seed(6)
  G <- matrix(rbinom(50 * 12, 2, 0.4), 50, 12)
  ld <- statgen_ld(Rfmalloc::fmalloc_bed(G), window = 3, unit = "variants")
  y <- rnorm(12)
  want <- ld %*% y
  # a band restored from a file has no token yet: it is checked at first use
  f <- tempfile(fileext = ".rds")
  on.exit(unlink(f))
  saveRDS(ld, f)
  ld2 <- readRDS(f)
  expect_equal(ld2 %*% y, want)
  expect_equal(ld2 %*% y, want)
  # arrays replaced after the check are checked again
  bad <- methods::new("statgen_ld", utils::modifyList(unclass(ld), list(rowidx = ld$rowidx[] + 100L)))
  expect_error(bad %*% y, "rowidx\\[1\\] = 100 is outside")
  short <- methods::new("statgen_ld", utils::modifyList(unclass(ld), list(rowidx = ld$rowidx[-1])))
  expect_error(short %*% y, "rowidx has")
  expect_error(statgen_ld_scores(short), "rowidx has")
})

test_that("bad windows and variant orders are classed errors naming the variant", {
  G <- matrix(rbinom(50 * 6, 2, 0.5), 50, 6)
  X <- Rfmalloc::fmalloc_bed(G)
  v <- data.frame(chr = "1", pos = c(1, 5, 3, 7, 9, 11) * 1000, id = paste0("s", 1:6), ref = "A", alt = "G")
  expect_error(statgen_ld(X, 10, variants = v), "variant 3 \\(s3\\)", class = "fm_error_earg")
  v$pos <- sort(v$pos)
  v$chr <- c("1", "1", "2", "2", "1", "1")
  expect_error(statgen_ld(X, 10, variants = v), "chromosome 1 are not together", class = "fm_error_earg")
  v$chr <- "1"
  expect_error(statgen_ld(X, -1, variants = v), class = "fm_error_earg")
  expect_error(statgen_ld(X, NA, variants = v), class = "fm_error_earg")
  expect_error(statgen_ld(X, 10, r2_min = 2, variants = v), class = "fm_error_earg")
  expect_error(statgen_ld(X, 1, "cM", variants = v), "no centimorgan", class = "fm_error_earg")
  v$pos[2] <- NA
  expect_error(statgen_ld(X, 10, variants = v), "variant 2 \\(s2\\) has no base-pair", class = "fm_error_earg")
  expect_error(statgen_ld(X, 10, variants = v[1:5, ]), "6 rows", class = "fm_error_earg")
  expect_error(statgen_ld(X, 10, variants = v, dtype = "f16"), class = "fm_error_earg")
})

test_that("a window wider than every chromosome stores all pairs and says so", {
  set.seed(9)
  G <- matrix(rbinom(60 * 12, 2, 0.4), 60, 12)
  v <- data.frame(chr = rep(c("1", "2"), each = 6), pos = rep(seq(1e5, by = 1e4, length.out = 6), 2),
                  id = paste0("v", 1:12), ref = "A", alt = "C")
  X <- Rfmalloc::fmalloc_bed(G)
  expect_message(ld <- statgen_ld(X, window = 1e6, variants = v), "spans every chromosome",
                 class = "statgen_message_whole_window")
  want <- suppressWarnings(cor(G))
  want[1:6, 7:12] <- 0
  want[7:12, 1:6] <- 0
  expect_equal(ld[, , drop = FALSE], want, ignore_attr = TRUE, tolerance = 1e-13)
  expect_no_message(statgen_ld(X, window = 30, variants = v))
})

test_that("names, indices and variant tables that would lose or mix data are refused", {
  set.seed(11)
  G <- matrix(rbinom(50 * 8, 2, 0.4), 50, 8)
  X <- Rfmalloc::fmalloc_bed(G)
  v <- data.frame(chr = "1", pos = seq(1e5, by = 1e4, length.out = 8), id = paste0("v", 1:8),
                  ref = "A", alt = "C")
  rt <- Rfmalloc::open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
  on.exit(Rfmalloc::cleanup_fmalloc(rt))
  Rfmalloc::fmalloc_save(c(1, 2, 3), "mine", rt)
  expect_error(statgen_ld(X, 30, variants = v, runtime = rt, name = "mine"), "already saved",
               class = "fm_error_earg")
  expect_identical(Rfmalloc::fmalloc_get(rt, "mine")[], c(1, 2, 3))
  ld <- statgen_ld(X, 30, variants = v, runtime = rt, name = "b")
  expect_error(statgen_ld(X, 30, variants = v, runtime = rt, name = "b"), "already saved", class = "fm_error_earg")
  expect_error(statgen_ld(X, 30, variants = v, runtime = rt, name = "b/colptr"), "without '/'",
               class = "fm_error_earg")
  expect_identical(statgen_ld_open(rt, "b")[, , drop = FALSE], ld[, , drop = FALSE])
  expect_error(ld[c(TRUE, NA), 1], "has NA", class = "fm_error_earg")
  expect_error(statgen_ld(X[1, , drop = FALSE], 30, variants = v), "at least 2", class = "fm_error_earg")
  expect_error(statgen_ld(1:10, 30), "samples x variants", class = "fm_error_earg")
  # the band's own variant table (upper-case names, A1/A2) is a valid variants =
  ld2 <- statgen_ld(X, 30, variants = ld$variants)
  expect_identical(ld2$variants[c("CHR", "POS", "ID", "A1", "A2")], ld$variants[c("CHR", "POS", "ID", "A1", "A2")])
})
