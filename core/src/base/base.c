/* base.c: status names, the error buffer, dtypes, thread count, control
 * block, checksum. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT; sysconf(_SC_NPROCESSORS_ONLN) */
#include "fm/fm_base.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

fm_status fm_err_setv(fm_err *err, fm_status code, const char *fmt, va_list ap) {
  if (err) {
    err->code = code;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  }
  return code;
}

fm_status fm_err_set(fm_err *err, fm_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fm_status st = fm_err_setv(err, code, fmt, ap);
  va_end(ap);
  return st;
}

void fm_err_clear(fm_err *err) {
  if (err) {
    err->code = FM_OK;
    err->msg[0] = '\0';
  }
}

const char *fm_status_name(fm_status code) {
  static const char *const names[FM_STATUS_COUNT] = {
      "ok",    "enomem",  "eio",    "eformat", "emismatch", "edegenerate", "earg",
      "eunsupported", "ecancelled", "enospc", "ebusy", "eclosed", "einternal", "eend"};
  if ((int)code < 0 || (int)code >= FM_STATUS_COUNT) return "einternal";
  return names[code];
}

size_t fm_dtype_size(fm_dtype t) {
  switch (t) {
  case FM_DTYPE_F64: return 8;
  case FM_DTYPE_I32:
  case FM_DTYPE_LGL: return 4;
  case FM_DTYPE_U8: return 1;
  default: return 0;
  }
}

const char *fm_dtype_name(fm_dtype t) {
  switch (t) {
  case FM_DTYPE_F64: return "double";
  case FM_DTYPE_I32: return "integer";
  case FM_DTYPE_LGL: return "logical";
  case FM_DTYPE_U8: return "raw";
  case FM_DTYPE_BED2: return "bed2";
  case FM_DTYPE_DOS8: return "dos8";
  case FM_DTYPE_HAP1: return "hap1";
  default: return "none";
  }
}

int fm_ctl_cancelled(const fm_ctl *ctl) { return ctl && ctl->cancel && ctl->cancel(ctl->ud); }

/* CPUs this process may run on: its affinity mask (taskset, cpusets of
 * containers and batch schedulers), else the CPUs online. */
static long cpus_available(void) {
#if defined(__linux__) && defined(CPU_COUNT)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n >= 1) return n;
  }
#endif
  return sysconf(_SC_NPROCESSORS_ONLN);
}

int fm_threads(const fm_ctl *ctl) {
  if (ctl && ctl->threads > 0) return ctl->threads > FM_THREADS_MAX ? FM_THREADS_MAX : ctl->threads;
  const long cpus = cpus_available();
  return cpus >= 1 ? (cpus > FM_THREADS_MAX ? FM_THREADS_MAX : (int)cpus) : 1;
}

fm_ctl fm_ctl_relay(const fm_ctl *ctl, int (*cancel)(void *ud),
                    void (*progress)(void *ud, double done, double total), void *ud) {
  fm_ctl inner = ctl ? *ctl : (fm_ctl){0};
  inner.cancel = cancel;
  inner.progress = progress;
  inner.ud = ud;
  return inner;
}

void fm_ctl_progress(const fm_ctl *ctl, double done, double total) {
  if (ctl && ctl->progress) ctl->progress(ctl->ud, done, total);
}

uint64_t fm_checksum(const void *p, size_t n, uint64_t seed) {
  const unsigned char *b = p;
  uint64_t h = seed;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

int fm_mul_ok(int64_t a, int64_t b, int64_t *out) {
  if (a < 0 || b < 0) return 0;
  if (a != 0 && b > INT64_MAX / a) return 0;
  *out = a * b;
  return 1;
}
