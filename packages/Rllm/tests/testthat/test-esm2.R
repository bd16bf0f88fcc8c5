# ESM-2 as a program (R/programs_esm2.R) on a random-weight file of the 8M
# topology (inst/arch/esm2_gguf.R): rllm_execute() against an independent
# PyTorch forward built from torch primitives (tools/esm2_torch.py, in
# float64, one padded batch), when Debian's python3-torch is there.

source(system.file("arch", "esm2_gguf.R", package = "Rllm", mustWork = TRUE), local = TRUE)

esm2_file <- function(...) {
  f <- tempfile(fileext = ".gguf")
  esm2_gguf_write(f, ...)
  f
}

# Two sequences of different lengths (so the batch is padded), one with a
# <mask> (token dropout rescales by the mask fraction).
esm2_test_tokens <- function() {
  a <- esm2_gguf_alphabet()
  enc <- function(s) c(0L, match(strsplit(s, "")[[1]], a) - 1L, 2L)
  x <- enc("MKTAYIAKQRQISFVKSHFSRQLEERLGLIEV")
  y <- enc("GSHMALLAXCW")
  y[5L] <- 32L
  list(x, y)
}

torch_python <- function() {
  py <- Sys.getenv("RLLM_PYTHON", "/usr/bin/python3")
  ok <- file.exists(py) && system2(py, c("-c", shQuote("import torch")), stdout = FALSE, stderr = FALSE) == 0
  if (!ok) skip(paste(py, "has no torch (Debian's python3-torch; make bench installs it)"))
  root <- oracle_repo_root()
  if (is.null(root)) skip("tools/esm2_torch.py: tests run outside the repository")
  script <- file.path(root, "tools", "esm2_torch.py")
  c(py, script)
}

# The torch forward of the sequences in one padded batch: per sequence,
# list(logits [33, L], repr (list, layers 0..n), attention [L, L, layers x
# heads] as the program's pair maps [key, query, channel], contacts).
esm2_torch <- function(path, toks, n_layer, n_head) {
  cmd <- torch_python()
  dir <- tempfile("esm2-torch")
  dir.create(dir)
  on.exit(unlink(dir, recursive = TRUE))
  tf <- file.path(dir, "tokens.txt")
  writeLines(vapply(toks, paste, "", collapse = " "), tf)
  status <- system2(cmd[1L], c(cmd[2L], path, tf, dir))
  if (status != 0) stop("tools/esm2_torch.py failed (status ", status, ")")
  lapply(seq_along(toks), function(b) {
    rd <- function(f) unname(as.matrix(utils::read.table(file.path(dir, sprintf("s%d_%s.txt", b, f)))))
    L <- length(toks[[b]])
    a <- rd("attn") # [layer, head, query] rows x key columns
    maps <- array(0, c(L, L, n_layer * n_head))
    for (c in seq_len(n_layer * n_head)) maps[, , c] <- t(a[(c - 1L) * L + seq_len(L), ])
    list(logits = t(rd("logits")), repr = lapply(0:n_layer, function(l) t(rd(paste0("repr", l)))),
         attention = maps, contacts = rd("contacts"))
  })
}

test_that("the ESM-2 program: rllm_execute = an independent torch forward (8M topology, padded batch)", {
  path <- esm2_file()
  on.exit(unlink(path))
  toks <- esm2_test_tokens()
  want <- esm2_torch(path, toks, 6L, 20L)
  prog <- Rllm:::.rllm_program_esm2()
  for (b in seq_along(toks)) {
    got <- rllm_execute(prog, path, list(tokens = toks[[b]]), taps = TRUE)
    w <- want[[b]]
    # both in doubles; the text files carry 10 significant digits
    expect_lt(max(abs(got$logits - w$logits)), 1e-7)
    expect_lt(max(abs(got$taps$embed[[1L]] - w$repr[[1L]])), 1e-8)
    for (l in 1:5) expect_lt(max(abs(got$taps$repr[[l]] - w$repr[[l + 1L]])), 1e-8)
    expect_lt(max(abs(got$representations - w$repr[[7L]])), 1e-8)
    expect_identical(dim(got$attention), dim(w$attention))
    expect_lt(max(abs(got$attention - w$attention)), 1e-9)
    expect_identical(dim(got$contacts), c(length(toks[[b]]) - 2L, length(toks[[b]]) - 2L))
    expect_lt(max(abs(got$contacts - w$contacts)), 1e-9)
  }
})

test_that("the ESM-2 contact head is the formula applied to the attention maps", {
  path <- esm2_file(n_layer = 2L, n_embd = 32L, n_head = 4L, n_ff = 64L)
  on.exit(unlink(path))
  ids <- esm2_test_tokens()[[2L]]
  got <- rllm_execute(Rllm:::.rllm_program_esm2(), path, list(tokens = ids))
  wt <- Rllm:::.rllm_weights(path)
  w <- wt$get("contact.weight")
  b <- wt$get("contact.bias")
  n <- length(ids)
  logit <- b
  for (c in seq_len(8L)) {
    m <- got$attention[2:(n - 1L), 2:(n - 1L), c]
    m <- m + t(m)
    m <- m - outer(rowSums(m), colSums(m)) / sum(m)
    logit <- logit + w[c] * m
  }
  expect_equal(got$contacts, 1 / (1 + exp(-logit)), tolerance = 1e-12)
  # each query's attention sums to 1
  expect_equal(apply(got$attention, c(2L, 3L), sum), matrix(1, n, 8L), tolerance = 1e-12)
})

test_that("the ESM-2 program round-trips and names what a file lacks", {
  prog <- rllm_freeze(Rllm:::.rllm_program_esm2())
  expect_identical(rllm_program_from_json(rllm_program_json(prog)), prog)
  path <- esm2_file(n_layer = 2L, n_embd = 32L, n_head = 4L, n_ff = 64L, drop = "blk.1.attn_k.bias")
  on.exit(unlink(path))
  expect_error(rllm_validate(prog, path), "blk.1.attn_k.bias", class = "rllm_error_program")
})
