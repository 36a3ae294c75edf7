/* gs_gpu_model.c: the GPU models' figures and the time model (formulas in
 * docs/time-model.md, sources of every figure in docs/gpu-models.md). */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/gs_gpu_model.h"
#include "core/gs_model_clock.h"

#define T 1e12
#define GIB 1073741824.0
#define MIB 1048576.0

/* NVIDIA publishes no launch or driver costs: these are estimates from the
 * CUDA Graphs blog's V100 measurements (docs/gpu-models.md), the same for
 * every model until tools/gpu_run.sh calibrates them. */
#define LAUNCH 2e-6, 3e-6, 6e-6
/* Threads per block, blocks per SM, shared memory per SM and per block
 * (KiB) and registers per SM: the CUDA C++ Programming Guide's table of
 * compute capabilities (docs/gpu-models.md), for the kernel lab. */
#define LIMITS(blocks, smem_sm, smem_block) 1024, blocks, (smem_sm) * 1024.0, (smem_block) * 1024.0, 65536

static const gs_gpu_model models[] = {
  {"t4", "Tesla T4", "Turing", 7, 5, 40, 1024, 1590,
   {[GS_UNIT_FP32] = 8.1 * T, [GS_UNIT_FP64] = 8.1 * T / 32, [GS_UNIT_FP16_TC] = 65 * T},
   16 * GIB, 320e9, 4 * MIB, 3, 16, 0, 2, LAUNCH, LIMITS(16, 64, 64)},
  {"v100", "Tesla V100-SXM2-16GB", "Volta", 7, 0, 80, 2048, 1530,
   {[GS_UNIT_FP32] = 15.7 * T, [GS_UNIT_FP64] = 7.8 * T, [GS_UNIT_FP16_TC] = 125 * T},
   16 * GIB, 900e9, 6 * MIB, 3, 16, 300e9, 2, LAUNCH, LIMITS(32, 96, 96)},
  {"a100", "NVIDIA A100-SXM4-80GB", "Ampere", 8, 0, 108, 2048, 1410,
   {[GS_UNIT_FP32] = 19.5 * T, [GS_UNIT_FP64] = 9.7 * T, [GS_UNIT_FP64_TC] = 19.5 * T,
    [GS_UNIT_TF32_TC] = 156 * T, [GS_UNIT_FP16_TC] = 312 * T, [GS_UNIT_BF16_TC] = 312 * T},
   80 * GIB, 2039e9, 40 * MIB, 4, 16, 600e9, 2, LAUNCH, LIMITS(32, 164, 163)},
  {"h100", "NVIDIA H100 80GB HBM3", "Hopper", 9, 0, 132, 2048, 1980,
   {[GS_UNIT_FP32] = 67 * T, [GS_UNIT_FP64] = 34 * T, [GS_UNIT_FP64_TC] = 67 * T,
    [GS_UNIT_TF32_TC] = 494.7 * T, [GS_UNIT_FP16_TC] = 989.4 * T, [GS_UNIT_BF16_TC] = 989.4 * T},
   80 * GIB, 3.35e12, 50 * MIB, 5, 16, 900e9, 2, LAUNCH, LIMITS(32, 228, 227)},
  {"h200", "NVIDIA H200", "Hopper", 9, 0, 132, 2048, 1980,
   {[GS_UNIT_FP32] = 67 * T, [GS_UNIT_FP64] = 34 * T, [GS_UNIT_FP64_TC] = 67 * T,
    [GS_UNIT_TF32_TC] = 494.7 * T, [GS_UNIT_FP16_TC] = 989.4 * T, [GS_UNIT_BF16_TC] = 989.4 * T},
   141 * GIB, 4.8e12, 50 * MIB, 5, 16, 900e9, 2, LAUNCH, LIMITS(32, 228, 227)},
};
#define NMODELS ((int)(sizeof models / sizeof models[0]))

const gs_gpu_model *gs_gpu_model_at(int i) { return i >= 0 && i < NMODELS ? &models[i] : NULL; }

const gs_gpu_model *gs_gpu_model_find(const char *key) {
  for (int i = 0; i < NMODELS; i++)
    if (strcasecmp(models[i].key, key) == 0) return &models[i];
  return NULL;
}

const char *gs_gpu_model_names(void) {
  static char buf[128];
  if (!buf[0]) {
    size_t n = 0;
    for (int i = 0; i < NMODELS; i++) n += (size_t)snprintf(buf + n, sizeof buf - n, "%s, ", models[i].key);
    snprintf(buf + n, sizeof buf - n, "or host (this machine's own time)");
  }
  return buf;
}

/* ---- which model each simulated device has ---- */

#define MAX_DEVS 64
static char spec_now[256] = GS_GPU_MODEL_DEFAULT;
static const gs_gpu_model *dev_models[MAX_DEVS];
static pthread_once_t from_env = PTHREAD_ONCE_INIT;
static bool allow_tf32;

/* Parses spec's comma-separated names (trimmed; "host" gives NULL) into
 * out; the first bad one is the error. */
static gs_status each_name(const char *what, const char *spec, const gs_gpu_model **out, int *n) {
  const char *p = spec;
  *n = 0;
  if (strlen(spec) >= sizeof spec_now)
    return gs_error("%s is too long (%zu characters; at most %zu)", what, strlen(spec), sizeof spec_now - 1);
  for (;;) {
    while (isspace((unsigned char)*p)) p++;
    const char *e = p;
    while (*e && *e != ',') e++;
    const char *end = e;
    while (end > p && isspace((unsigned char)end[-1])) end--;
    char name[32];
    size_t len = (size_t)(end - p);
    if (len == 0)
      return gs_error("%s wants GPU model names separated by commas (%s), not '%s'", what,
                      gs_gpu_model_names(), spec);
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), p);
    const gs_gpu_model *m = NULL;
    if (strcasecmp(name, "host") != 0) {
      m = len < sizeof name ? gs_gpu_model_find(name) : NULL;
      if (!m) return gs_error("%s: unknown GPU model '%.*s'; the known ones are %s", what, (int)len, p,
                              gs_gpu_model_names());
    }
    if (*n < MAX_DEVS) out[(*n)++] = m;
    if (!*e) return GS_OK;
    p = e + 1;
  }
}

gs_status gs_gpu_model_check(const char *what, const char *spec) {
  const gs_gpu_model *tmp[MAX_DEVS];
  int n;
  return each_name(what, spec, tmp, &n);
}

static gs_status set_spec(const char *spec) {
  if (!spec) {
    spec = getenv("GSHELL_GPU_MODEL");
    if (!spec || !*spec) spec = GS_GPU_MODEL_DEFAULT;
  }
  const gs_gpu_model *tmp[MAX_DEVS];
  int n;
  GS_TRY(each_name("GSHELL_GPU_MODEL", spec, tmp, &n));
  for (int i = 0; i < MAX_DEVS; i++) dev_models[i] = tmp[i < n ? i : n - 1];
  snprintf(spec_now, sizeof spec_now, "%s", spec);
  return GS_OK;
}

/* GSHELL_GPU_MODEL, read once before the first use (start-up refused a bad
 * value: gs_sim_env; a library loaded without that check takes the default) */
static void read_env(void) {
  if (set_spec(NULL) != GS_OK) (void)set_spec(GS_GPU_MODEL_DEFAULT);
}

gs_status gs_gpu_model_set(const char *spec) {
  pthread_once(&from_env, read_env);
  gs_mclock_models_changed();
  return set_spec(spec);
}

const char *gs_gpu_model_spec(void) { return spec_now; }

const gs_gpu_model *gs_gpu_model_of(int dev) {
  pthread_once(&from_env, read_env);
  return dev >= 0 && dev < MAX_DEVS ? dev_models[dev] : NULL;
}

void gs_gpu_set_allow_tf32(bool on) { allow_tf32 = on; }
bool gs_gpu_allow_tf32(void) { return allow_tf32; }

/* ---- the time model ---- */

gs_gpu_unit gs_gpu_unit_for(const gs_gpu_model *m, gs_dtype dt, bool matmul) {
  gs_gpu_unit u = GS_UNIT_FP32;
  if (dt == GS_FLOAT64) u = matmul && m->peak[GS_UNIT_FP64_TC] > 0 ? GS_UNIT_FP64_TC : GS_UNIT_FP64;
  else if (matmul && dt == GS_FLOAT32 && allow_tf32) u = GS_UNIT_TF32_TC;
  else if (matmul && dt == GS_FLOAT16) u = GS_UNIT_FP16_TC;
  else if (matmul && dt == GS_BFLOAT16) u = GS_UNIT_BF16_TC;
  return m->peak[u] > 0 ? u : GS_UNIT_FP32;
}

double gs_gpu_fill(const gs_gpu_model *m, double blocks, int threads) {
  int per_sm = threads > 0 && m->threads_per_sm >= threads ? m->threads_per_sm / threads : 1;
  double slots = (double)m->sms * per_sm;
  if (blocks < 1) blocks = 1;
  double waves = ceil(blocks / slots);
  return blocks / (waves * slots);
}

double gs_gpu_mem_time(const gs_gpu_model *m, double bytes) {
  double bw = bytes <= m->l2_bytes ? m->mem_bw * GS_MODEL_L2_SPEEDUP : m->mem_bw;
  return bytes / bw;
}

double gs_gpu_kernel_time(const gs_gpu_model *m, gs_gpu_unit u, double flops, double bytes, double elems) {
  double blocks = ceil(elems / GS_MODEL_BLOCK);
  double compute = flops / (m->peak[u] * gs_gpu_fill(m, blocks, GS_MODEL_BLOCK));
  double memory = gs_gpu_mem_time(m, bytes);
  return m->launch_s + (compute > memory ? compute : memory);
}

/* One output tile of 128x128 per SM at a time: the tiles' waves give the
 * fill (a small product leaves SMs idle, a tail wave half-fills), and a
 * shallow K spends proportionally more on loading tiles than on
 * multiply-adds (K / (K + K0)). The best a large product reaches is
 * cuBLAS's typical share of peak (GS_MODEL_GEMM_EFF_*), so it approaches
 * that share and never exceeds peak. */
double gs_gpu_gemm_eff(const gs_gpu_model *m, gs_gpu_unit u, double M, double N, double K, double batch) {
  double tiles = ceil(M / GS_MODEL_GEMM_TILE) * ceil(N / GS_MODEL_GEMM_TILE) * (batch < 1 ? 1 : batch);
  double fill = gs_gpu_fill(m, tiles, m->threads_per_sm);
  double depth = K / (K + GS_MODEL_GEMM_K0);
  bool tc = u == GS_UNIT_TF32_TC || u == GS_UNIT_FP16_TC || u == GS_UNIT_BF16_TC || u == GS_UNIT_FP64_TC;
  return (tc ? GS_MODEL_GEMM_EFF_TC : GS_MODEL_GEMM_EFF_CORES) * fill * depth;
}

double gs_gpu_gemm_time(const gs_gpu_model *m, gs_gpu_unit u, double M, double N, double K, double batch,
                        double elem_size) {
  if (batch < 1) batch = 1;
  double flops = 2 * M * N * K * batch;
  double bytes = elem_size * (M * K + K * N + M * N) * batch;
  double compute = flops > 0 ? flops / (m->peak[u] * gs_gpu_gemm_eff(m, u, M, N, K, batch)) : 0;
  double memory = gs_gpu_mem_time(m, bytes);
  return m->launch_s + (compute > memory ? compute : memory);
}

double gs_gpu_conv_eff(const gs_gpu_model *m, gs_gpu_unit u, double M, double N, double K, double batch) {
  double tiles = ceil(M / GS_MODEL_GEMM_TILE) * ceil(N / GS_MODEL_GEMM_TILE) * (batch < 1 ? 1 : batch);
  double splits = 1;
  if (tiles < m->sms) { /* split-K: idle SMs take a share of the sum each */
    splits = floor(m->sms / tiles);
    double most = floor(K / GS_MODEL_CONV_SPLIT_K);
    if (splits > most) splits = most;
    if (splits < 1) splits = 1;
  }
  double fill = gs_gpu_fill(m, tiles * splits, m->threads_per_sm);
  double k = K / splits;
  bool tc = u == GS_UNIT_TF32_TC || u == GS_UNIT_FP16_TC || u == GS_UNIT_BF16_TC || u == GS_UNIT_FP64_TC;
  return (tc ? GS_MODEL_CONV_EFF_TC : GS_MODEL_CONV_EFF_CORES) * fill * (k / (k + GS_MODEL_GEMM_K0));
}

double gs_gpu_conv_time(const gs_gpu_model *m, gs_gpu_unit u, double M, double N, double K, double batch,
                        double bytes) {
  if (batch < 1) batch = 1;
  double flops = 2 * M * N * K * batch;
  double compute = flops > 0 ? flops / (m->peak[u] * gs_gpu_conv_eff(m, u, M, N, K, batch)) : 0;
  double memory = gs_gpu_mem_time(m, bytes);
  return m->launch_s + (compute > memory ? compute : memory);
}

/* this thread's fused region (an op's kernels queued from one thread) */
static _Thread_local gs_gpu_fused *fused_now;

void gs_gpu_fused_begin(gs_gpu_fused *f) {
  f->charged = false;
  fused_now = f;
}
void gs_gpu_fused_end(void) { fused_now = NULL; }
gs_gpu_fused *gs_gpu_fused_now(int dev) { return fused_now && fused_now->dev == dev ? fused_now : NULL; }

double gs_gpu_fused_time(const gs_gpu_model *m, const gs_gpu_fused *f) {
  gs_gpu_unit u = gs_gpu_unit_for(m, f->dtype, true);
  double t = 0;
  for (int i = 0; i < f->passes && i < 2; i++)
    t += f->gemm ? gs_gpu_gemm_time(m, u, f->M[i], f->N[i], f->K[i], f->batch[i], (double)gs_dtype_size(f->dtype))
                 : gs_gpu_conv_time(m, u, f->M[i], f->N[i], f->K[i], f->batch[i], f->bytes[i]);
  return t;
}

/* One lane's rate per direction after line encoding: 8 GT/s x 128/130
 * bits for gen 3, doubling each generation. */
double gs_gpu_pcie_rate(const gs_gpu_model *m, bool pinned) {
  double lane = 8e9 * 128.0 / 130.0 / 8.0 * pow(2.0, m->pcie_gen - 3);
  return lane * m->pcie_lanes * GS_MODEL_PCIE_EFF * (pinned ? 1.0 : GS_MODEL_PAGEABLE);
}

double gs_gpu_copy_time(const gs_gpu_model *m, const gs_gpu_model *peer, gs_copy_kind kind, bool pinned,
                        double bytes) {
  double rate;
  if (kind == GS_COPY_D2D_PEER && peer && m->nvlink_bw > 0 && peer->nvlink_bw > 0) {
    double nv = m->nvlink_bw < peer->nvlink_bw ? m->nvlink_bw : peer->nvlink_bw;
    rate = nv / 2 * GS_MODEL_NVLINK_EFF; /* one direction */
  } else {
    rate = gs_gpu_pcie_rate(m, kind == GS_COPY_D2D_PEER || pinned);
    if (kind == GS_COPY_D2D_PEER && peer) {
      double r2 = gs_gpu_pcie_rate(peer, true);
      if (r2 < rate) rate = r2;
    }
  }
  return GS_MODEL_COPY_LATENCY + bytes / rate;
}
