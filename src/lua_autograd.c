/* lua_autograd.c: the autograd surface: x:backward([g]), x:detach(),
 * x:requires_grad_(), torch.no_grad (function and <close> forms),
 * torch.enable_grad, torch.addmm, torch.nll_loss (1-based targets) and
 * torch._make_parameter for nn.Parameter. */
#include "gs_autograd.h"
#include "lua_gs.h"

static int m_backward(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *g = lua_isnoneornil(L, 2) ? NULL : gsL_checktensor(L, 2);
  gsL_check(L, gs_backward(x, g));
  return 0;
}

static int m_detach(lua_State *L) {
  gs_tensor *r;
  gsL_check(L, gs_detach(gsL_checktensor(L, 1), &r));
  gsL_pushtensor(L, r);
  return 1;
}

static int m_detach_(lua_State *L) {
  gsL_check(L, gs_ag_detach_(gsL_checktensor(L, 1)));
  lua_settop(L, 1);
  return 1;
}

static int m_requires_grad_(lua_State *L) {
  gsL_check(L, gs_ag_set_requires_grad(gsL_checktensor(L, 1), lua_isnoneornil(L, 2) || lua_toboolean(L, 2)));
  lua_settop(L, 1);
  return 1;
}

/* ---- grad mode ---- */

static int restore_mode(lua_State *L) {
  lua_getfield(L, 1, "previous");
  gs_grad_enabled = lua_toboolean(L, -1);
  return 0;
}

/* torch.no_grad(fn, ...) runs fn without recording; torch.no_grad()
 * returns a guard for `local g <close> = torch.no_grad()`. */
static int set_mode(lua_State *L, bool enabled) {
  bool previous = gs_grad_enabled;
  if (lua_isfunction(L, 1)) {
    gs_grad_enabled = enabled;
    int n = lua_gettop(L);
    int status = lua_pcall(L, n - 1, LUA_MULTRET, 0);
    gs_grad_enabled = previous;
    if (status != LUA_OK) return lua_error(L);
    return lua_gettop(L);
  }
  gs_grad_enabled = enabled;
  lua_createtable(L, 0, 1);
  lua_pushboolean(L, previous);
  lua_setfield(L, -2, "previous");
  luaL_setmetatable(L, "torch.grad_mode_guard");
  return 1;
}
static int l_no_grad(lua_State *L) { return set_mode(L, false); }
static int l_enable_grad(lua_State *L) { return set_mode(L, true); }
static int l_is_grad_enabled(lua_State *L) { lua_pushboolean(L, gs_grad_enabled); return 1; }
static int l_set_grad_enabled(lua_State *L) { gs_grad_enabled = lua_toboolean(L, 1); return 0; }

static int l_addmm(lua_State *L) {
  gs_tensor *r;
  gsL_check(L, gs_ag_addmm(gsL_checktensor(L, 1), gsL_checktensor(L, 2), gsL_checktensor(L, 3), &r));
  gsL_pushtensor(L, r);
  return 1;
}

static int l_nll_loss(lua_State *L) {
  gs_tensor *logp = gsL_checktensor(L, 1), *target = gsL_checktensor(L, 2), *t0, *r;
  if (gs_dtype_is_float(target->dtype) || target->dtype == GS_BOOL)
    return luaL_error(L, "nll_loss: expected integer class indices (1-based) as target, got %s", gs_dtype_name(target->dtype));
  gsL_check(L, gs_binary_scalar(GS_B_SUB, target, gs_scalar_i(1), false, &t0));
  gs_status s = gs_ag_nll_loss(logp, t0, &r);
  gs_tensor_release(t0);
  gsL_check(L, s);
  gsL_pushtensor(L, r);
  return 1;
}

static int l_make_parameter(lua_State *L) {
  gsL_check(L, gs_ag_make_parameter(gsL_checktensor(L, 1), lua_isnoneornil(L, 2) || lua_toboolean(L, 2)));
  lua_settop(L, 1);
  return 1;
}

static int l_is_parameter(lua_State *L) {
  gs_tensor *x = gsL_testtensor(L, 1);
  lua_pushboolean(L, x && x->is_param);
  return 1;
}

void gsL_register_autograd_methods(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"backward", m_backward}, {"detach", m_detach}, {"detach_", m_detach_},
    {"requires_grad_", m_requires_grad_}, {NULL, NULL}};
  luaL_setfuncs(L, methods, 0);
}

void gsL_open_autograd(lua_State *L) {
  luaL_newmetatable(L, "torch.grad_mode_guard");
  lua_pushcfunction(L, restore_mode);
  lua_setfield(L, -2, "__close");
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
    {"no_grad", l_no_grad}, {"enable_grad", l_enable_grad}, {"is_grad_enabled", l_is_grad_enabled},
    {"set_grad_enabled", l_set_grad_enabled}, {"addmm", l_addmm}, {"nll_loss", l_nll_loss},
    {"_make_parameter", l_make_parameter}, {"_is_parameter", l_is_parameter}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
