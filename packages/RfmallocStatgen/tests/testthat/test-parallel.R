# statgen_gwas and statgen_ld on mirai daemons (parallel = "mirai": blocks
# of variants of a mapped .bed, or of a persistent runtime's calls, fitted
# by .gwas_block / .ld_block there, Rfmalloc::fm_parallel_apply): the rows
# and bands of a run without daemons, bit for bit, for 1, 2 and 3 daemons,
# both families, several phenotypes and covariates; with `out`, the same
# files.
skip_if_not_installed("mirai")


test_that("linear and logistic GWAS of several phenotypes: 1, 2 and 3 daemons give the serial rows bit for bit", {
  X <- Rfmalloc::fmalloc_select(Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed")), 1:3000)
  ph <- kg_pheno()
  set.seed(3)
  ph$QT2 <- ifelse(runif(nrow(ph)) < 0.05, NA, rnorm(nrow(ph)))
  ph$BT2 <- stats::rbinom(nrow(ph), 1, 0.3)
  cov <- ph[c("#FID", "IID")]
  cov$C1 <- rnorm(nrow(ph))
  cov$C2 <- runif(nrow(ph))
  withr::local_options(fmalloc.parallel_block = 700, fmalloc.progress = FALSE)
  run <- function(...) {
    list(qt = suppressMessages(statgen_gwas(X, ph[c("#FID", "IID", "QT", "QT2")], covar = cov, ...)),
         bt = suppressMessages(statgen_gwas(X, ph[c("#FID", "IID", "BT", "BT2")], covar = cov,
                                            family = "logistic", ...)))
  }
  serial <- run()
  expect_identical(nrow(serial$qt), 6000L)
  for (n in 1:3) {
    local_daemons(n)
    expect_identical(run(parallel = "mirai"), serial, label = sprintf("%d daemons", n))
  }
  # written as chunks: the same files
  dir <- tempfile("glm")
  dir.create(dir)
  s1 <- suppressMessages(statgen_gwas(X, ph[c("#FID", "IID", "QT", "QT2")], covar = cov,
                                      out = file.path(dir, "serial"), chunk = 1000))
  s2 <- suppressMessages(statgen_gwas(X, ph[c("#FID", "IID", "QT", "QT2")], covar = cov,
                                      out = file.path(dir, "par"), parallel = "mirai"))
  f1 <- attr(s1, "files")
  f2 <- attr(s2, "files")
  expect_length(f2, 2L)
  for (i in seq_along(f1)) expect_identical(readLines(f2[i]), readLines(f1[i]))
  expect_identical(unclass(s2)[names(unclass(s1))], unclass(s1)[names(unclass(s1))])
  expect_error(statgen_gwas(X, ph[c("#FID", "IID", "QT")], parallel = "mpi"), class = "fm_error_earg")
})

test_that("LD bands on daemons are the serial band bit for bit (windows across blocks, r2_min, f32)", {
  X <- Rfmalloc::fmalloc_select(Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed")), 1:2500)
  withr::local_options(fmalloc.parallel_block = 400, fmalloc.progress = FALSE)
  rt <- new_runtime()
  parts <- function(ld) lapply(unclass(ld)[c("colptr", "rowidx", "values")], function(v) v[])
  cases <- list(list(window = 500, unit = "kb"), list(window = 150, unit = "variants", r2_min = 0.05),
                list(window = 300, unit = "kb", dtype = "f32", missing = "pairwise"))
  serial <- lapply(cases, function(a) parts(do.call(statgen_ld, c(list(X, runtime = rt), a))))
  local_daemons(2)
  withr::local_options(fmalloc.parallel = "mirai")
  for (i in seq_along(cases)) {
    ld <- do.call(statgen_ld, c(list(X, runtime = rt), cases[[i]]))
    expect_true(all(vapply(unclass(ld)[c("colptr", "rowidx", "values")], Rfmalloc::fmalloc_is_mapped, TRUE)))
    expect_identical(parts(ld), serial[[i]], label = paste("case", i))
  }
  # pairs across the 400-variant blocks (rows are 0-based)
  b <- serial[[2L]]
  col <- rep(seq_len(ncol(X)), diff(b$colptr))
  expect_gt(sum(b$rowidx %/% 400 != (col - 1) %/% 400), 100)
})

test_that("calls in a persistent runtime: GWAS and LD on daemons (which map the runtime's file) are the serial results", {
  G <- as.matrix(Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))[, 1:1500])
  path <- tempfile(fileext = ".fm")
  rt <- Rfmalloc::open_fmalloc(path, size_gb = 0.5)
  withr::defer(Rfmalloc::cleanup_fmalloc(rt))
  Rfmalloc::fmalloc_save(Rfmalloc::fmalloc_bed(G, runtime = rt), "calls", rt)
  X <- Rfmalloc::fmalloc_get(rt, "calls")
  ph <- kg_pheno()
  withr::local_options(fmalloc.parallel_block = 400, fmalloc.progress = FALSE)
  parts <- function(ld) lapply(unclass(ld)[c("colptr", "rowidx", "values")], function(v) v[])
  run <- function(...) {
    list(qt = suppressMessages(statgen_gwas(X, ph[c("#FID", "IID", "QT")], ...)),
         bt = suppressMessages(statgen_gwas(X, ph[c("#FID", "IID", "BT")], family = "logistic", ...)),
         # the band is written into the same runtime: its file grows between the passes
         ld = parts(suppressMessages(statgen_ld(X, window = 150, unit = "variants", r2_min = 0.02, runtime = rt))))
  }
  serial <- run()
  local_daemons(2)
  withr::with_options(list(fmalloc.parallel = "mirai"), expect_identical(run(), serial))
  mapped <- unlist(mirai::everywhere(ls(get(".fm_daemon_files", asNamespace("Rfmalloc"))))[])
  expect_true(length(mapped) >= 1L && all(mapped == normalizePath(path)))
  # the same calls as a mapped double matrix of the runtime (blocks of it wrapped as codec "double")
  M <- Rfmalloc::create_fmalloc_matrix("double", nrow(G), ncol(G), rt)
  M[] <- G
  dimnames(M) <- dimnames(G)
  vs <- Rfmalloc::fmalloc_variants(X)
  dense <- function() list(qt = suppressMessages(statgen_gwas(M, ph[c("#FID", "IID", "QT")], variants = vs)),
                           ld = parts(statgen_ld(M, window = 100, unit = "variants", variants = vs, runtime = rt)))
  serial <- withr::with_options(list(fmalloc.parallel = NULL), dense())
  withr::with_options(list(fmalloc.parallel = "mirai"), expect_identical(dense(), serial))
})
