# The operator vocabulary of architecture programs: for each operator its
# arguments, attributes (expressions, evaluated at bind time) and its dense
# R meaning, the oracle that rllm_execute() runs and every native lowering
# is tested against. Values: activations are matrices [features, positions]
# (GGML's ne0 x ne1 in R's column-major order, so a column is one
# position); a GGUF matrix [ne0 = in, ne1 = out] arrives as an R matrix
# out x in (Rgguf::gguf_tensor()); vectors are plain numerics.

.rllm_vocabulary_version <- 3L
.rllm_name_attrs <- c("mode", "mask", "state")

.rllm_silu <- function(x) x / (1 + exp(-x))
.rllm_gelu <- function(x) 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) # GGML's tanh form
.rllm_gelu_erf <- function(x) x * stats::pnorm(x) # the exact form, x Phi(x)

# Rotary embedding of x [hd * nh, n] at positions pos: pairs (j, j + 1)
# (mode "normal") or (j, j + n_rot / 2) (mode "neox") of the first n_rot
# dimensions of each head rotated by pos * base^(-2 j' / n_rot).
.rllm_rope <- function(x, pos, n_head, n_rot, base, mode) {
  hd <- nrow(x) %/% n_head
  half <- n_rot %/% 2
  theta <- base^(-(2 * (seq_len(half) - 1)) / n_rot)
  ang <- outer(theta, pos) # half x n
  cs <- cos(ang)
  sn <- sin(ang)
  for (h in seq_len(n_head) - 1L) {
    off <- h * hd
    a <- if (mode == "neox") off + seq_len(half) else off + 2 * seq_len(half) - 1
    b <- if (mode == "neox") a + half else a + 1
    xa <- x[a, , drop = FALSE]
    xb <- x[b, , drop = FALSE]
    x[a, ] <- xa * cs - xb * sn
    x[b, ] <- xa * sn + xb * cs
  }
  x
}

# Attention probabilities of q [hd * nh, n] over k [hd * nkv, n]: an R
# array [key, query, head] (head h reads KV head h %/% (nh / nkv)); mask
# "causal" (key <= query), "full", "swa_causal" (causal, query - key <
# window) or "swa_sym" (|query - key| <= window / 2); keys where key_mask
# [1, n] (or NULL) is 0 are left out.
.rllm_attention_probs <- function(q, k, n_head, n_head_kv, scale, mask, window, pos, key_mask = NULL) {
  n <- ncol(q)
  hd <- nrow(q) %/% n_head
  qk <- outer(pos, pos, function(key, query) query - key) # [key, query], as the scores
  allowed <- switch(mask, causal = qk >= 0, full = matrix(TRUE, n, n),
                    swa_causal = qk >= 0 & qk < window, swa_sym = abs(qk) <= window / 2)
  if (!is.null(key_mask)) allowed[as.vector(key_mask) == 0, ] <- FALSE
  g <- n_head %/% n_head_kv
  p <- array(0, c(n, n, n_head))
  for (h in seq_len(n_head) - 1L) {
    kh <- h %/% g
    s <- crossprod(k[kh * hd + seq_len(hd), , drop = FALSE], q[h * hd + seq_len(hd), , drop = FALSE]) * scale
    s[!allowed] <- -Inf
    e <- exp(sweep(s, 2L, apply(s, 2L, max)))
    p[, , h + 1L] <- sweep(e, 2L, colSums(e), "/")
  }
  p
}

# The values v [hv * nkv, n] weighted by probabilities p [key, query, head]:
# [hv * nh, n].
.rllm_attend <- function(p, v, n_head_kv) {
  n_head <- dim(p)[3L]
  hv <- nrow(v) %/% n_head_kv
  g <- n_head %/% n_head_kv
  out <- matrix(0, hv * n_head, dim(p)[2L])
  for (h in seq_len(n_head) - 1L) {
    out[h * hv + seq_len(hv), ] <- v[(h %/% g) * hv + seq_len(hv), , drop = FALSE] %*% p[, , h + 1L]
  }
  out
}

# x op y where y may be a mask [1, n] over the columns of x [a, n].
.rllm_columnwise <- function(x, y, f) {
  if (is.matrix(y) && nrow(y) == 1L && nrow(x) != 1L && ncol(y) == ncol(x)) sweep(x, 2L, as.vector(y), f) else f(x, y)
}

# The positions a crop of left and right keeps of n (at least one).
.rllm_kept <- function(n, at, op) {
  if (n - at$left - at$right < 1) {
    .rllm_program_abort("program", op, ": dropping ", at$left, " + ", at$right, " positions leaves none of ", n,
                        call = NULL)
  }
  (at$left + 1):(n - at$right)
}

# Average product correction of each map of x [n, n, c] (Dunn et al. 2008):
# x - (row sums x column sums) / total.
.rllm_apc <- function(x) {
  for (c in seq_len(dim(x)[3L])) {
    m <- x[, , c, drop = FALSE][, , 1L]
    m <- matrix(m, dim(x)[1L], dim(x)[2L])
    x[, , c] <- m - outer(rowSums(m), colSums(m)) / sum(m)
  }
  x
}

# Mixture of experts per position: router [n_expert, n_embd]; gate, up
# [n_ff, n_embd, n_expert], down [n_embd, n_ff, n_expert]; gating 1
# softmax, 2 sigmoid (llama.cpp's expert_gating_func); bias (or NULL) added
# to the probabilities for the choice only. Ties in the selection go to
# the lower expert index.
.rllm_moe <- function(x, router, gate, up, down, n_used, norm, gating = 1, bias = NULL) {
  out <- matrix(0, dim(down)[1L], ncol(x))
  for (j in seq_len(ncol(x))) {
    l <- drop(router %*% x[, j])
    pr <- if (gating == 2) 1 / (1 + exp(-l)) else exp(l - max(l)) / sum(exp(l - max(l)))
    sel <- order(-(pr + if (is.null(bias)) 0 else bias), seq_along(pr))[seq_len(n_used)]
    wt <- pr[sel]
    if (norm) wt <- wt / sum(wt)
    for (k in seq_along(sel)) {
      e <- sel[k]
      h <- .rllm_silu(gate[, , e] %*% x[, j]) * (up[, , e] %*% x[, j])
      out[, j] <- out[, j] + wt[k] * drop(down[, , e] %*% h)
    }
  }
  out
}

# Causal depthwise convolution: x [channels, n], kernel an R matrix
# channels x L (GGUF [L, channels]); zeros before the first position.
.rllm_conv_causal <- function(x, kernel) {
  L <- ncol(kernel)
  xp <- cbind(matrix(0, nrow(x), L - 1L), x)
  y <- matrix(0, nrow(x), ncol(x))
  for (k in seq_len(L)) y <- y + kernel[, k] * xp[, k - 1L + seq_len(ncol(x)), drop = FALSE]
  y
}

# 1-D convolution of x [in, n] with w an R array [in, k, out] (a GGUF
# [k, in, out] read by rllm_execute) and bias b [out] (or NULL), dilation
# d, zero padding d (k - 1) / 2 on each side.
.rllm_conv1d <- function(x, w, b, d) {
  k <- dim(w)[2L]
  half <- d * (k - 1) %/% 2
  n <- ncol(x)
  xp <- cbind(matrix(0, nrow(x), half), x, matrix(0, nrow(x), half))
  y <- matrix(0, dim(w)[3L], n)
  for (j in seq_len(k)) y <- y + crossprod(matrix(w[, j, ], nrow = dim(w)[1L]), xp[, (j - 1) * d + seq_len(n), drop = FALSE])
  if (!is.null(b)) y <- y + b
  y
}

# Each operator: args (names; the last optional_args of them may be left
# out; a given one may be an absent optional parameter), attrs (names
# with defaults, NULL: required) and oracle(a, at): a the argument values,
# at the evaluated attributes.
.rllm_ops <- list(
  get_rows = list(args = c("ids", "w"), attrs = list(),
                  oracle = function(a, at) {
                    if (any(a$ids < 0 | a$ids >= nrow(a$w))) {
                      .rllm_program_abort("program", "get_rows: id ", a$ids[a$ids < 0 | a$ids >= nrow(a$w)][1L],
                                          " is outside the ", nrow(a$w), " rows", call = NULL)
                    }
                    t(a$w[a$ids + 1L, , drop = FALSE])
                  },
                  doc = "rows of a matrix (an embedding) at 0-based ids: [ne0(w), n]"),
  matmul = list(args = c("x", "w"), attrs = list(),
                oracle = function(a, at) a$w %*% a$x,
                doc = "w x: [ne1(w), n] (GGML mul_mat)"),
  add = list(args = c("x", "y"), attrs = list(),
             oracle = function(a, at) if (is.null(a$y)) a$x else .rllm_columnwise(a$x, a$y, `+`),
             doc = paste("elementwise sum; a vector y is added to every column (a group of rows), a mask [1, n]",
                         "to every row; an absent optional y is 0")),
  mul = list(args = c("x", "y"), attrs = list(),
             oracle = function(a, at) if (is.null(a$y)) a$x else .rllm_columnwise(a$x, a$y, `*`),
             doc = paste("elementwise product; a vector y scales every column (a group of rows), a mask [1, n]",
                         "every row; an absent optional y is 1")),
  scale = list(args = "x", attrs = list(s = NULL), oracle = function(a, at) a$x * at$s,
               doc = "x times the number s"),
  rms_norm = list(args = "x", attrs = list(eps = NULL, group = 0),
                  oracle = function(a, at) {
                    x <- a$x
                    g <- if (at$group > 0) at$group else nrow(x)
                    y <- matrix(x, nrow = g)
                    y <- sweep(y, 2L, sqrt(colMeans(y^2) + at$eps), "/")
                    matrix(y, nrow = nrow(x))
                  },
                  doc = "x / sqrt(mean(x^2) + eps) over each column (or each group of rows)"),
  layer_norm = list(args = "x", attrs = list(eps = NULL),
                    oracle = function(a, at) {
                      y <- sweep(a$x, 2L, colMeans(a$x))
                      sweep(y, 2L, sqrt(colMeans(y^2) + at$eps), "/")
                    },
                    doc = "(x - mean) / sqrt(var + eps) over each column"),
  rope = list(args = c("x", "pos"), attrs = list(n_head = NULL, n_rot = NULL, base = 10000, mode = "normal"),
              oracle = function(a, at) .rllm_rope(a$x, a$pos, at$n_head, at$n_rot, at$base, at$mode),
              doc = "rotary position embedding (Su et al. 2021), modes normal (adjacent pairs) and neox"),
  attention = list(args = c("q", "k", "v", "pos"),
                   attrs = list(n_head = NULL, n_head_kv = NULL, scale = NULL, mask = "causal", window = 0),
                   oracle = function(a, at) {
                     .rllm_attend(.rllm_attention_probs(a$q, a$k, at$n_head, at$n_head_kv, at$scale, at$mask,
                                                        at$window, a$pos), a$v, at$n_head_kv)
                   },
                   doc = "softmax(K'Q scale + mask) V per head, grouped-query (Vaswani et al. 2017)"),
  attention_probs = list(args = c("q", "k", "pos", "key_mask"), optional_args = 1L,
                         attrs = list(n_head = NULL, n_head_kv = NULL, scale = NULL, mask = "causal", window = 0),
                         oracle = function(a, at) .rllm_attention_probs(a$q, a$k, at$n_head, at$n_head_kv, at$scale,
                                                                        at$mask, at$window, a$pos, a$key_mask),
                         doc = paste("attention maps softmax(K'Q scale + mask) per head, as pair maps [key,",
                                     "query, head] (attention's first half, for models that output them);",
                                     "keys where an optional key_mask [1, n] is 0 left out (padding)")),
  attend = list(args = c("p", "v"), attrs = list(n_head_kv = NULL),
                oracle = function(a, at) .rllm_attend(a$p, a$v, at$n_head_kv),
                doc = "attention's second half: the values weighted by pair maps [key, query, head]: [hv nh, n]"),
  silu = list(args = "x", attrs = list(), oracle = function(a, at) .rllm_silu(a$x), doc = "x sigmoid(x)"),
  gelu = list(args = "x", attrs = list(), oracle = function(a, at) .rllm_gelu(a$x),
              doc = "GELU, tanh approximation (Hendrycks & Gimpel 2016)"),
  gelu_erf = list(args = "x", attrs = list(), oracle = function(a, at) .rllm_gelu_erf(a$x),
                  doc = "GELU, exact: x Phi(x) with the normal CDF (Hendrycks & Gimpel 2016)"),
  sigmoid = list(args = "x", attrs = list(), oracle = function(a, at) 1 / (1 + exp(-a$x)),
                 doc = "the logistic function 1 / (1 + exp(-x))"),
  token_dropout = list(args = c("x", "ids", "mask"), optional_args = 1L, attrs = list(mask_id = NULL, ratio = NULL),
                       oracle = function(a, at) {
                         valid <- if (is.null(a$mask)) rep(TRUE, ncol(a$x)) else as.vector(a$mask) != 0
                         masked <- a$ids == at$mask_id
                         y <- a$x
                         y[, masked | !valid] <- 0
                         y * (1 - at$ratio) / (1 - sum(masked & valid) / sum(valid))
                       },
                       doc = paste("inference-time token dropout of masked-language-model embeddings (ESM-2,",
                                   "Lin et al. 2023): columns at mask_id zeroed, all scaled by (1 - ratio) /",
                                   "(1 - the fraction of positions at mask_id); with a mask [1, n], over the",
                                   "positions where it is 1, the others zeroed (padding)")),
  ne_id = list(args = "ids", attrs = list(id = NULL),
               oracle = function(a, at) matrix(as.numeric(a$ids != at$id), nrow = 1L),
               doc = "a mask [1, n] of the token ids: 1 where the id is not id, 0 where it is"),
  pair_mask = list(args = c("x", "m"), attrs = list(),
                   oracle = function(a, at) {
                     m <- as.vector(a$m)
                     a$x * as.vector(outer(m, m))
                   },
                   doc = "pair maps [n, n, c] times m[key] m[query], m a mask [1, n] (zeroes padding's rows and columns)"),
  swiglu = list(args = c("gate", "up"), attrs = list(), oracle = function(a, at) .rllm_silu(a$gate) * a$up,
                doc = "silu(gate) up (Shazeer 2020)"),
  geglu = list(args = c("gate", "up"), attrs = list(), oracle = function(a, at) .rllm_gelu(a$gate) * a$up,
               doc = "gelu(gate) up (Shazeer 2020)"),
  pool = list(args = "x", attrs = list(type = NULL),
              oracle = function(a, at) {
                x <- a$x
                matrix(switch(as.character(at$type), "1" = rowMeans(x), "2" = x[, 1L], "3" = x[, ncol(x)],
                              .rllm_program_abort("program", "pool: type ", at$type, " is not 1 (mean), ",
                                                  "2 (first position) or 3 (last)")), ncol = 1L)
              },
              doc = "one column from all positions: type 1 mean, 2 the first (CLS), 3 the last (llama.cpp's pooling types)"),
  moe = list(args = c("x", "router", "gate", "up", "down", "bias"), optional_args = 1L,
             attrs = list(n_used = NULL, norm = 1, gating = 1),
             oracle = function(a, at) .rllm_moe(a$x, a$router, a$gate, a$up, a$down, at$n_used, at$norm,
                                                at$gating, a$bias),
             doc = paste("mixture of experts: a softmax (gating 1) or sigmoid (2) router, the n_used most",
                         "probable experts (an optional bias added for the choice only; weights renormalized",
                         "when norm), each a SwiGLU feed-forward (Shazeer et al. 2017; Fedus et al. 2021;",
                         "DeepSeek-V3 2024 for the bias)")),
  rows = list(args = "x", attrs = list(start = NULL, count = NULL),
              oracle = function(a, at) a$x[at$start + seq_len(at$count), , drop = FALSE],
              doc = "rows start .. start + count - 1 (0-based) of every column"),
  conv_causal = list(args = c("x", "kernel"), attrs = list(state = ""),
                     oracle = function(a, at) .rllm_conv_causal(a$x, a$kernel),
                     doc = paste("causal depthwise convolution over positions, kernel [L, channels]:",
                                 "y[c, t] = sum_k kernel[k, c] x[c, t - (L - 1) + k]; the last L - 1",
                                 "inputs are the named state (zeros before the first position)")),
  conv1d = list(args = c("x", "w", "b"), attrs = list(dilation = 1),
                oracle = function(a, at) .rllm_conv1d(a$x, a$w, a$b, at$dilation),
                doc = paste("1-D convolution (cross-correlation) with zero 'same' padding, kernel",
                            "[k, in, out] (PyTorch's [out, in, k]), odd k, dilation, optional bias")),
  batchnorm = list(args = c("x", "mean", "var", "w", "b"), attrs = list(eps = 1e-5),
                   oracle = function(a, at) (a$x - a$mean) / sqrt(a$var + at$eps) * a$w + a$b,
                   doc = "inference batch normalization per channel (row): (x - mean) / sqrt(var + eps) w + b (Ioffe & Szegedy 2015)"),
  leaky_relu = list(args = "x", attrs = list(slope = NULL),
                    oracle = function(a, at) ifelse(a$x > 0, a$x, at$slope * a$x),
                    doc = "x where positive, slope x elsewhere"),
  crop = list(args = "x", attrs = list(left = NULL, right = NULL),
              oracle = function(a, at) a$x[, .rllm_kept(ncol(a$x), at, "crop"), drop = FALSE],
              doc = "drops left positions (columns) at the start and right at the end"),
  concat = list(args = c("x", "y"), attrs = list(),
                oracle = function(a, at) {
                  if (length(dim(a$x)) == 3L) {
                    array(c(a$x, a$y), c(dim(a$x)[1:2], dim(a$x)[3L] + dim(a$y)[3L]))
                  } else rbind(a$x, a$y)
                },
                doc = "x then y along the features: an activation's rows, pair maps' channels"),
  pair_crop = list(args = "x", attrs = list(left = NULL, right = NULL),
                   oracle = function(a, at) {
                     keep <- .rllm_kept(dim(a$x)[1L], at, "pair_crop")
                     a$x[keep, keep, , drop = FALSE]
                   },
                   doc = "pair maps [n, n, c] without their first left and last right positions on both axes"),
  symmetrize = list(args = "x", attrs = list(), oracle = function(a, at) a$x + aperm(a$x, c(2L, 1L, 3L)),
                    doc = "each pair map plus its transpose"),
  apc = list(args = "x", attrs = list(), oracle = function(a, at) .rllm_apc(a$x),
             doc = "average product correction of each pair map: x - rowsums colsums / total (Dunn et al. 2008)"),
  head_mix = list(args = c("x", "w", "b"), optional_args = 1L, attrs = list(),
                  oracle = function(a, at) {
                    d <- dim(a$x)
                    array(matrix(a$x, ncol = d[3L]) %*% as.numeric(a$w) + if (is.null(a$b)) 0 else a$b,
                          c(d[1L], d[2L], 1L))
                  },
                  doc = "pair maps [n, n, 1] from pair maps [n, n, c]: sum_c w[c] x[, , c] + b (a logistic regression's logit)"),
  softmax = list(args = "x", attrs = list(),
                 oracle = function(a, at) {
                   e <- exp(sweep(a$x, 2L, apply(a$x, 2L, max)))
                   sweep(e, 2L, colSums(e), "/")
                 },
                 doc = "softmax over each column"))

#' The operator vocabulary of architecture programs
#'
#' @return A data frame, one row per operator: `op`, `args` (its symbolic
#'   inputs), `attrs` (its attributes, `name=default`, no default when
#'   required) and `meaning`.
#' @export
rllm_ops <- function() {
  data.frame(op = names(.rllm_ops),
             args = vapply(.rllm_ops, function(o) paste(o$args, collapse = ", "), ""),
             attrs = vapply(.rllm_ops, function(o) paste(vapply(names(o$attrs), function(nm) {
               d <- o$attrs[[nm]]
               if (is.null(d)) nm else paste0(nm, "=", format(d))
             }, ""), collapse = ", "), ""),
             meaning = vapply(.rllm_ops, `[[`, "", "doc"), row.names = NULL)
}

# A node of operator `op` with arguments `args` (symbolic tensors, named
# or in order) and attributes `attrs` (expressions).
.rllm_op <- function(op, args, attrs, call = sys.call(-1L)) {
  def <- .rllm_ops[[op]]
  x <- args[[1L]]
  if (!.rllm_is_sym(x)) {
    .rllm_program_abort("program", "operator '", op, "': its first input must be a symbolic tensor ",
                        "of a program, not ", .rllm_describe(x), call = call)
  }
  unknown <- setdiff(names(attrs), names(def$attrs))
  if (length(unknown)) {
    .rllm_program_abort("program", "operator '", op, "' has no attribute '", unknown[1L], "' (it has: ",
                        paste(names(def$attrs), collapse = ", "), ")", call = call)
  }
  at <- def$attrs
  for (nm in names(attrs)) at[nm] <- list(attrs[[nm]])
  missing <- names(at)[vapply(at, is.null, TRUE)]
  if (length(missing)) {
    .rllm_program_abort("program", "operator '", op, "' needs attribute '", missing[1L], "'", call = call)
  }
  at <- lapply(names(at), function(nm) {
    v <- at[[nm]]
    # mode, mask and state are names, not expressions
    if (nm %in% .rllm_name_attrs) v else .rllm_expr_text(v, paste0("operator '", op, "' attribute '", nm, "'"), call)
  })
  names(at) <- names(def$attrs)
  .rllm_node(x$b, op, args = args, attrs = at)
}

#' Operators of architecture programs
#'
#' Each appends one node to the program being built and returns its
#' symbolic tensor; the first argument is a symbolic tensor, so they
#' compose with the base pipe. Attributes are expressions (see
#' [rllm_program()]). [rllm_ops()] lists the vocabulary with each
#' operator's meaning; `x + y` and `x * y` of symbolic tensors are `op_add`
#' and `op_mul`.
#' @param x,y,gate,up,q,k,v,ids,w,pos symbolic tensors.
#' @param eps,group,s,n_head,n_head_kv,n_rot,base,scale,window attribute
#'   expressions.
#' @param mode `"normal"` or `"neox"` (RoPE pairs).
#' @param mask `"causal"`, `"full"`, `"swa_causal"` or `"swa_sym"`.
#' @return A symbolic tensor.
#' @name rllm_operators
NULL

#' @rdname rllm_operators
#' @export
op_get_rows <- function(ids, w) .rllm_op("get_rows", list(ids, w), list())
#' @rdname rllm_operators
#' @export
op_matmul <- function(x, w) .rllm_op("matmul", list(x, w), list())
#' @rdname rllm_operators
#' @export
op_add <- function(x, y) .rllm_op("add", list(x, y), list())
#' @rdname rllm_operators
#' @export
op_mul <- function(x, y) .rllm_op("mul", list(x, y), list())
#' @rdname rllm_operators
#' @export
op_scale <- function(x, s) .rllm_op("scale", list(x), list(s = s))
#' @rdname rllm_operators
#' @export
op_rms_norm <- function(x, eps, group = 0) .rllm_op("rms_norm", list(x), list(eps = eps, group = group))
#' @rdname rllm_operators
#' @export
op_layer_norm <- function(x, eps) .rllm_op("layer_norm", list(x), list(eps = eps))
#' @rdname rllm_operators
#' @export
op_rope <- function(x, pos, n_head, n_rot, base = 10000, mode = c("normal", "neox")) {
  .rllm_op("rope", list(x, pos), list(n_head = n_head, n_rot = n_rot, base = base, mode = match.arg(mode)))
}
#' @rdname rllm_operators
#' @export
op_attention <- function(q, k, v, pos, n_head, n_head_kv, scale,
                         mask = c("causal", "full", "swa_causal", "swa_sym"), window = 0) {
  .rllm_op("attention", list(q, k, v, pos), list(n_head = n_head, n_head_kv = n_head_kv, scale = scale,
                                                mask = match.arg(mask), window = window))
}
#' @rdname rllm_operators
#' @export
op_attention_probs <- function(q, k, pos, n_head, n_head_kv, scale,
                               mask = c("causal", "full", "swa_causal", "swa_sym"), window = 0, key_mask = NULL) {
  .rllm_op("attention_probs", c(list(q, k, pos), if (!is.null(key_mask)) list(key_mask)),
           list(n_head = n_head, n_head_kv = n_head_kv, scale = scale, mask = match.arg(mask), window = window))
}
#' @rdname rllm_operators
#' @param p a symbolic tensor: pair maps (attention probabilities).
#' @export
op_attend <- function(p, v, n_head_kv) .rllm_op("attend", list(p, v), list(n_head_kv = n_head_kv))
#' @rdname rllm_operators
#' @export
op_silu <- function(x) .rllm_op("silu", list(x), list())
#' @rdname rllm_operators
#' @export
op_gelu <- function(x) .rllm_op("gelu", list(x), list())
#' @rdname rllm_operators
#' @export
op_gelu_erf <- function(x) .rllm_op("gelu_erf", list(x), list())
#' @rdname rllm_operators
#' @export
op_sigmoid <- function(x) .rllm_op("sigmoid", list(x), list())
#' @rdname rllm_operators
#' @param mask_id,ratio attribute expressions: the mask token's id and the
#'   training masking ratio (ESM-2: 0.15 x 0.8).
#' @param valid,key_mask,m symbolic masks `[1, n]` (an input of kind
#'   `"mask"`, or [op_ne_id()], or their product): `valid` the positions
#'   token dropout counts (the others zeroed), `key_mask` the keys
#'   attention may read; `NULL` for all.
#' @export
op_token_dropout <- function(x, ids, mask_id, ratio, valid = NULL) {
  .rllm_op("token_dropout", c(list(x, ids), if (!is.null(valid)) list(valid)), list(mask_id = mask_id, ratio = ratio))
}
#' @rdname rllm_operators
#' @param id attribute expression: a token id.
#' @export
op_ne_id <- function(ids, id) .rllm_op("ne_id", list(ids), list(id = id))
#' @rdname rllm_operators
#' @export
op_pair_mask <- function(p, m) .rllm_op("pair_mask", list(p, m), list())
#' @rdname rllm_operators
#' @export
op_concat <- function(x, y) .rllm_op("concat", list(x, y), list())
#' @rdname rllm_operators
#' @export
op_pair_crop <- function(x, left, right) .rllm_op("pair_crop", list(x), list(left = left, right = right))
#' @rdname rllm_operators
#' @export
op_symmetrize <- function(x) .rllm_op("symmetrize", list(x), list())
#' @rdname rllm_operators
#' @export
op_apc <- function(x) .rllm_op("apc", list(x), list())
#' @rdname rllm_operators
#' @export
op_head_mix <- function(x, w, b = NULL) .rllm_op("head_mix", c(list(x, w), if (!is.null(b)) list(b)), list())
#' @rdname rllm_operators
#' @export
op_swiglu <- function(gate, up) .rllm_op("swiglu", list(gate, up), list())
#' @rdname rllm_operators
#' @export
op_softmax <- function(x) .rllm_op("softmax", list(x), list())
#' @rdname rllm_operators
#' @export
op_geglu <- function(gate, up) .rllm_op("geglu", list(gate, up), list())
#' @rdname rllm_operators
#' @param b a symbolic tensor: a bias (an absent optional parameter: none).
#' @param dilation an attribute expression.
#' @export
op_conv1d <- function(x, w, b, dilation = 1) .rllm_op("conv1d", list(x, w, b), list(dilation = dilation))
#' @rdname rllm_operators
#' @param mean,var symbolic tensors: running statistics.
#' @export
op_batchnorm <- function(x, mean, var, w, b, eps = 1e-5) {
  .rllm_op("batchnorm", list(x, mean, var, w, b), list(eps = eps))
}
#' @rdname rllm_operators
#' @param slope an attribute expression.
#' @export
op_leaky_relu <- function(x, slope) .rllm_op("leaky_relu", list(x), list(slope = slope))
#' @rdname rllm_operators
#' @param left,right attribute expressions: positions dropped.
#' @export
op_crop <- function(x, left, right) .rllm_op("crop", list(x), list(left = left, right = right))
#' @rdname rllm_operators
#' @param type an attribute expression: the pooling (1 mean, 2 first, 3 last).
#' @export
op_pool <- function(x, type) .rllm_op("pool", list(x), list(type = type))
#' @rdname rllm_operators
#' @param start,count attribute expressions: the first row (0-based) and
#'   the number of rows.
#' @export
op_rows <- function(x, start, count) .rllm_op("rows", list(x), list(start = start, count = count))
#' @rdname rllm_operators
#' @param kernel a symbolic tensor (the convolution's kernel).
#' @param state the name of the program's state holding the last inputs.
#' @export
op_conv_causal <- function(x, kernel, state = "") {
  .rllm_op("conv_causal", list(x, kernel), list(state = state))
}
#' @rdname rllm_operators
#' @param router,down symbolic tensors (the experts' router and matrices).
#' @param n_used,norm,gating attribute expressions: experts per position,
#'   whether their weights are renormalized to sum 1, and the router's
#'   function (1 softmax, 2 sigmoid).
#' @param bias `NULL` or a symbolic tensor: added to the router's
#'   probabilities for the choice of experts only.
#' @export
op_moe <- function(x, router, gate, up, down, n_used, norm = 1, gating = 1, bias = NULL) {
  .rllm_op("moe", c(list(x, router, gate, up, down), if (!is.null(bias)) list(bias)),
           list(n_used = n_used, norm = norm, gating = gating))
}

#' @export
Ops.rllm_sym <- function(e1, e2) {
  switch(.Generic, "+" = op_add(e1, e2), "*" = op_mul(e1, e2),
         .rllm_program_abort("program", "symbolic tensors have + and * (op_add, op_mul); for '",
                             .Generic, "' use an operator of rllm_ops()"))
}
