/* cpu_random.c: fills from the shared Philox stream (gs_philox.h). */
#include "backend/cpu/cpu_random.h"
#include "core/gs_parallel.h"
#include "core/gs_philox.h"

typedef struct { char *p; gs_dtype dt; gs_random_spec r; uint64_t seed, offset, width; } random_job;

static void random_range(int64_t begin, int64_t end, void *arg) {
  const random_job *j = arg;
  double a = j->r.a, b = j->r.b;
  for (int64_t i = begin; i < end; i++) {
    uint64_t c = j->offset + (uint64_t)i;
    switch (j->r.kind) {
    case GS_RAND_UNIFORM:
      if (j->dt == GS_FLOAT32) ((float *)j->p)[i] = (float)(a + (b - a) * gs_philox_uniform_f32(j->seed, c));
      else ((double *)j->p)[i] = a + (b - a) * gs_philox_uniform_f64(j->seed, c);
      break;
    case GS_RAND_NORMAL:
      if (j->dt == GS_FLOAT32) ((float *)j->p)[i] = (float)(a + b * gs_philox_normal(j->seed, c));
      else ((double *)j->p)[i] = a + b * gs_philox_normal(j->seed, c);
      break;
    case GS_RAND_INT:
      ((int64_t *)j->p)[i] = gs_philox_randint(j->seed, c, j->r.lo, j->width);
      break;
    }
  }
}

gs_status gs_cpu_random(gs_tensor *dst, const gs_random_spec *r, uint64_t seed, uint64_t offset) {
  int64_t n = gs_numel(dst);
  if (r->kind == GS_RAND_INT && !(r->lo < r->hi))
    return gs_error("random: empty integer range [%lld, %lld)", (long long)r->lo, (long long)r->hi);
  random_job j = {gs_tensor_ptr(dst), dst->dtype, *r, seed, offset, gs_randint_width(r->lo, r->hi)};
  return gs_parallel_for(n, n * 16, random_range, &j);
}
