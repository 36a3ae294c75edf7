/* gs_print.c: gs_tensor_repr, PyTorch's repr(tensor) character for
 * character (the behaviour of PyTorch 1.13 with its default print options:
 * precision 4, threshold 1000, edgeitems 3, linewidth 80).
 *
 * The layout: "tensor(" + body + suffixes + ")", where the body is nested
 * brackets indented under the opening one, every element right-aligned to
 * one common width, long rows wrapped at 80 columns and big tensors
 * (more than 1000 elements) summarised to their first and last 3 entries
 * along every dimension with "..." between. Floating tensors pick one of
 * three styles from the values that are displayed: integral ("1."),
 * fixed ("1.5000") or scientific ("1.0000e-05"). Suffixes name what a
 * reader could not infer: device, size and dtype of empty tensors, a
 * non-default dtype, grad_fn or requires_grad. Parameters get the line
 * "Parameter containing:" first. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/gs_autograd.h"
#include "ops/gs_ops.h"
#include "core/gs_strbuf.h"
#include "io/gs_print.h"

enum { PRECISION = 4, THRESHOLD = 1000, EDGEITEMS = 3, LINEWIDTH = 80 };

/* ---- the printer: the elements (by offset from base) and their format ---- */

typedef struct {
  const char *base;             /* the tensor's first element, in host memory */
  size_t esz;
  gs_dtype dt;
  int ndim;
  const int64_t *shape;
  int64_t stride[GS_MAX_DIMS];  /* in elements */
  bool summarize;               /* more than THRESHOLD elements */
  bool is_float;
  /* what the formatter decided */
  bool int_mode, sci_mode;
  int width;
  /* statistics over the displayed nonzero finite values */
  bool any;
  double minabs, maxabs;
} printer;

typedef void (*elem_fn)(printer *p, int64_t lin);

/* Number of entries shown along a dimension of size n, and the position
 * of the k-th of them (the first and last EDGEITEMS when summarising). */
static int64_t shown_count(const printer *p, int64_t n) {
  return (p->summarize && n > 2 * EDGEITEMS) ? 2 * EDGEITEMS : n;
}

static int64_t shown_index(const printer *p, int64_t n, int64_t k) {
  if (p->summarize && n > 2 * EDGEITEMS && k >= EDGEITEMS) return n - 2 * EDGEITEMS + k;
  return k;
}

/* Calls fn on every element that will appear in the output, in order. */
static void visit(printer *p, int dim, int64_t lin, elem_fn fn) {
  if (dim == p->ndim) { fn(p, lin); return; }
  int64_t n = p->shape[dim], cnt = shown_count(p, n);
  for (int64_t k = 0; k < cnt; k++)
    visit(p, dim + 1, lin + shown_index(p, n, k) * p->stride[dim], fn);
}

static double load_f(const printer *p, int64_t lin) {
  return gs_load_f64(p->dt, p->base + lin * (int64_t)p->esz);
}

/* Python's str() of a float's nonfinite values ("nan" whatever its sign). */
static const char *nonfinite_str(double v) {
  if (isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

/* Writes element lin in the chosen style, unpadded; returns its length.
 * Fixed notation only occurs for magnitudes below 1e8 (the formatter
 * switches to scientific above), so 64 bytes always suffice; snprintf
 * truncates rather than overflows should that ever not hold. */
static int format_elem(const printer *p, int64_t lin, char *out, size_t n) {
  int len;
  if (p->is_float) {
    double v = load_f(p, lin);
    if (!isfinite(v)) len = snprintf(out, n, "%s", nonfinite_str(v));
    else if (p->sci_mode) len = snprintf(out, n, "%.*e", PRECISION, v);
    else if (p->int_mode) len = snprintf(out, n, "%.0f.", v);
    else len = snprintf(out, n, "%.*f", PRECISION, v);
  } else if (p->dt == GS_BOOL) {
    len = snprintf(out, n, "%s", gs_load_i64(p->dt, p->base + lin * (int64_t)p->esz) ? "True" : "False");
  } else {
    len = snprintf(out, n, "%" PRId64, gs_load_i64(p->dt, p->base + lin * (int64_t)p->esz));
  }
  if (len < 0) len = 0;
  if ((size_t)len >= n) len = (int)n - 1;
  return len;
}

/* Pass 1 over floats: range of the nonzero finite values and whether all
 * of them are integral. */
static void stat_elem(printer *p, int64_t lin) {
  double v = load_f(p, lin);
  if (!isfinite(v) || v == 0) return;
  double a = fabs(v);
  if (!p->any) { p->minabs = p->maxabs = a; p->any = true; }
  else {
    if (a < p->minabs) p->minabs = a;
    if (a > p->maxabs) p->maxabs = a;
  }
  if (v != ceil(v)) p->int_mode = false;
}

/* Pass 2: the common width. Floats measure only their nonzero finite
 * values (zeros, nan and inf are padded to it, or overflow it). */
static void width_elem(printer *p, int64_t lin) {
  if (p->is_float) {
    double v = load_f(p, lin);
    if (!isfinite(v) || v == 0) return;
  }
  char buf[64];
  int len = format_elem(p, lin, buf, sizeof buf);
  if (len > p->width) p->width = len;
}

static void setup_formatter(printer *p) {
  p->int_mode = true;
  p->sci_mode = false;
  p->width = 1;
  p->any = false;
  if (p->is_float) {
    visit(p, 0, 0, stat_elem);
    if (!p->any) return;
    double ratio = p->maxabs / p->minabs;
    if (ratio > 1000.0 || p->maxabs > 1.0e8 || (!p->int_mode && p->minabs < 1.0e-4))
      p->sci_mode = true;
  }
  visit(p, 0, 0, width_elem);
}

static void put_elem(printer *p, gs_strbuf *b, int64_t lin) {
  char buf[64];
  int len = format_elem(p, lin, buf, sizeof buf);
  gs_sb_repeat(b, ' ', p->width - len);
  gs_sb_putn(b, buf, (size_t)len);
}

/* The innermost dimension: elements (and " ..." when summarised) joined by
 * ", ", as many per line as fit in LINEWIDTH - indent. */
static void put_vector(printer *p, gs_strbuf *b, int64_t lin, int indent) {
  int64_t n = p->shape[p->ndim - 1], cnt = shown_count(p, n);
  int64_t st = p->stride[p->ndim - 1];
  int64_t per_line = (LINEWIDTH - indent) / (p->width + 2);
  if (per_line < 1) per_line = 1;
  bool dots = cnt < n;
  int64_t item = 0;
  gs_sb_puts(b, "[");
  for (int64_t k = 0; k < cnt; k++) {
    for (int d = 0; d < 1 + (dots && k == EDGEITEMS); d++, item++) {
      if (item > 0) {
        if (item % per_line == 0) {
          gs_sb_puts(b, ",\n");
          gs_sb_repeat(b, ' ', indent + 1);
        } else {
          gs_sb_puts(b, ", ");
        }
      }
      if (dots && k == EDGEITEMS && d == 0) gs_sb_puts(b, " ...");
      else put_elem(p, b, lin + shown_index(p, n, k) * st);
    }
  }
  gs_sb_puts(b, "]");
}

/* Dimension dim and below, for the sub-tensor starting at element lin,
 * whose opening bracket is in column indent. */
static void put_dims(printer *p, gs_strbuf *b, int dim, int64_t lin, int indent) {
  if (b->oom) return;
  if (dim == p->ndim) { put_elem(p, b, lin); return; }
  if (dim == p->ndim - 1) { put_vector(p, b, lin, indent); return; }
  int64_t n = p->shape[dim], cnt = shown_count(p, n);
  int blank_lines = p->ndim - dim - 1;
  gs_sb_puts(b, "[");
  for (int64_t k = 0; k < cnt; k++) {
    int parts = (cnt < n && k == EDGEITEMS) ? 2 : 1;
    for (int d = 0; d < parts; d++) {
      if (k > 0 || d > 0) {
        gs_sb_puts(b, ",");
        gs_sb_repeat(b, '\n', blank_lines);
        gs_sb_repeat(b, ' ', indent + 1);
      }
      if (parts == 2 && d == 0) gs_sb_puts(b, "...");
      else put_dims(p, b, dim + 1, lin + shown_index(p, n, k) * p->stride[dim], indent + 1);
    }
  }
  gs_sb_puts(b, "]");
}

/* The bracketed body of a nonempty tensor; indent is the column of its
 * first bracket. CPU tensors are read in place through their strides (an
 * expanded view may be far bigger than memory); others are copied to the
 * host first. */
static gs_status put_body(const gs_tensor *x, gs_strbuf *b, int indent) {
  gs_tensor *h = NULL;
  if (gs_tensor_on_cpu(x)) gs_tensor_retain(h = (gs_tensor *)x);
  else GS_TRY(gs_to_host_contiguous(x, &h));
  printer p;
  memset(&p, 0, sizeof p);
  p.base = gs_tensor_ptr(h);
  p.dt = h->dtype;
  p.esz = gs_dtype_size(h->dtype);
  p.ndim = h->ndim;
  p.shape = h->shape;
  memcpy(p.stride, h->stride, sizeof p.stride);
  p.summarize = gs_numel(h) > THRESHOLD;
  p.is_float = gs_dtype_is_float(h->dtype);
  setup_formatter(&p);
  put_dims(&p, b, 0, 0, indent);
  gs_tensor_release(h);
  return GS_OK;
}

/* Appends the suffixes ("dtype=torch.float64", ...) after the text that
 * starts at b->s + start: on the same line while it stays within
 * LINEWIDTH (as PyTorch measures it, two more than the line's length),
 * else each on a new line under the body. Then the closing ")". */
static void put_suffixes(gs_strbuf *b, size_t start, char suffixes[][512], int nsuf, int indent) {
  if (b->oom) return;
  size_t len = b->len - start;
  int64_t last_nl = -1;
  for (size_t i = len; i > 0; i--)
    if (b->s[start + i - 1] == '\n') { last_nl = (int64_t)(i - 1); break; }
  int64_t last_line = (int64_t)len - last_nl + 1;
  for (int i = 0; i < nsuf; i++) {
    int64_t slen = (int64_t)strlen(suffixes[i]);
    if (last_line + slen + 2 > LINEWIDTH) {
      gs_sb_puts(b, ",\n");
      gs_sb_repeat(b, ' ', indent);
      last_line = indent + slen;
    } else {
      gs_sb_puts(b, ", ");
      last_line += slen + 2;
    }
    gs_sb_puts(b, suffixes[i]);
  }
  gs_sb_puts(b, ")");
}

/* Python's str(tuple(shape)): "(0,)", "(2, 0, 3)". */
static void shape_tuple(const gs_tensor *x, char *out, size_t n) {
  size_t pos = 0;
  out[0] = '\0';
  pos += (size_t)snprintf(out, n, "(");
  for (int d = 0; d < x->ndim && pos < n; d++)
    pos += (size_t)snprintf(out + pos, n - pos, "%s%" PRId64, d ? ", " : "", x->shape[d]);
  if (pos < n) pos += (size_t)snprintf(out + pos, n - pos, x->ndim == 1 ? ",)" : ")");
}

gs_status gs_tensor_repr(const gs_tensor *x, char **out) {
  if (!out) return gs_error("gs_tensor_repr: no output pointer");
  *out = NULL;
  if (!x || !x->buf) return gs_error("gs_tensor_repr: not a tensor");

  static const char prefix[] = "tensor(";
  const int indent = (int)(sizeof prefix - 1);
  char suffixes[4][512];
  int nsuf = 0;
  int64_t numel = gs_numel(x);

  if (x->buf->device.type != GS_CPU) {
    char dev[64];
    gs_device_name(x->buf->device, dev, sizeof dev);
    snprintf(suffixes[nsuf++], 512, "device='%s'", dev);
  }
  if (numel == 0) {
    /* nothing shows the type of an empty tensor: only float32 goes unsaid */
    if (x->ndim != 1) {
      char tup[480];
      shape_tuple(x, tup, sizeof tup);
      snprintf(suffixes[nsuf++], 512, "size=%s", tup);
    }
    if (x->dtype != GS_FLOAT32)
      snprintf(suffixes[nsuf++], 512, "dtype=torch.%s", gs_dtype_name(x->dtype));
  } else if (x->dtype != GS_FLOAT32 && x->dtype != GS_INT64 && x->dtype != GS_BOOL) {
    snprintf(suffixes[nsuf++], 512, "dtype=torch.%s", gs_dtype_name(x->dtype));
  }
  if (x->grad_fn) {
    const char *name = gs_grad_fn_name(x->grad_fn);
    snprintf(suffixes[nsuf++], 512, "grad_fn=<%s>", name ? name : "UnknownBackward");
  } else if (x->requires_grad) {
    snprintf(suffixes[nsuf++], 512, "requires_grad=True");
  }

  gs_strbuf b = {NULL, 0, 0, false};
  if (x->is_param) gs_sb_puts(&b, "Parameter containing:\n");
  size_t start = b.len;
  gs_sb_puts(&b, prefix);
  if (numel == 0) {
    gs_sb_puts(&b, "[]");
  } else {
    gs_status s = put_body(x, &b, indent);
    if (s != GS_OK) { free(b.s); return s; }
  }
  put_suffixes(&b, start, suffixes, nsuf, indent);
  if (b.oom) {
    free(b.s);
    return gs_error("out of memory while formatting a tensor for printing");
  }
  *out = b.s;
  return GS_OK;
}
