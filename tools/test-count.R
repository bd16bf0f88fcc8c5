# Sourced by tools/run-r-tests.R and tools/run-vulkan-tests.R: a testthat
# reporter that counts every failed expectation and every error as it is
# reported. The closing count and the exit status come from it, not from
# as.data.frame() of the results (testthat 3.1.6), whose `failed` and
# `error` columns missed errors raised inside expect_error(): a make
# test-vulkan run with one closed "0 failed", a make test ISA=portable run
# with two counted one.
# `now = TRUE` also prints each failure as it happens.
CountFailures <- R6::R6Class("CountFailures", inherit = testthat::Reporter, public = list(
  n = 0L,
  tests = character(),
  now = FALSE,
  initialize = function(now = FALSE) {
    super$initialize()
    self$now <- now
  },
  add_result = function(context, test, result) {
    if (!inherits(result, c("expectation_failure", "expectation_error"))) return(invisible())
    self$n <- self$n + 1L
    self$tests <- union(self$tests, test)
    if (self$now) self$cat_line("\nFAILED NOW in '", test, "': ", conditionMessage(result))
  }))
