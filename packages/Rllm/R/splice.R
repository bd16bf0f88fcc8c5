# rllm_splice(): splice-site probabilities from OpenSpliceAI checkpoints.

#' Splice-site probabilities (OpenSpliceAI)
#'
#' Runs released OpenSpliceAI checkpoints over DNA sequences: each
#' position gets the probabilities that it is neither a splice site, an
#' acceptor (the first exonic base after an intron's terminal AG) or a donor
#' (the last exonic base before an intron's GT). Several checkpoints give
#' their ensemble: the mean of their probabilities (as the upstream tool
#' averages its five seeds).
#'
#' Sequences follow the upstream command-line tool: letters are upper-cased
#' first (soft-masked bases count), A, C, G and T are one-hot, every other
#' character (N, IUPAC codes such as R or Y) is all zero; each sequence is
#' padded with flank / 2 zero columns on both sides. The network's
#' receptive field is exactly the flank, so evaluating a sequence whole
#' equals the tool's blocks of 5,000 positions; sequences shorter than the
#' flank work.
#'
#' Each model runs natively: its program (`R/programs_openspliceai.R`)
#' lowered to GGML over the GGUF's mapped weights, one graph per sequence
#' length, in single precision (the checks against upstream's outputs hold
#' within 1e-5).
#'
#' @param models checkpoint paths (`.pt` files as released, or GGUF files
#'   from [rllm_pt_to_gguf()]) or models from [rllm_gguf_model()] on such
#'   GGUFs; several: their ensemble. All must have the same flank.
#' @param sequences a character vector of DNA sequences (names are kept).
#' @param threads worker threads (`NULL`: the stack's setting,
#'   `options(fmalloc.threads)`).
#' @return A list with one matrix per sequence: length x 3, columns
#'   `neither`, `acceptor`, `donor`, rows the positions (1-based) in order.
#' @section Errors: `fm_error_earg` for sequences that are not a character
#'   vector without `NA`, no model, or models of different flanks; the
#'   importer's and the reader's errors for a bad checkpoint.
#' @source Chao et al. 2025 (OpenSpliceAI, bioRxiv
#'   10.1101/2025.03.20.644351); Jaganathan et al. 2019 (SpliceAI, Cell
#'   176:535). Checked against the upstream implementation's outputs
#'   (fixtures models/openspliceai/expected).
#' @export
rllm_splice <- function(models, sequences, threads = NULL) {
  if (inherits(models, "rllm_model")) models <- list(models)
  ok <- (is.character(models) && length(models) && !anyNA(models)) ||
    (is.list(models) && length(models) && all(vapply(models, inherits, TRUE, "rllm_model")))
  if (!ok) {
    Rfmalloc::fm_abort("earg", "models must be checkpoint paths (.pt or .gguf) or OpenSpliceAI models of ",
                       "rllm_gguf_model(), not ", .rllm_describe(models))
  }
  if (!is.character(sequences) || anyNA(sequences)) {
    Rfmalloc::fm_abort("earg", "sequences must be a character vector without NA, not ", .rllm_describe(sequences))
  }
  if (is.character(models)) {
    tmp <- character()
    on.exit(unlink(tmp))
    models <- lapply(models, function(f) {
      if (grepl("\\.pt$", f, ignore.case = TRUE)) {
        g <- tempfile(fileext = ".gguf")
        tmp <<- c(tmp, g)
        rllm_pt_to_gguf(f, g)
        f <- g
      }
      rllm_gguf_model(f, threads = threads)
    })
  }
  flanks <- vapply(models, function(m) {
    if (!identical(m$info$arch, "openspliceai")) {
      Rfmalloc::fm_abort("earg", "model ", basename(m$path), " is ", m$info$arch, ", not an OpenSpliceAI model")
    }
    as.numeric(Rgguf::gguf_metadata(m$gguf)$openspliceai.flank)
  }, 0)
  if (length(unique(flanks)) != 1L) {
    Rfmalloc::fm_abort("earg", "the models have different flanks (", paste(unique(flanks), collapse = ", "),
                       " nt); an ensemble needs one")
  }
  half <- flanks[[1L]] %/% 2
  out <- lapply(sequences, function(s) {
    x <- .rllm_one_hot(s)
    x <- cbind(matrix(0, 4L, half), x, matrix(0, 4L, half))
    p <- Reduce(`+`, lapply(models, function(m) rllm_run(m, sequence = x, outputs = "probabilities")[[1L]]))
    p <- t(p / length(models))
    colnames(p) <- c("neither", "acceptor", "donor")
    p
  })
  names(out) <- names(sequences)
  out
}

# One-hot DNA [4, length], rows A, C, G, T; upper-cased first; other
# characters all zero.
.rllm_one_hot <- function(s) {
  ch <- strsplit(toupper(s), "", fixed = TRUE)[[1L]]
  x <- matrix(0, 4L, length(ch))
  k <- match(ch, c("A", "C", "G", "T"))
  x[cbind(k[!is.na(k)], which(!is.na(k)))] <- 1
  x
}
