/* fm_gguf_write.h: writing GGUF files with GGML's own GGUF writer, from a
 * description in memory: metadata key/values with their exact GGUF types,
 * tensors with their GGML type, shape and data, and the alignment. Built
 * into fmalloc_ggml (core/src/llm/gguf_write.c); this header names no GGML
 * type.
 *
 * The file is GGUF version 3 as GGML writes it (gguf.h): the metadata in
 * the order given, then the tensor directory in the order given, padded to
 * the alignment, then each tensor's bytes at the offset GGML assigns (a
 * multiple of the alignment), each followed by zeros up to the next
 * multiple. GGML writes the header, metadata and directory
 * (gguf_write_to_file_ptr); the tensor bytes are encoded and written here,
 * a bounded chunk of rows at a time, at GGML's offsets, so the file equals
 * the one GGML's gguf_write_to_file writes for the same tensors byte for
 * byte (core/tests/llm/gguf_write/ checks it) without holding every tensor
 * encoded in memory at once. An alignment other than 32 is written as the
 * key general.alignment (uint32), first.
 *
 * Everything GGML would assert on (types, names, shapes, block multiples,
 * duplicate keys and names) is checked before any GGML state exists or
 * the file is opened, so a bad description is an error, never a GGML
 * abort, and leaves no file behind. A write that fails later removes the
 * partial file.
 *
 * Shapes: ne[0] is the contiguous extent. GGML's writer stores n_dims as
 * the number of extents up to the last that is not 1 (ggml_n_dims), so a
 * 1 x n tensor reads back as 1-D; the reader (fm_gguf.h) fills the rest
 * with 1.
 *
 * Thread safety: reentrant (GGML's quantization tables are initialised
 * under GGML's own lock); concurrent writes to one path are the caller's
 * concern.
 * Source: the GGUF specification in GGML's docs/gguf.md; GGML's gguf.h
 * (gguf_init_empty, gguf_set_val_*, gguf_set_arr_*, gguf_add_tensor,
 * gguf_write_to_file_ptr, gguf_get_meta_size, gguf_get_tensor_offset) and
 * ggml.h (ggml_quantize_chunk, ggml_fp32_to_fp16_row,
 * ggml_fp32_to_bf16_row_ref). */
#ifndef FM_GGUF_WRITE_H
#define FM_GGUF_WRITE_H

#include "fm_base.h"
#include "fm_gguf.h"

/* The longest key or tensor name GGUF readers take: GGML's GGML_MAX_NAME
 * (64) less the NUL. Upstream GGML and llama.cpp refuse longer names. */
#define FM_GGUF_WRITE_MAX_NAME 63

/* The largest alignment fm_gguf_write accepts (a power of two from 1). */
#define FM_GGUF_WRITE_MAX_ALIGNMENT 65536

/* One metadata entry.
 *   key      NUL-terminated UTF-8, non-empty, unique among the entries, not
 *            "general.alignment" (the alignment argument writes it)
 *   type     the value's type, or an array's element type: any fm_gguf_vtype
 *            but FM_GGUF_ARRAY (arrays of arrays are not written)
 *   is_array 1: an array of n elements; 0: a scalar (n must be 1)
 *   values   n values, packed, in native byte order, as the type's C type
 *            (uint8_t ... double; BOOL: one byte, 0 or 1); for STRING, n
 *            NUL-terminated UTF-8 strings (const char *const *); may be
 *            NULL when n is 0. Borrowed for the call. */
typedef struct fm_gguf_wkv {
  const char *key;
  fm_gguf_vtype type;
  int is_array;
  uint64_t n;
  const void *values;
} fm_gguf_wkv;

/* How a tensor's data is given. */
typedef enum fm_gguf_wsrc {
  FM_GGUF_WSRC_BYTES = 0, /* the encoded bytes, as GGML lays them out (any type) */
  FM_GGUF_WSRC_F64 = 1,   /* doubles: float types get them rounded to float32
                           * and converted (F16/BF16 rows; the quantized types
                           * through ggml_quantize_chunk without an importance
                           * matrix); every value must lie in the type's
                           * range (fm_gguf_wrange_of) */
  FM_GGUF_WSRC_I32 = 2    /* int32 values, converted likewise */
} fm_gguf_wsrc;

/* One tensor.
 *   name    NUL-terminated UTF-8, 1 to FM_GGUF_WRITE_MAX_NAME bytes, unique
 *   type    GGML type id (fm_gguf_type_name names them)
 *   n_dims  1 to FM_GGUF_MAX_DIMS; ne[0 .. n_dims) the extents (>= 1; ne[0]
 *           contiguous and a multiple of the type's block); ne[n_dims ..)
 *           are ignored
 *   src     how data is given (above): BYTES takes every type GGML knows;
 *           numbers take F32, F16, BF16, I8, I16, I32, Q4_0, Q4_1, Q5_0,
 *           Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K
 *   data    n elements (F64, I32: ne0 ne1 ne2 ne3 values in GGML's memory
 *           order, ne[0] fastest) or n bytes (BYTES: the tensor's byte
 *           count); borrowed for the call */
typedef struct fm_gguf_wtensor {
  const char *name;
  uint32_t type;
  int n_dims;
  int64_t ne[FM_GGUF_MAX_DIMS];
  fm_gguf_wsrc src;
  const void *data;
  int64_t n;
} fm_gguf_wtensor;

/* The numbers a GGML type is encoded from (src F64 or I32): [lo, hi];
 * whole: integer types take whole numbers only; finite: NaN and Inf are
 * refused. F32, F16 and BF16 take NaN and +-Inf as given, and finite
 * values up to their largest (FLT_MAX, 65504, 0x1.fep127), beyond which
 * a value would become Inf; the quantized types take finite values within
 * F16's range, as their blocks' scales are F16 and one NaN or Inf makes
 * the whole block NaN. */
typedef struct fm_gguf_wrange {
  double lo, hi;
  int whole, finite;
} fm_gguf_wrange;

/* The range of `type` (above) into *r; 0 for a type numbers cannot be
 * encoded to (*r untouched). */
int fm_gguf_wrange_of(uint32_t type, fm_gguf_wrange *r);

/* The index of the first of n values (src F64: doubles; I32: int32_t)
 * outside r; -1 when all lie in it. */
int64_t fm_gguf_wrange_first_bad(const fm_gguf_wrange *r, fm_gguf_wsrc src, const void *data,
                                 int64_t n);

/* The range of `type` in words into buf (n bytes, NUL-terminated, cut to
 * fit), e.g. "F16 takes numbers from -65504 to 65504 (...)". */
void fm_gguf_wrange_text(uint32_t type, char *buf, size_t n);

/* Write the GGUF file at path (created or truncated) with n_kv metadata
 * entries kv[] and n_tensors tensors[], tensors aligned to `alignment`
 * bytes (a power of two from 1 to FM_GGUF_WRITE_MAX_ALIGNMENT; GGUF's
 * default is FM_GGUF_DEFAULT_ALIGNMENT).
 * Errors (messages name the key or tensor, with what was expected and
 *   what was given):
 *   FM_EARG: NULL path or arrays, a negative count, a bad alignment; a
 *     key empty, given twice, or general.alignment; an unknown value type,
 *     a scalar with n != 1, a bool byte other than 0/1, a NULL string or
 *     values; a tensor name empty, longer than FM_GGUF_WRITE_MAX_NAME or
 *     given twice; an unknown GGML type; n_dims outside 1..4, an extent
 *     < 1, ne[0] not a multiple of the block, more than 2^60 elements; a data
 *     size other than the shape's (n elements, or n bytes for BYTES); a
 *     number outside the type's range (fm_gguf_wrange_of: the message
 *     names the tensor, the value's index and the range);
 *   FM_EUNSUPPORTED: numbers for a type they cannot be encoded to (the
 *     other quantized types need an importance matrix or have no
 *     quantizer here: give their bytes);
 *   FM_EIO: the file cannot be created or written (the OS's reason);
 *   FM_ENOMEM; FM_ECANCELLED (ctl->cancel, polled between chunks of at
 *     most 4 MiB): the partial file is removed.
 * Progress: ctl->progress(bytes of tensor data written, all of it).
 * Owns: borrows everything; the file is closed on return. */
FM_NODISCARD fm_status fm_gguf_write(const char *path, const fm_gguf_wkv *kv, int64_t n_kv,
                                     const fm_gguf_wtensor *tensors, int64_t n_tensors,
                                     uint32_t alignment, const fm_ctl *ctl, fm_err *err);

#endif
