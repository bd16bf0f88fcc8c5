/* fm_llm_tensor.h: GGUF tensors as fm_mat views decoded by GGML, whole-tensor
 * dequantization, and the GGML backend of fm_backend.h (mul_mat on a view's
 * own blocks). Built into fmalloc_ggml (core/src/llm/llm_tensor.c); this header
 * names no GGML type.
 *
 * Orientation. A GGML tensor with ne[0] (contiguous) and ne[1] is a matrix
 * of ne[1] rows and ne[0] columns: row i is GGML row i, element (i, j) is
 * GGML's element (j, i), so X B with B of ne[0] rows is GGML's
 * mul_mat(X, B) (what a model computes). ne[2] and ne[3] stack
 * ne[1] * ne[2] * ne[3] rows in a view. The view's bytes stay where they
 * are (the file's mapping): row r starts at data + r * col_stride, where
 * col_stride is the bytes of one GGML row (the fm_mat field keeps its name;
 * for this codec it is the row stride).
 *
 * Decoding (external codec "gguf <type>", fm_panel.h): the panel rows
 * [r0, r0+n) x columns [c0, c0+m) decodes, row by row, only the blocks that
 * hold columns c0..c0+m-1, through GGML's to_float on whole blocks (F32 is
 * copied: GGML has no to_float for it). GGML's formats decode each block on
 * its own, so a panel equals the matching part of the whole tensor's
 * to_float bit for bit, for any tiling (oracle: core/tests/llm/llm_tensor/).
 * Before each panel, and before each product of the backend, the file whose
 * mapping holds the bytes is checked (fm_gguf_check_addr: one fstat):
 * FM_EFORMAT "shrank" / "rewritten" instead of a SIGBUS when the file was
 * truncated or its header rewritten under an open handle; fm_llm_tensor_view
 * and fm_llm_tensor_dequantize check the file (fm_gguf_check) likewise.
 *
 * The backend (fm_llm_tensor_backend) computes X B for a view (FM_OP_XB, no
 * column index, identity transform): a GGML tensor whose data pointer is the
 * view's bytes, B converted to F32, and GGML's CPU mul_mat, which quantizes
 * B to the weight type's vec_dot type (q8_0 for q4_0/q5_0/q8_0, q8_1 for
 * q4_1/q5_1, q8_K for the K-quants, f16/bf16/f32 for those types) and
 * accumulates in single precision, as llama.cpp does. It differs from the
 * reference path (decode + dgemm) by the quantization error of B: per output
 * element y_i at most sum_l |x_il| e_l plus float rounding, e_l bounding the
 * error of B[l, ] quantized: q8_0/q8_1 (blocks of 32, scale d = max|b|/127
 * stored as f16) e <= d (1/2 + 127 2^-11); q8_K (blocks of 256, f32 scale)
 * e <= d/2; f16 e <= |b| 2^-11 (+2^-24); bf16 e <= |b| 2^-8; f32 0; and for
 * q8_1 the f16-rounded block sum adds at most 2^-10 max|x_block| sum|b_block|
 * per block. The test (core/tests/llm/llm_tensor/, and Rgguf's
 * test-quant-zoo.R) adds 2^-16 sum_l |x_il b_l| for single-precision
 * accumulation of 256 terms. It declines (FM_EUNSUPPORTED, before writing y)
 * X' B, column subsets, affine transforms, operands with NA/NaN/Inf or
 * values beyond float range (the reference path propagates them as BLAS
 * does), types without a CPU vec_dot, views not over whole GGML rows, and
 * products too large for one GGML context (ne0 * k or n_rows * k above 1e9).
 *
 * Thread safety: the codec table is built once (pthread_once) on first use;
 * afterwards every function may run concurrently. The decoder uses stack
 * scratch only and never touches R; the backend runs GGML on
 * fm_threads(ctl) threads (OpenMP; one when ctl->forked), polling
 * ctl->cancel through GGML's compute-abort hook on the calling thread.
 * Source: GGUF and GGML block formats: ggml's docs/gguf.md, ggml-common.h
 * (block layouts); functions reached through ggml_get_type_traits() and
 * ggml_get_type_traits_cpu(); products: ggml_mul_mat on the CPU backend. */
#ifndef FM_LLM_TENSOR_H
#define FM_LLM_TENSOR_H

#include "fm_backend.h"
#include "fm_base.h"
#include "fm_gguf.h"
#include "fm_panel.h"

/* The external codec that decodes GGML type id `type` ("gguf q4_K", ...):
 * static storage, valid for the life of the process. NULL when GGML has no
 * such type, cannot decode it to floats (integer types), or its block
 * traits disagree with fm_gguf_type_block/fm_gguf_type_size. */
const fm_ext_codec *fm_llm_tensor_codec(uint32_t type);

/* The GGML type id that codec decodes, or -1 when codec is not one of
 * fm_llm_tensor_codec's (NULL included). */
int fm_llm_tensor_codec_type(const fm_ext_codec *codec);

/* GGML's name of the type the backend quantizes B to for weight type
 * `type` ("q8_0", "q8_K", "f16", ...), or NULL when the type has no CPU
 * dot product. Borrowed static string. */
const char *fm_llm_tensor_vec_dot_type(uint32_t type);

/* A view of tensor t of g (orientation above): n_rows = ne1 * ne2 * ne3,
 * n_cols = ne0, col_stride = bytes of one GGML row, data in g's mapping.
 * Shape:  *out is an FM_CODEC_EXT fm_mat over fm_llm_tensor_codec(t->type).
 * Errors: FM_EARG (NULL argument); FM_EUNSUPPORTED naming the tensor, the
 *         file and the type when GGML cannot decode it to floats;
 *         FM_EFORMAT when the tensor's byte count is not its rows times
 *         the row size, or when g's file shrank or was rewritten
 *         (fm_gguf_check); FM_EINTERNAL when GGML's block traits differ from
 *         the reader's table.
 * Owns:   borrows g and t (t from fm_gguf_tensor_at(g, ...)); *out borrows
 *         g's mapping and is valid while g is open. */
FM_NODISCARD fm_status fm_llm_tensor_view(const fm_gguf *g, const fm_gguf_tensor *t, fm_mat *out,
                                          fm_err *err);

/* Number of elements of t (ne0 ne1 ne2 ne3), or -1 when that overflows int64. */
int64_t fm_llm_tensor_n_elements(const fm_gguf_tensor *t);

/* The whole tensor through ONE to_float call on all its blocks (F32:
 * copied), widened to double and laid out in the R orientation:
 *   n_dims <= 1: out[e] = element e (ne0 values);
 *   otherwise for each plane s (ne2 * ne3 planes of ne1 x ne0):
 *     out[s ne0 ne1 + i + j ne1] = GGML element (j, i, s), i < ne1, j < ne0
 *   (column-major ne1 x ne0 planes, R's dim c(ne1, ne0, ne2[, ne3])).
 * Shape:  out has n = fm_llm_tensor_n_elements(t) doubles.
 * Units:  GGML's to_float values exactly (single precision widened).
 * Errors: FM_EARG (NULL argument, n not the tensor's element count);
 *         those of fm_llm_tensor_view; FM_ENOMEM for the n-float scratch.
 * Owns:   borrows g and t; writes only out; allocates n floats meanwhile. */
FM_NODISCARD fm_status fm_llm_tensor_dequantize(const fm_gguf *g, const fm_gguf_tensor *t,
                                                double *out, int64_t n, fm_err *err);

/* The GGML backend (an fm_backend_fn; see the top of this file): computes
 * p->y = X p->b for p->x a view from fm_llm_tensor_view (recognised by its
 * codec) or declines.
 * Shape:  p as in fm_backend.h (FM_OP_XB: b is ne0 x k, y n_rows x k).
 * Errors: FM_EUNSUPPORTED (declines, y untouched); FM_EFORMAT when the
 *         view's file shrank or was rewritten (fm_gguf_check_addr, before
 *         anything is computed); FM_ENOMEM (GGML context
 *         or work buffer); FM_ECANCELLED (ctl->cancel, before or during the
 *         graph; y then unspecified); FM_EINTERNAL when GGML fails.
 * Owns:   borrows everything in p (ud is unused); writes only p->y. */
FM_NODISCARD fm_status fm_llm_tensor_backend(void *ud, const fm_product *p, const fm_ctl *ctl,
                                             fm_err *err);

#endif
