# The design of an association study from user input: phenotypes and
# covariates matched to the genotype matrix's samples, coded, checked, and
# turned into the double matrices the core takes (fm_stats_glm.h).

# Sample IDs of X: data frame with iid and fid (fid may be NA).
.x_samples <- function(X, samples) {
  s <- if (!is.null(samples)) samples else tryCatch(fmalloc_samples(X), error = function(e) NULL)
  n <- nrow(X)
  if (is.null(s)) {
    rn <- rownames(X)
    return(data.frame(iid = if (is.null(rn)) rep(NA_character_, n) else rn,
                      fid = NA_character_, sex = NA_integer_, stringsAsFactors = FALSE))
  }
  if (!is.data.frame(s) || nrow(s) != n || is.null(s$iid)) {
    fm_abort("earg", sprintf("samples must be a data frame of %d rows with an iid column, as ",
                             n), "fmalloc_samples() gives")
  }
  data.frame(iid = as.character(s$iid),
             fid = if (is.null(s$fid)) NA_character_ else as.character(s$fid),
             sex = if (is.null(s$sex)) NA_integer_ else as.integer(s$sex),
             stringsAsFactors = FALSE)
}

# The variant metadata of X in order: src$read(n) gives CHROM POS ID REF
# ALT A1 CM of the next n variants (NA where unknown; A1 = ALT, the counted
# allele; CM the genetic position in centimorgans). From `variants` (a data frame in fmalloc_variants()'s schema, or
# the path of a .bim or .pvar file, read n lines at a time so that millions
# of variants never sit in memory at once), else X's own metadata, else its
# column names. src$close() closes the file.
.variant_source <- function(X, variants) {
  p <- ncol(X)
  if (is.character(variants)) {
    if (length(variants) != 1L || is.na(variants) || !file.exists(variants)) {
      fm_abort("earg", "variants must be a data frame or the path of an existing .bim or .pvar file")
    }
    return(.variant_file(variants, p))
  }
  v <- if (!is.null(variants)) variants else tryCatch(fmalloc_variants(X), error = function(e) NULL)
  if (is.null(v)) {
    cn <- colnames(X)
    v <- data.frame(chr = rep(NA_character_, p), pos = NA_real_,
                    id = if (is.null(cn)) paste0("V", seq_len(p)) else cn,
                    ref = NA_character_, alt = NA_character_, stringsAsFactors = FALSE)
  }
  if (!is.data.frame(v) || nrow(v) != p) {
    fm_abort("earg", sprintf("variants must be a data frame of %s rows (one per column of X)",
                             format(p)))
  }
  names(v) <- tolower(names(v))
  if (is.null(v$alt) && !is.null(v$a1)) v$alt <- v$a1   # a band's $variants: A1 counted, A2 other
  if (is.null(v$ref) && !is.null(v$a2)) v$ref <- v$a2
  if (is.null(v$chr) && !is.null(v$chrom)) v$chr <- v$chrom
  col <- function(name, fill) if (is.null(v[[name]])) rep(fill, p) else v[[name]]
  v <- .variant_frame(col("chr", NA_character_), col("pos", NA), col("id", NA_character_),
                      col("ref", NA), col("alt", NA), col("cm", NA))
  at <- 0
  list(read = function(n) {
    r <- v[at + seq_len(n), , drop = FALSE]
    at <<- at + n
    r
  }, close = function() NULL)
}

.variant_frame <- function(chr, pos, id, ref, alt, cm = NA) {
  data.frame(CHROM = as.character(chr), POS = as.numeric(pos), ID = as.character(id),
             REF = as.character(ref), ALT = as.character(alt), A1 = as.character(alt),
             CM = rep_len(as.numeric(cm), length(id)), check.names = FALSE,
             stringsAsFactors = FALSE)
}

# A .bim (chr id cm pos ALT REF: PLINK 1's A1 is the counted ALT) or .pvar
# (#CHROM POS ID REF ALT ..., CM optional, after its ## lines) read n
# records at a time.
.variant_file <- function(path, p) {
  con <- file(path, "r")
  bim <- grepl("\\.bim$", path)
  if (!bim) {
    repeat {
      l <- readLines(con, n = 1L)
      if (!length(l)) fm_abort("earg", sprintf("'%s' has no #CHROM header line", path))
      if (startsWith(l, "#CHROM")) break
      if (!startsWith(l, "##")) fm_abort("earg", sprintf("'%s' is neither a .bim nor a .pvar with a #CHROM line", path))
    }
    hdr <- strsplit(sub("^#", "", l), "\t")[[1]]
    need <- match(c("CHROM", "POS", "ID", "REF", "ALT", "CM"), hdr)
    if (anyNA(need[1:5])) fm_abort("earg", sprintf("'%s': the #CHROM line lacks POS, ID, REF or ALT", path))
  }
  at <- 0
  list(read = function(n) {
    if (bim) {
      f <- scan(con, what = list("", "", "", "", "", ""), nmax = n, quiet = TRUE)
      r <- .variant_frame(f[[1]], f[[4]], f[[2]], f[[6]], f[[5]], f[[3]])
    } else {
      f <- scan(con, what = rep(list(""), length(hdr)), nmax = n, sep = "\t", quiet = TRUE,
                flush = TRUE)
      r <- .variant_frame(f[[need[1]]], f[[need[2]]], f[[need[3]]], f[[need[4]]], f[[need[5]]],
                          if (is.na(need[6])) NA else f[[need[6]]])
    }
    if (nrow(r) != n) {
      fm_abort("earg", sprintf("'%s' has %s variants but X has %s columns", path,
                               format(at + nrow(r)), format(p)))
    }
    at <<- at + n
    if (at == p && length(extra <- readLines(con, n = 1L)) && nzchar(extra)) {
      fm_abort("earg", sprintf("'%s' has more variants than X's %s columns", path, format(p)))
    }
    r
  }, close = function() close(con))
}

# Rows of `obj` (a vector, matrix or data frame of phenotypes or
# covariates) in the order of X's samples. By ID when obj is a data frame
# with an IID column (and FID, matched too when present) or has row names
# that are not 1..n; else by position (its length must be n). Samples of X
# missing from obj get NA; IDs of obj not in X are dropped.
.align_samples <- function(obj, xs, what) {
  n <- nrow(xs)
  if (is.data.frame(obj)) {
    nm <- sub("^#", "", names(obj))
    iid <- match("IID", toupper(nm))
    fid <- match("FID", toupper(nm))
    if (!is.na(iid)) {
      key_x <- xs$iid
      key_o <- as.character(obj[[iid]])
      if (!is.na(fid) && !all(is.na(xs$fid))) {
        key_x <- paste(xs$fid, xs$iid, sep = "\r")
        key_o <- paste(as.character(obj[[fid]]), key_o, sep = "\r")
      }
      rest <- obj[, -c(iid, if (!is.na(fid)) fid), drop = FALSE]
      return(.by_key(rest, key_o, key_x, what))
    }
  }
  rn <- if (is.data.frame(obj) || is.matrix(obj)) rownames(obj) else names(obj)
  auto <- is.null(rn) || identical(rn, as.character(seq_along(rn)))
  if (!auto && !all(is.na(xs$iid)) && any(rn %in% xs$iid)) {
    return(.by_key(obj, rn, xs$iid, what))
  }
  len <- if (is.data.frame(obj) || is.matrix(obj)) nrow(obj) else length(obj)
  if (len != n) {
    fm_abort("earg", sprintf("%s has %d samples but X has %d rows; give them in X's order, or ",
                             what, len, n),
             "as a data frame with an IID column (and FID) or with row names to match by ID")
  }
  obj
}

.by_key <- function(obj, key_o, key_x, what) {
  dup <- key_o[duplicated(key_o)]
  if (length(dup)) {
    fm_abort("earg", sprintf("%s has sample ID '%s' more than once", what,
                             sub("\r", " ", dup[1], fixed = TRUE)))
  }
  at <- match(key_x, key_o)
  twice <- key_x[!is.na(key_x) & !is.na(at) & duplicated(key_x)]
  if (length(twice)) {
    fm_abort("earg", sprintf("X has sample ID '%s' more than once: %s cannot be matched by ID",
                             sub("\r", " ", twice[1], fixed = TRUE), what))
  }
  if (all(is.na(at))) {
    fm_abort("earg", sprintf("no sample ID of %s matches X's samples (e.g. '%s' vs '%s')", what,
                             sub("\r", " ", key_o[1], fixed = TRUE),
                             sub("\r", " ", key_x[1], fixed = TRUE)))
  }
  if (is.data.frame(obj) || is.matrix(obj)) obj[at, , drop = FALSE] else obj[at]
}

# Phenotypes as an n x k double matrix with column names (NA: left out).
# Logistic phenotypes are coded 0/1 here; attr "coding" says what was read.
.pheno_matrix <- function(y, xs, logistic) {
  if (is.null(y)) fm_abort("earg", "y is required")
  y <- .align_samples(y, xs, "y")
  if (is.data.frame(y)) {
    if (!ncol(y)) fm_abort("earg", "y has no phenotype column")
    nm <- names(y)
    bad <- !vapply(y, function(v) is.numeric(v) || is.logical(v), TRUE)
    if (any(bad)) {
      fm_abort("earg", sprintf("phenotype '%s' is %s, not numeric or logical", nm[bad][1],
                               class(y[[which(bad)[1]]])[1]))
    }
    m <- vapply(y, as.numeric, numeric(nrow(y)))
    dim(m) <- c(nrow(y), ncol(y))
    colnames(m) <- nm
  } else {
    if (!is.numeric(y) && !is.logical(y)) {
      fm_abort("earg", sprintf("y must be numeric or logical (a vector, a matrix or a data frame), not %s",
                               class(y)[1]))
    }
    m <- if (is.matrix(y)) y else matrix(y, ncol = 1L)
    storage.mode(m) <- "double"
    if (is.null(colnames(m))) colnames(m) <- rep("", ncol(m))
  }
  unnamed <- is.na(colnames(m)) | !nzchar(colnames(m))
  colnames(m)[unnamed] <- paste0("PHENO", which(unnamed))
  dup <- colnames(m)[duplicated(colnames(m))]
  if (length(dup)) fm_abort("earg", sprintf("two phenotypes are named '%s'", dup[1]))
  coding <- character(ncol(m))
  for (c in seq_len(ncol(m))) {
    v <- m[, c]
    name <- colnames(m)[c]
    if (any(is.infinite(v))) {
      fm_abort("earg", sprintf("phenotype '%s' is infinite for sample %d", name,
                               which(is.infinite(v))[1]))
    }
    if (all(is.na(v))) fm_abort("earg", sprintf("phenotype '%s' has no non-missing value", name))
    if (logistic) {
      u <- sort(unique(v[!is.na(v)]))
      if (all(u %in% c(0, 1))) {
        coding[c] <- "0 = control, 1 = case"
      } else if (all(u %in% c(1, 2))) {
        coding[c] <- "1 = control, 2 = case (plink)"
        v <- v - 1
      } else {
        fm_abort("earg", sprintf("phenotype '%s' has values %s; a case/control phenotype is ",
                                 name, paste(utils::head(u, 4), collapse = ", ")),
                 "coded 0/1 or plink's 1/2 (control/case), with NA for missing")
      }
      if (length(unique(v[!is.na(v)])) < 2) {
        fm_abort("earg", sprintf("phenotype '%s' has only %s", name,
                                 if (v[!is.na(v)][1] == 1) "cases" else "controls"))
      }
      m[, c] <- v
    } else if (length(unique(v[!is.na(v)])) < 2) {
      fm_abort("earg", sprintf("phenotype '%s' is constant", name))
    }
  }
  attr(m, "coding") <- coding
  m
}

# Covariates as an n x q0 double matrix with names (factors and character
# columns expanded to indicators of every level but the first).
.covar_matrix <- function(covar, xs) {
  n <- nrow(xs)
  if (is.null(covar)) return(matrix(numeric(0), n, 0L))
  covar <- .align_samples(covar, xs, "covar")
  if (is.matrix(covar)) {
    if (!is.numeric(covar) && !is.logical(covar)) fm_abort("earg", "covar must be numeric")
    m <- covar
    storage.mode(m) <- "double"
    if (is.null(colnames(m))) colnames(m) <- paste0("COVAR", seq_len(ncol(m)))
    return(m)
  }
  if (!is.data.frame(covar)) {
    if (!is.numeric(covar)) fm_abort("earg", "covar must be a matrix or a data frame")
    return(matrix(as.numeric(covar), ncol = 1L, dimnames = list(NULL, "COVAR1")))
  }
  cols <- list()
  for (nm in names(covar)) {
    v <- covar[[nm]]
    if (is.character(v) || is.factor(v)) {
      f <- factor(v)
      if (nlevels(f) < 2) {
        fm_abort("earg", sprintf("covariate '%s' is constant (%s)", nm,
                                 if (nlevels(f)) sprintf("one level, '%s'", levels(f)) else "no value"))
      }
      for (l in levels(f)[-1]) cols[[paste0(nm, "=", l)]] <- ifelse(is.na(f), NA, as.numeric(f == l))
    } else if (is.numeric(v) || is.logical(v)) {
      cols[[nm]] <- as.numeric(v)
    } else {
      fm_abort("earg", sprintf("covariate '%s' is %s, not numeric, logical or a factor", nm,
                               class(v)[1]))
    }
  }
  m <- matrix(unlist(cols, use.names = FALSE), n, length(cols))
  colnames(m) <- names(cols)
  m
}

# The core's design for the rows used: intercept + covariates, with every
# phenotype NA where a covariate is NA; stops for a non-finite, constant or
# collinear covariate, naming it.
.design <- function(pheno, cov) {
  n <- nrow(pheno)
  if (any(is.infinite(cov))) {
    bad <- which(apply(is.infinite(cov), 2, any))[1]
    fm_abort("earg", sprintf("covariate '%s' is infinite", colnames(cov)[bad]))
  }
  drop <- rowSums(is.na(cov)) > 0
  pheno[drop, ] <- NA
  used <- rowSums(!is.na(pheno)) > 0
  if (!any(used)) fm_abort("earg", "no sample has both a phenotype and every covariate")
  cmat <- cbind(`(Intercept)` = 1, cov)
  for (c in seq_len(ncol(pheno))) {
    v <- pheno[!is.na(pheno[, c]), c]
    if (!length(v)) {
      fm_abort("earg", sprintf("phenotype '%s' has no sample with every covariate",
                               colnames(pheno)[c]))
    }
    if (all(v == v[1])) {
      fm_abort("earg", sprintf("phenotype '%s' takes one value (%g) over its %d samples with ",
                               colnames(pheno)[c], v[1], length(v)),
               "every covariate")
    }
  }
  for (l in seq_len(ncol(cov))) {
    v <- cov[used, l]
    if (length(unique(v)) < 2) {
      fm_abort("earg", sprintf("covariate '%s' is constant over the samples used", colnames(cov)[l]))
    }
  }
  # Collinearity over every phenotype's own samples (as the core checks).
  for (c in seq_len(ncol(pheno))) {
    rows <- !is.na(pheno[, c])
    cm <- cmat[rows, , drop = FALSE]
    qr_c <- qr(cm, tol = 1e-9)
    if (qr_c$rank < ncol(cm)) {
      bad <- qr_c$pivot[qr_c$rank + 1L]
      fm_abort("earg", sprintf("covariate '%s' is collinear with the other covariates over the ",
                               colnames(cmat)[bad]),
               sprintf("%d samples of phenotype '%s'", sum(rows), colnames(pheno)[c]))
    }
  }
  cmat[drop, ] <- 0 # rows no phenotype uses: finite for the core, never read
  list(covar = unname(cmat), pheno = pheno, names = colnames(cmat))
}
