/* lua_prof.c: the profiler's C side for lua/torch/profiler.lua:
 * torch._prof.start([record_shapes]), stop(), events(), now(), and
 * json(value), the Chrome trace's encoder (jansson). The Lua module turns
 * the events into the table, the Chrome trace and the SVG timeline. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "core/gs_device.h"
#include "core/gs_gpu_model.h"
#include "core/gs_prof.h"
#include "bind/lua_gs.h"

/* start([record_shapes]): clears the events and starts recording. One
 * profile at a time: the events of an inner one would steal the outer's. */
static int l_start(lua_State *L) {
  if (gs_prof_on()) return luaL_error(L, "torch.profiler: a profile is already recording (profiles do not nest)");
  gs_prof_set_record_shapes(lua_toboolean(L, 1));
  gs_prof_start();
  return 0;
}

static int l_stop(lua_State *L) {
  gs_prof_stop();
  return 0;
}

static int l_recording(lua_State *L) {
  lua_pushboolean(L, gs_prof_on());
  return 1;
}

/* dropped(): events not kept (past GS_PROF_MAX_EVENTS), and that limit */
static int l_dropped(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)gs_prof_dropped());
  lua_pushinteger(L, GS_PROF_MAX_EVENTS);
  return 2;
}

/* now(): the profile's clock, ns: the host's clock (torch.clock()), which
 * is real time unless a device models a GPU */
static int l_now(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)gs_prof_clock_ns());
  return 1;
}

static const char *const kind_names[GS_PROF_KIND_COUNT] = {"kernel", "copy", "sync"};
static const char *const bound_names[GS_BOUND_COUNT] = {"", "compute", "memory", "launch", "copy", "host"};
/* as torch.cuda.gpu_model(i).peak names them (lua_gpu_model.c) */
static const char *const unit_names[GS_UNIT_COUNT] = {"fp32", "fp64", "fp64_tc", "tf32_tc", "fp16_tc", "bf16_tc"};

/* events(): the recorded events as a list of {name, kind, device, stream,
 * t0, t1 (ns, the profile's clock), bytes, flops[, shapes][, modelled,
 * bound, unit]}, in the order they were recorded. */
static int l_events(lua_State *L) {
  if (gs_prof_on()) return luaL_error(L, "torch._prof.events: stop the profile first (workers still append)");
  int64_t n;
  const gs_prof_event *ev = gs_prof_events(&n);
  lua_createtable(L, n > 0 && n < 1 << 24 ? (int)n : 0, 0);
  for (int64_t i = 0; i < n; i++) {
    const gs_prof_event *e = &ev[i];
    lua_createtable(L, 0, 9);
    lua_pushstring(L, e->name ? e->name : "?");
    lua_setfield(L, -2, "name");
    lua_pushstring(L, e->kind >= 0 && e->kind < GS_PROF_KIND_COUNT ? kind_names[e->kind] : "kernel");
    lua_setfield(L, -2, "kind");
    char dev[32];
    if (e->device_type == GS_CUDA) {
      gs_device d = {GS_CUDA, e->device_index};
      gs_device_name(d, dev, sizeof dev);
    } else {
      strcpy(dev, "cpu");
    }
    lua_pushstring(L, dev);
    lua_setfield(L, -2, "device");
    lua_pushinteger(L, e->stream);
    lua_setfield(L, -2, "stream");
    lua_pushinteger(L, (lua_Integer)e->t0_ns);
    lua_setfield(L, -2, "t0");
    lua_pushinteger(L, (lua_Integer)(e->t1_ns >= e->t0_ns ? e->t1_ns : e->t0_ns));
    lua_setfield(L, -2, "t1");
    lua_pushinteger(L, (lua_Integer)e->bytes);
    lua_setfield(L, -2, "bytes");
    lua_pushinteger(L, (lua_Integer)e->flops);
    lua_setfield(L, -2, "flops");
    if (e->modelled) {
      lua_pushboolean(L, 1);
      lua_setfield(L, -2, "modelled");
    }
    if (e->bound > GS_BOUND_NONE && e->bound < GS_BOUND_COUNT) {
      lua_pushstring(L, bound_names[e->bound]);
      lua_setfield(L, -2, "bound");
    }
    if (e->unit > 0 && e->unit <= GS_UNIT_COUNT) {
      lua_pushstring(L, unit_names[e->unit - 1]);
      lua_setfield(L, -2, "unit");
    }
    const char *shapes = gs_prof_event_shapes(i);
    if (shapes[0]) {
      lua_pushstring(L, shapes);
      lua_setfield(L, -2, "shapes");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* The Lua value at idx as JSON; NULL with a message pushed on error. A
 * table whose keys are exactly 1..n (n >= 1) is an array, any other table
 * an object with string keys; non-finite numbers become null (JSON has
 * none). */
static json_t *to_json(lua_State *L, int idx, int depth) {
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TNIL: return json_null();
  case LUA_TBOOLEAN: return json_boolean(lua_toboolean(L, idx));
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) return json_integer((json_int_t)lua_tointeger(L, idx));
    return isfinite(lua_tonumber(L, idx)) ? json_real(lua_tonumber(L, idx)) : json_null();
  case LUA_TSTRING: {
    size_t n;
    const char *str = lua_tolstring(L, idx, &n);
    json_t *j = json_stringn(str, n);
    if (!j) lua_pushfstring(L, "torch._prof.json: a string is not UTF-8: %s", str);
    return j;
  }
  case LUA_TTABLE: break;
  default:
    lua_pushfstring(L, "torch._prof.json: cannot encode a %s", luaL_typename(L, idx));
    return NULL;
  }
  if (depth > 64) { lua_pushliteral(L, "torch._prof.json: tables nested deeper than 64 (a cycle?)"); return NULL; }
  luaL_checkstack(L, 4, "torch._prof.json");
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx), keys = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) { keys++; lua_pop(L, 1); }
  if (n > 0 && keys == n) {
    json_t *a = json_array();
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, idx, i);
      json_t *v = to_json(L, -1, depth + 1);
      if (!v) { lua_remove(L, -2); json_decref(a); return NULL; }
      lua_pop(L, 1);
      json_array_append_new(a, v);
    }
    return a;
  }
  json_t *o = json_object();
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING) {
      lua_pop(L, 2);
      json_decref(o);
      lua_pushliteral(L, "torch._prof.json: an object's keys must be strings");
      return NULL;
    }
    json_t *v = to_json(L, -1, depth + 1);
    if (!v) { lua_replace(L, -3); lua_pop(L, 1); json_decref(o); return NULL; }
    size_t kl;
    const char *k = lua_tolstring(L, -2, &kl);
    if (json_object_setn_new(o, k, kl, v) != 0) {
      lua_pop(L, 2);
      json_decref(o);
      lua_pushliteral(L, "torch._prof.json: a key is not UTF-8");
      return NULL;
    }
    lua_pop(L, 1);
  }
  return o;
}

/* json(value[, indent]): the value as JSON text (keys sorted, so the same
 * profile always writes the same file). */
static int l_json(lua_State *L) {
  int indent = (int)luaL_optinteger(L, 2, 0);
  json_t *j = to_json(L, 1, 0);
  if (!j) return lua_error(L);
  size_t flags = JSON_SORT_KEYS | JSON_REAL_PRECISION(12) | (indent > 0 ? JSON_INDENT(indent > 8 ? 8 : indent) : JSON_COMPACT);
  char *text = json_dumps(j, flags);
  json_decref(j);
  if (!text) return luaL_error(L, "torch._prof.json: out of memory");
  lua_pushstring(L, text);
  free(text);
  return 1;
}

void gsL_open_prof(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"start", l_start}, {"stop", l_stop}, {"recording", l_recording}, {"now", l_now}, {"events", l_events}, {"dropped", l_dropped},
    {"json", l_json},
    {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_setfield(L, -2, "_prof");
}
