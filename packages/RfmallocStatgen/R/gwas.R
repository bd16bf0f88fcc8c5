#' Genome-wide association: linear and logistic regression, streamed
#'
#' Tests every variant (column) of a samples x variants genotype matrix for
#' association with one or more phenotypes, adjusted for covariates, in one
#' pass over the matrix and in bounded memory. The rows agree with
#' `plink2 --glm hide-covar` line by line (same columns, same `ERRCODE`
#' vocabulary; [statgen_write_glm()] writes plink2's files).
#'
#' @section Model: For each variant \eqn{x} (the dosage or hardcall count of
#'   the `A1` allele, the `ALT` allele of [Rfmalloc::fmalloc_variants()])
#'   and phenotype \eqn{y}, with \eqn{C} the intercept and the covariates:
#'   * `"linear"`: least squares \eqn{y = C a + x b + e}; `BETA` = \eqn{b},
#'     `SE` its standard error, `T_STAT` = `BETA / SE`, `P` two-sided on
#'     `OBS_CT - ncol(C) - 1` degrees of freedom. Computed by
#'     Frisch-Waugh-Lovell: the covariates are projected out once per set of
#'     samples, and each variant needs \eqn{x'My} and \eqn{x'Mx} from
#'     products over bounded panels (exact downdates for the samples a
#'     missing call removes).
#'   * `"logistic"`: maximum likelihood by Newton's method from the
#'     covariates-only fit (a plain fit first iterates with the covariates'
#'     block of the information fixed at that fit's, which reaches the same
#'     maximum at a fraction of the work per step, and falls back to full
#'     Newton steps where it does not converge); `OR` = \eqn{e^b},
#'     `LOG(OR)_SE` the Wald standard error from the inverse information at
#'     the estimate, `Z_STAT`, `P` normal two-sided.
#'     Firth's penalized likelihood (Firth 1993; Heinze and Schemper 2002)
#'     is used for every variant (`firth = "always"`), never (`"never"`,
#'     plink2's `no-firth`: a separated variant gets `ERRCODE`
#'     `SEPARATION`), or, by default, as plink2's `firth-fallback` decides:
#'     the `FIRTH?` column says which rows. Firth's `LOG(OR)_SE` is
#'     \eqn{\sqrt{[(X'WX)^{-1}]_{bb}}} at the penalized estimate with a Wald
#'     `P`, plink2's definition; `logistf`'s `vcov()` and profile-likelihood
#'     P values differ from it.
#' @section Samples and missing values: Each phenotype uses its own samples:
#'   those with a non-missing value and every covariate non-missing
#'   (`OBS_CT` counts them per variant). A missing genotype call leaves the
#'   sample out of that variant's fit (plink2's rule, `impute = "none"`), or
#'   takes the variant's mean over all observed calls (`impute = "mean"`, as
#'   `bigsnpr::snp_fastImputeSimple(method = "mean2")` before
#'   `big_univLinReg`). Phenotypes with the same missing samples share the
#'   covariate work.
#' @section chrX: With `chrX = "sex"` (plink2 a3.5's default), variants whose
#'   `CHROM` is `X`, `23` or `chrX` get `SEX` (1 male, 2 female, from
#'   `samples$sex`) as an extra covariate; samples of unknown sex are then
#'   left out there. Male genotypes are taken as the reader gives them (0/2
#'   for a `.bed`, as plink2 a3.5 reads it); `chrX = "sex-haploid"` counts male
#'   calls as 0/1 instead, `chrX = "none"` tests chrX like an autosome.
#'   When every sample used has the same sex, `SEX` is not added.
#' @section Errors: classed `fm_error_earg` naming the column, value or
#'   sample: `y` or `covar` of another length than `nrow(X)` without IDs to
#'   match, IDs that match no sample of `X` or occur twice (in `y`,
#'   `covar` or `X`), `X` without variants, two phenotypes of one name, a
#'   phenotype with no value, infinite values, a phenotype constant (or of
#'   one class only, logistic) over the samples with every covariate,
#'   values other than 0/1 or 1/2 (logistic), a constant or collinear
#'   covariate, an infinite genotype; `fm_error_ecancelled` on interrupt.
#'   No partial result is returned.
#'
#' @param X samples x variants genotype matrix: a mapped `.bed`
#'   ([Rfmalloc::fmalloc_bed_open()]), hardcalls or dosages from
#'   `Rpgen::rpgen_read()`, [Rfmalloc::fmalloc_bed()] or
#'   [Rfmalloc::fmalloc_dosage()], a column selection of these
#'   ([Rfmalloc::fmalloc_select()], which keeps the variants' metadata;
#'   `X[, j]` decodes to a plain matrix without it), or a numeric matrix
#'   (plain or mapped).
#' @param y phenotypes: a numeric or logical vector (one per row of `X`), or
#'   a matrix or data frame of several (one column each, analysed in the
#'   same pass). `NA` is missing. Matched to `X`'s samples by ID when it is a
#'   data frame with an `IID` (or `#IID`) column, and `FID` when both have
#'   one, or when it has row names; otherwise taken in `X`'s row order.
#'   Logistic phenotypes are 0/1 or plink's 1/2 (control/case); a message
#'   says which coding was read.
#' @param covar `NULL`, or covariates as a numeric matrix or a data frame
#'   (factor and character columns become indicators of each level but the
#'   first), matched to `X`'s samples as `y` is. An intercept is added.
#' @param family `"linear"` or `"logistic"`.
#' @param firth logistic only: `"fallback"` (default), `"always"` or `"never"`.
#' @param impute `"none"` (default: a missing call drops the sample for that
#'   variant) or `"mean"`.
#' @param chrX `"sex"` (default), `"sex-haploid"` or `"none"`; see chrX.
#' @param a1 the tested allele `A1`: `"minor"` (default, plink2's: `ALT`
#'   unless `REF`'s frequency over all observed calls of `X` is below 1/2,
#'   a male chrX call counting one allele, computed as plink2 computes it;
#'   then `REF`, with `BETA` and the statistic negated and `OR` inverted)
#'   or `"alt"` (always `ALT`, plink2's `omit-ref`). A variant without `REF`
#'   and `ALT` (a matrix without variant metadata) is never flipped: `A1` is
#'   then `NA` and `BETA` is the effect of the value stored.
#' @param variants,samples `NULL` (the metadata of `X`, from
#'   [Rfmalloc::fmalloc_variants()] and [Rfmalloc::fmalloc_samples()]) or
#'   data frames in their schema, for matrices without metadata. `variants`
#'   may also be the path of a `.bim` or `.pvar` file (one line per column
#'   of `X`), read a chunk at a time: with `X` from
#'   `fmalloc_bed_open(prefix, variants = FALSE)` and `out`, millions of
#'   variants then never sit in memory at once.
#' @param out `NULL` (return the rows) or a path prefix: the rows are written
#'   as they are computed, `chunk` variants at a time, to plink2's files
#'   (as [statgen_write_glm()] names and lays them out), and only the
#'   summary is returned. Memory then stays bounded whatever the number of
#'   variants (about 8 bytes per variant and phenotype, for the P values of
#'   the summary).
#' @param chunk variants per written chunk (with `out`).
#' @param parallel `"mirai"` to fit the variants of a mapped `.bed`
#'   ([Rfmalloc::fmalloc_bed_open()]) in blocks on mirai daemons (see
#'   [Rfmalloc::fmalloc_parallel_info()]), `"none"` or `NULL` not to; the
#'   default is option `fmalloc.parallel`. Each variant's fit is its own,
#'   so the rows are those of a run without daemons, bit for bit, for any
#'   number of daemons; the daemons receive the phenotypes, covariates and
#'   designs with every block (with `out`, blocks are written as chunks, in
#'   order).
#' @param max_iter,tol logistic fits: iteration limit (plink2's 25 for a
#'   plain fit, after which `firth = "fallback"` turns to Firth; a Firth fit,
#'   whose iteration converges linearly, gets 4 times as many) and convergence
#'   tolerance: the estimate is within about `tol` of the maximum (the fit
#'   stops when the largest coefficient step is below `tol`, or when a plain
#'   fit's steps, shrinking geometrically, predict the next one below
#'   `tol / 100`).
#' @return A data frame of class `statgen_gwas`, one row per phenotype and
#'   variant (phenotypes one after another), with plink2's columns:
#'   `PHENO`, `#CHROM`, `POS`, `ID`, `REF`, `ALT`, `A1`, (`FIRTH?`, logistic
#'   with `firth = "fallback"`), `TEST` (`"ADD"`), `OBS_CT`, `BETA` or `OR`,
#'   `SE` or `LOG(OR)_SE`, `T_STAT` or `Z_STAT`, `P`, `ERRCODE` (`"."` when
#'   the fit is fine, else plink2's code: `CONST_OMITTED_ALLELE`,
#'   `SAMPLE_CT<=PREDICTOR_CT`, `RANK_DEFICIENT`, `SEPARATION,ALT1` (no
#'   A1 allele among the cases or among the controls, `firth = "never"`),
#'   `SEPARATION,REF` (no other allele there), `LOGISTIC_CONVERGE_FAIL`,
#'   `FIRTH_CONVERGE_FAIL`; the statistics are then `NA`; `UNFINISHED`: the
#'   iteration limit came first, near a solution, whose last iterate is
#'   reported). `print()`, `summary()` and `plot()`
#'   (Manhattan and QQ plots) have methods. With `out`: the
#'   `summary()` of those rows (class `summary.statgen_gwas`), with the
#'   paths written as attribute `files`; the rows of each chunk are the rows
#'   the whole call would return (every variant's fit depends only on it).
#' @references Chang CC et al. (2015) Second-generation PLINK. GigaScience
#'   4:7 (and www.cog-genomics.org/plink/2.0/assoc#glm). Frisch R, Waugh FV
#'   (1933) Econometrica 1:387-401; Lovell MC (1963) JASA 58:993-1010.
#'   Firth D (1993) Biometrika 80:27-38. Heinze G, Schemper M (2002) Stat
#'   Med 21:2409-2419.
#' @examples
#' rt <- Rfmalloc::open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
#' set.seed(1)
#' g <- matrix(rbinom(300 * 40, 2, 0.3), 300, 40)
#' X <- Rfmalloc::fmalloc_bed(g, rt)
#' y <- data.frame(QT = rnorm(300) + 0.4 * g[, 7], BT = rbinom(300, 1, 0.4))
#' res <- statgen_gwas(X, y["QT"], covar = data.frame(age = runif(300, 20, 70)))
#' res
#' summary(res)
#' statgen_gwas(X, y["BT"], family = "logistic")[1:3, ]
#' @export
statgen_gwas <- function(X, y, covar = NULL, family = c("linear", "logistic"),
                         firth = c("fallback", "always", "never"), impute = c("none", "mean"),
                         chrX = c("sex", "sex-haploid", "none"), a1 = c("minor", "alt"),
                         variants = NULL, samples = NULL, max_iter = 25L, tol = 1e-10,
                         out = NULL, chunk = 32768L, parallel = getOption("fmalloc.parallel")) {
  fm_local_parallel(parallel)
  family <- fm_arg_choice(family, c("linear", "logistic"))
  firth <- fm_arg_choice(firth, c("fallback", "always", "never"))
  impute <- fm_arg_choice(impute, c("none", "mean"))
  chrX <- fm_arg_choice(chrX, c("sex", "sex-haploid", "none"))
  a1 <- fm_arg_choice(a1, c("minor", "alt"))
  if (length(dim(X)) != 2L) fm_abort("earg", "X must be a samples x variants matrix")
  if (ncol(X) < 1) fm_abort("earg", "X has no variant (0 columns)")
  whole <- function(v, hi) is.numeric(v) && length(v) == 1L && !is.na(v) && v >= 1 && v <= hi &&
    v == round(v)
  if (!whole(max_iter, 1e6)) fm_abort("earg", "max_iter must be a whole number from 1 to 1e6")
  if (!is.numeric(tol) || length(tol) != 1L || !is.finite(tol) || !(tol > 0)) {
    fm_abort("earg", "tol must be a finite number > 0")
  }
  if (!is.null(out) && (!is.character(out) || length(out) != 1L || is.na(out))) {
    fm_abort("earg", "out must be NULL or one path prefix")
  }
  if (!whole(chunk, .Machine$integer.max)) {
    fm_abort("earg", "chunk must be a whole number of variants >= 1")
  }
  logistic <- family == "logistic"
  xs <- .x_samples(X, samples)
  pheno <- .pheno_matrix(y, xs, logistic)
  coding <- attr(pheno, "coding")
  if (logistic) {
    for (c in seq_len(ncol(pheno))) {
      cli::cli_inform("{.field {colnames(pheno)[c]}}: read as {coding[c]}")
    }
  }
  ctx <- list(X = X, xs = xs, pheno = pheno, cov = .covar_matrix(covar, xs), chrX = chrX,
              a1 = a1, logistic = logistic,
              opts = c(logistic, impute == "mean", match(firth, c("never", "fallback", "always")) - 1,
                       max_iter, tol),
              meta = list(family = family, firth = firth, coding = coding, impute = impute,
                          chrX = chrX))
  ctx$designs <- .part_designs(ctx)
  p <- ncol(X)
  src <- .variant_source(X, variants)
  on.exit(src$close(), add = TRUE)
  label <- sprintf("statgen_gwas: %s regression", family)
  # on daemons: blocks of variants, each fitted by .gwas_block there
  blocks <- if (fm_parallel_on(X)) {
    lean <- ctx
    lean$X <- NULL
    vs <- src$read(p)
    function(consume) fm_parallel_apply(X, .gwas_block, ctx = lean, .slice = list(vs = vs), .label = label,
                                        .consume = function(j, cols, tab) consume(tab))
  }
  if (!is.null(blocks) && is.null(out)) {
    tabs <- list()
    blocks(function(tab) tabs[[length(tabs) + 1L]] <<- tab)
    return(.gwas_combine(tabs, ncol(pheno)))
  }
  bar <- if (is.null(blocks)) .progress_bar(p, label)
  if (is.null(out)) {
    tab <- .gwas_pass(ctx, seq_len(p), src$read(p), bar, 0)
    if (!is.null(bar)) cli::cli_progress_done(id = bar)
    return(tab)
  }
  # Streamed to plink2's files, chunk by chunk: memory holds one chunk's
  # rows and the P values (for summary()), not the whole table.
  writer <- .glm_writer(out, colnames(pheno), family, firth)
  on.exit(writer$abort(), add = TRUE, after = FALSE)
  acc <- NULL
  if (!is.null(blocks)) {
    blocks(function(tab) {
      writer$write(tab)
      acc <<- .summary_add(acc, tab)
    })
  }
  for (c0 in if (is.null(blocks)) seq(0, max(p - 1, 0), by = chunk)) {
    cols <- (c0 + 1):min(p, c0 + chunk)
    tab <- .gwas_pass(ctx, cols, src$read(length(cols)), bar, c0)
    writer$write(tab)
    acc <- .summary_add(acc, tab)
    rm(tab)
    # A chunk's rows become garbage at once: collecting it now keeps the
    # heap at about one chunk (R would otherwise raise its trigger and grow).
    invisible(gc(verbose = FALSE))
  }
  if (!is.null(bar)) cli::cli_progress_done(id = bar)
  files <- writer$finish()
  structure(.summary_of(acc, 5e-8, family), files = files)
}

# A block of variants on a daemon (fm_parallel_apply): x its columns, vs
# their variants, ctx the fit's context without X.
.gwas_block <- function(x, vs, ctx) {
  ctx$X <- x
  .gwas_pass(ctx, seq_len(ncol(x)), vs, NULL, 0)
}

# The tables of consecutive blocks of variants as one: each is phenotype-
# major (every variant of the first phenotype, then the second, ...), and
# so is the whole.
.gwas_combine <- function(tabs, k) {
  if (length(tabs) == 1L) return(tabs[[1L]])
  rows <- vapply(tabs, nrow, 1L) %/% k
  at <- cumsum(c(0L, k * rows))
  ord <- unlist(lapply(seq_len(k), function(c) {
    unlist(lapply(seq_along(tabs), function(b) at[b] + (c - 1L) * rows[b] + seq_len(rows[b])))
  }))
  all <- do.call(rbind, lapply(tabs, function(t) structure(t, class = "data.frame")))[ord, , drop = FALSE]
  rownames(all) <- NULL
  a <- attributes(tabs[[1L]])
  attributes(all)[setdiff(names(a), c("names", "row.names"))] <- a[setdiff(names(a), c("names", "row.names"))]
  all
}

# One pass over the columns cols of X (their variants vs): per part
# (autosomes, and chrX with plink2's SEX covariate), the core's fits; then
# plink2's A1 and the rows (.gwas_table). done: variants already reported
# on the progress bar.
.gwas_pass <- function(ctx, cols, vs, bar, done) {
  xs <- ctx$xs
  pheno <- ctx$pheno
  p <- length(cols)
  k <- ncol(pheno)
  on_x <- vs$CHROM %in% c("X", "23", "chrX") & ctx$chrX != "none"
  fields <- c("beta", "se", "stat", "obs", "code", "firth", "allele_ct")
  res <- NULL
  df_pred <- numeric(p) # predictors: covariates + intercept + genotype
  for (sex_part in c(FALSE, TRUE)) {
    rows <- which(on_x == sex_part)
    if (!length(rows)) next
    d <- ctx$designs[[if (sex_part) "x" else "auto"]]
    des <- d$des
    if (inherits(des, "error")) stop(des) # chrX's design (no sample of known sex, ...)
    prog <- if (is.null(bar)) NULL else {
      off <- done
      function(d, total) cli::cli_progress_update(id = bar, set = off + d)
    }
    r <- .glm_call(fmalloc_view(ctx$X, cols[rows]), des, d$scale, d$haploid, ctx$opts, prog,
                   cols[rows], rows, vs, xs)
    names(r) <- fields
    if (length(rows) == p) { # one part: the core's matrices as they are
      res <- r
    } else {
      if (is.null(res))
        res <- lapply(r, function(m) if (is.null(m)) NULL else m[rep(NA_integer_, p), , drop = FALSE])
      for (f in fields) if (!is.null(r[[f]])) res[[f]][rows, ] <- r[[f]]
    }
    rm(r)
    df_pred[rows] <- ncol(des$covar) + 1
    done <- done + length(rows)
  }
  if (ctx$a1 == "minor") { # variants without alleles (a plain matrix) keep their coding
    # plink2's default omits the major allele: REF when its frequency,
    # computed as plink2 does (count times the reciprocal of the total),
    # is not below 1/2, so a tie keeps ALT unless that product rounds down.
    tot <- res$allele_ct[, 2]
    flip <- !is.na(vs$REF) & !is.na(vs$ALT) & tot > 0 & (tot - res$allele_ct[, 1]) * (1 / tot) < 0.5
    vs$A1[flip] <- vs$REF[flip]
    res$beta[flip, ] <- -res$beta[flip, ]
    res$stat[flip, ] <- -res$stat[flip, ]
  }
  .gwas_table(res, vs, colnames(pheno), df_pred, ctx$meta)
}

# The designs of the autosomes and of chrX (plink2's SEX covariate, and the
# haploid flags and genotype scale of males), checked once for every pass.
.part_designs <- function(ctx) {
  xs <- ctx$xs
  pheno <- ctx$pheno
  sex <- ifelse(xs$sex %in% c(1L, 2L), as.numeric(xs$sex), NA_real_)
  used <- rowSums(!is.na(pheno)) > 0 & !is.na(sex)
  cv <- ctx$cov
  if (length(unique(sex[used])) > 1) cv <- cbind(cv, SEX = sex)
  list(auto = list(des = .design(pheno, ctx$cov)),
       x = if (ctx$chrX != "none") {
         list(des = tryCatch(.design(pheno, cv), error = function(e) e),
              haploid = as.raw(!is.na(sex) & sex == 1),
              scale = if (ctx$chrX == "sex-haploid") ifelse(!is.na(sex) & sex == 1, 0.5, 1))
       })
}

# The core pass over the columns cols of X; the core's message about an
# infinite genotype counts within those columns, so it is said again with
# X's column, the variant's ID and the sample.
.glm_call <- function(view, des, scale, haploid, opts, prog, cols, rows, vs, xs) {
  call <- sys.call(-1)
  tryCatch(.Call(C_stg_glm, view, des$covar, des$pheno, scale, haploid, as.numeric(opts), prog),
           fm_error_earg = function(e) {
             at <- regmatches(conditionMessage(e),
                              regexec("variant ([0-9]+) is infinite at row ([0-9]+)", conditionMessage(e)))[[1]]
             if (!length(at)) stop(e)
             j <- as.integer(at[2])
             i <- as.integer(at[3])
             fm_abort("earg", sprintf("the genotype of variant %.0f (%s) is infinite at row %d%s",
                                      cols[j], vs$ID[rows[j]], i, if (is.na(xs$iid[i])) "" else
                                        sprintf(" (sample %s)", xs$iid[i])), call = call)
           })
}

# A cli progress bar over n variants, or NULL when fmalloc.progress is FALSE.
.progress_bar <- function(n, what) {
  if (!isTRUE(getOption("fmalloc.progress", TRUE))) return(NULL)
  cli::cli_progress_bar(what, total = n, .envir = parent.frame())
}

# The long result table (see ?statgen_gwas).
.gwas_table <- function(res, vs, pheno_names, df_pred, meta) {
  family <- meta$family
  p <- nrow(vs)
  k <- length(pheno_names)
  codes <- .Call(C_stg_glm_codes)
  flat <- function(m) `dim<-`(m, NULL) # no copy of the core's matrix
  code_int <- flat(res$code)
  code <- codes[code_int + 1L]
  beta <- flat(res$beta)
  se <- flat(res$se)
  stat <- flat(res$stat)
  obs <- flat(res$obs)
  bad <- which(code_int != 0L & code_int != match("UNFINISHED", codes) - 1L)
  beta[bad] <- se[bad] <- stat[bad] <- NA
  if (family == "linear") {
    pval <- 2 * stats::pt(-abs(stat), df = obs - rep(df_pred, times = k))
  } else {
    pval <- 2 * stats::pnorm(-abs(stat))
  }
  rep_v <- function(col) rep(col, times = k)
  out <- data.frame(PHENO = rep(pheno_names, each = p), `#CHROM` = rep_v(vs$CHROM),
                    POS = rep_v(vs$POS), ID = rep_v(vs$ID), REF = rep_v(vs$REF),
                    ALT = rep_v(vs$ALT), A1 = rep_v(vs$A1), check.names = FALSE,
                    stringsAsFactors = FALSE)
  if (family == "logistic" && meta$firth == "fallback") {
    out[["FIRTH?"]] <- c("N", "Y")[flat(res$firth) + 1L]
  }
  out$TEST <- "ADD"
  out$OBS_CT <- as.integer(obs)
  if (family == "linear") {
    out$BETA <- beta
    out$SE <- se
    out$T_STAT <- stat
  } else {
    out$OR <- exp(beta)
    out[["LOG(OR)_SE"]] <- se
    out$Z_STAT <- stat
  }
  out$P <- pval
  out$ERRCODE <- code
  rownames(out) <- NULL
  structure(out, class = c("statgen_gwas", "data.frame"), family = family, firth = meta$firth,
            coding = stats::setNames(meta$coding, pheno_names), impute = meta$impute,
            chrX = meta$chrX)
}
