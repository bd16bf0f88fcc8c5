# Hand-built Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 blocks (generated test data),
# written into a GGUF by hand, with the values they must decode to computed
# here from the formats' definitions (GGML's ggml-common.h block structs;
# every block holds 32 values):
#   q4_0: f16 d, 16 bytes qs; value j (0..15) = (lo nibble of qs[j] - 8) d,
#         value j + 16 = (hi nibble of qs[j] - 8) d
#   q4_1: f16 d, f16 m, 16 bytes qs; value = nibble * d + m (same order)
#   q5_0: f16 d, u32 qh, 16 bytes qs; the nibble gets bit j (for j < 16) or
#         bit j + 16 (for the high nibbles) of qh as its fifth bit;
#         value = (q - 16) d
#   q5_1: f16 d, f16 m, u32 qh, 16 bytes qs; value = q d + m
#   q8_0: f16 d, 32 int8 qs; value = q d
# The f16 scales are exact binary fractions written as bit patterns.

f16 <- function(hex) as.raw(c(bitwAnd(hex, 0xFF), bitwShiftR(hex, 8))) # little-endian
F16 <- c("0.5" = 0x3800, "3" = 0x4200, "-0.25" = 0xB400, "1" = 0x3C00, "-1.25" = 0xBD00,
         "0.125" = 0x3000, "2" = 0x4000)
lo <- function(b) bitwAnd(as.integer(b), 15L)
hi <- function(b) bitwShiftR(as.integer(b), 4L)
bit <- function(qh, k) bitwAnd(bitwShiftR(as.integer(qh[k %/% 8 + 1]), k %% 8), 1L)

# Nibble patterns for the 16 bytes of a block.
qs_a <- as.raw(0:15 + bitwShiftL(15:0, 4))                 # lo j, hi 15 - j
qs_b <- as.raw(((0:15) * 7) %% 16 + bitwShiftL(((0:15) * 3) %% 16, 4))
qh_a <- as.raw(c(0x81, 0x0F, 0xC3, 0xA5))                  # u32 0xA5C30F81
qh_b <- as.raw(c(0xFF, 0x00, 0x00, 0xFF))

nib <- function(qs) c(lo(qs), hi(qs))
fifth <- function(qh) vapply(0:31, function(k) bit(qh, k), 0L)

blocks_tensor <- function(g, name) {
  list(num = gguf_tensor(g, name, "numeric"), view = gguf_tensor(g, name))
}

test_that("hand-built Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 blocks decode exactly", {
  q8_a <- as.integer(c(-128, -127, -1, 0, 1, 2, 3, 127, seq(-60, 60, length.out = 24)))
  q8_b <- rev(as.integer(-16:15))
  i8 <- function(q) as.raw(bitwAnd(q, 0xFF))
  # two rows (ne1 = 2) of two blocks (ne0 = 64) per type
  spec <- list(
    q4_0 = list(type = 2,
                blocks = list(c(f16(F16[["0.5"]]), qs_a), c(f16(F16[["3"]]), qs_b),
                              c(f16(F16[["-0.25"]]), qs_b), c(f16(F16[["1"]]), qs_a)),
                values = list((nib(qs_a) - 8) * 0.5, (nib(qs_b) - 8) * 3,
                              (nib(qs_b) - 8) * -0.25, (nib(qs_a) - 8) * 1)),
    q4_1 = list(type = 3,
                blocks = list(c(f16(F16[["0.5"]]), f16(F16[["-1.25"]]), qs_a),
                              c(f16(F16[["0.125"]]), f16(F16[["2"]]), qs_b),
                              c(f16(F16[["-0.25"]]), f16(F16[["1"]]), qs_a),
                              c(f16(F16[["3"]]), f16(F16[["-0.25"]]), qs_b)),
                values = list(nib(qs_a) * 0.5 - 1.25, nib(qs_b) * 0.125 + 2,
                              nib(qs_a) * -0.25 + 1, nib(qs_b) * 3 - 0.25)),
    q5_0 = list(type = 6,
                blocks = list(c(f16(F16[["0.5"]]), qh_a, qs_a), c(f16(F16[["3"]]), qh_b, qs_b),
                              c(f16(F16[["-0.25"]]), qh_b, qs_a), c(f16(F16[["1"]]), qh_a, qs_b)),
                values = list((nib(qs_a) + 16 * fifth(qh_a) - 16) * 0.5,
                              (nib(qs_b) + 16 * fifth(qh_b) - 16) * 3,
                              (nib(qs_a) + 16 * fifth(qh_b) - 16) * -0.25,
                              (nib(qs_b) + 16 * fifth(qh_a) - 16) * 1)),
    q5_1 = list(type = 7,
                blocks = list(c(f16(F16[["0.5"]]), f16(F16[["-1.25"]]), qh_a, qs_a),
                              c(f16(F16[["0.125"]]), f16(F16[["2"]]), qh_b, qs_b),
                              c(f16(F16[["1"]]), f16(F16[["-0.25"]]), qh_b, qs_b),
                              c(f16(F16[["-0.25"]]), f16(F16[["3"]]), qh_a, qs_a)),
                values = list((nib(qs_a) + 16 * fifth(qh_a)) * 0.5 - 1.25,
                              (nib(qs_b) + 16 * fifth(qh_b)) * 0.125 + 2,
                              (nib(qs_b) + 16 * fifth(qh_b)) * 1 - 0.25,
                              (nib(qs_a) + 16 * fifth(qh_a)) * -0.25 + 3)),
    q8_0 = list(type = 8,
                blocks = list(c(f16(F16[["0.5"]]), i8(q8_a)), c(f16(F16[["-0.25"]]), i8(q8_b)),
                              c(f16(F16[["0.125"]]), i8(q8_b)), c(f16(F16[["3"]]), i8(q8_a))),
                values = list(q8_a * 0.5, q8_b * -0.25, q8_b * 0.125, q8_a * 3))
  )
  tensors <- lapply(names(spec), function(nm) {
    s <- spec[[nm]]
    gguf_tensor_spec(nm, c(64, 2), s$type, unlist(s$blocks))
  })
  f <- write_gguf(gguf_bytes(list(kv_str("general.architecture", "blocks")), tensors))
  g <- gguf_open(f)
  d <- gguf_tensors(g)
  expect_identical(d$type, names(spec))
  expect_identical(d$bytes, c(18, 20, 22, 24, 34) * 4)
  old <- Rfmalloc::fmalloc_panel_budget()
  on.exit(Rfmalloc::fmalloc_panel_budget(old), add = TRUE)
  for (nm in names(spec)) {
    v <- spec[[nm]]$values
    want <- rbind(c(v[[1]], v[[2]]), c(v[[3]], v[[4]])) # row i = GGML row i - 1
    tt <- blocks_tensor(g, nm)
    expect_identical(tt$num, want, label = nm)
    Rfmalloc::fmalloc_panel_budget(8)
    expect_identical(as.matrix(tt$view), want, label = nm)
    expect_identical(tt$view[2, 30:40], want[2, 30:40])
    Rfmalloc::fmalloc_panel_budget(0)
  }
  # a few values written out by hand, as a check on the formulas above
  q40 <- gguf_tensor(g, "q4_0", "numeric")
  expect_identical(q40[1, c(1, 16, 17, 32)], c(-4, 3.5, 3.5, -4))       # d = 0.5, nibbles 0, 15 | 15, 0
  expect_identical(q40[1, c(33, 34, 49)], c(-24, -3, -24))              # d = 3: qs_b[1] = 0x00, qs_b[2] = 0x37
  q41 <- gguf_tensor(g, "q4_1", "numeric")
  expect_identical(q41[1, c(1, 2, 17)], c(-1.25, -0.75, 6.25))          # 0*0.5-1.25, 1*0.5-1.25, 15*0.5-1.25
  q50 <- gguf_tensor(g, "q5_0", "numeric")
  # qh_a = 0xA5C30F81: bits 0, 7, 8..11 set; bit 16 (first high nibble) 1, bit 31 1
  expect_identical(q50[1, c(1, 2, 8, 9, 17, 32)], c(0, -7.5, 3.5, 4, 7.5, 0))
  q51 <- gguf_tensor(g, "q5_1", "numeric")
  expect_identical(q51[1, c(1, 2, 17)], c(16 * 0.5 - 1.25, 1 * 0.5 - 1.25, 31 * 0.5 - 1.25))
  q80 <- gguf_tensor(g, "q8_0", "numeric")
  expect_identical(q80[1, 1:8], c(-64, -63.5, -0.5, 0, 0.5, 1, 1.5, 63.5))
  expect_identical(q80[2, 33:34], c(-384, -381))                        # -128 * 3, -127 * 3
})
