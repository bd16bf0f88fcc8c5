# Streamed passes over file mappings release the pages they consumed
# (FM_MAT_EVICTABLE, set by the glue on file views and fmalloc vectors).
# Oracle: the kernel's count of resident pages of the file's mapping in
# /proc/self/smaps (Linux only).

mapping_rss_kb <- function(path) {
  if (!file.exists("/proc/self/smaps")) testthat::skip("needs /proc/self/smaps (Linux)")
  sm <- readLines("/proc/self/smaps")
  hdr <- grep("^[0-9a-f]+-[0-9a-f]+ ", sm)
  full <- file.path(normalizePath(dirname(path)), basename(path))
  mine <- hdr[grepl(full, sm[hdr], fixed = TRUE)] # also "<path>.fmtmp.<pid>.0 (deleted)"
  rss <- grep("^Rss:", sm)
  sum(vapply(mine, function(h) {
    r <- rss[rss > h][1]
    as.numeric(sub("Rss: *([0-9]+) kB", "\\1", sm[r]))
  }, 0))
}

test_that("a pass over a mapped .bed leaves none of it resident; values are unchanged", {
  bed <- fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed")
  G <- fmalloc_bed_open(bed, variants = FALSE)
  whole_kb <- file.size(bed) / 1024
  all <- G[, ] # decoding a subset touches every page and releases none
  expect_gt(mapping_rss_kb(bed), 0.9 * whole_kb)
  v1 <- fmalloc_colVars(G)
  expect_lt(mapping_rss_kb(bed), 64)
  expect_equal(v1, apply(all, 2, var, na.rm = TRUE), tolerance = 1e-12)
  S <- fmalloc_standardize(G) # centred, missing calls mean-imputed: finite products
  dense <- as.matrix(S)
  expect_gt(mapping_rss_kb(bed), 0.9 * whole_kb)
  b <- matrix(rnorm(ncol(G) * 2), ncol(G), 2)
  p1 <- S %*% b
  expect_lt(mapping_rss_kb(bed), 64)
  expect_equal(unname(p1), unname(dense %*% b), tolerance = 1e-10)
})

test_that("a pass over a gapped selection of a .bed (every other variant) releases its pages too", {
  bed <- fixture_path("genotypes", "1kg_phase3_subset", "1kg_bi.bed")
  G <- fmalloc_bed_open(bed, variants = FALSE)
  odd <- fmalloc_select(G, seq(1, ncol(G), 2)) # columns narrower than a page, one of two
  all <- odd[, ]
  expect_gt(mapping_rss_kb(bed), 0.4 * file.size(bed) / 1024)
  v <- fmalloc_colVars(odd)
  expect_lt(mapping_rss_kb(bed), 64)
  expect_equal(v, apply(all, 2, var, na.rm = TRUE), tolerance = 1e-12)
  S <- fmalloc_standardize(odd)
  p1 <- fmalloc_with_backend("reference", S %*% matrix(1, ncol(S), 1))
  expect_lt(mapping_rss_kb(bed), 64)
})

test_that("a pass over fmalloc storage releases its pages; the bytes stay in the file", {
  f <- tempfile(fileext = ".fm")
  rt <- open_fmalloc(f, size_gb = 0.1, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  set.seed(7)
  g <- matrix(rbinom(2000 * 3000, 2, 0.3), 2000, 3000)
  G <- fmalloc_bed(g, rt)
  touched <- G[, ]
  before <- mapping_rss_kb(f)
  expect_gt(before, 1400) # 3000 variants x 500 bytes
  s <- fmalloc_colVars(G)
  expect_lt(mapping_rss_kb(f), before - 1300)
  expect_equal(s, apply(g, 2, var), tolerance = 1e-12)
  expect_identical(G[, ], g * 1.0)
})
