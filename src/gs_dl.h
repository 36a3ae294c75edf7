/* gs_dl.h: opening a shared library that gshell uses only when present
 * (NCCL, Open MPI): the first of several names that loads, with the
 * loader's reasons for the ones that did not. */
#ifndef GS_DL_H
#define GS_DL_H

#include <stddef.h>

/* dlopen(names[i], flags) for i = 0.. until one loads (NULL entries are
 * skipped). Returns the handle or NULL; `tried` (size n) receives the
 * loader's messages, "; "-separated. */
void *gs_dlopen_first(const char *const *names, size_t count, int flags, char *tried, size_t n);

#endif
