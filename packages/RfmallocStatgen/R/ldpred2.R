# LDpred2 (inf, grid, auto) on a statgen_ld band: argument checks, the
# summary statistics matched to the band (R/ld_match.R), the core's
# samplers (fm_stats_ldpred2.h through src/r_ldpred2.c), and the classed
# results with their print methods.

#' LDpred2 polygenic scores: infinitesimal, grid and automatic models
#'
#' Posterior mean effects of every variant of an LD matrix from GWAS summary
#' statistics, under LDpred2's models (Privé, Arbel and Vilhjálmsson 2020),
#' as `bigsnpr`'s `snp_ldpred2_inf()`, `snp_ldpred2_grid()` and
#' `snp_ldpred2_auto()` (version 1.12.21) define them, computed by the
#' Rfmalloc core on the LD band where it is stored (an Rfmalloc runtime):
#' the band is read, never copied.
#'
#' @section Model: On the scale of standardized genotypes, effects are 0
#'   with probability \eqn{1 - p}, else \eqn{N(0, h^2 / (M p))}. Variant
#'   \eqn{j}'s data are scaled as bigsnpr does: \eqn{s_j = \sqrt{n_j
#'   se_j^2 + \beta_j^2}} and \eqn{\hat\beta_j = \beta_j / s_j}; returned
#'   effects are multiplied by \eqn{s_j} again (the allele scale of the
#'   input, for the LD's `A1` allele).
#'   * `statgen_ldpred2_inf()`: \eqn{p = 1}; the solution of
#'     \eqn{(R + \mathrm{diag}(M / (h^2 n_j))) x = \hat\beta}, by
#'     conjugate gradients with a Jacobi preconditioner (one band product
#'     an iteration) until the relative residual is below `tol` (bigsnpr
#'     solves the same system by MINRES to 1e-10).
#'   * `statgen_ldpred2_grid()`: a Gibbs sampler per row of `grid`
#'     (`burn_in` sweeps discarded, the posterior means of `num_iter`
#'     averaged); `sparse = TRUE` sets an effect to exactly 0 when its
#'     posterior probability of being causal is below \eqn{p}.
#'   * `statgen_ldpred2_auto()`: one chain per `p_init`, sampling \eqn{p}
#'     and \eqn{h^2} too (and, with `use_mle`, the \eqn{\alpha} of
#'     effects' dependence on allele frequency, Privé et al. 2023);
#'     `allow_jump_sign = FALSE` and `shrink < 1` are the robustness options
#'     of Privé et al. (2022) (bigsnpr's tutorial uses `FALSE` and 0.95).
#'     Chains are then filtered as bigsnpr's tutorial recommends: with
#'     \eqn{r_k} the range of chain \eqn{k}'s `corr_est` (its posterior
#'     mean of \eqn{(R\beta)_j}), chains with \eqn{r_k > 0.95\, q_{0.95}(r)}
#'     are kept, and the effects, \eqn{p}, \eqn{h^2} and \eqn{\alpha} are
#'     means over the kept chains.
#'   `shrink` multiplies the off-diagonal entries of \eqn{R} (bigsnpr's
#'   `shrink_corr`).
#' @section Summary statistics: `sumstats` is a [statgen_gwas()] table of
#'   one phenotype (`ID`, `A1`, `REF`, `ALT`, `BETA`, `SE`, `OBS_CT` as
#'   \eqn{n}; a logistic one needs an `n_eff` column) or a data frame with
#'   bigsnpr's columns `beta`, `beta_se`, `n_eff` and optionally `ID` (or
#'   `rsid`), `a1` (the effect allele) and `a0`/`a2`. Rows are matched to
#'   the LD's variants by `ID` (in row order when `sumstats` has no ID, and
#'   then it needs one row per variant). Where both give alleles, they must
#'   be the same (kept) or swapped (`beta` negated: "flipped"). A message
#'   reports the variants matched, checked and flipped and the rows of
#'   `sumstats` left out because the LD matrix does not have them.
#' @section Divergence: a grid set or chain whose sampled effects of one
#'   sweep have a sum of squares above \eqn{2 \sum_j \hat\beta_j^2}
#'   (bigsnpr's rule) or are not finite is stopped there and reported
#'   (`status` `"exploded"` or `"non-finite"` with the sweep in
#'   `diverged_at`, and a warning); its effects are `NA` (grid) or it is
#'   left out of the final effects (auto), never mixed in.
#' @section Reproducibility and threads: the samplers draw from the core's
#'   documented generator (xoshiro256**, `docs/rng.md` in the source repository) seeded
#'   with `seed` (by default one number drawn from R's generator, so
#'   [set.seed()] fixes it), grid set or chain \eqn{k} from its own stream:
#'   results depend on `seed` and \eqn{k} only, not on the number of
#'   threads (`fmalloc_threads()`), which run sets or chains in parallel.
#'   bigsnpr's draws differ (R's generator), so the two agree in
#'   distribution, not draw by draw.
#' @section Errors: classed `fm_error_earg` (arguments, missing or
#'   non-positive standard errors, `n_eff` missing, `beta` missing, naming
#'   the variants), `fm_error_emismatch` (variants of the LD without
#'   summary statistics, other alleles, duplicated IDs),
#'   `fm_error_eformat` (an LD without a unit diagonal),
#'   `fm_error_edegenerate` (inf: the LD matrix with the `shrink` used plus
#'   \eqn{M / (h^2 n_j)} on its diagonal is not positive definite, said
#'   with the shrinkage; auto: every chain diverged),
#'   `fm_error_ecancelled` on interrupt.
#'
#' @param ld the LD matrix: a `statgen_ld` object (correlations with a unit
#'   diagonal, both triangles stored; its `variants` give `ID`, `A1`, `A2`).
#' @param sumstats summary statistics (see the section).
#' @param h2 heritability \eqn{h^2 > 0} of the variants used (e.g. from LD
#'   score regression).
#' @param shrink multiplier of the LD's off-diagonal entries, in (0, 1].
#' @param tol,max_iter inf: relative residual to reach and most conjugate
#'   gradient iterations.
#' @param quiet `TRUE` to leave out the matching message.
#' @return An object of class `statgen_ldpred2` (a list; `print()` and
#'   `coef()` methods): `beta` (the effects, one per variant of `ld`, named
#'   by ID; `NULL` for grid), `variants` (the LD's), `model`, `match` (the
#'   matching counts), and per model:
#'   * inf: `h2`, `iterations`, `rel_residual`.
#'   * grid: `beta_grid` (variants x sets, `NA` columns for diverged sets)
#'     and `grid` (the parameters with `status` and `diverged_at`).
#'   * auto: `chains` (a data frame: `p_init`, `p_est`, `h2_est`,
#'     `alpha_est`, `range_corr`, `keep`, `status`, `diverged_at`),
#'     `beta_chains`, `postp_chains`, `corr_est` (variants x chains),
#'     `path_p`, `path_h2`, `path_alpha` (sweeps x chains, `NA` after a
#'     divergence), `postp` (mean over kept chains), `p_est`, `h2_est`,
#'     `alpha_est` (means over kept chains).
#' @references Privé F, Arbel J, Vilhjálmsson BJ (2020) LDpred2: better,
#'   faster, stronger. Bioinformatics 36:5424-5431. Privé F et al. (2022)
#'   Identifying and correcting for misspecifications in GWAS summary
#'   statistics and polygenic scores. HGG Advances 3:100136. Privé F et al.
#'   (2023) Inferring disease architecture and predictive ability with
#'   LDpred2-auto. AJHG 110:2042-2055.
#' @examples
#' set.seed(1)
#' g <- matrix(rbinom(500 * 30, 2, 0.3), 500, 30)          # generated genotypes
#' y <- drop(g[, 5] * 0.5 + rnorm(500))
#' ss <- data.frame(ID = sprintf("v%d", 1:30), t(apply(g, 2, function(x) {
#'   f <- summary(lm(y ~ x))$coefficients[2, 1:2]
#'   c(beta = f[[1]], beta_se = f[[2]])
#' })), n_eff = 500)
#' R <- cor(g)
#' R[abs(row(R) - col(R)) > 5] <- 0                       # a band of 5 variants
#' ld <- RfmallocStatgen:::.ld_from_dense(R)
#' inf <- statgen_ldpred2_inf(ld, ss, h2 = 0.2)
#' head(coef(inf))
#' grid <- statgen_ldpred2_grid(ld, ss, expand.grid(p = c(0.01, 0.1), h2 = 0.2, sparse = FALSE),
#'                              seed = 1)
#' auto <- statgen_ldpred2_auto(ld, ss, h2_init = 0.2, seed = 1)
#' auto
#' @name statgen_ldpred2
NULL

#' @rdname statgen_ldpred2
#' @export
statgen_ldpred2_inf <- function(ld, sumstats, h2, shrink = 1, tol = 1e-12, max_iter = 1000,
                                quiet = FALSE) {
  call <- match.call()
  .ldp_num(h2, "h2", lo = 0, call = call)
  .ldp_shrink(shrink, call)
  .ldp_num(tol, "tol", lo = 0, call = call)
  .ldp_whole(max_iter, "max_iter", 1, call)
  d <- .ld_match(sumstats, ld, call, quiet)
  res <- .Call(C_stg_ldpred2_inf, .ld_parts(ld), d$beta, d$beta_se, d$n_eff, as.double(h2),
               c(shrink, tol, max_iter))
  .ldp_result(ld, d, "inf", beta = stats::setNames(res[[1]], d$ID), h2 = h2, shrink = shrink,
              iterations = res[[2]], rel_residual = res[[3]])
}

#' @rdname statgen_ldpred2
#' @param grid a data frame of the models: columns `p` (in (0, 1]), `h2`
#'   (> 0) and `sparse` (logical), one row each (e.g. from [expand.grid()]).
#' @param burn_in,num_iter sweeps of the Gibbs sampler discarded, then
#'   averaged (bigsnpr's defaults: grid 50 and 100, auto 500 and 200).
#' @param seed `NULL` (one number drawn from R's generator) or a whole
#'   number from 0 to 2^53: the core generator's seed.
#' @export
statgen_ldpred2_grid <- function(ld, sumstats, grid, burn_in = 50, num_iter = 100, shrink = 1,
                                 seed = NULL, quiet = FALSE) {
  call <- match.call()
  if (!is.data.frame(grid) || !all(c("p", "h2", "sparse") %in% names(grid)) || !nrow(grid))
    fm_abort("earg", "grid must be a data frame with columns p, h2 and sparse, one row a model",
             call = call)
  .ldp_num(grid$p, "grid$p", lo = 0, hi = 1, n = NA, call = call)
  .ldp_num(grid$h2, "grid$h2", lo = 0, n = NA, call = call)
  if (!is.logical(grid$sparse) || anyNA(grid$sparse))
    fm_abort("earg", "grid$sparse must be TRUE or FALSE", call = call)
  .ldp_whole(burn_in, "burn_in", 0, call)
  .ldp_whole(num_iter, "num_iter", 1, call)
  .ldp_shrink(shrink, call)
  seed <- .ldp_seed(seed, call)
  d <- .ld_match(sumstats, ld, call, quiet)
  bar <- .progress_bar(nrow(grid) * (burn_in + num_iter), "LDpred2-grid: sweeps")
  res <- .Call(C_stg_ldpred2_grid, .ld_parts(ld), d$beta, d$beta_se, d$n_eff,
               as.double(grid$p), as.double(grid$h2), as.integer(grid$sparse),
               c(burn_in, num_iter, shrink, seed), .ldp_progress(bar))
  if (!is.null(bar)) cli::cli_progress_done(id = bar)
  grid <- as.data.frame(grid)[c("p", "h2", "sparse")]
  grid$status <- .ldp_status(res[[2]])
  grid$diverged_at <- res[[3]]
  .ldp_warn_diverged(grid$status, grid$diverged_at, "grid set", call)
  beta <- res[[1]]
  beta[is.nan(beta)] <- NA_real_ # the core marks a diverged set's column with NaN
  dimnames(beta) <- list(d$ID, NULL)
  .ldp_result(ld, d, "grid", beta = NULL, beta_grid = beta, grid = grid, shrink = shrink,
              burn_in = burn_in, num_iter = num_iter, seed = seed)
}

#' @rdname statgen_ldpred2
#' @param h2_init auto: the initial \eqn{h^2} (> 0).
#' @param p_init auto: initial values of \eqn{p}, one chain each (default 4
#'   chains from 1e-4 to 0.2, log-spaced; bigsnpr's tutorial runs 30 over
#'   that range, its function 1 chain at 0.1).
#' @param allow_jump_sign auto: `FALSE` makes an effect pass through 0
#'   before it changes sign.
#' @param use_mle auto: estimate \eqn{\alpha} and the variance of effects
#'   by maximum likelihood (bigsnpr >= 1.11.4), else \eqn{\alpha = -1} and
#'   the variance \eqn{h^2 / (M p)}.
#' @param p_bounds,alpha_bounds auto: bounds of \eqn{p} (within (0, 1]) and
#'   of \eqn{\alpha} (bigsnpr's defaults).
#' @export
statgen_ldpred2_auto <- function(ld, sumstats, h2_init,
                                 p_init = exp(seq(log(1e-4), log(0.2), length.out = 4)),
                                 burn_in = 500, num_iter = 200, shrink = 1, allow_jump_sign = TRUE,
                                 use_mle = TRUE, p_bounds = c(1e-5, 1),
                                 alpha_bounds = c(-1.5, 0.5), seed = NULL, quiet = FALSE) {
  call <- match.call()
  .ldp_num(h2_init, "h2_init", lo = 0, call = call)
  .ldp_num(p_init, "p_init", lo = 0, hi = 1, n = NA, call = call)
  .ldp_whole(burn_in, "burn_in", 0, call)
  .ldp_whole(num_iter, "num_iter", 1, call)
  .ldp_shrink(shrink, call)
  for (a in c("allow_jump_sign", "use_mle")) {
    v <- get(a)
    if (!is.logical(v) || length(v) != 1L || is.na(v))
      fm_abort("earg", a, " must be TRUE or FALSE", call = call)
  }
  .ldp_num(p_bounds, "p_bounds", lo = 0, hi = 1, n = 2L, call = call)
  if (!is.numeric(alpha_bounds) || length(alpha_bounds) != 2L || !all(is.finite(alpha_bounds)))
    fm_abort("earg", "alpha_bounds must be 2 finite numbers", call = call)
  if (p_bounds[1] > p_bounds[2] || alpha_bounds[1] > alpha_bounds[2])
    fm_abort("earg", "p_bounds and alpha_bounds must be in increasing order", call = call)
  seed <- .ldp_seed(seed, call)
  d <- .ld_match(sumstats, ld, call, quiet)
  K <- length(p_init)
  bar <- .progress_bar(K * (burn_in + num_iter), "LDpred2-auto: sweeps")
  res <- .Call(C_stg_ldpred2_auto, .ld_parts(ld), d$beta, d$beta_se, d$n_eff, as.double(p_init),
               c(burn_in, num_iter, shrink, seed, h2_init, allow_jump_sign, use_mle, p_bounds,
                 alpha_bounds), .ldp_progress(bar))
  if (!is.null(bar)) cli::cli_progress_done(id = bar)
  names(res) <- c("beta", "postp", "corr_est", "path_p", "path_h2", "path_alpha", "p_est",
                  "h2_est", "alpha_est", "status", "diverged_at")
  for (f in setdiff(names(res), c("status", "diverged_at"))) # NaN: diverged, or no alpha
    res[[f]][is.nan(res[[f]])] <- NA_real_
  status <- .ldp_status(res$status)
  range_corr <- apply(res$corr_est, 2L, function(x) if (anyNA(x)) NA_real_ else diff(range(x)))
  ok <- status == "ok"
  if (!any(ok))
    fm_abort("edegenerate", "every LDpred2-auto chain diverged (",
             paste(sprintf("chain %d at sweep %.0f", seq_len(K), res$diverged_at), collapse = ", "),
             "); try allow_jump_sign = FALSE and a shrink below 1 (e.g. 0.95)", call = call)
  .ldp_warn_diverged(status, res$diverged_at, "chain", call)
  keep <- ok & range_corr > 0.95 * stats::quantile(range_corr, 0.95, na.rm = TRUE, names = FALSE)
  chains <- data.frame(p_init = p_init, p_est = res$p_est, h2_est = res$h2_est,
                       alpha_est = res$alpha_est, range_corr = range_corr, keep = keep,
                       status = status, diverged_at = res$diverged_at)
  for (f in c("beta", "postp", "corr_est")) dimnames(res[[f]]) <- list(d$ID, NULL)
  res$beta[, !ok] <- NA_real_
  .ldp_result(ld, d, "auto", beta = rowMeans(res$beta[, keep, drop = FALSE]), chains = chains,
              beta_chains = res$beta, postp_chains = res$postp, corr_est = res$corr_est,
              path_p = res$path_p, path_h2 = res$path_h2, path_alpha = res$path_alpha,
              postp = rowMeans(res$postp[, keep, drop = FALSE]),
              p_est = mean(res$p_est[keep]), h2_est = mean(res$h2_est[keep]),
              alpha_est = mean(res$alpha_est[keep]), h2_init = h2_init, shrink = shrink,
              burn_in = burn_in, num_iter = num_iter, allow_jump_sign = allow_jump_sign,
              use_mle = use_mle, seed = seed)
}

# ---- helpers -----------------------------------------------------------------

.ldp_result <- function(ld, d, model, ...) {
  v <- ld$variants
  structure(c(list(model = model), list(...),
              list(variants = v, match = attr(d, "report"), flipped = d$flipped)),
            class = "statgen_ldpred2")
}

.ldp_status <- function(code) c("ok", "exploded", "non-finite")[code + 1L]

.ldp_warn_diverged <- function(status, at, what, call) {
  bad <- which(status != "ok")
  which_at <- sprintf("%s %d (%s at sweep %.0f)", what, bad, status[bad], at[bad])
  if (length(bad))
    cli::cli_warn(c("LDpred2: {length(bad)} {what}{?s} diverged and {?was/were} stopped: {which_at}",
                    i = "their effects are NA and are not used"), call = call)
}

.ldp_progress <- function(bar) {
  if (is.null(bar)) return(NULL)
  function(done, total) cli::cli_progress_update(id = bar, set = done)
}

.ldp_num <- function(x, what, lo = -Inf, hi = Inf, n = 1L, call) {
  ok <- is.numeric(x) && (is.na(n) && length(x) >= 1L || length(x) == n) && !anyNA(x) &&
    all(is.finite(x)) && all(x > lo) && all(x <= hi)
  if (!ok)
    fm_abort("earg", what, " must be ", if (is.na(n)) "numbers" else if (n == 1L) "a number" else
      paste(n, "numbers"), " in (", lo, ", ", hi, "]", call = call)
}

.ldp_whole <- function(x, what, lo, call) {
  if (!is.numeric(x) || length(x) != 1L || is.na(x) || x != round(x) || x < lo || x > 1e8)
    fm_abort("earg", what, " must be a whole number from ", lo, " to 1e8", call = call)
}

.ldp_shrink <- function(shrink, call) .ldp_num(shrink, "shrink", lo = 0, hi = 1, call = call)

.ldp_seed <- function(seed, call) {
  if (is.null(seed)) return(floor(stats::runif(1) * 2^31))
  if (!is.numeric(seed) || length(seed) != 1L || is.na(seed) || seed != round(seed) || seed < 0 ||
      seed > 2^53)
    fm_abort("earg", "seed must be NULL or a whole number from 0 to 2^53", call = call)
  as.double(seed)
}

#' @rdname statgen_ldpred2
#' @param object,x a `statgen_ldpred2` result.
#' @param ... unused.
#' @export
coef.statgen_ldpred2 <- function(object, ...) {
  if (identical(object$model, "grid")) object$beta_grid else object$beta
}

#' @rdname statgen_ldpred2
#' @export
print.statgen_ldpred2 <- function(x, ...) {
  m <- length(x$flipped)
  cat(sprintf("LDpred2-%s: %d variants (%d flipped to the LD's alleles)\n", x$model, m,
              sum(x$flipped)))
  if (x$model == "inf") {
    cat(sprintf("h2 %g, shrink %g; conjugate gradients: %.0f iterations, relative residual %.2g\n",
                x$h2, x$shrink, x$iterations, x$rel_residual))
  } else if (x$model == "grid") {
    cat(sprintf("%d models, %d sweeps (%d burn-in), seed %.0f; %d diverged\n", nrow(x$grid),
                x$burn_in + x$num_iter, x$burn_in, x$seed, sum(x$grid$status != "ok")))
    print(utils::head(x$grid, 10))
  } else {
    ch <- x$chains
    cat(sprintf("%d chains, %d sweeps (%d burn-in), seed %.0f: %d kept, %d diverged\n", nrow(ch),
                x$burn_in + x$num_iter, x$burn_in, x$seed, sum(ch$keep), sum(ch$status != "ok")))
    cat(sprintf("estimates over kept chains: h2 %.4g, p %.4g, alpha %.3g\n", x$h2_est, x$p_est,
                x$alpha_est))
    print(utils::head(ch, 10))
  }
  invisible(x)
}
