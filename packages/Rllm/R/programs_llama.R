# The pre-norm decoders as programs: llama (RMSNorm, rotary positions of
# adjacent pairs, grouped-query attention, SwiGLU feed-forward, tied or
# untied output; Touvron et al. 2023), qwen2 (the same with Q/K/V biases
# and NEOX pairs; Qwen2 technical report, Yang et al. 2024), qwen3
# (per-head Q/K RMSNorm, NEOX, no biases; Qwen3 technical report 2025) and
# qwen3moe (qwen3 with a mixture of experts in every layer). Q/K/V biases
# are optional parameters (absent, add passes its input through) except in
# qwen2, which has them; a file that declares experts (expert_count > 0)
# runs them in every layer, as llama.cpp does (Mixtral is "llama"). GGUF
# keys and tensor names: ggml's docs/gguf.md as llama.cpp reads them.

.rllm_program_llama <- function(name = "llama", rope_mode = "normal", qk_norm = FALSE, moe = FALSE,
                                bias = "optional") {
  rllm_program(name, function(p) {
    .rllm_decoder_hparams(p)
    .rllm_moe_hparams(p, required = moe)
    tokens <- rllm_input(p, "tokens", "token_ids")
    pos <- rllm_input(p, "positions", "positions")
    h <- op_get_rows(tokens, rllm_param(p, "token_embd.weight", c("n_embd", "n_vocab")))
    h <- rllm_loop(p, "n_layer", "i", h, function(h, i) {
      h <- h + .rllm_attention_block(p, .rllm_rms(p, h, "attn_norm.weight"), pos, rope_mode, qk_norm,
                                     bias = bias)
      x <- .rllm_rms(p, h, "ffn_norm.weight")
      # a file that declares experts has them (Mixtral is "llama")
      h + rllm_when(p, "n_expert > 0", x, function(x) .rllm_moe_block(p, x), function(x) .rllm_ffn_block(p, x))
    })
    .rllm_logits_head(p, h)
  })
}

.rllm_program_qwen2 <- function() .rllm_program_llama("qwen2", rope_mode = "neox", bias = "required")
.rllm_program_qwen3 <- function() .rllm_program_llama("qwen3", rope_mode = "neox", qk_norm = TRUE)
.rllm_program_qwen3moe <- function() .rllm_program_llama("qwen3moe", rope_mode = "neox", qk_norm = TRUE, moe = TRUE)
