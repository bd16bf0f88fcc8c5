# statgen_clump() against plink 1.9 --clump and statgen_prune() against
# plink2 --indep-pairwise on the 1kg fixture (the summary statistics given
# to both are plink2 --glm's of the fixture's simulated QT, so that the
# p-values are identical); toy cases worked by hand; bad input.

# plink2's GWAS of QT (no covariates) and the same rows as a file for plink.
clump_gwas <- function() {
  gw <- plink2_glm("QT", "linear", c("--glm", "allow-no-covars", "hide-covar"))
  f <- file.path(tempdir(), "clump_gwas.tsv")
  if (!file.exists(f)) utils::write.table(gw[c("ID", "P")], f, sep = "\t", quote = FALSE, row.names = FALSE)
  list(gw = gw, file = f)
}

# plink1.9 --clump of the GWAS: its .clumped with SP2 as a list of IDs.
plink19_clump <- function(file, p1, p2, r2, kb, bed = kg("1kg_bi.bed")) {
  skip_if_no_plink19()
  out <- tempfile("clump_")
  res <- system2("plink1.9", c("--bfile", sub("\\.bed$", "", bed), "--clump", file,
                               "--clump-snp-field", "ID", "--clump-field", "P", "--clump-p1", p1,
                               "--clump-p2", p2, "--clump-r2", r2, "--clump-kb", kb, "--out", out),
                 stdout = TRUE, stderr = TRUE)
  f <- paste0(out, ".clumped")
  if (!file.exists(f)) stop("plink1.9 --clump failed:\n", paste(res, collapse = "\n"))
  d <- utils::read.table(f, header = TRUE, stringsAsFactors = FALSE)
  d$SP2 <- lapply(strsplit(d$SP2, ","), function(s) if (identical(s, "NONE")) character(0) else sub("\\(1\\)$", "", s))
  d
}

clump_settings <- list(c(p1 = 1e-4, p2 = 0.01, r2 = 0.5, kb = 250), c(p1 = 1e-3, p2 = 0.05, r2 = 0.1, kb = 250),
                       c(p1 = 1e-2, p2 = 0.5, r2 = 0.2, kb = 500), c(p1 = 1e-2, p2 = 1, r2 = 0.05, kb = 1000),
                       c(p1 = 0.05, p2 = 1, r2 = 0.1, kb = 250))
counts <- c("TOTAL", "NSIG", "S05", "S01", "S001", "S0001")

test_that("statgen_clump() with genotypes gives plink 1.9 --clump's clumps on the fixture", {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  g <- clump_gwas()
  for (s in clump_settings) {
    pc <- plink19_clump(g$file, s[["p1"]], s[["p2"]], s[["r2"]], s[["kb"]])
    ours <- statgen_clump(g$gw, X, r2 = s[["r2"]], window_kb = s[["kb"]], p1 = s[["p1"]], p2 = s[["p2"]])
    # 77, 182, 731, 710 and 2221 clumps: the same index variants in the same
    # order, the same members in the same order, the same counts
    expect_identical(ours$ID, pc$SNP)
    expect_identical(ours$POS, as.double(pc$BP))
    expect_equal(ours$P, pc$P, tolerance = 2e-3)
    expect_identical(ours$SP2, pc$SP2)
    for (k in counts) expect_identical(ours[[k]], as.integer(pc[[k]]), info = k)
  }
  expect_s3_class(ours, "statgen_clump")
  expect_output(print(ours), "2221 clumps")
})

test_that("statgen_clump() gives plink's clumps with missing calls (ceu_exon, generated p-values)", {
  bed <- fixture_path("genotypes", "ceu_exon", "ceu_exon_bi.bed")
  X <- Rfmalloc::fmalloc_bed_open(bed)
  v <- Rfmalloc::fmalloc_variants(X)
  # generated p-values (the genotypes and their 7% missing calls are real)
  set.seed(1)
  gw <- data.frame(ID = v$id, P = signif(stats::runif(nrow(v))^3, 4))
  f <- tempfile(fileext = ".tsv")
  utils::write.table(gw, f, sep = "\t", quote = FALSE, row.names = FALSE)
  for (s in list(c(0.05, 1, 0.1, 250), c(0.01, 0.5, 0.3, 1000), c(0.1, 1, 0.05, 500))) {
    pc <- plink19_clump(f, s[1], s[2], s[3], s[4], bed = bed)
    ours <- statgen_clump(gw, X, p1 = s[1], p2 = s[2], r2 = s[3], window_kb = s[4])
    # 437, 281 and 525 clumps
    expect_identical(ours$ID, pc$SNP)
    expect_identical(ours$SP2, pc$SP2)
    for (k in counts) expect_identical(ours[[k]], as.integer(pc[[k]]), info = k)
  }
})

test_that("statgen_clump() on a statgen_ld band gives plink's index variants at r2 = 0.5", {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  rt <- new_runtime()
  g <- clump_gwas()
  ld <- statgen_ld(X, window = 250, unit = "kb", missing = "pairwise", runtime = rt)
  pc <- plink19_clump(g$file, 1e-4, 0.01, 0.5, 250)
  ours <- statgen_clump(g$gw, ld = ld)
  expect_identical(ours$ID, pc$SNP)
  expect_identical(ours$SP2, pc$SP2)
  expect_identical(statgen_clump(g$gw, X, r2_from = "correlation", runtime = rt)$SP2, ours$SP2)
  # at low r2 the allele-count r^2 (not plink's) changes clumps: 180 against 182
  pc <- plink19_clump(g$file, 1e-3, 0.05, 0.1, 250)
  cor_cl <- statgen_clump(g$gw, X, r2 = 0.1, p1 = 1e-3, p2 = 0.05, r2_from = "correlation", runtime = rt)
  expect_identical(c(nrow(cor_cl), nrow(pc)), c(180L, 182L))
  expect_output(print(cor_cl), "r\\^2 from correlations")
  # a band thresholded above r2 or narrower than the window is reported
  ld2 <- statgen_ld(X, window = 100, unit = "kb", r2_min = 0.6, missing = "pairwise", runtime = rt)
  expect_warning(statgen_clump(g$gw, ld = ld2), class = "statgen_warning_band")
})

test_that("statgen_clump() takes a statgen_gwas() result as it is", {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  res <- suppressMessages(statgen_gwas(X, kg_pheno()[c("#FID", "IID", "QT")]))
  g <- clump_gwas()
  # the same p-values to rounding (plink2 prints 6 digits): the same clumps
  expect_identical(statgen_clump(res, X)$ID, statgen_clump(g$gw, X)$ID)
})

test_that("summary statistics missing from the genotypes are reported with a count", {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  g <- clump_gwas()
  gw <- rbind(g$gw[c("ID", "P")], data.frame(ID = c("rs_not_there", "rs_neither"), P = c(1e-9, 0.5)))
  w <- NULL
  res <- withCallingHandlers(statgen_clump(gw, X),
                             statgen_warning_unmatched = function(c) {
                               w <<- conditionMessage(c)
                               invokeRestart("muffleWarning")
                             })
  expect_match(w, "^2 of 25163 gwas rows")
  expect_identical(attr(res, "unmatched"), c("rs_not_there", "rs_neither"))
  expect_identical(res$ID, statgen_clump(g$gw, X)$ID)
})

test_that("statgen_clump() on a toy band, worked by hand", {
  # r: 1-2 0.9, 2-3 0.5, 4 unlinked and 1 Mb away
  R <- diag(4)
  R[1, 2] <- R[2, 1] <- 0.9
  R[2, 3] <- R[3, 2] <- 0.5
  v <- data.frame(CHR = "1", POS = c(0, 100, 200, 1e6), ID = paste0("v", 1:4), CM = NA, A1 = "A", A2 = "G")
  ld <- RfmallocStatgen:::.ld_from_dense(R, variants = v)
  gw <- data.frame(ID = paste0("v", 1:4), P = c(1e-3, 1e-6, 1e-5, 1e-3))
  res <- statgen_clump(gw, ld = ld, p1 = 0.01, p2 = 0.01, r2 = 0.5)
  # v2 (strongest) claims v1 (r^2 0.81) but not v3 (0.25); v3 and v4 alone
  expect_identical(res$ID, c("v2", "v3", "v4"))
  expect_identical(res$SP2, list("v1", character(0), character(0)))
  expect_identical(res$TOTAL, c(1L, 0L, 0L))
  expect_identical(res$S001, c(1L, 0L, 0L))
  expect_identical(attr(res, "clump")$INDEX, c("v2", "v2", "v3", "v4"))
  res <- statgen_clump(gw, ld = ld, p1 = 0.01, p2 = 0.01, r2 = 0.2)
  expect_identical(res$SP2[[1]], c("v1", "v3"))
  # p > p2: counted in TOTAL and its bin as plink counts it, never claimed
  res <- statgen_clump(gw, ld = ld, p1 = 1e-4, p2 = 1e-4, r2 = 0.2)
  expect_identical(res$ID, "v2")
  expect_identical(res$SP2, list("v3"))
  expect_identical(unlist(res[1, counts]), c(TOTAL = 2L, NSIG = 0L, S05 = 0L, S01 = 0L, S001 = 1L, S0001 = 1L))
  # ties in P: variant order
  res <- statgen_clump(data.frame(ID = gw$ID, P = 1e-5), ld = ld, p1 = 0.01, r2 = 0.5)
  expect_identical(res$ID, c("v1", "v3", "v4"))
  # variants in no clump (p > p1 and unclaimed) keep INDEX NA without
  # shifting the INDEX of the rows after them
  res <- statgen_clump(data.frame(ID = gw$ID, P = c(0.5, 1e-6, 0.5, 1e-5)), ld = ld, p1 = 0.01,
                       p2 = 0.01, r2 = 0.5)
  expect_identical(attr(res, "clump")$INDEX, c(NA, "v2", NA, "v4"))
})

test_that("statgen_clump() groups SP2 by index position, round numbers included", {
  # 100,001 variants: the index at 1-based position 100000 (which prints
  # as 1e+05) must keep its member
  n <- 100001L
  rows <- as.list(seq_len(n) - 1L) # 0-based band rows: the diagonal only,
  rows[[99999L]] <- c(99998L, 99999L) # but variants 99999 and 100000 linked
  rows[[100000L]] <- c(99998L, 99999L)
  vals <- lapply(rows, function(r) 1)
  vals[[99999L]] <- c(1, 0.9)
  vals[[100000L]] <- c(0.9, 1)
  v <- data.frame(CHR = "1", POS = seq_len(n) * 10, ID = paste0("v", seq_len(n)), CM = NA,
                  A1 = "A", A2 = "G")
  ld <- RfmallocStatgen:::new_statgen_ld(c(0, cumsum(as.double(lengths(rows)))),
                                         unlist(rows), unlist(vals), "f64", v)
  gw <- data.frame(ID = c("v99999", "v100000"), P = c(1e-3, 1e-6))
  res <- statgen_clump(gw, ld = ld, p1 = 0.01, p2 = 0.01, r2 = 0.5, window_kb = 1)
  expect_identical(res$ID, "v100000")
  expect_identical(res$SP2, list("v99999"))
})

test_that("statgen_clump() rejects bad input with classed errors", {
  R <- diag(3)
  v <- data.frame(CHR = "1", POS = 1:3, ID = c("a", "b", "c"), CM = NA, A1 = "A", A2 = "G")
  ld <- RfmallocStatgen:::.ld_from_dense(R, variants = v)
  gw <- data.frame(ID = c("a", "b", "c"), P = c(1e-5, 0.2, 0.5))
  X <- Rfmalloc::fmalloc_bed(matrix(0L, 5, 3))
  e <- "fm_error_earg"
  expect_error(statgen_clump(gw, ld = ld, p1 = 0.1, p2 = 0.01), class = e)
  expect_error(statgen_clump(gw, ld = ld, r2 = 1.5), class = e)
  expect_error(statgen_clump(gw, ld = ld, window_kb = -1), class = e)
  expect_error(statgen_clump(gw, ld = ld, p1 = 0), class = e)
  expect_error(statgen_clump(gw), class = e)
  expect_error(statgen_clump(gw, X = X, ld = ld), class = e)
  expect_error(statgen_clump(gw, ld = list()), class = e)
  expect_error(statgen_clump(gw["ID"], ld = ld), class = e)
  expect_error(statgen_clump(data.frame(ID = "a", P = 2), ld = ld), class = e)
  expect_error(statgen_clump(data.frame(ID = c("a", "a"), P = 0.1), ld = ld), class = e)
  expect_error(statgen_clump(data.frame(ID = "zz", P = 0.1), ld = ld), class = e)
  expect_error(statgen_clump(cbind(gw, PHENO = c("x", "y", "y")), ld = ld), class = e)
  # a missing P takes part in no clump
  res <- statgen_clump(data.frame(ID = c("a", "b"), P = c(NA, 1e-6)), ld = ld)
  expect_identical(res$ID, "b")
})

# plink2 --indep-pairwise over a whole fixture: its .prune.in.
plink2_prune_in <- function(args, bed = kg("1kg_bi.bed")) {
  skip_if_no_plink2()
  out <- tempfile("prune_")
  res <- system2("plink2", c("--bfile", sub("\\.bed$", "", bed), "--indep-pairwise", args,
                             "--threads", "2", "--out", out), stdout = TRUE, stderr = TRUE)
  f <- paste0(out, ".prune.in")
  if (!file.exists(f)) stop("plink2 --indep-pairwise failed:\n", paste(res, collapse = "\n"))
  readLines(f)
}

test_that("statgen_prune() gives plink2 --indep-pairwise's .prune.in on the fixture's autosomes", {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  rt <- new_runtime()
  v <- Rfmalloc::fmalloc_variants(X)
  auto <- v$id[v$chr != "X"]
  for (a in list(c("50", "5", "0.5"), c("200kb", "1", "0.5"), c("20", "3", "0.1"), c("50", "5", "0.2"),
                 c("200kb", "1", "0.2"))) {
    p2 <- plink2_prune_in(a)
    kb <- grepl("kb$", a[1])
    ours <- statgen_prune(X, as.numeric(sub("kb$", "", a[1])), step = as.numeric(a[2]), r2 = as.numeric(a[3]),
                          unit = if (kb) "kb" else "variants", runtime = rt)
    expect_identical(intersect(ours, auto), intersect(p2, auto), info = paste(a, collapse = " "))
    expect_identical(which(attr(ours, "keep")), match(ours, v$id))
    # chrX: plink2 counts male calls as haploid; we take them as diploid
    x_diff <- length(union(setdiff(ours, p2), setdiff(p2, ours)))
    expect_lte(x_diff, 30)
  }
})

test_that("statgen_prune() with missing calls stays within 9 variants of plink2 (ceu_exon)", {
  # plink2's r^2 with missing calls is not plink 1.9's pairwise r^2 (ours):
  # measured 2, 1, 2 and 9 of 1,346 variants differ in the four settings
  bed <- fixture_path("genotypes", "ceu_exon", "ceu_exon_bi.bed")
  X <- Rfmalloc::fmalloc_bed_open(bed)
  rt <- new_runtime()
  for (a in list(c("50", "5", "0.5"), c("200kb", "1", "0.5"), c("20", "3", "0.1"), c("500kb", "1", "0.2"))) {
    p2 <- plink2_prune_in(a, bed = bed)
    kb <- grepl("kb$", a[1])
    ours <- statgen_prune(X, as.numeric(sub("kb$", "", a[1])), step = as.numeric(a[2]), r2 = as.numeric(a[3]),
                          unit = if (kb) "kb" else "variants", runtime = rt)
    expect_lte(length(union(setdiff(ours, p2), setdiff(p2, ours))), 9)
  }
})

test_that("statgen_prune() on a toy, worked by hand, and its bad input", {
  set.seed(5)
  g <- matrix(rbinom(300 * 6, 2, 0.3), 300, 6)
  g[, 2] <- g[, 1]
  g[1:20, 2] <- 2L                 # 2 copies 1 with a higher MAF: 1 goes
  g[, 4] <- 0L                     # constant: goes
  v <- data.frame(chr = "1", pos = c(1, 2, 3, 4, 5, 1e6) * 1000, id = paste0("s", 1:6), ref = "A", alt = "G")
  X <- Rfmalloc::fmalloc_bed(g)
  rt <- new_runtime()
  ours <- statgen_prune(X, 3, 1, 0.5, variants = v, runtime = rt)
  expect_identical(as.character(ours), c("s2", "s3", "s5", "s6"))
  expect_identical(attr(ours, "keep"), c(FALSE, TRUE, TRUE, FALSE, TRUE, TRUE))
  # in kb: s6 is alone in its windows
  expect_identical(as.character(statgen_prune(X, 10, 1, 0.5, unit = "kb", variants = v, runtime = rt)),
                   c("s2", "s3", "s5", "s6"))
  e <- "fm_error_earg"
  expect_error(statgen_prune(X, 1, variants = v), class = e)
  expect_error(statgen_prune(X, 2.5, variants = v), class = e)
  expect_error(statgen_prune(X, 5, step = 0, variants = v), class = e)
  expect_error(statgen_prune(X, 5, r2 = -0.1, variants = v), class = e)
  expect_error(statgen_prune(X, 5, unit = "cM", variants = v), class = e)
  expect_error(statgen_prune(X, 5, variants = transform(v, chr = rep(c("1", "2"), 3))), class = e)
  expect_error(statgen_prune(X, 10, unit = "kb", variants = v[6:1, ]), class = e)
})
