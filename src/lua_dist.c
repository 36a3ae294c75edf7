/* lua_dist.c: the C half of torch.cuda.comm (torch._comm) and of
 * torch.distributed (torch._dist). Options, 1-based dims and device lists
 * are read by the Lua halves, lua/torch/cuda_comm.lua and
 * lua/torch/distributed.lua; these take engine-ready arguments. */
#include <stdlib.h>
#include <string.h>
#include "gs_comm.h"
#include "gs_dist.h"
#include "lua_gs.h"

#define WORK_MT "torch.distributed.Work"

/* A list of tensors at idx (1..n), at most 64. */
static int tensor_list(lua_State *L, int idx, gs_tensor **out, const char *fn) {
  luaL_checktype(L, idx, LUA_TTABLE);
  int n = (int)luaL_len(L, idx);
  if (n > 64) return luaL_error(L, "%s: at most 64 tensors, got %d", fn, n);
  for (int i = 0; i < n; i++) {
    lua_geti(L, idx, i + 1);
    out[i] = gsL_testtensor(L, -1);
    if (!out[i]) return luaL_error(L, "%s: element %d of the list is not a tensor (got %s)", fn, i + 1, luaL_typename(L, -1));
    lua_pop(L, 1);
  }
  return n;
}

static int device_list(lua_State *L, int idx, gs_device *out) {
  luaL_checktype(L, idx, LUA_TTABLE);
  int n = (int)luaL_len(L, idx);
  if (n > 64) return luaL_error(L, "at most 64 devices, got %d", n);
  for (int i = 0; i < n; i++) {
    lua_geti(L, idx, i + 1);
    out[i] = gsL_checkdevice(L, -1);
    lua_pop(L, 1);
  }
  return n;
}

static void push_list(lua_State *L, int n, gs_tensor **ts) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) { gsL_pushtensor(L, ts[i]); lua_seti(L, -2, i + 1); }
}

/* ---- torch._comm ---- */

static int c_broadcast(lua_State *L) {
  gs_tensor *t = gsL_checktensor(L, 1), *outs[64];
  gs_device devs[64];
  int n = device_list(L, 2, devs);
  gsL_register(L, 1); /* the output on t's own device is t itself, the same Lua value */
  gsL_check(L, gs_comm_broadcast(t, n, devs, outs));
  push_list(L, n, outs);
  return 1;
}

static int c_reduce_add(lua_State *L) {
  gs_tensor *ins[64], *r;
  int n = tensor_list(L, 1, ins, "reduce_add");
  gsL_check(L, gs_comm_reduce_add(ins, n, gsL_checkdevice(L, 2), &r));
  gsL_pushtensor(L, r);
  return 1;
}

/* scatter(t, devices, chunk_sizes or nil, dim0) */
static int c_scatter(lua_State *L) {
  gs_tensor *t = gsL_checktensor(L, 1), *outs[64];
  gs_device devs[64];
  int n = device_list(L, 2, devs), k = 0;
  int64_t sizes[64];
  bool have = !lua_isnoneornil(L, 3);
  if (have) {
    luaL_checktype(L, 3, LUA_TTABLE);
    if ((int)luaL_len(L, 3) != n)
      return luaL_error(L, "scatter: chunk_sizes has %d entries for %d devices (one per device expected)",
                        (int)luaL_len(L, 3), n);
    for (int i = 0; i < n; i++) {
      lua_geti(L, 3, i + 1);
      if (!lua_isinteger(L, -1)) return luaL_error(L, "scatter: chunk_sizes[%d] must be an integer", i + 1);
      sizes[i] = lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
  }
  gsL_register(L, 1);
  gsL_check(L, gs_comm_scatter(t, n, devs, have ? sizes : NULL, (int)luaL_checkinteger(L, 4), &k, outs));
  push_list(L, k, outs);
  return 1;
}

/* gather(list, dim0, destination) */
static int c_gather(lua_State *L) {
  gs_tensor *ins[64], *r;
  int n = tensor_list(L, 1, ins, "gather");
  gsL_check(L, gs_comm_gather(ins, n, (int)luaL_checkinteger(L, 2), gsL_checkdevice(L, 3), &r));
  gsL_pushtensor(L, r);
  return 1;
}

/* ---- torch._dist ---- */

static gs_dist_op check_op(lua_State *L, int idx) {
  static const char *const names[] = {"sum", "avg", "product", "min", "max", NULL};
  return (gs_dist_op)luaL_checkoption(L, idx, "sum", names);
}

static int d_is_available(lua_State *L) {
  const char *why = NULL;
  bool ok = gs_dist_available(&why);
  lua_pushboolean(L, ok);
  if (ok) return 1;
  lua_pushstring(L, why);
  return 2;
}

static int d_init(lua_State *L) {
  static const char *const names[] = {"mpi", "nccl", NULL};
  gs_dist_backend be = (gs_dist_backend)luaL_checkoption(L, 1, "mpi", names);
  gsL_check(L, gs_dist_init(be, (int)luaL_optinteger(L, 2, 0)));
  return 0;
}

static int d_is_initialized(lua_State *L) { lua_pushboolean(L, gs_dist_is_initialized()); return 1; }
static int d_rank(lua_State *L) { lua_pushinteger(L, gs_dist_rank()); return 1; }
static int d_world_size(lua_State *L) { lua_pushinteger(L, gs_dist_world_size()); return 1; }
static int d_local_rank(lua_State *L) { lua_pushinteger(L, gs_dist_local_rank()); return 1; }
static int d_backend(lua_State *L) {
  lua_pushstring(L, gs_dist_get_backend() == GS_DIST_BACKEND_NCCL ? "nccl" : "mpi");
  return 1;
}
static int d_destroy(lua_State *L) { gsL_check(L, gs_dist_destroy()); return 0; }
static int d_barrier(lua_State *L) { gsL_check(L, gs_dist_barrier()); return 0; }

/* all_reduce(t, op, async): async returns a Work */
static int d_all_reduce(lua_State *L) {
  gs_tensor *t = gsL_checktensor(L, 1);
  gs_dist_op op = check_op(L, 2);
  if (!lua_toboolean(L, 3)) { gsL_check(L, gs_dist_all_reduce(t, op, NULL)); return 0; }
  gs_dist_work **p = lua_newuserdatauv(L, sizeof *p, 1);
  *p = NULL;
  luaL_setmetatable(L, WORK_MT);
  gsL_check(L, gs_dist_all_reduce(t, op, p));
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1); /* the tensor stays alive while the work runs */
  return 1;
}

static int d_broadcast(lua_State *L) {
  gsL_check(L, gs_dist_broadcast(gsL_checktensor(L, 1), (int)luaL_checkinteger(L, 2)));
  return 0;
}

static int d_all_gather_into(lua_State *L) {
  gsL_check(L, gs_dist_all_gather_into(gsL_checktensor(L, 1), gsL_checktensor(L, 2)));
  return 0;
}

static int d_reduce_scatter_from(lua_State *L) {
  gsL_check(L, gs_dist_reduce_scatter_from(gsL_checktensor(L, 1), gsL_checktensor(L, 2), check_op(L, 3)));
  return 0;
}

/* ---- Work ---- */

static int w_wait(lua_State *L) {
  gs_dist_work **p = luaL_checkudata(L, 1, WORK_MT);
  gs_dist_work *w = *p;
  *p = NULL;
  if (w) gsL_check(L, gs_dist_wait(w));
  lua_pushboolean(L, 1);
  return 1;
}

static int w_is_completed(lua_State *L) {
  gs_dist_work **p = luaL_checkudata(L, 1, WORK_MT);
  lua_pushboolean(L, !*p || gs_dist_work_done(*p));
  return 1;
}

/* A work dropped without wait() still finishes before its memory goes. */
static int w_gc(lua_State *L) {
  gs_dist_work **p = luaL_checkudata(L, 1, WORK_MT);
  if (*p) (void)gs_dist_wait(*p);
  *p = NULL;
  return 0;
}

void gsL_open_dist(lua_State *L) {
  luaL_newmetatable(L, WORK_MT);
  static const luaL_Reg wm[] = {{"wait", w_wait}, {"is_completed", w_is_completed}, {"__gc", w_gc}, {NULL, NULL}};
  luaL_setfuncs(L, wm, 0);
  lua_pushvalue(L, -1);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  static const luaL_Reg comm[] = {
    {"broadcast", c_broadcast}, {"reduce_add", c_reduce_add}, {"scatter", c_scatter}, {"gather", c_gather},
    {NULL, NULL}};
  lua_newtable(L);
  luaL_setfuncs(L, comm, 0);
  lua_setfield(L, -2, "_comm");
  static const luaL_Reg dist[] = {
    {"is_available", d_is_available}, {"init", d_init}, {"is_initialized", d_is_initialized}, {"rank", d_rank},
    {"world_size", d_world_size}, {"local_rank", d_local_rank}, {"backend", d_backend}, {"destroy", d_destroy},
    {"barrier", d_barrier}, {"all_reduce", d_all_reduce}, {"broadcast", d_broadcast},
    {"all_gather_into", d_all_gather_into}, {"reduce_scatter_from", d_reduce_scatter_from}, {NULL, NULL}};
  lua_newtable(L);
  luaL_setfuncs(L, dist, 0);
  lua_setfield(L, -2, "_dist");
}
