/* gs_safetensors.h: the safetensors file format, engine side (no Lua).
 *
 * A file is: an 8-byte little-endian header length N, N bytes of JSON
 *   {"__metadata__": {"k": "v", ...},
 *    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
 * then the data section; offsets are relative to its start, every tensor
 * is stored contiguous and little-endian, and the tensors tile the data
 * section exactly (no gaps, no overlaps, nothing after the last one), as
 * the reference implementation requires.
 *
 * Reading never trusts the file: gs_st_read_header validates everything
 * (header length, strict JSON, dtypes, shapes against byte counts, offsets
 * against the data section) before any tensor is read, and reads are
 * bounded by the file's real size. Writing is atomic: a temporary file in
 * the target's directory, fsync, rename. */
#ifndef GS_SAFETENSORS_H
#define GS_SAFETENSORS_H

#include "core/gs_tensor.h"

/* The largest header accepted, as in the reference implementation. */
#define GS_ST_MAX_HEADER 100000000ull

typedef struct {
  char *name;                 /* NUL-terminated UTF-8 (NUL bytes refused) */
  gs_dtype dtype;
  int ndim;
  int64_t shape[GS_MAX_DIMS];
  uint64_t begin, end;        /* byte range inside the data section */
} gs_st_info;

typedef struct { char *key, *value; } gs_st_meta;

typedef struct {
  gs_st_info *tensors;        /* in the order the header lists them */
  int ntensors;
  gs_st_meta *meta;           /* "__metadata__", in header order */
  int nmeta;
  uint64_t data_start;        /* 8 + N */
  uint64_t data_len;          /* bytes in the data section */
} gs_st_header;

/* Where bytes come from: a memory block (mem != NULL) or an open file. */
typedef struct {
  const uint8_t *mem;
  int fd;
  uint64_t size;
} gs_st_source;

/* Opens a regular file for reading; errors name the path. */
gs_status gs_st_source_open(const char *path, gs_st_source *src);
gs_st_source gs_st_source_mem(const void *data, size_t len);
void gs_st_source_close(gs_st_source *src);

/* Parses and validates the header JSON (n bytes, not NUL-terminated)
 * against a data section of data_len bytes. On error *h is left empty. */
gs_status gs_st_parse_json(const char *json, size_t n, uint64_t data_len, gs_st_header *h);
/* Reads the length prefix and the header from src and validates both. */
gs_status gs_st_read_header(const gs_st_source *src, gs_st_header *h);
void gs_st_header_free(gs_st_header *h);

/* Index of the tensor called name, or -1. */
int gs_st_find(const gs_st_header *h, const char *name);
/* Value of a metadata key, or NULL. */
const char *gs_st_meta_get(const gs_st_header *h, const char *key);
/* "F32" for GS_FLOAT32 and so on. */
const char *gs_st_dtype_code(gs_dtype t);

/* Tensor i of the header as a fresh contiguous CPU tensor. */
gs_status gs_st_read_tensor(const gs_st_source *src, const gs_st_header *h, int i, gs_tensor **out);

/* Writes n tensors (any device, any layout) and nmeta metadata pairs to
 * path atomically. Names must be distinct, valid UTF-8 and not
 * "__metadata__". On error no file is left behind and an existing file at
 * path is unchanged. */
gs_status gs_st_save(const char *path, int n, const char *const *names, gs_tensor *const *tensors,
                     int nmeta, const char *const *meta_keys, const char *const *meta_values);

/* ---- internal: shared by gs_safetensors.c and gs_safetensors_write.c ---- */
int gs_st_utf8_len(const unsigned char *p, const unsigned char *end); /* 0: invalid */
const char *gs_st_printable(const char *s, char *buf, size_t n);     /* for messages */
/* Converts n bytes of itemsize-byte elements between little-endian and
 * the host's order (nothing to do on little-endian hosts). */
static inline void gs_st_swap_le(void *p, uint64_t n, size_t itemsize) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  uint8_t *b = p;
  for (uint64_t i = 0; itemsize > 1 && i + itemsize <= n; i += itemsize)
    for (size_t k = 0; k < itemsize / 2; k++) {
      uint8_t c = b[i + k]; b[i + k] = b[i + itemsize - 1 - k]; b[i + itemsize - 1 - k] = c;
    }
#else
  (void)p, (void)n, (void)itemsize;
#endif
}

#endif
