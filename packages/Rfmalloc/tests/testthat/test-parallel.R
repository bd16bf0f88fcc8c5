# Products, column statistics and PCA of a mapped .bed, and of a persistent
# runtime's matrices, in blocks on mirai
# daemons (option fmalloc.parallel = "mirai"; R/parallel.R and
# src/r_parallel.c): bit-identical results for 1, 2 and 3 daemons and
# without daemons (the blocks computed in this process), daemons over TLS
# started as separate Rscript processes, a daemon refusing a file that is
# not the driver's, and faults (a daemon killed with tools::pskill, a block
# that errors, one that never answers, an interrupt) injected on the
# daemons with trace().
skip_if_not_installed("mirai")

# A .bed of random calls (missing ones included), n not a multiple of 4.
par_bed <- function(n = 301, m = 2000, seed = 1) {
  set.seed(seed)
  bpv <- ceiling(n / 4)
  bytes <- matrix(sample(0:255, bpv * m, TRUE), bpv, m)
  if (n %% 4) bytes[bpv, ] <- bytes[bpv, ] %% 4^(n %% 4) # padding bits zero
  prefix <- file.path(tempfile("par"), "g")
  dir.create(dirname(prefix))
  write_plink(prefix, n, m, c(0x6c, 0x1b, 0x01, as.vector(bytes)))
}


# Every operation the option sends to daemons, on X (16 blocks of 128).
par_ops <- function(X) {
  Xs <- fmalloc_standardize(X, center = TRUE, scale = TRUE, drop_constant = TRUE)
  set.seed(9)
  B <- matrix(rnorm(ncol(Xs) * 3), ncol(Xs), 3)
  C <- matrix(rnorm(nrow(X) * 2), nrow(X), 2)
  list(xb = Xs %*% B, xtb = crossprod(Xs, C), sums = colSums(X, na.rm = TRUE), means = colMeans(X, na.rm = TRUE),
       vars = fmalloc_colVars(X), sel = crossprod(X[, 300:1700], C[, 1, drop = FALSE]),
       pca = fmalloc_pca(X, k = 3, scale = TRUE, seed = 2, tol = 1e-8))
}

test_that("1, 2 and 3 daemons give the result without daemons bit for bit; unblocked agrees to rounding", {
  X <- fmalloc_bed_open(par_bed())
  withr::local_options(fmalloc.parallel_block = 128, fmalloc.progress = FALSE)
  unblocked <- par_ops(X)
  expect_false(identical(fmalloc_last_backend(), "mirai"))
  withr::local_options(fmalloc.parallel = "mirai")
  local_daemons(0)
  serial <- suppressMessages(par_ops(X))
  expect_match(fmalloc_last_backend(), "^mirai") # then the backends of the blocks computed here
  for (n in 1:3) {
    local_daemons(n)
    expect_identical(fmalloc_parallel_info()$daemons, n)
    expect_identical(suppressMessages(par_ops(X)), serial, label = sprintf("%d daemons", n))
  }
  # the blocks group the sums over variants: rounding of sums of 2000 terms
  for (o in c("xb", "xtb", "sums", "means", "vars", "sel")) {
    expect_equal(serial[[o]], unblocked[[o]], tolerance = 1e-12, label = o)
  }
  expect_equal(serial$pca$sdev, unblocked$pca$sdev, tolerance = 1e-7)
  expect_equal(abs(serial$pca$rotation), abs(unblocked$pca$rotation), tolerance = 1e-5)
  # the argument sets the option for the call
  withr::local_options(fmalloc.parallel = NULL)
  expect_identical(suppressMessages(fmalloc_pca(X, k = 3, scale = TRUE, seed = 2, tol = 1e-8, parallel = "mirai")),
                   serial$pca)
  expect_identical(fmalloc_pca(X, k = 3, scale = TRUE, seed = 2, tol = 1e-8), unblocked$pca)
})

test_that("a persistent runtime's matrices: daemons map its file by path while the driver holds it, bit for bit", {
  path <- file.path(tempfile("par_rt"), "store.fm")
  dir.create(dirname(path))
  rt <- open_fmalloc(path, size_gb = 0.2)
  withr::defer(cleanup_fmalloc(rt))
  set.seed(4)
  n <- 203
  p <- 1500
  G <- matrix(sample(c(0:2, NA), n * p, TRUE, prob = c(0.4, 0.35, 0.2, 0.05)), n, p)
  fmalloc_save(fmalloc_bed(G, runtime = rt), "calls", rt)
  fmalloc_save(fmalloc_dosage(G / 1.5, runtime = rt), "dosages", rt)
  M <- create_fmalloc_matrix("double", n, p, rt) # unnamed, written in place
  M[] <- rnorm(n * p)
  mats <- list(bed = fmalloc_get(rt, "calls"), dos = fmalloc_get(rt, "dosages"), dense = M)
  set.seed(5)
  B <- matrix(rnorm(p * 2), p, 2)
  C <- matrix(rnorm(n * 2), n, 2)
  ops <- function(X) { # a dense matrix's products are base R's; its statistics and PCA are ours
    Xs <- if (is.matrix(X)) X else fmalloc_standardize(X, center = TRUE, scale = TRUE, drop_constant = FALSE)
    list(xb = Xs %*% B, xtb = crossprod(Xs, C), vars = fmalloc_colVars(X), means = fmalloc_colMeans(X),
         sel = crossprod(Xs[, 200:900], C), pca = fmalloc_pca(X, k = 2, seed = 2, tol = 1e-8))
  }
  withr::local_options(fmalloc.parallel_block = 128, fmalloc.progress = FALSE)
  unblocked <- suppressMessages(lapply(mats, ops))
  withr::local_options(fmalloc.parallel = "mirai")
  local_daemons(0)
  serial <- suppressMessages(lapply(mats, ops))
  for (nd in 1:3) {
    local_daemons(nd)
    expect_identical(suppressMessages(lapply(mats, ops)), serial, label = sprintf("%d daemons", nd))
    # each daemon mapped the runtime's file itself
    mapped <- unlist(mirai::everywhere(ls(get(".fm_daemon_files", asNamespace("Rfmalloc"))))[])
    expect_true(length(mapped) >= 1L && all(mapped == normalizePath(path)), label = paste(mapped, collapse = ", "))
  }
  for (m in names(mats)) { # column statistics are each column's own; products group sums by block
    expect_identical(serial[[m]]$vars, unblocked[[m]]$vars, label = m)
    expect_equal(serial[[m]]$xb, unblocked[[m]]$xb, tolerance = 1e-12, label = m)
    expect_equal(serial[[m]]$pca$sdev, unblocked[[m]]$pca$sdev, tolerance = 1e-7, label = m)
  }
  # the driver writes: the daemons see a new identity, map the file again
  # and compute on the new bytes
  local_daemons(2)
  before <- fmalloc_colVars(M)
  M[, 7] <- 2 * M[, 7]
  after <- fmalloc_colVars(M)
  withr::with_options(list(fmalloc.parallel = NULL), expect_identical(after, fmalloc_colVars(M)))
  expect_equal(after[7], 4 * before[7])
  expect_identical(after[-7], before[-7])
  # a scratch runtime has no path: computed here, as without the option
  S <- fmalloc_bed(G[, 1:50], runtime = open_fmalloc(tempfile(), size_gb = 0.01, mode = "scratch"))
  expect_false(fm_parallel_on(S))
  expect_true(fm_parallel_on(mats$dos) && fm_parallel_on(M))
  expect_identical(S %*% B[1:50, ], withr::with_options(list(fmalloc.parallel = NULL), S %*% B[1:50, ]))
})

test_that("daemons on 127.0.0.1 over TLS, started as separate Rscript processes, give the same result", {
  X <- fmalloc_bed_open(par_bed(seed = 2))
  withr::local_options(fmalloc.parallel = "mirai", fmalloc.parallel_block = 128, fmalloc.progress = FALSE)
  local_daemons(0)
  serial <- X %*% matrix(1, ncol(X), 1)
  mirai::daemons(url = "tls+tcp://127.0.0.1:0")
  withr::defer(mirai::daemons(0))
  for (cmd in mirai::launch_remote(2)) system(cmd, wait = FALSE)
  t0 <- Sys.time()
  while (mirai::info()[["connections"]] < 2 && Sys.time() - t0 < 60) Sys.sleep(0.1)
  expect_identical(fmalloc_parallel_info()$daemons, 2L)
  expect_true(startsWith(mirai::status()$daemons, "tls+tcp://127.0.0.1"))
  expect_identical(X %*% matrix(1, ncol(X), 1), serial)
})

test_that("a daemon whose file is not the driver's refuses the block, naming the file and what differs", {
  path <- par_bed(seed = 3)
  X <- fmalloc_bed_open(path)
  bed <- paste0(path, ".bed")
  withr::local_options(fmalloc.parallel = "mirai", fmalloc.parallel_block = 500, fmalloc.progress = FALSE)
  C <- matrix(1, nrow(X), 1)
  local_daemons(2)
  ok <- crossprod(X, C)
  # the same bytes under the same path, written anew (another mtime): the
  # driver keeps its mapping of the old inode; daemons that had mapped it
  # keep theirs (the right bytes), new daemons open the new file
  bytes <- readBin(bed, "raw", file.size(bed))
  tmp <- paste0(bed, ".new")
  writeBin(bytes, tmp)
  Sys.setFileTime(tmp, file.mtime(bed) + 100)
  file.rename(tmp, bed)
  expect_identical(crossprod(X, C), ok)
  local_daemons(2)
  expect_error(crossprod(X, C), class = "fm_error_emismatch",
               regexp = "block 1 of 4 .*failed 3 times.*g.bed' on host .* is not the driver's file: its modification time differs")
  # other bytes of the same size (a sampled byte: the last page's)
  bytes[length(bytes) - 10L] <- xor(bytes[length(bytes) - 10L], as.raw(1))
  writeBin(bytes, tmp)
  file.rename(tmp, bed)
  local_daemons(2)
  expect_error(crossprod(X, C), class = "fm_error_emismatch", regexp = "and sampled bytes differ")
  # without daemons the blocks are computed on the driver's own mapping
  local_daemons(0)
  expect_identical(crossprod(X, C), ok)
})

# trace() on every daemon, done before the next task: code runs at the
# start of each block (task$block).
inject <- function(code) {
  invisible(mirai::everywhere(trace(".fm_block_task", tracer = code, where = asNamespace("Rfmalloc"), print = FALSE),
                              code = code)[])
}

test_that("a killed daemon, an error and a timeout: the block is sent again and the result is the same", {
  X <- fmalloc_bed_open(par_bed(seed = 4))
  withr::local_options(fmalloc.parallel = "mirai", fmalloc.parallel_block = 128, fmalloc.progress = FALSE)
  B <- matrix(seq_len(ncol(X) * 2) / ncol(X), ncol(X), 2)
  local_daemons(0)
  serial <- X %*% B
  flag <- tempfile("fault")
  local_daemons(2)
  pids <- unlist(mirai::everywhere(Sys.getpid())[])
  # block 3's first daemon kills itself (tools::pskill, SIGKILL)
  inject(bquote(if (task$block == 3L && !file.exists(.(flag))) {
    file.create(.(flag))
    tools::pskill(Sys.getpid(), tools::SIGKILL)
  }))
  expect_identical(X %*% B, serial)
  expect_true(file.exists(flag))
  expect_identical(mirai::info()[["connections"]], 1L)
  # an error on block 5, once
  unlink(flag)
  inject(bquote(if (task$block == 5L && !file.exists(.(flag))) {
    file.create(.(flag))
    stop("injected failure")
  }))
  expect_identical(X %*% B, serial)
  # a block that does not answer within the timeout, once
  unlink(flag)
  withr::local_options(fmalloc.parallel_timeout = 3) # generous: a loaded machine delays the others
  inject(bquote(if (task$block == 2L && !file.exists(.(flag))) {
    file.create(.(flag))
    Sys.sleep(60)
  }))
  t0 <- Sys.time()
  expect_identical(X %*% B, serial)
  expect_lt(as.numeric(Sys.time() - t0, units = "secs"), 30)
})

test_that("a block failing on every try ends in a classed error naming it; nothing partial is returned", {
  X <- fmalloc_bed_open(par_bed(seed = 5))
  withr::local_options(fmalloc.parallel = "mirai", fmalloc.parallel_block = 128, fmalloc.progress = FALSE,
                       fmalloc.parallel_retries = 1)
  local_daemons(2)
  inject(quote(if (task$block == 7L) stop("injected failure")))
  res <- NULL
  expect_error(res <- X %*% matrix(1, ncol(X), 1), class = "fm_error_eio",
               regexp = "block 7 of 16 \\(columns 769-896\\) failed 2 times on mirai daemons; last: .*injected failure")
  expect_null(res)
  withr::local_options(fmalloc.parallel_timeout = 3)
  inject(quote(if (task$block == 7L) Sys.sleep(60)))
  expect_error(fmalloc_pca(X, k = 2), class = "fm_error_eio", regexp = "block 7 of 16.*timed out")
})

test_that("an interrupt cancels the blocks still out", {
  skip_on_os("windows")
  X <- fmalloc_bed_open(par_bed(seed = 6))
  withr::local_options(fmalloc.parallel = "mirai", fmalloc.parallel_block = 128, fmalloc.progress = FALSE)
  local_daemons(2)
  # block 3 interrupts the driver (SIGINT) while it waits; every block
  # takes 2 s, so blocks are still out then
  inject(bquote({
    if (task$block == 3L) tools::pskill(.(Sys.getpid()), tools::SIGINT)
    Sys.sleep(2)
  }))
  cond <- tryCatch(X %*% matrix(1, ncol(X), 1), interrupt = identity)
  expect_s3_class(cond, "interrupt")
  t0 <- Sys.time()
  while (mirai::info()[["executing"]] > 0 && Sys.time() - t0 < 10) Sys.sleep(0.05)
  expect_identical(mirai::info()[["executing"]], 0L)
})

test_that("refusals: the option's values, a matrix daemons cannot open, the block options", {
  X <- fmalloc_bed_open(par_bed(seed = 7))
  withr::local_options(fmalloc.progress = FALSE)
  local_daemons(0)
  withr::with_options(list(fmalloc.parallel = "yes"),
                      expect_error(X %*% matrix(1, ncol(X), 1), class = "fm_error_earg", regexp = "fmalloc.parallel"))
  expect_error(fmalloc_pca(X, k = 2, parallel = "mpi"), class = "fm_error_earg", regexp = "parallel must be")
  withr::local_options(fmalloc.parallel = "mirai")
  # a matrix daemons cannot open is computed here, as without the option
  D <- fmalloc_dosage(matrix(c(0, 1, 2, 1.5), 2, 2))
  expect_identical(D %*% matrix(1, 2, 1), withr::with_options(list(fmalloc.parallel = NULL), D %*% matrix(1, 2, 1)))
  expect_false(grepl("mirai", fmalloc_last_backend())) # the record names what computed it
  # no columns: nothing to cut, as without the option
  X0 <- fmalloc_select(X, integer(0))
  expect_identical(fmalloc_colVars(X0), withr::with_options(list(fmalloc.parallel = NULL), fmalloc_colVars(X0)))
  expect_identical(dim(crossprod(X0, matrix(1, nrow(X), 1))), c(0L, 1L))
  # fm_parallel_apply's arguments
  none <- function(j, cols, r) NULL
  expect_error(fm_parallel_apply(X, identity, .slice = list(v = 1:3), .consume = none), class = "fm_error_earg",
               regexp = "\\.slice\\$v has 3 elements or rows, X 2000 columns")
  expect_error(fm_parallel_apply(X, identity, .slice = list(1:2000), .consume = none), class = "fm_error_earg",
               regexp = "named list")
  expect_error(fm_parallel_apply(X, identity, .span = function(cols) c(cols[1L] - 1, cols[length(cols)]), .consume = none),
               class = "fm_error_earg", regexp = "\\.span\\(columns 1-2000\\) must give two column numbers in 1..2000")
  withr::with_options(list(fmalloc.parallel_block = 0),
                      expect_error(X %*% matrix(1, ncol(X), 1), class = "fm_error_earg", regexp = "fmalloc.parallel_block"))
  for (o in c("timeout", "retries", "inflight")) { # checked with or without daemons
    withr::with_options(stats::setNames(list(-1), paste0("fmalloc.parallel_", o)),
                        expect_error(X %*% matrix(1, ncol(X), 1), class = "fm_error_earg", regexp = paste0("fmalloc.parallel_", o)))
  }
  expect_error(fmalloc_pca(X, k = 2, parallel = ""), class = "fm_error_earg", regexp = "not \"\"")
  withr::with_options(list(fmalloc.parallel = "x"),
                      expect_error(fmalloc_parallel_info(), class = "fm_error_earg", regexp = "fmalloc.parallel"))
})
