/* tsan_lua.c: a plain Lua 5.4 interpreter linked with ThreadSanitizer,
 * installed as build-tsan/bin/lua5.4 by `make TSAN=1`.
 *
 * Why: TSAN's runtime must be in a process from its start. Preloading it
 * into Debian's lua5.4 (as the ASan run does with libasan) works for
 * lua5.4, but every child inherits LD_PRELOAD and /bin/sh, bash and
 * python3 crash at start-up with the TSAN runtime preloaded. The TSAN spec
 * run instead puts this interpreter first on PATH: busted and the lua5.4
 * processes the specs start run under TSAN, other programs run as usual.
 *
 * It does what the specs ask of lua5.4: `lua5.4 [-e CODE]... [SCRIPT [ARGS]]`
 * with `arg` set as lua5.4 sets it, errors printed with a traceback and
 * exit status 1. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <string.h>

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Calls the loaded chunk (below its nargs arguments on the stack) when
 * status says it loaded; prints the error otherwise. */
static int run(lua_State *L, int status, int nargs) {
  if (status == LUA_OK) {
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, traceback);
    lua_insert(L, base);
    status = lua_pcall(L, nargs, 0, base);
    lua_remove(L, base);
  }
  if (status != LUA_OK) {
    fprintf(stderr, "lua5.4: %s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  return status == LUA_OK;
}

static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  luaL_openlibs(L);
  int script = 1;
  while (script < argc && strcmp(argv[script], "-e") == 0 && script + 1 < argc) script += 2;
  /* arg[0] is the script, the interpreter and its options negative */
  lua_createtable(L, argc - script, script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
  for (int i = 1; i < script; i += 2)
    if (!run(L, luaL_loadbuffer(L, argv[i + 1], strlen(argv[i + 1]), "=(command line)"), 0)) return 0;
  if (script < argc) {
    int status = luaL_loadfile(L, strcmp(argv[script], "-") == 0 ? NULL : argv[script]);
    if (status == LUA_OK)
      for (int i = script + 1; i < argc; i++) lua_pushstring(L, argv[i]);
    if (!run(L, status, argc - script - 1)) return 0;
  }
  lua_pushboolean(L, 1);
  return 1;
}

int main(int argc, char **argv) {
  lua_State *L = luaL_newstate();
  if (!L) {
    fprintf(stderr, "lua5.4: cannot create a Lua state (out of memory)\n");
    return 1;
  }
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  int ok = lua_pcall(L, 2, 1, 0) == LUA_OK && lua_toboolean(L, -1);
  lua_close(L);
  return ok ? 0 : 1;
}
