/* cpu_random.c: fills from the shared Philox stream (gs_philox.h). */
#include "backend_cpu.h"
#include "gs_parallel.h"
#include "gs_philox.h"

typedef struct { char *p; gs_dtype dt; gs_random_kind kind; uint64_t seed, offset, range; double a, b; } random_job;

static void random_range(int64_t begin, int64_t end, void *arg) {
  const random_job *j = arg;
  for (int64_t i = begin; i < end; i++) {
    uint64_t c = j->offset + (uint64_t)i;
    switch (j->kind) {
    case GS_RAND_UNIFORM:
      if (j->dt == GS_FLOAT32) ((float *)j->p)[i] = (float)(j->a + (j->b - j->a) * gs_philox_uniform_f32(j->seed, c));
      else ((double *)j->p)[i] = j->a + (j->b - j->a) * gs_philox_uniform_f64(j->seed, c);
      break;
    case GS_RAND_NORMAL:
      if (j->dt == GS_FLOAT32) ((float *)j->p)[i] = (float)(j->a + j->b * gs_philox_normal(j->seed, c));
      else ((double *)j->p)[i] = j->a + j->b * gs_philox_normal(j->seed, c);
      break;
    case GS_RAND_INT:
      ((int64_t *)j->p)[i] = (int64_t)((uint64_t)(int64_t)j->a + gs_philox_u64(j->seed, c) % j->range);
      break;
    }
  }
}

gs_status gs_cpu_random(gs_tensor *dst, gs_random_kind kind, uint64_t seed, uint64_t offset, double a, double b) {
  int64_t n = gs_numel(dst);
  uint64_t range = kind == GS_RAND_INT ? (uint64_t)((int64_t)b - (int64_t)a) : 0;
  random_job j = {gs_tensor_ptr(dst), dst->dtype, kind, seed, offset, range, a, b};
  gs_parallel_for(n, n * 16, random_range, &j);
  return GS_OK;
}
