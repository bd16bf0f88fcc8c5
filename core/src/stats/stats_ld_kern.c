/* stats_ld_kern.c: the pair kernels of the LD band (stats_ld_impl.h).
 *
 * Hardcalls as bit planes: with g = h + t (h = g >= 1, t = g == 2), over
 * the 64 samples of a word
 *   Sum g_j g_k = pop(Hj Hk) + pop(Hj Tk) + pop(Tj Hk) + pop(Tj Tk)
 *               = pop(Hj Hk) + 2 pop(Tj Tk) + pop(Hj Tk | Tj Hk)
 * (T is inside H, so the two middle sets overlap exactly in Tj Tk), and
 * g^2 = h + 3 t. Missing calls are 0 in H and T, so Sxy needs no mask; the
 * other sums are masked by the other column's O. Every sum is an integer,
 * exact in double. POPCNT comes with the AVX2 level (fm_cpu.h); the
 * portable kernel counts bits by arithmetic, to the same integers. */
#include "stats_ld_impl.h"

#include "fm/fm_cpu.h"

#include <string.h>

/* Bits set, by the SWAR sum of fields (no POPCNT instruction). */
static inline int pop_swar(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
  return (int)((x * 0x0101010101010101ULL) >> 56);
}

#define LD_PAIR_PLANES_BODY(POP)                                                              \
  const int64_t nw = c->nw;                                                                   \
  const uint64_t *hj = c->h + jj * nw, *tj = c->t + jj * nw;                                  \
  const uint64_t *hk = c->h + kk * nw, *tk = c->t + kk * nw;                                  \
  int64_t hh = 0, tt = 0, cross = 0;                                                          \
  for (int64_t w = 0; w < nw; w++) {                                                          \
    hh += POP(hj[w] & hk[w]);                                                                 \
    tt += POP(tj[w] & tk[w]);                                                                 \
    cross += POP((hj[w] & tk[w]) | (tj[w] & hk[w]));                                          \
  }                                                                                           \
  acc[LD_SXY] += (double)(hh + 2 * tt + cross);                                               \
  if (c->full[jj] && c->full[kk]) {                                                           \
    acc[LD_N] += c->cnt[jj];                                                                  \
    acc[LD_SX] += c->s1[jj], acc[LD_SXX] += c->s2[jj];                                        \
    acc[LD_SY] += c->s1[kk], acc[LD_SYY] += c->s2[kk];                                        \
    return;                                                                                   \
  }                                                                                           \
  const uint64_t *oj = c->o + jj * nw, *ok = c->o + kk * nw;                                  \
  int64_t n = 0, hx = 0, tx = 0, hy = 0, ty = 0;                                              \
  for (int64_t w = 0; w < nw; w++) {                                                          \
    n += POP(oj[w] & ok[w]);                                                                  \
    hx += POP(hj[w] & ok[w]), tx += POP(tj[w] & ok[w]);                                       \
    hy += POP(hk[w] & oj[w]), ty += POP(tk[w] & oj[w]);                                       \
  }                                                                                           \
  acc[LD_N] += (double)n;                                                                     \
  acc[LD_SX] += (double)(hx + tx), acc[LD_SXX] += (double)(hx + 3 * tx);                      \
  acc[LD_SY] += (double)(hy + ty), acc[LD_SYY] += (double)(hy + 3 * ty);

static void pair_planes_portable(const ld_chunk *c, int64_t jj, int64_t kk, double *acc) {
  LD_PAIR_PLANES_BODY(pop_swar)
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("popcnt"))) static void pair_planes_popcnt(const ld_chunk *c, int64_t jj,
                                                                 int64_t kk, double *acc) {
  LD_PAIR_PLANES_BODY(__builtin_popcountll)
}
#endif

ld_pair_fn ld_pair_planes(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (fm_cpu_isa() >= FM_ISA_AVX2) return pair_planes_popcnt;
#endif
  return pair_planes_portable;
}

void ld_pair_doubles(const ld_chunk *c, int64_t jj, int64_t kk, double *acc) {
  const int64_t r = c->rows;
  const double *xj = c->x0 + jj * r, *xk = c->x0 + kk * r;
  double sxy = 0;
  for (int64_t i = 0; i < r; i++) sxy += xj[i] * xk[i];
  acc[LD_SXY] += sxy;
  if (c->full[jj] && c->full[kk]) {
    acc[LD_N] += c->cnt[jj];
    acc[LD_SX] += c->s1[jj], acc[LD_SXX] += c->s2[jj];
    acc[LD_SY] += c->s1[kk], acc[LD_SYY] += c->s2[kk];
    return;
  }
  const double *oj = c->om + jj * r, *ok = c->om + kk * r;
  const double *qj = c->x2 + jj * r, *qk = c->x2 + kk * r;
  double n = 0, sx = 0, sy = 0, sxx = 0, syy = 0;
  for (int64_t i = 0; i < r; i++) {
    n += oj[i] * ok[i];
    sx += xj[i] * ok[i], sxx += qj[i] * ok[i];
    sy += xk[i] * oj[i], syy += qk[i] * oj[i];
  }
  acc[LD_N] += n;
  acc[LD_SX] += sx, acc[LD_SXX] += sxx;
  acc[LD_SY] += sy, acc[LD_SYY] += syy;
}

/* The even bits of x (bits 0, 2, ..., 62) packed into the low 32 bits. */
static inline uint64_t even_bits(uint64_t x) {
  x &= 0x5555555555555555ULL;
  x = (x | (x >> 1)) & 0x3333333333333333ULL;
  x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0FULL;
  x = (x | (x >> 4)) & 0x00FF00FF00FF00FFULL;
  x = (x | (x >> 8)) & 0x0000FFFF0000FFFFULL;
  return (x | (x >> 16)) & 0x00000000FFFFFFFFULL;
}

static inline uint64_t load_le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

void ld_planes_col(const uint8_t *col, int64_t col_bytes, int64_t n_rows, int64_t r0, int64_t nw,
                   const uint64_t *sel, uint64_t *h, uint64_t *t, uint64_t *o, double *s1,
                   double *s2, double *cnt, unsigned char *full) {
  int64_t ph = 0, pt = 0, po = 0, valid = 0;
  for (int64_t w = 0; w < nw; w++) {
    const int64_t s0 = r0 + 64 * w, b0 = s0 / 4;
    uint8_t buf[16];
    const uint8_t *p = col + b0;
    if (b0 + 16 > col_bytes) { /* the column's last word: copy what exists */
      memset(buf, 0, sizeof buf);
      if (b0 < col_bytes) memcpy(buf, p, (size_t)(col_bytes - b0));
      p = buf;
    }
    const uint64_t a = load_le64(p), b = load_le64(p + 8);
    const uint64_t lo = even_bits(a) | (even_bits(b) << 32);
    const uint64_t hi = even_bits(a >> 1) | (even_bits(b >> 1) << 32);
    const int64_t left = n_rows - s0;
    uint64_t mask = left >= 64 ? ~0ULL : left > 0 ? (1ULL << left) - 1 : 0;
    if (sel) mask &= sel[w];
    h[w] = ~lo & mask;
    t[w] = ~hi & ~lo & mask;
    o[w] = (hi | ~lo) & mask;
    ph += pop_swar(h[w]), pt += pop_swar(t[w]), po += pop_swar(o[w]);
    valid += pop_swar(mask);
  }
  *s1 = (double)(ph + pt);
  *s2 = (double)(ph + 3 * pt);
  *cnt = (double)po;
  *full = po == valid;
}
