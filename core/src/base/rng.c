/* rng.c: xoshiro256** seeded by splitmix64, uniforms and Box-Muller normals.
 * Transcribed from the public-domain reference code (see rng.h, docs/rng.md). */
#include "fm/fm_rng.h"

#include <math.h>

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t fm_rng_splitmix64(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

void fm_rng_seed(fm_rng *r, uint64_t seed) {
  uint64_t st = seed;
  for (int i = 0; i < 4; i++) r->s[i] = fm_rng_splitmix64(&st);
  /* splitmix64 is a bijection of its state, so four successive outputs are
   * never all zero; keep the guard anyway because xoshiro would stick at 0. */
  if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) r->s[0] = 1;
  r->has_spare = 0;
  r->spare = 0.0;
}

void fm_rng_set_state(fm_rng *r, const uint64_t s[4]) {
  for (int i = 0; i < 4; i++) r->s[i] = s[i];
  if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) r->s[0] = 1;
  r->has_spare = 0;
  r->spare = 0.0;
}

uint64_t fm_rng_next(fm_rng *r) {
  uint64_t *s = r->s;
  const uint64_t result = rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double fm_rng_unif(fm_rng *r) { return (double)(fm_rng_next(r) >> 11) * 0x1.0p-53; }

double fm_rng_norm(fm_rng *r) {
  if (r->has_spare) {
    r->has_spare = 0;
    return r->spare;
  }
  /* u1 in (0, 1] so log(u1) is finite; u2 in [0, 1). */
  const double u1 = 1.0 - fm_rng_unif(r);
  const double u2 = fm_rng_unif(r);
  const double rad = sqrt(-2.0 * log(u1));
  const double ang = 6.283185307179586476925286766559 * u2; /* 2 pi */
  r->spare = rad * sin(ang);
  r->has_spare = 1;
  return rad * cos(ang);
}

void fm_rng_norm_fill(fm_rng *r, double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) x[i] = fm_rng_norm(r);
}

void fm_rng_jump(fm_rng *r) {
  static const uint64_t JUMP[] = {UINT64_C(0x180ec6d33cfd0aba), UINT64_C(0xd5a61266f0c9392c),
                                  UINT64_C(0xa9582618e03fc9aa), UINT64_C(0x39abdc4529b1661c)};
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int i = 0; i < 4; i++) {
    for (int b = 0; b < 64; b++) {
      if (JUMP[i] & (UINT64_C(1) << b)) {
        s0 ^= r->s[0];
        s1 ^= r->s[1];
        s2 ^= r->s[2];
        s3 ^= r->s[3];
      }
      (void)fm_rng_next(r);
    }
  }
  r->s[0] = s0;
  r->s[1] = s1;
  r->s[2] = s2;
  r->s[3] = s3;
  r->has_spare = 0;
  r->spare = 0.0;
}
