/* fm_base.h: status codes, the error buffer, element types and the control
 * block shared by every libfmalloc module.
 *
 * Invariants: every fallible function returns fm_status and takes `fm_err *err`
 * as its last parameter (may be NULL). On failure err->code equals the return
 * value and err->msg holds one plain sentence naming the file or argument and
 * the numbers involved. Library code never aborts, exits or prints.
 * Thread safety: everything here is reentrant. */
#ifndef FM_BASE_H
#define FM_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define FM_NODISCARD __attribute__((warn_unused_result))
#define FM_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define FM_NODISCARD
#define FM_PRINTF(fmt, args)
#endif

/* A small taxonomy chosen so callers can act on it. */
typedef enum fm_status {
  FM_OK = 0,
  FM_ENOMEM = 1,       /* heap allocation failed */
  FM_EIO = 2,          /* an OS call on a file failed */
  FM_EFORMAT = 3,      /* malformed bytes (bad magic, truncated, checksum) */
  FM_EMISMATCH = 4,    /* inputs inconsistent with each other (dims, sizes) */
  FM_EDEGENERATE = 5,  /* valid input, degenerate math (zero variance) */
  FM_EARG = 6,         /* a documented precondition was broken */
  FM_EUNSUPPORTED = 7, /* valid but not handled here; a backend declines */
  FM_ECANCELLED = 8,   /* the fm_ctl cancel callback asked to stop */
  FM_ENOSPC = 9,       /* the size cap, disk or file-size limit is reached */
  FM_EBUSY = 10,       /* another process holds the file lock */
  FM_ECLOSED = 11,     /* the runtime was closed */
  FM_EINTERNAL = 12,   /* a bug: an internal invariant failed */
  FM_EEND = 13         /* not an error: a stream (a reader's records) has ended */
} fm_status;

#define FM_STATUS_COUNT 14

typedef struct fm_err {
  fm_status code;
  char msg[256];
} fm_err;

/* Fill err (if not NULL) with code and a printf-formatted message; returns code. */
fm_status fm_err_set(fm_err *err, fm_status code, const char *fmt, ...) FM_PRINTF(3, 4);

/* fm_err_set with the arguments as a va_list (for forwarding wrappers). */
fm_status fm_err_setv(fm_err *err, fm_status code, const char *fmt, va_list ap) FM_PRINTF(3, 0);

/* Reset err to FM_OK with an empty message (err may be NULL). */
void fm_err_clear(fm_err *err);

/* Stable lower-case name of a status ("ok", "enomem", ...), used for R
 * condition classes fm_error_<name>. Never NULL. */
const char *fm_status_name(fm_status code);

/* Element types of stored objects. The numeric values are written to disk
 * (docs/formats/fmalloc.md): never renumber. */
typedef enum fm_dtype {
  FM_DTYPE_NONE = 0,
  FM_DTYPE_F64 = 1,  /* IEEE double; NA is R's NA_real_ payload */
  FM_DTYPE_I32 = 2,  /* int32; NA is INT32_MIN */
  FM_DTYPE_LGL = 3,  /* R logical stored as int32; NA is INT32_MIN */
  FM_DTYPE_U8 = 4,   /* raw bytes */
  FM_DTYPE_BED2 = 5, /* PLINK 1 two-bit hardcalls, variant-major (fm_codec_bed2.h) */
  FM_DTYPE_DOS8 = 6, /* one-byte dosages (fm_codec_dos8.h) */
  FM_DTYPE_HAP1 = 7  /* one bit per haplotype, locus-major rows (fm_codec_hap1.h) */
} fm_dtype;

/* Bytes per element for plain dtypes; 0 for packed codecs. */
size_t fm_dtype_size(fm_dtype t);
const char *fm_dtype_name(fm_dtype t);

/* Control block for long-running work. Every field may be NULL.
 * cancel: polled once per block from the calling thread; nonzero stops the
 *         work, which cleans up and returns FM_ECANCELLED.
 * progress: done and total in the caller's units (e.g. passes or columns).
 * backend: the products of this call (fm_backend_run, also those run inside
 *         the core, e.g. by fm_stats_rpca) go to this backend alone, as
 *         fm_backend_run_named, or to the reference path for "reference";
 *         NULL or "": every registered backend in order, then the reference
 *         path (fm_backend.h). Borrowed for the call.
 * threads: worker threads the call may use (fm_threads(ctl)); 0 the
 *         default, the CPUs available.
 * panel_bytes: byte budget of a decoded panel of doubles and of the blocks
 *         the statistics stream (fm_panel_budget(ctl), fm_panel.h); 0 the
 *         default, FM_PANEL_DEFAULT_BUDGET.
 * forked: nonzero in a child made by fork() after the parent ran threaded
 *         work: thread pools that do not survive fork() (GNU OpenMP's,
 *         behind GGML) must run one thread; the core's own POSIX threads
 *         start at each call and are unaffected.
 * The settings are per call: the core keeps no process-wide thread count or
 * budget (the R packages read theirs from options into each call's ctl).
 * Work that relays ctl through a control block of its own starts from a
 * copy of *ctl (fm_ctl_relay). */
typedef struct fm_ctl {
  int (*cancel)(void *ud);
  void (*progress)(void *ud, double done, double total);
  void *ud;
  const char *backend;
  int threads;
  size_t panel_bytes;
  int forked;
} fm_ctl;

/* The most worker threads any parallel module uses per call. */
#define FM_THREADS_MAX 256

/* Worker threads a call with control block ctl may use, 1 ...
 * FM_THREADS_MAX: ctl->threads when positive (capped), else the default,
 * the CPUs this process may run on (its affinity mask, sched_getaffinity,
 * on Linux: taskset, cpusets; else the CPUs online, sysconf), capped at
 * FM_THREADS_MAX. A CPU quota (cgroup cpu.max) is not seen. ctl may be
 * NULL (the default). Results never depend on it (each parallel module
 * states how). */
int fm_threads(const fm_ctl *ctl);

/* A control block for work that relays ctl (a cancel or progress of its
 * own around a caller's): *ctl's settings (backend, threads, panel_bytes,
 * forked) with the given callbacks; ctl may be NULL (defaults). */
fm_ctl fm_ctl_relay(const fm_ctl *ctl, int (*cancel)(void *ud),
                    void (*progress)(void *ud, double done, double total), void *ud);

/* Nonzero when ctl asks to stop. ctl may be NULL. */
int fm_ctl_cancelled(const fm_ctl *ctl);
void fm_ctl_progress(const fm_ctl *ctl, double done, double total);

/* 64-bit FNV-1a over n bytes, chained through seed (start with
 * FM_CHECKSUM_SEED). Used for file headers and metadata slots. */
#define FM_CHECKSUM_SEED UINT64_C(0xcbf29ce484222325)
uint64_t fm_checksum(const void *p, size_t n, uint64_t seed);

/* a * b into *out; returns 0 on int64 overflow or a negative operand. */
int fm_mul_ok(int64_t a, int64_t b, int64_t *out);

#endif
