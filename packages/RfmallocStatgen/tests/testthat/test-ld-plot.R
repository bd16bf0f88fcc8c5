# plot() of an LD band: the track's values, the region rules, the errors.

ld_plot_toy <- function() {
  set.seed(7)
  h <- matrix(rbinom(600 * 30, 1, 0.3), 600, 30)
  for (j in 2:30) { same <- runif(600) < 0.9; h[same, j] <- h[same, j - 1] }
  G <- h[1:300, ] + h[301:600, ]
  v <- data.frame(chr = "2", pos = seq(5e6, by = 4000, length.out = 30),
                  id = paste0("v", 1:30), ref = "C", alt = "T")
  list(G = G, v = v, ld = statgen_ld(Rfmalloc::fmalloc_bed(G), window = 60, variants = v))
}

test_that("the association track is -log10 P of the region's variants, matched by ID", {
  t <- ld_plot_toy()
  gw <- data.frame(ID = rev(t$v$id), P = rev(10^-(1:30)), PHENO = "y")
  gw <- rbind(gw, data.frame(ID = "v3", P = 0.5, PHENO = "z"))
  lp <- RfmallocStatgen:::.ld_plot_track(t$v$id[5:9], gw, NULL)
  expect_equal(lp, 5:9)
  expect_equal(RfmallocStatgen:::.ld_plot_track("v3", gw, "z"), -log10(0.5))
  # v1 has no row once the last is dropped; "nope" is not in gwas: no point
  expect_equal(RfmallocStatgen:::.ld_plot_track(c("v1", "nope", "v2"), gw[-30, ], "y"), c(NA, NA, 2))
})

test_that("plot() draws a region with and without a track and returns the band", {
  t <- ld_plot_toy()
  gw <- data.frame(ID = t$v$id, P = runif(30))
  f <- tempfile(fileext = ".pdf")
  grDevices::pdf(f)
  on.exit({ grDevices::dev.off(); unlink(f) })
  expect_identical(withVisible(plot(t$ld))$visible, FALSE)
  expect_s4_class(plot(t$ld, region = 3:20, gwas = gw, stat = "r"), "statgen_ld")
  expect_s4_class(plot(t$ld, region = c("v4", "v5", "v6"), gwas = gw), "statgen_ld")
  expect_error(plot(t$ld, region = c(1, 3)), "consecutive", class = "fm_error_earg")
  expect_error(plot(t$ld, max_variants = 10), "more than max_variants", class = "fm_error_earg")
  expect_error(plot(t$ld, gwas = data.frame(SNP = "v1")), "columns ID and P", class = "fm_error_earg")
  expect_error(plot(t$ld, gwas = cbind(gw, PHENO = "a"), pheno = "b"), "no phenotype 'b'",
               class = "fm_error_earg")
})
