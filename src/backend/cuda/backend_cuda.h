/* backend_cuda.h: the CUDA backend's table (gs_backend_cuda) and what the
 * device registry (gs_device.c) needs beyond it. Exists only in builds
 * with GS_HAVE_CUDA; callers guard their use with it. Nothing here
 * touches a GPU before it is asked about. */
#ifndef BACKEND_CUDA_H
#define BACKEND_CUDA_H

#include "core/gs_backend.h"

extern const gs_backend gs_backend_cuda;

/* Real CUDA devices. The first call asks the driver (cudaGetDeviceCount);
 * any failure -- no driver, a driver older than the toolkit, no device --
 * means 0 devices, silently. */
int gs_cuda_real_device_count(void);

/* Why there are no devices ("" when there are some, or before the first
 * count), e.g. "CUDA driver version is insufficient for CUDA runtime
 * version", for a banner or torch.cuda.is_available() diagnostics. */
const char *gs_cuda_unavailable_reason(void);

#endif
