/* backend_cuda.h: what the CUDA backend offers beyond its gs_backend table
 * (gs_backend_cuda), for the device registry and the bindings. Exists
 * only in builds with GS_HAVE_CUDA; callers guard their use with it.
 * Nothing here touches a GPU before it is asked about. */
#ifndef BACKEND_CUDA_H
#define BACKEND_CUDA_H

#include "gs_backend.h"

extern const gs_backend gs_backend_cuda;

/* Real CUDA devices. The first call asks the driver (cudaGetDeviceCount);
 * any failure -- no driver, a driver older than the toolkit, no device --
 * means 0 devices, silently. */
int gs_cuda_real_device_count(void);

/* Why there are no devices ("" when there are some, or before the first
 * count), e.g. "CUDA driver version is insufficient for CUDA runtime
 * version", for a banner or torch.cuda.is_available() diagnostics. */
const char *gs_cuda_unavailable_reason(void);

/* torch.cuda.get_device_properties(i) for a real device. */
typedef struct {
  char name[256];
  size_t total_memory;
  int major, minor, multi_processor_count;
} gs_cuda_props;
gs_status gs_cuda_get_properties(int index, gs_cuda_props *out);

#endif
