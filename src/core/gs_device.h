/* gs_device.h: device identity ("cpu", "cuda:1") and the registry that
 * maps a device to the backend that runs it. CUDA ordinals are real GPUs,
 * or simulated ones when gs_devices_init was asked for some. */
#ifndef GS_DEVICE_H
#define GS_DEVICE_H

#include "core/gs_common.h"

typedef enum { GS_CPU = 0, GS_CUDA = 1 } gs_device_type;

/* CUDA ordinals, real or simulated, are below this. */
#define GS_MAX_CUDA_DEVICES 64

typedef struct {
  gs_device_type type;
  int index; /* CPU: 0. CUDA: ordinal >= 0, or -1 for "cuda" (current device) */
} gs_device;

struct gs_backend;

/* The backends the core hands out. The core names none of them: the one
 * file that does (src/backend/registry.c) registers each here at start-up,
 * before gs_devices_init; a kind left unregistered (CUDA in a CPU-only
 * build) has no backend. */
typedef enum { GS_BACKEND_CPU, GS_BACKEND_SIM, GS_BACKEND_SIM_STAGED, GS_BACKEND_CUDA, GS_BACKEND_KINDS } gs_backend_kind;
void gs_backend_register(gs_backend_kind kind, const struct gs_backend *be);
/* The backend registered for a kind (NULL when none), whatever the
 * devices are now: torch.cuda.nccl.version() asks real GPUs' backend
 * even while simulated ones stand in for them. */
const struct gs_backend *gs_backend_of_kind(gs_backend_kind kind);
/* The simulated devices' modelled context cost in ms (0: none or off). */
int gs_devices_context_ms(void);

/* sim_gpus > 0 makes that many simulated CUDA devices (and hides real
 * ones); sim_mem is each one's cap in bytes, 0 for none. Called once at
 * start; nothing touches a real GPU until it is used. */
void gs_devices_init(int sim_gpus, size_t sim_mem);
/* The simulated devices the environment asks for, checked as --sim-gpus
 * checks its value: GSHELL_SIM_GPUS is 0 to 64 devices, GSHELL_SIM_MEM a
 * positive size in bytes with an optional K, M, G or T (KiB..TiB, "B" or
 * "iB" may follow: 512M, 4GiB, 1.5T). Unset or empty: 0 (none, no cap).
 * Anything else is an error naming the variable, the value and what was
 * expected. GSHELL_SIM_CONTEXT_MS (0 to 600000) and GSHELL_NUM_THREADS (1
 * to 1024), read later, are checked here too. */
gs_status gs_sim_env(int *gpus, size_t *mem);
/* The two checks on their own; `what` names the value in the message. */
gs_status gs_parse_sim_gpus(const char *what, const char *s, int *out);
gs_status gs_parse_mem_size(const char *what, const char *s, size_t *out);
int gs_cuda_device_count(void);
/* Bytes in live tensors on every CUDA device, real or simulated (what
 * memory_allocated() adds up to), for pacing the Lua collector: read from
 * the caching pools alone (the pool_allocated slot), with no driver call
 * and without counting, starting or creating a context on any device. */
size_t gs_device_bytes_allocated(void);
/* How many simulated CUDA devices were configured (0: the CUDA ordinals, if
 * any, are real GPUs): torch.cuda.is_simulated() and torch._sim_configure
 * ask; no engine code branches on it. */
int gs_devices_sim_count(void);
/* The cap each simulated device was given (0: none), for re-configuring. */
size_t gs_devices_sim_mem(void);
/* on: simulated devices' memory is treated as a real GPU's, not as host
 * memory (copies through memcpy slots and staging), until the next
 * gs_devices_init. Only for specs and measurements of that path. */
void gs_devices_set_sim_staged(bool on);
/* Why no real CUDA device is usable (no driver, a driver too old, a build
 * without CUDA), or NULL when there is one. */
const char *gs_cuda_unavailable(void);
int gs_cuda_current_device(void);
gs_status gs_cuda_set_device(int index);

static inline gs_device gs_cpu(void) { gs_device d = {GS_CPU, 0}; return d; }
bool gs_device_equal(gs_device a, gs_device b);
/* Resolves "cuda" to the current ordinal and checks the ordinal exists. */
gs_status gs_device_resolve(gs_device in, gs_device *out);
/* Parses "cpu", "cuda", "cuda:1"; clear error naming what exists otherwise. */
gs_status gs_device_parse(const char *s, gs_device *out);
/* "available: cpu and 2 simulated GPUs, cuda:0 and cuda:1": what this
 * session has, for error messages (writes at most n bytes). */
void gs_devices_describe(char *buf, size_t n);
/* "cpu", "cuda:1" (writes at most n bytes). */
void gs_device_name(gs_device d, char *buf, size_t n);
const struct gs_backend *gs_device_backend(gs_device d);

#endif
