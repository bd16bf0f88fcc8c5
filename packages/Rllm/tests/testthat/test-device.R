# Devices (issue 17): rllm_vulkan_info(), rllm_gguf_model(device =) and its
# errors on every build; with RLLM_TEST_DEVICE set (`make test-vulkan`), a
# model on the device against the same file on the CPU and against
# llama.cpp.

device_variants <- c("stories260K.gguf", "derived/stories260K-F16.gguf",
                     "derived/stories260K-Q8_0.gguf", "derived/stories260K-Q4_0.gguf",
                     "derived/stories260K-Q4_K_M.gguf")

test_that("rllm_vulkan_info() is a data frame of devices, none without a Vulkan build", {
  v <- rllm_vulkan_info()
  expect_s3_class(v, "data.frame")
  expect_named(v, c("index", "name", "description", "memory_free", "memory_total", "type"))
  expect_type(v$index, "integer")
  expect_type(v$name, "character")
  expect_type(v$memory_total, "double")
  built <- attr(v, "vulkan_build")
  expect_true(is.logical(built) && length(built) == 1L && !is.na(built))
  if (!built) expect_identical(nrow(v), 0L)
  expect_identical(v$index, seq_len(nrow(v)) - 1L)
  expect_true(all(grepl("^Vulkan[0-9]+$", v$name)))
  expect_true(all(v$type %in% c("gpu", "igpu", "cpu", "accel", "meta")))
  expect_true(all(v$memory_free <= v$memory_total))
  # The build tools/ggmlr-setup.sh verified (nm finds ggml_backend_vk_reg
  # in libggml.a or not); the Makefile passes its record.
  want <- Sys.getenv("FM_GGML_VULKAN_EXPECTED")
  if (nzchar(want)) expect_identical(built, want == "yes")
})

test_that("device = 'vulkan' without Vulkan, and unknown devices, are classed errors", {
  path <- gguf_fixture("stories260K.gguf")
  v <- rllm_vulkan_info()
  if (!attr(v, "vulkan_build")) {
    e <- tryCatch(rllm_gguf_model(path, device = "vulkan"), error = identity)
    expect_s3_class(e, "fm_error_eunsupported")
    expect_match(conditionMessage(e), "Vulkan is not in this GGML build", fixed = TRUE)
    expect_match(conditionMessage(e), "`make vulkan`", fixed = TRUE)
    expect_match(conditionMessage(e), "stories260K.gguf", fixed = TRUE)
  } else if (nrow(v) == 0L) {
    expect_error(rllm_gguf_model(path, device = "vulkan"), "found no device",
                 class = "fm_error_eunsupported")
  } else {
    expect_error(rllm_gguf_model(path, device = paste0("vulkan", nrow(v))),
                 sprintf("Vulkan device %d does not exist", nrow(v)), class = "fm_error_earg")
  }
  for (d in list("gpu", "vulkan-1", "vulkan 0", NA_character_, 1, c("cpu", "vulkan"), NULL)) {
    expect_error(rllm_gguf_model(path, device = d), "device must be", class = "fm_error_earg")
  }
  rt <- scratch_runtime()
  expect_error(rllm_gguf_model(path, runtime = rt, device = "vulkan"), "runtime must be NULL",
               class = "fm_error_earg")
  m <- rllm_gguf_model(path, threads = 1, device = "CPU")
  expect_identical(m$info$device, "CPU")
  expect_output(print(m), "evaluates on CPU")
})

test_that("on the device, logits agree with the CPU's and with llama.cpp's", {
  skip_if_not(on_device(), "RLLM_TEST_DEVICE is cpu (make test-vulkan sets vulkan)")
  ids <- c(1L, 403L, 407L, 261L, 378L, 3L + (seq_len(95L) * 7919L) %% 509L) # 100 tokens
  rows <- list()
  for (f in device_variants) {
    path <- gguf_fixture(f)
    m <- test_model(path, threads = 1)
    cpu <- rllm_gguf_model(path, threads = 1)
    expect_true(grepl("^Vulkan[0-9]+$", m$info$device), label = f)
    expect_false(m$info$fused_gemm)
    expect_identical(m$info$repacked_bytes, 0)
    ours <- log_softmax(rllm_logits(m, ids, all = TRUE))
    ref <- log_softmax(rllm_logits(cpu, ids, all = TRUE))
    # The same operators with other kernels: another order of F32 sums and
    # GGML's activation rounding, which logit_tolerance() bounds at the
    # output product (helper-oracle.R), as between CPU paths.
    tol <- logit_tolerance(cpu, path, ids)
    d_cpu <- apply(abs(ours - ref), 2, max)
    expect_true(all(d_cpu <= tol), label = paste(f, "device vs CPU"))
    # whole prefix vs token by token through a device cache: one column
    # and five take different device kernels (mat-vec variants per column
    # count), which round activations differently, so the bound is that of
    # two engines (logit_tolerance), not the CPU's 1e-4 (measured on
    # lavapipe: 0.0035 to 0.0051 nats).
    kv <- rllm_cache(m, 16)
    expect_match(capture.output(print(kv)), "device Vulkan", fixed = TRUE)
    step <- vapply(ids[1:5], function(t) rllm_logits(m, t, cache = kv)[, 1], numeric(512))
    whole <- rllm_logits(m, ids[1:5], all = TRUE)
    expect_true(all(apply(abs(log_softmax(step) - log_softmax(whole)), 2, max) <= tol[1:5]),
                label = paste(f, "token by token"))
    d_ref <- NA_real_
    if (is.null(oracle_unavailable())) {
      o <- llama_oracle("logits", path, tokens = ids, all = TRUE, threads = 1)$logits
      d_ref <- max(vapply(seq_along(ids), function(j) {
        ok <- is.finite(o[, j])
        max(abs(ours[ok, j] - o[ok, j])) - tol[j]
      }, 0))
      expect_lte(d_ref, 0, label = paste(f, "device vs llama.cpp: max |difference| - tolerance"))
      d_ref <- max(vapply(seq_along(ids), function(j) {
        ok <- is.finite(o[, j])
        max(abs(ours[ok, j] - o[ok, j]))
      }, 0))
    }
    rows[[f]] <- sprintf("%-34s device-CPU %.3g  device-llama.cpp %.3g  tolerance %.3g..%.3g", f,
                         max(d_cpu), d_ref, min(tol), max(tol))
  }
  message("max |log-softmax difference| over 100 positions on ", test_device(), ":\n",
          paste(unlist(rows), collapse = "\n"))
  m <- test_model(gguf_fixture("stories260K.gguf"))
  rt <- scratch_runtime()
  expect_error(rllm_cache(m, 16, runtime = rt), "live in the device's memory",
               class = "fm_error_earg")
  # embeddings (a transient F32 cache on the device)
  cpu <- rllm_gguf_model(gguf_fixture("stories260K.gguf"), threads = 1)
  e <- rllm_embed(m, ids[1:20], pooling = "mean")
  expect_lt(max(abs(e - rllm_embed(cpu, ids[1:20], pooling = "mean"))), 1e-3)
})
