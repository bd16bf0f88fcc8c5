# One thread count and one panel budget for the whole stack: set once (the
# options fmalloc.threads and fmalloc.panel_bytes, through fmalloc_threads()
# and fmalloc_panel_budget()), they reach the control block of a core call
# made by each package: a Rpgen read, a Rgguf GGML product, an Rllm
# generation. fmalloc_backend_info()$last_call reports the settings of the
# last control block made by any package; the generation also reports the
# thread count its evaluations ran with.

suppressPackageStartupMessages({
  library(Rfmalloc)
  library(Rpgen)
  library(Rgguf)
  library(Rllm)
})

expect_last_call <- function(threads, panel_bytes) {
  lc <- fmalloc_backend_info()$last_call
  expect_identical(lc$threads, as.integer(threads))
  expect_identical(lc$panel_bytes, as.double(panel_bytes))
}

test_that("the thread count and panel budget set once reach Rpgen, Rgguf and Rllm calls", {
  zoo <- fixture("gguf", "derived", "quant-zoo-stories260K.gguf")
  stories <- fixture("gguf", "stories260K.gguf")
  old <- options(fmalloc.threads = NULL, fmalloc.panel_bytes = NULL)
  on.exit(options(old), add = TRUE)
  d <- withr::local_tempdir()
  rt <- open_fmalloc(file.path(d, "rt.fm"), 0.05, "scratch")
  on.exit(cleanup_fmalloc(rt), add = TRUE)
  # generated: two samples, two variants
  writeLines(c("1 rs1 0 100", "1 rs2 0 200"), file.path(d, "t.map"))
  writeLines(c("F1 I1 0 0 1 -9 A A C G", "F2 I2 0 0 2 -9 A G G G"), file.path(d, "t.ped"))
  g <- gguf_open(zoo)
  W <- gguf_tensor(g, "w.Q4_K")
  X <- cbind(t(gguf_tensor(g, "x", "numeric")))
  m <- rllm_gguf_model(stories) # no count of its own: follows the stack's
  ids <- c(1L, 403L, 407L)

  for (s in list(c(3, 4096), c(1, 65536))) {
    expect_identical(fmalloc_threads(s[1]), as.integer(s[1]))
    expect_identical(fmalloc_panel_budget(s[2]), s[2])

    x <- rpgen_read(file.path(d, "t.ped"), runtime = rt)
    expect_identical(dim(x), c(2L, 2L))
    expect_last_call(s[1], s[2])

    y <- W %*% X
    expect_identical(fmalloc_last_backend(), "ggml")
    expect_last_call(s[1], s[2])
    expect_identical(gguf_threads(), as.integer(s[1]))

    r <- rllm_generate(m, ids, n_new = 4, temperature = 0)
    expect_identical(r$timings$threads, as.integer(s[1]))
    expect_last_call(s[1], s[2])
    expect_identical(rllm_threads(), as.integer(s[1]))
  }
  # the default again, for everything
  fmalloc_threads(0)
  fmalloc_panel_budget(0)
  r <- rllm_generate(m, ids, n_new = 2, temperature = 0)
  expect_identical(r$timings$threads, fmalloc_threads())
  expect_last_call(fmalloc_threads(), 64 * 2^20)
})

test_that("an unusable setting raises in every package's call, naming the option", {
  old <- options(fmalloc.threads = "many")
  on.exit(options(old), add = TRUE)
  expect_error(fmalloc_threads(), "option fmalloc.threads", class = "fm_error_earg")
  d <- withr::local_tempdir()
  writeLines(c("1 rs1 0 100"), file.path(d, "t.map"))
  writeLines(c("F1 I1 0 0 1 -9 A A"), file.path(d, "t.ped"))
  options(fmalloc.threads = NULL)
  rt <- open_fmalloc(file.path(d, "rt.fm"), 0.01, "scratch")
  on.exit(cleanup_fmalloc(rt), add = TRUE)
  options(fmalloc.panel_bytes = -1)
  expect_error(rpgen_read(file.path(d, "t.ped"), runtime = rt), "option fmalloc.panel_bytes",
               class = "fm_error_earg")
})
