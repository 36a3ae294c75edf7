/* lua_core.c: the pieces every binding file uses: raising engine errors,
 * pushing and checking tensors (one Lua object per tensor, so identity
 * holds: rawequal(x.grad, x.grad)), dtype, device and Size objects, sizes
 * and dims from arguments, and telling the collector about tensor memory. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "core/gs_alloc_host.h"
#include "bind/lua_gs.h"


/* ---- tensors ---- */

static const char *IDENTITY = "gshell.tensor_objects"; /* weak: gs_tensor* -> userdata */
static size_t pressure, pressure_limit = (size_t)64 << 20, step_debt;
static uint64_t full_collections; /* run by add_pressure, for torch._gc_pacing() */

/* Tensor memory is invisible to Lua's collector, which sees 8 bytes per
 * tensor. Each new tensor's headers, and a 64th of its fresh data, count
 * as Lua allocation: every 256 KiB of that buys a collector step, so
 * garbage tensors are reclaimed at the pace they are made and reused
 * while still in cache. (Counting all the data would run a whole cycle
 * per op on mid-sized tensors.) A full collection also runs once fresh
 * data has grown by as much as is live -- host and device memory both, so
 * a GPU workload with 10 GB of live tensors is not collected in full every
 * 64 MB -- which bounds loops over big tensors. */
static void add_pressure(lua_State *L, size_t bytes) {
  if (!lua_gc(L, LUA_GCISRUNNING)) return; /* collectgarbage("stop") is respected */
  step_debt += sizeof(gs_tensor) + sizeof(gs_buffer) + bytes / 64;
  if (step_debt >= ((size_t)256 << 10)) {
    int kb = (int)(step_debt >> 10);
    step_debt = 0;
    lua_gc(L, LUA_GCSTEP, kb);
  }
  pressure += bytes;
  if (pressure < pressure_limit) return;
  lua_gc(L, LUA_GCCOLLECT);
  full_collections++;
  pressure = 0;
  size_t live = gs_host_bytes_in_use() + gs_device_bytes_allocated();
  pressure_limit = live > ((size_t)64 << 20) ? live : (size_t)64 << 20;
}

/* torch._gc_pacing(): {full_collections =, limit =} (specs: how often the
 * binding ran a full collection, and the fresh bytes that trigger the next). */
int gsL_gc_pacing(lua_State *L) {
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)full_collections);
  lua_setfield(L, -2, "full_collections");
  lua_pushinteger(L, (lua_Integer)pressure_limit);
  lua_setfield(L, -2, "limit");
  return 1;
}


/* Makes the Lua object for t. A tensor fresh from an op (refcount 1)
 * cannot have an object yet, so it skips the identity table; one that
 * others hold (x.grad, a parameter) is looked up and registered, so the
 * same tensor is always the same Lua value. */
void gsL_pushtensor(lua_State *L, gs_tensor *t) {
  bool shared = t->refcount > 1;
  if (shared) {
    lua_getfield(L, LUA_REGISTRYINDEX, IDENTITY);
    lua_pushlightuserdata(L, t);
    if (lua_rawget(L, -2) == LUA_TUSERDATA) {
      gs_tensor **p = lua_touserdata(L, -1);
      if (*p == t) { /* the existing object already owns a reference */
        lua_remove(L, -2);
        gs_tensor_release(t);
        return;
      }
    }
    lua_pop(L, 2);
  }
  gs_tensor **p = lua_newuserdatauv(L, sizeof(gs_tensor *), 0);
  *p = NULL; /* safe state until the metatable is set */
  luaL_setmetatable(L, GSL_TENSOR_MT);
  *p = t;
  if (shared) gsL_register(L, -1);
  else add_pressure(L, t->buf->refcount == 1 ? t->buf->nbytes : 0);
}

void gsL_register(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  gs_tensor **p = lua_touserdata(L, idx);
  lua_getfield(L, LUA_REGISTRYINDEX, IDENTITY);
  lua_pushlightuserdata(L, *p);
  lua_pushvalue(L, idx);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

/* The tensor metatable's address, to recognise tensors with one pointer
 * comparison (luaL_testudata costs a registry lookup per argument). */
static const void *tensor_mt;
void gsL_set_tensor_mt(const void *mt) { tensor_mt = mt; }

gs_tensor *gsL_testtensor(lua_State *L, int idx) {
  void *p = lua_touserdata(L, idx);
  if (!p || !lua_getmetatable(L, idx)) return NULL;
  const void *mt = lua_topointer(L, -1);
  lua_pop(L, 1);
  if (mt == tensor_mt) return *(gs_tensor **)p;
  p = luaL_testudata(L, idx, GSL_TENSOR_MT); /* another Lua state's module */
  return p ? *(gs_tensor **)p : NULL;
}

gs_tensor *gsL_checktensor(lua_State *L, int idx) {
  gs_tensor *t = gsL_testtensor(L, idx);
  if (t) return t;
  gs_tensor **p = luaL_testudata(L, idx, GSL_TENSOR_MT);
  if (p) luaL_error(L, "bad argument #%d: this tensor was already freed (closed)", idx);
  /* Python's x.cuda(1) in Lua calls the method without its tensor: the
   * message names the colon form itself, so the hint survives pcall and
   * chained calls (torch.arange(6).reshape(2, 3)). */
  lua_Debug ar;
  if (idx == 1 && lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name &&
      (strcmp(ar.namewhat, "method") == 0 || strcmp(ar.namewhat, "field") == 0))
    luaL_error(L, "bad argument #1 to '%s': expected a tensor, got %s; a method needs its tensor before a "
               "colon: write `x:%s(...)`, not `x.%s(...)`", ar.name, luaL_typename(L, idx), ar.name, ar.name, ar.name);
  luaL_error(L, "bad argument #%d: expected a tensor, got %s", idx, luaL_typename(L, idx));
  return NULL;
}

/* ---- dtypes: one object per dtype, so x.dtype == torch.float32 holds ---- */

static const char *DTYPES = "gshell.dtypes";

void gsL_pushdtype(lua_State *L, gs_dtype t) {
  lua_getfield(L, LUA_REGISTRYINDEX, DTYPES);
  lua_rawgeti(L, -1, (lua_Integer)t + 1);
  lua_remove(L, -2);
}

bool gsL_testdtype(lua_State *L, int idx, gs_dtype *out) {
  int *p = luaL_testudata(L, idx, GSL_DTYPE_MT);
  if (p) { *out = (gs_dtype)*p; return true; }
  if (lua_type(L, idx) == LUA_TSTRING) return gs_dtype_from_name(lua_tostring(L, idx), out);
  return false;
}

gs_dtype gsL_checkdtype(lua_State *L, int idx) {
  gs_dtype t;
  if (gsL_testdtype(L, idx, &t)) return t;
  gs_device dev;
  if (lua_type(L, idx) == LUA_TSTRING && gs_device_parse(lua_tostring(L, idx), &dev) == GS_OK)
    luaL_error(L, "unknown dtype '%s': that is a device, not a dtype (pass it as device=); expected one of "
               "float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool", lua_tostring(L, idx));
  if (luaL_testudata(L, idx, GSL_DEVICE_MT))
    luaL_error(L, "expected a dtype (e.g. torch.float32), got a device (pass it as device=)");
  if (lua_type(L, idx) == LUA_TSTRING)
    luaL_error(L, "unknown dtype '%s': expected one of float32, float64, float16, bfloat16, int64, int32, "
               "int16, int8, uint8, bool", lua_tostring(L, idx));
  luaL_error(L, "bad argument #%d: expected a dtype (e.g. torch.float32), got %s", idx, luaL_typename(L, idx));
  return GS_FLOAT32;
}

static int dtype_tostring(lua_State *L) {
  lua_pushfstring(L, "torch.%s", gs_dtype_name((gs_dtype)*(int *)lua_touserdata(L, 1)));
  return 1;
}

static int dtype_index(lua_State *L) {
  gs_dtype t = (gs_dtype) * (int *)luaL_checkudata(L, 1, GSL_DTYPE_MT);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "is_floating_point") == 0) lua_pushboolean(L, gs_dtype_is_float(t));
  else if (strcmp(k, "itemsize") == 0) lua_pushinteger(L, (lua_Integer)gs_dtype_size(t));
  else if (strcmp(k, "name") == 0) lua_pushstring(L, gs_dtype_name(t));
  else lua_pushnil(L);
  return 1;
}

/* ---- devices ---- */


static gs_device default_device = {GS_CPU, 0};
gs_device gsL_default_device(void) { return default_device; }
void gsL_set_default_device(gs_device d) { default_device = d; }

/* Device objects are interned like dtypes: one object per device, so
 * rawequal(x.device, y.device) holds for tensors on the same device and a
 * device works as a table key (PyTorch's devices hash by value). */
static const char *DEVICES = "gshell.devices";

void gsL_pushdevice(lua_State *L, gs_device d) {
  lua_Integer key = d.type == GS_CPU ? -2 : d.index < 0 ? -1 : d.index;
  if (lua_getfield(L, LUA_REGISTRYINDEX, DEVICES) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, DEVICES);
  }
  if (lua_rawgeti(L, -1, key) == LUA_TUSERDATA) { lua_remove(L, -2); return; }
  lua_pop(L, 1);
  gs_device *p = lua_newuserdatauv(L, sizeof(gs_device), 0);
  *p = d;
  luaL_setmetatable(L, GSL_DEVICE_MT);
  lua_pushvalue(L, -1);
  lua_rawseti(L, -3, key);
  lua_remove(L, -2);
}

/* A device argument: a torch.device, a string ('cpu', 'cuda', 'cuda:1')
 * or an integer CUDA ordinal. Errors say what was given and what exists;
 * idx may be negative (an option value pushed by gsL_optfield). */
gs_device gsL_checkdevice(lua_State *L, int idx) {
  gs_device *p = luaL_testudata(L, idx, GSL_DEVICE_MT), d = {GS_CPU, 0};
  if (p) return *p;
  char what[200];
  if (lua_type(L, idx) == LUA_TSTRING) {
    gsL_check(L, gs_device_parse(lua_tostring(L, idx), &d));
    return d;
  }
  if (lua_type(L, idx) == LUA_TNUMBER) {
    if (!lua_isinteger(L, idx)) {
      luaL_error(L, "invalid device ordinal %s: expected an integer CUDA ordinal", lua_tostring(L, idx));
    }
    lua_Integer i = lua_tointeger(L, idx);
    if (i < 0 || i > 1 << 20) {
      gs_devices_describe(what, sizeof what);
      luaL_error(L, "invalid device ordinal %I: CUDA ordinals start at 0 (%s)", i, what);
    }
    d.type = GS_CUDA;
    d.index = (int)i;
    return d;
  }
  const char *got = luaL_typename(L, idx);
  if (luaL_testudata(L, idx, GSL_DTYPE_MT)) {
    lua_pushvalue(L, idx);
    got = luaL_tolstring(L, -1, NULL);
    luaL_error(L, "expected a device ('cpu', 'cuda', 'cuda:1', an ordinal or a torch.device), got %s, "
               "which is a dtype (pass it as dtype=)", got);
  }
  if (idx > 0)
    luaL_error(L, "bad argument #%d: expected a device ('cpu', 'cuda', 'cuda:1', an ordinal or a torch.device), got %s",
               idx, got);
  luaL_error(L, "expected a device ('cpu', 'cuda', 'cuda:1', an ordinal or a torch.device), got %s", got);
  return d;
}

/* The repr, device(type='cuda', index=1): what the REPL shows (its
 * printer looks for __repr); tostring and print give the str, cuda:1, as
 * Python's str(device) does. */
static int device_repr(lua_State *L) {
  gs_device *d = luaL_checkudata(L, 1, GSL_DEVICE_MT);
  if (d->type == GS_CPU) lua_pushliteral(L, "device(type='cpu')");
  else if (d->index < 0) lua_pushliteral(L, "device(type='cuda')");
  else lua_pushfstring(L, "device(type='cuda', index=%d)", d->index);
  return 1;
}

static int device_eq(lua_State *L) {
  gs_device *a = luaL_testudata(L, 1, GSL_DEVICE_MT), *b = luaL_testudata(L, 2, GSL_DEVICE_MT);
  lua_pushboolean(L, a && b && gs_device_equal(*a, *b));
  return 1;
}

/* "cpu", "cuda", "cuda:1": PyTorch's str(device), also used by `..` */
static void push_device_str(lua_State *L, gs_device d) {
  char name[24];
  gs_device_name(d, name, sizeof name);
  lua_pushstring(L, name);
}

static int device_tostring(lua_State *L) {
  push_device_str(L, *(gs_device *)luaL_checkudata(L, 1, GSL_DEVICE_MT));
  return 1;
}

static int device_concat(lua_State *L) {
  for (int i = 1; i <= 2; i++) {
    gs_device *d = luaL_testudata(L, i, GSL_DEVICE_MT);
    if (d) { push_device_str(L, *d); lua_replace(L, i); }
    else if (!lua_isstring(L, i)) return luaL_error(L, "attempt to concatenate a %s value with a device", luaL_typename(L, i));
  }
  lua_concat(L, 2);
  return 1;
}

static int device_index(lua_State *L) {
  gs_device *d = luaL_checkudata(L, 1, GSL_DEVICE_MT);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "type") == 0) lua_pushstring(L, d->type == GS_CPU ? "cpu" : "cuda");
  else if (strcmp(k, "index") == 0) { if (d->type == GS_CUDA && d->index >= 0) lua_pushinteger(L, d->index); else lua_pushnil(L); }
  else if (strcmp(k, "str") == 0) push_device_str(L, *d); /* x.device.str == "cuda:1" */
  else lua_pushnil(L);
  return 1;
}

/* torch.device('cpu' | 'cuda' | 'cuda:1' | ordinal | device [, index]) */
static int l_device(lua_State *L) {
  gs_device d = gsL_checkdevice(L, 1);
  if (!lua_isnoneornil(L, 2)) {
    if (!lua_isinteger(L, 2))
      return luaL_error(L, "torch.device: the index must be an integer, got %s", luaL_typename(L, 2));
    lua_Integer i = lua_tointeger(L, 2);
    if (i < 0) return luaL_error(L, "Device index must not be negative, got %I", i);
    if (d.type == GS_CPU && i == 0) { gsL_pushdevice(L, d); return 1; }
    if (d.type != GS_CUDA || d.index >= 0 || lua_type(L, 1) != LUA_TSTRING)
      return luaL_error(L, "torch.device: an index can only be given with type 'cuda' "
                        "(torch.device('cuda', 1)), got %s and %I", luaL_tolstring(L, 1, NULL), i);
    if (i > 1 << 20) return luaL_error(L, "invalid device ordinal %I", i);
    d.index = (int)i;
  }
  gsL_pushdevice(L, d);
  return 1;
}

/* ---- sizes ---- */

void gsL_pushsize(lua_State *L, int ndim, const int64_t *shape) {
  lua_createtable(L, ndim, 0);
  for (int i = 0; i < ndim; i++) {
    lua_pushinteger(L, shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
  luaL_setmetatable(L, GSL_SIZE_MT);
}

static int64_t check_size_value(lua_State *L, int idx, int pos) {
  int isnum;
  lua_Integer v = lua_tointegerx(L, idx, &isnum);
  if (!isnum) {
    if (lua_type(L, idx) == LUA_TNUMBER)
      luaL_error(L, "size must be made of integers, got %s at position %d", lua_tostring(L, idx), pos);
    luaL_error(L, "size must be made of integers, got %s at position %d", luaL_typename(L, idx), pos);
  }
  return v;
}

/* A size list: a table, or the numbers idx..last, of non-negative
 * integers. The engine's gs_check_shape holds the rules (the dims limit,
 * negatives, overflow); a list over the limit goes to it unread. */
int gsL_checksizes(lua_State *L, int idx, int last, int64_t *shape) {
  bool table = idx <= last && lua_istable(L, idx) && !luaL_testudata(L, idx, GSL_TENSOR_MT);
  lua_Integer len = table ? luaL_len(L, idx) : last - idx + 1;
  gsL_check(L, gs_check_ndim(len < 0 ? 0 : len));
  int n = 0;
  for (lua_Integer i = 1; i <= len; i++) {
    if (table) lua_geti(L, idx, i);
    else lua_pushvalue(L, idx + (int)i - 1);
    shape[n++] = check_size_value(L, -1, (int)i);
    lua_pop(L, 1);
  }
  if (table && idx + 1 <= last) luaL_error(L, "give sizes either as numbers (2, 3) or as one table ({2, 3}), not both");
  gsL_check(L, gs_check_shape(n, shape, NULL));
  return n;
}

static int size_tostring(lua_State *L) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "torch.Size([");
  lua_Integer n = luaL_len(L, 1);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    if (i > 1) luaL_addstring(&b, ", ");
    luaL_addstring(&b, lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  luaL_addstring(&b, "])");
  luaL_pushresult(&b);
  return 1;
}

static int size_eq(lua_State *L) {
  if (!lua_istable(L, 1) || !lua_istable(L, 2)) { lua_pushboolean(L, 0); return 1; }
  lua_Integer n = luaL_len(L, 1);
  bool eq = n == luaL_len(L, 2);
  for (lua_Integer i = 1; eq && i <= n; i++) {
    lua_geti(L, 1, i);
    lua_geti(L, 2, i);
    eq = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
  }
  lua_pushboolean(L, eq);
  return 1;
}

/* numel of a Size */
/* size.numel, and shape[0]: a Python habit that would give a silent nil */
static int size_index(lua_State *L) {
  if (lua_isinteger(L, 2) && lua_tointeger(L, 2) == 0)
    return luaL_error(L, "torch.Size index 0: positions are 1-based in gshell, the first size is shape[1] "
                      "(and the last shape[#shape])");
  if (lua_type(L, 2) == LUA_TSTRING && strcmp(lua_tostring(L, 2), "numel") == 0) {
    lua_pushvalue(L, lua_upvalueindex(1));
    return 1;
  }
  return 0;
}

static int size_numel(lua_State *L) {
  lua_Integer n = luaL_len(L, 1);
  lua_Unsigned p = 1; /* wraps like Lua's own integer arithmetic, never UB */
  for (lua_Integer i = 1; i <= n; i++) { lua_geti(L, 1, i); p *= (lua_Unsigned)lua_tointeger(L, -1); lua_pop(L, 1); }
  lua_pushinteger(L, (lua_Integer)p);
  return 1;
}

/* torch._host_memory(): the host allocator's bytes in use and bytes kept
 * in its cache; for leak checks (fuzz/api.lua), not part of the API. */
static int l_host_memory(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)gs_host_bytes_in_use());
  lua_pushinteger(L, (lua_Integer)gs_host_bytes_cached());
  return 2;
}

/* torch._host_cache_limit([bytes]): caps what the host allocator keeps
 * cached (nil or 0: the default), freeing what is above it now; returns
 * the previous cap. A tuning and test hook, not part of the API. */
static int l_host_cache_limit(lua_State *L) {
  lua_Integer n = luaL_optinteger(L, 1, 0);
  if (n < 0) return luaL_error(L, "_host_cache_limit: expected a number of bytes >= 0, got %I", n);
  lua_pushinteger(L, (lua_Integer)gs_host_set_cache_limit((size_t)n));
  return 1;
}

/* ---- dims and options ---- */

lua_Integer gsL_topinteger(lua_State *L, const char *what) {
  int ok;
  lua_Integer v = lua_tointegerx(L, -1, &ok);
  if (!ok || lua_type(L, -1) != LUA_TNUMBER)
    luaL_error(L, "%s must be an integer, got %s", what,
               lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
  return v;
}

lua_Number gsL_topnumber(lua_State *L, const char *what) {
  if (lua_type(L, -1) != LUA_TNUMBER) luaL_error(L, "%s must be a number, got %s", what, luaL_typename(L, -1));
  return lua_tonumber(L, -1);
}

int gsL_checkdim(lua_State *L, int idx, int ndim) {
  int isnum;
  lua_Integer d = lua_tointegerx(L, idx, &isnum);
  if (!isnum) luaL_error(L, "bad argument #%d: expected a dimension (an integer), got %s", idx, luaL_typename(L, idx));
  int n = ndim > 0 ? ndim : 1;
  if (d == 0 || d < -n || d > n)
    luaL_error(L, "Dimension out of range (expected to be in range of [-%d, %d] without 0, but got %I)", n, n, (LUAI_UACINT)d);
  return (int)(d > 0 ? d - 1 : d + n);
}

int gsL_optdim(lua_State *L, int idx, int ndim, int def) {
  return lua_isnoneornil(L, idx) ? def : gsL_checkdim(L, idx, ndim);
}

bool gsL_optfield(lua_State *L, int idx, const char *name) {
  if (!lua_istable(L, idx)) return false;
  if (lua_getfield(L, idx, name) == LUA_TNIL) { lua_pop(L, 1); return false; }
  return true;
}

/* ---- registration ---- */

/* Stock lua5.4 dlclose()s C modules when the state closes. OpenMP and
 * OpenBLAS worker threads started by this library are still parked in
 * their (then unmapped) code at that point and crash the process on exit
 * (seen as a flaky "Segmentation fault" after busted's last line). Pin the
 * module, and with it its dependencies, for the life of the process. */
static void pin_module(void) {
  Dl_info info;
  if (dladdr((void *)pin_module, &info) && info.dli_fname)
    (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

void gsL_open_core(lua_State *L) {
  pin_module();
  lua_newtable(L);
  lua_newtable(L);
  lua_pushliteral(L, "v");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, IDENTITY);

  luaL_newmetatable(L, GSL_DTYPE_MT);
  lua_pushcfunction(L, dtype_tostring); lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, dtype_index); lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_createtable(L, GS_NDTYPES, 0);
  for (int t = 0; t < GS_NDTYPES; t++) {
    int *p = lua_newuserdatauv(L, sizeof(int), 0);
    *p = t;
    luaL_setmetatable(L, GSL_DTYPE_MT);
    lua_rawseti(L, -2, t + 1);
  }
  lua_setfield(L, LUA_REGISTRYINDEX, DTYPES);
  static const struct { const char *name; gs_dtype t; } names[] = {
    {"float32", GS_FLOAT32}, {"float", GS_FLOAT32}, {"float64", GS_FLOAT64}, {"double", GS_FLOAT64},
    {"float16", GS_FLOAT16}, {"half", GS_FLOAT16}, {"bfloat16", GS_BFLOAT16}, {"int64", GS_INT64},
    {"long", GS_INT64}, {"int32", GS_INT32}, {"int", GS_INT32}, {"int16", GS_INT16}, {"short", GS_INT16},
    {"int8", GS_INT8}, {"uint8", GS_UINT8}, {"bool", GS_BOOL}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    gsL_pushdtype(L, names[i].t);
    lua_setfield(L, -2, names[i].name);
  }

  luaL_newmetatable(L, GSL_DEVICE_MT);
  lua_pushcfunction(L, device_tostring); lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, device_repr); lua_setfield(L, -2, "__repr");
  lua_pushcfunction(L, device_eq); lua_setfield(L, -2, "__eq");
  lua_pushcfunction(L, device_index); lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, device_concat); lua_setfield(L, -2, "__concat");
  lua_pushliteral(L, "torch.device"); lua_setfield(L, -2, "__name");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_device);
  lua_setfield(L, -2, "device");
  lua_pushcfunction(L, l_host_memory);
  lua_setfield(L, -2, "_host_memory");
  lua_pushcfunction(L, l_host_cache_limit);
  lua_setfield(L, -2, "_host_cache_limit");

  luaL_newmetatable(L, GSL_SIZE_MT);
  lua_pushcfunction(L, size_tostring); lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, size_eq); lua_setfield(L, -2, "__eq");
  lua_pushcfunction(L, size_numel);
  lua_pushcclosure(L, size_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}
