/* lua_options.c: the one check of options tables (keyword arguments).
 *
 * A misspelt key in `torch.ones(2, 3, {devcie = 'cuda'})` used to be
 * ignored, so the learner got a CPU tensor while believing it was on the
 * GPU. Every options table in the API (C factories and methods here, the
 * Lua library through torch._options_error) goes through this check: an
 * unknown key is an error naming it, the nearest allowed key and all of
 * them. */
#include <stdio.h>
#include <string.h>
#include "bind/lua_gs.h"

/* Optimal string alignment distance (Levenshtein plus adjacent swaps, so
 * `devcie` is one edit from `device`). Keys are short; longer ones are
 * compared on their first 63 characters. */
static int edit_distance(const char *a, const char *b) {
  enum { N = 64 };
  size_t la = strlen(a), lb = strlen(b);
  if (la > N - 1) la = N - 1;
  if (lb > N - 1) lb = N - 1;
  static _Thread_local int d[N][N];
  for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    for (size_t j = 1; j <= lb; j++) {
      int cost = a[i - 1] != b[j - 1];
      int best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < best) best = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  }
  return d[la][lb];
}

static bool allowed_key(const char *key, const char *const *allowed, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(key, allowed[i]) == 0) return true;
  return false;
}

/* The nearest allowed key, or NULL when none is close (at most 2 edits,
 * and fewer than half the key's length, so `lr` never suggests `eps`). */
static const char *nearest(const char *key, const char *const *allowed, int n) {
  const char *best = NULL;
  int bd = 3;
  int len = (int)strlen(key);
  for (int i = 0; i < n; i++) {
    int dist = edit_distance(key, allowed[i]);
    if (dist < bd && 2 * dist < (len > (int)strlen(allowed[i]) ? len : (int)strlen(allowed[i]))) {
      bd = dist;
      best = allowed[i];
    }
  }
  return best;
}

const char *gsL_options_problem(lua_State *L, int idx, const char *fname, const char *const *allowed, int n) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) != LUA_TTABLE) return NULL;
  /* the smallest unknown string key, so the message does not depend on
   * the table's traversal order */
  const char *bad = NULL;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) continue;
    const char *k = lua_tostring(L, -1);
    if (!allowed_key(k, allowed, n) && (bad == NULL || strcmp(k, bad) < 0)) bad = k; /* the key stays in the table */
  }
  if (bad == NULL) return NULL;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  char head[256];
  snprintf(head, sizeof head, "%s: unknown option '%.80s'", fname, bad);
  luaL_addstring(&b, head);
  const char *near = nearest(bad, allowed, n);
  if (near) {
    luaL_addstring(&b, " (did you mean '");
    luaL_addstring(&b, near);
    luaL_addstring(&b, "'?)");
  }
  luaL_addstring(&b, n == 1 ? "; the only option is " : "; the options are ");
  for (int i = 0; i < n; i++) {
    if (i) luaL_addstring(&b, ", ");
    luaL_addstring(&b, allowed[i]);
  }
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

void gsL_checkoptions(lua_State *L, int idx, const char *fname, const char *const *allowed, int n) {
  const char *msg = gsL_options_problem(L, idx, fname, allowed, n);
  if (msg) luaL_error(L, "%s", msg);
}

/* torch._options_error(opts, fname, {allowed...}): the message for the
 * Lua library (which raises it at the user's line), or nil. */
static int l_options_error(lua_State *L) {
  const char *fname = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 3);
  if (n > 64) return luaL_error(L, "_options_error: at most 64 allowed keys");
  const char *allowed[64];
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 3, i);
    allowed[i - 1] = luaL_checkstring(L, -1); /* kept alive by the table */
    lua_pop(L, 1);
  }
  if (!gsL_options_problem(L, 1, fname, allowed, (int)n)) lua_pushnil(L);
  return 1;
}

void gsL_open_options(lua_State *L) {
  lua_pushcfunction(L, l_options_error);
  lua_setfield(L, -2, "_options_error");
}
