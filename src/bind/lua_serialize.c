/* lua_serialize.c: Lua bindings of the safetensors reader and writer
 * (gs_safetensors.h). lua/torch/serialize.lua builds torch.save and
 * torch.load on top of these; gsL_open_serialize puts them into the
 * torch table on top of the stack:
 *   torch._save(path, names, tensors [, metadata])  writes atomically
 *   torch._load(path) -> file object with
 *       :keys()               tensor names in header order
 *       :metadata()           the "__metadata__" table (strings)
 *       :info(name)           {dtype =, shape =, data_offsets = {b, e}}
 *       :get(name [, device]) the tensor (read now, moved to device)
 *       :close()              also on garbage collection and <close>
 *   torch._resolve_device(d) the device with "cuda" made concrete; a clear
 *       error when it does not exist.
 *   torch._save_text(path, text) -> true | nil, message: a text file saved
 *       the same safe way (the shell's --md and --check --update). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/gs_file.h"
#include "io/gs_safetensors.h"
#include "bind/lua_gs.h"

#define ST_FILE_MT "torch.SafetensorsFile"

typedef struct {
  bool open;
  gs_st_source src;
  gs_st_header h;
} st_file;

/* Uservalues of a file object: 1 = name -> index table, 2 = the path. */

static const char *path_of(lua_State *L, int idx) {
  lua_getiuservalue(L, idx, 2);
  const char *p = lua_tostring(L, -1);
  lua_pop(L, 1); /* still referenced by the userdata */
  return p ? p : "?";
}

static st_file *check_file(lua_State *L) {
  st_file *f = luaL_checkudata(L, 1, ST_FILE_MT);
  if (!f->open) luaL_error(L, "torch.load('%s'): the file object is closed", path_of(L, 1));
  return f;
}

static int f_close(lua_State *L) {
  st_file *f = luaL_checkudata(L, 1, ST_FILE_MT);
  if (f->open) {
    gs_st_header_free(&f->h);
    gs_st_source_close(&f->src);
    f->open = false;
  }
  return 0;
}

static int f_keys(lua_State *L) {
  st_file *f = check_file(L);
  lua_createtable(L, f->h.ntensors, 0);
  for (int i = 0; i < f->h.ntensors; i++) {
    lua_pushstring(L, f->h.tensors[i].name);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int f_metadata(lua_State *L) {
  st_file *f = check_file(L);
  lua_createtable(L, 0, f->h.nmeta);
  for (int i = 0; i < f->h.nmeta; i++) {
    lua_pushstring(L, f->h.meta[i].value);
    lua_setfield(L, -2, f->h.meta[i].key);
  }
  return 1;
}

/* Index of the tensor named by argument 2, or a clear error. */
static int find(lua_State *L, st_file *f) {
  const char *name = luaL_checkstring(L, 2);
  lua_getiuservalue(L, 1, 1);
  lua_pushvalue(L, 2);
  lua_rawget(L, -2);
  int isnum;
  lua_Integer i = lua_tointegerx(L, -1, &isnum);
  lua_pop(L, 2);
  if (!isnum || i < 0 || i >= f->h.ntensors)
    luaL_error(L, "torch.load('%s'): the file has no tensor named '%s'", path_of(L, 1), name);
  return (int)i;
}

static int f_info(lua_State *L) {
  st_file *f = check_file(L);
  const gs_st_info *t = &f->h.tensors[find(L, f)];
  lua_createtable(L, 0, 3);
  gsL_pushdtype(L, t->dtype);
  lua_setfield(L, -2, "dtype");
  gsL_pushsize(L, t->ndim, t->shape);
  lua_setfield(L, -2, "shape");
  lua_createtable(L, 2, 0);
  lua_pushinteger(L, (lua_Integer)t->begin);
  lua_rawseti(L, -2, 1);
  lua_pushinteger(L, (lua_Integer)t->end);
  lua_rawseti(L, -2, 2);
  lua_setfield(L, -2, "data_offsets");
  return 1;
}

static int f_get(lua_State *L) {
  st_file *f = check_file(L);
  int i = find(L, f);
  gs_device dev = gs_cpu();
  if (!lua_isnoneornil(L, 3) && gs_device_resolve(gsL_checkdevice(L, 3), &dev) != GS_OK)
    return luaL_error(L, "torch.load('%s'): %s", path_of(L, 1), gs_last_error());
  gs_tensor *x, *y;
  if (gs_st_read_tensor(&f->src, &f->h, i, &x) != GS_OK)
    return luaL_error(L, "torch.load('%s'): %s", path_of(L, 1), gs_last_error());
  gs_status s = gs_to(x, dev, x->dtype, &y);
  gs_tensor_release(x);
  if (s != GS_OK) return luaL_error(L, "torch.load('%s'): %s", path_of(L, 1), gs_last_error());
  gsL_pushtensor(L, y);
  return 1;
}

static int f_tostring(lua_State *L) {
  st_file *f = luaL_checkudata(L, 1, ST_FILE_MT);
  lua_pushfstring(L, "SafetensorsFile('%s', %d tensors%s)", path_of(L, 1), f->h.ntensors, f->open ? "" : ", closed");
  return 1;
}

/* torch._load(path): opens the file and validates its whole header. */
static int gsL_serialize_load(lua_State *L) {
  size_t plen;
  const char *path = luaL_checklstring(L, 1, &plen);
  if (strlen(path) != plen) return luaL_error(L, "torch.load: the path contains a NUL byte");
  st_file *f = lua_newuserdatauv(L, sizeof *f, 2);
  memset(f, 0, sizeof *f);
  f->src.fd = -1;
  luaL_setmetatable(L, ST_FILE_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 2);
  if (gs_st_source_open(path, &f->src) != GS_OK) return luaL_error(L, "torch.load: %s", gs_last_error());
  f->open = true; /* from here the collector closes it if anything fails */
  if (gs_st_read_header(&f->src, &f->h) != GS_OK) {
    gs_st_source_close(&f->src);
    f->open = false;
    return luaL_error(L, "torch.load('%s'): %s", path, gs_last_error());
  }
  lua_createtable(L, 0, f->h.ntensors);
  for (int i = 0; i < f->h.ntensors; i++) {
    lua_pushinteger(L, i);
    lua_setfield(L, -2, f->h.tensors[i].name);
  }
  lua_setiuservalue(L, -2, 1);
  return 1;
}

/* Element i of the table at idx (metamethods honoured), also stored in
 * the anchor table: a value __index just made has no other reference, and
 * the collector must not free it while C holds its pointer. */
static void geti_anchored(lua_State *L, int idx, lua_Integer i, int anchor) {
  lua_geti(L, idx, i);
  lua_pushvalue(L, -1);
  lua_rawseti(L, anchor, i);
}

/* An array of n strings from the table at idx (scratch memory owned by a
 * userdata left on the stack, so a Lua error leaks nothing; the strings
 * are anchored in a table left on the stack above it). */
static const char **string_array(lua_State *L, int idx, int n, const char *what) {
  const char **v = lua_newuserdatauv(L, sizeof *v * (size_t)(n ? n : 1), 0);
  lua_createtable(L, n, 0);
  int anchor = lua_gettop(L);
  for (int i = 0; i < n; i++) {
    size_t len;
    geti_anchored(L, idx, i + 1, anchor);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "torch.save: %s %d must be a string, got %s", what, i + 1, luaL_typename(L, -1));
    v[i] = lua_tolstring(L, -1, &len);
    if (strlen(v[i]) != len) luaL_error(L, "torch.save: %s '%s' contains a NUL byte", what, v[i]);
    lua_pop(L, 1);
  }
  return v;
}

/* torch._save(path, names, tensors [, metadata]) */
static int gsL_serialize_save(lua_State *L) {
  size_t plen;
  const char *path = luaL_checklstring(L, 1, &plen);
  if (strlen(path) != plen) return luaL_error(L, "torch.save: the path contains a NUL byte");
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  if (n != luaL_len(L, 3)) return luaL_error(L, "torch._save: names and tensors differ in length");
  if (n < 0 || n > INT_MAX / 2) return luaL_error(L, "torch.save: too many tensors");
  const char **names = string_array(L, 2, (int)n, "tensor name");
  gs_tensor **ts = lua_newuserdatauv(L, sizeof *ts * (size_t)(n ? n : 1), 0);
  lua_createtable(L, (int)n, 0);
  int anchor = lua_gettop(L);
  for (int i = 0; i < n; i++) {
    geti_anchored(L, 3, i + 1, anchor);
    ts[i] = gsL_testtensor(L, -1);
    if (!ts[i]) return luaL_error(L, "torch.save: '%s' is not a tensor", names[i]);
    lua_pop(L, 1);
  }
  /* metadata: copy the pairs into two arrays first (strings only) */
  lua_newtable(L);
  int keys_idx = lua_gettop(L), nmeta = 0;
  lua_newtable(L);
  int vals_idx = lua_gettop(L);
  if (!lua_isnoneornil(L, 4)) {
    luaL_checktype(L, 4, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 4)) {
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
        return luaL_error(L, "torch.save: metadata keys and values must be strings, got %s = %s",
                          luaL_typename(L, -2), luaL_typename(L, -1));
      if (nmeta == INT_MAX / 2) return luaL_error(L, "torch.save: too much metadata");
      lua_rawseti(L, vals_idx, ++nmeta);
      lua_pushvalue(L, -1);
      lua_rawseti(L, keys_idx, nmeta);
    }
  }
  const char **keys = string_array(L, keys_idx, nmeta, "metadata key");
  const char **vals = string_array(L, vals_idx, nmeta, "metadata value");
  /* gsL_raise and gsL_check settle the sync debug mode's note of the copy
   * to the host (a refusal in 'error', a warning in 'warn', also when the
   * write then failed), so it never lingers to be blamed on a later op */
  if (gs_st_save(path, (int)n, names, ts, nmeta, keys, vals) != GS_OK) {
    if (gs_sync_warning && gs_get_sync_debug_mode() == 2) return gsL_raise(L);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", gs_last_error());
    if (gs_sync_warning) gsL_sync_warn(L);
    return luaL_error(L, "torch.save: %s", msg);
  }
  gsL_check(L, GS_OK);
  return 0;
}

/* torch._save_text(path, text): the shell's files (--notebook --md,
 * --check --update) saved as torch.save saves, gs_file.h. Returns true,
 * or nil and the message. */
static int l_save_text(lua_State *L) {
  size_t plen, n;
  const char *path = luaL_checklstring(L, 1, &plen);
  const char *text = luaL_checklstring(L, 2, &n);
  if (strlen(path) != plen) {
    lua_pushnil(L);
    lua_pushstring(L, "cannot save: the path contains a NUL byte");
    return 2;
  }
  if (gs_save_file(path, text, n) != GS_OK) {
    lua_pushnil(L);
    lua_pushstring(L, gs_last_error());
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* torch._read_text(path): a text file the shell runs or checks (--check,
 * --notebook), read whole. Only a regular file of at most 256 MiB: a FIFO
 * would block and /dev/zero never end (torch.load refuses them too).
 * Returns the text, or nil and the message. */
static int l_read_text(lua_State *L) {
  size_t plen;
  const char *path = luaL_checklstring(L, 1, &plen);
  struct stat st;
  const char *why = NULL;
  char buf[64];
  if (strlen(path) != plen) why = "the path contains a NUL byte";
  else if (stat(path, &st) != 0) why = strerror(errno);
  else if (!S_ISREG(st.st_mode)) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot read %s: it is %s, not a regular file", path, gs_file_kind(st.st_mode));
    return 2;
  } else if (st.st_size > ((off_t)256 << 20)) {
    snprintf(buf, sizeof buf, "%.1f MiB", (double)st.st_size / (1 << 20));
    lua_pushnil(L);
    lua_pushfstring(L, "cannot read %s: it is %s, more than a document or script can be (256 MiB)", path, buf);
    return 2;
  }
  FILE *f = why ? NULL : fopen(path, "rb");
  if (!why && !f) why = strerror(errno);
  if (why) { /* (the words a script that cannot be opened gets) */
    lua_pushnil(L);
    lua_pushfstring(L, "cannot open %s: %s", path, why);
    return 2;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  size_t n;
  char chunk[16384];
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) luaL_addlstring(&b, chunk, n);
  int failed = ferror(f), err = errno;
  fclose(f);
  if (failed) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot read %s: %s", path, strerror(err));
    return 2;
  }
  luaL_pushresult(&b);
  return 1;
}

static int l_resolve_device(lua_State *L) {
  gs_device d;
  gsL_check(L, gs_device_resolve(gsL_checkdevice(L, 1), &d));
  gsL_pushdevice(L, d);
  return 1;
}

void gsL_open_serialize(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"keys", f_keys}, {"metadata", f_metadata}, {"info", f_info}, {"get", f_get}, {"close", f_close}, {NULL, NULL}};
  if (luaL_newmetatable(L, ST_FILE_MT)) {
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, f_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, f_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, f_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
    {"_save", gsL_serialize_save}, {"_load", gsL_serialize_load}, {"_resolve_device", l_resolve_device},
    {"_save_text", l_save_text}, {"_read_text", l_read_text},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
