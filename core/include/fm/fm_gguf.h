/* fm_gguf.h: a validating reader of GGUF model files (header, metadata and
 * tensor directory), with no dependency on GGML.
 *
 * Format: GGUF v2/v3 as documented in ggml's docs/gguf.md. Little-endian:
 *   u32 magic "GGUF", u32 version, u64 n_tensors, u64 n_kv,
 *   n_kv x (string key, u32 value type, value),
 *   n_tensors x (string name, u32 n_dims, u64 ne[n_dims], u32 ggml type,
 *                u64 offset relative to the data section),
 *   padding to `general.alignment` (u32, a power of two; default 32),
 *   data section.
 * A string is u64 length + bytes (no NUL); an array is u32 element type +
 * u64 count + elements (arrays of arrays are allowed by the format and
 * refused here).
 *
 * fm_gguf_parse checks everything GGML would trust before it ever sees the
 * file: magic and version; every count and length against the bytes that
 * remain (so a metadata array claiming 2^62 elements is an error, not an
 * allocation); the type and value of general.alignment; tensor types known,
 * dimensions positive with a row a whole number of blocks, and every tensor's
 * bytes inside the file, aligned, and not overlapping. Keys must be unique,
 * tensor names unique (and at most 63 bytes, GGML's limit). docs/formats/gguf.md
 * lists every check.
 *
 * Keys and tensor names must be UTF-8 text without NUL (metadata string
 * values may hold any bytes).
 *
 * Thread safety: a parsed fm_gguf is immutable (but for fm_gguf_check's
 * atomic flag); readers may share it. */
#ifndef FM_GGUF_H
#define FM_GGUF_H

#include "fm_base.h"

/* Metadata value types (GGUF numbering). */
typedef enum fm_gguf_vtype {
  FM_GGUF_U8 = 0, FM_GGUF_I8 = 1, FM_GGUF_U16 = 2, FM_GGUF_I16 = 3,
  FM_GGUF_U32 = 4, FM_GGUF_I32 = 5, FM_GGUF_F32 = 6, FM_GGUF_BOOL = 7,
  FM_GGUF_STRING = 8, FM_GGUF_ARRAY = 9, FM_GGUF_U64 = 10, FM_GGUF_I64 = 11,
  FM_GGUF_F64 = 12
} fm_gguf_vtype;

#define FM_GGUF_MAX_DIMS 4
#define FM_GGUF_DEFAULT_ALIGNMENT 32

/* One metadata entry. For arrays, type is FM_GGUF_ARRAY, elem_type the
 * element type and n the element count; for scalars n is 1. `value` points
 * at the first value byte inside the file (for strings: the u64 length; for
 * arrays: the first element, after the element type and count). Elements are
 * little-endian and unaligned. Entries come only from fm_gguf_kv_at (the
 * getters below find a string array's index behind the entry). */
typedef struct fm_gguf_kv {
  const char *key; size_t key_len; /* not NUL-terminated */
  fm_gguf_vtype type;
  fm_gguf_vtype elem_type; /* == type for scalars */
  uint64_t n;
  const uint8_t *value;
} fm_gguf_kv;

/* One tensor directory entry. ne[0] is the innermost (contiguous)
 * dimension; unused dims are 1. data_offset is absolute within the file. */
typedef struct fm_gguf_tensor {
  const char *name; size_t name_len; /* not NUL-terminated */
  uint32_t n_dims;
  int64_t ne[FM_GGUF_MAX_DIMS];
  uint32_t type;        /* ggml type id (see fm_gguf_type_*) */
  uint64_t data_offset; /* absolute byte offset */
  uint64_t n_bytes;
} fm_gguf_tensor;

typedef struct fm_gguf fm_gguf;

/* Parse and validate bytes [data, data+size) (borrowed: must outlive the
 * result). path (may be NULL) only names the file in messages.
 * Errors: FM_EFORMAT naming the byte offset and what was expected;
 * FM_EUNSUPPORTED for GGUF version 1, versions above 3, big-endian files and
 * arrays of arrays; FM_ENOMEM; FM_EARG for a NULL out (or NULL data with
 * size > 0). Memory: O(n_kv + n_tensors + string-array elements), all
 * bounded by size / 8. */
FM_NODISCARD fm_status fm_gguf_parse(const void *data, size_t size, const char *path,
                                     fm_gguf **out, fm_err *err);

/* Map path read-only (PROT_READ, MAP_PRIVATE) and parse it; the mapping
 * lives as long as the result. Errors: FM_EIO, then those of fm_gguf_parse. */
FM_NODISCARD fm_status fm_gguf_open(const char *path, fm_gguf **out, fm_err *err);

void fm_gguf_close(fm_gguf *g); /* NULL is allowed */

/* For a file from fm_gguf_open, one fstat(): FM_EFORMAT naming the file and
 * both sizes when it shrank since it was opened (reading a mapped page past
 * the new end would raise SIGBUS), and FM_EFORMAT "rewritten" when it was
 * written to since (size or modification time changed) and its header and
 * tensor directory, bytes [0, fm_gguf_data_offset), no longer hold what was
 * parsed (the directory points into the mapping, which shows the file's
 * bytes now). Growth that leaves the header alone (an append) is fine;
 * tensor bytes rewritten in place are not detected (values change, reads
 * stay inside the mapping). FM_EIO when fstat fails; FM_OK for parsed
 * memory. Call it before each pass over mapped bytes; a truncation during
 * the pass itself cannot be caught (mmap semantics). Cost: one fstat, plus
 * a checksum of the header when the file was written to, and also while
 * the file's last write before opening is under a second old (file times
 * advance in ticks of milliseconds, so until then a rewrite might keep the
 * modification time). Thread-safe (an atomic flag records the latter). */
FM_NODISCARD fm_status fm_gguf_check(const fm_gguf *g, fm_err *err);

/* fm_gguf_check of the open file (from fm_gguf_open, not yet closed) whose
 * mapping holds address p; FM_OK when p lies in none (parsed memory, NULL).
 * For code that has a tensor's bytes but not its fm_gguf (the panel decoder
 * and the GGML backend of fm_llm_tensor.h). Thread-safe: a mutex guards the
 * list of open files, which fm_gguf_open and fm_gguf_close update. */
FM_NODISCARD fm_status fm_gguf_check_addr(const void *p, fm_err *err);

/* The path given to fm_gguf_parse/open (borrowed from g; NULL if none). */
const char *fm_gguf_path(const fm_gguf *g);

uint32_t fm_gguf_version(const fm_gguf *g);
uint32_t fm_gguf_alignment(const fm_gguf *g);
uint64_t fm_gguf_data_offset(const fm_gguf *g); /* start of the data section */
const uint8_t *fm_gguf_bytes(const fm_gguf *g); /* first byte of the file */
size_t fm_gguf_size(const fm_gguf *g);
/* The open file's descriptor (from fm_gguf_open: what fm_fd_identity of
 * fm_fileview.h reads for processes that map the file by path), or -1
 * (parsed memory, NULL). Borrowed: closed by fm_gguf_close. */
int fm_gguf_fd(const fm_gguf *g);

int64_t fm_gguf_n_kv(const fm_gguf *g);
const fm_gguf_kv *fm_gguf_kv_at(const fm_gguf *g, int64_t i); /* NULL out of range */
/* Index of key (NUL-terminated), or -1. */
int64_t fm_gguf_find_kv(const fm_gguf *g, const char *key);

int64_t fm_gguf_n_tensors(const fm_gguf *g);
const fm_gguf_tensor *fm_gguf_tensor_at(const fm_gguf *g, int64_t i);
int64_t fm_gguf_find_tensor(const fm_gguf *g, const char *name);
/* First byte of t's data (t->n_bytes bytes, aligned to fm_gguf_alignment
 * relative to the file start), borrowed from g. */
const uint8_t *fm_gguf_tensor_data(const fm_gguf *g, const fm_gguf_tensor *t);

/* Bytes of one value of a scalar type (0 for STRING/ARRAY). */
size_t fm_gguf_vtype_size(fm_gguf_vtype t);
const char *fm_gguf_vtype_name(fm_gguf_vtype t); /* "uint32", ...; "?" unknown */

/* Element i of kv (scalar: i = 0) converted. Return 0 on success, nonzero
 * when i is out of range or the type does not convert (integers to/from
 * float never silently: get_i64 refuses F32/F64, get_f64 accepts all
 * numeric types; BOOL reads as 0/1 through get_i64). Strings: *s points
 * into the file, *len its length; O(1) for string arrays too (the parser
 * indexes them). */
int fm_gguf_get_i64(const fm_gguf_kv *kv, uint64_t i, int64_t *out);
int fm_gguf_get_u64(const fm_gguf_kv *kv, uint64_t i, uint64_t *out);
int fm_gguf_get_f64(const fm_gguf_kv *kv, uint64_t i, double *out);
int fm_gguf_get_str(const fm_gguf_kv *kv, uint64_t i, const char **s, size_t *len);

/* ggml type traits known to this reader, without GGML: elements per block
 * and bytes per block (0 for an id it does not know), and the type's name
 * ("f32", "q4_K", ... as GGML spells them; NULL for unknown ids). */
int64_t fm_gguf_type_block(uint32_t type);
int64_t fm_gguf_type_size(uint32_t type);
const char *fm_gguf_type_name(uint32_t type);

#endif
