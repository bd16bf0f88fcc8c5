# Oracles written here, independently of the package, in R.

# Firth's penalized log-likelihood of coefficients b (Firth 1993: the
# log-likelihood plus half the log-determinant of the information) and its
# gradient, the modified score X'(y - p + h (1/2 - p)) (Heinze and Schemper
# 2002), h the diagonal of the hat matrix W^1/2 X (X'WX)^-1 X' W^1/2.
firth_pll <- function(b, X, y) {
  eta <- drop(X %*% b)
  w <- stats::plogis(eta) * stats::plogis(-eta)
  sum(y * eta - log1p(exp(-abs(eta))) - pmax(eta, 0)) +
    0.5 * as.numeric(determinant(crossprod(X, X * w))$modulus)
}
firth_score <- function(b, X, y) {
  p <- stats::plogis(drop(X %*% b))
  w <- p * (1 - p)
  h <- w * rowSums((X %*% solve(crossprod(X, X * w))) * X)
  drop(crossprod(X, y - p + h * (0.5 - p)))
}

# Firth's fit of y (0/1) on the columns of X by BFGS on the penalized
# log-likelihood (the plain Newton step on the modified score cycles on
# nearly separated data), then polished by Newton steps with a numerical
# Jacobian of the modified score; list(coef, converged: max |score| below
# 1e-9 times the largest column sum of squares).
firth_oracle <- function(X, y) {
  o <- stats::optim(rep(0, ncol(X)), function(b) -firth_pll(b, X, y),
                    function(b) -firth_score(b, X, y), method = "BFGS",
                    control = list(reltol = 1e-16, maxit = 5000))
  b <- o$par
  for (it in 1:6) {
    u <- firth_score(b, X, y)
    J <- vapply(seq_along(b), function(j) {
      e <- 1e-6 * max(1, abs(b[j]))
      d <- replace(numeric(length(b)), j, e)
      (firth_score(b + d, X, y) - firth_score(b - d, X, y)) / (2 * e)
    }, numeric(length(b)))
    b <- b - solve(J, u)
  }
  list(coef = b, converged = max(abs(firth_score(b, X, y))) < 1e-9 * max(colSums(X^2)))
}

# A logistic fit polished to machine precision: glm()'s estimate (its
# deviance test stops near 1e-7 in the coefficients of a flat likelihood)
# followed by Newton steps; list(coef, se).
logit_oracle <- function(X, y) {
  f <- stats::glm.fit(X, y, family = stats::binomial(),
                      control = stats::glm.control(epsilon = 1e-14, maxit = 100))
  b <- f$coefficients
  for (it in 1:5) {
    p <- stats::plogis(drop(X %*% b))
    I <- crossprod(X, X * (p * (1 - p)))
    b <- b + solve(I, crossprod(X, y - p))
  }
  p <- stats::plogis(drop(X %*% b))
  list(coef = unname(b), se = unname(sqrt(diag(solve(crossprod(X, X * (p * (1 - p))))))))
}

