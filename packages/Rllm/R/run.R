# rllm_run(): a program's named outputs and taps for one whole sequence,
# natively (fm_llm_run), in one graph.

#' Named outputs of a model's program for one whole sequence
#'
#' Evaluates the model's architecture program natively on one whole
#' sequence, in one graph with nothing cached, and returns the outputs
#' asked for: any named output of the program ([rllm_output()]) or value
#' of a tap ([rllm_tap()]; `"repr.3"` is the third value of tap `"repr"`,
#' e.g. layer 3's output inside a loop over layers). Programs that keep
#' cache state (decoders: attention over a KV cache, LFM2's convolution
#' state) are evaluated by [rllm_logits()] instead; encoders such as ESM-2
#' and OpenSpliceAI come here.
#'
#' @param model an `rllm_model` ([rllm_gguf_model()]).
#' @param tokens token ids (integers, 0-based), for a program with a token
#'   input; `NULL` otherwise.
#' @param sequence a numeric matrix `[channels, positions]` (e.g. one-hot
#'   DNA), for a program with a sequence input; `NULL` otherwise.
#' @param outputs names among `model$outputs`; by default the program's
#'   named outputs (no taps).
#' @param mask for a program with a mask input (`model$has_mask`; ESM-2's
#'   `attention_mask`): 0 or 1 (or `FALSE`/`TRUE`) per position, 0 at
#'   padding, at least one 1; `NULL` for all 1 (no padding). ESM-2 pads at
#'   the end, as ESM's batches do: its contact head drops the first and the
#'   last position, so padding elsewhere changes the contacts.
#' @return A named list: per output, a double matrix `[features,
#'   positions]` (an activation; positions net of the program's crops) or
#'   pair maps, an array `[positions, positions, channels]` (key, query,
#'   channel for attention maps). Values are computed in single precision
#'   (F32, with GGML's
#'   products); see the numerical contract of each operator in the source
#'   repository's docs/programs.md.
#' @section Errors: `fm_error_earg` for an output name the model does not
#'   have (listing them), tokens outside the vocabulary or `NA`, a
#'   sequence that is not a finite numeric matrix with the program's
#'   channels, or shorter than its crops, a mask of another length, with
#'   values other than 0 and 1 or no 1, or given to a program without a
#'   mask input;
#'   `fm_error_eunsupported` for a
#'   program with cache state or given the other kind of input;
#'   `fm_error_ecancelled` on interrupt.
#' @source SPEC "A model is another typed array program".
#' @export
rllm_run <- function(model, tokens = NULL, sequence = NULL, outputs = NULL, mask = NULL) {
  .rllm_check_model(model)
  named <- model$outputs[!grepl("\\.[0-9]+$", model$outputs)]
  taps <- setdiff(model$outputs, named)
  if (is.null(outputs)) outputs <- named
  if (!is.character(outputs) || !length(outputs) || anyNA(outputs) || !all(outputs %in% model$outputs)) {
    bad <- if (is.character(outputs)) setdiff(outputs, model$outputs) else character()
    Rfmalloc::fm_abort("earg", "outputs must name outputs of the model's program (", paste(named, collapse = ", "),
                       if (length(taps)) paste0(", or a tap's values such as ", taps[1L]), ")",
                       if (length(bad)) paste0("; '", bad[1L], "' is not one"))
  }
  if (is.null(tokens) == is.null(sequence)) {
    Rfmalloc::fm_abort("earg", "give one of tokens (token ids) and sequence (a numeric matrix)")
  }
  ch <- model$seq_channels
  if (!is.null(tokens)) {
    if (ch > 0) Rfmalloc::fm_abort("eunsupported", "the model's program takes a sequence of ", ch, " channels, not tokens")
    if (!is.numeric(tokens) || !length(tokens) || !all(is.finite(tokens)) || any(tokens != round(tokens)) ||
        any(abs(tokens) > .Machine$integer.max)) {
      Rfmalloc::fm_abort("earg", "tokens must be whole numbers (0-based ids), no NA, at least one")
    }
    tokens <- as.integer(tokens)
  }
  if (!is.null(sequence)) {
    if (ch == 0) Rfmalloc::fm_abort("eunsupported", "the model's program takes token ids, not a sequence")
    # 3.4e38: beyond a float's range the values would be infinite
    if (!is.matrix(sequence) || !is.numeric(sequence) || !all(is.finite(sequence)) ||
        any(abs(sequence) > 3.4e38) || ncol(sequence) < 1L) {
      Rfmalloc::fm_abort("earg", "sequence must be a matrix [channels, positions] of numbers within a float's range")
    }
    if (nrow(sequence) != ch) {
      Rfmalloc::fm_abort("earg", "sequence has ", nrow(sequence), " rows; the model's program takes ", ch, " channels")
    }
    storage.mode(sequence) <- "double"
  }
  if (!is.null(mask)) {
    n <- if (is.null(tokens)) ncol(sequence) else length(tokens)
    if (!isTRUE(model$has_mask)) Rfmalloc::fm_abort("earg", "the model's program has no mask input")
    if (!(is.numeric(mask) || is.logical(mask)) || length(mask) != n || anyNA(mask) || !all(mask == 0 | mask == 1)) {
      Rfmalloc::fm_abort("earg", "mask must be 0 or 1 (or FALSE or TRUE) at each of the ", n, " positions, no NA")
    }
    if (!any(mask == 1)) Rfmalloc::fm_abort("earg", "mask has no position at 1 (every position padding)")
    mask <- as.double(mask)
  }
  r <- .Call(C_rllm_run, model$ptr, tokens, sequence, mask, match(outputs, model$outputs) - 1L, outputs)
  names(r) <- outputs
  r
}
