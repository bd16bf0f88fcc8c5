# Progress bars and interrupts of long reads. The reads here are short, so
# cli's update throttle is lifted (cli:::cli_with_ticks: every update is
# due, the bar shows at once) and blocks are small; interrupts are real
# SIGINTs sent to this process from a calling handler on a progress update.

open_fds <- function() {
  if (!dir.exists("/proc/self/fd")) return(NA_integer_)
  length(list.files("/proc/self/fd"))
}

runtime_use <- function(rt) {
  invisible(gc())
  unlist(Rfmalloc::fmalloc_info(rt)[c("used_bytes", "n_blocks")])
}

sigint_self <- function() tools::pskill(Sys.getpid(), tools::SIGINT)

test_that("a read shows a cli progress bar, updated once per block", {
  rt <- new_runtime()
  f <- fixture_path("genotypes", "ceu_exon", "ceu_exon_bi.bed") # 90 samples x 1346 variants
  r <- with_every_tick(collect_updates(rpgen_read(f, runtime = rt, block_records = 100)))
  # one update per block (records 0, 100, ..., 1300) and one at the end
  expect_length(r$updates, 15L)
  expect_match(r$updates[1], "^Reading ceu_exon_bi\\.bed .* 0% \\| ETA")
  expect_match(r$updates[2], "^Reading ceu_exon_bi\\.bed .* 7% \\| ETA")
  expect_match(r$updates[15], "^Reading ceu_exon_bi\\.bed .* 100% \\| ETA")
  expect_equal(dim(r$value), c(90L, 1346L))
  # without the lifted throttle a short read shows no bar (cli.progress_show_after)
  op <- options(cli.progress_show_after = 3600)
  quiet <- collect_updates(rpgen_read(f, runtime = rt))
  options(op)
  expect_length(quiet$updates, 0L)
})

test_that("an interrupt stops the read within a block; nothing leaks and the runtime goes on", {
  skip_on_os("windows")
  rt <- new_runtime()
  f <- fixture_path("genotypes", "ceu_exon", "ceu_exon_bi.bed")
  full <- Rfmalloc::as.matrix(rpgen_read(f, runtime = rt))
  before <- runtime_use(rt)
  fds <- open_fds()
  after_signal <- 0
  cond <- with_every_tick(tryCatch(
    collect_updates(rpgen_read(f, runtime = rt, block_records = 100), function(n) {
      if (n == 3) sigint_self() else if (n > 3) after_signal <<- after_signal + 1
    }),
    interrupt = function(e) e))
  expect_s3_class(cond, "interrupt")
  expect_equal(after_signal, 0) # no block was reported after the interrupt
  expect_equal(open_fds(), fds) # the reader's file is closed
  expect_equal(runtime_use(rt), before) # the partial destination is freed
  # R and the runtime carry on: the same read succeeds and is complete
  again <- rpgen_read(f, runtime = rt, block_records = 100)
  expect_identical(Rfmalloc::as.matrix(again), full)
})

test_that("an interrupt during the ID pass and during a VCF read is honoured too", {
  skip_on_os("windows")
  rt <- new_runtime()
  bed <- kg("1kg_bi.bed")
  before <- runtime_use(rt)
  fds <- open_fds()
  cond <- with_every_tick(tryCatch(
    collect_updates(rpgen_read(bed, runtime = rt, variants = c("1:985900:C:T", "22:16145159:G:A")),
                    function(n) if (n == 2) sigint_self()),
    interrupt = function(e) e))
  expect_s3_class(cond, "interrupt")
  vcf <- fixture_path("genotypes", "ceu_exon", "ceu_exon.vcf.gz")
  cond <- with_every_tick(tryCatch(
    collect_updates(rpgen_read(vcf, runtime = rt, block_records = 50),
                    function(n) if (n == 4) sigint_self()),
    interrupt = function(e) e))
  expect_s3_class(cond, "interrupt")
  expect_equal(open_fds(), fds)
  expect_equal(runtime_use(rt), before)
  X <- rpgen_read(vcf, runtime = rt, variants = c("rs1320571", "rs2760320"))
  expect_equal(colnames(X), c("rs1320571", "rs2760320"))
})

test_that("an error raised by a progress handler reaches the caller after cleanup", {
  rt <- new_runtime()
  f <- fixture_path("genotypes", "ceu_exon", "ceu_exon_bi.bed")
  before <- runtime_use(rt)
  fds <- open_fds()
  expect_error(with_every_tick(collect_updates(rpgen_read(f, runtime = rt, block_records = 100),
                                               function(n) if (n == 2) stop("stop at update 2"))),
               "stop at update 2")
  # a restart invoked from a handler unwinds the read the same way
  got <- with_every_tick(withRestarts(
    collect_updates(rpgen_read(f, runtime = rt, block_records = 100),
                    function(n) if (n == 5) invokeRestart("give_up", n)),
    give_up = function(n) paste("gave up at update", n)))
  expect_equal(got, "gave up at update 5")
  expect_equal(open_fds(), fds)
  expect_equal(runtime_use(rt), before)
  expect_equal(dim(rpgen_read(f, runtime = rt)), c(90L, 1346L))
})

test_that("an empty read completes with its progress bar shown (0 of 0 records)", {
  rt <- new_runtime()
  vcf <- fixture_path("genotypes", "ceu_exon", "ceu_exon.vcf.gz")
  # a contig absent from the index: no records; the bar is updated at 0 of 0
  # and at the end, which must not end it early and fail the next update
  # (the absent contig's warning is test-errors.R's)
  r <- withCallingHandlers(
    with_every_tick(collect_updates(rpgen_read(vcf, runtime = rt, region = "nochr"))),
    rpgen_warning_region = function(w) invokeRestart("muffleWarning"))
  expect_equal(dim(r$value), c(90L, 0L))
  expect_true(length(r$updates) >= 1)
  r <- with_every_tick(collect_updates(rpgen_read(vcf, runtime = rt, variants = integer())))
  expect_equal(dim(r$value), c(90L, 0L))
})
