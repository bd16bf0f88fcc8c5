/* map_dir.c: the name directory of an fm_map (fm_map.h). Entries are owned
 * heap objects kept in an array sorted by name (strcmp, i.e. bytewise); a
 * named block points at its entry. A block carries at most one name.
 *
 * uids: a uid must never be handed out twice, also across a crash that loses
 * a session's uncommitted names (a reference serialized in that session may
 * outlive it). Each slot therefore records a lease: every uid below it may
 * have been handed out. A session starts at the lease and, when it reaches
 * the lease, commits a new one (MAP_UID_LEASE further) before handing out
 * the next uid; in practice that is one extra commit at the first name of a
 * session. */
#define _GNU_SOURCE
#include "map_impl.h"

#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

int64_t fmi_map_dir_search(const fm_map *m, const char *name, int *found) {
  int64_t lo = 0, hi = m->n_dir;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    int c = strcmp(m->dir[mid]->name, name);
    if (c == 0) {
      *found = 1;
      return mid;
    }
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  *found = 0;
  return lo;
}

void fmi_map_dir_remove(fm_map *m, int64_t i) {
  fm_dir_entry *e = m->dir[i];
  m->meta_bytes -= map_named_cost(strlen(e->name));
  int64_t b = fmi_map_blk_live(m, e->off);
  if (b >= 0 && m->blk[b].ent == e) m->blk[b].ent = NULL;
  memmove(m->dir + i, m->dir + i + 1, (size_t)(m->n_dir - i - 1) * sizeof *m->dir);
  m->n_dir--;
  free(e);
}

static fm_status dir_reserve(fm_map *m, int64_t n, fm_err *err) {
  if (n <= m->dir_capa) return FM_OK;
  int64_t capa = m->dir_capa < 16 ? 16 : m->dir_capa;
  while (capa < n) capa *= 2; /* n is bounded by the slot size */
  fm_dir_entry **p = realloc(m->dir, (size_t)capa * sizeof *p);
  if (!p) return fm_err_set(err, FM_ENOMEM, "cannot grow the directory of '%s'", m->path);
  m->dir = p;
  m->dir_capa = capa;
  return FM_OK;
}

/* Validate e against the map; *name_len gets strlen(e->name). */
static fm_status check_entry(const fm_map *m, const fm_dir_entry *e, uint64_t *name_len,
                             fm_err *err) {
  size_t len = strnlen(e->name, FM_NAME_MAX + 1);
  *name_len = len;
  if (len == 0) return fm_err_set(err, FM_EARG, "an object name in '%s' cannot be empty", m->path);
  if (len > FM_NAME_MAX)
    return fm_err_set(err, FM_EARG, "object name '%.40s...' in '%s' is longer than %d bytes",
                      e->name, m->path, FM_NAME_MAX);
  if ((int)e->dtype < 0 || (int)e->dtype > (int)FM_DTYPE_HAP1)
    return fm_err_set(err, FM_EARG, "object '%s' has unknown dtype %d", e->name, (int)e->dtype);
  if (e->n_dims < 1 || e->n_dims > FM_DIR_MAX_DIMS)
    return fm_err_set(err, FM_EARG, "object '%s' has %d dims, expected 1..%d", e->name,
                      (int)e->n_dims, FM_DIR_MAX_DIMS);
  int64_t count = 1;
  for (int k = 0; k < e->n_dims; k++)
    if (!fm_mul_ok(count, e->dims[k], &count))
      return fm_err_set(err, FM_EARG, "dims of object '%s' are negative or overflow", e->name);
  int64_t need = 0;
  size_t es = fm_dtype_size(e->dtype);
  if (es > 0 && (!fm_mul_ok(count, (int64_t)es, &need) || (uint64_t)need > e->n_bytes))
    return fm_err_set(err, FM_EARG, "object '%s' has %lld %s elements but n_bytes is %llu",
                      e->name, (long long)count, fm_dtype_name(e->dtype), (ull)e->n_bytes);
  int64_t b = fmi_map_blk_live(m, e->off);
  if (b < 0)
    return fm_err_set(err, FM_EARG, "object '%s': no block starts at offset %llu of '%s'", e->name,
                      (ull)e->off, m->path);
  if (e->n_bytes > m->blk[b].n_bytes)
    return fm_err_set(err, FM_EARG, "object '%s' claims %llu bytes but its block has %llu", e->name,
                      (ull)e->n_bytes, (ull)m->blk[b].n_bytes);
  return FM_OK;
}

static void fill_entry(fm_dir_entry *dst, const fm_dir_entry *src, uint64_t name_len,
                       uint64_t uid) {
  memset(dst, 0, sizeof *dst);
  memcpy(dst->name, src->name, (size_t)name_len);
  dst->dtype = src->dtype;
  dst->n_dims = src->n_dims;
  for (int k = 0; k < src->n_dims; k++) dst->dims[k] = src->dims[k];
  dst->off = src->off;
  dst->n_bytes = src->n_bytes;
  dst->uid = uid;
}

fm_status fm_map_name(fm_map *m, const fm_dir_entry *e, fm_err *err) {
  fm_status st = fmi_map_writable(m, "fm_map_name", err);
  if (st != FM_OK) return st;
  if (!e) return fm_err_set(err, FM_EARG, "fm_map_name on '%s' needs an entry", m->path);
  uint64_t name_len = 0;
  if ((st = check_entry(m, e, &name_len, err)) != FM_OK) return st;

  /* Capacity first, so a full directory changes nothing. */
  int found = 0;
  int64_t d = fmi_map_dir_search(m, e->name, &found);
  fm_dir_entry *ex = found ? m->dir[d] : NULL;                /* entry under this name */
  fm_dir_entry *bent = m->blk[fmi_map_blk_live(m, e->off)].ent; /* this block's name */
  uint64_t meta = m->meta_bytes;
  if (!(ex && ex == bent)) {
    meta += map_named_cost(name_len);
    if (bent) meta -= map_named_cost(strlen(bent->name));
    if (ex) meta -= map_named_cost(strlen(ex->name));
  }
  if (meta > m->slot_bytes - MAP_SLOT_HDR)
    return fm_err_set(err, FM_ENOSPC,
                      "the directory of '%s' is full: %lld entries, %llu of %llu metadata bytes",
                      m->path, (long long)m->n_dir, (ull)m->meta_bytes,
                      (ull)(m->slot_bytes - MAP_SLOT_HDR));
  if (m->uid_next >= UINT64_MAX - MAP_UID_LEASE)
    return fm_err_set(err, FM_ENOSPC, "'%s' has used up its object ids", m->path);
  if (m->mode == FM_MAP_PERSISTENT && m->uid_next >= m->uid_lease) {
    if ((st = fmi_map_commit(m, m->uid_next + MAP_UID_LEASE, err)) != FM_OK) return st;
  } else if (m->mode == FM_MAP_SCRATCH) {
    m->uid_lease = UINT64_MAX;
  }
  fm_dir_entry *ne = calloc(1, sizeof *ne);
  if (!ne || (st = dir_reserve(m, m->n_dir + 1, err)) != FM_OK) {
    free(ne);
    return ne ? st : fm_err_set(err, FM_ENOMEM, "cannot allocate a directory entry for '%s'", m->path);
  }

  /* From here nothing fails. The commit above may have moved blocks. */
  int64_t bi = fmi_map_blk_live(m, e->off);
  bent = m->blk[bi].ent;
  d = fmi_map_dir_search(m, e->name, &found);
  ex = found ? m->dir[d] : NULL;
  if (ex && ex != bent) {
    /* The name moves to this block; the block it named is freed. */
    fmi_map_blk_release(m, fmi_map_blk_live(m, ex->off));
    ex = NULL;
  }
  if (bent && bent != ex) {
    /* This block is renamed: its old entry goes. */
    int f2 = 0;
    fmi_map_dir_remove(m, fmi_map_dir_search(m, bent->name, &f2));
    bent = NULL;
  }
  uint64_t uid = m->uid_next++;
  if (ex) {
    fill_entry(ex, e, name_len, uid);
    free(ne);
    return FM_OK;
  }
  fill_entry(ne, e, name_len, uid);
  d = fmi_map_dir_search(m, ne->name, &found);
  memmove(m->dir + d + 1, m->dir + d, (size_t)(m->n_dir - d) * sizeof *m->dir);
  m->dir[d] = ne;
  m->n_dir++;
  m->meta_bytes += map_named_cost(name_len);
  m->blk[fmi_map_blk_live(m, e->off)].ent = ne;
  return FM_OK;
}

fm_status fm_map_lookup(const fm_map *m, const char *name, fm_dir_entry *out, fm_err *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!m || !name || !out)
    return fm_err_set(err, FM_EARG, "fm_map_lookup needs a map, a name and an out entry");
  int found = 0;
  int64_t d = fmi_map_dir_search(m, name, &found);
  if (!found) return fm_err_set(err, FM_EARG, "'%s' has no object named '%s'", m->path, name);
  *out = *m->dir[d];
  return FM_OK;
}

int64_t fm_map_dir_count(const fm_map *m) { return m ? m->n_dir : 0; }

fm_status fm_map_dir_at(const fm_map *m, int64_t i, fm_dir_entry *out, fm_err *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!m || !out) return fm_err_set(err, FM_EARG, "fm_map_dir_at needs a map and an out entry");
  if (i < 0 || i >= m->n_dir)
    return fm_err_set(err, FM_EARG, "entry %lld of '%s' is out of range (%lld entries)",
                      (long long)i, m->path, (long long)m->n_dir);
  *out = *m->dir[i];
  return FM_OK;
}

fm_status fm_map_unname(fm_map *m, const char *name, fm_err *err) {
  fm_status st = fmi_map_writable(m, "fm_map_unname", err);
  if (st != FM_OK) return st;
  if (!name) return fm_err_set(err, FM_EARG, "fm_map_unname on '%s' needs a name", m->path);
  int found = 0;
  int64_t d = fmi_map_dir_search(m, name, &found);
  if (!found) return fm_err_set(err, FM_EARG, "'%s' has no object named '%s'", m->path, name);
  fmi_map_blk_release(m, fmi_map_blk_live(m, m->dir[d]->off));
  return FM_OK;
}

int fm_map_is_named(const fm_map *m, uint64_t off) {
  if (!m) return 0;
  int64_t i = fmi_map_blk_live(m, off);
  return i >= 0 && m->blk[i].ent != NULL;
}
