# Tokenizers built from GGUF metadata: R glue over the core's fm_tok.h
# (src/r_tok.c). The C entry points return an error marker (class
# "rllm_tok_error": status and message) instead of raising; .tok_value()
# raises it as an fm_error_<status> condition with the caller's call.

.tok_value <- function(res, call, path = NULL) {
  if (inherits(res, "rllm_tok_error")) {
    # prefixed with the file's name as the model's load errors are
    named <- is.null(path) || grepl(basename(path), res[[2]], fixed = TRUE)
    Rfmalloc::fm_abort(res[[1]], if (!named) paste0(basename(path), ": "), res[[2]], call = call)
  }
  res
}

# The tokenizer of a model's GGUF file, or NULL where the file has none.
# Its vocabulary must be the model's: ids index token_embd's rows.
.tok_of_model <- function(g, n_vocab, path, call) {
  p <- .tok_value(.Call(C_fmr_tok_from_gguf, g, TRUE), call, path)
  if (is.null(p)) return(NULL)
  tok <- .tok_new(p, path, call)
  if (tok$n_vocab != n_vocab) {
    Rfmalloc::fm_abort("eformat", basename(path), ": the tokenizer has ", tok$n_vocab,
                       " tokens (tokenizer.ggml.tokens), but the model's vocabulary (token_embd.weight) has ",
                       n_vocab, call = call)
  }
  tok
}

.tok_describe <- function(x) {
  if (is.null(x)) return("NULL")
  cls <- class(x)[1L]
  if (is.atomic(x)) sprintf("a %s vector of length %d", cls, length(x)) else sprintf("an object of class %s", cls)
}

.tok_flag <- function(v, name, call) {
  if (!is.logical(v) || length(v) != 1L || is.na(v)) {
    Rfmalloc::fm_abort("earg", name, " must be TRUE or FALSE, not ", .tok_describe(v), call = call)
  }
  v
}

.tok_new <- function(ptr, path, call) {
  info <- .tok_value(.Call(C_fmr_tok_info, ptr), call)
  env <- new.env(parent = emptyenv())
  env$ptr <- ptr
  structure(c(list(.env = env, path = path), info), class = "rllm_tokenizer")
}

# The live external pointer of a tokenizer; a tokenizer restored from a
# saved session is rebuilt from its file once.
.tok_ptr <- function(tok, call) {
  p <- tok$.env$ptr
  if (!isTRUE(.Call(C_fmr_tok_is_live, p))) {
    if (is.character(tok$path) && length(tok$path) == 1L && !is.na(tok$path) && file.exists(tok$path)) {
      p <- .tok_value(.Call(C_fmr_tok_from_path, tok$path), call)
      tok$.env$ptr <- p
    } else {
      Rfmalloc::fm_abort("eclosed", "the tokenizer was released and its GGUF file ",
                         if (is.null(tok$path)) "is unknown" else paste0("'", tok$path, "' is absent"),
                         call = call)
    }
  }
  p
}

.tok_resolve <- function(x, call) {
  if (inherits(x, "rllm_tokenizer")) return(x)
  if (inherits(x, "rllm_model")) {
    if (inherits(x$tokenizer, "rllm_tokenizer")) return(x$tokenizer)
    Rfmalloc::fm_abort("earg", "this model has no tokenizer (its GGUF file '", x$path,
                       "' has no key tokenizer.ggml.model)", call = call)
  }
  Rfmalloc::fm_abort("earg", "x must be an rllm_tokenizer or an rllm_model, not ", .tok_describe(x), call = call)
}

# Token ids of a vocabulary of n_vocab tokens: whole numbers in
# 0..n_vocab-1, no NA; the message names the first bad one and its position.
.tok_ids <- function(tokens, n_vocab, call) {
  if (!is.numeric(tokens)) {
    Rfmalloc::fm_abort("earg", "tokens must be whole-number token ids without NA, not ",
                       .tok_describe(tokens), call = call)
  }
  bad <- which(is.na(tokens) | tokens != trunc(tokens) | tokens < 0 | tokens >= n_vocab)
  if (length(bad)) {
    i <- bad[1L]
    v <- tokens[i]
    what <- if (is.na(v) || v != trunc(v)) "not a whole number" else "outside the vocabulary"
    Rfmalloc::fm_abort("earg", "token ", i, " has id ", format(v, digits = 15), ", ", what,
                       ": the vocabulary has ", n_vocab, " tokens, so ids are 0..", n_vocab - 1,
                       call = call)
  }
  as.integer(tokens)
}

#' A tokenizer built from a GGUF file's metadata
#'
#' Builds the tokenizer that a GGUF model file describes in its
#' `tokenizer.ggml.*` metadata, in C, without GGML or llama.cpp:
#' SentencePiece as llama uses it (`tokenizer.ggml.model = "llama"`: merges
#' by score with byte fallback), GPT-2 byte-level BPE (`"gpt2"`: merges by
#' rank, with the pre-tokenizer that `tokenizer.ggml.pre` names) or WordPiece
#' (`"bert"`).
#'
#' Token ids are 0-based, exactly the positions in `tokenizer.ggml.tokens`,
#' as llama.cpp numbers them. The tokenizer keeps its own copy of the
#' vocabulary; the file may be closed afterwards. A tokenizer restored from
#' a saved session is rebuilt from its file on first use.
#'
#' Supported pre-tokenizers (`tokenizer.ggml.pre`, BPE only): the GPT-2
#' pattern (`default`, `gpt-2`, `mpt`, `olmo`, `jais`, `phi-2`, `roberta-bpe`,
#' jina variants, `gigachat`); single digits then GPT-2 (`starcoder`,
#' `refact`, `command-r`, `smollm`, `codeshell`, `exaone`, `minerva-7b`); the
#' llama3 pattern (`llama3`, `llama-v3`, `llama-bpe`, `falcon3`, `falcon-h1`,
#' `pixtral`, `lfm2`, `dbrx`, `smaug-bpe`); qwen2 (`qwen2`,
#' `deepseek-r1-qwen`, `megrez`, `stablelm2`); `deepseek-coder`; `falcon`.
#'
#' @param x a path to a GGUF file, a `"gguf_file"` from [Rgguf::gguf_open()],
#'   an `"rllm_model"` (its tokenizer is returned) or an `"rllm_tokenizer"`
#'   (returned as is).
#' @return An object of class `"rllm_tokenizer"`: a list with `model`
#'   (`"llama"`, `"gpt2"` or `"bert"`), `pre`, `n_vocab`, the 0-based special
#'   ids `bos`, `eos`, `eot`, `eom`, `unk`, `sep`, `pad`, `mask` (`NA` when the
#'   vocabulary has none; for WordPiece `bos` is `[CLS]`), the logical flags
#'   `add_bos`, `add_eos`, `add_sep`, `add_space_prefix` that decide what
#'   `add_special = TRUE` adds, `eog` (the 0-based ids that end generation,
#'   ascending: `eos`, `eot`, `eom` and every control token named like an
#'   end of turn, such as `<|im_end|>`, `<|eot_id|>` or `<end_of_turn>`; the
#'   rule of llama.cpp's vocabulary), and `path`.
#' @section Errors: `fm_error_eio` when the file cannot be read,
#'   `fm_error_eformat` for a malformed file or tokenizer metadata of the
#'   wrong type or length (the message names the key),
#'   `fm_error_eunsupported` for a file without a tokenizer, another
#'   tokenizer model (e.g. `"t5"`) or an unknown pre-tokenizer,
#'   `fm_error_earg` for anything other than the inputs above.
#' @section Source: the algorithms' definitions (Sennrich et al. 2016, BPE;
#'   Radford et al. 2019, byte-level BPE; Kudo and Richardson 2018,
#'   SentencePiece; Devlin et al. 2019 and BERT's tokenization.py,
#'   WordPiece) and the pre-tokenizer patterns documented by llama.cpp and
#'   Hugging Face tokenizers. The oracle is llama.cpp (node-llama-cpp 3.21.1):
#'   all 46 upstream test cases of its five reference vocabularies (llama
#'   SentencePiece, GPT-2, deepseek-coder, falcon, BERT) give the same ids.
#' @seealso [rllm_tokenize()], [rllm_detokenize()], [rllm_vocab()]
#' @examples
#' f <- Sys.getenv("RFMALLOC_FIXTURES")
#' p <- file.path(f, "gguf", "stories260K.gguf")
#' if (nzchar(f) && file.exists(p)) {
#'   tok <- rllm_tokenizer(p)
#'   ids <- rllm_tokenize(tok, "Once upon a time")
#'   rawToChar(rllm_detokenize(tok, ids))
#' }
#' @export
rllm_tokenizer <- function(x) {
  call <- sys.call()
  if (inherits(x, "rllm_tokenizer")) return(x)
  if (inherits(x, "rllm_model")) return(.tok_resolve(x, call))
  if (inherits(x, "gguf_file")) {
    p <- .tok_value(.Call(C_fmr_tok_from_gguf, x, FALSE), call, attr(x, "path"))
    return(.tok_new(p, attr(x, "path"), call))
  }
  if (!is.character(x) || length(x) != 1L || is.na(x)) {
    Rfmalloc::fm_abort("earg", "x must be a GGUF file path, a gguf_file, an rllm_model or an rllm_tokenizer, not ",
                       .tok_describe(x), call = call)
  }
  path <- normalizePath(path.expand(x), mustWork = FALSE)
  if (!file.exists(path) || dir.exists(path)) {
    Rfmalloc::fm_abort("eio", sprintf("GGUF file '%s' does not exist", x), call = call)
  }
  p <- .tok_value(.Call(C_fmr_tok_from_path, path), call, path)
  .tok_new(p, path, call)
}

#' Tokenize text
#'
#' Turns text into token ids with a tokenizer built from GGUF metadata
#' ([rllm_tokenizer()]), with the results of llama.cpp's tokenizer.
#'
#' Text is bytes: a raw vector is tokenized as given, a string as its
#' UTF-8 bytes. A string marked `"latin1"` (see [Encoding()]) is translated
#' to UTF-8 first, as is an unmarked one in a session whose locale is not
#' UTF-8; every other string (marked `"UTF-8"` or `"bytes"`, or unmarked in
#' a UTF-8 locale) is taken as its bytes, so a string holding bytes that are
#' not UTF-8, such as `"\xff\xfe"`, gives the same ids as
#' `as.raw(c(0xff, 0xfe))`.
#' Bytes that are not well-formed UTF-8 never fail: SentencePiece encodes
#' them as `<0xNN>` byte tokens, byte-level BPE as the tokens of those bytes
#' (both round-trip through [rllm_detokenize()]), WordPiece drops them.
#'
#' Special tokens: the text of a control token (such as `"<s>"` or
#' `"<|endoftext|>"`) or of the unknown token written in `text` is plain text
#' unless `parse_special = TRUE`, when it becomes that token's id.
#' User-defined tokens (Hugging Face's non-special added tokens) are always
#' matched, as Hugging Face tokenizers and llama.cpp do. With
#' `add_special = TRUE`, BOS (WordPiece: `[CLS]`) is prepended and EOS or
#' `[SEP]` appended as the metadata's `add_bos_token`, `add_eos_token` and
#' `add_sep_token` say (defaults: SentencePiece adds BOS; BPE adds nothing,
#' except the llama3 family BOS; WordPiece adds `[CLS]` and `[SEP]`).
#' SentencePiece prefixes the text (and any text right after a special token)
#' with a space when `add_space_prefix` is set, as llama does.
#'
#' @param x an `"rllm_tokenizer"` or an `"rllm_model"`.
#' @param text one string (not `NA`) or a raw vector of bytes. `""` and
#'   `raw(0)` give no ids (only the special ones with `add_special = TRUE`).
#' @param add_special `TRUE` or `FALSE`: add BOS/EOS/SEP as the metadata says.
#' @param parse_special `TRUE` or `FALSE`: turn control-token texts in
#'   `text` into their ids.
#' @return An integer vector of 0-based token ids (length 0 possible).
#' @section Errors: `fm_error_earg` for an `x`, `text` or flag of the wrong
#'   kind (a character vector of length other than 1, `NA`) and for an
#'   unmarked string that is not valid in a non-UTF-8 locale's encoding;
#'   `fm_error_eclosed` when a restored tokenizer's file is gone;
#'   `fm_error_enomem`.
#' @section Source: see [rllm_tokenizer()]; oracle llama.cpp's `llama_tokenize`.
#' @examples
#' f <- Sys.getenv("RFMALLOC_FIXTURES")
#' p <- file.path(f, "gguf", "stories260K.gguf")
#' if (nzchar(f) && file.exists(p)) {
#'   tok <- rllm_tokenizer(p)
#'   print(rllm_tokenize(tok, "Once upon a time"))          # 1 (BOS), then the text
#'   print(rllm_tokenize(tok, "<s>", add_special = FALSE))  # the characters < s >
#'   rllm_tokenize(tok, "<s>", add_special = FALSE, parse_special = TRUE)  # 1
#' }
#' @export
rllm_tokenize <- function(x, text, add_special = TRUE, parse_special = FALSE) {
  call <- sys.call()
  tok <- .tok_resolve(x, call)
  if (is.atomic(text) && length(text) == 1L && is.na(text)) {
    Rfmalloc::fm_abort("earg", "text is NA: a missing string cannot be tokenized (NA is not allowed)",
                       call = call)
  }
  if (!is.raw(text) && !(is.character(text) && length(text) == 1L && !is.na(text))) {
    Rfmalloc::fm_abort("earg", "text must be a single string or a raw vector, not ", .tok_describe(text),
                       call = call)
  }
  .tok_flag(add_special, "add_special", call)
  .tok_flag(parse_special, "parse_special", call)
  bytes <- .tok_bytes(text, call)
  .tok_value(.Call(C_fmr_tok_tokenize, .tok_ptr(tok, call), bytes, add_special, parse_special), call)
}

# The bytes that text stands for. A string declared latin1 (or, in a locale
# that is not UTF-8, one in the native encoding) is translated to UTF-8; any
# other string is taken as its bytes, so bytes that are not UTF-8 reach the
# tokenizer's byte fallback instead of R's "<ff>" escapes.
.tok_bytes <- function(text, call) {
  if (is.raw(text)) return(text)
  from <- switch(Encoding(text), latin1 = "latin1", unknown = if (!l10n_info()[["UTF-8"]]) "")
  if (is.null(from)) return(charToRaw(text))
  b <- iconv(text, from, "UTF-8", toRaw = TRUE)[[1L]]
  if (is.null(b)) {
    Rfmalloc::fm_abort("earg", "text is not valid in the session's encoding (", l10n_info()[["codeset"]],
                       "), so it has no UTF-8 form; give its bytes as a raw vector", call = call)
  }
  b
}

#' Detokenize token ids to bytes
#'
#' Concatenates the bytes of each token: SentencePiece and WordPiece pieces
#' with U+2581 turned into a space and `<0xNN>` tokens into the byte `NN`;
#' byte-level BPE tokens through GPT-2's byte alphabet reversed;
#' user-defined tokens as stored. A UTF-8 character whose bytes are spread
#' over several tokens is therefore reassembled; the result is not checked
#' for UTF-8, and `rawToChar()` (or `iconv(list(r), "UTF-8", ...)`) is the
#' caller's choice.
#'
#' @param x an `"rllm_tokenizer"` or an `"rllm_model"`.
#' @param tokens whole-number 0-based token ids (integer or double, no `NA`).
#' @param special `TRUE` or `FALSE`: control and unknown tokens (BOS, EOS,
#'   `[CLS]`, `<unk>`, ...) give their text; by default they give nothing.
#' @param strip_space `TRUE` or `FALSE`: drop one leading space of the first
#'   token that gives bytes, when the tokenizer prefixes a space
#'   (SentencePiece with `add_space_prefix`) or marks word starts (WordPiece),
#'   as llama.cpp's detokenizer does; then
#'   `rllm_detokenize(x, rllm_tokenize(x, s))` gives back `s` for
#'   SentencePiece and byte-level BPE, with or without `add_special`
#'   (llama.cpp keeps the space when the ids start with BOS). Use `FALSE` for
#'   a continuation (tokens generated after a prompt).
#' @return A raw vector.
#' @section Errors: `fm_error_earg` for ids outside `0..n_vocab-1`, `NA`
#'   or fractional ids (the message names the first one's position, its
#'   value and the vocabulary's size), flags
#'   that are not `TRUE`/`FALSE`; `fm_error_eclosed` as for [rllm_tokenize()].
#' @section Source: see [rllm_tokenizer()].
#' @examples
#' f <- Sys.getenv("RFMALLOC_FIXTURES")
#' p <- file.path(f, "gguf", "stories260K.gguf")
#' if (nzchar(f) && file.exists(p)) {
#'   tok <- rllm_tokenizer(p)
#'   ids <- rllm_tokenize(tok, "caf\u00e9")
#'   rawToChar(rllm_detokenize(tok, ids))
#' }
#' @export
rllm_detokenize <- function(x, tokens, special = FALSE, strip_space = TRUE) {
  call <- sys.call()
  tok <- .tok_resolve(x, call)
  ids <- .tok_ids(tokens, tok$n_vocab, call)
  .tok_flag(special, "special", call)
  .tok_flag(strip_space, "strip_space", call)
  .tok_value(.Call(C_fmr_tok_detokenize, .tok_ptr(tok, call), ids, special, strip_space), call)
}

#' The vocabulary of a tokenizer
#'
#' @param x an `"rllm_tokenizer"` or an `"rllm_model"`.
#' @return A data frame with one row per token: `id` (0-based integer),
#'   `text` (the stored text: UTF-8, or marked `"bytes"` when it is not valid
#'   UTF-8; `NA` if it holds a NUL byte; BPE texts are in GPT-2's byte
#'   alphabet, e.g. `"\u0120the"` for `" the"`), `type` (`"undefined"`,
#'   `"normal"`, `"unknown"`, `"control"`, `"user_defined"`, `"unused"` or
#'   `"byte"`, from `tokenizer.ggml.token_type`), `score` (double; 0 when
#'   the file has no scores), and `bytes`, a list of raw vectors: what each
#'   token contributes to [rllm_detokenize()] with `special = TRUE`.
#' @section Errors: `fm_error_earg` for another `x`; `fm_error_eclosed` as
#'   for [rllm_tokenize()].
#' @section Source: the `tokenizer.ggml.tokens`, `token_type` and `scores`
#'   arrays of the GGUF metadata (<https://github.com/ggml-org/ggml/blob/master/docs/gguf.md>); see
#'   [rllm_tokenizer()].
#' @export
rllm_vocab <- function(x) {
  call <- sys.call()
  tok <- .tok_resolve(x, call)
  p <- .tok_ptr(tok, call)
  v <- .tok_value(.Call(C_fmr_tok_vocab, p), call)
  types <- c("undefined", "normal", "unknown", "control", "user_defined", "unused", "byte")
  df <- data.frame(id = v[[1]], text = v[[2]], type = types[v[[3]] + 1L], score = v[[4]],
                   stringsAsFactors = FALSE)
  df$bytes <- .tok_value(.Call(C_fmr_tok_pieces, p, v[[1]], TRUE), call)
  df
}

#' @rdname rllm_tokenizer
#' @param ... ignored.
#' @export
format.rllm_tokenizer <- function(x, ...) {
  kind <- switch(x$model, llama = "SentencePiece", gpt2 = "byte-level BPE", bert = "WordPiece", x$model)
  ids <- c(bos = x$bos, eos = x$eos, eot = x$eot, unk = x$unk, sep = x$sep, pad = x$pad)
  ids <- ids[!is.na(ids)]
  texts <- tryCatch(.Call(C_fmr_tok_text, .tok_ptr(x, NULL), as.integer(ids)), error = function(e) NULL)
  if (!is.character(texts)) texts <- rep(NA_character_, length(ids))
  shown <- if (length(ids)) {
    paste(sprintf("%s %d%s", names(ids), ids, ifelse(is.na(texts), "", sprintf(" '%s'", texts))),
          collapse = ", ")
  } else {
    "none"
  }
  adds <- c(if (isTRUE(x$add_bos)) "BOS", if (isTRUE(x$add_sep)) "SEP", if (isTRUE(x$add_eos)) "EOS")
  c(sprintf("<rllm_tokenizer: %s (tokenizer.ggml.model '%s'), %d tokens>", kind, x$model, x$n_vocab),
    if (identical(x$model, "gpt2")) sprintf("  pre-tokenizer: %s", x$pre),
    sprintf("  special ids (0-based): %s", shown),
    sprintf("  add_special adds: %s%s", if (length(adds)) paste(adds, collapse = ", ") else "nothing",
            if (isTRUE(x$add_space_prefix)) "; text gets a space prefix" else ""),
    if (!is.null(x$path)) sprintf("  from: %s", x$path))
}

#' @rdname rllm_tokenizer
#' @export
print.rllm_tokenizer <- function(x, ...) {
  cat(format(x, ...), sep = "\n")
  invisible(x)
}
