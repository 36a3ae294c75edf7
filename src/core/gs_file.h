/* gs_file.h: saving files safely. Every writer of user files (torch.save,
 * `--notebook --md`, `--check --update`) goes through gs_atomic_*:
 *   - a symbolic link is followed, and its final target is replaced;
 *   - anything at the path that is not a regular file (a device, a FIFO, a
 *     directory, a socket) is refused, never replaced;
 *   - the data goes to a temporary file beside the target, is flushed with
 *     fsync and renamed over it, so an error or a crash never leaves a
 *     half-written file in place of a good one;
 *   - temporary files left by a save that was killed (their process is
 *     gone) are removed by the next save to the same path. */
#ifndef GS_FILE_H
#define GS_FILE_H

#include <stddef.h>
#include <sys/types.h>
#include "core/gs_common.h"

/* "a directory", "a FIFO (named pipe)", "a character device", ... */
const char *gs_file_kind(mode_t mode);

typedef struct {
  char *target; /* the file that will be replaced (symlinks resolved) */
  char *tmp;    /* the temporary file being written */
  const char *path; /* as the user gave it, for messages */
  int fd;
} gs_atomic_file;

/* Resolves and checks the destination and creates the temporary file.
 * On failure nothing is left behind and f needs no abort. */
gs_status gs_atomic_open(const char *path, gs_atomic_file *f);
/* An error while writing, with the file's path and the stage in it. */
gs_status gs_atomic_io_error(const gs_atomic_file *f, int err, const char *stage);
/* Flushes, renames into place and frees f; on failure the temporary file
 * is removed and the target is left as it was. */
gs_status gs_atomic_commit(gs_atomic_file *f);
/* Removes the temporary file and frees f (after a failed write). */
void gs_atomic_abort(gs_atomic_file *f);

/* write(2) until done: 0 or the errno. */
int gs_write_all(int fd, const void *p, size_t n);

/* The whole file at once: gs_atomic_open, write, commit. */
gs_status gs_save_file(const char *path, const void *data, size_t n);

#endif
