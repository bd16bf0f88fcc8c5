# make bench BENCH_RSS=1 (readers, bounded memory): peak resident memory of
# a whole R process that reads a generated VCF and a generated BGEN of at
# least 1 GB into a 2-bit hardcall destination (Rpgen::rpgen_read into an
# Rfmalloc runtime). Goal: peak RSS < 300 MB.
#
# Inputs, generated once under build/bench/rss (about 2.3 GB, removed with
# BENCH_RSS_CLEAN=1) by gen_genotypes.py from the real fixture's biallelic
# autosomal records: a plain VCF (5 copies of the records, 2 copies of the
# 1126 samples: 2252 x 120,720) and a BGEN v1.2 layout 2, uncompressed, 8-bit
# (5 x the records, 3 x the samples: 3378 x 120,720). Each read runs in a
# fresh Rscript under /usr/bin/time -v (Debian package "time"), whose
# "Maximum resident set size" is the peak RSS of the process: R itself, the
# reader's buffers, the variant metadata and the mapped destination's
# resident pages. The page cache holding the input is not part of it.
args <- commandArgs(trailingOnly = FALSE)
root <- normalizePath(file.path(dirname(sub("^--file=", "", args[grep("^--file=", args)])), ".."))
fixtures <- Sys.getenv("RFMALLOC_FIXTURES", file.path(root, "..", "shared", "fixtures"))
src <- file.path(fixtures, "genotypes", "1kg_phase3_subset", "1kg.vcf.gz")
if (!file.exists(src)) {
  cat("bench readers_rss: fixtures absent (", src, "); nothing to generate from.\n", sep = "")
  quit(status = 0)
}
if (!file.exists("/usr/bin/time")) stop("bench readers_rss needs /usr/bin/time (Debian package time)")
work <- file.path(Sys.getenv("BENCH_DIR", file.path(root, "build", "bench")), "rss")
dir.create(work, recursive = TRUE, showWarnings = FALSE)
gen <- file.path(root, "bench", "gen_genotypes.py")
inputs <- list(
  list(format = "VCF", path = file.path(work, "gen_1g.vcf"), opts = "--copies 5 --sample-copies 2"),
  list(format = "BGEN", path = file.path(work, "gen_1g.bgen"),
       opts = "--format bgen --copies 5 --sample-copies 3")
)
limit_mb <- 300

# The child: open a runtime, read into hardcalls, print what was read.
child <- paste(
  "suppressPackageStartupMessages({library(Rfmalloc); library(Rpgen)})",
  "a <- commandArgs(TRUE)",
  "rt <- open_fmalloc(a[2], size_gb = 4, mode = 'scratch')",
  "t <- system.time(X <- rpgen_read(a[1], destination = 'hardcall', runtime = rt))[['elapsed']]",
  "cat('RESULT', nrow(X), ncol(X), t, '\\n')", sep = "; ")
rows <- lapply(inputs, function(inp) {
  if (!file.exists(inp$path)) {
    cat("bench readers_rss: generating", inp$path, "\n")
    cmd <- sprintf("python3 %s %s %s.tmp %s && mv %s.tmp %s", shQuote(gen), shQuote(src), inp$path,
                   inp$opts, inp$path, inp$path)
    if (system(cmd) != 0) stop("failed: ", cmd)
  }
  rt_file <- file.path(tempdir(), "rss.fm")
  out <- system2("/usr/bin/time", c("-v", file.path(R.home("bin"), "Rscript"), "-e", shQuote(child),
                                    inp$path, rt_file), stdout = TRUE, stderr = TRUE)
  res <- strsplit(trimws(sub("^RESULT ", "", grep("^RESULT ", out, value = TRUE))), " +")[[1]]
  if (length(res) != 3) stop("the reading process failed:\n", paste(out, collapse = "\n"))
  kb <- as.numeric(sub(".*: *", "", grep("Maximum resident set size", out, value = TRUE)))
  wall <- sub(".*: *", "", grep("Elapsed \\(wall clock\\)", out, value = TRUE))
  parts <- as.numeric(strsplit(wall, ":")[[1]])
  wall_s <- sum(parts * 60^(rev(seq_along(parts)) - 1))
  data.frame(format = inp$format, file = basename(inp$path), size_mb = file.size(inp$path) / 2^20,
             samples = as.numeric(res[1]), variants = as.numeric(res[2]),
             read_s = as.numeric(res[3]), process_wall_s = wall_s, peak_rss_mb = kb / 1024,
             under_limit = kb / 1024 < limit_mb)
})
res <- do.call(rbind, rows)
cat(sprintf("Bounded memory: 1 GB+ inputs -> 2-bit hardcalls, peak RSS of the whole R process (limit %d MB)\n",
            limit_mb))
print(format(res, digits = 3), row.names = FALSE)
cat("read_s: rpgen_read alone; process_wall_s: the whole Rscript (start, packages, read)\n")
dir.create(file.path(root, "bench", "results"), showWarnings = FALSE)
utils::write.csv(res, file.path(root, "bench", "results", "readers_rss.csv"), row.names = FALSE)
if (Sys.getenv("BENCH_RSS_CLEAN") == "1") unlink(work, recursive = TRUE)
