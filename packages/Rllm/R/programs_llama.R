# The pre-norm decoders as programs: llama (RMSNorm, rotary positions of
# adjacent pairs, grouped-query attention, SwiGLU feed-forward, tied or
# untied output; Touvron et al. 2023), qwen2 (the same with Q/K/V biases
# and NEOX pairs; Qwen2 technical report, Yang et al. 2024), qwen3
# (per-head Q/K RMSNorm, NEOX, no biases; Qwen3 technical report 2025) and
# qwen3moe (qwen3 with a mixture of experts in every layer). Biases are
# optional parameters: absent, add passes its input through. GGUF keys and
# tensor names: ggml's docs/gguf.md as llama.cpp reads them.

.rllm_program_llama <- function(name = "llama", rope_mode = "normal", qk_norm = FALSE, moe = FALSE) {
  rllm_program(name, function(p) {
    .rllm_decoder_hparams(p)
    if (moe) {
      rllm_hparam(p, "n_expert", "{arch}.expert_count")
      rllm_hparam(p, "n_expert_used", "{arch}.expert_used_count")
      rllm_hparam(p, "n_ff_exp", "{arch}.expert_feed_forward_length")
    }
    tokens <- rllm_input(p, "tokens", "token_ids")
    pos <- rllm_input(p, "positions", "positions")
    h <- op_get_rows(tokens, rllm_param(p, "token_embd.weight", c("n_embd", "n_vocab")))
    h <- rllm_loop(p, "n_layer", "i", h, function(h, i) {
      h <- h + .rllm_attention_block(p, .rllm_rms(p, h, "attn_norm.weight"), pos, rope_mode, qk_norm)
      x <- .rllm_rms(p, h, "ffn_norm.weight")
      if (!moe) return(h + .rllm_ffn_block(p, x))
      h + op_moe(x, .rllm_blk(p, "ffn_gate_inp.weight", c("n_embd", "n_expert")),
                 .rllm_blk(p, "ffn_gate_exps.weight", c("n_embd", "n_ff_exp", "n_expert")),
                 .rllm_blk(p, "ffn_up_exps.weight", c("n_embd", "n_ff_exp", "n_expert")),
                 .rllm_blk(p, "ffn_down_exps.weight", c("n_ff_exp", "n_embd", "n_expert")), "n_expert_used")
    })
    .rllm_logits_head(p, h)
  })
}

.rllm_program_qwen2 <- function() .rllm_program_llama("qwen2", rope_mode = "neox")
.rllm_program_qwen3 <- function() .rllm_program_llama("qwen3", rope_mode = "neox", qk_norm = TRUE)
.rllm_program_qwen3moe <- function() .rllm_program_llama("qwen3moe", rope_mode = "neox", qk_norm = TRUE, moe = TRUE)
