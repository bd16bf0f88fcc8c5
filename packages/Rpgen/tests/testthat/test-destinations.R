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
