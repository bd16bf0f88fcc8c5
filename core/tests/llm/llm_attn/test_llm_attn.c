/* test_llm_attn.c: small-head attention (llm_attn.h), each ISA path this
 * CPU runs (AVX2, AVX-512: skipped with a message where absent).
 *  - The vector exponential against exp() in double over [-87, 0] (every
 *    4,093rd float, and random ones), within 3 u relative; exact 0 below
 *    ln(FLT_MIN) and for -inf, exact 1 at 0.
 *  - The kernel against a double-precision reference of the same operands:
 *    head sizes 1, 8, 13 and 32, grouped-query (8 heads on 4 KV heads, 3 on
 *    1), key counts from 1 to 700 (partial vectors, several tiles), causal,
 *    sliding-window, full and biased masks, rows with every key masked
 *    (zeros), scores up to +-40 (rescaling between tiles), a thread's
 *    interleaved rows.
 *    Tolerance, first order in u = 2^-24, from the arithmetic of the
 *    kernel: a score's error D_j = gamma(hk + 1) (|m_j| + sum_e |q_e k_je|);
 *    an unnormalized probability's relative error d_j = 2 D + u |x_j| +
 *    3 u (exp) + R 5 u (R rescalings: expf, its argument, the products),
 *    x_j its exponent and D the row's largest D_j; an output element's
 *    error <= sum_j w_j d_j |v_j - o| + gamma(N) (sum_j w_j |v_j| + |o|) +
 *    u |o| with N = n_kv / VL + VL + 6 the depth of the lane sums, w_j the
 *    exact weights; twice that covers the second-order terms.
 *  - The graph lowering (llm_attn_small: queries rounded to F16 and
 *    scaled, keys transposed from an F16 cache view, values cast) on 1 and
 *    3 threads, equal bit for bit to the kernel on operands prepared by
 *    hand; and the dispatcher follows the ISA cap. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_cpu.h"
#include "fm_test.h"
#include "llm/llm_attn.h"
#include "llm/llm_impl.h"

static uint64_t rng = 7;
static const double U = 0x1p-24;

static double gamma_n(double n) { return n * U / (1.0 - n * U); }

static double unif(double a, double b) { return a + (b - a) * fm_test_rng_unif(&rng); }

/* ---- the exponential ------------------------------------------------------ */

static void check_exp(llm_attn_exp_fn fn, const char *isa) {
  enum { B = 4096 };
  float *x = malloc(B * sizeof *x), *y = malloc(B * sizeof *y);
  CHECK(x && y);
  if (!x || !y) goto done;
  double worst = 0;
  int n = 0;
  /* every 4,093rd float in [-87, 0], then random ones, a block at a time */
  uint32_t bits = 0x80000000u; /* -0 */
  for (int pass = 0; pass < 2; pass++) {
    for (;;) {
      int m = 0;
      for (; m < B; m++) {
        float v;
        if (pass == 0) {
          memcpy(&v, &bits, sizeof v);
          if (v < -87.0f) break;
          bits += 4093;
        } else {
          if (n + m >= 4000000) break;
          v = (float)unif(-87.0, 0.0);
        }
        x[m] = v;
      }
      for (int i = m; i < B; i++) x[i] = 0.0f;
      fn(x, y, B);
      for (int i = 0; i < m; i++) {
        const double e = exp((double)x[i]);
        worst = fmax(worst, fabs(y[i] - e) / e);
      }
      n += m;
      if (m < B) break;
    }
  }
  fprintf(stderr, "  %s exp: %d arguments, largest relative error %.2f u\n", isa, n, worst / U);
  CHECK(worst <= 3 * U);
  const float special[] = {-INFINITY, -1e30f, -87.4f, -100.0f, 0.0f, -0.0f, -87.3f, -1e-30f};
  for (int i = 0; i < B; i++) x[i] = special[i % 8];
  fn(x, y, B);
  CHECK(y[0] == 0.0f && y[1] == 0.0f && y[2] == 0.0f && y[3] == 0.0f);
  CHECK(y[4] == 1.0f && y[5] == 1.0f && y[7] == 1.0f);
  const double e6 = exp((double)special[6]);
  CHECK(y[6] > 0.0f && fabs(y[6] - e6) <= 3 * U * e6);
done:
  free(x);
  free(y);
}

/* ---- the kernel against double -------------------------------------------- */

enum { MASK_CAUSAL, MASK_SWA, MASK_FULL, MASK_BIAS, MASK_NONE_ROW };

typedef struct attn_case {
  int64_t n, n_kv, nh, nkv, hk, hv;
  int mask;
  double qscale; /* query magnitude: scores up to about qscale^2 hk / 3 */
} attn_case;

static void fill_mask(float *mask, const attn_case *c) {
  const int64_t past = c->n_kv - c->n;
  for (int64_t i = 0; i < c->n; i++)
    for (int64_t j = 0; j < c->n_kv; j++) {
      float m = 0.0f;
      const int64_t pos = past + i;
      switch (c->mask) {
      case MASK_CAUSAL: m = j <= pos ? 0.0f : -INFINITY; break;
      case MASK_SWA: m = j <= pos && pos - j < 37 ? 0.0f : -INFINITY; break;
      case MASK_FULL: break;
      case MASK_BIAS: m = j <= pos ? (float)(-0.05 * (double)(pos - j)) : -INFINITY; break;
      case MASK_NONE_ROW: m = i % 3 == 1 ? -INFINITY : 0.0f; break;
      }
      mask[i * c->n_kv + j] = m;
    }
}

/* The exact output of row i, head h, element e, and its tolerance. */
static void reference(const llm_attn_task *t, int64_t i, int64_t h, int64_t vl, double *o,
                      double *tol) {
  const int64_t n_kv = t->n_kv, g = h / (t->nh / t->nkv);
  const float *q = t->q + (i * t->nh + h) * t->hk, *mrow = t->mask + i * n_kv;
  double *s = malloc((size_t)n_kv * sizeof *s);
  double mx = -INFINITY, dmax = 0, l = 0;
  int64_t first = -1, last = -1;
  for (int64_t j = 0; j < n_kv; j++) {
    double a = mrow[j], sa = fabs(mrow[j]);
    for (int64_t e = 0; e < t->hk; e++) {
      const double p = (double)q[e] * t->k[(g * t->hk + e) * n_kv + j];
      a += p;
      sa += fabs(p);
    }
    s[j] = a;
    if (a == -INFINITY) continue;
    if (first < 0) first = j;
    last = j;
    dmax = fmax(dmax, gamma_n((double)t->hk + 1) * sa);
    mx = fmax(mx, a);
  }
  const double tiles = first < 0 ? 0 : ceil((double)(last - first + vl) / LLM_ATTN_TILE);
  for (int64_t j = 0; j < n_kv; j++) l += s[j] == -INFINITY ? 0 : exp(s[j] - mx);
  const double depth = (double)n_kv / (double)vl + (double)vl + 6;
  for (int64_t e = 0; e < t->hv; e++) {
    const float *v = t->v + (g * t->hv + e) * n_kv;
    double num = 0, wabs = 0;
    for (int64_t j = 0; j < n_kv; j++)
      if (s[j] != -INFINITY) {
        const double w = exp(s[j] - mx) / l;
        num += w * v[j];
        wabs += w * fabs(v[j]);
      }
    double err = 0;
    for (int64_t j = 0; j < n_kv; j++)
      if (s[j] != -INFINITY) {
        const double w = exp(s[j] - mx) / l;
        const double d = 2 * dmax + U * fabs(s[j] - mx) + 3 * U + tiles * 5 * U;
        err += w * d * fabs(v[j] - num);
      }
    o[e] = first < 0 ? 0.0 : num;
    tol[e] = first < 0 ? 0.0 : 2 * (err + gamma_n(depth) * (wabs + fabs(num)) + U * fabs(num));
  }
  free(s);
}

static void check_case(llm_attn_fn fn, const attn_case *c, int64_t vl) {
  const size_t nq = (size_t)(c->n * c->nh * c->hk), nk = (size_t)(c->nkv * c->hk * c->n_kv),
               nv = (size_t)(c->nkv * c->hv * c->n_kv), no = (size_t)(c->n * c->nh * c->hv);
  float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nv * sizeof *v),
        *mask = malloc((size_t)(c->n * c->n_kv) * sizeof *mask), *out = malloc(no * sizeof *out);
  double o[LLM_ATTN_MAX_HEAD], tol[LLM_ATTN_MAX_HEAD];
  CHECK(q && k && v && mask && out);
  if (!q || !k || !v || !mask || !out) goto done;
  for (size_t i = 0; i < nq; i++) q[i] = (float)unif(-c->qscale, c->qscale);
  for (size_t i = 0; i < nk; i++) k[i] = (float)unif(-1, 1);
  for (size_t i = 0; i < nv; i++) v[i] = (float)unif(-2, 2);
  fill_mask(mask, c);
  for (size_t i = 0; i < no; i++) out[i] = NAN;
  /* the rows of three threads, as GGML's would take them */
  for (int64_t th = 0; th < 3; th++) {
    llm_attn_task t = {q, k, v, mask, out, c->n, c->n_kv, c->nh, c->nkv, c->hk, c->hv, th, 3};
    fn(&t);
  }
  llm_attn_task t = {q, k, v, mask, out, c->n, c->n_kv, c->nh, c->nkv, c->hk, c->hv, 0, 1};
  double worst = 0;
  int bad = 0;
  for (int64_t i = 0; i < c->n; i++)
    for (int64_t h = 0; h < c->nh; h++) {
      reference(&t, i, h, vl, o, tol);
      for (int64_t e = 0; e < c->hv; e++) {
        const double y = out[(i * c->nh + h) * c->hv + e], d = fabs(y - o[e]);
        if (!(d <= tol[e])) bad++;
        if (tol[e] > 0) worst = fmax(worst, d / tol[e]);
      }
    }
  if (bad)
    fprintf(stderr, "  n %lld n_kv %lld heads %lld/%lld hk %lld hv %lld mask %d: %d outside\n",
            (long long)c->n, (long long)c->n_kv, (long long)c->nh, (long long)c->nkv,
            (long long)c->hk, (long long)c->hv, c->mask, bad);
  CHECK(bad == 0);
  if (worst > 0.5)
    fprintf(stderr, "  (n_kv %lld hk %lld: error at %.2f of the bound)\n", (long long)c->n_kv,
            (long long)c->hk, worst);
done:
  free(q);
  free(k);
  free(v);
  free(mask);
  free(out);
}

static void check_level(fm_isa cap) {
  fm_cpu_cap(cap);
  const llm_attn_fn fn = fm_cpu_isa() == cap ? llm_attn_kernel() : NULL;
  if (!fn) {
    fprintf(stderr, "  %s: not run here (CPU, F16C or FM_ISA): its kernel not tested\n",
            fm_cpu_isa_name(cap));
    fm_cpu_cap(FM_ISA_AVX512);
    return;
  }
  const int wide = cap == FM_ISA_AVX512;
  CHECK(fn == (wide ? llm_attn_avx512 : llm_attn_avx2));
  check_exp(wide ? llm_attn_exp_avx512 : llm_attn_exp_avx2, fm_cpu_isa_name(cap));
  const int64_t vl = wide ? 16 : 8;
  static const int64_t hs[] = {1, 8, 13, 32};
  for (int ih = 0; ih < 4; ih++) {
    const int64_t hk = hs[ih], hv = hs[(ih + 1) % 4];
    const attn_case cases[] = {
        {37, 37, 8, 4, hk, hv, MASK_CAUSAL, 1.0},   {5, 700, 3, 1, hk, hv, MASK_CAUSAL, 6.0},
        {70, 300, 8, 4, hk, hv, MASK_SWA, 2.0},     {9, 131, 3, 1, hk, hv, MASK_FULL, 12.0},
        {40, 257, 8, 4, hk, hv, MASK_BIAS, 3.0},    {12, 12, 3, 1, hk, hv, MASK_NONE_ROW, 1.0},
        {1, 1, 3, 1, hk, hv, MASK_CAUSAL, 1.0},     {3, 17, 8, 4, hk, hv, MASK_CAUSAL, 1.0},
    };
    for (size_t ic = 0; ic < sizeof cases / sizeof cases[0]; ic++) check_case(fn, &cases[ic], vl);
  }
  fm_cpu_cap(FM_ISA_AVX512);
}

static void test_kernels(void) {
  check_level(FM_ISA_AVX2);
  check_level(FM_ISA_AVX512);
}

/* ---- the graph lowering --------------------------------------------------- */

static float round_half(float x) { return ggml_fp16_to_fp32(ggml_fp32_to_fp16(x)); }

/* llm_attn_small on a cache of F16 keys (rows of nkv * hk per cell) and
 * transposed F16 values, on 1 and 3 threads, against the kernel run on the
 * operands prepared by hand. */
static void test_graph(void) {
  if (!llm_attn_kernel()) {
    fprintf(stderr, "  no kernel on this CPU (or FM_ISA): the lowering not tested\n");
    return;
  }
  enum { N = 50, CELLS = 96, NKV = 70, NH = 6, G = 2, HK = 8, HV = 12 };
  const float scale = 0.35f;
  llm_model model = {0};
  model.fused_gemm = 1;
  struct ggml_init_params ip = {(size_t)32 << 20, NULL, false};
  struct ggml_context *ctx = ggml_init(ip);
  float *want = malloc((size_t)N * NH * HV * sizeof *want);
  CHECK(ctx && want);
  if (!ctx || !want) goto done;
  struct ggml_tensor *q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, HK, NH, N);
  struct ggml_tensor *kc = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, HK * G, CELLS);
  struct ggml_tensor *vc = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, CELLS, HV * G);
  struct ggml_tensor *mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, NKV, N);
  float *qd = q->data, *md = mask->data;
  ggml_fp16_t *kd = kc->data, *vd = vc->data;
  for (int i = 0; i < HK * NH * N; i++) qd[i] = (float)unif(-2, 2);
  for (int i = 0; i < HK * G * CELLS; i++) kd[i] = ggml_fp32_to_fp16((float)unif(-1, 1));
  for (int i = 0; i < CELLS * HV * G; i++) vd[i] = ggml_fp32_to_fp16((float)unif(-1, 1));
  attn_case mc = {N, NKV, NH, G, HK, HV, MASK_CAUSAL, 0};
  fill_mask(md, &mc);
  /* by hand: q rounded to F16 then scaled, K transposed, V widened */
  static float qs[HK * NH * N], kt[G * HK * NKV], vt[G * HV * NKV];
  for (int i = 0; i < HK * NH * N; i++) qs[i] = round_half(qd[i]) * scale;
  for (int g = 0; g < G; g++)
    for (int e = 0; e < HK; e++)
      for (int j = 0; j < NKV; j++) kt[(g * HK + e) * NKV + j] = ggml_fp16_to_fp32(kd[j * HK * G + g * HK + e]);
  for (int r = 0; r < G * HV; r++)
    for (int j = 0; j < NKV; j++) vt[r * NKV + j] = ggml_fp16_to_fp32(vd[r * CELLS + j]);
  llm_attn_task t = {qs, kt, vt, md, want, N, NKV, NH, G, HK, HV, 0, 1};
  llm_attn_kernel()(&t);

  llm_build b = {0};
  b.m = &model;
  b.ctx = ctx;
  struct ggml_tensor *kk = ggml_view_3d(ctx, kc, HK, NKV, G, kc->nb[1], ggml_row_size(GGML_TYPE_F16, HK), 0);
  struct ggml_tensor *vv = ggml_view_3d(ctx, vc, NKV, HV, G, vc->nb[1], vc->nb[1] * HV, 0);
  CHECK(llm_attn_small_applies(&b, HK, HV));
  CHECK(!llm_attn_small_applies(&b, LLM_ATTN_MAX_HEAD + 1, HV));
  model.fused_gemm = 0;
  CHECK(!llm_attn_small_applies(&b, HK, HV));
  model.fused_gemm = 1;
  struct ggml_tensor *out = llm_attn_small(&b, q, kk, vv, mask, scale, 1);
  CHECK(out->ne[0] == NH * HV && out->ne[1] == N);
  struct ggml_cgraph *gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, out);
  for (int threads = 1; threads <= 3; threads += 2) {
    memset(out->data, 0, ggml_nbytes(out));
    CHECK(ggml_graph_compute_with_ctx(ctx, gf, threads) == GGML_STATUS_SUCCESS);
    CHECK(memcmp(out->data, want, ggml_nbytes(out)) == 0);
  }
  /* no kernel below avx2: the graph keeps GGML's flash attention */
  fm_cpu_cap(FM_ISA_PORTABLE);
  CHECK(llm_attn_kernel() == NULL);
  CHECK(!llm_attn_small_applies(&b, HK, HV));
  fm_cpu_cap(FM_ISA_AVX512);
done:
  free(want);
  if (ctx) ggml_free(ctx);
}

int main(void) {
  FM_RUN(test_kernels);
  FM_RUN(test_graph);
  FM_TEST_END();
}
