#' Linkage disequilibrium: a banded correlation matrix out of core
#'
#' Computes the Pearson correlation \eqn{r} between every pair of genotype
#' columns of `X` that lie within `window` of each other on one chromosome,
#' and stores it as a sparse banded symmetric matrix in an Rfmalloc runtime:
#' on disk, mapped, and reopened by name in a new process when the runtime
#' is persistent ([statgen_ld_open()]). The band is computed and written in
#' bounded panels, so neither `X` nor the band needs to fit in memory.
#'
#' @section Windows: `unit = "kb"` pairs variants at most `window` kilobases
#'   apart (\eqn{|pos_j - pos_k| \le 1000 \cdot window}, plink's
#'   `--ld-window-kb`, bigsnpr's `size` with `infos.pos`); `"variants"` at
#'   most `window` variants apart (\eqn{|j - k| \le window}); `"cM"` at most
#'   `window` centimorgans apart (the map's genetic positions; an error when
#'   it has none). Pairs never span two chromosomes. A window wider than
#'   every chromosome stores all pairs within each (a message of class
#'   `statgen_message_whole_window` says so). Variants must be
#'   grouped by chromosome and sorted by position within each.
#'
#' @section Missing calls: `missing = "mean"` (the default) replaces each
#'   missing call by its variant's mean over observed calls and then takes
#'   Pearson's \eqn{r} over all samples: the correlation matrix of the
#'   mean-imputed genotypes, positive semi-definite, what
#'   `bigsnpr::snp_cor()` gives after `snp_fastImputeSimple(method =
#'   "mean2")` (but with the exact mean) and what LDpred2 needs.
#'   `missing = "pairwise"` uses, for each pair, the samples observed in
#'   both (plink 1.9's `--r`/`--r2`); its matrix need not be positive
#'   semi-definite. Without missing calls the two agree.
#'
#' @section Values: \eqn{r} of the counts of the `A1` allele (the `ALT`
#'   allele of [Rfmalloc::fmalloc_variants()]; a dosage where `X` holds
#'   dosages). A pair whose correlation is undefined (a variant with zero
#'   variance over the samples used, e.g. a monomorphic variant) gets
#'   \eqn{r = 0}, and every diagonal entry is 1: the band never holds `NaN`
#'   (bigsnpr's `snp_cor` gives `NaN` there). 2-bit hardcalls are counted
#'   exactly (bit planes), so \eqn{r} is correctly rounded; other codecs are
#'   summed in double. `dtype = "f32"` stores floats (half the bytes, about
#'   6e-8 relative).
#'
#' @section Storage: compressed sparse columns of both triangles and the
#'   diagonal (`colptr`, `rowidx`, `values`; see `core/include/fm/fm_band.h` in the source repository):
#'   about \eqn{12} bytes (`"f64"`) or 8 bytes (`"f32"`) per stored entry,
#'   each pair stored twice. With `r2_min > 0` only pairs with
#'   \eqn{r^2 \ge} `r2_min` are stored (and the correlations are computed
#'   twice: once to count, once to write). `name` saves the band under that
#'   name in `runtime`; otherwise it is a temporary freed with the object.
#' @section Daemons: with option `fmalloc.parallel = "mirai"` and a mapped
#'   `.bed` ([Rfmalloc::fmalloc_bed_open()]), blocks of variants are
#'   computed on mirai daemons (see [Rfmalloc::fmalloc_parallel_info()]),
#'   each with the columns its windows reach, and written into the band in
#'   order: each pair's sums have a fixed order, so the band is the one of
#'   a run without daemons, bit for bit. The variants just outside a block
#'   (its windows' reach) are read by that block too.
#'
#' @param X A samples x variants genotype matrix of the Rfmalloc stack
#'   ([Rfmalloc::fmalloc_bed_open()], a codec matrix, a numeric matrix).
#' @param window Window size in `unit`s, a single non-negative number.
#' @param unit `"kb"`, `"variants"` or `"cM"`.
#' @param r2_min Store only pairs with \eqn{r^2 \ge} `r2_min` (in
#'   \[0, 1\]); 0 stores every pair of the window.
#' @param missing `"mean"` or `"pairwise"` (see Missing calls).
#' @param dtype `"f64"` or `"f32"`: the stored values.
#' @param samples `NULL` (every sample) or the samples (rows of `X`) to
#'   compute the band over: row numbers (1-based) or a logical vector with
#'   one entry per row. The others are left out of every sum, count and
#'   mean, as plink 1.9's `--keep` or bigsnpr's `ind.row`: the band is that
#'   of `X[samples, ]`, computed without copying `X`.
#' @param variants `NULL` (the variants of `X`), a data frame with one row
#'   per column of `X` and columns `chr`, `pos`, `id`, `ref`, `alt` and, for
#'   `unit = "cM"`, `cm`, or the path of a `.bim` or `.pvar` file (one line
#'   per column of `X`; its `CM` column, when it has one, gives `cm`).
#' @param runtime The Rfmalloc runtime that holds the band
#'   ([Rfmalloc::fmalloc_default_runtime()] unless given).
#' @param name `NULL`, or a name to save the band under in `runtime`.
#' @return A `statgen_ld` object: the band (a symmetric `p x p` matrix for
#'   the `p` columns of `X`) with `dim()`, `dimnames()` (variant IDs), `[`
#'   (dense blocks), `%*%` (streamed products with a vector or matrix of `p`
#'   rows), `print()`, [statgen_ld_sparse()] and `$variants` (a data frame:
#'   `CHR`, `POS`, `ID`, `CM`, `A1`, `A2`).
#' @section Errors: `fm_error_earg` for a bad argument, variants not grouped
#'   by chromosome or not sorted, missing positions for the unit asked for,
#'   or a map without centimorgans; `fm_error_enospc` when the runtime is
#'   full; `fm_error_ecancelled` on interrupt (the temporary band is freed).
#' @references Chang et al. (2015) Second-generation PLINK, GigaScience 4:7
#'   (`--r2`, <https://www.cog-genomics.org/plink/1.9/ld>); Privé et al.
#'   (2018) Efficient analysis of large-scale genome-wide data with two R
#'   packages: bigstatsr and bigsnpr, Bioinformatics 34:2781-2787.
#' @seealso [statgen_ld_open()], [statgen_ld_sparse()]
#' @examples
#' G <- matrix(rbinom(200 * 30, 2, 0.3), 200, 30)
#' X <- Rfmalloc::fmalloc_bed(G)
#' v <- data.frame(chr = "1", pos = seq(1000, by = 20000, length.out = 30),
#'                 id = paste0("rs", 1:30), ref = "A", alt = "G")
#' ld <- statgen_ld(X, window = 100, variants = v)
#' ld
#' ld[1:3, 1:3]
#' all.equal(ld[1:3, 1:3], cor(G[, 1:3]), check.attributes = FALSE)
#' @export
statgen_ld <- function(X, window = 1000, unit = c("kb", "variants", "cM"), r2_min = 0,
                       missing = c("mean", "pairwise"), dtype = c("f64", "f32"),
                       variants = NULL, runtime = Rfmalloc::fmalloc_default_runtime(),
                       name = NULL, samples = NULL) {
  unit <- fm_arg_choice(unit, c("kb", "variants", "cM"))
  missing <- fm_arg_choice(missing, c("mean", "pairwise"))
  dtype <- fm_arg_choice(dtype, c("f64", "f32"))
  if (!is.numeric(window) || length(window) != 1L || is.na(window) || window < 0 || !is.finite(window))
    fm_abort("earg", "window must be a single non-negative finite number")
  if (!is.numeric(r2_min) || length(r2_min) != 1L || is.na(r2_min) || r2_min < 0 || r2_min > 1)
    fm_abort("earg", "r2_min must be a single number in [0, 1]")
  if (!is.null(name)) {
    .ld_check_name(name)
    taken <- intersect(c(name, paste0(name, c("/colptr", "/rowidx", "/values"))), Rfmalloc::fmalloc_list(runtime)$name)
    if (length(taken))
      fm_abort("earg", sprintf("'%s' is already saved in this runtime: give another name, or delete it first (Rfmalloc::fmalloc_delete())",
                               taken[1]))
  }
  if (length(dim(X)) != 2L) fm_abort("earg", "X must be a samples x variants matrix")
  if (nrow(X) < 2L) fm_abort("earg", sprintf("X has %d sample(s): a correlation needs at least 2", nrow(X)))
  p <- ncol(X)
  keep <- .ld_samples(samples, nrow(X))
  vs <- .ld_variants(X, variants, p)
  win_end <- .ld_windows(vs, window, unit)
  # a window wider than every chromosome is allowed: say that each is whole
  if (p > 1L && all(win_end[!duplicated(vs$CHR)] == win_end[!duplicated(vs$CHR, fromLast = TRUE)]))
    cli::cli_inform(c(i = sprintf("statgen_ld: a window of %s %s spans every chromosome: all pairs within each are stored",
                                  format(window), unit)), class = "statgen_message_whole_window")
  opts <- c(match(missing, c("pairwise", "mean")), r2_min, match(dtype, c("f64", "f32")))
  view <- fmalloc_view(X)
  if (fm_parallel_on(X)) return(.ld_parallel(X, view, win_end, opts, keep, dtype, vs, runtime, name, window, unit,
                                             missing, r2_min))
  counts <- if (r2_min == 0) {
    .Call(C_stg_ld_count, view, win_end, opts, keep, NULL)
  } else {
    .ld_with_bar(p, "statgen_ld: counting pairs",
                 function(prog) .Call(C_stg_ld_count, view, win_end, opts, keep, prog))
  }
  band <- .ld_alloc(counts, dtype, runtime)
  colptr <- band$colptr
  rowidx <- band$rowidx
  values <- band$values
  .ld_with_bar(p, "statgen_ld: correlations", function(prog)
    .Call(C_stg_ld_fill, view, win_end, opts, keep, colptr, rowidx, values, prog))
  .ld_finish(colptr, rowidx, values, dtype, vs, X, keep, window, unit, missing, r2_min, runtime, name)
}

# The band's vectors in runtime for columns of counts stored entries.
.ld_alloc <- function(counts, dtype, runtime) {
  p <- length(counts)
  colptr <- Rfmalloc::create_fmalloc_vector("double", p + 1, runtime)
  colptr[] <- c(0, cumsum(counts))
  nnz <- colptr[p + 1]
  list(colptr = colptr, rowidx = Rfmalloc::create_fmalloc_vector("integer", nnz, runtime),
       values = if (dtype == "f64") Rfmalloc::create_fmalloc_vector("double", nnz, runtime) else
         Rfmalloc::create_fmalloc_vector("raw", 4 * nnz, runtime))
}

.ld_finish <- function(colptr, rowidx, values, dtype, vs, X, keep, window, unit, missing, r2_min, runtime, name) {
  info <- list(n_samples = if (is.null(keep)) nrow(X) else length(keep), window = window,
               unit = unit, missing = missing, r2_min = r2_min, runtime = runtime, name = name,
               samples = keep)
  ld <- new_statgen_ld(colptr, rowidx, values, dtype, vs, info)
  if (!is.null(name)) ld <- .ld_save(ld, name, runtime)
  ld
}

# The band on mirai daemons (option fmalloc.parallel = "mirai", a mapped
# .bed): each block of variants is computed with the columns its pairs
# reach (from the first variant whose window reaches the block to the end
# of the block's last window, every window cut there), and its columns'
# entries are written where the serial band has them. Each pair's sums
# have a fixed order (fm_stats_ld.h), so the band is the serial one, bit
# for bit. With r2_min > 0 the blocks count their entries first (a pass
# on the daemons); with 0 the counts need no computation.
.ld_parallel <- function(X, view, win_end, opts, keep, dtype, vs, runtime, name, window, unit, missing, r2_min) {
  p <- ncol(X)
  span <- function(cols) c(which(win_end >= cols[1L])[1L], win_end[cols[length(cols)]])
  counts <- if (r2_min == 0) .Call(C_stg_ld_count, view, win_end, opts, keep, NULL) else {
    cnt <- numeric(p)
    fm_parallel_apply(X, .ld_block, opts = opts, keep = keep, what = "count", .slice = list(win_end = win_end),
                      .span = span, .label = "statgen_ld: counting pairs",
                      .consume = function(j, cols, r) cnt[cols] <<- r)
    cnt
  }
  band <- .ld_alloc(counts, dtype, runtime)
  colptr <- band$colptr
  rowidx <- band$rowidx
  values <- band$values
  rm(band) # one reference each: the writes below stay in place
  width <- if (dtype == "f64") 1 else 4
  fm_parallel_apply(X, .ld_block, opts = opts, keep = keep, what = "fill", .slice = list(win_end = win_end),
                    .span = span, .label = "statgen_ld: correlations",
                    .consume = function(j, cols, r) {
                      # in place: the runtime's vectors, not copies
                      rowidx[colptr[cols[1L]] + seq_along(r$rowidx)] <<- r$rowidx
                      values[colptr[cols[1L]] * width + seq_along(r$values)] <<- r$values
                    })
  .ld_finish(colptr, rowidx, values, dtype, vs, X, keep, window, unit, missing, r2_min, runtime, name)
}

# A block of the band where it runs: x the columns span[1] .. span[2] of
# X, win_end their window ends (0-based exclusive, of X), block the
# positions of the block's columns in x. Returns its columns' counts
# ("count") or list(rowidx (of X), values) ("fill").
.ld_block <- function(x, win_end, opts, keep, what, span, block) {
  view <- fmalloc_view(x)
  w <- pmin(win_end, span[2L]) - (span[1L] - 1)
  counts <- .Call(C_stg_ld_count, view, w, opts, keep, NULL)
  if (what == "count") return(counts[block])
  colptr <- c(0, cumsum(counts))
  nnz <- colptr[length(colptr)]
  f32 <- opts[3L] == 2
  rowidx <- integer(nnz)
  values <- if (f32) raw(4 * nnz) else double(nnz)
  .Call(C_stg_ld_fill, view, w, opts, keep, colptr, rowidx, values, NULL)
  take <- seq.int(colptr[block[1L]] + 1, length.out = colptr[block[length(block)] + 1L] - colptr[block[1L]])
  list(rowidx = rowidx[take] + as.integer(span[1L] - 1),
       values = if (f32) values[rep(4 * (take - 1), each = 4) + 1:4] else values[take])
}

# The rows of X that statgen_ld(samples =) selects: NULL for all, else
# sorted unique 1-based integers. Indices follow .ld_index()'s rules for
# variants (whole numbers in 1..n, or a logical vector, here of length n);
# a repeated sample is refused (it would count twice), and so is a subset
# of fewer than 2 samples (no correlation is defined).
.ld_samples <- function(samples, n) {
  if (is.null(samples)) return(NULL)
  if (is.logical(samples)) {
    if (length(samples) != n || anyNA(samples))
      fm_abort("earg", sprintf("samples: a logical vector must have one TRUE or FALSE per sample (%s), without NA",
                               format(n)))
    samples <- which(samples)
  } else if (!is.numeric(samples) || anyNA(samples) || any(samples != floor(samples)) ||
             any(samples < 1 | samples > n)) {
    fm_abort("earg", sprintf("samples must be sample numbers in 1..%s (rows of X) or a logical vector",
                             format(n)))
  }
  if (anyDuplicated(samples))
    fm_abort("earg", sprintf("samples: sample %d is given twice", as.integer(samples[anyDuplicated(samples)])))
  if (length(samples) < 2L) fm_abort("earg", "samples must select at least 2 samples")
  sort(as.integer(samples))
}

# The variants of X as the band keeps them: CHR, POS, ID, CM, A1 (the
# counted allele, ALT), A2; from .variant_source() (design.R), so that
# `variants` may also be a .bim or .pvar path.
.ld_variants <- function(X, variants, p) {
  src <- .variant_source(X, variants)
  on.exit(src$close())
  v <- src$read(p)
  data.frame(CHR = v$CHROM, POS = v$POS, ID = v$ID, CM = v$CM, A1 = v$ALT, A2 = v$REF,
             stringsAsFactors = FALSE)
}

# Window ends (0-based, exclusive) of every variant: the first variant
# beyond its window on its chromosome.
.ld_windows <- function(vs, window, unit) {
  p <- nrow(vs)
  if (p == 0L) return(numeric(0))
  coord <- switch(unit, kb = vs$POS, cM = vs$CM, variants = as.numeric(seq_len(p)))
  w <- if (unit == "kb") window * 1000 else window
  what <- switch(unit, kb = "base-pair positions", cM = "centimorgan positions", variants = "")
  if (anyNA(coord)) {
    i <- which(is.na(coord))[1]
    fm_abort("earg", sprintf("variant %d (%s) has no %s: give variants = with them, or unit = \"variants\"",
                             i, vs$ID[i], what))
  }
  if (unit == "cM" && all(coord == 0))
    fm_abort("earg", "the map has no centimorgan positions (all 0): use unit = \"kb\" or \"variants\"")
  chr <- vs$CHR
  chr[is.na(chr)] <- ""
  runs <- rle(chr)
  if (anyDuplicated(runs$values)) {
    dup <- runs$values[anyDuplicated(runs$values)]
    fm_abort("earg", sprintf("the variants of chromosome %s are not together: sort the variants by chromosome and position",
                             dup))
  }
  end <- numeric(p)
  stop_at <- cumsum(runs$lengths)
  start_at <- stop_at - runs$lengths
  for (r in seq_along(runs$lengths)) {
    idx <- (start_at[r] + 1):stop_at[r]
    x <- coord[idx]
    if (is.unsorted(x)) {
      i <- idx[which(diff(x) < 0)[1] + 1]
      fm_abort("earg", sprintf("variant %d (%s) comes before its predecessor on chromosome %s: sort the variants by position",
                               i, vs$ID[i], runs$values[r]))
    }
    end[idx] <- start_at[r] + findInterval(x + w, x)
  }
  end
}

.ld_with_bar <- function(p, what, f) {
  bar <- .progress_bar(p, what)
  prog <- if (is.null(bar)) NULL else function(d, total) cli::cli_progress_update(id = bar, set = d)
  res <- f(prog)
  if (!is.null(bar)) cli::cli_progress_done(id = bar)
  res
}

.ld_check_name <- function(name) {
  if (!is.character(name) || length(name) != 1L || is.na(name) || !nzchar(name) || grepl("/", name, fixed = TRUE))
    fm_abort("earg", "name must be a single non-empty string without '/' (the band's parts are saved as name/part)")
}

# The band's parts saved under name/colptr, name/rowidx, name/values and
# its description under name.
.ld_save <- function(ld, name, runtime) {
  saved <- lapply(c(colptr = "colptr", rowidx = "rowidx", values = "values"), function(part)
    Rfmalloc::fmalloc_save(ld[[part]], paste0(name, "/", part), runtime, sync = FALSE))
  info <- ld$info
  info$runtime <- NULL
  desc <- list(format = "statgen_ld", version = 1L, dtype = ld$dtype, variants = ld$variants,
               info = info)
  Rfmalloc::fmalloc_save(serialize(desc, NULL, xdr = TRUE), name, runtime)
  info$runtime <- runtime
  info$name <- name
  new_statgen_ld(saved$colptr, saved$rowidx, saved$values, ld$dtype, ld$variants, info,
                 checked = ld$checked)
}

#' Reopen a saved LD band
#'
#' Returns the `statgen_ld` band saved by `statgen_ld(..., name = name)` in
#' `runtime`, mapped (nothing is read until used), for example in a new R
#' process after `open_fmalloc(path)` of a persistent runtime.
#' @param runtime An open Rfmalloc runtime ([Rfmalloc::open_fmalloc()]).
#' @param name The name the band was saved under.
#' @return A `statgen_ld` object (see [statgen_ld()]).
#' @section Errors: `fm_error_earg` when `name` is not in `runtime` or is not
#'   an LD band; `fm_error_eformat` when the saved band is damaged (its
#'   arrays break the layout: the whole band is checked here, once, so that
#'   later products and lookups only check its lengths).
#' @examples
#' path <- tempfile(fileext = ".fm")
#' rt <- Rfmalloc::open_fmalloc(path, size_gb = 0.01)
#' X <- Rfmalloc::fmalloc_bed(matrix(rbinom(100 * 10, 2, 0.4), 100, 10))
#' ld <- statgen_ld(X, window = 3, unit = "variants", runtime = rt, name = "chr1")
#' Rfmalloc::cleanup_fmalloc(rt)
#' rt <- Rfmalloc::open_fmalloc(path, read_only = TRUE)
#' statgen_ld_open(rt, "chr1")[1:3, 1:3]
#' Rfmalloc::cleanup_fmalloc(rt)
#' unlink(path)
#' @export
statgen_ld_open <- function(runtime, name) {
  .ld_check_name(name)
  desc <- tryCatch(unserialize(Rfmalloc::fmalloc_get(runtime, name)), error = function(e) e)
  if (inherits(desc, "error") || !is.list(desc) || !identical(desc$format, "statgen_ld")) {
    fm_abort("earg", sprintf("'%s' is not an LD band saved by statgen_ld() in this runtime", name))
  }
  part <- function(p) Rfmalloc::fmalloc_get(runtime, paste0(name, "/", p))
  info <- desc$info
  info$runtime <- runtime
  info$name <- name
  # the layout is checked here, once: a damaged file is an error, not a crash
  tryCatch(new_statgen_ld(part("colptr"), part("rowidx"), part("values"), desc$dtype,
                          desc$variants, info),
           fm_error = function(e) stop(e),
           error = function(e)
             fm_abort("eformat", sprintf("the LD band '%s' in this runtime is damaged: %s", name,
                                         conditionMessage(e))))
}
