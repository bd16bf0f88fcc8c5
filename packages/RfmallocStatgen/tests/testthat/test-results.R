# The methods of statgen_gwas() results on the 1kg fixture (QT and a second,
# simulated phenotype with its own missing samples): summary() counts and
# lambda_GC recomputed independently (also from plink2's own P values),
# print(), plot() (Manhattan and QQ, into a png device), and
# statgen_write_glm()'s files against plink2's .glm.linear.

results_fixture <- function() {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  ph <- kg_pheno()
  set.seed(20240612)
  ph$Q2 <- stats::rnorm(nrow(ph))
  ph$Q2[sample(nrow(ph), 100)] <- NA
  list(X = X, ph = ph, res = statgen_gwas(X, ph[c("#FID", "IID", "QT", "Q2")]))
}

# lambda_GC as defined: median 1-df chi-square over its null median
lambda_of <- function(p) {
  p <- p[!is.na(p)]
  stats::median(stats::qchisq(p, 1, lower.tail = FALSE)) / stats::qchisq(0.5, 1)
}

test_that("summary() counts tests, errors by code, hits and lambda_GC per phenotype", {
  f <- results_fixture()
  res <- f$res
  s <- summary(res)
  expect_s3_class(s, "summary.statgen_gwas")
  expect_identical(s$PHENO, c("QT", "Q2"))
  expect_identical(s$tests, c(25161L, 25161L))
  for (ph in c("QT", "Q2")) {
    d <- res[res$PHENO == ph, ]
    i <- match(ph, s$PHENO)
    expect_identical(s$errors[i], sum(d$ERRCODE != "."))
    expect_identical(s$hits[i], sum(d$P < 5e-8, na.rm = TRUE))
    expect_equal(s$lambda_gc[i], lambda_of(d$P), tolerance = 1e-12)
    expect_true(is.na(s$firth[i])) # linear: no Firth column
  }
  # the values themselves (QT's monomorphic variants, the simulated signal)
  expect_identical(s$errors, c(361L, sum(res$ERRCODE[res$PHENO == "Q2"] != ".")))
  expect_identical(s$hits[1], 8L)
  expect_identical(s$hits[2], 0L)
  expect_gt(s$lambda_gc[1], 1.2) # QT carries ancestry confounding (README)
  expect_lt(abs(s$lambda_gc[2] - 1), 0.15) # pure noise
  # errors by code
  codes <- attr(s, "errcodes")
  expect_identical(as.integer(codes["QT", "CONST_OMITTED_ALLELE"]), 361L)
  expect_identical(as.integer(codes["QT", "."]), 24800L)
  expect_identical(as.integer(codes["Q2", "."] + codes["Q2", "CONST_OMITTED_ALLELE"]), 25161L)
  expect_identical(sum(codes), nrow(res))
  # another threshold
  s2 <- summary(res, threshold = 1e-3)
  expect_identical(s2$hits[2], sum(res$P[res$PHENO == "Q2"] < 1e-3, na.rm = TRUE))
  expect_error(summary(res, threshold = 2), class = "fm_error_earg", regexp = "threshold")
})

test_that("summary() of QT agrees with the same counts from plink2's own output", {
  f <- results_fixture()
  p2 <- plink2_glm("QT", "linear", c("--glm", "allow-no-covars", "hide-covar"))
  s <- summary(f$res)
  expect_identical(s$errors[1], sum(p2$ERRCODE != "."))
  expect_identical(s$hits[1], sum(p2$P < 5e-8, na.rm = TRUE))
  # plink2's P carry 6 significant digits
  expect_equal(s$lambda_gc[1], lambda_of(p2$P), tolerance = 1e-4)
})

test_that("print() shows the summary line of each phenotype and the strongest association", {
  f <- results_fixture()
  res <- f$res
  out <- utils::capture.output(ret <- withVisible(print(res)))
  expect_false(ret$visible)
  expect_identical(ret$value, res)
  lam <- lambda_of(res$P[res$PHENO == "QT"])
  expect_identical(out[1], "<linear association: 2 phenotypes>")
  expect_true(sprintf("QT: 25,161 tests, 361 with an ERRCODE, 8 below 5e-08, lambda_GC %.3f", lam) %in% out)
  expect_true(any(grepl("^Q2: 25,161 tests, [0-9,]+ with an ERRCODE, 0 below 5e-08, lambda_GC [0-9.]+$", out)))
  expect_true("ERRCODE counts:" %in% out)
  expect_true("strongest associations:" %in% out)
  top <- res$ID[which.min(res$P)]
  expect_identical(top, "21:40633631:G:C")
  hdr <- grep("strongest associations:", out, fixed = TRUE)
  expect_match(out[hdr + 2], top, fixed = TRUE) # the first row after the header
  # n rows of associations
  out3 <- utils::capture.output(print(res, n = 3))
  expect_true(any(grepl("21:40628765:C:T", out3, fixed = TRUE))) # second strongest
  expect_false(any(grepl(res$ID[order(res$P)][4], out3, fixed = TRUE)))
})

test_that("plot() draws Manhattan and QQ plots into a png device and returns its argument invisibly", {
  f <- results_fixture()
  res <- f$res
  for (args in list(list(), list(type = "qq"), list(type = "manhattan", pheno = "Q2", threshold = 1e-5),
                    list(type = "qq", pheno = "Q2"))) {
    png_file <- tempfile(fileext = ".png")
    grDevices::png(png_file, width = 600, height = 400)
    ret <- withVisible(do.call(plot, c(list(res), args)))
    grDevices::dev.off()
    expect_false(ret$visible)
    expect_identical(ret$value, res)
    expect_gt(file.size(png_file), 1000)
  }
  grDevices::png(tempfile(fileext = ".png"))
  expect_error(plot(res, pheno = "BMI"), class = "fm_error_earg", regexp = "no phenotype 'BMI' in x")
  expect_error(plot(res, type = "volcano"), class = "fm_error_earg", regexp = "type must be one of")
  grDevices::dev.off()
})

test_that("statgen_write_glm() writes <prefix>.<PHENO>.glm.linear in plink2's layout", {
  f <- results_fixture()
  res <- f$res
  dir <- tempfile("glm")
  dir.create(dir)
  prefix <- file.path(dir, "ours")
  ret <- withVisible(statgen_write_glm(res, prefix))
  expect_false(ret$visible)
  paths <- ret$value
  expect_identical(names(paths), c("QT", "Q2"))
  expect_identical(unname(paths), paste0(prefix, c(".QT", ".Q2"), ".glm.linear"))
  expect_setequal(list.files(dir), c("ours.QT.glm.linear", "ours.Q2.glm.linear")) # no .tmp left
  header <- c("#CHROM", "POS", "ID", "REF", "ALT", "A1", "TEST", "OBS_CT", "BETA", "SE", "T_STAT", "P", "ERRCODE")
  expect_identical(readLines(paths[["QT"]], n = 1L), paste(header, collapse = "\t"))
  p2 <- plink2_glm("QT", "linear", c("--glm", "allow-no-covars", "hide-covar"))
  expect_identical(names(p2), header)
  for (ph in c("QT", "Q2")) {
    d <- utils::read.delim(paths[[ph]], check.names = FALSE, na.strings = "NA",
                           colClasses = c(`#CHROM` = "character"))
    mine <- res[res$PHENO == ph, ]
    expect_identical(names(d), header)
    expect_identical(nrow(d), 25161L)
    for (nm in c("#CHROM", "ID", "REF", "ALT", "A1", "TEST", "ERRCODE")) expect_identical(d[[nm]], mine[[nm]])
    expect_identical(d$POS, as.integer(mine$POS))
    expect_identical(d$OBS_CT, mine$OBS_CT)
    # 6 significant digits of our values (%.6g read back)
    for (nm in c("BETA", "SE", "T_STAT", "P")) {
      expect_identical(is.na(d[[nm]]), is.na(mine[[nm]]))
      expect_equal(d[[nm]], signif(mine[[nm]], 6), tolerance = 1e-14)
    }
  }
  # the QT file against plink2's: text identical outside the statistics;
  # BETA, SE and T_STAT within one unit of the 6th significant digit; P as
  # expect_plink2_rows allows (plink2's own P carries less precision)
  d <- utils::read.delim(paths[["QT"]], check.names = FALSE, na.strings = "NA",
                         colClasses = c(`#CHROM` = "character"))
  expect_identical(d[["#CHROM"]], as.character(p2[["#CHROM"]]))
  for (nm in c("POS", "ID", "REF", "ALT", "A1", "TEST", "OBS_CT", "ERRCODE")) expect_identical(d[[nm]], p2[[nm]])
  ok <- p2$ERRCODE == "."
  for (nm in c("BETA", "SE", "T_STAT")) {
    unit <- 10^(floor(log10(abs(p2[[nm]][ok]))) - 5)
    expect_true(all(abs(d[[nm]][ok] - p2[[nm]][ok]) <= unit * (1 + 1e-9)), label = nm)
    expect_identical(is.na(d[[nm]]), is.na(p2[[nm]]))
  }
  expect_lt(max(abs(d$P[ok] - p2$P[ok]) / p2$P[ok]), 1e-3)
  # POS written as integers, never in scientific notation
  body <- readLines(paths[["QT"]])[-1]
  pos_txt <- vapply(strsplit(body, "\t", fixed = TRUE), `[`, "", 2)
  expect_true(all(grepl("^[0-9]+$", pos_txt)))
  expect_true(any(as.numeric(pos_txt) >= 1e8))
})

test_that("statgen_write_glm() writes only the rows of each phenotype, with NA for error rows", {
  f <- results_fixture()
  res <- f$res
  paths <- statgen_write_glm(res, file.path(tempdir(), "na_rows"))
  txt <- readLines(paths[["Q2"]])
  fields <- strsplit(txt[-1], "\t", fixed = TRUE)
  err <- vapply(fields, `[`, "", 13) != "."
  expect_identical(sum(err), sum(res$ERRCODE[res$PHENO == "Q2"] != "."))
  expect_true(all(vapply(fields[err], function(x) all(x[9:12] == "NA"), TRUE)))
  expect_true(all(lengths(fields) == 13L))
})

test_that("subsets: rows keep the class and its attributes, a column subset is a plain data frame", {
  set.seed(5)
  g <- matrix(stats::rbinom(100 * 6, 2, 0.3), 100, 6)
  res <- statgen_gwas(g, stats::rnorm(100))
  top <- res[1:3, ]
  expect_s3_class(top, "statgen_gwas")
  expect_identical(attr(top, "family"), "linear")
  expect_identical(summary(top)$tests, 3L)
  cols <- res[, c("ID", "BETA")]
  expect_identical(class(cols), "data.frame")
  expect_output(print(cols), "BETA")
  # no allele metadata: nothing is flipped, A1 is NA, BETA is the stored value's effect
  expect_true(all(is.na(res$A1)))
  y <- stats::rnorm(100) + 0.5 * g[, 2]
  expect_equal(statgen_gwas(g, y)$BETA[2], unname(stats::coef(stats::lm(y ~ g[, 2]))[2]),
               tolerance = 1e-10)
})

test_that("out = streams plink2's files chunk by chunk: the same bytes as the whole result", {
  X <- Rfmalloc::fmalloc_bed_open(kg("1kg_bi.bed"))
  X0 <- Rfmalloc::fmalloc_bed_open(sub("\\.bed$", "", kg("1kg_bi.bed")), variants = FALSE)
  ph <- kg_pheno()[c("#FID", "IID", "QT", "BT")]
  ph$QT2 <- ph$QT + stats::rnorm(nrow(ph))
  whole <- statgen_gwas(X, ph[c("#FID", "IID", "QT", "QT2")])
  ref <- statgen_write_glm(whole, file.path(tempdir(), "whole"))
  for (src in c("1kg_bi.bim", "1kg_bi.pvar")) {
    s <- statgen_gwas(X0, ph[c("#FID", "IID", "QT", "QT2")], samples = Rfmalloc::fmalloc_samples(X),
                      variants = kg(src), out = file.path(tempdir(), "streamed"), chunk = 7001)
    expect_s3_class(s, "summary.statgen_gwas")
    expect_identical(names(attr(s, "files")), c("QT", "QT2"))
    for (p in c("QT", "QT2")) expect_identical(readLines(attr(s, "files")[[p]]), readLines(ref[[p]]))
    expect_equal(unclass(s)[names(s)], unclass(summary(whole))[names(s)])
    expect_false(any(file.exists(paste0(attr(s, "files"), ".tmp"))))
  }
  lo <- suppressMessages(statgen_gwas(X0, ph[c("#FID", "IID", "BT")], samples = Rfmalloc::fmalloc_samples(X),
                                      variants = kg("1kg_bi.bim"), family = "logistic",
                                      out = file.path(tempdir(), "lo"), chunk = 9000))
  expect_match(attr(lo, "files"), "lo\\.BT\\.glm\\.logistic\\.hybrid$")
  # a variants file of another length is refused, naming it; nothing is left behind
  short <- tempfile(fileext = ".bim")
  writeLines(readLines(kg("1kg_bi.bim"))[-5], short)
  expect_error(statgen_gwas(X0, ph[c("#FID", "IID", "QT")], samples = Rfmalloc::fmalloc_samples(X),
                            variants = short, out = file.path(tempdir(), "bad"), chunk = 9000),
               class = "fm_error_earg", regexp = "has 25160 variants but X has 25161 columns")
  expect_false(any(file.exists(Sys.glob(file.path(tempdir(), "bad.*")))))
})

test_that("an empty result summarises to no phenotype; plotting or writing nothing is an error", {
  rt <- Rfmalloc::open_fmalloc(tempfile(fileext = ".fm"), size_gb = 0.01, mode = "scratch")
  on.exit(Rfmalloc::cleanup_fmalloc(rt))
  set.seed(4)
  X <- Rfmalloc::fmalloc_bed(matrix(stats::rbinom(100 * 6, 2, 0.3), 100, 6), rt)
  res <- statgen_gwas(X, data.frame(QT = stats::rnorm(100)))
  empty <- res[0, ]
  expect_no_warning(s <- summary(empty))
  expect_identical(nrow(s), 0L)
  expect_output(expect_no_warning(print(empty)), "0 phenotypes")
  expect_error(statgen_write_glm(empty, file.path(tempdir(), "empty")), class = "fm_error_earg",
               regexp = "res has no rows to write")
  # every row with an ERRCODE: nothing to plot
  X0 <- Rfmalloc::fmalloc_bed(matrix(1, 100, 3), rt)
  flat <- statgen_gwas(X0, data.frame(QT = stats::rnorm(100)))
  expect_true(all(flat$ERRCODE == "CONST_OMITTED_ALLELE"))
  grDevices::png(tempfile(fileext = ".png"))
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_error(plot(flat), class = "fm_error_earg",
               regexp = "phenotype 'QT' has no P value to plot \\(every row has an ERRCODE\\)")
})
