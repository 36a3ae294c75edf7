/* lua_dist.c: the C half of torch.cuda.comm (torch._comm) and of
 * torch.distributed (torch._dist). Options, 1-based dims and device lists
 * are read by the Lua halves, lua/torch/cuda_comm.lua and
 * lua/torch/distributed.lua; these take engine-ready arguments. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "distributed/gs_comm.h"
#include "distributed/gs_dist.h"
#include "bind/lua_gs.h"

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

/* torch.cuda.nccl.version() -> major, minor, patch (PyTorch's tuple) */
static int c_nccl_version(lua_State *L) {
  int v[3];
  gsL_check(L, gs_comm_nccl_version(&v[0], &v[1], &v[2]));
  for (int i = 0; i < 3; i++) lua_pushinteger(L, v[i]);
  return 3;
}

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
  int n = device_list(L, 2, devs), k = 0, nsizes = 0;
  int64_t sizes[64];
  bool have = !lua_isnoneornil(L, 3);
  if (have) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_Integer len = luaL_len(L, 3);
    nsizes = len < 0 ? 0 : len > INT_MAX ? INT_MAX : (int)len;
    for (int i = 0; i < nsizes && i < 64; i++) {
      lua_geti(L, 3, i + 1);
      if (!lua_isinteger(L, -1)) return luaL_error(L, "scatter: chunk_sizes[%d] must be an integer", i + 1);
      sizes[i] = lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
  }
  gsL_register(L, 1);
  gsL_check(L, gs_comm_scatter(t, n, devs, have ? sizes : NULL, nsizes, (int)luaL_checkinteger(L, 4), &k, outs));
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
/* refuse(name): torch.distributed refused a call with bad arguments before
 * reaching the engine; the other ranks are told (gs_dist_refuse). */
static int d_refuse(lua_State *L) {
  gs_dist_refuse(luaL_checkstring(L, 1));
  return 0;
}

/* A Work: the collective in flight (NULL once waited on) and, after
 * wait(), when it went through the communication thread. User value 1
 * holds the call's tensors, so Lua keeps them alive as long as the Work. */
typedef struct {
  gs_dist_work *w;
  bool timed;
  gs_dist_times times;
} work_ud;

/* Pushes a Work for a collective about to start; the tensors at the
 * given stack indices (0: none) stay alive with it. Call the collective
 * with &ud->w; it leaves NULL there when it ran to the end at once (nccl). */
static work_ud *new_work(lua_State *L, int t1, int t2) {
  t1 = t1 ? lua_absindex(L, t1) : 0;
  t2 = t2 ? lua_absindex(L, t2) : 0;
  work_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
  memset(u, 0, sizeof *u);
  luaL_setmetatable(L, WORK_MT);
  lua_createtable(L, 2, 0);
  if (t1) { lua_pushvalue(L, t1); lua_rawseti(L, -2, 1); }
  if (t2) { lua_pushvalue(L, t2); lua_rawseti(L, -2, 2); }
  lua_setiuservalue(L, -2, 1);
  return u;
}

/* Each collective: the last argument true asks for a Work (async_op). */
static int d_barrier(lua_State *L) {
  if (!lua_toboolean(L, 1)) { gsL_check(L, gs_dist_barrier(NULL)); return 0; }
  work_ud *u = new_work(L, 0, 0);
  gsL_check(L, gs_dist_barrier(&u->w));
  return 1;
}

/* all_reduce(t, op, async) */
static int d_all_reduce(lua_State *L) {
  gs_tensor *t = gsL_checktensor(L, 1);
  gs_dist_op op = check_op(L, 2);
  if (!lua_toboolean(L, 3)) { gsL_check(L, gs_dist_all_reduce(t, op, NULL)); return 0; }
  work_ud *u = new_work(L, 1, 0);
  gsL_check(L, gs_dist_all_reduce(t, op, &u->w));
  return 1;
}

/* broadcast(t, src, async) */
static int d_broadcast(lua_State *L) {
  gs_tensor *t = gsL_checktensor(L, 1);
  int src = (int)luaL_checkinteger(L, 2);
  if (!lua_toboolean(L, 3)) { gsL_check(L, gs_dist_broadcast(t, src, NULL)); return 0; }
  work_ud *u = new_work(L, 1, 0);
  gsL_check(L, gs_dist_broadcast(t, src, &u->w));
  return 1;
}

/* all_gather_into(out, t, async) */
static int d_all_gather_into(lua_State *L) {
  gs_tensor *out = gsL_checktensor(L, 1), *t = gsL_checktensor(L, 2);
  if (!lua_toboolean(L, 3)) { gsL_check(L, gs_dist_all_gather_into(out, t, NULL)); return 0; }
  work_ud *u = new_work(L, 1, 2);
  gsL_check(L, gs_dist_all_gather_into(out, t, &u->w));
  return 1;
}

/* reduce_scatter_from(out, in, op, async) */
static int d_reduce_scatter_from(lua_State *L) {
  gs_tensor *out = gsL_checktensor(L, 1), *in = gsL_checktensor(L, 2);
  gs_dist_op op = check_op(L, 3);
  if (!lua_toboolean(L, 4)) { gsL_check(L, gs_dist_reduce_scatter_from(out, in, op, NULL)); return 0; }
  work_ud *u = new_work(L, 1, 2);
  gsL_check(L, gs_dist_reduce_scatter_from(out, in, op, &u->w));
  return 1;
}

/* ---- Work ---- */

/* work:wait(): true once the collective is done; its error, if it
 * failed, is raised here. Ctrl-C raises 'interrupted!' and leaves the
 * collective in flight: wait() again to finish it. */
static int w_wait(lua_State *L) {
  work_ud *u = luaL_checkudata(L, 1, WORK_MT);
  if (u->w) {
    gs_status s = gs_dist_wait(&u->w, &u->times);
    if (!u->w) u->timed = true;
    gsL_check(L, s);
  }
  /* the Lua half's last step (all_gather's copies into the list) */
  lua_getiuservalue(L, 1, 1);
  if (lua_getfield(L, -1, "after") == LUA_TFUNCTION) {
    lua_pushnil(L);
    lua_setfield(L, -3, "after");
    lua_call(L, 0, 0);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* work_after(work, fn): fn() runs when wait() first succeeds. */
static int d_work_after(lua_State *L) {
  luaL_checkudata(L, 1, WORK_MT);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_getiuservalue(L, 1, 1);
  lua_pushvalue(L, 2);
  lua_setfield(L, -2, "after");
  return 0;
}

static int w_is_completed(lua_State *L) {
  work_ud *u = luaL_checkudata(L, 1, WORK_MT);
  lua_pushboolean(L, !u->w || gs_dist_work_done(u->w));
  return 1;
}

/* work:_timing(): after wait(), a table of CLOCK_MONOTONIC seconds (the
 * clock of torch.clock()): submitted, started (the communication thread
 * took it), agreed (every rank had arrived), finished; nil before.
 * gshell's own, for measuring overlap (bench/dist/ddp.lua). */
static int w_timing(lua_State *L) {
  work_ud *u = luaL_checkudata(L, 1, WORK_MT);
  if (!u->timed) { lua_pushnil(L); return 1; }
  lua_createtable(L, 0, 4);
  lua_pushnumber(L, u->times.submitted); lua_setfield(L, -2, "submitted");
  lua_pushnumber(L, u->times.started); lua_setfield(L, -2, "started");
  lua_pushnumber(L, u->times.agreed); lua_setfield(L, -2, "agreed");
  lua_pushnumber(L, u->times.finished); lua_setfield(L, -2, "finished");
  return 1;
}

static int w_tostring(lua_State *L) {
  work_ud *u = luaL_checkudata(L, 1, WORK_MT);
  lua_pushfstring(L, "torch.distributed.Work(%s)", !u->w ? "completed" : gs_dist_work_done(u->w) ? "finished, not waited on" : "in flight");
  return 1;
}

/* A Work collected without wait(): the collective still finishes on the
 * communication thread, which never touches freed memory (the engine
 * keeps the tensors until then); its result is not checked. */
static int w_gc(lua_State *L) {
  work_ud *u = luaL_checkudata(L, 1, WORK_MT);
  if (u->w) gs_dist_abandon(u->w);
  u->w = NULL;
  return 0;
}

void gsL_open_dist(lua_State *L) {
  luaL_newmetatable(L, WORK_MT);
  static const luaL_Reg wm[] = {{"wait", w_wait}, {"is_completed", w_is_completed}, {"_timing", w_timing}, {"__gc", w_gc},
                                 {"__tostring", w_tostring}, {NULL, NULL}};
  luaL_setfuncs(L, wm, 0);
  lua_pushvalue(L, -1);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  static const luaL_Reg comm[] = {
    {"broadcast", c_broadcast}, {"reduce_add", c_reduce_add}, {"scatter", c_scatter}, {"gather", c_gather},
    {"nccl_version", c_nccl_version}, {NULL, NULL}};
  lua_newtable(L);
  luaL_setfuncs(L, comm, 0);
  lua_setfield(L, -2, "_comm");
  static const luaL_Reg dist[] = {
    {"is_available", d_is_available}, {"init", d_init}, {"is_initialized", d_is_initialized}, {"rank", d_rank},
    {"world_size", d_world_size}, {"local_rank", d_local_rank}, {"backend", d_backend}, {"destroy", d_destroy}, {"refuse", d_refuse},
    {"barrier", d_barrier}, {"all_reduce", d_all_reduce}, {"broadcast", d_broadcast},
    {"all_gather_into", d_all_gather_into}, {"reduce_scatter_from", d_reduce_scatter_from},
    {"work_after", d_work_after}, {NULL, NULL}};
  lua_newtable(L);
  luaL_setfuncs(L, dist, 0);
  lua_setfield(L, -2, "_dist");
}
