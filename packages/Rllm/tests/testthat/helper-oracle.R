# The llama.cpp oracle (tools/llama-oracle: oracle.mjs over node-llama-cpp,
# and its R client client.R, sourced here from the repository), GGUF
# fixture paths and the tolerances of comparisons with the oracle, for
# Rllm's tests. Tests that need the oracle call skip_if_no_oracle() first;
# those that need fixtures go through gguf_fixture(), which skips when
# ../shared/fixtures is absent.

# Root of the monorepo, found upward from the test directory (also from
# R CMD check's Rllm.Rcheck/tests/testthat under build/check); NULL if none.
oracle_repo_root <- function() {
  d <- normalizePath(testthat::test_path(), mustWork = FALSE)
  for (i in seq_len(12L)) {
    if (file.exists(file.path(d, "tools", "llama-oracle", "oracle.mjs"))) return(d)
    up <- dirname(d)
    if (identical(up, d)) break
    d <- up
  }
  NULL
}

# The oracle's R client, from the repository (tools/llama-oracle/client.R);
# without it every oracle case skips, saying why.
oracle_home <- local({
  root <- oracle_repo_root()
  if (is.null(root)) NULL else file.path(root, "tools", "llama-oracle")
})
if (!is.null(oracle_home) && file.exists(file.path(oracle_home, "client.R"))) {
  source(file.path(oracle_home, "client.R"), local = TRUE)
} else {
  oracle_unavailable <- function() "tools/llama-oracle/client.R not found (tests run outside the repository)"
}

skip_if_no_oracle <- function() {
  why <- oracle_unavailable()
  if (!is.null(why)) testthat::skip(paste("llama.cpp oracle unavailable:", why))
  invisible(TRUE)
}

# A fixture under ../shared/fixtures (env RFMALLOC_FIXTURES); skips,
# saying which, when it is absent.
fixture <- function(...) {
  root <- Sys.getenv("RFMALLOC_FIXTURES", "")
  if (!nzchar(root)) {
    root <- file.path(testthat::test_path(), "..", "..", "..", "..", "..", "shared", "fixtures")
  }
  p <- file.path(root, ...)
  if (!all(file.exists(p))) {
    testthat::skip(sprintf("fixture %s not found: ../shared/fixtures is absent", p[!file.exists(p)][1L]))
  }
  normalizePath(p)
}
gguf_fixture <- function(...) fixture("gguf", ...)

# A scratch Rfmalloc runtime of 50 MB for the calling test, closed and its
# backing file removed when that test ends.
scratch_runtime <- function(env = parent.frame()) {
  backing <- tempfile(fileext = ".bin")
  rt <- Rfmalloc::open_fmalloc(backing, size_gb = 0.05, mode = "scratch")
  done <- substitute({
    Rfmalloc::cleanup_fmalloc(rt)
    unlink(backing)
  }, list(rt = rt, backing = backing))
  do.call(on.exit, list(done, add = TRUE), envir = env)
  rt
}

# How far two correct engines' log-softmax values may lie apart at each
# position of `ids`, from the rounding of the activations in the output
# product's dot-product type (as ?Rgguf::gguf_tensor bounds one product).
# llama.cpp and Rllm run the same GGML operators, but accumulate in other
# orders on other CPU paths (llamafile's tinyBLAS and the repacked GEMMs
# for a batch; AVX-512, AVX2 or portable kernels), so their final hidden
# state h agrees to float rounding (~1e-6), and the output product rounds h
# to its dot type: q8_0 (blocks of 32, d = max|h|/127 stored as f16) for
# q4_0/q5_0/q8_0 weights, q8_K (blocks of 256, f32 d) for the K-quants, f16
# or bf16 for those, nothing for f32. Where an element of h lies at a
# rounding boundary, the two engines round it to neighbouring values: a flip
# moves it by one step, at most twice the rounding bound e_l of the element
# (q8_0: d/2 + 127 d 2^-11; q8_K: d/2; f16: |h| 2^-11; bf16: |h| 2^-8), so
# logit i moves by at most 2 B_i, B_i = sum_l |W_il| e_l. The log-sum-exp
# taken off each column moves by at most max_i 2 B_i as well, which gives
# the tolerance 4 max_i B_i per position. With an F16 KV cache every layer
# rounds its keys and values to f16, so e_l is at least the f16 bound (this
# also covers F32 weights); with an F32 cache and F32 weights nothing is
# rounded to a dot type, and e_l is the single-precision accumulation
# bound n u |h_l| (n = n_embd terms, u = 2^-24), which is added in every
# case. Upstream layers add their own flips in principle; in the
# measurements they stay far below this bound (issue 12: 0.11 nats between
# the engines against a bound of 2.1 for Q4_K_M). Returns one tolerance per
# position, in nats.
logit_tolerance <- function(model, path, ids, kv = c("f16", "f32")) {
  kv <- match.arg(kv)
  g <- Rgguf::gguf_open(path)
  td <- Rgguf::gguf_tensors(g)
  w_name <- if ("output.weight" %in% td$name) "output.weight" else "token_embd.weight"
  w_type <- td$type[td$name == w_name]
  W <- abs(Rgguf::gguf_tensor(g, w_name, as = "numeric"))
  block_bound <- function(h, n, scale_rounding) {
    d <- vapply(split(abs(h), ceiling(seq_along(h) / n)), max, 0) / 127
    rep(d / 2 + 127 * d * scale_rounding, each = n)[seq_along(h)]
  }
  e_of <- function(h) {
    f16 <- abs(h) * 2^-11
    e <- switch(w_type,
      q4_0 = , q5_0 = , q8_0 = , q4_1 = , q5_1 = , iq4_nl = block_bound(h, 32, 2^-11),
      q2_K = , q3_K = , q4_K = , q5_K = , q6_K = block_bound(h, 256, 0),
      bf16 = abs(h) * 2^-8,
      f16 = f16,
      f32 = 0 * h,
      stop("logit_tolerance: no dot-type bound for output type ", w_type))
    if (kv == "f16") e <- pmax(e, f16)
    e + length(h) * 2^-24 * abs(h)
  }
  vapply(seq_along(ids), function(j) {
    h <- Rllm::rllm_embed(model, ids[seq_len(j)], pooling = "last")[, 1]
    4 * max(W %*% e_of(h))
  }, numeric(1))
}

# The checks that must not move between engines, where the margins exceed
# what `tol` (per position) lets each value move: the argmax of every
# position whose top-1 margin exceeds 2 tol, and each of the top-5 ids of
# the last position whose gaps to both neighbours exceed 2 tol. `ours` and
# `ref` are log-softmax matrices (one column per position). Returns the
# number of exact checks made.
expect_stable_ranks <- function(ours, ref, tol, label) {
  made <- 0L
  for (j in seq_len(ncol(ours))) {
    o <- sort(ours[, j], decreasing = TRUE)
    if (o[1] - o[2] > 2 * tol[j]) {
      testthat::expect_identical(which.max(ref[, j]), which.max(ours[, j]),
                                 label = sprintf("%s argmax at position %d", label, j))
      made <- made + 1L
    }
  }
  j <- ncol(ours)
  ord <- order(-ours[, j], seq_len(nrow(ours)))
  v <- ours[ord[1:6], j]
  ref_ord <- order(-ref[, j], seq_len(nrow(ref)))
  for (k in 1:5) {
    up <- if (k == 1) Inf else v[k - 1] - v[k]
    if (min(up, v[k] - v[k + 1]) > 2 * tol[j]) {
      testthat::expect_identical(ref_ord[k], ord[k], label = sprintf("%s top-%d id", label, k))
      made <- made + 1L
    }
  }
  made
}

