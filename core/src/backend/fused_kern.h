/* fused_kern.h (private): the kernels of the fused backend, written once and
 * compiled once per instruction set (fused_impl.h describes each one).
 *
 * The including file defines, before including this header:
 *   KN(name)     the name of this build's copy of a kernel (name##_isa)
 *   FK_ATTR      attributes of every kernel function (an ISA target or empty)
 *   vd, VW       a vector of VW doubles (VW divides the table's kpad)
 *   VLOAD(p), VSTORE(p, v)   unaligned loads and stores of VW doubles
 *   VSPLAT(x), VZERO(), VADD(a, b), VFMA(a, b, c) (= a * b + c)
 *   FK_GATHER_NV  the widest chunk of columns (in vectors) gathered with two
 *                sets of accumulators in registers; FK_GATHER1_NV the widest
 *                with one set (used above FK_GATHER_NV); FK_SCATTER_NV the
 *                widest chunk scattered;
 *   FK_GATHER_CASES, FK_GATHER1_CASES, FK_SCATTER_CASES  FK_G(v) for v in
 *                1 .. FK_GATHER_NV and in FK_GATHER_NV + 1 .. FK_GATHER1_NV,
 *                FK_S(v) for v in 1 .. FK_SCATTER_NV (one switch case each)
 * and may define FK_DOS8_MASK32 (below) to find the bytes that differ from
 * the base 32 at a time, and FK_HW_POPCNT when the build has a popcount
 * instruction. Results depend on the build (FMA rounds once), never on kp
 * or on the row segments: every column sums the even entries of a
 * variant's list (over all rows, in order) in one accumulator and the odd
 * ones in another, whatever the chunk, so a column of b gives the same
 * partial sums in any product (GWAS of several phenotypes in one pass
 * equal each one alone). */
#include <string.h>

#if defined(__GNUC__)
#define FK_INLINE static inline __attribute__((always_inline))
#define FK_UNROLL _Pragma("GCC unroll 16")
#define FK_CTZ64(x) __builtin_ctzll(x)
#else
#define FK_POPCNT64_SWAR 1
#define FK_INLINE static inline
#define FK_UNROLL
static int fk_ctz64(uint64_t x) {
  int b = 0;
  while (!(x & 1u)) {
    x >>= 1;
    b++;
  }
  return b;
}
#define FK_CTZ64(x) fk_ctz64(x)
#endif

/* Eight bytes as a little-endian word: byte t in bits 8t .. 8t+7. */
FK_INLINE uint64_t fk_load_le64(const uint8_t *p) {
  uint64_t x;
  memcpy(&x, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  x = __builtin_bswap64(x);
#endif
  return x;
}

/* The first nb < 8 bytes of p the same way, zeros above. */
FK_INLINE uint64_t fk_load_le_tail(const uint8_t *p, int64_t nb) {
  uint64_t x = 0;
  for (int64_t t = 0; t < nb; t++) x |= (uint64_t)p[t] << (8 * t);
  return x;
}

#define FK_LO2 UINT64_C(0x5555555555555555)

/* Bits set in x: the instruction where the build has it, else SWAR. */
#if defined(FK_POPCNT64_SWAR) || !defined(FK_HW_POPCNT)
FK_INLINE int fk_popcnt64(uint64_t x) {
  x = x - ((x >> 1) & FK_LO2);
  x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
  x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
  return (int)((x * UINT64_C(0x0101010101010101)) >> 56);
}
#define FK_POPCNT64(x) fk_popcnt64(x)
#else
#define FK_POPCNT64(x) __builtin_popcountll(x)
#endif

/* Four entries: dst[f] = (src[f] + add) ^ x (one vector op where we can). */
#if defined(__GNUC__)
typedef uint32_t fk_u4 __attribute__((vector_size(16)));
FK_INLINE void fk_put4(uint32_t *dst, const uint32_t *src, uint32_t add, uint32_t x) {
  fk_u4 v;
  memcpy(&v, src, sizeof v);
  v = (v + add) ^ x;
  memcpy(dst, &v, sizeof v);
}
#else
FK_INLINE void fk_put4(uint32_t *dst, const uint32_t *src, uint32_t add, uint32_t x) {
  for (int f = 0; f < 4; f++) dst[f] = (src[f] + add) ^ x;
}
#endif

/* BED2, eight bytes of x (32 fields, rows rel .. rel+31 of the run): the
 * entries of the fields that differ from the base, through the byte table
 * (fused_impl.h): four entries written per byte, the count kept. */
#define FK_BED2_WORD(x, rel)                                                                      \
  for (int s_ = 0; s_ < 8; s_++) {                                                                \
    const unsigned w_ = ((unsigned)((x) >> (8 * s_)) & 255u) ^ base8;                            \
    fk_put4(ent + m, tab->bed2_entry[w_], (uint32_t)((rel) + 4 * s_) << FUSED_ENT_SHIFT, base);   \
    m += tab->bed2_count[w_];                                                                     \
  }

static FK_ATTR int64_t KN(bed2_list)(const uint8_t *col, int64_t r0, int64_t r1, unsigned base,
                                     const fused_tables *tab, uint32_t *ent) {
  const uint64_t bpat = FK_LO2 * (uint64_t)base;
  const unsigned base8 = 0x55u * base;
  const uint8_t *p = col + r0 / 4;
  int64_t m = 0, i0 = r0;
  for (; i0 + 32 <= r1; i0 += 32, p += 8) {
    const uint64_t x = fk_load_le64(p);
    uint64_t t = x ^ bpat;
    if (((t | (t >> 1)) & FK_LO2) == 0) continue; /* all 32 rows at the base */
    FK_BED2_WORD(x, i0 - r0)
  }
  const int64_t rows = r1 - i0; /* 0 .. 31 left, in (rows + 3) / 4 bytes */
  if (rows > 0) { /* fields past row r1 (not ours, or padding) become the base */
    const uint64_t keep = (UINT64_C(1) << (2 * rows)) - 1u;
    const uint64_t x = (fk_load_le_tail(p, (rows + 3) / 4) & keep) | (bpat & ~keep);
    FK_BED2_WORD(x, i0 - r0)
  }
  return m;
}

#define FK_ENT(rel, code) (((uint32_t)(rel) << FUSED_ENT_SHIFT) | (uint32_t)(code))

static FK_ATTR int64_t KN(dos8_list)(const uint8_t *col, int64_t r0, int64_t r1, unsigned base,
                                     const fused_tables *tab, uint32_t *ent) {
  (void)tab;
  int64_t m = 0, i0 = r0;
#ifdef FK_DOS8_MASK32
  /* FK_DOS8_MASK32(p, base): bit t set when p[t] != base, t < 32 */
  for (; i0 + 32 <= r1; i0 += 32) {
    uint32_t t = FK_DOS8_MASK32(col + i0, base);
    while (t) {
      const int b = FK_CTZ64(t);
      t &= t - 1;
      ent[m++] = FK_ENT(i0 - r0 + b, col[i0 + b]);
    }
  }
#endif
  /* bit 8t+7 of nz is set when byte t of the word differs from the base */
  const uint64_t bpat = UINT64_C(0x0101010101010101) * (uint64_t)base;
  const uint64_t low7 = UINT64_C(0x7f7f7f7f7f7f7f7f);
  for (; i0 + 8 <= r1; i0 += 8) {
    const uint64_t x = fk_load_le64(col + i0) ^ bpat;
    uint64_t nz = (((x & low7) + low7) | x) & ~low7;
    while (nz) {
      const int b = FK_CTZ64(nz) >> 3;
      nz &= nz - 1;
      ent[m++] = FK_ENT(i0 - r0 + b, col[i0 + b]);
    }
  }
  for (; i0 < r1; i0++)
    if (col[i0] != base) ent[m++] = FK_ENT(i0 - r0, col[i0]);
  return m;
}

static FK_ATTR void KN(bed2_counts)(const uint8_t *col, int64_t n, int64_t counts_out[4]) {
  /* per word of 32 fields (h, l): code 3 = h & l, 2 = h & ~l, 1 = ~h & l */
  int64_t c3 = 0, c2 = 0, c1 = 0, i0 = 0;
  for (; i0 + 32 <= n; i0 += 32) {
    const uint64_t x = fk_load_le64(col + i0 / 4);
    const uint64_t h = (x >> 1) & FK_LO2, l = x & FK_LO2;
    c3 += FK_POPCNT64(h & l);
    c2 += FK_POPCNT64(h & ~l);
    c1 += FK_POPCNT64(l & ~h);
  }
  if (n > i0) {
    const uint64_t keep = FK_LO2 & ((UINT64_C(1) << (2 * (n - i0))) - 1u);
    const uint64_t x = fk_load_le_tail(col + i0 / 4, (n - i0 + 3) / 4);
    const uint64_t h = (x >> 1) & keep, l = x & keep;
    c3 += FK_POPCNT64(h & l);
    c2 += FK_POPCNT64(h & ~l);
    c1 += FK_POPCNT64(l & ~h);
  }
  counts_out[3] = c3;
  counts_out[2] = c2;
  counts_out[1] = c1;
  counts_out[0] = n - c3 - c2 - c1;
}

static FK_ATTR void KN(dos8_hist)(const uint8_t *col, int64_t n, int64_t counts_out[256]) {
  /* four tables so that runs of equal bytes do not serialise on one counter;
   * flushed before a 32-bit count could wrap */
  uint32_t h[4][256];
  for (int q = 0; q < 256; q++) counts_out[q] = 0;
  int64_t i = 0;
  while (i < n) {
    const int64_t end = n - i > ((int64_t)1 << 30) ? i + ((int64_t)1 << 30) : n;
    memset(h, 0, sizeof h);
    for (; i + 4 <= end; i += 4) {
      h[0][col[i]]++;
      h[1][col[i + 1]]++;
      h[2][col[i + 2]]++;
      h[3][col[i + 3]]++;
    }
    for (; i < end; i++) h[0][col[i]]++;
    for (int q = 0; q < 256; q++)
      counts_out[q] += (int64_t)h[0][q] + (int64_t)h[1][q] + (int64_t)h[2][q] + (int64_t)h[3][q];
  }
}

#define FK_ROW(rows, e, kp) ((rows) + (int64_t)((e) >> FUSED_ENT_SHIFT) * (kp))
#define FK_D(dtab, e) ((dtab)[(e) & ((1u << FUSED_ENT_SHIFT) - 1u)])

/* One chunk of nv vectors of columns (nv a constant after inlining), even
 * and odd entries in two sets of accumulators (acc_e, acc_o). */
FK_INLINE FK_ATTR void KN(gather2_nv)(const int nv, const uint32_t *ent, int64_t m,
                                      const double *dtab, const double *rows, int64_t kp,
                                      double *acc_e, double *acc_o) {
  vd ae[FK_GATHER_NV], ao[FK_GATHER_NV];
  FK_UNROLL
  for (int v = 0; v < nv; v++) {
    ae[v] = VLOAD(acc_e + v * VW);
    ao[v] = VLOAD(acc_o + v * VW);
  }
  int64_t t = 0;
  for (; t + 1 < m; t += 2) {
    const uint32_t e0 = ent[t], e1 = ent[t + 1];
    const double *r0 = FK_ROW(rows, e0, kp), *r1 = FK_ROW(rows, e1, kp);
    const vd d0 = VSPLAT(FK_D(dtab, e0)), d1 = VSPLAT(FK_D(dtab, e1));
    FK_UNROLL
    for (int v = 0; v < nv; v++) {
      ae[v] = VFMA(d0, VLOAD(r0 + v * VW), ae[v]);
      ao[v] = VFMA(d1, VLOAD(r1 + v * VW), ao[v]);
    }
  }
  if (t < m) {
    const uint32_t e0 = ent[t];
    const double *r0 = FK_ROW(rows, e0, kp);
    const vd d0 = VSPLAT(FK_D(dtab, e0));
    FK_UNROLL
    for (int v = 0; v < nv; v++) ae[v] = VFMA(d0, VLOAD(r0 + v * VW), ae[v]);
  }
  FK_UNROLL
  for (int v = 0; v < nv; v++) {
    VSTORE(acc_e + v * VW, ae[v]);
    VSTORE(acc_o + v * VW, ao[v]);
  }
}

/* The same sums with one set of registers, for chunks too wide for two:
 * the even entries into acc_e, then the odd ones into acc_o. */
FK_INLINE FK_ATTR void KN(gather1_nv)(const int nv, const uint32_t *ent, int64_t m,
                                      const double *dtab, const double *rows, int64_t kp,
                                      double *acc_e, double *acc_o) {
  vd a[FK_GATHER1_NV];
  for (int odd = 0; odd < 2; odd++) {
    double *acc = odd ? acc_o : acc_e;
    FK_UNROLL
    for (int v = 0; v < nv; v++) a[v] = VLOAD(acc + v * VW);
    for (int64_t t = odd; t < m; t += 2) {
      const uint32_t e0 = ent[t];
      const double *r0 = FK_ROW(rows, e0, kp);
      const vd d0 = VSPLAT(FK_D(dtab, e0));
      FK_UNROLL
      for (int v = 0; v < nv; v++) a[v] = VFMA(d0, VLOAD(r0 + v * VW), a[v]);
    }
    FK_UNROLL
    for (int v = 0; v < nv; v++) VSTORE(acc + v * VW, a[v]);
  }
}

/* Chunks: up to FK_GATHER_NV vectors with two sets of registers, wider
 * ones (up to FK_GATHER1_NV) with one; the sums are the same either way. */
static FK_ATTR void KN(gather)(const uint32_t *ent, int64_t m, const double *dtab,
                               const double *rows, int64_t kp, double *acc_e, double *acc_o) {
  for (int64_t c0 = 0; c0 < kp;) {
    const int left = (int)((kp - c0) / VW);
    const double *r = rows + c0;
    if (left <= FK_GATHER_NV) {
      switch (left) {
#define FK_G(NV)                                                                                  \
  case NV: KN(gather2_nv)(NV, ent, m, dtab, r, kp, acc_e + c0, acc_o + c0); break;
        FK_GATHER_CASES
#undef FK_G
      default: break;
      }
      c0 = kp;
    } else {
      const int nv = left < FK_GATHER1_NV ? left : FK_GATHER1_NV;
      switch (nv) {
#define FK_G(NV)                                                                                  \
  case NV: KN(gather1_nv)(NV, ent, m, dtab, r, kp, acc_e + c0, acc_o + c0); break;
        FK_GATHER1_CASES
#undef FK_G
      default: break;
      }
      c0 += nv * VW;
    }
  }
}

FK_INLINE FK_ATTR void KN(scatter_nv)(const int nv, const uint32_t *ent, int64_t m,
                                      const double *dtab, const double *src, double *ys,
                                      int64_t kp) {
  vd sv[FK_SCATTER_NV];
  FK_UNROLL
  for (int v = 0; v < nv; v++) sv[v] = VLOAD(src + v * VW);
  for (int64_t t = 0; t < m; t++) {
    const uint32_t e = ent[t];
    double *row = ys + (int64_t)(e >> FUSED_ENT_SHIFT) * kp;
    const vd dv = VSPLAT(FK_D(dtab, e));
    FK_UNROLL
    for (int v = 0; v < nv; v++) VSTORE(row + v * VW, VFMA(dv, sv[v], VLOAD(row + v * VW)));
  }
}

static FK_ATTR void KN(scatter)(const uint32_t *ent, int64_t m, const double *dtab,
                                const double *src, double *ys, int64_t kp) {
  for (int64_t c0 = 0; c0 < kp; c0 += FK_SCATTER_NV * VW) {
    const int64_t w = kp - c0 < FK_SCATTER_NV * VW ? kp - c0 : FK_SCATTER_NV * VW;
    switch ((int)(w / VW)) {
#define FK_S(NV)                                                                                  \
  case NV: KN(scatter_nv)(NV, ent, m, dtab, src + c0, ys + c0, kp); break;
      FK_SCATTER_CASES
#undef FK_S
    default: break;
    }
  }
}

#define FK_TABLE(kpad)                                                                            \
  { kpad, KN(bed2_list), KN(dos8_list), KN(bed2_counts), KN(dos8_hist), KN(gather), KN(scatter) }
