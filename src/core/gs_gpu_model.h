/* gs_gpu_model.h: named real GPUs as plain data, and the time model that
 * says how long a kernel or a copy would take on one (issue 29).
 *
 * A simulated device computes its values on the host's cores; its model
 * says how long the same work takes on the GPU it stands for. Every figure
 * in the table comes from a published source, cited in docs/gpu-models.md;
 * the formulas are in docs/time-model.md. The core holds this (not the
 * simulated backend) so any backend, the profiler and the explanations can
 * use the same figures.
 *
 * Which model each simulated device has: GSHELL_GPU_MODEL (or
 * --gpu-model), a name for all devices or a comma-separated list, one per
 * device (devices past the list take its last name); "host" means no model
 * (time is this machine's own, as before issue 29). */
#ifndef GS_GPU_MODEL_H
#define GS_GPU_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include "core/gs_common.h"
#include "core/gs_dtype.h"

/* The units a GPU computes with, each with its own peak rate. */
typedef enum {
  GS_UNIT_FP32,    /* FP32 on the CUDA cores (FMA = 2 FLOPs) */
  GS_UNIT_FP64,    /* FP64 on the CUDA cores */
  GS_UNIT_FP64_TC, /* FP64 on tensor cores (A100, H100: DGEMM) */
  GS_UNIT_TF32_TC, /* TF32 tensor cores: float32 products when allow_tf32 */
  GS_UNIT_FP16_TC, /* FP16 tensor cores (dense, FP32 accumulate) */
  GS_UNIT_BF16_TC, /* BF16 tensor cores (dense) */
  GS_UNIT_COUNT
} gs_gpu_unit;

typedef struct gs_gpu_model {
  const char *key;          /* "v100": what GSHELL_GPU_MODEL names */
  const char *name;         /* the name nvidia-smi and PyTorch show */
  const char *arch;         /* "Volta" */
  int major, minor;         /* compute capability */
  int sms;                  /* streaming multiprocessors */
  int threads_per_sm;       /* resident threads per SM (blocks of 256 fill it) */
  double boost_mhz;
  double peak[GS_UNIT_COUNT]; /* FLOP/s, dense; 0 = the GPU has no such unit */
  double mem_bytes;         /* device memory */
  double mem_bw;            /* device memory bandwidth, B/s */
  double l2_bytes;
  int pcie_gen, pcie_lanes;
  double nvlink_bw;         /* NVLink, B/s both directions together; 0 = none */
  int copy_engines;
  double launch_s;          /* the device's per-kernel overhead (start to start of empty kernels) */
  double host_launch_s;     /* what the host pays per launch in the driver */
  double host_sync_s;       /* what the host pays per synchronisation */
  /* per-block and per-SM limits, for the kernel lab's occupancy (issue 30;
   * CUDA C++ Programming Guide, compute capabilities table) */
  int max_threads_per_block;
  int max_blocks_per_sm;
  double smem_per_sm;       /* shared memory per SM, bytes */
  double smem_per_block;    /* the most one block may use, bytes */
  int regs_per_sm;          /* 32-bit registers per SM */
} gs_gpu_model;

/* The tunable constants of the time model, one place (docs/time-model.md). */
#define GS_MODEL_L2_SPEEDUP 2.0     /* a working set inside L2 streams this much faster */
#define GS_MODEL_PCIE_EFF 0.78      /* practical share of the PCIe link rate, pinned */
#define GS_MODEL_PAGEABLE 0.5       /* pageable memory's share of the pinned rate */
#define GS_MODEL_NVLINK_EFF 0.8     /* practical share of the NVLink rate */
#define GS_MODEL_COPY_LATENCY 10e-6 /* fixed cost of one copy (DMA set-up) */
#define GS_MODEL_GEMM_EFF_CORES 0.92 /* a large product's best share of the CUDA cores' peak */
#define GS_MODEL_GEMM_EFF_TC 0.80   /* ... and of the tensor cores' peak */
#define GS_MODEL_GEMM_TILE 128      /* output tile one SM computes (rows and columns) */
#define GS_MODEL_GEMM_K0 64.0       /* depth at which a product reaches half its efficiency */
#define GS_MODEL_BLOCK 256          /* threads per block of an elementwise kernel */
#define GS_MODEL_CONV_EFF_CORES 0.75 /* a large convolution's best share (cuDNN's implicit GEMM), CUDA cores */
#define GS_MODEL_CONV_EFF_TC 0.65   /* ... and tensor cores */
#define GS_MODEL_CONV_SPLIT_K 256.0 /* least depth per split when a convolution splits K to fill the SMs */

/* The known models, in the table's order; NULL after the last. */
const gs_gpu_model *gs_gpu_model_at(int i);
/* By key (case-insensitive); NULL when unknown. */
const gs_gpu_model *gs_gpu_model_find(const char *key);
/* "t4, v100, a100, h100, h200 (or host)": for messages. */
const char *gs_gpu_model_names(void);
/* The default for simulated devices (docs/gpu-models.md says why). */
#define GS_GPU_MODEL_DEFAULT "v100"

/* Checks a GSHELL_GPU_MODEL / --gpu-model value: `what` names it in the
 * error, which lists the known names. */
gs_status gs_gpu_model_check(const char *what, const char *spec);
/* Sets the models of the simulated devices from a value (NULL:
 * GSHELL_GPU_MODEL, else the default); a bad value is an error and changes
 * nothing. gs_gpu_model_spec() is the value in force. */
gs_status gs_gpu_model_set(const char *spec);
const char *gs_gpu_model_spec(void);
/* The model of simulated device dev; NULL for "host". */
const gs_gpu_model *gs_gpu_model_of(int dev);

/* torch.backends.cuda.matmul.allow_tf32 (default false, as PyTorch). */
void gs_gpu_set_allow_tf32(bool on);
bool gs_gpu_allow_tf32(void);

/* ---- the time model (seconds) ---- */

/* The unit an op of this dtype uses; matmul: a product (tensor cores
 * where the dtype and the model allow). Falls back to FP32 where the model
 * lacks the unit (V100 has no BF16 or TF32). */
gs_gpu_unit gs_gpu_unit_for(const gs_gpu_model *m, gs_dtype dt, bool matmul);
/* The share of the SMs busy on average over the waves of `blocks` blocks
 * of `threads` each: 1 when the blocks fill whole waves, less for a tail
 * or a problem smaller than one wave. */
double gs_gpu_fill(const gs_gpu_model *m, double blocks, int threads);
/* Memory time of `bytes` moved (read plus written) by one kernel. */
double gs_gpu_mem_time(const gs_gpu_model *m, double bytes);
/* An elementwise-like kernel: launch + max(compute, memory), its FLOPs at
 * the unit's peak times the fill of ceil(elems / 256) blocks. */
double gs_gpu_kernel_time(const gs_gpu_model *m, gs_gpu_unit u, double flops, double bytes, double elems);
/* A product [M,K] x [K,N] (batch of `batch`), or a convolution as its
 * implicit product: the cuBLAS-like efficiency (gs_gpu_gemm_eff) applies. */
double gs_gpu_gemm_eff(const gs_gpu_model *m, gs_gpu_unit u, double M, double N, double K, double batch);
double gs_gpu_gemm_time(const gs_gpu_model *m, gs_gpu_unit u, double M, double N, double K, double batch,
                        double elem_size);
/* A convolution pass as cuDNN runs it: one implicit-GEMM kernel
 * [M,K] x [K,N] (batch: groups) that reads its operands from the tensors
 * themselves (bytes: input, weight and output, not an unfolded column
 * matrix). Its efficiency is the product's curve with cuDNN's lower best
 * share (GS_MODEL_CONV_EFF_*), and a problem with fewer output tiles than
 * SMs splits K across idle SMs (split-K: a weight gradient's small output
 * over a deep batch x pixels sum), down to GS_MODEL_CONV_SPLIT_K each. */
double gs_gpu_conv_eff(const gs_gpu_model *m, gs_gpu_unit u, double M, double N, double K, double batch);
double gs_gpu_conv_time(const gs_gpu_model *m, gs_gpu_unit u, double M, double N, double K, double batch,
                        double bytes);

/* A fused region (issue 29): while an op runs one real kernel as several
 * of ours (a convolution: im2col, products, col2im, copies), the tasks it
 * queues on device `dev` from this thread are one modelled kernel per
 * pass: the first task carries every pass's time, FLOPs and bytes under
 * `name`, the others take no time, no launch and no profile row. */
typedef struct {
  const char *name;  /* the kernel's name in profiles: "conv2d", "conv2d_backward" */
  int dev;
  gs_dtype dtype;
  int passes;        /* 1 (forward) or up to 2 (data and weight gradients) */
  double M[2], N[2], K[2], batch[2], bytes[2];
  bool charged;      /* a task carries it already */
  bool gemm;         /* priced as a cuBLAS product (a half-precision mm computed
                      * here in float32), not as cuDNN's convolution */
} gs_gpu_fused;
/* Begins (f stays the caller's until gs_gpu_fused_end) and ends this
 * thread's region; gs_gpu_fused_now(dev): the region in force for dev, or NULL. */
void gs_gpu_fused_begin(gs_gpu_fused *f);
void gs_gpu_fused_end(void);
gs_gpu_fused *gs_gpu_fused_now(int dev);
/* The modelled time of all of f's passes on m (a launch each). */
double gs_gpu_fused_time(const gs_gpu_model *m, const gs_gpu_fused *f);

/* Copies: host to device or back (pinned or pageable), device to device
 * between GPUs (NVLink where both models have it, else PCIe). */
typedef enum { GS_COPY_H2D, GS_COPY_D2H, GS_COPY_D2D_PEER } gs_copy_kind;
double gs_gpu_pcie_rate(const gs_gpu_model *m, bool pinned);
double gs_gpu_copy_time(const gs_gpu_model *m, const gs_gpu_model *peer, gs_copy_kind kind, bool pinned,
                        double bytes);

#endif
