/* lua_alloc.c: a pool in front of the Lua state's allocator for small
 * blocks. Every op makes one tensor userdata, and the collector frees
 * them thousands at a time, which overflows glibc's per-thread cache:
 * malloc and free were ~20% of a tiny op. Blocks are kept on free lists
 * by their exact size, and every pooled block is an ordinary block of the
 * previous allocator, so blocks move between the two freely. */
#include <stdbool.h>
#include <stdlib.h>
#include "bind/lua_gs.h"

#define POOL_MAX_SIZE 128          /* bytes: tensor userdata and small tables */
#define POOL_MAX_BLOCKS 65536      /* per size, so an idle pool stays small */

typedef struct block { struct block *next; } block;

typedef struct {
  lua_Alloc base;
  void *base_ud;
  bool closing;                    /* lua_close is freeing everything */
  block *free[POOL_MAX_SIZE + 1];
  int count[POOL_MAX_SIZE + 1];
} pool;

/* The first state's pool is static: it outlives the state, and leak
 * checkers can see it. */
static pool first_pool;

static void *pooled_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  pool *p = ud;
  if (nsize == 0) { /* free: keep exact small sizes */
    if (ptr && !p->closing && osize >= sizeof(block) && osize <= POOL_MAX_SIZE && p->count[osize] < POOL_MAX_BLOCKS) {
      block *b = ptr;
      b->next = p->free[osize];
      p->free[osize] = b;
      p->count[osize]++;
      return NULL;
    }
    return p->base(p->base_ud, ptr, osize, 0);
  }
  if (ptr == NULL && nsize >= sizeof(block) && nsize <= POOL_MAX_SIZE && p->free[nsize]) {
    block *b = p->free[nsize];
    p->free[nsize] = b->next;
    p->count[nsize]--;
    return b;
  }
  return p->base(p->base_ud, ptr, osize, nsize);
}

/* Finalizer of a sentinel kept in the registry, so it runs in lua_close
 * before the state's objects are freed: from then on frees go straight
 * to the base allocator, and the pooled blocks are returned. */
static int drain(lua_State *L) {
  void *ud;
  if (lua_getallocf(L, &ud) != pooled_alloc) return 0;
  pool *p = ud;
  p->closing = true;
  for (int s = 0; s <= POOL_MAX_SIZE; s++) {
    while (p->free[s]) {
      block *b = p->free[s];
      p->free[s] = b->next;
      p->base(p->base_ud, b, (size_t)s, 0);
    }
    p->count[s] = 0;
  }
  return 0;
}

/* Installs the pool once per state (a state that already has it is left
 * alone). */
void gsL_install_allocator(lua_State *L) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  /* the sanitizer must see every free: a pooled block hides use after free */
  (void)pooled_alloc;
  return;
#endif
  void *ud;
  lua_Alloc cur = lua_getallocf(L, &ud);
  if (cur == pooled_alloc) return;
  pool *p = first_pool.base ? calloc(1, sizeof *p) : &first_pool;
  if (!p) return; /* the pool is an optimisation: go on without it */
  p->base = cur;
  p->base_ud = ud;
  lua_setallocf(L, pooled_alloc, p);
  lua_newuserdatauv(L, 1, 0);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, drain);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, "gshell.allocator_pool");
}
