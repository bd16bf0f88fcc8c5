/* fm_rng.h: the core's documented pseudo-random generator.
 *
 * xoshiro256** 1.0 (Blackman and Vigna, "Scrambled linear pseudorandom number
 * generators", ACM TOMS 47(4), 2021; reference code xoshiro256starstar.c),
 * with its 256-bit state filled by four successive outputs of splitmix64
 * (Steele, Lea and Flood 2014; reference code splitmix64.c) started at the
 * user's 64-bit seed. Uniform doubles take the top 53 bits; standard normals
 * come from the Box-Muller transform, both outputs of each pair used in order.
 * The full recipe, bit for bit, is docs/rng.md.
 *
 * Reproducibility: the integer and uniform streams depend only on the seed.
 * Normals also go through libm's log, sqrt, sin and cos, so they are identical
 * for the same seed on the same platform and libm, and agree to within an ulp
 * or so elsewhere.
 *
 * Ownership and thread safety: fm_rng is a caller-allocated value (init by
 * fm_rng_seed, nothing to clear); one generator must not be shared between
 * threads without a lock. Give each thread its own stream with fm_rng_jump.
 * Oracle: core/tests/stats/stats_rpca/test_stats_rpca.c (published reference vectors). */
#ifndef FM_RNG_H
#define FM_RNG_H

#include <stdint.h>

typedef struct fm_rng {
  uint64_t s[4]; /* xoshiro256** state, never all zero */
  int has_spare; /* nonzero when `spare` holds the second Box-Muller output */
  double spare;  /* the pending normal deviate */
} fm_rng;

/* One splitmix64 step: advance *state by the golden gamma and return the mixed
 * value (exactly splitmix64.c's next()). */
uint64_t fm_rng_splitmix64(uint64_t *state);

/* Seed: s[i] = the i-th splitmix64 output from state `seed`, i = 0..3. */
void fm_rng_seed(fm_rng *r, uint64_t seed);

/* Set the raw xoshiro state (for reference vectors); s must not be all zero. */
void fm_rng_set_state(fm_rng *r, const uint64_t s[4]);

/* Next 64-bit output of xoshiro256**. */
uint64_t fm_rng_next(fm_rng *r);

/* Uniform double in [0, 1): (next >> 11) * 2^-53. */
double fm_rng_unif(fm_rng *r);

/* Standard normal by Box-Muller (docs/rng.md). */
double fm_rng_norm(fm_rng *r);

/* Fill x[0..n) with standard normals in order (n <= 0 writes nothing). */
void fm_rng_norm_fill(fm_rng *r, double *x, int64_t n);

/* Advance the state by 2^128 outputs (xoshiro256** jump()), for
 * non-overlapping parallel streams; drops any pending normal. */
void fm_rng_jump(fm_rng *r);

#endif
