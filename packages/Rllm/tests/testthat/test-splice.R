# OpenSpliceAI: the .pt importer and rllm_splice() against the upstream
# implementation's own outputs (fixtures models/openspliceai/expected:
# PyTorch, float32; its README says 1e-5 is generous for a correct float32
# implementation: float64 and float32 evaluations differ by 3.5e-7).

splice_fx <- function(...) fixture("models", "openspliceai", ...)

splice_inputs <- function() {
  fa <- readLines(splice_fx("inputs.fa"))
  hdr <- grep("^>", fa)
  ends <- c(hdr[-1L] - 1L, length(fa))
  s <- vapply(seq_along(hdr), function(k) paste(fa[(hdr[k] + 1L):ends[k]], collapse = ""), "")
  names(s) <- sub("^>(\\S+).*", "\\1", fa[hdr])
  s
}

# max |probability difference| against the expected file over `ids`
splice_gap <- function(flank, kind, ids, seeds = if (kind == "ensemble") 10:14 else 10L) {
  exp <- utils::read.delim(splice_fx("expected", sprintf("openspliceai_mane_%dnt_%s.tsv", flank, kind)))
  models <- splice_fx(sprintf("%dnt", flank), sprintf("model_%dnt_rs%d.pt", flank, seeds))
  got <- rllm_splice(models, splice_inputs()[ids])
  max(vapply(ids, function(s) {
    e <- as.matrix(exp[exp$seq_id == s, c("p_neither", "p_acceptor", "p_donor")])
    expect_identical(dim(got[[s]]), dim(e))
    expect_identical(colnames(got[[s]]), c("neither", "acceptor", "donor"))
    max(abs(got[[s]] - e))
  }, 0))
}

test_that("the importer reads every released checkpoint as the README describes it", {
  for (flank in c(80L, 400L, 2000L, 10000L)) {
    g <- tempfile(fileext = ".gguf")
    rllm_pt_to_gguf(splice_fx(sprintf("%dnt", flank), sprintf("model_%dnt_rs12.pt", flank)), g)
    f <- Rgguf::gguf_open(g)
    md <- Rgguf::gguf_metadata(f)
    expect_identical(md$general.architecture, "openspliceai")
    expect_equal(as.numeric(md$openspliceai.flank), flank)
    d <- Rgguf::gguf_tensors(f)
    expect_identical(nrow(d), c(`80` = 64L, `400` = 122L, `2000` = 180L, `10000` = 238L)[[as.character(flank)]])
    w <- d[d$name == "initial_conv.weight", ]
    expect_identical(c(w$ne0, w$ne1, w$ne2), c(1, 4, 32)) # PyTorch [32, 4, 1], reversed
    unlink(g)
  }
})

test_that("single checkpoints and five-seed ensembles equal upstream's probabilities within 1e-5", {
  # every flank, single (rs10) and ensemble (rs10-14), every sequence of the
  # expected files (seq01-03). Measured (native, single precision): at most
  # 7.4e-7 (10000 nt, rs10); the dense double-precision oracle 5.7e-7.
  for (flank in c(80L, 400L, 2000L, 10000L)) {
    for (kind in c("rs10", "ensemble")) {
      exp <- utils::read.delim(splice_fx("expected", sprintf("openspliceai_mane_%dnt_%s.tsv", flank, kind)))
      expect_lt(splice_gap(flank, kind, unique(exp$seq_id)), 1e-5, label = paste(flank, kind))
    }
  }
})

test_that("the native lowering equals rllm_execute, the program's oracle", {
  # conv1d (im2col and one product), batch normalization folded per
  # evaluation, crops, softmax: single precision against double, the sums
  # of up to 41 x 32 terms per convolution through 16 residual units.
  # Measured: 5.0e-8 (80 nt), 3.0e-8 (400 nt).
  s <- substr(splice_inputs()[["seq01"]], 1, 120)
  for (flank in c(80L, 400L)) {
    g <- tempfile(fileext = ".gguf")
    rllm_pt_to_gguf(splice_fx(sprintf("%dnt", flank), sprintf("model_%dnt_rs11.pt", flank)), g)
    x <- Rllm:::.rllm_one_hot(s)
    x <- cbind(matrix(0, 4L, flank / 2), x, matrix(0, 4L, flank / 2))
    want <- rllm_execute(Rllm:::.rllm_program_openspliceai(), g, list(sequence = x))$probabilities
    got <- rllm_splice(g, s)[[1L]]
    expect_lt(max(abs(t(got) - want)), 1e-5, label = paste(flank, "nt: max |native - oracle|"))
    unlink(g)
  }
})

test_that("sequences follow the command-line tool: upper-cased, other letters all zero, any length", {
  m <- splice_fx("80nt", "model_80nt_rs10.pt")
  s <- c(a = "ACGTNNacgtRYKSW", short = "GT")
  r <- rllm_splice(m, s)
  expect_named(r, c("a", "short"))
  expect_identical(dim(r$a), c(15L, 3L))
  expect_identical(dim(r$short), c(2L, 3L))
  expect_equal(rowSums(r$a), rep(1, 15), tolerance = 1e-6) # single precision: 3 terms, a few u
  up <- rllm_splice(m, c(a = "ACGTNNACGTNNNNN"))$a
  expect_equal(r$a, up, tolerance = 0)
})

test_that("bad checkpoints and arguments are classed errors naming the file", {
  bad <- tempfile(fileext = ".pt")
  writeLines("not a zip", bad)
  expect_error(rllm_splice(bad, "ACGT"), basename(bad), class = "fm_error_eformat")
  expect_error(rllm_splice(character(), "ACGT"), "models must be", class = "fm_error_earg")
  expect_error(rllm_splice(splice_fx("80nt", "model_80nt_rs10.pt"), NA_character_), "without NA",
               class = "fm_error_earg")
  expect_error(rllm_splice(c(splice_fx("80nt", "model_80nt_rs10.pt"), splice_fx("400nt", "model_400nt_rs10.pt")),
                           "ACGT"), "different flanks", class = "fm_error_earg")
  # rllm_run on the model: the sequence's channels, the kind of input, the
  # crops (80 positions dropped) and a float's range
  g <- tempfile(fileext = ".gguf")
  on.exit(unlink(g))
  m <- rllm_gguf_model(rllm_pt_to_gguf(splice_fx("80nt", "model_80nt_rs10.pt"), g), threads = 1)
  x <- matrix(0, 4L, 100L)
  expect_error(rllm_run(m, sequence = x[1:3, ]), "3 rows; the model's program takes 4", class = "fm_error_earg")
  expect_error(rllm_run(m, sequence = matrix(0, 1L, 5e6)), "1 rows", class = "fm_error_earg")
  expect_error(rllm_run(m, tokens = 1:3), "takes a sequence of 4 channels", class = "fm_error_eunsupported")
  expect_error(rllm_run(m, sequence = x, mask = rep(1, ncol(x))), "has no mask input", class = "fm_error_earg")
  expect_error(rllm_run(m, sequence = x[, 1:60]), "probabilities: output 0 drops 80 positions",
               class = "fm_error_earg")
  expect_error(rllm_run(m, sequence = x + 1e39), "float's range", class = "fm_error_earg")
  expect_error(rllm_run(m, sequence = x, outputs = "logits"), "probabilities\\); 'logits' is not one",
               class = "fm_error_earg")
  expect_identical(dim(rllm_run(m, sequence = x)$probabilities), c(3L, 20L))
})
