/* lua_cpu.c: the CPU kernels' instruction set (issue 32), for
 * lua/torch/backends_cpu.lua:
 *   torch._cpu_capability()          "DEFAULT", "AVX2" or "AVX512" (in use)
 *   torch._cpu_capability_max()      the best this CPU runs
 *   torch._set_cpu_capability(name)  switch; a level the CPU lacks or an
 *                                    unknown name is an error, nothing changes */
#include "backend/cpu/cpu_isa.h"
#include "bind/lua_gs.h"

static int c_cpu_capability(lua_State *L) {
  lua_pushstring(L, gs_cpu_isa_name(gs_cpu_isa()));
  return 1;
}

static int c_cpu_capability_max(lua_State *L) {
  lua_pushstring(L, gs_cpu_isa_name(gs_cpu_isa_supported()));
  return 1;
}

static int c_set_cpu_capability(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  int level = gs_cpu_isa_parse(name);
  if (level < 0)
    return luaL_error(L, "torch.backends.cpu.set_cpu_capability: expected \"default\", \"avx2\" or \"avx512\", got \"%s\"", name);
  if (gs_cpu_isa_set(level) != 0)
    return luaL_error(L, "torch.backends.cpu.set_cpu_capability: this CPU has no %s (the best it runs is %s)",
                      gs_cpu_isa_name(level), gs_cpu_isa_name(gs_cpu_isa_supported()));
  return 0;
}

void gsL_open_cpu(lua_State *L) {
  static const luaL_Reg fns[] = {{"_cpu_capability", c_cpu_capability},
                                 {"_cpu_capability_max", c_cpu_capability_max},
                                 {"_set_cpu_capability", c_set_cpu_capability},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
