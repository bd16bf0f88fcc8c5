# PyTorch checkpoints (.pt state dicts) to GGUF: the core's reader
# (fm_pt.h, src/r_pt.c) and Rgguf's writer. Each tensor keeps its
# state-dict name and its bytes' order: PyTorch's row-major [d0, ..., dk]
# is GGML's [dk, ..., d0] (ne0 the fastest), so the values are written as
# they are, with the dimensions reversed.

#' Convert a PyTorch state dict (.pt) to GGUF
#'
#' Reads a `.pt` checkpoint holding a plain state dict (a ZIP archive of a
#' pickle and raw tensor files, as `torch.save(model.state_dict())` writes
#' it) without Python or torch, and writes every tensor to a GGUF file
#' under its state-dict name: floating-point tensors as F32, integer ones as
#' I32 (values beyond its range are an error), dimensions reversed (GGML's
#' order). Architectures the package knows get their metadata:
#' OpenSpliceAI checkpoints (recognized by their tensor names) get
#' `general.architecture = "openspliceai"` and `openspliceai.flank`,
#' `openspliceai.group_kernel`, `openspliceai.group_dilation` (the
#' residual groups' kernel sizes, read from the tensors, and dilations,
#' the upstream tool's for that flank).
#'
#' @param pt path of the `.pt` file.
#' @param gguf path of the GGUF file to write.
#' @return `gguf`, invisibly.
#' @section Errors: the reader's, as classed errors naming the file and the
#'   byte offset, entry or tensor: `fm_error_eformat` for a malformed ZIP
#'   or pickle, `fm_error_eunsupported` for a pickle that is not a plain
#'   state dict (a pickled module: the global it imports is named),
#'   compressed entries or big-endian data; `fm_error_eformat` for an
#'   OpenSpliceAI checkpoint whose residual groups match no released flank.
#' @source PKWARE's APPNOTE (ZIP), Python's pickletools documentation
#'   (pickle opcodes), PyTorch's serialization notes; OpenSpliceAI: Chao et
#'   al. 2025 (bioRxiv 10.1101/2025.03.20.644351) and its repository's
#'   model code (the layer table per flank).
#' @export
rllm_pt_to_gguf <- function(pt, gguf) {
  if (!is.character(pt) || length(pt) != 1L || is.na(pt)) {
    Rfmalloc::fm_abort("earg", "pt must be the path of a .pt file, not ", .rllm_describe(pt))
  }
  sd <- .Call(C_rllm_pt_read, normalizePath(path.expand(pt), mustWork = FALSE))
  tensors <- list()
  for (t in sd$tensors) {
    dim <- if (length(t$shape)) rev(t$shape) else 1
    type <- if (toupper(t$dtype) %in% c("F32", "F64", "F16", "BF16")) "F32" else "I32"
    tensors[[t$name]] <- Rgguf::gguf_tensor_data(t$values, type, dim = dim)
  }
  md <- list(general.name = paste0(sub("\\.pt$", "", basename(pt)), " (converted from a PyTorch state dict)"))
  arch <- .rllm_pt_openspliceai(sd, basename(pt))
  Rgguf::gguf_write(gguf, c(arch, md), tensors)
  invisible(gguf)
}

# OpenSpliceAI's metadata, or NULL for another state dict: groups of 4
# residual units and a skip convolution (residual_units.<5g + 4>.conv).
.rllm_pt_openspliceai <- function(sd, file) {
  names <- vapply(sd$tensors, `[[`, "", "name")
  if (!all(c("initial_conv.weight", "final_conv.weight") %in% names)) return(NULL)
  shape <- function(n) sd$tensors[[match(n, names)]]$shape
  n_group <- 0L
  kernel <- integer()
  while (paste0("residual_units.", 5L * n_group + 4L, ".conv.weight") %in% names) {
    kernel <- c(kernel, as.integer(shape(paste0("residual_units.", 5L * n_group, ".conv1.weight"))[3L]))
    n_group <- n_group + 1L
  }
  # the upstream tool's layer table (openspliceai/predict: flank -> dilations)
  table <- list("80" = c(11L), "400" = c(11L, 11L), "2000" = c(11L, 11L, 21L), "10000" = c(11L, 11L, 21L, 41L))
  dil <- list("80" = 1L, "400" = c(1L, 4L), "2000" = c(1L, 4L, 10L), "10000" = c(1L, 4L, 10L, 25L))
  flank <- names(table)[vapply(table, identical, TRUE, kernel)]
  if (length(flank) != 1L) {
    Rfmalloc::fm_abort("eformat", file, ": an OpenSpliceAI state dict whose residual groups have kernels ",
                       paste(kernel, collapse = ", "), ", which no released flank (80, 400, 2000, 10000 nt) has")
  }
  d <- dil[[flank]]
  stopifnot(2L * sum(4L * d * (kernel - 1L)) == as.integer(flank))
  list(general.architecture = "openspliceai",
       openspliceai.flank = Rgguf::gguf_u32(as.integer(flank)),
       openspliceai.group_kernel = Rgguf::gguf_u32(kernel, array = TRUE),
       openspliceai.group_dilation = Rgguf::gguf_u32(d, array = TRUE))
}
