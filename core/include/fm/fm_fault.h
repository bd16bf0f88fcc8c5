/* fm_fault.h: a SIGBUS inside the core's own reads of a mapped file, turned
 * into an FM_EIO error naming the file instead of killing the process.
 *
 * A mapped file truncated by another process makes every read of a page past
 * its new end raise SIGBUS in the reading thread. The core's mappings
 * (fm_fileview, fm_map, fm_gguf) register their address ranges here. An
 * operation that reads them guards its reads with a jump point of its own
 * thread:
 *
 *   fm_fault_jmp j;
 *   fm_fault_push(&j);                    installs the handler, links j
 *   if (sigsetjmp(j.jb, 0) != 0)          a fault in a registered mapping
 *     return fm_fault_caught(&j, err);    unlinks j, FM_EIO naming the file
 *   ... reads of the mapping: no allocation, no lock taken ...
 *   fm_fault_pop(&j);
 *
 * Everything the guarded region needs is allocated before fm_fault_push and
 * released on both paths after it, so a fault leaks nothing. Jump points
 * nest (the innermost of the faulting thread is taken) and are per thread:
 * a worker thread pushes its own and reports the fault to its caller (the
 * fused backend's pool). sigsetjmp's cost is paid once per guarded region
 * (a panel, a block of a pass), never per element.
 *
 * The SIGBUS handler is installed while at least one jump point or scope
 * (fm_fault_scope_enter) is active in the process and the previous handler
 * is restored when the last one leaves. A SIGBUS that is not ours (no jump
 * point in the faulting thread, an address outside every registered
 * mapping, or a signal sent by kill) goes to the previous handler, or, when
 * that was the default action, kills the process as before.
 *
 * Files using sigsetjmp define _POSIX_C_SOURCE 200809L (or _DEFAULT_SOURCE,
 * _GNU_SOURCE) before any #include.
 * Thread safety: every function may be called from any thread. */
#ifndef FM_FAULT_H
#define FM_FAULT_H

#if !defined(_POSIX_C_SOURCE) && !defined(_DEFAULT_SOURCE) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200809L /* sigjmp_buf; effective before any system header only */
#endif

#include "fm_base.h"

#include <setjmp.h>

/* Where a fault was: the file (borrowed from the registration, valid while
 * the mapping stays registered), the byte offset in the mapping and the
 * size registered. path NULL: no fault. */
typedef struct fm_fault_info {
  const char *path;
  uint64_t offset;
  uint64_t n_bytes;
} fm_fault_info;

typedef struct fm_fault_jmp {
  sigjmp_buf jb;
  struct fm_fault_jmp *prev; /* the thread's enclosing jump point */
  fm_fault_info info;        /* filled by the handler before it jumps */
} fm_fault_jmp;

/* Register the mapping [base, base + n_bytes) of file path (borrowed: it
 * must outlive the registration). At most FM_FAULT_MAPS mappings are
 * registered at once; past that a mapping is not (a SIGBUS in it kills the
 * process as it did before). NULL base or 0 bytes: nothing. */
#define FM_FAULT_MAPS 1024
void fm_fault_register(const void *base, size_t n_bytes, const char *path);

/* Forget the mapping starting at base (before it is unmapped). */
void fm_fault_unregister(const void *base);

/* Link j as the calling thread's innermost jump point (and install the
 * handler when it is the process's first); then call sigsetjmp(j->jb, 0). */
void fm_fault_push(fm_fault_jmp *j);

/* Unlink j (the thread's innermost) after a region that did not fault;
 * restore the previous handler when it was the last. */
void fm_fault_pop(fm_fault_jmp *j);

/* After sigsetjmp(j->jb, 0) returned nonzero: fm_fault_pop(j) and
 * fm_fault_error(&j->info, err). */
FM_NODISCARD fm_status fm_fault_caught(fm_fault_jmp *j, fm_err *err);

/* FM_EIO: "'<path>' changed size during the operation (SIGBUS reading byte
 * offset N of its M mapped bytes): was it truncated?". */
FM_NODISCARD fm_status fm_fault_error(const fm_fault_info *info, fm_err *err);

/* Keep the handler installed across the many jump points of one operation
 * (one sigaction pair per operation instead of one per region); nests.
 * Each enter is matched by one leave. */
void fm_fault_scope_enter(void);
void fm_fault_scope_leave(void);

/* Jump points and scopes active in the process (tests: 0 between calls). */
int fm_fault_active(void);

#endif
