/* lua_gpu_model.c: the GPU models (core/gs_gpu_model.h) seen from Lua.
 *
 *   torch.cuda.gpu_models()          -> {"t4", "v100", ...}
 *   torch.cuda.gpu_model([i | name]) -> the figures of cuda:i's model (nil
 *                                       for "host") or of a named one
 *   torch.cuda._set_gpu_model(spec)  -> previous spec (internal: what
 *                                       GSHELL_GPU_MODEL says, at run time)
 *   torch.cuda._model_time(name, kind, args) -> seconds (internal: the
 *                                       time model's formulas, for specs
 *                                       and explanations)
 *   torch._set_allow_tf32(b), torch._allow_tf32(): the flag behind
 *   torch.backends.cuda.matmul.allow_tf32 (lua/torch/backends.lua). */
#include <string.h>
#include "bind/lua_gs.h"
#include "core/gs_backend.h"
#include "core/gs_device.h"
#include "core/gs_gpu_model.h"

static const char *const unit_names[GS_UNIT_COUNT] = {"fp32", "fp64", "fp64_tc", "tf32_tc", "fp16_tc", "bf16_tc"};

/* The name with its article, as a sentence says it: "an" before a vowel
 * sound. A word starting with a vowel letter has one, and so has an
 * initialism whose first letter is named with one ("an NVIDIA A100": en-vidia,
 * "an H100": aitch), which a capital followed by a capital or a digit marks. */
static void push_a_name(lua_State *L, const char *name) {
  char c = name[0], d = c ? name[1] : 0;
  bool an = c && strchr("AEIOaeio", c);
  if (c && strchr("FHLMNRSX", c) && ((d >= 'A' && d <= 'Z') || (d >= '0' && d <= '9'))) an = true;
  lua_pushfstring(L, "%s %s", an ? "an" : "a", name);
}

static void push_model(lua_State *L, const gs_gpu_model *m) {
  lua_newtable(L);
#define S(k, v) (lua_pushstring(L, v), lua_setfield(L, -2, k))
#define I(k, v) (lua_pushinteger(L, v), lua_setfield(L, -2, k))
#define N(k, v) (lua_pushnumber(L, v), lua_setfield(L, -2, k))
  S("key", m->key);
  S("name", m->name);
  push_a_name(L, m->name);
  lua_setfield(L, -2, "a_name");
  S("arch", m->arch);
  I("major", m->major);
  I("minor", m->minor);
  I("sms", m->sms);
  I("threads_per_sm", m->threads_per_sm);
  N("boost_mhz", m->boost_mhz);
  lua_newtable(L);
  for (int u = 0; u < GS_UNIT_COUNT; u++) N(unit_names[u], m->peak[u]);
  lua_setfield(L, -2, "peak");
  I("memory", (lua_Integer)m->mem_bytes);
  N("bandwidth", m->mem_bw);
  I("l2", (lua_Integer)m->l2_bytes);
  I("pcie_gen", m->pcie_gen);
  I("pcie_lanes", m->pcie_lanes);
  N("pcie_pinned", gs_gpu_pcie_rate(m, true));
  N("pcie_pageable", gs_gpu_pcie_rate(m, false));
  N("nvlink", m->nvlink_bw);
  I("copy_engines", m->copy_engines);
  N("launch", m->launch_s);
  N("host_launch", m->host_launch_s);
  N("host_sync", m->host_sync_s);
  I("max_threads_per_block", m->max_threads_per_block);
  I("max_blocks_per_sm", m->max_blocks_per_sm);
  I("smem_per_sm", (lua_Integer)m->smem_per_sm);
  I("smem_per_block", (lua_Integer)m->smem_per_block);
  I("regs_per_sm", m->regs_per_sm);
#undef S
#undef I
#undef N
}

static int c_gpu_models(lua_State *L) {
  lua_newtable(L);
  for (int i = 0; gs_gpu_model_at(i); i++) {
    lua_pushstring(L, gs_gpu_model_at(i)->key);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static const gs_gpu_model *check_named(lua_State *L, int idx) {
  const char *key = luaL_checkstring(L, idx);
  const gs_gpu_model *m = gs_gpu_model_find(key);
  if (!m) luaL_error(L, "unknown GPU model '%s'; the known ones are %s", key, gs_gpu_model_names());
  return m;
}

static int c_gpu_model(lua_State *L) {
  /* a string that is not a device ("cuda", "cuda:1") names a model */
  if (lua_type(L, 1) == LUA_TSTRING && strncmp(lua_tostring(L, 1), "cuda", 4) != 0) {
    push_model(L, check_named(L, 1));
    return 1;
  }
  int dev = gs_cuda_current_device();
  if (!lua_isnoneornil(L, 1)) {
    gs_device d = gsL_checkdevice(L, 1);
    if (d.type != GS_CUDA) return luaL_error(L, "torch.cuda.gpu_model: expected a CUDA device or a model name");
    if (d.index >= 0) dev = d.index;
  }
  /* a real GPU, none, or a simulated one on "host": nothing is modelled */
  const gs_backend *be = dev < gs_cuda_device_count() ? gs_device_backend((gs_device){GS_CUDA, dev}) : NULL;
  const gs_gpu_model *m = be && be->gpu_model ? be->gpu_model(dev) : NULL;
  if (m) push_model(L, m);
  else lua_pushnil(L);
  return 1;
}

static int c_set_gpu_model(lua_State *L) {
  const char *spec = luaL_checkstring(L, 1);
  lua_pushstring(L, gs_gpu_model_spec());
  gsL_check(L, gs_gpu_model_check("torch.cuda._set_gpu_model", spec));
  gsL_check(L, gs_gpu_model_set(spec));
  return 1;
}

static gs_dtype opt_dtype(lua_State *L, int t) {
  gs_dtype dt = GS_FLOAT32;
  lua_getfield(L, t, "dtype");
  if (!lua_isnil(L, -1)) dt = gsL_checkdtype(L, -1);
  lua_pop(L, 1);
  return dt;
}

static double num(lua_State *L, int t, const char *k, double def) {
  lua_getfield(L, t, k);
  double v = lua_isnil(L, -1) ? def : luaL_checknumber(L, -1);
  lua_pop(L, 1);
  return v;
}

/* _model_time(name, kind, args): kind "kernel" {flops, bytes, elems,
 * dtype}, "gemm" {m, n, k, batch, dtype}, "gemm_eff" (the same, the
 * efficiency), "conv" {m, n, k, batch, bytes, dtype} (one implicit-GEMM
 * pass of a convolution), "conv_eff" (its efficiency), "fill" {blocks,
 * threads}, "copy" {bytes, to = "device" | "host" | a peer model's name,
 * pinned}, "memory" {bytes} (one kernel's memory time, for the kernel
 * lab). */
static int c_model_time(lua_State *L) {
  const gs_gpu_model *m = check_named(L, 1);
  const char *kind = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  double r;
  if (strcmp(kind, "kernel") == 0) {
    gs_gpu_unit u = gs_gpu_unit_for(m, opt_dtype(L, 3), false);
    r = gs_gpu_kernel_time(m, u, num(L, 3, "flops", 0), num(L, 3, "bytes", 0), num(L, 3, "elems", 1));
  } else if (strcmp(kind, "gemm") == 0 || strcmp(kind, "gemm_eff") == 0) {
    gs_dtype dt = opt_dtype(L, 3);
    gs_gpu_unit u = gs_gpu_unit_for(m, dt, true);
    double M = num(L, 3, "m", 1), N = num(L, 3, "n", 1), K = num(L, 3, "k", 1), B = num(L, 3, "batch", 1);
    r = kind[4] ? gs_gpu_gemm_eff(m, u, M, N, K, B)
                : gs_gpu_gemm_time(m, u, M, N, K, B, (double)gs_dtype_size(dt));
  } else if (strcmp(kind, "memory") == 0) {
    r = gs_gpu_mem_time(m, num(L, 3, "bytes", 0));
  } else if (strcmp(kind, "conv") == 0 || strcmp(kind, "conv_eff") == 0) {
    gs_gpu_unit u = gs_gpu_unit_for(m, opt_dtype(L, 3), true);
    double M = num(L, 3, "m", 1), N = num(L, 3, "n", 1), K = num(L, 3, "k", 1), B = num(L, 3, "batch", 1);
    r = kind[4] ? gs_gpu_conv_eff(m, u, M, N, K, B) : gs_gpu_conv_time(m, u, M, N, K, B, num(L, 3, "bytes", 0));
  } else if (strcmp(kind, "fill") == 0) {
    r = gs_gpu_fill(m, num(L, 3, "blocks", 1), (int)num(L, 3, "threads", GS_MODEL_BLOCK));
  } else if (strcmp(kind, "copy") == 0) {
    lua_getfield(L, 3, "pinned");
    bool pinned = lua_toboolean(L, -1);
    lua_getfield(L, 3, "to");
    const char *to = luaL_optstring(L, -1, "device");
    const gs_gpu_model *peer = NULL;
    gs_copy_kind ck = GS_COPY_H2D;
    if (strcmp(to, "host") == 0) ck = GS_COPY_D2H;
    else if (strcmp(to, "device") != 0) {
      peer = check_named(L, -1);
      ck = GS_COPY_D2D_PEER;
    }
    r = gs_gpu_copy_time(m, peer, ck, pinned, num(L, 3, "bytes", 0));
  } else {
    return luaL_error(L, "torch.cuda._model_time: unknown kind '%s' (kernel, gemm, gemm_eff, conv, conv_eff, fill, memory or copy)", kind);
  }
  lua_pushnumber(L, r);
  return 1;
}

static int c_set_allow_tf32(lua_State *L) {
  luaL_checktype(L, 1, LUA_TBOOLEAN);
  gs_gpu_set_allow_tf32(lua_toboolean(L, 1));
  return 0;
}
static int c_allow_tf32(lua_State *L) {
  lua_pushboolean(L, gs_gpu_allow_tf32());
  return 1;
}

void gsL_open_gpu_model(lua_State *L) {
  static const luaL_Reg cuda[] = {{"gpu_models", c_gpu_models}, {"gpu_model", c_gpu_model},
                                  {"_set_gpu_model", c_set_gpu_model}, {"_model_time", c_model_time},
                                  {NULL, NULL}};
  lua_getfield(L, -1, "cuda");
  luaL_setfuncs(L, cuda, 0);
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {{"_set_allow_tf32", c_set_allow_tf32}, {"_allow_tf32", c_allow_tf32}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
