# ESM-2 as a program: a pre-norm transformer encoder over the ESM alphabet.
# Token embeddings with inference-time token dropout (<mask> columns
# zeroed, all scaled by (1 - 0.15 x 0.8) / (1 - the mask fraction)); per
# layer LayerNorm, biased Q/K/V, rotary positions over the whole head
# (NEOX pairs, ESM's rotate_half), full attention whose maps are collected,
# biased output projection, residual; LayerNorm, fc1, exact GELU, fc2,
# residual. Final LayerNorm (emb_layer_norm_after). Outputs: "logits" (the
# LM head: dense, GELU, LayerNorm, the tied embedding, a bias),
# "attention" (every layer's maps, pair maps [key, query, layer x head],
# layer-major), "contacts" (ESM's contact head: <cls> and <eos> dropped,
# symmetrized, average product correction, a logistic regression over the
# layer x head channels); taps "repr" (each layer's output) and "embed"
# (the embedding after token dropout). Input "attention_mask" (1 at the
# sequence, 0 at padding; all 1 when not given), as ESM's padding mask: the
# token dropout counts and keeps the unpadded positions only, attention
# leaves out padded keys, the attention output is zero at padded rows and
# columns, and the contact head zeroes <eos> and padding before it drops
# the first and last positions (ESM's ContactPredictionHead), so that a
# sequence padded at the end (as ESM pads its batches) gives the unpadded
# one's values at its positions.
# Source: Lin et al. 2023 (Science 379, ESM-2 / ESMFold); Rao et al. 2021
# (ICLR, the contact head over attention maps); the GGUF names below are
# Rllm's (inst/arch/esm2_gguf.R), there being no llama.cpp convention.

.rllm_program_esm2 <- function() {
  rllm_program("esm2", function(p) {
    rllm_hparam(p, "n_embd", "{arch}.embedding_length", valid = "n_embd >= 1")
    rllm_hparam(p, "n_layer", "{arch}.block_count", valid = "n_layer >= 1 & n_layer <= 4096")
    rllm_hparam(p, "n_head", "{arch}.attention.head_count", valid = "n_head >= 1")
    rllm_hparam(p, "head_dim", default = "n_embd %/% n_head",
                valid = "head_dim >= 2 & head_dim %% 2 == 0 & head_dim * n_head == n_embd")
    rllm_hparam(p, "n_ff", "{arch}.feed_forward_length", valid = "n_ff >= 1")
    rllm_hparam(p, "n_vocab", "{arch}.vocab_size", default = 33, valid = "n_vocab >= 33")
    rllm_hparam(p, "eps", "{arch}.attention.layer_norm_epsilon", default = 1e-5, valid = "eps >= 0 & eps < 1")
    rllm_hparam(p, "rope_base", "{arch}.rope.freq_base", default = 10000, valid = "rope_base > 0")
    rllm_hparam(p, "mask_id", "tokenizer.ggml.mask_token_id", default = 32, valid = "mask_id >= 0")
    rllm_hparam(p, "eos_id", "tokenizer.ggml.eos_token_id", default = 2, valid = "eos_id >= 0")
    tokens <- rllm_input(p, "tokens", "token_ids")
    pos <- rllm_input(p, "positions", "positions")
    am <- rllm_input(p, "attention_mask", "mask")
    vec <- function(t, n = "n_embd") rllm_param(p, t, n, types = "f32")
    ln <- function(x, t) op_layer_norm(x, "eps") * vec(paste0(t, ".weight")) + vec(paste0(t, ".bias"))
    linear <- function(x, t, n_in, n_out) {
      op_matmul(x, rllm_param(p, paste0(t, ".weight"), c(n_in, n_out))) + vec(paste0(t, ".bias"), n_out)
    }
    h <- op_get_rows(tokens, rllm_param(p, "token_embd.weight", c("n_embd", "n_vocab"), types = "rows")) |>
      op_token_dropout(tokens, "mask_id", 0.15 * 0.8, valid = am)
    rllm_tap(p, "embed", h)
    r <- rllm_loop(p, "n_layer", "i", list(h = h), collect = "maps", function(s, i) {
      x <- ln(s$h, "blk.{i}.attn_norm")
      qk <- function(t) op_rope(linear(x, t, "n_embd", "n_embd"), pos, "n_head", "head_dim", "rope_base", "neox")
      maps <- op_attention_probs(qk("blk.{i}.attn_q"), qk("blk.{i}.attn_k"), pos, "n_head", "n_head",
                                 "1 / sqrt(head_dim)", "full", key_mask = am)
      a <- op_attend(maps, linear(x, "blk.{i}.attn_v", "n_embd", "n_embd"), "n_head")
      h <- s$h + linear(a, "blk.{i}.attn_output", "n_embd", "n_embd")
      f <- linear(ln(h, "blk.{i}.ffn_norm"), "blk.{i}.ffn_up", "n_embd", "n_ff") |> op_gelu_erf()
      h <- h + linear(f, "blk.{i}.ffn_down", "n_ff", "n_embd")
      rllm_tap(p, "repr", h)
      list(h = h, maps = maps)
    })
    h <- ln(r$h, "output_norm")
    rllm_output(p, "representations", h)
    l <- linear(h, "lm_head.dense", "n_embd", "n_embd") |> op_gelu_erf() |> ln("lm_head.norm") |>
      op_matmul(rllm_param(p, "token_embd.weight", c("n_embd", "n_vocab"), types = "rows"))
    rllm_output(p, "logits", l + vec("output.bias", "n_vocab"))
    rllm_output(p, "attention", op_pair_mask(r$maps, am))
    contacts <- r$maps |> op_pair_mask(am * op_ne_id(tokens, "eos_id")) |> op_pair_crop(1, 1) |> op_symmetrize() |> op_apc() |>
      op_head_mix(rllm_param(p, "contact.weight", "n_layer * n_head", types = "f32"), vec("contact.bias", 1)) |>
      op_sigmoid()
    rllm_output(p, "contacts", contacts)
  })
}
