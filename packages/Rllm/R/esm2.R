# rllm_esm(): ESM-2 on protein sequences through the shipped program
# (programs_esm2.R), evaluated natively (rllm_run); the ESM alphabet's
# encoding.

#' ESM-2: logits, representations, attention maps and contacts of proteins
#'
#' Runs an ESM-2 model (a GGUF of architecture `esm2`, see the source
#' repository's docs/programs.md for its tensor names) on protein
#' sequences, natively, one sequence per evaluation. Each sequence is
#' encoded as ESM does: `<cls>`, one token per residue (the ESM alphabet
#' of the file's `tokenizer.ggml.tokens`; letters upper-cased; white space
#' dropped, as in line-wrapped FASTA; `<mask>`, `<unk>` and the other
#' special tokens may be written in the text; other characters, such as a
#' stop `*`, become `<unk>`), `<eos>`. ESM evaluates
#' a batch padded to its longest sequence, with pad keys masked: each
#' sequence's results are those of the sequence alone, which is what is
#' computed here, one sequence at a time (no padding computed). The
#' program's `attention_mask` input takes a padded sequence through
#' [rllm_run()] (`mask`).
#'
#' @param model an `rllm_model` of an ESM-2 file ([rllm_gguf_model()]).
#' @param sequences a character vector of protein sequences (names kept).
#' @param repr_layers integers in `0:n_layer` (or `NULL`: none): the layers whose
#'   representations to return (0: the embeddings after token dropout;
#'   `n_layer`: after the final layer norm, as ESM's `repr_layers`).
#' @param attention `TRUE` to return every layer's attention maps.
#' @param contacts `TRUE` to return contact probabilities.
#' @return A list, one element per sequence (of `length(s) + 2` tokens T,
#'   `<cls>` and `<eos>` included): `tokens` (0-based ids), `logits` (a
#'   T x 33 matrix, columns named by the alphabet), `representations` (a
#'   list named by layer of T x n_embd matrices), `attention` (an array
#'   `[T queries, T keys, n_head, n_layer]`: rows sum to 1) and `contacts`
#'   (`length(s)` x `length(s)`, symmetric probabilities between residues)
#'   when asked for. Values in single precision. Memory: attention maps
#'   and contacts hold every layer's maps, `4 T^2 n_layer n_head` bytes
#'   (4.3 GB for 3,000 residues on the 8M model; ESM's own forward holds
#'   the same), and the attention array returned is twice that in doubles.
#' @section Errors: `fm_error_earg` for a model that is not ESM-2,
#'   sequences that are not a character vector of valid UTF-8 without
#'   `NA`, an empty sequence (white space only included), or layers outside
#'   `0:n_layer`; `fm_error_eformat` for a file whose
#'   `tokenizer.ggml.tokens` is not an ESM alphabet of the model's
#'   vocabulary (with `<cls>`, `<eos>` and `<unk>`); those of [rllm_run()].
#' @source Lin et al. (2023) Evolutionary-scale prediction of atomic-level
#'   protein structure with a language model, Science 379; Rao et al.
#'   (2021) Transformer protein language models are unsupervised structure
#'   learners, ICLR (the contact head).
#' @export
rllm_esm <- function(model, sequences, repr_layers = integer(), attention = FALSE, contacts = FALSE) {
  .rllm_check_model(model)
  if (!identical(model$info$arch, "esm2")) {
    Rfmalloc::fm_abort("earg", "model ", basename(model$path), " is ", model$info$arch, ", not ESM-2 (esm2)")
  }
  if (!is.character(sequences) || anyNA(sequences) || !all(validUTF8(sequences))) {
    Rfmalloc::fm_abort("earg", "sequences must be a character vector of protein sequences (UTF-8), no NA")
  }
  sequences[] <- gsub("[[:space:]]+", "", sequences)
  if (any(!nzchar(sequences))) Rfmalloc::fm_abort("earg", "a sequence is empty")
  meta <- Rgguf::gguf_metadata(model$gguf)
  n_layer <- as.integer(meta$esm2.block_count)
  alphabet <- meta$tokenizer.ggml.tokens
  if (!is.character(alphabet) || length(alphabet) != model$info$n_vocab ||
      !all(c("<cls>", "<eos>", "<unk>") %in% alphabet)) {
    Rfmalloc::fm_abort("eformat", basename(model$path), ": tokenizer.ggml.tokens is not an ESM alphabet of ",
                       model$info$n_vocab, " tokens with <cls>, <eos> and <unk>")
  }
  if (is.null(repr_layers)) repr_layers <- integer()
  if (!is.numeric(repr_layers) || anyNA(repr_layers) || any(!repr_layers %in% 0:n_layer)) {
    Rfmalloc::fm_abort("earg", "repr_layers must be layers in 0:", n_layer)
  }
  for (f in list(attention, contacts)) {
    if (!is.logical(f) || length(f) != 1L || is.na(f)) Rfmalloc::fm_abort("earg", "attention and contacts must be TRUE or FALSE")
  }
  repr_layers <- sort(unique(as.integer(repr_layers)))
  repr_out <- ifelse(repr_layers == 0L, "embed.1", ifelse(repr_layers == n_layer, "representations",
                                                           paste0("repr.", repr_layers)))
  want <- unique(c("logits", repr_out, if (attention) "attention", if (contacts) "contacts"))
  out <- lapply(sequences, function(s) {
    ids <- .rllm_esm_encode(s, alphabet)
    r <- rllm_run(model, ids, outputs = want)
    logits <- t(r$logits)
    colnames(logits) <- alphabet
    res <- list(tokens = ids, logits = logits)
    if (length(repr_layers)) {
      res$representations <- stats::setNames(lapply(repr_out, function(o) t(r[[o]])), repr_layers)
    }
    if (attention) {
      a <- r$attention # [key, query, layer x head]
      n <- dim(a)[1L]
      res$attention <- aperm(array(a, c(n, n, dim(a)[3L] / n_layer, n_layer)), c(2L, 1L, 3L, 4L))
    }
    if (contacts) res$contacts <- matrix(r$contacts, dim(r$contacts)[1L])
    res
  })
  names(out) <- names(sequences)
  out
}

# ESM's encoding of one sequence: <cls>, a token per character (special
# tokens written as <name> kept whole; upper-cased; unknown: <unk>), <eos>.
.rllm_esm_encode <- function(s, alphabet) {
  parts <- regmatches(s, gregexpr("<[^<>]+>|.", s))[[1L]]
  parts <- ifelse(nchar(parts) == 1L, toupper(parts), parts)
  ids <- match(parts, alphabet) - 1L
  ids[is.na(ids)] <- match("<unk>", alphabet) - 1L
  c(match("<cls>", alphabet) - 1L, ids, match("<eos>", alphabet) - 1L)
}
