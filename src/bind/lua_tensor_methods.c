/* lua_tensor_methods.c: tensor methods about shape, views, copies,
 * devices, dtypes and reading values back (item, tolist). Math methods
 * are in lua_tensor_math.c. Dims are 1-based here, 0-based below. */
#include <limits.h>
#include <string.h>
#include "autograd/gs_autograd.h"
#include "bind/lua_gs.h"


static int m_size(lua_State *L) {
  gs_tensor *t = gsL_checktensor(L, 1);
  if (lua_isnoneornil(L, 2)) { gsL_pushsize(L, t->ndim, t->shape); return 1; }
  lua_pushinteger(L, t->shape[gsL_checkdim(L, 2, t->ndim)]);
  return 1;
}
static int m_stride(lua_State *L) {
  gs_tensor *t = gsL_checktensor(L, 1);
  if (!lua_isnoneornil(L, 2)) { lua_pushinteger(L, t->stride[gsL_checkdim(L, 2, t->ndim)]); return 1; }
  lua_createtable(L, t->ndim, 0);
  for (int i = 0; i < t->ndim; i++) { lua_pushinteger(L, t->stride[i]); lua_rawseti(L, -2, i + 1); }
  return 1;
}
static int m_dim(lua_State *L) { lua_pushinteger(L, gsL_checktensor(L, 1)->ndim); return 1; }
static int m_numel(lua_State *L) { lua_pushinteger(L, gs_numel(gsL_checktensor(L, 1))); return 1; }
static int m_element_size(lua_State *L) { lua_pushinteger(L, (lua_Integer)gs_dtype_size(gsL_checktensor(L, 1)->dtype)); return 1; }
static int m_is_contiguous(lua_State *L) { lua_pushboolean(L, gs_is_contiguous(gsL_checktensor(L, 1))); return 1; }
static int m_is_floating_point(lua_State *L) { lua_pushboolean(L, gs_dtype_is_float(gsL_checktensor(L, 1)->dtype)); return 1; }
static int m_storage_offset(lua_State *L) { lua_pushinteger(L, gsL_checktensor(L, 1)->offset); return 1; }

/* Pushes r, or the argument itself when the engine handed x back (so a
 * no-op move returns the very same object: rawequal(z:cuda(1), z)). */
static int push_result(lua_State *L, gs_tensor *x, gs_tensor *r) {
  if (r == x) { gs_tensor_release(r); lua_pushvalue(L, 1); return 1; }
  gsL_pushtensor(L, r);
  return 1;
}

static int m_clone(lua_State *L) {
  gs_tensor *r;
  gsL_check(L, gs_ag_clone(gsL_checktensor(L, 1), &r));
  gsL_pushtensor(L, r);
  return 1;
}
static int m_contiguous(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  if (gs_is_contiguous(x)) { lua_settop(L, 1); return 1; }
  gsL_check(L, gs_ag_clone(x, &r));
  gsL_pushtensor(L, r);
  return 1;
}

static int m_view(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  int64_t shape[GS_MAX_DIMS];
  gs_tensor *like = gsL_testtensor(L, 2);
  int n;
  if (like) { n = like->ndim; memcpy(shape, like->shape, sizeof(int64_t) * (size_t)n); }
  else {
    /* sizes may include -1, so read them without the >= 0 check */
    n = 0;
    int last = lua_gettop(L);
    if (last == 2 && lua_istable(L, 2)) {
      lua_Integer len = luaL_len(L, 2);
      gsL_check(L, gs_check_ndim(len < 0 ? 0 : len));
      for (lua_Integer i = 1; i <= len; i++) { lua_geti(L, 2, i); shape[n++] = gsL_topinteger(L, "view/reshape: a size"); lua_pop(L, 1); }
    } else {
      gsL_check(L, gs_check_ndim(last - 1));
      for (int i = 2; i <= last; i++) {
        if (!lua_isinteger(L, i)) return luaL_error(L, "view/reshape: sizes must be integers, got %s at position %d", luaL_typename(L, i), i - 1);
        shape[n++] = lua_tointeger(L, i);
      }
    }
  }
  gsL_check(L, gs_ag_view(x, n, shape, lua_toboolean(L, lua_upvalueindex(1)), &r));
  gsL_pushtensor(L, r);
  return 1;
}

static int m_t(lua_State *L) {
  gs_tensor *r;
  gsL_check(L, gs_ag_t(gsL_checktensor(L, 1), &r));
  gsL_pushtensor(L, r);
  return 1;
}
static int m_transpose(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  int a = gsL_checkdim(L, 2, x->ndim), b = gsL_checkdim(L, 3, x->ndim);
  gsL_check(L, gs_ag_transpose(x, x->ndim ? a : 0, x->ndim ? b : 0, &r));
  gsL_pushtensor(L, r);
  return 1;
}
static int m_permute(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  int dims[GS_MAX_DIMS], n = 0;
  if (lua_istable(L, 2)) {
    lua_Integer len = luaL_len(L, 2);
    for (lua_Integer i = 1; i <= len && n < GS_MAX_DIMS; i++) { lua_geti(L, 2, i); dims[n++] = gsL_checkdim(L, -1, x->ndim); lua_pop(L, 1); }
  } else {
    for (int i = 2; i <= lua_gettop(L) && n < GS_MAX_DIMS; i++) dims[n++] = gsL_checkdim(L, i, x->ndim);
  }
  gsL_check(L, gs_ag_permute(x, n, dims, &r));
  gsL_pushtensor(L, r);
  return 1;
}
static int m_unsqueeze(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  gsL_check(L, gs_ag_unsqueeze(x, gsL_checkdim(L, 2, x->ndim + 1), &r));
  gsL_pushtensor(L, r);
  return 1;
}
static int m_squeeze(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  int d = lua_isnoneornil(L, 2) ? -1 : gsL_checkdim(L, 2, x->ndim);
  gsL_check(L, gs_ag_squeeze(x, x->ndim == 0 ? -1 : d, &r));
  gsL_pushtensor(L, r);
  return 1;
}
static int m_expand(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r, *like = gsL_testtensor(L, 2);
  int64_t shape[GS_MAX_DIMS];
  int n = 0;
  if (like) { n = like->ndim; memcpy(shape, like->shape, sizeof(int64_t) * (size_t)n); }
  else if (lua_istable(L, 2)) {
    lua_Integer len = luaL_len(L, 2);
    gsL_check(L, gs_check_ndim(len < 0 ? 0 : len));
    for (lua_Integer i = 1; i <= len; i++) { lua_geti(L, 2, i); shape[n++] = gsL_topinteger(L, "expand: a size"); lua_pop(L, 1); }
  } else {
    for (int i = 2; i <= lua_gettop(L); i++) {
      if (n >= GS_MAX_DIMS) gsL_check(L, gs_check_ndim(lua_gettop(L) - 1));
      shape[n++] = luaL_checkinteger(L, i);
    }
  }
  gsL_check(L, gs_ag_expand(x, n, shape, &r));
  gsL_pushtensor(L, r);
  return 1;
}
static int m_flatten(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  int s = gsL_optdim(L, 2, x->ndim, 0), e = gsL_optdim(L, 3, x->ndim, x->ndim ? x->ndim - 1 : 0);
  gsL_check(L, gs_ag_flatten(x, s, e, &r));
  gsL_pushtensor(L, r);
  return 1;
}
static int m_narrow(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  int d = gsL_checkdim(L, 2, x->ndim);
  lua_Integer start = luaL_checkinteger(L, 3), len = luaL_checkinteger(L, 4);
  gsL_check(L, gs_ag_narrow(x, d, gsL_pos0(start), len, &r));
  gsL_pushtensor(L, r);
  return 1;
}
static int m_select(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  int d = gsL_checkdim(L, 2, x->ndim);
  gsL_check(L, gs_ag_select(x, d, gsL_pos0(luaL_checkinteger(L, 3)), &r));
  gsL_pushtensor(L, r);
  return 1;
}

/* chunk(n[, d]) and split(size | {sizes}[, d]) return Lua lists of views;
 * the engine checks the numbers (gs_op_index.c). */
static int push_pieces(lua_State *L, gs_tensor *x, int d, int64_t piece, int64_t count) {
  lua_createtable(L, count < 1 << 20 ? (int)count : 1 << 20, 0);
  int64_t size = x->shape[d];
  for (int64_t k = 0, at = 0; k < count; k++, at += piece) {
    gs_tensor *v;
    gsL_check(L, gs_ag_narrow(x, d, at, size - at < piece ? size - at : piece, &v));
    gsL_pushtensor(L, v);
    lua_rawseti(L, -2, k + 1);
  }
  return 1;
}
static int m_chunk(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1);
  lua_Integer n = luaL_checkinteger(L, 2);
  int d = gsL_optdim(L, 3, x->ndim, 0);
  int64_t piece, count;
  gsL_check(L, gs_chunk_plan(x, d, n, &piece, &count));
  return push_pieces(L, x, d, piece, count);
}
static int m_split(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1);
  if (!lua_istable(L, 2)) {
    lua_Integer size = luaL_checkinteger(L, 2);
    int d = gsL_optdim(L, 3, x->ndim, 0);
    int64_t piece, count;
    gsL_check(L, gs_split_plan(x, d, size, &piece, &count));
    return push_pieces(L, x, d, piece, count);
  }
  /* explicit sizes: all read (metamethods may run) before the engine
   * checks the dim and the sizes against x as it then is */
  int d = gsL_optdim(L, 3, x->ndim, 0);
  lua_Integer n = luaL_len(L, 2);
  if (n < 0 || (lua_Unsigned)n > (lua_Unsigned)INT_MAX) return luaL_error(L, "split: expected a list of sizes, got %I entries", (LUAI_UACINT)n);
  int64_t *lens = lua_newuserdatauv(L, sizeof(int64_t) * (size_t)(n ? n : 1), 0);
  for (lua_Integer i = 1; i <= n; i++) { lua_geti(L, 2, i); lens[i - 1] = gsL_topinteger(L, "split: a size"); lua_pop(L, 1); }
  gsL_check(L, gs_split_sizes_check(x, d, n, lens));
  lua_createtable(L, (int)n, 0);
  int64_t at = 0;
  for (lua_Integer i = 0; i < n; i++) {
    gs_tensor *v;
    gsL_check(L, gs_ag_narrow(x, d, at, lens[i], &v));
    gsL_pushtensor(L, v);
    lua_rawseti(L, -2, i + 1);
    at += lens[i];
  }
  return 1;
}

/* ---- devices and dtypes ---- */

/* x:to(dev), x:to(dtype), x:to(dev, dtype), x:to({device=, dtype=}), x:to(other) */
static int m_to(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  gs_device dev = gs_tensor_device(x);
  gs_dtype dt = x->dtype;
  bool nb = false;
  gs_tensor *other = gsL_testtensor(L, 2);
  if (other) { dev = gs_tensor_device(other); dt = other->dtype; }
  else {
    /* positional device and/or dtype, then an optional options table;
     * non_blocking: a copy from pinned memory to a device may return
     * before it ran (gs_copy_ex) */
    static const char *const keys[] = {"device", "dtype", "non_blocking"};
    int last = lua_gettop(L);
    if (last >= 2 && lua_type(L, last) == LUA_TTABLE) {
      gsL_checkoptions(L, last, "to", keys, GSL_NKEYS(keys));
      if (gsL_optfield(L, last, "device")) { dev = gsL_checkdevice(L, -1); lua_pop(L, 1); }
      if (gsL_optfield(L, last, "dtype")) { dt = gsL_checkdtype(L, lua_gettop(L)); lua_pop(L, 1); }
      if (gsL_optfield(L, last, "non_blocking")) { nb = lua_toboolean(L, -1); lua_pop(L, 1); }
      last--;
    }
    for (int i = 2; i <= last; i++) {
      if (lua_isnil(L, i)) continue;
      if (!gsL_testdtype(L, i, &dt)) dev = gsL_checkdevice(L, i);
    }
  }
  gsL_check(L, gs_ag_to_ex(x, dev, dt, nb, &r));
  return push_result(L, x, r);
}
static int m_cuda(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  gs_device dev = {GS_CUDA, -1};
  bool nb = false;
  static const char *const keys[] = {"device", "non_blocking"};
  int last = lua_gettop(L);
  if (last >= 2 && lua_type(L, last) == LUA_TTABLE) { /* x:cuda([i, ]{non_blocking = true}) */
    gsL_checkoptions(L, last, "cuda", keys, GSL_NKEYS(keys));
    if (gsL_optfield(L, last, "device")) { dev = gsL_checkdevice(L, -1); lua_pop(L, 1); }
    if (gsL_optfield(L, last, "non_blocking")) { nb = lua_toboolean(L, -1); lua_pop(L, 1); }
    lua_settop(L, --last);
  }
  if (!lua_isnoneornil(L, 2)) dev = gsL_checkdevice(L, 2);
  if (dev.type != GS_CUDA) return luaL_error(L, "cuda(): expected a CUDA device, got %s", luaL_tolstring(L, 2, NULL));
  gsL_check(L, gs_ag_to_ex(x, dev, x->dtype, nb, &r));
  return push_result(L, x, r);
}
static int m_cpu(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  gsL_check(L, gs_ag_to(x, gs_cpu(), x->dtype, &r));
  return push_result(L, x, r);
}
static int m_pin_memory(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  gsL_check(L, gs_ag_pin_memory(x, &r));
  return push_result(L, x, r);
}
static int m_is_pinned(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1);
  lua_pushboolean(L, x->buf->pinned);
  return 1;
}
/* x:double(), x:float(), ...: the dtype is the upvalue */
static int m_as_dtype(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *r;
  gsL_check(L, gs_ag_to(x, gs_tensor_device(x), (gs_dtype)lua_tointeger(L, lua_upvalueindex(1)), &r));
  return push_result(L, x, r);
}
/* PyTorch's tensor-type names, by dtype ("torch.FloatTensor", and
 * "torch.cuda.FloatTensor" on a GPU) */
static const char *const type_names[GS_NDTYPES] = {"FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor",
                                                   "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
                                                   "ByteTensor", "BoolTensor"};

/* "torch.DoubleTensor" -> float64 on the cpu; "torch.cuda.DoubleTensor"
 * -> float64 on a CUDA device (the tensor's own when it is on one, else
 * the current device, as PyTorch). False when s is not of that form. */
static bool parse_type_name(const char *s, gs_device here, gs_dtype *dt, gs_device *dev) {
  if (strncmp(s, "torch.", 6) != 0) return false;
  s += 6;
  bool cuda = strncmp(s, "cuda.", 5) == 0;
  if (cuda) s += 5;
  for (int i = 0; i < GS_NDTYPES; i++) {
    if (strcmp(s, type_names[i]) != 0) continue;
    *dt = (gs_dtype)i;
    if (!cuda) *dev = gs_cpu();
    else if (here.type == GS_CUDA) *dev = here;
    else { dev->type = GS_CUDA; dev->index = -1; }
    return true;
  }
  return false;
}

/* x:type() is the tensor-type name; x:type(dtype) or x:type("torch.DoubleTensor")
 * converts (the torch.cuda.* names move to a GPU, the others to the cpu). */
static int m_type(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1);
  gs_device dev = gs_tensor_device(x);
  if (lua_isnoneornil(L, 2)) {
    lua_pushfstring(L, "torch.%s%s", dev.type == GS_CUDA ? "cuda." : "", type_names[x->dtype]);
    return 1;
  }
  gs_dtype dt;
  if (gsL_testdtype(L, 2, &dt)) {
    /* a dtype, or its name ("float64", "torch.float64") */
  } else if (lua_type(L, 2) == LUA_TSTRING && strncmp(lua_tostring(L, 2), "torch.", 6) == 0) {
    if (!parse_type_name(lua_tostring(L, 2), dev, &dt, &dev))
      return luaL_error(L, "type(): unknown tensor type '%s': expected a dtype (torch.float64) or a tensor type "
                        "such as torch.FloatTensor, torch.DoubleTensor, torch.LongTensor, torch.IntTensor, "
                        "torch.BoolTensor, torch.HalfTensor, torch.ByteTensor, or torch.cuda.FloatTensor "
                        "and the other torch.cuda. forms", lua_tostring(L, 2));
  } else {
    dt = gsL_checkdtype(L, 2);
  }
  gs_tensor *r;
  gsL_check(L, gs_ag_to(x, dev, dt, &r));
  return push_result(L, x, r);
}

/* ---- values back to Lua ---- */

static void push_element(lua_State *L, gs_dtype dt, const char *p) {
  if (dt == GS_BOOL) lua_pushboolean(L, *p != 0);
  else if (gs_dtype_is_float(dt)) lua_pushnumber(L, gs_load_f64(dt, p));
  else lua_pushinteger(L, gs_load_i64(dt, p));
}

static int m_item(lua_State *L) {
  gs_scalar v;
  gsL_check(L, gs_item(gsL_checktensor(L, 1), &v));
  if (v.is_bool) lua_pushboolean(L, v.i != 0);
  else if (v.is_float) lua_pushnumber(L, v.f);
  else lua_pushinteger(L, v.i);
  return 1;
}

static void push_list(lua_State *L, const gs_tensor *h, int d, const char *p) {
  size_t es = gs_dtype_size(h->dtype);
  if (d == h->ndim) { push_element(L, h->dtype, p); return; }
  luaL_checkstack(L, 4, "tensor too deep");
  lua_createtable(L, (int)h->shape[d], 0);
  for (int64_t i = 0; i < h->shape[d]; i++) {
    push_list(L, h, d + 1, p + i * h->stride[d] * (int64_t)es);
    lua_rawseti(L, -2, i + 1);
  }
}

/* The nested lists tolist() builds: one per index of every leading dim. A
 * tensor with no elements can still ask for billions (shape {2^31, 0}),
 * which would take minutes and all memory: refuse beyond 2^27. */
#define TOLIST_MAX_TABLES ((int64_t)1 << 27)

static int m_tolist(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1), *h;
  int64_t tables = 1, level = 1;
  for (int d = 0; d + 1 < x->ndim && tables <= TOLIST_MAX_TABLES; d++) {
    level = x->shape[d] > TOLIST_MAX_TABLES / (level ? level : 1) ? TOLIST_MAX_TABLES + 1 : level * x->shape[d];
    tables += level;
  }
  if (tables > TOLIST_MAX_TABLES)
    return luaL_error(L, "tolist: a tensor of this shape needs more than %I nested Lua tables (at most %I)",
                      (LUAI_UACINT)TOLIST_MAX_TABLES, (LUAI_UACINT)TOLIST_MAX_TABLES);
  gsL_check(L, gs_to_host_contiguous(x, &h));
  gsL_pushtensor(L, h); /* anchored: a table too big to build raises, and h is collected */
  push_list(L, h, 0, gs_tensor_ptr(h));
  return 1;
}

static int m_data_ptr(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1);
  lua_pushinteger(L, (lua_Integer)(intptr_t)gs_tensor_ptr(x));
  return 1;
}

void gsL_register_methods(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"size", m_size}, {"stride", m_stride}, {"dim", m_dim}, {"numel", m_numel}, {"nelement", m_numel},
    {"element_size", m_element_size}, {"is_contiguous", m_is_contiguous},
    {"is_floating_point", m_is_floating_point}, {"storage_offset", m_storage_offset},
    {"clone", m_clone}, {"contiguous", m_contiguous}, {"t", m_t}, {"transpose", m_transpose},
    {"permute", m_permute}, {"unsqueeze", m_unsqueeze}, {"squeeze", m_squeeze}, {"expand", m_expand},
    {"flatten", m_flatten}, {"narrow", m_narrow}, {"select", m_select}, {"chunk", m_chunk},
    {"split", m_split}, {"to", m_to}, {"cuda", m_cuda}, {"cpu", m_cpu}, {"type", m_type},
    {"pin_memory", m_pin_memory}, {"is_pinned", m_is_pinned},
    {"item", m_item}, {"tolist", m_tolist}, {"data_ptr", m_data_ptr}, {NULL, NULL}};
  luaL_setfuncs(L, methods, 0);
  lua_pushboolean(L, 0);
  lua_pushcclosure(L, m_view, 1);
  lua_setfield(L, -2, "view");
  lua_pushboolean(L, 1);
  lua_pushcclosure(L, m_view, 1);
  lua_setfield(L, -2, "reshape");
  lua_getfield(L, -1, "view");
  lua_setfield(L, -2, "view_as");
  lua_getfield(L, -1, "expand");
  lua_setfield(L, -2, "expand_as");
  static const struct { const char *name; gs_dtype t; } casts[] = {
    {"double", GS_FLOAT64}, {"float", GS_FLOAT32}, {"half", GS_FLOAT16}, {"bfloat16", GS_BFLOAT16},
    {"long", GS_INT64}, {"int", GS_INT32}, {"short", GS_INT16}, {"char", GS_INT8}, {"byte", GS_UINT8},
    {"bool", GS_BOOL}};
  for (size_t i = 0; i < sizeof casts / sizeof casts[0]; i++) {
    lua_pushinteger(L, casts[i].t);
    lua_pushcclosure(L, m_as_dtype, 1);
    lua_setfield(L, -2, casts[i].name);
  }
}
