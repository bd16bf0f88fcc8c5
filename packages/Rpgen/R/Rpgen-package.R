#' Rpgen: native genotype readers streaming into Rfmalloc codecs
#'
#' [rpgen_info()] describes a genotype file; [rpgen_read()] reads it once,
#' natively (the C readers of the Rfmalloc core), into an out-of-core
#' destination owned by an Rfmalloc runtime.
#'
#' @keywords internal
#' @useDynLib Rpgen, .registration = TRUE, .fixes = "C_"
#' @import methods
#' @importFrom Rfmalloc fmalloc_codec_matrix create_fmalloc_matrix create_fmalloc_vector fm_abort
#' @importFrom Rfmalloc fm_arg_choice fm_check_runtime
#' @importClassesFrom Rfmalloc fmalloc_haplotypes
"_PACKAGE"

# rpgen_read(destination = "haplotype") objects extend Rfmalloc's class, so
# its S4 methods (as.matrix, colSums, summary, ...) dispatch on them.
setOldClass(c("rpgen_haplotypes", "fmalloc_haplotypes"))
