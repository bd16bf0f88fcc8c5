# lib.R: helpers shared by the bench scripts (p1_pca.R, p2_freq.R,
# p3_prodmat.R, p6_crossprod.R, llm.R, splice.R, ...); each sources it first with
#   source(file.path(dirname(sub("^--file=", "", grep("^--file=",
#          commandArgs(FALSE), value = TRUE))), "lib.R"))
# Settings come from the environment: BENCH_REPS (timed repetitions, median
# taken; default 3), BENCH_THREADS (threads given to every tool that takes
# them; default 2), BENCH_N / BENCH_M (generated .bed shape; default
# 5,000 x 200,000), BENCH_DIR (cache of generated inputs; default
# build/bench), RFMALLOC_FIXTURES (default ../shared/fixtures).
#
# Physical bounds printed next to every figure:
# - bench_cat_rate(): bytes per second of `cat file > /dev/null` with the
#   file in the page cache (warmed by one cat first): what reading the bytes
#   costs at all.
# - bench_dgemm_gflops(): GFLOP/s of a plain dgemm of doubles in R
#   (crossprod or %*%, R's BLAS) on heap matrices of the given shape, with
#   the long dimension capped so both operands fit in about 256 MB.

bench_root <- function() {
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  if (length(f) != 1L) stop("bench: run the bench scripts with Rscript bench/<name>.R")
  normalizePath(file.path(dirname(f), ".."))
}

bench_env_int <- function(name, default) {
  v <- suppressWarnings(as.integer(Sys.getenv(name, as.character(default))))
  if (is.na(v) || v < 1L) stop(sprintf("bench: %s must be a positive integer", name))
  v
}
bench_reps <- function() bench_env_int("BENCH_REPS", 3L)
bench_threads <- function() bench_env_int("BENCH_THREADS", 2L)

# Set Rfmalloc's worker threads to BENCH_THREADS and describe what will
# compute our products ("fused (avx2), 2 threads"); Rfmalloc must be loaded.
bench_fmalloc_setup <- function(threads = bench_threads()) {
  Rfmalloc::fmalloc_threads(threads)
  info <- Rfmalloc::fmalloc_backend_info()
  sprintf("%s (%s), %d threads", Rfmalloc::fmalloc_backends()[1], info$fused_isa, Rfmalloc::fmalloc_threads())
}

bench_fixtures <- function(root) {
  Sys.getenv("RFMALLOC_FIXTURES", file.path(root, "..", "shared", "fixtures"))
}

# Median elapsed seconds of f() over reps runs after one warm-up run; the
# attribute "cpu" holds the median user + system CPU seconds (all threads of
# this process and of the children it waited for, e.g. plink2).
bench_time <- function(f, reps = bench_reps(), warmup = TRUE) {
  if (warmup) f()
  t <- vapply(seq_len(reps), function(i) {
    s <- system.time(f(), gcFirst = TRUE)
    c(s[["elapsed"]], sum(s[c("user.self", "sys.self", "user.child", "sys.child")], na.rm = TRUE))
  }, c(0, 0))
  structure(stats::median(t[1, ]), cpu = stats::median(t[2, ]))
}

# Run `command args` in a child under /usr/bin/time -v (Debian package
# "time"). Returns wall_s (the child's elapsed time), peak_rss_mb (its
# "Maximum resident set size"), status and output (stdout and stderr lines).
bench_run_rss <- function(command, args = character(), env = character()) {
  if (!file.exists("/usr/bin/time")) stop("bench: /usr/bin/time is missing (Debian package time)")
  out <- suppressWarnings(system2("/usr/bin/time", c("-v", command, args), stdout = TRUE,
                                  stderr = TRUE, env = env))
  status <- attr(out, "status")
  kb <- as.numeric(sub(".*: *", "", grep("Maximum resident set size", out, value = TRUE)))
  wall <- sub("^.*m:ss\\): *", "", grep("Elapsed \\(wall clock\\)", out, value = TRUE))
  if (length(kb) != 1L || length(wall) != 1L)
    stop("bench: no /usr/bin/time report from ", command, ":\n", paste(utils::tail(out, 20), collapse = "\n"))
  parts <- as.numeric(strsplit(wall, ":")[[1]])
  list(wall_s = sum(parts * 60^(rev(seq_along(parts)) - 1)), peak_rss_mb = kb / 1024,
       status = if (is.null(status)) 0L else status, output = out)
}

# Numbers printed by a child on a line "<tag> v1 v2 ..." (the last such line).
bench_result_line <- function(out, tag = "RESULT") {
  l <- grep(paste0("^", tag, " "), out, value = TRUE)
  if (!length(l)) return(NULL)
  as.numeric(strsplit(trimws(sub(paste0("^", tag, " "), "", l[length(l)])), " +")[[1]])
}

# Rscript with the same library path as this session (R_LIBS).
bench_rscript <- function() file.path(R.home("bin"), "Rscript")
bench_child_env <- function() sprintf("R_LIBS=%s", paste(.libPaths(), collapse = ":"))

# Bytes per second of `cat path > /dev/null`, page cache warm: median of reps.
bench_cat_rate <- function(path, reps = bench_reps()) {
  t <- bench_time(function() {
    if (system2("cat", shQuote(path), stdout = FALSE) != 0) stop("bench: cannot cat ", path)
  }, reps)
  file.size(path) / as.numeric(t)
}

# GFLOP/s of a plain dgemm in R. op "crossprod": crossprod(A, B) with A
# n x p, B n x k (2 n p k flops); op "prod": A %*% B with A n x p, B p x k.
# The long dimension is cut so A and B take at most cap_bytes together; the
# attribute "shape" says what was run.
bench_dgemm_gflops <- function(n, p, k, op = c("crossprod", "prod"), cap_bytes = 2^28,
                               reps = bench_reps()) {
  op <- match.arg(op)
  n <- as.double(n); p <- as.double(p); k <- as.double(k)
  if (op == "crossprod") {
    n <- min(n, max(64, floor(cap_bytes / 8 / (p + k))))
    A <- matrix(stats::rnorm(n * p), n); B <- matrix(stats::rnorm(n * k), n)
    f <- function() crossprod(A, B)
  } else {
    p <- min(p, max(64, floor(cap_bytes / 8 / (n + k))))
    A <- matrix(stats::rnorm(n * p), n); B <- matrix(stats::rnorm(p * k), p)
    f <- function() A %*% B
  }
  t <- as.numeric(bench_time(f, reps))
  structure(2 * n * p * k / t / 1e9, shape = sprintf("%s %.0f x %.0f x %.0f", op, n, p, k))
}

# The generated .bed of the issue-5 benchmarks, made once (bench/gen_bed.R)
# and cached: n samples x m variants, seed, rate of missing calls.
bench_gen_bed <- function(root, n, m, seed = 1L, missing = 0.01) {
  source(file.path(root, "bench", "gen_bed.R"), local = TRUE)
  prefix <- gen_bed_prefix(root, n, m, seed, missing)
  if (!file.exists(paste0(prefix, ".gen")))
    cat(sprintf("bench: generating %s.bed (%d x %.0f) ...\n", prefix, as.integer(n), as.double(m)))
  gen_bed(n, m, prefix, seed, missing = missing)
}

bench_write_csv <- function(root, res, name) {
  dir.create(file.path(root, "bench", "results"), showWarnings = FALSE)
  utils::write.csv(res, file.path(root, "bench", "results", name), row.names = FALSE)
  cat(sprintf("wrote bench/results/%s\n", name))
}

bench_print <- function(title, res) {
  op <- options(width = 250)
  on.exit(options(op))
  cat(sprintf("\n== %s ==\n", title))
  print(format(res, digits = 3), row.names = FALSE)
}

# MemAvailable of /proc/meminfo in bytes (NA where unreadable).
bench_mem_available <- function() {
  l <- tryCatch(readLines("/proc/meminfo"), error = function(e) character())
  v <- grep("^MemAvailable:", l, value = TRUE)
  if (!length(v)) return(NA_real_)
  as.numeric(gsub("[^0-9]", "", v)) * 1024
}
