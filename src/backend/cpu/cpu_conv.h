/* cpu_conv.h: the convolution's im2col and col2im on the CPU (cpu_conv.c;
 * contracts in gs_backend.h). */
#ifndef CPU_CONV_H
#define CPU_CONV_H

#include "core/gs_backend.h"

gs_status gs_cpu_im2col(gs_tensor *col, const gs_tensor *x, const gs_conv_geom *g);
gs_status gs_cpu_col2im(gs_tensor *x, const gs_tensor *col, const gs_conv_geom *g);

#endif
