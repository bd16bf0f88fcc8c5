# GGUF tensor views as DelayedArrays (Rfmalloc::fmalloc_as_DelayedArray):
# blocks decode through GGML a block at a time and equal the whole tensor
# decoded at once; blockApply column sums equal the view's colSums().

test_that("a GGUF tensor view is a DelayedMatrix whose blocks equal the decoded tensor", {
  if (!requireNamespace("DelayedArray", quietly = TRUE)) {
    skip("DelayedArray is not installed (Bioconductor; Debian package r-bioc-delayedarray)")
  }
  g <- gguf_open(quant_zoo())
  old <- DelayedArray::getAutoBlockSize()
  withr::defer(suppressMessages(DelayedArray::setAutoBlockSize(old)))
  set.seed(8)
  for (ty in c("F16", "Q4_0", "Q8_0")) {
    name <- paste0("w.", ty)
    W <- gguf_tensor(g, name)
    whole <- gguf_tensor(g, name, "numeric")
    D <- Rfmalloc::fmalloc_as_DelayedArray(W)
    expect_s4_class(D, "DelayedMatrix")
    expect_identical(dim(D), dim(W))
    expect_identical(DelayedArray::type(D), "double")
    i <- sample(nrow(W), 5)
    j <- sample(ncol(W), 3)
    block <- DelayedArray::extract_array(DelayedArray::seed(D), list(i, j))
    expect_identical(block, unname(whole[i, j, drop = FALSE]), info = ty)
    suppressMessages(DelayedArray::setAutoBlockSize(8 * nrow(W) * 3)) # 3 columns per block
    sums <- unlist(DelayedArray::blockApply(D, colSums, grid = DelayedArray::colAutoGrid(D)))
    expect_equal(unname(sums), unname(colSums(W)), info = ty)
    expect_equal(unname(sums), unname(colSums(whole)), info = ty)
  }
})
