/* gs_idx_cache.c: the data sets' decompressed copies (gs_idx.h).
 *
 * A copy is named after the source's real path (not the path as given,
 * which depends on the working directory: $PWD is inherited from the
 * parent and wrong in a subprocess) and holds, before the plain IDX
 * file, what it was made from: the source's identity as fstat gave it
 * when it was read, its real path, and a CRC-32 of the IDX bytes. A
 * copy is used only when every field matches the source as it is now and
 * the bytes still match their CRC; anything else rebuilds it. Each file
 * of a data set (images, labels) has its own copy checked against its
 * own source, so a rebuilt images copy never meets stale labels. */
#define _GNU_SOURCE
#include "io/gs_idx.h"
#include "core/gs_file.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define CACHE_MAGIC "GSIDXC2\n"

/* The fixed part of a copy's header, native byte order (a cache belongs
 * to one machine); the real path and then the plain IDX file follow. */
typedef struct {
  char magic[8];
  uint64_t size, ino, dev;
  int64_t mtime_ns, ctime_ns;
  uint32_t crc;      /* CRC-32 of the IDX bytes after the path */
  uint32_t path_len; /* bytes of the real path, no NUL */
} cache_head;

static uint64_t fnv1a64(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static char *cache_name(const char *real, const char *cache_dir) {
  const char *base = strrchr(real, '/');
  base = base ? base + 1 : real;
  size_t blen = strlen(base);
  if (blen > 3 && strcmp(base + blen - 3, ".gz") == 0) blen -= 3;
  if (blen > 120) blen = 120; /* the hash keeps names apart; NAME_MAX is 255 */
  char *out = NULL;
  if (asprintf(&out, "%s/datasets/%.*s-%016llx", cache_dir, (int)blen, base, (unsigned long long)fnv1a64(real)) < 0)
    return NULL;
  return out;
}

char *gs_idx_cache_path(const char *path, const char *cache_dir) {
  char *real = realpath(path, NULL);
  if (!real) { gs_error("%s: %s", path, strerror(errno)); return NULL; }
  char *out = cache_name(real, cache_dir);
  free(real);
  if (!out) gs_error("out of memory naming the cache file for %s", path);
  return out;
}

/* mkdir -p of the directory part of path; errors are left to the write. */
static void make_parent_dirs(const char *path) {
  char *p = strdup(path);
  if (!p) return;
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    mkdir(p, 0755);
    *s = '/';
  }
  free(p);
}

static void identity(const struct stat *st, cache_head *h) {
  memset(h, 0, sizeof *h);
  memcpy(h->magic, CACHE_MAGIC, 8);
  h->size = (uint64_t)st->st_size;
  h->ino = (uint64_t)st->st_ino;
  h->dev = (uint64_t)st->st_dev;
  h->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
  h->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

/* The IDX header of x (read from an IDX file: 1 to GS_IDX_MAX_DIMS dims);
 * returns its length. */
static size_t idx_header(const gs_tensor *x, uint8_t head[static 4 + 4 * GS_IDX_MAX_DIMS]) {
  int nd = x->ndim < GS_IDX_MAX_DIMS ? x->ndim : GS_IDX_MAX_DIMS;
  head[0] = 0, head[1] = 0, head[2] = GS_IDX_UBYTE, head[3] = (uint8_t)nd;
  for (int d = 0; d < nd; d++) {
    uint32_t v = (uint32_t)x->shape[d];
    head[4 + 4 * d] = v >> 24, head[5 + 4 * d] = v >> 16, head[6 + 4 * d] = v >> 8, head[7 + 4 * d] = v;
  }
  return 4 + 4 * (size_t)nd;
}

static void write_cache(const char *cache_path, const struct stat *src, const char *real, const gs_tensor *x) {
  cache_head h;
  identity(src, &h);
  uint8_t head[4 + 4 * GS_IDX_MAX_DIMS];
  size_t hlen = idx_header(x, head), n = (size_t)gs_numel(x);
  uLong crc = crc32_z(0, head, hlen);
  if (n) crc = crc32_z(crc, (const Bytef *)gs_tensor_ptr(x), n);
  h.crc = (uint32_t)crc;
  h.path_len = (uint32_t)strlen(real);
  make_parent_dirs(cache_path);
  gs_atomic_file f;
  if (gs_atomic_open(cache_path, &f) != GS_OK) return;
  if (gs_write_all(f.fd, &h, sizeof h) != 0 || gs_write_all(f.fd, real, h.path_len) != 0 ||
      gs_write_all(f.fd, head, hlen) != 0 || (n && gs_write_all(f.fd, gs_tensor_ptr(x), n) != 0)) {
    gs_atomic_abort(&f);
    return;
  }
  gs_atomic_commit(&f);
}

static bool pread_all(int fd, void *buf, uint64_t n, uint64_t off) {
  uint64_t got = 0;
  while (got < n) {
    uint64_t want = n - got > (1u << 30) ? (1u << 30) : n - got;
    ssize_t r = pread(fd, (char *)buf + got, (size_t)want, (off_t)(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += (uint64_t)r;
  }
  return true;
}

/* The copy at cache_path when it was made from the source described by
 * want (identity and real path) and its bytes match their CRC; false for
 * anything else (missing, stale, damaged, another format). */
static bool read_copy(const char *cache_path, const cache_head *want, const char *real, gs_tensor **out) {
  int fd = open(cache_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  cache_head h;
  size_t plen = strlen(real);
  char *path = NULL;
  gs_tensor *x = NULL;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pread_all(fd, &h, sizeof h, 0) &&
            memcmp(h.magic, want->magic, 8) == 0 && h.size == want->size && h.ino == want->ino &&
            h.dev == want->dev && h.mtime_ns == want->mtime_ns && h.ctime_ns == want->ctime_ns && h.path_len == plen;
  ok = ok && (path = malloc(plen + 1)) != NULL && pread_all(fd, path, plen, sizeof h) && memcmp(path, real, plen) == 0;
  uint64_t off = sizeof h + plen;
  uint8_t head[4 + 4 * GS_IDX_MAX_DIMS];
  ok = ok && pread_all(fd, head, 4, off) && head[0] == 0 && head[1] == 0 && head[2] == GS_IDX_UBYTE && head[3] >= 1 &&
       head[3] <= GS_IDX_MAX_DIMS;
  unsigned ndim = ok ? head[3] : 0;
  ok = ok && pread_all(fd, head + 4, 4 * ndim, off + 4);
  int64_t shape[GS_IDX_MAX_DIMS];
  uint64_t numel = 1, hlen = 4 + 4 * (uint64_t)ndim;
  for (unsigned d = 0; ok && d < ndim; d++) {
    const uint8_t *p = head + 4 + 4 * d;
    shape[d] = (int64_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
    ok = !__builtin_mul_overflow(numel, (uint64_t)shape[d], &numel);
  }
  ok = ok && (uint64_t)st.st_size == off + hlen + numel && numel <= gs_idx_max_bytes(0) &&
       gs_tensor_empty(gs_cpu(), GS_UINT8, (int)ndim, shape, &x) == GS_OK;
  ok = ok && (numel == 0 || pread_all(fd, gs_tensor_ptr(x), numel, off + hlen));
  if (ok) {
    uLong crc = crc32_z(0, head, (z_size_t)hlen);
    if (numel) crc = crc32_z(crc, (const Bytef *)gs_tensor_ptr(x), (z_size_t)numel);
    ok = (uint32_t)crc == h.crc;
  }
  free(path);
  close(fd);
  if (!ok) {
    gs_tensor_release(x);
    return false;
  }
  *out = x;
  return true;
}

gs_status gs_idx_read_cached(const char *path, const char *cache_dir, gs_tensor **out, bool *hit) {
  *hit = false;
  /* O_NONBLOCK: a FIFO is refused by the reader instead of waiting for a writer */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return gs_error("%s: %s", path, strerror(errno));
  struct stat src;
  char *real = NULL, *cache_path = NULL;
  if (fstat(fd, &src) != 0 || !S_ISREG(src.st_mode) || !(real = realpath(path, NULL)) ||
      !(cache_path = cache_name(real, cache_dir))) {
    free(real);
    gs_status s = gs_idx_read_fd(fd, path, out); /* reports a FIFO or a vanished file */
    close(fd);
    return s;
  }
  cache_head want;
  identity(&src, &want);
  gs_status s = GS_OK;
  if (read_copy(cache_path, &want, real, out)) *hit = true;
  else if ((s = gs_idx_read_fd(fd, path, out)) == GS_OK) write_cache(cache_path, &src, real, *out);
  free(real);
  free(cache_path);
  close(fd);
  return s;
}
