/* cuda_nccl.h: NCCL as the CUDA backend's collective library (the
 * `collectives` slot of gs_backend_cuda; contracts in core/gs_collectives.h). */
#ifndef CUDA_NCCL_H
#define CUDA_NCCL_H

#include "core/gs_collectives.h"

extern const gs_collectives gs_nccl_collectives;

#endif
