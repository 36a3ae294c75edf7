/* gs_hd.h: GS_HD marks small functions that both the C engine and the
 * CUDA kernels compile (host and device), so the two sides share one
 * definition instead of copies that can drift. */
#ifndef GS_HD_H
#define GS_HD_H
#ifdef __CUDACC__
#define GS_HD __host__ __device__ __forceinline__
#else
#define GS_HD static inline
#endif
#endif
