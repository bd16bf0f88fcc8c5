library(testthat)
library(Rllm)
test_check("Rllm")
