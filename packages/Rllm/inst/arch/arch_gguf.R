# Small random-weight GGUF models of several architectures, written with
# GGML's own GGUF writer (Rgguf::gguf_write), for Rllm's test-arch.R
# (through helper-arch.R) and the project's tools/gen-arch-ggufs.R, which
# both source this installed file. GENERATED DATA: the weights are pseudo-random
# (R's Mersenne-Twister from a fixed seed), not a trained model; the vocab
# is a made-up SentencePiece-style list (3 specials, 256 byte tokens, 253
# pieces). Files go wherever the caller says (tempdir() in tests, build/ from
# the tool), never into the repository.
#
# Tensor names, shapes and metadata keys are the ones llama.cpp expects for
# each architecture (its llama-arch / model loading code, read not copied):
#   qwen2             pre-norm decoder, Q/K/V biases, NEOX RoPE, untied output
#   qwen3             per-head Q/K RMSNorm, head_dim (key_length) != n_embd /
#                     n_head, NEOX RoPE, tied output
#   qwen3moe          qwen3 attention + mixture of experts (softmax router,
#                     top-k renormalized), untied output
#   gemma-embedding   EmbeddingGemma: non-causal, symmetric sliding window on
#                     5 of every 6 layers, Q/K norms, post-attention and
#                     post-FFN norms, GELU-gated FFN, embeddings scaled by
#                     sqrt(n_embd), mean pooling (pooling_type 1)
#   lfm2              short-convolution hybrid: layers with head_count_kv 0
#                     are gated depthwise causal convolutions (shortconv), the
#                     others attention with Q/K norms; final norm named
#                     token_embd_norm; tied output
#   lfm2moe           lfm2's schedule; the first leading_dense_block_count
#                     layers with a dense feed-forward, the others a mixture
#                     of experts with a sigmoid router (expert_gating_func 2)
#                     and a selection bias (exp_probs_b.bias)

# Seeds R's generator for the weights of a writer (the caller, frame) and
# gives the caller's generator state back when that writer returns.
arch_gguf_seed <- function(seed, frame = parent.frame()) {
  restore <- if (exists(".Random.seed", envir = globalenv())) {
    bquote(assign(".Random.seed", .(get(".Random.seed", envir = globalenv())), envir = globalenv()))
  } else {
    quote(rm(".Random.seed", envir = globalenv()))
  }
  do.call(on.exit, list(restore, add = TRUE), envir = frame)
  set.seed(seed, kind = "Mersenne-Twister", normal.kind = "Inversion")
}

# Architectures this helper writes.
arch_gguf_names <- c("qwen2", "qwen3", "qwen3moe", "gemma-embedding", "lfm2", "lfm2moe")

# The made-up vocab: list(tokens, scores, types) (types: 1 normal, 2 unknown,
# 3 control, 6 byte, as llama.cpp numbers them).
arch_gguf_vocab <- function(n_vocab = 512L) {
  specials <- c("<unk>", "<s>", "</s>")
  bytes <- sprintf("<0x%02X>", 0:255)
  pieces <- c("\u2581", letters, LETTERS, as.character(0:9),
              strsplit(".,;:!?'\"()-", "")[[1]],
              paste0("\u2581", letters), paste0("\u2581", LETTERS),
              c("th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "ti", "es",
                "or", "te", "of", "ed", "is", "it", "al", "ar", "st", "to", "nt", "ng"),
              paste0("\u2581", c("the", "and", "was", "to", "a", "he", "she", "it", "of",
                                 "in", "they", "said", "Once", "upon", "time", "there",
                                 "little", "day", "with", "her", "his", "big", "happy")))
  pieces <- unique(pieces)
  n_pieces <- n_vocab - length(specials) - length(bytes)
  if (length(pieces) < n_pieces) {
    extra <- outer(letters, letters, paste0)
    pieces <- unique(c(pieces, paste0("\u2581", extra)))
  }
  pieces <- pieces[seq_len(n_pieces)]
  list(tokens = c(specials, bytes, pieces),
       scores = c(0, 0, 0, rep(0, 256), -seq_len(n_pieces) / 10),
       types = c(2L, 3L, 3L, rep(6L, 256), rep(1L, n_pieces)))
}

# Write one random-weight model of `arch` to `path`. Returns (invisibly) a
# list: path, arch, hparams (the values written), n_vocab.
# type: GGML type of the 2-D weight matrices ("F32" or "F16"); norms,
# biases and the convolution kernel stay F32.
# dense: gemma-embedding only, add the sentence-transformers head
# (dense_2.weight [n_embd, 96], dense_3.weight [96, n_embd] and their
# <arch>.dense_{2,3}_feat_{in,out} keys).
# drop: names of tensors to leave out (to make malformed files).
# hparams: a list replacing entries of the architecture's hyperparameters
# below (e.g. list(n_swa = 1000L)); the weights drawn stay the same as long
# as shapes do.
# edit: NULL or a function given the named list of tensors (after drop) that
# returns the list to write (e.g. NaN weights, to make degenerate logits).
# edit_md: NULL or the same for the metadata (named list of keys to values).
arch_gguf_write <- function(arch, path, seed = 1L, type = "F32", dense = FALSE,
                            drop = character(), hparams = list(), edit = NULL, edit_md = NULL) {
  arch <- match.arg(arch, arch_gguf_names)
  arch_gguf_seed(seed)

  u32 <- Rgguf::gguf_u32
  f32 <- Rgguf::gguf_f32
  voc <- arch_gguf_vocab(512L)
  n_vocab <- length(voc$tokens)
  n_embd <- 64L

  # weights: N(0, sd) with sd = gain / sqrt(fan_in) (fan_in = ne0), drawn
  # in GGML's memory order (ne0 fastest)
  ggml <- function(x, ne, t = type) Rgguf::gguf_tensor_data(x, t, dim = ne)
  mat <- function(ne0, ne1, gain = 1) ggml(rnorm(ne0 * ne1, sd = gain / sqrt(ne0)), c(ne0, ne1))
  vec <- function(n, mean = 1, sd = 0.1) rnorm(n, mean, sd)
  exps <- function(ne0, ne1, ne2) ggml(rnorm(ne0 * ne1 * ne2, sd = 1 / sqrt(ne0)), c(ne0, ne1, ne2))

  hp <- switch(arch,
    qwen2 = list(n_layer = 2L, n_head = 4L, n_head_kv = 2L, head_dim = 16L, n_ff = 128L,
                 rope_base = 1e6, eps = 1e-6),
    qwen3 = list(n_layer = 2L, n_head = 4L, n_head_kv = 2L, head_dim = 32L, n_ff = 128L,
                 rope_base = 1e6, eps = 1e-6),
    qwen3moe = list(n_layer = 2L, n_head = 4L, n_head_kv = 2L, head_dim = 16L, n_ff = 64L,
                    n_expert = 4L, n_expert_used = 2L, n_ff_exp = 32L, rope_base = 1e6,
                    eps = 1e-6),
    "gemma-embedding" = list(n_layer = 6L, n_head = 4L, n_head_kv = 2L, head_dim = 16L,
                             n_ff = 128L, rope_base = 1e6, rope_base_swa = 1e4,
                             n_swa = 4L, swa_pattern = 6L, pooling = 1L, eps = 1e-6),
    lfm2 = list(n_layer = 4L, n_head = 4L, n_head_kv = c(0L, 0L, 2L, 0L), head_dim = 16L,
                n_ff = 128L, l_cache = 3L, rope_base = 1e6, eps = 1e-5),
    lfm2moe = list(n_layer = 4L, n_head = 4L, n_head_kv = c(0L, 0L, 2L, 0L), head_dim = 16L,
                   n_ff = 128L, l_cache = 3L, n_dense = 1L, n_expert = 4L, n_expert_used = 2L,
                   n_ff_exp = 32L, gating = 2L, rope_base = 1e6, eps = 1e-5))
  hp <- utils::modifyList(hp, hparams)

  key <- function(k) paste0(arch, ".", k)
  md <- list(general.architecture = arch,
             general.name = paste0("random-", arch, " (generated test model, random weights)"),
             general.description = paste("Generated by Rllm's tests: pseudo-random weights",
                                         "(R Mersenne-Twister, seed", seed, "), not a trained model"))
  md[[key("context_length")]] <- u32(256)
  md[[key("embedding_length")]] <- u32(n_embd)
  md[[key("block_count")]] <- u32(hp$n_layer)
  md[[key("feed_forward_length")]] <- u32(hp$n_ff)
  md[[key("attention.head_count")]] <- u32(hp$n_head)
  md[[key("attention.head_count_kv")]] <- if (length(hp$n_head_kv) > 1L)
    Rgguf::gguf_i32(hp$n_head_kv, array = TRUE) else u32(hp$n_head_kv)
  if (hp$head_dim * hp$n_head != n_embd) {
    md[[key("attention.key_length")]] <- u32(hp$head_dim)
    md[[key("attention.value_length")]] <- u32(hp$head_dim)
  }
  md[[key("rope.freq_base")]] <- f32(hp$rope_base)
  md[[key("attention.layer_norm_rms_epsilon")]] <- f32(hp$eps)
  if (arch %in% c("qwen3moe", "lfm2moe")) {
    md[[key("expert_count")]] <- u32(hp$n_expert)
    md[[key("expert_used_count")]] <- u32(hp$n_expert_used)
    md[[key("expert_feed_forward_length")]] <- u32(hp$n_ff_exp)
  }
  if (arch == "lfm2moe") {
    md[[key("leading_dense_block_count")]] <- u32(hp$n_dense)
    md[[key("expert_gating_func")]] <- u32(hp$gating)
  }
  if (arch == "gemma-embedding") {
    md[[key("attention.sliding_window")]] <- u32(hp$n_swa)
    md[[key("attention.sliding_window_pattern")]] <- u32(hp$swa_pattern)
    md[[key("rope.freq_base_swa")]] <- f32(hp$rope_base_swa)
    md[[key("pooling_type")]] <- u32(hp$pooling)
  }
  if (arch %in% c("lfm2", "lfm2moe")) md[[key("shortconv.l_cache")]] <- u32(hp$l_cache)
  md$tokenizer.ggml.model <- "llama"
  md$tokenizer.ggml.tokens <- Rgguf::gguf_str(voc$tokens, array = TRUE)
  md$tokenizer.ggml.scores <- f32(voc$scores, array = TRUE)
  md$tokenizer.ggml.token_type <- Rgguf::gguf_i32(voc$types, array = TRUE)
  md$tokenizer.ggml.unknown_token_id <- u32(0)
  md$tokenizer.ggml.bos_token_id <- u32(1)
  md$tokenizer.ggml.eos_token_id <- u32(2)
  md$tokenizer.ggml.add_bos_token <- TRUE
  md$tokenizer.ggml.add_eos_token <- FALSE

  # embeddings: tied outputs (qwen3, lfm2) read logits off token_embd, so
  # keep them near unit scale (a spread of a few nats, nothing underflows)
  emb_sd <- switch(arch, "gemma-embedding" = 0.15, qwen3 = , lfm2 = , lfm2moe = 0.3, 1)
  tn <- list(token_embd.weight = ggml(rnorm(n_embd * n_vocab, sd = emb_sd), c(n_embd, n_vocab)))
  hd <- hp$head_dim
  for (il in seq_len(hp$n_layer) - 1L) {
    b <- function(name) sprintf("blk.%d.%s", il, name)
    kv <- if (length(hp$n_head_kv) > 1L) hp$n_head_kv[il + 1L] else hp$n_head_kv
    tn[[b("attn_norm.weight")]] <- vec(n_embd)
    if (arch %in% c("lfm2", "lfm2moe") && kv == 0L) {
      tn[[b("shortconv.conv.weight")]] <- ggml(rnorm(hp$l_cache * n_embd, sd = 0.5),
                                               c(hp$l_cache, n_embd), "F32")
      tn[[b("shortconv.in_proj.weight")]] <- mat(n_embd, 3L * n_embd)
      tn[[b("shortconv.out_proj.weight")]] <- mat(n_embd, n_embd)
    } else {
      tn[[b("attn_q.weight")]] <- mat(n_embd, hp$n_head * hd)
      tn[[b("attn_k.weight")]] <- mat(n_embd, kv * hd)
      tn[[b("attn_v.weight")]] <- mat(n_embd, kv * hd)
      if (arch == "qwen2") {
        tn[[b("attn_q.bias")]] <- rnorm(hp$n_head * hd, sd = 0.2)
        tn[[b("attn_k.bias")]] <- rnorm(kv * hd, sd = 0.2)
        tn[[b("attn_v.bias")]] <- rnorm(kv * hd, sd = 0.2)
      }
      if (arch != "qwen2") {
        tn[[b("attn_q_norm.weight")]] <- vec(hd)
        tn[[b("attn_k_norm.weight")]] <- vec(hd)
      }
      tn[[b("attn_output.weight")]] <- mat(hp$n_head * hd, n_embd)
    }
    if (arch == "gemma-embedding") tn[[b("post_attention_norm.weight")]] <- vec(n_embd)
    tn[[b("ffn_norm.weight")]] <- vec(n_embd)
    if (arch == "qwen3moe" || (arch == "lfm2moe" && il >= hp$n_dense)) {
      tn[[b("ffn_gate_inp.weight")]] <- mat(n_embd, hp$n_expert, gain = 2)
      tn[[b("ffn_gate_exps.weight")]] <- exps(n_embd, hp$n_ff_exp, hp$n_expert)
      tn[[b("ffn_up_exps.weight")]] <- exps(n_embd, hp$n_ff_exp, hp$n_expert)
      tn[[b("ffn_down_exps.weight")]] <- exps(hp$n_ff_exp, n_embd, hp$n_expert)
      # a selection bias that changes the choice, not the weights
      if (arch == "lfm2moe") tn[[b("exp_probs_b.bias")]] <- rnorm(hp$n_expert, sd = 0.3)
    } else {
      tn[[b("ffn_gate.weight")]] <- mat(n_embd, hp$n_ff)
      tn[[b("ffn_up.weight")]] <- mat(n_embd, hp$n_ff)
      tn[[b("ffn_down.weight")]] <- mat(hp$n_ff, n_embd)
    }
    if (arch == "gemma-embedding") tn[[b("post_ffw_norm.weight")]] <- vec(n_embd)
  }
  # final norm: LFM2's is named token_embd_norm in llama.cpp's GGUFs
  tn[[if (arch %in% c("lfm2", "lfm2moe")) "token_embd_norm.weight" else "output_norm.weight"]] <- vec(n_embd)
  if (arch %in% c("qwen2", "qwen3moe")) tn$output.weight <- mat(n_embd, n_vocab, gain = 2)
  if (dense && arch == "gemma-embedding") {
    d <- 96L
    md[[key("dense_2_feat_in")]] <- u32(n_embd)
    md[[key("dense_2_feat_out")]] <- u32(d)
    md[[key("dense_3_feat_in")]] <- u32(d)
    md[[key("dense_3_feat_out")]] <- u32(n_embd)
    tn$dense_2.weight <- mat(n_embd, d)
    tn$dense_3.weight <- mat(d, n_embd)
  }
  tn <- tn[setdiff(names(tn), drop)]
  if (!is.null(edit)) tn <- edit(tn)
  if (!is.null(edit_md)) md <- edit_md(md)
  Rgguf::gguf_write(path, md, tn)
  invisible(list(path = path, arch = arch, hparams = hp, n_vocab = n_vocab))
}

# A fixed token sequence for the comparisons: BOS then 11 ordinary ids.
arch_gguf_tokens <- function() c(1L, 262L, 300L, 45L, 77L, 400L, 263L, 264L, 511L, 120L, 33L, 290L)
