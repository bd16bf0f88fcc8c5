/* codec_alp_encode.c: the ALP encoder (fm_codec_alp.h, docs/formats/alp.md).
 *
 * Choosing (e, f) follows the paper's two-level sampling (Afroozeh, Kuffo
 * and Boncz, SIGMOD 2023, section 3): per row group of 100 vectors of a
 * column, 32 equidistant values of each of 8 equidistant vectors are tried
 * with every combination 0 <= f <= e <= 18; each sampled vector votes for
 * its cheapest combination, and the (at most) 5 most voted are kept. Each
 * vector then tries those on 32 of its own values, in order of votes,
 * stopping after 2 tries in a row that do not beat the best, and is encoded
 * whole with the winner. The cost of a combination is the paper's estimate:
 * bit width of the frame-of-reference digits times the values, plus 80 bits
 * (value and position) per exception. Ties go to the larger exponent, then
 * the larger factor. */
#include "codec_alp_impl.h"

#include <math.h>
#include <stdlib.h>

#define RG_VECTORS 100        /* vectors per row group (first-level sampling) */
#define RG_SAMPLED_VECTORS 8  /* vectors sampled per row group */
#define SAMPLE_VALUES 32      /* values sampled per vector */
#define TOP_K 5               /* combinations kept for the second level */
#define EARLY_EXIT 2          /* non-improving tries that end the second level */
#define N_EXP (FM_ALP_MAX_EXPONENT + 1)

/* fast_round: (s + 2^52 + 2^51) - (2^52 + 2^51) rounds s to the nearest
 * integer (ties to even) for |s| < 2^51, where the sum's unit is 1. */
static const double round_magic = 6755399441055744.0;
static const double digit_limit = 2251799813685248.0; /* 2^51 */

/* The digit of v under (e, f) into *d; 0 when v does not round trip. */
static inline int encode_one(double v, int e, int f, int64_t *d) {
  const double s = v * fm_alp_pow10[e] * fm_alp_ipow10[f];
  if (!(fabs(s) < digit_limit)) return 0; /* NaN, +-Inf, too large */
  const int64_t di = (int64_t)((s + round_magic) - round_magic);
  const double back = alp_value(di, f, e);
  if (memcmp(&back, &v, sizeof v) != 0) return 0;
  *d = di;
  return 1;
}

static int bit_width(uint64_t u) {
  int w = 0;
  while (u) {
    w++;
    u >>= 1;
  }
  return w;
}

/* The paper's size estimate, in bits, of m values under (e, f). */
static uint64_t estimate_bits(const double *s, int m, int e, int f) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  int n_exc = 0;
  for (int i = 0; i < m; i++) {
    int64_t d;
    if (encode_one(s[i], e, f, &d)) {
      if (d < lo) lo = d;
      if (d > hi) hi = d;
    } else {
      n_exc++;
    }
  }
  const int w = n_exc == m ? 0 : bit_width((uint64_t)hi - (uint64_t)lo);
  return (uint64_t)m * (uint64_t)w + (uint64_t)n_exc * ALP_EXCEPTION_BITS;
}

/* Up to SAMPLE_VALUES equidistant values of v[0..len) into s; their count. */
static int sample_vector(const double *v, int64_t len, double *s) {
  const int m = len < SAMPLE_VALUES ? (int)len : SAMPLE_VALUES;
  for (int k = 0; k < m; k++) s[k] = v[(int64_t)k * len / m];
  return m;
}

typedef struct combo {
  int e, f;
} combo;

/* Later in this order wins a tie: larger exponent, then larger factor. */
static int combo_key(combo c) { return c.e * N_EXP + c.f; }

/* First level: the combinations voted for by the sampled vectors of row
 * group [t0, t1) (t1 > t0) of the column col (n rows, vs per vector), most
 * votes first; returns how many (>= 1). */
static int first_level(const double *col, int64_t n, int64_t vs, int64_t t0, int64_t t1,
                       combo *top) {
  int votes[N_EXP * N_EXP] = {0};
  const int64_t nv = t1 - t0;
  const int64_t ns = nv < RG_SAMPLED_VECTORS ? nv : RG_SAMPLED_VECTORS;
  double s[SAMPLE_VALUES];
  for (int64_t k = 0; k < ns; k++) {
    const int64_t t = t0 + k * nv / ns;
    const int64_t start = t * vs, len = n - start < vs ? n - start : vs;
    const int m = sample_vector(col + start, len, s);
    uint64_t best_bits = UINT64_MAX;
    combo best = {0, 0};
    for (int e = 0; e < N_EXP; e++)
      for (int f = 0; f <= e; f++) {
        const uint64_t bits = estimate_bits(s, m, e, f);
        if (bits <= best_bits) { /* later (larger e, f) wins ties */
          best_bits = bits;
          best.e = e;
          best.f = f;
        }
      }
    votes[combo_key(best)]++;
  }
  int k_out = 0;
  for (; k_out < TOP_K; k_out++) {
    int pick = -1;
    for (int key = N_EXP * N_EXP - 1; key >= 0; key--)
      if (votes[key] > 0 && (pick < 0 || votes[key] > votes[pick])) pick = key;
    if (pick < 0) break;
    top[k_out].e = pick / N_EXP;
    top[k_out].f = pick % N_EXP;
    votes[pick] = 0;
  }
  return k_out; /* >= 1: every row group has a vector, which votes */
}

/* Second level: the best of the row group's combinations for one vector. */
static combo second_level(const double *v, int64_t len, const combo *top, int k) {
  if (k == 1) return top[0];
  double s[SAMPLE_VALUES];
  const int m = sample_vector(v, len, s);
  uint64_t best_bits = UINT64_MAX;
  int best = 0, worse = 0;
  for (int i = 0; i < k; i++) {
    const uint64_t bits = estimate_bits(s, m, top[i].e, top[i].f);
    if (bits < best_bits) {
      best_bits = bits;
      best = i;
      worse = 0;
    } else if (++worse >= EARLY_EXIT) {
      break;
    }
  }
  return top[best];
}

/* Scratch for one vector. */
typedef struct vec_work {
  int64_t digit[FM_ALP_VECTOR_MAX];
  uint64_t exc_bits[FM_ALP_VECTOR_MAX];
  uint16_t exc_pos[FM_ALP_VECTOR_MAX];
} vec_work;

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

/* Encode v[0..len) with (e, f), or raw when that is no larger: write the
 * header at hdr and the data at out + *pos (8-aligned), advancing *pos. */
static void encode_vector(const double *v, int64_t len, combo c, vec_work *wk, uint8_t *out,
                          size_t *pos, uint8_t *hdr) {
  int n_exc = 0;
  int64_t fill = 0;
  int have_fill = 0;
  for (int64_t i = 0; i < len; i++) {
    int64_t d;
    if (encode_one(v[i], c.e, c.f, &d)) {
      wk->digit[i] = d;
      if (!have_fill) {
        fill = d;
        have_fill = 1;
      }
    } else {
      wk->digit[i] = INT64_MIN; /* a placeholder, replaced below */
      memcpy(&wk->exc_bits[n_exc], &v[i], 8);
      wk->exc_pos[n_exc++] = (uint16_t)i;
    }
  }
  /* Exceptions take a real digit, so they do not widen the frame. */
  for (int k = 0; k < n_exc; k++) wk->digit[wk->exc_pos[k]] = fill;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int64_t i = 0; i < len; i++) {
    if (wk->digit[i] < lo) lo = wk->digit[i];
    if (wk->digit[i] > hi) hi = wk->digit[i];
  }
  const int w = bit_width((uint64_t)hi - (uint64_t)lo);
  const size_t packed = (size_t)alp_packed_bytes(len, w);
  const size_t alp_bytes = pad8(packed + 10 * (size_t)n_exc);
  uint8_t *d = out + *pos;
  memset(hdr, 0, ALP_VHDR_BYTES);
  alp_wr64(hdr + 16, (uint64_t)*pos);
  if (alp_bytes >= (size_t)len * 8) {
    hdr[0] = ALP_KIND_RAW;
    for (int64_t i = 0; i < len; i++) {
      uint64_t bits;
      memcpy(&bits, &v[i], 8);
      alp_wr64(d + 8 * i, bits);
    }
    *pos += (size_t)len * 8;
    return;
  }
  hdr[0] = ALP_KIND_ALP;
  hdr[1] = (uint8_t)c.e;
  hdr[2] = (uint8_t)c.f;
  hdr[3] = (uint8_t)w;
  hdr[4] = (uint8_t)(n_exc & 0xff);
  hdr[5] = (uint8_t)(n_exc >> 8);
  alp_wr64(hdr + 8, (uint64_t)lo);
  memset(d, 0, alp_bytes);
  if (w > 0) {
    /* Digit i occupies bits [i w, i w + w) of a stream of little-endian
     * words; rows past len (the last group's padding) are zero. */
    const int64_t rows = (len + 63) / 64 * 64;
    uint64_t cur = 0;
    size_t word = 0;
    int used = 0; /* bits of cur taken */
    for (int64_t i = 0; i < rows; i++) {
      const uint64_t u = i < len ? (uint64_t)wk->digit[i] - (uint64_t)lo : 0;
      cur |= u << used;
      used += w;
      if (used >= 64) {
        alp_wr64(d + 8 * word++, cur);
        used -= 64;
        cur = used ? u >> (w - used) : 0;
      }
    }
  }
  uint8_t *ev = d + packed, *ep = ev + 8 * (size_t)n_exc;
  for (int k = 0; k < n_exc; k++) {
    alp_wr64(ev + 8 * k, wk->exc_bits[k]);
    ep[2 * k] = (uint8_t)(wk->exc_pos[k] & 0xff);
    ep[2 * k + 1] = (uint8_t)(wk->exc_pos[k] >> 8);
  }
  *pos += alp_bytes;
}

fm_status fm_codec_alp_encode(const double *x, int64_t n_rows, int64_t n_cols, int64_t ld,
                              int32_t vector_size, const fm_ctl *ctl, uint8_t **blob_out,
                              size_t *size_out, fm_err *err) {
  if (blob_out) *blob_out = NULL;
  if (size_out) *size_out = 0;
  if (!blob_out || !size_out)
    return fm_err_set(err, FM_EARG, "alp encode: blob_out and size_out must not be NULL");
  if (n_rows < 0 || n_cols < 0)
    return fm_err_set(err, FM_EARG, "alp encode: n_rows (%lld) and n_cols (%lld) must be >= 0",
                      (long long)n_rows, (long long)n_cols);
  if (ld < n_rows || ld < 1)
    return fm_err_set(err, FM_EARG, "alp encode: ld (%lld) must be >= n_rows (%lld) and >= 1",
                      (long long)ld, (long long)n_rows);
  const int64_t vs = vector_size == 0 ? FM_ALP_VECTOR_SIZE : vector_size;
  if (vs < FM_ALP_VECTOR_MIN || vs > FM_ALP_VECTOR_MAX || vs % 64 != 0)
    return fm_err_set(err, FM_EARG,
                      "alp encode: vector_size %ld must be 0 or a multiple of 64 in [%d, %d]",
                      (long)vector_size, FM_ALP_VECTOR_MIN, FM_ALP_VECTOR_MAX);
  if (!x && n_rows > 0 && n_cols > 0)
    return fm_err_set(err, FM_EARG, "alp encode: x is NULL for a %lld x %lld matrix",
                      (long long)n_rows, (long long)n_cols);
  const int64_t n_vec = n_rows == 0 ? 0 : (n_rows - 1) / vs + 1;
  /* Bound: headers, the offset table, and per column its vector headers and
   * at most 8 bytes per value (a vector larger than raw is stored raw). */
  int64_t per_col = 0, values = 0, cols_bytes = 0, bound = 0;
  if (!fm_mul_ok(n_vec, ALP_VHDR_BYTES, &per_col) || !fm_mul_ok(n_rows, 8, &values) ||
      per_col > INT64_MAX - values || !fm_mul_ok(per_col + values, n_cols, &cols_bytes) ||
      n_cols > (INT64_MAX - ALP_HEADER_BYTES) / 8 - 1 ||
      cols_bytes > INT64_MAX - ALP_HEADER_BYTES - 8 * (n_cols + 1) ||
      (uint64_t)(bound = ALP_HEADER_BYTES + 8 * (n_cols + 1) + cols_bytes) > (uint64_t)SIZE_MAX)
    return fm_err_set(err, FM_ENOMEM, "alp encode: a %lld x %lld matrix overflows a byte count",
                      (long long)n_rows, (long long)n_cols);
  uint8_t *out = malloc((size_t)bound);
  vec_work *wk = malloc(sizeof *wk);
  if (!out || !wk) {
    free(out);
    free(wk);
    return fm_err_set(err, FM_ENOMEM, "alp encode: cannot allocate %lld bytes for the blob",
                      (long long)bound);
  }
  const size_t table = ALP_HEADER_BYTES;
  size_t pos = table + 8 * (size_t)(n_cols + 1);
  memset(out, 0, pos);
  memcpy(out + ALP_OFF_MAGIC, ALP_MAGIC, 4);
  out[ALP_OFF_VERSION] = ALP_VERSION;
  out[ALP_OFF_HEADER] = ALP_HEADER_BYTES;
  out[ALP_OFF_VSIZE] = (uint8_t)(vs & 0xff);
  out[ALP_OFF_VSIZE + 1] = (uint8_t)(vs >> 8);
  alp_wr64(out + ALP_OFF_NROWS, (uint64_t)n_rows);
  alp_wr64(out + ALP_OFF_NCOLS, (uint64_t)n_cols);

  combo top[TOP_K];
  for (int64_t j = 0; j < n_cols; j++) {
    if (fm_ctl_cancelled(ctl)) {
      free(out);
      free(wk);
      return fm_err_set(err, FM_ECANCELLED, "alp encode: cancelled after %lld of %lld columns",
                        (long long)j, (long long)n_cols);
    }
    alp_wr64(out + table + 8 * (size_t)j, (uint64_t)pos);
    const double *col = x + j * ld;
    uint8_t *hdrs = out + pos;
    pos += (size_t)n_vec * ALP_VHDR_BYTES;
    for (int64_t t0 = 0; t0 < n_vec; t0 += RG_VECTORS) {
      const int64_t t1 = t0 + RG_VECTORS < n_vec ? t0 + RG_VECTORS : n_vec;
      const int k = first_level(col, n_rows, vs, t0, t1, top);
      for (int64_t t = t0; t < t1; t++) {
        const int64_t start = t * vs, len = n_rows - start < vs ? n_rows - start : vs;
        const combo c = second_level(col + start, len, top, k);
        encode_vector(col + start, len, c, wk, out, &pos, hdrs + (size_t)t * ALP_VHDR_BYTES);
      }
    }
    fm_ctl_progress(ctl, (double)(j + 1), (double)n_cols);
  }
  free(wk);
  alp_wr64(out + table + 8 * (size_t)n_cols, (uint64_t)pos);
  alp_wr64(out + ALP_OFF_TOTAL, (uint64_t)pos);
  uint8_t *shrunk = realloc(out, pos);
  *blob_out = shrunk ? shrunk : out;
  *size_out = pos;
  return FM_OK;
}
