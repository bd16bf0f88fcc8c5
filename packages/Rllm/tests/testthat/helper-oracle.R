# The llama.cpp oracle (tools/llama-oracle/oracle.mjs over node-llama-cpp)
# and GGUF fixture paths for Rllm's tests. Tests that need the oracle call
# skip_if_no_oracle() first; those that need fixtures go through
# gguf_fixture(), which skips when ../shared/fixtures is absent.

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

# tools/llama-oracle, or the env var RLLM_ORACLE_DIR; NULL when not found.
oracle_dir <- function() {
  env <- Sys.getenv("RLLM_ORACLE_DIR", "")
  if (nzchar(env)) return(normalizePath(env, mustWork = FALSE))
  root <- oracle_repo_root()
  if (is.null(root)) return(NULL)
  file.path(root, "tools", "llama-oracle")
}

# node (env RLLM_NODE overrides); "" when absent.
oracle_node <- function() {
  env <- Sys.getenv("RLLM_NODE", "")
  if (nzchar(env)) return(env)
  unname(Sys.which("node"))
}

# Why the oracle cannot run, or NULL when it can.
oracle_unavailable <- function() {
  if (!nzchar(oracle_node())) return("node is not installed (the llama.cpp oracle runs on node)")
  d <- oracle_dir()
  if (is.null(d) || !file.exists(file.path(d, "oracle.mjs"))) {
    return("tools/llama-oracle/oracle.mjs not found (set RLLM_ORACLE_DIR)")
  }
  if (!dir.exists(file.path(d, "node_modules", "node-llama-cpp"))) {
    return(sprintf("node-llama-cpp is not installed in %s (run tools/llama-oracle/install.sh)", d))
  }
  NULL
}

skip_if_no_oracle <- function() {
  why <- oracle_unavailable()
  if (!is.null(why)) testthat::skip(paste("llama.cpp oracle unavailable:", why))
  invisible(TRUE)
}

# A GGUF fixture under ../shared/fixtures/gguf (env RFMALLOC_FIXTURES);
# skips, saying which, when it is absent.
gguf_fixture <- function(...) {
  root <- Sys.getenv("RFMALLOC_FIXTURES", "")
  if (!nzchar(root)) {
    root <- file.path(testthat::test_path(), "..", "..", "..", "..", "..", "shared", "fixtures")
  }
  p <- file.path(root, "gguf", ...)
  if (!file.exists(p)) {
    testthat::skip(sprintf("fixture gguf/%s not found: ../shared/fixtures is absent", file.path(...)))
  }
  normalizePath(p)
}

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

# Run one oracle command and return its parsed JSON as a list.
#   llama_oracle("generate", model = path, tokens = c(1, 403), n = 64)
#   llama_oracle("logits", model = path, tokens = ids, all = TRUE)
# Arguments become --name value options (underscores to dashes); TRUE is a
# bare flag, FALSE/NULL are left out; numeric vectors are comma-joined.
# `text` is passed through a temporary UTF-8 file (--text-file), so any
# bytes survive. threads defaults to 2.
# Result conversions: token vectors are integer; `logits` is a numeric
# matrix n_vocab x positions (column j = position positions[j] + 1, values
# are log-softmax, -Inf where the probability underflowed to 0); `embedding`
# is numeric; `bytes` is raw. An oracle error is an R error quoting it.
llama_oracle <- function(cmd, model, ..., threads = 2L, timeout = 600) {
  why <- oracle_unavailable()
  if (!is.null(why)) stop("llama.cpp oracle unavailable: ", why, call. = FALSE)
  opts <- list(..., threads = threads)
  args <- c(cmd, "--model", shQuote(normalizePath(model, mustWork = FALSE)))
  tmp <- character()
  on.exit(unlink(tmp), add = TRUE)
  for (nm in names(opts)) {
    v <- opts[[nm]]
    if (is.null(v) || identical(v, FALSE)) next
    flag <- paste0("--", gsub("_", "-", nm, fixed = TRUE))
    if (nm == "text") {
      f <- tempfile(fileext = ".txt")
      tmp <- c(tmp, f)
      if (is.raw(v)) writeBin(v, f) else writeBin(charToRaw(enc2utf8(as.character(v))), f)
      args <- c(args, "--text-file", shQuote(f))
    } else if (isTRUE(v)) {
      args <- c(args, flag)
    } else {
      if (is.numeric(v)) v <- paste(format(v, scientific = FALSE, trim = TRUE), collapse = ",")
      args <- c(args, flag, shQuote(as.character(v)))
    }
  }
  errf <- tempfile()
  tmp <- c(tmp, errf)
  out <- suppressWarnings(system2(oracle_node(), c(shQuote(file.path(oracle_dir(), "oracle.mjs")), args),
                                  stdout = TRUE, stderr = errf, timeout = timeout))
  status <- attr(out, "status")
  txt <- paste(out, collapse = "\n")
  res <- if (nzchar(txt)) tryCatch(oracle_parse_json(txt), error = function(e) NULL) else NULL
  if (!is.null(res$error)) stop("llama.cpp oracle ", cmd, ": ", res$error, call. = FALSE)
  if (!is.null(status) && status != 0 || is.null(res)) {
    err <- paste(readLines(errf, warn = FALSE), collapse = "\n")
    stop(sprintf("llama.cpp oracle %s failed (status %s): %s", cmd,
                 if (is.null(status)) "0" else status, substr(paste(txt, err), 1, 2000)), call. = FALSE)
  }
  oracle_convert(res)
}

oracle_convert <- function(res) {
  for (k in c("tokens", "prompt_tokens", "positions", "top5", grep("^top[0-9]+$", names(res), value = TRUE))) {
    if (!is.null(res[[k]])) res[[k]] <- as.integer(unlist(res[[k]]))
  }
  if (!is.null(res$bytes)) res$bytes <- as.raw(unlist(res$bytes))
  if (!is.null(res$embedding)) res$embedding <- as.numeric(unlist(res$embedding))
  if (!is.null(res$logits)) {
    rows <- res$logits
    m <- if (is.matrix(rows)) t(rows) else {
      if (!is.list(rows)) rows <- list(rows)
      matrix(unlist(lapply(rows, function(r) as.numeric(vapply(r, function(x) if (is.null(x)) NA_real_ else x, 0)))),
             ncol = length(rows))
    }
    storage.mode(m) <- "double"
    m[is.na(m)] <- -Inf
    res$logits <- m
  }
  res
}

oracle_parse_json <- function(txt) {
  if (requireNamespace("jsonlite", quietly = TRUE)) {
    return(jsonlite::fromJSON(txt, simplifyVector = TRUE, simplifyDataFrame = FALSE))
  }
  json_parse_min(txt)
}

# A minimal JSON parser for what oracle.mjs prints (objects, arrays, strings,
# numbers, true/false/null); used when jsonlite is not installed. Arrays of
# numbers (and nulls, as NA) become numeric vectors, arrays of such
# equal-length vectors a matrix with one row each (as jsonlite does).
json_parse_min <- function(txt) {
  pat <- paste0('"(?:[^"\\\\]|\\\\.)*"|-?[0-9][0-9.eE+-]*|true|false|null|[][{}:,]')
  tok <- regmatches(txt, gregexpr(pat, txt, perl = TRUE))[[1]]
  first <- substr(tok, 1, 1)
  is_num <- grepl("^-?[0-9]", tok)
  pos <- 1L
  unesc <- function(s) {
    s <- substr(s, 2, nchar(s) - 1)
    if (!grepl("\\", s, fixed = TRUE)) return(s)
    as.character(jsonlite_free_unescape(s))
  }
  value <- function() {
    t <- tok[pos]
    if (t == "{") {
      pos <<- pos + 1L
      out <- list()
      if (tok[pos] == "}") { pos <<- pos + 1L; return(setNames(list(), character())) }
      repeat {
        key <- unesc(tok[pos]); pos <<- pos + 2L
        v <- value()
        out[key] <- list(v)
        sep <- tok[pos]; pos <<- pos + 1L
        if (sep == "}") break
      }
      return(out)
    }
    if (t == "[") {
      close <- pos + 1L
      # fast path: a flat array of numbers / null
      j <- pos + 1L
      n <- length(tok)
      k <- match(TRUE, !(is_num[j:n] | tok[j:n] %in% c(",", "null")))
      if (!is.na(k) && tok[j + k - 1L] == "]") {
        close <- j + k - 1L
        body <- tok[seq_len(close - j) + j - 1L]
        body <- body[body != ","]
        pos <<- close + 1L
        return(suppressWarnings(as.numeric(ifelse(body == "null", NA, body))))
      }
      pos <<- pos + 1L
      out <- list()
      if (tok[pos] == "]") { pos <<- pos + 1L; return(out) }
      repeat {
        out[[length(out) + 1L]] <- value()
        sep <- tok[pos]; pos <<- pos + 1L
        if (sep == "]") break
      }
      lens <- vapply(out, function(x) if (is.numeric(x) && is.null(dim(x))) length(x) else -1L, 0L)
      if (length(out) && all(lens == lens[1]) && lens[1] >= 0) {
        return(do.call(rbind, out))
      }
      if (length(out) && all(vapply(out, function(x) (is.character(x) || is.logical(x)) && length(x) == 1, TRUE))) {
        return(unlist(out))
      }
      return(out)
    }
    pos <<- pos + 1L
    if (first[pos - 1L] == '"') return(unesc(t))
    if (t == "true") return(TRUE)
    if (t == "false") return(FALSE)
    if (t == "null") return(NULL)
    as.numeric(t)
  }
  value()
}

# JSON string escapes to UTF-8 (\uXXXX with surrogate pairs included).
jsonlite_free_unescape <- function(s) {
  cps <- utf8ToInt(s)
  out <- integer()
  i <- 1L
  n <- length(cps)
  while (i <= n) {
    c <- cps[i]
    if (c != 92L) { out <- c(out, c); i <- i + 1L; next }
    e <- intToUtf8(cps[i + 1L])
    if (e == "u") {
      cp <- strtoi(intToUtf8(cps[(i + 2L):(i + 5L)]), 16L)
      i <- i + 6L
      if (cp >= 0xD800 && cp < 0xDC00 && i + 5L <= n && cps[i] == 92L && cps[i + 1L] == 117L) {
        lo <- strtoi(intToUtf8(cps[(i + 2L):(i + 5L)]), 16L)
        cp <- 0x10000 + (cp - 0xD800) * 1024 + (lo - 0xDC00)
        i <- i + 6L
      }
      out <- c(out, cp)
    } else {
      out <- c(out, switch(e, n = 10L, t = 9L, r = 13L, b = 8L, f = 12L, utf8ToInt(e)))
      i <- i + 2L
    }
  }
  intToUtf8(out)
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

# Log-softmax of each column of a logit matrix (what the oracle's "logits"
# command returns), computed stably.
log_softmax <- function(l) apply(l, 2, function(v) v - (max(v) + log(sum(exp(v - max(v))))))

# A GGUF file's metadata as gguf_write() takes it: each value marked with the
# type the file gives it (Rgguf::gguf_metadata's "gguf_type"), so a rewritten
# copy keeps every key's exact type.
typed_metadata <- function(md) {
  ty <- attr(md, "gguf_type")
  vals <- lapply(names(md), function(k) {
    arr <- startsWith(ty[[k]], "array<")
    Rgguf::gguf_value(md[[k]], if (arr) sub("^array<(.*)>$", "\\1", ty[[k]]) else ty[[k]], array = arr)
  })
  names(vals) <- names(md)
  vals
}
