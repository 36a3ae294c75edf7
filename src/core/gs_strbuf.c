/* gs_strbuf.c: the growable string of gs_strbuf.h. */
#include <stdlib.h>
#include <string.h>
#include "core/gs_strbuf.h"

void gs_sb_putn(gs_strbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->s, cap);
    if (!p) { b->oom = true; return; }
    b->s = p;
    b->cap = cap;
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

void gs_sb_puts(gs_strbuf *b, const char *s) { gs_sb_putn(b, s, strlen(s)); }

void gs_sb_repeat(gs_strbuf *b, char c, int64_t n) {
  char chunk[64];
  memset(chunk, c, sizeof chunk);
  while (n > 0) {
    size_t k = n > (int64_t)sizeof chunk ? sizeof chunk : (size_t)n;
    gs_sb_putn(b, chunk, k);
    n -= (int64_t)k;
  }
}
