/* registry.c: fills the core's backend slots, as Lua's linit.c opens its
 * libraries: the core and everything above the backends reach a device
 * only through the table gs_device_backend hands out, so this is the one
 * file that knows which backends exist. */
#include "backend/registry.h"
#include "backend/cpu/backend_cpu.h"
#include "backend/sim/backend_sim.h"
#include "core/gs_device.h"
#ifdef GS_HAVE_CUDA
#include "backend/cuda/backend_cuda.h"
#endif

void gs_backends_register(void) {
  gs_backend_register(GS_BACKEND_CPU, &gs_backend_cpu);
  gs_backend_register(GS_BACKEND_SIM, &gs_backend_sim);
  gs_backend_register(GS_BACKEND_SIM_STAGED, &gs_backend_sim_staged);
#ifdef GS_HAVE_CUDA
  gs_backend_register(GS_BACKEND_CUDA, &gs_backend_cuda);
#endif
}
