# In a child made by fork() (parallel::mclapply) the GGML backend runs on one
# thread: GNU OpenMP's pool does not survive fork, and once the parent has
# run a multi-threaded GGML call, a multi-threaded one in the child would
# never return. The child's product equals the parent's.

test_that("W %*% x in forked children equals the parent's, on one thread there", {
  skip_if_no_fork()
  g <- gguf_open(quant_zoo())
  W <- gguf_tensor(g, "w.Q4_K")
  x <- t(gguf_tensor(g, "x", "numeric"))
  X <- cbind(x, x * 0.5, -x)
  old <- gguf_threads()
  on.exit(gguf_threads(old), add = TRUE)
  gguf_threads(2)
  a <- W %*% X # a multi-threaded GGML call in the parent first
  expect_identical(Rfmalloc::fmalloc_last_backend(), "ggml")
  child <- function(i) {
    list(threads = gguf_threads(), set = gguf_threads(4), y = W %*% X,
         backend = Rfmalloc::fmalloc_last_backend())
  }
  # children that hang are killed after 120 s (the test then fails)
  res <- fork_children(child, n = 2, timeout = 120)
  expect_children_returned(res)
  for (r in child_values(res)) {
    expect_identical(r$threads, 1L)
    expect_identical(r$set, 1L)
    expect_identical(r$backend, "ggml")
    expect_identical(r$y, a)
  }
  expect_identical(gguf_threads(), 2L) # the parent keeps its setting
  # mclapply itself (which would wait for ever on a hung child)
  if (!children_hung(res)) {
    r <- parallel::mclapply(1:2, function(i) identical(W %*% X, a), mc.cores = 2)
    expect_identical(unlist(r), c(TRUE, TRUE))
  }
})
