/* cpu_winograd.h: 3x3, stride-1 float32 convolutions by Winograd's
 * F(2x2, 3x3) (cpu_winograd.c); contracts at gs_backend.h's conv3x3_wino
 * slots. */
#ifndef CPU_WINOGRAD_H
#define CPU_WINOGRAD_H

#include "core/gs_backend.h"

gs_status gs_cpu_conv3x3_wino(gs_tensor *y, const gs_tensor *x, const gs_tensor *w, const gs_tensor *b, int64_t ph,
                              int64_t pw, bool flip);
gs_status gs_cpu_conv3x3_wino_gw(gs_tensor *gw, const gs_tensor *x, const gs_tensor *gy, int64_t ph, int64_t pw);
/* Frees the cached scratch block (tests and leak checkers). */
void gs_cpu_wino_release_cache(void);

#endif
