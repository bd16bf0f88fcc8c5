# Phase: the haplotype destination of every phased input equals, slot by
# slot, the GT alleles of the upstream phased VCF of chr22
# (source/1KG_phase3_subset_chr22.vcf.gz, the original 1000 Genomes calls,
# parsed here as text): first allele in slot 1, second in slot 2. A split
# record j of a multi-allelic site has bit 1 where the slot holds ALT j.

phase_oracle_cache <- new.env()
phase_oracle <- function() {
  if (is.null(phase_oracle_cache$o)) {
    o <- vcf_gt_text(kg("source", "1KG_phase3_subset_chr22.vcf.gz"))
    o$split <- split_plan(data.frame(CHROM = o$meta$chr, POS = o$meta$pos, ID = o$meta$id,
                                     REF = o$meta$ref, ALT = o$meta$alt,
                                     stringsAsFactors = FALSE))
    phase_oracle_cache$o <- o
  }
  phase_oracle_cache$o
}

# The expected allele bits of split records `rows` of the oracle:
# list(s1, s2), each records x samples, integer 0/1.
expected_slots <- function(o, rows) {
  sp <- o$split[rows, ]
  a1 <- o$a1[sp$site, , drop = FALSE]
  a2 <- o$a2[sp$site, , drop = FALSE]
  list(s1 = (a1 == sp$j) + 0L, s2 = (a2 == sp$j) + 0L)
}

expect_haplotypes <- function(H, o, rows, label) {
  n <- length(rows)
  expect_equal(dim(H), c(n, 2L * length(o$samples)), label = paste(label, "shape"))
  expect_identical(H$samples$iid, o$samples, label = paste(label, "samples"))
  v <- H$variants
  expect_identical(v$pos, o$split$pos[rows], label = paste(label, "positions"))
  expect_identical(v$ref, o$split$ref[rows], label = paste(label, "ref"))
  expect_identical(v$alt, o$split$alt[rows], label = paste(label, "alt"))
  h <- H[seq_len(n), , drop = FALSE]
  e <- expected_slots(o, rows)
  expect_same_calls(h[, c(TRUE, FALSE), drop = FALSE], e$s1, paste(label, "slot 1"))
  expect_same_calls(h[, c(FALSE, TRUE), drop = FALSE], e$s2, paste(label, "slot 2"))
  expect_true(all(H$missing[seq_len(n), , drop = FALSE] == 0L), label = paste(label, "no missing slots"))
}

test_that("the phase oracle: 1,120 chr22 sites, all phased, none missing, with multi-allelic hets", {
  o <- phase_oracle()
  expect_equal(nrow(o$meta), 1120)
  expect_true(all(o$phased))
  expect_false(anyNA(o$a1) || anyNA(o$a2))
  expect_equal(sum(o$split$k == 1), 1097)
  # phase matters here: heterozygotes both ways, and ALT/ALT hets (1|2, 2|1, 3|1 ...)
  expect_true(sum(o$a1 == 0 & o$a2 == 1) > 1000 && sum(o$a1 == 1 & o$a2 == 0) > 1000)
  expect_true(sum(o$a1 > 0 & o$a2 > 0 & o$a1 != o$a2) > 100)
  psam <- utils::read.delim(kg("1kg.psam"), colClasses = "character")
  expect_identical(o$samples, psam$IID)
})

test_that("VCF.gz, BCF and 1kg.pgen (multi-allelic, split) haplotypes equal the VCF's GT slots", {
  rt <- new_runtime()
  o <- phase_oracle()
  all_rows <- seq_len(nrow(o$split))
  for (f in c("1kg.vcf.gz", "1kg.bcf")) {
    H <- rpgen_read(kg(f), runtime = rt, destination = "haplotype", region = "22")
    expect_haplotypes(H, o, all_rows, f)
  }
  sp <- split_plan(read_pvar(kg("1kg.pvar")))
  chr22 <- which(sp$chr == "22")
  expect_length(chr22, nrow(o$split))
  H <- rpgen_read(kg("1kg.pgen"), runtime = rt, destination = "haplotype", variants = chr22)
  expect_haplotypes(H, o, all_rows, "1kg.pgen")
})

test_that("1kg_bi.pgen, the phased BGEN and the HAPS files equal the VCF's GT slots", {
  rt <- new_runtime()
  o <- phase_oracle()
  bi <- which(o$split$k == 1)
  bim <- utils::read.table(kg("1kg_bi.bim"), colClasses = "character")
  chr22 <- which(bim$V1 == "22")
  expect_identical(as.numeric(bim$V4[chr22]), o$split$pos[bi])
  for (f in c("1kg_bi.pgen", "1kg_bi.phased.8bit.bgen")) {
    # (the BGEN stores its 15 chr22 records without a heterozygote unphased;
    # their slots come from the homozygous calls)
    H <- rpgen_read(kg(f), runtime = rt, destination = "haplotype", variants = chr22)
    expect_haplotypes(H, o, bi, f)
  }
  H <- rpgen_read(kg("text", "1kg_bi_chr22.haps"), runtime = rt, destination = "haplotype")
  expect_haplotypes(H, o, bi, "1kg_bi_chr22.haps")
  H <- rpgen_read(kg("text", "1kg_bi_chr22_hl.haps"), runtime = rt, destination = "haplotype",
                  chrom = "22")
  expect_haplotypes(H, o, bi, "1kg_bi_chr22_hl.haps (legend)")
})
