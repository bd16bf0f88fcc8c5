#' RfmallocStatgen: streamed statistical genetics on Rfmalloc matrices
#'
#' Association studies over any genotype matrix of the Rfmalloc stack, in
#' bounded memory: [statgen_gwas()] (linear and logistic regression with
#' Firth fallback, many phenotypes in one pass, plink2's rows and codes),
#' with [summary()][statgen_gwas-methods], Manhattan and QQ plots, and
#' [statgen_write_glm()] for plink2's files. The regression kernels are the
#' Rfmalloc core's (`fm_stats_glm.h` in the source repository), reached
#' through Rfmalloc's C API.
#'
#' @keywords internal
#' @useDynLib RfmallocStatgen, .registration = TRUE, .fixes = "C_"
#' @importFrom Rfmalloc fm_abort fm_arg_choice fm_local_parallel fm_parallel_apply fm_parallel_on
#' @importFrom Rfmalloc fmalloc_samples
#' @importFrom Rfmalloc fmalloc_variants fmalloc_view
#' @importFrom methods new setClass setMethod show
"_PACKAGE"
