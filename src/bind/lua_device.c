/* lua_device.c: torch.cuda.* and the default device. Everything here is
 * backend-neutral: memory figures, properties and utilisation come from
 * the device's gs_backend table (mem_stats, properties, utilization
 * slots). The Lua half (smi, device scopes, torch.cuda.device) is
 * lua/torch/devices.lua. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bind/lua_gs.h"
#include "core/gs_dlopen.h"

static int c_is_available(lua_State *L) { lua_pushboolean(L, gs_cuda_device_count() > 0); return 1; }
static int c_device_count(lua_State *L) { lua_pushinteger(L, gs_cuda_device_count()); return 1; }
static int c_is_simulated(lua_State *L) { lua_pushboolean(L, gs_devices_sim_count() > 0); return 1; }

/* Why no real CUDA device is usable, or nil when there is one. */
static int c_unavailable_reason(lua_State *L) {
  const char *why = gs_cuda_unavailable();
  if (why) lua_pushstring(L, why);
  else lua_pushnil(L);
  return 1;
}

/* torch.cuda.libraries(): {label = path} of the CUDA libraries loaded so
 * far (the driver once devices were counted, cuBLAS after the first
 * product), and the same pairs in load order in the array part. */
static int c_libraries(lua_State *L) {
  (void)gs_cuda_device_count(); /* counting devices loads the driver, if there is one */
  lua_newtable(L);
  const char *label, *path;
  for (int i = 0; gs_cuda_loaded_library(i, &label, &path); i++) {
    lua_pushstring(L, path);
    lua_setfield(L, -2, label);
    lua_createtable(L, 0, 2);
    lua_pushstring(L, label);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, path);
    lua_setfield(L, -2, "path");
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* The checks of a CUDA device argument, run protected by cuda_ordinal:
 * ordinal, 'cuda:i', 'cuda', device object; nil means the current device.
 * Pushes the ordinal of a device that exists. */
static int checked_cuda(lua_State *L) {
  gs_device d = {GS_CUDA, -1};
  if (!lua_isnoneornil(L, 1)) d = gsL_checkdevice(L, 1);
  if (d.type != GS_CUDA) {
    char what[200];
    gs_devices_describe(what, sizeof what);
    return luaL_error(L, "expected a CUDA device, got %s (%s)", luaL_tolstring(L, 1, NULL), what);
  }
  gsL_check(L, gs_device_resolve(d, &d));
  lua_pushinteger(L, d.index);
  return 1;
}

/* The ordinal of the CUDA device argument at idx, or -1 with the reason
 * (no position in it) pushed. It never raises, so that each caller raises
 * naming its own call, at its user's line. */
static int cuda_ordinal(lua_State *L, int idx) {
  bool none = lua_isnone(L, idx);
  idx = lua_absindex(L, idx);
  lua_pushcfunction(L, checked_cuda);
  if (none) lua_pushnil(L); /* (idx may be the slot the function now fills) */
  else lua_pushvalue(L, idx);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) return -1;
  int d = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return d;
}

/* A CUDA device argument that exists; a bad one raises an error naming
 * torch.cuda.<fn> at the caller's line. */
static gs_device cuda_arg(lua_State *L, int idx, const char *fn) {
  int d = cuda_ordinal(L, idx);
  if (d < 0) luaL_error(L, "torch.cuda.%s: %s", fn, lua_tostring(L, -1));
  return (gs_device){GS_CUDA, d};
}

/* torch.cuda._ordinal(dev): the ordinal, or nil and why, for the Lua
 * library (streams, torch.cuda.device) to raise at its caller's level. */
static int c_ordinal(lua_State *L) {
  lua_settop(L, 1);
  int d = cuda_ordinal(L, 1);
  if (d < 0) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  lua_pushinteger(L, d);
  return 1;
}

static int c_current_device(lua_State *L) {
  if (gs_cuda_device_count() == 0) {
    char what[200];
    gs_devices_describe(what, sizeof what);
    return luaL_error(L, "torch.cuda.current_device: no CUDA device (%s)", what);
  }
  lua_pushinteger(L, gs_cuda_current_device());
  return 1;
}

static int c_set_device(lua_State *L) {
  if (lua_isnoneornil(L, 1)) return luaL_error(L, "torch.cuda.set_device(i): expected a CUDA ordinal or device");
  gs_device d = cuda_arg(L, 1, "set_device"); /* 'cuda' resolves to where it is: no change */
  gsL_check(L, gs_cuda_set_device(d.index));
  return 0;
}

/* ---- properties ---- */

static void get_props(lua_State *L, gs_device d, gs_device_props *p) {
  const gs_backend *be = gs_device_backend(d);
  if (!be || !be->properties) luaL_error(L, "cuda:%d: its backend reports no properties", d.index);
  gsL_check(L, be->properties(d.index, p));
}

static int c_get_device_name(lua_State *L) {
  gs_device_props p;
  get_props(L, cuda_arg(L, 1, "get_device_name"), &p);
  lua_pushstring(L, p.name);
  return 1;
}

/* Prints like PyTorch's _CudaDeviceProperties. */
static int props_tostring(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "name");
  lua_getfield(L, 1, "major");
  lua_getfield(L, 1, "minor");
  lua_getfield(L, 1, "total_memory");
  lua_getfield(L, 1, "multi_processor_count");
  lua_getfield(L, 1, "simulated");
  lua_pushfstring(L, "_CudaDeviceProperties(name='%s', major=%d, minor=%d, total_memory=%dMB, multi_processor_count=%d%s)",
                  lua_tostring(L, 2), (int)lua_tointeger(L, 3), (int)lua_tointeger(L, 4),
                  (int)(lua_tointeger(L, 5) >> 20), (int)lua_tointeger(L, 6),
                  lua_toboolean(L, 7) ? ", simulated=True" : "");
  return 1;
}

static int c_get_device_properties(lua_State *L) {
  gs_device d = cuda_arg(L, 1, "get_device_properties");
  gs_device_props p;
  get_props(L, d, &p);
  lua_createtable(L, 0, 7);
  lua_pushstring(L, p.name); lua_setfield(L, -2, "name");
  lua_pushinteger(L, (lua_Integer)p.total_memory); lua_setfield(L, -2, "total_memory");
  lua_pushinteger(L, p.major); lua_setfield(L, -2, "major");
  lua_pushinteger(L, p.minor); lua_setfield(L, -2, "minor");
  lua_pushinteger(L, p.multi_processor_count); lua_setfield(L, -2, "multi_processor_count");
  lua_pushboolean(L, p.simulated); lua_setfield(L, -2, "simulated");
  lua_pushinteger(L, d.index); lua_setfield(L, -2, "index");
  if (luaL_newmetatable(L, "torch.cuda.DeviceProperties")) {
    lua_pushcfunction(L, props_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_setmetatable(L, -2);
  return 1;
}

static int c_get_device_capability(lua_State *L) {
  gs_device_props p;
  get_props(L, cuda_arg(L, 1, "get_device_capability"), &p);
  lua_pushinteger(L, p.major);
  lua_pushinteger(L, p.minor);
  return 2;
}

/* Percent of time the device ran kernels since the last reading; nil when
 * the backend cannot tell (real devices: gshell does not link NVML). */
static int c_utilization(lua_State *L) {
  gs_device d = cuda_arg(L, 1, "utilization");
  const gs_backend *be = gs_device_backend(d);
  if (be && be->utilization) lua_pushinteger(L, be->utilization(d.index));
  else lua_pushnil(L);
  return 1;
}

/* ---- synchronisation and memory ---- */

/* One sync-debug note for the call (the devices' own notes are dropped,
 * so 'warn' prints one line however many devices there are). */
static int c_synchronize(lua_State *L) {
  gs_device d = {GS_CUDA, -1};
  if (!lua_isnoneornil(L, 1)) d = cuda_arg(L, 1, "synchronize");
  gsL_check(L, gs_sync_note("torch.cuda.synchronize"));
  for (int i = 0; i < gs_cuda_device_count(); i++) {
    if (d.index >= 0 && i != d.index) continue;
    const gs_backend *be = gs_device_backend((gs_device){GS_CUDA, i});
    gs_status st = be && be->synchronize ? be->synchronize(i) : GS_OK;
    gs_sync_warning = NULL;
    gsL_check(L, st);
  }
  return 0;
}

static gs_device stats(lua_State *L, int idx, gs_mem_stats *s, const char *fn) {
  gs_device d = cuda_arg(L, idx, fn);
  const gs_backend *be = gs_device_backend(d);
  *s = (gs_mem_stats){0};
  if (be && be->mem_stats) be->mem_stats(d.index, s);
  return d;
}

/* memory_allocated, max_memory_allocated, memory_reserved,
 * max_memory_reserved: one field of
 * gs_mem_stats each (upvalues: the field's offset and the function name) */
static int c_mem_field(lua_State *L) {
  gs_mem_stats s;
  stats(L, 1, &s, lua_tostring(L, lua_upvalueindex(2)));
  size_t v;
  memcpy(&v, (const char *)&s + lua_tointeger(L, lua_upvalueindex(1)), sizeof v);
  lua_pushinteger(L, (lua_Integer)v);
  return 1;
}
/* (free, total) as two values: free = total - reserved */
static int c_mem_get_info(lua_State *L) {
  gs_mem_stats s;
  stats(L, 1, &s, "mem_get_info");
  lua_pushinteger(L, (lua_Integer)s.free);
  lua_pushinteger(L, (lua_Integer)s.total);
  return 2;
}
static int c_reset_peak(lua_State *L) {
  gs_device d = cuda_arg(L, 1, "reset_peak_memory_stats");
  const gs_backend *be = gs_device_backend(d);
  if (be && be->reset_peak) be->reset_peak(d.index);
  return 0;
}
/* Releases the cached (free but reserved) blocks of every device (a
 * backend whose memory is the host's empties the host allocator's cache
 * too: backend_sim.c). */
static int c_empty_cache(lua_State *L) {
  for (int i = 0; i < gs_cuda_device_count(); i++) {
    gs_device d = {GS_CUDA, i};
    const gs_backend *be = gs_device_backend(d);
    if (be && be->empty_cache) be->empty_cache(i);
  }
  return 0;
}

static void set_int(lua_State *L, const char *k, uint64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

/* A subset of PyTorch's memory_stats() dictionary, same key names. */
static int c_memory_stats(lua_State *L) {
  gs_mem_stats s;
  stats(L, 1, &s, "memory_stats");
  lua_newtable(L);
  set_int(L, "allocated_bytes.all.current", s.allocated);
  set_int(L, "allocated_bytes.all.peak", s.max_allocated);
  set_int(L, "reserved_bytes.all.current", s.reserved);
  set_int(L, "reserved_bytes.all.peak", s.max_reserved);
  if (s.has_counters) {
    set_int(L, "inactive_split_bytes.all.current", s.reserved - s.allocated);
    set_int(L, "allocation.all.allocated", s.n_alloc);
    set_int(L, "allocation.all.freed", s.n_free);
    set_int(L, "allocation.all.current", s.n_alloc - s.n_free);
    set_int(L, "num_cache_hits", s.n_cache_hits);
    set_int(L, "num_alloc_retries", s.n_alloc_retries);
    set_int(L, "num_ooms", s.n_ooms);
    set_int(L, "num_kernels", s.kernels);
    lua_pushnumber(L, (double)s.busy_ns * 1e-9);
    lua_setfield(L, -2, "kernel_seconds");
  }
  return 1;
}

/* ---- transfers ---- */

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

static int c_getpid(lua_State *L) { lua_pushinteger(L, (lua_Integer)getpid()); return 1; }

/* ---- the default device ---- */

/* set_default_device(dev | nil): nil means the CPU again. 'cuda' stays
 * unindexed (it follows torch.cuda.set_device) but must exist. */
static int l_set_default_device(lua_State *L) {
  gs_device d = gs_cpu();
  if (!lua_isnoneornil(L, 1)) d = gsL_checkdevice(L, 1);
  if (d.type == GS_CUDA) {
    gs_device r;
    gsL_check(L, gs_device_resolve(d, &r));
  }
  gsL_set_default_device(d);
  return 0;
}
static int l_get_default_device(lua_State *L) {
  gs_device d = gsL_default_device();
  if (d.type == GS_CUDA && d.index < 0) d.index = gs_cuda_current_device();
  gsL_pushdevice(L, d);
  return 1;
}
/* The default exactly as set ('cuda' unindexed stays so): for scopes that
 * restore it. */
static int l_default_device_raw(lua_State *L) { gsL_pushdevice(L, gsL_default_device()); return 1; }

static int l_set_log_device_placement(lua_State *L) { gs_log_placement = lua_toboolean(L, 1); return 0; }
static int l_get_log_device_placement(lua_State *L) { lua_pushboolean(L, gs_log_placement); return 1; }

/* Internal, for specs: (re)configure simulated GPUs -- n devices capped at
 * cap bytes each (0: 16 GiB); `staged` true copies to and from them as to
 * a real GPU (gs_devices_set_sim_staged) -- only while no tensor lives on
 * one. Returns the previous configuration (n, cap) so a spec can restore it. */
static int l_sim_configure(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  lua_Integer cap = luaL_optinteger(L, 2, 0);
  bool staged = lua_toboolean(L, 3);
  if (n < 0 || n > 64) return luaL_error(L, "simulated GPUs: expected 0 to 64, got %d", (int)n);
  if (cap < 0) return luaL_error(L, "simulated GPUs: the memory cap must be >= 0 bytes, got %I", cap);
  lua_gc(L, LUA_GCCOLLECT);
  lua_gc(L, LUA_GCCOLLECT); /* twice: finalizers of the first pass may free more */
  int old_n = gs_devices_sim_count();
  for (int i = 0; i < old_n; i++) { /* queued work done, blocks it held back freed */
    const gs_backend *be = gs_device_backend((gs_device){GS_CUDA, i});
    if (be->synchronize) (void)be->synchronize(i); /* an error left in the data dies with the devices */
  }
  for (int i = 0; i < old_n; i++) {
    gs_mem_stats s;
    gs_device d = {GS_CUDA, i};
    gs_device_backend(d)->mem_stats(i, &s);
    if (s.allocated)
      return luaL_error(L, "cannot change simulated GPUs while tensors live on cuda:%d (%I bytes)", i,
                        (lua_Integer)s.allocated);
  }
  size_t old_cap = gs_devices_sim_mem();
  gs_devices_init((int)n, (size_t)cap);
  gs_devices_set_sim_staged(staged);
  gsL_set_default_device(gs_cpu());
  lua_pushinteger(L, old_n);
  lua_pushinteger(L, (lua_Integer)old_cap);
  return 2;
}

void gsL_open_device(lua_State *L) {
  static const luaL_Reg cuda[] = {
    {"is_available", c_is_available}, {"device_count", c_device_count}, {"is_simulated", c_is_simulated},
    {"unavailable_reason", c_unavailable_reason}, {"libraries", c_libraries},
    {"current_device", c_current_device}, {"set_device", c_set_device}, {"synchronize", c_synchronize},
    {"get_device_name", c_get_device_name}, {"get_device_properties", c_get_device_properties},
    {"get_device_capability", c_get_device_capability}, {"utilization", c_utilization},
    {"mem_get_info", c_mem_get_info}, {"memory_stats", c_memory_stats},
    {"reset_peak_memory_stats", c_reset_peak}, {"empty_cache", c_empty_cache},
    {"transfers", c_transfers}, {"reset_transfers", c_reset_transfers}, {"_getpid", c_getpid},
    {"_ordinal", c_ordinal},
    {NULL, NULL}};
  lua_newtable(L);
  luaL_setfuncs(L, cuda, 0);
  static const struct { const char *name; size_t offset; } fields[] = {
    {"memory_allocated", offsetof(gs_mem_stats, allocated)},
    {"max_memory_allocated", offsetof(gs_mem_stats, max_allocated)},
    {"memory_reserved", offsetof(gs_mem_stats, reserved)},
    {"max_memory_reserved", offsetof(gs_mem_stats, max_reserved)}};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    lua_pushinteger(L, (lua_Integer)fields[i].offset);
    lua_pushstring(L, fields[i].name);
    lua_pushcclosure(L, c_mem_field, 2);
    lua_setfield(L, -2, fields[i].name);
  }
  lua_setfield(L, -2, "cuda");
  static const luaL_Reg fns[] = {
    {"set_default_device", l_set_default_device}, {"get_default_device", l_get_default_device},
    {"_default_device_raw", l_default_device_raw},
    {"set_log_device_placement", l_set_log_device_placement},
    {"get_log_device_placement", l_get_log_device_placement}, {"_sim_configure", l_sim_configure},
    {"_gc_pacing", gsL_gc_pacing},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
