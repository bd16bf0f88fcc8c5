/* Tests for fm_fileview.h: read-only borrowed mappings of foreign files.
 * Files are generated here, in a mkdtemp directory under /tmp. */
#define _GNU_SOURCE
#include "fm/fm_fileview.h"
#include "fm_test.h"
#include "fm_test_files.h"

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char g_dir[64];

static const char *tpath(const char *name) { return fm_test_path_in(g_dir, name); }

static void write_file(const char *path, const void *buf, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  if (fd < 0) return;
  CHECK(write(fd, buf, n) == (ssize_t)n);
  close(fd);
}

static int has(const char *msg, const char *what) { return strstr(msg, what) != NULL; }

static void open_reads_bytes(void) {
  const char *path = tpath("data.bin");
  uint8_t buf[10007];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 31 + 7);
  write_file(path, buf, sizeof buf);
  fm_err err;
  fm_fileview *v = NULL;
  CHECK_OK(fm_fileview_open(path, &v, &err), &err);
  if (!v) return;
  CHECK(v->n_bytes == sizeof buf && v->base != NULL && v->fd >= 0);
  CHECK(strcmp(v->path, path) == 0);
  CHECK(memcmp(v->base, buf, sizeof buf) == 0);
  CHECK_OK(fm_fileview_check(v, &err), &err);
  /* Growing is fine; the view keeps its size. */
  int fd = open(path, O_WRONLY | O_APPEND);
  CHECK(fd >= 0 && write(fd, "more", 4) == 4);
  if (fd >= 0) close(fd);
  CHECK_OK(fm_fileview_check(v, &err), &err);
  CHECK(v->n_bytes == sizeof buf);
  fm_fileview_close(v);
}

static void empty_file(void) {
  const char *path = tpath("empty.bin");
  write_file(path, "", 0);
  fm_err err;
  fm_fileview *v = NULL;
  CHECK_OK(fm_fileview_open(path, &v, &err), &err);
  if (!v) return;
  CHECK(v->base == NULL && v->n_bytes == 0);
  CHECK_OK(fm_fileview_check(v, &err), &err);
  fm_fileview_close(v);
}

static void truncation_detected(void) {
  const char *path = tpath("trunc.bin");
  uint8_t buf[3 * 4096 + 11];
  memset(buf, 0x42, sizeof buf);
  write_file(path, buf, sizeof buf);
  fm_err err;
  fm_fileview *v = NULL;
  CHECK_OK(fm_fileview_open(path, &v, &err), &err);
  if (!v) return;
  CHECK(truncate(path, 4096) == 0);
  CHECK(fm_fileview_check(v, &err) == FM_EFORMAT);
  CHECK(err.code == FM_EFORMAT && has(err.msg, path) && has(err.msg, "12299") && has(err.msg, "4096"));
  CHECK(strchr(err.msg, '\n') == NULL);
  CHECK(v->base[0] == 0x42); /* the first page is still backed */
  fm_fileview_close(v);
}

static void rename_replace_keeps_bytes(void) {
  const char *path = tpath("model.bin");
  const char *tmp = tpath("model.tmp");
  uint8_t a[5000], b[100];
  memset(a, 0xA5, sizeof a);
  memset(b, 0x5A, sizeof b);
  write_file(path, a, sizeof a);
  fm_err err;
  fm_fileview *v = NULL;
  CHECK_OK(fm_fileview_open(path, &v, &err), &err);
  if (!v) return;
  write_file(tmp, b, sizeof b);
  CHECK(rename(tmp, path) == 0);
  CHECK(memcmp(v->base, a, sizeof a) == 0);
  CHECK_OK(fm_fileview_check(v, &err), &err);
  fm_fileview_close(v);
}

static void errors_and_null(void) {
  fm_err err;
  fm_fileview *v = (fm_fileview *)&err; /* must be reset to NULL */
  CHECK(fm_fileview_open(tpath("missing.bin"), &v, &err) == FM_EIO && v == NULL);
  CHECK(has(err.msg, "missing.bin"));
  CHECK(fm_fileview_open(g_dir, &v, &err) == FM_EIO && v == NULL && has(err.msg, g_dir));
  /* a FIFO without a writer: refused at once, not waited on */
  CHECK(mkfifo(tpath("fifo"), 0600) == 0);
  CHECK(fm_fileview_open(tpath("fifo"), &v, &err) == FM_EIO && v == NULL && has(err.msg, "not a regular file"));
  CHECK(fm_fileview_open(NULL, &v, &err) == FM_EARG);
  CHECK(fm_fileview_open("", &v, &err) == FM_EARG);
  CHECK(fm_fileview_open(tpath("x"), NULL, &err) == FM_EARG);
  CHECK(fm_fileview_check(NULL, &err) == FM_EARG);
  CHECK(fm_fileview_open(tpath("missing.bin"), &v, NULL) == FM_EIO);
  fm_fileview_close(NULL);
}

/* fm_fileview_identity: equal for two views of one file and for a byte-equal
 * copy given the same mtime; another for a sampled byte changed, another
 * mtime, another size; an error (not a SIGBUS) for a file truncated under
 * the view. */
static void identity(void) {
  enum { N = 300000 };
  static uint8_t buf[N];
  for (size_t i = 0; i < N; i++) buf[i] = (uint8_t)(i * 131 + 17);
  const char *a = tpath("id_a.bin");
  write_file(a, buf, N);
  fm_err err;
  fm_fileview *v = NULL, *w = NULL;
  fm_file_identity ia, ib;
  CHECK_OK(fm_fileview_open(a, &v, &err), &err);
  CHECK_OK(fm_fileview_open(a, &w, &err), &err);
  if (!v || !w) return;
  CHECK_OK(fm_fileview_identity(v, &ia, &err), &err);
  CHECK_OK(fm_fileview_identity(w, &ib, &err), &err);
  CHECK(ia.size == N && ia.checksum == ib.checksum && ia.mtime_ns == ib.mtime_ns && ia.mtime_ns > 0);
  fm_fileview_close(w);
  /* a copy with the same mtime: the same identity; one sampled byte (the
   * last page ends the file) changed: another */
  const char *b = tpath("id_b.bin");
  struct timespec times[2] = {{0, UTIME_OMIT}, {(time_t)(ia.mtime_ns / 1000000000), (long)(ia.mtime_ns % 1000000000)}};
  write_file(b, buf, N);
  CHECK(utimensat(AT_FDCWD, b, times, 0) == 0);
  CHECK_OK(fm_fileview_open(b, &w, &err), &err);
  if (!w) return;
  CHECK_OK(fm_fileview_identity(w, &ib, &err), &err);
  CHECK(ib.checksum == ia.checksum && ib.mtime_ns == ia.mtime_ns && ib.size == ia.size);
  fm_fileview_close(w);
  buf[N - 1] ^= 1;
  write_file(b, buf, N);
  CHECK(utimensat(AT_FDCWD, b, times, 0) == 0);
  CHECK_OK(fm_fileview_open(b, &w, &err), &err);
  if (!w) return;
  CHECK_OK(fm_fileview_identity(w, &ib, &err), &err);
  CHECK(ib.checksum != ia.checksum && ib.mtime_ns == ia.mtime_ns);
  fm_fileview_close(w);
  /* the same bytes, another mtime */
  buf[N - 1] ^= 1;
  write_file(b, buf, N);
  struct timespec later[2] = {{0, UTIME_OMIT}, {(time_t)(ia.mtime_ns / 1000000000) + 5, 0}};
  CHECK(utimensat(AT_FDCWD, b, later, 0) == 0);
  CHECK_OK(fm_fileview_open(b, &w, &err), &err);
  if (!w) return;
  CHECK_OK(fm_fileview_identity(w, &ib, &err), &err);
  CHECK(ib.checksum == ia.checksum && ib.mtime_ns != ia.mtime_ns);
  fm_fileview_close(w);
  /* truncated under the view: FM_EIO naming the file */
  CHECK(truncate(a, 1000) == 0);
  fm_err_clear(&err);
  CHECK(fm_fileview_identity(v, &ia, &err) == FM_EIO && has(err.msg, "id_a.bin") && has(err.msg, "truncated"));
  CHECK(fm_fileview_identity(NULL, &ia, &err) == FM_EARG && fm_fileview_identity(v, NULL, &err) == FM_EARG);
  fm_fileview_close(v);
}

int main(void) {
  if (!fm_test_tmpdir(g_dir, sizeof g_dir, "fm_fileview_test.")) return 1;
  FM_RUN(open_reads_bytes);
  FM_RUN(empty_file);
  FM_RUN(truncation_detected);
  FM_RUN(rename_replace_keeps_bytes);
  FM_RUN(errors_and_null);
  FM_RUN(identity);
  fm_test_rmtree(g_dir);
  FM_TEST_END();
}
