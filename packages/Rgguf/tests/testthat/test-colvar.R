# Column statistics of GGUF tensor views: Rfmalloc's fmalloc_colMeans and
# fmalloc_colVars stream any codec through panel decode when it has no path
# of its own. A view's columns are GGML's ne0 positions (an ne1 x ne0
# matrix), so they are the columns of gguf_tensor(..., as = "numeric").

zoo_types <- c("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0",
               "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")

test_that("colMeans/colVars of a view equal those of the dequantized matrix, for every type", {
  g <- gguf_open(quant_zoo())
  old <- Rfmalloc::fmalloc_panel_budget()
  on.exit(Rfmalloc::fmalloc_panel_budget(old), add = TRUE)
  for (ty in zoo_types) {
    name <- paste0("w.", ty)
    W <- gguf_tensor(g, name)
    Wd <- gguf_tensor(g, name, "numeric")
    v <- Rfmalloc::fmalloc_colVars(W)
    m <- Rfmalloc::fmalloc_colMeans(W)
    expect_length(v, 256L)
    # the same two-pass over the same doubles: identical to dense storage
    expect_identical(v, Rfmalloc::fmalloc_colVars(Wd), label = ty)
    expect_identical(m, Rfmalloc::fmalloc_colMeans(Wd), label = ty)
    # and base R within rounding
    expect_equal(v, apply(Wd, 2, var), tolerance = 1e-12)
    expect_equal(m, colMeans(Wd), tolerance = 1e-12)
    # panel shape changes nothing: one double per panel, then row tiles of 5
    for (budget in c(8, 8 * 5 * 8)) {
      Rfmalloc::fmalloc_panel_budget(budget)
      expect_identical(Rfmalloc::fmalloc_colVars(W), v, label = paste(ty, budget))
    }
    Rfmalloc::fmalloc_panel_budget(0)
  }
  # a column subset of a view, and a transformed view
  W <- gguf_tensor(g, "w.Q5_1")
  Wd <- gguf_tensor(g, "w.Q5_1", "numeric")
  cols <- c(256, 1, 33, 33, 100)
  expect_identical(Rfmalloc::fmalloc_colVars(Rfmalloc::fmalloc_select(W, cols)),
                   Rfmalloc::fmalloc_colVars(Wd[, cols]))
  S <- Rfmalloc::fmalloc_standardize(W, scale = "sd") # its statistics come from colVars too
  expect_equal(Rfmalloc::fmalloc_colVars(S), rep(1, 256), tolerance = 1e-12)
  expect_equal(Rfmalloc::fmalloc_colMeans(S), rep(0, 256), tolerance = 1e-12)
})

test_that("a stacked 3-D view and a one-row 1-D view", {
  v <- c(1, 5, 2, 8, -3, 4, 0, 7, 9, 1, 2, 6) # GGML (i0, i1, i2), ne = c(3, 2, 2)
  f <- write_gguf(gguf_bytes(list(), list(
    gguf_tensor_spec("t3", c(3, 2, 2), 0, writeBin(v, raw(), size = 4)),
    gguf_tensor_spec("t1", 4, 0, writeBin(c(1, 2, 3, 4), raw(), size = 4)))))
  g <- gguf_open(f)
  V <- gguf_tensor(g, "t3") # 4 x 3, rows = GGML rows of both planes
  dense <- matrix(v, 4, 3, byrow = TRUE)
  expect_identical(Rfmalloc::fmalloc_colMeans(V), colMeans(dense))
  expect_equal(Rfmalloc::fmalloc_colVars(V), apply(dense, 2, var), tolerance = 1e-14)
  V1 <- gguf_tensor(g, "t1") # one row: variance undefined
  expect_identical(Rfmalloc::fmalloc_colMeans(V1), c(1, 2, 3, 4))
  expect_true(all(is.na(Rfmalloc::fmalloc_colVars(V1))))
  expect_identical(Rfmalloc::fmalloc_colVars(V1), Rfmalloc::fmalloc_colVars(matrix(c(1, 2, 3, 4), 1)))
})
