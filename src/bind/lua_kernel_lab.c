/* lua_kernel_lab.c: what the kernel lab (lua/torch/kernel_lab.lua, issue
 * 30) needs from C. A Lua kernel runs on the host's Lua thread over Lua
 * tables; these move a tensor's elements into such a table and back, and
 * queue the task that carries the kernel's modelled time on the stream.
 *
 *   torch._lab_fetch(t)        -> {[0] = v0, v1, ...}: t's elements as Lua
 *                                 numbers (integers for integer dtypes and
 *                                 bool), after its queued work (a Ctrl-C
 *                                 stops the wait); nothing is counted as a
 *                                 transfer: the kernel runs "on the device"
 *   torch._lab_store(t, data)  -> writes data[0 .. n-1] into t, converted
 *                                 to its dtype
 *   torch._lab_begin(t), torch._lab_end(): around the Lua run, whose
 *                                 real time is taken out of the host's
 *                                 modelled clock (a launch returns at once)
 *   torch._lab_queue(name, seconds, bound, t1, ...): the task (the written
 *                                 tensors first)
 *   torch._lab_f32(v), _lab_f16(v), _lab_bf16(v): v rounded to that type
 *   torch._lab_poll()          -> raises "interrupted!" after Ctrl-C
 *
 * Only devices whose backend has the host_ran slot (simulated GPUs) run Lua
 * kernels; their memory is host memory (gs_backend.h). */
#include <stdlib.h>
#include <string.h>
#include "bind/lua_gs.h"
#include "core/gs_backend.h"
#include "core/gs_device.h"
#include "core/gs_dtype.h"
#include "core/gs_model_clock.h"
#include "core/gs_prof.h"

/* The tensor at idx, on a device that runs Lua kernels, contiguous. */
static gs_tensor *lab_tensor(lua_State *L, int idx) {
  gs_tensor *t = gsL_checktensor(L, idx);
  if (t->buf->device.type != GS_CUDA)
    luaL_error(L, "kernels run on cuda devices; this tensor is on cpu");
  const gs_backend *be = gs_device_backend(t->buf->device);
  if (!be || !be->host_ran)
    luaL_error(L, "running a Lua kernel on a real GPU needs the CUDA translation, not built yet "
                  "(kernels run on simulated GPUs: gshell --sim-gpus N)");
  if (!gs_is_contiguous(t))
    luaL_error(L, "the tensor is not contiguous: a kernel sees flat memory; pass x:contiguous()");
  return t;
}

static char *elem(const gs_tensor *t, int64_t i) {
  return (char *)t->buf->data + (size_t)(t->offset + i) * gs_dtype_size(t->dtype);
}

static int c_fetch(lua_State *L) {
  gs_tensor *t = lab_tensor(L, 1);
  gsL_check(L, gs_tensor_host_wait(t, "a kernel launch"));
  int64_t n = gs_numel(t);
  lua_createtable(L, n > 1 ? (int)(n - 1) : 0, 1);
  bool fl = gs_dtype_is_float(t->dtype);
  for (int64_t i = 0; i < n; i++) {
    if (fl) lua_pushnumber(L, gs_load_f64(t->dtype, elem(t, i)));
    else lua_pushinteger(L, gs_load_i64(t->dtype, elem(t, i)));
    lua_rawseti(L, -2, i);
  }
  return 1;
}

static int c_store(lua_State *L) {
  gs_tensor *t = lab_tensor(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  gsL_check(L, gs_tensor_host_wait(t, "a kernel launch"));
  int64_t n = gs_numel(t);
  bool fl = gs_dtype_is_float(t->dtype);
  for (int64_t i = 0; i < n; i++) {
    lua_rawgeti(L, 2, i);
    char *p = elem(t, i);
    if (lua_isinteger(L, -1)) {
      if (fl) gs_store_f64(t->dtype, p, (double)lua_tointeger(L, -1));
      else gs_store_i64(t->dtype, p, t->dtype == GS_BOOL ? lua_tointeger(L, -1) != 0 : lua_tointeger(L, -1));
    } else if (lua_type(L, -1) == LUA_TNUMBER) {
      double v = lua_tonumber(L, -1);
      if (fl) gs_store_f64(t->dtype, p, v);
      else gs_store_i64(t->dtype, p, t->dtype == GS_BOOL ? v != 0 : gs_f64_to_i64(v));
    } /* anything else was refused when the kernel stored it */
    lua_pop(L, 1);
  }
  return 0;
}

static bool modelled(const gs_tensor *t) {
  const gs_backend *be = gs_device_backend(t->buf->device);
  return be && be->gpu_model && be->gpu_model(t->buf->device.index);
}

/* The token of the Lua run in progress (0: none): kept here, not handed
 * to Lua, so no call can take an arbitrary span out of the clock. A
 * launch inside a kernel (nested) leaves the outer token in place. */
static uint64_t run_token;

static int c_begin(lua_State *L) {
  gs_tensor *t = gsL_checktensor(L, 1);
  if (!run_token && modelled(t)) run_token = gs_mclock_wait_begin();
  return 0;
}

static int c_end(lua_State *L) {
  (void)L;
  if (run_token) gs_mclock_host_exclude(run_token);
  run_token = 0;
  return 0;
}

/* Kernel names for the profiler, which keeps name pointers: interned for
 * the session (at most NAMES distinct; later ones share one name). */
#define NAMES 256
static char *names[NAMES];
static const char *intern(const char *s) {
  for (int i = 0; i < NAMES; i++) {
    if (!names[i]) {
      names[i] = strdup(s);
      return names[i] ? names[i] : "kernel";
    }
    if (strcmp(names[i], s) == 0) return names[i];
  }
  return "kernel:(more names)";
}

static int c_queue(lua_State *L) {
  const char *name = intern(luaL_checkstring(L, 1));
  double seconds = luaL_checknumber(L, 2);
  luaL_argcheck(L, seconds >= 0 && seconds < 1e6, 2, "a modelled time in seconds, from 0 to 1e6");
  lua_Integer bound = luaL_checkinteger(L, 3);
  luaL_argcheck(L, bound >= GS_BOUND_NONE && bound < GS_BOUND_COUNT, 3, "a gs_prof_bound");
  int n = lua_gettop(L) - 3;
  luaL_argcheck(L, n >= 1 && n <= 68, 4, "from 1 to 68 tensors");
  const gs_tensor *xs[68];
  for (int k = 0; k < n; k++) xs[k] = lab_tensor(L, 4 + k);
  gs_device d = xs[0]->buf->device;
  for (int k = 1; k < n; k++)
    if (xs[k]->buf->device.index != d.index) luaL_argerror(L, 4 + k, "a tensor on the first one's device");
  gsL_check(L, gs_device_backend(d)->host_ran(d.index, name, seconds, (int)bound, xs, n));
  return 0;
}

/* Between blocks: Ctrl-C stops a long launch (the shell's hook does too,
 * but stock Lua with torch.so has none); nothing is written back then. */
static int c_poll(lua_State *L) {
  if (gs_interrupted) gsL_check(L, gs_interrupted_error());
  return 0;
}

static int c_f32(lua_State *L) {
  lua_pushnumber(L, (double)(float)luaL_checknumber(L, 1));
  return 1;
}
static int c_f16(lua_State *L) {
  lua_pushnumber(L, (double)gs_half_to_float(gs_float_to_half((float)luaL_checknumber(L, 1))));
  return 1;
}
static int c_bf16(lua_State *L) {
  lua_pushnumber(L, (double)gs_bf16_to_float(gs_float_to_bf16((float)luaL_checknumber(L, 1))));
  return 1;
}

void gsL_open_kernel_lab(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"_lab_fetch", c_fetch}, {"_lab_store", c_store}, {"_lab_begin", c_begin}, {"_lab_end", c_end},
    {"_lab_queue", c_queue}, {"_lab_f32", c_f32},     {"_lab_f16", c_f16},     {"_lab_bf16", c_bf16},
    {"_lab_poll", c_poll},   {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  lua_pushinteger(L, GS_BOUND_COMPUTE);
  lua_setfield(L, -2, "_LAB_BOUND_COMPUTE");
  lua_pushinteger(L, GS_BOUND_MEMORY);
  lua_setfield(L, -2, "_LAB_BOUND_MEMORY");
  lua_pushinteger(L, GS_BOUND_LAUNCH);
  lua_setfield(L, -2, "_LAB_BOUND_LAUNCH");
}
