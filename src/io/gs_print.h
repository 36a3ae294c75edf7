/* gs_print.h: PyTorch's repr(tensor) (gs_print.c). */
#ifndef GS_PRINT_H
#define GS_PRINT_H

#include "core/gs_tensor.h"

/* x's repr as PyTorch prints it: a malloc'd string the caller frees. */
gs_status gs_tensor_repr(const gs_tensor *x, char **out);

#endif
