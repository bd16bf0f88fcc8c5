# Binding a frozen program to a GGUF file for the native lowering
# (fm_llm_program.h): loops unrolled and branches decided per iteration (the
# walk rllm_execute() takes), attributes evaluated, parameters resolved to
# the file's tensor indices; the result is the flat node table the core
# checks and lowers.

# Each operator's attributes as the core reads them: integers (ia) and
# reals (fa), in order; named attributes coded as numbers.
.rllm_native_attrs <- list(
  rms_norm = list(ia = "group", fa = "eps"),
  layer_norm = list(fa = "eps"),
  scale = list(fa = "s"),
  rope = list(ia = c("n_head", "n_rot", "mode"), fa = c("base", "freq_scale")),
  attention = list(ia = c("n_head", "n_head_kv", "mask", "window"), fa = "scale"),
  pool = list(ia = "type"),
  moe = list(ia = c("n_used", "norm", "gating")),
  rows = list(ia = c("start", "count")),
  conv1d = list(ia = "dilation"),
  batchnorm = list(fa = "eps"),
  leaky_relu = list(fa = "slope"),
  crop = list(ia = c("left", "right")),
  attention_probs = list(ia = c("n_head", "n_head_kv", "mask", "window"), fa = "scale"),
  attend = list(ia = "n_head_kv"),
  token_dropout = list(ia = "mask_id", fa = "ratio"),
  ne_id = list(ia = "id"),
  pair_crop = list(ia = c("left", "right")))
.rllm_native_codes <- list(mode = c(normal = 0, neox = 2),
                           mask = c(causal = 0, full = 1, swa_causal = 2, swa_sym = 3))
.rllm_native_types <- c(matmul = 1L, f32 = 2L, rows = 3L)
.rllm_native_inputs <- c(token_ids = 0, positions = 1, sequence = 2, mask = 3)
.rllm_stateful_ops <- c("attention", "conv_causal")

# prog (frozen) on g (a gguf_file): list(name, op, args (n x 6, 0-based,
# -1 none), tensor, type_class, layer, ia (n x 4), fa (n x 2), logits,
# n_ctx_train, embedding; the outputs' nodes, -1 when absent; outputs: the
# nodes of every named output and tap iteration, named "<output>" and
# "<tap>.<k>"); seq_channels: the channels of its sequence input, or 0),
# the argument of C_rllm_model_new_program.
.rllm_bind_native <- function(prog, g, hparams = list()) {
  w <- .rllm_weights(g)
  hp <- .rllm_bind_hparams(prog, w, hparams)
  tensor_index <- stats::setNames(seq_len(nrow(w$dir)) - 1, w$dir$name)
  st <- new.env(parent = emptyenv())
  st$val <- list()
  st$w <- w
  st$prog <- prog
  st$rows <- list()
  st$slot <- 0L
  st$free <- new.env(parent = emptyenv())
  st$taps <- list()
  emit <- function(op, args = integer(), tensor = 0, type_class = 0L, layer = -1L, ia = numeric(),
                   fa = numeric()) {
    st$rows[[length(st$rows) + 1L]] <- list(op = op, args = c(args, rep(-1L, 6L - length(args))),
                                            tensor = tensor, type_class = type_class, layer = layer,
                                            ia = c(ia, rep(0, 4L - length(ia))),
                                            fa = c(fa, rep(0, 2L - length(fa))))
    length(st$rows) - 1L
  }
  .rllm_walk(st, prog$nodes, hp, vapply(prog$taps, `[[`, "", "id"), function(node, what, env) {
    if (node$op == "input") {
      kind <- prog$inputs[[node$attrs$name]]$kind
      if (!kind %in% names(.rllm_native_inputs)) {
        .rllm_program_abort("program", what, ": input kind '", kind, "' has no native lowering yet",
                            call = NULL)
      }
      # a sequence's channels: its first dimension
      ch <- if (kind == "sequence") .rllm_expr_eval(prog$inputs[[node$attrs$name]]$shape[1L], env, what) else 0
      if (kind == "sequence") st$seq_channels <- ch
      return(emit("input", tensor = .rllm_native_inputs[[kind]], ia = ch))
    }
    if (node$op == "param") {
      name <- .rllm_bind_param(st, node$attrs$pattern, env, what)
      if (is.null(name)) return(NA_integer_)
      types <- prog$params[[node$attrs$pattern]]$types
      tc <- if (length(types) && types[1L] %in% names(.rllm_native_types)) .rllm_native_types[[types[1L]]] else 0L
      return(emit("param", tensor = tensor_index[[name]], type_class = tc))
    }
    args <- vapply(node$args, function(id) {
      v <- st$val[[id]]
      if (is.null(v) || is.na(v)) -1L else as.integer(v)
    }, 0L)
    at <- .rllm_node_attrs(node, env, what)
    code <- function(nm) {
      v <- at[[nm]]
      if (is.null(v)) return(if (nm == "freq_scale") 1 else 0)
      if (!is.null(.rllm_native_codes[[nm]])) v <- .rllm_native_codes[[nm]][[v]]
      as.numeric(v)
    }
    spec <- .rllm_native_attrs[[node$op]]
    layer <- -1L
    if (node$op %in% .rllm_stateful_ops) {
      layer <- st$slot
      st$slot <- st$slot + 1L
    }
    emit(node$op, args, layer = layer, ia = vapply(spec$ia, code, 0), fa = vapply(spec$fa, code, 0))
  })
  out_node <- function(name) {
    id <- prog$outputs[[name]]
    if (is.null(id)) -1L else as.integer(st$val[[id]])
  }
  # the per-position output: "logits", else the one output not an embedding
  main <- setdiff(names(prog$outputs), "embedding")
  logits <- out_node(if ("logits" %in% main || length(main) != 1L) "logits" else main)
  embedding <- out_node("embedding")
  if (logits < 0L && embedding < 0L) {
    .rllm_program_abort("program", "program '", prog$name, "' has neither a 'logits' nor an 'embedding' ",
                        "output, which the native runtime evaluates", call = NULL)
  }
  # every output and tap iteration that is a node here (not an absent
  # optional parameter)
  outs <- c(vapply(prog$outputs, function(id) as.numeric(st$val[[id]]), 0),
            unlist(lapply(names(st$taps), function(t) {
              v <- vapply(st$taps[[t]], as.numeric, 0)
              stats::setNames(v, paste0(t, ".", seq_along(v)))
            })))
  outs <- outs[!is.na(outs)]
  rows <- st$rows
  arch <- if (!is.null(w$meta$general.architecture)) w$meta$general.architecture else prog$name
  ctx <- w$meta[[paste0(arch, ".context_length")]]
  list(name = prog$name,
       op = vapply(rows, `[[`, "", "op"),
       args = matrix(vapply(rows, function(r) as.integer(r$args), integer(6)), ncol = 6L, byrow = TRUE),
       tensor = vapply(rows, `[[`, 0, "tensor"),
       type_class = vapply(rows, `[[`, 0L, "type_class"),
       layer = vapply(rows, `[[`, 0L, "layer"),
       ia = matrix(vapply(rows, `[[`, numeric(4), "ia"), ncol = 4L, byrow = TRUE),
       fa = matrix(vapply(rows, `[[`, numeric(2), "fa"), ncol = 2L, byrow = TRUE),
       logits = logits,
       n_ctx_train = if (is.null(ctx)) 0 else as.numeric(ctx),
       embedding = embedding,
       outputs = if (length(outs)) outs else stats::setNames(numeric(), character()),
       seq_channels = if (is.null(st$seq_channels)) 0 else st$seq_channels)
}
