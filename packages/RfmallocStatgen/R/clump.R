# Clumping of association results (plink 1.9 --clump) and LD pruning
# (plink2 --indep-pairwise) on an LD band: the greedy passes are the core's
# fm_stats_clump.h (through src/r_clump.c); this file matches the summary
# statistics to the band's variants and shapes plink's tables.

#' Clumping of association results, as plink 1.9 `--clump`
#'
#' Groups the variants of a GWAS around its strongest signals. The variants
#' with \eqn{p \le} `p1` are taken in ascending \eqn{p}; each one not yet
#' claimed becomes an *index variant* and claims every unclaimed variant of
#' its chromosome within `window_kb` kilobases with \eqn{p \le} `p2` and
#' \eqn{r^2 \ge} `r2` with it. A claimed variant never becomes an index
#' variant and belongs to one clump only. Ties in \eqn{p} are taken in the
#' order of the variants in `X` or `ld` (plink's order on the fixture, where
#' that is also the order of the GWAS file).
#'
#' @section r^2: With genotypes `X` (and `r2_from = "haplotypes"`, the
#'   default), \eqn{r^2} is what plink 1.9's
#'   `--clump` uses: the haplotype-frequency estimate (the maximum
#'   likelihood frequency of the haplotype carrying both A1 alleles, from
#'   the unphased genotype counts; plink's `--r2 dprime` R2), over the
#'   samples observed at both variants. It is not the squared correlation
#'   of allele counts (`--r2`, [statgen_ld()]); the two differ by up to 0.1
#'   on the 1kg fixture, enough to change clumps at low `r2`. With a
#'   precomputed band `ld` (a [statgen_ld()] object) or with
#'   `r2_from = "correlation"`, \eqn{r^2} is the
#'   square of its stored correlations (pairs not stored count 0): give it
#'   a window of at least `window_kb` and `r2_min <= r2` (a warning of
#'   class `statgen_warning_band` says when it does not). Against plink 1.9 on the 1kg fixture's GWAS of QT
#'   (`tests/testthat/test-clump.R` in the source repository), `X` gives
#'   the same clumps (index variants, members and counts) for all five
#'   settings tested (77 to 2,221 clumps); a band of allele-count
#'   correlations gives the same clumps at `r2 = 0.5` and differs at low
#'   `r2` (180 against 182 clumps at `r2 = 0.1`, `p1 = 1e-3`). chrX is
#'   taken as diploid (plink treats male X calls as haploid, so its
#'   \eqn{r^2} on chrX can differ; it changed no clump on the fixture).
#'
#' @section Summary statistics: `gwas` is matched to the variants of `X`
#'   or `ld` by ID (its `ID` column, or `SNP`); their chromosome and
#'   position come from `X` or `ld`. Rows whose ID is not among those
#'   variants are left out and reported by a warning of class
#'   `statgen_warning_unmatched` that gives their count (they are also in
#'   the result's attribute `unmatched`); rows with a missing P take part
#'   in no clump. A P outside \eqn{[0, 1]}, a duplicated ID, or several
#'   phenotypes in one table are errors.
#'
#' @param gwas a data frame with columns `ID` (or `SNP`) and `P`, e.g. a
#'   [statgen_gwas()] result for one phenotype or plink2's `.glm` file
#'   read with `read.delim()`.
#' @param X genotypes (samples x variants, as for [statgen_ld()]), or
#' @param ld a [statgen_ld()] band of the same variants as `X` would have;
#'   give exactly one of `X` and `ld`.
#' @param r2 \eqn{r^2} threshold in \[0, 1\] (`--clump-r2`, default 0.5).
#' @param window_kb window in kilobases (`--clump-kb`, default 250):
#'   variants at most `1000 * window_kb` base pairs from the index variant.
#' @param p1 index variants have \eqn{p \le} `p1` (`--clump-p1`, default
#'   1e-4), in (0, 1].
#' @param p2 clumped variants have \eqn{p \le} `p2` (`--clump-p2`, default
#'   0.01), in \[`p1`, 1\].
#' @param r2_from for `X` only: `"haplotypes"` (default, plink 1.9's
#'   \eqn{r^2}, see r^2) or `"correlation"` (the squared allele-count
#'   correlation: a band from [statgen_ld()] over `window_kb` with
#'   `r2_min = r2` and `missing = "pairwise"`, in `runtime`).
#' @param variants for `X` only: `NULL` or a variant table as in
#'   [statgen_ld()].
#' @param runtime for `r2_from = "correlation"`: the Rfmalloc runtime of the
#'   temporary band.
#' @return A data frame of class `statgen_clump`, one row per clump in
#'   ascending P of its index variant (plink's `.clumped` without its `F`
#'   column): `CHR`, `ID` (index variant), `POS` (base pairs), `P`,
#'   `TOTAL` (the variants claimed, plus, as plink counts them, those with
#'   \eqn{p >} `p2` that pass the window and `r2`), `NSIG` (of those,
#'   \eqn{p > 0.05}), `S05`
#'   (\eqn{0.01 < p \le 0.05}), `S01` (\eqn{0.001 < p \le 0.01}), `S001`
#'   (\eqn{10^{-4} < p \le 0.001}), `S0001` (\eqn{p \le 10^{-4}}) and `SP2`
#'   (a list: the IDs of the variants claimed, in variant order; plink
#'   writes them comma-separated with a `(1)` suffix, `NONE` when empty).
#'   Attributes: `unmatched` (the IDs of `gwas` not found), `clump` (see
#'   Details) and `params` (the thresholds used).
#' @details Attribute `clump` is a data frame of the matched variants
#'   (`ID`, `P`, `INDEX`: the ID of the index variant of its clump, `NA`
#'   for none), in the order of the variants of `X` or `ld`.
#' @section Errors: `fm_error_earg` for a bad argument (thresholds out of
#'   range, `p2 < p1`, neither or both of `X` and `ld`, `gwas` without ID
#'   or P columns, P outside \[0, 1\], duplicated IDs, no ID in common).
#' @references Purcell S et al. (2007) PLINK: a tool set for whole-genome
#'   association and population-based linkage analyses. Am J Hum Genet
#'   81:559-575; Chang CC et al. (2015) Second-generation PLINK: rising to
#'   the challenge of larger and richer datasets. GigaScience 4:7;
#'   <https://www.cog-genomics.org/plink/1.9/postproc#clump>. The r^2:
#'   Hill WG (1974) Estimation of linkage disequilibrium in randomly mating
#'   populations. Heredity 33:229-239.
#' @seealso [statgen_prune()], [statgen_ld()]
#' @examples
#' set.seed(3)
#' g <- matrix(rbinom(300 * 20, 2, 0.3), 300, 20)
#' g[, 2] <- g[, 1]; g[1:30, 2] <- 0          # 2 in strong LD with 1
#' X <- Rfmalloc::fmalloc_bed(g)
#' v <- data.frame(chr = "1", pos = seq(1e5, by = 1e4, length.out = 20),
#'                 id = paste0("rs", 1:20), ref = "A", alt = "G")
#' gw <- data.frame(ID = v$id, P = c(1e-8, 1e-6, runif(18)))
#' statgen_clump(gw, X, variants = v, p1 = 1e-4, p2 = 0.5)
#' @export
statgen_clump <- function(gwas, X = NULL, ld = NULL, r2 = 0.5, window_kb = 250, p1 = 1e-4,
                          p2 = 0.01, r2_from = c("haplotypes", "correlation"), variants = NULL,
                          runtime = Rfmalloc::fmalloc_default_runtime()) {
  r2_from <- fm_arg_choice(r2_from, c("haplotypes", "correlation"))
  .clump_check_num(r2, "r2", 0, 1)
  .clump_check_num(window_kb, "window_kb", 0, Inf)
  .clump_check_num(p1, "p1", 0, 1)
  .clump_check_num(p2, "p2", 0, 1)
  if (p1 <= 0) fm_abort("earg", "p1 must be above 0")
  if (p2 < p1) fm_abort("earg", sprintf("p2 (%g) must be at least p1 (%g)", p2, p1))
  if (is.null(X) == is.null(ld))
    fm_abort("earg", "give exactly one of X (genotypes) and ld (a statgen_ld band)")
  if (!is.null(ld) && !inherits(ld, "statgen_ld"))
    fm_abort("earg", "ld must be an LD matrix of class 'statgen_ld'")
  vs <- if (!is.null(ld)) ld$variants else .ld_variants(X, variants, ncol(X))
  st <- .clump_sumstats(gwas, vs$ID)
  n <- nrow(vs)
  p <- rep(NA_real_, n)
  p[st$at] <- st$P
  chr <- .chr_codes(vs$CHR)
  pos <- as.double(vs$POS)
  if (anyNA(pos[!is.na(p)]))
    fm_abort("earg", "the variants have no base-pair positions: give variants = with them")
  if (is.null(ld) && r2_from == "correlation")
    ld <- statgen_ld(X, window = window_kb, unit = "kb", r2_min = r2, missing = "pairwise",
                     variants = variants, runtime = runtime)
  if (!is.null(ld)) {
    .clump_check_band(ld, r2, window_kb)
    parts <- .ld_parts(ld)
    is_r2 <- FALSE
  } else {
    parts <- .clump_hap_band(X, vs, p, window_kb, p1)
    is_r2 <- TRUE
  }
  cl <- .Call(C_stg_clump, parts, is_r2, p, chr, pos, c(p1, p2, r2, window_kb * 1000), NULL)
  .clump_table(vs, p, cl, st$unmatched, list(r2 = r2, window_kb = window_kb, p1 = p1, p2 = p2,
                                              source = if (is_r2) "haplotypes" else "correlation"))
}

.clump_check_num <- function(x, what, lo, hi) {
  if (!is.numeric(x) || length(x) != 1L || is.na(x) || x < lo || x > hi)
    fm_abort("earg", sprintf("%s must be a single number in [%s, %s]", what, format(lo), format(hi)))
}

# Chromosome names as integer codes (equal names, equal codes).
.chr_codes <- function(chr) {
  chr <- as.character(chr)
  chr[is.na(chr)] <- ""
  match(chr, unique(chr))
}

# gwas matched to the variant IDs ids: at (positions in ids), P, and the
# IDs that are not there.
.clump_sumstats <- function(gwas, ids) {
  if (!is.data.frame(gwas)) fm_abort("earg", "gwas must be a data frame")
  nm <- names(gwas)
  idc <- intersect(c("ID", "SNP"), nm)
  if (!length(idc) || !("P" %in% nm)) fm_abort("earg", "gwas needs the columns ID (or SNP) and P")
  if ("PHENO" %in% nm && length(unique(gwas$PHENO)) > 1L)
    fm_abort("earg", sprintf("gwas holds %d phenotypes; give one (e.g. gwas[gwas$PHENO == \"%s\", ])",
                             length(unique(gwas$PHENO)), unique(gwas$PHENO)[1L]))
  id <- as.character(gwas[[idc[1L]]])
  P <- gwas$P
  if (!is.numeric(P)) fm_abort("earg", "gwas$P must be numeric")
  bad <- which(!is.na(P) & (P < 0 | P > 1))
  if (length(bad))
    fm_abort("earg", sprintf("gwas$P of row %d (%s) is %g, outside [0, 1]", bad[1], id[bad[1]],
                             P[bad[1]]))
  if (anyDuplicated(id)) {
    d <- id[anyDuplicated(id)]
    fm_abort("earg", sprintf("gwas has the ID '%s' more than once (%d duplicated rows)", d,
                             sum(duplicated(id))))
  }
  at <- match(id, ids)
  miss <- is.na(at)
  if (all(miss)) fm_abort("earg", "no ID of gwas is among the variants of X or ld")
  unmatched <- id[miss]
  if (length(unmatched))
    .stg_warn("statgen_warning_unmatched", "earg", length(unmatched), " of ", length(id),
              " gwas rows have an ID not among the variants of X or ld (first: ", unmatched[1],
              "); they take part in no clump (attribute 'unmatched')")
  list(at = at[!miss], P = as.double(P[!miss]), unmatched = unmatched)
}

# A band whose window or threshold is narrower than the clumping's misses
# pairs: say so.
.clump_check_band <- function(ld, r2, window_kb) {
  info <- ld$info
  narrow <- !is.null(info$unit) && info$unit == "kb" && info$window < window_kb
  if (narrow || (!is.null(info$r2_min) && info$r2_min > r2))
    .stg_warn("statgen_warning_band", "earg", "the band (window ", info$window, " ", info$unit,
              ", r2_min ", info$r2_min, ") lacks pairs that window_kb = ", window_kb, " and r2 = ",
              r2, " ask for: they count as r^2 = 0")
}

# The haplotype-frequency r^2 of every index candidate (p <= p1) with the
# variants within window_kb of it that have a p (those above p2 are
# counted in TOTAL and the bins, as plink does), as the columns of a band
# (other columns empty; r^2 values), each computed by the core from the
# genotype columns of its window. Window i is lo[i]..hi[i] (1-based): hi
# from .ld_windows (which also checks the order), lo the first variant
# whose window reaches i (the ends never decrease).
.clump_hap_band <- function(X, vs, p, window_kb, p1) {
  n <- length(p)
  hi <- .ld_windows(vs, window_kb, "kb")
  lo <- findInterval(seq_len(n) - 1, hi) + 1
  rows <- vector("list", n)
  vals <- vector("list", n)
  for (i in which(!is.na(p) & p <= p1)) {
    js <- seq.int(lo[i], hi[i])
    js <- js[js != i & !is.na(p[js])]
    r <- if (length(js)) {
      G <- X[, c(i, js), drop = FALSE]
      storage.mode(G) <- "double"
      .Call(C_stg_hap_r2, G[, 1L], G[, -1L, drop = FALSE])
    } else numeric(0)
    o <- order(c(i, js))
    rows[[i]] <- as.integer(c(i, js)[o] - 1L)
    vals[[i]] <- c(1, r)[o]
  }
  list(colptr = c(0, cumsum(as.double(lengths(rows)))),
       rowidx = as.integer(unlist(rows, use.names = FALSE)),
       values = as.double(unlist(vals, use.names = FALSE)))
}

.clump_table <- function(vs, p, cl, unmatched, params) {
  clump <- cl[[1]]
  idx <- as.integer(cl[[2]]) + 1L
  cnt <- cl[[3]]
  member <- which(clump >= 0 & clump != seq_along(clump) - 1L)
  # grouped by position in idx (not by factor levels, which compare as text)
  by_index <- split(member, factor(match(clump[member] + 1L, idx), levels = seq_along(idx)))
  res <- data.frame(CHR = as.character(vs$CHR[idx]), ID = as.character(vs$ID[idx]),
                    POS = as.double(vs$POS[idx]), P = p[idx], stringsAsFactors = FALSE)
  res[c("TOTAL", "NSIG", "S05", "S01", "S001", "S0001")] <- as.data.frame(cnt)
  res$SP2 <- unname(lapply(by_index, function(m) as.character(vs$ID[m])))
  has <- !is.na(p)
  ch <- clump[has]
  index <- rep(NA_character_, length(ch))
  index[ch >= 0] <- as.character(vs$ID[ch[ch >= 0] + 1L])
  attr(res, "clump") <- data.frame(ID = vs$ID[has], P = p[has], INDEX = index,
                                   stringsAsFactors = FALSE)
  attr(res, "unmatched") <- unmatched
  attr(res, "params") <- params
  class(res) <- c("statgen_clump", "data.frame")
  res
}

#' @rdname statgen_clump
#' @param x a `statgen_clump` result.
#' @param n rows to print.
#' @param ... unused.
#' @export
print.statgen_clump <- function(x, n = 10L, ...) {
  pr <- attr(x, "params")
  cat(sprintf("statgen_clump: %d clumps (p1 = %g, p2 = %g, r2 = %g, window %g kb, r^2 from %s)\n",
              nrow(x), pr$p1, pr$p2, pr$r2, pr$window_kb,
              if (identical(pr$source, "haplotypes")) "haplotype frequencies" else "correlations"))
  un <- attr(x, "unmatched")
  if (length(un)) cat(sprintf("%d gwas rows not among the variants (attribute 'unmatched')\n", length(un)))
  d <- as.data.frame(unclass(x)[setdiff(names(x), "SP2")], stringsAsFactors = FALSE)
  d$POS <- format(d$POS, scientific = FALSE, trim = TRUE)
  d$SP2 <- vapply(x$SP2, function(s) if (length(s)) paste(s, collapse = ",") else "NONE", "")
  print(utils::head(d, n), row.names = FALSE)
  if (nrow(x) > n) cat(sprintf("... %d more\n", nrow(x) - n))
  invisible(x)
}

#' LD pruning, as plink2 `--indep-pairwise`
#'
#' Selects a subset of variants in approximate linkage equilibrium. On each
#' chromosome a window of `window` variants (or kilobases) starts at its
#' first variant and moves by `step` variants; within each window, in
#' variant order, each kept variant is compared with each later kept one,
#' and of a pair with \eqn{r^2 >} `r2` the variant of smaller minor allele
#' frequency is removed (the later one on a tie). A variant of zero
#' variance is removed by any window of two or more variants that holds it
#' (plink2 lists it in `.prune.out`); one alone in each of its windows
#' (no other variant within a kb window) is kept, as plink2 keeps it.
#'
#' @section r^2 and missing calls: the squared Pearson correlation of allele
#'   counts (A1 = ALT), from [statgen_ld()] with `missing = "pairwise"`
#'   (the samples observed at both variants), stored only where
#'   \eqn{r^2 \ge} `r2`; the minor allele frequency over the observed calls,
#'   as a ratio of allele counts, so that equal counts tie exactly as in
#'   plink2 (chrX taken as diploid). This reproduces plink2's `.prune.in` exactly on
#'   the autosomes of the 1kg fixture for windows of 20 and 50 variants and
#'   of 200 kb, `r2` 0.1 to 0.5 (`tests/testthat/test-clump.R` in the
#'   source repository); on chrX, where plink2 counts male calls as
#'   haploid, a few variants differ (0 to 26 of its 1,017). With missing
#'   calls plink2's \eqn{r^2} is not plink 1.9's pairwise one: on the
#'   `ceu_exon` fixture (7\% of calls missing) 1 to 9 of 1,346 variants
#'   differ (pairs near the threshold decided the other way).
#' @param X genotypes (samples x variants, as for [statgen_ld()]).
#' @param window window size: a whole number of variants (at least 2) for
#'   `unit = "variants"`, or kilobases for `unit = "kb"` (the window
#'   starting at variant \eqn{i} holds the variants at most
#'   `1000 * window` bp after it).
#' @param step variants the window moves by (a whole number, at least 1).
#' @param r2 prune pairs with \eqn{r^2 >} `r2`, in \[0, 1\].
#' @param unit `"variants"` or `"kb"`.
#' @param variants `NULL` or a variant table as in [statgen_ld()].
#' @param runtime the Rfmalloc runtime for the temporary LD band.
#' @return The IDs of the variants kept (plink's `.prune.in`, in variant
#'   order), with attribute `keep`: a logical vector, one per column of `X`.
#' @section Errors: `fm_error_earg` for a bad `window`, `step` or `r2`, and
#'   for variants not grouped by chromosome or not sorted by position.
#' @references Chang CC et al. (2015) Second-generation PLINK. GigaScience
#'   4:7; <https://www.cog-genomics.org/plink/2.0/ld#indep>; Purcell S et
#'   al. (2007) Am J Hum Genet 81:559-575.
#' @seealso [statgen_clump()], [statgen_ld()]
#' @examples
#' set.seed(4)
#' g <- matrix(rbinom(200 * 12, 2, 0.3), 200, 12)
#' g[, 5] <- g[, 4]
#' X <- Rfmalloc::fmalloc_bed(g)
#' v <- data.frame(chr = "1", pos = 1:12 * 1000, id = paste0("rs", 1:12),
#'                 ref = "A", alt = "G")
#' statgen_prune(X, window = 5, step = 1, r2 = 0.5, variants = v)
#' @export
statgen_prune <- function(X, window, step = 1, r2 = 0.5, unit = c("variants", "kb"),
                          variants = NULL, runtime = Rfmalloc::fmalloc_default_runtime()) {
  unit <- fm_arg_choice(unit, c("variants", "kb"))
  if (unit == "variants") {
    if (!is.numeric(window) || length(window) != 1L || is.na(window) || window < 2 ||
        window != round(window) || !is.finite(window))
      fm_abort("earg", "window must be a whole number of variants, at least 2")
  } else .clump_check_num(window, "window", 0, Inf)
  if (!is.numeric(step) || length(step) != 1L || is.na(step) || step < 1 || step != round(step) ||
      !is.finite(step))
    fm_abort("earg", "step must be a whole number of variants, at least 1")
  .clump_check_num(r2, "r2", 0, 1)
  vs <- .ld_variants(X, variants, ncol(X))
  w <- if (unit == "variants") window - 1 else window
  win_end <- .ld_windows(vs, w, unit)
  keep <- logical(0)
  if (nrow(vs)) {
    ld <- statgen_ld(X, window = w, unit = unit, r2_min = r2, missing = "pairwise", variants = variants,
                     runtime = runtime)
    maf <- .minor_freq(X)
    v <- Rfmalloc::fmalloc_colVars(X, na.rm = TRUE)
    const <- is.na(v) | v == 0
    keep <- .Call(C_stg_prune, .ld_parts(ld), FALSE, as.double(maf), .chr_codes(vs$CHR),
                  as.double(win_end), as.double(step), as.double(r2), const, NULL)
  }
  structure(as.character(vs$ID[keep]), keep = keep)
}

# Minor allele frequencies as a ratio of counts, min(c, 2 n - c) / (2 n)
# (c the A1 count, n the observed calls): two variants with the same counts
# get the same double, so plink's MAF ties are ties here too (1 - af would
# round them apart).
.minor_freq <- function(X) {
  s <- Rfmalloc::colSums(X, na.rm = TRUE)
  m <- Rfmalloc::fmalloc_colMeans(X, na.rm = TRUE)
  n2 <- 2 * round(s / m)
  maf <- pmin(s, n2 - s) / n2
  maf[is.na(maf) | s == 0] <- 0
  as.double(maf)
}
