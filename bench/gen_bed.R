# gen_bed.R: a generated PLINK 1 .bed/.bim/.fam of n samples x m variants
# with population structure, for the issue-5 benchmarks (P1, P2, P3 and the
# 5,000 x 2,000,000 bounded-memory PCA run).
#
# Model: 4 populations of (nearly) equal size, samples contiguous by
# population (FID "pop1".."pop4"). Per variant an ancestral frequency
# p ~ U(0.05, 0.5) and, per population, a Balding-Nichols frequency
# p_k ~ Beta(p (1 - F) / F, (1 - p)(1 - F) / F) with F = Fst = 0.05
# (Balding and Nichols 1995, Genetica 96:3-12). Genotypes are Hardy-Weinberg
# draws of the count of allele A1 (the .bim's 5th column, "A", which plink2
# reports as ALT) at frequency p_k; each call is missing with probability
# `missing` (default 0.01). One uniform per call decides both: u < missing is
# missing, otherwise u is compared with the HWE thresholds rescaled to
# [missing, 1).
#
# Streaming: variants are generated in blocks of about 2^18 calls, each block
# from its own seed (seed, block index), so the file does not depend on the
# number of workers (it does on n: 2^18 %/% n variants per block), and
# memory stays near a few blocks (~30 MB per worker at any m). Blocks are spread over `cores` forked workers (default
# min(2, cores available); env BENCH_GEN_CORES), each writing its blocks at
# their offsets. Byte layout: PLINK 1 .bed, variant-major, magic 6c 1b 01,
# ceil(n/4) bytes per variant, sample i in bits 2(i mod 4), codes 00 = two A1,
# 01 = missing, 10 = one A1, 11 = no A1, padding bits 0
# (https://www.cog-genomics.org/plink/1.9/formats#bed).
#
# Cache: a finished file set carries <prefix>.gen (the parameters); an
# existing set with that stamp and the right .bed size is reused. Files are
# written under temporary names and renamed at the end.
#
# Use: Rscript bench/gen_bed.R n m out_prefix [seed [missing]]
#      or source("bench/gen_bed.R"); gen_bed(n, m, prefix, seed, missing)
#      gen_bed_prefix(root, n, m, seed, missing) is the standard cache name
#      under build/bench/.

gen_bed_version <- 1L

# Standard cache prefix build/bench/gen_<n>x<m>_s<seed>, with _miss<rate>
# appended when missing is not 0.01 (env BENCH_DIR moves it).
gen_bed_prefix <- function(root, n, m, seed = 1L, missing = 0.01) {
  dir <- Sys.getenv("BENCH_DIR", file.path(root, "build", "bench"))
  file.path(dir, sprintf("gen_%dx%.0f_s%d%s", as.integer(n), as.double(m), as.integer(seed),
                         if (missing == 0.01) "" else sprintf("_miss%g", missing)))
}

gen_bed_stamp <- function(n, m, seed, missing) {
  sprintf("gen_bed v%d n=%d m=%.0f seed=%d pops=4 fst=0.05 maf=U(0.05,0.5) missing=%g",
          gen_bed_version, as.integer(n), m, as.integer(seed), missing)
}

# Packed bytes (raw, ceil(n/4) per variant) of variants [j0, j0 + b) of block `blk`.
gen_bed_block <- function(n, b, blk, seed, pop, missing) {
  set.seed((as.double(seed) * 1000003 + blk) %% .Machine$integer.max)
  fst <- 0.05
  p <- stats::runif(b, 0.05, 0.5)
  a <- p * (1 - fst) / fst
  pk <- matrix(stats::rbeta(4 * b, rep(a, each = 4), rep((1 - p) * (1 - fst) / fst, each = 4)), 4)
  # HWE thresholds on u in [missing, 1): below t0 no A1 (code 3), below t1
  # one A1 (code 2), else two (code 0).
  t0 <- missing + (1 - missing) * (1 - pk)^2
  t1 <- missing + (1 - missing) * (1 - pk^2)
  u <- stats::runif(n * b)
  code <- (u < t0[pop, , drop = FALSE]) + 2L * (u < t1[pop, , drop = FALSE])
  if (missing > 0) code[u < missing] <- 1L
  nb <- (n + 3L) %/% 4L
  if (4L * nb != n) {
    dim(code) <- c(n, b)
    code <- rbind(code, matrix(0L, 4L * nb - n, b))
  }
  dim(code) <- c(4L, nb * b)
  as.raw(crossprod(c(1, 4, 16, 64), code))
}

# Write prefix.bed/.bim/.fam (n samples, m variants); returns the prefix.
gen_bed <- function(n, m, prefix, seed = 1L, missing = 0.01,
                    cores = as.integer(Sys.getenv("BENCH_GEN_CORES",
                                                  min(2L, parallel::detectCores())))) {
  n <- as.integer(n); m <- as.double(m); seed <- as.integer(seed)
  if (is.na(n) || n < 1L || is.na(m) || m < 1 || m != round(m) || is.na(seed))
    stop("gen_bed: n and m must be positive whole numbers and seed an integer")
  if (!is.numeric(missing) || length(missing) != 1L || is.na(missing) || missing < 0 || missing >= 1)
    stop("gen_bed: missing must be a rate in [0, 1)")
  nb <- (n + 3L) %/% 4L
  bed <- paste0(prefix, ".bed"); stamp_file <- paste0(prefix, ".gen")
  stamp <- gen_bed_stamp(n, m, seed, missing)
  files <- paste0(prefix, c(".bed", ".bim", ".fam"))
  if (all(file.exists(c(files, stamp_file))) && identical(readLines(stamp_file, warn = FALSE), stamp) &&
      file.size(bed) == 3 + m * nb) return(invisible(prefix))
  dir.create(dirname(prefix), recursive = TRUE, showWarnings = FALSE)
  unlink(c(files, stamp_file))
  tmp <- paste0(files, ".tmp")

  sizes <- tabulate(((seq_len(n) - 1L) * 4L) %/% n + 1L, 4L)
  pop <- rep(1:4, sizes)
  writeLines(sprintf("pop%d ind%d 0 0 0 -9", pop, seq_len(n)), tmp[3])

  b <- max(1L, as.integer(2^18 %/% n))
  n_blk <- ceiling(m / b)
  con <- file(tmp[1], "wb"); writeBin(as.raw(c(0x6c, 0x1b, 0x01)), con); close(con)
  worker <- function(w) {
    out <- file(tmp[1], "r+b")
    on.exit(close(out))
    for (blk in seq(w, n_blk, by = cores)) {
      j0 <- (blk - 1) * b
      bb <- as.integer(min(b, m - j0))
      seek(out, 3 + j0 * nb, rw = "write")
      writeBin(gen_bed_block(n, bb, blk, seed, pop, missing), out)
    }
    TRUE
  }
  cores <- max(1L, min(as.integer(cores), n_blk))
  ok <- if (cores > 1L) parallel::mclapply(seq_len(cores), worker, mc.cores = cores,
                                           mc.preschedule = FALSE)
        else lapply(1L, worker)
  if (!all(vapply(ok, isTRUE, TRUE))) stop("gen_bed: a worker failed: ", paste(unlist(ok), collapse = " "))
  if (file.size(tmp[1]) != 3 + m * nb) stop("gen_bed: ", tmp[1], " has the wrong size")

  con <- file(tmp[2], "w")
  for (j0 in seq(0, m - 1, by = 1e5)) {
    j <- j0 + seq_len(min(1e5, m - j0))
    writeLines(sprintf("1\tsnp%.0f\t0\t%.0f\tA\tG", j, j), con)
  }
  close(con)
  file.rename(tmp, files)
  writeLines(stamp, stamp_file)
  invisible(prefix)
}

if (sys.nframe() == 0L) {
  a <- commandArgs(trailingOnly = TRUE)
  if (length(a) < 3L || length(a) > 5L)
    stop("usage: Rscript bench/gen_bed.R n m out_prefix [seed [missing]]")
  t <- system.time(gen_bed(as.integer(a[1]), as.double(a[2]), a[3],
                           if (length(a) >= 4L) as.integer(a[4]) else 1L,
                           if (length(a) == 5L) as.double(a[5]) else 0.01))[["elapsed"]]
  cat(sprintf("gen_bed: %s.bed (%s x %s) ready in %.1f s\n", a[3], a[1], a[2], t))
}
