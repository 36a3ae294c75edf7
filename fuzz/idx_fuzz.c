/* idx_fuzz.c: libFuzzer target for the IDX reader (src/io/gs_idx.c).
 * Each input is a whole file, read through the same path as a file on
 * disk (an in-memory file, memfd): plain or gzipped, whatever the bytes,
 * the reader must return an error or a uint8 tensor whose size is exactly
 * what the header announced, never read out of bounds, leak or hit
 * undefined behaviour. Build and run with `sh fuzz/run.sh SECONDS 1 idx`. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "io/gs_idx.h"

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("idx", MFD_CLOEXEC);
  if (fd < 0) abort();
  for (size_t off = 0; off < size;) {
    ssize_t w = write(fd, data + off, size - off);
    if (w <= 0) abort();
    off += (size_t)w;
  }
  gs_tensor *x;
  if (gs_idx_read_fd(fd, "fuzz input", &x) == GS_OK) {
    if (x->dtype != GS_UINT8 || x->ndim < 1 || x->ndim > GS_IDX_MAX_DIMS) abort();
    /* a plain file: the header and the payload are the whole input */
    int64_t n = gs_numel(x);
    bool gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    if (!gz && (uint64_t)n + 4 + 4 * (uint64_t)x->ndim != size) abort();
    if (!gz && n && memcmp(gs_tensor_ptr(x), data + 4 + 4 * x->ndim, (size_t)n) != 0) abort();
    uint64_t acc = 0;
    const uint8_t *p = n ? (const uint8_t *)gs_tensor_ptr(x) : NULL; /* an empty tensor may have no data */
    for (int64_t k = 0; k < n; k++) acc += p[k];
    sink += acc;
    gs_tensor_release(x);
  }
  close(fd);
  return 0;
}
