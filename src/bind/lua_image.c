/* lua_image.c: Lua bindings for the data sets' engine code: the IDX
 * reader (io/gs_idx.h) and the bilinear resize (io/gs_image.h), used by
 * lua/torch/vision/ (torchvision.datasets and transforms). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "bind/lua_gs.h"
#include "core/gs_file.h"
#include "io/gs_idx.h"
#include "io/gs_image.h"

/* The cap of the read about to start: the optional argument at index i
 * (torchvision.datasets.max_bytes), else gs_idx.h's default; set for
 * every read, so no earlier call's cap lingers. */
static void set_cap(lua_State *L, int i) {
  lua_Integer v = luaL_optinteger(L, i, (lua_Integer)GS_IDX_DEFAULT_MAX_BYTES);
  luaL_argcheck(L, v > 0, i, "expected a positive number of bytes");
  gs_idx_max_bytes((uint64_t)v);
}

/* torch._read_idx(path[, max_bytes]): the file's contents as a CPU uint8
 * tensor. */
static int l_read_idx(lua_State *L) {
  size_t n;
  const char *path = luaL_checklstring(L, 1, &n);
  if (strlen(path) != n) return luaL_error(L, "torch._read_idx: the path contains a NUL byte");
  set_cap(L, 2);
  gs_tensor *x;
  if (gs_idx_read(path, &x) != GS_OK) return luaL_error(L, "%s", gs_last_error());
  gsL_pushtensor(L, x);
  return 1;
}

/* torch._read_idx_cached(path, cache_dir[, max_bytes]) -> tensor, hit: path read
 * through its decompressed copy in cache_dir (gs_idx_read_cached). */
static int l_read_idx_cached(lua_State *L) {
  size_t n, m;
  const char *path = luaL_checklstring(L, 1, &n);
  const char *cache = luaL_checklstring(L, 2, &m);
  if (strlen(path) != n || strlen(cache) != m) return luaL_error(L, "torch._read_idx_cached: a path contains a NUL byte");
  set_cap(L, 3);
  gs_tensor *x;
  bool hit;
  if (gs_idx_read_cached(path, cache, &x, &hit) != GS_OK) return luaL_error(L, "%s", gs_last_error());
  gsL_pushtensor(L, x);
  lua_pushboolean(L, hit);
  return 2;
}

/* torch._idx_cache_path(path, cache_dir): where path's copy is kept */
static int l_idx_cache_path(lua_State *L) {
  size_t n, m;
  const char *path = luaL_checklstring(L, 1, &n);
  const char *cache = luaL_checklstring(L, 2, &m);
  if (strlen(path) != n || strlen(cache) != m) return luaL_error(L, "torch._idx_cache_path: a path contains a NUL byte");
  char *p = gs_idx_cache_path(path, cache);
  if (!p) return luaL_error(L, "%s", gs_last_error());
  lua_pushstring(L, p);
  free(p);
  return 1;
}

/* torch._file_kind(path) -> "file", or what else is there ("a directory",
 * "a FIFO (named pipe)", ...), or nil when nothing is: a stat, so a FIFO
 * is never opened (opening one waits for a writer). */
static int l_file_kind(lua_State *L) {
  struct stat st;
  if (stat(luaL_checkstring(L, 1), &st) != 0) return 0;
  lua_pushstring(L, S_ISREG(st.st_mode) ? "file" : gs_file_kind(st.st_mode));
  return 1;
}

/* torch._resize_bilinear(x, h, w[, channels = 1]): x (..., H, W) resized
 * to (..., h, w); channels: of each image (gs_image.h). */
static int l_resize_bilinear(lua_State *L) {
  gs_tensor *x = gsL_checktensor(L, 1);
  lua_Integer h = luaL_checkinteger(L, 2), w = luaL_checkinteger(L, 3), c = luaL_optinteger(L, 4, 1);
  gs_tensor *y;
  if (gs_resize_bilinear(x, h, w, c, &y) != GS_OK) return luaL_error(L, "%s", gs_last_error());
  gsL_pushtensor(L, y);
  return 1;
}

void gsL_open_image(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"_read_idx", l_read_idx}, {"_read_idx_cached", l_read_idx_cached},
    {"_idx_cache_path", l_idx_cache_path}, {"_file_kind", l_file_kind}, {"_resize_bilinear", l_resize_bilinear}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
