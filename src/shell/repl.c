/* repl.c: the interactive prompt. Reads lines (readline on a terminal,
 * plain stdin otherwise), joins unfinished statements, and hands the text
 * to the Lua side (gshell.repl.feed), which compiles, runs and prints.
 *
 * Readline is used through its callback interface so that Ctrl-C at the
 * prompt discards the line and shows a fresh prompt (like Python and
 * bash) instead of killing the shell; while code runs, Ctrl-C is armed by
 * gsR_docall to interrupt it. Completion asks gshell.complete. History
 * goes to $GSHELL_HISTORY or ~/.gshell_history, multi-line entries kept
 * whole. Bracketed paste is readline's own (on by default since 8.1): a
 * pasted block arrives as one multi-line input and runs as one cell. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include <lauxlib.h>

#include "shell/repl.h"

enum { LINE_OK, LINE_EOF, LINE_INTR };

/* ---- reading a line ---------------------------------------------------- */

static char *line_result;
static int line_done;
static volatile sig_atomic_t prompt_sigint;

static void on_rl_line(char *line) {
  line_result = line;
  line_done = 1;
  rl_callback_handler_remove();
}

static void on_prompt_sigint(int sig) {
  (void)sig;
  prompt_sigint = 1;
}

/* One line through readline's callback interface; *out is malloc'ed. */
static int read_rl(const char *prompt, char **out) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_prompt_sigint;  /* no SA_RESTART: select sees EINTR */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  prompt_sigint = 0;
  line_done = 0;
  line_result = NULL;
  rl_callback_handler_install(prompt, on_rl_line);
  int status = LINE_OK;
  while (!line_done) {
    int fd = fileno(rl_instream ? rl_instream : stdin);
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(fd, &fds);
    int r = select(fd + 1, &fds, NULL, NULL, NULL);
    if (prompt_sigint) {
      prompt_sigint = 0;
      /* show the abandoned line whole, then "^C", then a fresh prompt */
      rl_point = rl_end;
      rl_redisplay();
      fputs("^C", rl_outstream ? rl_outstream : stdout);
      fflush(rl_outstream ? rl_outstream : stdout);
      rl_free_line_state();
      rl_callback_sigcleanup();
      rl_cleanup_after_signal();
      rl_callback_handler_remove();
      fputc('\n', stdout);
      fflush(stdout);
      status = LINE_INTR;
      break;
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      rl_callback_handler_remove();
      break;
    }
    if (r > 0) rl_callback_read_char();
  }
  sigaction(SIGINT, &old, NULL);
  if (status == LINE_INTR) return LINE_INTR;
  if (line_result == NULL) {
    fputc('\n', stdout);
    return LINE_EOF;
  }
  *out = line_result;
  return LINE_OK;
}

/* One line from plain stdin, without its newline; *out is malloc'ed. */
static int read_plain(const char *prompt, char **out) {
  if (prompt) {
    fputs(prompt, stdout);
    fflush(stdout);
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = getline(&line, &cap, stdin);
  if (n < 0) {
    free(line);
    return LINE_EOF;
  }
  if (n > 0 && line[n - 1] == '\n') line[--n] = '\0';
  if (n > 0 && line[n - 1] == '\r') line[--n] = '\0';
  *out = line;
  return LINE_OK;
}

/* ---- completion -------------------------------------------------------- */

static lua_State *comp_L;
static int comp_ref = LUA_NOREF;   /* the repl module table */
static char **comp_list;
static size_t comp_n, comp_i;

static void comp_clear(void) {
  for (size_t i = 0; i < comp_n; i++) free(comp_list[i]);
  free(comp_list);
  comp_list = NULL;
  comp_n = comp_i = 0;
}

static char *comp_generator(const char *text, int state) {
  (void)text;
  if (state == 0) comp_i = 0;
  if (comp_i < comp_n) return strdup(comp_list[comp_i++]);
  return NULL;
}

/* Fills comp_list with repl.complete(word, line before the word). Errors
 * give no completions. */
static void comp_fill(const char *word, int start) {
  lua_State *L = comp_L;
  int top = lua_gettop(L);
  comp_clear();
  lua_rawgeti(L, LUA_REGISTRYINDEX, comp_ref);
  lua_getfield(L, -1, "complete");
  lua_pushstring(L, word);
  lua_pushlstring(L, rl_line_buffer, start > 0 ? (size_t)start : 0);
  if (lua_pcall(L, 2, 1, 0) == LUA_OK && lua_istable(L, -1)) {
    size_t n = (size_t)lua_rawlen(L, -1);
    comp_list = calloc(n ? n : 1, sizeof *comp_list);
    for (size_t i = 1; comp_list && i <= n; i++) {
      lua_rawgeti(L, -1, (lua_Integer)i);
      const char *s = lua_tostring(L, -1);
      if (s) comp_list[comp_n++] = strdup(s);
      lua_pop(L, 1);
    }
  }
  lua_settop(L, top);
}

static char **attempt_completion(const char *text, int start, int end) {
  (void)end;
  /* inside a string: readline's file name completion */
  if (rl_completion_quote_character) return NULL;
  rl_attempted_completion_over = 1;
  rl_completion_append_character = '\0';   /* reset before every call */
  comp_fill(text, start);
  if (comp_n == 0) return NULL;
  return rl_completion_matches(text, comp_generator);
}

/* ---- history ------------------------------------------------------------ */

static char *hist_path;
#define HIST_MAX 2000

static void history_open(void) {
  const char *env = getenv("GSHELL_HISTORY");
  if (env) {
    if (*env) hist_path = strdup(env);      /* empty: no history file */
  } else {
    const char *home = getenv("HOME");
    if (home && *home) {
      size_t n = strlen(home) + sizeof "/.gshell_history";
      hist_path = malloc(n);
      if (hist_path) snprintf(hist_path, n, "%s/.gshell_history", home);
    }
  }
  using_history();
  history_comment_char = '#';  /* timestamps are written as "#<seconds>" lines, */
  history_write_timestamps = 1;   /* so multi-line entries read back whole */
  history_multiline_entries = 1;
  stifle_history(HIST_MAX);
  if (hist_path && read_history(hist_path) != 0) {
    /* create it, so that append_history works from the first entry */
    if (write_history(hist_path) != 0) {
      free(hist_path);
      hist_path = NULL;
    }
  }
}

static void history_add(const char *entry) {
  HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
  if (last && strcmp(last->line, entry) == 0) return;
  add_history(entry);
  if (hist_path) append_history(1, hist_path);
}

static void history_close(void) {
  if (hist_path) history_truncate_file(hist_path, HIST_MAX);
  free(hist_path);
  hist_path = NULL;
}

/* ---- the loop ----------------------------------------------------------- */

static char *word_breaks;   /* repl.word_breaks (the completer's), for readline */

static void readline_setup(lua_State *L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, comp_ref);
  lua_getfield(L, -1, "word_breaks");
  const char *b = lua_tostring(L, -1);
  word_breaks = strdup(b ? b : " \t\n");
  lua_pop(L, 2);
  char *breaks = word_breaks ? word_breaks : (char *)" \t\n";
  rl_readline_name = "gshell";
  rl_catch_signals = 0;          /* Ctrl-C is ours, see read_rl */
  rl_basic_word_break_characters = breaks;
  rl_completer_word_break_characters = breaks;
  rl_completer_quote_characters = "\"'";
  rl_attempted_completion_function = attempt_completion;
  rl_completion_append_character = '\0';
  comp_L = L;
  history_open();
}

/* Calls repl.feed(text); returns 1 when the statement is unfinished. */
static int feed(lua_State *L, const char *text) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, comp_ref);
  lua_getfield(L, -1, "feed");
  lua_remove(L, -2);
  lua_pushstring(L, text);
  int status = gsR_docall(L, 1, 1);
  if (status != LUA_OK) {
    /* an error outside the cell's own handler (Ctrl-C in the printer...) */
    const char *msg = lua_tostring(L, -1);
    fflush(stdout);
    fprintf(stderr, "%s\n", msg ? msg : "error");
    lua_pop(L, 1);
    return 0;
  }
  int more = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "more") == 0;
  lua_pop(L, 1);
  return more;
}

static int all_blank(const char *s) {
  for (; *s; s++)
    if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') return 0;
  return 1;
}

int gsR_repl(lua_State *L, int use_readline, int show_prompts) {
  /* repl = require "gshell.repl"; repl.start() */
  lua_getglobal(L, "require");
  lua_pushliteral(L, "gshell.repl");
  if (gsR_docall(L, 1, 1) != LUA_OK) {
    gsR_report(L, 1);
    return 1;
  }
  lua_getfield(L, -1, "start");
  if (gsR_docall(L, 0, 0) != LUA_OK) {
    gsR_report(L, 1);
    lua_pop(L, 1);
    return 1;
  }
  comp_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  if (use_readline) readline_setup(L);

  char *buf = NULL;   /* the statement so far */
  size_t len = 0;
  for (;;) {
    const char *prompt = len ? GSHELL_PROMPT2 : GSHELL_PROMPT;
    char *line = NULL;
    int st = use_readline ? read_rl(prompt, &line) : read_plain(show_prompts ? prompt : NULL, &line);
    if (st == LINE_EOF) {
      /* Ctrl-D inside an unfinished statement drops the statement, not
       * the session; a second one at the empty prompt leaves */
      if (len == 0) break;
      free(buf);
      buf = NULL;
      len = 0;
      fputs("(unfinished statement abandoned; Ctrl-D again to leave)\n", stdout);
      fflush(stdout);
      continue;
    }
    if (st == LINE_INTR) {
      free(buf);
      buf = NULL;
      len = 0;
      continue;
    }
    if (len == 0 && all_blank(line)) {
      free(line);
      continue;
    }
    size_t ln = strlen(line);
    char *nb = realloc(buf, len + ln + 2);
    if (nb == NULL) {
      free(line);
      break;
    }
    buf = nb;
    if (len) buf[len++] = '\n';
    memcpy(buf + len, line, ln + 1);
    len += ln;
    free(line);
    if (feed(L, buf)) continue;
    if (use_readline) history_add(buf);
    free(buf);
    buf = NULL;
    len = 0;
  }
  free(buf);
  if (use_readline) {
    history_close();
    comp_clear();
    rl_basic_word_break_characters = rl_completer_word_break_characters = NULL;
    free(word_breaks);
    word_breaks = NULL;
  }
  luaL_unref(L, LUA_REGISTRYINDEX, comp_ref);
  comp_ref = LUA_NOREF;
  return 0;
}
