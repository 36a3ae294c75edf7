/* repl_core.c: what the shell needs from C besides readline: protected
 * calls that Ctrl-C can interrupt, error reports, and the small module
 * "gshell.core" (a monotonic clock, isatty, capture of everything
 * written to stdout, C stdio and child processes included). Also a package
 * searcher for the Lua modules embedded in the binary. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>

#include "gs_common.h"
#include "lua_embedded.h"
#include "repl.h"

const char *gsR_progname = "gshell";

/* ---- Ctrl-C while code runs ------------------------------------------
 * A signal handler may do almost nothing, but lua_sethook is documented as
 * safe to call from one: the handler arms a hook that raises the error at
 * the next Lua instruction, and sets gs_interrupted for long C loops. A
 * second Ctrl-C before the first one was delivered (code stuck in C that
 * does not poll) kills the process, the only way out left. */

static lua_State *running_L;           /* the state running code, for the handler */
static volatile sig_atomic_t pending;  /* a Ctrl-C not yet turned into an error */

/* Handlers that must not be interrupted themselves: the message handlers
 * run while an error (often the interruption) is being reported. */
static const char *const MSGH_KEY = "gshell.msgh";

static int is_msgh_running(lua_State *L) {
  lua_Debug ar;
  int found = 0;
  if (lua_getfield(L, LUA_REGISTRYINDEX, MSGH_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    return 0;
  }
  for (int level = 0; !found && lua_getstack(L, level, &ar); level++) {
    lua_getinfo(L, "f", &ar);
    found = lua_rawget(L, -2) != LUA_TNIL;  /* msgh table[fn] */
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return found;
}

static void interrupt_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  pending = 0;
  /* Already delivered by C code that polled gs_interrupted and consumed
   * it, or an error is being reported right now: do not raise a second one. */
  if (!gs_interrupted || is_msgh_running(L)) {
    gs_interrupted = 0;
    return;
  }
  gs_interrupted = 0;
  luaL_error(L, "interrupted!");
}

static void on_sigint(int sig) {
  if (pending) {
    static const char msg[] = "\ngshell: second Ctrl-C while busy outside Lua: quitting\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  pending = 1;
  gs_interrupted = 1;
  if (running_L)
    lua_sethook(running_L, interrupt_hook,
                LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
}

/* The message with the location of the user's line rather than a library
 * file's (gshell.hints.locate), or msg itself when that is not possible. */
static const char *user_located(lua_State *L, const char *msg) {
  if (lua_getglobal(L, "require") != LUA_TFUNCTION) { lua_pop(L, 1); return msg; }
  lua_pushliteral(L, "gshell.hints");
  if (lua_pcall(L, 1, 1, 0) != LUA_OK || lua_getfield(L, -1, "locate") != LUA_TFUNCTION) {
    lua_pop(L, 2);
    return msg;
  }
  lua_remove(L, -2);
  lua_pushstring(L, msg);
  lua_pushinteger(L, 1); /* locate's caller is this handler: the error's frames are above it */
  if (lua_pcall(L, 2, 1, 0) != LUA_OK || !lua_isstring(L, -1)) { lua_pop(L, 1); return msg; }
  return lua_tostring(L, -1); /* stays on the stack until the handler returns */
}

/* Message handler: the error as a string, naming the user's line, with a
 * traceback. */
static int msgh(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  } else {
    msg = user_located(L, msg);
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static void capture_reset(void);

int gsR_docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  struct sigaction sa, old;
  lua_pushcfunction(L, msgh);
  lua_insert(L, base);
  running_L = L;
  pending = 0;
  gs_interrupted = 0;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  int status = lua_pcall(L, narg, nres, base);
  sigaction(SIGINT, &old, NULL);
  lua_sethook(L, NULL, 0, 0);
  running_L = NULL;
  pending = 0;
  gs_interrupted = 0;
  lua_remove(L, base);
  capture_reset();
  return status;
}

void gsR_report(lua_State *L, int status) {
  if (status == LUA_OK) return;
  const char *msg = lua_tostring(L, -1);
  fflush(stdout);
  fprintf(stderr, "%s: %s\n", gsR_progname, msg ? msg : "(error object is not a string)");
  fflush(stderr);
  lua_pop(L, 1);
}

/* ---- gshell.core ---------------------------------------------------- */

static int core_clock(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

static int core_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
  return 1;
}

/* Output capture: file descriptor 1 points at a temporary file until
 * capture_end, so Lua's print and io.write, C printf and `!cmd` children
 * all land there, in the order they were written. */
static FILE *cap_file;
static int cap_saved_fd = -1;

static void capture_reset(void) {
  if (cap_saved_fd < 0) return;
  fflush(stdout);
  dup2(cap_saved_fd, 1);
  close(cap_saved_fd);
  cap_saved_fd = -1;
  if (cap_file) fclose(cap_file);
  cap_file = NULL;
}

static int core_capture_begin(lua_State *L) {
  if (cap_saved_fd >= 0) return luaL_error(L, "output capture already active");
  fflush(stdout);
  cap_file = tmpfile();
  if (cap_file == NULL) return luaL_error(L, "cannot capture output: %s", strerror(errno));
  cap_saved_fd = dup(1);
  if (cap_saved_fd < 0 || dup2(fileno(cap_file), 1) < 0) {
    int e = errno;
    if (cap_saved_fd >= 0) close(cap_saved_fd);
    cap_saved_fd = -1;
    fclose(cap_file);
    cap_file = NULL;
    return luaL_error(L, "cannot capture output: %s", strerror(e));
  }
  return 0;
}

/* Ends the capture and returns everything written meanwhile. */
static int core_capture_end(lua_State *L) {
  if (cap_saved_fd < 0) return luaL_error(L, "no output capture active");
  fflush(stdout);
  dup2(cap_saved_fd, 1);
  close(cap_saved_fd);
  cap_saved_fd = -1;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  rewind(cap_file);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, cap_file)) > 0) luaL_addlstring(&b, chunk, n);
  fclose(cap_file);
  cap_file = NULL;
  luaL_pushresult(&b);
  return 1;
}

/* Marks a function as a message handler that Ctrl-C must not interrupt. */
static int core_protect_handler(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  if (lua_getfield(L, LUA_REGISTRYINDEX, MSGH_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, MSGH_KEY);
  }
  lua_pushvalue(L, 1);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return 0;
}

static const luaL_Reg core_funcs[] = {
  {"clock", core_clock},
  {"isatty", core_isatty},
  {"capture_begin", core_capture_begin},
  {"capture_end", core_capture_end},
  {"protect_handler", core_protect_handler},
  {NULL, NULL},
};

static int luaopen_core(lua_State *L) {
  luaL_newlib(L, core_funcs);
  lua_pushliteral(L, GS_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushliteral(L, LUA_RELEASE);
  lua_setfield(L, -2, "lua_release");
  return 1;
}

/* ---- embedded Lua modules ---------------------------------------------
 * The shell's modules (lua/gshell/) are searched after the stock searchers
 * (and after the one torch installs), so gshell needs no files beside it. */
void gsR_open_core(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_core);
  lua_setfield(L, -2, "gshell.core");
  lua_pop(L, 1);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "searchers");
  gsL_push_embedded_searcher(L, gs_shell_modules);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  lua_pop(L, 2);
}
