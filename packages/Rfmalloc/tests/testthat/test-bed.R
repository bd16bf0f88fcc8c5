rand_geno <- function(n, m, na_rate = 0.05) {
  g <- matrix(sample(0:2, n * m, replace = TRUE), n, m)
  g[sample(length(g), floor(na_rate * length(g)))] <- NA
  g
}

test_that("bed2 round-trips every shape, including n %% 4 != 0", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(1)
  for (n in c(1, 2, 3, 4, 5, 7, 13, 101)) {
    g <- rand_geno(n, 9)
    X <- fmalloc_bed(g, rt)
    expect_equal(dim(X), c(n, 9))
    expect_identical(as.matrix(X), g * 1.0)
  }
})

test_that("[i, j] decodes only the requested block, with names and drop", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(2)
  g <- rand_geno(37, 23)
  dimnames(g) <- list(paste0("s", 1:37), paste0("v", 1:23))
  X <- fmalloc_bed(g, rt)
  expect_identical(dimnames(X), dimnames(g))
  i <- c(5, 2, 37, 2); j <- c(23, 1, 1, 8)
  expect_identical(X[i, j], g[i, j] * 1.0)
  expect_identical(X[, 3], g[, 3] * 1.0)
  expect_identical(X[4, , drop = FALSE], g[4, , drop = FALSE] * 1.0)
  expect_identical(X[c("s3", "s9"), c("v2", "v20")], g[c("s3", "s9"), c("v2", "v20")] * 1.0)
  expect_identical(X[-1, -(1:20)], g[-1, -(1:20)] * 1.0)
  expect_identical(X[c(TRUE, FALSE), 2], g[c(TRUE, FALSE), 2] * 1.0)
  expect_error(X[, 24], class = "fm_error_earg")
  expect_output(print(X), "37 x 23")
})

test_that("products match base R on bounded panels, also with a tiny budget", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit({ fmalloc_panel_budget(0); cleanup_fmalloc(rt) })
  set.seed(3)
  g <- rand_geno(53, 31, na_rate = 0)
  gd <- g * 1.0
  X <- fmalloc_bed(g, rt)
  B <- matrix(rnorm(31 * 4), 31, 4)
  C <- matrix(rnorm(53 * 3), 53, 3)
  for (budget in c(0, 8 * 5 * 3)) {
    fmalloc_panel_budget(budget)
    expect_equal(X %*% B, gd %*% B, tolerance = 1e-12, ignore_attr = TRUE)
    expect_equal(X %*% B[, 1], gd %*% B[, 1], tolerance = 1e-12, ignore_attr = TRUE)
    expect_equal(crossprod(X, C), crossprod(gd, C), tolerance = 1e-12, ignore_attr = TRUE)
    expect_equal(t(C) %*% X, t(C) %*% gd, tolerance = 1e-12, ignore_attr = TRUE)
    expect_equal(crossprod(C, X), crossprod(C, gd), tolerance = 1e-12, ignore_attr = TRUE)
    expect_equal(tcrossprod(X, t(B)), tcrossprod(gd, t(B)), tolerance = 1e-12, ignore_attr = TRUE)
    expect_equal(tcrossprod(t(B), X), tcrossprod(t(B), gd), tolerance = 1e-12, ignore_attr = TRUE)
    expect_equal(crossprod(X), crossprod(gd), tolerance = 1e-12, ignore_attr = TRUE)
    expect_equal(tcrossprod(X), tcrossprod(gd), tolerance = 1e-12, ignore_attr = TRUE)
  }
  expect_error(X %*% matrix(1, 30, 1), class = "fm_error_emismatch")
})

test_that("the standardized view fuses centring, scaling and mean imputation", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(4)
  g <- rand_geno(41, 12, na_rate = 0.1)
  X <- fmalloc_bed(g, rt)
  mu <- colMeans(g, na.rm = TRUE)
  sdv <- apply(g, 2, sd, na.rm = TRUE)
  p <- mu / 2
  imputed <- g * 1.0
  for (j in seq_len(ncol(g))) imputed[is.na(g[, j]), j] <- mu[j]
  expect_message(S <- fmalloc_standardize(X, center = TRUE, scale = TRUE), "mean-imputed")
  expect_equal(as.matrix(S), sweep(sweep(imputed, 2, mu), 2, sdv, "/"), tolerance = 1e-12,
               ignore_attr = TRUE)
  expect_message(Sb <- fmalloc_standardize(X, scale = "binomial"), "mean-imputed")
  expect_equal(as.matrix(Sb), sweep(sweep(imputed, 2, mu), 2, sqrt(2 * p * (1 - p)), "/"),
               tolerance = 1e-12, ignore_attr = TRUE)
  missing_cells <- is.na(g)
  expect_true(all(as.matrix(Sb)[missing_cells] == 0))
  B <- matrix(rnorm(12 * 2), 12, 2)
  expect_equal(Sb %*% B, as.matrix(Sb) %*% B, tolerance = 1e-12, ignore_attr = TRUE)
})

test_that("fmalloc_select makes column views without copying", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  g <- rand_geno(10, 8)
  X <- fmalloc_bed(g, rt)
  V <- fmalloc_select(X, c(8, 2, 2))
  expect_equal(dim(V), c(10, 3))
  expect_identical(as.matrix(V), g[, c(8, 2, 2)] * 1.0)
})

test_that("dosages round-trip within the documented quantization", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(5)
  x <- matrix(runif(23 * 7, 0, 2), 23, 7)
  x[c(3, 50)] <- NA
  D <- fmalloc_dosage(x, rt)
  back <- as.matrix(D)
  expect_identical(is.na(back), is.na(x))
  expect_lte(max(abs(back - x), na.rm = TRUE), 1 / 254 + 1e-12)
  expect_equal(back, round(x * 127) / 127, tolerance = 1e-14, ignore_attr = TRUE)
  expect_error(fmalloc_dosage(matrix(c(0, 2.5), 1), rt), class = "fm_error_earg")
})

test_that("haplotypes keep alleles in locus-major 64-byte rows", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(6)
  for (n_haps in c(1, 63, 64, 65, 1000)) {
    h <- matrix(sample(0:1, 17 * n_haps, replace = TRUE), 17, n_haps)
    H <- fmalloc_haplotypes(h, rt)
    expect_equal(dim(H), c(17, n_haps))
    expect_identical(H[, , drop = FALSE], h)
    expect_identical(H[c(3, 4, 5, 9), , drop = FALSE], h[c(3, 4, 5, 9), , drop = FALSE])
    expect_equal(H$row_bytes %% 64, 0)
  }
  expect_error(fmalloc_haplotypes(matrix(c(0L, NA), 1), rt), class = "fm_error_earg")
  expect_error(fmalloc_haplotypes(matrix(c(0L, 2L), 1), rt), class = "fm_error_earg")
})

test_that("a .fam with one line too many is read as plink2 reads it, with a warning", {
  skip_if_no_plink2()
  src <- sub("\\.bed$", "", fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed"))
  expect_no_warning(G <- fmalloc_bed_open(src)) # 1126 samples: 2 padding slots, not read
  prefix <- file.path(tempfile("extra_fam_"), "x")
  dir.create(dirname(prefix))
  on.exit(unlink(dirname(prefix), recursive = TRUE))
  for (ext in c(".bed", ".bim")) file.symlink(paste0(src, ext), paste0(prefix, ext))
  writeLines(c(readLines(paste0(src, ".fam")), "X EXTRA 0 0 0 -9"), paste0(prefix, ".fam"))
  w <- tryCatch(fmalloc_bed_open(prefix), warning = identity)
  expect_s3_class(w, "fm_warning_emismatch")
  expect_identical(conditionCall(w), quote(fmalloc_bed_open(prefix)))
  expect_match(conditionMessage(w), "(line 1127) reads two copies of A1 at each of the first 1000 variants",
               fixed = TRUE)
  X <- suppressWarnings(fmalloc_bed_open(prefix))
  expect_identical(dim(X), c(1127L, ncol(G)))
  expect_true(all(as.matrix(X[1127, 1:50, drop = FALSE]) == 2))
  # the values are plink2's for the same files
  out <- run_plink2(c("--bfile", prefix, "--autosome", "--freq"))
  pf <- utils::read.table(paste0(out, ".afreq"), header = FALSE, comment.char = "#",
                          col.names = c("chr", "id", "ref", "alt", "alt_freq", "obs_ct"))
  af <- fmalloc_allele_freq(X)
  expect_equal(af$alt_freq[match(pf$id, af$id)], pf$alt_freq, tolerance = 1e-5)
})

test_that("fmalloc_bed names a non-count value in full and refuses TRUE/FALSE", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  e <- tryCatch(fmalloc_bed(matrix(2.0000001, 2, 2), rt), error = identity)
  expect_s3_class(e, "fm_error_earg")
  expect_identical(conditionMessage(e), "g[1, 1] = 2.0000001 is not 0, 1, 2, NA")
  e <- tryCatch(fmalloc_bed(matrix(c(NA, TRUE), 2, 2), rt), error = identity)
  expect_s3_class(e, "fm_error_earg")
  expect_match(conditionMessage(e), "^g is a logical matrix with TRUE/FALSE values, not allele counts")
  # an all-NA logical matrix is all missing (NA is logical)
  G <- fmalloc_bed(matrix(NA, 3, 2), rt)
  expect_identical(as.matrix(G), matrix(NA_real_, 3, 2))
})

test_that("haplotypes answer as.matrix, the sums and summary, and refuse t()", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(7)
  h <- matrix(sample(0:1, 23 * 70, replace = TRUE), 23, 70,
              dimnames = list(paste0("l", 1:23), paste0("h", 1:70)))
  H <- fmalloc_haplotypes(h, rt)
  expect_identical(dim(H), c(23L, 70L))
  expect_identical(as.matrix(H), h)
  old <- fmalloc_panel_budget()
  on.exit(fmalloc_panel_budget(old), add = TRUE)
  for (budget in c(0, 4 * 70 * 5)) { # one block; blocks of 5 loci
    fmalloc_panel_budget(budget)
    expect_identical(colSums(H), colSums(h) + 0)
    expect_identical(rowSums(H), rowSums(h) + 0)
    expect_equal(colMeans(H), colMeans(h))
    expect_identical(rowMeans(H), rowMeans(h))
  }
  expect_error(colSums(H, dims = 2), "dims must be 1", class = "fm_error_eunsupported")
  e <- tryCatch(t(H), error = identity)
  expect_s3_class(e, "fm_error_eunsupported")
  expect_identical(conditionCall(e), quote(t(H)))
  s <- summary(H)
  expect_s3_class(s, "summary_fmalloc_haplotypes")
  expect_identical(s$dim, c(23L, 70L))
  expect_identical(s$n_missing, 0)
  expect_identical(s$alt_freq, summary(rowMeans(h)))
  expect_output(print(s), "23 loci x 70 haplotypes, 0 missing slots")
})

test_that("a bad .bed is refused before any genotype is read, naming file, sizes, N and M", {
  d <- tempfile("badbed")
  dir.create(d)
  n <- 5; m <- 3 # 2 bytes per variant
  good <- c(0x6c, 0x1b, 0x01, rep(0xff, 2 * m))
  ok <- write_plink(file.path(d, "ok"), n, m, good)
  expect_equal(dim(fmalloc_bed_open(ok)), c(5, 3))
  expect_true(all(as.matrix(fmalloc_bed_open(ok)) == 0))

  p <- write_plink(file.path(d, "magic"), n, m, c(0x00, 0x1b, 0x01, rep(0, 6)))
  expect_error(fmalloc_bed_open(p), class = "fm_error_eformat")
  expect_error(fmalloc_bed_open(p), "magic.bed")
  p <- write_plink(file.path(d, "smajor"), n, m, c(0x6c, 0x1b, 0x00, rep(0, 6)))
  expect_error(fmalloc_bed_open(p), "sample-major")
  p <- write_plink(file.path(d, "extra"), n, m, c(good, 0))
  err <- tryCatch(fmalloc_bed_open(p), error = function(e) e)
  expect_s3_class(err, "fm_error_eformat")
  expect_match(conditionMessage(err), "extra.bed")
  expect_match(conditionMessage(err), "10")  # actual size
  expect_match(conditionMessage(err), "9")   # expected size
  p <- write_plink(file.path(d, "short"), n, m, good[-length(good)])
  expect_error(fmalloc_bed_open(p), class = "fm_error_eformat")
  p <- write_plink(file.path(d, "famoff"), n, m, good)
  writeLines(sprintf("f%d s%d 0 0 1 -9", 1:9, 1:9), paste0(p, ".fam"))  # 9 samples: 3 bytes each
  err <- tryCatch(fmalloc_bed_open(p), error = function(e) e)
  expect_s3_class(err, "fm_error_eformat")
  expect_match(conditionMessage(err), "9 samples")
  expect_error(fmalloc_bed_open(file.path(d, "absent")), class = "fm_error_eio")
})

test_that("the 1000 Genomes .bed decodes as plink2 --export A counts of A1", {
  skip_if_no_plink2()
  prefix <- sub("\\.bed$", "", fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed"))
  G <- fmalloc_bed_open(prefix)
  expect_equal(dim(G), c(1126, 25161))
  bim <- fmalloc_variants(G)
  sel <- which(bim$chr == "22")[1:200]
  alleles <- tempfile()
  writeLines(paste(bim$id, bim$alt), alleles)
  ids <- tempfile()
  writeLines(bim$id[sel], ids)
  out <- run_plink2(c("--bfile", prefix, "--extract", ids, "--export", "A",
                      "--export-allele", alleles))
  raw <- utils::read.table(paste0(out, ".raw"), header = TRUE, check.names = FALSE)
  expected <- as.matrix(raw[, -(1:6)])
  expect_identical(raw$IID, rownames(G))
  expect_identical(sub("_[^_]+$", "", colnames(expected)), bim$id[sel])
  expect_identical(unname(G[, sel]), unname(expected) * 1.0)
})

test_that("the 1000 Genomes chr22 .bed equals the shipped .traw ALT counts", {
  prefix <- sub("\\.bed$", "", fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed"))
  traw <- fixture_path("genotypes", "1kg_phase3_subset", "text", "1kg_bi_chr22.traw")
  G <- fmalloc_bed_open(prefix)
  tr <- utils::read.table(traw, header = TRUE, check.names = FALSE, comment.char = "")
  expected <- t(as.matrix(tr[, -(1:6)]))
  cols <- match(tr$SNP, colnames(G))
  expect_false(anyNA(cols))
  expect_identical(unname(G[, cols]), unname(expected) * 1.0)
})

test_that("indexing follows base R: empty, zero, linear, logical-matrix and (row, col) indices", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  g <- matrix(c(0L, 1L, 2L, 1L, NA, 2L), 3, 2)
  G <- fmalloc_bed(g, rt)
  gd <- g * 1.0
  expect_identical(dim(G[0, ]), c(0L, 2L))
  expect_identical(G[integer(0), 1], numeric(0))
  expect_identical(dim(G[, integer(0)]), c(3L, 0L))
  expect_identical(dim(fmalloc_select(G, integer(0))), c(3L, 0L))
  expect_identical(dim(fmalloc_select(G, 0)), c(3L, 0L))
  expect_identical(G[c(0, 2), ], gd[c(0, 2), ])
  expect_identical(G[5], gd[5])
  expect_identical(G[c(6, 1, 5)], gd[c(6, 1, 5)])
  expect_identical(G[g > 1 & !is.na(g)], gd[g > 1 & !is.na(g)])
  expect_identical(G[cbind(c(3, 1), c(2, 1))], gd[cbind(c(3, 1), c(2, 1))])
  expect_identical(G[cbind(c(3, 0, 1), c(2, 1, 1))], gd[cbind(c(3, 0, 1), c(2, 1, 1))]) # a 0 selects nothing
  # a cell matrix of row and column names, as for a base matrix (was refused; issue 14)
  dn <- list(paste0("s", 1:3), c("rs1", "rs2"))
  N <- fmalloc_bed(g, rt, dimnames = dn)
  cells <- cbind(c("s3", "s1"), c("rs2", "rs1"))
  expect_identical(N[cells], array(gd, dim(g), dn)[cells])
  expect_error(N[cbind("s9", "rs1")], class = "fm_error_earg", regexp = "row name 's9' not found")
  expect_error(G[cbind("s1", "rs1")], class = "fm_error_earg", regexp = "no row names")
  expect_error(G[cbind(NA, 1)], class = "fm_error_earg", regexp = "must not be NA") # said "out of bounds"
  expect_error(G[cbind(4, 1)], class = "fm_error_earg", regexp = "out of bounds \\(the matrix is 3 x 2\\)")
  expect_error(G[cbind(-1, 1)], class = "fm_error_earg", regexp = "negative")
  expect_identical(length(G), 6L)
  expect_identical(dim(G), c(3L, 2L))
  expect_error(G[NA, 1], class = "fm_error_earg")
  expect_error(G[7], class = "fm_error_earg")
  expect_identical(as.matrix(t(G)), t(gd)) # a transposed view (was refused; issue 14)
  expect_error(G %*% G, class = "fm_error_eunsupported")
  expect_error(G %*% matrix("a", 2, 1), class = "fm_error_earg")
  H <- fmalloc_haplotypes(matrix(c(0L, 1L, 1L, 0L), 2, 2), rt)
  expect_identical(dim(H[0, , drop = FALSE]), c(0L, 2L))
})

test_that("missing calls decode to NA, not NaN", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  g <- matrix(c(0L, NA, 2L, 1L), 2, 2)
  back <- as.matrix(fmalloc_bed(g, rt))
  expect_true(is.na(back[2, 1]) && !is.nan(back[2, 1]))
  d <- as.matrix(fmalloc_dosage(matrix(c(NA, 1), 1, 2), rt))
  expect_true(is.na(d[1, 1]) && !is.nan(d[1, 1]))
})

test_that("genotype and haplotype input is checked, naming the cell in R's terms", {
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  expect_error(fmalloc_bed(matrix(c(0, Inf), 1, 2), rt), "g\\[1, 2\\] = Inf", class = "fm_error_earg")
  expect_error(fmalloc_bed(matrix(c(0, 1e10), 1, 2), rt), class = "fm_error_earg")
  expect_error(fmalloc_bed(matrix(c(0, 0.5), 1, 2), rt), class = "fm_error_earg")
  expect_error(fmalloc_bed(matrix(c(0L, -1L, 0L, 3L), 2, 2), rt), "g\\[2, 1\\] = -1")
  expect_error(fmalloc_bed(matrix("0", 1, 1), rt), class = "fm_error_earg")
  expect_error(fmalloc_bed(matrix(0L, 5, 2), rt, dimnames = list(letters[1:4], NULL)),
               class = "fm_error_emismatch")
  expect_error(fmalloc_haplotypes(matrix(c(0.5, 1, 0.9, 1.7), 2, 2), rt), "h\\[1, 1\\] = 0.5")
  expect_error(fmalloc_haplotypes(matrix(c(0, -1), 1, 2), rt), "h\\[1, 2\\] = -1")
  expect_error(fmalloc_bed_open(c("a", "b")), class = "fm_error_earg")
  expect_error(fmalloc_allele_freq(matrix(0:2, 3, 1)), class = "fm_error_earg")
})

test_that("a mapped .bed survives saveRDS/readRDS: it is mapped and validated again", {
  d <- tempfile("rdsbed")
  dir.create(d)
  p <- write_plink(file.path(d, "x"), 5, 3, c(0x6c, 0x1b, 0x01, rep(c(0xe4, 0x03), 3)))
  G <- fmalloc_bed_open(p)
  rds <- file.path(d, "g.rds")
  saveRDS(G, rds)
  back <- readRDS(rds)
  expect_identical(as.matrix(back), as.matrix(G))
  unlink(paste0(p, ".bed"))
  expect_error(as.matrix(readRDS(rds)), "x.bed", class = "fm_error_eio")
})

test_that("fmalloc_bed_open(variants = FALSE) counts the .bim lines instead of reading them", {
  prefix <- sub("\\.bed$", "", fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed"))
  G <- fmalloc_bed_open(prefix)
  H <- fmalloc_bed_open(prefix, variants = FALSE)
  expect_equal(dim(H), dim(G))
  expect_null(colnames(H))
  expect_null(fmalloc_variants(H))
  expect_identical(rownames(H), rownames(G))
  cols <- c(1, 777, 25161)
  g <- G[, cols]
  colnames(g) <- NULL
  expect_identical(H[, cols], g)
  expect_error(fmalloc_bed_open(prefix, variants = NA), class = "fm_error_earg")
  # counting: blank lines are skipped (as read.table does), a last line
  # without its newline counts, and a count that disagrees with the .bed
  # size, or a record without six fields, is refused as by the full reader
  d <- tempfile("bimcount")
  dir.create(d)
  p <- write_plink(file.path(d, "x"), 5, 3, c(0x6c, 0x1b, 0x01, rep(c(0xe4, 0x03), 3)))
  writeBin(charToRaw("\n1 a 0 1 A G\n\n1 b 0 2 A G\n1 c 0 3 A G\n"), paste0(p, ".bim"))
  g <- as.matrix(fmalloc_bed_open(p))
  colnames(g) <- NULL
  expect_identical(as.matrix(fmalloc_bed_open(p, variants = FALSE)), g)
  writeBin(charToRaw("1 a 0 1 A G\n1 b 0 2 A G\n1 c 0 3 A G"), paste0(p, ".bim"))
  expect_equal(dim(fmalloc_bed_open(p, variants = FALSE)), c(5, 3))
  writeBin(charToRaw("1 a 0 1 A G\n1 b 0 2 A G\n"), paste0(p, ".bim"))
  expect_error(fmalloc_bed_open(p, variants = FALSE), class = "fm_error_eformat")
  writeBin(charToRaw("1 a 0 1 A G\n1 b 0 2 A\n1 c 0 3 A G\n"), paste0(p, ".bim"))
  expect_error(fmalloc_bed_open(p, variants = FALSE), "record 2 has 5 fields",
               class = "fm_error_eformat")
  unlink(paste0(p, ".bim"))
  expect_error(fmalloc_bed_open(p, variants = FALSE), class = "fm_error_eio")
})

test_that("fmalloc_read_samples reads .fam, .psam and .sample into the schema", {
  d <- withr::local_tempdir()
  f <- function(name, lines) {
    p <- file.path(d, name)
    writeLines(lines, p)
    p
  }
  fam <- fmalloc_read_samples(f("a.fam", c("f1 s1 0 0 1 -9", "", "f2\ts2\tp\tm\tF\t2", "f3 s3 0 0 -9 1.5")))
  expect_identical(fam, data.frame(iid = c("s1", "s2", "s3"), fid = c("f1", "f2", "f3"),
                                   father = c("0", "p", "0"), mother = c("0", "m", "0"),
                                   sex = c(1L, 2L, 0L), phenotype = c("-9", "2", "1.5"),
                                   stringsAsFactors = FALSE))
  # the same as a .tfam, and as a headerless .psam (the .fam layout), and gzipped
  expect_identical(fmalloc_read_samples(f("a.tfam", readLines(file.path(d, "a.fam")))), fam)
  expect_identical(fmalloc_read_samples(f("h.psam", readLines(file.path(d, "a.fam")))), fam)
  gz <- gzfile(file.path(d, "z.fam.gz"), "w")
  writeLines(readLines(file.path(d, "a.fam")), gz)
  close(gz)
  expect_identical(fmalloc_read_samples(file.path(d, "z.fam.gz")), fam)
  psam <- fmalloc_read_samples(f("a.psam", c("##comment", "#FID\tIID\tPAT\tMAT\tSEX\tPopulation",
                                             "f1\ts1\t0\t0\tNA\tGBR", "f2\ts2\ts1\t0\tm\tFIN")))
  expect_identical(psam, data.frame(iid = c("s1", "s2"), fid = c("f1", "f2"), father = c("0", "s1"),
                                    mother = c("0", "0"), sex = c(0L, 1L), Population = c("GBR", "FIN"),
                                    stringsAsFactors = FALSE))
  smp <- fmalloc_read_samples(f("a.sample", c("ID_1 ID_2 missing sex bmi group", "0 0 0 D C D",
                                              "f1 s1 0.1 2 22.5 a", "f2 s2 0 1 NA b")))
  expect_identical(smp, data.frame(iid = c("s1", "s2"), fid = c("f1", "f2"), missing = c(0.1, 0),
                                   sex = c(2L, 1L), bmi = c(22.5, NA), group = c("a", "b"),
                                   stringsAsFactors = FALSE))
  # the file is read in blocks of 65,536 lines: more than one block
  n <- 70000
  big <- fmalloc_read_samples(f("big.fam", sprintf("f%d s%d 0 0 %d -9", 1:n, 1:n, 1:n %% 3)))
  expect_identical(big$iid, sprintf("s%d", 1:n))
  expect_identical(big$sex, (1:n) %% 3L)
  # errors name the file and the line
  expect_error(fmalloc_read_samples(f("b.fam", c("f1 s1 0 0 1 -9", "f2 s2 0 0 1"))),
               class = "fm_error_eformat", regexp = "b\\.fam' line 2 has 5 fields; a \\.fam line has 6")
  lines <- c(sprintf("f%d s%d 0 0 1 -9", 1:n, 1:n), "f s")
  expect_error(fmalloc_read_samples(f("c.fam", lines)), class = "fm_error_eformat",
               regexp = "c\\.fam' line 70001 has 2 fields")
  expect_error(fmalloc_read_samples(f("b.psam", c("#FID\tSEX", "f1\t1"))), class = "fm_error_eformat",
               regexp = "b\\.psam' line 1: the header names no IID column")
  expect_error(fmalloc_read_samples(f("c.psam", c("#IID\tSEX", "s1\t1", "s2"))), class = "fm_error_eformat",
               regexp = "c\\.psam' line 3 has 1 field; the header \\(line 1\\) names 2 columns")
  expect_error(fmalloc_read_samples(f("b.sample", "ID_1 ID_2 missing")), class = "fm_error_eformat",
               regexp = "two header lines")
  expect_error(fmalloc_read_samples(f("c.sample", c("ID_1 ID_2 bmi", "0 0 C", "f s x"))),
               class = "fm_error_eformat", regexp = "c\\.sample' line 3: 'x' in column bmi is not a number")
  expect_error(fmalloc_read_samples(f("a.txt", "x")), class = "fm_error_earg", regexp = "layout")
  expect_error(fmalloc_read_samples(file.path(d, "none.fam")), class = "fm_error_eio")
  # fmalloc_bed_open reads its .fam so: sex coded 0/1/2
  prefix <- write_plink(file.path(d, "g"), 3, 1, c(0x6c, 0x1b, 0x01, 0x00))
  writeLines(readLines(file.path(d, "a.fam")), paste0(prefix, ".fam"))
  expect_identical(fmalloc_samples(fmalloc_bed_open(prefix)), fam)
})
