/* lua_pool.c: the engine half of nn.functional's pooling, batch norm,
 * interpolate and pad (issue 20). lua/torch/nn/functional_pool.lua reads
 * the user's arguments and options and calls these with plain values:
 *   torch._pool2d(x, kind, kh, kw, sh, sw, ph, pw, dh, dw, ceil_mode,
 *                 count_include_pad, want_indices)   kind 'max' | 'avg'
 *   torch._adaptive_pool2d(x, kind, oh, ow, want_indices)
 *   torch._batch_norm(x, running_mean, running_var, weight, bias,
 *                     training, momentum, eps)       (nil for absent tensors)
 *   torch._interpolate(x, mode, align_corners, oh, ow, scale_h, scale_w)
 *   torch._pad(x, {pads...}, value)
 * Max pooling's indices are PyTorch's: 0-based positions in the flattened
 * h*w plane (numbers to compare with PyTorch's, not Lua positions). */
#include <limits.h>
#include <string.h>
#include "autograd/gs_autograd_pool.h"
#include "bind/lua_gs.h"

/* An int-sized integer argument (a window size, stride, padding). */
static int checkint(lua_State *L, int idx, const char *what) {
  lua_Integer v = luaL_checkinteger(L, idx);
  if (v < INT_MIN / 4 || v > INT_MAX / 4) return luaL_error(L, "%s %I is out of range", what, v);
  return (int)v;
}

static gs_tensor *opt_tensor(lua_State *L, int idx) { return lua_isnoneornil(L, idx) ? NULL : gsL_checktensor(L, idx); }

static int push_pool(lua_State *L, gs_tensor *x, const gs_pool2d_opts *o, bool want_idx) {
  gs_tensor *y = NULL, *idx = NULL;
  gsL_check(L, gs_ag_pool2d(x, o, &y, want_idx ? &idx : NULL));
  gsL_pushtensor(L, y);
  if (!want_idx) return 1;
  gsL_pushtensor(L, idx);
  return 2;
}

static int l_pool2d(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1);
  const char *kind = luaL_checkstring(L, 2);
  gs_pool2d_opts o;
  memset(&o, 0, sizeof o);
  o.kind = strcmp(kind, "max") == 0 ? GS_POOL_MAX : GS_POOL_AVG;
  o.kh = checkint(L, 3, "kernel_size");
  o.kw = checkint(L, 4, "kernel_size");
  o.sh = checkint(L, 5, "stride");
  o.sw = checkint(L, 6, "stride");
  o.ph = checkint(L, 7, "padding");
  o.pw = checkint(L, 8, "padding");
  o.dh = checkint(L, 9, "dilation");
  o.dw = checkint(L, 10, "dilation");
  o.ceil_mode = lua_toboolean(L, 11);
  o.count_include_pad = lua_toboolean(L, 12);
  return push_pool(L, x, &o, lua_toboolean(L, 13));
}

static int l_adaptive_pool2d(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1);
  const char *kind = luaL_checkstring(L, 2);
  gs_pool2d_opts o;
  memset(&o, 0, sizeof o);
  o.kind = strcmp(kind, "max") == 0 ? GS_POOL_ADAPTIVE_MAX : GS_POOL_ADAPTIVE_AVG;
  o.oh = luaL_checkinteger(L, 3);
  o.ow = luaL_checkinteger(L, 4);
  return push_pool(L, x, &o, lua_toboolean(L, 5));
}

static int l_batch_norm(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *rm = opt_tensor(L, 2), *rv = opt_tensor(L, 3);
  gs_tensor *w = opt_tensor(L, 4), *b = opt_tensor(L, 5), *y = NULL;
  bool training = lua_toboolean(L, 6);
  double momentum = luaL_checknumber(L, 7), eps = luaL_checknumber(L, 8);
  gsL_check(L, gs_ag_batch_norm(x, rm, rv, w, b, training, momentum, eps, &y));
  gsL_pushtensor(L, y);
  return 1;
}

static int l_interpolate(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *y = NULL;
  const char *mode = luaL_checkstring(L, 2);
  int m = strcmp(mode, "bilinear") == 0 ? GS_RESIZE_BILINEAR : GS_RESIZE_NEAREST;
  bool align = lua_toboolean(L, 3);
  int64_t oh = luaL_checkinteger(L, 4), ow = luaL_checkinteger(L, 5);
  double sh = luaL_optnumber(L, 6, 0), sw = luaL_optnumber(L, 7, 0);
  gsL_check(L, gs_ag_interpolate(x, m, align, oh, ow, sh, sw, &y));
  gsL_pushtensor(L, y);
  return 1;
}

static int l_pad(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *y = NULL;
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  if (n > 2 * GS_MAX_DIMS) return luaL_error(L, "Padding length too large");
  int64_t pads[2 * GS_MAX_DIMS];
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 2, i);
    pads[i - 1] = gsL_topinteger(L, "pad: padding");
    lua_pop(L, 1);
  }
  gs_scalar v = gs_scalar_f(0);
  if (lua_isinteger(L, 3)) v = gs_scalar_i(lua_tointeger(L, 3));
  else if (lua_isboolean(L, 3)) v = gs_scalar_b(lua_toboolean(L, 3));
  else if (!lua_isnoneornil(L, 3)) v = gs_scalar_f(luaL_checknumber(L, 3));
  gsL_check(L, gs_ag_pad(x, (int)n, pads, v, &y));
  gsL_pushtensor(L, y);
  return 1;
}

void gsL_open_pool(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"_pool2d", l_pool2d}, {"_adaptive_pool2d", l_adaptive_pool2d}, {"_batch_norm", l_batch_norm},
    {"_interpolate", l_interpolate}, {"_pad", l_pad}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
