/* llm_attn_kern.h (private): the small-head attention kernel of llm_attn.h,
 * written once over a vector of VL floats and included by one file per ISA
 * (llm_simd_avx2.c, llm_simd_avx512.c) after llm_gemm_kern.h, whose macros
 * it uses (ATTR, KN, vf, VL, VZERO, VLOADF, VFMA, VADD, VHSUM, INL), with
 * these besides:
 *   VSET1(x), VMUL(a, b), VSUB(a, b), VMAX(a, b) (b where a is NaN),
 *   VSTORE(p, v), VHMAX(v) (a float), VROUND(v) (to the nearest integer),
 *   VPOW2I(n) (2^n for integer-valued n in [-126, 127]),
 *   VKEEP_GE(v, x, lo) (v where x >= lo, else 0). */
#include <math.h>

/* exp(x) for x <= 0: x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts,
 * the first exact in 16 bits so that n ln2_hi is exact for |n| <= 127),
 * exp(r) by the Taylor polynomial of degree 7 (its remainder is below
 * r^8 / 8! < 5.2e-9 < u), times 2^n; 0 below ln(FLT_MIN), where 2^n would
 * need a subnormal. */
INL vf vexp(vf x) {
  const vf lo = VSET1(-87.33654475f);
  const vf xc = VMAX(x, lo); /* -inf and NaN to lo: n stays in range */
  const vf n = VROUND(VMUL(xc, VSET1(1.44269504088896341f)));
  vf r = VFMA(n, VSET1(-0.693145751953125f), xc);
  r = VFMA(n, VSET1(-1.428606820309417e-06f), r);
  vf p = VSET1(1.0f / 5040.0f);
  p = VFMA(p, r, VSET1(1.0f / 720.0f));
  p = VFMA(p, r, VSET1(1.0f / 120.0f));
  p = VFMA(p, r, VSET1(1.0f / 24.0f));
  p = VFMA(p, r, VSET1(1.0f / 6.0f));
  p = VFMA(p, r, VSET1(0.5f));
  p = VFMA(p, r, VSET1(1.0f));
  p = VFMA(p, r, VSET1(1.0f));
  return VKEEP_GE(VMUL(p, VPOW2I(n)), x, lo);
}

ATTR static void attn_exp(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i += VL) VSTORE(y + i, vexp(VLOADF(x + i)));
}

/* The keys [lo, hi) of one query row against one head: lo a multiple of
 * VL, so every vector but the last lies inside the row; the last partial
 * vector goes through scalar scores and products, its padding scored -inf
 * (probability 0). */
INL void attn_head(const llm_attn_task *t, const float *mrow, const float *q, const float *K,
                   const float *V, int64_t lo, int64_t hi, float *out) {
  const int64_t hk = t->hk, hv = t->hv, n_kv = t->n_kv;
  vf qv[LLM_ATTN_MAX_HEAD], acc[LLM_ATTN_MAX_HEAD], lsum = VZERO();
  float tail[LLM_ATTN_MAX_HEAD] = {0}, mx = -INFINITY;
  float s[LLM_ATTN_TILE + VL];
  for (int64_t e = 0; e < hk; e++) qv[e] = VSET1(q[e]);
  for (int64_t e = 0; e < hv; e++) acc[e] = VZERO();
  for (int64_t j0 = lo; j0 < hi; j0 += LLM_ATTN_TILE) {
    const int64_t len = hi - j0 < LLM_ATTN_TILE ? hi - j0 : LLM_ATTN_TILE;
    const int64_t nv = len / VL, rem = len % VL;
    vf vmax = VSET1(-INFINITY);
    for (int64_t c = 0; c < nv; c++) {
      const int64_t j = j0 + c * VL;
      vf sv = VLOADF(mrow + j);
      for (int64_t e = 0; e < hk; e++) sv = VFMA(qv[e], VLOADF(K + e * n_kv + j), sv);
      VSTORE(s + c * VL, sv);
      vmax = VMAX(vmax, sv);
    }
    float tm = VHMAX(vmax);
    for (int64_t r = 0; r < VL; r++) { /* the partial vector, padded */
      float sc = -INFINITY;
      if (r < rem) {
        const int64_t j = j0 + nv * VL + r;
        sc = mrow[j];
        for (int64_t e = 0; e < hk; e++) sc = fmaf(q[e], K[e * n_kv + j], sc);
        if (sc > tm) tm = sc;
      }
      if (rem) s[nv * VL + r] = sc;
    }
    if (tm == -INFINITY) continue; /* every key of the tile masked */
    if (tm > mx) {
      if (mx != -INFINITY) {
        const vf f = VSET1(expf(mx - tm));
        lsum = VMUL(lsum, f);
        for (int64_t e = 0; e < hv; e++) acc[e] = VMUL(acc[e], f);
      }
      mx = tm;
    }
    const vf mv = VSET1(mx);
    for (int64_t c = 0; c < nv + (rem > 0); c++) {
      const vf p = vexp(VSUB(VLOADF(s + c * VL), mv));
      VSTORE(s + c * VL, p);
      lsum = VADD(lsum, p);
    }
    for (int64_t e = 0; e < hv; e++) {
      const float *vr = V + e * n_kv + j0;
      vf a = acc[e];
      for (int64_t c = 0; c < nv; c++) a = VFMA(VLOADF(s + c * VL), VLOADF(vr + c * VL), a);
      acc[e] = a;
      for (int64_t r = 0; r < rem; r++) tail[e] += s[nv * VL + r] * vr[nv * VL + r];
    }
  }
  const float l = VHSUM(lsum);
  for (int64_t e = 0; e < hv; e++) out[e] = l > 0.0f ? (VHSUM(acc[e]) + tail[e]) / l : 0.0f;
}

ATTR static void attn(const llm_attn_task *t) {
  const int64_t n_kv = t->n_kv, nh = t->nh, hv = t->hv, group = t->nh / t->nkv;
  for (int64_t i = t->i0; i < t->n; i += t->step) {
    const float *mrow = t->mask + i * n_kv;
    float *out = t->out + i * nh * hv;
    int64_t lo = 0, hi = n_kv;
    while (lo < hi && mrow[lo] == -INFINITY) lo++;
    while (hi > lo && mrow[hi - 1] == -INFINITY) hi--;
    lo -= lo % VL;
    for (int64_t h = 0; h < nh; h++) {
      const int64_t g = h / group;
      attn_head(t, mrow, t->q + (i * nh + h) * t->hk, t->k + g * t->hk * n_kv,
                t->v + g * hv * n_kv, lo, hi, out + h * hv);
    }
  }
}

const llm_attn_fn KN(llm_attn) = attn;
const llm_attn_exp_fn KN(llm_attn_exp) = attn_exp;
