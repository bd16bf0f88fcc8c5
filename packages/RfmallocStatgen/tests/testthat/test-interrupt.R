# The progress bar over variant blocks, and interrupts: a real SIGINT sent
# to this process from a handler of a progress update stops the pass within
# a block; the same call then runs to the same result. cli's update throttle
# is lifted (cli:::cli_with_ticks) and blocks are made small.

# Blocks of `cols` variants on the hardcall (code-counting) path of linear
# fits, and of 1 variant on the decoding path of logistic ones: the panel
# budget counts a quarter byte per sample and variant on the first, 8 bytes
# on the second.
small_blocks <- function(n_rows, cols, env = parent.frame()) {
  old <- Rfmalloc::fmalloc_panel_budget()
  Rfmalloc::fmalloc_panel_budget(n_rows * cols / 4)
  withr::defer(Rfmalloc::fmalloc_panel_budget(old), envir = env)
}

sim <- function(n = 200, p = 120) {
  set.seed(11)
  g <- matrix(rbinom(n * p, 2, 0.3), n, p)
  list(g = g, y = rnorm(n) + 0.2 * g[, 3], b = rbinom(n, 1, 0.4))
}

test_that("a GWAS shows a progress bar updated once per block of variants", {
  s <- sim()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime())
  small_blocks(nrow(s$g), 30)
  r <- with_every_tick(collect_updates(statgen_gwas(X, s$y)))
  expect_gte(length(r$updates), 4)
  expect_match(r$updates[length(r$updates)], "statgen_gwas: linear regression .*100%")
  expect_equal(nrow(r$value), ncol(s$g))
})

test_that("an interrupt stops the pass within a block; the next call gives the full result", {
  skip_on_os("windows")
  s <- sim()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime())
  full <- suppressMessages(statgen_gwas(X, s$b, family = "logistic", firth = "always"))
  small_blocks(nrow(s$g), 10)
  after <- 0
  cond <- with_every_tick(tryCatch(
    collect_updates(statgen_gwas(X, s$b, family = "logistic", firth = "always"), function(n) {
      if (n == 3) tools::pskill(Sys.getpid(), tools::SIGINT) else if (n > 3) after <<- after + 1
    }),
    interrupt = function(e) e))
  expect_s3_class(cond, "interrupt")
  expect_s3_class(cond, "fm_error_ecancelled")
  expect_equal(after, 0)
  again <- suppressMessages(statgen_gwas(X, s$b, family = "logistic", firth = "always"))
  expect_identical(again$OR, full$OR)
})

test_that("an error raised by a progress handler reaches the caller", {
  s <- sim()
  X <- Rfmalloc::fmalloc_bed(s$g, new_runtime())
  small_blocks(nrow(s$g), 10)
  expect_error(with_every_tick(collect_updates(statgen_gwas(X, s$y),
                                               function(n) if (n == 2) stop("stop at update 2"))),
               "stop at update 2")
  expect_equal(nrow(statgen_gwas(X, s$y)), ncol(s$g))
})
