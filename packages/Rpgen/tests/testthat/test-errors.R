# Bad input, format by format, at R level: a file truncated mid-record, a
# wrong magic where the format has one, and companion files that disagree
# with the genotypes each raise an fm_error_* condition whose message names
# the file and the record, line or byte offset. Every case runs in this
# process: nothing may crash R.
#
# The small inputs are GENERATED here (5 samples x 4 biallelic variants, the
# same genotypes in every format, checked to read back first); PGEN, BCF,
# VCF.gz and a BGEN of real data are copied from the fixtures into tempdir
# and damaged there.

tiny_gt <- matrix(c(0, 1, 2, 1, 0,  1, 1, 0, 2, 2,  2, 0, 1, 0, 1,  0, 2, 1, 1, 0), 5, 4,
                  dimnames = list(paste0("s", 1:5), paste0("v", 1:4))) # ALT counts
tiny_var <- data.frame(chr = "1", id = paste0("v", 1:4), pos = c(100L, 200L, 300L, 400L),
                       ref = "A", alt = "G", stringsAsFactors = FALSE)

u32 <- function(x) writeBin(as.integer(x), raw(), size = 4, endian = "little")
u16 <- function(x) writeBin(as.integer(x), raw(), size = 2, endian = "little")

# Write the tiny genotypes in every format into dir (file names as below).
write_tiny <- function(dir) {
  G <- tiny_gt; v <- tiny_var; n <- nrow(G); m <- ncol(G); ids <- rownames(G)
  p <- function(x) file.path(dir, x)
  cols <- function(f) vapply(seq_len(m), f, "")
  fam <- sprintf("f%d %s 0 0 1 -9", 1:n, ids)
  # PLINK 1 binary, A1 (.bim column 5) = ALT; 5 samples -> 2 bytes per variant
  code <- c(3L, 2L, 0L) # 0, 1, 2 copies of A1
  writeBin(as.raw(c(0x6c, 0x1b, 0x01, unlist(lapply(seq_len(m), function(j) {
    b <- code[G[, j] + 1]
    c(sum(b[1:4] * 4^(0:3)), b[5])
  })))), p("t.bed"))
  writeLines(sprintf("%s\t%s\t0\t%d\t%s\t%s", v$chr, v$id, v$pos, v$alt, v$ref), p("t.bim"))
  writeLines(fam, p("t.fam"))
  # PED/MAP and TPED/TFAM
  al <- function(g) c("A A", "A G", "G G")[g + 1]
  writeLines(sprintf("%s\t%s\t0\t%d", v$chr, v$id, v$pos), p("t.map"))
  writeLines(vapply(seq_len(n), function(i) paste(fam[i], paste(al(G[i, ]), collapse = " ")), ""),
             p("t.ped"))
  writeLines(cols(function(j) paste(v$chr[j], v$id[j], 0, v$pos[j], paste(al(G[, j]), collapse = " "))),
             p("t.tped"))
  writeLines(fam, p("t.tfam"))
  # VCF
  gt <- c("0/0", "0/1", "1/1")
  writeLines(c("##fileformat=VCFv4.2", "##contig=<ID=1>",
               "##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">",
               paste(c("#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", ids),
                     collapse = "\t"),
               cols(function(j) paste(c(v$chr[j], v$pos[j], v$id[j], v$ref[j], v$alt[j], ".", "PASS",
                                        ".", "GT", gt[G[, j] + 1]), collapse = "\t"))),
             p("t.vcf"))
  # Oxford .sample, GEN, HAPS, HAPS/LEGEND
  writeLines(c("ID_1 ID_2 missing", "0 0 0", sprintf("%s %s 0", ids, ids)), p("t.sample"))
  pr <- c("1 0 0", "0 1 0", "0 0 1")
  lead <- function(j) paste(v$chr[j], v$id[j], v$pos[j], v$ref[j], v$alt[j])
  writeLines(cols(function(j) paste(lead(j), paste(pr[G[, j] + 1], collapse = " "))), p("t.gen"))
  hp <- c("0 0", "1 0", "1 1")
  writeLines(cols(function(j) paste(lead(j), paste(hp[G[, j] + 1], collapse = " "))), p("t.haps"))
  writeLines(cols(function(j) paste(hp[G[, j] + 1], collapse = " ")), p("l.haps"))
  writeLines(c("id position a0 a1", sprintf("%s %d %s %s", v$id, v$pos, v$ref, v$alt)), p("l.legend"))
  file.copy(p("t.sample"), p("l.sample"))
  # EIGENSTRAT text (t.geno) and packed ancestrymap (k.geno): copies of the
  # .snp column-5 allele (ALT); packed records of 48 bytes, first sample in
  # the high bits, 3 = missing (the padding of sample 5's byte)
  writeLines(cols(function(j) paste(G[, j], collapse = "")), p("t.geno"))
  writeLines(sprintf("%s %s 0.0 %d %s %s", v$id, v$chr, v$pos, v$alt, v$ref), p("t.snp"))
  writeLines(sprintf("%s U pop", ids), p("t.ind"))
  hdr <- charToRaw(sprintf("GENO %7d %7d %x %x", n, m, 0L, 0L))
  rec <- function(j) c(as.raw(c(sum(G[1:4, j] * 4^(3:0)), G[5, j] * 64 + 63)), raw(46))
  writeBin(c(hdr, raw(48 - length(hdr)), unlist(lapply(seq_len(m), rec))), p("k.geno"))
  file.copy(p("t.snp"), p("k.snp"))
  file.copy(p("t.ind"), p("k.ind"))
  # PLINK 1 legacy dosage, format 1 (A1 dosage, A1 = ALT)
  writeLines(c(paste("SNP A1 A2", paste(ids, ids, collapse = " ")),
               cols(function(j) paste(v$id[j], v$alt[j], v$ref[j], paste(G[, j], collapse = " ")))),
             p("t.dosage"))
  writeLines(sprintf("%s %s 0 %d", v$chr, v$id, v$pos), p("d.map"))
  writeLines(fam, p("d.fam"))
  # BGEN v1.2, layout 2, uncompressed, 8-bit unphased diploid, no sample
  # block (IDs from t.sample); 241 bytes, variant 4's genotypes at 223..240
  str16 <- function(s) c(u16(nchar(s)), charToRaw(s))
  str32 <- function(s) c(u32(nchar(s)), charToRaw(s))
  out <- c(u32(20), u32(20), u32(m), u32(n), charToRaw("bgen"), u32(0x8))
  for (j in seq_len(m)) {
    probs <- as.raw(c(255, 0, 0, 0, 255, 0, 0, 0, 0)[rep(G[, j] * 3, each = 2) + c(1, 2)])
    geno <- c(u32(n), u16(2), as.raw(c(2, 2)), as.raw(rep(2, n)), as.raw(c(0, 8)), probs)
    out <- c(out, str16(v$id[j]), str16(v$id[j]), str16(v$chr[j]), u32(v$pos[j]), u16(2),
             str32(v$ref[j]), str32(v$alt[j]), u32(length(geno)), geno)
  }
  writeBin(out, p("t.bgen"))
  invisible(dir)
}

tiny_dir <- function() {
  d <- tempfile("rpgen_bad")
  dir.create(d)
  write_tiny(d)
}

cut_bytes <- function(path, keep) {
  writeBin(readBin(path, "raw", file.size(path))[seq_len(keep)], path)
}
# Keep the lines before `line` and the first half of it, with no newline.
cut_mid_line <- function(path, line) {
  x <- readLines(path)
  half <- substr(x[line], 1, nchar(x[line]) %/% 2)
  writeBin(charToRaw(paste(c(x[seq_len(line - 1)], half), collapse = "\n")), path)
}
drop_last_line <- function(path) {
  x <- readLines(path)
  writeLines(x[-length(x)], path)
}
poke <- function(path, offset, bytes) {
  b <- readBin(path, "raw", file.size(path))
  b[offset + seq_along(bytes)] <- as.raw(bytes)
  writeBin(b, path)
}
copy_fixture <- function(dir, ...) {
  for (f in c(...)) expect_true(file.copy(f, dir))
  file.path(dir, basename(..1))
}

# The condition of a failing expression (NULL when it does not fail).
error_of <- function(expr) tryCatch({ expr; NULL }, error = function(e) e)

# expr fails with class fm_error_<code> and a message matching each pattern.
expect_bad <- function(expr, code, ...) {
  e <- error_of(expr)
  expect_s3_class(e, paste0("fm_error_", code))
  expect_s3_class(e, "fm_error")
  for (pattern in c(...)) expect_match(conditionMessage(e), pattern)
  invisible(e)
}

test_that("the generated inputs read back to the same genotypes in every format", {
  rt <- new_runtime()
  d <- tiny_dir()
  f <- function(x) file.path(d, x)
  cnt <- rep("G", 4)
  reads <- list(
    bed = rpgen_read(f("t.bed"), runtime = rt),
    ped = rpgen_read(f("t.ped"), runtime = rt, counted_alleles = cnt),
    tped = rpgen_read(f("t.tped"), runtime = rt, counted_alleles = cnt),
    bgen = rpgen_read(f("t.bgen"), runtime = rt),
    vcf = rpgen_read(f("t.vcf"), runtime = rt),
    gen = rpgen_read(f("t.gen"), runtime = rt),
    haps = rpgen_read(f("t.haps"), runtime = rt),
    haps_legend = rpgen_read(f("l.haps"), runtime = rt, chrom = "1"),
    eigenstrat = rpgen_read(f("t.geno"), runtime = rt),
    eigenstrat_packed = rpgen_read(f("k.geno"), runtime = rt),
    dosage = rpgen_read(f("t.dosage"), format = "dosage", runtime = rt, fam = f("d.fam"),
                        map = f("d.map")))
  for (nm in names(reads))
    expect_identical(Rfmalloc::as.matrix(reads[[nm]]), tiny_gt, label = nm)
  expect_equal(rpgen_info(f("k.geno"))$format, "eigenstrat-packed")
})

test_that("PLINK 1 binary: truncated .bed, wrong magic, .fam and .bim that disagree", {
  rt <- new_runtime()
  d <- tiny_dir()
  bed <- file.path(d, "t.bed")
  cut_bytes(bed, 8) # 11 bytes: 3 + 4 variants x 2 bytes
  expect_bad(rpgen_read(bed, runtime = rt), "eformat",
             "t\\.bed' has 8 bytes but 5 samples x 4 variants need 3 \\+ 4 \\* 2 = 11 bytes",
             "the file ends at byte offset 8, in variant 3 \\(1-based\\)")
  d <- tiny_dir()
  bed <- file.path(d, "t.bed")
  poke(bed, 0, c(0x00, 0x00))
  expect_bad(rpgen_read(bed, runtime = rt), "eformat",
             "t\\.bed' does not start with the \\.bed magic 0x6c 0x1b \\(found 0x00 0x00 at byte offset 0\\)")
  poke(bed, 0, c(0x6c, 0x1b, 0x00))
  expect_bad(rpgen_read(bed, runtime = rt), "eformat",
             "t\\.bed' is sample-major \\(mode byte 0x00 at byte offset 2\\)")
  d <- tiny_dir()
  drop_last_line(file.path(d, "t.fam")) # 4 samples: 1 byte per variant
  expect_bad(rpgen_read(file.path(d, "t.bed"), runtime = rt), "eformat",
             "t\\.bed' has 11 bytes but 4 samples x 4 variants need 3 \\+ 4 \\* 1 = 7 bytes",
             "the bytes from offset 7 on belong to no variant \\(4 samples in 't\\.fam', 4 variants in 't\\.bim'\\)")
  d <- tiny_dir()
  drop_last_line(file.path(d, "t.bim"))
  expect_bad(rpgen_read(file.path(d, "t.bed"), runtime = rt), "eformat",
             "the bytes from offset 9 on belong to no variant \\(5 samples in 't\\.fam', 3 variants in 't\\.bim'\\)")
  d <- tiny_dir()
  cut_mid_line(file.path(d, "t.bim"), 4)
  expect_bad(rpgen_read(file.path(d, "t.bed"), runtime = rt), "eformat",
             "t\\.bim' line 4 has 3 fields; a \\.bim line has 6")
  d <- tiny_dir()
  cut_mid_line(file.path(d, "t.fam"), 5)
  expect_bad(rpgen_read(file.path(d, "t.bed"), runtime = rt), "eformat",
             "t\\.fam' line 5 has 3 fields; a \\.fam line has 6")
})

test_that("PGEN: truncated record data and header, wrong magic, .psam and .pvar that disagree", {
  rt <- new_runtime()
  src <- vapply(c("pgen", "pvar", "psam"),
                function(e) fixture_path("genotypes", "ceu_exon", paste0("ceu_exon.", e)), "")
  fresh <- function() {
    d <- tempfile("rpgen_bad")
    dir.create(d)
    copy_fixture(d, src[1], src[2], src[3])
  }
  p <- fresh()
  cut_bytes(p, file.size(p) - 100) # 18877 bytes
  expect_bad(rpgen_read(p, runtime = rt), "eformat",
             "ceu_exon\\.pgen': variant block 1 \\(variants 1\\.\\.1348\\) spans bytes 2042\\.\\.18877",
             "the file has 18777 bytes")
  p <- fresh()
  cut_bytes(p, 20)
  expect_bad(rpgen_read(p, runtime = rt), "eformat",
             "ceu_exon\\.pgen' is truncated: the record index of 1348 variants at byte offset 12",
             "the file has 20 bytes")
  p <- fresh()
  poke(p, 0, c(0x12, 0x34))
  expect_bad(rpgen_read(p, runtime = rt), "eformat",
             "ceu_exon\\.pgen' is not a PGEN file: .*magic bytes 0x6c 0x1b \\(byte offset 0\\)")
  p <- fresh()
  drop_last_line(sub("pgen$", "psam", p))
  expect_bad(rpgen_read(p, runtime = rt), "emismatch",
             "ceu_exon\\.psam' lists 89 samples but the header of '.*ceu_exon\\.pgen' says 90 \\(byte offset 7\\)")
  p <- fresh()
  drop_last_line(sub("pgen$", "pvar", p))
  expect_bad(rpgen_read(p, runtime = rt), "emismatch",
             "ceu_exon\\.pvar' lists 1347 variants but the header of '.*ceu_exon\\.pgen' says 1348 \\(byte offset 3\\)")
})

test_that("PED/MAP and TPED/TFAM: truncated lines and companions that disagree", {
  rt <- new_runtime()
  cnt <- rep("G", 4)
  d <- tiny_dir()
  cut_mid_line(file.path(d, "t.ped"), 5)
  expect_bad(rpgen_read(file.path(d, "t.ped"), runtime = rt, counted_alleles = cnt), "eformat",
             "t\\.ped' line 5 has 6 fields but 6 \\+ 2 \\* 4 variants = 14 were expected")
  d <- tiny_dir()
  drop_last_line(file.path(d, "t.map"))
  expect_bad(rpgen_read(file.path(d, "t.ped"), runtime = rt), "eformat",
             "t\\.ped' line 1 has 14 fields but 6 \\+ 2 \\* 3 variants = 12 were expected")
  d <- tiny_dir()
  cut_mid_line(file.path(d, "t.tped"), 4)
  expect_bad(rpgen_read(file.path(d, "t.tped"), runtime = rt, counted_alleles = cnt), "eformat",
             "t\\.tped' line 4 has 6 fields but 4 \\+ 2 \\* 5 samples = 14 were expected")
  d <- tiny_dir()
  drop_last_line(file.path(d, "t.tfam"))
  expect_bad(rpgen_read(file.path(d, "t.tped"), runtime = rt), "eformat",
             "t\\.tped' line 1 has 14 fields but 4 \\+ 2 \\* 4 samples = 12 were expected")
})

test_that("BGEN: truncated blocks and header, wrong magic, a .sample that disagrees", {
  rt <- new_runtime()
  d <- tiny_dir()
  b <- file.path(d, "t.bgen")
  cut_bytes(b, file.size(b) - 7)
  expect_bad(rpgen_read(b, runtime = rt), "eformat",
             "t\\.bgen: variant 4 \\(v4\\): genotype block of 25 bytes at byte offset 223 runs past the end of the file")
  cut_bytes(b, 10)
  expect_bad(rpgen_read(b, runtime = rt), "eformat",
             "t\\.bgen: file truncated at byte offset 8 while reading the header block")
  d <- tiny_dir()
  b <- file.path(d, "t.bgen")
  poke(b, 16, charToRaw("xgen"))
  expect_bad(rpgen_read(b, runtime = rt), "eformat",
             "t\\.bgen: wrong magic number at byte offset 16 \\(bytes 78 67 65 6e, expected \"bgen\"\\)")
  # a variant of 0 alleles is malformed (it was "unsupported", like 1 allele)
  d <- tiny_dir()
  b <- file.path(d, "t.bgen")
  poke(b, 39, c(0, 0))
  expect_bad(rpgen_read(b, runtime = rt), "eformat",
             "t\\.bgen: variant 1 \\(v1\\) at byte offset 24 has 0 alleles \\(allele count at byte offset 39\\)")
  d <- tiny_dir()
  drop_last_line(file.path(d, "t.sample"))
  expect_bad(rpgen_read(file.path(d, "t.bgen"), runtime = rt), "emismatch",
             "sample file '.*t\\.sample' lists 4 samples but the header of '.*t\\.bgen' says 5 \\(byte offset 12\\)")
  writeLines(c("ID_1 ID_2 missing", "0 0 0", "s1 s1 0", "s2"), file.path(d, "t.sample"))
  expect_bad(rpgen_read(file.path(d, "t.bgen"), runtime = rt), "eformat",
             "sample file '.*t\\.sample' line 4 has 1 field; the header \\(line 1\\) names 3 columns")
  # real data (zlib blocks; a file over 1 MiB is decompressed ahead on a
  # worker thread) cut in the middle of a variant
  for (f in list(c("ceu_exon", "ceu_exon_bi.8bit.bgen"), c("1kg_phase3_subset", "1kg_bi.8bit.bgen"))) {
    d <- tempfile("rpgen_bad")
    dir.create(d)
    b <- copy_fixture(d, fixture_path("genotypes", f[1], f[2]))
    cut_bytes(b, file.size(b) %/% 2)
    expect_bad(rpgen_read(b, runtime = rt), "eformat",
               paste0(gsub(".", "\\.", f[2], fixed = TRUE), ": .*byte offset [0-9]+"))
  }
})

test_that("VCF, VCF.gz and BCF: truncated records and wrong magic", {
  rt <- new_runtime()
  d <- tiny_dir()
  v <- file.path(d, "t.vcf")
  cut_mid_line(v, 7) # the record at 1:300: named by its own line, not the record before
  expect_bad(rpgen_read(v, runtime = rt), "eformat", "t\\.vcf: malformed record at line 7 \\(1:300\\)")
  d <- tiny_dir()
  v <- file.path(d, "t.vcf")
  cut_mid_line(v, 4) # the #CHROM line
  expect_bad(rpgen_read(v, runtime = rt), "eformat",
             "t\\.vcf: cannot read the VCF header \\(lines 1 to 4, where the file ends\\)")
  d <- tiny_dir()
  v <- file.path(d, "t.vcf")
  x <- readLines(v)
  writeLines(c("##notvcf", x[-1]), v)
  expect_bad(rpgen_read(v, runtime = rt), "eformat",
             "t\\.vcf: not a VCF or BCF file \\(byte offset 0: 23 23 6e 6f 74 76 \"##notv\"\\)")
  for (f in c("ceu_exon.vcf.gz", "ceu_exon.bcf")) {
    d <- tempfile("rpgen_bad")
    dir.create(d)
    p <- copy_fixture(d, fixture_path("genotypes", "ceu_exon", f))
    cut_bytes(p, file.size(p) %/% 2)
    for (ids in c(FALSE, TRUE)) # the counting pass (sites only) and the ID pass
      expect_bad(rpgen_read(p, runtime = rt, variants = if (ids) "rs1320571"), "eformat",
                 paste0(gsub(".", "\\.", f, fixed = TRUE),
                        ": the compressed data after record [0-9XYMT]+:[0-9]+ cannot be read ",
                        "\\(a truncated or corrupt BGZF block\\)"))
    # a region read through the index of the whole file: chr12 lies past the cut
    idx <- paste0(f, if (f == "ceu_exon.bcf") ".csi" else ".tbi")
    file.copy(fixture_path("genotypes", "ceu_exon", idx), d)
    expect_bad(rpgen_read(p, runtime = rt, region = "12"), "eformat",
               paste0(gsub(".", "\\.", f, fixed = TRUE), ": the index puts region '12' at byte ",
                      "offset [0-9]+ but the file has [0-9]+ bytes \\(truncated"))
    # a region before the cut reads as from the whole file
    expect_identical(
      Rfmalloc::as.matrix(rpgen_read(p, runtime = rt, region = "1:1-2000000")),
      Rfmalloc::as.matrix(rpgen_read(fixture_path("genotypes", "ceu_exon", f), runtime = rt,
                                     region = "1:1-2000000")))
    # the BGZF magic of the first block destroyed
    p2 <- file.path(d, paste0("magic_", f))
    file.copy(fixture_path("genotypes", "ceu_exon", f), p2)
    poke(p2, 0, c(0x00, 0x00, 0x00))
    expect_bad(rpgen_read(p2, runtime = rt), "eformat",
               paste0("magic_", gsub(".", "\\.", f, fixed = TRUE),
                      ": not a VCF or BCF file \\(byte offset 0: 00 00 00 "))
  }
})

test_that("VCF: a POS that is not a number and a GT allele the record lacks name the line", {
  # both read silently before (POS 0; a missing call), where plink2 stops
  # with "Invalid POS" and "invalid GT field"
  rt <- new_runtime()
  d <- tiny_dir()
  v <- file.path(d, "t.vcf")
  x <- readLines(v)
  writeLines(replace(x, 6, sub("\t200\t", "\tabc\t", x[6])), v)
  expect_bad(rpgen_read(v, runtime = rt), "eformat",
             "t\\.vcf: invalid POS 'abc' \\(a non-negative integer expected\\) in the record at line 6 \\(1:abc\\)")
  expect_bad(rpgen_info(v, count = TRUE), "eformat", "t\\.vcf: invalid POS 'abc'") # the counting pass
  writeLines(replace(x, 7, sub("\t0/0\t", "\t0/9\t", x[7])), v) # sample s2 at 1:300
  expect_bad(rpgen_read(v, runtime = rt), "eformat",
             paste("t\\.vcf: invalid GT field in the record at line 7 \\(1:300\\): sample s2 has allele 9",
                   "but the record has 2 alleles \\(REF and 1 ALT\\)"))
})

test_that("VCF.gz and BCF: a malformed or empty region is an error, an absent contig reads empty with a warning", {
  rt <- new_runtime()
  for (f in c("ceu_exon.vcf.gz", "ceu_exon.bcf")) {
    p <- fixture_path("genotypes", "ceu_exon", f)
    name <- gsub(".", "\\.", f, fixed = TRUE)
    for (r in c("1:abc", "1:300-200", "99:abc"))
      expect_bad(rpgen_read(p, runtime = rt, region = r), "earg",
                 paste0(name, ": region '", r, "' is malformed \\(expected CHROM, CHROM:BEG or CHROM:BEG-END"))
    expect_bad(rpgen_read(p, runtime = rt, region = ""), "earg", paste0(name, ": region '' is empty"))
    w <- NULL
    X <- withCallingHandlers(rpgen_read(p, runtime = rt, region = "99:1-1000"),
                             rpgen_warning_region = function(c) {
                               w <<- c
                               invokeRestart("muffleWarning")
                             })
    expect_equal(ncol(X), 0L)
    expect_s3_class(w, "warning")
    where <- if (grepl("bcf$", f)) "header" else "index"
    expect_identical(conditionMessage(w), sprintf(
      "region '99:1-1000': contig '99' is not in the %s of %s, which lists 1, 2, 3, 4, 5, 6, 7, 8 and 14 more; no records read", where, f))
    expect_identical(conditionCall(w)[[1]], quote(rpgen_read))
    # a contig alone, and the same from rpgen_info()
    expect_warning(rpgen_info(p, region = "chr1"),
                   sprintf("^region 'chr1': contig 'chr1' is not in the %s of %s, which lists 1, 2, 3, 4, 5, 6, 7, 8 and 14 more; no records read$",
                           where, name), class = "rpgen_warning_region")
    expect_no_warning(rpgen_read(p, runtime = rt, region = "1:1-1000"))
  }
})

test_that("GEN, HAPS and HAPS/LEGEND: truncated lines and companions that disagree", {
  rt <- new_runtime()
  for (f in c("t.gen", "t.haps")) {
    d <- tiny_dir()
    cut_mid_line(file.path(d, f), 3)
    expect_bad(rpgen_read(file.path(d, f), runtime = rt), "eformat",
               paste0(sub(".", "\\.", f, fixed = TRUE), " line 3: expected .*5 samples.*, found"))
    d <- tiny_dir()
    drop_last_line(file.path(d, "t.sample"))
    expect_bad(rpgen_read(file.path(d, f), runtime = rt), "eformat",
               paste0(sub(".", "\\.", f, fixed = TRUE), " line 1: expected .*4 samples"))
  }
  # gzip input cut inside the data or its trailer
  d <- tiny_dir()
  con <- gzfile(file.path(d, "t.gen.gz"), "w")
  writeLines(readLines(file.path(d, "t.gen")), con)
  close(con)
  gz <- file.path(d, "t.gen.gz")
  expect_identical(Rfmalloc::as.matrix(rpgen_read(gz, runtime = rt)), tiny_gt)
  cut_bytes(gz, file.size(gz) - 4)
  expect_bad(rpgen_read(gz, runtime = rt), "eformat",
             "cannot read .*t\\.gen\\.gz after line 4: unexpected end of file")
  d <- tiny_dir()
  cut_mid_line(file.path(d, "l.haps"), 3)
  expect_bad(rpgen_read(file.path(d, "l.haps"), runtime = rt), "eformat",
             "l\\.haps line 3: expected 10 alleles \\(2 for each of the 5 samples\\), found 5 fields")
  d <- tiny_dir()
  drop_last_line(file.path(d, "l.legend"))
  expect_bad(rpgen_read(file.path(d, "l.haps"), runtime = rt), "emismatch",
             "l\\.legend ends after 4 lines but .*l\\.haps has a variant on line 4")
  d <- tiny_dir()
  cat("v5 500 A G\n", file = file.path(d, "l.legend"), append = TRUE)
  expect_bad(rpgen_read(file.path(d, "l.haps"), runtime = rt), "emismatch",
             "l\\.haps ends after 4 lines but .*l\\.legend has a variant on line 6")
  d <- tiny_dir()
  cut_mid_line(file.path(d, "l.legend"), 4)
  expect_bad(rpgen_read(file.path(d, "l.haps"), runtime = rt), "eformat",
             "l\\.legend line 4: expected 4 fields \\(id position a0 a1\\), found 2")
  d <- tiny_dir()
  drop_last_line(file.path(d, "l.sample"))
  expect_bad(rpgen_read(file.path(d, "l.haps"), runtime = rt), "eformat",
             "l\\.haps line 1: expected 8 alleles \\(2 for each of the 4 samples\\)")
})

test_that("EIGENSTRAT text and packed: truncation, magic, .snp and .ind that disagree", {
  rt <- new_runtime()
  d <- tiny_dir()
  cut_mid_line(file.path(d, "t.geno"), 3)
  expect_bad(rpgen_read(file.path(d, "t.geno"), runtime = rt), "eformat",
             "t\\.geno line 3: expected 5 genotype characters \\(one per \\.ind sample\\), found 2")
  d <- tiny_dir()
  drop_last_line(file.path(d, "t.snp"))
  expect_bad(rpgen_read(file.path(d, "t.geno"), runtime = rt), "emismatch",
             "t\\.snp ends after 3 lines but .*t\\.geno has genotypes on line 4")
  d <- tiny_dir()
  drop_last_line(file.path(d, "t.ind"))
  expect_bad(rpgen_read(file.path(d, "t.geno"), runtime = rt), "eformat",
             "t\\.geno line 1: expected 4 genotype characters")
  d <- tiny_dir()
  k <- file.path(d, "k.geno")
  cut_bytes(k, file.size(k) - 10)
  expect_bad(rpgen_read(k, runtime = rt), "eformat",
             "k\\.geno: truncated at record 3 \\(0-based, byte offset 192\\): expected 48 bytes, found 38")
  d <- tiny_dir()
  k <- file.path(d, "k.geno")
  poke(k, 0, charToRaw("GEMO")) # not the packed magic: read as text, which it is not
  expect_bad(rpgen_read(k, runtime = rt), "eformat",
             "k\\.geno line 1: expected 5 genotype characters \\(one per \\.ind sample\\)")
  d <- tiny_dir()
  drop_last_line(file.path(d, "k.snp"))
  expect_bad(rpgen_read(file.path(d, "k.geno"), runtime = rt), "emismatch",
             "k\\.geno: the header \\(byte offset 0\\) says 4 SNPs but .*k\\.snp has 3 SNP lines")
  # the header's SNP count is checked at open against the .snp (it read 2
  # records of a .snp of 4, or sized the read by 10^12), then the file's size
  for (claim in c("2", "1000000000000")) {
    d <- tiny_dir()
    k <- file.path(d, "k.geno")
    poke(k, 0, charToRaw(sprintf("GENO %7d %7s 0 0", 5L, claim)))
    expect_bad(rpgen_info(k), "emismatch",
               paste0("k\\.geno: the header \\(byte offset 0\\) says ", claim, " SNPs but .*k\\.snp has 4 SNP lines"))
  }
  d <- tiny_dir()
  k <- file.path(d, "k.geno")
  writeBin(c(readBin(k, "raw", file.size(k)), raw(48)), k)
  expect_bad(rpgen_read(k, runtime = rt), "eformat",
             "k\\.geno: 48 bytes after the last record, which ends at byte offset 240 \\(the header at byte offset 0 says 4 SNPs\\)")
  d <- tiny_dir()
  drop_last_line(file.path(d, "k.ind"))
  expect_bad(rpgen_read(file.path(d, "k.geno"), runtime = rt), "emismatch",
             "k\\.geno: the header \\(byte offset 0\\) says 5 individuals but the \\.ind file lists 4")
})

test_that("PLINK 1 dosage: a truncated line, a .fam and a .map that disagree", {
  rt <- new_runtime()
  rd <- function(d) rpgen_read(file.path(d, "t.dosage"), format = "dosage", runtime = rt,
                               fam = file.path(d, "d.fam"), map = file.path(d, "d.map"))
  d <- tiny_dir()
  cut_mid_line(file.path(d, "t.dosage"), 4)
  expect_bad(rd(d), "eformat",
             "t\\.dosage line 4: expected 8 fields \\(SNP A1 A2 and 1 values for each of the 5 samples\\), found 4")
  d <- tiny_dir()
  drop_last_line(file.path(d, "d.fam"))
  expect_bad(rd(d), "emismatch", "t\\.dosage line 1: the header names 5 samples but the \\.fam lists 4")
  d <- tiny_dir()
  drop_last_line(file.path(d, "d.map"))
  expect_bad(rd(d), "emismatch", "d\\.map ends after 3 lines but .*t\\.dosage has a variant on line 5")
})

test_that("failed reads leave nothing behind in the runtime", {
  rt <- new_runtime()
  used <- function() {
    invisible(gc())
    unlist(Rfmalloc::fmalloc_info(rt)[c("used_bytes", "n_blocks")])
  }
  before <- used()
  d <- tiny_dir()
  cut_mid_line(file.path(d, "t.bim"), 4) # fails at variant 4, after the destination is allocated
  for (i in 1:3)
    expect_error(rpgen_read(file.path(d, "t.bed"), runtime = rt), "line 4", class = "fm_error_eformat")
  d2 <- tiny_dir()
  b <- file.path(d2, "t.bgen")
  cut_bytes(b, file.size(b) - 7)
  expect_error(rpgen_read(b, runtime = rt), class = "fm_error_eformat")
  expect_equal(used(), before)
  expect_identical(Rfmalloc::as.matrix(rpgen_read(file.path(d2, "t.haps"), runtime = rt)), tiny_gt)
})

test_that("path must be one string; stream errors without a file name get the file's", {
  rt <- new_runtime()
  expect_bad(rpgen_read(c("a.bed", "b.bed"), runtime = rt), "earg",
             "path must be a single string \\(one file name\\), got length 2")
  expect_bad(rpgen_info(character()), "earg", "got length 0")
  expect_bad(rpgen_read(1, runtime = rt), "earg", "path must be a single string \\(one file name\\), not double")
  d <- tiny_dir()
  # the destination's message names the variant only
  for (f in c("t.vcf", "t.gen"))
    expect_bad(rpgen_read(file.path(d, f), destination = "haplotype", runtime = rt), "emismatch",
               paste0("^", sub(".", "\\.", f, fixed = TRUE),
                      ": variant 'v1' is unphased; the haplotype destination needs phased records$"))
  # a message that names a file already is left as it is
  e <- expect_bad(rpgen_read(file.path(d, "t.bed"), runtime = rt, fam = file.path(d, "none.fam")), "eio")
  expect_match(conditionMessage(e), "^cannot open '.*none\\.fam'")
  expect_equal(deparse(conditionCall(e)[[1]]), ".rpg_open")
})

test_that("default sample IDs; a BGEN header's sample count makes no vector before a record proves it", {
  rt <- new_runtime()
  d <- tiny_dir()
  b <- file.path(d, "t.bgen")
  file.remove(file.path(d, "t.sample")) # no sample block, no .sample: sample1..sampleN
  X <- rpgen_read(b, runtime = rt, samples = c("sample5", "sample2", "sample5"))
  expect_identical(Rfmalloc::as.matrix(X), `rownames<-`(tiny_gt, paste0("sample", 1:5))[c(5, 2, 5), ])
  expect_equal(rownames(rpgen_read(b, runtime = rt)), paste0("sample", 1:5))
  expect_bad(rpgen_read(b, runtime = rt, samples = "sample6"), "earg",
             "samples ID 'sample6' is not in '.*t\\.bgen' \\(5 samples there, named sample1 to sample5\\)")
  expect_bad(rpgen_read(b, runtime = rt, samples = "s1"), "earg", "samples ID 's1' is not in")
  # the header claims 2^31 - 1 samples; the first genotype block holds 5.
  # "sample1".."sample2147483647" would take 16 GB before that block is read;
  # the reader refuses the header at open, naming it and the block
  poke(b, 12, u32(.Machine$integer.max))
  hdr_n <- paste("t\\.bgen: header N 2147483647 \\(byte offset 12\\) does not fit the first genotype block",
                 "\\(byte offset 55: 25 bytes; N samples need 2147483657 bytes\\)")
  expect_bad(rpgen_info(b), "eformat", hdr_n)
  # (the runtime of 1 GB could not hold the 2-bit destination either)
  for (s in list(NULL, "sample2147483647", "sample2147483648", c(1, 2^31 - 1)))
    for (dest in c("hardcall", "dense"))
      expect_bad(rpgen_read(b, runtime = rt, samples = s, destination = dest), "eformat", hdr_n)
})

test_that("an argument a format does not take is an error naming it (issue 14, defect 4)", {
  rt <- new_runtime()
  bed <- kg("1kg_bi.bed")
  e <- expect_error(rpgen_read(bed, bimm = "x", runtime = rt), class = "fm_error_earg")
  expect_match(conditionMessage(e), "unknown argument 'bimm' for a bed file, which takes: bim, fam, sex",
               fixed = TRUE)
  expect_error(rpgen_read(bed, region = "22", runtime = rt), "unknown argument 'region'",
               class = "fm_error_earg")
  expect_error(rpgen_info(bed, sample = "x.sample"), "unknown argument 'sample' for a bed file",
               class = "fm_error_earg")
  expect_error(rpgen_info(bed, "bed", "extra"), "has no name", class = "fm_error_earg")
  # what a format takes is still taken
  expect_identical(rpgen_info(bed, count = TRUE)$n_variants, 25161)
  expect_gt(ncol(rpgen_read(kg("1kg.vcf.gz"), region = "22", runtime = rt)), 0)
})

test_that("rpgen_read without runtime uses the session's default; a bad destination is classed (issue 14, 5 and 7)", {
  X <- rpgen_read(kg("1kg_bi.bed"), variants = 1:5)
  expect_identical(dim(X), c(1126L, 5L))
  expect_identical(Rfmalloc::fmalloc_info(Rfmalloc::fmalloc_default_runtime())$mode, "scratch")
  e <- expect_error(rpgen_read(kg("1kg_bi.bed"), destination = "foo"), class = "fm_error_earg")
  expect_match(conditionMessage(e), "destination must be one of 'hardcall', 'dosage', 'haplotype', 'dense', not 'foo'",
               fixed = TRUE)
  expect_error(rpgen_read(kg("1kg_bi.bed"), runtime = 1), "runtime must be an fmalloc runtime .*, not a number",
               class = "fm_error_earg")
})

test_that("a missing main file is named, not the companion its reader opens first (issue 14, 5)", {
  missing <- file.path(tempdir(), "nonexistent.bed")
  e <- expect_error(rpgen_read(missing), class = "fm_error_eio")
  expect_match(conditionMessage(e), "cannot open '.*nonexistent\\.bed': no such file")
  expect_false(grepl("\\.fam", conditionMessage(e)))
  expect_error(rpgen_info(missing), "nonexistent\\.bed': no such file", class = "fm_error_eio")
})

test_that("a BGEN variant ID that is not valid UTF-8 reads, selects and prints without warnings (issue 14, 5)", {
  le <- function(x, size) as.raw(vapply(seq_len(size) - 1L, function(k) (x %/% 256^k) %% 256, 0))
  s16 <- function(r) c(le(length(r), 2), r)
  s32 <- function(r) c(le(length(r), 4), r)
  n <- 4
  bad <- as.raw(c(0x72, 0x73, 0xff, 0x32)) # "rs", a lone 0xff byte, "2"
  ids <- list(charToRaw("rs1"), bad)
  body <- list(le(20, 4), le(20, 4), le(2, 4), le(n, 4), charToRaw("bgen"), le(8, 4))
  for (v in 1:2) {
    geno <- c(le(n, 4), le(2, 2), as.raw(c(1, 2)), as.raw(rep(2, n)), as.raw(c(0, 8)),
              as.raw(rep(c(255, 0), n)))
    body[[length(body) + 1]] <- c(s16(charToRaw(sprintf("snp%d", v))), s16(ids[[v]]),
                                  s16(charToRaw("1")), le(v, 4), le(2, 2), s32(charToRaw("A")),
                                  s32(charToRaw("C")), le(length(geno), 4), geno)
  }
  f <- tempfile(fileext = ".bgen")
  writeBin(unlist(body), f)
  rt <- new_runtime()
  expect_silent({
    X <- rpgen_read(f, runtime = rt)
    id <- colnames(X)[2]
    Y <- rpgen_read(f, runtime = rt, variants = id)
    out <- capture.output(print(X), print(Rfmalloc::fmalloc_allele_freq(X)))
    miss <- tryCatch(rpgen_read(f, runtime = rt, variants = rawToChar(c(bad, as.raw(0x39)))),
                     error = function(e) e)
  })
  expect_identical(charToRaw(id), bad)
  expect_identical(dim(Y), c(4L, 1L))
  expect_s3_class(miss, "fm_error_earg")
})

test_that("a file in another format than its name says is named as that format (issue 14, review)", {
  rt <- new_runtime()
  d <- tempfile("rpgen_bad")
  dir.create(d)
  b <- file.path(d, "x.bgen")
  file.copy(fixture_path("genotypes", "ceu_exon", "ceu_exon.bcf"), b)
  expect_bad(rpgen_read(b, runtime = rt), "eformat",
             "x\\.bgen' starts like a vcf file, not bgen: give format = \"vcf\" to read it as one")
  expect_identical(dim(rpgen_read(b, format = "vcf", runtime = rt)),
                   dim(rpgen_read(fixture_path("genotypes", "ceu_exon", "ceu_exon.bcf"), runtime = rt)))
  # a VCF named .bed is named a VCF before the .fam it lacks is looked for (review)
  b <- file.path(d, "renamed.bed")
  file.copy(fixture_path("genotypes", "ceu_exon", "ceu_exon.vcf.gz"), b)
  said <- "renamed\\.bed' starts like a vcf file, not bed: give format = \"vcf\" to read it as one$"
  expect_bad(rpgen_read(b, runtime = rt), "eformat", said)
  expect_bad(rpgen_info(b), "eformat", said)
  expect_identical(rpgen_info(b, format = "vcf")$n_variants,
                   rpgen_info(fixture_path("genotypes", "ceu_exon", "ceu_exon.vcf.gz"))$n_variants)
})

test_that("a BGEN first-variant offset past the end is named, not called a truncation (issue 14, review)", {
  d <- tiny_dir()
  b <- file.path(d, "t.bgen")
  poke(b, 0, as.raw(c(0xff, 0xff, 0xff, 0x7f)))
  expect_bad(rpgen_read(b, runtime = new_runtime()), "eformat",
                  "t\\.bgen: the first-variant offset 2147483647 \\(byte offset 0\\) points past the end of the file \\([0-9]+ bytes\\)")
})

test_that("htslib writes nothing to the console while a VCF is read (issue 14, review)", {
  d <- tiny_dir()
  v <- file.path(d, "t.vcf")
  x <- readLines(v)
  writeLines(x[!grepl("^##contig", x)], v) # htslib warns "[W::vcf_parse] Contig '1' is not defined"
  writeLines(c(x[!grepl("^##contig", x)], "garbage\tline"), w <- file.path(d, "u.vcf"))
  code <- sprintf('suppressPackageStartupMessages(library(Rpgen))
    X <- rpgen_read("%s"); cat("read", dim(X), "\\n")
    e <- tryCatch(rpgen_read("%s"), error = function(e) conditionMessage(e)); cat(e, "\\n")', v, w)
  out <- suppressWarnings(system2(file.path(R.home("bin"), "Rscript"), c("-e", shQuote(code)),
                                  stdout = TRUE, stderr = TRUE))
  expect_match(out[1], "^read 5 4 ")
  expect_match(out[2], "u\\.vcf: invalid POS 'line'")
  expect_length(out, 2) # no "[W::...]" or "[E::...]" line from htslib
})

test_that("region and chrom must be one string: NA or several are refused, not read as empty or as the first (issue 14, new user)", {
  rt <- new_runtime()
  v <- fixture_path("genotypes", "1kg_phase3_subset", "1kg.vcf.gz")
  e <- expect_bad(rpgen_read(v, region = c("21", "22"), runtime = rt), "earg",
                  "region must be one string \\(such as \"22\" or \"22:1-5000000\"\\), not 2 strings")
  expect_match(deparse(conditionCall(e))[1], "^rpgen_read\\(")
  expect_bad(rpgen_read(v, region = NA, runtime = rt), "earg", "region must be one string .*, not NA$")
  expect_bad(rpgen_info(v, region = NA_character_, count = TRUE), "earg", "not NA_character_")
  expect_bad(rpgen_read(v, region = 22, runtime = rt), "earg", "region must be one string .*, not 22$")
  h <- fixture_path("genotypes", "1kg_phase3_subset", "text", "1kg_bi_chr22_hl.haps")
  expect_bad(rpgen_read(h, chrom = c("22", "21"), runtime = rt), "earg", "chrom must be one string")
})
