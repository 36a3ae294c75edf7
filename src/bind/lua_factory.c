/* lua_factory.c: functions that make tensors: torch.tensor from nested
 * tables, ones/zeros/empty/full, random factories, arange, linspace, eye,
 * the *_like forms, cat and stack. Every factory takes a trailing options
 * table {device=, dtype=, requires_grad=}. */
#include <limits.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include "autograd/gs_autograd.h"
#include "bind/lua_gs.h"
#include "core/gs_model_clock.h"

typedef struct {
  gs_device device;
  gs_dtype dtype;
  bool has_dtype, requires_grad;
} opts;

/* An options table is a plain table with string keys (a size table has
 * only integer keys, and a torch.Size has its own metatable). */
static bool is_options(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TTABLE || luaL_testudata(L, idx, GSL_SIZE_MT)) return false;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    bool str = lua_type(L, -2) == LUA_TSTRING;
    lua_pop(L, 1); /* the value; the key stays for lua_next */
    if (str) { lua_pop(L, 1); return true; }
  }
  return false;
}

static bool is_empty_table(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TTABLE) return false;
  if (lua_getmetatable(L, idx)) { lua_pop(L, 1); return false; } /* a torch.Size */
  lua_pushnil(L);
  if (lua_next(L, idx)) { lua_pop(L, 2); return false; }
  return true;
}

/* Reads a trailing options table into o; returns the index of the last
 * positional argument. */
static int read_opts_on(lua_State *L, opts *o, gs_dtype def, gs_device dev, const char *fname) {
  static const char *const keys[] = {"device", "dtype", "requires_grad"};
  int top = lua_gettop(L);
  o->device = dev;
  o->dtype = def;
  o->has_dtype = false;
  o->requires_grad = false;
  /* A trailing empty table after other arguments is an options table
   * with nothing in it ({device = devices[2]} when there is no second
   * GPU); alone it stays a size ({}: a 0-d tensor). */
  if (top >= 2 && is_empty_table(L, top)) return top - 1;
  if (top < 1 || !is_options(L, top)) return top;
  gsL_checkoptions(L, top, fname, keys, GSL_NKEYS(keys));
  if (gsL_optfield(L, top, "device")) { o->device = gsL_checkdevice(L, -1); lua_pop(L, 1); }
  if (gsL_optfield(L, top, "dtype")) {
    /* checked at its absolute index: at -1 a non-dtype was reported as "bad argument #-1" */
    int t = lua_type(L, -1);
    if (!gsL_testdtype(L, -1, &o->dtype) && t != LUA_TSTRING && t != LUA_TUSERDATA)
      luaL_error(L, "dtype= expects a dtype (e.g. torch.float32) or its name, got %s", luaL_typename(L, -1));
    o->dtype = gsL_checkdtype(L, lua_gettop(L));
    o->has_dtype = true;
    lua_pop(L, 1);
  }
  if (gsL_optfield(L, top, "requires_grad")) { o->requires_grad = lua_toboolean(L, -1); lua_pop(L, 1); }
  return top - 1;
}

static int read_opts(lua_State *L, opts *o, gs_dtype def, const char *fname) {
  return read_opts_on(L, o, def, gsL_default_device(), fname);
}

/* requires_grad on a fresh leaf (the engine refuses non-floating ones) */
static void finish(lua_State *L, gs_tensor *t, const opts *o) {
  if (o->requires_grad && gs_ag_set_requires_grad(t, true) != GS_OK) {
    gs_tensor_release(t);
    gsL_raise(L);
  }
  gsL_pushtensor(L, t);
}

/* ---- torch.tensor ---- */

typedef struct { int ndim; int64_t shape[GS_MAX_DIMS]; bool any_float, any_bool, any_int, any_leaf; } nest_info;

/* Walks a nested table once to find its shape and kind of values. */
static void nest_scan(lua_State *L, int idx, int d, nest_info *ni, char *path, size_t plen) {
  if (lua_istable(L, idx) && !gsL_testtensor(L, idx)) {
    lua_Integer n = luaL_len(L, idx);
    if (d >= GS_MAX_DIMS) luaL_error(L, "torch.tensor: nesting deeper than %d dimensions", GS_MAX_DIMS);
    /* A Lua table holds at most about 2^31 array and 2^30 hash entries, so
     * a longer length can only come from a __len metamethod: reading that
     * many elements would run for hours, so it is refused up front. */
    if (n < 0 || n > ((lua_Integer)1 << 32))
      luaL_error(L, "torch.tensor: a table at %s reports length %I (from __len?); expected 0 to 2^32", plen ? path : "top level", n);
    /* a table where numbers were already found at this depth, e.g. the
     * {2} of {1, {2}}: ragged (without this check the fill pass would
     * index the number 1 and fail with Lua's "attempt to index") */
    if (d == ni->ndim && ni->any_leaf)
      luaL_error(L, "torch.tensor: expected a number at %s but got a table (ragged nesting)", plen ? path : "top level");
    if (d == ni->ndim) { ni->shape[d] = n; ni->ndim = d + 1; }
    else if (ni->shape[d] != n || d >= ni->ndim)
      luaL_error(L, "torch.tensor: expected sequence of length %d at dim %d (got %d) at %s", (int)ni->shape[d], d + 1, (int)n, plen ? path : "top level");
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, idx, i);
      size_t k = plen + (size_t)snprintf(path + plen, 256 - plen > 0 ? 256 - plen : 0, "[%d]", (int)i);
      if (k > 250) k = 250;
      nest_scan(L, lua_gettop(L), d + 1, ni, path, k);
      lua_pop(L, 1);
    }
    return;
  }
  if (d != ni->ndim) {
    if (d < ni->ndim) luaL_error(L, "torch.tensor: expected a sequence at %s but got a %s (ragged nesting)", path, luaL_typename(L, idx));
    luaL_error(L, "torch.tensor: ragged nesting at %s", path);
  }
  ni->any_leaf = true;
  if (lua_isinteger(L, idx)) ni->any_int = true;
  else if (lua_type(L, idx) == LUA_TNUMBER) ni->any_float = true;
  else if (lua_isboolean(L, idx)) ni->any_bool = true;
  else luaL_error(L, "torch.tensor: expected numbers or booleans, got %s at %s", luaL_typename(L, idx), plen ? path : "top level");
}

static void nest_fill(lua_State *L, int idx, int d, const gs_tensor *t, int64_t *at) {
  if (d == t->ndim) {
    char *p = gs_tensor_ptr(t) + *at * (int64_t)gs_dtype_size(t->dtype);
    if (lua_isinteger(L, idx)) gs_store_i64(t->dtype, p, lua_tointeger(L, idx));
    else if (lua_isboolean(L, idx)) gs_store_i64(t->dtype, p, lua_toboolean(L, idx));
    else gs_store_f64(t->dtype, p, lua_tonumber(L, idx));
    (*at)++;
    return;
  }
  for (int64_t i = 1; i <= t->shape[d]; i++) {
    lua_geti(L, idx, i);
    nest_fill(L, lua_gettop(L), d + 1, t, at);
    lua_pop(L, 1);
  }
}

static int l_tensor(lua_State *L) {
  opts o;
  int last = read_opts(L, &o, GS_FLOAT32, "torch.tensor");
  if (last < 1) return luaL_error(L, "torch.tensor: expected data (a number, boolean or nested table of them)");
  gs_tensor *src = gsL_testtensor(L, 1), *t, *r;
  if (src) { /* a copy, like torch.tensor(t) */
    gsL_check(L, gs_to(src, o.device, o.has_dtype ? o.dtype : src->dtype, &r));
    if (r == src) { gs_tensor_release(r); gsL_check(L, gs_clone(src, &r)); }
    finish(L, r, &o);
    return 1;
  }
  nest_info ni = {0};
  char path[256] = "";
  nest_scan(L, 1, 0, &ni, path, 0);
  gs_dtype dt = o.has_dtype ? o.dtype : ni.any_float ? GS_FLOAT32 : ni.any_int ? GS_INT64 : ni.any_bool ? GS_BOOL : GS_FLOAT32;
  gsL_check(L, gs_tensor_empty(gs_cpu(), dt, ni.ndim, ni.shape, &t));
  /* Filling reads the table again and its metamethods may raise: the
   * tensor is on the stack (the collector's) while it is being filled. */
  gsL_pushtensor(L, t);
  int64_t at = 0;
  nest_fill(L, 1, 0, t, &at);
  gsL_check(L, gs_to(t, o.device, dt, &r));
  if (r == t) { /* already where it belongs: the object on the stack is the result */
    gs_tensor_release(r);
    if (o.requires_grad) gsL_check(L, gs_ag_set_requires_grad(t, true));
    return 1;
  }
  finish(L, r, &o);
  return 1;
}

/* ---- shape-taking factories ---- */

static int filled(lua_State *L, gs_scalar v, const char *fname) {
  opts o;
  int last = read_opts(L, &o, GS_FLOAT32, fname);
  int64_t shape[GS_MAX_DIMS];
  int n = gsL_checksizes(L, 1, last, shape);
  gs_tensor *t;
  gsL_check(L, gs_full(o.device, o.dtype, n, shape, v, &t));
  finish(L, t, &o);
  return 1;
}
static int l_ones(lua_State *L) { return filled(L, gs_scalar_i(1), "torch.ones"); }
static int l_zeros(lua_State *L) { return filled(L, gs_scalar_i(0), "torch.zeros"); }

static int l_empty(lua_State *L) {
  opts o;
  int last = read_opts(L, &o, GS_FLOAT32, "torch.empty");
  int64_t shape[GS_MAX_DIMS];
  int n = gsL_checksizes(L, 1, last, shape);
  gs_tensor *t;
  gsL_check(L, gs_tensor_empty(o.device, o.dtype, n, shape, &t));
  finish(L, t, &o);
  return 1;
}

static int l_full(lua_State *L) {
  opts o;
  int last = read_opts(L, &o, GS_FLOAT32, "torch.full");
  if (last < 2) return luaL_error(L, "torch.full(size, value): expected a size and a fill value");
  gs_scalar v;
  gs_dtype inferred;
  if (lua_isinteger(L, last)) { v = gs_scalar_i(lua_tointeger(L, last)); inferred = GS_INT64; }
  else if (lua_isboolean(L, last)) { v = gs_scalar_i(lua_toboolean(L, last)); inferred = GS_BOOL; }
  else { v = gs_scalar_f(luaL_checknumber(L, last)); inferred = GS_FLOAT32; }
  int64_t shape[GS_MAX_DIMS];
  int n = gsL_checksizes(L, 1, last - 1, shape);
  gs_tensor *t;
  gs_dtype dt = o.has_dtype ? o.dtype : inferred;
  gsL_check(L, gs_scalar_fits(dt, v));
  gsL_check(L, gs_full(o.device, dt, n, shape, v, &t));
  finish(L, t, &o);
  return 1;
}

static int random_factory(lua_State *L, bool normal) {
  opts o;
  int last = read_opts(L, &o, GS_FLOAT32, normal ? "torch.randn" : "torch.rand");
  int64_t shape[GS_MAX_DIMS];
  int n = gsL_checksizes(L, 1, last, shape);
  gs_tensor *t;
  gsL_check(L, gs_rand(o.device, o.dtype, n, shape, normal, &t));
  finish(L, t, &o);
  return 1;
}
static int l_rand(lua_State *L) { return random_factory(L, false); }
static int l_randn(lua_State *L) { return random_factory(L, true); }

/* randint(low, high, size) or randint(high, size) */
static int l_randint(lua_State *L) {
  opts o;
  int last = read_opts(L, &o, GS_INT64, "torch.randint");
  /* randint(0, 10, {}): the {} is the (empty) size, which randint needs */
  if (last == 2 && lua_gettop(L) == 3 && !lua_istable(L, 2)) last = 3;
  int size_at = lua_istable(L, 2) || (last == 2 && !lua_istable(L, 3)) ? 2 : 3;
  if (last == 2 && !lua_istable(L, 2)) return luaL_error(L, "torch.randint(low, high, size): expected a size table");
  lua_Integer lo = size_at == 3 ? luaL_checkinteger(L, 1) : 0, hi = luaL_checkinteger(L, size_at - 1);
  int64_t shape[GS_MAX_DIMS];
  int n = gsL_checksizes(L, size_at, last, shape);
  gs_tensor *t;
  gsL_check(L, gs_randint(o.device, o.dtype, n, shape, lo, hi, &t));
  finish(L, t, &o);
  return 1;
}

static int l_randperm(lua_State *L) {
  opts o;
  read_opts(L, &o, GS_INT64, "torch.randperm");
  gs_tensor *r;
  /* 1-based like every index Lua sees */
  gsL_check(L, gs_randperm(o.device, o.dtype, luaL_checkinteger(L, 1), 1, &r));
  finish(L, r, &o);
  return 1;
}

/* arange(n), arange(a, b[, step]): int64 unless a bound is a float */
static int l_arange(lua_State *L) {
  opts o;
  int last = read_opts(L, &o, GS_INT64, "torch.arange");
  if (last < 1 || last > 3) return luaL_error(L, "torch.arange(n) or torch.arange(a, b[, step]) expected");
  bool any_float = false;
  for (int i = 1; i <= last; i++) { luaL_checknumber(L, i); if (!lua_isinteger(L, i)) any_float = true; }
  double a = last == 1 ? 0 : lua_tonumber(L, 1), b = lua_tonumber(L, last == 1 ? 1 : 2), step = last == 3 ? lua_tonumber(L, 3) : 1;
  gs_dtype dt = o.has_dtype ? o.dtype : any_float ? GS_FLOAT32 : GS_INT64;
  gs_tensor *t;
  if (!any_float) {
    lua_Integer ia = last == 1 ? 0 : lua_tointeger(L, 1), ib = lua_tointeger(L, last == 1 ? 1 : 2),
                is = last == 3 ? lua_tointeger(L, 3) : 1;
    gsL_check(L, gs_arange_int(o.device, dt, ia, ib, is, &t));
    finish(L, t, &o);
    return 1;
  }
  gsL_check(L, gs_arange(o.device, dt, a, b, step, &t));
  finish(L, t, &o);
  return 1;
}

static int l_linspace(lua_State *L) {
  opts o;
  read_opts(L, &o, GS_FLOAT32, "torch.linspace");
  gs_tensor *t;
  gsL_check(L, gs_linspace(o.device, o.dtype, luaL_checknumber(L, 1), luaL_checknumber(L, 2), luaL_checkinteger(L, 3), &t));
  finish(L, t, &o);
  return 1;
}

static int l_eye(lua_State *L) {
  opts o;
  int last = read_opts(L, &o, GS_FLOAT32, "torch.eye");
  lua_Integer n = luaL_checkinteger(L, 1), m = last >= 2 ? luaL_checkinteger(L, 2) : n;
  gs_tensor *t;
  gsL_check(L, gs_eye(o.device, o.dtype, n, m, &t));
  finish(L, t, &o);
  return 1;
}

/* *_like(x[, value][, opts]): x's shape, dtype and device unless overridden */
static int like(lua_State *L) {
  int kind = (int)lua_tointeger(L, lua_upvalueindex(1)); /* 0 zeros 1 ones 2 empty 3 rand 4 randn 5 full */
  static const char *const names[] = {"torch.zeros_like", "torch.ones_like", "torch.empty_like",
                                      "torch.rand_like", "torch.randn_like", "torch.full_like"};
  gs_tensor *x = gsL_checktensor(L, 1);
  opts o;
  int last = read_opts_on(L, &o, x->dtype, gs_tensor_device(x), names[kind]);
  /* torch.ones_like(x, 'cuda') used to drop its 'cuda' silently: the only
   * positional argument after x is full_like's value */
  if (last > (kind == 5 ? 2 : 1)) {
    int at = kind == 5 ? 3 : 2;
    gs_dtype dt;
    bool is_dtype = gsL_testdtype(L, at, &dt) && lua_type(L, at) != LUA_TSTRING;
    if (is_dtype)
      return luaL_error(L, "%s: a dtype goes in the options table: %s(x%s, {dtype = torch.%s})", names[kind],
                        names[kind], kind == 5 ? ", value" : "", gs_dtype_name(dt));
    if (lua_type(L, at) == LUA_TSTRING || luaL_testudata(L, at, GSL_DEVICE_MT) || lua_isinteger(L, at)) {
      bool quote = lua_type(L, at) == LUA_TSTRING;
      const char *d = luaL_tolstring(L, at, NULL);
      return luaL_error(L, "%s: a device goes in the options table: %s(x%s, {device = %s%s%s})", names[kind],
                        names[kind], kind == 5 ? ", value" : "", quote ? "'" : "", d, quote ? "'" : "");
    }
    return luaL_error(L, "%s(x%s[, options]): unexpected argument #%d (a %s)", names[kind],
                      kind == 5 ? ", value" : "", at, luaL_typename(L, at));
  }
  gs_tensor *t;
  gs_status s;
  if (kind == 5) {
    gs_scalar v = lua_isinteger(L, 2) ? gs_scalar_i(lua_tointeger(L, 2)) : gs_scalar_f(luaL_checknumber(L, 2));
    s = gs_scalar_fits(o.dtype, v);
    if (s == GS_OK) s = gs_full(o.device, o.dtype, x->ndim, x->shape, v, &t);
  } else if (kind <= 1) {
    s = gs_full(o.device, o.dtype, x->ndim, x->shape, gs_scalar_i(kind), &t);
  } else {
    s = gs_tensor_empty(o.device, o.dtype, x->ndim, x->shape, &t);
    if (s == GS_OK && kind >= 3) {
      s = kind == 3 ? gs_uniform_(t, 0, 1) : gs_normal_(t, 0, 1);
      if (s != GS_OK) gs_tensor_release(t);
    }
  }
  gsL_check(L, s);
  finish(L, t, &o);
  return 1;
}

/* ---- joining ---- */

static int join(lua_State *L) {
  bool stack = lua_toboolean(L, lua_upvalueindex(1));
  const char *fn = stack ? "stack" : "cat";
  lua_settop(L, 2); /* the anchors below go above the arguments */
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 1);
  if (n < 0 || n > INT_MAX) return luaL_error(L, "%s: the list's length must be between 0 and %d, got %I", fn, INT_MAX, n);
  /* The list's __index may create tensors and run the collector: every
   * element stays referenced from an anchor table while its pointer is in
   * use, and the pointer array is a userdata so an error leaks nothing. */
  gs_tensor **xs = lua_newuserdatauv(L, sizeof *xs * (size_t)(n ? n : 1), 0);
  lua_createtable(L, (int)n, 0);
  int anchor = lua_gettop(L);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    xs[i - 1] = gsL_testtensor(L, -1);
    if (!xs[i - 1]) return luaL_error(L, "%s: expected a list of tensors, but element %d is a %s", fn, (int)i, luaL_typename(L, -1));
    lua_rawseti(L, anchor, i);
  }
  int nd = n > 0 ? xs[0]->ndim + (stack ? 1 : 0) : 1;
  int d = gsL_optdim(L, 2, nd, 0);
  gs_tensor *r;
  gsL_check(L, gs_ag_join(xs, (int)n, d, stack, &r));
  gsL_pushtensor(L, r);
  return 1;
}

/* ---- misc ---- */

static int l_manual_seed(lua_State *L) {
  lua_Integer s = luaL_checkinteger(L, 1);
  gs_manual_seed((uint64_t)s);
  return 0;
}
static int l_initial_seed(lua_State *L) { lua_pushinteger(L, (lua_Integer)gs_initial_seed()); return 1; }

/* The host's clock: real time, plus what the modelled GPUs add (issue 29,
 * core/gs_model_clock.h); torch._real_clock(): this machine's own time. */
static int l_clock(lua_State *L) {
  lua_pushnumber(L, gs_mclock_host_now());
  return 1;
}
static int l_real_clock(lua_State *L) {
  lua_pushnumber(L, gs_mclock_real_now());
  return 1;
}

/* torch._model_events(): launches and waits on modelled devices so far
 * (%timeit shows one time for work that made none). */
static int l_model_events(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)gs_mclock_events());
  return 1;
}

static int l_is_tensor(lua_State *L) { lua_pushboolean(L, gsL_testtensor(L, 1) != NULL); return 1; }

void gsL_open_factory(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"tensor", l_tensor}, {"ones", l_ones}, {"zeros", l_zeros}, {"empty", l_empty}, {"Tensor", l_empty},
    {"full", l_full}, {"rand", l_rand}, {"randn", l_randn}, {"randint", l_randint},
    {"randperm", l_randperm}, {"arange", l_arange}, {"linspace", l_linspace}, {"eye", l_eye},
    {"manual_seed", l_manual_seed}, {"initial_seed", l_initial_seed}, {"clock", l_clock}, {"_real_clock", l_real_clock},
    {"_model_events", l_model_events},
    {"is_tensor", l_is_tensor}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  static const char *likes[] = {"zeros_like", "ones_like", "empty_like", "rand_like", "randn_like", "full_like"};
  for (int i = 0; i < 6; i++) {
    lua_pushinteger(L, i);
    lua_pushcclosure(L, like, 1);
    lua_setfield(L, -2, likes[i]);
  }
  lua_pushboolean(L, 0);
  lua_pushcclosure(L, join, 1);
  lua_setfield(L, -2, "cat");
  lua_pushboolean(L, 1);
  lua_pushcclosure(L, join, 1);
  lua_setfield(L, -2, "stack");
}
