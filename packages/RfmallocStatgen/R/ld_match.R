# Summary statistics matched to the variants of an LD matrix (statgen_ld),
# for LDpred2 (R/ldpred2.R): one row per variant of the LD, in its order,
# with beta on the LD's A1 allele. See the "Summary statistics" section of
# ?statgen_ldpred2.

# The columns LDpred2 reads, from a statgen_gwas() table (ID, REF, ALT, A1,
# BETA, SE, OBS_CT) or a bigsnpr-style data frame (beta, beta_se, n_eff,
# optionally ID or rsid, a1 (effect allele) and a0 or a2): a data frame
# ID (NA when absent), a1, a2 (NA when absent), beta, beta_se, n_eff.
.sumstats_columns <- function(s, call) {
  if (!is.data.frame(s)) fm_abort("earg", "sumstats must be a data frame", call = call)
  nm <- names(s)
  col <- function(...) {
    hit <- intersect(c(...), nm)
    if (length(hit)) s[[hit[1L]]] else NULL
  }
  if ("PHENO" %in% nm && length(unique(s$PHENO)) > 1L)
    fm_abort("earg", "sumstats holds ", length(unique(s$PHENO)), " phenotypes; give one (",
             "e.g. gwas[gwas$PHENO == \"", unique(s$PHENO)[1L], "\", ])", call = call)
  if (all(c("BETA", "SE", "OBS_CT") %in% nm) || "OR" %in% nm) { # statgen_gwas / plink2
    if ("OR" %in% nm && !("n_eff" %in% nm))
      fm_abort("earg", "a logistic GWAS needs an n_eff column (4 / (1 / n_cases + 1 / ",
               "n_controls) per variant): add it to sumstats", call = call)
    beta <- if ("OR" %in% nm) log(s$OR) else s$BETA
    se <- if ("OR" %in% nm) s[["LOG(OR)_SE"]] else s$SE
    n <- if ("n_eff" %in% nm) s$n_eff else s$OBS_CT
    a1 <- col("A1")
    a2 <- NULL
    if (!is.null(a1) && all(c("REF", "ALT") %in% nm)) { # the allele other than A1
      a2 <- s$ALT
      sw <- which(a1 == s$ALT)
      a2[sw] <- s$REF[sw]
    }
  } else {
    miss <- setdiff(c("beta", "beta_se", "n_eff"), nm)
    if (length(miss))
      fm_abort("earg", "sumstats needs the columns beta, beta_se and n_eff (or a statgen_gwas() ",
               "table); missing: ", paste(miss, collapse = ", "), call = call)
    beta <- s$beta
    se <- s$beta_se
    n <- s$n_eff
    a1 <- col("a1", "A1")
    a2 <- col("a0", "a2", "A2")
  }
  if (is.null(se)) fm_abort("earg", "sumstats has no standard error column", call = call)
  id <- col("ID", "rsid", "id")
  num <- function(x, what) {
    if (!is.numeric(x)) fm_abort("earg", "sumstats' ", what, " must be numeric", call = call)
    as.double(x)
  }
  k <- nrow(s)
  data.frame(ID = if (is.null(id)) rep(NA_character_, k) else as.character(id),
             a1 = if (is.null(a1)) rep(NA_character_, k) else .upper(a1),
             a2 = if (is.null(a2)) rep(NA_character_, k) else .upper(a2),
             beta = num(beta, "beta"), beta_se = num(se, "beta_se"), n_eff = num(n, "n_eff"),
             stringsAsFactors = FALSE)
}

# toupper() of alleles through their few distinct values.
.upper <- function(x) {
  x <- as.character(x)
  u <- unique(x)
  toupper(u)[match(x, u)]
}

# A short list of IDs for messages.
.some_ids <- function(x, n = 5L) {
  paste0(paste(utils::head(x, n), collapse = ", "), if (length(x) > n) ", ..." else "")
}

# Match sumstats to ld's variants (see ?statgen_ldpred2). Returns a data
# frame of nrow = the LD's variants: ID, beta (on the LD's A1), beta_se,
# n_eff, flipped; attribute "report" (counts) and a cli message saying them.
.ld_match <- function(sumstats, ld, call, quiet = FALSE) {
  if (!inherits(ld, "statgen_ld")) fm_abort("earg", "ld must be a statgen_ld object", call = call)
  s <- .sumstats_columns(sumstats, call)
  v <- ld$variants
  m <- length(ld$colptr) - 1L
  ld_id <- if (!is.null(v$ID)) as.character(v$ID) else rep(NA_character_, m)
  by_id <- !all(is.na(s$ID))
  if (by_id) {
    if (anyNA(ld_id) || anyDuplicated(ld_id))
      fm_abort("emismatch", "sumstats are matched by ID, but the LD matrix has ",
               if (anyNA(ld_id)) sprintf("no ID for variant %d", which(is.na(ld_id))[1L]) else
                 sprintf("the ID '%s' twice", ld_id[anyDuplicated(ld_id)]),
               "; give its variants unique IDs (statgen_ld(variants =))", call = call)
    if (anyDuplicated(s$ID[!is.na(s$ID)]))
      fm_abort("emismatch", "sumstats has duplicated IDs: ",
               .some_ids(unique(s$ID[duplicated(s$ID) & !is.na(s$ID)])), call = call)
    idx <- match(ld_id, s$ID)
    if (anyNA(idx))
      fm_abort("emismatch", sum(is.na(idx)), " of the ", m, " variants of the LD matrix have no ",
               "summary statistics (", .some_ids(ld_id[is.na(idx)]), "); build the LD matrix on ",
               "the variants of the summary statistics", call = call)
    n_extra <- nrow(s) - m
  } else {
    if (nrow(s) != m)
      fm_abort("emismatch", "sumstats has no ID column to match; it then needs one row per ",
               "variant of the LD matrix (", m, "), not ", nrow(s), call = call)
    idx <- seq_len(m)
    n_extra <- 0L
  }
  s <- s[idx, , drop = FALSE]
  flip <- rep(FALSE, m)
  ld_a1 <- if (!is.null(v$A1)) .upper(v$A1) else rep(NA_character_, m)
  ld_a2 <- if (!is.null(v$A2)) .upper(v$A2) else rep(NA_character_, m)
  known <- !is.na(s$a1) & !is.na(ld_a1)
  if (any(known)) {
    same <- known & s$a1 == ld_a1 & (is.na(s$a2) | is.na(ld_a2) | s$a2 == ld_a2)
    swap <- known & !same & !is.na(s$a2) & !is.na(ld_a2) & s$a1 == ld_a2 & s$a2 == ld_a1
    bad <- known & !same & !swap
    if (any(bad))
      fm_abort("emismatch", sum(bad), " variants have other alleles in sumstats than in the LD ",
               "matrix (", .some_ids(sprintf("%s %s/%s vs %s/%s", ld_id[bad], s$a1[bad], s$a2[bad],
                                              ld_a1[bad], ld_a2[bad])), ")", call = call)
    flip <- swap
  }
  beta <- s$beta
  beta[flip] <- -beta[flip]
  chk <- function(ok, what) {
    if (!all(ok))
      fm_abort("earg", sum(!ok), " variants have ", what, " (", .some_ids(ld_id[!ok]), "); ",
               "leave them out of the summary statistics and the LD matrix (e.g. the rows of ",
               "statgen_gwas() whose ERRCODE is not \".\")", call = call)
  }
  chk(!is.na(beta) & is.finite(beta), "a missing or infinite beta")
  chk(!is.na(s$beta_se) & is.finite(s$beta_se) & s$beta_se > 0,
      "a missing, infinite or non-positive standard error")
  chk(!is.na(s$n_eff) & is.finite(s$n_eff) & s$n_eff > 0, "a missing or non-positive n_eff")
  report <- c(variants = m, matched_by_id = if (by_id) m else 0L, flipped = sum(flip),
              allele_checked = sum(known), left_out = n_extra)
  if (!quiet) {
    how <- if (by_id) "by ID" else "in row order (no ID column)"
    cli::cli_inform(c(i = paste0("LDpred2: {report[['variants']]} variants matched ", how,
                                 ", {report[['allele_checked']]} with their alleles checked, ",
                                 "{report[['flipped']]} flipped (beta negated); ",
                                 "{report[['left_out']]} rows of sumstats are not in the LD ",
                                 "matrix and are left out")))
  }
  structure(data.frame(ID = ld_id, beta = beta, beta_se = s$beta_se, n_eff = s$n_eff,
                       flipped = flip, stringsAsFactors = FALSE), report = report)
}
