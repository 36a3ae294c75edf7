/* gs_idx.c: reading IDX files (gs_idx.h has the format). zlib's gzread
 * reads gzipped and plain files alike, so there is one reading path; the
 * differences are only in what size checks can be made before reading:
 * a plain file's size must equal header + payload exactly, while a
 * gzipped file bounds its decompressed size by deflate's largest ratio. */
#define _GNU_SOURCE
#include "io/gs_idx.h"
#include "core/gs_file.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* deflate never expands less than about 1:1032 (a run of one byte), so a
 * gzip file of n bytes holds at most about 1032 n bytes: a header that
 * announces more is a lie, refused before anything is allocated. */
#define GZ_MAX_RATIO 1040u

static const char *type_name(unsigned t) {
  switch (t) {
  case 0x08: return "unsigned byte";
  case 0x09: return "signed byte";
  case 0x0B: return "int16";
  case 0x0C: return "int32";
  case 0x0D: return "float32";
  case 0x0E: return "float64";
  default: return "unknown";
  }
}

/* Reads up to n bytes; returns how many were read (n unless the data
 * ended), or -1 on a zlib error. */
static int64_t gz_read_full(gzFile gz, void *buf, uint64_t n) {
  uint64_t got = 0;
  while (got < n) {
    uint64_t want = n - got;
    if (want > (1u << 30)) want = 1u << 30;
    int r = gzread(gz, (char *)buf + got, (unsigned)want);
    if (r < 0) return -1;
    if (r == 0) break;
    got += (uint64_t)r;
  }
  return (int64_t)got;
}

/* An error from zlib for the file, or NULL when the stream is fine. A
 * gzip stream that stops early is Z_BUF_ERROR ("unexpected end of file"). */
static const char *gz_problem(gzFile gz, int *code) {
  int e = Z_OK;
  const char *msg = gzerror(gz, &e);
  *code = e;
  return e == Z_OK ? NULL : msg;
}

static gs_status corrupt(gzFile gz, const char *name, const char *where) {
  int code;
  const char *msg = gz_problem(gz, &code);
  if (code == Z_BUF_ERROR)
    return gs_error("%s: truncated gzip data %s (the compressed stream ends early)", name, where);
  /* zlib checks the trailer when the member ends, which for a small file
   * is during the first read: say what failed, not where reading was */
  if (msg && (strstr(msg, "incorrect data check") || strstr(msg, "incorrect length check")))
    return gs_error("%s: damaged gzip file: the %s in its trailer does not match the data (zlib: %s)", name,
                    strstr(msg, "data") ? "CRC-32" : "length", msg);
  return gs_error("%s: corrupt gzip data %s (zlib: %s)", name, where, msg ? msg : "read error");
}

static _Atomic uint64_t max_bytes = GS_IDX_DEFAULT_MAX_BYTES;

uint64_t gs_idx_max_bytes(uint64_t limit) {
  return limit ? atomic_exchange(&max_bytes, limit) : atomic_load(&max_bytes);
}

static gs_status read_gz(gzFile gz, const char *name, bool gzipped, uint64_t file_size, gs_tensor **out,
                         uint32_t *crc, uint64_t *total) {
  uint8_t head[4 + 4 * GS_IDX_MAX_DIMS];
  int64_t got = gz_read_full(gz, head, 4);
  if (got < 0) return corrupt(gz, name, "in the header");
  if (got == 0)
    return gs_error("%s: empty file: expected an IDX header (magic 00 00 08 0N, then N big-endian sizes)", name);
  if (got < 4 || head[0] != 0 || head[1] != 0) {
    char seen[16] = "";
    for (int64_t i = 0; i < got; i++) snprintf(seen + strlen(seen), 4, i ? " %02x" : "%02x", head[i]);
    return gs_error("%s: not an IDX file: it starts with bytes %s, expected the magic 00 00 08 0N "
                    "(00 00 08 03 for images, 00 00 08 01 for labels)", name, seen);
  }
  unsigned type = head[2], ndim = head[3];
  if (type != GS_IDX_UBYTE)
    return gs_error("%s: IDX element type 0x%02x (%s) is not supported: gshell reads unsigned-byte "
                    "files (type 0x08, magic 00 00 08 0N)", name, type, type_name(type));
  if (ndim < 1 || ndim > GS_IDX_MAX_DIMS)
    return gs_error("%s: the IDX header announces %u dimensions, expected 1 to %d (3 for images, 1 for labels)",
                    name, ndim, GS_IDX_MAX_DIMS);
  got = gz_read_full(gz, head + 4, 4 * ndim);
  if (got < 0) return corrupt(gz, name, "in the header");
  if (got < 4 * (int64_t)ndim)
    return gs_error("%s: truncated IDX header: %u dimension sizes announced (%u bytes), the file ends after %lld",
                    name, ndim, 4 * ndim, (long long)got);
  int64_t shape[GS_IDX_MAX_DIMS];
  uint64_t numel = 1;
  bool overflow = false;
  char dims[GS_IDX_MAX_DIMS * 14] = "";
  for (unsigned d = 0; d < ndim; d++) {
    const uint8_t *p = head + 4 + 4 * d;
    uint32_t v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    shape[d] = v;
    size_t len = strlen(dims);
    snprintf(dims + len, sizeof dims - len, d ? " x %u" : "%u", v);
    overflow |= __builtin_mul_overflow(numel, (uint64_t)v, &numel);
  }
  uint64_t header = 4 + 4 * (uint64_t)ndim;
  /* What the file can hold: exactly its remaining bytes when plain, at
   * most the deflate bound when gzipped. */
  uint64_t room = file_size > header ? file_size - header : 0;
  if (gzipped) room = file_size * GZ_MAX_RATIO;
  if (overflow || numel > room) {
    if (gzipped)
      return gs_error("%s: oversized IDX dimensions %s: more bytes than a %llu-byte gzip file can hold (at most %llu)",
                      name, dims, (unsigned long long)file_size, (unsigned long long)room);
    if (overflow)
      return gs_error("%s: oversized IDX dimensions %s: their product overflows", name, dims);
    return gs_error("%s: truncated IDX file: the header (%s) announces %llu bytes of data, the file holds %llu",
                    name, dims, (unsigned long long)numel, (unsigned long long)room);
  }
  uint64_t cap = atomic_load(&max_bytes);
  if (numel > cap)
    return gs_error("%s: the IDX header (%s) announces %llu bytes of data, more than gshell's cap of %llu bytes "
                    "(torchvision.datasets.max_bytes; raise it to read a bigger file)", name, dims,
                    (unsigned long long)numel, (unsigned long long)cap);
  if (!gzipped && numel < room)
    return gs_error("%s: %llu trailing bytes after the IDX data: the header (%s) announces %llu bytes, "
                    "the file holds %llu", name, (unsigned long long)(room - numel), dims,
                    (unsigned long long)numel, (unsigned long long)room);
  gs_tensor *x;
  GS_TRY(gs_tensor_empty(gs_cpu(), GS_UINT8, (int)ndim, shape, &x));
  got = numel ? gz_read_full(gz, gs_tensor_ptr(x), numel) : 0;
  if (got < 0) { gs_tensor_release(x); return corrupt(gz, name, "in the data"); }
  if ((uint64_t)got < numel) {
    int code;
    gz_problem(gz, &code);
    gs_tensor_release(x);
    if (code != Z_OK && code != Z_BUF_ERROR) return corrupt(gz, name, "in the data");
    return gs_error("%s: truncated IDX file: the header (%s) announces %llu bytes of data, %s holds %lld",
                    name, dims, (unsigned long long)numel, gzipped ? "the decompressed content" : "the file",
                    (long long)got);
  }
  /* Nothing may follow; reading on also makes zlib check the gzip CRC. */
  uint8_t extra[4096];
  uint64_t trailing = 0;
  for (;;) {
    got = gz_read_full(gz, extra, sizeof extra);
    if (got <= 0) break;
    trailing += (uint64_t)got;
    if (trailing >= (1u << 20)) break;
  }
  int code;
  gz_problem(gz, &code);
  if (got < 0 || code != Z_OK) { gs_tensor_release(x); return corrupt(gz, name, "at the end"); }
  if (trailing) {
    gs_tensor_release(x);
    return gs_error("%s: %s%llu trailing bytes after the IDX data: the header (%s) announces %llu bytes",
                    name, trailing >= (1u << 20) ? "at least " : "", (unsigned long long)trailing, dims,
                    (unsigned long long)numel);
  }
  /* the CRC-32 and length of everything read, for the caller to match
   * against the gzip trailer */
  uLong c = crc32_z(0, head, (z_size_t)header);
  if (numel) c = crc32_z(c, (const Bytef *)gs_tensor_ptr(x), (z_size_t)numel);
  *crc = (uint32_t)c;
  *total = header + numel;
  *out = x;
  return GS_OK;
}

gs_status gs_idx_read_fd(int fd, const char *name, gs_tensor **out) {
  struct stat st;
  if (fstat(fd, &st) != 0) return gs_error("%s: %s", name, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return gs_error("%s: not a regular file but %s: expected an IDX file", name, gs_file_kind(st.st_mode));
  if (st.st_size == 0)
    return gs_error("%s: empty file: expected an IDX header (magic 00 00 08 0N, then N big-endian sizes)", name);
  uint8_t magic[2] = {0, 0};
  bool gzipped = pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  int fd2 = dup(fd);
  if (fd2 < 0) return gs_error("%s: %s", name, strerror(errno));
  if (lseek(fd2, 0, SEEK_SET) != 0) { close(fd2); return gs_error("%s: cannot seek: %s", name, strerror(errno)); }
  gzFile gz = gzdopen(fd2, "rb");
  if (!gz) { close(fd2); return gs_error("%s: cannot open for reading (out of memory)", name); }
  gzbuffer(gz, 1u << 18);
  uint32_t crc = 0;
  uint64_t total = 0;
  gs_status s = read_gz(gz, name, gzipped, (uint64_t)st.st_size, out, &crc, &total);
  gzclose_r(gz); /* closes fd2 */
  /* zlib stops at the end of the gzip member and ignores bytes after it
   * that are not another member: the file must end with this member's
   * trailer (CRC-32 and length of what was read, little-endian). */
  uint8_t tail[8];
  if (s == GS_OK && gzipped &&
      (st.st_size < 18 || pread(fd, tail, 8, st.st_size - 8) != 8 ||
       ((uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 | (uint32_t)tail[3] << 24) != crc ||
       ((uint32_t)tail[4] | (uint32_t)tail[5] << 8 | (uint32_t)tail[6] << 16 | (uint32_t)tail[7] << 24) !=
           (uint32_t)total)) {
    gs_tensor_release(*out);
    *out = NULL;
    return gs_error("%s: bytes after the gzip data: the file must be one gzip member holding the IDX file and "
                    "nothing after it", name);
  }
  return s;
}

gs_status gs_idx_read(const char *path, gs_tensor **out) {
  /* O_NONBLOCK: a FIFO is refused at once instead of waiting for a writer */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return gs_error("%s: %s", path, strerror(errno));
  gs_status s = gs_idx_read_fd(fd, path, out);
  close(fd);
  return s;
}
