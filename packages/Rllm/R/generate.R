# Generation (core: fm_llm_generate; glue: src/r_model.c).

#' Generate tokens from a prompt
#'
#' Evaluates the prompt (in micro-batches of 256 tokens), then picks each new token from the
#' previous logits with [rllm_sample()]'s rule and evaluates it, one at a
#' time, in a KV cache. `temperature = 0` (the default) is greedy decoding,
#' ties broken by the lowest token id. Generation stops after `n_new`
#' tokens, or after emitting an end-of-generation token when `stop_at_eog`
#' is `TRUE`.
#'
#' @param model an `rllm_model` from [rllm_gguf_model()].
#' @param prompt a character string or raw vector (tokenized with
#'   [rllm_tokenize()], adding BOS/EOS as the model's metadata says when
#'   `add_special` is `TRUE`), or an integer vector of 0-based token ids
#'   used as given.
#' @param n_new number of tokens to generate (>= 0).
#' @param temperature,top_k,top_p,seed sampling parameters, see
#'   [rllm_sample()]; `seed = NULL` draws one from R's generator.
#' @param cache `NULL` (a fresh cache of `length(prompt) + n_new`
#'   positions, F16, no warning of its own) or an [rllm_cache()] of this
#'   model: the prompt then
#'   continues what the cache holds, and the cache keeps the prompt and the
#'   generated tokens (all but the last, which is not evaluated).
#' @param runtime where a fresh cache lives: `NULL` (default:
#'   `model$runtime`, else the heap) or an Rfmalloc runtime.
#' @param add_special,parse_special passed to [rllm_tokenize()] for a text
#'   prompt.
#' @param stop_at_eog stop after a token listed in `model$info$eog` (the
#'   tokenizer's end-of-generation ids, see [rllm_tokenizer()]). Default
#'   `TRUE`.
#' @return A list of class `rllm_generation` (printed as its text and
#'   speed): `raw`, the bytes of the generated tokens
#'   ([rllm_detokenize()] with `strip_space = FALSE`, so the bytes continue
#'   the prompt's: a leading space stays; special tokens render as nothing; use
#'   [rawToChar()] to read them as text); `tokens`, their integer ids;
#'   `prompt_tokens`; `timings`, a list of `prefill_s` (seconds to evaluate
#'   the prompt and pick the first token), `decode_s` (seconds for the rest),
#'   `n_prefill`, `n_decode` (tokens evaluated after the prompt), `threads`
#'   (GGML threads of the evaluations: the model's own count, else
#'   [Rfmalloc::fmalloc_threads()], 1 in a forked child; small batches run
#'   on one), `prefill_tps` and `decode_tps` (tokens per second).
#'   Timings are wall-clock seconds; `NA` rates when nothing was timed.
#'
#'   Positions past the model's training context (`model$info$n_ctx_train`)
#'   are used, as llama.cpp allows, after a warning of class
#'   `"rllm_warning_context"` naming both numbers (the prompt, what the
#'   cache already holds and `n_new - 1` counted up front).
#' @section Errors: `fm_error_earg` for bad arguments (token ids outside the
#'   vocabulary or `NA`, an `NA` or multi-string text prompt, a text prompt
#'   without a tokenizer, sampling parameters as in [rllm_sample()]);
#'   `fm_error_enospc` when a given cache cannot hold the prompt and
#'   `n_new - 1` more tokens (checked before starting); `fm_error_emismatch`
#'   for a cache of another model; `fm_error_eclosed` for a model or cache
#'   restored from a saved session or a cache whose runtime was closed;
#'   `fm_error_eformat` when the GGUF file shrank on disk since it was
#'   opened. A user interrupt raises `fm_error_ecancelled` (an `interrupt`
#'   condition); the error of a time limit ([setTimeLimit()]) is raised as R
#'   raises it, and nothing is printed by the way. The cache then holds what
#'   was evaluated before the stop. `fm_error_edegenerate` when the model's
#'   logits at a step have no value to draw (every one `NaN` or `-Inf`, as
#'   from `NaN` weights; the message names the generated token); a `NaN`
#'   logit among others is never drawn (unlike [rllm_sample()], which
#'   refuses one: there the logits are the caller's).
#' @source Greedy decoding, top-k sampling (Fan et al. 2018, "Hierarchical
#'   Neural Story Generation") and nucleus (top-p) sampling (Holtzman et al.
#'   2020, "The Curious Case of Neural Text Degeneration", ICLR), as
#'   [rllm_sample()] applies them. The reference behaviour is llama.cpp's
#'   (node-llama-cpp 3.21.1): the tests check that 64 greedy tokens after
#'   "Once upon a time" and the top-5 next-token ids equal its own on
#'   stories260K (F32, F16, Q8_0 and Q4_K_M).
#' @examples
#' f <- Sys.getenv("RFMALLOC_FIXTURES")
#' p <- file.path(f, "gguf", "stories260K.gguf")
#' if (nzchar(f) && file.exists(p)) {
#'   m <- rllm_gguf_model(p, threads = 1)
#'   g <- rllm_generate(m, "Once upon a time", n_new = 32)
#'   rawToChar(g$raw)
#' }
#' @export
rllm_generate <- function(model, prompt, n_new = 64L, temperature = 0, top_k = 40L,
                          top_p = 0.95, seed = NULL, cache = NULL, runtime = NULL,
                          add_special = TRUE, parse_special = FALSE, stop_at_eog = TRUE) {
  .rllm_check_model(model)
  n_new <- .rllm_check_count(n_new, "n_new", 0)
  s <- .rllm_sampling(temperature, top_k, top_p, seed)
  if (is.character(prompt) || is.raw(prompt)) {
    if (is.character(prompt) && (length(prompt) != 1L || is.na(prompt))) {
      Rfmalloc::fm_abort("earg", "prompt must be one string, a raw vector or token ids")
    }
    ids <- .rllm_text_ids(model, prompt, "the prompt", add_special, parse_special)
  } else {
    ids <- prompt
  }
  ids <- .rllm_check_tokens(ids, model$info$n_vocab, "prompt")
  cache <- .rllm_check_cache(cache, model)
  .rllm_check_runtime(runtime)
  past <- if (is.null(cache)) 0 else .Call(C_rllm_cache_state, cache$ptr)[1L]
  # in doubles: n_new may be up to .Machine$integer.max
  n_pos <- past + length(ids) + max(as.numeric(n_new), 1)
  if (n_pos > .Machine$integer.max) {
    Rfmalloc::fm_abort("earg", format(past, scientific = FALSE), " cached + ", length(ids),
                       " prompt + ", n_new, " new positions make ", format(n_pos, scientific = FALSE),
                       ", more than a cache holds (2147483647)")
  }
  .rllm_warn_past_context(model, past, n_pos - past - 1, call = sys.call())
  if (is.null(cache)) {
    cache <- .rllm_cache_new(model, length(ids) + max(n_new, 1L), runtime, "f16", call = sys.call())
  }
  if (!is.logical(stop_at_eog) || length(stop_at_eog) != 1L || is.na(stop_at_eog)) {
    Rfmalloc::fm_abort("earg", "stop_at_eog must be TRUE or FALSE")
  }
  stop <- if (stop_at_eog) model$info$eog else integer()
  r <- .Call(C_rllm_generate, model$ptr, cache$ptr, ids, n_new, s$temperature, s$top_k,
             s$top_p, s$seed, stop)
  toks <- r[[1L]]
  raw <- if (length(toks) && !is.null(model$tokenizer)) {
    rllm_detokenize(model, toks, strip_space = FALSE)
  } else {
    raw(0)
  }
  tm <- list(prefill_s = r[[2L]], decode_s = r[[3L]], n_prefill = as.integer(r[[4L]]),
             n_decode = as.integer(r[[5L]]), threads = r[[6L]])
  tm$prefill_tps <- if (tm$prefill_s > 0) tm$n_prefill / tm$prefill_s else NA_real_
  tm$decode_tps <- if (tm$decode_s > 0 && tm$n_decode > 0) tm$n_decode / tm$decode_s else NA_real_
  structure(list(raw = raw, tokens = toks, prompt_tokens = ids, timings = tm), class = "rllm_generation")
}

#' @rdname rllm_generate
#' @param x an `rllm_generation` (the result of `rllm_generate()`).
#' @param ... ignored.
#' @export
print.rllm_generation <- function(x, ...) {
  tm <- x$timings
  cat(sprintf("<rllm_generation> %d token(s) after a prompt of %d; %s tokens/s (decode), %d thread(s)\n",
              length(x$tokens), length(x$prompt_tokens), format(round(tm$decode_tps, 1)), as.integer(tm$threads)))
  if (length(x$raw)) {
    # the bytes as text, invalid UTF-8 shown as \x escapes rather than R's <ff>
    cat(iconv(rawToChar(x$raw[x$raw != as.raw(0)]), "UTF-8", "UTF-8", sub = "byte"), "\n", sep = "")
  }
  invisible(x)
}
