/* lua_picture.c: the C helpers of the pictures (lua/torch/display.lua,
 * lua/torch/d2l/):
 *   torch._png_encode(pixels, width, height, channels) -> PNG bytes
 *     pixels: a string of width*height*channels bytes, rows top to bottom
 *   torch._isatty(fd) -> boolean (the terminal view or one line per update)
 *   torch._term_size(fd) -> columns, rows of the terminal on fd, or nil */
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "bind/lua_gs.h"
#include "io/gs_png.h"

static int l_png_encode(lua_State *L) {
  size_t len;
  const char *px = luaL_checklstring(L, 1, &len);
  lua_Integer w = luaL_checkinteger(L, 2), h = luaL_checkinteger(L, 3), c = luaL_checkinteger(L, 4);
  if (w < 1 || h < 1 || w > GS_PNG_MAX_SIDE || h > GS_PNG_MAX_SIDE || c < 1 || c > 4)
    return luaL_error(L, "PNG: size %d x %d x %d (width x height x channels) is not a picture: expected "
                      "1..%d pixels a side and 1, 3 or 4 channels", (int)w, (int)h, (int)c, GS_PNG_MAX_SIDE);
  if ((lua_Integer)len != w * h * c)
    return luaL_error(L, "PNG: %d x %d x %d needs %d bytes of pixels, got %d", (int)w, (int)h, (int)c,
                      (int)(w * h * c), (int)len);
  uint8_t *out;
  size_t n;
  gsL_check(L, gs_png_encode((const uint8_t *)px, (int)w, (int)h, (int)c, &out, &n));
  lua_pushlstring(L, (const char *)out, n);
  free(out);
  return 1;
}

static int l_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
  return 1;
}

static int l_term_size(lua_State *L) {
  struct winsize ws;
  if (ioctl((int)luaL_checkinteger(L, 1), TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushinteger(L, ws.ws_col);
  lua_pushinteger(L, ws.ws_row);
  return 2;
}

void gsL_open_picture(lua_State *L) {
  static const luaL_Reg fns[] = {{"_png_encode", l_png_encode}, {"_isatty", l_isatty},
                                 {"_term_size", l_term_size}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
