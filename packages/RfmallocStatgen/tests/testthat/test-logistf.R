# Firth's rows against logistf (Heinze's reference implementation), when it
# is installed: make bench installs it (tools/bench-setup.sh); make test
# does not need it (test-glm.R checks the same rows against an R oracle).
# Only the estimates are compared: plink2's standard error, which ours
# reports, is sqrt(diag((X'WX)^-1)) at the penalized estimate (checked in
# test-glm.R), and logistf's vcov() is another matrix (about 0.7 times ours
# on these variants), with P values from the profile penalized likelihood.

test_that("Firth estimates equal logistf(pl = FALSE) to 1e-6 on 50 separated variants", {
  skip_if_not_installed("logistf")
  d <- kg_bt_pcs()
  set.seed(10)
  for (j in sample(d$firth_rows, 50)) {
    dat <- data.frame(y = d$y, d$C[, -1], x = d$X[, j])[d$keep, ]
    f <- logistf::logistf(y ~ ., data = dat, pl = FALSE,
                          control = logistf::logistf.control(maxit = 1000, maxstep = 5,
                                                             xconv = 1e-12, gconv = 1e-12, lconv = 1e-14))
    expect_equal(log(d$res$OR[j]), unname(stats::coef(f)["x"]), tolerance = 1e-6)
  }
})
