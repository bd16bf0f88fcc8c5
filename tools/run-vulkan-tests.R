# `make test-vulkan`: run some of Rllm's test files (the arguments, from
# packages/Rllm/tests/testthat, the working folder) against the Rllm first
# on R_LIBS (the Vulkan library), with RLLM_TEST_DEVICE naming the device
# the models evaluate on. Prints the Vulkan devices GGML lists, each test's
# result (what failed or skipped, and why; a failure's message also as it
# happens), and one closing line
# "N passed, N failed, N skipped". Exits non-zero on a failure, or when the
# device list is empty (the run would test the CPU only).
files <- commandArgs(trailingOnly = TRUE)
suppressPackageStartupMessages({
  library(testthat)
  library(Rllm)
})
options(cli.progress_show_after = Inf)
v <- rllm_vulkan_info()
cat(sprintf("GGML %s (%s build), Vulkan compiled in: %s; RLLM_TEST_DEVICE=%s, GGML_VK_VISIBLE_DEVICES=%s\n",
            rllm_ggml_info()$version, rllm_ggml_info()$isa, attr(v, "vulkan_build"),
            Sys.getenv("RLLM_TEST_DEVICE"), Sys.getenv("GGML_VK_VISIBLE_DEVICES", "(unset)")))
print(v)
if (!nrow(v)) {
  cat("test-vulkan: GGML lists no Vulkan device; nothing would run on one\n")
  quit(status = 1L)
}
# Failures counted as reported, each message as soon as it happens
# (SummaryReporter prints them only at the end of a file, and a file takes
# hours on lavapipe).
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))),
                 "test-count.R"))
passed <- failed <- skipped <- 0L
for (f in files) {
  t0 <- proc.time()[["elapsed"]]
  counter <- CountFailures$new(now = TRUE)
  res <- as.data.frame(test_file(f, package = "Rllm", load_package = "installed",
                                 reporter = MultiReporter$new(list(SummaryReporter$new(max_reports = Inf),
                                                                   counter)),
                                 stop_on_failure = FALSE))
  cat(sprintf("== %s: %.0f s\n", f, proc.time()[["elapsed"]] - t0))
  for (i in seq_len(nrow(res))) {
    state <- if (res$test[i] %in% counter$tests || res$failed[i] > 0 || res$error[i]) "FAIL"
             else if (res$skipped[i]) "SKIP" else "ok"
    cat(sprintf("  %-4s %s (%.1f s)\n", state, res$test[i], res$real[i]))
  }
  passed <- passed + sum(res$passed)
  failed <- failed + counter$n
  skipped <- skipped + sum(res$skipped)
}
cat(sprintf("%d passed, %d failed, %d skipped\n", passed, failed, skipped))
quit(status = if (failed > 0) 1L else 0L)
