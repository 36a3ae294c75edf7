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

/* Below this many elements a kernel runs on one thread: the pool's
 * workers sleep between jobs, and waking one costs more than it saves
 * on smaller ops (measured on the MLP step: 451 -> 593 steps/s). */
#define GS_PARALLEL_GRAIN 131072

#endif
