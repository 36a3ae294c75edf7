/* gs_comm.h: collectives between the devices of one process
 * (torch.cuda.comm) and between processes (torch.distributed).
 *
 * Single process: devices whose backend has a collective library
 * (core/gs_collectives.h: NCCL on real GPUs) use it where it has the
 * operation (broadcast, reduce); simulated devices, and dtypes the
 * library lacks, use the engine's device-to-device copies, so every
 * move is counted in gs_transfers. Each device's part is one call through
 * its backend. */
#ifndef GS_COMM_H
#define GS_COMM_H

#include "ops/gs_ops.h"

/* outs[i] = src on devs[i] (src itself, retained, where it already lives). */
gs_status gs_comm_broadcast(gs_tensor *src, int n, const gs_device *devs, gs_tensor **outs);
/* *out = sum of ins (same shape and dtype, distinct CUDA devices) on dst. */
gs_status gs_comm_reduce_add(gs_tensor *const *ins, int n, gs_device dst, gs_tensor **out);
/* Splits src along dim (0-based) into chunks of chunk_sizes[i] rows (nsizes
 * of them, one per device), or, when chunk_sizes is NULL, as
 * src.chunk(n, dim) (10 rows on 3 devices: 4, 4, 2; fewer chunks than
 * devices when rows run out), and moves chunk i to devs[i]. *nout receives
 * the number of chunks. */
gs_status gs_comm_scatter(gs_tensor *src, int n, const gs_device *devs, const int64_t *chunk_sizes, int nsizes,
                          int dim, int *nout, gs_tensor **outs);
/* *out = the ins concatenated along dim (0-based) on dst (any device). */
gs_status gs_comm_gather(gs_tensor *const *ins, int n, int dim, gs_device dst, gs_tensor **out);
/* torch.cuda.nccl.version(): opens NCCL (as its first collective would)
 * and reads its version; an error saying where NCCL was looked for when
 * it is missing, or that this gshell was built without CUDA. */
gs_status gs_comm_nccl_version(int *major, int *minor, int *patch);

#endif
