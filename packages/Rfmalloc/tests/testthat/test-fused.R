# Every registered product backend against dense computations in base R:
# each product the R API exposes, with the backend forced on (option
# fmalloc.backend = its name) and forced off ("reference"), the panel budget
# forced tiny (64 bytes) and at its default, and 1, 2 and 3 threads. Values
# must match the dense result within 1e-10 of the magnitude of the terms;
# for the forced-on backend they must also be bit-identical across thread
# counts and budgets. A backend may decline only the products it declines
# by design (declines_by_design, each with the reason its message must
# give); any other decline fails. Data are generated (labelled so) except
# the 1000 Genomes fixture.

# Which codec matrices each backend serves: one entry per backend, and a
# maker for each codec in make_cases().
backend_codecs <- list(fused = c("bed2", "dos8"), alp = "alp")

# The products of product_table() that each backend declines by design
# (fm_fused.h: B of more than 64 columns; backend_alp.c: only X b and X' b,
# so also the X X' B passes of fmalloc_pca), as a pattern of the product's
# label and one of the decline's message.
declines_by_design <- list(
  fused = list(list(product = "\\(k = 65\\)$",
                    reason = ": B has 65 columns, outside the 1 to 64 it takes")),
  alp = list(list(product = "^X %\\*% crossprod\\(X, B\\)|^col(Sums|Means)\\(|^fmalloc_pca\\(",
                  reason = ": the alp backend computes X b and X' b only"))
)

# A decline of product nm by backend (message msg): expected by design, and
# then its message names the backend and the reason, or a failure.
expect_decline_by_design <- function(backend, nm, msg, label) {
  hit <- Filter(function(d) grepl(d$product, nm), declines_by_design[[backend]])
  if (!length(hit)) {
    fail(sprintf("%s: backend %s declined a product it should compute: %s", label, backend, msg))
    return(invisible(FALSE))
  }
  expect_match(msg, sprintf("backend '%s'", backend), fixed = TRUE, label = label)
  expect_match(msg, hit[[1]]$reason, fixed = TRUE, label = label)
  invisible(TRUE)
}

# Generated values of one codec (5% missing; column 3 has five observed
# values) and the codec matrix storing them.
make_values <- function(codec, rt, n, p) {
  v <- switch(codec,
    bed2 = matrix(sample(0:2, n * p, replace = TRUE, prob = c(0.5, 0.35, 0.15)), n, p),
    dos8 = matrix(sample(0:254, n * p, replace = TRUE) / 127, n, p),
    alp = matrix(round(runif(n * p, -50, 50), 2), n, p) # prices with 2 decimals
  )
  v[sample(n * p, round(0.05 * n * p))] <- NA
  v[, 3] <- NA
  v[1:5, 3] <- c(0, 2, 1, 0, 2)
  X <- switch(codec, bed2 = fmalloc_bed(v, rt), dos8 = fmalloc_dosage(v, rt),
              alp = fmalloc_alp(v, rt))
  storage.mode(v) <- "double"
  list(X = X, v = v)
}

# v standardized as fmalloc_standardize(scale = TRUE) does it, in base R.
standardized <- function(v) {
  z <- sweep(sweep(v, 2, colMeans(v, na.rm = TRUE)), 2, apply(v, 2, sd, na.rm = TRUE), "/")
  z[is.na(z)] <- 0
  z
}

# Generated test matrices of one codec, each with its dense counterpart D
# computed in base R from the generating values (not through our decode):
# small ones (n not a multiple of 4) in four views, and with tall = TRUE a
# 1001 x 150 one, large enough for the kernels to use several threads.
make_cases <- function(codec, rt, n = 61, p = 37, seed = 11, tall = TRUE) {
  set.seed(seed)
  s <- make_values(codec, rt, n, p)
  v <- s$v
  j <- c(5, 1, 1, 30:37, 2)
  suppressMessages({
    S <- fmalloc_standardize(s$X, scale = TRUE)
    C <- fmalloc_standardize(s$X, impute = FALSE)
  })
  out <- list(
    raw = list(X = s$X, D = v, pca = TRUE),
    standardized = list(X = S, D = standardized(v)),
    centred_not_imputed = list(X = C, D = sweep(v, 2, colMeans(v, na.rm = TRUE))),
    column_subset = list(X = fmalloc_select(S, j), D = standardized(v)[, j, drop = FALSE])
  )
  if (tall) {
    t <- make_values(codec, rt, 1001, 150)
    out$tall_raw <- list(X = t$X, D = t$v)
    out$tall_standardized <- list(X = suppressMessages(fmalloc_standardize(t$X, scale = TRUE)),
                                  D = standardized(t$v))
  }
  out
}

# got equals want where both are numbers (within 1e-10 of mag, the sum of
# the absolute terms) and is missing exactly where want is.
expect_close <- function(got, want, mag, label) {
  got <- unname(as.matrix(got))
  want <- unname(as.matrix(want))
  mag <- unname(as.matrix(mag))
  expect_identical(dim(got), dim(want), label = label)
  expect_identical(is.na(got), is.na(want), label = paste(label, "(missing pattern)"))
  ok <- !is.na(want)
  err <- abs(got[ok] - want[ok])
  tol <- 1e-10 * (mag[ok] + 1e-300)
  worst <- if (any(ok)) max(err / tol) else 0
  expect_true(all(err <= tol), label = sprintf("%s: worst error %.3g of the tolerance", label, worst))
}

# The products of the R API on X, each as function(X) -> value, with the
# dense value and magnitude from D. Operands are generated once per case.
product_table <- function(D, seed = 5) {
  set.seed(seed)
  n <- nrow(D)
  p <- ncol(D)
  B <- lapply(c(1, 3, 10, 64, 65), function(k) matrix(rnorm(p * k), p, k))
  Cn <- lapply(c(1, 5, 64, 65), function(k) matrix(rnorm(n * k), n, k))
  Bt <- matrix(rnorm(4 * p), 4, p)
  Bx <- matrix(rnorm(n * 3), n, 3)
  A <- abs(D)
  A0 <- D
  A0[is.na(A0)] <- 0
  out <- list()
  # entries are made by functions so that each closure keeps its own operand
  xb <- function(b) list(f = function(X) X %*% b, want = D %*% b, mag = A %*% abs(b))
  xtb <- function(cc) list(f = function(X) crossprod(X, cc), want = crossprod(D, cc),
                           mag = crossprod(A, abs(cc)))
  sums <- function(na_rm, mean) {
    den <- if (!mean) 1 else if (na_rm) colSums(!is.na(D)) else n
    list(f = function(X) if (mean) colMeans(X, na.rm = na_rm) else colSums(X, na.rm = na_rm),
         want = if (mean) colMeans(D, na.rm = na_rm) else colSums(D, na.rm = na_rm),
         mag = colSums(A, na.rm = na_rm) / den)
  }
  for (b in B) out[[sprintf("X %%*%% B (k = %d)", ncol(b))]] <- xb(b)
  for (cc in Cn) out[[sprintf("crossprod(X, B) (k = %d)", ncol(cc))]] <- xtb(cc)
  out[["tcrossprod(X, B) (k = 4)"]] <- list(
    f = function(X) tcrossprod(X, Bt), want = tcrossprod(D, Bt), mag = tcrossprod(A, abs(Bt)))
  out[["X %*% crossprod(X, B) (k = 3)"]] <- list(
    f = function(X) .product(X, Bx, 3L), want = D %*% crossprod(D, Bx),
    mag = A %*% crossprod(A, abs(Bx)))
  for (na_rm in c(FALSE, TRUE)) {
    out[[sprintf("colSums(na.rm = %s)", na_rm)]] <- sums(na_rm, FALSE)
    out[[sprintf("colMeans(na.rm = %s)", na_rm)]] <- sums(na_rm, TRUE)
  }
  dev <- sweep(A0, 2, colMeans(D, na.rm = TRUE))
  out[["fmalloc_colVars"]] <- list(
    f = function(X) fmalloc_colVars(X), want = apply(D, 2, var, na.rm = TRUE),
    mag = colSums(dev^2, na.rm = TRUE) / pmax(1, colSums(!is.na(D)) - 1))
  out
}

# PCA of the raw matrix, standardized and mean-imputed, against the SVD of
# the dense standardized matrix (its own tolerance: an iterative method).
pca_check <- function(X, D, res, label) {
  mu <- colMeans(D, na.rm = TRUE)
  sdv <- apply(D, 2, sd, na.rm = TRUE)
  z <- sweep(sweep(D, 2, mu), 2, sdv, "/")
  z[is.na(z)] <- 0
  s <- svd(z)
  k <- length(res$sdev)
  expect_equal(res$sdev, s$d[1:k] / sqrt(nrow(D) - 1), tolerance = 1e-8, label = label)
  expect_true(all(abs(colSums(res$rotation * s$v[, 1:k])) > 1 - 1e-8), label = label)
}

run_pca <- function(X) {
  old <- options(fmalloc.progress = FALSE)
  on.exit(options(old))
  suppressMessages(fmalloc_pca(X, k = 3, scale = TRUE, max_iter = 500, tol = 1e-13))
}

# Evaluate f under one setting; a decline becomes list(unsupported = message).
under <- function(mode, budget, threads, f) {
  old_b <- fmalloc_panel_budget()
  old_t <- fmalloc_threads()
  on.exit({
    fmalloc_panel_budget(old_b)
    fmalloc_threads(old_t)
  })
  fmalloc_panel_budget(budget)
  fmalloc_threads(threads)
  fmalloc_with_backend(mode, tryCatch(list(value = f(), backend = fmalloc_last_backend()),
                                      fm_error_eunsupported = function(e) list(unsupported = conditionMessage(e))))
}

settings <- expand.grid(budget = c(64, 0), threads = 1:3)

# Run the whole table for one backend and one case.
check_case <- function(backend, case, case_label) {
  tab <- product_table(case$D)
  if (isTRUE(case$pca)) tab[["fmalloc_pca(k = 3, scale = TRUE)"]] <- list(f = run_pca, pca = TRUE)
  for (nm in names(tab)) {
    t <- tab[[nm]]
    for (mode in c(backend, "reference")) {
      first <- NULL
      for (s in seq_len(nrow(settings))) {
        budget <- settings$budget[s]
        threads <- settings$threads[s]
        # PCA with a 64-byte budget takes minutes on the reference path
        if (isTRUE(t$pca) && budget == 64 && mode == "reference") next
        label <- sprintf("%s, %s, %s, budget %s, %d thread(s)", case_label, nm, mode,
                         if (budget == 0) "default" else budget, threads)
        r <- under(mode, budget, threads, function() t$f(case$X))
        if (!is.null(r$unsupported)) {
          expect_identical(mode, backend, label = paste(label, "declined on the reference path"))
          expect_decline_by_design(backend, nm, r$unsupported, label)
          next
        }
        # colVars streams through the core's statistics, no backend; a forced
        # backend runs every pass of a PCA
        expect_identical(r$backend, if (grepl("colVars", nm)) "colvar" else mode, label = label)
        if (isTRUE(t$pca)) pca_check(case$X, case$D, r$value, label) else
          expect_close(r$value, t$want, t$mag, label)
        if (mode == backend) {
          if (is.null(first)) first <- r$value else
            expect_identical(r$value, first, label = paste(label, "bit-identical to the first setting"))
        }
      }
    }
  }
}

for (backend in names(backend_codecs)) {
  for (codec in backend_codecs[[backend]]) {
    test_that(sprintf("backend %s on %s matrices (generated) matches dense base R, forced on and off", backend, codec), {
      if (!backend %in% fmalloc_backends()) skip(sprintf("backend %s is not registered", backend))
      rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.05, mode = "scratch")
      on.exit(cleanup_fmalloc(rt))
      cases <- make_cases(codec, rt)
      for (cn in names(cases)) check_case(backend, cases[[cn]], sprintf("%s %s", codec, cn))
    })
  }
}

test_that("fused kernels: portable, AVX2 and AVX-512 agree with each other and with the reference", {
  if (!"fused" %in% fmalloc_backends()) skip("backend fused is not registered")
  on.exit(.test_fused_isa("auto"))
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.05, mode = "scratch")
  on.exit(cleanup_fmalloc(rt), add = TRUE)
  expect_identical(.test_fused_isa("portable"), "portable")
  avx2 <- .test_fused_isa("avx2")
  expect_true(avx2 %in% c("avx2", "portable"))
  if (avx2 != "avx2") message("this CPU has no AVX2 + FMA: the portable kernels are compared with themselves")
  for (codec in c("bed2", "dos8")) {
    cases <- make_cases(codec, rt, n = 203, p = 41, seed = 3, tall = FALSE)
    for (cn in c("raw", "standardized", "column_subset")) {
      case <- cases[[cn]]
      tab <- product_table(case$D)
      for (nm in names(tab)) {
        res <- lapply(c("portable", "avx2", "avx512"), function(isa) {
          .test_fused_isa(isa)
          under("fused", 0, 2, function() tab[[nm]]$f(case$X))
        })
        label <- sprintf("%s %s, %s", codec, cn, nm)
        declined <- Filter(function(r) !is.null(r$unsupported), res)
        if (length(declined)) {
          expect_length(declined, 3L) # the kernel set never changes what is covered
          expect_decline_by_design("fused", nm, declined[[1]]$unsupported, label)
          next
        }
        for (r in res) expect_close(r$value, tab[[nm]]$want, tab[[nm]]$mag, label)
        # the two instruction sets differ at most by rounding
        expect_close(res[[2]]$value, res[[1]]$value, tab[[nm]]$mag / 100, paste(label, "avx2 vs portable"))
        expect_close(res[[3]]$value, res[[1]]$value, tab[[nm]]$mag / 100, paste(label, "avx512 vs portable"))
      }
    }
  }
})

test_that("1000 Genomes .bed (fixture): fused equals dense base R and the reference on real genotypes", {
  bed <- fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed")
  if (!"fused" %in% fmalloc_backends()) skip("backend fused is not registered")
  G <- fmalloc_bed_open(bed)
  j <- unique(round(seq(1, ncol(G), length.out = 300)))
  Gs <- fmalloc_select(G, j)
  D <- as.matrix(Gs)
  storage.mode(D) <- "double"
  keep <- which(apply(D, 2, function(v) stats::sd(v, na.rm = TRUE) > 0))
  Gs <- fmalloc_select(Gs, keep)
  D <- D[, keep, drop = FALSE]
  mu <- colMeans(D, na.rm = TRUE)
  sdv <- apply(D, 2, sd, na.rm = TRUE)
  Z <- sweep(sweep(D, 2, mu), 2, sdv, "/")
  Z[is.na(Z)] <- 0
  cases <- list(raw = list(X = Gs, D = D, pca = TRUE),
                standardized = list(X = suppressMessages(fmalloc_standardize(Gs, scale = TRUE)), D = Z))
  for (cn in names(cases)) check_case("fused", cases[[cn]], sprintf("1kg_bi %s", cn))

  # the whole matrix (25k variants): fused and the reference agree, and the
  # fused result does not depend on the thread count
  S <- suppressMessages(fmalloc_standardize(G, scale = "binomial", drop_constant = TRUE))
  set.seed(9)
  B <- matrix(rnorm(ncol(S) * 10), ncol(S), 10)
  Cn <- matrix(rnorm(nrow(S) * 10), nrow(S), 10)
  whole <- list(
    "X %*% B" = function() S %*% B,
    "crossprod(X, B)" = function() crossprod(S, Cn),
    "colSums" = function() colSums(S)
  )
  for (nm in names(whole)) {
    ref <- under("reference", 0, 1, whole[[nm]])$value
    got <- lapply(1:3, function(th) under("fused", 0, th, whole[[nm]]))
    if (!is.null(got[[1]]$unsupported)) {
      fail(sprintf("whole 1kg_bi %s: backend fused declined it: %s", nm, got[[1]]$unsupported))
      next
    }
    expect_equal(got[[1]]$value, ref, tolerance = 1e-10, label = paste("whole 1kg_bi", nm))
    expect_identical(got[[2]]$value, got[[1]]$value, label = paste("whole 1kg_bi", nm, "2 threads"))
    expect_identical(got[[3]]$value, got[[1]]$value, label = paste("whole 1kg_bi", nm, "3 threads"))
  }
})

test_that("products in forked children (mclapply) equal the parent's after threaded products", {
  skip_if_no_fork()
  if (!"fused" %in% fmalloc_backends()) skip("backend fused is not registered")
  rt <- open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.05, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  old <- fmalloc_threads()
  on.exit(fmalloc_threads(old), add = TRUE)
  fmalloc_threads(2)
  set.seed(4)
  g <- matrix(sample(0:2, 3001 * 50, replace = TRUE), 3001, 50)
  X <- suppressMessages(fmalloc_standardize(fmalloc_bed(g, rt), scale = TRUE))
  b <- matrix(rnorm(50 * 4), 50, 4)
  a <- X %*% b # threaded kernels in the parent first
  backend <- fmalloc_last_backend()
  child <- function(i) list(threads = fmalloc_threads(), y = X %*% b, backend = fmalloc_last_backend())
  # children that hang are killed after 120 s (the test then fails)
  res <- fork_children(child, n = 2, timeout = 120)
  expect_children_returned(res)
  for (r in child_values(res)) {
    expect_identical(r$threads, 2L) # inherited
    expect_identical(r$backend, backend)
    expect_identical(r$y, a)
  }
})
