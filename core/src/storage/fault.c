/* fault.c: SIGBUS in the core's reads of a mapped file as an FM_EIO error
 * (fm_fault.h): the table of registered mappings, the per-thread jump
 * points and the scoped handler. */
#define _DEFAULT_SOURCE /* sigaction, SA_ONSTACK, siginfo_t, sigsetjmp */
#include "fm/fm_fault.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

/* ---- registered mappings: written under reg_lock, read by the handler ---- */

static struct {
  _Atomic uintptr_t base; /* 0: free; published last */
  _Atomic size_t n_bytes;
  const char *_Atomic path;
} maps[FM_FAULT_MAPS];
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

void fm_fault_register(const void *base, size_t n_bytes, const char *path) {
  if (!base || n_bytes == 0) return;
  pthread_mutex_lock(&reg_lock);
  for (int i = 0; i < FM_FAULT_MAPS; i++) {
    if (atomic_load_explicit(&maps[i].base, memory_order_relaxed) != 0) continue;
    atomic_store_explicit(&maps[i].n_bytes, n_bytes, memory_order_relaxed);
    atomic_store_explicit(&maps[i].path, path, memory_order_relaxed);
    atomic_store_explicit(&maps[i].base, (uintptr_t)base, memory_order_release);
    break;
  }
  pthread_mutex_unlock(&reg_lock);
}

void fm_fault_unregister(const void *base) {
  if (!base) return;
  pthread_mutex_lock(&reg_lock);
  for (int i = 0; i < FM_FAULT_MAPS; i++)
    if (atomic_load_explicit(&maps[i].base, memory_order_relaxed) == (uintptr_t)base) {
      atomic_store_explicit(&maps[i].base, 0, memory_order_release);
      break;
    }
  pthread_mutex_unlock(&reg_lock);
}

/* ---- jump points: one list per thread. The handler reads it only for a
 * fault inside a registered mapping: a thread that faults there either
 * pushed a jump point (its TLS block exists) or reads our mapping
 * unguarded, outside malloc (a dlopen'ed library's TLS may be allocated
 * lazily on first access; initial-exec TLS would need static TLS room that
 * an R process may not have left) ---- */

static _Thread_local fm_fault_jmp *volatile tl_top;

/* ---- the handler, installed while `active` > 0 ---- */

static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static int active;                 /* under install_lock */
static struct sigaction previous;  /* the handler before ours, while installed */

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
  if (si && si->si_code > 0) { /* a fault, not a kill() */
    const uintptr_t a = (uintptr_t)si->si_addr;
    for (int i = 0; i < FM_FAULT_MAPS; i++) {
      const uintptr_t b = atomic_load_explicit(&maps[i].base, memory_order_acquire);
      if (b == 0 || a < b) continue;
      const size_t n = atomic_load_explicit(&maps[i].n_bytes, memory_order_relaxed);
      if (a - b >= n) continue;
      fm_fault_jmp *j = tl_top;
      if (!j) break; /* no jump point in this thread */
      j->info.path = atomic_load_explicit(&maps[i].path, memory_order_relaxed);
      j->info.offset = (uint64_t)(a - b);
      j->info.n_bytes = (uint64_t)n;
      siglongjmp(j->jb, 1);
    }
  }
  /* Not ours: the previous handler's turn. */
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) previous.sa_sigaction(sig, si, uc);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
    return;
  }
  /* The default action (an ignored SIGBUS from a fault is fatal too): reset
   * it; a fault happens again on return, a sent signal is raised again. */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGBUS, &dfl, NULL);
  if (!si || si->si_code <= 0) raise(SIGBUS);
}

static void hold(void) {
  pthread_mutex_lock(&install_lock);
  if (active++ == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sigemptyset(&sa.sa_mask);
    /* NODEFER: SIGBUS stays unblocked after siglongjmp(jb, 0) leaves the
     * handler (jump points save no signal mask: no syscall per region). */
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigaction(SIGBUS, &sa, &previous);
  }
  pthread_mutex_unlock(&install_lock);
}

static void release(void) {
  pthread_mutex_lock(&install_lock);
  if (active > 0 && --active == 0) sigaction(SIGBUS, &previous, NULL);
  pthread_mutex_unlock(&install_lock);
}

void fm_fault_scope_enter(void) { hold(); }
void fm_fault_scope_leave(void) { release(); }

int fm_fault_active(void) {
  pthread_mutex_lock(&install_lock);
  const int n = active;
  pthread_mutex_unlock(&install_lock);
  return n;
}

void fm_fault_push(fm_fault_jmp *j) {
  j->info.path = NULL;
  j->info.offset = 0;
  j->info.n_bytes = 0;
  j->prev = tl_top;
  hold();
  tl_top = j;
}

void fm_fault_pop(fm_fault_jmp *j) {
  if (tl_top == j) tl_top = j->prev;
  release();
}

fm_status fm_fault_caught(fm_fault_jmp *j, fm_err *err) {
  fm_fault_pop(j);
  return fm_fault_error(&j->info, err);
}

fm_status fm_fault_error(const fm_fault_info *info, fm_err *err) {
  return fm_err_set(err, FM_EIO,
                    "'%s' changed size during the operation (SIGBUS reading byte offset %llu of "
                    "its %llu mapped bytes): was it truncated?",
                    info && info->path ? info->path : "a mapped file",
                    (unsigned long long)(info ? info->offset : 0),
                    (unsigned long long)(info ? info->n_bytes : 0));
}
