# rllm_execute(): the dense R interpreter of architecture programs, the
# semantic oracle of every native lowering (program_ops.R holds each
# operator's meaning).

#' Run an architecture program densely in R
#'
#' Interprets a program node by node with the operator table of
#' [rllm_ops()], in double precision, from dequantized weights: slow,
#' simple and explicit, the reference every native lowering is tested
#' against. Loops run their body once per iteration; branches are chosen
#' per iteration from their conditions.
#'
#' @param program an `rllm_program` or a frozen one ([rllm_freeze()]).
#' @param weights the parameters: a GGUF file (a path or a `gguf_file` of
#'   [Rgguf::gguf_open()]; matrices are dequantized to doubles), or a named
#'   list of R arrays (a GGUF matrix `[ne0, ne1]` as an `ne1` x `ne0` R
#'   matrix, as [Rgguf::gguf_tensor()] gives it; vectors as numerics).
#' @param inputs a named list: one value per input of the program (token
#'   ids: integers, 0-based; a `"positions"` input may be left out, and is
#'   then 0, 1, ... over the first token-id input's length; a `"mask"`
#'   input is 0 or 1 per position (0 at padding), all 1 when left out).
#' @param hparams a named list of hyperparameter values, used before the
#'   GGUF metadata (needed when `weights` is a list).
#' @param taps `TRUE` to return the taps too.
#' @return A named list of the outputs (matrices `[features, positions]`);
#'   with `taps = TRUE`, also `taps`: per tap, a list of its values (one
#'   per iteration of the loops around it, in order).
#' @section Errors: `rllm_error_program` naming the node (its operator and
#'   id), the parameter or the hyperparameter at fault: a tensor that is
#'   absent, an input not given, a metadata key missing.
#' @source SPEC "A model is another typed array program".
#' @export
rllm_execute <- function(program, weights, inputs, hparams = list(), taps = FALSE) {
  prog <- rllm_freeze(program)
  if (!is.logical(taps) || length(taps) != 1L || is.na(taps)) {
    .rllm_program_abort("program", "taps must be TRUE or FALSE", call = NULL)
  }
  w <- .rllm_weights(weights)
  hp <- .rllm_bind_hparams(prog, w, hparams)
  st <- new.env(parent = emptyenv())
  st$val <- list()
  st$taps <- list()
  st$w <- w
  st$inputs <- .rllm_default_inputs(prog, inputs)
  st$prog <- prog
  tap_ids <- vapply(prog$taps, `[[`, "", "id")
  .rllm_exec_body(st, prog$nodes, hp, tap_ids)
  out <- lapply(prog$outputs, function(id) st$val[[id]])
  if (isTRUE(taps)) out$taps <- st$taps
  out
}

# Weights as list(get = function(name) value or NULL, has = function(name),
# meta = named list of metadata or NULL).
.rllm_weights <- function(weights) {
  if (is.character(weights) && length(weights) == 1L) weights <- Rgguf::gguf_open(weights)
  if (inherits(weights, "gguf_file")) {
    dir <- Rgguf::gguf_tensors(weights)
    return(list(
      has = function(name) name %in% dir$name,
      get = function(name) {
        r <- dir[dir$name == name, ]
        x <- Rgguf::gguf_tensor(weights, name)
        d <- x[, seq_len(ncol(x)), drop = FALSE] # [ne1 * ne2 * ne3, ne0]
        if (r$n_dims == 1L) return(as.numeric(d))
        if (r$n_dims == 2L) return(d)
        # [ne0, ne1, ne2] as an R array ne1 x ne0 x ne2 (a matrix per expert)
        a <- array(0, c(r$ne1, r$ne0, r$ne2 * r$ne3))
        for (e in seq_len(dim(a)[3L])) a[, , e] <- d[(e - 1) * r$ne1 + seq_len(r$ne1), ]
        a
      },
      meta = Rgguf::gguf_metadata(weights), dir = dir))
  }
  if (is.list(weights) && !inherits(weights, "gguf_file") && (!length(weights) || !is.null(names(weights)))) {
    return(list(has = function(name) !is.null(weights[[name]]), get = function(name) weights[[name]],
                meta = NULL))
  }
  .rllm_program_abort("program", "weights must be a GGUF file (path or gguf_file) or a named list of ",
                      "arrays, not ", .rllm_describe(weights), call = sys.call(-1L))
}

# Hyperparameter values, in declaration order: given, else the metadata
# key, else the default expression (over those bound before it).
.rllm_bind_hparams <- function(prog, w, given) {
  arch <- if (!is.null(w$meta$general.architecture)) w$meta$general.architecture else prog$name
  hp <- list()
  for (nm in names(prog$hparams)) {
    h <- prog$hparams[[nm]]
    key <- if (is.null(h$key)) NULL else gsub("{arch}", arch, h$key, fixed = TRUE)
    v <- if (!is.null(given[[nm]])) given[[nm]]
         else if (!is.null(key) && !is.null(w$meta[[key]])) as.vector(w$meta[[key]])
         else if (!is.null(h$default)) .rllm_expr_eval(h$default, hp, paste0("hyperparameter '", nm, "' default"))
         else NULL
    if (is.null(v)) {
      .rllm_program_abort("program", "hyperparameter '", nm, "': metadata key '", key, "' is missing ",
                          "and it has no default", call = NULL, status = "eformat")
    }
    from_file <- is.null(given[[nm]]) && !is.null(key) && !is.null(w$meta[[key]])
    if (from_file && is.numeric(v) && !all(is.finite(v))) {
      .rllm_program_abort("program", "metadata key '", key, "' is ", tolower(format(v[!is.finite(v)][1L])),
                          ", expected a finite number", call = NULL, status = "eformat")
    }
    hp[[nm]] <- v
    if (from_file && !is.null(h$valid) &&
        !isTRUE(all(.rllm_expr_eval(h$valid, hp, paste0("hyperparameter '", nm, "' valid"))))) {
      .rllm_program_abort("program", "metadata key '", key, "' is ", paste(format(v), collapse = ", "),
                          ", which breaks ", h$valid, call = NULL, status = "eformat")
    }
  }
  hp
}

.rllm_default_inputs <- function(prog, inputs) {
  if (!is.list(inputs) || (length(inputs) && is.null(names(inputs)))) {
    .rllm_program_abort("program", "inputs must be a named list, one value per input of the program", call = NULL)
  }
  kinds <- vapply(prog$inputs, `[[`, "", "kind")
  unknown <- setdiff(names(inputs), names(kinds))
  if (length(unknown)) {
    .rllm_program_abort("program", "'", unknown[1L], "' is not an input of the program (its inputs: ",
                        paste(names(kinds), collapse = ", "), ")", call = NULL)
  }
  ids <- names(kinds)[kinds == "token_ids"]
  for (nm in names(kinds)[kinds == "positions"]) {
    if (is.null(inputs[[nm]]) && length(ids)) inputs[[nm]] <- seq_along(inputs[[ids[1L]]]) - 1L
  }
  n <- NULL
  # a mask left out is all 1 (no padding): given last, over the others' positions
  for (nm in names(kinds)[order(kinds == "mask" & vapply(names(kinds), function(k) is.null(inputs[[k]]), TRUE))]) {
    v <- inputs[[nm]]
    if (is.null(v) && kinds[[nm]] == "mask" && !is.null(n)) v <- inputs[[nm]] <- rep(1, n)
    if (is.null(v)) {
      .rllm_program_abort("program", "input '", nm, "' (", kinds[[nm]], ") was not given", call = NULL)
    }
    ok <- switch(kinds[[nm]],
                 sequence = is.matrix(v) && is.numeric(v) && all(is.finite(v)) && ncol(v) >= 1L,
                 mask = (is.numeric(v) || is.logical(v)) && length(v) >= 1L && !anyNA(v) && all(v == 0 | v == 1),
                 is.numeric(v) && length(v) >= 1L && all(is.finite(v)) && all(v == round(v)))
    if (!ok) {
      .rllm_program_abort("program", "input '", nm, "' (", kinds[[nm]], ") must be ",
                          switch(kinds[[nm]], sequence = "a finite numeric matrix [channels, positions]",
                                 mask = "0 or 1 (or FALSE or TRUE) per position, no NA",
                                 "whole numbers, no NA, at least one"), call = NULL)
    }
    len <- if (is.matrix(v) && kinds[[nm]] == "sequence") ncol(v) else length(v)
    if (!is.null(n) && len != n) {
      .rllm_program_abort("program", "input '", nm, "' has ", len, " positions, the others ", n, call = NULL)
    }
    if (kinds[[nm]] == "mask") {
      if (!any(v == 1)) .rllm_program_abort("program", "input '", nm, "' (mask) has no position at 1", call = NULL)
      inputs[[nm]] <- matrix(as.numeric(v), nrow = 1L)
    }
    n <- len
  }
  inputs
}

# Walk a body in order, loops unrolled and branches decided per iteration
# (env: the hyperparameters and loop variables), storing each node's value
# in st$val: leaf(node, what) gives the value of an operator, input or
# parameter node (rllm_execute: a matrix; the native binding: a node
# index).
.rllm_walk <- function(st, nodes, env, tap_ids, leaf) {
  for (node in nodes) {
    what <- sprintf("node %s (%s)", node$id, node$op)
    if (node$op == "loop") {
      n_it <- .rllm_expr_eval(node$attrs$over, env, paste(what, "count"))
      carry <- lapply(node$args, function(id) st$val[[id]])
      names(carry) <- node$attrs$carry
      nc <- length(carry)
      acc <- if (length(node$attrs$collect)) paste0(node$id, ".acc.", node$attrs$collect) else character()
      for (it in seq_len(n_it) - 1L) {
        for (nm in names(carry)) st$val[[paste0(node$id, ".in.", nm)]] <- carry[[nm]]
        env[[node$attrs$var]] <- it
        .rllm_walk(st, node$body, env, tap_ids, leaf)
        carry <- lapply(node$result[seq_len(nc)], function(id) st$val[[id]])
        names(carry) <- node$attrs$carry
        # collected values: concatenated in iteration order
        for (k in seq_along(acc)) {
          v <- node$result[nc + k]
          st$val[acc[k]] <- list(if (it == 0L) st$val[[v]] else
            leaf(list(id = acc[k], op = "concat", args = c(acc[k], v), attrs = list()), what, env))
        }
      }
      env[[node$attrs$var]] <- NULL
      for (nm in names(carry)) .rllm_exec_set(st, paste0(node$id, ".out.", nm), carry[[nm]], tap_ids)
      for (k in seq_along(acc)) {
        .rllm_exec_set(st, paste0(node$id, ".out.", node$attrs$collect[k]), st$val[[acc[k]]], tap_ids)
      }
      next
    }
    if (node$op == "when") {
      yes <- isTRUE(.rllm_expr_eval(node$attrs$cond, env, paste(what, "condition")))
      st$val[[paste0(node$id, ".in")]] <- st$val[[node$args]]
      .rllm_walk(st, if (yes) node$yes else node$no, env, tap_ids, leaf)
      .rllm_exec_set(st, paste0(node$id, ".out"), st$val[[if (yes) node$result_yes else node$result_no]],
                     tap_ids)
      next
    }
    .rllm_exec_set(st, node$id, leaf(node, what, env), tap_ids)
  }
}

# An operator node's attributes, evaluated (names kept as they are).
.rllm_node_attrs <- function(node, env, what) {
  at <- lapply(names(node$attrs), function(nm) {
    v <- node$attrs[[nm]]
    if (nm %in% .rllm_name_attrs) v else .rllm_expr_eval(v, env, paste0(what, " attribute '", nm, "'"))
  })
  names(at) <- names(node$attrs)
  at
}

.rllm_exec_body <- function(st, nodes, env, tap_ids) {
  .rllm_walk(st, nodes, env, tap_ids, function(node, what, env) {
    switch(node$op,
      input = st$inputs[[node$attrs$name]],
      param = .rllm_exec_param(st, node$attrs$pattern, env, what),
      {
        def <- .rllm_ops[[node$op]]
        if (is.null(def)) .rllm_program_abort("program", what, ": unknown operator")
        a <- lapply(node$args, function(id) st$val[[id]])
        names(a) <- def$args[seq_along(a)]
        def$oracle(a, .rllm_node_attrs(node, env, what))
      })
  })
}

# The value of node id, recorded for the taps that name it.
.rllm_exec_set <- function(st, id, val, tap_ids) {
  st$val[id] <- list(val)
  for (t in names(tap_ids)[tap_ids == id]) st$taps[[t]] <- c(st$taps[[t]], list(val))
}

.rllm_exec_param <- function(st, pattern, env, what) {
  name <- .rllm_resolve_param(st, pattern, env, what)
  if (is.null(name)) NULL else st$w$get(name)
}

# The tensor a parameter names here: its pattern's, else its alias's;
# NULL when absent and optional.
.rllm_resolve_param <- function(st, pattern, env, what) {
  name <- .rllm_param_name(pattern, env)
  decl <- st$prog$params[[pattern]]
  if (st$w$has(name)) return(name)
  if (!is.null(decl$alias)) {
    alias <- .rllm_param_name(decl$alias, env)
    if (st$w$has(alias)) return(alias)
  }
  if (isTRUE(decl$optional)) return(NULL)
  .rllm_program_abort("program", what, ": tensor '", name, "' is missing (parameter '", pattern, "')",
                      call = NULL, status = "eformat")
}

# A parameter's tensor name: each {expr} replaced by its value.
.rllm_param_name <- function(pattern, env) {
  for (v in regmatches(pattern, gregexpr("\\{[^}]*\\}", pattern))[[1L]]) {
    val <- .rllm_expr_eval(gsub("[{}]", "", v), env, paste0("parameter '", pattern, "'"))
    pattern <- sub(v, format(val, scientific = FALSE), pattern, fixed = TRUE)
  }
  pattern
}
