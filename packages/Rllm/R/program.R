# Architecture programs: a model written as an R function over symbolic
# tensors, traced once into data (docs/programs.md). The builder is an
# environment; every operator call appends a node to the innermost open
# body (the program's, a loop's or a branch's); a symbolic tensor is the id
# of its node and the builder it belongs to.

.rllm_builder <- function(name) {
  b <- new.env(parent = emptyenv())
  b$name <- name
  b$hparams <- list()
  b$inputs <- list()
  b$params <- list()
  b$state <- list()
  b$outputs <- list()
  b$taps <- list()
  b$n <- 0L
  b$bodies <- list(list()) # a stack of node lists; [[1]] the program's
  b$vars <- character()    # loop variables in scope
  b
}

.rllm_sym <- function(b, id) structure(list(id = id, b = b), class = "rllm_sym")

#' @export
print.rllm_sym <- function(x, ...) {
  cat(sprintf("<rllm symbolic tensor %s of program '%s'>\n", x$id, x$b$name))
  invisible(x)
}

.rllm_is_sym <- function(x) inherits(x, "rllm_sym")

# Append a node to the innermost body; returns its symbolic tensor.
.rllm_node <- function(b, op, args = list(), attrs = list(), extra = list()) {
  for (a in args) {
    if (!.rllm_is_sym(a) || !identical(a$b, b)) {
      .rllm_program_abort("program", "operator '", op, "': its inputs must be symbolic tensors of ",
                          "this program, not ", .rllm_describe(a))
    }
  }
  b$n <- b$n + 1L
  id <- paste0("n", b$n)
  node <- c(list(id = id, op = op, args = vapply(args, function(a) a$id, ""), attrs = attrs), extra)
  k <- length(b$bodies)
  b$bodies[[k]][[length(b$bodies[[k]]) + 1L]] <- node
  .rllm_sym(b, id)
}

# Trace fn(...) into a body of its own: the nodes it appends and its result.
.rllm_trace_body <- function(b, fn, args, vars = character()) {
  b$bodies[[length(b$bodies) + 1L]] <- list()
  old_vars <- b$vars
  b$vars <- c(b$vars, vars)
  on.exit({
    b$bodies[[length(b$bodies)]] <- NULL
    b$vars <- old_vars
  })
  res <- do.call(fn, args)
  list(nodes = b$bodies[[length(b$bodies)]], result = res)
}

.rllm_builder_of <- function(p) {
  if (is.environment(p) && inherits(p, "rllm_builder")) return(p)
  .rllm_program_abort("program", "p must be the program being built (the argument of the function ",
                      "given to rllm_program()), not ", .rllm_describe(p), call = sys.call(-1L))
}

#' Architecture programs
#'
#' A model as a data-only program: typed inputs, parameters named by GGUF
#' patterns with symbolic shapes, operators of a versioned vocabulary,
#' loops over layers with per-layer choices, declared state and named
#' outputs and taps. `rllm_program()` takes a function that builds the
#' model with the constructors below (and the `op_*()` operators, which
#' compose with the base pipe); `rllm_freeze()` traces it once into a plain
#' list that `saveRDS()` and JSON ([rllm_program_json()]) round-trip;
#' [rllm_validate()] checks it; [rllm_execute()] runs it densely in R.
#'
#' Expressions (shapes, conditions, attribute values) are strings such as
#' `"n_embd / n_head"` or `"n_head_kv[i] > 0"` (or numbers, or `quote()`d
#' calls) over the program's hyperparameter names, the variables of the
#' enclosing loops and numbers; they may use arithmetic, comparisons,
#' logic, `[ ]` (0-based, for per-layer hyperparameters), `ifelse`, `min`,
#' `max`, `sqrt` and `length`, nothing else, so a frozen program runs no
#' code.
#'
#' @param name the program's name (usually GGUF's `general.architecture`).
#' @param build a function of one argument, `p`, the program being built.
#' @return `rllm_program()`: an `rllm_program` (the name and the function,
#'   not yet traced). `rllm_freeze()`: an `rllm_frozen_program`, a plain
#'   list: `format` ("rllm_program"), `version`, `vocabulary` (the operator
#'   vocabulary's version), `name`, `hparams`, `inputs`, `params`, `state`,
#'   `nodes` (each a list of `id`, `op`, `args` (node ids), `attrs`, and for
#'   loops and branches their bodies), `outputs` and `taps` (named node
#'   ids).
#' @section Errors: `rllm_error_program` (an `fm_error_earg`) naming the
#'   operator, parameter or expression at fault.
#' @source SPEC "A model is another typed array program"; the operators'
#'   sources are listed in [rllm_ops()].
#' @export
rllm_program <- function(name, build) {
  if (!is.character(name) || length(name) != 1L || is.na(name) || !nzchar(name)) {
    .rllm_program_abort("program", "name must be one non-empty string, not ", .rllm_describe(name),
                        call = sys.call())
  }
  if (!is.function(build)) {
    .rllm_program_abort("program", "build must be a function of the program being built, not ",
                        .rllm_describe(build), call = sys.call())
  }
  structure(list(name = name, build = build), class = "rllm_program")
}

#' @rdname rllm_program
#' @param program an `rllm_program`, or an `rllm_frozen_program` (returned
#'   as it is).
#' @export
rllm_freeze <- function(program) {
  if (inherits(program, "rllm_frozen_program")) return(program)
  if (!inherits(program, "rllm_program")) {
    .rllm_program_abort("program", "program must come from rllm_program(), not ",
                        .rllm_describe(program), call = sys.call())
  }
  b <- .rllm_builder(program$name)
  class(b) <- "rllm_builder"
  program$build(b)
  if (!length(b$outputs)) {
    .rllm_program_abort("program", "program '", program$name, "' declares no output (rllm_output())",
                        call = sys.call())
  }
  structure(list(format = "rllm_program", version = 1L, vocabulary = .rllm_vocabulary_version,
                 name = program$name, hparams = b$hparams, inputs = b$inputs, params = b$params,
                 state = b$state, nodes = b$bodies[[1L]], outputs = b$outputs, taps = b$taps),
            class = "rllm_frozen_program")
}

#' @rdname rllm_program
#' @param p the program being built.
#' @param key the GGUF metadata key; `{arch}` stands for the file's
#'   `general.architecture`.
#' @param default an expression used when the key is absent (`NULL`: the
#'   key is required).
#' @param per_layer `TRUE` for a per-layer hyperparameter (GGUF stores a
#'   scalar, broadcast to every layer, or an array of one value per layer).
#' @param valid an expression over the hyperparameters bound so far and
#'   this one (e.g. `"eps >= 0 & eps < 1"`) that a value read from the file
#'   must satisfy (every element, per layer); values must be finite.
#' @export
rllm_hparam <- function(p, name, key = NULL, default = NULL, per_layer = FALSE, valid = NULL) {
  b <- .rllm_builder_of(p)
  .rllm_check_name(name, "hyperparameter", b$hparams)
  if (is.null(key) && is.null(default)) {
    .rllm_program_abort("program", "hyperparameter '", name, "' needs a key or a default",
                        call = sys.call())
  }
  b$hparams[[name]] <- list(key = key, default = .rllm_expr_text(default, paste0("hyperparameter '", name, "' default")),
                            per_layer = isTRUE(per_layer),
                            valid = .rllm_expr_text(valid, paste0("hyperparameter '", name, "' valid")))
  invisible(name)
}

#' @rdname rllm_program
#' @param kind of an input: `"token_ids"` (integer ids, one per position),
#'   `"positions"`, `"mask"` (0/1 per position), `"sequence"` (a float
#'   matrix, channels x positions); of a state: `"kv"`, `"conv_ring"` or
#'   `"recurrent"`.
#' @param shape symbolic dimensions: a character vector of expressions
#'   (GGML order: `ne0` first); `"n"` is a free extent bound by the input.
#' @export
rllm_input <- function(p, name, kind = c("token_ids", "positions", "mask", "sequence"),
                       shape = "n") {
  b <- .rllm_builder_of(p)
  kind <- match.arg(kind)
  .rllm_check_name(name, "input", b$inputs)
  b$inputs[[name]] <- list(kind = kind, shape = .rllm_shape_text(shape, paste0("input '", name, "'")))
  .rllm_node(b, "input", attrs = list(name = name))
}

#' @rdname rllm_program
#' @param pattern the tensor's GGUF name; `{i}` (any loop variable in
#'   braces) is replaced by its value.
#' @param types accepted tensor types: `"matmul"` (any type GGML multiplies
#'   with F32 activations), `"f32"`, or GGML type names.
#' @param optional `TRUE` when the tensor may be absent (the node is then
#'   `NULL` to operators that take an optional weight, such as biases).
#' @param alias a pattern read when `pattern` is absent (tied output
#'   embeddings: `"token_embd.weight"`).
#' @export
rllm_param <- function(p, pattern, shape, types = "matmul", optional = FALSE, alias = NULL) {
  b <- .rllm_builder_of(p)
  if (!is.character(pattern) || length(pattern) != 1L || is.na(pattern) || !nzchar(pattern)) {
    .rllm_program_abort("program", "a parameter's pattern must be one string, not ",
                        .rllm_describe(pattern), call = sys.call())
  }
  # {expr}: an expression over the loop variables in scope (e.g. {5 * g + u})
  exprs <- gsub("[{}]", "", regmatches(pattern, gregexpr("\\{[^}]*\\}", pattern))[[1L]])
  for (e in exprs) {
    bad <- setdiff(.rllm_expr_names(.rllm_expr_text(e, paste0("parameter '", pattern, "'"))), b$vars)
    if (length(bad)) {
      .rllm_program_abort("program", "parameter '", pattern, "' names {", bad[1L], "}, which is not a ",
                          "loop variable in scope", call = sys.call())
    }
  }
  decl <- list(shape = .rllm_shape_text(shape, paste0("parameter '", pattern, "'")),
               types = as.character(types), optional = isTRUE(optional), alias = alias)
  if (!is.null(b$params[[pattern]]) && !identical(b$params[[pattern]], decl)) {
    .rllm_program_abort("program", "parameter '", pattern, "' is declared twice, differently",
                        call = sys.call())
  }
  b$params[[pattern]] <- decl
  .rllm_node(b, "param", attrs = list(pattern = pattern))
}

#' @rdname rllm_program
#' @export
rllm_state <- function(p, name, kind = c("kv", "conv_ring", "recurrent"), shape) {
  b <- .rllm_builder_of(p)
  kind <- match.arg(kind)
  .rllm_check_name(name, "state", b$state)
  b$state[[name]] <- list(kind = kind, shape = .rllm_shape_text(shape, paste0("state '", name, "'")))
  invisible(name)
}

#' @rdname rllm_program
#' @param x a symbolic tensor.
#' @export
rllm_output <- function(p, name, x) {
  b <- .rllm_builder_of(p)
  .rllm_check_name(name, "output", b$outputs)
  if (length(b$bodies) != 1L) {
    .rllm_program_abort("program", "output '", name, "' must be declared outside loops and branches ",
                        "(rllm_tap() marks a node inside them)", call = sys.call())
  }
  b$outputs[[name]] <- .rllm_sym_id(b, x, paste0("output '", name, "'"))
  invisible(x)
}

#' @rdname rllm_program
#' @export
rllm_tap <- function(p, name, x) {
  b <- .rllm_builder_of(p)
  .rllm_check_name(name, "tap", b$taps)
  b$taps[[name]] <- list(id = .rllm_sym_id(b, x, paste0("tap '", name, "'")), vars = b$vars)
  invisible(x)
}

#' @rdname rllm_program
#' @param over the number of iterations (an expression, e.g. `"n_layer"`).
#' @param var the loop variable's name (0-based iteration index).
#' @param carry a symbolic tensor or a named list of them: the state carried
#'   from one iteration to the next.
#' @param body a function of the carried state (as `carry`) and the loop
#'   variable's symbol name, returning the next state (same structure),
#'   plus, with `collect`, the values to collect.
#' @param collect names of values the body also returns that are not
#'   carried but collected: each iteration's value, concatenated in order
#'   along the features (`op_concat()`: an activation's rows, pair maps'
#'   channels), e.g. every layer's attention maps.
#' @return `rllm_loop()`: the carried state after the last iteration (as
#'   `carry`); with `collect`, a named list of the carried state and the
#'   collected values.
#' @export
rllm_loop <- function(p, over, var = "i", carry, body, collect = character()) {
  b <- .rllm_builder_of(p)
  over <- .rllm_expr_text(over, "the loop's count")
  one <- .rllm_is_sym(carry)
  carry <- if (one) list(x = carry) else carry
  if (!is.list(carry) || !length(carry) || is.null(names(carry)) || !all(vapply(carry, .rllm_is_sym, TRUE))) {
    .rllm_program_abort("program", "carry must be a symbolic tensor or a named list of them",
                        call = sys.call())
  }
  # placeholders: the carried values as the body sees them
  b$n <- b$n + 1L
  lid <- paste0("n", b$n)
  holders <- lapply(seq_along(carry), function(k) .rllm_sym(b, paste0(lid, ".in.", names(carry)[k])))
  names(holders) <- names(carry)
  collect <- as.character(collect)
  if (anyNA(collect) || anyDuplicated(collect) || any(collect %in% names(carry))) {
    .rllm_program_abort("program", "collect must name values other than the carried ones, once each",
                        call = sys.call())
  }
  tr <- .rllm_trace_body(b, body, list(if (one) holders[[1L]] else holders, var), vars = var)
  res <- if (one && !length(collect)) list(x = tr$result) else tr$result
  want <- c(names(carry), collect)
  if (!is.list(res) || !identical(sort(names(res)), sort(want)) || !all(vapply(res, .rllm_is_sym, TRUE))) {
    .rllm_program_abort("program", "the body of loop ", lid, " must return the carried state ",
                        "with the same names (", paste(want, collapse = ", "), ")", call = sys.call())
  }
  attrs <- list(over = over, var = var, carry = names(carry))
  if (length(collect)) attrs$collect <- collect
  node <- list(id = lid, op = "loop", args = unname(vapply(carry, function(a) a$id, "")),
               attrs = attrs, body = tr$nodes, result = unname(vapply(res[want], function(a) a$id, "")))
  k <- length(b$bodies)
  b$bodies[[k]][[length(b$bodies[[k]]) + 1L]] <- node
  outs <- lapply(want, function(nm) .rllm_sym(b, paste0(lid, ".out.", nm)))
  names(outs) <- want
  if (one && !length(collect)) outs[[1L]] else outs
}

#' @rdname rllm_program
#' @param cond an expression chosen at bind time (e.g. `"n_head_kv[i] > 0"`).
#' @param yes,no functions of `x` returning a symbolic tensor: the branch
#'   taken when `cond` is true or false.
#' @export
rllm_when <- function(p, cond, x, yes, no) {
  b <- .rllm_builder_of(p)
  cond <- .rllm_expr_text(cond, "the branch's condition")
  b$n <- b$n + 1L
  wid <- paste0("n", b$n)
  hold <- .rllm_sym(b, paste0(wid, ".in"))
  ty <- .rllm_trace_body(b, yes, list(hold))
  tn <- .rllm_trace_body(b, no, list(hold))
  for (r in list(ty$result, tn$result)) {
    if (!.rllm_is_sym(r)) {
      .rllm_program_abort("program", "both branches of ", wid, " must return a symbolic tensor",
                          call = sys.call())
    }
  }
  node <- list(id = wid, op = "when", args = .rllm_sym_id(b, x, "the branch's input"),
               attrs = list(cond = cond), yes = ty$nodes, no = tn$nodes,
               result_yes = ty$result$id, result_no = tn$result$id)
  k <- length(b$bodies)
  b$bodies[[k]][[length(b$bodies[[k]]) + 1L]] <- node
  .rllm_sym(b, paste0(wid, ".out"))
}

.rllm_sym_id <- function(b, x, what) {
  if (!.rllm_is_sym(x) || !identical(x$b, b)) {
    .rllm_program_abort("program", what, " must be a symbolic tensor of this program, not ",
                        .rllm_describe(x), call = sys.call(-2L))
  }
  x$id
}

.rllm_check_name <- function(name, what, have) {
  if (!is.character(name) || length(name) != 1L || is.na(name) || !grepl("^[A-Za-z_][A-Za-z0-9_.]*$", name)) {
    .rllm_program_abort("program", "a ", what, "'s name must be one identifier, not ",
                        .rllm_describe(name), call = sys.call(-2L))
  }
  if (!is.null(have[[name]])) {
    .rllm_program_abort("program", what, " '", name, "' is declared twice", call = sys.call(-2L))
  }
}

.rllm_shape_text <- function(shape, what) {
  if (is.language(shape)) shape <- list(shape)
  vapply(seq_along(shape), function(k) .rllm_expr_text(shape[[k]], paste0(what, " dimension ", k)), "")
}

#' @rdname rllm_program
#' @param json a string from `rllm_program_json()`.
#' @return `rllm_program_json()`: the frozen program as JSON text (needs
#'   the jsonlite package); `rllm_program_from_json()`: the frozen program
#'   again, identical to the one written.
#' @export
rllm_program_json <- function(program) {
  prog <- rllm_freeze(program)
  if (!requireNamespace("jsonlite", quietly = TRUE)) {
    .rllm_program_abort("program", "rllm_program_json() needs the jsonlite package", call = sys.call())
  }
  as.character(jsonlite::toJSON(unclass(prog), auto_unbox = TRUE, null = "null", digits = NA))
}

#' @rdname rllm_program
#' @export
rllm_program_from_json <- function(json) {
  if (!requireNamespace("jsonlite", quietly = TRUE)) {
    .rllm_program_abort("program", "rllm_program_from_json() needs the jsonlite package", call = sys.call())
  }
  x <- jsonlite::fromJSON(json, simplifyVector = FALSE)
  if (!identical(x$format, "rllm_program")) {
    .rllm_program_abort("program", "the JSON is not a frozen program (its format is not \"rllm_program\")",
                        call = sys.call())
  }
  chr <- function(v) as.character(unlist(v))
  node <- function(n) {
    n$args <- chr(n$args)
    n$attrs <- lapply(n$attrs, function(a) if (is.list(a)) chr(a) else a)
    for (b in c("body", "yes", "no")) if (!is.null(n[[b]])) n[[b]] <- lapply(n[[b]], node)
    if (!is.null(n$result)) n$result <- chr(n$result)
    n
  }
  x$nodes <- lapply(x$nodes, node)
  x$inputs <- lapply(x$inputs, function(i) { i$shape <- chr(i$shape); i })
  x$params <- lapply(x$params, function(p) { p$shape <- chr(p$shape); p$types <- chr(p$types); p })
  x$state <- lapply(x$state, function(s) { s$shape <- chr(s$shape); s })
  x$outputs <- lapply(x$outputs, chr)
  x$taps <- lapply(x$taps, function(t) { t$vars <- chr(t$vars); t })
  structure(x, class = "rllm_frozen_program")
}

#' @export
print.rllm_frozen_program <- function(x, ...) {
  cat(sprintf("<rllm program '%s' (vocabulary v%d)>\n", x$name, x$vocabulary))
  if (length(x$hparams)) cat("  hyperparameters:", paste(names(x$hparams), collapse = ", "), "\n")
  for (nm in names(x$inputs)) cat(sprintf("  input %s: %s [%s]\n", nm, x$inputs[[nm]]$kind,
                                          paste(x$inputs[[nm]]$shape, collapse = ", ")))
  show <- function(nodes, indent) {
    for (n in nodes) {
      pad <- strrep("  ", indent)
      at <- if (length(n$attrs)) paste0(" {", paste(names(n$attrs), vapply(n$attrs, paste, "", collapse = ","),
                                                    sep = "=", collapse = "; "), "}") else ""
      cat(sprintf("%s%s = %s(%s)%s\n", pad, n$id, n$op, paste(n$args, collapse = ", "), at))
      if (!is.null(n$body)) show(n$body, indent + 1L)
      if (!is.null(n$yes)) { cat(pad, " yes:\n", sep = ""); show(n$yes, indent + 2L) }
      if (!is.null(n$no)) { cat(pad, " no:\n", sep = ""); show(n$no, indent + 2L) }
    }
  }
  show(x$nodes, 1L)
  for (nm in names(x$outputs)) cat(sprintf("  output %s = %s\n", nm, x$outputs[[nm]]))
  for (nm in names(x$taps)) cat(sprintf("  tap %s = %s\n", nm, x$taps[[nm]]$id))
  invisible(x)
}
