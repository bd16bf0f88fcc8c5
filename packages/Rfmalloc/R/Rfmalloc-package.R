#' Rfmalloc: out-of-core typed arrays for R
#'
#' Rfmalloc maps a file and carves it into typed blocks that R sees as
#' ordinary vectors and matrices (ALTREP classes `fm_dbl_map`, `fm_int_map`,
#' `fm_lgl_map`, `fm_raw_map`). Their data pointer lies in the mapping, so
#' BLAS and any package that takes a bare `double*` consume them unchanged,
#' while R's value semantics still hold.
#'
#' @section Runtime:
#' [open_fmalloc()] maps a file (persistent or scratch) and returns a runtime;
#' [cleanup_fmalloc()] closes it, [fmalloc_sync()] commits it durably and
#' [fmalloc_info()] reports its state.
#'
#' @section Vectors:
#' [create_fmalloc_vector()] and [create_fmalloc_matrix()] allocate in a
#' runtime; [fmalloc_save()], [fmalloc_get()], [fmalloc_list()] and
#' [fmalloc_delete()] manage named objects that survive the process.
#'
#' @section Genotypes and streamed statistics:
#' [fmalloc_bed()] stores hardcalls at 2 bits, [fmalloc_bed_open()] maps an
#' existing PLINK `.bed` without copying, [fmalloc_dosage()] stores dosages at
#' one byte and [fmalloc_haplotypes()] phased alleles at one bit. Codec
#' matrices ([fmalloc_codec_matrix-class]) support products, subsets and
#' [fmalloc_standardize()] on bounded panels. [fmalloc_colMeans()],
#' [fmalloc_colVars()], [fmalloc_allele_freq()] and [fmalloc_pca()] stream
#' over dense and codec matrices alike.
#'
#' @section Options:
#' * `fmalloc.panel_bytes`: the panel byte budget of every core call of the
#'   stack (see [fmalloc_panel_budget()]).
#' * `fmalloc.progress`: `FALSE` hides progress bars of long computations.
#' * `fmalloc.threads`: worker threads of every core call of the stack:
#'   Rfmalloc's kernels, Rgguf's GGML products, Rllm's evaluations (see
#'   [fmalloc_threads()]).
#' * `fmalloc.backend`: force one product backend, or `"reference"`, read
#'   at every product (see [fmalloc_backends()], [fmalloc_with_backend()]).
#'
#' The three are read in one place into each call's control block (`fm_ctl`),
#' for every package of the stack. A value of `fmalloc.panel_bytes` or
#' `fmalloc.threads` set before the package loads that the setter refuses
#' does not stop the package from loading: it is ignored with a warning
#' naming the option (and unset), and the default stays. An invalid value
#' set later, and an invalid `fmalloc.backend`, raise `fm_error_earg` at the
#' next call.
#'
#' @section Errors:
#' Every error raised by the package is a condition of class
#' `c("fm_error_<status>", "fm_error", "error", "condition")`, where
#' `<status>` is one of `enomem`, `eio`, `eformat`, `emismatch`,
#' `edegenerate`, `earg`, `eunsupported`, `ecancelled`, `enospc`, `ebusy`,
#' `eclosed`, `einternal`. See [fm_error].
#'
#' @useDynLib Rfmalloc, .registration = TRUE, .fixes = "C_"
#' @keywords internal
"_PACKAGE"

# The package's clean-up (fmr_unload in src/r_init.c, which R_unload_Rfmalloc
# also runs; R never calls the latter because dynamic symbol lookup is off):
# close every map this process holds, so vectors over them raise
# fm_error_eclosed and a reloaded namespace can open the same files. The
# shared library itself stays loaded on purpose: ALTREP class methods and
# external-pointer finalizers of vectors that may still exist point into it,
# and unloading it would turn their next use (or the next GC) into a crash.
# A later loadNamespace() finds it loaded and reuses it.
.onUnload <- function(libpath) {
  .Call(C_fmr_unload)
  invisible(NULL)
}
