# The R client of the llama.cpp oracle (oracle.mjs over node-llama-cpp, in
# this folder): running its commands, parsing what they print, and the two
# conversions comparisons with it need. Sourced by Rllm's tests
# (tests/testthat/helper-oracle.R, which skips oracle cases when this
# folder is not found) and by tools/llm-f32-reference.R; set oracle_home to
# this folder before sourcing.

# The oracle's folder: the env var RLLM_ORACLE_DIR (another CPU variant,
# tools/llama-oracle/variant.sh), else oracle_home, which whoever sources
# this file sets first.
oracle_dir <- function() {
  env <- Sys.getenv("RLLM_ORACLE_DIR", "")
  if (nzchar(env)) return(normalizePath(env, mustWork = FALSE))
  oracle_home
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
