# ESM-2 as a program (R/programs_esm2.R) on random-weight files of the 8M
# topology (inst/arch/esm2_gguf.R): the native lowering (rllm_run,
# rllm_esm) against rllm_execute(), and both against an independent
# PyTorch forward built from torch primitives (tools/esm2_torch.py, in
# float64, one padded batch), when Debian's python3-torch is there.
#
# Tolerance of the native (F32) values: each product accumulates up to
# n_ff = 1,280 F32 terms (GGML's order), a relative error of at most
# 1,280 u = 7.6e-5 of the sum of magnitudes and typically sqrt(1,280) u
# = 2e-6; layer norms renormalize, so errors add over the 7 products in
# depth rather than compound: 1e-4 of an output's scale (max |value|, at
# least 1) lies between the typical and the worst case, and is the
# issue's bound for the probabilities (attention maps, contacts).
native_tol <- function(want) 1e-4 * max(1, max(abs(want)))

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
# heads] as the program's pair maps [key, query, channel], contacts); L the
# sequence's length, or (padded) the batch's.
esm2_torch <- function(path, toks, n_layer, n_head, padded = FALSE) {
  cmd <- torch_python()
  dir <- tempfile("esm2-torch")
  dir.create(dir)
  on.exit(unlink(dir, recursive = TRUE))
  tf <- file.path(dir, "tokens.txt")
  writeLines(vapply(toks, paste, "", collapse = " "), tf)
  status <- system2(cmd[1L], c(cmd[2L], path, tf, dir, if (padded) "padded"))
  if (status != 0) stop("tools/esm2_torch.py failed (status ", status, ")")
  lapply(seq_along(toks), function(b) {
    rd <- function(f) unname(as.matrix(utils::read.table(file.path(dir, sprintf("s%d_%s.txt", b, f)))))
    L <- if (padded) max(lengths(toks)) else length(toks[[b]])
    a <- rd("attn") # [layer, head, query] rows x key columns
    maps <- array(0, c(L, L, n_layer * n_head))
    for (c in seq_len(n_layer * n_head)) maps[, , c] <- t(a[(c - 1L) * L + seq_len(L), ])
    list(logits = t(rd("logits")), repr = lapply(0:n_layer, function(l) t(rd(paste0("repr", l)))),
         attention = maps, contacts = array(rd("contacts"), c(L - 2L, L - 2L, 1L)))
  })
}

test_that("ESM-2: rllm_execute and the native lowering = an independent torch forward (8M topology, padded batch)", {
  path <- esm2_file()
  on.exit(unlink(path))
  toks <- esm2_test_tokens()
  want <- esm2_torch(path, toks, 6L, 20L)
  prog <- Rllm:::.rllm_program_esm2()
  m <- test_model(path, threads = 1)
  for (b in seq_along(toks)) {
    got <- rllm_execute(prog, path, list(tokens = toks[[b]]), taps = TRUE)
    w <- want[[b]]
    nat <- rllm_run(m, toks[[b]], outputs = c("logits", "attention", "contacts", "embed.1", "repr.3"))
    for (o in c("logits", "attention", "contacts")) {
      expect_lt(max(abs(nat[[o]] - w[[o]])), native_tol(w[[o]]), label = paste("native", o, "vs torch"))
    }
    expect_lt(max(abs(nat$embed.1 - w$repr[[1L]])), native_tol(w$repr[[1L]]))
    expect_lt(max(abs(nat$repr.3 - w$repr[[4L]])), native_tol(w$repr[[4L]]))
    # both in doubles; the text files carry 10 significant digits
    expect_lt(max(abs(got$logits - w$logits)), 1e-7)
    expect_lt(max(abs(got$taps$embed[[1L]] - w$repr[[1L]])), 1e-8)
    for (l in 1:5) expect_lt(max(abs(got$taps$repr[[l]] - w$repr[[l + 1L]])), 1e-8)
    expect_lt(max(abs(got$representations - w$repr[[7L]])), 1e-8)
    expect_identical(dim(got$attention), dim(w$attention))
    expect_lt(max(abs(got$attention - w$attention)), 1e-9)
    expect_identical(dim(got$contacts), c(length(toks[[b]]) - 2L, length(toks[[b]]) - 2L, 1L))
    expect_lt(max(abs(got$contacts - w$contacts)), 1e-9)
  }
})

test_that("ESM-2 with padding (attention_mask): native and rllm_execute = torch's padded batch at every position", {
  path <- esm2_file(seed = 5L)
  on.exit(unlink(path))
  toks <- esm2_test_tokens()
  want <- esm2_torch(path, toks, 6L, 20L, padded = TRUE)
  prog <- Rllm:::.rllm_program_esm2()
  m <- test_model(path, threads = 1)
  expect_true(m$has_mask)
  expect_equal(unlist(m$info[c("n_layer", "n_head", "n_embd_head_k")]),
                   c(n_layer = 6, n_head = 20, n_embd_head_k = 16))
  T <- max(lengths(toks))
  for (b in seq_along(toks)) {
    L <- length(toks[[b]])
    ids <- c(toks[[b]], rep(1L, T - L)) # <pad>
    mask <- rep(c(1, 0), c(L, T - L))
    w <- want[[b]]
    nat <- rllm_run(m, ids, outputs = c("logits", "attention", "contacts", "embed.1", "repr.3", "representations"),
                    mask = mask)
    got <- rllm_execute(prog, path, list(tokens = ids, attention_mask = mask), taps = TRUE)
    for (o in c("logits", "attention", "contacts")) {
      expect_identical(dim(nat[[o]]), dim(w[[o]]), label = o)
      expect_lt(max(abs(nat[[o]] - w[[o]])), native_tol(w[[o]]), label = paste("padded native", o, "vs torch"))
      expect_lt(max(abs(got[[o]] - w[[o]])), 1e-7, label = paste("padded rllm_execute", o, "vs torch"))
    }
    expect_lt(max(abs(nat$embed.1 - w$repr[[1L]])), native_tol(w$repr[[1L]]))
    expect_lt(max(abs(nat$repr.3 - w$repr[[4L]])), native_tol(w$repr[[4L]]))
    expect_lt(max(abs(nat$representations - w$repr[[7L]])), native_tol(w$repr[[7L]]))
    if (T > L) {
      # padding: zero embeddings and attention rows and columns; no weight on a padded key
      expect_true(all(nat$embed.1[, (L + 1):T] == 0))
      expect_true(all(nat$attention[(L + 1):T, , ] == 0) && all(nat$attention[, (L + 1):T, ] == 0))
      # at the sequence's positions, the unpadded values (logical masks too)
      alone <- rllm_run(m, toks[[b]], outputs = c("logits", "contacts"))
      again <- rllm_run(m, ids, outputs = c("logits", "contacts"), mask = mask == 1)
      expect_lt(max(abs(again$logits[, 1:L] - alone$logits)), native_tol(alone$logits))
      expect_lt(max(abs(again$contacts[1:(L - 2), 1:(L - 2), , drop = FALSE] - alone$contacts)), native_tol(alone$contacts))
    }
  }
  # a mask left out is all 1; bad masks are refused
  ids <- toks[[1L]]
  expect_equal(rllm_run(m, ids, outputs = "logits", mask = rep(1, length(ids))), rllm_run(m, ids, outputs = "logits"))
  expect_error(rllm_run(m, ids, mask = rep(1, 3)), class = "fm_error_earg", regexp = "at each of the 34 positions")
  expect_error(rllm_run(m, ids, mask = c(0.5, rep(1, 33))), class = "fm_error_earg", regexp = "0 or 1")
  expect_error(rllm_run(m, ids, mask = c(NA, rep(1, 33))), class = "fm_error_earg")
  expect_error(rllm_run(m, ids, mask = rep(0, 34)), class = "fm_error_earg", regexp = "no position at 1")
  expect_error(rllm_execute(prog, path, list(tokens = ids, attention_mask = rep(0, 34))),
               class = "rllm_error_program", regexp = "no position at 1")
  expect_error(rllm_execute(prog, path, list(tokens = ids, mask = rep(1, 34))),
               class = "rllm_error_program", regexp = "'mask' is not an input of the program")
  # a matrix of one column is one value per position
  expect_equal(rllm_execute(prog, path, list(tokens = ids, attention_mask = matrix(1, 34, 1)))$logits,
               rllm_execute(prog, path, list(tokens = ids))$logits)
  expect_error(rllm_execute(prog, path, list(tokens = ids, attention_mask = rep(2, 34))),
               class = "rllm_error_program", regexp = "attention_mask.*0 or 1")
})

test_that("ESM-2 natively (rllm_run) = rllm_execute: every output and tap, two sequences, one with <mask>", {
  path <- esm2_file(seed = 3L)
  on.exit(unlink(path))
  m <- test_model(path, threads = 1)
  expect_setequal(m$outputs, c("representations", "logits", "attention", "contacts", "embed.1",
                               paste0("repr.", 1:6)))
  prog <- Rllm:::.rllm_program_esm2()
  for (ids in esm2_test_tokens()) {
    want <- rllm_execute(prog, path, list(tokens = ids), taps = TRUE)
    got <- rllm_run(m, ids, outputs = m$outputs)
    ref <- c(want[c("representations", "logits", "attention", "contacts")], list(embed.1 = want$taps$embed[[1L]]),
             stats::setNames(want$taps$repr, paste0("repr.", 1:6)))
    for (o in names(ref)) {
      expect_identical(dim(got[[o]]), dim(ref[[o]]), label = o)
      expect_lt(max(abs(got[[o]] - ref[[o]])), native_tol(ref[[o]]), label = paste(o, "max |difference|"))
    }
  }
  # a second evaluation with other outputs and another length reuses
  # nothing stale (GGML's allocator once crashed on it)
  ids <- esm2_test_tokens()[[2L]]
  again <- rllm_run(m, ids, outputs = c("contacts", "logits"))
  expect_equal(again$contacts, rllm_run(m, ids, outputs = "contacts")$contacts)
})

test_that("rllm_esm: ESM's encoding, shapes, rows of attention summing to 1, symmetric contacts", {
  path <- esm2_file(n_layer = 2L, n_embd = 32L, n_head = 4L, n_ff = 64L)
  on.exit(unlink(path))
  m <- test_model(path, threads = 1)
  r <- rllm_esm(m, c(a = "MKTAYIAKQR", b = "gshm<mask>lJa"), repr_layers = c(0, 2), attention = TRUE,
                contacts = TRUE)
  expect_named(r, c("a", "b"))
  # <cls>, residues upper-cased, <mask> kept whole, J (not in the alphabet) <unk>, <eos>
  expect_identical(r$b$tokens, c(0L, 6L, 8L, 21L, 20L, 32L, 4L, 3L, 5L, 2L))
  expect_identical(dim(r$b$logits), c(10L, 33L))
  expect_identical(colnames(r$b$logits)[c(1L, 33L)], c("<cls>", "<mask>"))
  expect_named(r$b$representations, c("0", "2"))
  expect_identical(dim(r$b$attention), c(10L, 10L, 4L, 2L))
  expect_equal(apply(r$b$attention, c(1L, 3L, 4L), sum), array(1, c(10L, 4L, 2L)), tolerance = 1e-5)
  expect_identical(dim(r$b$contacts), c(8L, 8L))
  expect_equal(r$b$contacts, t(r$b$contacts), tolerance = 1e-6)
  # the same values as rllm_run's outputs, transposed to positions x features
  run <- rllm_run(m, r$a$tokens, outputs = c("logits", "representations"))
  expect_identical(r$a$logits, `colnames<-`(t(run$logits), colnames(r$a$logits)))
  expect_identical(r$a$representations[["2"]], t(run$representations))
  expect_null(rllm_esm(m, "MK")[[1L]]$attention)
  # white space dropped (line-wrapped FASTA), one residue works
  expect_identical(rllm_esm(m, "MK\nT ")[[1L]]$tokens, rllm_esm(m, "MKT")[[1L]]$tokens)
  expect_identical(dim(rllm_esm(m, "M", contacts = TRUE)[[1L]]$contacts), c(1L, 1L))
})

test_that("rllm_esm on one layer of one head: maps [T, T, 1, 1]", {
  path <- esm2_file(n_layer = 1L, n_embd = 16L, n_head = 1L, n_ff = 32L)
  on.exit(unlink(path))
  r <- rllm_esm(test_model(path, threads = 1), "MKT", attention = TRUE, contacts = TRUE)[[1L]]
  expect_identical(dim(r$attention), c(5L, 5L, 1L, 1L))
  expect_identical(dim(r$contacts), c(3L, 3L))
})

test_that("ESM-2 refuses what it cannot do, naming it", {
  path <- esm2_file(n_layer = 2L, n_embd = 32L, n_head = 4L, n_ff = 64L)
  on.exit(unlink(path))
  m <- test_model(path, threads = 1)
  expect_error(rllm_run(m, c(0L, 5L, 2L), outputs = "repr.9"), "repr.9", class = "fm_error_earg")
  expect_error(rllm_run(m, c(0L, 50L, 2L)), "outside the vocabulary", class = "fm_error_earg")
  expect_error(rllm_run(m, sequence = matrix(0, 4, 3)), "token ids", class = "fm_error_eunsupported")
  expect_error(rllm_logits(m, c(0L, 5L, 2L)), "evaluate it whole", class = "fm_error_eunsupported")
  expect_error(rllm_esm(m, "MK", repr_layers = 3), "0:2", class = "fm_error_earg")
  expect_error(rllm_esm(m, NA_character_), "character vector", class = "fm_error_earg")
  expect_error(rllm_esm(m, " \n "), "empty", class = "fm_error_earg")
  expect_error(rllm_run(m, c(0L, 2L), outputs = "contacts"), "contacts: output 3 drops 2 positions",
               class = "fm_error_earg")
  expect_error(rllm_run(m, c(0, 1e10, 2)), "whole numbers", class = "fm_error_earg")
  expect_error(rllm_execute(Rllm:::.rllm_program_esm2(), path, list(tokens = c(0L, 2L))),
               "pair_crop: dropping 1 \\+ 1 positions leaves none of 2", class = "rllm_error_program")
  expect_error(rllm_execute(Rllm:::.rllm_program_esm2(), path, list(tokens = c(0L, NA, 2L))),
               "whole numbers", class = "rllm_error_program")
  expect_error(rllm_execute(Rllm:::.rllm_program_esm2(), path, list(tokens = c(0L, 40L, 2L))),
               "id 40 is outside the 33 rows", class = "rllm_error_program")
  f <- tempfile(fileext = ".gguf")
  on.exit(unlink(f), add = TRUE)
  arch_gguf_write("qwen2", f)
  expect_error(rllm_esm(test_model(f, threads = 1), "MK"), "not ESM-2", class = "fm_error_earg")
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
  expect_equal(got$contacts[, , 1L], 1 / (1 + exp(-logit)), tolerance = 1e-12)
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
