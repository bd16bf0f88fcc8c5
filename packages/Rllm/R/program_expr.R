# Expressions of architecture programs: shapes, conditions and attribute
# values written over a program's hyperparameter names, the layer variable
# of a loop and numbers. Frozen as text; evaluated here by walking the
# parsed call with a fixed table of functions, so a frozen program runs no
# code of its own (no lookup outside `env`, no other function).

.rllm_expr_fns <- list(
  "+" = `+`, "-" = `-`, "*" = `*`, "/" = `/`, "%/%" = `%/%`, "%%" = `%%`, "^" = `^`,
  "==" = `==`, "!=" = `!=`, "<" = `<`, "<=" = `<=`, ">" = `>`, ">=" = `>=`,
  "&" = `&`, "|" = `|`, "!" = `!`, "&&" = `&&`, "||" = `||`, "(" = function(x) x,
  "[" = function(x, i) if (length(x) == 1L) x else x[[i + 1]], # 0-based; a scalar is every layer's
  "ifelse" = function(test, yes, no) if (isTRUE(test)) yes else no,
  "min" = min, "max" = max, "sqrt" = sqrt, "as.integer" = as.integer, "length" = length)

# The text of an expression given as a string, a number, a logical or a
# call (quote()); NULL stays NULL.
.rllm_expr_text <- function(x, what, call = sys.call(-1L)) {
  if (is.null(x)) return(NULL)
  if (is.language(x)) return(paste(deparse(x, width.cutoff = 500L), collapse = " "))
  if ((is.numeric(x) || is.logical(x)) && length(x) == 1L && !is.na(x)) {
    return(format(x, digits = 17L, scientific = FALSE))
  }
  if (is.character(x) && length(x) == 1L && !is.na(x) && nzchar(x)) {
    tryCatch(str2lang(x), error = function(e) {
      .rllm_program_abort("program", what, " is not an expression: '", x, "' (", conditionMessage(e),
                          ")", call = call)
    })
    return(x)
  }
  .rllm_program_abort("program", what, " must be an expression (a string such as \"n_embd / n_head\", ",
                      "a number or a quote()d call), not ", .rllm_describe(x), call = call)
}

# The names an expression reads (variables).
.rllm_expr_names <- function(text) {
  if (is.null(text)) return(character())
  all.vars(str2lang(text))
}

# Value of expression `text` with the variables of `env` (a named list).
.rllm_expr_eval <- function(text, env, what) {
  walk <- function(e) {
    if (is.numeric(e) || is.logical(e) || is.character(e)) return(e)
    if (is.name(e)) {
      v <- as.character(e)
      if (!v %in% names(env)) {
        .rllm_program_abort("program", what, ": '", text, "' reads '", v,
                            "', which is not a hyperparameter or loop variable of the program")
      }
      return(env[[v]])
    }
    if (is.call(e)) {
      f <- as.character(e[[1L]])
      fn <- .rllm_expr_fns[[f]]
      if (length(f) != 1L || is.null(fn)) {
        .rllm_program_abort("program", what, ": '", text, "' calls '", paste(f, collapse = ""),
                            "', which expressions of programs do not have (only arithmetic, ",
                            "comparisons, logic, [ ], ifelse, min, max, sqrt, length)")
      }
      args <- lapply(as.list(e)[-1L], walk)
      return(do.call(fn, args))
    }
    .rllm_program_abort("program", what, ": '", text, "' is not an expression")
  }
  walk(str2lang(text))
}

# A classed error: rllm_error_<kind>, rllm_error_program and
# fm_error_<status> (earg: the program is wrong; eformat: the file does not
# fit it).
.rllm_program_abort <- function(kind, ..., call = NULL, status = "earg") {
  msg <- paste0(...)
  stop(structure(class = unique(c(paste0("rllm_error_", kind), "rllm_error_program",
                                  paste0("fm_error_", status), "fm_error", "error", "condition")),
                 list(message = msg, call = call)))
}
