# coloc_data.R: coloc's data-set conventions, checked and turned into
# per-SNP log approximate Bayes factors (Wakefield 2009), for
# statgen_coloc_abf(). The pair algebra is the core's (coloc.R).

# Names under which a standard error arrives where coloc wants its square.
.coloc_se_names <- c("se", "SE", "sebeta", "se_beta", "beta_se", "standard_error", "stderr",
                     "LOG(OR)_SE")

# The user's call that conditions report: the innermost statgen_coloc_*().
.coloc_user_call <- function() {
  for (cl in rev(sys.calls())) {
    f <- cl[[1L]]
    if (is.name(f) && startsWith(as.character(f), "statgen_coloc")) return(cl)
  }
  NULL
}

# A warning of the stack's classes (fm_warning_<status>), with a subclass
# of its own first so that callers can catch exactly it.
.stg_warn <- function(class, code, ...) {
  warning(structure(class = c(class, paste0("fm_warning_", code), "warning", "condition"),
                    list(message = paste0(...), call = .coloc_user_call())))
}

# A classed error (Rfmalloc::fm_abort) reported against the user's call.
.coloc_abort <- function(code, ...) Rfmalloc::fm_abort(code, ..., call = .coloc_user_call())

# The first SNP where bad is TRUE, for messages: "SNP 'rs1' (row 3)".
.coloc_where <- function(bad, snp) {
  k <- which(bad)[1L]
  sprintf("SNP '%s' (entry %d)", snp[k], k)
}

# A numeric field of d: NULL when absent; else numeric, of length n (or 1
# when scalar_ok; exactly 1 when snp is NULL: a scalar field), without NA,
# else a classed error naming it.
.coloc_num <- function(d, field, what, n, snp, scalar_ok = FALSE) {
  v <- d[[field]]
  if (is.null(v)) return(NULL)
  if (!is.numeric(v) || is.matrix(v))
    .coloc_abort("earg", what, "$", field, " must be a numeric vector, not ", typeof(v))
  if (is.null(snp) && length(v) != 1L)
    .coloc_abort("earg", what, "$", field, " must be one number, not ", length(v), " numbers")
  if (!(length(v) == n || (scalar_ok && length(v) == 1L)))
    .coloc_abort("emismatch", what, "$", field, " has ", length(v), " values for ", n, " SNPs")
  if (anyNA(v)) {
    .coloc_abort("earg", what, "$", field, " has ", sum(is.na(v)), " missing value(s), the first at ",
                 if (!is.null(snp) && length(v) == n) .coloc_where(is.na(v), snp) else "its only entry",
                 ": nothing is dropped silently; remove those SNPs first")
  }
  as.double(v)
}

# The varbeta trap: coloc's varbeta is the VARIANCE of beta. A standard
# error passed under another name, or passed as varbeta, is caught here.
.coloc_check_se <- function(d, what) {
  se <- intersect(names(d), .coloc_se_names)
  if (!length(se)) return(invisible())
  se <- se[1L]
  if (is.null(d$varbeta)) {
    .coloc_abort("earg", what, " has '", se, "' but no 'varbeta': coloc's varbeta is the variance ",
                 "of beta, the squared standard error; give varbeta = ", se, "^2")
  }
  s <- d[[se]]
  v <- d$varbeta
  if (!is.numeric(s) || !is.numeric(v) || length(s) != length(v)) return(invisible())
  ok <- !is.na(s) & !is.na(v)
  if (isTRUE(all.equal(v[ok], s[ok]^2, tolerance = 1e-6))) return(invisible())
  if (isTRUE(all.equal(v[ok], s[ok], tolerance = 1e-6))) {
    .coloc_abort("earg", what, "$varbeta equals its '", se, "': varbeta must be the variance of ",
                 "beta, ", se, "^2, not the standard error")
  }
  .coloc_abort("emismatch", what, "$varbeta is not its '", se, "' squared: varbeta must be the ",
               "variance of beta, ", se, "^2")
}

# How var(beta) scales with 2 N f (1 - f) across SNPs, for the varbeta trap
# when only varbeta is given: as a variance it falls as 1 / (2 N f (1 - f))
# (linear: sdY^2 / (2 N f(1-f)); logistic: about 1 / (2 N f(1-f) s(1-s))),
# so log(varbeta) on log(2 N f (1 - f)) has slope -1; a standard error has
# slope -1/2, a variance squared once more -2. Returns the least-squares
# slope, or NA when there are fewer than 20 SNPs or too little spread in
# allele frequency (sd of the log below 0.1) to tell.
.coloc_varbeta_slope <- function(varbeta, maf, n) {
  x <- log(2 * n * maf * (1 - maf))
  if (length(varbeta) < 20L || stats::sd(x) < 0.1) return(NA_real_)
  y <- log(varbeta)
  sum((x - mean(x)) * (y - mean(y))) / sum((x - mean(x))^2)
}

# coloc's sdY estimate for a quantitative trait given beta and varbeta
# without sdY: var(beta) ~ sdY^2 / (2 N f (1 - f)), so 2 N f (1 - f) =
# sdY^2 (1 / varbeta) through the origin, fitted by least squares over
# the data set's SNPs (coloc's sdY.est).
.coloc_sdy <- function(varbeta, maf, n, what) {
  x <- 1 / varbeta
  y <- 2 * n * maf * (1 - maf)
  cf <- sum(x * y) / sum(x * x)
  if (!(cf > 0)) {
    .coloc_abort("edegenerate", what, ": the estimate of sdY^2 from varbeta, MAF and N is ",
                 format(cf), " (not positive); give sdY")
  }
  sqrt(cf)
}

# Wakefield's log ABF of each SNP: z the z score, V the variance of beta,
# W = sd_prior^2 the prior variance of the effect:
#   log ABF = (log(V / (V + W)) + z^2 W / (V + W)) / 2.
.coloc_labf <- function(z, V, sd_prior) {
  W <- sd_prior^2
  r <- W / (W + V)
  0.5 * (log(V / (V + W)) + r * z^2)
}

# One data set checked and summarised: list(snp, position, V, z, r, lABF,
# type, sdY (NA when not used), sdY_estimated).
.coloc_dataset <- function(d, i) {
  what <- paste0("d", i)
  if (!is.list(d) || is.null(names(d)))
    .coloc_abort("earg", what, " must be a named list (coloc's data set), not ", class(d)[1L])
  .coloc_check_se(d, what)
  type <- d$type
  if (!is.character(type) || length(type) != 1L || !type %in% c("quant", "cc"))
    .coloc_abort("earg", what, "$type must be \"quant\" or \"cc\"")
  snp <- d$snp
  if (is.null(snp)) .coloc_abort("earg", what, " has no 'snp': SNPs are matched by name")
  if (is.factor(snp)) snp <- as.character(snp)
  if (!is.character(snp) || anyNA(snp) || !length(snp))
    .coloc_abort("earg", what, "$snp must be a character vector of SNP names without NA")
  if (anyDuplicated(snp))
    .coloc_abort("earg", what, "$snp has duplicated names, e.g. '", snp[anyDuplicated(snp)], "'")
  n <- length(snp)
  beta <- .coloc_num(d, "beta", what, n, snp)
  varbeta <- .coloc_num(d, "varbeta", what, n, snp)
  pvalues <- .coloc_num(d, "pvalues", what, n, snp)
  maf <- .coloc_num(d, "MAF", what, n, snp)
  N <- .coloc_num(d, "N", what, n, snp, scalar_ok = TRUE)
  s <- .coloc_num(d, "s", what, 1L, NULL)
  sdY <- .coloc_num(d, "sdY", what, 1L, NULL)
  position <- .coloc_num(d, "position", what, n, snp)
  if (!is.null(maf) && any(!(maf > 0 & maf < 1)))
    .coloc_abort("earg", what, "$MAF must lie in (0, 1): ", .coloc_where(!(maf > 0 & maf < 1), snp),
                 " has ", maf[!(maf > 0 & maf < 1)][1L])
  if (!is.null(N) && any(!(N > 0 & is.finite(N))))
    .coloc_abort("earg", what, "$N (sample size) must be positive and finite")
  if (!is.null(s) && !(s > 0 && s < 1))
    .coloc_abort("earg", what, "$s (the proportion of cases) must lie in (0, 1), not ", s)
  if (!is.null(sdY) && !(sdY > 0 && is.finite(sdY)))
    .coloc_abort("earg", what, "$sdY must be positive and finite, not ", sdY)
  sdy_est <- FALSE
  if (!is.null(beta) && !is.null(varbeta)) {
    if (any(!is.finite(beta))) {
      .coloc_abort("earg", what, "$beta is not finite at ", .coloc_where(!is.finite(beta), snp))
    }
    bad <- !(varbeta > 0 & is.finite(varbeta))
    if (any(bad)) {
      .coloc_abort("earg", what, "$varbeta must be positive and finite: ", .coloc_where(bad, snp),
                   " has ", varbeta[bad][1L])
    }
    if (!is.null(maf) && !is.null(N)) {
      sl <- .coloc_varbeta_slope(varbeta, maf, N)
      if (!is.na(sl) && (sl > -0.75 || sl < -1.5)) {
        .stg_warn("statgen_warning_varbeta", "earg", what, "$varbeta falls with 2 N MAF (1 - MAF) ",
                  "at the power ", format(sl, digits = 3), " across SNPs where a variance of beta ",
                  "falls at the power -1: ",
                  if (sl > -0.75) "was the standard error given as varbeta? (power -1/2)"
                  else "was the variance squared once more? (power -2)",
                  " varbeta must be se^2")
      }
    }
    if (type == "quant") {
      if (is.null(sdY)) {
        if (is.null(maf) || is.null(N))
          .coloc_abort("earg", what, ": a quantitative trait needs sdY, or MAF and N to estimate it")
        sdY <- .coloc_sdy(varbeta, maf, N, what)
        sdy_est <- TRUE
        message(sprintf("%s: sdY estimated from varbeta, MAF and N as %.4g (coloc's estimate); give sdY if it is known",
                        what, sdY))
      }
      sd_prior <- 0.15 * sdY
    } else {
      sd_prior <- 0.2
    }
    V <- varbeta
    z <- beta / sqrt(varbeta)
  } else {
    if (is.null(pvalues) || is.null(maf))
      .coloc_abort("earg", what, " needs beta and varbeta, or pvalues, MAF and N")
    if (is.null(N)) .coloc_abort("earg", what, " gives P values without N (the sample size)")
    bad <- !(pvalues > 0 & pvalues <= 1)
    if (any(bad)) {
      .coloc_abort("earg", what, "$pvalues must lie in (0, 1]: ", .coloc_where(bad, snp), " has ",
                   pvalues[bad][1L])
    }
    if (type == "cc" && is.null(s))
      .coloc_abort("earg", what, " gives case-control P values without s (the proportion of cases)")
    nvx <- 2 * N * maf * (1 - maf)
    if (type == "quant") {
      V <- 1 / nvx
      sd_prior <- 0.15
    } else {
      V <- 1 / (nvx * s * (1 - s))
      sd_prior <- 0.2
    }
    z <- stats::qnorm(0.5 * pvalues, lower.tail = FALSE)
  }
  V <- rep_len(V, n)
  list(snp = snp, position = position, V = V, z = z, r = sd_prior^2 / (sd_prior^2 + V),
       lABF = .coloc_labf(z, V, sd_prior), type = type,
       sdY = if (type == "quant" && !is.null(sdY)) sdY else NA_real_, sdY_estimated = sdy_est)
}

#' A coloc data set from association results
#'
#' Turns the rows of one phenotype of a [statgen_gwas()] result into the
#' data set [statgen_coloc_abf()] takes, so that the variance of each
#' effect is `SE^2` by construction (never the standard error: see "The
#' varbeta trap" in [statgen_coloc_abf()]). Linear results give `type =
#' "quant"` with `beta = BETA`; logistic results `type = "cc"` with `beta =
#' log(OR)` and `varbeta = LOG(OR)_SE^2`. `snp` is `ID`, `position` `POS`
#' and `N` `OBS_CT`.
#'
#' Rows without statistics (an `ERRCODE` other than `"."`, such as
#' monomorphic variants) are left out, and a message says how many:
#' colocalisation takes no missing value.
#'
#' @param gwas a result of [statgen_gwas()] (returned rows, not `out =`).
#' @param pheno the phenotype (default: the only one; required when there
#'   are several).
#' @param maf `NULL`, or the allele frequency of each row of that
#'   phenotype, in the order of the rows (for example
#'   `Rfmalloc::fmalloc_allele_freq(X)$alt_freq` for the `X` tested): needed
#'   to estimate `sdY` when it is not given, and for the varbeta check.
#' @param sdY quantitative traits: the phenotype's standard deviation
#'   (`NULL`: estimated by [statgen_coloc_abf()] from `maf`).
#' @param s case-control traits: the proportion of cases (optional with
#'   `beta` and `varbeta`).
#' @return A list with `beta`, `varbeta`, `snp`, `position`, `N`, `type`
#'   and, when given, `MAF`, `sdY` and `s`.
#' @section Errors: `fm_error_earg` when `gwas` is not a `statgen_gwas`
#'   result, `pheno` is not one of its phenotypes (or missing with several),
#'   or `maf` has another length than that phenotype's rows.
#' @examples
#' rt <- Rfmalloc::open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
#' set.seed(4)
#' g <- matrix(rbinom(400 * 60, 2, 0.3), 400, 60)
#' X <- Rfmalloc::fmalloc_bed(g, rt)
#' y <- data.frame(QT = rnorm(400) + 0.8 * g[, 20], BT = rbinom(400, 1, plogis(1.2 * g[, 20] - 1.5)))
#' maf <- Rfmalloc::fmalloc_allele_freq(X)$alt_freq
#' d1 <- statgen_coloc_dataset(statgen_gwas(X, y["QT"]), maf = maf, sdY = sd(y$QT))
#' d2 <- statgen_coloc_dataset(statgen_gwas(X, y["BT"], family = "logistic"), maf = maf)
#' statgen_coloc_abf(d1, d2)$summary
#' @export
statgen_coloc_dataset <- function(gwas, pheno = NULL, maf = NULL, sdY = NULL, s = NULL) {
  if (!inherits(gwas, "statgen_gwas"))
    .coloc_abort("earg", "gwas must be a statgen_gwas() result, not ", class(gwas)[1L])
  phenos <- unique(gwas$PHENO)
  if (is.null(pheno)) {
    if (length(phenos) != 1L) {
      .coloc_abort("earg", "gwas holds ", length(phenos), " phenotypes (",
                   paste(phenos, collapse = ", "), "): name one with pheno")
    }
    pheno <- phenos
  }
  if (!is.character(pheno) || length(pheno) != 1L || !pheno %in% phenos)
    .coloc_abort("earg", "pheno must be one of the phenotypes of gwas: ", paste(phenos, collapse = ", "))
  d <- .plain(gwas)[gwas$PHENO == pheno, , drop = FALSE]
  if (!is.null(maf) && (!is.numeric(maf) || length(maf) != nrow(d))) {
    .coloc_abort("earg", "maf must give one allele frequency per row of phenotype '", pheno, "' (",
                 nrow(d), "), not ", length(maf))
  }
  logistic <- identical(attr(gwas, "family"), "logistic")
  beta <- if (logistic) log(d$OR) else d$BETA
  se <- if (logistic) d[["LOG(OR)_SE"]] else d$SE
  ok <- d$ERRCODE == "." & is.finite(beta) & is.finite(se) & se > 0
  if (!all(ok)) {
    message(sprintf("statgen_coloc_dataset: %d of %d rows of '%s' have no statistics (ERRCODE) and are left out",
                    sum(!ok), length(ok), pheno))
  }
  out <- list(beta = beta[ok], varbeta = se[ok]^2, snp = d$ID[ok], N = d$OBS_CT[ok],
              type = if (logistic) "cc" else "quant")
  if (!anyNA(d$POS[ok])) out$position <- d$POS[ok]
  if (!is.null(maf)) out$MAF <- maf[ok]
  if (!is.null(sdY)) out$sdY <- sdY
  if (!is.null(s)) out$s <- s
  out
}
