/* gs_png.h: PNG files through libpng, for the pictures Jupyter and the
 * --notebook Markdown show (d2l.show_images). Encoding only: gshell never
 * reads PNG. */
#ifndef GS_PNG_H
#define GS_PNG_H

#include <stddef.h>
#include <stdint.h>
#include "core/gs_common.h"

/* Encodes 8-bit pixels, row after row, `channels` bytes each (1 grey,
 * 3 RGB, 4 RGBA), as a PNG in memory. On success *out is a malloc'd
 * buffer of *n bytes the caller frees. Sizes must be 1..GS_PNG_MAX_SIDE. */
#define GS_PNG_MAX_SIDE 16384
gs_status gs_png_encode(const uint8_t *pixels, int width, int height, int channels, uint8_t **out,
                        size_t *n);

#endif
