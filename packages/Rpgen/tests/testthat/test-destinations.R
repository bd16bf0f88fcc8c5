test_that("sample and variant subsets, with duplicates, give duplicated rows and columns", {
  rt <- new_runtime()
  G <- traw_chr22()
  s <- c(5, 1, 5, 1126)
  v <- c(10, 3, 10, 1097, 3)
  X <- rpgen_read(kg("text", "1kg_bi_chr22.v11.bgen"), runtime = rt, samples = s, variants = v)
  expect_equal(dim(X), c(4L, 5L))
  expect_identical(Rfmalloc::as.matrix(X), G[s, v])
  expect_equal(Rfmalloc::fmalloc_variants(X)$id, colnames(G)[v])
  Y <- rpgen_read(kg("text", "1kg_bi_chr22.tped"), runtime = rt, samples = rownames(G)[s],
                  variants = v, counted_alleles = traw_cache$counted)
  expect_identical(Rfmalloc::as.matrix(Y), G[s, v])
  D <- rpgen_read(kg("1kg.bcf"), runtime = rt, region = "22", destination = "dense",
                  samples = s, variants = c(2, 1, 2))
  expect_true(Rfmalloc::fmalloc_is_mapped(D))
  expect_equal(dim(D), c(4L, 3L))
  expect_equal(colnames(D)[1], colnames(D)[3])
  expect_identical(unname(D[, 1]), unname(D[, 3]))
  expect_s3_class(attr(D, "variants"), "data.frame")
})

test_that("dosage and dense destinations agree with the hardcalls", {
  rt <- new_runtime()
  G <- traw_chr22()[, 1:50]
  D <- rpgen_read(kg("text", "1kg_bi_chr22.gen"), runtime = rt, destination = "dosage",
                  variants = 1:50)
  expect_true(max(abs(Rfmalloc::as.matrix(D) - G), na.rm = TRUE) <= 0.01)
  E <- rpgen_read(kg("text", "1kg_bi_chr22.gen"), runtime = rt, destination = "dense",
                  variants = 1:50)
  expect_true(max(abs(E[, ] - G), na.rm = TRUE) <= 0.1)
})

test_that("the haplotype destination keeps slots that sum to the hardcalls", {
  rt <- new_runtime()
  G <- traw_chr22()[, 1:30]
  H <- rpgen_read(kg("text", "1kg_bi_chr22.haps"), runtime = rt, destination = "haplotype",
                  variants = 1:30)
  expect_s3_class(H, "fmalloc_haplotypes")
  expect_equal(dim(H), c(30, 2 * 1126))
  h <- H[1:30, ]
  expect_equal(t(h[, c(TRUE, FALSE)] + h[, c(FALSE, TRUE)]), unname(G), ignore_attr = TRUE)
  expect_true(all(H$missing[1:30, ] == 0L))
  # the matrix verbs (Rfmalloc's generics: this file runs in Rpgen's namespace,
  # where base's come first): decoded values in bounded blocks of loci, or a
  # classed refusal
  m <- Rfmalloc::as.matrix(H)
  expect_identical(m, H[, , drop = FALSE])
  expect_identical(dim(m), dim(H))
  expect_identical(dimnames(m), dimnames(H))
  expect_identical(Rfmalloc::colSums(H), colSums(m) + 0)
  old <- Rfmalloc::fmalloc_panel_budget()
  Rfmalloc::fmalloc_panel_budget(4 * ncol(H) * 7) # blocks of 7 loci
  expect_identical(Rfmalloc::rowSums(H), rowSums(m) + 0)
  expect_equal(Rfmalloc::colMeans(H), colMeans(m))
  expect_identical(Rfmalloc::rowMeans(H), rowMeans(m))
  Rfmalloc::fmalloc_panel_budget(old)
  expect_identical(unname(Rfmalloc::rowSums(H)), unname(colSums(G, na.rm = TRUE)) + 0)
  e <- tryCatch(Rfmalloc::t(H), error = identity)
  expect_s3_class(e, "fm_error_eunsupported")
  expect_identical(conditionCall(e), quote(Rfmalloc::t(H)))
  expect_match(conditionMessage(e), "t(as.matrix(x))", fixed = TRUE)
  s <- Rfmalloc::summary(H)
  expect_identical(s$dim, c(30L, 2252L))
  expect_identical(s$n_missing, 0)
  expect_equal(unname(s$alt_freq[["Mean"]]), mean(rowMeans(m)))
  expect_output(print(s), "30 loci x 2,252 haplotypes, 0 missing slots")
  # unphased records cannot fill a haplotype destination
  expect_error(rpgen_read(kg("text", "1kg_bi_chr22.v11.bgen"), runtime = rt,
                          destination = "haplotype", variants = 1:30),
               class = "fm_error")
})

test_that("bad input gives classed errors naming the file", {
  rt <- new_runtime()
  d <- tempfile("rpgen_bad")
  dir.create(d)
  bad <- file.path(d, "x.bgen")
  writeBin(charToRaw("this is not a bgen file at all, not at all"), bad)
  expect_error(rpgen_read(bad, runtime = rt), "x.bgen", class = "fm_error_eformat")
  missing_bed <- file.path(d, "none.bed")
  expect_error(rpgen_read(missing_bed, runtime = rt), "none", class = "fm_error_eio")
  bed <- file.path(d, "t.bed")
  writeBin(as.raw(c(0x6c, 0x1b, 0x01, 0x00)), bed)
  writeLines("1 v1 0 1 A G", file.path(d, "t.bim"))
  writeLines(c("f a 0 0 1 -9", "f b 0 0 1 -9", "f c 0 0 1 -9", "f d 0 0 1 -9", "f e 0 0 1 -9"),
             file.path(d, "t.fam"))
  expect_error(rpgen_read(bed, runtime = rt), "t.bed", class = "fm_error_eformat")
  g <- file.path(d, "t.geno")
  writeLines(c("012", "0x2"), g)
  writeLines(c("s1 1 0 10 A G", "s2 1 0 20 C T"), file.path(d, "t.snp"))
  writeLines(c("i1 M p", "i2 F p", "i3 U p"), file.path(d, "t.ind"))
  expect_error(rpgen_read(g, runtime = rt), "t.geno", class = "fm_error")
  expect_error(rpgen_read(kg("1kg_bi.bed"), runtime = rt, variants = 0), class = "fm_error_earg")
  expect_error(rpgen_read(kg("1kg_bi.bed"), runtime = "rt"), class = "fm_error_earg")
  expect_error(rpgen_read(file.path(d, "x.unknown"), runtime = rt), class = "fm_error_eio")
})

# Selecting by ID equals selecting by index: the IDs of records v (as the
# index read names its columns) select the same columns, and the row names of
# samples s the same rows, with the same metadata. Returns the index read.
expect_select_by_id <- function(rt, path, v, s, ...) {
  A <- rpgen_read(path, runtime = rt, variants = v, samples = s, ...)
  expect_equal(dim(A), c(length(s), length(v)))
  B <- rpgen_read(path, runtime = rt, variants = colnames(A), samples = rownames(A), ...)
  expect_identical(Rfmalloc::as.matrix(B), Rfmalloc::as.matrix(A))
  expect_identical(Rfmalloc::fmalloc_variants(B), Rfmalloc::fmalloc_variants(A))
  expect_identical(Rfmalloc::fmalloc_samples(B), Rfmalloc::fmalloc_samples(A))
  invisible(A)
}

test_that("variants and samples by ID select what the same indices select (bed, pgen, bgen)", {
  rt <- new_runtime()
  bim <- utils::read.table(kg("1kg_bi.bim"), colClasses = "character")
  fam <- utils::read.table(kg("1kg_bi.fam"), colClasses = "character")
  v <- c(25161, 7, 12000, 7, 1)
  s <- c(1126, 2, 2, 600)
  A <- expect_select_by_id(rt, kg("1kg_bi.bed"), v, s)
  expect_identical(colnames(A), bim$V2[v])
  expect_identical(rownames(A), fam$V2[s])
  P <- expect_select_by_id(rt, kg("1kg_bi.pgen"), v, s)
  expect_identical(Rfmalloc::as.matrix(P), Rfmalloc::as.matrix(A))
  G <- expect_select_by_id(rt, kg("1kg_bi.8bit.bgen"), v, s)
  expect_identical(colnames(G), bim$V2[v])
  # BGEN v1.1 without a sample block: sample IDs from the .sample beside it
  G11 <- expect_select_by_id(rt, kg("text", "1kg_bi_chr22.v11.bgen"), c(1097, 3, 3), s)
  expect_identical(Rfmalloc::as.matrix(G11), traw_chr22()[s, c(1097, 3, 3)])
  # a logical vector and a factor of IDs select the same records
  keep <- seq_len(nrow(bim)) %in% v
  L <- rpgen_read(kg("1kg_bi.bed"), runtime = rt, variants = keep)
  expect_identical(colnames(L), bim$V2[sort(unique(v))])
  Fc <- rpgen_read(kg("1kg_bi.bed"), runtime = rt, variants = factor(bim$V2[v]), samples = s)
  expect_identical(Rfmalloc::as.matrix(Fc), Rfmalloc::as.matrix(A))
})

test_that("variants and samples by ID: VCF, BCF and the text formats", {
  rt <- new_runtime()
  G <- traw_chr22()
  s <- c(1126, 2, 2, 600)
  for (f in c("1kg.vcf.gz", "1kg.bcf")) {
    X <- expect_select_by_id(rt, kg(f), c(50, 2, 50), s, region = "22")
    expect_true(all(grepl("^22:", colnames(X)) | grepl("^rs", colnames(X))))
  }
  v <- c(1097, 10, 500, 10)
  for (f in c("1kg_bi_chr22.gen", "1kg_bi_chr22.haps")) {
    X <- expect_select_by_id(rt, kg("text", f), v, s)
    expect_identical(colnames(X), colnames(G)[v], label = f)
    expect_identical(Rfmalloc::as.matrix(X), G[s, v], label = f)
  }
  # the EIGENSTRAT fixture holds 1010 of the 1097 variants
  X <- expect_select_by_id(rt, kg("text", "1kg_bi_chr22.geno"), c(1010, 10, 500, 10), s)
  expect_identical(Rfmalloc::as.matrix(X), G[s, colnames(X)])
  X <- expect_select_by_id(rt, kg("text", "1kg_bi_chr22_hl.haps"), v, s, chrom = "22")
  expect_identical(unname(Rfmalloc::as.matrix(X)), unname(G[s, v]))
  cnt <- traw_cache$counted
  for (f in c("1kg_bi_chr22.ped", "1kg_bi_chr22.tped")) {
    X <- expect_select_by_id(rt, kg("text", f), v, s, counted_alleles = cnt)
    expect_identical(Rfmalloc::as.matrix(X), G[s, v], label = f)
  }
  dos <- fixture_path("genotypes", "1kg_phase1_chr22_dosage")
  X <- expect_select_by_id(rt, file.path(dos, "1kg_p1_chr22.dosage"), c(3, 1, 3), c(5, 1, 1),
                           format = "dosage", fam = file.path(dos, "1kg_p1_chr22.fam"),
                           map = file.path(dos, "1kg_p1_chr22.dosage.map"))
  expect_identical(colnames(X), c("rs114143073", "rs7410291", "rs114143073"))
})

test_that("an ID shared by the records split from a multi-allelic site selects all of them", {
  rt <- new_runtime()
  site <- "22:22085620:CA:CAA" # CA > CAA,CAAA,C: three records after the split
  for (f in c("1kg.pgen", "1kg.bcf")) {
    args <- if (f == "1kg.bcf") list(region = "22") else list()
    X <- do.call(rpgen_read, c(list(kg(f), runtime = rt, variants = c(site, site)), args))
    v <- Rfmalloc::fmalloc_variants(X)
    expect_equal(ncol(X), 6L, label = f)
    expect_equal(v$id, rep(site, 6))
    expect_equal(v$alt, rep(c("CAA", "CAAA", "C"), 2), label = f)
    M <- Rfmalloc::as.matrix(X)
    expect_identical(M[, 1:3], M[, 4:6])
    # each allele is counted in its own record: a sample carries at most 2 copies in total
    expect_true(all(rowSums(M[, 1:3], na.rm = TRUE) <= 2))
  }
  # the same records by index
  pv <- utils::read.table(kg("1kg.pvar"), colClasses = "character", comment.char = "#")
  n_alt <- lengths(strsplit(pv$V5, ","))
  first <- sum(n_alt[seq_len(match(site, pv$V3) - 1)]) + 1
  Y <- rpgen_read(kg("1kg.pgen"), runtime = rt, variants = first + 0:2)
  X <- rpgen_read(kg("1kg.pgen"), runtime = rt, variants = site)
  expect_identical(Rfmalloc::as.matrix(X), Rfmalloc::as.matrix(Y))
})

test_that("unknown, missing and empty IDs are errors naming the ID and the file", {
  rt <- new_runtime()
  bim <- utils::read.table(kg("1kg_bi.bim"), colClasses = "character")
  expect_error(rpgen_read(kg("1kg_bi.bed"), runtime = rt, variants = c(bim$V2[1], "rsNOPE", "rsNO2")),
               "variants ID 'rsNOPE' is not in '.*1kg_bi\\.bed' \\(25161 variants there\\)",
               class = "fm_error_earg")
  expect_error(rpgen_read(kg("1kg_bi.bed"), runtime = rt, samples = c("HG00096", "NOBODY")),
               "samples ID 'NOBODY' is not in '.*1kg_bi\\.bed' \\(1126 samples there\\)",
               class = "fm_error_earg")
  expect_error(rpgen_read(kg("1kg.bcf"), runtime = rt, region = "22", variants = "rs_absent"),
               "'rs_absent' is not in '.*1kg\\.bcf'", class = "fm_error_earg")
  for (bad in list(".", "", NA_character_))
    expect_error(rpgen_read(kg("1kg_bi.bed"), runtime = rt, variants = c(bim$V2[1], bad)),
                 "must not be NA, empty or '\\.'", class = "fm_error_earg")
})

test_that("half-calls keep their slot; the missing plane marks the other one", {
  rt <- new_runtime()
  v <- tempfile(fileext = ".vcf")
  writeLines(c("##fileformat=VCFv4.2", "##contig=<ID=1>",
               '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
               paste("#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT",
                     "S1", "S2", "S3", "S4", "S5", sep = "\t"),
               paste("1", "100", "v1", "A", "G", ".", ".", ".", "GT",
                     "0|.", "1|.", ".|0", ".|1", "1|0", sep = "\t")), v)
  H <- rpgen_read(v, destination = "haplotype", runtime = rt)
  expect_equal(unname(H[1, ]), c(0, NA, 1, NA, NA, 0, NA, 1, 1, 0))
  expect_equal(unname(H$missing[1, ]), c(0, 1, 0, 1, 1, 0, 1, 0, 0, 0))
  expect_identical(unname(Rfmalloc::as.matrix(H)), matrix(c(0L, NA, 1L, NA, NA, 0L, NA, 1L, 1L, 0L), 1, 10))
  expect_identical(unname(Rfmalloc::rowSums(H)), NA_real_)
  expect_identical(unname(Rfmalloc::rowSums(H, na.rm = TRUE)), 3)
  expect_identical(unname(Rfmalloc::colMeans(H, na.rm = TRUE)), c(0, NaN, 1, NaN, NaN, 0, NaN, 1, 1, 0))
  expect_identical(Rfmalloc::summary(H)$n_missing, 4)
  expect_equal(unname(Rfmalloc::as.matrix(rpgen_read(v, runtime = rt))[, 1]),
               c(NA, NA, NA, NA, 1))
})

test_that("a .fam with one line too many is read (as plink2 does) with a warning", {
  rt <- new_runtime()
  src <- sub("\\.bed$", "", kg("1kg_bi.bed"))
  prefix <- file.path(tempfile("extra_fam_"), "x")
  dir.create(dirname(prefix))
  on.exit(unlink(dirname(prefix), recursive = TRUE))
  for (ext in c(".bed", ".bim")) file.symlink(paste0(src, ext), paste0(prefix, ext))
  writeLines(c(readLines(paste0(src, ".fam")), "X EXTRA 0 0 0 -9"), paste0(prefix, ".fam"))
  bed <- paste0(prefix, ".bed")
  w <- tryCatch(rpgen_read(bed, runtime = rt, variants = 1:20), warning = identity)
  expect_s3_class(w, "fm_warning_emismatch")
  expect_identical(conditionCall(w), quote(rpgen_read(bed, runtime = rt, variants = 1:20)))
  expect_match(conditionMessage(w), "(line 1127) reads two copies of A1 at each of the first 1000 variants",
               fixed = TRUE)
  X <- suppressWarnings(rpgen_read(bed, runtime = rt, variants = 1:20))
  expect_identical(dim(X), c(1127L, 20L))
  expect_true(all(Rfmalloc::as.matrix(X)[1127, ] == 2))
  expect_no_warning(rpgen_read(paste0(src, ".bed"), runtime = rt, variants = 1:20))
})

