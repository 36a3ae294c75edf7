/* main.c: the gshell program: command line, the Lua state with torch and
 * the shell's globals, then a script, the prompt, a notebook or a doc check.
 *
 *   gshell [options] [script [args]]
 *
 * Options are read in order up to the script name, as lua.c does; -e and -l
 * run in the order given. The arg table follows lua.c: arg[0] is the script,
 * arg[1..] its arguments, negative indices the interpreter and options. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>

#include "core/gs_common.h"
#include "core/gs_device.h"
#include "core/gs_gpu_model.h"
#include "distributed/gs_dist.h"
#include "bind/lua_gs.h"
#include "shell/repl.h"
#include "jupyter/kernel.h"

/* The Jupyter kernel (src/jupyter/kernel.h), referenced weakly: a build
 * without it (the GPU bundle, linked without ZeroMQ) says so instead of
 * failing to link. */
#pragma weak gsK_run
#pragma weak gsK_install

static const char usage_text[] =
  "usage: %s [options] [script [args]]\n"
  "  script         run a Lua file with arg set; '-' runs stdin\n"
  "  -e code        run code (may be repeated)\n"
  "  -l mod         require mod into the global of that name\n"
  "  -i             enter the prompt after running the script/-e\n"
  "  --sim-gpus N   simulate N CUDA devices in host memory (GSHELL_SIM_MEM caps each)\n"
  "  --gpu-model M  the GPU each simulated device models: t4, v100 (default), a100,\n"
  "                 h100, h200 or host, or one per device: v100,a100 (GSHELL_GPU_MODEL)\n"
  "  --notebook F   run F cell by cell (cells start at '-- %%%%' lines), Jupyter-style\n"
  "  --md OUT       with --notebook: also write the session as Markdown to OUT\n"
  "  --check DOC    run DOC's ```lua blocks, compare with their ```output blocks\n"
  "  --update       with --check: rewrite the output blocks that differ\n"
  "  --lesson [N]   the guided lesson N at the prompt (progress is kept); alone: list them\n"
  "  --restart      with --lesson: start the lesson from its first step\n"
  "  --repl-stdin   the prompt, reading stdin without readline, prompts or banner\n"
  "  --trace OUT    profile the whole run; write a Chrome trace (OUT.json) or,\n"
  "                 for a name ending in .svg, a timeline (docs/profiling.md)\n"
  "  --kernel FILE  run as a Jupyter kernel with connection file FILE\n"
  "  --install-kernel [--user | --prefix P]\n"
  "                 write the Jupyter kernelspec 'gshell' (system, user or prefix P)\n"
  "  -v, --version  print the version\n"
  "  -h, --help     print this help\n"
  "  --             stop handling options\n"
  "With no script and no -e: the prompt on a terminal, else stdin as a script.\n"
  "History: $GSHELL_HISTORY or ~/.gshell_history. Docs: docs/shell.md\n";

typedef struct {
  int interactive, version, help, repl_stdin, update, has_e, install_kernel, user, lesson, restart;
  int script;          /* argv index of the script, or 0 */
  const char *notebook, *md, *check, *sim_gpus, *gpu_model, *kernel, *prefix, *lesson_name, *trace;
} options;

static void usage_error(const char *msg, const char *arg) {
  fprintf(stderr, "%s: %s%s%s\n", gsR_progname, msg, arg ? " " : "", arg ? arg : "");
  fprintf(stderr, "usage: %s [options] [script [args]]   (--help for more)\n", gsR_progname);
}

/* The value of an option: "--opt=value" or the next argument. */
static const char *opt_value(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=') return argv[*i] + n + 1;
  if (*i + 1 >= argc) return NULL;
  return argv[++*i];
}

static int is_opt(const char *arg, const char *name) {
  size_t n = strlen(name);
  return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* Returns 0 on success, -1 on a usage error. */
static int parse_args(int argc, char **argv, options *o) {
  memset(o, 0, sizeof *o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0) { o->script = i; return 0; }
    if (strcmp(a, "--") == 0) { if (i + 1 < argc) o->script = i + 1; return 0; }
    if (strcmp(a, "-i") == 0) o->interactive = 1;
    else if (strcmp(a, "-v") == 0 || strcmp(a, "--version") == 0) o->version = 1;
    else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) o->help = 1;
    else if (strcmp(a, "--update") == 0) o->update = 1;
    else if (strcmp(a, "--repl-stdin") == 0) o->repl_stdin = 1;
    else if (strcmp(a, "--install-kernel") == 0) o->install_kernel = 1;
    else if (strcmp(a, "--user") == 0) o->user = 1;
    else if (is_opt(a, "--kernel") || is_opt(a, "--prefix") || is_opt(a, "--trace")) {
      const char *name = a[2] == 'k' ? "--kernel" : a[2] == 'p' ? "--prefix" : "--trace";
      const char *v = opt_value(argc, argv, &i, name);
      if (v == NULL) { usage_error("missing argument after", name); return -1; }
      if (name[2] == 'k') o->kernel = v;
      else if (name[2] == 'p') o->prefix = v;
      else o->trace = v;
    }
    else if (strcmp(a, "--restart") == 0) o->restart = 1;
    else if (is_opt(a, "--lesson")) {
      /* the name is optional: `gshell --lesson` lists the lessons */
      o->lesson = 1;
      if (a[8] == '=') o->lesson_name = a + 9;
      else if (i + 1 < argc && argv[i + 1][0] != '-') o->lesson_name = argv[++i];
    }
    else if (strcmp(a, "-e") == 0 || strcmp(a, "-l") == 0) {
      if (i + 1 >= argc) { usage_error("missing argument after", a); return -1; }
      if (a[1] == 'e') o->has_e = 1;
      i++;
    } else if (is_opt(a, "--sim-gpus") || is_opt(a, "--notebook") || is_opt(a, "--md") ||
               is_opt(a, "--check") || is_opt(a, "--gpu-model")) {
      const char *name = a[2] == 's' ? "--sim-gpus" : a[2] == 'n' ? "--notebook"
                       : a[2] == 'm' ? "--md" : a[2] == 'g' ? "--gpu-model" : "--check";
      const char *v = opt_value(argc, argv, &i, name);
      if (v == NULL) { usage_error("missing argument after", name); return -1; }
      if (name[2] == 's') o->sim_gpus = v;
      else if (name[2] == 'g') o->gpu_model = v;
      else if (name[2] == 'n') o->notebook = v;
      else if (name[2] == 'm') o->md = v;
      else o->check = v;
    } else {
      usage_error("unrecognized option", a);
      return -1;
    }
  }
  return 0;
}

/* The arg table, as lua.c builds it. */
static void create_arg_table(lua_State *L, int argc, char **argv, int script) {
  lua_createtable(L, argc, 0);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

/* Opens torch and sets the shell's globals. Runs protected. */
static int open_torch(lua_State *L) {
  luaL_requiref(L, "torch", luaopen_torch, 1);
  static const char *const globals[] = {"nn", "optim", "try_gpu", "try_all_gpus", NULL};
  for (int i = 0; globals[i]; i++) {
    if (lua_getfield(L, -1, globals[i]) != LUA_TNIL) lua_setglobal(L, globals[i]);
    else lua_pop(L, 1);
  }
  /* data sets (issue 21): the torchvision global */
  lua_getglobal(L, "require");
  lua_pushliteral(L, "torchvision");
  lua_call(L, 1, 1);
  lua_setglobal(L, "torchvision");
  /* d2l: the book's helpers (lua/torch/d2l/), a global as torch is */
  lua_getglobal(L, "require");
  lua_pushliteral(L, "d2l");
  lua_call(L, 1, 1);
  lua_setglobal(L, "d2l");
  return 0;
}

/* help(...) loads the shell's help module on first use. */
static const char help_stub[] =
  "help = setmetatable({}, {__name = 'help',"
  " __call = function(_, ...) return require('gshell.help').help(...) end,"
  " __tostring = function() return require('gshell.help').about() end})";

/* Calls a Lua function of a shell module with string arguments; returns
 * its integer result as an exit status (1 on error). */
static int call_shell(lua_State *L, const char *module, const char *fn, int nargs, const char *const *args) {
  lua_getglobal(L, "require");
  lua_pushstring(L, module);
  int st = gsR_docall(L, 1, 1);
  if (st != LUA_OK) { gsR_report(L, st); return 1; }
  lua_getfield(L, -1, fn);
  lua_remove(L, -2);
  for (int i = 0; i < nargs; i++) {
    if (args[i]) lua_pushstring(L, args[i]);
    else lua_pushnil(L);
  }
  st = gsR_docall(L, nargs, 1);
  if (st != LUA_OK) { gsR_report(L, st); return 1; }
  int status = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : 0;
  lua_pop(L, 1);
  return status;
}

/* After a script stopped with an error (on top of the stack): reports it
 * followed by the hints the shell gives at the prompt for the line it names
 * (gshell.hints.for_script(path), for_source(code) for -e) and returns 1,
 * or returns 0 with the stack unchanged when there are none. */
static int report_hints_for(lua_State *L, int status, const char *fn, const char *arg) {
  if (arg == NULL || !lua_isstring(L, -1)) return 0;
  int top = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "gshell.hints");
  if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_getfield(L, -1, fn) == LUA_TFUNCTION) {
    lua_pushstring(L, arg);
    lua_pushvalue(L, top);
    if (lua_pcall(L, 2, 1, 0) == LUA_OK && lua_isstring(L, -1)) {
      lua_replace(L, top + 1);  /* the hints, then the error */
      lua_settop(L, top + 1);
      lua_insert(L, top);
      gsR_report(L, status);
      fprintf(stderr, "%s\n", lua_tostring(L, -1));
      fflush(stderr);
      lua_pop(L, 1);
      return 1;
    }
  }
  lua_settop(L, top);
  return 0;
}

static int report_with_hints(lua_State *L, int status, const char *path) {
  return report_hints_for(L, status, "for_script", path);
}

/* Runs -e and -l in order. Inside the session when interactive, so that
 * locals survive. Returns 0 or 1. */
static int run_e_and_l(lua_State *L, int argc, char **argv, const options *o) {
  int end = o->script ? o->script : argc;
  for (int i = 1; i < end; i++) {
    int st;
    if (strcmp(argv[i], "-e") == 0) {
      const char *code = argv[++i];
      if (o->interactive || o->repl_stdin) {
        lua_getglobal(L, "require");
        lua_pushliteral(L, "gshell.repl");
        st = gsR_docall(L, 1, 1);
        if (st == LUA_OK) {
          lua_getfield(L, -1, "run_string");
          lua_remove(L, -2);
          lua_pushstring(L, code);
          st = gsR_docall(L, 1, 0);
        }
      } else {
        st = luaL_loadbuffer(L, code, strlen(code), "=(command line)");
        if (st == LUA_OK) st = gsR_docall(L, 0, 0);
      }
    } else if (strcmp(argv[i], "-l") == 0) {
      const char *mod = argv[++i];
      lua_getglobal(L, "require");
      lua_pushstring(L, mod);
      st = gsR_docall(L, 1, 1);
      if (st == LUA_OK) lua_setglobal(L, mod);
    } else {
      if (strcmp(argv[i], "--sim-gpus") == 0 || strcmp(argv[i], "--notebook") == 0 ||
          strcmp(argv[i], "--gpu-model") == 0 ||
          strcmp(argv[i], "--md") == 0 || strcmp(argv[i], "--check") == 0 ||
          strcmp(argv[i], "--kernel") == 0 || strcmp(argv[i], "--prefix") == 0 ||
          strcmp(argv[i], "--trace") == 0) i++;
      else if (strcmp(argv[i], "--lesson") == 0 && i + 1 < end && argv[i + 1][0] != '-') i++;
      continue;
    }
    if (st != LUA_OK) {
      if (strcmp(argv[i - 1], "-e") == 0 && report_hints_for(L, st, "for_source", argv[i])) return 1;
      gsR_report(L, st);
      return 1;
    }
  }
  return 0;
}

/* Runs the script with its arguments; in the session when interactive. */
static int run_script(lua_State *L, int argc, char **argv, const options *o) {
  const char *name = argv[o->script];
  int nargs = argc - o->script - 1, st;
  if (o->interactive || o->repl_stdin) {
    lua_getglobal(L, "require");
    lua_pushliteral(L, "gshell.repl");
    st = gsR_docall(L, 1, 1);
    if (st == LUA_OK) {
      lua_getfield(L, -1, "run_script");
      lua_remove(L, -2);
      lua_pushstring(L, name);
      for (int i = 0; i < nargs; i++) lua_pushstring(L, argv[o->script + 1 + i]);
      st = gsR_docall(L, nargs + 1, 0);
    }
  } else {
    const char *fname = strcmp(name, "-") == 0 ? NULL : name;
    st = luaL_loadfile(L, fname);
    if (st == LUA_OK) {
      luaL_checkstack(L, nargs, "too many arguments to script");
      for (int i = 0; i < nargs; i++) lua_pushstring(L, argv[o->script + 1 + i]);
      st = gsR_docall(L, nargs, 0);
    }
  }
  if (st != LUA_OK && report_with_hints(L, st, strcmp(name, "-") == 0 ? NULL : name)) return 1;
  if (st != LUA_OK) { gsR_report(L, st); return 1; }
  return 0;
}

/* --trace: torch.profiler records from start to end of the run, then
 * writes the file (torch/profiler.lua: _trace_start, _trace_write).
 * Returns 0, or 1 when the trace could not be written. */
static int trace_call(lua_State *L, const char *fn, const char *path) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "torch.profiler");
  int st = gsR_docall(L, 1, 1);
  if (st == LUA_OK) {
    lua_getfield(L, -1, fn);
    lua_remove(L, -2);
    if (path) lua_pushstring(L, path);
    st = gsR_docall(L, path ? 1 : 0, 0);
  }
  if (st != LUA_OK) {
    fprintf(stderr, "%s: --trace: %s\n", gsR_progname, lua_tostring(L, -1));
    lua_pop(L, 1);
    return 1;
  }
  return 0;
}

static int print_banner(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "gshell.repl");
  int st = gsR_docall(L, 1, 1);
  if (st == LUA_OK) {
    lua_getfield(L, -1, "banner");
    lua_remove(L, -2);
    st = gsR_docall(L, 0, 1);
  }
  if (st != LUA_OK) { gsR_report(L, st); return 1; }
  printf("%s\n", lua_tostring(L, -1));
  lua_pop(L, 1);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  options o;
  if (parse_args(argc, argv, &o) != 0) return 1;
  if (o.help) {
    printf(usage_text, gsR_progname);
    return 0;
  }
  if (o.version && !o.script && !o.has_e && !o.interactive && !o.notebook && !o.check) {
    printf("gshell %s (%s)\n", GS_VERSION, LUA_RELEASE);
    return 0;
  }
  int sim_n;
  size_t sim_mem;
  if (o.sim_gpus) {
    if (gs_parse_sim_gpus("--sim-gpus", o.sim_gpus, &sim_n) != GS_OK) {
      usage_error(gs_last_error(), NULL);
      return 1;
    }
    setenv("GSHELL_SIM_GPUS", o.sim_gpus, 1);
  }
  if (o.gpu_model) {
    if (gs_gpu_model_check("--gpu-model", o.gpu_model) != GS_OK) {
      usage_error(gs_last_error(), NULL);
      return 1;
    }
    setenv("GSHELL_GPU_MODEL", o.gpu_model, 1);
  }
  /* A kernel whose kernelspec does not set GSHELL_SIM_GPUS (the README's
   * `--install-kernel --user`), on a machine with no CUDA GPU, simulates
   * two, so examples/gpu_chapter.ipynb runs as written; its banner says so
   * (gshell.kernel.banner). GSHELL_SIM_GPUS=0 in the spec's env asks for none. */
  if (o.kernel && getenv("GSHELL_SIM_GPUS") == NULL && gs_cuda_unavailable() != NULL) {
    setenv("GSHELL_SIM_GPUS", "2", 1);
    setenv("GSHELL_KERNEL_SIM_AUTO", "2", 1);
  }
  /* the environment's simulated devices, checked by the same rules before
   * anything runs (torch reads them when it loads) */
  if (gs_sim_env(&sim_n, &sim_mem) != GS_OK) {
    fprintf(stderr, "%s: %s\n", gsR_progname, gs_last_error());
    return 1;
  }
  if (o.md && !o.notebook) { usage_error("--md goes with --notebook", NULL); return 1; }
  if (o.update && !o.check) { usage_error("--update goes with --check", NULL); return 1; }
  if ((o.user || o.prefix) && !o.install_kernel) {
    usage_error(o.user ? "--user" : "--prefix", "goes with --install-kernel");
    return 1;
  }
  if (o.user && o.prefix) { usage_error("--install-kernel takes --user or --prefix, not both", NULL); return 1; }
  if ((o.kernel || o.install_kernel) && (gsK_run == NULL || gsK_install == NULL)) {
    fprintf(stderr, "%s: this gshell was built without the Jupyter kernel\n", gsR_progname);
    return 1;
  }
  if (o.trace && (o.kernel || o.install_kernel)) { usage_error("--trace does not go with --kernel", NULL); return 1; }
  if (o.install_kernel) return gsK_install(argv[0], o.user ? 'u' : o.prefix ? 'p' : 's', o.prefix);
  if (o.restart && !o.lesson_name) { usage_error("--restart goes with --lesson NAME", NULL); return 1; }

  lua_State *L = luaL_newstate();
  if (L == NULL) {
    fprintf(stderr, "%s: cannot create the Lua state: not enough memory\n", gsR_progname);
    return 1;
  }
  luaL_openlibs(L);
  gsR_open_core(L);
  create_arg_table(L, argc, argv, o.script);
  lua_pushcfunction(L, open_torch);
  int st = gsR_docall(L, 0, 0);
  if (st != LUA_OK) {
    fprintf(stderr, "%s: cannot load torch: %s\n", gsR_progname, lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  if (luaL_dostring(L, help_stub) != LUA_OK) lua_pop(L, 1);

  int status = 0;
  if (o.version) printf("gshell %s (%s)\n", GS_VERSION, LUA_RELEASE);
  if (o.trace && trace_call(L, "_trace_start", NULL) != 0) status = 1;
  if (status != 0) {
    /* no run without the trace that was asked for */
  } else if (o.kernel) {
    status = gsK_run(L, o.kernel);
  } else if (o.notebook) {
    const char *args[] = {o.notebook, o.md};
    status = call_shell(L, "gshell.notebook", "run", 2, args);
  } else if (o.check) {
    const char *args[] = {o.check, o.update ? "update" : NULL};
    status = call_shell(L, "gshell.check", "run", 2, args);
  } else if (o.lesson) {
    /* the lesson greets, then the prompt runs with the lesson checking
     * every cell; without a name, the list of lessons */
    const char *args[] = {o.lesson_name, o.restart ? "restart" : NULL};
    status = call_shell(L, "gshell.repl", "lesson", 2, args);
    if (status == 0 && o.lesson_name) {
      if (o.repl_stdin) gsR_repl(L, 0, 0);
      else if (isatty(0)) gsR_repl(L, 1, 1);
      else gsR_repl(L, 0, 1);
    }
  } else {
    status = run_e_and_l(L, argc, argv, &o);
    if (o.script && (status == 0 || o.interactive)) status |= run_script(L, argc, argv, &o);
    if (o.repl_stdin) {
      gsR_repl(L, 0, 0);
    } else if (o.interactive || (!o.script && !o.has_e && !o.version)) {
      if (isatty(0)) {
        if (!o.script && !o.has_e) print_banner(L);
        gsR_repl(L, 1, 1);
      } else if (o.interactive) {
        gsR_repl(L, 0, 1);      /* piped into -i: prompts shown, no editing */
      } else {
        static char dash[] = "-";
        char *stdin_argv[] = {argv[0], dash, NULL};
        options so = o;
        so.script = 1;
        status = run_script(L, 2, stdin_argv, &so);
      }
    }
  }
  if (o.trace && trace_call(L, "_trace_write", o.trace) != 0) status = status ? status : 1;
  lua_close(L);
  gs_dist_exit(status == 0); /* MPI, when a script used it */
  return status;
}
