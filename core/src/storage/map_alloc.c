/* map_alloc.c: the block table of an fm_map: first-fit allocation over the
 * gaps between extents, free, resize (fm_map.h). The invariants are in
 * map_impl.h; the crash rule that shapes this file is that an extent the last
 * commit references (held) is never handed to another block before the next
 * commit, so freeing or moving a committed block leaves a ghost behind. */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include "map_impl.h"

#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

int64_t fmi_map_blk_lower(const fm_map *m, uint64_t off) {
  int64_t lo = 0, hi = m->n_blk;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (m->blk[mid].off < off) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

int64_t fmi_map_blk_live(const fm_map *m, uint64_t off) {
  int64_t i = fmi_map_blk_lower(m, off);
  return (i < m->n_blk && m->blk[i].off == off && m->blk[i].n_bytes > 0) ? i : -1;
}

static fm_status blk_reserve(fm_map *m, int64_t n, fm_err *err) {
  if (n <= m->blk_capa) return FM_OK;
  int64_t capa = m->blk_capa < 16 ? 16 : m->blk_capa;
  while (capa < n) {
    if (capa > INT64_MAX / 2) return fm_err_set(err, FM_ENOMEM, "block table of '%s' is too large", m->path);
    capa *= 2;
  }
  if ((uint64_t)capa > SIZE_MAX / sizeof *m->blk)
    return fm_err_set(err, FM_ENOMEM, "block table of '%s' is too large", m->path);
  map_blk *p = realloc(m->blk, (size_t)capa * sizeof *p);
  if (!p) return fm_err_set(err, FM_ENOMEM, "cannot grow the block table of '%s' to %lld blocks",
                            m->path, (long long)capa);
  m->blk = p;
  m->blk_capa = capa;
  return FM_OK;
}

fm_status fmi_map_blk_insert(fm_map *m, int64_t at, map_blk b, fm_err *err) {
  fm_status st = blk_reserve(m, m->n_blk + 1, err);
  if (st != FM_OK) return st;
  memmove(m->blk + at + 1, m->blk + at, (size_t)(m->n_blk - at) * sizeof *m->blk);
  m->blk[at] = b;
  m->n_blk++;
  return FM_OK;
}

static void blk_remove(fm_map *m, int64_t i) {
  memmove(m->blk + i, m->blk + i + 1, (size_t)(m->n_blk - i - 1) * sizeof *m->blk);
  m->n_blk--;
}

/* Block i stops being live: a ghost if the last commit references it. */
static void blk_drop(fm_map *m, int64_t i) {
  m->blk[i].ent = NULL;
  if (m->blk[i].held > 0) m->blk[i].n_bytes = 0;
  else blk_remove(m, i);
}

void fmi_map_blk_release(fm_map *m, int64_t i) {
  fm_dir_entry *e = m->blk[i].ent;
  if (e) {
    int found = 0;
    int64_t d = fmi_map_dir_search(m, e->name, &found);
    if (found) fmi_map_dir_remove(m, d);
  }
  blk_drop(m, i);
}

/* First fit: the lowest gap of need bytes. *at is the insertion index. */
static int find_gap(const fm_map *m, uint64_t need, uint64_t *off, int64_t *at) {
  uint64_t prev = m->data_off;
  for (int64_t i = 0; i < m->n_blk; i++) {
    const map_blk *b = &m->blk[i];
    if (b->off - prev >= need) {
      *off = prev;
      *at = i;
      return 1;
    }
    prev = b->off + map_blk_ext(b);
  }
  if (m->cap >= prev && m->cap - prev >= need) {
    *off = prev;
    *at = m->n_blk;
    return 1;
  }
  return 0;
}

static fm_status no_room(const fm_map *m, uint64_t n, fm_err *err) {
  uint64_t used = 0;
  for (int64_t i = 0; i < m->n_blk; i++) used += map_blk_ext(&m->blk[i]);
  return fm_err_set(err, FM_ENOSPC,
                    "'%s' has no free range of %llu bytes (cap %llu bytes, %llu in use or awaiting sync)",
                    m->path, (ull)n, (ull)m->cap, (ull)used);
}

/* Re-read the file size before handing out space: a file cut short from
 * outside is an error when it loses objects, and otherwise simply loses the
 * reserved tail, which the next reserve restores. */
static fm_status refresh(fm_map *m, fm_err *err) {
  uint64_t size;
  fm_status st = fmi_map_stat(m, &size, err);
  if (st != FM_OK) return st;
  if (size < m->file_bytes) {
    m->file_bytes = size;
    if (m->clean_from > size) m->clean_from = size;
  }
  return FM_OK;
}

fm_status fm_map_alloc(fm_map *m, uint64_t n_bytes, uint64_t *off_out, fm_err *err) {
  if (off_out) *off_out = 0;
  fm_status st = fmi_map_writable(m, "fm_map_alloc", err);
  if (st != FM_OK) return st;
  if (!off_out) return fm_err_set(err, FM_EARG, "fm_map_alloc on '%s' needs off_out", m->path);
  if (n_bytes == 0) return fm_err_set(err, FM_EARG, "fm_map_alloc on '%s' needs n_bytes > 0", m->path);
  uint64_t need = map_round(n_bytes), off = 0;
  int64_t at = 0;
  if (need == 0 || !find_gap(m, need, &off, &at)) return no_room(m, n_bytes, err);
  if ((st = refresh(m, err)) != FM_OK) return st;
  if ((st = fmi_map_reserve(m, off + need, err)) != FM_OK) return st;
  map_blk b = {off, n_bytes, 0, NULL};
  if ((st = fmi_map_blk_insert(m, at, b, err)) != FM_OK) return st;
  fmi_map_zero(m, off, off + need);
  *off_out = off;
  return FM_OK;
}

fm_status fm_map_free(fm_map *m, uint64_t off, fm_err *err) {
  fm_status st = fmi_map_writable(m, "fm_map_free", err);
  if (st != FM_OK) return st;
  int64_t i = fmi_map_blk_live(m, off);
  if (i < 0)
    return fm_err_set(err, FM_EARG, "no block starts at offset %llu of '%s'", (ull)off, m->path);
  fmi_map_blk_release(m, i);
  return FM_OK;
}

fm_status fm_map_resize(fm_map *m, uint64_t off, uint64_t n_bytes, uint64_t *off_out,
                        fm_err *err) {
  if (off_out) *off_out = 0;
  fm_status st = fmi_map_writable(m, "fm_map_resize", err);
  if (st != FM_OK) return st;
  if (!off_out) return fm_err_set(err, FM_EARG, "fm_map_resize on '%s' needs off_out", m->path);
  if (n_bytes == 0)
    return fm_err_set(err, FM_EARG, "fm_map_resize on '%s' needs n_bytes > 0 (use fm_map_free)", m->path);
  int64_t i = fmi_map_blk_live(m, off);
  if (i < 0)
    return fm_err_set(err, FM_EARG, "no block starts at offset %llu of '%s'", (ull)off, m->path);
  uint64_t need = map_round(n_bytes);
  if (need == 0) return no_room(m, n_bytes, err);
  if ((st = refresh(m, err)) != FM_OK) return st;
  uint64_t old_n = m->blk[i].n_bytes;
  fm_dir_entry *e = m->blk[i].ent;

  uint64_t limit = (i + 1 < m->n_blk) ? m->blk[i + 1].off : m->cap;
  if (limit >= off && need <= limit - off) {
    if ((st = fmi_map_reserve(m, off + need, err)) != FM_OK) return st;
    /* New tail and padding read as zero, also after an earlier shrink. */
    fmi_map_zero(m, off + (old_n < n_bytes ? old_n : n_bytes), off + need);
    m->blk[i].n_bytes = n_bytes;
    if (e && e->n_bytes > n_bytes) e->n_bytes = n_bytes;
    *off_out = off;
    return FM_OK;
  }

  uint64_t noff = 0;
  int64_t at = 0;
  if (!find_gap(m, need, &noff, &at)) return no_room(m, n_bytes, err);
  if ((st = fmi_map_reserve(m, noff + need, err)) != FM_OK) return st;
  map_blk nb = {noff, n_bytes, 0, e};
  if ((st = fmi_map_blk_insert(m, at, nb, err)) != FM_OK) return st;
  uint64_t keep = old_n < n_bytes ? old_n : n_bytes;
  memcpy(m->base + noff, m->base + off, (size_t)keep);
  fmi_map_zero(m, noff + keep, noff + need);
  if (e) {
    e->off = noff;
    if (e->n_bytes > n_bytes) e->n_bytes = n_bytes;
  }
  i = fmi_map_blk_lower(m, off); /* the insert may have shifted it */
  blk_drop(m, i);
  *off_out = noff;
  return FM_OK;
}

uint64_t fm_map_block_bytes(const fm_map *m, uint64_t off) {
  if (!m) return 0;
  int64_t i = fmi_map_blk_live(m, off);
  return i < 0 ? 0 : m->blk[i].n_bytes;
}
