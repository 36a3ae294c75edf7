/* lua_stream.c: torch._stream, the C half of streams, events and the sync
 * debug mode (the user-facing objects are lua/torch/streams.lua). Streams
 * are named by (device, id); events are userdata over a gs_stream_event.
 * What a device's streams and events do is its backend's business
 * (core/gs_streams.h); this file never asks which kind a device is. */
#include <stdio.h>
#include <string.h>
#include "core/gs_prof.h"
#include "core/gs_streams.h"
#include "bind/lua_gs.h"

#define EVENT_MT "torch.cuda.Event*"

/* A CUDA ordinal that exists. */
static int check_dev(lua_State *L, int idx) {
  lua_Integer d = luaL_checkinteger(L, idx);
  if (d < 0 || d >= gs_cuda_device_count())
    luaL_error(L, "invalid CUDA device %I (%d visible)", (LUAI_UACINT)d, gs_cuda_device_count());
  return (int)d;
}
static int check_stream(lua_State *L, int dev, int idx) {
  lua_Integer s = luaL_checkinteger(L, idx);
  if (s < 0 || s >= gs_stream_count(dev)) luaL_error(L, "invalid stream %I", (LUAI_UACINT)s);
  return (int)s;
}

static int s_queued(lua_State *L) { lua_pushboolean(L, gs_stream_queued(check_dev(L, 1))); return 1; }
static int s_current(lua_State *L) {
  lua_pushinteger(L, gs_stream_current(check_dev(L, 1)));
  return 1;
}
static int s_set_current(lua_State *L) {
  int d = check_dev(L, 1), s = check_stream(L, d, 2);
  gs_stream_set_current(d, s);
  return 0;
}
static int s_pool(lua_State *L) {
  int d = check_dev(L, 1), s = gs_stream_pool(d);
  if (s < 0) return luaL_error(L, "cuda:%d has no stream pool (a real GPU)", d); /* streams.lua checks first */
  lua_pushinteger(L, s);
  return 1;
}
static int s_sync(lua_State *L) {
  int d = check_dev(L, 1), s = check_stream(L, d, 2);
  gsL_check(L, gs_stream_synchronize(d, s, "Stream.synchronize"));
  return 0;
}
static int s_query(lua_State *L) {
  int d = check_dev(L, 1), s = check_stream(L, d, 2);
  lua_pushboolean(L, gs_stream_idle(d, s));
  return 1;
}

/* ---- events ---- */

typedef struct { gs_stream_event *e; } event_ud;

static event_ud *check_event(lua_State *L, int idx) { return luaL_checkudata(L, idx, EVENT_MT); }

static int e_new(lua_State *L) {
  bool timing = lua_toboolean(L, 1);
  event_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
  memset(u, 0, sizeof *u);
  luaL_setmetatable(L, EVENT_MT);
  u->e = gs_stream_event_new(timing);
  if (!u->e) gsL_raise(L);
  return 1;
}
static int e_gc(lua_State *L) {
  event_ud *u = check_event(L, 1);
  gs_stream_event_release(u->e);
  u->e = NULL;
  return 0;
}
static int e_record(lua_State *L) {
  event_ud *u = check_event(L, 1);
  int d = check_dev(L, 2), s = check_stream(L, d, 3);
  gsL_check(L, gs_stream_event_record(u->e, d, s));
  return 0;
}
static int e_query(lua_State *L) {
  event_ud *u = check_event(L, 1);
  bool done = true;
  gsL_check(L, gs_stream_event_query(u->e, &done));
  lua_pushboolean(L, done);
  return 1;
}
static int e_sync(lua_State *L) {
  gsL_check(L, gs_stream_event_synchronize(check_event(L, 1)->e));
  return 0;
}
static int e_wait(lua_State *L) {
  event_ud *u = check_event(L, 1);
  int d = check_dev(L, 2), s = check_stream(L, d, 3);
  gsL_check(L, gs_stream_event_wait(u->e, d, s));
  return 0;
}
static int e_elapsed(lua_State *L) {
  event_ud *a = check_event(L, 1), *b = check_event(L, 2);
  double ms;
  gsL_check(L, gs_stream_event_elapsed(a->e, b->e, &ms));
  lua_pushnumber(L, ms);
  return 1;
}
/* the device an event was recorded on, or nil */
static int e_device(lua_State *L) {
  event_ud *u = check_event(L, 1);
  int d;
  if (gs_stream_event_device(u->e, &d)) lua_pushinteger(L, d);
  else lua_pushnil(L);
  return 1;
}

/* ---- sync debug mode ---- */

static int s_set_mode(lua_State *L) {
  lua_Integer m = luaL_checkinteger(L, 1);
  if (m < 0 || m > 2) return luaL_error(L, "set_sync_debug_mode: expected 'default', 'warn' or 'error' (0, 1, 2), got %I", (LUAI_UACINT)m);
  gs_set_sync_debug_mode((int)m);
  return 0;
}
static int s_get_mode(lua_State *L) { lua_pushinteger(L, gs_get_sync_debug_mode()); return 1; }
static int s_context_ms(lua_State *L) {
  lua_pushinteger(L, gs_devices_context_ms());
  return 1;
}

/* Whether a chunk is the library's own (compiled in as @lua/...). */
static bool library_source(const char *src) {
  return strncmp(src, "@lua/torch/", 11) == 0 || strncmp(src, "@lua/gshell/", 12) == 0 || src[0] == '=';
}

/* The innermost frame outside the library (the user's code), or 0. */
static int user_level(lua_State *L) {
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    if (library_source(ar.source) && strcmp(ar.source, "=stdin") != 0) continue;
    return level;
  }
  return 0;
}

/* "file:line:" of that frame, so a warning names the user's line even
 * when nn or optim made the call. */
static void user_where(lua_State *L, char *buf, size_t len) {
  lua_Debug ar;
  buf[0] = 0;
  int level = user_level(L);
  if (level > 0 && lua_getstack(L, level, &ar) && lua_getinfo(L, "Sl", &ar))
    snprintf(buf, len, "%s:%d: ", ar.short_src, ar.currentline);
}

/* The synchronising call as the user wrote it: the function their frame
 * called ("item()", "synchronize()" for Stream:synchronize, whose C half
 * has another name), "print" for a __tostring run by print, else the
 * engine's description ("a copy to the host"). When that function is a
 * library helper, the call inside it that waited follows:
 * "evaluate_accuracy_gpu() -> item()". */
static void call_name(lua_State *L, const char *what, char *buf, size_t len) {
  lua_Debug ar;
  int user = user_level(L);
  int first = user > 0 ? user - 1 : 0;
  for (int level = first; level >= 0 && lua_getstack(L, level, &ar); level--) {
    if (!lua_getinfo(L, "nS", &ar) || !ar.name || strncmp(ar.name, "__", 2) == 0) continue;
    if (strcmp(ar.name, "print") == 0) { snprintf(buf, len, "print"); return; }
    char outer[64];
    snprintf(outer, sizeof outer, "%s", ar.name);
    /* a helper written in Lua (not pcall, not a C function): the innermost
     * named call under it, skipping internal halves such as _save */
    int lua_helper = ar.what && strcmp(ar.what, "Lua") == 0;
    for (int inner = 0; lua_helper && inner < level && lua_getstack(L, inner, &ar); inner++) {
      if (!lua_getinfo(L, "n", &ar) || !ar.name || ar.name[0] == '_') continue;
      if (strcmp(ar.name, outer) != 0) { snprintf(buf, len, "%s() -> %s()", outer, ar.name); return; }
      break;
    }
    snprintf(buf, len, "%s()", outer);
    return;
  }
  snprintf(buf, len, "%s", what);
}

void gsL_sync_warn(lua_State *L) {
  const char *what = gs_sync_warning;
  gs_sync_warning = NULL;
  char where[256], name[128];
  user_where(L, where, sizeof where);
  call_name(L, what, name, sizeof name);
  lua_getfield(L, LUA_REGISTRYINDEX, "gshell.sync_warn");
  if (lua_isfunction(L, -1)) {
    lua_pushfstring(L, "%s%s waits for the GPU to finish its queued work (a synchronizing operation; "
                       "torch.cuda.set_sync_debug_mode is 'warn')", where, name);
    lua_call(L, 1, 0);
  } else {
    lua_pop(L, 1);
    fprintf(stderr, "warning: %s%s waits for the GPU (a synchronizing operation)\n", where, name);
  }
}

int gsL_raise(lua_State *L) {
  if (gs_sync_warning && gs_get_sync_debug_mode() != 2) {
    /* 'warn': the call synchronised, then failed for another reason; the
     * warning is printed here, not left for a later call to print */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", gs_last_error());
    gsL_sync_warn(L);
    return luaL_error(L, "%s", msg);
  }
  if (gs_sync_warning) { /* the sync debug mode is 'error': say which call, on the user's line */
    const char *what = gs_sync_warning;
    gs_sync_warning = NULL;
    char where[256], name[128];
    user_where(L, where, sizeof where);
    call_name(L, what, name, sizeof name);
    lua_pushfstring(L, "%s%s waits for the GPU to finish its queued work (a synchronizing operation), and "
                       "torch.cuda.set_sync_debug_mode is 'error'", where, name);
    return lua_error(L);
  }
  return luaL_error(L, "%s", gs_last_error());
}

/* the Lua function that prints sync warnings (the shell and kernel route
 * it to the user's stderr stream) */
static int s_set_warn(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, "gshell.sync_warn");
  return 0;
}

void gsL_open_stream(lua_State *L) {
  luaL_newmetatable(L, EVENT_MT);
  lua_pushcfunction(L, e_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
    {"queued", s_queued}, {"current", s_current}, {"set_current", s_set_current}, {"pool", s_pool},
    {"sync", s_sync}, {"query", s_query},
    {"event_new", e_new}, {"event_record", e_record}, {"event_query", e_query}, {"event_sync", e_sync},
    {"event_wait", e_wait}, {"event_elapsed", e_elapsed}, {"event_device", e_device},
    {"set_sync_debug_mode", s_set_mode}, {"get_sync_debug_mode", s_get_mode},
    {"sim_context_ms", s_context_ms}, {"set_warn", s_set_warn},
    {NULL, NULL}};
  lua_newtable(L);
  luaL_setfuncs(L, fns, 0);
  lua_setfield(L, -2, "_stream");
}
