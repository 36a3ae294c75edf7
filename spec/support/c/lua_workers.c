/* lua_workers.c: torch._workers_selftest, a test-only check of worker
 * sets (gs_parallel.h) that Lua cannot reach otherwise: simulated devices
 * bind sets on their own threads. It starts nsets threads, each bound to
 * a set of its own, which run parallel jobs and matrix products at the
 * same time; the results are checked on the calling thread afterwards.
 * torch._with_workers runs Lua code with a set of a given size bound.
 * Built into the specs' torch.so only (the Makefile's SPEC_TORCH). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "backend/cpu/backend_cpu.h"
#include "backend/cpu/cpu_gemm.h"
#include "core/gs_parallel.h"
#include "bind/lua_gs.h"

void gsL_open_workers(lua_State *L);

#define SELFTEST_CHUNKS 997

typedef struct {
  int threads, reps;
  gs_workers *w;
  gs_tensor *a, *b, *c;           /* c = a @ b, [batch, m, k] @ [batch, k, n] */
  int seen_threads;               /* gs_num_threads() inside the thread */
  int chunk_runs[SELFTEST_CHUNKS];
  bool chunks_ok;
  gs_status st;
  char err[256];
  double seconds;                 /* the thread's wall time */
} selftest_job;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void count_chunk(int64_t c, void *ctx) { ((selftest_job *)ctx)->chunk_runs[c]++; }

static void *selftest_thread(void *arg) {
  selftest_job *j = arg;
  double t0 = now_s();
  gs_workers_bind(j->w);
  j->seen_threads = gs_num_threads();
  j->chunks_ok = true;
  j->st = GS_OK;
  for (int r = 0; r < j->reps && j->st == GS_OK; r++) {
    j->st = gs_parallel_run(SELFTEST_CHUNKS, count_chunk, j);
    for (int c = 0; c < SELFTEST_CHUNKS; c++)
      if (j->chunk_runs[c] != r + 1) j->chunks_ok = false;
    if (j->st == GS_OK && j->c) j->st = gs_cpu_gemm(j->c, j->a, j->b);
  }
  if (j->st != GS_OK) snprintf(j->err, sizeof j->err, "%s", gs_last_error());
  gs_workers_bind(NULL);
  j->seconds = now_s() - t0;
  return NULL;
}

/* Deterministic values in [-1, 1) (no RNG state shared with torch). */
static void fill(gs_tensor *t, uint64_t seed) {
  int64_t n = gs_numel(t);
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    double v = (double)(seed >> 11) / 9007199254740992.0 * 2 - 1;
    if (t->dtype == GS_FLOAT32) ((float *)gs_tensor_ptr(t))[i] = (float)v;
    else ((double *)gs_tensor_ptr(t))[i] = v;
  }
}

static double get(const gs_tensor *t, int64_t i) {
  return t->dtype == GS_FLOAT32 ? (double)((const float *)gs_tensor_ptr(t))[i] : ((const double *)gs_tensor_ptr(t))[i];
}

/* Largest |c - a @ b| over the batch, with the reference in float64. */
static double gemm_error(const selftest_job *j) {
  int64_t B = j->c->shape[0], M = j->c->shape[1], N = j->c->shape[2], K = j->a->shape[2];
  double worst = 0;
  for (int64_t z = 0; z < B; z++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t n = 0; n < N; n++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++) s += get(j->a, (z * M + i) * K + k) * get(j->b, (z * K + k) * N + n);
        double e = fabs(s - get(j->c, (z * M + i) * N + n));
        if (!(e <= worst)) worst = e;
      }
  return worst;
}

static void free_jobs(selftest_job *jobs, int n) {
  for (int i = 0; i < n; i++) {
    if (jobs[i].a) gs_tensor_release(jobs[i].a);
    if (jobs[i].b) gs_tensor_release(jobs[i].b);
    if (jobs[i].c) gs_tensor_release(jobs[i].c);
    gs_workers_destroy(jobs[i].w);
  }
  free(jobs);
}

/* torch._workers_selftest(nsets, threads_each, reps [, {batch, m, k, n, dtype}])
 * -> {seconds = wall time of the whole run, thread_seconds = {...},
 *     threads = {gs_num_threads() seen by each thread},
 *     chunks_ok = every chunk of every job ran exactly once,
 *     gemm_error = largest error against a float64 reference,
 *     host_cores = gs_host_cores()} */
static int l_workers_selftest(lua_State *L) {
  int nsets = (int)luaL_checkinteger(L, 1), each = (int)luaL_checkinteger(L, 2), reps = (int)luaL_checkinteger(L, 3);
  luaL_argcheck(L, nsets >= 1 && nsets <= 16, 1, "expected 1 to 16 sets");
  luaL_argcheck(L, each >= 1 && each <= 64, 2, "expected 1 to 64 threads per set");
  luaL_argcheck(L, reps >= 1, 3, "expected at least 1 repetition");
  int64_t dims[4] = {0, 0, 0, 0};
  gs_dtype dt = GS_FLOAT32;
  bool gemm = !lua_isnoneornil(L, 4);
  if (gemm) {
    luaL_checktype(L, 4, LUA_TTABLE);
    const char *names[4] = {"batch", "m", "k", "n"};
    for (int i = 0; i < 4; i++) {
      lua_getfield(L, 4, names[i]);
      dims[i] = luaL_checkinteger(L, -1);
      luaL_argcheck(L, dims[i] >= 1 && dims[i] <= 4096, 4, "sizes must be 1 to 4096");
      lua_pop(L, 1);
    }
    lua_getfield(L, 4, "dtype");
    const char *d = luaL_optstring(L, -1, "float32");
    if (strcmp(d, "float64") == 0) dt = GS_FLOAT64;
    else if (strcmp(d, "float32") != 0) return luaL_error(L, "dtype must be 'float32' or 'float64', got '%s'", d);
    lua_pop(L, 1);
  }
  selftest_job *jobs = calloc((size_t)nsets, sizeof *jobs);
  if (!jobs) return luaL_error(L, "out of memory");
  for (int i = 0; i < nsets; i++) {
    selftest_job *j = &jobs[i];
    j->threads = each;
    j->reps = reps;
    j->w = gs_workers_create(each);
    if (!j->w) { free_jobs(jobs, nsets); return luaL_error(L, "_workers_selftest: cannot start a set of %d threads", each); }
    if (gemm) {
      int64_t sa[3] = {dims[0], dims[1], dims[2]}, sb[3] = {dims[0], dims[2], dims[3]}, sc[3] = {dims[0], dims[1], dims[3]};
      if (gs_tensor_empty(gs_cpu(), dt, 3, sa, &j->a) != GS_OK || gs_tensor_empty(gs_cpu(), dt, 3, sb, &j->b) != GS_OK ||
          gs_tensor_empty(gs_cpu(), dt, 3, sc, &j->c) != GS_OK) {
        free_jobs(jobs, nsets);
        return gsL_raise(L);
      }
      fill(j->a, 2 * (uint64_t)i + 1);
      fill(j->b, 2 * (uint64_t)i + 2);
    }
  }
  pthread_t *tids = calloc((size_t)nsets, sizeof *tids);
  if (!tids) { free_jobs(jobs, nsets); return luaL_error(L, "out of memory"); }
  double t0 = now_s();
  int started = 0;
  for (; started < nsets; started++)
    if (pthread_create(&tids[started], NULL, selftest_thread, &jobs[started]) != 0) break;
  for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
  double seconds = now_s() - t0;
  free(tids);
  if (started < nsets) { free_jobs(jobs, nsets); return luaL_error(L, "_workers_selftest: cannot start a thread"); }
  for (int i = 0; i < nsets; i++)
    if (jobs[i].st != GS_OK) {
      lua_pushfstring(L, "_workers_selftest: set %d failed: %s", i + 1, jobs[i].err);
      free_jobs(jobs, nsets);
      return lua_error(L);
    }
  lua_createtable(L, 0, 6);
  lua_pushnumber(L, seconds);
  lua_setfield(L, -2, "seconds");
  bool chunks_ok = true;
  double err = 0;
  lua_createtable(L, nsets, 0);
  lua_createtable(L, nsets, 0);
  for (int i = 0; i < nsets; i++) {
    chunks_ok = chunks_ok && jobs[i].chunks_ok;
    if (gemm) { double e = gemm_error(&jobs[i]); if (!(e <= err)) err = e; }
    lua_pushinteger(L, jobs[i].seen_threads);
    lua_rawseti(L, -3, i + 1);
    lua_pushnumber(L, jobs[i].seconds);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -3, "thread_seconds");
  lua_setfield(L, -2, "threads");
  lua_pushboolean(L, chunks_ok);
  lua_setfield(L, -2, "chunks_ok");
  if (gemm) { lua_pushnumber(L, err); lua_setfield(L, -2, "gemm_error"); }
  lua_pushinteger(L, gs_host_cores());
  lua_setfield(L, -2, "host_cores");
  free_jobs(jobs, nsets);
  return 1;
}

/* torch._with_workers(n, fn): calls fn() with the Lua thread bound to a
 * set of n threads (one set per n, made on first use and kept), then
 * restores the set bound before; returns fn's results, or raises its
 * error after restoring. Lets specs run any op as a device with n cores
 * would, whatever the host has. */
static int l_with_workers(lua_State *L) {
  static gs_workers *sets[65];
  static pthread_mutex_t sets_lock = PTHREAD_MUTEX_INITIALIZER;
  int n = (int)luaL_checkinteger(L, 1);
  luaL_argcheck(L, n >= 1 && n <= 64, 1, "expected 1 to 64 threads");
  luaL_checktype(L, 2, LUA_TFUNCTION);
  pthread_mutex_lock(&sets_lock);
  if (!sets[n]) sets[n] = gs_workers_create(n);
  gs_workers *w = sets[n];
  pthread_mutex_unlock(&sets_lock);
  if (!w) return luaL_error(L, "_with_workers: cannot start a set of %d threads", n);
  gs_workers *before = gs_workers_bound();
  lua_settop(L, 2);
  gs_workers_bind(w);
  int rc = lua_pcall(L, 0, LUA_MULTRET, 0);
  gs_workers_bind(before);
  if (rc != LUA_OK) return lua_error(L);
  return lua_gettop(L) - 1;
}

/* torch._num_threads(): threads of the set bound to the calling thread
 * (the global set, all the host's cores, on the Lua thread). */
static int l_num_threads(lua_State *L) {
  lua_pushinteger(L, gs_num_threads());
  return 1;
}

/* torch._blas_limit(n): the largest size one BLAS call gets (nil: back
 * to 2^31 - 1), so products are cut into many calls at small sizes. */
static int l_blas_limit(lua_State *L) {
  gs_cpu_gemm_set_blas_limit(luaL_optinteger(L, 1, 0));
  return 0;
}

/* torch._blas_refusal_selftest() -> the argument BLAS refused in a bad call */
static int l_blas_refusal_selftest(lua_State *L) {
  lua_pushinteger(L, gs_cpu_gemm_refusal_selftest());
  return 1;
}

void gsL_open_workers(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"_workers_selftest", l_workers_selftest}, {"_num_threads", l_num_threads},
    {"_with_workers", l_with_workers}, {"_blas_limit", l_blas_limit},
    {"_blas_refusal_selftest", l_blas_refusal_selftest}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
