# make bench (readers): the same genotype file converted to 2-bit hardcalls by
# us (Rpgen::rpgen_read(destination = "hardcall") into an Rfmalloc runtime) and
# by plink2 (--make-bed), for VCF.gz, BGEN and PGEN; ratio = ours / plink2.
#
# Inputs (generated ones are written once under build/bench and reused):
#  - real: the 1000 Genomes fixture (1126 samples). 1kg.vcf.gz holds 516
#    multi-allelic records, which plink2 --make-bed refuses, so both tools read
#    1kg_bi.vcf.gz = 1kg.vcf.gz without those lines (the records of 1kg_bi.*);
#    1kg_bi.16bit.bgen, 1kg_bi.8bit.bgen (zlib), 1kg_bi.pgen as shipped.
#  - generated, so that start-up does not dominate: gen_genotypes.py copies
#    the fixture's biallelic autosomal records BENCH_COPIES times (default 4:
#    96,576 variants); the VCF is bgzipped, the PGEN and the BGEN (v1.2, zlib,
#    16-bit, unphased, as the fixture's) are written from it by plink2.
# Timing: median of BENCH_REPS runs (default 3). plink2: wall time of the
# process (start, parse, write .bed/.bim/.fam) with --threads 2. Ours: wall
# time of rpgen_read in this R process (the counting pass a VCF needs,
# reading, variant and sample metadata as R vectors), in one thread except
# for compressed BGEN, whose blocks are decompressed ahead on one worker
# thread (two threads, as plink2). `same` checks that our 2-bit bytes equal
# plink2's .bed.
suppressPackageStartupMessages({
  library(Rfmalloc)
  library(Rpgen)
})
args <- commandArgs(trailingOnly = FALSE)
root <- normalizePath(file.path(dirname(sub("^--file=", "", args[grep("^--file=", args)])), ".."))
fixtures <- Sys.getenv("RFMALLOC_FIXTURES", file.path(root, "..", "shared", "fixtures"))
fx <- file.path(fixtures, "genotypes", "1kg_phase3_subset")
if (!file.exists(file.path(fx, "1kg.vcf.gz"))) {
  cat("bench readers: fixtures absent (", fx, "); nothing to compare on.\n", sep = "")
  quit(status = 0)
}
for (tool in c("plink2", "python3", "bgzip"))
  if (!nzchar(Sys.which(tool))) stop("bench readers needs ", tool, " (make setup installs it)")
work <- Sys.getenv("BENCH_DIR", file.path(root, "build", "bench"))
dir.create(work, recursive = TRUE, showWarnings = FALSE)
reps <- as.integer(Sys.getenv("BENCH_REPS", "3"))
copies <- as.integer(Sys.getenv("BENCH_COPIES", "4"))

run <- function(cmd, ...) {
  st <- system2(cmd, c(...), stdout = FALSE, stderr = FALSE)
  if (st != 0) stop(cmd, " ", paste(c(...), collapse = " "), " failed (status ", st, ")")
}
sh <- function(cmd) if (system(cmd) != 0) stop("failed: ", cmd)
plink2 <- function(...) run("plink2", ..., "--threads", "2")

# ---- inputs --------------------------------------------------------------
bi_vcf <- file.path(work, "1kg_bi.vcf.gz")
if (!file.exists(bi_vcf))
  sh(sprintf("zcat %s | awk -F'\\t' '/^#/ || $5 !~ /,/' | bgzip -@2 > %s.tmp && mv %s.tmp %s",
             shQuote(file.path(fx, "1kg.vcf.gz")), bi_vcf, bi_vcf, bi_vcf))
gen <- file.path(work, sprintf("gen_k%d", copies))
if (!file.exists(paste0(gen, ".bgen"))) {
  cat(sprintf("bench readers: generating %s.{vcf.gz,pgen,bgen} (%d copies of the fixture's records)\n",
              basename(gen), copies))
  sh(sprintf("python3 %s %s - --copies %d | bgzip -@2 > %s.vcf.gz",
             file.path(root, "bench", "gen_genotypes.py"), shQuote(file.path(fx, "1kg.vcf.gz")),
             copies, gen))
  plink2("--vcf", paste0(gen, ".vcf.gz"), "--make-pgen", "--out", gen)
  plink2("--pfile", gen, "--make-pgen", "erase-phase", "--out", paste0(gen, "_unphased"))
  plink2("--pfile", paste0(gen, "_unphased"), "--export", "bgen-1.2", "bits=16", "ref-first",
         "id-paste=iid", "--out", gen)
  unlink(paste0(gen, "_unphased.", c("pgen", "pvar", "psam", "log")))
}

cases <- list(
  list("VCF.gz", "1kg_bi.vcf.gz (real)", bi_vcf, c("--vcf", bi_vcf)),
  list("BGEN", "1kg_bi.16bit.bgen (real)", file.path(fx, "1kg_bi.16bit.bgen"),
       c("--bgen", file.path(fx, "1kg_bi.16bit.bgen"), "ref-first", "--sample",
         file.path(fx, "1kg_bi.16bit.sample"))),
  list("BGEN", "1kg_bi.8bit.bgen (real)", file.path(fx, "1kg_bi.8bit.bgen"),
       c("--bgen", file.path(fx, "1kg_bi.8bit.bgen"), "ref-first", "--sample",
         file.path(fx, "1kg_bi.8bit.sample"))),
  list("PGEN", "1kg_bi.pgen (real)", file.path(fx, "1kg_bi.pgen"), c("--pfile", file.path(fx, "1kg_bi"))),
  list("VCF.gz", sprintf("%s.vcf.gz (generated)", basename(gen)), paste0(gen, ".vcf.gz"),
       c("--vcf", paste0(gen, ".vcf.gz"))),
  list("BGEN", sprintf("%s.bgen (generated)", basename(gen)), paste0(gen, ".bgen"),
       c("--bgen", paste0(gen, ".bgen"), "ref-first", "--sample", paste0(gen, ".sample"))),
  list("PGEN", sprintf("%s.pgen (generated)", basename(gen)), paste0(gen, ".pgen"), c("--pfile", gen))
)

# ---- timing --------------------------------------------------------------
rt <- open_fmalloc(file.path(work, "readers_bench.fm"), size_gb = 8, mode = "scratch")
median_time <- function(f) stats::median(vapply(seq_len(reps), function(i) {
  gc()
  system.time(f())[["elapsed"]]
}, numeric(1)))
out <- file.path(tempdir(), "bench_plink2")
rows <- lapply(cases, function(cs) {
  path <- cs[[3]]
  X <- NULL
  t_us <- median_time(function() X <<- rpgen_read(path, destination = "hardcall", runtime = rt))
  t_peer <- median_time(function() plink2(cs[[4]], "--make-bed", "--out", out))
  nb <- ncol(X) * ceiling(nrow(X) / 4)
  bed <- readBin(paste0(out, ".bed"), "raw", n = nb + 4)
  same <- length(bed) == nb + 3 && identical(X@storage[seq_len(nb)], bed[-(1:3)])
  data.frame(format = cs[[1]], input = cs[[2]], size_mb = file.size(path) / 2^20,
             samples = nrow(X), variants = ncol(X), ours_s = t_us, plink2_s = t_peer,
             ratio = t_us / t_peer, same = same)
})
res <- do.call(rbind, rows)
cat(sprintf("Readers -> 2-bit hardcalls: ours (Rpgen) vs plink2 --make-bed --threads 2; median of %d\n", reps))
print(format(res, digits = 3), row.names = FALSE)
cat("ratio = our time / plink2's time; same = our 2-bit bytes equal plink2's .bed\n")
dir.create(file.path(root, "bench", "results"), showWarnings = FALSE)
utils::write.csv(res, file.path(root, "bench", "results", "readers.csv"), row.names = FALSE)
