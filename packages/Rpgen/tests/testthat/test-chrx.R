# Males on chromosome X (docs/formats/conventions.md, "Males on X"): on X
# outside the PARs a sample known to be male is haploid, so his
# heterozygous call is missing, in every format, from the sex its companion
# stores (.fam/.psam/.ped/.tfam/.sample; a VCF stores none: `sex =`).
# Generated data: four samples (two males, two females), one chrX variant
# where male M1 is heterozygous and one autosomal variant; plink2 converts
# the PED/MAP to the other formats (those cases skip without plink2).

chrx_write_ped <- function(td) {
  writeLines(c("F1 M1 0 0 1 -9 A G A A", "F2 M2 0 0 1 -9 G G A C",
               "F3 W1 0 0 2 -9 A G A C", "F4 W2 0 0 2 -9 G G C C"), file.path(td, "x.ped"))
  writeLines(c("X rsX1 0 3000000", "1 rs1 0 100"), file.path(td, "x.map"))
  file.path(td, "x")
}

# ALT is A at rsX1 and C at rs1 (the minor alleles; plink2 makes them ALT).
# M1's A/G on X is missing; M2's G/G on X counts 0 (a haploid G); the
# females' hets count 1; rs1 is unchanged.
chrx_want <- matrix(c(NA, 0, 1, 0, 0, 1, 1, 2), 4,
                    dimnames = list(c("M1", "M2", "W1", "W2"), c("rsX1", "rs1")))

chrx_hardcalls <- function(path, rt, ...) {
  X <- rpgen_read(path, runtime = rt, ...)
  v <- Rfmalloc::fmalloc_variants(X)
  testthat::expect_identical(v$alt, c("A", "C"), label = paste(basename(path), "ALT alleles"))
  testthat::expect_identical(v$chr, c("X", "1"), label = paste(basename(path), "chromosomes"))
  M <- Rfmalloc::as.matrix(X)
  # plink2's VCF names samples FID_IID
  rownames(M) <- sub("^F[0-9]_", "", rownames(M))
  M
}

test_that("PED/MAP: the male's het on chrX is missing, from the .ped sex column", {
  rt <- new_runtime()
  td <- tempfile("chrx")
  dir.create(td)
  x <- chrx_write_ped(td)
  expect_identical(chrx_hardcalls(paste0(x, ".ped"), rt), chrx_want)
  # unknown sex (column 5 = 0): a diploid het, as stored
  p <- readLines(paste0(x, ".ped"))
  writeLines(sub("^(F[0-9] \\S+ 0 0) [12]", "\\1 0", p), file.path(td, "u.ped"))
  file.copy(paste0(x, ".map"), file.path(td, "u.map"))
  U <- chrx_hardcalls(file.path(td, "u.ped"), rt)
  expect_identical(U["M1", "rsX1"], 1)
  expect_identical(U[, "rs1"], chrx_want[, "rs1"])
  # the sex option replaces the companion's
  expect_identical(chrx_hardcalls(file.path(td, "u.ped"), rt, sex = c("M", "m", "F", NA)), chrx_want)
  expect_identical(chrx_hardcalls(paste0(x, ".ped"), rt, sex = c(0, 1, 2, 2))["M1", "rsX1"], 1)
  expect_error(rpgen_read(paste0(x, ".ped"), runtime = rt, sex = c(1, 2)),
               class = "fm_error_earg", regexp = "one value per sample of the file \\(4 samples\\)")
  expect_error(rpgen_read(paste0(x, ".ped"), runtime = rt, sex = list(1, 2, 1, 2)),
               class = "fm_error_earg", regexp = "sex must be numbers")
})

test_that("every format plink2 writes gives the male's chrX het as missing, identically", {
  plink2_or_skip()
  rt <- new_runtime()
  td <- tempfile("chrx")
  dir.create(td)
  x <- chrx_write_ped(td)
  run_plink2(c("--pedmap", x, "--make-pgen"), x)
  run_plink2(c("--pedmap", x, "--make-bed"), x)
  o <- function(s) file.path(td, s)
  run_plink2(c("--pfile", x, "--export", "vcf"), o("xv"))
  run_plink2(c("--pfile", x, "--export", "bgen-1.2", "ref-first"), o("xb"))
  run_plink2(c("--pfile", x, "--export", "bgen-1.1", "ref-first"), o("xb11"))
  run_plink2(c("--pfile", x, "--export", "oxford", "ref-first"), o("xo"))
  run_plink2(c("--pfile", x, "--export", "tped"), o("xt"))
  cases <- list(pgen = list(paste0(x, ".pgen")), bed = list(paste0(x, ".bed")),
                ped = list(paste0(x, ".ped")), tped = list(o("xt.tped")),
                bgen12 = list(o("xb.bgen")), bgen11 = list(o("xb11.bgen")),
                gen = list(o("xo.gen")), vcf = list(o("xv.vcf"), sex = c(1, 1, 2, 2)))
  for (nm in names(cases)) {
    a <- cases[[nm]]
    M <- do.call(chrx_hardcalls, c(a[1], list(rt = rt), a[-1]))
    expect_identical(M, chrx_want, label = paste(nm, "hardcalls"))
    # integer allele counts: NA, 0, 1 or 2 only
    expect_true(all(is.na(M) | M %in% 0:2), label = nm)
  }
  # the dosage and dense destinations agree (formats with dosages included:
  # the male's het dosage is erased with his call, as plink2 --set-hh-missing)
  for (nm in c("pgen", "bed", "bgen12", "bgen11", "gen")) {
    f <- cases[[nm]][[1]]
    D <- rpgen_read(f, runtime = rt, destination = "dense")
    expect_identical(unname(D[, 1:2]), unname(chrx_want), label = paste(nm, "dense"))
    S <- Rfmalloc::as.matrix(rpgen_read(f, runtime = rt, destination = "dosage"))
    expect_equal(unname(S), unname(chrx_want), tolerance = 1 / 127, label = paste(nm, "dosage"))
  }
  # plink2's own --make-bed --set-hh-missing agrees
  run_plink2(c("--pfile", x, "--set-hh-missing", "--make-bed"), o("hh"))
  expect_identical(chrx_hardcalls(o("hh.bed"), rt), chrx_want)
  # without its .sample a BGEN v1.1 (diploid males) knows no sex; the v1.2
  # export stores males with ploidy 1, where a het is missing anyway
  file.remove(o("xb11.sample"), o("xb.sample"))
  M11 <- Rfmalloc::as.matrix(rpgen_read(o("xb11.bgen"), runtime = rt))
  expect_identical(unname(M11[1, 1]), 1)
  M12 <- Rfmalloc::as.matrix(rpgen_read(o("xb.bgen"), runtime = rt))
  expect_identical(unname(M12), unname(chrx_want))
  # a VCF stores no sex: without `sex` the reader sees M1's 0/1 only (his
  # first call on X, before any haploid call: docs/formats/vcf.md)
  V <- chrx_hardcalls(o("xv.vcf"), rt)
  expect_identical(V["M1", "rsX1"], 1)
  expect_identical(V[-1, ], chrx_want[-1, ])
})

test_that("a male's call of two ALTs at a multi-allelic chrX site is missing in every split record", {
  plink2_or_skip()
  rt <- new_runtime()
  td <- tempfile("chrx")
  dir.create(td)
  vcf <- file.path(td, "m.vcf")
  writeLines(c("##fileformat=VCFv4.2", "##contig=<ID=X>",
               "##FORMAT=<ID=GT,Number=1,Type=String,Description=\"GT\">",
               paste("#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT",
                     "M1", "M2", "W1", "W2", sep = "\t"),
               paste("X", "3000000", "m1", "A", "C,G", ".", ".", ".", "GT", "0/2", "1/1", "0/2",
                     "1/2", sep = "\t"),
               paste("X", "3000100", "m2", "A", "C", ".", ".", ".", "GT", "0/1", "1/1", "0/1",
                     "0/0", sep = "\t")), vcf)
  writeLines(c("#IID\tSEX", "M1\t1", "M2\t1", "W1\t2", "W2\t2"), file.path(td, "m.sex"))
  run_plink2(c("--vcf", vcf, "--update-sex", file.path(td, "m.sex"), "--make-pgen"),
             file.path(td, "m"))
  # records: m1 ALT C, m1 ALT G, m2; M1's 0/2 is a het at the site (0 copies
  # of C, still missing), M1's 0/1 on m2 too; M2 is homozygous everywhere
  want <- matrix(c(NA, 2, 0, 1, NA, 0, 1, 1, NA, 2, 1, 0), 4,
                 dimnames = list(c("M1", "M2", "W1", "W2"), c("m1", "m1", "m2")))
  P <- Rfmalloc::as.matrix(rpgen_read(file.path(td, "m.pgen"), runtime = rt))
  expect_identical(P, want)
  V <- Rfmalloc::as.matrix(rpgen_read(vcf, runtime = rt, sex = c(1, 1, 2, 2)))
  expect_identical(V, want)
})
