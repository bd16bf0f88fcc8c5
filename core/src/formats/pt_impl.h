/* pt_impl.h: private parts of the .pt reader (fm_pt.h): the ZIP directory
 * (pt_zip.c), the pickle machine (pt_pickle.c) and a name table both use.
 * docs/formats/pt.md describes the bytes and every check. */
#ifndef FM_PT_IMPL_H
#define FM_PT_IMPL_H

#include "fm/fm_pt.h"

#include <stddef.h>
#include <stdint.h>

/* ---- a hash table of names ------------------------------------------------------- */

/* Open addressing over indices into the owner's own array of names: slot
 * holds index + 1, 0 is empty. The table never holds the names, so the
 * owner passes the i-th name back through a callback. */
typedef struct fm_pt_names {
  int64_t *slot; /* (cap) owned */
  size_t cap;    /* a power of two >= 2 * n, or 0 */
  int64_t n;
  uint64_t seed; /* of the hash, drawn when the table is first sized, so a
                    file cannot be built to make every name collide */
} fm_pt_names;

typedef struct fm_pt_name {
  const char *s;
  size_t n;
} fm_pt_name;

typedef fm_pt_name (*fm_pt_name_of)(const void *owner, int64_t i);

/* Index of the name (s, n), or -1. The name may come in two parts
 * (prefix, s): a prefix of length 0 is none. */
int64_t fm_pt_names_find(const fm_pt_names *t, const void *owner, fm_pt_name_of name_of,
                         fm_pt_name prefix, fm_pt_name s);
/* Insert index i, whose name is not in the table (find first): 0, or -1
 * when memory runs out. */
FM_NODISCARD int fm_pt_names_add(fm_pt_names *t, const void *owner, fm_pt_name_of name_of, int64_t i);
void fm_pt_names_clear(fm_pt_names *t);

/* The offset in s of the first byte at which s stops being UTF-8 (RFC 3629:
 * a byte that starts no character, a sequence cut short, overlong, a
 * surrogate or above U+10FFFF), or n when all of it is. */
size_t fm_pt_utf8_bad_at(const uint8_t *s, size_t n);

/* ---- the ZIP directory (pt_zip.c) ----------------------------------------------- */

typedef struct fm_pt_entry {
  const char *name; /* into the central directory; name_len bytes, no NUL inside */
  size_t name_len;
  uint64_t cd_off;   /* its central directory header */
  uint64_t lh_off;   /* its local header */
  uint64_t data_off; /* its first data byte */
  uint64_t n_bytes;  /* stored = uncompressed size */
} fm_pt_entry;

typedef struct fm_pt_zip {
  const uint8_t *p; /* borrowed: size bytes */
  size_t size;
  const char *msg;    /* the file's name for messages, borrowed */
  fm_pt_entry *e;     /* (n) owned, in central directory order */
  int64_t n;
  fm_pt_names names;  /* of e[i].name */
  const char *top;    /* the first entry's folder, into its name; top_len bytes */
  size_t top_len;
} fm_pt_zip;

/* Read the end records and the central directory of [p, p + size), check
 * every entry (below) and index the names. Every entry must be stored
 * (method 0), unencrypted, on disk 0, named "<top>/..." with the first
 * entry's <top>, with its local header's name equal to the central
 * directory's, its data inside the file and before the central directory.
 * Errors: FM_EFORMAT, FM_EUNSUPPORTED, FM_ENOMEM, naming msg and the byte
 * offset. z is zeroed first; clear it with fm_pt_zip_clear. */
FM_NODISCARD fm_status fm_pt_zip_read(fm_pt_zip *z, const uint8_t *p, size_t size, const char *msg,
                         fm_err *err);
/* The entry named "<top>/" + rel, or NULL. */
const fm_pt_entry *fm_pt_zip_find(const fm_pt_zip *z, const char *rel, size_t rel_len);
void fm_pt_zip_clear(fm_pt_zip *z);

/* ---- the pickle machine (pt_pickle.c) -------------------------------------------- */

/* A storage named by a persistent id: key (into the pickle), element type
 * and count; at is the pickle offset of the BINPERSID that first named it. */
typedef struct fm_pt_storage {
  const char *key;
  size_t key_len;
  fm_pt_dtype dtype;
  int64_t numel;
  size_t at;
} fm_pt_storage;

/* A tensor as pickled, before its checks against the storage (pt.c). */
typedef struct fm_pt_raw {
  int64_t storage; /* index into the storages */
  int64_t offset;  /* storage_offset, elements */
  int n_dims;
  int64_t size[FM_PT_MAX_DIMS], stride[FM_PT_MAX_DIMS];
  int requires_grad;
  size_t at; /* pickle offset of its REDUCE */
} fm_pt_raw;

/* One entry of the top dict, in order: a key (into the pickle, valid
 * UTF-8) and a tensor. */
typedef struct fm_pt_item {
  const char *key;
  size_t key_len;
  size_t key_at; /* pickle offset of the key's string opcode */
  int64_t tensor; /* index into the tensors */
} fm_pt_item;

typedef struct fm_pt_dict {
  fm_pt_storage *st; /* (n_st) owned */
  int64_t n_st;
  fm_pt_raw *t; /* (n_t) owned */
  int64_t n_t;
  fm_pt_item *items; /* (n_items) owned */
  int64_t n_items;
} fm_pt_dict;

/* Run the pickle [p, p + n) and return its top dict. where names it in
 * messages ("<file>: <entry>"); base is its offset in the file (messages
 * give both offsets). Errors: FM_EFORMAT, FM_EUNSUPPORTED, FM_ENOMEM.
 * out is zeroed first; clear it with fm_pt_dict_clear. */
FM_NODISCARD fm_status fm_pt_pickle_load(const uint8_t *p, size_t n, const char *where, uint64_t base,
                            fm_pt_dict *out, fm_err *err);
void fm_pt_dict_clear(fm_pt_dict *d);

#endif
