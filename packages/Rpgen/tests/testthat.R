library(testthat)
library(Rpgen)
test_check("Rpgen")
