/* gs_dl.c: see gs_dl.h. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "gs_dl.h"

void *gs_dlopen_first(const char *const *names, size_t count, int flags, char *tried, size_t n) {
  if (n) tried[0] = '\0';
  for (size_t i = 0; i < count; i++) {
    if (!names[i]) continue;
    void *h = dlopen(names[i], flags);
    if (h) return h;
    const char *why = dlerror();
    size_t k = strlen(tried);
    if (k + 1 < n) snprintf(tried + k, n - k, "%s%s", k ? "; " : "", why ? why : names[i]);
  }
  return NULL;
}
