/* llm_conv_kern.h (private): the direct convolution of llm_conv.h, written
 * once over a vector of VL floats and included by one file per ISA
 * (llm_simd_avx2.c, llm_simd_avx512.c) after llm_gemm_kern.h (ATTR, KN,
 * vf, VL, VZERO, VLOADF, VFMA, VSET1, VSTORE, INL, UNROLL), with CONV_ACC:
 * the accumulators a tile keeps in registers (the tile's positions are
 * CONV_ACC / (O / VL), at most 8). */

/* Positions [p0, p0 + np) against every output channel (no vectors).
 * edge: some taps of some positions fall outside [0, T) (read as zeros). */
INL void conv_tile(const llm_conv_task *t, int64_t p0, const int np, const int no, const int edge) {
  const int64_t I = t->I, O = t->O, k = t->k, d = t->d, T = t->T, half = (k - 1) / 2;
  vf acc[8][LLM_CONV_MAX_VEC];
  UNROLL
  for (int p = 0; p < np; p++)
    UNROLL
    for (int v = 0; v < no; v++) acc[p][v] = t->bias ? VLOADF(t->bias + v * VL) : VZERO();
  for (int64_t j = 0; j < k; j++) {
    const int64_t s = p0 + (j - half) * d; /* the input position of the tile's first output */
    if (edge && (s + np - 1 < 0 || s >= T)) continue;
    const float *xj = t->x + s * I, *wj = t->wr + j * I * O;
    for (int64_t i = 0; i < I; i++) {
      vf w[LLM_CONV_MAX_VEC];
      UNROLL
      for (int v = 0; v < no; v++) w[v] = VLOADF(wj + i * O + v * VL);
      UNROLL
      for (int p = 0; p < np; p++) {
        if (edge && (s + p < 0 || s + p >= T)) continue;
        const vf xb = VSET1(xj[p * I + i]);
        UNROLL
        for (int v = 0; v < no; v++) acc[p][v] = VFMA(w[v], xb, acc[p][v]);
      }
    }
  }
  UNROLL
  for (int p = 0; p < np; p++)
    UNROLL
    for (int v = 0; v < no; v++) VSTORE(t->y + (p0 + p - t->o0) * O + v * VL, acc[p][v]);
}

/* Outputs [t0, t1): full tiles, with bounds checks where a tap of one of
 * their positions falls outside (a wide dilated kernel has k d of them:
 * 1,000 of OpenSpliceAI 10k's 15,000 positions per block), single
 * positions for the remainder. Every position sums its taps in the same
 * order in any tile. */
INL void conv_run(const llm_conv_task *t, const int no) {
  const int np = CONV_ACC / no < 8 ? CONV_ACC / no : 8;
  const int64_t half = (t->k - 1) / 2, lo = half * t->d, hi = t->T - (t->k - 1 - half) * t->d;
  int64_t p = t->t0;
  for (; p + np <= t->t1; p += np) {
    if (p >= lo && p + np <= hi) conv_tile(t, p, np, no, 0);
    else conv_tile(t, p, np, no, 1);
  }
  for (; p < t->t1; p++) conv_tile(t, p, 1, no, 1);
}

ATTR static void conv(const llm_conv_task *t) {
  switch (t->O / VL) {
  case 1: conv_run(t, 1); break;
  case 2: conv_run(t, 2); break;
  case 3: conv_run(t, 3); break;
  default: conv_run(t, 4); break;
  }
}

const llm_conv_fn KN(llm_conv) = conv;
