/* llm_sample.c: choosing the next token from logits. Greedy is the argmax
 * with ties to the lowest token id (NaN never wins). Sampling scales by
 * 1/temperature, keeps the top_k largest (ties at the cut to lower ids),
 * then the smallest prefix in descending order whose softmax mass reaches
 * top_p, renormalizes and draws with one uniform of the core's xoshiro256**
 * (rng.h, docs/rng.md): the first token whose cumulative probability
 * exceeds u * total. Deterministic for a seed on any platform with IEEE
 * float/double and the same libm exp(). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fm/fm_llm.h"
#include "fm/fm_rng.h"

typedef struct cand {
  float v;    /* scaled logit */
  int32_t id; /* token id */
} cand;

struct fm_llm_sampler {
  fm_llm_sampling p;
  int64_t n_vocab;
  fm_rng rng;
  cand *c;      /* (n_vocab) candidates, ordered */
  double *prob; /* (n_vocab) unnormalized probabilities of c */
};

int64_t fm_llm_argmax(const float *x, int64_t n) {
  int64_t best = -1;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(x[i])) continue;
    if (best < 0 || x[i] > x[best]) best = i;
  }
  return best;
}

fm_status fm_llm_sampler_new(const fm_llm_sampling *s, int64_t n_vocab, fm_llm_sampler **out,
                             fm_err *err) {
  if (out) *out = NULL;
  if (!s || !out) return fm_err_set(err, FM_EARG, "fm_llm_sampler_new: NULL argument");
  if (n_vocab < 1) return fm_err_set(err, FM_EARG, "n_vocab must be >= 1");
  if (isnan(s->temperature)) return fm_err_set(err, FM_EARG, "temperature is NaN");
  if (!(s->top_p > 0 && s->top_p <= 1))
    return fm_err_set(err, FM_EARG, "top_p must be in (0, 1], got %g", s->top_p);
  fm_llm_sampler *r = calloc(1, sizeof *r);
  if (!r) return fm_err_set(err, FM_ENOMEM, "out of memory for a sampler");
  r->p = *s;
  r->n_vocab = n_vocab;
  fm_rng_seed(&r->rng, s->seed);
  if (s->temperature > 0) {
    r->c = malloc((size_t)n_vocab * sizeof *r->c);
    r->prob = malloc((size_t)n_vocab * sizeof *r->prob);
    if (!r->c || !r->prob) {
      fm_llm_sampler_free(r);
      return fm_err_set(err, FM_ENOMEM, "out of memory for a sampler of %lld tokens",
                        (long long)n_vocab);
    }
  }
  *out = r;
  return FM_OK;
}

void fm_llm_sampler_free(fm_llm_sampler *s) {
  if (!s) return;
  free(s->c);
  free(s->prob);
  free(s);
}

/* a before b: larger value first, then lower id. */
static int before(const cand *a, const cand *b) {
  return a->v > b->v || (a->v == b->v && a->id < b->id);
}

/* Partition c[0..n) so that the k first (in `before` order) come first
 * (Hoare's selection). */
static void select_top(cand *c, int64_t n, int64_t k) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    cand pivot = c[lo + (hi - lo) / 2];
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (before(&c[i], &pivot)) i++;
      while (before(&pivot, &c[j])) j--;
      if (i <= j) {
        cand t = c[i];
        c[i] = c[j];
        c[j] = t;
        i++;
        j--;
      }
    }
    if (k - 1 <= j)
      hi = j;
    else if (k - 1 >= i)
      lo = i;
    else
      break;
  }
}

static int cmp_cand(const void *pa, const void *pb) {
  const cand *a = pa, *b = pb;
  return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

int64_t fm_llm_sampler_next(fm_llm_sampler *s, const float *logits) {
  int64_t n = s->n_vocab;
  if (!(s->p.temperature > 0)) {
    int64_t i = fm_llm_argmax(logits, n);
    return (i >= 0 && logits[i] > -INFINITY) ? i : -1;
  }
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++) {
    float v = logits[i];
    if (isnan(v) || v == -INFINITY) continue;
    s->c[m].v = (float)((double)v / s->p.temperature);
    s->c[m].id = (int32_t)i;
    m++;
  }
  if (m == 0) return -1;
  int64_t k = (s->p.top_k > 0 && s->p.top_k < m) ? s->p.top_k : m;
  if (k < m) select_top(s->c, m, k);
  qsort(s->c, (size_t)k, sizeof *s->c, cmp_cand);
  double mx = s->c[0].v, total = 0;
  for (int64_t i = 0; i < k; i++) {
    s->prob[i] = exp((double)s->c[i].v - mx);
    total += s->prob[i];
  }
  int64_t keep = k;
  if (s->p.top_p < 1) {
    double cum = 0;
    for (int64_t i = 0; i < k; i++) {
      cum += s->prob[i];
      if (cum >= s->p.top_p * total) {
        keep = i + 1;
        break;
      }
    }
    total = 0;
    for (int64_t i = 0; i < keep; i++) total += s->prob[i];
  }
  double u = fm_rng_unif(&s->rng) * total, cum = 0;
  for (int64_t i = 0; i < keep; i++) {
    cum += s->prob[i];
    if (u < cum) return s->c[i].id;
  }
  return s->c[keep - 1].id;
}
