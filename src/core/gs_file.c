/* gs_file.c: saving files safely (see gs_file.h for the rules). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/gs_file.h"

#define MAX_LINK_HOPS 40 /* as the kernel's ELOOP limit */

const char *gs_file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

static char *dir_of(const char *path) {
  char *copy = strdup(path);
  if (!copy) return NULL;
  char *d = strdup(dirname(copy));
  free(copy);
  return d;
}

/* The file a save to `path` replaces: symbolic links followed to their
 * final target (which may not exist yet). *st is that file's status and
 * *exists whether it exists. */
static gs_status resolve_target(const char *path, char **out, struct stat *st, bool *exists) {
  char *cur = strdup(path);
  if (!cur) return gs_error_code(GS_ERR_OOM, "out of host memory");
  for (int hops = 0;; hops++) {
    if (lstat(cur, st) != 0) {
      int e = errno;
      if (e == ENOENT) { *exists = false; *out = cur; return GS_OK; }
      free(cur);
      return gs_error("cannot save to '%s': %s", path, strerror(e));
    }
    if (!S_ISLNK(st->st_mode)) { *exists = true; *out = cur; return GS_OK; }
    if (hops == MAX_LINK_HOPS) {
      free(cur);
      return gs_error("cannot save to '%s': too many levels of symbolic links", path);
    }
    char link[PATH_MAX];
    ssize_t n = readlink(cur, link, sizeof link - 1);
    if (n < 0) {
      int e = errno;
      free(cur);
      return gs_error("cannot save to '%s': cannot read the symbolic link: %s", path, strerror(e));
    }
    link[n] = '\0';
    char *next;
    if (link[0] == '/') next = strdup(link);
    else { /* relative to the link's own directory */
      char *d = dir_of(cur);
      next = d && asprintf(&next, "%s/%s", d, link) >= 0 ? next : NULL;
      free(d);
    }
    free(cur);
    if (!next) return gs_error_code(GS_ERR_OOM, "out of host memory");
    cur = next;
  }
}

/* Temporary files are named "<target>.tmp-<pid>-XXXXXX": one whose
 * process no longer exists was left by a save that was killed. */
static void remove_stale_temps(const char *target) {
  char *d = dir_of(target), *copy = strdup(target);
  DIR *dir = d ? opendir(d) : NULL;
  if (dir && copy) {
    const char *base = basename(copy);
    size_t blen = strlen(base);
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
      const char *name = de->d_name;
      if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp-", 5) != 0) continue;
      char *end;
      long pid = strtol(name + blen + 5, &end, 10);
      if (end == name + blen + 5 || *end != '-' || strlen(end + 1) != 6 || pid <= 0 || pid == (long)getpid()) continue;
      if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* its process may still be writing */
      struct stat st;
      if (fstatat(dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
        unlinkat(dirfd(dir), name, 0);
    }
  }
  if (dir) closedir(dir);
  free(d);
  free(copy);
}

gs_status gs_atomic_io_error(const gs_atomic_file *f, int e, const char *stage) {
  const char *hint = e == ENOSPC || e == EDQUOT ? " (the disk is full)"
                   : e == EACCES || e == EPERM || e == EROFS ? " (no permission to write there)" : "";
  return gs_error("cannot save to '%s': %s%s while %s; any existing file at that path was left unchanged", f->path,
                  strerror(e), hint, stage);
}

static void atomic_free(gs_atomic_file *f) {
  free(f->target);
  free(f->tmp);
  f->target = f->tmp = NULL;
  f->fd = -1;
}

gs_status gs_atomic_open(const char *path, gs_atomic_file *f) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  f->path = path;
  if (!path || !*path) return gs_error("cannot save: the path is empty");
  struct stat st;
  bool exists;
  GS_TRY(resolve_target(path, &f->target, &st, &exists));
  if (exists && !S_ISREG(st.st_mode)) {
    gs_status s = strcmp(f->target, path) == 0
      ? gs_error("cannot save to '%s': it is %s, not a regular file; nothing was written", path, gs_file_kind(st.st_mode))
      : gs_error("cannot save to '%s': it links to '%s', which is %s, not a regular file; nothing was written", path,
                 f->target, gs_file_kind(st.st_mode));
    atomic_free(f);
    return s;
  }
  remove_stale_temps(f->target);
  if (asprintf(&f->tmp, "%s.tmp-%ld-XXXXXX", f->target, (long)getpid()) < 0) {
    f->tmp = NULL;
    atomic_free(f);
    return gs_error_code(GS_ERR_OOM, "out of host memory");
  }
  f->fd = mkostemp(f->tmp, O_CLOEXEC);
  if (f->fd < 0) {
    gs_status s = gs_atomic_io_error(f, errno, "creating a temporary file in its directory");
    atomic_free(f);
    return s;
  }
  /* mkstemp makes 0600 files: keep the replaced file's mode, or give a new
   * one the usual 0666 & ~umask */
  mode_t mode;
  if (exists) mode = st.st_mode & 07777;
  else { mode_t mask = umask(022); umask(mask); mode = 0666 & ~mask; }
  if (fchmod(f->fd, mode) != 0) {
    gs_status s = gs_atomic_io_error(f, errno, "setting permissions");
    gs_atomic_abort(f);
    return s;
  }
  return GS_OK;
}

void gs_atomic_abort(gs_atomic_file *f) {
  if (f->fd >= 0) close(f->fd);
  if (f->tmp) unlink(f->tmp);
  atomic_free(f);
}

/* The directory entry of the rename is made durable too (best effort). */
static void sync_dir(const char *path) {
  char *d = dir_of(path);
  int fd = d ? open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (fd >= 0) { fsync(fd); close(fd); }
  free(d);
}

gs_status gs_atomic_commit(gs_atomic_file *f) {
  gs_status s = GS_OK;
  if (fsync(f->fd) != 0) s = gs_atomic_io_error(f, errno, "flushing to disk (fsync)");
  int e = close(f->fd);
  f->fd = -1;
  if (s == GS_OK && e != 0) s = gs_atomic_io_error(f, errno, "closing the temporary file");
  if (s == GS_OK && rename(f->tmp, f->target) != 0) s = gs_atomic_io_error(f, errno, "renaming the temporary file into place");
  if (s != GS_OK) { gs_atomic_abort(f); return s; }
  sync_dir(f->target);
  atomic_free(f);
  return GS_OK;
}

int gs_write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(fd, c, n > (1u << 30) ? (1u << 30) : n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    if (w == 0) return ENOSPC;
    c += w, n -= (size_t)w;
  }
  return 0;
}

gs_status gs_save_file(const char *path, const void *data, size_t n) {
  gs_atomic_file f;
  GS_TRY(gs_atomic_open(path, &f));
  int e = gs_write_all(f.fd, data, n);
  if (e) {
    gs_status s = gs_atomic_io_error(&f, e, "writing");
    gs_atomic_abort(&f);
    return s;
  }
  return gs_atomic_commit(&f);
}
