# ceu_exon (90 samples, 1,346 biallelic + 2 multi-allelic sites, 7.1% of
# calls missing): every format reads to plink2's ALT-count table
# ceu_exon_bi.traw exactly, NA where the call is missing.

ceu <- function(...) gt_fixture("ceu_exon", ...)

ceu_traw <- function() read_traw(ceu("ceu_exon_bi.traw"))

test_that("the ceu .traw oracle is what the README says", {
  t <- ceu_traw()
  expect_equal(dim(t$G), c(90L, 1346L))
  expect_equal(sum(is.na(t$G)), 8603)
  expect_true(all(t$G %in% c(0, 1, 2, NA)))
})

test_that("ceu_exon: BED, PGEN (both), VCF.gz, BCF read to the .traw, NA where missing", {
  rt <- new_runtime()
  t <- ceu_traw()
  G <- t$G
  for (f in c("ceu_exon_bi.bed", "ceu_exon_bi.pgen")) {
    X <- rpgen_read(ceu(f), runtime = rt)
    expect_identical(colnames(X), colnames(G), label = paste(f, "ids"))
    expect_identical(rownames(X), rownames(G), label = paste(f, "samples"))
    expect_identical(Rfmalloc::fmalloc_variants(X)$alt, t$meta$COUNTED, label = paste(f, "counted"))
    expect_same_calls(Rfmalloc::as.matrix(X), G, f)
  }
  # the files with the two multi-allelic sites: their biallelic records
  sp <- split_plan(read_pvar(ceu("ceu_exon.pvar")))
  expect_equal(nrow(sp), 1350)
  bi <- which(sp$k == 1)
  expect_identical(sp$id[bi], colnames(G))
  for (f in c("ceu_exon.pgen", "ceu_exon.vcf.gz", "ceu_exon.bcf")) {
    X <- rpgen_read(ceu(f), runtime = rt)
    expect_equal(ncol(X), 1350, label = paste(f, "records"))
    v <- Rfmalloc::fmalloc_variants(X)
    expect_identical(v$id[bi], colnames(G), label = paste(f, "ids"))
    expect_identical(v$alt[bi], t$meta$COUNTED, label = paste(f, "counted"))
    expect_identical(v$pos[bi], t$meta$POS, label = paste(f, "positions"))
    expect_identical(rownames(X), rownames(G), label = paste(f, "samples"))
    expect_same_calls(Rfmalloc::as.matrix(X)[, bi], G, f)
  }
})

test_that("ceu_exon: missing calls are NA in the dosage and dense destinations too", {
  rt <- new_runtime()
  G <- ceu_traw()$G
  D <- rpgen_read(ceu("ceu_exon_bi.bed"), runtime = rt, destination = "dosage")
  expect_same_calls(Rfmalloc::as.matrix(D), G, "bed -> dosage")
  E <- rpgen_read(ceu("ceu_exon.vcf.gz"), runtime = rt, destination = "dense")
  keep <- colnames(E) %in% colnames(G) & !duplicated(colnames(E))
  e <- E[, which(keep)]
  expect_same_calls(e, G, "vcf -> dense")
  expect_true(all(is.na(e[is.na(G)])) && !anyNA(e[!is.na(G)]))
})

test_that("ceu_exon: PED/MAP and TPED/TFAM read to the .traw (counted alleles given, and plink 1.9's minor-allele rule)", {
  rt <- new_runtime()
  t <- ceu_traw()
  G <- t$G
  cnt <- t$meta$COUNTED
  for (f in c("ceu_exon_bi.ped", "ceu_exon_bi.tped")) {
    X <- rpgen_read(ceu(f), runtime = rt, counted_alleles = cnt)
    expect_identical(colnames(X), colnames(G))
    expect_identical(rownames(X), rownames(G))
    expect_same_calls(Rfmalloc::as.matrix(X), G, paste(f, "(counted alleles)"))
    # without counted alleles: the minor allele over called genotypes is
    # counted (ties excluded here: they depend on allele order in the file)
    Y <- rpgen_read(ceu(f), runtime = rt)
    a <- Rfmalloc::fmalloc_variants(Y)$alt
    alt_freq <- colMeans(G, na.rm = TRUE) / 2
    minor_is_alt <- alt_freq < 0.5
    clear <- alt_freq != 0.5 & alt_freq > 0
    expect_identical(a[clear & minor_is_alt], cnt[clear & minor_is_alt])
    expect_false(any(a[clear & !minor_is_alt] == cnt[clear & !minor_is_alt]))
    # one allele seen: ALT is '.', and every call counts 0
    mono <- alt_freq %in% c(0, 1)
    expect_true(any(mono))
    expect_true(all(a[mono] == "."))
    flip <- a != cnt & !mono
    want <- G
    want[, flip] <- 2 - G[, flip]
    want[, mono] <- ifelse(is.na(G[, mono]), NA, 0)
    expect_same_calls(Rfmalloc::as.matrix(Y), want, paste(f, "(minor allele)"))
  }
})

test_that("ceu_exon: GEN/SAMPLE, BGEN 8/16-bit and zstd, EIGENSTRAT read to the .traw", {
  rt <- new_runtime()
  t <- ceu_traw()
  G <- t$G
  for (f in c("ceu_exon_bi.gen", "ceu_exon_bi.8bit.bgen", "ceu_exon_bi.16bit.bgen",
              "ceu_exon_bi.16bit.zstd.bgen", "ceu_exon_bi.geno")) {
    X <- rpgen_read(ceu(f), runtime = rt)
    expect_identical(colnames(X), colnames(G), label = paste(f, "ids"))
    expect_identical(rownames(X), rownames(G), label = paste(f, "samples"))
    expect_identical(Rfmalloc::fmalloc_variants(X)$alt, t$meta$COUNTED, label = paste(f, "counted"))
    expect_same_calls(Rfmalloc::as.matrix(X), G, f)
  }
})
