/* gs_dlopen.c: see gs_dlopen.h for where CUDA libraries are looked for. */
#define _GNU_SOURCE /* dladdr, dlinfo, RTLD_NOLOAD */
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/gs_dlopen.h"

#define MAX_LOADED 16
#define MAX_DIRS 48

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct { char label[32]; char path[PATH_MAX]; } loaded[MAX_LOADED];
static int nloaded;

/* Copies src into dst (len bytes), cut short if it must be. */
static void copy_str(char *dst, size_t len, const char *src) {
  size_t k = strlen(src);
  if (k >= len) k = len - 1;
  memcpy(dst, src, k);
  dst[k] = '\0';
}

/* ---- the list of loaded libraries ---- */

static void note(const char *label, const char *path) {
  pthread_mutex_lock(&lock);
  int i = 0;
  while (i < nloaded && strcmp(loaded[i].label, label) != 0) i++;
  if (i < MAX_LOADED) {
    snprintf(loaded[i].label, sizeof loaded[i].label, "%s", label);
    snprintf(loaded[i].path, sizeof loaded[i].path, "%s", path);
    if (i == nloaded) nloaded++;
  }
  pthread_mutex_unlock(&lock);
}

/* The file a handle was loaded from (the loader's link map knows it). */
static void note_handle(const char *label, void *handle, const char *fallback) {
  struct link_map *map = NULL;
  const char *path = fallback;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) path = map->l_name;
  note(label, path);
}

void gs_cuda_note_library(const char *label, void *handle) {
  if (handle) note_handle(label, handle, "?");
}

int gs_cuda_loaded_library(int i, const char **label, const char **path) {
  pthread_mutex_lock(&lock);
  int ok = i >= 0 && i < nloaded;
  if (ok) { *label = loaded[i].label; *path = loaded[i].path; }
  pthread_mutex_unlock(&lock);
  return ok;
}

/* ---- the directories to search ---- */

typedef struct { char *dir[MAX_DIRS]; int n; } dir_list;

static void add_dir(dir_list *l, const char *d) {
  if (!d || !*d || l->n == MAX_DIRS) return;
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->dir[i], d) == 0) return;
  char *c = strdup(d);
  if (c) l->dir[l->n++] = c;
}

static void free_dirs(dir_list *l) {
  for (int i = 0; i < l->n; i++) free(l->dir[i]);
  l->n = 0;
}

/* Adds the directory part of file, and its lib/ subdirectory. */
static void add_dir_of(dir_list *l, const char *file) {
  char d[PATH_MAX];
  const char *slash = file ? strrchr(file, '/') : NULL;
  if (!slash || (size_t)(slash - file) >= sizeof d - 8) return;
  memcpy(d, file, (size_t)(slash - file));
  d[slash - file] = '\0';
  if (!*d) strcpy(d, "/");
  add_dir(l, d);
  strcat(d, "/lib");
  add_dir(l, d);
}

/* Step 1: where this code was loaded from (torch.so, or the gshell
 * executable), and the running executable. */
static void add_binary_dirs(dir_list *l) {
  Dl_info info;
  if (dladdr((void *)gs_cuda_dlopen, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
    char real[PATH_MAX];
    add_dir_of(l, realpath(info.dli_fname, real) ? real : info.dli_fname);
  }
  char exe[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k > 0) {
    exe[k] = '\0';
    add_dir_of(l, exe);
  }
}

/* Every match of pattern (a glob) that is a directory. */
static void add_glob(dir_list *l, const char *pattern) {
  glob_t g;
  if (glob(pattern, GLOB_ONLYDIR | GLOB_NOSORT, NULL, &g) != 0) return;
  for (size_t i = 0; i < g.gl_pathc; i++) add_dir(l, g.gl_pathv[i]);
  globfree(&g);
}

/* Python installations put wheels in PREFIX/lib/python3.X/site-packages
 * (venvs, pyenv, conda, /usr/local builds) or .../dist-packages (Debian). */
static void add_prefix(dir_list *l, const char *prefix) {
  static const char *const tails[] = {"/lib/python3*/site-packages", "/lib/python3*/dist-packages",
                                      "/local/lib/python3*/dist-packages", "/lib/python3/dist-packages"};
  char pat[PATH_MAX];
  for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
    if (snprintf(pat, sizeof pat, "%s%s", prefix, tails[i]) < (int)sizeof pat) add_glob(l, pat);
  }
}

/* The prefix of an executable path: /opt/venv/bin/python3 -> /opt/venv. */
static void add_prefix_of_exe(dir_list *l, const char *exe) {
  char d[PATH_MAX];
  snprintf(d, sizeof d, "%s", exe);
  char *s = strrchr(d, '/');
  if (!s) return;
  *s = '\0';                      /* .../bin */
  s = strrchr(d, '/');
  if (!s) return;
  *s = '\0';                      /* the prefix */
  add_prefix(l, *d ? d : "/");
}

/* Step 4's site-packages: the python3 found first on PATH (as typed, then
 * with symlinks resolved, for a venv's python3 linking to its base), a
 * virtualenv, the user's ~/.local, and the system's directories. */
static void add_site_packages(dir_list *l) {
  const char *path = getenv("PATH");
  if (path) {
    const char *p = path;
    while (*p) {
      const char *e = strchr(p, ':');
      size_t n = e ? (size_t)(e - p) : strlen(p);
      char exe[PATH_MAX];
      if (n > 0 && n + 9 < sizeof exe) {
        memcpy(exe, p, n);
        strcpy(exe + n, "/python3");
        if (access(exe, X_OK) == 0) {
          add_prefix_of_exe(l, exe);
          char real[PATH_MAX];
          if (realpath(exe, real)) add_prefix_of_exe(l, real);
          break;
        }
      }
      p += n;
      if (*p == ':') p++;
    }
  }
  const char *venv = getenv("VIRTUAL_ENV"), *conda = getenv("CONDA_PREFIX"), *home = getenv("HOME");
  if (venv && *venv) add_prefix(l, venv);
  if (conda && *conda) add_prefix(l, conda);
  if (home && *home) {
    char d[PATH_MAX];
    if (snprintf(d, sizeof d, "%s/.local", home) < (int)sizeof d) add_prefix(l, d);
  }
  add_prefix(l, "/usr/local");
  add_prefix(l, "/usr");
}

/* The library directories inside each site-packages. */
static void wheel_lib_dirs(const char *wheel_dir, dir_list *out) {
  dir_list sites = {0};
  add_site_packages(&sites);
  for (int i = 0; i < sites.n; i++) {
    char d[PATH_MAX];
    if (snprintf(d, sizeof d, "%s/nvidia/cu13/lib", sites.dir[i]) < (int)sizeof d) add_glob(out, d);
    if (wheel_dir && snprintf(d, sizeof d, "%s/nvidia/%s/lib", sites.dir[i], wheel_dir) < (int)sizeof d)
      add_glob(out, d);
  }
  free_dirs(&sites);
}

void gs_cuda_wheel_dirs(char *buf, size_t len) {
  dir_list sites = {0};
  add_site_packages(&sites);
  size_t k = 0;
  buf[0] = '\0';
  for (int i = 0; i < sites.n && k < len; i++)
    k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ":" : "", sites.dir[i]);
  free_dirs(&sites);
}

/* ---- opening ---- */

/* Opens dir/name (dir NULL: through the loader's search), its deps first
 * from the same directory. */
static void *open_in(const char *dir, const char *name, const char *const *deps, char *why, size_t whylen) {
  char path[PATH_MAX];
  if (!dir) return dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path || access(path, R_OK) != 0) return NULL;
  for (int i = 0; deps && deps[i]; i++) {
    char dep[PATH_MAX];
    if (snprintf(dep, sizeof dep, "%s/%s", dir, deps[i]) >= (int)sizeof dep) continue;
    if (access(dep, R_OK) == 0) (void)dlopen(dep, RTLD_NOW | RTLD_GLOBAL); /* stays open for the library */
  }
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h && why && !*why) { /* the file is there but will not load: the most useful thing to report */
    const char *e = dlerror();
    copy_str(why, whylen, e ? e : path);
  }
  return h;
}

static void *try_dirs(const dir_list *l, const gs_cuda_lib_spec *spec, char *why, size_t whylen) {
  for (int d = 0; d < l->n; d++)
    for (int i = 0; spec->sonames[i]; i++) {
      void *h = open_in(l->dir[d], spec->sonames[i], spec->deps, why, whylen);
      if (h) return h;
    }
  return NULL;
}

void *gs_cuda_dlopen(const gs_cuda_lib_spec *spec, char *err, size_t errlen) {
  void *h = NULL;
  char loader_why[512] = "", found_why[512] = "";
  dir_list l = {0};
  /* 1. next to the binary */
  add_binary_dirs(&l);
  h = try_dirs(&l, spec, found_why, sizeof found_why);
  free_dirs(&l);
  /* 2. the loader's own search path */
  for (int i = 0; !h && spec->sonames[i]; i++) {
    h = open_in(NULL, spec->sonames[i], NULL, NULL, 0);
    if (!h && i == 0) { /* the loader's reason for the preferred name is the informative one */
      const char *why = dlerror();
      snprintf(loader_why, sizeof loader_why, "%s", why ? why : spec->sonames[0]);
    }
  }
  /* 3. CUDA toolkit directories */
  if (!h) {
    const char *home = getenv("CUDA_HOME");
    char d[PATH_MAX];
    if (home && *home && snprintf(d, sizeof d, "%s/lib64", home) < (int)sizeof d) add_dir(&l, d);
    add_dir(&l, "/usr/local/cuda/lib64");
    h = try_dirs(&l, spec, found_why, sizeof found_why);
    free_dirs(&l);
  }
  /* 4. pip wheels */
  if (!h) {
    wheel_lib_dirs(spec->wheel_dir, &l);
    h = try_dirs(&l, spec, found_why, sizeof found_why);
    free_dirs(&l);
  }
  if (h) {
    note_handle(spec->label, h, spec->sonames[0]);
    return h;
  }
  if (err && errlen) {
    char sites[1024];
    gs_cuda_wheel_dirs(sites, sizeof sites);
    snprintf(err, errlen,
             "%s could not be loaded (%s%s%s); also looked next to the gshell binary, in $CUDA_HOME/lib64, "
             "/usr/local/cuda/lib64 and under python3's site-packages (%s) in nvidia/cu13/lib and nvidia/%s/lib: "
             "install the CUDA toolkit or NVIDIA's pip wheel that holds it, or add the library's directory to "
             "LD_LIBRARY_PATH",
             spec->sonames[0], found_why, *found_why ? "; " : "", loader_why, *sites ? sites : "none found", spec->wheel_dir ? spec->wheel_dir : "*");
  }
  return NULL;
}
