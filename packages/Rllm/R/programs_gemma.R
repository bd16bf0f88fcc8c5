# gemma-embedding (EmbeddingGemma) as a program: an encoder of Gemma 3
# blocks. Token embeddings scaled by sqrt(n_embd); per layer RMSNorm,
# attention (per-head Q/K RMSNorm, NEOX, bidirectional), RMSNorm of the
# branch (post_attention_norm) before the residual add, RMSNorm, GEGLU
# feed-forward, RMSNorm of the branch (post_ffw_norm) before the add. All
# layers but every sliding_window_pattern-th attend within a symmetric
# window (|query - key| <= sliding_window / 2) and rotate with
# rope.freq_base_swa. Final RMSNorm, pooling (<arch>.pooling_type, mean by
# default), and, when the file has the sentence-transformers head
# (<arch>.dense_2_feat_out > 0), dense_2 (+ optional bias) then dense_3.
# Source: Vera et al. 2025 (EmbeddingGemma), the Gemma 3 technical report
# (2025), the GGUF keys and tensor names llama.cpp reads for
# "gemma-embedding".

.rllm_program_gemma_embedding <- function() {
  rllm_program("gemma-embedding", function(p) {
    .rllm_decoder_hparams(p)
    rllm_hparam(p, "n_swa", "{arch}.attention.sliding_window")
    rllm_hparam(p, "swa_pattern", "{arch}.attention.sliding_window_pattern", default = 6)
    rllm_hparam(p, "rope_base_swa", "{arch}.rope.freq_base_swa", default = 10000)
    rllm_hparam(p, "pooling", "{arch}.pooling_type", default = 1)
    rllm_hparam(p, "dense_out", "{arch}.dense_2_feat_out", default = 0)
    tokens <- rllm_input(p, "tokens", "token_ids")
    pos <- rllm_input(p, "positions", "positions")
    h <- op_get_rows(tokens, rllm_param(p, "token_embd.weight", c("n_embd", "n_vocab"))) |>
      op_scale("sqrt(n_embd)")
    h <- rllm_loop(p, "n_layer", "i", h, function(h, i) {
      x <- .rllm_rms(p, h, "attn_norm.weight")
      a <- rllm_when(p, "swa_pattern == 0 | i %% swa_pattern < swa_pattern - 1", x,
                     function(x) .rllm_attention_block(p, x, pos, "neox", TRUE, "rope_base_swa", "swa_sym", "n_swa"),
                     function(x) .rllm_attention_block(p, x, pos, "neox", TRUE, "rope_base", "full"))
      h <- h + .rllm_rms(p, a, "post_attention_norm.weight")
      f <- .rllm_ffn_block(p, .rllm_rms(p, h, "ffn_norm.weight"), gated = op_geglu)
      h + .rllm_rms(p, f, "post_ffw_norm.weight")
    })
    h <- op_rms_norm(h, "eps") * rllm_param(p, "output_norm.weight", "n_embd", types = "f32")
    e <- rllm_when(p, "dense_out > 0", op_pool(h, "pooling"),
                   function(e) {
                     e |> op_matmul(rllm_param(p, "dense_2.weight", c("n_embd", "dense_out"))) |>
                       op_add(rllm_param(p, "dense_2.bias", "dense_out", types = "f32", optional = TRUE)) |>
                       op_matmul(rllm_param(p, "dense_3.weight", c("dense_out", "n_embd")))
                   },
                   function(e) e)
    rllm_output(p, "embedding", e)
  })
}
