# Methods of statgen_gwas results: print, summary, plot (Manhattan, QQ) and
# the plink2 file writer.

#' Summaries, plots and files of association results
#'
#' `summary()` counts, per phenotype, the tests, the rows with an
#' `ERRCODE` other than `"."` (by code), the rows fitted by Firth, the hits
#' below `threshold` and the genomic inflation factor
#' \eqn{\lambda_{GC}} = median of the 1-df chi-square statistics / 0.4549
#' (its median under the null; Devlin and Roeder 1999, Biometrics
#' 55:997-1004), over the rows with a P value. `print()` shows that summary
#' and the strongest associations. `plot()` draws a Manhattan plot
#' (\eqn{-\log_{10} P} by position, chromosomes side by side in the order
#' they appear, with the genome-wide line at `threshold`) or a QQ plot of
#' the observed against the expected \eqn{-\log_{10} P} under the null,
#' with \eqn{\lambda_{GC}} in the title; one phenotype per plot.
#' [statgen_write_glm()] writes plink2's files. Subsetting rows keeps the
#' class; a subset without the `PHENO`, `P` or `ERRCODE` column is a plain
#' data frame.
#'
#' @param x,object a result of [statgen_gwas()].
#' @param threshold genome-wide significance level (default 5e-8).
#' @param n rows of the strongest associations to print.
#' @param type `"manhattan"` or `"qq"`.
#' @param pheno the phenotype to plot (default the first).
#' @param ... further arguments: for `plot()`, passed to [graphics::plot()].
#' @return `summary()`: a data frame of class `summary.statgen_gwas`, one
#'   row per phenotype (`PHENO`, `tests`, `errors`, `firth`, `hits`,
#'   `lambda_gc`), with the error counts by code as attribute `errcodes`.
#'   `print()` and `plot()`: `x`, invisibly.
#' @section Errors: `fm_error_earg` for a `threshold` outside (0, 1), a
#'   `type` or `pheno` not in `x`, or a phenotype without any P value to
#'   plot (every row has an ERRCODE).
#' @name statgen_gwas-methods
#' @examples
#' rt <- Rfmalloc::open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
#' set.seed(2)
#' g <- matrix(rbinom(300 * 60, 2, 0.3), 300, 60)
#' X <- Rfmalloc::fmalloc_bed(g, rt)
#' res <- statgen_gwas(X, rnorm(300) + 0.5 * g[, 9])
#' summary(res)
#' plot(res)
#' plot(res, type = "qq")
NULL

#' @rdname statgen_gwas-methods
#' @export
summary.statgen_gwas <- function(object, threshold = 5e-8, ...) {
  if (!is.numeric(threshold) || length(threshold) != 1L || !(threshold > 0 && threshold < 1)) {
    Rfmalloc::fm_abort("earg", "threshold must be a number between 0 and 1")
  }
  .summary_of(.summary_add(NULL, object), threshold, attr(object, "family"))
}

# What summary() needs of rows, accumulated over chunks of a result: per
# phenotype the ERRCODE counts, the Firth rows and the P values.
.summary_add <- function(acc, tab) {
  if (is.null(acc)) acc <- list()
  for (p in unique(tab$PHENO)) {
    d <- tab[tab$PHENO == p, , drop = FALSE]
    a <- acc[[p]]
    if (is.null(a)) a <- list(codes = integer(0), firth = if (is.null(d[["FIRTH?"]])) NA_integer_ else 0L, p = list())
    cc <- table(d$ERRCODE)
    for (nm in names(cc)) a$codes[nm] <- (if (is.na(a$codes[nm])) 0L else a$codes[nm]) + as.integer(cc[[nm]])
    if (!is.na(a$firth)) a$firth <- a$firth + sum(d[["FIRTH?"]] == "Y")
    a$p[[length(a$p) + 1L]] <- d$P[!is.na(d$P)]
    acc[[p]] <- a
  }
  acc
}

.summary_of <- function(acc, threshold, family) {
  out <- data.frame(PHENO = character(0), tests = integer(0), errors = integer(0),
                    firth = integer(0), hits = integer(0), lambda_gc = numeric(0))
  out <- do.call(rbind, c(list(out), lapply(names(acc), function(p) {
    a <- acc[[p]]
    pv <- unlist(a$p, use.names = FALSE)
    data.frame(PHENO = p, tests = sum(a$codes), errors = sum(a$codes[names(a$codes) != "."]),
               firth = a$firth, hits = sum(pv < threshold), lambda_gc = .lambda_gc(pv),
               stringsAsFactors = FALSE)
  })))
  codes <- unique(unlist(lapply(acc, function(a) names(a$codes))))
  tab <- matrix(0L, length(acc), length(codes), dimnames = list(PHENO = names(acc), ERRCODE = codes))
  for (p in names(acc)) tab[p, names(acc[[p]]$codes)] <- acc[[p]]$codes
  structure(out, class = c("summary.statgen_gwas", "data.frame"), errcodes = as.table(tab),
            threshold = threshold, family = family)
}

# Median 1-df chi-square over its null median qchisq(0.5, 1) = 0.4549. The
# chi-square falls as P rises, so its median is that of the middle P values
# (both middle ones, transformed, for an even count): no transform of every P.
.lambda_gc <- function(p) {
  n <- length(p)
  if (!n) return(NA_real_)
  mid <- sort(p, partial = unique(c((n + 1) %/% 2, (n + 2) %/% 2)))[c((n + 1) %/% 2, (n + 2) %/% 2)]
  mean(stats::qchisq(mid, 1, lower.tail = FALSE)) / stats::qchisq(0.5, 1)
}

#' @rdname statgen_gwas-methods
#' @export
print.summary.statgen_gwas <- function(x, ...) {
  cat(sprintf("<%s association: %s phenotype%s>\n", attr(x, "family"), nrow(x),
              if (nrow(x) == 1) "" else "s"))
  for (i in seq_len(nrow(x))) {
    cat(sprintf("%s: %s tests, %s with an ERRCODE%s, %s below %g, lambda_GC %.3f\n", x$PHENO[i],
                format(x$tests[i], big.mark = ","), format(x$errors[i], big.mark = ","),
                if (is.na(x$firth[i])) "" else sprintf(", %s by Firth", format(x$firth[i], big.mark = ",")),
                format(x$hits[i], big.mark = ","), attr(x, "threshold"), x$lambda_gc[i]))
  }
  codes <- attr(x, "errcodes")
  codes <- codes[, colnames(codes) != ".", drop = FALSE]
  if (length(codes) && sum(codes)) {
    cat("ERRCODE counts:\n")
    print(codes)
  }
  if (!is.null(attr(x, "files"))) cat("written:", paste(attr(x, "files"), collapse = ", "), "\n")
  invisible(x)
}

#' @rdname statgen_gwas-methods
#' @export
print.statgen_gwas <- function(x, n = 5L, ...) {
  print(summary(x))
  ord <- order(x$P, na.last = NA)
  if (length(ord)) {
    cat(sprintf("strongest association%s:\n", if (min(n, length(ord)) > 1) "s" else ""))
    print(.plain(x)[utils::head(ord, n), , drop = FALSE], row.names = FALSE)
  }
  invisible(x)
}

#' @rdname statgen_gwas-methods
#' @export
plot.statgen_gwas <- function(x, type = c("manhattan", "qq"), pheno = NULL, threshold = 5e-8,
                              ...) {
  type <- Rfmalloc::fm_arg_choice(type, c("manhattan", "qq"))
  if (is.null(pheno)) pheno <- x$PHENO[1]
  if (!pheno %in% x$PHENO) Rfmalloc::fm_abort("earg", sprintf("no phenotype '%s' in x", pheno))
  d <- x[x$PHENO == pheno & !is.na(x$P), , drop = FALSE]
  if (!nrow(d)) {
    Rfmalloc::fm_abort("earg", sprintf("phenotype '%s' has no P value to plot (every row has an ERRCODE)",
                                       pheno))
  }
  lp <- -log10(pmax(d$P, .Machine$double.xmin))
  if (type == "qq") {
    e <- -log10(stats::ppoints(length(lp)))
    graphics::plot(e, sort(lp, decreasing = TRUE), pch = 20, cex = 0.6,
                   xlab = expression(expected ~ -log[10](P)),
                   ylab = expression(observed ~ -log[10](P)),
                   main = sprintf("%s: QQ plot, lambda_GC = %.3f", pheno, .lambda_gc(d$P)), ...)
    graphics::abline(0, 1, col = "grey40")
    return(invisible(x))
  }
  chrom <- d[["#CHROM"]]
  chrom[is.na(chrom)] <- "?"
  lev <- unique(chrom)
  ci <- match(chrom, lev)
  pos <- ifelse(is.na(d$POS), seq_along(ci), d$POS)
  span <- vapply(seq_along(lev), function(i) max(pos[ci == i]), 0)
  start <- c(0, cumsum(as.numeric(span)))[seq_along(lev)]
  gx <- start[ci] + pos
  graphics::plot(gx, lp, pch = 20, cex = 0.6, col = c("grey20", "steelblue")[ci %% 2 + 1],
                 xaxt = "n", xlab = "chromosome", ylab = expression(-log[10](P)),
                 main = sprintf("%s: %s", pheno, attr(x, "family")), ...)
  graphics::axis(1, at = start + span / 2, labels = lev, tick = FALSE, cex.axis = 0.7)
  graphics::abline(h = -log10(threshold), col = "firebrick", lty = 2)
  invisible(x)
}

#' Write association results as plink2's .glm files
#'
#' Writes one file per phenotype, named and laid out as `plink2 --glm
#' hide-covar` writes them, so that tools reading plink2's output read it:
#' `<prefix>.<PHENO>.glm.linear`, `.glm.logistic.hybrid` (logistic with
#' Firth fallback, with its `FIRTH?` column), `.glm.logistic` (no Firth) or
#' `.glm.firth` (Firth always). Tab-separated, header line starting
#' `#CHROM`, numbers with 6 significant digits (plink2's), `NA` for missing
#' values, `ERRCODE` last. Source: plink2's file formats
#' (www.cog-genomics.org/plink/2.0/formats#glm_linear).
#'
#' @param res a result of [statgen_gwas()].
#' @param prefix output path prefix (its folder must exist).
#' @return The paths written (invisibly), named by phenotype.
#' @section Errors: `fm_error_earg` when `res` is not a `statgen_gwas`
#'   result, has no rows, or `prefix` is not one string; `fm_error_eio` when a file cannot
#'   be written. A file is written under a temporary name and renamed when
#'   complete, so an interrupted write leaves no partial `.glm` file.
#' @examples
#' rt <- Rfmalloc::open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
#' set.seed(3)
#' X <- Rfmalloc::fmalloc_bed(matrix(rbinom(200 * 20, 2, 0.3), 200, 20), rt)
#' res <- statgen_gwas(X, data.frame(QT = rnorm(200)))
#' f <- statgen_write_glm(res, file.path(tempdir(), "toy"))
#' readLines(f, n = 3)
#' @export
statgen_write_glm <- function(res, prefix) {
  if (!inherits(res, "statgen_gwas")) Rfmalloc::fm_abort("earg", "res must be a statgen_gwas() result")
  if (!is.character(prefix) || length(prefix) != 1L || is.na(prefix)) {
    Rfmalloc::fm_abort("earg", "prefix must be one path")
  }
  if (!nrow(res)) Rfmalloc::fm_abort("earg", "res has no rows to write")
  w <- .glm_writer(prefix, unique(res$PHENO), attr(res, "family"), attr(res, "firth"))
  on.exit(w$abort())
  w$write(res)
  invisible(w$finish())
}

# plink2's .glm files of the phenotypes, written a chunk of rows at a time
# (w$write(rows)) under temporary names, renamed by w$finish() (which returns
# the paths, named by phenotype); w$abort() removes what finish() did not
# rename.
.glm_writer <- function(prefix, phenos, family, firth) {
  ext <- if (family == "linear") "glm.linear" else switch(firth,
    fallback = "glm.logistic.hybrid", never = "glm.logistic", always = "glm.firth")
  paths <- stats::setNames(sprintf("%s.%s.%s", prefix, phenos, ext), phenos)
  tmps <- stats::setNames(paste0(paths, ".tmp"), phenos)
  started <- stats::setNames(logical(length(phenos)), phenos)
  done <- FALSE
  fail <- function(path) Rfmalloc::fm_abort("eio", sprintf("cannot write '%s'", path))
  list(
    write = function(rows) {
      for (p in phenos) {
        d <- .plain(rows)[rows$PHENO == p, -1L, drop = FALSE]
        for (nm in names(d)) if (is.double(d[[nm]]) && nm != "POS") d[[nm]] <- .g6(d[[nm]])
        d$POS <- format(d$POS, scientific = FALSE, trim = TRUE)
        ok <- tryCatch({
          utils::write.table(d, tmps[[p]], sep = "\t", quote = FALSE, row.names = FALSE,
                             na = "NA", append = started[[p]], col.names = !started[[p]])
          TRUE
        }, error = function(e) FALSE, warning = function(w) FALSE)
        if (!ok) fail(paths[[p]])
        started[[p]] <<- TRUE
      }
    },
    finish = function() {
      for (p in phenos) if (!file.rename(tmps[[p]], paths[[p]])) fail(paths[[p]])
      done <<- TRUE
      paths
    },
    abort = function() if (!done) unlink(tmps))
}

#' @rdname statgen_gwas-methods
#' @export
`[.statgen_gwas` <- function(x, ...) {
  out <- NextMethod()
  keep <- is.data.frame(out) && all(c("PHENO", "P", "ERRCODE") %in% names(out))
  if (!keep) return(if (is.data.frame(out)) .plain(out) else out)
  for (a in c("family", "firth", "coding", "impute", "chrX")) attr(out, a) <- attr(x, a)
  out
}

# The rows as a plain data frame (no statgen_gwas methods).
.plain <- function(x) structure(x, class = "data.frame")

# Six significant digits, as plink2 prints (%g), NA kept.
.g6 <- function(v) ifelse(is.na(v), NA_character_, sprintf("%.6g", v))
