/* fmt_bgen_ahead.c: BGEN blocks decompressed ahead of the reader on a
 * worker thread (fmt_bgen_ahead.h). Block layout: BGEN v1.2/v1.3 layout 2
 * (docs/formats/bgen.md). */
#define _POSIX_C_SOURCE 200809L
#define _FILE_OFFSET_BITS 64
#include "fmt_bgen_ahead.h"

#include <errno.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

/* Up to MAX_SLOTS blocks ahead, fewer for large blocks: the ring holds
 * about RING_BYTES of decompressed data. A waiting side is woken when the
 * ring is half full (reader) or half empty (worker), not at every block:
 * a sleep and wake costs as much as decompressing a block of a thousand
 * samples. */
#define MAX_SLOTS 64
#define RING_BYTES ((uint64_t)32 << 20)
#define WALK_BUF ((size_t)1 << 16)

typedef struct slot {
  uint64_t off, clen, dlen; /* the block: compressed bytes at off */
  int ok;                   /* decompressed into raw */
  uint8_t *raw;             /* (dlen + 8) */
  size_t cap;
} slot;

struct bgen_ahead {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t has_room, has_block;
  slot ring[MAX_SLOTS];
  int n_slots, wake;/* slots in use; wake at n_slots / 2 */
  int head, count;  /* ring[head .. head + count) are published, in file order */
  int stop, done;   /* the reader is closing; the worker has ended its walk */
  int reader_waits, worker_waits;
  /* worker only */
  int fd;
  uint64_t off, file_size;
  uint32_t left, n;
  unsigned compression;
  uint8_t *buf;     /* (WALK_BUF) file bytes [base, base + len) */
  uint64_t base;
  size_t len;
  uint8_t *comp;
  size_t comp_cap;
  struct libdeflate_decompressor *zs;
  ZSTD_DCtx *zd;
};

/* n bytes at the worker's offset into dst (dst NULL: skip them); 0 when the
 * file ends or a read fails. */
static int walk_read(bgen_ahead *a, void *dst, uint64_t n) {
  if (a->off + n > a->file_size) return 0;
  if (n > WALK_BUF) { /* large: straight from the file */
    for (uint64_t got = 0; dst && got < n;) {
      const ssize_t r = pread(a->fd, (uint8_t *)dst + got, (size_t)(n - got), (off_t)(a->off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return 0;
      got += (uint64_t)r;
    }
    a->off += n;
    return 1;
  }
  if (a->off < a->base || a->off + n > a->base + a->len) {
    size_t got = 0;
    while (got < WALK_BUF) {
      const ssize_t r = pread(a->fd, a->buf + got, WALK_BUF - got, (off_t)(a->off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    a->base = a->off;
    a->len = got;
    if (got < n) return 0;
  }
  if (dst) memcpy(dst, a->buf + (a->off - a->base), (size_t)n);
  a->off += n;
  return 1;
}

static int walk_u(bgen_ahead *a, int bytes, uint64_t *x) {
  uint8_t t[4];
  if (!walk_read(a, t, (uint64_t)bytes)) return 0;
  *x = 0;
  for (int i = bytes - 1; i >= 0; i--) *x = (*x << 8) | t[i];
  return 1;
}

/* The next variant's block: its compressed bytes' offset and sizes, the
 * worker left after them. 0 at the end or for anything unexpected. */
static int walk_block(bgen_ahead *a, uint64_t *off, uint64_t *clen, uint64_t *dlen) {
  uint64_t len, k, c, d;
  for (int i = 0; i < 3; i++) /* SNPID, RSID, chromosome */
    if (!walk_u(a, 2, &len) || !walk_read(a, NULL, len)) return 0;
  if (!walk_read(a, NULL, 4) || !walk_u(a, 2, &k) || k < 2) return 0;
  for (uint64_t j = 0; j < k; j++)
    if (!walk_u(a, 4, &len) || !walk_read(a, NULL, len)) return 0;
  if (!walk_u(a, 4, &c) || c < 4 || !walk_u(a, 4, &d)) return 0;
  /* the bounds the reader applies before allocating (fmt_bgen.c load_geno) */
  const double per = (double)(k * (k + 1) / 2 - 1 > 2 * (k - 1) ? k * (k + 1) / 2 - 1 : 2 * (k - 1));
  const double max_d = 10.0 + a->n + (double)a->n * per * 4 + 64;
  const double lim = a->compression == 1 ? (double)(c - 4) * 1032.0 + 64
                                          : ((double)(c - 4) / 4.0 + 1.0) * 131072.0;
  if ((double)d > max_d || (double)d > lim || a->off + (c - 4) > a->file_size) return 0;
  *off = a->off;
  *clen = c - 4;
  *dlen = d;
  return 1;
}

static int grow(uint8_t **p, size_t *cap, uint64_t need) {
  if (need <= *cap) return 1;
  if (need > SIZE_MAX / 2) return 0;
  uint8_t *q = realloc(*p, (size_t)need);
  if (!q) return 0;
  *p = q;
  *cap = (size_t)need;
  return 1;
}

static int inflate_into(bgen_ahead *a, slot *s) {
  if (!grow(&a->comp, &a->comp_cap, s->clen + 1) || !grow(&s->raw, &s->cap, s->dlen + 8) ||
      !walk_read(a, a->comp, s->clen))
    return 0;
  size_t got = 0;
  if (a->compression == 1) {
    if (!a->zs && !(a->zs = libdeflate_alloc_decompressor())) return 0;
    if (libdeflate_zlib_decompress(a->zs, a->comp, (size_t)s->clen, s->raw, (size_t)s->dlen, &got) !=
        LIBDEFLATE_SUCCESS)
      return 0;
  } else {
    if (!a->zd && !(a->zd = ZSTD_createDCtx())) return 0;
    got = ZSTD_decompressDCtx(a->zd, s->raw, (size_t)s->dlen, a->comp, (size_t)s->clen);
    if (ZSTD_isError(got)) return 0;
  }
  memset(s->raw + s->dlen, 0, 8);
  return got == s->dlen;
}

static void *worker(void *arg) {
  bgen_ahead *a = arg;
  for (; a->left > 0; a->left--) {
    uint64_t off, clen, dlen;
    if (!walk_block(a, &off, &clen, &dlen)) break;
    pthread_mutex_lock(&a->mu);
    if (a->count == a->n_slots && !a->stop) {
      a->worker_waits = 1;
      while (a->count > a->wake && !a->stop) pthread_cond_wait(&a->has_room, &a->mu);
      a->worker_waits = 0;
    }
    const int stop = a->stop;
    slot *s = &a->ring[(a->head + a->count) % a->n_slots];
    pthread_mutex_unlock(&a->mu);
    if (stop) break;
    /* the slot past the published ones is the worker's until it publishes it */
    s->off = off;
    s->clen = clen;
    s->dlen = dlen;
    s->ok = inflate_into(a, s);
    a->off = off + clen;
    pthread_mutex_lock(&a->mu);
    a->count++;
    if (a->reader_waits && (a->count >= a->wake || a->left == 1)) pthread_cond_signal(&a->has_block);
    pthread_mutex_unlock(&a->mu);
  }
  pthread_mutex_lock(&a->mu);
  a->done = 1;
  pthread_cond_broadcast(&a->has_block);
  pthread_mutex_unlock(&a->mu);
  return NULL;
}

bgen_ahead *bgen_ahead_start(int fd, uint64_t off, uint64_t file_size, uint32_t n_variants,
                             uint32_t n_samples, unsigned compression) {
  if (compression != 1 && compression != 2) return NULL;
  bgen_ahead *a = calloc(1, sizeof *a);
  if (!a || !(a->buf = malloc(WALK_BUF))) {
    free(a);
    return NULL;
  }
  a->fd = fd;
  a->off = off;
  a->base = UINT64_MAX;
  a->file_size = file_size;
  a->left = n_variants;
  a->n = n_samples;
  a->compression = compression;
  /* a two-allele block of 16-bit probabilities: about 5 bytes per sample */
  const uint64_t per_slot = 5 * (uint64_t)n_samples + 64;
  a->n_slots = RING_BYTES / per_slot > MAX_SLOTS ? MAX_SLOTS : (int)(RING_BYTES / per_slot);
  if (a->n_slots < 4) a->n_slots = 4;
  a->wake = a->n_slots / 2;
  if (pthread_mutex_init(&a->mu, NULL) != 0) goto fail_mu;
  if (pthread_cond_init(&a->has_room, NULL) != 0) goto fail_room;
  if (pthread_cond_init(&a->has_block, NULL) != 0) goto fail_block;
  if (pthread_create(&a->thread, NULL, worker, a) != 0) goto fail_thread;
  return a;
fail_thread:
  pthread_cond_destroy(&a->has_block);
fail_block:
  pthread_cond_destroy(&a->has_room);
fail_room:
  pthread_mutex_destroy(&a->mu);
fail_mu:
  free(a->buf);
  free(a);
  return NULL;
}

/* Drop the oldest published block (mutex held). */
static void pop(bgen_ahead *a) {
  a->head = (a->head + 1) % a->n_slots;
  a->count--;
  if (a->worker_waits && a->count <= a->wake) pthread_cond_signal(&a->has_room);
}

int bgen_ahead_take(bgen_ahead *a, uint64_t off, uint64_t clen, uint64_t dlen, uint8_t **raw,
                    size_t *raw_cap) {
  if (!a) return 0;
  int got = 0;
  pthread_mutex_lock(&a->mu);
  for (;;) {
    if (a->count > 0) {
      slot *s = &a->ring[a->head];
      if (s->off < off) { /* a block the reader skipped */
        pop(a);
        continue;
      }
      if (s->off == off) {
        got = s->ok && s->clen == clen && s->dlen == dlen;
        if (got) { /* exchange buffers */
          uint8_t *t = *raw;
          const size_t tc = *raw_cap;
          *raw = s->raw;
          *raw_cap = s->cap;
          s->raw = t;
          s->cap = tc;
        }
        pop(a);
      }
      break; /* taken, or the worker is past off */
    }
    if (a->done) break;
    a->reader_waits = 1;
    pthread_cond_wait(&a->has_block, &a->mu);
    a->reader_waits = 0;
  }
  pthread_mutex_unlock(&a->mu);
  return got;
}

void bgen_ahead_stop(bgen_ahead *a) {
  if (!a) return;
  pthread_mutex_lock(&a->mu);
  a->stop = 1;
  pthread_cond_broadcast(&a->has_room);
  pthread_mutex_unlock(&a->mu);
  pthread_join(a->thread, NULL);
  pthread_cond_destroy(&a->has_block);
  pthread_cond_destroy(&a->has_room);
  pthread_mutex_destroy(&a->mu);
  for (int i = 0; i < MAX_SLOTS; i++) free(a->ring[i].raw);
  if (a->zs) libdeflate_free_decompressor(a->zs);
  ZSTD_freeDCtx(a->zd);
  free(a->comp);
  free(a->buf);
  free(a);
}
