# One hardcall rule for every format that stores dosages or probabilities,
# plink2's: the nearest integer of the dosage when it lies within 0.1 of it,
# measured in plink2's units of 1/16384 (docs/formats/conventions.md).
# Checked here against the installed plink2 on inputs written by this test
# (generated, not real data) that put a sample on every side of every
# boundary: every 8-bit BGEN probability pair (unphased and phased), every
# 16-bit BGEN dosage numerator, haploid samples, BGEN v1.1 values half a
# unit from the grid, and GEN, legacy dosage and VCF DS values around 0.1.

# Little-endian bytes of non-negative integers (size 1, 2 or 4 bytes each).
le_bytes <- function(x, size) {
  x <- as.numeric(x)
  out <- vapply(seq_len(size) - 1L, function(k) as.integer((x %/% 256^k) %% 256), integer(length(x)))
  as.raw(t(matrix(out, ncol = size)))
}
bgen_str16 <- function(s) c(le_bytes(nchar(s, "bytes"), 2), charToRaw(s))
bgen_str32 <- function(s) c(le_bytes(nchar(s, "bytes"), 4), charToRaw(s))

# A BGEN written here: layout 2 (v1.2, uncompressed) two-allele variants,
# each list(bits = 8 or 16, phased = 0/1, ploidy = n bytes, values = the
# stored values in file order), or layout 1 (v1.1, uncompressed) with
# values = 3 n uint16 probabilities. Writes path and its .sample.
write_bgen <- function(path, n, vars, layout = 2L) {
  body <- list(le_bytes(20, 4), le_bytes(c(20, length(vars), n), 4), charToRaw("bgen"),
               le_bytes(layout * 4L, 4))
  for (v in seq_along(vars)) {
    x <- vars[[v]]
    head <- c(if (layout == 1L) le_bytes(n, 4), bgen_str16(sprintf("snp%d", v)),
              bgen_str16(sprintf("rs%d", v)), bgen_str16("1"), le_bytes(v, 4),
              if (layout == 2L) le_bytes(2, 2), bgen_str32("A"), bgen_str32("C"))
    if (layout == 1L) {
      geno <- le_bytes(x$values, 2)
    } else {
      geno <- c(le_bytes(n, 4), le_bytes(2, 2), as.raw(c(1, 2)), as.raw(x$ploidy),
                as.raw(c(x$phased, x$bits)), le_bytes(x$values, x$bits / 8))
      geno <- c(le_bytes(length(geno), 4), geno)
    }
    body[[length(body) + 1L]] <- c(head, geno)
  }
  writeBin(unlist(body), path)
  writeLines(c("ID_1 ID_2 missing", "0 0 0", sprintf("s%d s%d 0", seq_len(n), seq_len(n))),
             sub("\\.bgen$", ".sample", path))
}

# plink2's hardcalls of a file (--make-bed, read back with our BED reader).
plink2_calls <- function(args, td, rt) {
  out <- file.path(td, "p")
  unlink(paste0(out, ".bed"))
  run_plink2(c(args, "--make-bed"), out)
  Rfmalloc::as.matrix(rpgen_read(paste0(out, ".bed"), runtime = rt))
}

test_that("BGEN hardcalls equal plink2's at every 8-bit pair and every 16-bit dosage", {
  plink2_or_skip()
  rt <- new_runtime()
  td <- tempfile("rule")
  dir.create(td)
  on.exit(unlink(td, recursive = TRUE), add = TRUE)
  # 8 bits: the 32,896 pairs P(REF/REF) = a, P(REF/ALT) = b (a + b <= 255)
  # unphased, and 65,536 phased pairs of P(REF) per haplotype
  a <- rep(0:255, 256:1)
  b <- unlist(lapply(0:255, function(k) 0:(255 - k)))
  n8 <- 65536L
  i <- (seq_len(n8) - 1L) %% length(a) + 1L
  ph <- seq_len(n8) - 1L
  f8 <- file.path(td, "b8.bgen")
  # variant 3: haploid every other sample (P(REF) = 0..255 in turn), else the pairs
  hap <- rep(c(TRUE, FALSE), n8 / 2)
  v3 <- vector("list", n8)
  v3[hap] <- as.list((seq_len(n8 / 2) - 1L) %% 256)
  v3[!hap] <- lapply(which(!hap), function(k) c(a[i[k]], b[i[k]]))
  write_bgen(f8, n8, list(
    list(bits = 8, phased = 0, ploidy = rep(2L, n8), values = rbind(a[i], b[i])),
    list(bits = 8, phased = 1, ploidy = rep(2L, n8), values = rbind(ph %% 256, ph %/% 256)),
    list(bits = 8, phased = 0, ploidy = ifelse(hap, 1L, 2L), values = unlist(v3))))
  # 16 bits: every ALT numerator s = 0 .. 131070, stored unphased with
  # P(ALT/ALT) = floor(s / 2) and phased as two haplotypes' P(ALT)
  s <- 0:131070
  n16 <- length(s)
  hom <- s %/% 2
  het <- s - 2 * hom
  a0 <- s %/% 2
  f16 <- file.path(td, "b16.bgen")
  write_bgen(f16, n16, list(
    list(bits = 16, phased = 0, ploidy = rep(2L, n16), values = rbind(65535 - het - hom, het)),
    list(bits = 16, phased = 1, ploidy = rep(2L, n16), values = rbind(65535 - a0, 65535 - (s - a0)))))
  for (f in c(f8, f16)) {
    P <- plink2_calls(c("--bgen", f, "ref-first", "--sample", sub("\\.bgen$", ".sample", f)), td, rt)
    X <- Rfmalloc::as.matrix(rpgen_read(f, runtime = rt, destination = "hardcall"))
    if (f == f8) { # a haploid near 1 copy is a heterozygous haploid call: missing (plink2 calls
      # 1): P(ALT) = 115/255 .. 140/255, 128 samples each
      expect_equal(sum(P[hap, 3] == 1, na.rm = TRUE), 26 * 128)
      P[hap & P[, 3] %in% 1, 3] <- NA
    }
    expect_same_calls(X, P, paste(basename(f), "hardcalls vs plink2"))
    expect_gt(sum(is.na(P)), ncol(P) * 1000)
    expect_gt(sum(!is.na(P)), ncol(P) * 10000)
  }
})

test_that("BGEN v1.1 values half a unit from plink2's grid round as plink2 rounds them", {
  plink2_or_skip()
  rt <- new_runtime()
  td <- tempfile("rule")
  dir.create(td)
  on.exit(unlink(td, recursive = TRUE), add = TRUE)
  # dosage (v1 + 2 v2) / 32768, probabilities summing to 32768: every odd
  # numerator is a half unit (plink2 rounds halves to even), plus a grid
  v2 <- c(0:32767, seq(0, 32767, by = 7))
  v1 <- c(rep(1L, 32768), rep(0L, length(seq(0, 32767, by = 7))))
  ok <- v1 + v2 <= 32768
  v1 <- v1[ok]
  v2 <- v2[ok]
  n <- length(v1)
  f <- file.path(td, "v11.bgen")
  write_bgen(f, n, list(list(values = rbind(32768 - v1 - v2, v1, v2))), layout = 1L)
  P <- plink2_calls(c("--bgen", f, "ref-first", "--sample", sub("\\.bgen$", ".sample", f)), td, rt)
  X <- Rfmalloc::as.matrix(rpgen_read(f, runtime = rt, destination = "hardcall"))
  expect_same_calls(X, P, "v1.1 hardcalls vs plink2")
  D <- rpgen_read(f, runtime = rt, destination = "dense")
  expect_equal(unname(D[, 1]), (v1 + 2 * v2) / 32768)
})

test_that("GEN, legacy dosage and VCF DS hardcalls equal plink2's around 0.1", {
  plink2_or_skip()
  rt <- new_runtime()
  td <- tempfile("rule")
  dir.create(td)
  on.exit(unlink(td, recursive = TRUE), add = TRUE)
  # dosages on both sides of each boundary, as P(REF/REF) P(REF/ALT) P(ALT/ALT)
  # on the two genotypes next to the dosage, and a few spread over three
  d <- c(0, 0.05, 0.1, 0.1001, 0.1003, 0.5, 0.8999, 0.9, 0.95, 1, 1.0999, 1.1, 1.1001,
         1.8999, 1.9, 1.95, 2, 0.100005, 0.10004, 1.899995, 1.89996)
  p <- t(vapply(d, function(x) if (x <= 1) c(1 - x, x, 0) else c(0, 2 - x, x - 1), numeric(3)))
  p <- rbind(p, c(0.2, 0.7, 0.1), c(0.92, 0, 0.08), c(0.04, 0.02, 0.94), c(0.05, 0.05, 0.9))
  n <- nrow(p)
  ids <- sprintf("s%d", seq_len(n))
  txt <- function(x) sprintf("%.10g", x)
  gen <- file.path(td, "r.gen")
  writeLines(paste("1 rs1 100 A C", paste(txt(t(p)), collapse = " ")), gen)
  writeLines(c("ID_1 ID_2 missing", "0 0 0", paste(ids, ids, 0)), file.path(td, "r.sample"))
  P <- plink2_calls(c("--gen", gen, "ref-first", "--sample", file.path(td, "r.sample")), td, rt)
  X <- Rfmalloc::as.matrix(rpgen_read(gen, runtime = rt)) # r.sample found by prefix
  expect_same_calls(X, P, "GEN hardcalls vs plink2")
  expect_equal(sum(is.na(P)), 10)
  # legacy dosage: format 1 (the ALT dosage) and 3 (P(A1A1) P(A1A2) P(A2A2), A1 = ALT)
  writeLines(paste(ids, ids, 0, 0, 0, -9), file.path(td, "r.fam"))
  writeLines("1 rs1 0 100", file.path(td, "r.map"))
  for (fmt in c(1, 3)) {
    dos <- file.path(td, sprintf("r%d.dosage", fmt))
    vals <- if (fmt == 1) txt(p[, 2] + 2 * p[, 3]) else txt(t(p[, 3:1]))
    writeLines(c(paste("SNP A1 A2", paste(ids, ids, collapse = " ")),
                 paste("rs1 C A", paste(vals, collapse = " "))), dos)
    P <- plink2_calls(c("--import-dosage", dos, sprintf("format=%d", fmt), "--fam", file.path(td, "r.fam"),
                        "--map", file.path(td, "r.map")), td, rt)
    X <- Rfmalloc::as.matrix(rpgen_read(dos, format = "dosage", fam = file.path(td, "r.fam"),
                                        map = file.path(td, "r.map"), dosage_format = fmt, runtime = rt))
    expect_same_calls(X, P, sprintf("legacy dosage format=%d hardcalls vs plink2", fmt))
  }
  # VCF with DS only (no GT): hardcalls from DS
  vcf <- file.path(td, "r.vcf")
  writeLines(c("##fileformat=VCFv4.2", "##contig=<ID=1>",
               '##FORMAT=<ID=DS,Number=A,Type=Float,Description="ALT dosage">',
               paste(c("#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", ids), collapse = "\t"),
               paste(c("1", "100", "rs1", "A", "C", ".", ".", ".", "DS", txt(p[, 2] + 2 * p[, 3])), collapse = "\t")),
             vcf)
  P <- plink2_calls(c("--vcf", vcf, "dosage=DS"), td, rt)
  X <- Rfmalloc::as.matrix(rpgen_read(vcf, runtime = rt))
  expect_same_calls(X, P, "VCF DS hardcalls vs plink2")
})

test_that("VCF GT with DS: DS is the dosage as stored, GT the hardcall; where plink2 differs", {
  rt <- new_runtime()
  td <- tempfile("rule")
  dir.create(td)
  on.exit(unlink(td, recursive = TRUE), add = TRUE)
  gt <- c("0|.", ".|1", "1/.", "0/1", "./.", "0|0", "0/0", "1/1", "./.")
  ds <- c("0.5", "1.5", "0.9", "1.95", "1.2", ".", "1", "0.05", "1.95")
  ids <- sprintf("s%d", seq_along(gt))
  vcf <- file.path(td, "gd.vcf")
  hdr <- c("##fileformat=VCFv4.2", "##contig=<ID=1>",
           '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
           '##FORMAT=<ID=DS,Number=A,Type=Float,Description="ALT dosage">',
           paste(c("#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", ids),
                 collapse = "\t"))
  rec <- function(pos, id, alt, calls) paste(c("1", pos, id, "A", alt, ".", ".", ".", "GT:DS", calls),
                                            collapse = "\t")
  multi <- c("1/.:0.5,0.2", "0/1:1,0", "./.:0.3,0.4", "1/2:1,1", rep("0/0:0,0", 5))
  writeLines(c(hdr, rec(100, "rsA", "G", paste0(gt, ":", ds)), rec(200, "rsB", "G,T", multi)), vcf)
  H <- Rfmalloc::as.matrix(rpgen_read(vcf, runtime = rt))
  D <- rpgen_read(vcf, runtime = rt, destination = "dense")
  expect_equal(unname(H[, 1]), c(NA, NA, NA, 1, NA, 0, 0, 2, NA))
  expect_equal(unname(D[, 1]), suppressWarnings(as.numeric(ds)), tolerance = 1e-6)
  expect_equal(unname(H[, 2:3]), cbind(c(NA, 1, NA, 1, 0, 0, 0, 0, 0), c(NA, 0, NA, 1, 0, 0, 0, 0, 0)))
  expect_equal(unname(D[1:4, 2:3]), cbind(c(0.5, 1, 0.3, 1), c(0.2, 0, 0.4, 1)), tolerance = 1e-6)
  # plink2 v2.00a3.5 (--vcf-half-call missing: it refuses half-calls without
  # it) takes DS as the dosage too, but calls hardcalls from DS wherever DS is
  # present and takes a `.` DS from GT; it cannot import multi-allelic DS
  writeLines(c(hdr, rec(100, "rsA", "G", paste0(gt, ":", ds))), vcf)
  P <- plink2_calls(c("--vcf", vcf, "dosage=DS", "--vcf-half-call", "missing"), td, rt)
  expect_equal(unname(P[, 1]), c(NA, NA, 1, 2, NA, 0, 1, 0, 2))
})
