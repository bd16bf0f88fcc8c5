/* fused_portable.c: the fused kernels (fused_kern.h) in plain C, for every
 * CPU. With GCC or clang, vectors of two doubles (SSE2 on x86-64, NEON on
 * arm64, scalar code elsewhere); otherwise scalars. */
#include "fused_impl.h"

#include <string.h>

#define KN(name) name##_portable
#define FK_ATTR

#if defined(__GNUC__)
typedef double vd __attribute__((vector_size(16)));
#define VW 2
static inline vd vload(const double *p) {
  vd v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline void vstore(double *p, vd v) { memcpy(p, &v, sizeof v); }
#define VLOAD(p) vload(p)
#define VSTORE(p, v) vstore((p), (v))
#define VSPLAT(x) ((vd){(x), (x)})
#define VZERO() ((vd){0.0, 0.0})
#define VADD(a, b) ((a) + (b))
#define VFMA(a, b, c) ((a) * (b) + (c))
#define FK_GATHER_NV 6
#define FK_GATHER_CASES FK_G(1) FK_G(2) FK_G(3) FK_G(4) FK_G(5) FK_G(6)
#define FK_GATHER1_NV 12
#define FK_GATHER1_CASES FK_G(7) FK_G(8) FK_G(9) FK_G(10) FK_G(11) FK_G(12)
#define FK_SCATTER_NV 12
#define FK_SCATTER_CASES                                                                          \
  FK_S(1) FK_S(2) FK_S(3) FK_S(4) FK_S(5) FK_S(6) FK_S(7) FK_S(8) FK_S(9) FK_S(10) FK_S(11) FK_S(12)
#else
typedef double vd;
#define VW 1
#define VLOAD(p) (*(p))
#define VSTORE(p, v) (*(p) = (v))
#define VSPLAT(x) (x)
#define VZERO() 0.0
#define VADD(a, b) ((a) + (b))
#define VFMA(a, b, c) ((a) * (b) + (c))
#define FK_GATHER_NV 4
#define FK_GATHER_CASES FK_G(1) FK_G(2) FK_G(3) FK_G(4)
#define FK_GATHER1_NV 8
#define FK_GATHER1_CASES FK_G(5) FK_G(6) FK_G(7) FK_G(8)
#define FK_SCATTER_NV 8
#define FK_SCATTER_CASES FK_S(1) FK_S(2) FK_S(3) FK_S(4) FK_S(5) FK_S(6) FK_S(7) FK_S(8)
#endif

#include "fused_kern.h"

const fused_kernels fused_kernels_portable = FK_TABLE(4);
