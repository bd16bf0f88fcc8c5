/* fuzz_map_open.c: libFuzzer target for the fmalloc file reader (fm_map.h:
 * fm_map_open, and behind it the header and slot codecs of map_meta.c).
 *
 * Each input describes a file image. The image goes into one memfd (a file
 * that lives in memory) reached through its /proc/self/fd path, or a file
 * under $TMPDIR where memfd_create is missing. It is opened read-only, then
 * read-write (persistent, cap_bytes 0 unless C); an open map is exercised
 * (fm_map_get_info, fm_map_dir_count/at, fm_map_lookup, fm_map_is_named,
 * fm_map_block_bytes, fm_map_ptr over every object's bytes, fm_map_check)
 * and its documented invariants are asserted (abort on violation). Errors
 * from open are fine; crashes, sanitizer reports, hangs and broken
 * invariants are bugs.
 *
 * Input encoding (integers little-endian):
 *   byte 0       flags
 *     bit 0 P    patch mode: the image is a built-in valid file (made at
 *                start-up with fm_map_open, alloc, name and sync: 4 KiB
 *                slots; slot A holds one named block, slot B the newer
 *                commit with two; about 136 KiB) with the records below
 *                written over it. Clear: raw mode, the bytes after the
 *                9-byte prefix are the image.
 *     bit 1 H    after patching, recompute the header checksum
 *     bit 2 A    recompute slot A's checksum (slot offsets and payload
 *                length are read from the patched image, clamped to it)
 *     bit 3 B    recompute slot B's checksum
 *     bit 4 T    resize the image to `size` % (image bytes + 1 MiB + 1)
 *                bytes (cut, or zero-extended) before the checksums
 *     bit 5 W    when the read-write open succeeds, also alloc + name a new
 *                block, resize the first object, unname the second, and
 *                sync; a successful sync must reopen read-only with exactly
 *                the synced directory
 *     bit 6 C    open read-write with cap_bytes = cap_kib * 1024
 *   bytes 1-4    size (u32), used with T
 *   bytes 5-8    cap_kib (u32), used with C
 *   then, in patch mode, records until the input ends:
 *     region (u8, mod 4: 0 = the header's first 128 bytes, 1 = slot A,
 *     2 = slot B, 3 = data region), off (u16, mod the region's length),
 *     len (u8), then len bytes written at off (cut at the region's end and
 *     at the input's end).
 *
 * Seeds (core/fuzz/corpus/fuzz_map_open/): the untouched base image with
 * and without checksum fix-ups, patches of slot counts, a directory name,
 * a block offset, the slot sequence numbers and the header, a truncation,
 * a mutation run, a raised cap, and a minimal raw file (4 KiB header and
 * slots, zero-extended by T). */
#define _GNU_SOURCE
#include "fm/fm_map.h"
#include "storage/map_impl.h" /* fmi_map_open_with (small slots), layout constants */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_util.h"


enum {
  F_PATCH = 1,
  F_FIX_HDR = 2,
  F_FIX_A = 4,
  F_FIX_B = 8,
  F_RESIZE = 16,
  F_WRITE = 32,
  F_CAP = 64
};
#define PREFIX 9u
#define BASE_SLOT 4096u
#define MIB (UINT64_C(1) << 20)

static int g_fd = -1;
static int g_verbose; /* FM_FUZZ_VERBOSE=1: print each open's outcome */
static char g_path[64];
static uint8_t *g_base; /* the built-in valid image */
static size_t g_base_n;

static uint64_t rd_u64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static uint32_t rd_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void cleanup(void) {
  if (g_fd >= 0 && strncmp(g_path, "/proc/", 6) != 0) unlink(g_path);
}

static void die(const char *what, const fm_err *err) {
  fprintf(stderr, "fuzz_map_open setup: %s: %s\n", what, err ? err->msg : "");
  abort();
}

/* Replace the backing file's contents with n bytes of img. */
static void put_image(const uint8_t *img, size_t n) {
  if (ftruncate(g_fd, 0) != 0) die("ftruncate", NULL);
  size_t done = 0;
  while (done < n) {
    ssize_t r = pwrite(g_fd, img + done, n - done, (off_t)done);
    if (r <= 0) die("pwrite", NULL);
    done += (size_t)r;
  }
}

static void name_block(fm_map *m, const char *name, fm_dtype dt, int64_t d0, int64_t d1,
                       uint64_t off, uint64_t n_bytes) {
  fm_err err;
  fm_dir_entry e;
  memset(&e, 0, sizeof e);
  snprintf(e.name, sizeof e.name, "%s", name);
  e.dtype = dt;
  e.n_dims = d1 ? 2 : 1;
  e.dims[0] = d0;
  e.dims[1] = d1;
  e.off = off;
  e.n_bytes = n_bytes;
  if (fm_map_name(m, &e, &err) != FM_OK) die("fm_map_name", &err);
}

/* The base image: a real file written by the library. */
static void make_base(void) {
  fm_err err;
  fm_map *m = NULL;
  uint64_t data_off = MAP_HEADER_BYTES + 2 * BASE_SLOT;
  if (ftruncate(g_fd, 0) != 0) die("ftruncate", NULL);
  if (fmi_map_open_with(g_path, data_off + 65536, FM_MAP_PERSISTENT, 0, BASE_SLOT, &m, &err) !=
      FM_OK)
    die("fmi_map_open_with", &err);
  uint64_t x, g, t;
  if (fm_map_alloc(m, 80, &x, &err) != FM_OK || fm_map_alloc(m, 60, &g, &err) != FM_OK ||
      fm_map_alloc(m, 100, &t, &err) != FM_OK)
    die("fm_map_alloc", &err);
  for (int i = 0; i < 80; i++) ((uint8_t *)fm_map_ptr(m, x))[i] = (uint8_t)(i * 7 + 1);
  for (int i = 0; i < 60; i++) ((uint8_t *)fm_map_ptr(m, g))[i] = (uint8_t)(0x1b ^ i);
  name_block(m, "x", FM_DTYPE_F64, 10, 0, x, 80);
  if (fm_map_sync(m, &err) != FM_OK) die("fm_map_sync", &err);
  name_block(m, "geno", FM_DTYPE_BED2, 10, 20, g, 60); /* t stays a temporary */
  if (fm_map_sync(m, &err) != FM_OK) die("fm_map_sync", &err);
  fm_map_close(m);
  struct stat st;
  if (fstat(g_fd, &st) != 0 || st.st_size <= 0) die("fstat", NULL);
  g_base_n = (size_t)st.st_size;
  g_base = malloc(g_base_n);
  if (!g_base || pread(g_fd, g_base, g_base_n, 0) != (ssize_t)g_base_n) die("pread", NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  g_fd = memfd_create("fuzz_map_open", MFD_CLOEXEC);
  if (g_fd >= 0) {
    snprintf(g_path, sizeof g_path, "/proc/self/fd/%d", g_fd);
    if (access(g_path, R_OK) != 0) {
      close(g_fd);
      g_fd = -1;
    }
  }
  if (g_fd < 0) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_path, sizeof g_path, "%s/fuzz_map_open.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    g_fd = mkstemp(g_path);
    if (g_fd < 0) die("mkstemp", NULL);
  }
  atexit(cleanup);
  g_verbose = getenv("FM_FUZZ_VERBOSE") != NULL;
  make_base();
  return 0;
}

/* Recompute the checksum of slot s where the image's header places it. */
static void fix_slot(uint8_t *img, size_t n, int s) {
  if (n < MAP_HEADER_USED) return;
  uint64_t off = rd_u64(img + 32 + 8 * s);
  if (off > n || n - off < MAP_SLOT_HDR) return;
  uint8_t *hdr = img + off;
  uint64_t np = rd_u64(hdr + 16);
  if (np > n - off - MAP_SLOT_HDR) np = n - off - MAP_SLOT_HDR;
  uint64_t c = fm_checksum(hdr + MAP_SLOT_HDR, (size_t)np, fm_checksum(hdr, 56, FM_CHECKSUM_SEED));
  memcpy(hdr + 56, &c, sizeof c);
}

static void fix_header(uint8_t *img, size_t n) {
  if (n < MAP_HEADER_USED) return;
  uint64_t c = fm_checksum(img, 120, FM_CHECKSUM_SEED);
  memcpy(img + 120, &c, sizeof c);
}

static void apply_patches(uint8_t *img, size_t n, const uint8_t *p, size_t len) {
  const uint64_t data_off = MAP_HEADER_BYTES + 2 * BASE_SLOT;
  const uint64_t start[4] = {0, MAP_HEADER_BYTES, MAP_HEADER_BYTES + BASE_SLOT, data_off};
  const uint64_t span[4] = {MAP_HEADER_USED, BASE_SLOT, BASE_SLOT, n - data_off};
  size_t i = 0;
  while (i + 4 <= len) {
    unsigned r = p[i] % 4u;
    uint64_t off = ((uint64_t)p[i + 1] | (uint64_t)p[i + 2] << 8) % span[r];
    size_t k = p[i + 3];
    i += 4;
    if (k > len - i) k = len - i;
    if (k > span[r] - off) k = (size_t)(span[r] - off);
    memcpy(img + start[r] + off, p + i, k);
    i += k;
  }
}

typedef struct snap {
  int64_t n;
  fm_dir_entry *e;
} snap;

/* Exercise an open map and check what fm_map.h promises. */
static void exercise(fm_map *m, int read_only, snap *out) {
  fm_err err;
  fm_map_info info;
  fm_map_get_info(m, &info);
  int64_t n = fm_map_dir_count(m);
  FUZZ_ASSERT(info.read_only == read_only);
  FUZZ_ASSERT(info.n_named == n && n >= 0 && info.n_blocks >= n);
  FUZZ_ASSERT(info.sync_seq >= 1);
  FUZZ_ASSERT(fm_map_check(m, &err) == FM_OK);
  if (out) {
    out->n = n;
    out->e = calloc((size_t)(n > 0 ? n : 1), sizeof *out->e);
    FUZZ_ASSERT(out->e);
  }
  fm_dir_entry prev;
  for (int64_t i = 0; i < n; i++) {
    fm_dir_entry e, l;
    FUZZ_ASSERT(fm_map_dir_at(m, i, &e, &err) == FM_OK);
    size_t len = strnlen(e.name, sizeof e.name);
    FUZZ_ASSERT(len >= 1 && len <= FM_NAME_MAX);
    FUZZ_ASSERT(i == 0 || strcmp(prev.name, e.name) < 0);
    FUZZ_ASSERT(e.n_dims >= 1 && e.n_dims <= FM_DIR_MAX_DIMS);
    FUZZ_ASSERT(fm_map_lookup(m, e.name, &l, &err) == FM_OK);
    FUZZ_ASSERT(l.off == e.off && l.uid == e.uid && l.n_bytes == e.n_bytes);
    FUZZ_ASSERT(e.uid != 0);
    FUZZ_ASSERT(fm_map_is_named(m, e.off));
    FUZZ_ASSERT(e.off % FM_MAP_ALIGN == 0);
    uint64_t bb = fm_map_block_bytes(m, e.off);
    FUZZ_ASSERT(bb > 0 && bb >= e.n_bytes);
    const volatile uint8_t *p = fm_map_ptr(m, e.off);
    FUZZ_ASSERT(p != NULL);
    uint8_t acc = 0;
    for (uint64_t k = 0; k < bb; k++) acc ^= p[k]; /* every byte of the block is mapped */
    (void)acc;
    if (out) out->e[i] = e;
    prev = e;
  }
  FUZZ_ASSERT(fm_map_dir_at(m, n, &prev, &err) == FM_EARG);
  FUZZ_ASSERT(fm_map_dir_at(m, -1, &prev, &err) == FM_EARG);
  fm_dir_entry l;
  fm_status st = fm_map_lookup(m, "no such object \x01", &l, &err);
  FUZZ_ASSERT(st == FM_OK || st == FM_EARG);
  FUZZ_ASSERT(fm_map_ptr(m, 0) == NULL);
}

/* Mutate a read-write map, sync, and check that the file reopens as synced. */
static void mutate(fm_map **mp) {
  fm_map *m = *mp;
  fm_err err;
  uint64_t off;
  if (fm_map_alloc(m, 100, &off, &err) == FM_OK) {
    uint8_t *p = fm_map_ptr(m, off);
    FUZZ_ASSERT(p != NULL && fm_map_block_bytes(m, off) == 100);
    for (int i = 0; i < 100; i++) FUZZ_ASSERT(p[i] == 0);
    memset(p, 0xab, 100);
    fm_dir_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.name, sizeof e.name, "fuzz.new");
    e.dtype = FM_DTYPE_U8;
    e.n_dims = 1;
    e.dims[0] = 100;
    e.off = off;
    e.n_bytes = 100;
    (void)fm_map_name(m, &e, &err);
  }
  fm_dir_entry e;
  if (fm_map_dir_count(m) > 0 && fm_map_dir_at(m, 0, &e, &err) == FM_OK) {
    uint64_t bb = fm_map_block_bytes(m, e.off), noff;
    if (fm_map_resize(m, e.off, bb + 200, &noff, &err) == FM_OK) {
      FUZZ_ASSERT(fm_map_block_bytes(m, noff) == bb + 200);
      FUZZ_ASSERT(fm_map_is_named(m, noff));
    }
  }
  if (fm_map_dir_count(m) > 1 && fm_map_dir_at(m, 1, &e, &err) == FM_OK)
    FUZZ_ASSERT(fm_map_unname(m, e.name, &err) == FM_OK);
  fm_status sst = fm_map_sync(m, &err);
  if (g_verbose) fprintf(stderr, "sync after mutation: %s %s\n", fm_status_name(sst), sst ? err.msg : "");
  if (sst != FM_OK) return;
  snap before;
  exercise(m, 0, &before);
  fm_map_close(m);
  *mp = NULL;
  fm_map *r = NULL;
  fm_status st = fm_map_open(g_path, 0, FM_MAP_PERSISTENT, 1, &r, &err);
  if (st != FM_OK) fprintf(stderr, "reopen after sync: %s\n", err.msg);
  FUZZ_ASSERT(st == FM_OK);
  snap after;
  exercise(r, 1, &after);
  FUZZ_ASSERT(after.n == before.n);
  for (int64_t i = 0; i < after.n; i++) {
    const fm_dir_entry *a = &after.e[i], *b = &before.e[i];
    FUZZ_ASSERT(strcmp(a->name, b->name) == 0 && a->off == b->off && a->n_bytes == b->n_bytes &&
                a->uid == b->uid && a->dtype == b->dtype && a->n_dims == b->n_dims &&
                memcmp(a->dims, b->dims, sizeof a->dims) == 0);
    if (strcmp(a->name, "fuzz.new") == 0 && a->n_bytes > 0)
      FUZZ_ASSERT(((const uint8_t *)fm_map_ptr(r, a->off))[0] == 0xab);
  }
  free(before.e);
  free(after.e);
  fm_map_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < PREFIX) return 0;
  const unsigned flags = data[0];
  const uint32_t want = rd_le32(data + 1), cap_kib = rd_le32(data + 5);
  const uint8_t *rest = data + PREFIX;
  const size_t rest_n = size - PREFIX;

  size_t n = (flags & F_PATCH) ? g_base_n : rest_n;
  size_t final_n = n;
  if (flags & F_RESIZE) final_n = (size_t)(want % ((uint64_t)n + MIB + 1));
  size_t alloc_n = (n > final_n ? n : final_n);
  uint8_t *img = calloc(alloc_n ? alloc_n : 1, 1);
  if (!img) return 0;
  if (flags & F_PATCH) {
    memcpy(img, g_base, g_base_n);
    apply_patches(img, g_base_n, rest, rest_n);
  } else if (rest_n) {
    memcpy(img, rest, rest_n);
  }
  n = final_n; /* bytes past a cut are dropped; an extension reads as zero */
  if (flags & F_FIX_A) fix_slot(img, n, 0);
  if (flags & F_FIX_B) fix_slot(img, n, 1);
  if (flags & F_FIX_HDR) fix_header(img, n);
  put_image(img, n);
  free(img);

  fm_err err;
  fm_map *m = NULL;
  fm_status st = fm_map_open(g_path, 0, FM_MAP_PERSISTENT, 1, &m, &err);
  FUZZ_ASSERT((st == FM_OK) == (m != NULL));
  if (st != FM_OK) FUZZ_ASSERT(err.code == st && strlen(err.msg) > 0);
  if (g_verbose)
    fprintf(stderr, "read-only open of %zu bytes: %s %s\n", n, fm_status_name(st),
            st ? err.msg : "");
  if (m) {
    exercise(m, 1, NULL);
    fm_map_close(m);
    m = NULL;
  }

  uint64_t cap = (flags & F_CAP) ? (uint64_t)cap_kib * 1024 : 0;
  st = fm_map_open(g_path, cap, FM_MAP_PERSISTENT, 0, &m, &err);
  FUZZ_ASSERT((st == FM_OK) == (m != NULL));
  if (g_verbose) fprintf(stderr, "read-write open: %s %s\n", fm_status_name(st), st ? err.msg : "");
  if (m) {
    exercise(m, 0, NULL);
    if (flags & F_WRITE) mutate(&m);
    fm_map_close(m);
  }
  return 0;
}
