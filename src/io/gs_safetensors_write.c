/* gs_safetensors_write.c: writing safetensors files atomically. The file
 * is written to a temporary file in the target's directory, flushed with
 * fsync, then renamed over the target (gs_file.c: symlinks followed,
 * special files refused), so a crash, a full disk or any other error
 * never leaves a half-written file in place of a good one.
 *
 * Layout matches the reference writer: "__metadata__" first, tensors
 * ordered by element size (largest first) then name so that every
 * tensor's data is aligned to its element size, and the header padded
 * with spaces to a multiple of 8 bytes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ops/gs_ops.h"
#include "core/gs_file.h"
#include "io/gs_safetensors.h"
#include "core/gs_strbuf.h"

/* s as a JSON string literal (s is known to be valid UTF-8). */
static void sb_json(gs_strbuf *b, const char *s) {
  gs_sb_putn(b, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char esc[8];
    if (c == '"' || c == '\\') { esc[0] = '\\'; esc[1] = (char)c; gs_sb_putn(b, esc, 2); }
    else if (c < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", c); gs_sb_putn(b, esc, 6); }
    else gs_sb_putn(b, s, 1);
  }
  gs_sb_putn(b, "\"", 1);
}

static bool valid_utf8(const char *s) {
  const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
  while (p < end) {
    int n = gs_st_utf8_len(p, end);
    if (!n) return false;
    p += n;
  }
  return true;
}

static const char *const *sort_names; /* qsort has no context argument */
static gs_tensor *const *sort_tensors;
static int cmp_order(const void *a, const void *b) {
  int i = *(const int *)a, j = *(const int *)b;
  size_t si = gs_dtype_size(sort_tensors[i]->dtype), sj = gs_dtype_size(sort_tensors[j]->dtype);
  if (si != sj) return si > sj ? -1 : 1;
  return strcmp(sort_names[i], sort_names[j]);
}
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static const char *const *sort_keys;
static int cmp_meta(const void *a, const void *b) { return strcmp(sort_keys[*(const int *)a], sort_keys[*(const int *)b]); }

/* Checks names (or metadata keys): valid UTF-8 and distinct. */
static gs_status check_names(int n, const char *const *names, const char *what) {
  char nb[80];
  for (int i = 0; i < n; i++) {
    if (!valid_utf8(names[i])) return gs_error("%s '%s' is not valid UTF-8", what, gs_st_printable(names[i], nb, sizeof nb));
    if (!strcmp(what, "tensor name") && !strcmp(names[i], "__metadata__"))
      return gs_error("'__metadata__' cannot be a tensor name: safetensors reserves it");
  }
  if (n < 2) return GS_OK;
  const char **v = malloc(sizeof *v * (size_t)n);
  if (!v) return gs_error_code(GS_ERR_OOM, "out of host memory");
  memcpy(v, names, sizeof *v * (size_t)n);
  qsort(v, (size_t)n, sizeof *v, cmp_str);
  gs_status s = GS_OK;
  for (int i = 1; i < n && s == GS_OK; i++)
    if (!strcmp(v[i - 1], v[i])) s = gs_error("%s '%s' appears twice", what, gs_st_printable(v[i], nb, sizeof nb));
  free(v);
  return s;
}

/* The header JSON, padded so that 8 + its length is a multiple of 8. */
static gs_status build_header(int n, const char *const *names, gs_tensor *const *tensors, const int *order,
                              int nmeta, const char *const *keys, const char *const *values, const int *morder,
                              gs_strbuf *b) {
  char num[64];
  gs_sb_puts(b, "{");
  if (nmeta > 0) { /* keys sorted: the same objects make the same bytes */
    gs_sb_puts(b, "\"__metadata__\":{");
    for (int i = 0; i < nmeta; i++) {
      if (i) gs_sb_puts(b, ",");
      sb_json(b, keys[morder[i]]);
      gs_sb_puts(b, ":");
      sb_json(b, values[morder[i]]);
    }
    gs_sb_puts(b, "}");
  }
  uint64_t off = 0;
  for (int k = 0; k < n; k++) {
    const gs_tensor *t = tensors[order[k]];
    uint64_t nbytes = (uint64_t)gs_numel(t) * gs_dtype_size(t->dtype);
    if (k || nmeta > 0) gs_sb_puts(b, ",");
    sb_json(b, names[order[k]]);
    gs_sb_puts(b, ":{\"dtype\":\"");
    gs_sb_puts(b, gs_st_dtype_code(t->dtype));
    gs_sb_puts(b, "\",\"shape\":[");
    for (int d = 0; d < t->ndim; d++) {
      snprintf(num, sizeof num, d ? ",%lld" : "%lld", (long long)t->shape[d]);
      gs_sb_puts(b, num);
    }
    snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
             (unsigned long long)(off + nbytes));
    gs_sb_puts(b, num);
    off += nbytes;
  }
  gs_sb_puts(b, "}");
  while ((b->len + 8) % 8) gs_sb_puts(b, " ");
  if (b->oom) return gs_error_code(GS_ERR_OOM, "out of host memory building a safetensors header");
  if (b->len > GS_ST_MAX_HEADER)
    return gs_error("the safetensors header would be %zu bytes, more than readers accept (%llu)", b->len, GS_ST_MAX_HEADER);
  return GS_OK;
}

/* A tensor's bytes, contiguous and little-endian, to fd; errno or -1
 * for an engine error (message already recorded). */
static int write_tensor(int fd, const gs_tensor *t) {
  gs_tensor *h;
  if (gs_to_host_contiguous(t, &h) != GS_OK) return -1;
  size_t n = (size_t)gs_numel(h) * gs_dtype_size(h->dtype);
  int e = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  char chunk[1 << 16];
  for (size_t k = 0; k < n && !e; k += sizeof chunk) {
    size_t m = n - k < sizeof chunk ? n - k : sizeof chunk;
    memcpy(chunk, gs_tensor_ptr(h) + k, m);
    gs_st_swap_le(chunk, m, gs_dtype_size(h->dtype));
    e = gs_write_all(fd, chunk, m);
  }
#else
  if (n) e = gs_write_all(fd, gs_tensor_ptr(h), n);
#endif
  gs_tensor_release(h);
  return e;
}

gs_status gs_st_save(const char *path, int n, const char *const *names, gs_tensor *const *tensors,
                     int nmeta, const char *const *meta_keys, const char *const *meta_values) {
  if (!path || !*path) return gs_error("cannot save: the path is empty");
  GS_TRY(check_names(n, names, "tensor name"));
  GS_TRY(check_names(nmeta, meta_keys, "metadata key"));
  char nb[80];
  for (int i = 0; i < nmeta; i++)
    if (!valid_utf8(meta_values[i]))
      return gs_error("the value of metadata key '%s' is not valid UTF-8", gs_st_printable(meta_keys[i], nb, sizeof nb));
  int *order = malloc(sizeof *order * (size_t)(n ? n : 1)), *morder = malloc(sizeof *morder * (size_t)(nmeta ? nmeta : 1));
  gs_strbuf b = {0};
  gs_status s = GS_OK;
  gs_atomic_file f = {.fd = -1};
  bool opened = false;
  int e;
  if (!order || !morder) { s = gs_error_code(GS_ERR_OOM, "out of host memory"); goto done; }
  for (int i = 0; i < n; i++) order[i] = i;
  sort_names = names, sort_tensors = tensors;
  qsort(order, (size_t)n, sizeof *order, cmp_order);
  for (int i = 0; i < nmeta; i++) morder[i] = i;
  sort_keys = meta_keys;
  qsort(morder, (size_t)nmeta, sizeof *morder, cmp_meta);
  if ((s = build_header(n, names, tensors, order, nmeta, meta_keys, meta_values, morder, &b)) != GS_OK) goto done;

  if ((s = gs_atomic_open(path, &f)) != GS_OK) goto done;
  opened = true;
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)b.len >> (8 * i));
  if ((e = gs_write_all(f.fd, len, 8)) || (e = gs_write_all(f.fd, b.s, b.len))) { s = gs_atomic_io_error(&f, e, "writing"); goto done; }
  for (int k = 0; k < n; k++) {
    e = write_tensor(f.fd, tensors[order[k]]);
    if (e < 0) { s = GS_ERR; goto done; }
    if (e) { s = gs_atomic_io_error(&f, e, "writing"); goto done; }
  }
  opened = false; /* commit removes the temporary file itself on failure */
  s = gs_atomic_commit(&f);
done:
  if (opened) gs_atomic_abort(&f);
  free(order);
  free(morder);
  free(b.s);
  return s;
}
