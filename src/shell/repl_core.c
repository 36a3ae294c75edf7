/* repl_core.c: what the shell needs from C besides readline: protected
 * calls that Ctrl-C can interrupt, error reports, and the small module
 * "gshell.core" (a monotonic clock, isatty, capture of everything
 * written to stdout, C stdio and child processes included). Also a package
 * searcher for the Lua modules embedded in the binary. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>

#include "core/gs_common.h"
#include "bind/lua_embedded.h"
#include "shell/repl.h"

const char *gsR_progname = "gshell";

/* ---- Ctrl-C while code runs ------------------------------------------
 * A signal handler may do almost nothing, but lua_sethook is documented as
 * safe to call from one: the handler arms a hook that raises the error at
 * the next Lua instruction, and sets gs_interrupted for long C loops. A
 * second Ctrl-C before the first one was delivered (code stuck in C that
 * does not poll) kills the process, the only way out left.
 *
 * An interrupt escapes pcall: the hook stays armed after it raised (or
 * after C code that polled gs_interrupted raised it) and raises again at
 * the next instruction of any Lua function, so a loop whose body is
 * wrapped in pcall stops too. It stops raising when the error reaches the
 * shell's top level: the C call of gsR_docall, or a Lua function marked
 * with gshell.core.top_level (Session.call, which runs every cell) once
 * control is back in it. Message handlers are never interrupted, and
 * library code only by the first raise (see interrupt_hook). */

static lua_State *running_L;           /* the state running code, for the handler */
static volatile sig_atomic_t pending;  /* a Ctrl-C not yet turned into an error */
/* An interrupt is on its way out (from the Ctrl-C until the top level
 * took it): a coroutine resumed meanwhile is armed too. */
static volatile sig_atomic_t escaping;

/* The coroutines running now (resumed and not yet back), innermost last:
 * a hook is per Lua thread, so the handler arms each of them as well as
 * running_L, or a loop inside a coroutine would never see the Ctrl-C.
 * coroutine.resume and coroutine.wrap are wrapped to keep this list
 * (co_resume, co_wrap below). */
#define CO_MAX 200 /* Lua's C stack limit (LUAI_MAXCCALLS) stops nesting near here */
static lua_State *co_running[CO_MAX];
static volatile sig_atomic_t co_depth;

/* Handlers that must not be interrupted themselves: the message handlers
 * run while an error (often the interruption) is being reported. */
static const char *const MSGH_KEY = "gshell.msgh";
/* Functions where an escaping interrupt stops (gshell.core.top_level). */
static const char *const TOP_KEY = "gshell.top_level";

static int msgh(lua_State *L);

/* Whether a function marked in the registry table `key` is running at
 * stack level `level`, or (level < 0) at any level; `also` (a C function
 * or NULL) counts as marked. */
static int marked_running(lua_State *L, const char *key, int level, lua_CFunction also) {
  lua_Debug ar;
  int found = 0;
  if (lua_getfield(L, LUA_REGISTRYINDEX, key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
  }
  for (int lv = level < 0 ? 0 : level; !found && lua_getstack(L, lv, &ar); lv++) {
    lua_getinfo(L, "f", &ar);
    found = also && lua_tocfunction(L, -1) == also;
    found = found || lua_rawget(L, -2) != LUA_TNIL;  /* key table[fn] */
    lua_pop(L, 1);
    if (level >= 0) break;
  }
  lua_pop(L, 1);
  return found;
}

/* The hook a state runs with while no interrupt is escaping: none,
 * except under ThreadSanitizer, which runs a signal handler only when the
 * thread next enters one of its interceptors. Lua code (liblua is not
 * instrumented) may never enter one, so there a count hook locks a mutex
 * every 1000 instructions, and Ctrl-C still reaches a pure Lua loop. */
#if defined(__SANITIZE_THREAD__)
static void signal_point(lua_State *L, lua_Debug *ar) {
  static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  (void)L; (void)ar;
  pthread_mutex_lock(&m);
  pthread_mutex_unlock(&m);
}
static void idle_hook(lua_State *L) { lua_sethook(L, signal_point, LUA_MASKCOUNT, 1000); }
#else
static void idle_hook(lua_State *L) { lua_sethook(L, NULL, 0, 0); }
#endif

/* Whether the function running at the hook's level is one of the embedded
 * modules' (chunk names "@lua/torch/...", "@lua/gshell/..."). */
static int in_module(lua_State *L, lua_Debug *ar, const char *prefix) {
  return lua_getinfo(L, "S", ar) && strncmp(ar->source, prefix, strlen(prefix)) == 0;
}

static void interrupt_hook(lua_State *L, lua_Debug *ar) {
  /* Raise only before an instruction of a Lua function: a call or return
   * event may be a C function's (pcall's own return among them). */
  if (ar->event != LUA_HOOKCOUNT && ar->event != LUA_HOOKLINE) return;
  /* An error is being reported right now (by a session's handler or
   * gsR_docall's): it is on its way out already. */
  if (marked_running(L, MSGH_KEY, -1, msgh)) return;
  if (marked_running(L, TOP_KEY, 0, NULL)) {
    /* Back in the top level: the interrupt was taken once it was raised
     * (gs_interrupted consumed); before that, the cell's first instruction
     * raises it. */
    if (!gs_interrupted) {
      pending = 0;
      escaping = 0;
      idle_hook(L);
    }
    return;
  }
  /* torch's Lua library is never interrupted in the middle: its state
   * changes and their undoing (torch.with_device setting the default device
   * and restoring it after a pcall) stay whole. The error is raised at the
   * next instruction of the user's code (a second Ctrl-C meanwhile quits,
   * as `pending` stays set). The shell's own code is interrupted once, then
   * runs on as the library does. */
  if (in_module(L, ar, "@lua/torch/")) return;
  if (!gs_interrupted && in_module(L, ar, "@lua/gshell/")) return;
  pending = 0;
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
  escaping = 1;
  gs_interrupted = 1;
  if (running_L)
    lua_sethook(running_L, interrupt_hook,
                LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
  int n = co_depth < CO_MAX ? co_depth : CO_MAX;
  for (int i = 0; i < n; i++)
    lua_sethook(co_running[i], interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
}

/* ---- coroutines that Ctrl-C reaches ----
 * Each wrapper calls the stock function (an upvalue) with the coroutine
 * on the running list; a coroutine resumed while an interrupt escapes is
 * armed first, and one resumed later gets the idle hook back (its hook
 * may still be armed from an interrupt that ended while it was
 * suspended). */
static void co_enter(lua_State *co) {
  if (escaping && running_L)
    lua_sethook(co, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
  else
    idle_hook(co);
  if (co_depth < CO_MAX) co_running[co_depth] = co;
  co_depth = co_depth + 1;
}
static void co_leave(void) { co_depth = co_depth - 1; }

/* calls upvalue 1 with the arguments; the coroutine is co (or none) */
static int co_call(lua_State *L, lua_State *co) {
  int n = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  if (co) co_enter(co);
  int st = lua_pcall(L, n, LUA_MULTRET, 0);
  if (co) co_leave();
  if (st != LUA_OK) return lua_error(L); /* (wrap's error, as the stock one raised it) */
  return lua_gettop(L);
}

static int co_resume(lua_State *L) { return co_call(L, lua_tothread(L, 1)); }

static int co_wrapped(lua_State *L) {
  lua_State *co = lua_tothread(L, lua_upvalueindex(2));
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  int n = lua_gettop(L) - 1;
  co_enter(co);
  int st = lua_pcall(L, n, LUA_MULTRET, 0);
  co_leave();
  if (st != LUA_OK) return lua_error(L);
  return lua_gettop(L);
}

/* coroutine.wrap(f): the stock wrapper (its coroutine is its upvalue),
 * called through co_wrapped */
static int co_wrap(lua_State *L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  if (lua_getupvalue(L, -1, 1) == NULL || !lua_isthread(L, -1)) {
    lua_settop(L, 2);
    return 1; /* not the stock wrapper's shape: left as it is */
  }
  lua_pushcclosure(L, co_wrapped, 2);
  return 1;
}

static void wrap_coroutines(lua_State *L) {
  if (lua_getglobal(L, "coroutine") != LUA_TTABLE) { lua_pop(L, 1); return; }
  lua_getfield(L, -1, "resume");
  lua_pushcclosure(L, co_resume, 1);
  lua_setfield(L, -2, "resume");
  lua_getfield(L, -1, "wrap");
  lua_pushcclosure(L, co_wrap, 1);
  lua_setfield(L, -2, "wrap");
  lua_pop(L, 1);
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
  escaping = 0;
  co_depth = 0;
  gs_interrupted = 0;
  idle_hook(L);
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  int status = lua_pcall(L, narg, nres, base);
  sigaction(SIGINT, &old, NULL);
  lua_sethook(L, NULL, 0, 0);
  running_L = NULL;
  pending = 0;
  escaping = 0;
  co_depth = 0;
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

/* Adds the function at index 1 to the registry table `key` (weak keys:
 * a session's handler goes when the session does). */
static int mark_function(lua_State *L, const char *key) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  if (lua_getfield(L, LUA_REGISTRYINDEX, key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, key);
  }
  lua_pushvalue(L, 1);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return 0;
}

/* Marks a function as a message handler that Ctrl-C must not interrupt. */
static int core_protect_handler(lua_State *L) { return mark_function(L, MSGH_KEY); }

/* Marks a function as the shell's top level: an interrupt escaping every
 * pcall stops raising once control is back in it. */
static int core_top_level(lua_State *L) { return mark_function(L, TOP_KEY); }

static const luaL_Reg core_funcs[] = {
  {"clock", core_clock},
  {"isatty", core_isatty},
  {"capture_begin", core_capture_begin},
  {"capture_end", core_capture_end},
  {"protect_handler", core_protect_handler},
  {"top_level", core_top_level},
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
  wrap_coroutines(L);
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
