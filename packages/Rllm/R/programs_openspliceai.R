# OpenSpliceAI as a program: a SpliceAI-style residual network of dilated
# 1-D convolutions over one-hot DNA (channels A, C, G, T). x = conv1x1(4 ->
# 32); skip = conv1x1(x); per group g of 4 residual units (kernel w_g,
# dilation d_g) x = x + conv(w, d)(act(BN2(conv(w, d)(act(BN1(x)))))), and
# after the group skip = skip + conv1x1(x); crop flank / 2 positions at
# both ends of skip, conv1x1(32 -> 3), softmax over the 3 channels
# (neither, acceptor, donor). act is LeakyReLU(0.1); batch normalization in
# inference mode (eps 1e-5). Source: Chao et al. 2025 (OpenSpliceAI,
# bioRxiv 10.1101/2025.03.20.644351), Jaganathan et al. 2019 (SpliceAI,
# Cell 176:535); the layer facts of the fixtures' README
# (models/openspliceai).

.rllm_program_openspliceai <- function() {
  rllm_program("openspliceai", function(p) {
    rllm_hparam(p, "flank", "openspliceai.flank")
    rllm_hparam(p, "kernel", "openspliceai.group_kernel")
    rllm_hparam(p, "dilation", "openspliceai.group_dilation")
    x <- rllm_input(p, "sequence", "sequence", shape = c(4, "n"))
    # shape: [k, in, out] (PyTorch's [out, in, k] reversed)
    conv <- function(x, name, shape = c(1, 32, 32), dilation = 1) {
      op_conv1d(x, rllm_param(p, paste0(name, ".weight"), shape, types = "f32"),
                rllm_param(p, paste0(name, ".bias"), shape[3L], types = "f32"), dilation)
    }
    bn <- function(x, name) {
      pr <- function(t) rllm_param(p, paste0(name, ".", t), "32", types = "f32")
      op_batchnorm(x, pr("running_mean"), pr("running_var"), pr("weight"), pr("bias"))
    }
    x <- conv(x, "initial_conv", c(1, 4, 32))
    skip <- conv(x, "initial_skip.conv")
    s <- rllm_loop(p, "length(kernel)", "g", list(x = x, skip = skip), function(s, g) {
      x <- rllm_loop(p, 4, "u", s$x, function(x, u) {
        unit <- "residual_units.{5 * g + u}"
        h <- x |> bn(paste0(unit, ".batchnorm1")) |> op_leaky_relu(0.1) |>
          conv(paste0(unit, ".conv1"), c("kernel[g]", 32, 32), "dilation[g]") |>
          bn(paste0(unit, ".batchnorm2")) |> op_leaky_relu(0.1) |>
          conv(paste0(unit, ".conv2"), c("kernel[g]", 32, 32), "dilation[g]")
        x + h
      })
      list(x = x, skip = s$skip + conv(x, "residual_units.{5 * g + 4}.conv"))
    })
    y <- s$skip |> op_crop("flank %/% 2", "flank %/% 2") |> conv("final_conv", c(1, 32, 3)) |> op_softmax()
    rllm_output(p, "probabilities", y)
  })
}
