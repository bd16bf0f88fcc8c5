# LFM2 as a program: layers whose <arch>.attention.head_count_kv[i] is 0
# are gated short convolutions, the others attention (per-head Q/K
# RMSNorm, NEOX); every layer x + block(RMSNorm(x)), then x +
# SwiGLU(RMSNorm(x)); the final norm is token_embd_norm.weight.
# Convolution block: [B; C; X] = in_proj x, y = C * conv(B * X) with conv
# causal and depthwise over time (kernel shortconv.conv [L, n_embd]; its
# last L - 1 inputs are the layer's state), out = out_proj y. Source:
# Liquid AI's LFM2 technical report (2025); the GGUF keys and tensor names
# llama.cpp reads for "lfm2".
# lfm2moe (LFM2-8B-A1B, LFM2.5): the same schedule, the first
# <arch>.leading_dense_block_count layers with that feed-forward and the
# others a mixture of experts: a sigmoid router (expert_gating_func 2),
# the selection bias exp_probs_b added for the choice only, the
# expert_used_count chosen weights renormalized to sum 1 (Liquid AI's
# LFM2-8B-A1B model card, 2025; the keys and tensor names llama.cpp reads
# for "lfm2moe").

.rllm_program_lfm2 <- function(name = "lfm2", moe = FALSE) {
  rllm_program(name, function(p) {
    .rllm_decoder_hparams(p)
    rllm_hparam(p, "l_conv", "{arch}.shortconv.l_cache", valid = "l_conv >= 2 & l_conv <= 64")
    if (moe) {
      .rllm_moe_hparams(p, required = TRUE)
      rllm_hparam(p, "n_dense", "{arch}.leading_dense_block_count", default = 0, valid = "n_dense >= 0")
      rllm_hparam(p, "gating", "{arch}.expert_gating_func", valid = "gating == 1 | gating == 2")
    }
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
      x <- .rllm_rms(p, h, "ffn_norm.weight")
      h + if (!moe) .rllm_ffn_block(p, x)
          else rllm_when(p, "i < n_dense", x, function(x) .rllm_ffn_block(p, x),
                         function(x) .rllm_moe_block(p, x, gating = "gating", bias = TRUE))
    })
    .rllm_logits_head(p, h, norm = "token_embd_norm.weight")
  })
}

.rllm_program_lfm2moe <- function() .rllm_program_lfm2("lfm2moe", moe = TRUE)
