/* lua_conv.c: the convolution's binding. torch._conv takes the options
 * already read by lua/torch/nn/functional_conv.lua (which accepts a
 * number, a pair, 'same' or 'valid'); every rule about them is the
 * engine's (gs_op_conv.c). */
#include <string.h>
#include "autograd/gs_autograd.h"
#include "bind/lua_gs.h"

/* torch._conv(x, w, b_or_nil, nd, sh, sw, ph, pw, dh, dw, groups, mode):
 * mode "explicit" (ph, pw used), "same" or "valid"; for nd = 1 only the
 * first of each pair is read. */
static int l_conv(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *w = gsL_checktensor(L, 2);
  gs_tensor *b = lua_isnoneornil(L, 3) ? NULL : gsL_checktensor(L, 3);
  gs_conv_opts o;
  memset(&o, 0, sizeof o);
  o.nd = (int)luaL_checkinteger(L, 4);
  for (int i = 0; i < 2; i++) {
    o.stride[i] = luaL_checkinteger(L, 5 + i);
    o.padding[i] = luaL_checkinteger(L, 7 + i);
    o.dilation[i] = luaL_checkinteger(L, 9 + i);
  }
  o.groups = luaL_checkinteger(L, 11);
  static const char *const modes[] = {"explicit", "same", "valid", NULL};
  o.pad_mode = (gs_conv_pad_mode)luaL_checkoption(L, 12, "explicit", modes);
  gs_tensor *r;
  gsL_check(L, gs_ag_conv(x, w, b, &o, &r));
  gsL_pushtensor(L, r);
  return 1;
}

/* torch._conv_col_cap([bytes]) -> the cap before the call: the most
 * bytes of im2col columns one chunk of the batch may take (specs lower
 * it to exercise the chunking). */
static int l_conv_col_cap(lua_State *L) {
  lua_Integer cap = luaL_optinteger(L, 1, 0);
  if (cap < 0) return luaL_error(L, "torch._conv_col_cap: expected a number of bytes >= 1, got %d", (int)cap);
  lua_pushinteger(L, (lua_Integer)gs_conv_col_cap((size_t)cap));
  return 1;
}

/* torch._conv_winograd([mode]) -> the mode before the call, and how many
 * convolution passes took the Winograd F(2x2, 3x3) path so far (internal,
 * for specs and benchmarks): 0 off, 1 auto (default), 2 wherever the
 * geometry allows; no argument only reads. */
static int l_conv_winograd(lua_State *L) {
  lua_Integer mode = luaL_optinteger(L, 1, -1);
  if (!lua_isnoneornil(L, 1) && (mode < 0 || mode > 2))
    return luaL_error(L, "torch._conv_winograd: expected a mode of 0 (off), 1 (auto) or 2 (always), got %d", (int)mode);
  int64_t calls = 0;
  lua_pushinteger(L, gs_conv_winograd(lua_isnoneornil(L, 1) ? -1 : (int)mode, &calls));
  lua_pushinteger(L, (lua_Integer)calls);
  return 2;
}

void gsL_open_conv(lua_State *L) {
  static const luaL_Reg fns[] = {{"_conv", l_conv}, {"_conv_col_cap", l_conv_col_cap},
                                  {"_conv_winograd", l_conv_winograd}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
