# Blocks shared by the shipped programs (programs_*.R): hyperparameters of
# the decoders, their attention and feed-forward branches. Each is an R
# function that appends nodes to the program being built; a program stays
# data, these only spare writing the same nodes twice.

# The hyperparameters every decoder reads (GGUF keys as llama.cpp reads
# them; per-layer head counts may be arrays, as LFM2's are).
.rllm_decoder_hparams <- function(p) {
  rllm_hparam(p, "n_embd", "{arch}.embedding_length", valid = "n_embd >= 1")
  rllm_hparam(p, "n_layer", "{arch}.block_count", valid = "n_layer >= 1 & n_layer <= 4096")
  rllm_hparam(p, "n_head", "{arch}.attention.head_count", per_layer = TRUE, valid = "n_head >= 0")
  rllm_hparam(p, "n_head_kv", "{arch}.attention.head_count_kv", default = "n_head", per_layer = TRUE,
              valid = "n_head_kv >= 0 & n_head_kv <= n_head")
  rllm_hparam(p, "head_dim", "{arch}.attention.key_length", default = "n_embd %/% max(n_head)",
              valid = "head_dim >= 1")
  rllm_hparam(p, "n_rot", "{arch}.rope.dimension_count", default = "head_dim",
              valid = "n_rot >= 0 & n_rot <= head_dim & n_rot %% 2 == 0")
  rllm_hparam(p, "rope_base", "{arch}.rope.freq_base", default = 10000, valid = "rope_base > 0")
  rllm_hparam(p, "eps", "{arch}.attention.layer_norm_rms_epsilon", default = 1e-5, valid = "eps >= 0 & eps < 1")
}

# The hyperparameters of a mixture of experts (none: n_expert 0).
.rllm_moe_hparams <- function(p, required = FALSE) {
  rllm_hparam(p, "n_expert", "{arch}.expert_count", default = if (!required) 0, valid = "n_expert >= 0")
  rllm_hparam(p, "n_expert_used", "{arch}.expert_used_count", default = if (!required) 0,
              valid = "n_expert_used >= 0 & n_expert_used <= n_expert")
  rllm_hparam(p, "n_ff_exp", "{arch}.expert_feed_forward_length", default = if (!required) 0)
}

# A layer's tensor blk.{i}.<t>.
.rllm_blk <- function(p, t, shape, ...) rllm_param(p, paste0("blk.{i}.", t), shape, ...)

# RMSNorm of x times the weight `t` (GGML's rms_norm then mul).
.rllm_rms <- function(p, x, t, shape = "n_embd") op_rms_norm(x, "eps") * .rllm_blk(p, t, shape, types = "f32")

# Self-attention of layer i on normed x: Q/K/V (biases optional or
# required), per-head
# Q/K RMSNorm when qk_norm, rotary positions (base the expression
# rope_base), grouped-query attention (mask and window as op_attention's),
# output projection.
.rllm_attention_block <- function(p, x, pos, rope_mode, qk_norm, rope_base = "rope_base",
                                  mask = "causal", window = 0, bias = c("optional", "required")) {
  optional <- match.arg(bias) == "optional"
  opt <- function(t, shape) .rllm_blk(p, t, shape, types = "f32", optional = optional)
  head_norm <- function(x, t) {
    if (qk_norm) op_rms_norm(x, "eps", group = "head_dim") * .rllm_blk(p, t, "head_dim", types = "f32")
    else x
  }
  q <- x |> op_matmul(.rllm_blk(p, "attn_q.weight", c("n_embd", "n_head[i] * head_dim"))) |>
    op_add(opt("attn_q.bias", "n_head[i] * head_dim")) |> head_norm("attn_q_norm.weight") |>
    op_rope(pos, "n_head[i]", "n_rot", rope_base, rope_mode)
  k <- x |> op_matmul(.rllm_blk(p, "attn_k.weight", c("n_embd", "n_head_kv[i] * head_dim"))) |>
    op_add(opt("attn_k.bias", "n_head_kv[i] * head_dim")) |> head_norm("attn_k_norm.weight") |>
    op_rope(pos, "n_head_kv[i]", "n_rot", rope_base, rope_mode)
  v <- x |> op_matmul(.rllm_blk(p, "attn_v.weight", c("n_embd", "n_head_kv[i] * head_dim"))) |>
    op_add(opt("attn_v.bias", "n_head_kv[i] * head_dim"))
  op_attention(q, k, v, pos, "n_head[i]", "n_head_kv[i]", "1 / sqrt(head_dim)", mask, window) |>
    op_matmul(.rllm_blk(p, "attn_output.weight", c("n_head[i] * head_dim", "n_embd")))
}

# Gated feed-forward of layer i on normed x: SwiGLU, or GEGLU (gated).
.rllm_ffn_block <- function(p, x, gated = op_swiglu) {
  gated(op_matmul(x, .rllm_blk(p, "ffn_gate.weight", c("n_embd", "n_ff"))),
        op_matmul(x, .rllm_blk(p, "ffn_up.weight", c("n_embd", "n_ff")))) |>
    op_matmul(.rllm_blk(p, "ffn_down.weight", c("n_ff", "n_embd")))
}

# Mixture-of-experts feed-forward of layer i on normed x (.rllm_moe_hparams):
# a router (gating: an expression, 1 softmax, 2 sigmoid), the
# n_expert_used most probable SwiGLU experts (with the selection bias
# exp_probs_b when bias), their weights renormalized.
.rllm_moe_block <- function(p, x, gating = 1, bias = FALSE) {
  op_moe(x, .rllm_blk(p, "ffn_gate_inp.weight", c("n_embd", "n_expert")),
         .rllm_blk(p, "ffn_gate_exps.weight", c("n_embd", "n_ff_exp", "n_expert")),
         .rllm_blk(p, "ffn_up_exps.weight", c("n_embd", "n_ff_exp", "n_expert")),
         .rllm_blk(p, "ffn_down_exps.weight", c("n_ff_exp", "n_embd", "n_expert")), "n_expert_used",
         gating = gating, bias = if (bias) .rllm_blk(p, "exp_probs_b.bias", "n_expert", types = "f32"))
}

# Final norm (weight `norm`) and the output matrix (tied to the embedding
# when absent): the "logits" output.
.rllm_logits_head <- function(p, h, norm = "output_norm.weight") {
  h <- op_rms_norm(h, "eps") * rllm_param(p, norm, "n_embd", types = "f32")
  rllm_output(p, "logits", op_matmul(h, rllm_param(p, "output.weight", c("n_embd", "n_vocab"),
                                                   alias = "token_embd.weight")))
}
