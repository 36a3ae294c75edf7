/* gs_strbuf.h: a growable NUL-terminated string for text the engine
 * builds (tensor printing, safetensors headers). After a failed
 * allocation it only records the failure (oom), so a builder runs to the
 * end and checks once. Free s with free(). */
#ifndef GS_STRBUF_H
#define GS_STRBUF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  char *s;
  size_t len, cap;
  bool oom;
} gs_strbuf;

void gs_sb_putn(gs_strbuf *b, const char *s, size_t n);
void gs_sb_puts(gs_strbuf *b, const char *s);
/* n copies of c (nothing when n <= 0). */
void gs_sb_repeat(gs_strbuf *b, char c, int64_t n);

#endif
