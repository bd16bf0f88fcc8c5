# rllm_validate(): checks of a frozen program, alone (structure: known
# operators and attributes, inputs defined before use, expressions over
# names in scope) and against a GGUF file (every parameter of every
# iteration present, of its declared shape).

#' Check an architecture program
#'
#' Alone, checks the structure of a (frozen) program: every node's operator
#' is in the vocabulary ([rllm_ops()]) with its arguments and attributes;
#' every argument is a node defined before it in scope (so there is no
#' cycle); every expression parses and reads only hyperparameters and the
#' variables of the enclosing loops; outputs and taps name nodes. With
#' `weights`, also binds the hyperparameters to the file's metadata and
#' walks every loop iteration and branch taken: every parameter's tensor
#' must be present (or optional, or its alias present) with the declared
#' shape. A dimension written as a name that is not a hyperparameter (such
#' as `"n_vocab"`) is free: its first tensor binds it, and every other use
#' must agree.
#'
#' @param program an `rllm_program` or a frozen one.
#' @param weights `NULL`, or a GGUF file (path or `gguf_file`).
#' @param hparams hyperparameter values used before the metadata.
#' @return `program` frozen, invisibly, when it passes.
#' @section Errors: `rllm_error_program` (an `fm_error_earg`) naming the
#'   node (its id and operator), the attribute, the parameter or the tensor
#'   and what was expected.
#' @export
rllm_validate <- function(program, weights = NULL, hparams = list()) {
  prog <- rllm_freeze(program)
  if (!identical(prog$format, "rllm_program") || !identical(prog$vocabulary, .rllm_vocabulary_version)) {
    .rllm_program_abort("program", "not a frozen program of vocabulary v", .rllm_vocabulary_version,
                        call = sys.call())
  }
  .rllm_validate_body(prog, prog$nodes, defined = character(), vars = character())
  ids <- .rllm_all_ids(prog$nodes)
  for (nm in names(prog$outputs)) {
    if (!prog$outputs[[nm]] %in% ids) .rllm_program_abort("program", "output '", nm, "' names no node")
  }
  for (nm in names(prog$taps)) {
    if (!prog$taps[[nm]]$id %in% ids) .rllm_program_abort("program", "tap '", nm, "' names no node")
  }
  if (!is.null(weights)) .rllm_validate_weights(prog, .rllm_weights(weights), hparams)
  invisible(prog)
}

# Every id a node list defines (nested bodies and loop/branch results
# included).
.rllm_all_ids <- function(nodes) {
  unlist(lapply(nodes, function(n) {
    c(n$id, if (n$op == "loop") paste0(n$id, ".out.", c(n$attrs$carry, n$attrs$collect)),
      if (n$op == "when") paste0(n$id, ".out"),
      .rllm_all_ids(n$body), .rllm_all_ids(n$yes), .rllm_all_ids(n$no))
  }))
}

.rllm_validate_body <- function(prog, nodes, defined, vars) {
  scope_names <- c(names(prog$hparams), vars)
  check_expr <- function(text, what) {
    e <- tryCatch(str2lang(text), error = function(e) NULL)
    if (is.null(e)) .rllm_program_abort("program", what, ": '", text, "' does not parse")
    bad <- setdiff(all.vars(e), scope_names)
    if (length(bad)) {
      .rllm_program_abort("program", what, ": '", text, "' reads '", bad[1L],
                          "', which is not a hyperparameter or loop variable in scope")
    }
  }
  for (n in nodes) {
    what <- sprintf("node %s (%s)", n$id, n$op)
    undefined <- setdiff(n$args, defined)
    if (length(undefined)) {
      .rllm_program_abort("program", what, ": input '", undefined[1L], "' is not a node defined before ",
                          "it in scope (a cycle, or a node of another body)")
    }
    if (n$op == "loop") {
      check_expr(n$attrs$over, paste(what, "count"))
      inner <- c(defined, paste0(n$id, ".in.", n$attrs$carry))
      .rllm_validate_body(prog, n$body, inner, c(vars, n$attrs$var))
      defined <- c(defined, paste0(n$id, ".out.", c(n$attrs$carry, n$attrs$collect)))
      next
    }
    if (n$op == "when") {
      check_expr(n$attrs$cond, paste(what, "condition"))
      .rllm_validate_body(prog, n$yes, c(defined, paste0(n$id, ".in")), vars)
      .rllm_validate_body(prog, n$no, c(defined, paste0(n$id, ".in")), vars)
      defined <- c(defined, paste0(n$id, ".out"))
      next
    }
    if (n$op == "input") {
      if (is.null(prog$inputs[[n$attrs$name]])) .rllm_program_abort("program", what, ": no input '", n$attrs$name, "'")
    } else if (n$op == "param") {
      if (is.null(prog$params[[n$attrs$pattern]])) {
        .rllm_program_abort("program", what, ": parameter '", n$attrs$pattern, "' is not declared")
      }
    } else {
      def <- .rllm_ops[[n$op]]
      if (is.null(def)) {
        .rllm_program_abort("program", what, ": '", n$op, "' is not an operator of vocabulary v",
                            .rllm_vocabulary_version, " (rllm_ops())")
      }
      n_opt <- if (is.null(def$optional_args)) 0L else def$optional_args
      if (length(n$args) < length(def$args) - n_opt || length(n$args) > length(def$args)) {
        .rllm_program_abort("program", what, ": ", length(n$args), " inputs, expected ",
                            if (n_opt) paste0(length(def$args) - n_opt, " to "), length(def$args),
                            " (", paste(def$args, collapse = ", "), ")")
      }
      unknown <- setdiff(names(n$attrs), names(def$attrs))
      if (length(unknown)) .rllm_program_abort("program", what, ": unknown attribute '", unknown[1L], "'")
      for (a in setdiff(names(n$attrs), .rllm_name_attrs)) {
        check_expr(n$attrs[[a]], paste0(what, " attribute '", a, "'"))
      }
    }
    defined <- c(defined, n$id)
  }
  invisible(defined)
}

# Walk every iteration and branch taken with the file's hyperparameters:
# each parameter present (or optional or aliased), of its declared shape.
.rllm_validate_weights <- function(prog, w, given) {
  st <- new.env(parent = emptyenv())
  st$val <- list()
  st$w <- w
  st$prog <- prog
  st$free <- new.env(parent = emptyenv())
  .rllm_walk(st, prog$nodes, .rllm_bind_hparams(prog, w, given), character(), function(node, what, env) {
    if (node$op == "param") .rllm_bind_param(st, node$attrs$pattern, env, what)
    NULL
  })
}

# The file's tensor for a parameter here (its pattern's, else its alias's;
# NULL when absent and optional), checked against the declared shape:
# each dimension's expression, over the hyperparameters, the loop
# variables and free names (a name bound nowhere takes the file's extent
# the first time, st$free, and must match it after). Errors name the
# tensor (rllm_error_program, fm_error_eformat: the file does not fit the
# program).
.rllm_bind_param <- function(st, pattern, env, what) {
  name <- .rllm_resolve_param(st, pattern, env, what)
  if (is.null(name) || is.null(st$w$dir)) return(name)
  r <- st$w$dir[st$w$dir$name == name, ]
  got <- c(r$ne0, r$ne1, r$ne2, r$ne3)[seq_len(r$n_dims)]
  want <- st$prog$params[[pattern]]$shape
  bad <- function(...) {
    .rllm_program_abort("program", what, ": tensor '", name, "' has shape [", paste(got, collapse = ", "),
                        "], but parameter '", pattern, "' declares ", ..., status = "eformat")
  }
  if (length(got) != length(want)) bad(length(want), " dimensions [", paste(want, collapse = ", "), "]")
  for (d in seq_along(want)) {
    e <- str2lang(want[d])
    v <- if (is.name(e) && !as.character(e) %in% names(env)) {
      nm <- as.character(e)
      if (is.null(st$free[[nm]])) assign(nm, got[d], envir = st$free)
      st$free[[nm]]
    } else {
      .rllm_expr_eval(want[d], c(env, as.list(st$free)), paste0("parameter '", pattern, "' shape"))
    }
    if (!isTRUE(all.equal(as.numeric(v), as.numeric(got[d])))) bad("dimension ", d, " = ", want[d], " = ", v)
  }
  name
}
