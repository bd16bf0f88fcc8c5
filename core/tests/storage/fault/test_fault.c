/* Tests for fm_fault.h: a SIGBUS reading a mapped file truncated during an
 * operation is FM_EIO naming the file, on the calling thread and on worker
 * threads, with the handler restored afterwards; other SIGBUS are not ours.
 * Files are generated here, in a mkdtemp directory under /tmp. */
#define _GNU_SOURCE
#include "fm/fm_backend.h"
#include "fm/fm_fault.h"
#include "fm/fm_fileview.h"
#include "fm/fm_fused.h"
#include "fm/fm_panel.h"
#include "fm/fm_stats_colvar.h"
#include "fm_test.h"
#include "fm_test_files.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[64];

static const char *tpath(const char *name) { return fm_test_path_in(g_dir, name); }

static int has(const char *msg, const char *what) { return strstr(msg, what) != NULL; }

/* A .bed image: 3 magic bytes, q variants of n samples, codes from a seed. */
#define N_SAMPLES 4000
#define COL_BYTES (N_SAMPLES / 4)
#define N_VARIANTS 256
static void write_bed(const char *path) {
  size_t n = 3 + (size_t)COL_BYTES * N_VARIANTS;
  uint8_t *b = malloc(n);
  CHECK(b != NULL);
  if (!b) return;
  b[0] = 0x6c, b[1] = 0x1b, b[2] = 0x01;
  uint64_t s = 42;
  for (size_t i = 3; i < n; i++) b[i] = (uint8_t)fm_test_rng_next(&s);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0 && write(fd, b, n) == (ssize_t)n);
  if (fd >= 0) close(fd);
  free(b);
}

/* Keep the first `keep` variants' pages (the cut lands on a page boundary
 * past them, so what is read first still works and a later read faults). */
static void cut(const char *path, int keep) {
  const long pg = sysconf(_SC_PAGESIZE);
  off_t at = (off_t)(3 + (size_t)COL_BYTES * (size_t)keep);
  at = (at + pg - 1) / pg * pg;
  CHECK(truncate(path, at) == 0);
}

/* A generated .bed called name, mapped as *v, its matrix in *x; returns its
 * path, or NULL (a failed check) when it could not be opened. */
static const char *open_bed(const char *name, fm_fileview **v, fm_mat *x) {
  const char *path = tpath(name);
  fm_err err;
  *v = NULL;
  write_bed(path);
  CHECK_OK(fm_fileview_open(path, v, &err), &err);
  if (!*v) return NULL;
  CHECK_OK(fm_mat_init(x, FM_CODEC_BED2, (*v)->base + 3, N_SAMPLES, N_VARIANTS, COL_BYTES, &err),
           &err);
  return path;
}

static struct sigaction current_bus(void) {
  struct sigaction sa;
  sigaction(SIGBUS, NULL, &sa);
  return sa;
}

/* The calling thread: panel decode (every reference pass goes through it). */
static void panel_decode_faults_as_eio(void) {
  fm_fileview *v;
  fm_mat x;
  fm_err err;
  const char *path = open_bed("decode.bed", &v, &x);
  if (!path) return;
  const struct sigaction before = current_bus();
  double *out = malloc(sizeof(double) * N_SAMPLES * 8);
  CHECK_OK(fm_panel_decode(&x, NULL, 0, N_SAMPLES, 0, 8, out, N_SAMPLES, &err), &err);
  cut(path, 10);
  CHECK_OK(fm_panel_decode(&x, NULL, 0, N_SAMPLES, 0, 8, out, N_SAMPLES, &err), &err);
  CHECK(fm_panel_decode(&x, NULL, 0, N_SAMPLES, 100, 8, out, N_SAMPLES, &err) == FM_EIO);
  CHECK(err.code == FM_EIO && has(err.msg, path) && has(err.msg, "SIGBUS") &&
        has(err.msg, "truncated"));
  CHECK(fm_fault_active() == 0);
  const struct sigaction after = current_bus();
  CHECK(after.sa_handler == before.sa_handler); /* restored */
  /* and again: the jump point of a later call works as well */
  CHECK(fm_panel_decode(&x, NULL, 0, N_SAMPLES, 200, 8, out, N_SAMPLES, &err) == FM_EIO);
  free(out);
  fm_fileview_close(v);
}

static void colvar_and_reference_fault_as_eio(void) {
  fm_fileview *v;
  fm_mat x;
  fm_err err;
  const char *path = open_bed("colvar.bed", &v, &x);
  if (!path) return;
  double mean[N_VARIANTS], var[N_VARIANTS];
  CHECK_OK(fm_stats_colvar(&x, mean, var, NULL, NULL, &err), &err);
  cut(path, 64);
  CHECK(fm_stats_colvar(&x, mean, var, NULL, NULL, &err) == FM_EIO);
  CHECK(has(err.msg, path));
  int64_t *counts = malloc(sizeof(int64_t) * 4 * N_VARIANTS);
  CHECK(fm_stats_bed2_counts(&x, counts, NULL, &err) == FM_EIO && has(err.msg, path));
  free(counts);
  double *b = calloc(N_VARIANTS, sizeof(double)), *y = calloc(N_SAMPLES, sizeof(double));
  for (int j = 0; j < N_VARIANTS; j++) b[j] = 1.0;
  fm_product p = {.op = FM_OP_XB, .x = &x, .b = b, .ldb = N_VARIANTS, .k = 1, .y = y,
                  .ldy = N_SAMPLES};
  fm_ctl ctl = {.backend = "reference", .panel_bytes = 64 << 10};
  CHECK(fm_backend_run(&p, &ctl, NULL, &err) == FM_EIO);
  CHECK(has(err.msg, path));
  CHECK(fm_fault_active() == 0);
  free(b);
  free(y);
  fm_fileview_close(v);
}

/* Worker threads: the fused backend's pool, each thread its own jump point. */
static void fused_workers_fault_as_eio(void) {
  fm_fileview *v;
  fm_mat x;
  fm_err err;
  const char *path = open_bed("fused.bed", &v, &x);
  if (!path) return;
  double *b = calloc((size_t)N_SAMPLES * 2, sizeof(double));
  double *y = calloc((size_t)N_VARIANTS * 2, sizeof(double));
  double *y0 = calloc((size_t)N_VARIANTS * 2, sizeof(double));
  for (int i = 0; i < N_SAMPLES * 2; i++) b[i] = (double)(i % 7) - 3.0;
  fm_product p = {.op = FM_OP_XTB, .x = &x, .b = b, .ldb = N_SAMPLES, .k = 2, .y = y0,
                  .ldy = N_VARIANTS};
  fm_ctl ctl = {.threads = 4, .panel_bytes = 256 << 10};
  CHECK_OK(fm_fused_backend(NULL, &p, &ctl, &err), &err);
  p.y = y;
  CHECK_OK(fm_fused_backend(NULL, &p, &ctl, &err), &err); /* the guarded path: same bits */
  CHECK(memcmp(y, y0, sizeof(double) * N_VARIANTS * 2) == 0);
  cut(path, 30);
  CHECK(fm_fused_backend(NULL, &p, &ctl, &err) == FM_EIO);
  CHECK(has(err.msg, path) && has(err.msg, "SIGBUS"));
  p.op = FM_OP_XB;
  p.ldb = N_VARIANTS;
  p.ldy = N_SAMPLES;
  double *yb = calloc((size_t)N_SAMPLES * 2, sizeof(double));
  p.y = yb;
  CHECK(fm_fused_backend(NULL, &p, &ctl, &err) == FM_EIO);
  CHECK(fm_fault_active() == 0);
  free(yb);
  free(b);
  free(y);
  free(y0);
  fm_fileview_close(v);
}

/* Threads of the caller's own, each with a jump point: each gets its fault. */
typedef struct {
  const uint8_t *base;
  size_t at;
  fm_status st;
  fm_err err;
} reader_arg;

static void *reader(void *p) {
  reader_arg *a = p;
  fm_fault_jmp j;
  fm_fault_push(&j);
  if (sigsetjmp(j.jb, 0) != 0) {
    a->st = fm_fault_caught(&j, &a->err);
    return NULL;
  }
  volatile uint8_t sink = a->base[a->at];
  (void)sink;
  fm_fault_pop(&j);
  a->st = FM_OK;
  return NULL;
}

static void threads_each_catch_their_fault(void) {
  fm_fileview *v;
  fm_mat x;
  const char *path = open_bed("threads.bed", &v, &x);
  if (!path) return;
  cut(path, 1);
  const long pg = sysconf(_SC_PAGESIZE);
  enum { T = 6 };
  pthread_t th[T];
  reader_arg a[T];
  for (int t = 0; t < T; t++) {
    a[t].base = v->base;
    a[t].at = t == 0 ? 0 : (size_t)(4 + t) * (size_t)pg + (size_t)t;
    a[t].st = FM_EINTERNAL;
    CHECK(pthread_create(&th[t], NULL, reader, &a[t]) == 0);
  }
  for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
  CHECK(a[0].st == FM_OK); /* the page still in the file */
  for (int t = 1; t < T; t++) {
    char off[32];
    snprintf(off, sizeof off, "offset %zu ", a[t].at);
    CHECK(a[t].st == FM_EIO && has(a[t].err.msg, path) && has(a[t].err.msg, off));
  }
  CHECK(fm_fault_active() == 0);
  fm_fileview_close(v);
}

/* Not ours: the previous handler runs (in a child, which it ends). */
static volatile sig_atomic_t g_seen;
static void own_handler(int sig) {
  (void)sig;
  _exit(g_seen ? 43 : 42);
}

static int child_status(void (*body)(void)) {
  pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 100 + WTERMSIG(status) : -1;
}

/* A mapping nobody registered, read inside a jump point. */
static void unregistered_body(void) {
  signal(SIGBUS, own_handler);
  const char *path = tpath("raw.bin");
  write_bed(path);
  int fd = open(path, O_RDONLY);
  const long pg = sysconf(_SC_PAGESIZE);
  const uint8_t *m = mmap(NULL, (size_t)pg * 8, PROT_READ, MAP_SHARED, fd, 0);
  if (ftruncate(open(path, O_RDWR), pg) != 0) _exit(3);
  fm_fault_jmp j;
  fm_fault_push(&j);
  if (sigsetjmp(j.jb, 0) != 0) _exit(4); /* wrongly taken as ours */
  volatile uint8_t sink = m[4 * pg];
  (void)sink;
  _exit(5);
}

/* A registered mapping read outside any jump point: the default action. */
static void outside_guard_body(void) {
  fm_fileview *v = NULL;
  fm_err err;
  const char *path = tpath("outside.bed");
  write_bed(path);
  if (fm_fileview_open(path, &v, &err) != FM_OK) _exit(3);
  fm_fault_scope_enter(); /* handler installed, but no jump point here */
  if (truncate(path, 4096) != 0) _exit(3);
  volatile uint8_t sink = v->base[8 * 4096];
  (void)sink;
  _exit(5);
}

static void sent_signal_body(void) {
  signal(SIGBUS, own_handler);
  fm_fault_jmp j;
  fm_fault_push(&j);
  if (sigsetjmp(j.jb, 0) != 0) _exit(4);
  raise(SIGBUS); /* si_code <= 0: not a fault */
  _exit(5);
}

static void other_sigbus_chain(void) {
  CHECK(child_status(unregistered_body) == 42);
  const int st = child_status(outside_guard_body); /* ASan's handler exits with 1 */
  CHECK(st == 100 + SIGBUS || st == 1);
  CHECK(child_status(sent_signal_body) == 42);
}

int main(void) {
  if (!fm_test_tmpdir(g_dir, sizeof g_dir, "fm_fault_test.")) return 1;
  FM_RUN(panel_decode_faults_as_eio);
  FM_RUN(colvar_and_reference_fault_as_eio);
  FM_RUN(fused_workers_fault_as_eio);
  FM_RUN(threads_each_catch_their_fault);
  FM_RUN(other_sigbus_chain);
  fm_test_rmtree(g_dir);
  FM_TEST_END();
}
