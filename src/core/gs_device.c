/* gs_device.c: device names, parsing, and the registry from a device to
 * its backend. CUDA ordinals are either all simulated or all real. The
 * backends themselves are registered from above (src/backend/registry.c):
 * the core knows only their tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/gs_backend.h"
#include "core/gs_device.h"
#include "core/gs_gpu_model.h"

static const gs_backend *registered[GS_BACKEND_KINDS];

void gs_backend_register(gs_backend_kind kind, const gs_backend *be) { registered[kind] = be; }
const gs_backend *gs_backend_of_kind(gs_backend_kind kind) { return registered[kind]; }

static int sim_count = 0;
static size_t sim_cap = 0;
static bool sim_staged = false;
static int current_cuda = 0;

void gs_devices_init(int sim_gpus, size_t sim_mem) {
  sim_count = sim_gpus > 0 ? sim_gpus : 0;
  sim_cap = sim_mem;
  sim_staged = false;
  registered[GS_BACKEND_SIM]->configure(sim_count, sim_mem);
  current_cuda = 0;
}

gs_status gs_parse_sim_gpus(const char *what, const char *s, int *out) {
  char *end;
  long n = strtol(s, &end, 10);
  /* strtol skips leading blanks and takes a sign: neither is a count */
  if (*s < '0' || *s > '9' || *end != '\0' || n > 64)
    return gs_error("%s wants a number of devices from 0 to 64, not '%s'", what, s);
  *out = (int)n;
  return GS_OK;
}

gs_status gs_parse_mem_size(const char *what, const char *s, size_t *out) {
  const char *p = s;
  /* digits with at most one '.', and at least one digit (no sign, no
   * blanks, no hex, inf or nan, which strtod would take) */
  int digits = 0, dots = 0;
  for (; (*p >= '0' && *p <= '9') || *p == '.'; p++) {
    if (*p == '.') dots++;
    else digits++;
  }
  double v = digits > 0 && dots <= 1 ? strtod(s, NULL) : -1;
  double mul = 1;
  const char *units = "KMGT";
  const char *u = *p ? strchr(units, *p >= 'a' ? *p - 'a' + 'A' : *p) : NULL;
  if (u && *p) {
    for (const char *k = units; k <= u; k++) mul *= 1024.0;
    p++;
    if (*p == 'i') p++;
  }
  if (*p == 'B' || *p == 'b') p++;
  if (v <= 0 || *p != '\0' || v * mul >= 18446744073709551616.0 /* 2^64 */ || (size_t)(v * mul) == 0)
    return gs_error("%s wants a size in bytes above 0, optionally followed by K, M, G or T "
                    "(KiB to TiB), such as 512M or 16G, not '%s'", what, s);
  *out = (size_t)(v * mul);
  return GS_OK;
}

/* A whole number from lo to hi in environment variable `what` (unset or
 * empty: fine, the default applies); `unit` names what it counts. */
static gs_status check_int_env(const char *what, long lo, long hi, const char *unit) {
  const char *s = getenv(what);
  if (!s || !*s) return GS_OK;
  char *end;
  long n = strtol(s, &end, 10);
  if (*s < '0' || *s > '9' || *end != '\0' || n < lo || n > hi)
    return gs_error("%s wants a whole number of %s from %ld to %ld, not '%s'", what, unit, lo, hi, s);
  return GS_OK;
}

gs_status gs_sim_env(int *gpus, size_t *mem) {
  const char *n = getenv("GSHELL_SIM_GPUS"), *m = getenv("GSHELL_SIM_MEM");
  *gpus = 0;
  *mem = 0;
  /* read later by the simulated devices and the CPU's thread pool, which
   * would take garbage as 0 or 1: refused here, at start-up */
  GS_TRY(check_int_env("GSHELL_SIM_CONTEXT_MS", 0, 600000, "milliseconds"));
  GS_TRY(check_int_env("GSHELL_NUM_THREADS", 1, 1024, "threads"));
  if (n && *n) GS_TRY(gs_parse_sim_gpus("GSHELL_SIM_GPUS", n, gpus));
  if (m && *m) GS_TRY(gs_parse_mem_size("GSHELL_SIM_MEM", m, mem));
  const char *g = getenv("GSHELL_GPU_MODEL");
  if (g && *g) GS_TRY(gs_gpu_model_check("GSHELL_GPU_MODEL", g));
  return GS_OK;
}

int gs_devices_sim_count(void) { return sim_count; }
size_t gs_devices_sim_mem(void) { return sim_cap; }
void gs_devices_set_sim_staged(bool on) { sim_staged = on; }

int gs_devices_context_ms(void) {
  const gs_backend *sim = registered[GS_BACKEND_SIM];
  return sim_count > 0 && sim->context_ms ? sim->context_ms() : 0;
}

const char *gs_cuda_unavailable(void) {
  const gs_backend *cuda = registered[GS_BACKEND_CUDA];
  if (!cuda) return "this gshell was built without CUDA (nvcc was not found, or CUDA=0)";
  if (cuda->device_count() > 0) return NULL;
  const char *why = cuda->unavailable_reason();
  return why && *why ? why : "no CUDA device was found";
}

int gs_cuda_device_count(void) {
  if (sim_count > 0) return sim_count;
  const gs_backend *cuda = registered[GS_BACKEND_CUDA];
  return cuda ? cuda->device_count() : 0;
}

int gs_cuda_current_device(void) { return current_cuda; }

/* Every ordinal is asked, not gs_cuda_device_count()'s: counting real
 * devices loads the driver, which a CPU-only session never needs. */
size_t gs_device_bytes_allocated(void) {
  size_t total = 0;
  for (int i = 0; i < GS_MAX_CUDA_DEVICES; i++) {
    gs_device d = {GS_CUDA, i};
    const gs_backend *be = gs_device_backend(d);
    if (!be || !be->pool_allocated) break;
    total += be->pool_allocated(i);
  }
  return total;
}

/* "available: cpu and 2 simulated GPUs, cuda:0 and cuda:1": what this
 * session has, for error messages that name what exists. */
void gs_devices_describe(char *buf, size_t n) {
  int k = gs_cuda_device_count();
  const char *sim = sim_count > 0 ? "simulated " : "";
  if (k == 0)
    snprintf(buf, n, "available: only the cpu, no CUDA devices; start gshell with --sim-gpus N, "
                     "or set GSHELL_SIM_GPUS=N, to simulate some");
  else if (k == 1) snprintf(buf, n, "available: cpu and 1 %sGPU, cuda:0", sim);
  else if (k == 2) snprintf(buf, n, "available: cpu and 2 %sGPUs, cuda:0 and cuda:1", sim);
  else snprintf(buf, n, "available: cpu and %d %sGPUs, cuda:0 to cuda:%d", k, sim, k - 1);
}

gs_status gs_cuda_set_device(int index) {
  char what[200];
  if (index < 0) {
    gs_devices_describe(what, sizeof what);
    return gs_error("invalid device ordinal %d: CUDA ordinals start at 0 (%s)", index, what);
  }
  gs_device d = {GS_CUDA, index};
  GS_TRY(gs_device_resolve(d, &d));
  current_cuda = index;
  return GS_OK;
}

bool gs_device_equal(gs_device a, gs_device b) { return a.type == b.type && a.index == b.index; }

gs_status gs_device_resolve(gs_device in, gs_device *out) {
  if (in.type == GS_CPU) { *out = gs_cpu(); return GS_OK; }
  int idx = in.index < 0 ? current_cuda : in.index;
  int n = gs_cuda_device_count();
  if (idx >= n) {
    const char *sim = sim_count > 0 ? "simulated " : "";
    if (n == 0)
      return gs_error("cuda:%d is not available: no CUDA devices are present, only the cpu (start gshell with "
                      "--sim-gpus N, or set GSHELL_SIM_GPUS=N, to simulate some)", idx);
    if (n == 1) return gs_error("cuda:%d is not available: there is 1 %sCUDA device (cuda:0)", idx, sim);
    if (n == 2) return gs_error("cuda:%d is not available: there are 2 %sCUDA devices (cuda:0 and cuda:1)", idx, sim);
    return gs_error("cuda:%d is not available: there are %d %sCUDA devices (cuda:0 to cuda:%d)", idx, n, sim, n - 1);
  }
  out->type = GS_CUDA;
  out->index = idx;
  return GS_OK;
}

/* Parses "cpu", "cpu:0", "cuda", "cuda:N". A bad string gets a message
 * saying what was expected and what exists, with a hint for the common
 * mistakes: TensorFlow/MXNet names ("gpu:0", "/GPU:0"), a negative
 * ordinal, a dtype name given where a device belongs. */
gs_status gs_device_parse(const char *s, gs_device *out) {
  if (strcmp(s, "cpu") == 0) { *out = gs_cpu(); return GS_OK; }
  if (strcmp(s, "cuda") == 0) { out->type = GS_CUDA; out->index = -1; return GS_OK; }
  if (strncmp(s, "cuda:", 5) == 0 && s[5] >= '0' && s[5] <= '9') {
    char *end;
    long v = strtol(s + 5, &end, 10);
    if (*end == '\0' && v < 1 << 20) { out->type = GS_CUDA; out->index = (int)v; return GS_OK; }
  }
  if (strncmp(s, "cpu:", 4) == 0 && strcmp(s + 4, "0") == 0) { *out = gs_cpu(); return GS_OK; }
  char what[200];
  gs_devices_describe(what, sizeof what);
  gs_dtype dt;
  if (strncmp(s, "cuda:-", 6) == 0)
    return gs_error("invalid device string '%s': device ordinals must not be negative (%s)", s, what);
  if (gs_dtype_from_name(s, &dt))
    return gs_error("invalid device string '%s': that is a dtype, not a device (pass it as dtype=); "
                    "expected 'cpu', 'cuda' or 'cuda:N' (%s)", s, what);
  const char *p = s[0] == '/' ? s + 1 : s;
  if (strncasecmp(p, "gpu", 3) == 0 || strncasecmp(p, "device:gpu", 10) == 0)
    return gs_error("invalid device string '%s': GPUs are called 'cuda' here, as in PyTorch ('cuda:0' is the "
                    "first); expected 'cpu', 'cuda' or 'cuda:N' (%s)", s, what);
  return gs_error("invalid device string '%s': expected 'cpu', 'cuda' or 'cuda:N' with N >= 0 (%s)", s, what);
}

void gs_device_name(gs_device d, char *buf, size_t n) {
  if (d.type == GS_CPU) snprintf(buf, n, "cpu");
  else if (d.index < 0) snprintf(buf, n, "cuda");
  else snprintf(buf, n, "cuda:%d", d.index);
}

const gs_backend *gs_device_backend(gs_device d) {
  if (d.type == GS_CPU) return registered[GS_BACKEND_CPU];
  if (sim_count > 0) return registered[sim_staged ? GS_BACKEND_SIM_STAGED : GS_BACKEND_SIM];
  return registered[GS_BACKEND_CUDA];
}
