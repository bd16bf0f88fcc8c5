# Multi-allelic sites are split into one biallelic record per ALT, record j
# counting the copies of ALT j (docs/formats/conventions.md). The oracle is
# plink2 itself: plink2 a3.5 has no split command (no --make-pgen
# multiallelics=), but --export Av --export-allele naming ALT j of a
# multi-allelic variant counts that allele, so one plink2 run per j gives
# plink2's own ALT-j counts of every site with at least j ALTs.

# The split records of the multi-allelic sites of <prefix>.pgen from our
# PGEN, VCF.gz and BCF readers, which must agree; returns the PGEN's
# (samples x split records of multi-allelic sites, in file order).
read_split_records <- function(prefix, pvar, vcf, bcf, n_sites, n_records) {
  rt <- new_runtime()
  sp <- split_plan(read_pvar(pvar))
  multi <- which(sp$k > 1)
  expect_equal(length(unique(sp$site[multi])), n_sites)
  expect_length(multi, n_records)
  ours <- list()
  for (f in c(paste0(prefix, ".pgen"), vcf, bcf)) {
    X <- rpgen_read(f, runtime = rt)
    expect_equal(ncol(X), nrow(sp), label = paste(basename(f), "records"))
    v <- Rfmalloc::fmalloc_variants(X)
    expect_identical(v$id[multi], sp$id[multi], label = paste(basename(f), "ids"))
    expect_identical(v$alt[multi], sp$alt[multi], label = paste(basename(f), "counted ALT j"))
    expect_identical(v$ref[multi], sp$ref[multi], label = paste(basename(f), "ref"))
    ours[[basename(f)]] <- Rfmalloc::as.matrix(X[, multi])
  }
  # the VCF and BCF readers split exactly as the PGEN reader does
  expect_same_calls(ours[[2]], ours[[1]], paste(basename(vcf), "vs PGEN, split records"))
  expect_same_calls(ours[[3]], ours[[1]], paste(basename(bcf), "vs PGEN, split records"))
  ours[[1]]
}

# plink2's ALT-j count tables of the same sites equal M, cell by cell.
expect_split_equals_plink2 <- function(M, prefix, pvar) {
  plink2_or_skip()
  sp <- split_plan(read_pvar(pvar))
  multi <- which(sp$k > 1)
  td <- tempfile("split")
  dir.create(td)
  on.exit(unlink(td, recursive = TRUE), add = TRUE)
  for (j in seq_len(max(sp$k))) {
    s <- sp[sp$k > 1 & sp$j == j, ]
    if (!nrow(s)) next
    writeLines(paste(s$id, s$alt, sep = "\t"), file.path(td, "allele.txt"))
    writeLines(s$id, file.path(td, "ids.txt"))
    run_plink2(c("--pfile", prefix, "--extract", file.path(td, "ids.txt"), "--export", "Av",
                 "--export-allele", file.path(td, "allele.txt")), file.path(td, paste0("alt", j)))
    t <- read_traw(file.path(td, paste0("alt", j, ".traw")))
    expect_identical(t$meta$SNP, s$id)
    expect_identical(t$meta$COUNTED, s$alt)
    cols <- match(as.integer(rownames(s)), multi)
    expect_same_calls(M[, cols, drop = FALSE], t$G, sprintf("%s ALT %d vs plink2", basename(prefix), j))
  }
}

test_that("1kg.pgen/VCF/BCF split records equal plink2's ALT-j counts (516 sites, 2-4 ALTs)", {
  prefix <- sub("\\.pgen$", "", kg("1kg.pgen"))
  M <- read_split_records(prefix, kg("1kg.pvar"), kg("1kg.vcf.gz"), kg("1kg.bcf"), 516, 1057)
  # ALT/ALT heterozygotes (1/2) count 1 in both split records
  sp <- split_plan(read_pvar(kg("1kg.pvar")))
  multi <- sp[sp$k > 1, ]
  r1 <- which(multi$j == 1)
  r2 <- match(paste(multi$site[r1], 2), paste(multi$site, multi$j))
  expect_true(sum(M[, r1] == 1 & M[, r2] == 1) > 0)
  # every call places at most 2 copies over a site's split records
  tot <- rowsum(t(M), multi$site)
  expect_true(all(tot <= 2))
  expect_split_equals_plink2(M, prefix, kg("1kg.pvar"))
})

test_that("ceu_exon.pgen/VCF/BCF split records equal plink2's, missing calls missing in every record", {
  ceu <- function(...) gt_fixture("ceu_exon", ...)
  prefix <- sub("\\.pgen$", "", ceu("ceu_exon.pgen"))
  M <- read_split_records(prefix, ceu("ceu_exon.pvar"), ceu("ceu_exon.vcf.gz"), ceu("ceu_exon.bcf"), 2, 4)
  expect_true(anyNA(M))
  # a missing call is missing in each split record of its site
  expect_identical(is.na(M[, 1]), is.na(M[, 2]))
  expect_identical(is.na(M[, 3]), is.na(M[, 4]))
  expect_split_equals_plink2(M, prefix, ceu("ceu_exon.pvar"))
})
