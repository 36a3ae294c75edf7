/* kernel_main.c: `gshell --kernel CONNECTION_FILE`. One thread runs the
 * requests from the control and shell sockets in order (control first),
 * each between `status: busy` and `status: idle` on iopub. Everything about
 * the session is the Lua module gshell.kernel (which uses the prompt's
 * session, printer, completer, help and continuation logic); this file
 * turns its answers into protocol messages.
 *
 * Interrupts are signals (kernelspec interrupt_mode "signal"): SIGINT is
 * ignored while idle and, while a request runs Lua, armed by gsR_docall as
 * at the prompt, so a running loop stops with "interrupted!" and the
 * session lives on. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <lauxlib.h>

#include "core/gs_common.h"
#include "jupyter/kernel.h"
#include "shell/repl.h"

typedef struct {
  lua_State *L;
  int mod_ref;            /* the gshell.kernel module table */
  gsK_sockets s;
  int count;              /* execution_count */
  int shutdown;
  gsK_msg *current;       /* the request being handled (for input) */
  void *current_sock;
  int allow_stdin;
} kernel;

static kernel K;

/* ---- calling gshell.kernel ---------------------------------------------- */

/* Pushes gshell.kernel[fn]. */
static void push_fn(const char *fn) {
  lua_rawgeti(K.L, LUA_REGISTRYINDEX, K.mod_ref);
  lua_getfield(K.L, -1, fn);
  lua_remove(K.L, -2);
}

/* Calls with the function and nargs arguments pushed; on error logs it and
 * returns -1 (the stack is left as before the push). */
static int call(const char *fn, int nargs, int nres) {
  int st = gsR_docall(K.L, nargs, nres);
  if (st != LUA_OK) {
    const char *msg = lua_tostring(K.L, -1);
    gsK_log("gshell.kernel.%s failed: %s", fn, msg ? msg : "(no message)");
    lua_pop(K.L, 1);
    return -1;
  }
  return 0;
}

/* The JSON string of the Lua string at idx (nil: NULL). */
static json_t *lua_text(int idx) {
  size_t n;
  const char *s = lua_type(K.L, idx) == LUA_TSTRING ? lua_tolstring(K.L, idx, &n) : NULL;
  return s ? gsK_json_text(s, n) : NULL;
}

/* A JSON array of the strings in the Lua table at idx. */
static json_t *lua_text_array(int idx) {
  json_t *a = json_array();
  if (!lua_istable(K.L, idx)) return a;
  lua_Integer n = (lua_Integer)lua_rawlen(K.L, idx);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(K.L, idx, i);
    json_t *s = lua_text(-1);
    if (s) json_array_append_new(a, s);
    lua_pop(K.L, 1);
  }
  return a;
}

static json_t *field_text(int idx, const char *name) {
  lua_getfield(K.L, idx, name);
  json_t *j = lua_text(-1);
  lua_pop(K.L, 1);
  return j;
}

/* ---- replies -------------------------------------------------------------- */

static void reply(gsK_msg *req, void *sock, const char *type, json_t *content) {
  gsK_send(sock, req->ids, req->nids, gsK_new_header(type), req->header, content);
}

static void publish(gsK_msg *req, const char *type, json_t *content) {
  gsK_publish(K.s.iopub_in, type, req ? req->header : NULL, content);
}

/* The `<type>_reply` name for a request type. */
static void reply_type(const char *req_type, char *out, size_t n) {
  size_t l = strlen(req_type);
  if (l > 8 && strcmp(req_type + l - 8, "_request") == 0) l -= 8;
  snprintf(out, n, "%.*s_reply", (int)l, req_type);
}

/* An error reply for a request whose content is not what the protocol says. */
static void bad_request(gsK_msg *req, void *sock, const char *what) {
  char type[128];
  reply_type(req->msg_type, type, sizeof type);
  gsK_log("bad request: %s", what);
  json_t *tb = json_array();
  json_array_append_new(tb, json_string(what));
  reply(req, sock, type, json_pack("{s:s, s:s, s:s, s:o}", "status", "error", "ename", "BadRequest",
                                   "evalue", what, "traceback", tb));
}

/* ---- handlers ------------------------------------------------------------- */

static void kernel_info(gsK_msg *req, void *sock) {
  push_fn("banner");
  json_t *banner = NULL;
  if (call("banner", 0, 1) == 0) {
    banner = lua_text(-1);
    lua_pop(K.L, 1);
  }
  json_t *lang = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "name", "lua", "version", LUA_VERSION_MAJOR "." LUA_VERSION_MINOR,
                           "mimetype", "text/x-lua", "file_extension", ".lua", "pygments_lexer", "lua",
                           "codemirror_mode", "lua");
  json_t *links = json_pack("[{s:s, s:s}]", "text", "gshell docs (docs/shell.md)", "url",
                            "https://github.com/gshell/gshell/blob/main/docs/shell.md");
  reply(req, sock, "kernel_info_reply",
        json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "status", "ok", "protocol_version",
                  GSK_PROTOCOL_VERSION, "implementation", "gshell", "implementation_version", GS_VERSION,
                  "language_info", lang, "banner", banner ? banner : json_string("gshell"),
                  "help_links", links));
}

/* Evaluates content.user_expressions: name -> {status, data} or error. */
static json_t *user_expressions(json_t *exprs) {
  json_t *out = json_object();
  const char *name;
  json_t *v;
  if (!json_is_object(exprs)) return out;
  json_object_foreach(exprs, name, v) {
    const char *code = json_string_value(v);
    if (code == NULL) continue;
    push_fn("evaluate");
    lua_pushstring(K.L, code);
    if (call("evaluate", 1, 2) != 0) continue;
    json_t *text = lua_text(-1);
    if (lua_toboolean(K.L, -2))
      json_object_set_new(out, name, json_pack("{s:s, s:{s:o}, s:{}}", "status", "ok", "data", "text/plain",
                                               text ? text : json_string(""), "metadata"));
    else
      json_object_set_new(out, name, json_pack("{s:s, s:s, s:o, s:[]}", "status", "error", "ename", "Error",
                                               "evalue", text ? text : json_string("error"), "traceback"));
    lua_pop(K.L, 2);
  }
  return out;
}

/* ---- the control socket while a cell runs -------------------------------
 * The main thread runs the cell, so a thread of its own serves the control
 * socket meanwhile (issue 23: shutdown_request during `while true do end`
 * waited 20-50 s for the client's SIGKILL). It owns the socket from
 * watch_start to watch_stop, when the main thread takes it back:
 *   interrupt_request: replied at once, then SIGINT, which stops the cell
 *     as an interrupt from the frontend's signal does;
 *   shutdown_request: replied at once; the cell is interrupted, and the
 *     main loop publishes the reply on iopub and ends;
 *   anything else (it may need Lua) waits for the main thread, in order. */
#define WATCH_STASH 16
static pthread_t watch_thread;
static atomic_int watch_running, watch_quit;
static gsK_msg watch_stash[WATCH_STASH];
static int watch_nstash;
static gsK_msg watch_shutdown;   /* the shutdown_request served, published later */
static int watch_have_shutdown;

static void *watch_main(void *arg) {
  (void)arg;
  while (!atomic_load(&watch_quit)) {
    zmq_pollitem_t it = {K.s.control, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, 50) <= 0) continue;
    gsK_msg m;
    if (gsK_recv(K.s.control, &m, "control") != 1) continue;
    if (strcmp(m.msg_type, "interrupt_request") == 0) {
      gsK_send(K.s.control, m.ids, m.nids, gsK_new_header("interrupt_reply"), m.header,
               json_pack("{s:s}", "status", "ok"));
      gsK_msg_free(&m);
      kill(getpid(), SIGINT);
    } else if (strcmp(m.msg_type, "shutdown_request") == 0 && !watch_have_shutdown) {
      int restart = 0;
      (void)json_unpack(m.content, "{s?b}", "restart", &restart);
      gsK_send(K.s.control, m.ids, m.nids, gsK_new_header("shutdown_reply"), m.header,
               json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
      watch_shutdown = m;
      watch_have_shutdown = 1;
      __atomic_store_n(&K.shutdown, 1, __ATOMIC_RELEASE);
      kill(getpid(), SIGINT);
    } else if (watch_nstash < WATCH_STASH) {
      watch_stash[watch_nstash++] = m;
    } else {
      gsK_log("control: '%s' while a cell runs and %d others wait: dropped", m.msg_type, WATCH_STASH);
      gsK_msg_free(&m);
    }
  }
  return NULL;
}

static void watch_start(void) {
  atomic_store(&watch_quit, 0);
  watch_nstash = 0;
  watch_have_shutdown = 0;
  if (pthread_create(&watch_thread, NULL, watch_main, NULL) == 0) atomic_store(&watch_running, 1);
  else gsK_log("control: cannot start its thread; it is served after the cell");
}

static void handle(void *sock, const char *channel);
static void handle_msg(gsK_msg *req, void *sock, const char *channel);

/* Takes the control socket back; what was stashed is handled now. */
static void watch_stop(void) {
  if (!atomic_load(&watch_running)) return;
  atomic_store(&watch_quit, 1);
  pthread_join(watch_thread, NULL);
  atomic_store(&watch_running, 0);
  if (watch_have_shutdown) {
    int restart = 0;
    (void)json_unpack(watch_shutdown.content, "{s?b}", "restart", &restart);
    gsK_publish(K.s.iopub_in, "shutdown_reply", watch_shutdown.header,
                json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
    gsK_msg_free(&watch_shutdown);
    watch_have_shutdown = 0;
  }
}

/* Requests the watcher kept for the main thread (after the cell). */
static void watch_drain(void) {
  int n = watch_nstash;
  watch_nstash = 0;
  for (int i = 0; i < n; i++) {
    if (!K.shutdown) handle_msg(&watch_stash[i], K.s.control, "control");
    else gsK_msg_free(&watch_stash[i]);
  }
}

static void execute(gsK_msg *req, void *sock) {
  const char *code = NULL;
  size_t code_len = 0;
  int silent = 0, store = 1, allow_stdin = 1;
  json_t *exprs = NULL;
  json_error_t je;
  if (json_unpack_ex(req->content, &je, 0, "{s:s%, s?b, s?b, s?o, s?b}", "code", &code, &code_len, "silent", &silent,
                     "store_history", &store, "user_expressions", &exprs, "allow_stdin", &allow_stdin) != 0) {
    char what[300];
    snprintf(what, sizeof what, "execute_request: %s (content.code must be a string; silent, "
             "store_history and allow_stdin booleans)", je.text);
    bad_request(req, sock, what);
    return;
  }
  if (silent) store = 0;
  int n = store ? ++K.count : K.count + 1;
  if (!silent)
    publish(req, "execute_input", json_pack("{s:s%, s:i}", "code", code, code_len, "execution_count", n));
  gsK_iopub_set_parent(K.s.iopub_in, req->header);
  K.current = req;
  K.current_sock = K.s.stdin_sock;
  K.allow_stdin = allow_stdin;
  push_fn("execute");
  lua_pushlstring(K.L, code, code_len);
  lua_pushinteger(K.L, n);
  lua_pushboolean(K.L, silent);
  lua_pushboolean(K.L, store);
  watch_start();
  int ok = call("execute", 4, 1) == 0 && lua_istable(K.L, -1);
  watch_stop();
  K.current = NULL;
  json_t *content;
  if (!ok) {
    if (lua_gettop(K.L) > 0 && !lua_istable(K.L, -1)) lua_pop(K.L, 1);
    content = json_pack("{s:s, s:i, s:s, s:s, s:[s]}", "status", "error", "execution_count", n,
                        "ename", "KernelError", "evalue", "the kernel could not run the cell (see its log)",
                        "traceback", "the kernel could not run the cell (see its log)");
    publish(req, "error", json_pack("{s:s, s:s, s:[s]}", "ename", "KernelError", "evalue",
                                    "the kernel could not run the cell", "traceback",
                                    "the kernel could not run the cell"));
  } else {
    int t = lua_gettop(K.L);
    lua_getfield(K.L, t, "status");
    int failed = lua_isstring(K.L, -1) && strcmp(lua_tostring(K.L, -1), "error") == 0;
    lua_pop(K.L, 1);
    if (failed) {
      json_t *ename = field_text(t, "ename"), *evalue = field_text(t, "evalue");
      lua_getfield(K.L, t, "traceback");
      json_t *tb = lua_text_array(-1);
      lua_pop(K.L, 1);
      if (!ename) ename = json_string("Error");
      if (!evalue) evalue = json_string("");
      if (!silent)
        publish(req, "error", json_pack("{s:O, s:O, s:O}", "ename", ename, "evalue", evalue, "traceback", tb));
      content = json_pack("{s:s, s:i, s:o, s:o, s:o}", "status", "error", "execution_count", n,
                          "ename", ename, "evalue", evalue, "traceback", tb);
    } else {
      json_t *text = field_text(t, "result");
      json_t *svg = field_text(t, "svg");
      /* a value that draws itself (a profile's timeline) is displayed as a
       * picture first; Out[n] stays the text the prompt prints */
      if (svg && text && !silent)
        publish(req, "display_data", json_pack("{s:{s:o, s:s}, s:{}, s:{}}", "data", "image/svg+xml", svg,
                                               "text/plain", "<timeline (image/svg+xml)>", "metadata",
                                               "transient"));
      else
        json_decref(svg);
      if (text && !silent) {
        json_t *data = json_pack("{s:o}", "text/plain", text);
        json_t *html = field_text(t, "html");
        if (html) json_object_set_new(data, "text/html", html);
        publish(req, "execute_result", json_pack("{s:i, s:o, s:{}}", "execution_count", n, "data", data,
                                                 "metadata"));
      } else {
        json_decref(text);
      }
      content = json_pack("{s:s, s:i, s:o, s:[]}", "status", "ok", "execution_count", n,
                          "user_expressions", user_expressions(exprs), "payload");
    }
    lua_settop(K.L, t - 1);
  }
  gsK_iopub_set_parent(K.s.iopub_in, NULL);
  reply(req, sock, "execute_reply", content);
}

static void complete(gsK_msg *req, void *sock) {
  const char *code;
  size_t len;
  json_int_t pos = -1;
  json_error_t je;
  if (json_unpack_ex(req->content, &je, 0, "{s:s%, s?I}", "code", &code, &len, "cursor_pos", &pos) != 0) {
    bad_request(req, sock, "complete_request: content.code must be a string and cursor_pos an integer");
    return;
  }
  push_fn("complete");
  lua_pushlstring(K.L, code, len);
  lua_pushinteger(K.L, (lua_Integer)pos);
  json_t *matches = NULL;
  json_int_t start = pos, end = pos;
  if (call("complete", 2, 3) == 0) {
    matches = lua_text_array(-3);
    start = (json_int_t)lua_tointeger(K.L, -2);
    end = (json_int_t)lua_tointeger(K.L, -1);
    lua_pop(K.L, 3);
  }
  reply(req, sock, "complete_reply",
        json_pack("{s:s, s:o, s:I, s:I, s:{}}", "status", "ok", "matches", matches ? matches : json_array(),
                  "cursor_start", start, "cursor_end", end, "metadata"));
}

static void inspect(gsK_msg *req, void *sock) {
  const char *code;
  size_t len;
  json_int_t pos = -1;
  int detail = 0;
  json_error_t je;
  if (json_unpack_ex(req->content, &je, 0, "{s:s%, s?I, s?i}", "code", &code, &len, "cursor_pos", &pos,
                     "detail_level", &detail) != 0) {
    bad_request(req, sock, "inspect_request: content.code must be a string, cursor_pos and detail_level integers");
    return;
  }
  push_fn("inspect");
  lua_pushlstring(K.L, code, len);
  lua_pushinteger(K.L, (lua_Integer)pos);
  lua_pushinteger(K.L, detail);
  json_t *text = NULL;
  if (call("inspect", 3, 1) == 0) {
    text = lua_text(-1);
    lua_pop(K.L, 1);
  }
  json_t *data = text ? json_pack("{s:o}", "text/plain", text) : json_object();
  reply(req, sock, "inspect_reply", json_pack("{s:s, s:b, s:o, s:{}}", "status", "ok", "found", text != NULL,
                                              "data", data, "metadata"));
}

static void is_complete(gsK_msg *req, void *sock) {
  const char *code;
  size_t len;
  json_error_t je;
  if (json_unpack_ex(req->content, &je, 0, "{s:s%}", "code", &code, &len) != 0) {
    bad_request(req, sock, "is_complete_request: content.code must be a string");
    return;
  }
  push_fn("is_complete");
  lua_pushlstring(K.L, code, len);
  json_t *status = NULL;
  if (call("is_complete", 1, 1) == 0) {
    status = lua_text(-1);
    lua_pop(K.L, 1);
  }
  if (status == NULL) status = json_string("unknown");
  json_t *content = json_pack("{s:o}", "status", status);
  if (strcmp(json_string_value(status), "incomplete") == 0)
    json_object_set_new(content, "indent", json_string(""));
  reply(req, sock, "is_complete_reply", content);
}

/* history_request: the cells of this session (gshell.kernel.history). */
static void history(gsK_msg *req, void *sock) {
  const char *kind = NULL, *pattern = NULL;
  int output = 0, raw = 1, unique = 0;
  json_int_t session = 0, start = 1, stop = -1, n = -1;
  json_error_t je;
  if (json_unpack_ex(req->content, &je, 0, "{s:s, s?b, s?b, s?I, s?I, s?I, s?I, s?s, s?b}", "hist_access_type",
                     &kind, "output", &output, "raw", &raw, "session", &session, "start", &start, "stop", &stop,
                     "n", &n, "pattern", &pattern, "unique", &unique) != 0) {
    char what[300];
    snprintf(what, sizeof what, "history_request: %s (hist_access_type must be a string; session, start, "
             "stop and n integers; pattern a string)", je.text);
    bad_request(req, sock, what);
    return;
  }
  push_fn("history");
  lua_createtable(K.L, 0, 8);
  lua_pushstring(K.L, kind);
  lua_setfield(K.L, -2, "hist_access_type");
  lua_pushinteger(K.L, (lua_Integer)session);
  lua_setfield(K.L, -2, "session");
  lua_pushinteger(K.L, (lua_Integer)start);
  lua_setfield(K.L, -2, "start");
  if (stop >= 0) {
    lua_pushinteger(K.L, (lua_Integer)stop);
    lua_setfield(K.L, -2, "stop");
  }
  if (n >= 0) {
    lua_pushinteger(K.L, (lua_Integer)n);
    lua_setfield(K.L, -2, "n");
  }
  if (pattern) {
    lua_pushstring(K.L, pattern);
    lua_setfield(K.L, -2, "pattern");
  }
  lua_pushboolean(K.L, unique);
  lua_setfield(K.L, -2, "unique");
  json_t *list = json_array();
  if (call("history", 1, 1) == 0) {
    int t = lua_gettop(K.L);
    lua_Integer len = lua_istable(K.L, t) ? (lua_Integer)lua_rawlen(K.L, t) : 0;
    for (lua_Integer i = 1; i <= len; i++) {
      lua_rawgeti(K.L, t, i);
      int e = lua_gettop(K.L);
      lua_rawgeti(K.L, e, 1);
      lua_rawgeti(K.L, e, 2);
      json_int_t sess = (json_int_t)lua_tointeger(K.L, -2), line = (json_int_t)lua_tointeger(K.L, -1);
      lua_rawgeti(K.L, e, 3);
      json_t *in = lua_text(-1);
      lua_rawgeti(K.L, e, 4);
      json_t *out = lua_text(-1);
      json_t *third = in ? in : json_string("");
      if (output) third = json_pack("[o, o]", third, out ? out : json_null());
      else json_decref(out);
      json_array_append_new(list, json_pack("[I, I, o]", sess, line, third));
      lua_settop(K.L, t);
    }
    lua_settop(K.L, t - 1);
  }
  reply(req, sock, "history_reply", json_pack("{s:s, s:o}", "status", "ok", "history", list));
}

static void shutdown_req(gsK_msg *req, void *sock) {
  int restart = 0;
  if (json_unpack(req->content, "{s?b}", "restart", &restart) != 0) {
    bad_request(req, sock, "shutdown_request: content.restart must be a boolean");
    return;
  }
  reply(req, sock, "shutdown_reply", json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
  publish(req, "shutdown_reply", json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
  K.shutdown = 1;
}

/* Handles one request from `sock`. */
static void handle(void *sock, const char *channel) {
  gsK_msg req;
  if (gsK_recv(sock, &req, channel) != 1) return;
  handle_msg(&req, sock, channel);
  watch_drain(); /* control requests that came while a cell ran */
}

/* Handles a request received from `sock` (and frees it). */
static void handle_msg(gsK_msg *m, void *sock, const char *channel) {
  gsK_msg req = *m;
  const char *t = req.msg_type;
  publish(&req, "status", json_pack("{s:s}", "execution_state", "busy"));
  if (strcmp(t, "kernel_info_request") == 0) kernel_info(&req, sock);
  else if (strcmp(t, "execute_request") == 0) execute(&req, sock);
  else if (strcmp(t, "complete_request") == 0) complete(&req, sock);
  else if (strcmp(t, "inspect_request") == 0) inspect(&req, sock);
  else if (strcmp(t, "is_complete_request") == 0) is_complete(&req, sock);
  else if (strcmp(t, "history_request") == 0) history(&req, sock);
  else if (strcmp(t, "comm_info_request") == 0)
    reply(&req, sock, "comm_info_reply", json_pack("{s:s, s:{}}", "status", "ok", "comms"));
  else if (strcmp(t, "shutdown_request") == 0) shutdown_req(&req, sock);
  else if (strcmp(t, "interrupt_request") == 0)   /* nothing runs while we read it */
    reply(&req, sock, "interrupt_reply", json_pack("{s:s}", "status", "ok"));
  else gsK_log("%s: unknown message type '%s' ignored", channel, t);
  publish(&req, "status", json_pack("{s:s}", "execution_state", "idle"));
  gsK_msg_free(&req);
}

/* ---- input through the stdin socket ----------------------------------- */

/* input(prompt, password): sends input_request on stdin to the frontend
 * that sent the running execute_request and waits for its input_reply.
 * Returns the line, or raises "interrupted!" on SIGINT, or an error when
 * the frontend takes no input. */
static int l_input(lua_State *L) {
  const char *prompt = luaL_optstring(L, 1, "");
  int password = lua_toboolean(L, 2);
  if (K.current == NULL || !K.allow_stdin) {
    lua_pushliteral(L, "this frontend does not take input (allow_stdin is false): io.read cannot ask for a line");
    return lua_error(L);
  }
  fflush(stdout);
  /* a reply already waiting answers no request of ours (a frontend that
   * sent it early, or one left from an interrupted input): dropped */
  for (;;) {
    zmq_pollitem_t it = {K.s.stdin_sock, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, 0) <= 0) break;
    gsK_msg stale;
    if (gsK_recv(K.s.stdin_sock, &stale, "stdin") != 1) continue;
    gsK_log("stdin: '%s' sent before any input_request: ignored", stale.msg_type);
    gsK_msg_free(&stale);
  }
  json_t *content = json_pack("{s:s, s:b}", "prompt", prompt, "password", password);
  json_t *header = gsK_new_header("input_request");
  char request_id[128] = "";
  const char *hid = json_string_value(json_object_get(header, "msg_id"));
  if (hid) snprintf(request_id, sizeof request_id, "%s", hid);
  gsK_send(K.s.stdin_sock, K.current->ids, K.current->nids, header, K.current->header, content);
  for (;;) {
    zmq_pollitem_t it = {K.s.stdin_sock, 0, ZMQ_POLLIN, 0};
    int r = zmq_poll(&it, 1, 200);
    if (gs_interrupted) {
      gs_interrupted = 0;
      lua_pushliteral(L, "interrupted!");
      return lua_error(L);
    }
    if (r < 0 && errno != EINTR) return luaL_error(L, "input: %s", zmq_strerror(errno));
    if (r <= 0) continue;
    gsK_msg m;
    if (gsK_recv(K.s.stdin_sock, &m, "stdin") != 1) continue;
    if (strcmp(m.msg_type, "input_reply") != 0) {
      gsK_log("stdin: '%s' while waiting for input_reply: ignored", m.msg_type);
      gsK_msg_free(&m);
      continue;
    }
    /* a reply naming another request answers that one, not ours (a reply
     * without a parent is taken: jupyter_client's input() sends none) */
    const char *parent_id = json_string_value(json_object_get(m.parent, "msg_id"));
    if (parent_id && *parent_id && request_id[0] && strcmp(parent_id, request_id) != 0) {
      gsK_log("stdin: an input_reply to another input_request (%s): ignored", parent_id);
      gsK_msg_free(&m);
      continue;
    }
    const char *value = json_string_value(json_object_get(m.content, "value"));
    if (value == NULL) {
      gsK_msg_free(&m);
      return luaL_error(L, "input: the frontend's input_reply has no value string");
    }
    lua_pushstring(L, value);
    gsK_msg_free(&m);
    return 1;
  }
}

/* ---- pictures mid-cell (lua/torch/display.lua through gshell.kernel) ------ */

/* display(data, display_id, update): publishes display_data (update false)
 * or update_display_data with the mime bundle `data` ({mime = text}) under
 * transient.display_id, parented to the running execute_request, after
 * everything the cell printed so far. */
static int l_display(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  size_t idlen;
  const char *id = luaL_checklstring(L, 2, &idlen);
  int update = lua_toboolean(L, 3);
  if (K.current == NULL) return luaL_error(L, "display: no cell is running");
  json_t *data = json_object();
  lua_pushnil(L);
  while (lua_next(L, 1) != 0) {
    if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING) {
      size_t n;
      const char *v = lua_tolstring(L, -1, &n);
      json_t *j = gsK_json_text(v, n);
      if (j) json_object_set_new(data, lua_tostring(L, -2), j);
    }
    lua_pop(L, 1);
  }
  json_t *content = json_pack("{s:o, s:{}, s:{s:s%}}", "data", data, "metadata", "transient", "display_id", id, idlen);
  publish(K.current, update ? "update_display_data" : "display_data", content);
  /* Wait until the iopub thread has forwarded it: without this, what the
   * cell prints next could reach the pipe while the message waits in the
   * PAIR, and be published first. Re-setting the same parent is that wait
   * (the thread answers it after everything before it in the PAIR). */
  gsK_iopub_set_parent(K.s.iopub_in, K.current->header);
  return 0;
}

static int open_kernel_io(lua_State *L) {
  static const luaL_Reg fns[] = {{"input", l_input}, {"display", l_display}, {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}

/* ---- the loop ------------------------------------------------------------- */

static void new_session_id(char out[40]) {
  unsigned char b[16];
  if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
    for (size_t i = 0; i < sizeof b; i++) b[i] = (unsigned char)(rand() ^ getpid() ^ (int)i);
  }
  snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}

/* Loads gshell.kernel and starts its session. */
static int load_module(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, open_kernel_io);
  lua_setfield(L, -2, "gshell.kernel_io");
  lua_pop(L, 1);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "gshell.kernel");
  if (gsR_docall(L, 1, 1) != LUA_OK) return -1;
  lua_getfield(L, -1, "start");
  if (gsR_docall(L, 0, 0) != LUA_OK) {
    lua_remove(L, -2);
    return -1;
  }
  K.mod_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

int gsK_run(lua_State *L, const char *connection_file) {
  gsK_conninfo ci;
  char err[600];
  if (gsK_read_connection(connection_file, &ci, err, sizeof err) != 0) {
    fprintf(stderr, "%s: %s\n", gsR_progname, err);
    return 1;
  }
  memset(&K, 0, sizeof K);
  K.L = L;
  K.mod_ref = LUA_NOREF;
  signal(SIGINT, SIG_IGN);    /* an interrupt while idle has nothing to stop */
  signal(SIGPIPE, SIG_IGN);
  char sid[40];
  new_session_id(sid);
  gsK_msg_init(ci.key, sid);
  int status = 0;
  if (gsK_open_sockets(&ci, &K.s, err, sizeof err) != 0) {
    gsK_log("%s", err);
    status = 1;
  } else if (load_module(L) != 0) {
    gsK_log("cannot start the session: %s", lua_tostring(L, -1));
    lua_pop(L, 1);
    status = 1;
  } else {
    gsK_log("started (session %s, connection file %s)", sid, connection_file);
    while (!K.shutdown) {
      zmq_pollitem_t items[3] = {
        {K.s.control, 0, ZMQ_POLLIN, 0},
        {K.s.shell, 0, ZMQ_POLLIN, 0},
        {K.s.stdin_sock, 0, ZMQ_POLLIN, 0},
      };
      if (zmq_poll(items, 3, -1) < 0) {
        if (errno == EINTR) continue;
        gsK_log("poll failed: %s", zmq_strerror(errno));
        status = 1;
        break;
      }
      if (items[0].revents & ZMQ_POLLIN) handle(K.s.control, "control");
      else if (items[1].revents & ZMQ_POLLIN) handle(K.s.shell, "shell");
      else if (items[2].revents & ZMQ_POLLIN) {
        gsK_msg m;                  /* no input was asked for: a late reply */
        if (gsK_recv(K.s.stdin_sock, &m, "stdin") == 1) {
          gsK_log("stdin: '%s' when no input was asked for: ignored", m.msg_type);
          gsK_msg_free(&m);
        }
      }
    }
  }
  if (K.mod_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, K.mod_ref);
  gsK_close_sockets(&K.s);
  gsK_msg_init(NULL, "");
  return status;
}
