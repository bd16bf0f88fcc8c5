# Models, KV caches and logits (core: fm_llm.h; glue: src/r_model.c).

.rllm_describe <- function(x) {
  if (is.object(x)) return(paste0("an object of class '", class(x)[1L], "'"))
  if (is.null(x)) return("NULL")
  if (is.atomic(x) && length(x) == 1L && is.na(x)) return(paste0("NA (", typeof(x), ")"))
  paste0("an object of type ", typeof(x), " and length ", length(x))
}

.rllm_check_model <- function(model, call = sys.call(-1L)) {
  if (!inherits(model, "rllm_model")) {
    Rfmalloc::fm_abort("earg", "model must come from rllm_gguf_model(), not ",
                       .rllm_describe(model), call = call)
  }
  if (.Call(C_rllm_ptr_state, model$ptr) != 0L) {
    Rfmalloc::fm_abort("eclosed", "the model was freed (a model does not survive saveRDS() ",
                       "or a new session); load it again with rllm_gguf_model()", call = call)
  }
  model
}

# The trained context of a model (<arch>.context_length), or NA when the
# metadata gives none.
.rllm_n_ctx_train <- function(model) {
  n <- model$info$n_ctx_train
  if (is.numeric(n) && length(n) == 1L && is.finite(n) && n > 0) n else NA_real_
}

# Warn (class "rllm_warning_context") when `n` positions exceed the model's
# trained context; `what` says what uses them.
.rllm_warn_context <- function(model, n, what, call = sys.call(-1L)) {
  ctx <- .rllm_n_ctx_train(model)
  if (is.na(ctx) || n <= ctx) return(invisible(FALSE))
  msg <- sprintf(paste0("%s %.0f positions, more than the %.0f the model was trained on ",
                        "(%s.context_length); logits past position %.0f may be poor"),
                 what, n, ctx, model$info$arch, ctx)
  warning(structure(class = c("rllm_warning_context", "warning", "condition"),
                    list(message = msg, call = call)))
  invisible(TRUE)
}

# Warn when evaluating n more positions after `past` crosses the trained
# context (once per sequence: not again when `past` is already beyond it).
.rllm_warn_past_context <- function(model, past, n, call = sys.call(-1L)) {
  ctx <- .rllm_n_ctx_train(model)
  if (is.na(ctx) || past > ctx || past + n <= ctx) return(invisible(FALSE))
  .rllm_warn_context(model, past + n, "evaluating", call = call)
}

.rllm_check_count <- function(x, name, min = 0, call = sys.call(-1L), max = 2^31 - 1) {
  if (!is.numeric(x) || length(x) != 1L || is.na(x) || x != floor(x) || x < min || x > max) {
    # Counts reach the C code as R integers, so the widest range ends at
    # .Machine$integer.max.
    bound <- if (max < 2^31 - 1) {
      paste("from", min, "to", max)
    } else {
      paste("from", min, "to 2147483647 (the largest R integer, .Machine$integer.max)")
    }
    Rfmalloc::fm_abort("earg", name, " must be a whole number ", bound, ", not ",
                       if (is.numeric(x) && length(x) == 1L) format(x) else .rllm_describe(x),
                       call = call)
  }
  as.integer(x)
}

# Token ids: integer-valued, no NA, in [0, n_vocab).
# The token ids of one text (string or raw vector); `what` names it in errors.
.rllm_text_ids <- function(model, text, what, add_special, parse_special = FALSE,
                           call = sys.call(-1L)) {
  if (is.null(model$tokenizer)) {
    Rfmalloc::fm_abort("earg", "this model has no tokenizer (its GGUF file has no key ",
                       "tokenizer.ggml.model); give ", what, " as token ids", call = call)
  }
  ids <- rllm_tokenize(model, text, add_special = add_special, parse_special = parse_special)
  if (!length(ids)) {
    Rfmalloc::fm_abort("earg", what, " is ", length(if (is.raw(text)) text else charToRaw(text)),
                       " bytes that tokenize to no token",
                       if (!isTRUE(add_special)) " (add_special = FALSE adds none)", call = call)
  }
  ids
}

.rllm_check_tokens <- function(tokens, n_vocab, name = "tokens", call = sys.call(-1L)) {
  if (!is.numeric(tokens) || length(tokens) < 1L) {
    Rfmalloc::fm_abort("earg", name, " must be a non-empty integer vector of token ids, not ",
                       .rllm_describe(tokens), call = call)
  }
  bad <- which(is.na(tokens) | tokens != floor(tokens) | tokens < 0 | tokens >= n_vocab)
  if (length(bad)) {
    Rfmalloc::fm_abort("earg", name, "[", bad[1L], "] is ", tokens[bad[1L]],
                       ", not a token id in [0, ", n_vocab, ")", call = call)
  }
  as.integer(tokens)
}

#' Threads of model evaluation
#'
#' A documented alias kept from before the stack had one thread setting:
#' the GGML threads an evaluation of a model without a count of its own
#' uses, which is [Rfmalloc::fmalloc_threads()] (option `fmalloc.threads`,
#' the one setting of Rfmalloc, Rgguf and Rllm; the former option
#' `rllm.threads` is not read), or 1 in a forked child process (such as the
#' workers of [parallel::mclapply()]): GGML's threads are GNU OpenMP
#' threads, whose pool does not survive `fork()`, so a multi-threaded
#' evaluation in the child of a process that already ran one would never
#' return. Rfmalloc registers one `pthread_atfork()` handler for the stack,
#' and every evaluation in a forked child is single-threaded, whatever the
#' model's thread count; results do not depend on the thread count. Use
#' [parallel::makePSOCKcluster()] workers (fresh processes) for
#' multi-threaded evaluation in parallel.
#' @return A whole number >= 1.
#' @section Errors: those of [Rfmalloc::fmalloc_threads()] for an unusable
#'   option `fmalloc.threads`.
#' @source Thread counts as GGML's CPU backend takes them
#'   (`ggml_backend_cpu_set_n_threads`).
#' @examples
#' rllm_threads()
#' @export
rllm_threads <- function() {
  info <- Rfmalloc::fmalloc_backend_info()
  if (isTRUE(info$forked)) 1L else info$threads
}

#' Load a language model from a GGUF file
#'
#' Builds a model over the weights of a GGUF file without copying them:
#' every tensor stays, quantized as stored, in the file's read-only mapping
#' (opened with [Rgguf::gguf_open()]) and GGML's CPU kernels read its blocks
#' in place. Hyperparameters come from the metadata
#' (`<arch>.embedding_length`, `block_count`, `attention.head_count`,
#' `attention.head_count_kv`, `feed_forward_length`,
#' `rope.dimension_count`, `rope.freq_base`,
#' `attention.layer_norm_rms_epsilon`, `context_length`,
#' `attention.causal`, `pooling_type`, `expert_count`, ...); the vocabulary
#' size is the number of rows of `token_embd.weight`. Every tensor the graph
#' uses is checked for presence, shape and type before any computation.
#'
#' Architectures: `llama` (also llama-family mixtures of experts such as
#' Mixtral) and the others listed in the error message for an unknown one.
#' The llama graph is RMSNorm, rotary position embedding (adjacent pairs;
#' NEOX-style halves for the architectures llama.cpp runs that way),
#' grouped-query attention over a KV cache, SwiGLU feed-forward, a final
#' RMSNorm and the output projection (tied to `token_embd.weight` when
#' `output.weight` is absent).
#'
#' @param path path of a `.gguf` file, or a `gguf_file` from
#'   [Rgguf::gguf_open()].
#' @param runtime `NULL`, or an Rfmalloc runtime
#'   ([Rfmalloc::open_fmalloc()]) in which [rllm_cache()] and
#'   [rllm_generate()] place this model's KV caches by default.
#' @param threads `NULL` (the default): each evaluation uses the stack's
#'   thread count, [Rfmalloc::fmalloc_threads()]; or a whole number from 1
#'   to 256, this model's own count. In a forked child process evaluation is always
#'   single-threaded (see [rllm_threads()]).
#' @param flash_attn `TRUE` (the default): batches of 64 tokens or more (a
#'   prompt, an embedding) attend through GGML's flash attention, which
#'   never stores a head's scores for all pairs of positions (memory and
#'   time of a long prompt grow far less); `FALSE`: explicit scores and
#'   softmax, as llama.cpp without flash attention. Decode steps always take
#'   the explicit path. The two agree to rounding (with an F16 cache the
#'   explicit path, as llama.cpp's, rounds the softmax probabilities to F16
#'   before the product with V; flash attention keeps them F32); the
#'   package's tests bound the difference of the logits.
#' @param repack `TRUE` (the default, as llama.cpp): the layer matrices
#'   and the output matrix that GGML has interleaved kernels for (on x86
#'   with AVX2: Q4_0, Q4_K and IQ4_NL; a tied output is copied, the
#'   embedding staying on the mapping for its row lookups) are copied at load into
#'   GGML's repacked layout, which multiplies them faster (prompt
#'   evaluation of a Q4_0 model 1.7-2x); they then live
#'   in memory (`info$repacked_bytes`) instead of being read from the
#'   mapped file. `FALSE` keeps every weight on the mapping (for a model
#'   larger than memory). No effect where the GGML build cannot repack
#'   (`rllm_ggml_info()$features[["repack"]]`). Logits agree to rounding.
#' @param fused_gemm `TRUE` (the default): products of the weight
#'   matrices kept on the mapping (not repacked) with a batch of tokens (a
#'   prompt, an embedding) run through the package's own tiled kernels,
#'   which compute several rows and tokens at once. They need an x86-64
#'   CPU with AVX2, FMA and F16C (and `FM_ISA` not below `"avx2"`), and
#'   use wider tiles with AVX-512 (F and BW, `FM_ISA` not below
#'   `"avx512"`); elsewhere, and with `FALSE`, every product is GGML's, one row and one
#'   token at a time. F16 and F32 matrices (batches of 2 tokens or more)
#'   round the activations as GGML does (F16 rounding, or none), so they
#'   differ only in the order of single-precision sums. Quantized types
#'   (Q8_0 in batches of 16 or more; Q4_K, Q5_0, Q6_K, ... in batches of 32
#'   or more) are decoded by GGML in panels of 16 rows and multiplied in
#'   single precision with the unrounded activations, where GGML rounds
#'   them to 8 bits: more accurate, and different by that rounding. Decode steps (one
#'   token) use GGML's product either way, so a prompt evaluated at once
#'   and token by token agree to rounding (with `FALSE`, both use GGML's
#'   kernels). Prompt evaluation 1.2-4x faster here, depending on the type.
#'   The same switch gives flash attention with heads of at most 32
#'   elements (stories260K's 8) to the package's kernel, which vectorizes
#'   along the keys rather than the head (a 2,000-token prompt 6x faster
#'   here); it agrees with GGML's to the order of single-precision sums.
#'   No effect on a device (`info$fused_gemm` is then `FALSE`).
#' @param program the model's architecture program ([rllm_program()], or
#'   frozen): `NULL` (the default) takes the one shipped for the file's
#'   `general.architecture` (llama, qwen2, qwen3, qwen3moe, lfm2, lfm2moe,
#'   gemma-embedding). Its parameters are bound to the file's tensors
#'   (zero-copy) and its operators lowered to GGML (docs/programs.md in the source repository).
#' @param device `"cpu"` (the default): the weights stay on the file's
#'   mapping and GGML's CPU backend evaluates. `"vulkan"` (or `"vulkan1"`,
#'   ...: a device by its `index` in [rllm_vulkan_info()]; `"vulkan"` is
#'   device 0): every weight is copied once, at load, into the device's
#'   memory (the mapping is then no longer read), KV caches
#'   ([rllm_cache()]) are allocated there too, and each evaluation runs the
#'   whole graph on the device through GGML's Vulkan backend: only token
#'   ids, positions and masks go up, and only the logits (or the
#'   embedding) come back. No operator falls back to the CPU; a model whose
#'   graph has one the device cannot run is refused at its first
#'   evaluation (`fm_error_eunsupported` naming the operator). On a device
#'   `threads`, `repack` and `fused_gemm` have no effect, a cache cannot
#'   live in an Rfmalloc `runtime`, and an interrupt is noticed between
#'   micro-batches of 256 tokens only. Logits agree with the CPU's to
#'   rounding (other kernels: another order of sums, and GGML's Vulkan
#'   products round activations as its CPU ones do); `make test-vulkan` in
#'   the source repository runs the comparisons with llama.cpp on a device.
#' @return An object of class `"rllm_model"`: a list with `path`, `gguf`
#'   (the `gguf_file` handle), `info` (a list: `arch`, `name`, `n_vocab`,
#'   `n_embd`, `n_embd_out`, `n_layer`, `n_head`, `n_head_kv`,
#'   `n_embd_head_k`, `n_embd_head_v`, `n_ff`, `n_rot`, `n_ctx_train`,
#'   `n_expert`, `n_expert_used`, `rope_freq_base`, `norm_eps`,
#'   `rope_neox`, `causal`, `pooling` (-1 when unset), `tied_output`,
#'   `n_params`, `weight_bytes`, `threads`, `flash_attn`, `repacked_bytes`
#'   (bytes of weights held repacked in memory), `fused_gemm`, `device`
#'   (GGML's name of the device that evaluates: `"CPU"`, `"Vulkan0"`, ...),
#'   `eog`: the end-of-generation
#'   ids, the tokenizer's `eog`), `tokenizer` (an `rllm_tokenizer` built
#'   from the same metadata; `NULL` when the file has no tokenizer, no key
#'   `tokenizer.ggml.model`: such a model takes token ids, not text),
#'   `runtime`, `outputs` (the names [rllm_run()] takes: the program's
#'   outputs, and `"<tap>.<k>"` for the k-th value of each tap),
#'   `seq_channels` (the channels of its sequence input, 0 when it takes
#'   tokens) and `has_mask` (whether it has a mask input). The model
#'   does not survive
#'   `saveRDS()`: a restored copy prints as freed and its use raises
#'   `fm_error_eclosed`; load it again.
#' @section Errors: conditions raised through [Rfmalloc::fm_abort()], with
#'   messages naming the file: `fm_error_eunsupported` for an unknown
#'   `general.architecture` (named, with the known ones) or an unsupported
#'   RoPE scaling; `fm_error_eformat` for a missing or mistyped metadata key
#'   or a tensor that is missing or has the wrong shape or type (named):
#'   every tensor of every layer that the graph uses is bound and checked
#'   here, at load, never at the first evaluation; a tokenizer whose
#'   vocabulary is not the model's (`tokenizer.ggml.tokens` against the rows
#'   of `token_embd.weight`), an `expert_count` without the experts' router,
#'   and out-of-range values (epsilons, a non-finite `rope.freq_base`);
#'   errors of [Rgguf::gguf_open()] for files that are not valid GGUF (a
#'   header cut short, a tensor past the end of the file, a metadata array
#'   claiming 2^62 elements); `fm_error_earg` for bad arguments (`NA` path).
#'   Later, when the file shrinks on disk under a loaded model, every
#'   evaluation ([rllm_logits()], [rllm_generate()], [rllm_embed()]) raises
#'   `fm_error_eformat` ("the file shrank from ... to ... bytes") instead of
#'   reading past its end (one `fstat()` per call; a truncation during an
#'   evaluation cannot be caught).
#'   With `device = "vulkan"`: `fm_error_eunsupported` when the GGML that
#'   Rgguf links was built without Vulkan (the message says so; in the
#'   source repository `make vulkan` builds one) or found no Vulkan device
#'   ([rllm_vulkan_info()] lists none); `fm_error_earg` for a device index
#'   that does not exist, an unknown `device`, or a `runtime` given with a
#'   device; `fm_error_enomem` when the device has no room for the weights.
#' @source The GGUF key and tensor names of the GGUF specification
#'   (<https://github.com/ggml-org/ggml/blob/master/docs/gguf.md>); the
#'   operator sequence follows the LLaMA paper (Touvron et al. 2023) as
#'   llama.cpp evaluates it, which the package's tests use as the oracle.
#' @seealso [rllm_logits()], [rllm_generate()], [rllm_embed()],
#'   [rllm_cache()], [rllm_vulkan_info()].
#' @examples
#' f <- Sys.getenv("RFMALLOC_FIXTURES")
#' p <- file.path(f, "gguf", "stories260K.gguf")
#' if (nzchar(f) && file.exists(p)) {
#'   m <- rllm_gguf_model(p, threads = 1)
#'   print(m)
#'   # on a GPU when this build has one, else on the CPU
#'   dev <- if (nrow(rllm_vulkan_info()) > 0) "vulkan" else "cpu"
#'   m2 <- rllm_gguf_model(p, device = dev)
#'   m2$info$device
#' }
#' @export
rllm_gguf_model <- function(path, runtime = NULL, threads = NULL, flash_attn = TRUE, repack = TRUE,
                            fused_gemm = TRUE, device = "cpu", program = NULL) {
  dev <- .rllm_device(device)
  if (inherits(path, "gguf_file")) {
    g <- path
  } else {
    if (!is.character(path) || length(path) != 1L || is.na(path)) {
      Rfmalloc::fm_abort("earg", "path must be a single string or a gguf_file, not ",
                         .rllm_describe(path))
    }
    g <- Rgguf::gguf_open(path)
  }
  threads <- if (is.null(threads)) 0L else .rllm_check_count(threads, "threads", 1, max = 256)
  for (a in c("flash_attn", "repack", "fused_gemm")) {
    v <- get(a)
    if (!is.logical(v) || length(v) != 1L || is.na(v))
      Rfmalloc::fm_abort("earg", a, " must be TRUE or FALSE, not ", .rllm_describe(v))
  }
  .rllm_check_runtime(runtime)
  if (!is.null(runtime) && dev$kind != 0L) {
    Rfmalloc::fm_abort("earg", "runtime must be NULL with device = \"", device, "\": a model's ",
                       "caches then live in the device's memory, not in an Rfmalloc runtime")
  }
  full <- attr(g, "path")
  if (is.null(full)) full <- "model"
  prog <- if (is.null(program)) .rllm_shipped_program(g, basename(full)) else rllm_freeze(program)
  bound <- .rllm_bind_native(prog, g)
  ptr <- .Call(C_rllm_model_new_program, g, threads, flash_attn, repack, fused_gemm, basename(full), dev$kind,
               dev$index, bound)
  model <- structure(list(path = full, gguf = g, ptr = ptr, info = NULL, tokenizer = NULL,
                          runtime = runtime, outputs = names(bound$outputs),
                          seq_channels = bound$seq_channels,
                          has_mask = any(vapply(prog$inputs, function(i) i$kind == "mask", TRUE))),
                     class = "rllm_model")
  model$info <- .Call(C_rllm_model_info, ptr)
  model$tokenizer <- .tok_of_model(g, model$info$n_vocab, full, sys.call())
  model$info$eog <- .rllm_eog_ids(model)
  model
}

# device = "cpu", "vulkan" (device 0) or "vulkan<i>" (any case) -> the core's
# fm_llm_device kind (0 CPU, 1 Vulkan) and the device index.
.rllm_device <- function(device, call = sys.call(-1L)) {
  if (is.character(device) && length(device) == 1L && !is.na(device)) {
    d <- tolower(device)
    if (d == "cpu") return(list(kind = 0L, index = 0L))
    m <- regmatches(d, regexec("^vulkan([0-9]{0,4})$", d))[[1]]
    if (length(m)) return(list(kind = 1L, index = if (nzchar(m[2])) as.integer(m[2]) else 0L))
  }
  Rfmalloc::fm_abort("earg", "device must be \"cpu\", \"vulkan\" or \"vulkan<index>\" (an index ",
                     "of rllm_vulkan_info()), not ",
                     if (is.character(device) && length(device) == 1L && !is.na(device)) dQuote(device, FALSE)
                     else .rllm_describe(device), call = call)
}

# End-of-generation ids: the tokenizer's, by the core's one rule
# (fm_tok_eog_ids); none without a tokenizer.
.rllm_eog_ids <- function(model) {
  if (is.null(model$tokenizer)) integer() else model$tokenizer$eog
}

#' @export
print.rllm_model <- function(x, ...) {
  i <- x$info
  cat(sprintf("<rllm_model> %s%s\n", i$arch, if (nzchar(i$name)) paste0(" '", i$name, "'") else ""))
  cat(sprintf("  file: %s\n", x$path))
  cat(sprintf("  %d layers, n_embd %d, %d heads (%d KV, head size %d), n_ff %d, vocab %d\n",
              as.integer(i$n_layer), as.integer(i$n_embd), as.integer(i$n_head),
              as.integer(i$n_head_kv), as.integer(i$n_embd_head_k), as.integer(i$n_ff),
              as.integer(i$n_vocab)))
  if (i$n_expert > 0) cat(sprintf("  %d experts, %d used per token\n", as.integer(i$n_expert),
                                  as.integer(i$n_expert_used)))
  cat(sprintf("  RoPE %s (%d dims, base %g), %s attention, context %d, %s output\n",
              if (i$rope_neox) "neox" else "normal", as.integer(i$n_rot), i$rope_freq_base,
              if (i$causal) "causal" else "non-causal", as.integer(i$n_ctx_train),
              if (i$tied_output) "tied" else "untied"))
  st <- .Call(C_rllm_ptr_state, x$ptr)
  thr <- if (st == 0L) {
    nt <- .Call(C_rllm_model_threads, x$ptr)
    sprintf("%d thread%s%s", nt, if (nt == 1L) "" else "s",
            if (isTRUE(Rfmalloc::fmalloc_backend_info()$forked)) " (forked child: single-threaded)"
            else "")
  } else {
    "(freed: a model does not survive saveRDS() or a new session)"
  }
  cat(sprintf("  %.0f parameters in %s bytes of the mapping; %s\n", i$n_params,
              format(i$weight_bytes, big.mark = ",", scientific = FALSE), thr))
  g <- rllm_ggml_info()
  cat(sprintf("  GGML %s, %s build; evaluates on %s\n", g$version, g$isa,
              if (is.null(i$device)) "CPU" else i$device))
  invisible(x)
}

#' The GGML build that runs the models
#'
#' GGML's CPU kernels are chosen when GGML is compiled, not at run time:
#' the CRAN package ggmlR builds them with AVX2, FMA and F16C only when
#' installed with `configure.args = "--with-simd"`, and portable C
#' otherwise, which runs the quantized products several times slower on a
#' CPU that has AVX2. `rllm_ggml_info()` reports the build the models run
#' on: the one Rgguf links (the `libggml.a` of the ggmlR found when Rgguf
#' was installed; `tools/ggmlr-setup.sh` in the source repository builds
#' and verifies it). It also shows
#' in `print()` of a model.
#' @return A list: `isa`, the build's level in one word (`"avx512"`,
#'   `"avx2"` (AVX2, FMA and F16C), `"avx"`, `"sse"`, `"neon"` or
#'   `"portable"`); `version`, GGML's version string; `features`, a named
#'   logical vector, one element per instruction-set feature GGML reports
#'   (`sse3`, `ssse3`, `avx`, `avx2`, `fma`, `f16c`, `bmi2`, `avx_vnni`,
#'   `avx512`, `avx512_vbmi`, `avx512_vnni`, `avx512_bf16`, `amx_int8`,
#'   `neon`, `arm_fma`, `fp16_va`, `dotprod`, `sve`, `llamafile`), `TRUE`
#'   where the build uses it, and `repack`: `TRUE` when the build has
#'   GGML's repack buffer with kernels for this CPU (see `repack` of
#'   [rllm_gguf_model()]).
#' @section Errors: none.
#' @source GGML's `ggml_cpu_has_*()` (`ggml-cpu.h`: the compile-time flags
#'   of its CPU backend) and `ggml_version()`.
#' @examples
#' rllm_ggml_info()$isa
#' @export
rllm_ggml_info <- function() .Call(C_rllm_ggml_info)

#' Vulkan devices of the GGML build
#'
#' The devices GGML's Vulkan backend would run a model on
#' (`rllm_gguf_model(device = "vulkan")`), as its backend registry lists
#' them. A GGML built without Vulkan (the default: ggmlR's configure needs
#' `--with-vulkan`; `make vulkan` in the source repository builds one) lists
#' none, so a caller can test `nrow(rllm_vulkan_info()) > 0` and fall back
#' to the CPU. A Vulkan build lists none either when there is no Vulkan
#' loader or no usable device; GGML skips CPU drivers such as Mesa's
#' lavapipe unless the environment variable `GGML_VK_VISIBLE_DEVICES` names
#' them (by their Vulkan physical-device index, e.g. `"0"`), which must be
#' set before the first call (GGML reads its devices once per process).
#' @return A data frame with one row per device and columns `index`
#'   (integer, 0-based: `device = "vulkan<index>"`), `name` (GGML's:
#'   `"Vulkan0"`, ...), `description` (the driver's device name),
#'   `memory_free` and `memory_total` (bytes, as the driver reports them;
#'   numeric) and `type` (`"gpu"`, `"igpu"`, `"cpu"` or `"accel"`); zero
#'   rows when there is no device. Its attribute `"vulkan_build"` is `TRUE`
#'   when the GGML that Rgguf links was compiled with its Vulkan backend,
#'   `FALSE` otherwise.
#' @section Errors: none (no device is zero rows). The first call in a
#'   process with a Vulkan build creates a Vulkan instance.
#' @source GGML's backend registry (`ggml-backend.h`:
#'   `ggml_backend_reg_by_name("Vulkan")`, `ggml_backend_dev_get_props()`).
#' @seealso [rllm_gguf_model()] (`device`), [rllm_ggml_info()].
#' @examples
#' v <- rllm_vulkan_info()
#' attr(v, "vulkan_build")
#' if (nrow(v) > 0) v[, c("index", "name", "description", "memory_total")]
#' @export
rllm_vulkan_info <- function() {
  x <- .Call(C_rllm_vulkan_info)
  built <- x$vulkan_build
  x$vulkan_build <- NULL
  out <- data.frame(x, stringsAsFactors = FALSE)
  attr(out, "vulkan_build") <- built
  out
}

#' Set a model's number of evaluation threads
#'
#' The number of GGML CPU worker threads later evaluations of `model` may
#' use. An upper bound: a batch too small to gain from threads (a tiny
#' model's decode step) runs on one. Logits do not depend on the thread
#' count (bit-identical). In a forked child process (e.g. a
#' [parallel::mclapply()] worker) evaluation is always single-threaded and
#' `info$threads` reports 1; see [rllm_threads()] for why.
#'
#' @param model an `rllm_model`.
#' @param threads whole number from 1 to 256, or `NULL` to follow the stack's
#'   [Rfmalloc::fmalloc_threads()] again.
#' @return `model`, invisibly, with `info$threads` updated to the count in
#'   effect (the change also applies to other copies of the same model
#'   object).
#' @section Errors: `fm_error_earg` for a `model` that is not an
#'   `rllm_model` or a `threads` that is not a whole number >= 1;
#'   `fm_error_eclosed` for a model restored from a saved session.
#' @source Thread counts as GGML's CPU backend takes them
#'   (`ggml_backend_cpu_set_n_threads`).
#' @examples
#' f <- Sys.getenv("RFMALLOC_FIXTURES")
#' p <- file.path(f, "gguf", "stories260K.gguf")
#' if (nzchar(f) && file.exists(p)) {
#'   m <- rllm_gguf_model(p, threads = 1)
#'   m <- rllm_set_threads(m, 2)
#'   m$info$threads
#' }
#' @export
rllm_set_threads <- function(model, threads) {
  .rllm_check_model(model)
  threads <- if (is.null(threads)) 0L else .rllm_check_count(threads, "threads", 1, max = 256)
  model$info$threads <- .Call(C_rllm_model_set_threads, model$ptr, threads)
  invisible(model)
}

.rllm_kv_type <- function(type, call = sys.call(-1L)) {
  if (!is.character(type) || length(type) != 1L || !type %in% c("f16", "f32")) {
    Rfmalloc::fm_abort("earg", "type must be \"f16\" or \"f32\"", call = call)
  }
  if (type == "f16") 1L else 0L
}

#' A KV cache for a model
#'
#' Holds the keys and values of every attention layer for up to `n_ctx`
#' positions of one sequence, and how many are filled (`n_past`).
#' [rllm_logits()] and [rllm_generate()] given a cache evaluate new tokens at
#' positions `n_past, n_past + 1, ...` and advance it. Keys are stored as
#' `n_ctx` rows of `n_head_kv * head_size` values and values transposed,
#' in F16 by default as llama.cpp does (greedy results then match it), or
#' F32.
#'
#' @param model an `rllm_model`.
#' @param n_ctx positions (default: the model's training context,
#'   `model$info$n_ctx_train`, at most 4096). More than the training context
#'   is allowed, as llama.cpp allows it, with a warning of class
#'   `"rllm_warning_context"` naming both numbers; the most is 2147483647
#'   (`.Machine$integer.max`: positions are R and C integers), memory
#'   permitting.
#' @param runtime `NULL` (default: `model$runtime`) for the heap, or an
#'   Rfmalloc runtime: the cache is then one raw vector of that runtime's
#'   mapping (`Rfmalloc_vec_alloc`), freed with the cache object. For a
#'   model on a device (`rllm_gguf_model(device = "vulkan")`) the cache is
#'   in the device's memory and `runtime` must be `NULL`.
#' @param type `"f16"` or `"f32"`.
#' @return An object of class `"rllm_cache"` (a list: `ptr`, `model`,
#'   `n_ctx`, `type`, `bytes` (memory in bytes, as laid out in host memory),
#'   `storage` (the raw vector in the runtime, or `NULL`), `device` (where
#'   it lives: `"CPU"` or the model's device)). [rllm_cache_clear()] forgets its contents and
#'   returns the cache invisibly. A cache does not survive `saveRDS()`: a
#'   restored copy prints as `(freed)`; one whose runtime was closed prints
#'   as `(closed)`.
#' @section Errors: `fm_error_earg` for bad arguments (`n_ctx` not a whole
#'   number from 1 to 2147483647, or `NA`: the message gives the limit and
#'   the value; a `runtime` for a model on a device); `fm_error_enospc` when the runtime is full;
#'   `fm_error_enomem`; `fm_error_eclosed` for a cache restored from a saved
#'   session or whose runtime was closed (by [rllm_cache_clear()],
#'   [rllm_cache_n_past()] and the evaluation functions).
#' @source The KV-cache layout of llama.cpp (keys position-major, values
#'   transposed, F16 by default).
#' @examples
#' f <- Sys.getenv("RFMALLOC_FIXTURES")
#' p <- file.path(f, "gguf", "stories260K.gguf")
#' if (nzchar(f) && file.exists(p)) {
#'   m <- rllm_gguf_model(p, threads = 1)
#'   kv <- rllm_cache(m, 64)
#'   l1 <- rllm_logits(m, c(1L, 403L), cache = kv)
#'   l2 <- rllm_logits(m, 407L, cache = kv) # continues at position 2
#'   print(kv)
#' }
#' @export
rllm_cache <- function(model, n_ctx = NULL, runtime = NULL, type = c("f16", "f32")) {
  .rllm_check_model(model)
  type <- fm_arg_choice(type, c("f16", "f32"))
  if (is.null(n_ctx)) {
    n_ctx <- .rllm_n_ctx_train(model)
    if (is.na(n_ctx)) n_ctx <- 4096
    n_ctx <- min(n_ctx, 4096)
  }
  n_ctx <- .rllm_check_count(n_ctx, "n_ctx", 1)
  .rllm_warn_context(model, n_ctx, "a cache of", call = sys.call())
  .rllm_cache_new(model, n_ctx, runtime, type)
}

# rllm_cache() without argument checks or the context warning.
.rllm_cache_new <- function(model, n_ctx, runtime, type, call = sys.call(-1L)) {
  if (is.null(runtime)) runtime <- model$runtime
  device <- if (is.null(model$info$device)) "CPU" else model$info$device
  if (!is.null(runtime) && device != "CPU") {
    Rfmalloc::fm_abort("earg", "runtime must be NULL: the model runs on ", device, ", whose ",
                       "caches live in the device's memory", call = call)
  }
  kv <- .rllm_kv_type(type)
  bytes <- .Call(C_rllm_cache_bytes, model$ptr, n_ctx, kv)
  if (!(bytes > 0)) Rfmalloc::fm_abort("earg", "a cache of ", n_ctx, " positions is too large")
  storage <- NULL
  if (!is.null(runtime)) {
    .rllm_check_runtime(runtime, call)
    storage <- tryCatch(.rllm_runtime_raw(runtime, bytes), fm_error = function(e) {
      Rfmalloc::fm_abort(sub("^fm_error_", "", class(e)[1]), conditionMessage(e), call = call)
    })
  }
  ptr <- .Call(C_rllm_cache_new, model$ptr, n_ctx, kv, storage)
  structure(list(ptr = ptr, model = model$ptr, n_ctx = n_ctx, type = type, bytes = bytes,
                 storage = storage, device = device), class = "rllm_cache")
}

# NULL (the heap) or an open Rfmalloc runtime, checked where it is given
# (a closed one failed only at the first cache, naming an internal function).
.rllm_check_runtime <- function(runtime, call = sys.call(-1L)) {
  if (is.null(runtime)) return(invisible(NULL))
  if (!inherits(runtime, "fmalloc_runtime")) {
    Rfmalloc::fm_abort("earg", "runtime must be NULL or an Rfmalloc runtime, not ",
                       .rllm_describe(runtime), call = call)
  }
  if (!Rfmalloc::fmalloc_is_open(runtime)) {
    Rfmalloc::fm_abort("eclosed", "the runtime was closed (", format(runtime), "); open it again ",
                       "with open_fmalloc() or give another", call = call)
  }
  invisible(runtime)
}

# A zero-filled raw vector of `bytes` in an Rfmalloc runtime (C callable
# Rfmalloc_vec_alloc through Rfmalloc's exported helper).
.rllm_runtime_raw <- function(runtime, bytes) {
  .Call(C_rllm_runtime_raw, runtime, bytes)
}

.rllm_cache_freed <- "the cache was freed (a cache does not survive saveRDS() or a new session)"

.rllm_check_cache <- function(cache, model, call = sys.call(-1L)) {
  if (is.null(cache)) return(NULL)
  if (!inherits(cache, "rllm_cache")) {
    Rfmalloc::fm_abort("earg", "cache must be NULL or from rllm_cache(), not ",
                       .rllm_describe(cache), call = call)
  }
  if (.Call(C_rllm_ptr_state, cache$ptr) != 0L) {
    Rfmalloc::fm_abort("eclosed", .rllm_cache_freed, "; make a new one with rllm_cache()",
                       call = call)
  }
  tryCatch(.Call(C_rllm_cache_state, cache$ptr), fm_error_eclosed = function(e) {
    Rfmalloc::fm_abort("eclosed", "the cache's Rfmalloc runtime was closed (",
                       conditionMessage(e), "); make a new cache with rllm_cache()", call = call)
  })
  if (!identical(cache$model, model$ptr)) {
    Rfmalloc::fm_abort("emismatch", "the cache was made for another model", call = call)
  }
  cache
}

#' @rdname rllm_cache
#' @param cache an `rllm_cache`.
#' @export
rllm_cache_clear <- function(cache) {
  if (!inherits(cache, "rllm_cache")) {
    Rfmalloc::fm_abort("earg", "cache must come from rllm_cache(), not ", .rllm_describe(cache))
  }
  .Call(C_rllm_cache_clear, cache$ptr)
  invisible(cache)
}

#' @rdname rllm_cache
#' @return `rllm_cache_n_past()`: the number of filled positions.
#' @export
rllm_cache_n_past <- function(cache) {
  if (!inherits(cache, "rllm_cache")) {
    Rfmalloc::fm_abort("earg", "cache must come from rllm_cache(), not ", .rllm_describe(cache))
  }
  as.integer(.Call(C_rllm_cache_state, cache$ptr)[1L])
}

#' @export
print.rllm_cache <- function(x, ...) {
  where <- if (!is.null(x$storage)) "an Rfmalloc runtime"
           else if (is.null(x$device) || x$device == "CPU") "the heap"
           else paste("device", x$device)
  if (.Call(C_rllm_ptr_state, x$ptr) != 0L) {
    cat(sprintf("<rllm_cache> (freed) %s positions, %s, on %s: %s\n", format(x$n_ctx), x$type,
                where, .rllm_cache_freed))
    return(invisible(x))
  }
  st <- tryCatch(.Call(C_rllm_cache_state, x$ptr), fm_error_eclosed = function(e) NULL)
  if (is.null(st)) {
    cat(sprintf("<rllm_cache> (closed) %s positions, %s: its Rfmalloc runtime was closed\n",
                format(x$n_ctx), x$type))
    return(invisible(x))
  }
  cat(sprintf("<rllm_cache> %d of %d positions filled, %s, %s bytes on %s\n", as.integer(st[1]),
              as.integer(st[2]), x$type, format(x$bytes, big.mark = ",", scientific = FALSE), where))
  invisible(x)
}

#' Next-token logits of a token sequence
#'
#' Evaluates `tokens` in micro-batches of 256 (each attends to the
#' positions before it; the logits are those of one batch). Without a cache they sit at positions
#' `0, 1, ...` (in a transient cache); with a cache they continue it at
#' positions `n_past, n_past + 1, ...` and the cache advances.
#'
#' @param model an `rllm_model`.
#' @param tokens integer vector of 0-based token ids (as llama.cpp numbers
#'   them; see [rllm_tokenize()]).
#' @param cache `NULL` or an [rllm_cache()] of this model.
#' @param all `TRUE` for the logits after every token, `FALSE` (default)
#'   for those after the last one only.
#' @return A numeric matrix of `n_vocab` rows and one column per token
#'   (`all = TRUE`) or one column: column `j` holds the unnormalized
#'   log-probabilities of the token following `tokens[j]`. Computed in
#'   single precision. On CPU, a batch evaluated in a fresh or cleared cache
#'   gives bit-identical logits to the same batch without a cache, for any
#'   thread count; a prefix evaluated token by token agrees with the
#'   whole-prefix evaluation to within 1e-4 absolute (the tested bound;
#'   measured 0 on stories260K F32 and Q8_0).
#'   Positions past the model's training context (`model$info$n_ctx_train`)
#'   are evaluated, as llama.cpp does, after a warning of class
#'   `"rllm_warning_context"` naming both numbers (given by the call that
#'   crosses the limit).
#' @section Errors: `fm_error_earg` for token ids that are missing (`NA`),
#'   not whole or outside `[0, n_vocab)` (the first is named);
#'   `fm_error_enospc` when the cache cannot hold the tokens (it is then
#'   unchanged); `fm_error_emismatch` for a cache of another model;
#'   `fm_error_eclosed` for a model or cache restored from a saved session,
#'   or a cache whose runtime was closed; `fm_error_eformat` when the GGUF
#'   file shrank on disk since it was opened. A user interrupt raises
#'   `fm_error_ecancelled` (an `interrupt` condition); the error of an
#'   elapsed or CPU time limit ([setTimeLimit()]) is raised as R raises it.
#'   Either way the cache keeps its previous `n_past`.
#' @source The operator sequence of [rllm_gguf_model()]; logits agree with
#'   llama.cpp's (node-llama-cpp 3.21.1) as the package's tests check.
#' @export
rllm_logits <- function(model, tokens, cache = NULL, all = FALSE) {
  .rllm_check_model(model)
  tokens <- .rllm_check_tokens(tokens, model$info$n_vocab)
  cache <- .rllm_check_cache(cache, model)
  if (!is.logical(all) || length(all) != 1L || is.na(all)) {
    Rfmalloc::fm_abort("earg", "all must be TRUE or FALSE")
  }
  past <- if (is.null(cache)) 0 else .Call(C_rllm_cache_state, cache$ptr)[1L]
  .rllm_warn_past_context(model, past, length(tokens), call = sys.call())
  .Call(C_rllm_logits, model$ptr, if (is.null(cache)) NULL else cache$ptr, tokens, all)
}

#' Pick tokens from a logits vector
#'
#' The sampler [rllm_generate()] uses, on a logits vector of your own.
#' `temperature = 0` is greedy: the largest logit, ties broken by the
#' lowest token id. Otherwise: logits divided by
#' `temperature`; the `top_k` largest kept (`top_k <= 0`: all; ties at the
#' cut go to lower ids); of those, the smallest prefix in decreasing order
#' whose softmax probability reaches `top_p`; one token drawn from the
#' renormalized probabilities with a uniform from the core's xoshiro256**
#' generator seeded by `seed` (the same seed gives the same tokens).
#'
#' @param logits numeric vector, one per token id: finite numbers or `-Inf`
#'   (a token never drawn), at least one above `-Inf`. The sampler works in
#'   float, so a finite value beyond a float's range (3.4e38) counts as
#'   infinite.
#' @param temperature number >= 0.
#' @param top_k whole number (<= 0: no limit).
#' @param top_p number in (0, 1].
#' @param seed `NULL` (drawn from R's generator, so [set.seed()] applies)
#'   or a number.
#' @param n how many tokens to draw (one sampler, consecutive draws).
#' @return Integer vector of `n` 0-based token ids.
#' @section Errors: `fm_error_earg` for `logits` that are not a non-empty
#'   numeric vector, that contain `NA` or `NaN` (the message says which and
#'   gives the first one's position) or `Inf`, or that have no finite value
#'   (every one `-Inf`), a `temperature` that is negative or `NA`, a `top_k`
#'   that is not a whole number, a `top_p` outside (0, 1], a `seed` that is
#'   not `NULL` or a whole number of magnitude <= 2^53, or an `n` that is
#'   not a whole number >= 0.
#' @source Top-k sampling (Fan et al. 2018, "Hierarchical Neural Story
#'   Generation"); nucleus (top-p) sampling (Holtzman et al. 2020, "The
#'   Curious Case of Neural Text Degeneration", ICLR); the order of the
#'   filters (temperature, top-k, top-p) as in llama.cpp's default sampler
#'   chain; xoshiro256** (Blackman and Vigna 2021).
#' @examples
#' rllm_sample(c(1, 3, 3, 2))  # 1: the lower of the tied maxima
#' rllm_sample(c(1, 3, 3, 2), temperature = 1, seed = 42, n = 5)
#' @export
rllm_sample <- function(logits, temperature = 0, top_k = 40L, top_p = 0.95, seed = NULL,
                        n = 1L) {
  if (!is.numeric(logits) || length(logits) < 1L) {
    Rfmalloc::fm_abort("earg", "logits must be a non-empty numeric vector")
  }
  s <- .rllm_sampling(temperature, top_k, top_p, seed)
  n <- .rllm_check_count(n, "n", 0)
  .Call(C_rllm_sample, as.double(logits), s$temperature, s$top_k, s$top_p, s$seed, n)
}

.rllm_sampling <- function(temperature, top_k, top_p, seed, call = sys.call(-1L)) {
  if (!is.numeric(temperature) || length(temperature) != 1L || is.na(temperature) ||
      temperature < 0) {
    Rfmalloc::fm_abort("earg", "temperature must be a number >= 0", call = call)
  }
  if (!is.numeric(top_k) || length(top_k) != 1L || is.na(top_k) || top_k != floor(top_k)) {
    Rfmalloc::fm_abort("earg", "top_k must be a whole number", call = call)
  }
  if (!is.numeric(top_p) || length(top_p) != 1L || is.na(top_p) || top_p <= 0 || top_p > 1) {
    Rfmalloc::fm_abort("earg", "top_p must be a number in (0, 1]", call = call)
  }
  if (is.null(seed)) seed <- sample.int(.Machine$integer.max, 1L)
  if (!is.numeric(seed) || length(seed) != 1L || is.na(seed) || seed != floor(seed) ||
      abs(seed) > 2^53) {
    Rfmalloc::fm_abort("earg", "seed must be NULL or a whole number", call = call)
  }
  list(temperature = as.double(temperature), top_k = as.double(max(top_k, -1)),
       top_p = as.double(top_p), seed = as.double(seed))
}

# The architecture programs shipped with the package, by GGUF
# general.architecture; frozen once per session.
.rllm_shipped <- c(llama = ".rllm_program_llama", qwen2 = ".rllm_program_qwen2",
                   qwen3 = ".rllm_program_qwen3", qwen3moe = ".rllm_program_qwen3moe",
                   lfm2 = ".rllm_program_lfm2", lfm2moe = ".rllm_program_lfm2moe",
                   "gemma-embedding" = ".rllm_program_gemma_embedding",
                   openspliceai = ".rllm_program_openspliceai", esm2 = ".rllm_program_esm2")
.rllm_frozen <- new.env(parent = emptyenv())

.rllm_shipped_program <- function(g, label) {
  arch <- Rgguf::gguf_metadata(g)$general.architecture
  if (!is.character(arch) || length(arch) != 1L || is.na(arch)) {
    Rfmalloc::fm_abort("eformat", label, ": metadata key 'general.architecture' is missing or not a string",
                       call = sys.call(-1L))
  }
  if (!arch %in% names(.rllm_shipped)) {
    Rfmalloc::fm_abort("eunsupported", label, ": unknown architecture '", arch, "' (general.architecture); ",
                       "known: ", paste(sort(names(.rllm_shipped)), collapse = ", "), call = sys.call(-1L))
  }
  if (is.null(.rllm_frozen[[arch]])) {
    assign(arch, rllm_freeze(get(.rllm_shipped[[arch]], mode = "function")()), envir = .rllm_frozen)
  }
  .rllm_frozen[[arch]]
}
