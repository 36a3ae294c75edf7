/* lua_embedded.h: Lua sources compiled into the binaries (tools/embed_lua.sh
 * generates the arrays at build time). Each array ends with a NULL name. */
#ifndef LUA_EMBEDDED_H
#define LUA_EMBEDDED_H
#include <stddef.h>

typedef struct { const char *name, *chunkname, *source; size_t len; } gs_embedded_module;

/* lua/torch/: the library, in torch.so and in gshell (lua_torch.c loads it). */
extern const gs_embedded_module gs_torch_modules[];
/* lua/gshell/: the shell, only in the gshell binary (repl_core.c loads it). */
extern const gs_embedded_module gs_shell_modules[];

/* Pushes a package.searchers function that finds the modules of `mods`
 * (lua_torch.c). */
struct lua_State;
void gsL_push_embedded_searcher(struct lua_State *L, const gs_embedded_module *mods);

#endif
