/* lua_tensor_math.c: tensor methods that compute: elementwise math,
 * comparisons, in-place updates, reductions, softmax and matrix products.
 * Indices that Lua sees are 1-based (argmax, max(d)). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "autograd/gs_autograd.h"
#include "bind/lua_gs.h"


static int unary(lua_State *L) {
  gs_tensor *r;
  gsL_check(L, gs_ag_unary((gs_unary_op)lua_tointeger(L, lua_upvalueindex(1)), gsL_checktensor(L, 1), NULL, &r));
  gsL_pushtensor(L, r);
  return 1;
}
static int unary_(lua_State *L) {
  gsL_check(L, gs_ag_unary_((gs_unary_op)lua_tointeger(L, lua_upvalueindex(1)), gsL_checktensor(L, 1), NULL));
  lua_settop(L, 1);
  return 1;
}

/* A number as the user wrote it: an integer or a float. */
static gs_scalar check_number(lua_State *L, int idx) {
  if (lua_isinteger(L, idx)) return gs_scalar_i(lua_tointeger(L, idx));
  return gs_scalar_f(luaL_checknumber(L, idx));
}

/* clamp(min, max) or clamp({min=, max=}); either bound may be nil (its
 * pointer NULL). */
static void clamp_bounds(lua_State *L, gs_scalar *b, const gs_scalar **lo, const gs_scalar **hi) {
  static const char *const keys[] = {"min", "max"};
  const gs_scalar **out[2] = {lo, hi};
  if (lua_istable(L, 2)) {
    gsL_checkoptions(L, 2, "clamp", keys, GSL_NKEYS(keys));
    lua_settop(L, 2);
    lua_getfield(L, 2, "min");
    lua_getfield(L, 2, "max");
    lua_remove(L, 2); /* min at 2, max at 3 */
  }
  for (int i = 0; i < 2; i++) {
    *out[i] = NULL;
    if (!lua_isnoneornil(L, 2 + i)) { b[i] = check_number(L, 2 + i); *out[i] = &b[i]; }
  }
}

static int m_clamp(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  gs_scalar b[2];
  const gs_scalar *lo, *hi;
  clamp_bounds(L, b, &lo, &hi);
  gsL_check(L, gs_ag_clamp(x, lo, hi, &r));
  gsL_pushtensor(L, r);
  return 1;
}
static int m_clamp_(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1);
  gs_scalar b[2];
  const gs_scalar *lo, *hi;
  clamp_bounds(L, b, &lo, &hi);
  gsL_check(L, gs_ag_clamp_(x, lo, hi));
  lua_settop(L, 1);
  return 1;
}

/* add/sub's optional alpha at 3: a number or {alpha=}; 1 when absent. */
static gs_scalar alpha_arg(lua_State *L, const char *fn) {
  static const char *const keys[] = {"alpha"};
  if (lua_gettop(L) < 3) return gs_scalar_i(1);
  if (lua_istable(L, 3)) gsL_checkoptions(L, 3, fn, keys, GSL_NKEYS(keys));
  if (lua_istable(L, 3) && gsL_optfield(L, 3, "alpha")) lua_replace(L, 3);
  gs_scalar a = check_number(L, 3);
  lua_settop(L, 2);
  return a;
}

/* add/sub with an optional alpha: a + alpha * b */
static int add_sub(lua_State *L, gs_binary_op op) {
  gs_scalar alpha = alpha_arg(L, op == GS_B_ADD ? "add" : "sub"), as, bs;
  gs_tensor *a, *b, *r;
  gsL_operands(L, &a, &as, &b, &bs);
  gsL_check(L, gs_ag_add_alpha(op, a, as, b, bs, alpha, &r));
  gsL_pushtensor(L, r);
  return 1;
}
static int m_add(lua_State *L) { return add_sub(L, GS_B_ADD); }
static int m_sub(lua_State *L) { return add_sub(L, GS_B_SUB); }
static int binary(lua_State *L) {
  lua_settop(L, 2);
  return gsL_binary(L, (gs_binary_op)lua_tointeger(L, lua_upvalueindex(1)));
}

/* In place: x:add_(y[, alpha]), x:mul_(2), ... returns x */
static int binary_(lua_State *L) {
  gs_binary_op op = (gs_binary_op)lua_tointeger(L, lua_upvalueindex(1));
  gs_tensor *x = gsL_checktensor(L, 1), *y;
  gs_scalar ys;
  bool alpha = op == GS_B_ADD || op == GS_B_SUB;
  gs_scalar a = alpha ? alpha_arg(L, op == GS_B_ADD ? "add_" : "sub_") : gs_scalar_i(1);
  if ((y = gsL_testtensor(L, 2))) ys = gs_scalar_i(0);
  else if (lua_isinteger(L, 2)) ys = gs_scalar_i(lua_tointeger(L, 2));
  else if (lua_type(L, 2) == LUA_TNUMBER) ys = gs_scalar_f(lua_tonumber(L, 2));
  else if (lua_isboolean(L, 2)) ys = gs_scalar_b(lua_toboolean(L, 2));
  else return luaL_error(L, "bad argument #1: expected a tensor or a number, got %s", luaL_typename(L, 2));
  if (alpha) gsL_check(L, gs_ag_add_alpha_(op, x, y, ys, a));
  else if (y) gsL_check(L, gs_ag_binary_(op, x, y));
  else gsL_check(L, gs_ag_binary_scalar_(op, x, ys));
  lua_settop(L, 1);
  return 1;
}

static gs_scalar check_scalar(lua_State *L, int idx) {
  if (lua_isinteger(L, idx)) return gs_scalar_i(lua_tointeger(L, idx));
  if (lua_isboolean(L, idx)) return gs_scalar_b(lua_toboolean(L, idx));
  return gs_scalar_f(luaL_checknumber(L, idx));
}

static int m_fill_(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *v = gsL_testtensor(L, 2);
  gsL_check(L, v ? gs_ag_fill_tensor_(x, v) : gs_ag_fill_(x, check_scalar(L, 2)));
  lua_settop(L, 1);
  return 1;
}
static int m_zero_(lua_State *L) {
  gsL_check(L, gs_ag_fill_(gsL_checktensor(L, 1), gs_scalar_i(0)));
  lua_settop(L, 1);
  return 1;
}
static int m_copy_(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *src = gsL_checktensor(L, 2);
  gsL_check(L, gs_ag_copy_(x, src));
  lua_settop(L, 1);
  return 1;
}
static int m_uniform_(lua_State *L) {
  gsL_check(L, gs_ag_uniform_(gsL_checktensor(L, 1), luaL_optnumber(L, 2, 0), luaL_optnumber(L, 3, 1)));
  lua_settop(L, 1);
  return 1;
}
static int m_normal_(lua_State *L) {
  gsL_check(L, gs_ag_normal_(gsL_checktensor(L, 1), luaL_optnumber(L, 2, 0), luaL_optnumber(L, 3, 1)));
  lua_settop(L, 1);
  return 1;
}

/* ---- reductions ---- */

/* Reads (dim, keepdim) at positions 2 and 3; dim -1 (engine) = all. */
/* examples (issue 21): x:sum({1, 3, 4}[, keepdim]) and x:mean(...), the
 * book's X.mean(dim=(0, 2, 3), keepdim=True). Each listed dim is reduced
 * in turn and kept (so the other dims keep their numbers), then the
 * listed dims are dropped unless keepdim: a mean of equal-sized means is
 * the mean over all of them. Every intermediate result sits on the Lua
 * stack, so an error leaks nothing. */
static int is_dim_list(lua_State *L) { return lua_type(L, 2) == LUA_TTABLE && lua_rawlen(L, 2) > 0; }

static int reduce_dim_list(lua_State *L, gs_tensor *x, bool mean) {
  const char *name = mean ? "mean" : "sum";
  int n = (int)lua_rawlen(L, 2);
  bool seen[GS_MAX_DIMS] = {false};
  for (int k = 1; k <= n; k++) {
    lua_rawgeti(L, 2, k);
    int d = gsL_checkdim(L, lua_gettop(L), x->ndim);
    lua_pop(L, 1);
    if (x->ndim == 0) return luaL_error(L, "%s: a 0-dimensional tensor has no dims to list", name);
    if (seen[d]) return luaL_error(L, "%s: dim %d appears more than once in the list of dims", name, d + 1);
    seen[d] = true;
  }
  bool keepdim = lua_toboolean(L, 3);
  int ndim = x->ndim;
  lua_settop(L, 1);
  for (int d = 0; d < ndim; d++) {
    if (!seen[d]) continue;
    gs_tensor *cur = gsL_checktensor(L, -1), *r;
    gsL_check(L, mean ? gs_ag_mean(cur, d, true, &r) : gs_ag_sum(cur, d, true, &r));
    gsL_pushtensor(L, r);
  }
  for (int d = ndim - 1; d >= 0 && !keepdim; d--) {
    if (!seen[d]) continue;
    gs_tensor *cur = gsL_checktensor(L, -1), *r;
    gsL_check(L, gs_ag_squeeze(cur, d, &r));
    gsL_pushtensor(L, r);
  }
  return 1;
}

static int reduce_dim(lua_State *L, gs_tensor *x, bool *keepdim, const char *name) {
  bool var = strcmp(name, "var") == 0 || strcmp(name, "std") == 0;
  static const char *const keys[] = {"dim", "keepdim"}, *const var_keys[] = {"dim", "keepdim", "correction", "unbiased"};
  int d = -1;
  *keepdim = false;
  /* examples: a list of dims would otherwise read as an options table
   * without options, and reduce over everything without a word */
  if (is_dim_list(L))
    luaL_error(L, "%s: a list of dims is supported by sum and mean only; reduce one dim at a time "
               "(x:%s(d[, keepdim]))", name, name);
  if (lua_istable(L, 2)) { /* sum({dim=, keepdim=}) */
    if (var) gsL_checkoptions(L, 2, name, var_keys, GSL_NKEYS(var_keys));
    else gsL_checkoptions(L, 2, name, keys, GSL_NKEYS(keys));
    if (gsL_optfield(L, 2, "keepdim")) { *keepdim = lua_toboolean(L, -1); lua_pop(L, 1); }
    if (gsL_optfield(L, 2, "dim")) { d = gsL_checkdim(L, lua_gettop(L), x->ndim); lua_pop(L, 1); }
    return d;
  }
  if (!lua_isnoneornil(L, 2)) d = gsL_checkdim(L, 2, x->ndim);
  *keepdim = lua_toboolean(L, 3);
  return d;
}

static int plus_one(lua_State *L, gs_tensor *idx) {
  gsL_check(L, gs_ag_binary_scalar_(GS_B_ADD, idx, gs_scalar_i(1)));
  return 0;
}

static int reduce(lua_State *L) {
  gs_reduce_op op = (gs_reduce_op)lua_tointeger(L, lua_upvalueindex(1));
  gs_tensor *x = gsL_checktensor(L, 1), *v = NULL, *i = NULL;
  if ((op == GS_R_MAX || op == GS_R_MIN) && gsL_testtensor(L, 2)) { /* max(a, b): elementwise */
    lua_settop(L, 2);
    return gsL_binary(L, op == GS_R_MAX ? GS_B_MAXIMUM : GS_B_MINIMUM);
  }
  static const char *const rnames[GS_R_COUNT] = {"sum", "prod", "max", "min", "argmax", "argmin"};
  if (op == GS_R_SUM && is_dim_list(L)) return reduce_dim_list(L, x, false); /* examples */
  bool keepdim;
  int d = reduce_dim(L, x, &keepdim, rnames[op]);
  bool pair = (op == GS_R_MAX || op == GS_R_MIN) && d >= 0;
  gs_status s = op == GS_R_SUM ? gs_ag_sum(x, d, keepdim, &v)
              : op == GS_R_PROD ? gs_ag_prod(x, d, keepdim, &v)
              : op == GS_R_MAX || op == GS_R_MIN ? gs_ag_extremum(x, op == GS_R_MAX, d, keepdim, &v, pair ? &i : NULL)
              : gs_reduce(op, x, d, keepdim, &v, pair ? &i : NULL);
  gsL_check(L, s);
  if (op == GS_R_ARGMAX || op == GS_R_ARGMIN) { gsL_pushtensor(L, v); plus_one(L, v); return 1; }
  gsL_pushtensor(L, v);
  if (!pair) return 1;
  /* 1-based out of place: the 0-based indices may be saved by autograd */
  gs_tensor *i1;
  gs_status s1 = gs_binary_scalar(GS_B_ADD, i, gs_scalar_i(1), false, &i1);
  gs_tensor_release(i);
  gsL_check(L, s1);
  gsL_pushtensor(L, i1);
  return 2;
}

static int m_mean(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  if (is_dim_list(L)) return reduce_dim_list(L, x, true); /* examples */
  bool keepdim;
  int d = reduce_dim(L, x, &keepdim, "mean");
  gsL_check(L, gs_ag_mean(x, d, keepdim, &r));
  gsL_pushtensor(L, r);
  return 1;
}

/* std/var([d[, keepdim]]) or ({dim=, keepdim=, correction=, unbiased=}) */
static int var_std(lua_State *L) {
  bool take_sqrt = lua_tointeger(L, lua_upvalueindex(1)) != 0; /* 0 is true in Lua */
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  bool keepdim;
  int d = reduce_dim(L, x, &keepdim, take_sqrt ? "std" : "var");
  int64_t correction = 1;
  if (lua_istable(L, 2)) {
    if (gsL_optfield(L, 2, "correction")) { correction = gsL_topinteger(L, "correction"); lua_pop(L, 1); }
    if (gsL_optfield(L, 2, "unbiased")) { correction = lua_toboolean(L, -1) ? 1 : 0; lua_pop(L, 1); }
  }
  gsL_check(L, gs_ag_var(x, d, keepdim, correction, take_sqrt, &r));
  gsL_pushtensor(L, r);
  return 1;
}

static int m_norm(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  double p = 2;
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char *s = lua_tostring(L, 2);
    if (strcmp(s, "fro") == 0) p = 2;
    else if (strcmp(s, "inf") == 0) p = INFINITY;
    else return luaL_error(L, "norm: unknown norm '%s' (expected a number, 'fro' or 'inf')", s);
  } else if (!lua_isnoneornil(L, 2)) p = luaL_checknumber(L, 2);
  gsL_check(L, gs_ag_norm(x, p, &r));
  gsL_pushtensor(L, r);
  return 1;
}

static int all_any(lua_State *L) {
  gs_tensor *r;
  gsL_check(L, gs_all_any(gsL_checktensor(L, 1), lua_tointeger(L, lua_upvalueindex(1)) != 0, &r));
  gsL_pushtensor(L, r);
  return 1;
}

static int softmax(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  if (lua_isnoneornil(L, 2)) return luaL_error(L, "softmax: the dimension to normalise over is required, e.g. x:softmax(2)");
  int d = gsL_checkdim(L, 2, x->ndim);
  gsL_check(L, gs_ag_softmax(x, d, lua_tointeger(L, lua_upvalueindex(1)) != 0, &r));
  gsL_pushtensor(L, r);
  return 1;
}

static int m_equal(lua_State *L) {
  bool eq;
  gsL_check(L, gs_equal(gsL_checktensor(L, 1), gsL_checktensor(L, 2), &eq));
  lua_pushboolean(L, eq);
  return 1;
}
static int m_allclose(lua_State *L) {
  bool ok;
  double rtol = 1e-5, atol = 1e-8;
  if (lua_istable(L, 3) && !gsL_testtensor(L, 3)) {
    static const char *const keys[] = {"rtol", "atol"};
    gsL_checkoptions(L, 3, "allclose", keys, GSL_NKEYS(keys));
    if (gsL_optfield(L, 3, "rtol")) { rtol = gsL_topnumber(L, "allclose: rtol"); lua_pop(L, 1); }
    if (gsL_optfield(L, 3, "atol")) { atol = gsL_topnumber(L, "allclose: atol"); lua_pop(L, 1); }
  } else {
    rtol = luaL_optnumber(L, 3, rtol);
    atol = luaL_optnumber(L, 4, atol);
  }
  gsL_check(L, gs_allclose(gsL_checktensor(L, 1), gsL_checktensor(L, 2), rtol, atol, &ok));
  lua_pushboolean(L, ok);
  return 1;
}

static int matprod(lua_State *L) {
  int which = (int)lua_tointeger(L, lua_upvalueindex(1));
  gs_tensor *a = gsL_checktensor(L, 1), *b = gsL_checktensor(L, 2), *r;
  gsL_check(L, gs_ag_matmul(a, b, which, &r));
  gsL_pushtensor(L, r);
  return 1;
}

static int m_index_select(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *idx = gsL_checktensor(L, 3), *i0, *r;
  int d = gsL_checkdim(L, 2, x->ndim);
  /* Lua's indices are 1-based: shift them for the engine */
  gsL_check(L, gs_binary_scalar(GS_B_SUB, idx, gs_scalar_i(1), false, &i0));
  gs_status s = gs_ag_index_select(x, d, i0, &r);
  gs_tensor_release(i0);
  gsL_check(L, s);
  gsL_pushtensor(L, r);
  return 1;
}

static void closure(lua_State *L, const char *name, lua_CFunction f, lua_Integer up) {
  lua_pushinteger(L, up);
  lua_pushcclosure(L, f, 1);
  lua_setfield(L, -2, name);
}

void gsL_register_math(lua_State *L) {
  /* the generic methods, from the op lists (gs_op_list.h) */
  static const struct { const char *name; bool method, inplace; } u[] = {
#define LUA_U(ID, name, method, inplace, grad) [GS_U_##ID] = {#name, method, inplace},
    GS_UNARY_OPS(LUA_U)};
  static const struct { const char *name; bool method, inplace; } b[] = {
#define LUA_B(ID, name, method, inplace, grad) [GS_B_##ID] = {#name, method, inplace},
    GS_BINARY_OPS(LUA_B)};
  char name[32];
  for (int op = 0; op < GS_U_COUNT; op++) {
    if (u[op].method) closure(L, u[op].name, unary, op);
    snprintf(name, sizeof name, "%s_", u[op].name);
    if (u[op].inplace) closure(L, name, unary_, op);
  }
  for (int op = 0; op < GS_B_COUNT; op++) {
    if (b[op].method) closure(L, b[op].name, binary, op);
    snprintf(name, sizeof name, "%s_", b[op].name);
    if (b[op].inplace) closure(L, name, binary_, op);
  }
  for (int op = 0; op < GS_R_COUNT; op++) closure(L, gs_reduce_name(op), reduce, op);
  closure(L, "std", var_std, 1);
  closure(L, "var", var_std, 0);
  closure(L, "all", all_any, 0);
  closure(L, "any", all_any, 1);
  closure(L, "softmax", softmax, 0);
  closure(L, "log_softmax", softmax, 1);
  closure(L, "matmul", matprod, 0);
  closure(L, "mm", matprod, 1);
  closure(L, "bmm", matprod, 2);
  static const luaL_Reg fns[] = {
    {"add", m_add}, {"sub", m_sub}, {"clamp", m_clamp}, {"clamp_", m_clamp_}, {"fill_", m_fill_},
    {"zero_", m_zero_}, {"copy_", m_copy_}, {"uniform_", m_uniform_}, {"normal_", m_normal_},
    {"mean", m_mean}, {"norm", m_norm}, {"equal", m_equal}, {"allclose", m_allclose},
    {"index_select", m_index_select}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  /* PyTorch's aliases */
  static const char *aliases[][2] = {{"clip", "clamp"}, {"multiply", "mul"}, {"divide", "div"},
                                     {"subtract", "sub"}, {"negative", "neg"}, {"true_divide", "div"},
                                     {"greater", "gt"}, {"less", "lt"}};
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
    lua_getfield(L, -1, aliases[i][1]);
    lua_setfield(L, -2, aliases[i][0]);
  }
}
