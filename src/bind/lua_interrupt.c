/* lua_interrupt.c: test hooks standing in for Ctrl-C, which only the shell
 * turns into gs_interrupted. torch._interrupt_in(s) sets the flag s seconds
 * from now from another thread, as the signal handler would in the middle
 * of an op (0: now); torch._interrupt_pending() reads it. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "bind/lua_gs.h"

static void *interrupt_later(void *arg) {
  double s = *(double *)arg;
  free(arg);
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {}
  gs_interrupted = 1;
  return NULL;
}

static int l_interrupt_in(lua_State *L) {
  double s = luaL_checknumber(L, 1);
  if (!(s > 0)) { gs_interrupted = 1; return 0; }
  double *arg = malloc(sizeof *arg);
  if (!arg) return luaL_error(L, "out of memory");
  *arg = s;
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&t, &attr, interrupt_later, arg);
  pthread_attr_destroy(&attr);
  if (rc != 0) { free(arg); return luaL_error(L, "_interrupt_in: cannot start a thread"); }
  return 0;
}

static int l_interrupt_pending(lua_State *L) {
  lua_pushboolean(L, gs_interrupted != 0);
  return 1;
}

void gsL_open_interrupt(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"_interrupt_in", l_interrupt_in}, {"_interrupt_pending", l_interrupt_pending}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
