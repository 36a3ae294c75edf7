/* lua_torch.c: luaopen_torch, the module's entry point for gshell and for
 * stock lua5.4 (require "torch"). Builds the C part of the table, makes
 * the embedded Lua library loadable with require, then runs
 * lua/torch/init.lua to finish the module. */
#include <stdlib.h>
#include <string.h>
#include "bind/lua_embedded.h"
#include "backend/registry.h"
#include "bind/lua_gs.h"

static lua_State *main_state;

/* Before reporting out of memory, collect garbage tensors: the collector
 * cannot see how much memory they hold. */
static void collect_on_oom(void) {
  if (main_state) lua_gc(main_state, LUA_GCCOLLECT);
}

/* package.searchers entry over the module array in upvalue 1. */
static int embedded_searcher(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const gs_embedded_module *mods = lua_touserdata(L, lua_upvalueindex(1));
  /* "torch" itself is the C module; its Lua half is run by luaopen_torch */
  if (strcmp(name, "torch") == 0) { lua_pushliteral(L, "torch is the C module"); return 1; }
  for (const gs_embedded_module *m = mods; m->name; m++) {
    if (strcmp(m->name, name) != 0) continue;
    if (luaL_loadbuffer(L, m->source, m->len, m->chunkname) != LUA_OK)
      return luaL_error(L, "error loading embedded module '%s':\n\t%s", name, lua_tostring(L, -1));
    lua_pushstring(L, m->chunkname + 1);
    return 2;
  }
  lua_pushfstring(L, "no embedded module '%s'", name);
  return 1;
}

void gsL_push_embedded_searcher(lua_State *L, const gs_embedded_module *mods) {
  lua_pushlightuserdata(L, (void *)mods);
  lua_pushcclosure(L, embedded_searcher, 1);
}

static void install_searcher(lua_State *L) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "searchers");
  lua_Integer n = luaL_len(L, -1);
  for (lua_Integer i = n; i >= 2; i--) { lua_geti(L, -1, i); lua_seti(L, -2, i + 1); }
  gsL_push_embedded_searcher(L, gs_torch_modules);
  lua_seti(L, -2, 2); /* right after preload */
  lua_pop(L, 2);
}

/* Test-only bindings (torch._workers_selftest, torch._with_workers), in
 * spec/support/c/lua_workers.c: linked into the specs' own torch.so
 * (build/spec/torch.so), absent from the product, where this is NULL. */
void gsL_open_workers(lua_State *L) __attribute__((weak));

int luaopen_torch(lua_State *L) {
  static bool devices_ready = false;
  if (!devices_ready) {
    gs_backends_register();
    int sims;
    size_t mem;
    if (gs_sim_env(&sims, &mem) != GS_OK) return luaL_error(L, "torch: %s", gs_last_error());
    gs_devices_init(sims, mem);
    devices_ready = true;
  }
  lua_State *main_L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  main_L = lua_tothread(L, -1);
  lua_pop(L, 1);
  main_state = main_L;
  gs_oom_hook = collect_on_oom;
  gsL_install_allocator(L);

  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, "gshell.torch");
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaded");
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "torch"); /* so init.lua's requires can reach it */
  lua_pop(L, 2);
  gsL_open_core(L);
  gsL_open_tensor(L);
  /* the tensor methods, one table filled by each file that defines some */
  lua_getfield(L, -1, "_methods");
  gsL_register_methods(L);
  gsL_register_math(L);
  gsL_register_autograd_methods(L);
  lua_pop(L, 1);
  gsL_open_factory(L);
  gsL_open_device(L);
  gsL_open_options(L);
  gsL_open_serialize(L);
  gsL_open_autograd(L);
  gsL_open_dist(L);
  gsL_open_interrupt(L);
  if (gsL_open_workers) gsL_open_workers(L);
  gsL_open_stream(L);
  gsL_open_prof(L);
  gsL_open_conv(L); /* convolution */
  gsL_open_cpu(L); /* the CPU kernels' instruction set (issue 32) */
  gsL_open_pool(L); /* issue 20: pooling, batch norm, interpolate, pad */
  gsL_open_image(L); /* data sets (issue 21) */
  gsL_open_picture(L); /* d2l pictures */
  gsL_open_gpu_model(L); /* GPU models (issue 29) */
  gsL_open_kernel_lab(L); /* Lua kernels on simulated GPUs (issue 30) */
  lua_pushliteral(L, GS_VERSION);
  lua_setfield(L, -2, "__version__");
  install_searcher(L);
  /* lua/torch/init.lua receives the table and completes it */
  for (const gs_embedded_module *m = gs_torch_modules; m->name; m++) {
    if (strcmp(m->name, "torch") != 0) continue;
    if (luaL_loadbuffer(L, m->source, m->len, m->chunkname) != LUA_OK) return lua_error(L);
    lua_pushvalue(L, -2);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) return lua_error(L);
  }
  return 1;
}

/* require("torchvision") in stock lua5.4 before require("torch"):
 * build/torchvision.so is a link to torch.so (the same library, loaded
 * once); it opens torch, then returns the embedded torchvision module. */
int luaopen_torchvision(lua_State *L);
int luaopen_torchvision(lua_State *L) {
  luaL_requiref(L, "torch", luaopen_torch, 0);
  lua_pop(L, 1);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "torch.vision");
  lua_call(L, 1, 1);
  return 1;
}
