/* gs_common.h: what every engine file needs: status codes, the error slot,
 * limits. The engine never calls luaL_error or exit(): it returns GS_ERR and
 * leaves a message in a thread-local slot that the binding layer raises. */
#ifndef GS_COMMON_H
#define GS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_MAX_DIMS 16
#define GS_VERSION "0.1.0"

typedef enum { GS_OK = 0, GS_ERR = 1, GS_ERR_OOM = 2 } gs_status;

/* Records a printf-style message and returns GS_ERR (or `code`). */
gs_status gs_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
gs_status gs_error_code(gs_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *gs_last_error(void);

/* Interrupt flag polled by long C loops (set by the shell's SIGINT handler). */
extern volatile int gs_interrupted;

#define GS_TRY(expr) do { gs_status _s = (expr); if (_s != GS_OK) return _s; } while (0)

#endif
