# LFM2 as a program: layers whose <arch>.attention.head_count_kv[i] is 0
# are gated short convolutions, the others attention (per-head Q/K
# RMSNorm, NEOX); every layer x + block(RMSNorm(x)), then x +
# SwiGLU(RMSNorm(x)); the final norm is token_embd_norm.weight.
# Convolution block: [B; C; X] = in_proj x, y = C * conv(B * X) with conv
# causal and depthwise over time (kernel shortconv.conv [L, n_embd]; its
# last L - 1 inputs are the layer's state), out = out_proj y. Source:
# Liquid AI's LFM2 technical report (2025); the GGUF keys and tensor names
# llama.cpp reads for "lfm2".

.rllm_program_lfm2 <- function() {
  rllm_program("lfm2", function(p) {
    .rllm_decoder_hparams(p)
    rllm_hparam(p, "l_conv", "{arch}.shortconv.l_cache")
    tokens <- rllm_input(p, "tokens", "token_ids")
    pos <- rllm_input(p, "positions", "positions")
    rllm_state(p, "conv", "conv_ring", c("l_conv - 1", "n_embd"))
    h <- op_get_rows(tokens, rllm_param(p, "token_embd.weight", c("n_embd", "n_vocab")))
    h <- rllm_loop(p, "n_layer", "i", h, function(h, i) {
      x <- .rllm_rms(p, h, "attn_norm.weight")
      b <- rllm_when(p, "n_head_kv[i] > 0", x,
                     function(x) .rllm_attention_block(p, x, pos, "neox", qk_norm = TRUE),
                     function(x) {
                       bcx <- op_matmul(x, .rllm_blk(p, "shortconv.in_proj.weight", c("n_embd", "3 * n_embd")))
                       bx <- op_rows(bcx, 0, "n_embd") * op_rows(bcx, "2 * n_embd", "n_embd")
                       y <- op_conv_causal(bx, .rllm_blk(p, "shortconv.conv.weight", c("l_conv", "n_embd"),
                                                         types = "f32"), state = "conv")
                       (op_rows(bcx, "n_embd", "n_embd") * y) |>
                         op_matmul(.rllm_blk(p, "shortconv.out_proj.weight", c("n_embd", "n_embd")))
                     })
      h <- h + b
      h + .rllm_ffn_block(p, .rllm_rms(p, h, "ffn_norm.weight"))
    })
    .rllm_logits_head(p, h, norm = "token_embd_norm.weight")
  })
}
