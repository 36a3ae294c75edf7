/* repl.h: the gshell program's C parts, shared by main.c and repl*.c.
 * C does argv, signals, readline and output capture; the shell's logic
 * (compiling cells, printing, magics, notebooks, doc checks) is Lua, in
 * lua/gshell/. */
#ifndef REPL_H
#define REPL_H

#include <lua.h>

#define GSHELL_PROMPT "gshell> "
#define GSHELL_PROMPT2 "   ...> "

/* Calls the function below its `narg` arguments with a traceback message
 * handler, Ctrl-C armed to interrupt it (Lua hook + gs_interrupted), and
 * returns lua_pcall's status. On error the message (with traceback) is on
 * the stack. Clears gs_interrupted and any stray output capture after. */
int gsR_docall(lua_State *L, int narg, int nres);

/* Prints the error on top of the stack to stderr as "gshell: msg", pops it. */
void gsR_report(lua_State *L, int status);

/* Registers the C helpers as module "gshell.core" (package.preload)
 * and a searcher for the Lua modules compiled into the binary. */
void gsR_open_core(lua_State *L);

/* Runs the prompt until end of input. use_readline: line editing, history
 * and completion on a terminal; otherwise lines come from stdin as they are
 * and prompts are shown only when show_prompts. Returns an exit status. */
int gsR_repl(lua_State *L, int use_readline, int show_prompts);

/* The program name used in messages ("gshell"). */
extern const char *gsR_progname;

#endif
