# Oracles for the real-data correctness tests (test-fixtures-*.R,
# test-multiallelic.R): plink2's own tables (.traw, .bed), VCF text parsed
# here in R (never through our readers), and plink2 run in a tempdir.

gt_fixture <- function(dataset, ...) fixture_path("genotypes", dataset, ...)

# A .pvar (or the first five columns of a VCF body) as a character data frame
# with columns CHROM POS ID REF ALT ...; "##" header lines dropped.
read_pvar <- function(path) {
  l <- readLines(path)
  l <- l[!startsWith(l, "##")]
  d <- utils::read.delim(text = l, colClasses = "character", comment.char = "",
                         check.names = FALSE, quote = "")
  names(d)[1] <- "CHROM"
  d
}

# The records our readers emit for a multi-allelic file: one per ALT, in ALT
# order (docs/formats/conventions.md). One row per split record: its site,
# j (which ALT it counts), k (ALTs at the site), and the metadata.
split_plan <- function(pv) {
  alts <- strsplit(pv$ALT, ",", fixed = TRUE)
  k <- lengths(alts)
  data.frame(site = rep(seq_along(k), k), j = sequence(k), k = rep(k, k),
             chr = rep(pv$CHROM, k), pos = as.numeric(rep(pv$POS, k)),
             id = rep(pv$ID, k), ref = rep(pv$REF, k), alt = unlist(alts),
             stringsAsFactors = FALSE)
}

# plink2 --export Av table: G is samples x variants (double, NA missing),
# rows named by IID (the part after the first "_" of FID_IID), columns by
# SNP; meta holds CHR, SNP, POS, COUNTED, ALT.
read_traw <- function(path) {
  tr <- utils::read.delim(path, check.names = FALSE,
                          colClasses = c(rep("character", 2), "numeric", "numeric",
                                         rep("character", 2)))
  G <- t(as.matrix(tr[, -(1:6)]))
  storage.mode(G) <- "double"
  colnames(G) <- tr$SNP
  rownames(G) <- sub("^[^_]*_", "", rownames(G))
  list(G = G, meta = tr[, c(1, 2, 4, 5, 6)])
}

# The PLINK 1 .bed genotype bytes (without the 3 magic bytes) as a
# ceiling(n/4) x m raw matrix: the exact bytes a hardcall destination holds.
bed_bytes <- function(bed, n_samples) {
  sz <- file.size(bed)
  b <- readBin(bed, "raw", sz)
  testthat::expect_identical(b[1:3], as.raw(c(0x6c, 0x1b, 0x01)))
  matrix(b[-(1:3)], nrow = ceiling(n_samples / 4))
}

# The bed2 bytes of a hardcall destination, ceiling(n/4) x ncol.
hardcall_bytes <- function(X) {
  n <- nrow(X)
  cb <- ceiling(n / 4)
  s <- X@storage
  matrix(s[seq_len(cb * ncol(X))], nrow = cb)
}

# Two bed2 byte matrices are identical; on failure name the first variants
# that differ (ids = their column names).
expect_same_bytes <- function(got, want, ids, label) {
  testthat::expect_identical(dim(got), dim(want), label = paste(label, "shape"))
  if (!identical(dim(got), dim(want))) return(invisible(FALSE))
  bad <- which(colSums(got != want) > 0)
  testthat::expect(length(bad) == 0,
                   sprintf("%s: %d variants differ from the reference, first: %s", label,
                           length(bad), paste(utils::head(ids[bad], 5), collapse = ", ")))
  invisible(length(bad) == 0)
}

# Cell-by-cell equality of two numeric matrices, NA where missing (NA must
# face NA); the failure names the count and the first cells.
expect_same_calls <- function(got, want, label) {
  got <- unname(got)
  want <- unname(want)
  testthat::expect_identical(dim(got), dim(want), label = paste(label, "shape"))
  if (!identical(dim(got), dim(want))) return(invisible(FALSE))
  same <- (is.na(got) & is.na(want)) | (!is.na(got) & !is.na(want) & got == want)
  bad <- which(!same, arr.ind = TRUE)
  testthat::expect(nrow(bad) == 0,
                   sprintf("%s: %d cells differ, first (sample, variant): %s", label, nrow(bad),
                           paste(utils::head(sprintf("(%d,%d) %s vs %s", bad[, 1], bad[, 2],
                                                     got[bad], want[bad]), 5), collapse = "; ")))
  invisible(nrow(bad) == 0)
}

# plink2 on PATH, else skip saying so.
plink2_or_skip <- function() {
  p <- Sys.which("plink2")
  if (!nzchar(p)) testthat::skip("plink2 is not on PATH: the plink2 oracle cannot be computed")
  unname(p)
}

# Run plink2 with args (output prefix inside a tempdir); fail with its log.
run_plink2 <- function(args, out) {
  p <- plink2_or_skip()
  log <- suppressWarnings(system2(p, c(args, "--threads", "1", "--out", out), stdout = TRUE, stderr = TRUE))
  st <- attr(log, "status")
  if (!is.null(st) && st != 0) stop("plink2 ", paste(args, collapse = " "), " failed:\n",
                                    paste(utils::tail(log, 10), collapse = "\n"))
  invisible(log)
}

# Parse the GT field of a (b)gzipped or plain VCF in R, as text: the oracle
# for the haplotype tests. Keeps records whose CHROM is in `chrom` (all when
# NULL). Returns meta (chr, pos, id, ref, alt), a1 and a2 (records x samples,
# integer allele indices, NA for '.', a2 NA for a haploid call) and phased
# (records x samples, TRUE for '|').
vcf_gt_text <- function(path, chrom = NULL) {
  con <- gzfile(path, "r")  # gzfile reads every BGZF member (gzcon stops after the first)
  on.exit(close(con))
  samples <- NULL
  keep <- character()
  repeat {
    l <- readLines(con, n = 5000L)
    if (!length(l)) break
    if (is.null(samples)) {
      h <- l[startsWith(l, "#CHROM")]
      if (length(h)) samples <- strsplit(h, "\t", fixed = TRUE)[[1]][-(1:9)]
    }
    l <- l[!startsWith(l, "#")]
    if (!is.null(chrom)) l <- l[sub("\t.*$", "", l) %in% chrom]
    keep <- c(keep, l)
  }
  f <- strsplit(keep, "\t", fixed = TRUE)
  m <- matrix(unlist(f), ncol = length(f))
  meta <- data.frame(chr = m[1, ], pos = as.numeric(m[2, ]), id = m[3, ], ref = m[4, ],
                     alt = m[5, ], stringsAsFactors = FALSE)
  fmt <- m[9, ]
  testthat::expect_true(all(startsWith(fmt, "GT")))
  gt <- t(m[-(1:9), , drop = FALSE])
  gt <- sub(":.*$", "", gt)
  a1 <- sub("[|/].*$", "", gt)
  a2 <- ifelse(grepl("[|/]", gt), sub("^[^|/]*[|/]", "", gt), NA_character_)
  num <- function(x) {
    y <- suppressWarnings(as.integer(x))
    dim(y) <- dim(gt)
    y
  }
  phased <- grepl("|", gt, fixed = TRUE)
  dim(phased) <- dim(gt)
  list(meta = meta, a1 = num(a1), a2 = num(a2), phased = phased, samples = samples)
}
