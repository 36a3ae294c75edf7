/* gs_dlopen.h: finding and opening a CUDA library (cuBLAS, NCCL) at run
 * time, on a machine that may have only an NVIDIA driver and Python wheels
 * (pip's nvidia-* packages) rather than a CUDA toolkit. One helper for
 * every library the engine opens lazily, so they are all looked for in the
 * same places and listed together (torch.cuda.libraries()).
 *
 * Where a library is looked for, in order:
 *   1. next to the running gshell binary or torch.so (and in its lib/),
 *      so a bundle can ship its own copy;
 *   2. the dynamic loader's own search: LD_LIBRARY_PATH, ld.so.cache;
 *   3. $CUDA_HOME/lib64 and /usr/local/cuda/lib64 (toolkits do not always
 *      register themselves with ldconfig);
 *   4. pip's wheel directories under every site-packages of python3:
 *      nvidia/cu13/lib (CUDA 13 wheels put all libraries there), then the
 *      library's own package directory (nvidia/cublas/lib, nvidia/nccl/lib).
 * Plain C with no CUDA headers: it compiles in every build. */
#ifndef GS_DLOPEN_H
#define GS_DLOPEN_H

#include <stddef.h>

typedef struct {
  const char *label;             /* "cublas", "nccl": the name it is listed under */
  const char *const *sonames;    /* NULL-terminated, preferred first: "libcublas.so.13", ... */
  const char *const *deps;       /* NULL-terminated or NULL: opened first from the same directory
                                    (libcublasLt for cuBLAS), since a library opened by full path
                                    still finds its own dependencies only on the loader's path */
  const char *wheel_dir;         /* the pip package directory under nvidia/: "cublas", "nccl" */
} gs_cuda_lib_spec;

/* Opens the library (RTLD_NOW | RTLD_LOCAL) and records where it came
 * from. Returns the dlopen handle, or NULL with a message in err saying
 * what was tried and how to fix it. Thread-safe; each call searches again
 * (callers keep the handle, e.g. behind pthread_once). */
void *gs_cuda_dlopen(const gs_cuda_lib_spec *spec, char *err, size_t errlen);

/* Libraries opened so far, in the order they were opened: label and full
 * path of entry i, or 0 past the end. The NVIDIA driver (libcuda), which
 * the CUDA runtime opens itself, is listed as "driver" once it is loaded. */
int gs_cuda_loaded_library(int i, const char **label, const char **path);

/* Records a library opened by someone else (the driver, found by the
 * runtime) under label, from its handle. */
void gs_cuda_note_library(const char *label, void *handle);

/* The directories searched in step 4 (for messages and docs), joined with
 * ':' into buf. */
void gs_cuda_wheel_dirs(char *buf, size_t len);

#endif
