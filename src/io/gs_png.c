/* gs_png.c: PNG encoding through libpng's write API into a growing memory
 * buffer. libpng reports errors by longjmp; the handler below brings them
 * back here, where they become a gs_error with libpng's message. */
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "io/gs_png.h"

typedef struct {
  uint8_t *data;
  size_t len, cap;
  int oom;
  char msg[200];
} png_sink;

static void sink_write(png_structp png, png_bytep bytes, png_size_t n) {
  png_sink *s = png_get_io_ptr(png);
  if (s->oom) return;
  if (s->len + n > s->cap) {
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < s->len + n) cap *= 2;
    uint8_t *p = realloc(s->data, cap);
    if (!p) {
      s->oom = 1;
      png_error(png, "out of memory");
    }
    s->data = p;
    s->cap = cap;
  }
  memcpy(s->data + s->len, bytes, n);
  s->len += n;
}

static void sink_flush(png_structp png) { (void)png; }

static void on_error(png_structp png, png_const_charp msg) {
  png_sink *s = png_get_error_ptr(png);
  snprintf(s->msg, sizeof s->msg, "%s", msg);
  png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

gs_status gs_png_encode(const uint8_t *pixels, int width, int height, int channels, uint8_t **out,
                        size_t *n) {
  *out = NULL;
  *n = 0;
  if (width < 1 || height < 1 || width > GS_PNG_MAX_SIDE || height > GS_PNG_MAX_SIDE)
    return gs_error("PNG: image size %d x %d (width x height) is outside 1..%d", width, height, GS_PNG_MAX_SIDE);
  int color;
  switch (channels) {
    case 1: color = PNG_COLOR_TYPE_GRAY; break;
    case 3: color = PNG_COLOR_TYPE_RGB; break;
    case 4: color = PNG_COLOR_TYPE_RGB_ALPHA; break;
    default: return gs_error("PNG: %d channels; expected 1 (grey), 3 (RGB) or 4 (RGBA)", channels);
  }
  /* volatile: kept across the longjmp from libpng's error handler */
  png_sink *volatile s = calloc(1, sizeof *s);
  if (!s) return gs_error_code(GS_ERR_OOM, "PNG: out of memory");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, s, on_error, on_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!png || !info) {
    png_destroy_write_struct(png ? &png : NULL, NULL);
    free(s);
    return gs_error_code(GS_ERR_OOM, "PNG: out of memory");
  }
  if (setjmp(png_jmpbuf(png))) {
    gs_status st = s->oom ? gs_error_code(GS_ERR_OOM, "PNG: out of memory")
                          : gs_error("PNG: libpng failed: %s", s->msg);
    png_destroy_write_struct(&png, &info);
    free(s->data);
    free(s);
    return st;
  }
  png_set_write_fn(png, s, sink_write, sink_flush);
  png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, color, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  size_t stride = (size_t)width * (size_t)channels;
  for (int y = 0; y < height; y++) png_write_row(png, (png_const_bytep)(pixels + (size_t)y * stride));
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  *out = s->data;
  *n = s->len;
  free(s);
  return GS_OK;
}
