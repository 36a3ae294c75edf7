/* gs_alloc_host.h: the caching host allocator (64-byte aligned blocks). */
#ifndef GS_ALLOC_HOST_H
#define GS_ALLOC_HOST_H
#include <stddef.h>
void *gs_host_alloc(size_t n);          /* NULL when out of memory */
void gs_host_free(void *p, size_t n);   /* n: the size asked for */
void gs_host_empty_cache(void);
/* Caps the bytes kept cached (0: the default, 4 GiB or an eighth of the
 * machine's memory if less), freeing what is above the new cap; returns
 * the previous cap. */
size_t gs_host_set_cache_limit(size_t limit);
size_t gs_host_bytes_in_use(void);
size_t gs_host_bytes_cached(void);
#endif
