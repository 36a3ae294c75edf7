/* gs_safetensors.c: reading safetensors files (gs_safetensors.h has the
 * format). The header parser is a strict JSON parser for exactly this
 * shape of document -- an object of tensor entries and one optional
 * "__metadata__" object of strings -- so it never recurses: anything
 * nested deeper than the format allows is an error at the first token
 * that does not fit. Every byte read is bounds-checked against the
 * buffer or the file's real size. Writing is in gs_safetensors_write.c. */
#define _GNU_SOURCE
#include "core/gs_file.h"
#include "io/gs_safetensors.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct { const char *code; gs_dtype t; } CODES[] = {
  {"F32", GS_FLOAT32}, {"F64", GS_FLOAT64}, {"F16", GS_FLOAT16}, {"BF16", GS_BFLOAT16},
  {"I64", GS_INT64}, {"I32", GS_INT32}, {"I16", GS_INT16}, {"I8", GS_INT8},
  {"U8", GS_UINT8}, {"BOOL", GS_BOOL}};

const char *gs_st_dtype_code(gs_dtype t) {
  for (size_t i = 0; i < sizeof CODES / sizeof CODES[0]; i++)
    if (CODES[i].t == t) return CODES[i].code;
  return "?";
}

/* Length of the valid UTF-8 sequence at p (1 to 4), 0 when invalid:
 * overlong forms, surrogates and code points past U+10FFFF are refused. */
int gs_st_utf8_len(const unsigned char *p, const unsigned char *end) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  int n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || end - p < n) return 0;
  unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
  if (c == 0xE0) lo = 0xA0;
  else if (c == 0xED) hi = 0x9F;
  else if (c == 0xF0) lo = 0x90;
  else if (c == 0xF4) hi = 0x8F;
  if (p[1] < lo || p[1] > hi) return 0;
  for (int i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return n;
}

/* A name from an untrusted file made safe to print: control bytes become
 * '?', long names are cut. */
const char *gs_st_printable(const char *s, char *buf, size_t n) {
  size_t i = 0;
  for (; s[i] && i + 4 < n; i++) buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
  if (s[i]) { memcpy(buf + i, "...", 4); return buf; }
  buf[i] = '\0';
  return buf;
}

/* ---- the JSON header parser ---- */

typedef struct { const char *start, *p, *end; } jp;

static gs_status jerr(const jp *j, const char *what) {
  if (j->p >= j->end)
    return gs_error("invalid safetensors header: %s, but the header ended (byte %zu)", what,
                    (size_t)(j->end - j->start));
  unsigned char c = (unsigned char)*j->p;
  if (c >= 0x21 && c < 0x7f)
    return gs_error("invalid safetensors header: %s, got '%c' at byte %zu", what, c, (size_t)(j->p - j->start));
  return gs_error("invalid safetensors header: %s, got byte 0x%02x at byte %zu", what, c, (size_t)(j->p - j->start));
}

static void skip_ws(jp *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static bool accept(jp *j, char c) {
  skip_ws(j);
  if (j->p < j->end && *j->p == c) { j->p++; return true; }
  return false;
}

static int hex4(const char *p) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/* A JSON string into a fresh NUL-terminated buffer. The closing quote is
 * found first, so every escape is known to end before it; decoded text is
 * never longer than its source. NUL characters are refused. */
static gs_status parse_string(jp *j, char **out) {
  *out = NULL;
  skip_ws(j);
  if (j->p >= j->end || *j->p != '"') return jerr(j, "expected a string");
  const char *q = ++j->p;
  while (q < j->end && *q != '"') {
    if (*q == '\\' && j->end - q < 2) { q = j->end; break; }
    q += *q == '\\' ? 2 : 1;
  }
  if (q >= j->end) return jerr(j, "unterminated string");
  char *buf = malloc((size_t)(q - j->p) + 1);
  if (!buf) return gs_error_code(GS_ERR_OOM, "out of host memory reading a safetensors header");
  size_t n = 0;
  while (j->p < q) {
    unsigned char c = (unsigned char)*j->p;
    if (c < 0x20) { free(buf); return jerr(j, "control character inside a string"); }
    if (c >= 0x80) {
      int len = gs_st_utf8_len((const unsigned char *)j->p, (const unsigned char *)q);
      if (!len) { free(buf); return jerr(j, "invalid UTF-8 inside a string"); }
      memcpy(buf + n, j->p, (size_t)len);
      n += (size_t)len, j->p += len;
      continue;
    }
    if (c != '\\') { buf[n++] = (char)c; j->p++; continue; }
    const char *e = ++j->p; /* e < q: the scan above skipped escaped characters */
    const char *simple = strchr("\"\\/bfnrt", *e), *repl = "\"\\/\b\f\n\r\t";
    if (*e != 'u') {
      if (!simple || !*e) { free(buf); return jerr(j, "invalid escape in a string"); }
      buf[n++] = repl[simple - "\"\\/bfnrt"];
      j->p++;
      continue;
    }
    long cp = q - e > 4 ? hex4(e + 1) : -1;
    if (cp < 0) { free(buf); return jerr(j, "invalid \\u escape"); }
    j->p = e + 5;
    if (cp >= 0xD800 && cp <= 0xDBFF) { /* a surrogate pair */
      long lo = q - j->p > 5 && j->p[0] == '\\' && j->p[1] == 'u' ? hex4(j->p + 2) : -1;
      if (lo < 0xDC00 || lo > 0xDFFF) { free(buf); return jerr(j, "unpaired UTF-16 surrogate in a \\u escape"); }
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      j->p += 6;
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      free(buf);
      return jerr(j, "unpaired UTF-16 surrogate in a \\u escape");
    }
    if (cp == 0) { free(buf); return jerr(j, "NUL character (\\u0000) inside a string"); }
    if (cp < 0x80) buf[n++] = (char)cp;
    else if (cp < 0x800) { buf[n++] = (char)(0xC0 | cp >> 6); buf[n++] = (char)(0x80 | (cp & 0x3F)); }
    else if (cp < 0x10000) {
      buf[n++] = (char)(0xE0 | cp >> 12); buf[n++] = (char)(0x80 | (cp >> 6 & 0x3F));
      buf[n++] = (char)(0x80 | (cp & 0x3F));
    } else {
      buf[n++] = (char)(0xF0 | cp >> 18); buf[n++] = (char)(0x80 | (cp >> 12 & 0x3F));
      buf[n++] = (char)(0x80 | (cp >> 6 & 0x3F)); buf[n++] = (char)(0x80 | (cp & 0x3F));
    }
  }
  j->p = q + 1;
  buf[n] = '\0';
  *out = buf;
  return GS_OK;
}

/* A non-negative JSON integer (no sign, fraction, exponent or leading 0). */
static gs_status parse_uint(jp *j, uint64_t *out) {
  skip_ws(j);
  if (j->p < j->end && *j->p == '-') return jerr(j, "negative numbers are not allowed here");
  if (j->p >= j->end || *j->p < '0' || *j->p > '9') return jerr(j, "expected a non-negative integer");
  uint64_t v = 0;
  const char *s = j->p;
  while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
    unsigned d = (unsigned)(*j->p - '0');
    if (v > (UINT64_MAX - d) / 10) return jerr(j, "integer too large");
    v = v * 10 + d;
    j->p++;
  }
  if (*s == '0' && j->p - s > 1) { j->p = s; return jerr(j, "integers must not have leading zeros"); }
  if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E')) return jerr(j, "expected an integer");
  *out = v;
  return GS_OK;
}

/* [n, n, ...] with at most max items (exactly max when exact). */
static gs_status parse_uint_array(jp *j, uint64_t *vals, int max, bool exact, int *count, const char *what) {
  if (!accept(j, '[')) return jerr(j, what);
  int n = 0;
  if (!accept(j, ']')) {
    do {
      if (n == max) {
        if (exact) return jerr(j, "data_offsets must hold exactly two integers");
        return gs_error("invalid safetensors header: a shape has more than %d dimensions, the most gshell "
                        "supports", GS_MAX_DIMS);
      }
      GS_TRY(parse_uint(j, &vals[n++]));
    } while (accept(j, ','));
    if (!accept(j, ']')) return jerr(j, "expected ',' or ']' in an array");
  }
  if (exact && n != max) return jerr(j, "data_offsets must hold exactly two integers");
  *count = n;
  return GS_OK;
}

/* {"dtype": "F32", "shape": [...], "data_offsets": [b, e]}, keys in any order. */
static gs_status parse_info(jp *j, gs_st_info *t) {
  char nb[80];
  if (!accept(j, '{')) return jerr(j, "expected a tensor entry object {\"dtype\", \"shape\", \"data_offsets\"}");
  bool have[3] = {false, false, false};
  if (!accept(j, '}')) {
    do {
      char *key, *code;
      GS_TRY(parse_string(j, &key));
      int k = !strcmp(key, "dtype") ? 0 : !strcmp(key, "shape") ? 1 : !strcmp(key, "data_offsets") ? 2 : -1;
      if (k < 0 || have[k]) {
        gs_status s = gs_error("invalid safetensors header: tensor '%s' has %s key '%s'",
                               gs_st_printable(t->name, nb, sizeof nb), k < 0 ? "an unknown" : "a repeated", key);
        free(key);
        return s;
      }
      free(key);
      have[k] = true;
      if (!accept(j, ':')) return jerr(j, "expected ':'");
      if (k == 0) {
        GS_TRY(parse_string(j, &code));
        size_t i = 0;
        while (i < sizeof CODES / sizeof CODES[0] && strcmp(CODES[i].code, code)) i++;
        if (i == sizeof CODES / sizeof CODES[0]) {
          char cb[40];
          gs_status s = gs_error("tensor '%s' has dtype '%s', which gshell does not support (supported: F32 "
                                 "F64 F16 BF16 I64 I32 I16 I8 U8 BOOL)",
                                 gs_st_printable(t->name, nb, sizeof nb), gs_st_printable(code, cb, sizeof cb));
          free(code);
          return s;
        }
        free(code);
        t->dtype = CODES[i].t;
      } else if (k == 1) {
        uint64_t dims[GS_MAX_DIMS];
        GS_TRY(parse_uint_array(j, dims, GS_MAX_DIMS, false, &t->ndim, "expected the shape array"));
        for (int d = 0; d < t->ndim; d++) {
          if (dims[d] > (uint64_t)INT64_MAX)
            return gs_error("invalid safetensors header: tensor '%s' has an absurd dimension",
                            gs_st_printable(t->name, nb, sizeof nb));
          t->shape[d] = (int64_t)dims[d];
        }
      } else {
        uint64_t off[2];
        int n;
        GS_TRY(parse_uint_array(j, off, 2, true, &n, "expected the data_offsets array"));
        t->begin = off[0], t->end = off[1];
      }
    } while (accept(j, ','));
    if (!accept(j, '}')) return jerr(j, "expected ',' or '}' in a tensor entry");
  }
  if (!have[0] || !have[1] || !have[2])
    return gs_error("invalid safetensors header: tensor '%s' lacks \"%s\"", gs_st_printable(t->name, nb, sizeof nb),
                    !have[0] ? "dtype" : !have[1] ? "shape" : "data_offsets");
  return GS_OK;
}

/* Grows *arr (of *cap items of size sz) so that one more fits. */
static bool grow(void **arr, int *cap, int n, size_t sz) {
  if (n < *cap) return true;
  if (*cap > (1 << 28)) return false;
  int nc = *cap ? *cap * 2 : 8;
  void *p = realloc(*arr, (size_t)nc * sz);
  if (!p) return false;
  *arr = p, *cap = nc;
  return true;
}

/* "__metadata__": {"key": "value", ...} (null is accepted as empty). */
static gs_status parse_meta(jp *j, gs_st_header *h, int *cap) {
  skip_ws(j);
  if (j->end - j->p >= 4 && !memcmp(j->p, "null", 4)) { j->p += 4; return GS_OK; }
  if (!accept(j, '{')) return jerr(j, "__metadata__ must be an object of strings");
  if (accept(j, '}')) return GS_OK;
  do {
    if (!grow((void **)&h->meta, cap, h->nmeta, sizeof *h->meta))
      return gs_error_code(GS_ERR_OOM, "out of host memory reading a safetensors header");
    gs_st_meta *m = &h->meta[h->nmeta];
    m->key = m->value = NULL;
    h->nmeta++;
    GS_TRY(parse_string(j, &m->key));
    if (!accept(j, ':')) return jerr(j, "expected ':'");
    skip_ws(j);
    if (j->p < j->end && *j->p != '"') return jerr(j, "__metadata__ values must be strings");
    GS_TRY(parse_string(j, &m->value));
  } while (accept(j, ','));
  if (!accept(j, '}')) return jerr(j, "expected ',' or '}' in __metadata__");
  return GS_OK;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp((*(gs_st_info *const *)a)->name, (*(gs_st_info *const *)b)->name);
}
static int cmp_range(const void *a, const void *b) {
  const gs_st_info *x = *(gs_st_info *const *)a, *y = *(gs_st_info *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}
static int cmp_meta(const void *a, const void *b) {
  return strcmp(((const gs_st_meta *)a)->key, ((const gs_st_meta *)b)->key);
}

/* Element count of a shape, or -1 when it (or a stride) would overflow:
 * zero dims are counted as 1 so that [0, 2^40, 2^40] is refused too. */
static int64_t safe_numel(int ndim, const int64_t *shape, size_t itemsize) {
  int64_t n = 1;
  bool zero = false;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] == 0) { zero = true; continue; }
    if (n > INT64_MAX / 16 / shape[i]) return -1;
    n *= shape[i];
  }
  (void)itemsize; /* itemsize <= 8 < 16: n * itemsize cannot overflow */
  return zero ? 0 : n;
}

/* The checks that need the whole header: sizes against offsets, offsets
 * against the data section, distinct names. */
static gs_status validate(gs_st_header *h, uint64_t data_len) {
  char nb[80], nb2[80];
  gs_status s = GS_OK;
  for (int i = 0; i < h->ntensors; i++) {
    gs_st_info *t = &h->tensors[i];
    const char *nm = gs_st_printable(t->name, nb, sizeof nb);
    if (t->begin > t->end)
      return gs_error("invalid safetensors file: data_offsets [%llu, %llu] of tensor '%s' end before they begin", (unsigned long long)t->begin, (unsigned long long)t->end, nm);
    if (t->end > data_len)
      return gs_error("invalid safetensors file: data_offsets [%llu, %llu] of tensor '%s' lie outside the data "
                      "section (%llu bytes): the file is truncated or corrupt",
                      (unsigned long long)t->begin, (unsigned long long)t->end, nm, (unsigned long long)data_len);
    size_t es = gs_dtype_size(t->dtype);
    int64_t numel = safe_numel(t->ndim, t->shape, es);
    if (numel < 0) return gs_error("invalid safetensors file: the shape of tensor '%s' has too many elements", nm);
    if ((uint64_t)numel * es != t->end - t->begin)
      return gs_error("invalid safetensors file: tensor '%s' is %s with %lld elements (%llu bytes) but its "
                      "data_offsets [%llu, %llu] hold %llu bytes", nm, gs_st_dtype_code(t->dtype),
                      (long long)numel, (unsigned long long)numel * es, (unsigned long long)t->begin,
                      (unsigned long long)t->end, (unsigned long long)(t->end - t->begin));
  }
  gs_st_info **v = malloc(sizeof *v * (size_t)(h->ntensors ? h->ntensors : 1));
  if (!v) return gs_error_code(GS_ERR_OOM, "out of host memory reading a safetensors header");
  for (int i = 0; i < h->ntensors; i++) v[i] = &h->tensors[i];
  qsort(v, (size_t)h->ntensors, sizeof *v, cmp_name);
  for (int i = 1; i < h->ntensors && s == GS_OK; i++)
    if (!strcmp(v[i - 1]->name, v[i]->name))
      s = gs_error("invalid safetensors header: tensor '%s' appears twice", gs_st_printable(v[i]->name, nb, sizeof nb));
  qsort(v, (size_t)h->ntensors, sizeof *v, cmp_range);
  uint64_t pos = 0;
  for (int i = 0; i < h->ntensors && s == GS_OK; i++) {
    if (v[i]->begin < pos)
      s = gs_error("invalid safetensors file: the data of tensors '%s' and '%s' overlap",
                   gs_st_printable(v[i - 1]->name, nb, sizeof nb), gs_st_printable(v[i]->name, nb2, sizeof nb2));
    else if (v[i]->begin > pos)
      s = gs_error("invalid safetensors file: %llu unused bytes before the data of tensor '%s'",
                   (unsigned long long)(v[i]->begin - pos), gs_st_printable(v[i]->name, nb, sizeof nb));
    pos = v[i]->end;
  }
  free(v);
  if (s == GS_OK && pos != data_len)
    s = gs_error("invalid safetensors file: the data section has %llu bytes but the tensors cover %llu",
                 (unsigned long long)data_len, (unsigned long long)pos);
  if (s != GS_OK || h->nmeta < 2) return s;
  gs_st_meta *m = malloc(sizeof *m * (size_t)h->nmeta);
  if (!m) return gs_error_code(GS_ERR_OOM, "out of host memory reading a safetensors header");
  memcpy(m, h->meta, sizeof *m * (size_t)h->nmeta);
  qsort(m, (size_t)h->nmeta, sizeof *m, cmp_meta);
  for (int i = 1; i < h->nmeta && s == GS_OK; i++)
    if (!strcmp(m[i - 1].key, m[i].key))
      s = gs_error("invalid safetensors header: __metadata__ key '%s' appears twice", gs_st_printable(m[i].key, nb, sizeof nb));
  free(m);
  return s;
}

gs_status gs_st_parse_json(const char *json, size_t n, uint64_t data_len, gs_st_header *h) {
  memset(h, 0, sizeof *h);
  jp j = {json, json, json + n};
  int cap = 0, mcap = 0;
  bool meta_seen = false;
  gs_status s = GS_OK;
  if (n == 0 || json[0] != '{') { s = jerr(&j, "the header must start with '{'"); goto done; }
  j.p++;
  if (!accept(&j, '}')) {
    do {
      char *key;
      if ((s = parse_string(&j, &key)) != GS_OK) goto done;
      if (!accept(&j, ':')) { free(key); s = jerr(&j, "expected ':'"); goto done; }
      if (!strcmp(key, "__metadata__")) {
        free(key);
        if (meta_seen) { s = gs_error("invalid safetensors header: __metadata__ appears twice"); goto done; }
        meta_seen = true;
        if ((s = parse_meta(&j, h, &mcap)) != GS_OK) goto done;
        continue;
      }
      if (!grow((void **)&h->tensors, &cap, h->ntensors, sizeof *h->tensors)) {
        free(key);
        s = gs_error_code(GS_ERR_OOM, "out of host memory reading a safetensors header");
        goto done;
      }
      gs_st_info *t = &h->tensors[h->ntensors++];
      memset(t, 0, sizeof *t);
      t->name = key;
      if ((s = parse_info(&j, t)) != GS_OK) goto done;
    } while (accept(&j, ','));
    if (!accept(&j, '}')) { s = jerr(&j, "expected ',' or '}' after a header entry"); goto done; }
  }
  skip_ws(&j);
  if (j.p != j.end) { s = jerr(&j, "expected the end of the header after its closing '}'"); goto done; }
  s = validate(h, data_len);
done:
  if (s != GS_OK) gs_st_header_free(h);
  return s;
}

void gs_st_header_free(gs_st_header *h) {
  for (int i = 0; i < h->ntensors; i++) free(h->tensors[i].name);
  for (int i = 0; i < h->nmeta; i++) { free(h->meta[i].key); free(h->meta[i].value); }
  free(h->tensors);
  free(h->meta);
  memset(h, 0, sizeof *h);
}

int gs_st_find(const gs_st_header *h, const char *name) {
  for (int i = 0; i < h->ntensors; i++)
    if (!strcmp(h->tensors[i].name, name)) return i;
  return -1;
}

const char *gs_st_meta_get(const gs_st_header *h, const char *key) {
  for (int i = 0; i < h->nmeta; i++)
    if (!strcmp(h->meta[i].key, key)) return h->meta[i].value;
  return NULL;
}

/* ---- sources ---- */

gs_st_source gs_st_source_mem(const void *data, size_t len) {
  gs_st_source s = {(const uint8_t *)data, -1, len};
  return s;
}

gs_status gs_st_source_open(const char *path, gs_st_source *src) {
  memset(src, 0, sizeof *src);
  src->fd = -1;
  /* O_NONBLOCK: opening a FIFO with no writer would wait forever; the
   * file type is checked before anything is read */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return gs_error("cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return gs_error("cannot read '%s': %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return gs_error("cannot load '%s': it is %s, not a regular file", path, gs_file_kind(st.st_mode));
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  src->fd = fd;
  src->size = (uint64_t)st.st_size;
  return GS_OK;
}

void gs_st_source_close(gs_st_source *src) {
  if (!src->mem && src->fd >= 0) close(src->fd);
  src->fd = -1;
}

/* n bytes at offset off; the range is checked against the source's size. */
static gs_status src_read(const gs_st_source *src, uint64_t off, void *dst, uint64_t n) {
  if (off > src->size || n > src->size - off)
    return gs_error("invalid safetensors file: a read of %llu bytes at %llu runs past its end (%llu bytes)",
                    (unsigned long long)n, (unsigned long long)off, (unsigned long long)src->size);
  if (src->mem) { if (n) memcpy(dst, src->mem + off, (size_t)n); return GS_OK; }
  char *p = dst;
  while (n > 0) {
    size_t chunk = n > (1u << 30) ? (1u << 30) : (size_t)n;
    ssize_t r = pread(src->fd, p, chunk, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return gs_error("error reading the file: %s", strerror(errno));
    if (r == 0) return gs_error("the file ended early (was it changed while being read?)");
    p += r, off += (uint64_t)r, n -= (uint64_t)r;
  }
  return GS_OK;
}

gs_status gs_st_read_header(const gs_st_source *src, gs_st_header *h) {
  memset(h, 0, sizeof *h);
  if (src->size < 8)
    return gs_error("not a safetensors file: it has %llu bytes, fewer than the 8-byte header length",
                    (unsigned long long)src->size);
  uint8_t lenb[8];
  GS_TRY(src_read(src, 0, lenb, 8));
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | lenb[i];
  if (n > GS_ST_MAX_HEADER)
    return gs_error("not a safetensors file, or a corrupt one: its header length %llu is absurd (at most %llu "
                    "accepted)", (unsigned long long)n, GS_ST_MAX_HEADER);
  if (n > src->size - 8)
    return gs_error("invalid safetensors file: its header length %llu runs past the end of the file (%llu bytes): "
                    "the file is truncated or corrupt", (unsigned long long)n, (unsigned long long)src->size);
  char *json = malloc(n ? (size_t)n : 1);
  if (!json) return gs_error_code(GS_ERR_OOM, "out of host memory reading a safetensors header");
  gs_status s = src_read(src, 8, json, n);
  if (s == GS_OK) s = gs_st_parse_json(json, (size_t)n, src->size - 8 - n, h);
  free(json);
  if (s == GS_OK) h->data_start = 8 + n, h->data_len = src->size - 8 - n;
  return s;
}

gs_status gs_st_read_tensor(const gs_st_source *src, const gs_st_header *h, int i, gs_tensor **out) {
  if (i < 0 || i >= h->ntensors) return gs_error("safetensors: no tensor number %d", i);
  const gs_st_info *t = &h->tensors[i];
  gs_tensor *x;
  GS_TRY(gs_tensor_empty(gs_cpu(), t->dtype, t->ndim, t->shape, &x));
  uint64_t n = t->end - t->begin;
  if (n != (uint64_t)gs_numel(x) * gs_dtype_size(t->dtype) || t->end > h->data_len) {
    gs_tensor_release(x);
    return gs_error("invalid safetensors file: tensor sizes do not match"); /* validated before: defensive */
  }
  if (n == 0) { *out = x; return GS_OK; } /* an empty tensor may have no data pointer */
  uint8_t *p = (uint8_t *)gs_tensor_ptr(x);
  gs_status s = src_read(src, h->data_start + t->begin, p, n);
  if (s != GS_OK) { gs_tensor_release(x); return s; }
  if (t->dtype == GS_BOOL) /* any non-zero byte is true; kernels expect 0 or 1 */
    for (uint64_t k = 0; k < n; k++) p[k] = p[k] != 0;
  gs_st_swap_le(p, n, gs_dtype_size(t->dtype));
  *out = x;
  return GS_OK;
}
