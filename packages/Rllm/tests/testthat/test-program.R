# Architecture programs: the language (freeze, round trips, errors) and the
# dense interpreter rllm_execute() against the C runtime and against direct
# R code.

llama <- function() rllm_freeze(Rllm:::.rllm_program_llama())

test_that("a frozen program is plain data: saveRDS and JSON round-trip it", {
  prog <- llama()
  expect_s3_class(prog, "rllm_frozen_program")
  expect_identical(prog$format, "rllm_program")
  expect_false(any(vapply(unlist(unclass(prog)), is.function, TRUE)))
  f <- tempfile(fileext = ".rds")
  on.exit(unlink(f))
  saveRDS(prog, f)
  expect_identical(readRDS(f), prog)
  skip_if_not_installed("jsonlite")
  expect_identical(rllm_program_from_json(rllm_program_json(prog)), prog)
})

test_that("the llama program: native lowering = rllm_execute (stories260K, F32 cache)", {
  path <- gguf_fixture("stories260K.gguf")
  ids <- c(1L, 403L, 407L, 261L, 378L, 10L, 300L)
  got <- rllm_execute(llama(), path, list(tokens = ids))$logits
  m <- test_model(path, threads = 1)
  want <- rllm_logits(m, ids, cache = rllm_cache(m, 64, type = "f32"), all = TRUE)
  expect_identical(dim(got), dim(want))
  # F32 weights and cache: the two differ in the order and precision of
  # sums (doubles here, F32 there: 64-172 terms, about 1e-6 relative)
  expect_lt(max(abs(got - want)), 1e-4)
})

test_that("the qwen2, qwen3, qwen3moe, lfm2 and lfm2moe programs: native lowering = rllm_execute (random-weight files)", {
  for (arch in c("qwen2", "qwen3", "qwen3moe", "lfm2", "lfm2moe")) {
    f <- tempfile(fileext = ".gguf")
    arch_gguf_write(arch, f)
    prog <- rllm_freeze(get(paste0(".rllm_program_", arch), asNamespace("Rllm"))())
    ids <- arch_gguf_tokens()
    got <- rllm_execute(prog, f, list(tokens = ids))$logits
    m <- test_model(f, threads = 1)
    want <- rllm_logits(m, ids, cache = rllm_cache(m, 64, type = "f32"), all = TRUE)
    expect_lt(max(abs(got - want)), 1e-4, label = paste(arch, "max |logit difference|"))
    unlink(f)
  }
})

test_that("the gemma-embedding program gives the C runtime's pooled embeddings", {
  for (dense in c(FALSE, TRUE)) {
    f <- tempfile(fileext = ".gguf")
    arch_gguf_write("gemma-embedding", f, dense = dense)
    ids <- arch_gguf_tokens()
    got <- rllm_execute(Rllm:::.rllm_program_gemma_embedding(), f, list(tokens = ids))$embedding
    want <- rllm_embed(test_model(f, threads = 1), ids, normalize = FALSE)
    expect_identical(dim(got), dim(want))
    # GGML's CPU GELU reads an F16 table (input and output rounded to F16:
    # 2^-11 relative each), the oracle computes it exactly: the embedding
    # moves by about 2^-10 of its size (measured 3.4e-4 of 1.3; with the
    # table emulated in R, 3e-5)
    expect_lt(max(abs(got - want)), 2^-10 * max(abs(want)) * 2, label = "max |embedding difference|")
    unlink(f)
  }
})

test_that("a Tiny Recursive Model (a shared module, z_H and z_L over three nested loops): rllm_execute = direct R iteration, native = rllm_execute", {
  # TRM (Jolicoeur-Martineau 2025): per supervision step, H cycles of
  # (L cycles of z_L = net(x + z_H + z_L)) then z_H = net(z_L + z_H), one
  # network `net` (a 2-layer MLP with RMSNorm) shared by both updates
  set.seed(7)
  d <- 6L
  w <- list(w1 = matrix(rnorm(d * 2 * d, sd = 0.4), 2 * d), w2 = matrix(rnorm(2 * d * d, sd = 0.4), d),
            emb = matrix(rnorm(10L * d), 10L), head = matrix(rnorm(3L * d), 3L))
  prog <- rllm_freeze(rllm_program("trm", function(p) {
    rllm_hparam(p, "n_sup", default = 2)
    rllm_hparam(p, "n_h", default = 3)
    rllm_hparam(p, "n_l", default = 2)
    net <- function(z) {
      op_rms_norm(z, 1e-6) |> op_matmul(rllm_param(p, "w1", c("d", "2 * d"))) |> op_silu() |>
        op_matmul(rllm_param(p, "w2", c("2 * d", "d")))
    }
    x <- op_get_rows(rllm_input(p, "tokens", "token_ids"), rllm_param(p, "emb", c("d", "n_vocab")))
    z <- rllm_loop(p, "n_sup", "s", list(zh = x, zl = x), function(z, s) {
      z <- rllm_loop(p, "n_h", "h", z, function(z, h) {
        zl <- rllm_loop(p, "n_l", "l", z$zl, function(zl, l) net(x + z$zh + zl))
        list(zh = net(zl + z$zh), zl = zl)
      })
      rllm_tap(p, "zh", z$zh)
      z
    })
    rllm_output(p, "y", op_matmul(z$zh, rllm_param(p, "head", c("d", 3))))
  }))
  ids <- c(3L, 1L, 4L)
  got <- rllm_execute(prog, w, list(tokens = ids), taps = TRUE)
  net <- function(z) {
    z <- sweep(z, 2L, sqrt(colMeans(z^2) + 1e-6), "/")
    h <- w$w1 %*% z
    w$w2 %*% (h / (1 + exp(-h)))
  }
  x <- t(w$emb[ids + 1L, ])
  zh <- zl <- x
  zhs <- list()
  for (s in 1:2) {
    for (h in 1:3) {
      for (l in 1:2) zl <- net(x + zh + zl)
      zh <- net(zl + zh)
    }
    zhs[[s]] <- zh
  }
  expect_equal(got$y, w$head %*% zh, tolerance = 1e-14)
  expect_equal(got$taps$zh, zhs, tolerance = 1e-14)
  # natively: the same weights in a GGUF (an R matrix ne1 x ne0 is GGML's
  # [ne0, ne1], rows contiguous), the loops unrolled at bind (18 uses of
  # the one network, its parameters bound once)
  f <- tempfile(fileext = ".gguf")
  on.exit(unlink(f))
  Rgguf::gguf_write(f, list(general.architecture = "trm"),
                    lapply(w, function(m) Rgguf::gguf_tensor_data(as.vector(t(m)), "F32", dim = rev(dim(m)))))
  m <- test_model(f, program = prog, threads = 1)
  nat <- rllm_run(m, ids, outputs = c("y", "zh.1", "zh.2"))
  # F32 sums of at most 2d = 12 terms per product, 36 products deep with an
  # RMSNorm at each: 1e-5 of the values' scale
  expect_lt(max(abs(nat$y - got$y)), 1e-5 * max(abs(got$y)))
  expect_lt(max(abs(nat$zh.1 - zhs[[1L]])), 1e-5 * max(abs(zhs[[1L]])))
  expect_lt(max(abs(nat$zh.2 - zhs[[2L]])), 1e-5 * max(abs(zhs[[2L]])))
})

test_that("per-layer choices are made from the metadata at run time", {
  w <- list(a = diag(2) * 2, b = diag(2) * 3)
  prog <- rllm_freeze(rllm_program("sched", function(p) {
    rllm_hparam(p, "kind", default = "c(1, 0, 1)")
    x <- rllm_input(p, "x", "sequence")
    y <- rllm_loop(p, "length(kind)", "i", x, function(h, i) {
      rllm_when(p, "kind[i] == 1", h, function(h) op_matmul(h, rllm_param(p, "a", c(2, 2))),
                function(h) op_matmul(h, rllm_param(p, "b", c(2, 2))))
    })
    rllm_output(p, "y", y)
  }))
  expect_equal(rllm_execute(prog, w, list(x = matrix(1, 2, 1)), hparams = list(kind = c(1, 0, 1)))$y,
               matrix(12, 2, 1))
})

test_that("programs refuse what they cannot mean, naming it", {
  expect_error(rllm_freeze(rllm_program("x", function(p) {
    x <- rllm_input(p, "x", "sequence")
    rllm_output(p, "y", op_scale(x, "system('true')"))
  })) |> rllm_execute(list(), list(x = matrix(1)), hparams = list()),
  "calls 'system'", class = "rllm_error_program")
  expect_error(rllm_freeze(rllm_program("x", function(p) {
    x <- rllm_input(p, "x", "sequence")
    rllm_output(p, "y", op_scale(x, "n_missing * 2"))
  })) |> rllm_execute(list(), list(x = matrix(1))), "reads 'n_missing'", class = "rllm_error_program")
  expect_error(rllm_freeze(rllm_program("x", function(p) {
    x <- rllm_input(p, "x", "sequence")
    rllm_output(p, "y", op_matmul(x, rllm_param(p, "blk.{j}.w", c(1, 1))))
  })), "names \\{j\\}, which is not a loop variable", class = "rllm_error_program")
  expect_error(rllm_freeze(rllm_program("x", function(p) {
    x <- rllm_input(p, "x", "sequence")
    rllm_output(p, "y", op_rms_norm(x, eps = 1e-5, bogus = 1))
  })), "unused argument", class = "error")
  expect_error(rllm_freeze(rllm_program("x", function(p) rllm_input(p, "x", "sequence"))),
               "declares no output", class = "rllm_error_program")
  prog <- rllm_freeze(rllm_program("x", function(p) {
    x <- rllm_input(p, "x", "sequence")
    rllm_output(p, "y", op_matmul(x, rllm_param(p, "w", c(1, 1))))
  }))
  expect_error(rllm_execute(prog, list(v = 1), list(x = matrix(1))),
               "node n2 \\(param\\): tensor 'w' is missing \\(parameter 'w'\\)", class = "rllm_error_program")
  expect_error(rllm_execute(prog, list(w = 1), list()), "input 'x' \\(sequence\\) was not given",
               class = "rllm_error_program")
})

test_that("rllm_validate passes the shipped programs on their files and names what is wrong", {
  for (arch in c("qwen2", "qwen3", "qwen3moe", "lfm2", "gemma-embedding")) {
    f <- tempfile(fileext = ".gguf")
    arch_gguf_write(arch, f, dense = arch == "gemma-embedding")
    prog <- get(paste0(".rllm_program_", sub("-", "_", arch)), asNamespace("Rllm"))()
    expect_s3_class(rllm_validate(prog, f), "rllm_frozen_program")
    unlink(f)
  }
  path <- gguf_fixture("stories260K.gguf")
  prog <- llama()
  expect_s3_class(rllm_validate(prog, path), "rllm_frozen_program")
  # a missing tensor, a shape that disagrees
  f <- tempfile(fileext = ".gguf")
  on.exit(unlink(f), add = TRUE)
  arch_gguf_write("qwen2", f, drop = "blk.1.ffn_up.weight")
  expect_error(rllm_validate(Rllm:::.rllm_program_qwen2(), f),
               "tensor 'blk.1.ffn_up.weight' is missing \\(parameter 'blk.\\{i\\}.ffn_up.weight'\\)",
               class = "fm_error_eformat")
  expect_error(rllm_validate(prog, path, hparams = list(n_embd = 32, head_dim = 8)),
               "tensor 'token_embd.weight' has shape \\[64, 512\\], but parameter 'token_embd.weight' declares dimension 1",
               class = "fm_error_eformat")
  # an unknown operator, a cycle, an attribute reading an unknown name
  bad <- prog
  bad$nodes[[4]]$op <- "frobnicate"
  expect_error(rllm_validate(bad), "'frobnicate' is not an operator", class = "rllm_error_program")
  bad <- prog
  bad$nodes[[4]]$args[1] <- bad$outputs$logits
  expect_error(rllm_validate(bad), "is not a node defined before it", class = "rllm_error_program")
  bad <- prog
  k <- which(vapply(bad$nodes, `[[`, "", "op") == "rms_norm")[1]
  bad$nodes[[k]]$attrs$eps <- "epsilon"
  expect_error(rllm_validate(bad), "reads 'epsilon'", class = "rllm_error_program")
})
