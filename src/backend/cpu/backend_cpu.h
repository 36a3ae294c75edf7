/* backend_cpu.h: the cpu backend's table and its kernels' headers, shared
 * by the cpu and sim backends (a simulated GPU computes on the host). See
 * core/gs_backend.h for the contracts. */
#ifndef BACKEND_CPU_H
#define BACKEND_CPU_H
#include "core/gs_backend.h"
#include "core/gs_devflag.h"

extern const gs_backend gs_backend_cpu;

/* The kernels, one header per file; the sim backend queues the same ones. */
#include "backend/cpu/cpu_binary.h"
#include "backend/cpu/cpu_conv.h"
#include "backend/cpu/cpu_copy.h"
#include "backend/cpu/cpu_gemm.h"
#include "backend/cpu/cpu_norm.h"
#include "backend/cpu/cpu_pool.h"
#include "backend/cpu/cpu_random.h"
#include "backend/cpu/cpu_reduce.h"
#include "backend/cpu/cpu_unary.h"
#include "backend/cpu/cpu_winograd.h" /* Winograd F(2x2, 3x3) (branch wino) */

#endif
