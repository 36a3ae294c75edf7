/* backend_sim.h: simulated CUDA devices (backend_sim.c), for the device
 * registry. Everything else about them goes through their gs_backend
 * table, like any other device. */
#ifndef BACKEND_SIM_H
#define BACKEND_SIM_H

#include "core/gs_backend.h"

extern const gs_backend gs_backend_sim;
/* The same devices with host_memory off: copies between them and the cpu
 * take the path of a real GPU (memcpy slots, staging). For specs. */
extern const gs_backend gs_backend_sim_staged;

/* (Re)creates n simulated devices, each capped at `cap` bytes (0: 16 GiB).
 * Cached blocks of the old devices are released first. */
void gs_sim_configure(int n, size_t cap);
/* GSHELL_SIM_CONTEXT_MS as read at configuration (0: off): a device's
 * first use then sleeps that long, modelling a CUDA context's creation. */
int gs_sim_context_ms(void);

#endif
