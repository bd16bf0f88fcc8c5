# Pooled embeddings (core: fm_llm_embed; glue: src/r_model.c).

#' Pooled embeddings of texts or token sequences
#'
#' Evaluates each sequence in one batch from position 0, with the model's
#' own attention (causal unless the metadata's
#' `<arch>.attention.causal` is false, as for embedding models), takes the
#' hidden states after the final norm (and any projection the architecture
#' adds) and pools them. The KV cache of this pass is transient and F32,
#' as llama.cpp keeps embedding-model states in F32.
#'
#' @param model an `rllm_model`.
#' @param x a character vector (each string one sequence, tokenized with
#'   [rllm_tokenize()] and `add_special`), an integer vector of 0-based
#'   token ids (one sequence), or a list of such vectors.
#' @param pooling `"model"` (the model's `<arch>.pooling_type` when it names
#'   mean, cls or last; otherwise mean), `"mean"` (average over tokens),
#'   `"cls"` (the first token's state) or `"last"` (the last token's).
#' @param normalize `TRUE` to scale each embedding to unit Euclidean norm.
#' @param add_special passed to [rllm_tokenize()] for text.
#' @return A numeric matrix with `model$info$n_embd_out` rows and one column
#'   per sequence (named by `x` when it is a named or character vector).
#'   A sequence longer than the model's training context is embedded after
#'   a warning of class `"rllm_warning_context"`.
#' @section Errors: `fm_error_earg` for an empty sequence, token ids outside
#'   the vocabulary or `NA`, `NA` strings, or text without a tokenizer;
#'   `fm_error_eclosed` for a model restored from a saved session;
#'   `fm_error_eformat` when the GGUF file shrank on disk since it was
#'   opened; `fm_error_ecancelled` (an interrupt condition) when the user
#'   interrupts.
#' @source Pooling as llama.cpp's `LLAMA_POOLING_TYPE_{MEAN,CLS,LAST}`
#'   (the numbering of GGUF's `pooling_type`).
#' @examples
#' f <- Sys.getenv("RFMALLOC_FIXTURES")
#' p <- file.path(f, "gguf", "stories260K.gguf")
#' if (nzchar(f) && file.exists(p)) {
#'   m <- rllm_gguf_model(p, threads = 1)
#'   e <- rllm_embed(m, c(a = "Once upon a time", b = "The cat sat"))
#'   dim(e)
#' }
#' @export
rllm_embed <- function(model, x, pooling = c("model", "mean", "cls", "last"),
                       normalize = FALSE, add_special = TRUE) {
  .rllm_check_model(model)
  pooling <- fm_arg_choice(pooling, c("model", "mean", "cls", "last"))
  pool_id <- switch(pooling, model = -1L, mean = 1L, cls = 2L, last = 3L)
  if (!is.logical(normalize) || length(normalize) != 1L || is.na(normalize)) {
    Rfmalloc::fm_abort("earg", "normalize must be TRUE or FALSE")
  }
  nms <- names(x)
  if (is.character(x)) {
    if (anyNA(x)) Rfmalloc::fm_abort("earg", "x has missing strings")
    if (is.null(nms)) nms <- x
    seqs <- lapply(seq_along(x), function(j) .rllm_text_ids(model, x[[j]], sprintf("sequence %d", j),
                                                            add_special))
  } else if (is.list(x)) {
    seqs <- x
  } else {
    seqs <- list(x)
  }
  if (!length(seqs)) Rfmalloc::fm_abort("earg", "x holds no sequence")
  out <- matrix(0, nrow = model$info$n_embd_out, ncol = length(seqs))
  for (j in seq_along(seqs)) {
    ids <- .rllm_check_tokens(seqs[[j]], model$info$n_vocab, sprintf("sequence %d", j))
    .rllm_warn_context(model, length(ids), sprintf("sequence %d has", j), call = sys.call())
    e <- .Call(C_rllm_embed, model$ptr, ids, pool_id)
    if (normalize) {
      nrm <- sqrt(sum(e * e))
      if (nrm > 0) e <- e / nrm
    }
    out[, j] <- e
  }
  if (!is.null(nms) && length(nms) == ncol(out)) colnames(out) <- nms
  out
}
