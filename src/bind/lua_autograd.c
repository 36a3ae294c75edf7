/* lua_autograd.c: the autograd surface: x:backward([g]), x:detach(),
 * x:requires_grad_(), x:register_post_accumulate_grad_hook(fn),
 * torch._queue_backward_callback(fn), torch.no_grad (function and <close> forms),
 * torch.enable_grad, torch.addmm, torch.nll_loss (1-based targets) and
 * torch._make_parameter for nn.Parameter. */
#include "autograd/gs_autograd.h"
#include "bind/lua_gs.h"

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
  gs_tensor *r;
  gsL_check(L, gs_ag_nll_loss(gsL_checktensor(L, 1), gsL_checktensor(L, 2), &r));
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

/* ---- hooks ----
 * Registry "gshell.grad_hooks": the tensor's Lua object -> list of
 * functions, with weak keys (an ephemeron table: the hooks, and what they
 * hold, go with the tensor's object); "gshell.backward_callbacks":
 * functions run once at the end
 * of the current backward pass. The engine calls back through
 * gs_grad_ready_hook / gs_backward_end_hook; a Lua error in a hook
 * becomes the engine error that stops the pass. */
static lua_State *hook_L;
static const char *HOOKS = "gshell.grad_hooks", *CALLBACKS = "gshell.backward_callbacks";

static gs_status lua_fail(lua_State *L, const char *what) {
  gs_status s = gs_error("%s: %s", what, lua_tostring(L, -1) ? lua_tostring(L, -1) : "error object is not a string");
  lua_pop(L, 1);
  return s;
}

static gs_status run_grad_hooks(gs_tensor *leaf) {
  lua_State *L = hook_L;
  if (!L) return GS_OK;
  lua_getfield(L, LUA_REGISTRYINDEX, HOOKS);
  gs_tensor_retain(leaf);
  gsL_pushtensor(L, leaf); /* its registered object, if it still has one */
  lua_rawget(L, -2);
  if (!lua_istable(L, -1)) { lua_pop(L, 2); return GS_OK; }
  lua_Integer n = luaL_len(L, -1);
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_rawgeti(L, -1, i) != LUA_TFUNCTION) { lua_pop(L, 1); continue; }
    gs_tensor_retain(leaf);
    gsL_pushtensor(L, leaf);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
      gs_status s = lua_fail(L, "error in a post-accumulate-grad hook");
      lua_pop(L, 2);
      return s;
    }
  }
  lua_pop(L, 2);
  return GS_OK;
}

static gs_status run_callbacks(bool ok) {
  lua_State *L = hook_L;
  if (!L) return GS_OK;
  lua_getfield(L, LUA_REGISTRYINDEX, CALLBACKS);
  lua_Integer n = luaL_len(L, -1);
  if (n == 0) { lua_pop(L, 1); return GS_OK; }
  lua_newtable(L); /* callbacks queued by these run at the next pass */
  lua_setfield(L, LUA_REGISTRYINDEX, CALLBACKS);
  gs_status s = GS_OK;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    lua_pushboolean(L, ok);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
      gs_status e = lua_fail(L, "error in a backward callback");
      if (s == GS_OK) s = e;
    }
  }
  lua_pop(L, 1);
  return s;
}

/* x:register_post_accumulate_grad_hook(fn): fn(x) after a backward pass
 * has accumulated x's gradient (x a leaf that requires grad). Returns a
 * handle whose remove() takes the hook away. */
static int h_remove(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, HOOKS);
  lua_getfield(L, 1, "_key");
  gs_tensor *key = gsL_testtensor(L, -1);
  if (key && lua_rawget(L, -2) == LUA_TTABLE) {
    lua_getfield(L, 1, "_fn");
    lua_Integer n = luaL_len(L, -2);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -2, i);
      bool same = lua_rawequal(L, -1, -2);
      lua_pop(L, 1);
      if (same) {
        for (lua_Integer j = i; j < n; j++) { lua_rawgeti(L, -2, j + 1); lua_rawseti(L, -3, j); }
        lua_pushnil(L);
        lua_rawseti(L, -3, n);
        if (n == 1) gs_ag_set_grad_hook(key, false);
        break;
      }
    }
  }
  return 0;
}

static int m_register_post_accumulate_grad_hook(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  gsL_check(L, gs_ag_set_grad_hook(x, true));
  gsL_register(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, HOOKS);
  lua_pushvalue(L, 1);
  if (lua_rawget(L, -2) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
  }
  lua_pushvalue(L, 2);
  lua_rawseti(L, -2, luaL_len(L, -2) + 1);
  lua_createtable(L, 0, 3); /* the handle */
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, "_key");
  lua_pushvalue(L, 2);
  lua_setfield(L, -2, "_fn");
  lua_pushcfunction(L, h_remove);
  lua_setfield(L, -2, "remove");
  return 1;
}

/* torch._queue_backward_callback(fn): fn(ok) at the end of the backward
 * pass running now (or the next one). */
static int l_queue_backward_callback(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_getfield(L, LUA_REGISTRYINDEX, CALLBACKS);
  lua_pushvalue(L, 1);
  lua_rawseti(L, -2, luaL_len(L, -2) + 1);
  return 0;
}

void gsL_register_autograd_methods(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"backward", m_backward}, {"detach", m_detach}, {"detach_", m_detach_},
    {"requires_grad_", m_requires_grad_},
    {"register_post_accumulate_grad_hook", m_register_post_accumulate_grad_hook}, {NULL, NULL}};
  luaL_setfuncs(L, methods, 0);
}

void gsL_open_autograd(lua_State *L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  hook_L = lua_tothread(L, -1);
  lua_pop(L, 1);
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, HOOKS);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, CALLBACKS);
  gs_grad_ready_hook = run_grad_hooks;
  gs_backward_end_hook = run_callbacks;
  luaL_newmetatable(L, "torch.grad_mode_guard");
  lua_pushcfunction(L, restore_mode);
  lua_setfield(L, -2, "__close");
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
    {"no_grad", l_no_grad}, {"enable_grad", l_enable_grad}, {"is_grad_enabled", l_is_grad_enabled},
    {"set_grad_enabled", l_set_grad_enabled}, {"addmm", l_addmm}, {"nll_loss", l_nll_loss},
    {"_make_parameter", l_make_parameter}, {"_is_parameter", l_is_parameter},
    {"_queue_backward_callback", l_queue_backward_callback}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
