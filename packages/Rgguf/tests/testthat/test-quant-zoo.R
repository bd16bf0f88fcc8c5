# The quant-zoo fixture: one 128 x 256 tensor (GGML ne0 = 256, ne1 = 128) of
# each of 13 types, all quantized by GGML from the same real weights, and an
# F32 input x (ne0 = 256, ne1 = 4).

zoo_types <- c("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0",
               "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")

# Decode X panel by panel on a grid of row and column cuts that cross block
# boundaries (blocks are 32 or 256 values along a row), through Rfmalloc's
# panel decode (X[i, j]: fm_panel_gather -> fm_panel_decode -> the GGUF
# codec's decoder).
decode_tiled <- function(X, row_step, col_step) {
  d <- dim(X)
  out <- matrix(NA_real_, d[1], d[2])
  for (r0 in seq(0, d[1] - 1, by = row_step)) {
    nr <- min(row_step, d[1] - r0)
    for (c0 in seq(0, d[2] - 1, by = col_step)) {
      nc <- min(col_step, d[2] - c0)
      out[r0 + seq_len(nr), c0 + seq_len(nc)] <- X[r0 + seq_len(nr), c0 + seq_len(nc), drop = FALSE]
    }
  }
  out
}

test_that("every type: panel decode equals GGML's whole-tensor to_float bit for bit", {
  g <- gguf_open(quant_zoo())
  d <- gguf_tensors(g)
  expect_identical(d$name, c(paste0("w.", zoo_types), "x"))
  old <- Rfmalloc::fmalloc_panel_budget()
  on.exit(Rfmalloc::fmalloc_panel_budget(old), add = TRUE)
  for (ty in zoo_types) {
    W <- gguf_tensor(g, paste0("w.", ty))
    expect_identical(dim(W), c(128L, 256L))
    whole <- gguf_tensor(g, paste0("w.", ty), "numeric") # one to_float call
    expect_identical(dim(whole), c(128L, 256L))
    expect_true(all(is.finite(whole)))
    for (step in list(c(128, 256), c(37, 45), c(1, 7), c(128, 1), c(5, 300))) {
      expect_identical(decode_tiled(W, step[1], step[2]), whole, label = paste(ty, toString(step)))
    }
    # R-level access with the budget forced to one column per decode
    Rfmalloc::fmalloc_panel_budget(8)
    expect_identical(as.matrix(W), whole, label = ty)
    expect_identical(W[c(3, 1, 128), c(256, 1, 33, 32)], whole[c(3, 1, 128), c(256, 1, 33, 32)])
    expect_identical(as.matrix(Rfmalloc::fmalloc_select(W, c(200, 2, 3, 4, 199))),
                     whole[, c(200, 2, 3, 4, 199)])
    Rfmalloc::fmalloc_panel_budget(0)
  }
  # the quantized types really are approximations of the F32 weights
  f32 <- gguf_tensor(g, "w.F32", "numeric")
  err <- vapply(zoo_types, function(ty) max(abs(gguf_tensor(g, paste0("w.", ty), "numeric") - f32)), 0)
  expect_identical(err[["F32"]], 0)
  expect_true(all(err[-1] > 0))
  expect_true(err[["Q8_0"]] < err[["Q4_0"]] && err[["Q6_K"]] < err[["Q2_K"]])
})

# Bound on |x - q(x)| for each element of x (ne0 x k, columns = GGML rows)
# when GGML quantizes it to `vdt`, from the vec_dot type's definition:
#   q8_0 / q8_1: blocks of 32 along a column, d = max|x|/127 stored as f16,
#                q = round(x / d): |x - q d16| <= d/2 + 127 |d - d16|
#                <= d (1/2 + 127 * 2^-11), plus 1e-4 d for 1/d in float;
#   q8_K:        blocks of 256, d = max|x|/127 in f32: <= d/2 (+1e-4 d);
#   f16: |x| 2^-11 (round to nearest, normal range); bf16: |x| 2^-8; f32: 0.
act_error <- function(x, vdt) {
  blk <- switch(vdt, q8_0 = 32, q8_1 = 32, q8_K = 256, 1)
  if (blk == 1) {
    rel <- switch(vdt, f32 = 0, f16 = 2^-11, bf16 = 2^-8)
    return(abs(x) * rel + if (vdt == "f16") 2^-24 else 0)
  }
  e <- x
  for (j in seq_len(ncol(x))) {
    for (b0 in seq(1, nrow(x), by = blk)) {
      ix <- b0:(b0 + blk - 1)
      d <- max(abs(x[ix, j])) / 127
      e[ix, j] <- d * (if (vdt == "q8_K") 0.5 + 1e-4 else 0.5 + 127 * 2^-11 + 1e-4)
    }
  }
  e
}

# For the q8_1 types (q4_1, q5_1) GGML adds m_w * s_x per block, where s_x is
# d * sum(q) rounded to f16: off by at most 2^-10 of the block's sum|x| (as
# d sum|q| <= sum|x| + 16 d), times |m_w| <= the block's max|w| (the block's
# minimum decodes to m_w).
block_min_term <- function(W, x, blk = 32) {
  out <- matrix(0, nrow(W), ncol(x))
  for (b0 in seq(1, ncol(W), by = blk)) {
    ix <- b0:(b0 + blk - 1)
    mw <- apply(abs(W[, ix, drop = FALSE]), 1, max)
    sx <- colSums(abs(x[ix, , drop = FALSE])) + 16 * apply(abs(x[ix, , drop = FALSE]), 2, max) / 127
    out <- out + outer(mw, sx) * 2^-10
  }
  out
}

test_that("every type: W %*% x through the GGML backend agrees with decode-then-BLAS within the quantization error of x", {
  g <- gguf_open(quant_zoo())
  x <- t(gguf_tensor(g, "x", "numeric")) # 256 x 4: four columns of ne0 values
  expect_identical(dim(x), c(256L, 4L))
  on.exit(Rgguf:::.gguf_backend(TRUE), add = TRUE)
  expected_vdt <- c(F32 = "f32", F16 = "f16", BF16 = "bf16", Q4_0 = "q8_0", Q4_1 = "q8_1",
                    Q5_0 = "q8_0", Q5_1 = "q8_1", Q8_0 = "q8_0", Q2_K = "q8_K", Q3_K = "q8_K",
                    Q4_K = "q8_K", Q5_K = "q8_K", Q6_K = "q8_K")
  d <- gguf_tensors(g)
  worst <- c()
  for (ty in zoo_types) {
    name <- paste0("w.", ty)
    vdt <- Rgguf:::.gguf_vec_dot_type(d$type_id[d$name == name])
    expect_identical(vdt, expected_vdt[[ty]])
    W <- gguf_tensor(g, name)
    Wd <- gguf_tensor(g, name, "numeric")
    Rgguf:::.gguf_backend(TRUE)
    y <- W %*% x
    expect_identical(Rfmalloc::fmalloc_last_backend(), "ggml")
    Rgguf:::.gguf_backend(FALSE) # force the reference path: decode panels + dgemm
    y_ref <- W %*% x
    expect_identical(Rfmalloc::fmalloc_last_backend(), "reference")
    # two double-precision orders of 256-term sums (dgemm vs base R's BLAS):
    # within 2 gamma_256 sum_l |w_il x_l| (Higham 2002, section 3.1)
    expect_true(all(abs(y_ref - Wd %*% x) <= 2 * 256 * 2^-53 / (1 - 256 * 2^-53) * abs(Wd) %*% abs(x)),
                label = paste(name, "reference path vs base R"))
    # tolerance: sum_l |w_il| e_l, the f16 min term of the q8_1 types, and
    # 2^-16 sum_l |w_il x_l| for single-precision accumulation (256 terms)
    tol <- abs(Wd) %*% act_error(x, vdt) + 2^-16 * abs(Wd) %*% abs(x)
    if (vdt == "q8_1") tol <- tol + block_min_term(Wd, x)
    expect_true(all(abs(y - y_ref) <= tol), label = ty)
    worst[ty] <- max(abs(y - y_ref) / tol)
    # a quantized activation really changes the result (the test has teeth)
    if (vdt %in% c("q8_0", "q8_1", "q8_K")) expect_true(max(abs(y - y_ref)) > 1e-6)
  }
  expect_true(all(worst <= 1))
})

test_that("the GGML backend declines what it cannot do, and the reference path computes it", {
  g <- gguf_open(quant_zoo())
  x <- t(gguf_tensor(g, "x", "numeric"))
  W <- gguf_tensor(g, "w.Q4_0")
  Wd <- gguf_tensor(g, "w.Q4_0", "numeric")
  # a column subset
  y <- Rfmalloc::fmalloc_select(W, 256:1) %*% x[256:1, ]
  expect_identical(Rfmalloc::fmalloc_last_backend(), "reference")
  expect_equal(y, Wd %*% x, tolerance = 1e-12)
  # t(W) %*% b and crossprod
  b <- matrix(seq_len(128 * 2) / 100, 128, 2)
  expect_equal(crossprod(W, b), crossprod(Wd, b), tolerance = 1e-12)
  expect_identical(Rfmalloc::fmalloc_last_backend(), "reference")
  # NA in the operand propagates as in base R
  x2 <- x
  x2[3, 2] <- NA
  y2 <- W %*% x2
  expect_identical(Rfmalloc::fmalloc_last_backend(), "reference")
  expect_true(all(is.na(y2[, 2])))
  expect_equal(y2[, -2], (Wd %*% x)[, -2], tolerance = 1e-12)
  # a vector operand is one column; the result keeps GGML's row order
  v <- W %*% x[, 1]
  expect_identical(Rfmalloc::fmalloc_last_backend(), "ggml")
  expect_identical(dim(v), c(128L, 1L))
  expect_identical(v[, 1], (W %*% x)[, 1])
  expect_error(W %*% x[-1, ], class = "fm_error_emismatch")
})

test_that("the backend's result does not depend on the thread count", {
  g <- gguf_open(quant_zoo())
  x <- t(gguf_tensor(g, "x", "numeric"))
  old <- gguf_threads()
  on.exit(gguf_threads(old), add = TRUE)
  for (ty in c("Q4_K", "Q8_0", "F16")) {
    W <- gguf_tensor(g, paste0("w.", ty))
    gguf_threads(1)
    y1 <- W %*% x
    gguf_threads(2)
    y2 <- W %*% x
    expect_identical(Rfmalloc::fmalloc_last_backend(), "ggml")
    expect_identical(y1, y2)
  }
  expect_identical(gguf_threads(), 2L)
})
