/* fm_pt.h: a validating reader of PyTorch `.pt` checkpoints that hold a plain
 * state dict (a dict of name -> tensor), with no Python and no torch.
 *
 * Format (docs/formats/pt.md has the byte layouts and every check):
 *   a ZIP archive (PKWARE APPNOTE; ZIP64 read) of stored, uncompressed
 *   entries under one top-level folder <top>/ named by the first entry:
 *     <top>/data.pkl     a pickle (protocols 2-5) whose top object is a
 *                        (collections.Ordered)dict of str -> tensor, each
 *                        torch._utils._rebuild_tensor_v2(storage,
 *                        storage_offset, size, stride, requires_grad,
 *                        backward_hooks[, metadata]) with storage the
 *                        persistent id ('storage', torch.<T>Storage, key,
 *                        location, numel);
 *     <top>/byteorder    "little" (absent: little, as torch assumes);
 *     <top>/version      a decimal record version (or <top>/.data/version);
 *     <top>/data/<key>   each storage's raw little-endian elements.
 *
 * The pickle is interpreted by a small stack machine that knows a fixed
 * list of opcodes and imports only collections.OrderedDict,
 * torch._utils._rebuild_tensor_v2 and the ten torch.<T>Storage classes: it
 * evaluates nothing else, so a pickled nn.Module (or anything that imports
 * another global) is an FM_EUNSUPPORTED error naming that global, never
 * code run. Every ZIP offset and size is checked against the file, every
 * pickle length against the bytes that remain, memo indices, stack depth
 * (FM_PT_MAX_STACK) and nesting of marks (FM_PT_MAX_MARKS) are bounded, and
 * nothing recurses; time and memory are linear in the file size.
 *
 * Tensors are returned as borrowed views of the stored bytes: a tensor must
 * be C-contiguous (row-major strides; size-1 dims may have any stride) and
 * lie inside its storage; several tensors may share a storage.
 *
 * Ownership: fm_pt owns its tensor table and names; tensor data and the
 * top-folder name point into the bytes (fm_pt_parse: the caller's buffer,
 * which must outlive the result; fm_pt_open: the mapping, released by
 * fm_pt_close). Thread safety: a parsed fm_pt is immutable; readers may
 * share it.
 * Source: PKWARE's APPNOTE.TXT, Python's pickletools opcode documentation
 * and the fixtures' README (models/openspliceai); docs/formats/pt.md lists
 * every check. Oracle: core/tests/formats/pt/ (archives written field by
 * field, which Python's zipfile and pickle also read; the fixtures against
 * their README and an independent directory walk); fuzzed by
 * core/fuzz/fuzz_pt.c. */
#ifndef FM_PT_H
#define FM_PT_H

#include "fm_base.h"

/* Element types, from the storage class of each tensor's persistent id. */
typedef enum fm_pt_dtype {
  FM_PT_F32 = 0,  /* torch.FloatStorage: IEEE binary32 */
  FM_PT_F64 = 1,  /* torch.DoubleStorage */
  FM_PT_F16 = 2,  /* torch.HalfStorage: IEEE binary16 */
  FM_PT_BF16 = 3, /* torch.BFloat16Storage: the top 16 bits of a binary32 */
  FM_PT_I64 = 4,  /* torch.LongStorage */
  FM_PT_I32 = 5,  /* torch.IntStorage */
  FM_PT_I16 = 6,  /* torch.ShortStorage */
  FM_PT_I8 = 7,   /* torch.CharStorage */
  FM_PT_U8 = 8,   /* torch.ByteStorage */
  FM_PT_BOOL = 9  /* torch.BoolStorage: one byte, 0 or 1 */
} fm_pt_dtype;

#define FM_PT_N_DTYPES 10
#define FM_PT_MAX_DIMS 8
/* Bounds of the pickle machine (a state dict needs a stack of about 2000,
 * SETITEMS batches of 1000 pairs, and 3 nested marks). */
#define FM_PT_MAX_STACK (1 << 20)
#define FM_PT_MAX_MARKS 256

/* One state-dict entry. shape[0] is the outermost (slowest) dimension, as
 * PyTorch lists it; the elements are row-major (C order), dims past n_dims
 * are 1; n_dims 0 is a scalar (numel 1). data is the first element:
 * numel * fm_pt_dtype_size(dtype) = n_bytes bytes, little-endian, aligned
 * to the element size relative to the start of the bytes parsed. */
typedef struct fm_pt_tensor {
  const char *name; /* the state-dict key, NUL-terminated UTF-8, owned by fm_pt */
  size_t name_len;
  fm_pt_dtype dtype;
  int n_dims; /* 0 .. FM_PT_MAX_DIMS */
  int64_t shape[FM_PT_MAX_DIMS];
  int64_t numel;
  const void *data; /* borrowed from the bytes parsed; never NULL, even when numel is 0 */
  uint64_t n_bytes;
  uint64_t data_off;       /* byte offset of data in the file */
  const char *storage;     /* the storage key (entry <top>/data/<storage>), owned by fm_pt */
  int64_t storage_offset;  /* in elements */
  int requires_grad;       /* as pickled; informational */
} fm_pt_tensor;

typedef struct fm_pt fm_pt;

/* Parse and validate bytes [data, data+size) (borrowed: must outlive the
 * result). path (may be NULL) only names the file in messages.
 * Errors: FM_EFORMAT (malformed ZIP or pickle, a tensor outside its
 * storage, negative dims) naming the byte offset, the entry or tensor and
 * what was expected; FM_EUNSUPPORTED for well-formed input out of scope
 * (compressed or encrypted entries, multi-disk archives, a byteorder of
 * "big", a global other than those above, which means the file is not a
 * plain state dict, a non-contiguous tensor, more than FM_PT_MAX_DIMS
 * dims, a storage not aligned to its element size); FM_ENOMEM; FM_EARG for
 * a NULL out (or NULL data with size > 0). Memory: linear in size. */
FM_NODISCARD fm_status fm_pt_parse(const void *data, size_t size, const char *path, fm_pt **out,
                                   fm_err *err);

/* Map path read-only (fm_fileview.h: O_RDONLY | O_CLOEXEC | O_NONBLOCK,
 * regular files only) and parse it; the mapping lives as long as the
 * result. Errors: FM_EIO, then those of fm_pt_parse. */
FM_NODISCARD fm_status fm_pt_open(const char *path, fm_pt **out, fm_err *err);

void fm_pt_close(fm_pt *pt); /* NULL is allowed */

/* For a file from fm_pt_open: FM_EFORMAT naming the file and both sizes
 * when it shrank since it was opened (a read of a mapped page past the new
 * end would raise SIGBUS); FM_EIO when fstat fails; FM_OK for parsed
 * memory. Call before a pass over the tensor data. */
FM_NODISCARD fm_status fm_pt_check(const fm_pt *pt, fm_err *err);

/* The archive's top-level folder, without the slash (borrowed from pt). */
const char *fm_pt_top(const fm_pt *pt);
const char *fm_pt_path(const fm_pt *pt); /* as given; NULL if none */
const uint8_t *fm_pt_bytes(const fm_pt *pt); /* first byte of the file */
size_t fm_pt_size(const fm_pt *pt);

/* Tensors in state-dict order; tensor_at is NULL out of range. */
int64_t fm_pt_n_tensors(const fm_pt *pt);
const fm_pt_tensor *fm_pt_tensor_at(const fm_pt *pt, int64_t i);
/* Index of the tensor named name (NUL-terminated), or -1. O(1) expected. */
int64_t fm_pt_find(const fm_pt *pt, const char *name);

/* "f32", "f64", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool";
 * "?" for other values. */
const char *fm_pt_dtype_name(fm_pt_dtype t);
/* Bytes per element (1, 2, 4 or 8); 0 for other values. */
size_t fm_pt_dtype_size(fm_pt_dtype t);

#endif
