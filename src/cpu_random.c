/* cpu_random.c: fills from the shared Philox stream (gs_philox.h). */
#include "backend_cpu.h"
#include "gs_philox.h"

gs_status gs_cpu_random(gs_tensor *dst, gs_random_kind kind, uint64_t seed, uint64_t offset, double a, double b) {
  int64_t n = gs_numel(dst);
  char *p = gs_tensor_ptr(dst);
  gs_dtype dt = dst->dtype;
  uint64_t range = kind == GS_RAND_INT ? (uint64_t)((int64_t)b - (int64_t)a) : 0;
#pragma omp parallel for if (n >= GS_PARALLEL_GRAIN) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    uint64_t c = offset + (uint64_t)i;
    switch (kind) {
    case GS_RAND_UNIFORM:
      if (dt == GS_FLOAT32) ((float *)p)[i] = (float)(a + (b - a) * gs_philox_uniform_f32(seed, c));
      else ((double *)p)[i] = a + (b - a) * gs_philox_uniform_f64(seed, c);
      break;
    case GS_RAND_NORMAL:
      if (dt == GS_FLOAT32) ((float *)p)[i] = (float)(a + b * gs_philox_normal(seed, c));
      else ((double *)p)[i] = a + b * gs_philox_normal(seed, c);
      break;
    case GS_RAND_INT:
      ((int64_t *)p)[i] = (int64_t)((uint64_t)(int64_t)a + gs_philox_u64(seed, c) % range);
      break;
    }
  }
  return GS_OK;
}
