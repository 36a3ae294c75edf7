/* cpu_random.h: the CPU's Philox random numbers (cpu_random.c). */
#ifndef CPU_RANDOM_H
#define CPU_RANDOM_H

#include "core/gs_backend.h"

gs_status gs_cpu_random(gs_tensor *dst, const gs_random_spec *r, uint64_t seed, uint64_t offset);

#endif
