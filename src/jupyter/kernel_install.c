/* kernel_install.c: `gshell --install-kernel [--user | --prefix P]` writes
 * the kernelspec "gshell" (kernel.json and a logo) where Jupyter looks:
 *   --user      $JUPYTER_DATA_DIR, else $XDG_DATA_HOME/jupyter, else
 *               ~/.local/share/jupyter
 *   --prefix P  P/share/jupyter (a virtual environment, a conda prefix)
 *   (neither)   /usr/local/share/jupyter, as `jupyter kernelspec install`
 * under kernels/gshell/. argv is this gshell's absolute path, so the
 * kernel runs the build that installed it. GSHELL_SIM_GPUS, when set at
 * install time, goes into the spec's env (a notebook with simulated GPUs). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jupyter/kernel.h"
#include "shell/repl.h"

/* A plain logo: the prompt's name on a dark tile. */
static const char logo_svg[] =
  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"64\" height=\"64\" viewBox=\"0 0 64 64\">\n"
  "  <rect width=\"64\" height=\"64\" rx=\"10\" fill=\"#1f2a44\"/>\n"
  "  <text x=\"32\" y=\"30\" font-family=\"monospace\" font-size=\"22\" font-weight=\"bold\"\n"
  "        fill=\"#7fd1ff\" text-anchor=\"middle\">gs&gt;</text>\n"
  "  <text x=\"32\" y=\"52\" font-family=\"monospace\" font-size=\"12\" fill=\"#ffffff\"\n"
  "        text-anchor=\"middle\">torch</text>\n"
  "</svg>\n";

/* mkdir -p; returns 0 or -1 with errno. */
static int make_dirs(const char *path) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
  return 0;
}

static int write_file(const char *dir, const char *name, const char *text) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "%s: cannot write %s: %s\n", gsR_progname, path, strerror(errno));
    return -1;
  }
  return 0;
}

/* The Jupyter data directory for the mode, in out. Returns 0 or -1. */
static int data_dir(char mode, const char *prefix, char *out, size_t n) {
  const char *home = getenv("HOME");
  const char *jd = getenv("JUPYTER_DATA_DIR"), *xdg = getenv("XDG_DATA_HOME");
  int w;
  if (mode == 'p') w = snprintf(out, n, "%s/share/jupyter", prefix);
  else if (mode == 's') w = snprintf(out, n, "/usr/local/share/jupyter");
  else if (jd && *jd) w = snprintf(out, n, "%s", jd);
  else if (xdg && *xdg) w = snprintf(out, n, "%s/jupyter", xdg);
  else if (home && *home) w = snprintf(out, n, "%s/.local/share/jupyter", home);
  else {
    fprintf(stderr, "%s: --install-kernel --user: HOME is not set (set JUPYTER_DATA_DIR or use --prefix)\n",
            gsR_progname);
    return -1;
  }
  if (w < 0 || (size_t)w >= n) {
    fprintf(stderr, "%s: --install-kernel: the directory name is too long\n", gsR_progname);
    return -1;
  }
  return 0;
}

int gsK_install(const char *argv0, char mode, const char *prefix) {
  char exe[PATH_MAX], dir[PATH_MAX - 32], kdir[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
  } else if (realpath(argv0, exe) == NULL) {
    fprintf(stderr, "%s: --install-kernel: cannot find this program's path: %s\n", gsR_progname, strerror(errno));
    return 1;
  }
  if (mode == 'p' && (prefix == NULL || *prefix == '\0')) {
    fprintf(stderr, "%s: --prefix wants a directory\n", gsR_progname);
    return 1;
  }
  if (data_dir(mode, prefix, dir, sizeof dir) != 0) return 1;
  snprintf(kdir, sizeof kdir, "%s/kernels/gshell", dir);
  if (make_dirs(kdir) != 0) {
    fprintf(stderr, "%s: cannot create %s: %s%s\n", gsR_progname, kdir, strerror(errno),
            errno == EACCES && mode == 's' ? " (try --user, or --prefix DIR)" : "");
    return 1;
  }
  const char *sim = getenv("GSHELL_SIM_GPUS");
  int has_sim = sim && *sim && strcmp(sim, "0") != 0;
  char display[96];
  if (has_sim) snprintf(display, sizeof display, "gshell (Lua + torch, %s simulated GPUs)", sim);
  else snprintf(display, sizeof display, "gshell (Lua + torch)");
  json_t *spec = json_pack("{s:[s,s,s], s:s, s:s, s:s, s:{}, s:{s:b}}", "argv", exe, "--kernel",
                           "{connection_file}", "display_name", display, "language", "lua",
                           "interrupt_mode", "signal", "env", "metadata", "debugger", 0);
  if (spec == NULL) {
    fprintf(stderr, "%s: --install-kernel: this program's path is not valid UTF-8: %s\n", gsR_progname, exe);
    return 1;
  }
  if (has_sim) json_object_set_new(json_object_get(spec, "env"), "GSHELL_SIM_GPUS", json_string(sim));
  char *text = json_dumps(spec, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  json_decref(spec);
  if (text == NULL) return 1;
  size_t tl = strlen(text);
  char *withnl = malloc(tl + 2);
  int rc = 1;
  if (withnl) {
    memcpy(withnl, text, tl);
    memcpy(withnl + tl, "\n", 2);
    if (write_file(kdir, "kernel.json", withnl) == 0 && write_file(kdir, "logo-svg.svg", logo_svg) == 0) {
      printf("installed the Jupyter kernelspec gshell in %s\n", kdir);
      rc = 0;
    }
  }
  free(withnl);
  free(text);
  return rc;
}
