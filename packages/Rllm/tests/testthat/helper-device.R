# The device the model tests evaluate on: the environment variable
# RLLM_TEST_DEVICE, "cpu" when unset (every ordinary run); `make
# test-vulkan` sets "vulkan", so that the comparisons with llama.cpp (and
# the other tests that build models through test_model()) run the whole
# graph on GGML's Vulkan backend. Tests of what exists only on the CPU
# (threads, the fused kernels, repacking, caches in an Rfmalloc runtime)
# skip there, saying so.

test_device <- function() {
  d <- Sys.getenv("RLLM_TEST_DEVICE", "cpu")
  if (nzchar(d)) d else "cpu"
}

on_device <- function() tolower(test_device()) != "cpu"

skip_on_device <- function(why) {
  if (on_device()) testthat::skip(sprintf("on device %s: %s", test_device(), why))
  invisible(TRUE)
}

# rllm_gguf_model() on the test device.
test_model <- function(path, ...) Rllm::rllm_gguf_model(path, ..., device = test_device())
