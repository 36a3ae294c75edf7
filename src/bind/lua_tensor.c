/* lua_tensor.c: the tensor metatable: life cycle, printing, fields,
 * indexing (x[i], x[{i, {a, b}, {}}]) and assignment, and the Lua
 * operators. Methods live in lua_tensor_methods.c. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/gs_autograd.h"
#include "bind/lua_gs.h"
#include "io/gs_print.h"

static int t_gc(lua_State *L) {
  gs_tensor **p = luaL_checkudata(L, 1, GSL_TENSOR_MT);
  if (*p) { gs_tensor_release(*p); *p = NULL; }
  return 0;
}

static int t_tostring(lua_State *L) {
  gs_tensor *t = gsL_checktensor(L, 1);
  char *s;
  gsL_check(L, gs_tensor_repr(t, &s));
  lua_pushstring(L, s);
  free(s);
  return 1;
}

static int t_len(lua_State *L) {
  int64_t n;
  gsL_check(L, gs_len(gsL_checktensor(L, 1), &n));
  lua_pushinteger(L, n);
  return 1;
}

/* ---- indexing ---- */

/* One number of a range entry: an integer (or a float with an integer
 * value, as luaL_checkinteger accepts). */
static int64_t range_value(lua_State *L, int k, int j) {
  int ok = 0;
  lua_Integer v = lua_type(L, -1) == LUA_TNUMBER ? lua_tointegerx(L, -1, &ok) : 0;
  if (!ok)
    luaL_error(L, "invalid index entry %d: value %d of a range {a, b, step} must be an integer, got %s", k, j,
               lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

/* Reads an index spec (integer or table of per-dim entries) into entries
 * for gs_ag_index and returns the view it denotes, with one reference
 * owned by the caller. Every entry is read before anything is checked:
 * reading may run metamethods (__len, __index) that change x, so the
 * engine checks the numbers against x as it is afterwards. */
static gs_tensor *index_view(lua_State *L, gs_tensor *x, int kidx) {
  gs_index_entry e[GS_MAX_DIMS];
  int n = 0;
  gs_tensor *v;
  if (lua_isinteger(L, kidx)) {
    e[n++] = (gs_index_entry){.pos = gsL_pos0(lua_tointeger(L, kidx))};
    gsL_check(L, gs_ag_index(x, n, e, &v));
    return v;
  }
  if (!lua_istable(L, kidx))
    luaL_error(L, "invalid index: expected an integer or a table like {i, {a, b}, {}}, got %s", luaL_typename(L, kidx));
  lua_Integer len = luaL_len(L, kidx);
  if (len > x->ndim) { /* the engine refuses it before reading any entry */
    gsL_check(L, gs_ag_index(x, len > INT_MAX ? INT_MAX : (int)len, e, &v));
  }
  for (int k = 1; k <= (int)len; k++, n++) {
    lua_geti(L, kidx, k);
    if (lua_isinteger(L, -1)) {
      e[n] = (gs_index_entry){.pos = gsL_pos0(lua_tointeger(L, -1))};
    } else if (lua_istable(L, -1)) {
      lua_Integer m = luaL_len(L, -1);
      if (m > 3)
        luaL_error(L, "invalid index entry %d: a range is {}, {a}, {a, b} or {a, b, step}, got %I values", k, (LUAI_UACINT)m);
      e[n] = (gs_index_entry){.range = true, .nvals = m < 0 ? 0 : (int)m};
      int64_t *vals[3] = {&e[n].a, &e[n].b, &e[n].step};
      for (int j = 1; j <= e[n].nvals; j++) { lua_geti(L, -1, j); *vals[j - 1] = range_value(L, k, j); }
    } else {
      luaL_error(L, "invalid index entry %d: expected an integer or a range table {a, b}, got %s", k, luaL_typename(L, -1));
    }
    lua_pop(L, 1);
  }
  gsL_check(L, gs_ag_index(x, n, e, &v));
  return v;
}

static int push_field(lua_State *L, gs_tensor *t, const char *k) {
  switch (k[0]) {
  case '_':
    /* PyTorch's x._version: in-place writes into x's storage so far */
    if (strcmp(k, "_version") == 0) { lua_pushinteger(L, (lua_Integer)t->buf->version); return 1; }
    break;
  case 'd':
    if (strcmp(k, "device") == 0) { gsL_pushdevice(L, gs_tensor_device(t)); return 1; }
    if (strcmp(k, "dtype") == 0) { gsL_pushdtype(L, t->dtype); return 1; }
    if (strcmp(k, "data") == 0) { /* a tensor sharing storage, outside autograd */
      gs_tensor *v;
      gsL_check(L, gs_detach(t, &v));
      gsL_pushtensor(L, v);
      return 1;
    }
    break;
  case 's':
    if (strcmp(k, "shape") == 0) { gsL_pushsize(L, t->ndim, t->shape); return 1; }
    break;
  case 'n':
    if (strcmp(k, "ndim") == 0) { lua_pushinteger(L, t->ndim); return 1; }
    break;
  case 'i':
    if (strcmp(k, "is_cuda") == 0) { lua_pushboolean(L, gs_tensor_device(t).type == GS_CUDA); return 1; }
    if (strcmp(k, "is_leaf") == 0) { gs_ag_refresh_view(t); lua_pushboolean(L, t->grad_fn == NULL); return 1; }
    break;
  case 'r':
    if (strcmp(k, "requires_grad") == 0) { gs_ag_refresh_view(t); lua_pushboolean(L, t->requires_grad); return 1; }
    break;
  case 'g':
    if (strcmp(k, "grad") == 0) {
      if (t->grad) { gs_tensor_retain(t->grad); gsL_pushtensor(L, t->grad); } else lua_pushnil(L);
      return 1;
    }
    if (strcmp(k, "grad_fn") == 0) {
      gs_ag_refresh_view(t);
      if (t->grad_fn) lua_pushfstring(L, "<%s>", gs_grad_fn_name(t->grad_fn)); else lua_pushnil(L);
      return 1;
    }
    break;
  case 'T':
    if (k[1] == 0) {
      int dims[GS_MAX_DIMS]; /* x.T reverses all dims */
      for (int i = 0; i < t->ndim; i++) dims[i] = t->ndim - 1 - i;
      gs_tensor *v;
      gsL_check(L, gs_ag_permute(t, t->ndim, dims, &v));
      gsL_pushtensor(L, v);
      return 1;
    }
    break;
  }
  return 0;
}

/* ---- no silent nil, no silent == (issue 22, item 5) ---- */

/* The fields __index answers (push_field), for the did-you-mean below,
 * completion and help (the metatable's __fields). */
static const char *const tensor_fields[] = {"device", "dtype", "shape", "ndim", "is_cuda", "is_leaf", "requires_grad",
                                            "grad", "grad_fn", "data", "T", NULL};

/* Edit distance (insert, delete, substitute, swap of neighbours) between
 * two short names, capped: names longer than 40 bytes count as far. */
static int name_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 40 || m > 40) return 99;
  int d[41][41];
  for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < c) c = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < c) c = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < c)
        c = d[i - 2][j - 2] + 1;
      d[i][j] = c;
    }
  return d[n][m];
}

/* x.devcie, x.foo: reading a name a tensor does not have is an error that
 * names the closest field or method (methods: the table at `methods`), not
 * a silent nil that fails far away. Names starting with `_` stay nil: they
 * are protocol probes (`_repr_html_`), never typed by a learner. */
static int unknown_field(lua_State *L, int methods, const char *k) {
  if (k[0] == '_') { lua_pushnil(L); return 1; }
  const char *best = NULL;
  int bestd = strlen(k) <= 3 ? 1 : 2; /* farther is no longer a slip */
  for (int i = 0; tensor_fields[i]; i++) {
    int d = name_distance(k, tensor_fields[i]);
    if (d <= bestd && (best == NULL || d < bestd)) { best = tensor_fields[i]; bestd = d; }
  }
  lua_pushnil(L);
  while (lua_next(L, methods)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) continue;
    const char *m = lua_tostring(L, -1);
    if (m[0] == '_') continue;
    int d = name_distance(k, m);
    if (d < bestd || (d == bestd && best == NULL)) { best = m; bestd = d; }
  }
  if (best) {
    /* best points into the methods table's keys or a static string: both outlive the error */
    int is_field = 0;
    for (int i = 0; tensor_fields[i]; i++) is_field |= strcmp(best, tensor_fields[i]) == 0;
    if (is_field) return luaL_error(L, "a tensor has no field or method '%s' (did you mean '%s'?)", k, best);
    return luaL_error(L, "a tensor has no field or method '%s' (did you mean the method '%s'? call it as x:%s(...))",
                      k, best, best);
  }
  return luaL_error(L, "a tensor has no field or method '%s': its fields are device, dtype, shape, ndim, is_cuda, "
                    "is_leaf, requires_grad, grad, grad_fn, data and T; help(x) lists its methods", k);
}

/* x == y on two different tensors: Lua's == must give a boolean, so it
 * cannot be PyTorch's elementwise comparison, and a plain false would be a
 * silent wrong answer. The same object never gets here (Lua compares it
 * equal itself). */
static int t_eq(lua_State *L) {
  if (gsL_testtensor(L, 1) && gsL_testtensor(L, 2))
    return luaL_error(L, "== on two tensors: Lua's == cannot give a tensor; use x:eq(y) for the elementwise "
                      "comparison (as PyTorch's x == y), x:equal(y) for one boolean (same shape and values), "
                      "or rawequal(x, y) to ask whether they are the same object");
  lua_pushboolean(L, 0);
  return 1;
}

/* x[mask] and x[mask] = v with a bool tensor: the library's Lua functions
 * (lua/torch/tensor_extra.lua) left in the registry as torch.mask_index and
 * torch.mask_assign, called with the first nargs arguments. */
static bool is_bool_mask(lua_State *L, int idx) {
  gs_tensor *m = gsL_testtensor(L, idx);
  return m && m->dtype == GS_BOOL;
}

static int call_mask_hook(lua_State *L, const char *name, int nargs) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, name) != LUA_TFUNCTION) return luaL_error(L, "boolean-mask indexing is not available");
  for (int i = 1; i <= nargs; i++) lua_pushvalue(L, i);
  lua_call(L, nargs, nargs == 2 ? 1 : 0);
  return nargs == 2 ? 1 : 0;
}

static int t_index(lua_State *L) {
  gs_tensor *t = gsL_checktensor(L, 1);
  if (lua_type(L, 2) == LUA_TSTRING) {
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1; /* a method */
    lua_pop(L, 1);
    if (push_field(L, t, lua_tostring(L, 2))) return 1;
    return unknown_field(L, lua_upvalueindex(1), lua_tostring(L, 2));
  }
  if (is_bool_mask(L, 2)) return call_mask_hook(L, "torch.mask_index", 2);
  gsL_pushtensor(L, index_view(L, t, 2));
  return 1;
}

static int t_newindex(lua_State *L) {
  gs_tensor *t = gsL_checktensor(L, 1);
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char *k = lua_tostring(L, 2);
    if (strcmp(k, "requires_grad") == 0) {
      gsL_check(L, gs_ag_set_requires_grad(t, lua_toboolean(L, 3)));
      return 0;
    }
    if (strcmp(k, "grad") == 0) {
      gs_tensor *g = lua_isnil(L, 3) ? NULL : gsL_checktensor(L, 3);
      gsL_check(L, gs_ag_set_grad(t, g));
      if (g) gsL_register(L, 3);
      return 0;
    }
    if (strcmp(k, "data") == 0) {
      gsL_check(L, gs_ag_set_data(t, gsL_checktensor(L, 3)));
      return 0;
    }
    return luaL_error(L, "cannot set field '%s' of a tensor", k);
  }
  if (is_bool_mask(L, 2)) return call_mask_hook(L, "torch.mask_assign", 3);
  gs_tensor *v = index_view(L, t, 2);
  gs_status s;
  gs_tensor *src = gsL_testtensor(L, 3);
  if (src) s = gs_ag_copy_(v, src);
  else if (lua_isinteger(L, 3)) s = gs_ag_fill_(v, gs_scalar_i(lua_tointeger(L, 3)));
  else if (lua_isnumber(L, 3)) s = gs_ag_fill_(v, gs_scalar_f(lua_tonumber(L, 3)));
  else if (lua_isboolean(L, 3)) s = gs_ag_fill_(v, gs_scalar_i(lua_toboolean(L, 3)));
  else { gs_tensor_release(v); return luaL_error(L, "cannot assign %s to a tensor element: expected a number, boolean or tensor", luaL_typename(L, 3)); }
  gs_tensor_release(v);
  gsL_check(L, s);
  return 0;
}

/* ---- operators: tensor op tensor, tensor op number, number op tensor ---- */

static bool to_scalar(lua_State *L, int idx, gs_scalar *s) {
  if (lua_isinteger(L, idx)) { *s = gs_scalar_i(lua_tointeger(L, idx)); return true; }
  if (lua_type(L, idx) == LUA_TNUMBER) { *s = gs_scalar_f(lua_tonumber(L, idx)); return true; }
  if (lua_isboolean(L, idx)) { *s = gs_scalar_b(lua_toboolean(L, idx)); return true; }
  return false;
}

void gsL_operands(lua_State *L, gs_tensor **a, gs_scalar *as, gs_tensor **b, gs_scalar *bs) {
  *a = gsL_testtensor(L, 1);
  *b = gsL_testtensor(L, 2);
  *as = *bs = gs_scalar_i(0);
  if (!*a && !*b) gsL_checktensor(L, 1);
  int bad = !*a && !to_scalar(L, 1, as) ? 1 : !*b && !to_scalar(L, 2, bs) ? 2 : 0;
  if (bad) luaL_error(L, "bad operand: expected a tensor or a number, got %s", luaL_typename(L, bad));
}

int gsL_binary(lua_State *L, gs_binary_op op) {
  gs_tensor *a, *b, *r;
  gs_scalar as, bs;
  gsL_operands(L, &a, &as, &b, &bs);
  gsL_check(L, gs_ag_binary_mixed(op, a, as, b, bs, &r));
  gsL_pushtensor(L, r);
  return 1;
}

static int t_add(lua_State *L) { return gsL_binary(L, GS_B_ADD); }
static int t_sub(lua_State *L) { return gsL_binary(L, GS_B_SUB); }
static int t_mul(lua_State *L) { return gsL_binary(L, GS_B_MUL); }
static int t_div(lua_State *L) { return gsL_binary(L, GS_B_DIV); }
static int t_idiv(lua_State *L) { return gsL_binary(L, GS_B_FLOOR_DIV); }
static int t_mod(lua_State *L) { return gsL_binary(L, GS_B_REMAINDER); }
static int t_pow(lua_State *L) { return gsL_binary(L, GS_B_POW); }
static int t_unm(lua_State *L) {
  gs_tensor *r;
  gsL_check(L, gs_ag_unary(GS_U_NEG, gsL_checktensor(L, 1), NULL, &r));
  gsL_pushtensor(L, r);
  return 1;
}

void gsL_open_tensor(lua_State *L) {
  luaL_newmetatable(L, GSL_TENSOR_MT);
  gsL_set_tensor_mt(lua_topointer(L, -1));
  static const luaL_Reg meta[] = {
    {"__gc", t_gc}, {"__close", t_gc}, {"__tostring", t_tostring}, {"__len", t_len},
    {"__newindex", t_newindex}, {"__add", t_add}, {"__sub", t_sub}, {"__mul", t_mul},
    {"__div", t_div}, {"__idiv", t_idiv}, {"__mod", t_mod}, {"__pow", t_pow}, {"__unm", t_unm},
    {"__eq", t_eq}, /* no silent == (issue 22, item 5) */
    {NULL, NULL}};
  luaL_setfuncs(L, meta, 0);
  lua_pushliteral(L, "torch.Tensor");
  lua_setfield(L, -2, "__name");
  /* the fields __index answers, for completion and help */
  lua_newtable(L);
  for (int i = 0; tensor_fields[i]; i++) {
    lua_pushstring(L, tensor_fields[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "__fields");
  /* methods: a plain table, also reachable as torch._methods for the
   * Lua side (help, completion, torch.<method> functions); luaopen_torch
   * fills it from each binding file */
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, -4, "_methods"); /* torch table is below the metatable */
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__methods");
  lua_pushcclosure(L, t_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}
