library(testthat)
library(RfmallocStatgen)
test_check("RfmallocStatgen")
