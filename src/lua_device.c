/* lua_device.c: torch.cuda.* and the default device. */
#include <stdlib.h>
#include "lua_gs.h"

static int c_is_available(lua_State *L) { lua_pushboolean(L, gs_cuda_device_count() > 0); return 1; }
static int c_device_count(lua_State *L) { lua_pushinteger(L, gs_cuda_device_count()); return 1; }
static int c_current_device(lua_State *L) { lua_pushinteger(L, gs_cuda_current_device()); return 1; }

/* A CUDA device argument: ordinal, 'cuda:i', device object; nil = current */
static gs_device cuda_arg(lua_State *L, int idx) {
  gs_device d = {GS_CUDA, -1};
  if (!lua_isnoneornil(L, idx)) d = gsL_checkdevice(L, idx);
  if (d.type != GS_CUDA) luaL_error(L, "expected a CUDA device, got %s", luaL_tolstring(L, idx, NULL));
  gsL_check(L, gs_device_resolve(d, &d));
  return d;
}

static int c_set_device(lua_State *L) {
  gs_device d = gsL_checkdevice(L, 1);
  if (d.type != GS_CUDA) return luaL_error(L, "set_device: expected a CUDA device, got %s", luaL_tolstring(L, 1, NULL));
  gsL_check(L, gs_cuda_set_device(d.index < 0 ? gs_cuda_current_device() : d.index));
  return 0;
}

static int c_synchronize(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    for (int i = 0; i < gs_cuda_device_count(); i++) {
      gs_device d = {GS_CUDA, i};
      const gs_backend *be = gs_device_backend(d);
      if (be && be->synchronize) gsL_check(L, be->synchronize(i));
    }
    return 0;
  }
  gs_device d = cuda_arg(L, 1);
  const gs_backend *be = gs_device_backend(d);
  if (be && be->synchronize) gsL_check(L, be->synchronize(d.index));
  return 0;
}

static void stats(lua_State *L, int idx, gs_mem_stats *s, gs_device *dev) {
  gs_device d = cuda_arg(L, idx);
  const gs_backend *be = gs_device_backend(d);
  *s = (gs_mem_stats){0};
  if (be && be->mem_stats) be->mem_stats(d.index, s);
  if (dev) *dev = d;
}

static int c_memory_allocated(lua_State *L) { gs_mem_stats s; stats(L, 1, &s, NULL); lua_pushinteger(L, (lua_Integer)s.allocated); return 1; }
static int c_max_memory_allocated(lua_State *L) { gs_mem_stats s; stats(L, 1, &s, NULL); lua_pushinteger(L, (lua_Integer)s.max_allocated); return 1; }
static int c_memory_reserved(lua_State *L) { gs_mem_stats s; stats(L, 1, &s, NULL); lua_pushinteger(L, (lua_Integer)s.reserved); return 1; }
static int c_mem_get_info(lua_State *L) {
  gs_mem_stats s;
  stats(L, 1, &s, NULL);
  lua_pushinteger(L, (lua_Integer)s.free);
  lua_pushinteger(L, (lua_Integer)s.total);
  return 2;
}
static int c_reset_peak(lua_State *L) {
  gs_device d = cuda_arg(L, 1);
  const gs_backend *be = gs_device_backend(d);
  if (be && be->reset_peak) be->reset_peak(d.index);
  return 0;
}
static int c_empty_cache(lua_State *L) {
  for (int i = 0; i < gs_cuda_device_count(); i++) {
    gs_device d = {GS_CUDA, i};
    const gs_backend *be = gs_device_backend(d);
    if (be && be->empty_cache) be->empty_cache(i);
  }
  return 0;
}

static void push_count(lua_State *L, const char *name, gs_transfer_count c) {
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)c.count);
  lua_setfield(L, -2, "count");
  lua_pushinteger(L, (lua_Integer)c.bytes);
  lua_setfield(L, -2, "bytes");
  lua_setfield(L, -2, name);
}
static int c_transfers(lua_State *L) {
  lua_createtable(L, 0, 3);
  push_count(L, "h2d", gs_transfers.h2d);
  push_count(L, "d2h", gs_transfers.d2h);
  push_count(L, "d2d", gs_transfers.d2d);
  return 1;
}
static int c_reset_transfers(lua_State *L) { gs_transfers = (gs_transfer_stats){{0, 0}, {0, 0}, {0, 0}}; return 0; }

static int l_set_default_device(lua_State *L) {
  gs_device d = gsL_checkdevice(L, 1);
  if (d.type == GS_CUDA && d.index >= 0) gsL_check(L, gs_device_resolve(d, &d));
  gsL_set_default_device(d);
  return 0;
}
static int l_get_default_device(lua_State *L) {
  gs_device d = gsL_default_device();
  if (d.type == GS_CUDA && d.index < 0) d.index = gs_cuda_current_device();
  gsL_pushdevice(L, d);
  return 1;
}
static int l_set_log_device_placement(lua_State *L) { gs_log_placement = lua_toboolean(L, 1); return 0; }

/* Internal: (re)configure simulated GPUs; only while no tensor lives on one. */
static int l_sim_configure(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  lua_Integer cap = luaL_optinteger(L, 2, 0);
  if (n < 0 || n > 64) return luaL_error(L, "simulated GPUs: expected 0 to 64, got %d", (int)n);
  lua_gc(L, LUA_GCCOLLECT);
  for (int i = 0; i < gs_cuda_device_count() && gs_cuda_is_simulated(); i++) {
    gs_mem_stats s;
    gs_device d = {GS_CUDA, i};
    gs_device_backend(d)->mem_stats(i, &s);
    if (s.allocated) return luaL_error(L, "cannot change simulated GPUs while tensors live on cuda:%d", i);
  }
  gs_devices_init((int)n, (size_t)cap);
  gsL_set_default_device(gs_cpu());
  return 0;
}

void gsL_open_device(lua_State *L) {
  static const luaL_Reg cuda[] = {
    {"is_available", c_is_available}, {"device_count", c_device_count},
    {"current_device", c_current_device}, {"set_device", c_set_device}, {"synchronize", c_synchronize},
    {"memory_allocated", c_memory_allocated}, {"max_memory_allocated", c_max_memory_allocated},
    {"memory_reserved", c_memory_reserved}, {"mem_get_info", c_mem_get_info},
    {"reset_peak_memory_stats", c_reset_peak}, {"empty_cache", c_empty_cache},
    {"transfers", c_transfers}, {"reset_transfers", c_reset_transfers}, {NULL, NULL}};
  lua_newtable(L);
  luaL_setfuncs(L, cuda, 0);
  lua_setfield(L, -2, "cuda");
  static const luaL_Reg fns[] = {
    {"set_default_device", l_set_default_device}, {"get_default_device", l_get_default_device},
    {"set_log_device_placement", l_set_log_device_placement}, {"_sim_configure", l_sim_configure},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
