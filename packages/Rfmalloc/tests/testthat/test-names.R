test_that("save, get, list and delete named objects", {
  rt <- fm_runtime()
  x <- create_fmalloc_vector("double", 10, rt)
  x[] <- 1:10
  y <- fmalloc_save(x, "x")
  expect_true(fmalloc_is_mapped(y))
  expect_equal(fmalloc_describe(x)$name, "x") # named in place
  expect_equal(fmalloc_describe(y)$off, fmalloc_describe(x)$off)
  m <- fmalloc_save(matrix(1:6, 2, 3, dimnames = list(c("a", "b"), NULL)), "m", rt)
  expect_true(fmalloc_is_mapped(m))
  expect_identical(m[], matrix(1:6, 2, 3, dimnames = list(c("a", "b"), NULL)))
  fmalloc_save(c(u = TRUE, v = NA), "l", rt)
  fmalloc_save(as.raw(1:3), "r", rt)
  fmalloc_save(factor(c("p", "q", "p")), "f", rt)
  lst <- fmalloc_list(rt)
  expect_s3_class(lst, "data.frame")
  expect_named(lst, c("name", "type", "dims", "bytes"))
  expect_identical(lst$name, c("f", "l", "m", "r", "x"))
  expect_identical(lst$type, c("integer", "logical", "integer", "raw", "double"))
  expect_identical(lst$dims, c("3", "2", "2 x 3", "3", "10"))
  expect_equal(lst$bytes, c(12, 8, 24, 3, 80))
  expect_identical(fmalloc_get(rt, "m")[], m[])
  expect_identical(fmalloc_get(rt, "l")[], c(u = TRUE, v = NA))
  expect_identical(fmalloc_get(rt, "r")[], as.raw(1:3))
  expect_identical(fmalloc_get(rt, "f")[], factor(c("p", "q", "p")))
  expect_error(fmalloc_get(rt, "nope"), class = "fm_error_earg")
  expect_error(fmalloc_save(1:3, ".fm/attr/x", rt), class = "fm_error_earg")
  expect_error(fmalloc_save(1:3, "", rt), class = "fm_error_earg")
  expect_error(fmalloc_save(1:3, strrep("a", 247), rt), class = "fm_error_earg")
  expect_error(fmalloc_save(list(1), "w", rt), class = "fm_error_earg")
  expect_error(fmalloc_save(1:3, "w"), class = "fm_error_earg") # no runtime
  expect_true(fmalloc_delete(rt, "m"))
  expect_error(fmalloc_delete(rt, "m"), class = "fm_error_earg")
  expect_identical(m[1, 2], c(a = 3L)) # the live view survives the delete
  expect_null(fmalloc_describe(m)$name)
  expect_identical(fmalloc_list(rt)$name, c("f", "l", "r", "x"))
})

test_that("saving under an existing name replaces it; live views keep values", {
  rt <- fm_runtime()
  a <- fmalloc_save(as.double(1:5), "a", rt)
  v <- fmalloc_get(rt, "a")
  fmalloc_save(as.double(6:10), "a", rt)
  expect_identical(a[], as.double(1:5))
  expect_identical(v[], as.double(1:5))
  expect_identical(fmalloc_get(rt, "a")[], as.double(6:10))
  # saving a view of one name under another name copies
  b <- fmalloc_save(fmalloc_get(rt, "a"), "b", rt)
  expect_identical(sort(fmalloc_list(rt)$name), c("a", "b"))
  b[1] <- 0
  expect_identical(fmalloc_get(rt, "a")[1], 6)
  # old views of "a" were detached onto temporaries, freed by GC
  n_before <- fmalloc_info(rt)$n_blocks
  rm(a, v)
  invisible(gc())
  expect_lt(fmalloc_info(rt)$n_blocks, n_before)
})

test_that("named objects with dims and dimnames survive sync and reopen in a new process", {
  path <- fm_tmp()
  rt <- open_fmalloc(path, size_gb = 0.05)
  dn <- list(paste0("s", 1:5), paste0("g", 1:3))
  m <- create_fmalloc_matrix("double", 5, 3, rt, dimnames = dn)
  m[] <- (1:15) / 4
  fmalloc_save(m, "expr")
  i <- create_fmalloc_vector("integer", 7, rt)
  i[] <- -3:3
  fmalloc_save(i, "ints")
  t <- create_fmalloc_vector("double", 100, rt) # a temporary: not kept
  cleanup_fmalloc(rt)
  res <- run_r('rt <- open_fmalloc("@p@")
                m <- fmalloc_get(rt, "expr")
                m0 <- fmalloc_get(rt, "expr")
                m0[1, 1] <- -5  # a copy: the stored object is unchanged
                fmalloc_write_cols(m, 1, c(100, m[2:5, 1]))  # writes into it on purpose
                fmalloc_sync(rt)
                result <- list(m = m * 1, m0 = m0[1, 1], mapped = fmalloc_is_mapped(m),
                               ints = fmalloc_get(rt, "ints") + 0L,
                               list = fmalloc_list(rt), blocks = fmalloc_info(rt)$n_blocks)
                cleanup_fmalloc(rt)', p = path)
  expect_true(res$mapped)
  expected <- matrix((1:15) / 4, 5, 3, dimnames = dn)
  expected[1, 1] <- 100
  expect_identical(res$m, expected)
  expect_identical(res$m0, -5)
  expect_identical(res$ints, -3:3)
  expect_identical(res$list$name, c("expr", "ints"))
  expect_identical(res$list$dims, c("5 x 3", "7"))
  expect_equal(res$blocks, 4) # two objects, the dimnames companion and the copy m0
  rt <- open_fmalloc(path, read_only = TRUE)
  expect_equal(fmalloc_get(rt, "expr")[1, 1], 100)
  cleanup_fmalloc(rt)
})

test_that("saving a vector of another runtime copies it into the target runtime", {
  rt1 <- fm_runtime()
  rt2 <- fm_runtime(mode = "scratch")
  x <- create_fmalloc_vector("integer", 6, rt1)
  x[] <- 6:1
  y <- fmalloc_save(x, "x", rt2)
  expect_true(fmalloc_is_mapped(y))
  expect_equal(fmalloc_describe(y)$mode, "scratch")
  expect_null(fmalloc_describe(x)$name)
  y[1] <- 0L # a copy: y views the stored object
  expect_identical(y[], c(0L, 5:1))
  expect_identical(x[], 6:1)
  expect_identical(fmalloc_get(rt2, "x")[], 6:1)
})

# The slots a codec matrix is made of, but its storage and view: what
# fmalloc_save() keeps and fmalloc_get() gives back.
codec_slots <- function(x) {
  if (methods::is(x, "fmalloc_transposed")) x <- x@x
  list(spec = x@spec, cols = x@cols, dimnames = x@dimnames, transform = x@transform,
       variants = x@variants, samples = x@samples, source = x@source)
}

# Generated genotypes (no fixture needed): 7 samples x 10 variants, with
# missing calls, as a PLINK fileset written from fmalloc_bed()'s bytes.
codec_test_genotypes <- function() {
  set.seed(11)
  g <- matrix(sample(c(0L, 1L, 2L, NA), 70, replace = TRUE), 7, 10,
              dimnames = list(paste0("s", 1:7), paste0("rs", 1:10)))
  g
}

write_bed_of <- function(g, prefix) {
  rt <- open_fmalloc(tempfile(), size_gb = 0.01, mode = "scratch")
  on.exit(cleanup_fmalloc(rt))
  X <- fmalloc_bed(g, rt)
  writeBin(c(as.raw(c(0x6c, 0x1b, 0x01)), X@storage[]), paste0(prefix, ".bed"))
  writeLines(sprintf("f%d %s 0 0 %d -9", seq_len(nrow(g)), rownames(g), 1 + seq_len(nrow(g)) %% 2),
             paste0(prefix, ".fam"))
  writeLines(sprintf("1 %s 0.5 %d A G", colnames(g), 100 * seq_len(ncol(g))), paste0(prefix, ".bim"))
  prefix
}

test_that("codec matrices are saved by name: payload in place, description, list, get, delete", {
  rt <- fm_runtime()
  g <- codec_test_genotypes()
  H <- fmalloc_bed(g, rt)
  expect_identical(fmalloc_runtime_of(H), rt)
  expect_identical(fmalloc_runtime_of(t(H)), rt)
  y <- fmalloc_save(H, "H") # the runtime of its payload by default
  expect_s4_class(y, "fmalloc_codec_matrix")
  expect_identical(fmalloc_describe(H@storage)$name, "H") # named in place, not copied
  expect_identical(fmalloc_describe(H@storage)$dtype, "bed2")
  G <- fmalloc_get(rt, "H")
  expect_s4_class(G, "fmalloc_codec_matrix")
  expect_identical(fmalloc_describe(G@storage)$off, fmalloc_describe(H@storage)$off) # mapped
  expect_identical(fmalloc_runtime_of(G), rt)
  expect_identical(as.matrix(G), as.matrix(H))
  expect_identical(as.matrix(G), g * 1)
  expect_identical(codec_slots(G), codec_slots(H))

  # metadata, a column selection and a transform are kept
  meta <- fmalloc_codec_matrix(H@storage, "bed2", 7, 10, dimnames = dimnames(g),
                               variants = data.frame(chr = "1", pos = 1:10 * 100, id = colnames(g),
                                                     ref = "G", alt = "A", stringsAsFactors = FALSE),
                               samples = data.frame(iid = rownames(g), sex = c(1, 2, 1, 2, 0, 1, 2),
                                                    stringsAsFactors = FALSE))
  S <- suppressMessages(fmalloc_standardize(fmalloc_select(meta, c(9, 2, 2, 5)), scale = TRUE))
  fmalloc_save(S, "S", rt)
  S2 <- fmalloc_get(rt, "S")
  expect_identical(codec_slots(S2), codec_slots(S))
  expect_identical(fmalloc_variants(S2), fmalloc_variants(S))
  expect_identical(fmalloc_samples(S2), fmalloc_samples(S))
  expect_identical(as.matrix(S2), as.matrix(S))
  expect_identical(fmalloc_describe(S2@storage)$name, "S") # the viewed payload was copied: named "H"

  # dosages as a transposed view; ALP (raw bytes) with a selection
  D <- fmalloc_dosage(matrix(c(0, 0.5, 1, NA, 2, 1.5), 3, 2, dimnames = list(NULL, c("a", "b"))), rt)
  fmalloc_save(t(D), "tD", rt)
  tD <- fmalloc_get(rt, "tD")
  expect_s4_class(tD, "fmalloc_transposed")
  expect_identical(as.matrix(tD), t(as.matrix(D)))
  set.seed(3)
  A <- fmalloc_alp(matrix(round(rnorm(600), 2), 30, 20), rt)
  A3 <- fmalloc_select(A, c(3, 1, 20))
  fmalloc_save(A3, "A", rt)
  expect_identical(as.matrix(fmalloc_get(rt, "A")), as.matrix(A3))

  lst <- fmalloc_list(rt)
  expect_identical(lst$name, c("A", "H", "S", "tD"))
  expect_identical(lst$type, c("alp", "bed2", "bed2", "dos8"))
  expect_identical(lst$dims, c("30 x 3", "7 x 10", "7 x 4", "2 x 3"))
  expect_equal(lst$bytes, c(fmalloc_storage_bytes(A), 20, 20, 6))

  # replacing and deleting: live views keep their values on unnamed copies
  fmalloc_save(fmalloc_bed(g[, 1:2], rt), "H")
  expect_identical(as.matrix(G), g * 1)
  expect_identical(dim(fmalloc_get(rt, "H")), c(7L, 2L))
  expect_true(fmalloc_delete(rt, "S"))
  expect_identical(as.matrix(S2), as.matrix(S))
  expect_null(fmalloc_describe(S2@storage)$name)
  expect_identical(fmalloc_list(rt)$name, c("A", "H", "tD"))
  expect_false(any(grepl("S$", .Call(Rfmalloc:::C_fmr_runtime_dir, rt)$name)))
  expect_error(fmalloc_get(rt, "S"), class = "fm_error_earg")
  # a plain vector saved over a codec matrix's name is a plain vector again
  fmalloc_save(1:3, "tD", rt)
  expect_identical(fmalloc_get(rt, "tD")[], 1:3)
  expect_identical(fmalloc_list(rt)$type, c("alp", "bed2", "integer"))
})

test_that("a .bed mapped outside a runtime, or a heap payload, is copied; external codecs are refused", {
  d <- withr::local_tempdir()
  g <- codec_test_genotypes()
  B <- fmalloc_bed_open(write_bed_of(g, file.path(d, "gt")))
  expect_null(fmalloc_runtime_of(B))
  expect_error(fmalloc_save(B, "B"), class = "fm_error_earg", regexp = "copied")
  rt <- fm_runtime()
  old <- fmalloc_panel_budget()
  fmalloc_panel_budget(5) # two columns of 2 bytes per read: several reads
  withr::defer(fmalloc_panel_budget(old))
  B2 <- fmalloc_save(fmalloc_select(B, 10:1), "B", rt)
  expect_identical(fmalloc_runtime_of(B2), rt)
  expect_identical(as.matrix(B2), g[, 10:1] * 1)
  expect_identical(fmalloc_variants(B2), fmalloc_variants(B)[10:1, ])
  expect_identical(fmalloc_samples(B2), fmalloc_samples(B))
  expect_identical(B2@spec[4], 0) # the bytes lie in the runtime, no header
  unlink(file.path(d, "gt.bed"))
  expect_identical(as.matrix(fmalloc_get(rt, "B")), g[, 10:1] * 1) # the file is not needed

  heap <- fmalloc_codec_matrix(as.raw(c(0x1b, 0xe4)), "bed2", 4, 2)
  expect_null(fmalloc_runtime_of(heap))
  expect_error(fmalloc_save(heap, "h"), class = "fm_error_earg")
  fmalloc_save(heap, "h", rt)
  expect_identical(as.matrix(fmalloc_get(rt, "h")), as.matrix(heap))

  # a .bed cut short after it was mapped: the copy stops with the file named
  C <- fmalloc_bed_open(write_bed_of(g, file.path(d, "cut")))
  writeBin(readBin(file.path(d, "cut.bed"), "raw", 9), file.path(d, "cut.bed"))
  expect_error(fmalloc_save(C, "C", rt), class = "fm_error_eio", regexp = "cut.bed.*variant 4")
  expect_false("C" %in% fmalloc_list(rt)$name)

  X <- Rfmalloc:::.test_ext_matrix(diag(2))
  expect_null(fmalloc_runtime_of(X))
  expect_error(fmalloc_save(X, "x", rt), class = "fm_error_eunsupported", regexp = "as.matrix")
  expect_false("x" %in% fmalloc_list(rt)$name)
})

test_that("a saved codec matrix is mapped again, equal, in a new process", {
  path <- fm_tmp()
  rt <- open_fmalloc(path, size_gb = 0.05)
  d <- withr::local_tempdir()
  g <- codec_test_genotypes()
  B <- suppressMessages(fmalloc_standardize(fmalloc_bed_open(write_bed_of(g, file.path(d, "gt")))))
  fmalloc_save(B, "B", rt)
  D <- fmalloc_dosage(matrix(seq(0, 2, length.out = 12), 4, 3), rt)
  fmalloc_save(t(D), "tD")
  expected <- list(B = as.matrix(B), slots = codec_slots(fmalloc_get(rt, "B")),
                   tD = as.matrix(t(D)), list = fmalloc_list(rt))
  cleanup_fmalloc(rt)
  res <- run_r('rt <- open_fmalloc("@p@", read_only = TRUE)
                B <- fmalloc_get(rt, "B")
                tD <- fmalloc_get(rt, "tD")
                result <- list(B = as.matrix(B), slots = list(spec = B@spec, cols = B@cols,
                                 dimnames = B@dimnames, transform = B@transform,
                                 variants = B@variants, samples = B@samples, source = B@source),
                               tD = as.matrix(tD), list = fmalloc_list(rt),
                               name = fmalloc_describe(B@storage)$name,
                               same_rt = identical(fmalloc_runtime_of(B), rt))
                cleanup_fmalloc(rt)', p = path)
  expect_identical(res$B, expected$B)
  expect_identical(res$slots, expected$slots)
  expect_identical(res$tD, expected$tD)
  expect_identical(res$list, expected$list)
  expect_identical(res$list$type, c("bed2", "dos8"))
  expect_identical(res$name, "B") # mapped from the file, not copied
  expect_true(res$same_rt)
})
