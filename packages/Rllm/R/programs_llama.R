# The pre-norm decoders as programs: llama (RMSNorm, rotary positions of
# adjacent pairs, grouped-query attention, SwiGLU feed-forward, tied or
# untied output; Touvron et al. 2023), qwen2 (the same with Q/K/V biases
# and NEOX pairs; Qwen2 technical report, Yang et al. 2024) and qwen3
# (per-head Q/K RMSNorm, NEOX, no biases; Qwen3 technical report 2025).
# Biases and the Q/K norms are optional parameters: absent, add and mul
# pass their input through. GGUF keys and tensor names: ggml's
# docs/gguf.md as llama.cpp reads them.

.rllm_program_llama <- function(name = "llama", rope_mode = "normal", qk_norm = FALSE, moe = FALSE) {
  rllm_program(name, function(p) {
    rllm_hparam(p, "n_embd", "{arch}.embedding_length")
    rllm_hparam(p, "n_layer", "{arch}.block_count")
    rllm_hparam(p, "n_head", "{arch}.attention.head_count", per_layer = TRUE)
    rllm_hparam(p, "n_head_kv", "{arch}.attention.head_count_kv", default = "n_head", per_layer = TRUE)
    rllm_hparam(p, "head_dim", "{arch}.attention.key_length", default = "n_embd %/% n_head[0]")
    rllm_hparam(p, "n_rot", "{arch}.rope.dimension_count", default = "head_dim")
    rllm_hparam(p, "rope_base", "{arch}.rope.freq_base", default = 10000)
    rllm_hparam(p, "eps", "{arch}.attention.layer_norm_rms_epsilon", default = 1e-5)
    if (moe) {
      rllm_hparam(p, "n_expert", "{arch}.expert_count")
      rllm_hparam(p, "n_expert_used", "{arch}.expert_used_count")
      rllm_hparam(p, "n_ff_exp", "{arch}.expert_feed_forward_length")
    }
    tokens <- rllm_input(p, "tokens", "token_ids")
    pos <- rllm_input(p, "positions", "positions")
    h <- op_get_rows(tokens, rllm_param(p, "token_embd.weight", c("n_embd", "n_vocab")))
    h <- rllm_loop(p, "n_layer", "i", h, function(h, i) {
      w <- function(t, shape) rllm_param(p, paste0("blk.{i}.", t), shape)
      x <- op_rms_norm(h, "eps") * w("attn_norm.weight", "n_embd")
      opt <- function(t, shape) rllm_param(p, paste0("blk.{i}.", t), shape, types = "f32", optional = TRUE)
      # qwen3's per-head norms of Q and K, before the rotation
      head_norm <- function(x, t) {
        if (qk_norm) op_rms_norm(x, "eps", group = "head_dim") * w(t, "head_dim") else x
      }
      q <- x |> op_matmul(w("attn_q.weight", c("n_embd", "n_head[i] * head_dim"))) |>
        op_add(opt("attn_q.bias", "n_head[i] * head_dim")) |> head_norm("attn_q_norm.weight") |>
        op_rope(pos, "n_head[i]", "n_rot", "rope_base", rope_mode)
      k <- x |> op_matmul(w("attn_k.weight", c("n_embd", "n_head_kv[i] * head_dim"))) |>
        op_add(opt("attn_k.bias", "n_head_kv[i] * head_dim")) |> head_norm("attn_k_norm.weight") |>
        op_rope(pos, "n_head_kv[i]", "n_rot", "rope_base", rope_mode)
      v <- x |> op_matmul(w("attn_v.weight", c("n_embd", "n_head_kv[i] * head_dim"))) |>
        op_add(opt("attn_v.bias", "n_head_kv[i] * head_dim"))
      a <- op_attention(q, k, v, pos, "n_head[i]", "n_head_kv[i]", "1 / sqrt(head_dim)")
      h <- h + op_matmul(a, w("attn_output.weight", c("n_head[i] * head_dim", "n_embd")))
      x <- op_rms_norm(h, "eps") * w("ffn_norm.weight", "n_embd")
      if (moe) {
        return(h + op_moe(x, w("ffn_gate_inp.weight", c("n_embd", "n_expert")),
                          w("ffn_gate_exps.weight", c("n_embd", "n_ff_exp", "n_expert")),
                          w("ffn_up_exps.weight", c("n_embd", "n_ff_exp", "n_expert")),
                          w("ffn_down_exps.weight", c("n_ff_exp", "n_embd", "n_expert")), "n_expert_used"))
      }
      f <- op_swiglu(op_matmul(x, w("ffn_gate.weight", c("n_embd", "n_ff"))),
                     op_matmul(x, w("ffn_up.weight", c("n_embd", "n_ff"))))
      h + op_matmul(f, w("ffn_down.weight", c("n_ff", "n_embd")))
    })
    h <- op_rms_norm(h, "eps") * rllm_param(p, "output_norm.weight", "n_embd", types = "f32")
    logits <- op_matmul(h, rllm_param(p, "output.weight", c("n_embd", "n_vocab"), alias = "token_embd.weight"))
    rllm_output(p, "logits", logits)
  })
}

.rllm_program_qwen2 <- function() .rllm_program_llama("qwen2", rope_mode = "neox")
.rllm_program_qwen3 <- function() .rllm_program_llama("qwen3", rope_mode = "neox", qk_norm = TRUE)
.rllm_program_qwen3moe <- function() .rllm_program_llama("qwen3moe", rope_mode = "neox", qk_norm = TRUE, moe = TRUE)
