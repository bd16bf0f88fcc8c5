library(testthat)
library(Rgguf)
test_check("Rgguf")
