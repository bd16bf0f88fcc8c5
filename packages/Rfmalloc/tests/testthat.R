library(testthat)
library(Rfmalloc)

test_check("Rfmalloc")
