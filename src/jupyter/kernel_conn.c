/* kernel_conn.c: the connection file Jupyter writes for a kernel, and the
 * five sockets it names: shell, control and stdin (ROUTER), iopub (PUB, run
 * by the iopub thread) and heartbeat (REP, echoed by a thread of its own so
 * the kernel stays "alive" while a cell runs). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "jupyter/kernel.h"

static int get_port(json_t *root, const char *name, int *out, char *err, size_t errlen,
                    const char *path) {
  json_t *v = json_object_get(root, name);
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 65535) {
    snprintf(err, errlen, "%s: \"%s\" must be a port number (0 to 65535)", path, name);
    return -1;
  }
  *out = (int)json_integer_value(v);
  return 0;
}

static int get_string(json_t *root, const char *name, const char *dflt, char *out, size_t outlen,
                      char *err, size_t errlen, const char *path) {
  json_t *v = json_object_get(root, name);
  const char *s = v ? json_string_value(v) : dflt;
  if (s == NULL) {
    snprintf(err, errlen, "%s: \"%s\" must be a string", path, name);
    return -1;
  }
  if (strlen(s) >= outlen) {
    snprintf(err, errlen, "%s: \"%s\" is too long (at most %zu bytes)", path, name, outlen - 1);
    return -1;
  }
  snprintf(out, outlen, "%s", s);
  return 0;
}

int gsK_read_connection(const char *path, gsK_conninfo *ci, char *err, size_t errlen) {
  json_error_t je;
  memset(ci, 0, sizeof *ci);
  json_t *root = json_load_file(path, 0, &je);
  if (root == NULL) {
    snprintf(err, errlen, "cannot read the connection file %s: %s", path, je.text);
    return -1;
  }
  int rc = -1;
  if (!json_is_object(root)) {
    snprintf(err, errlen, "%s: the connection file must hold a JSON object", path);
  } else if (get_string(root, "transport", "tcp", ci->transport, sizeof ci->transport, err, errlen, path) == 0 &&
             get_string(root, "ip", "127.0.0.1", ci->ip, sizeof ci->ip, err, errlen, path) == 0 &&
             get_string(root, "key", "", ci->key, sizeof ci->key, err, errlen, path) == 0 &&
             get_string(root, "signature_scheme", "hmac-sha256", ci->scheme, sizeof ci->scheme, err, errlen, path) == 0 &&
             get_port(root, "shell_port", &ci->shell_port, err, errlen, path) == 0 &&
             get_port(root, "iopub_port", &ci->iopub_port, err, errlen, path) == 0 &&
             get_port(root, "stdin_port", &ci->stdin_port, err, errlen, path) == 0 &&
             get_port(root, "control_port", &ci->control_port, err, errlen, path) == 0 &&
             get_port(root, "hb_port", &ci->hb_port, err, errlen, path) == 0) {
    if (strcmp(ci->transport, "tcp") != 0 && strcmp(ci->transport, "ipc") != 0)
      snprintf(err, errlen, "%s: transport \"%s\" is not supported (tcp or ipc)", path, ci->transport);
    else if (strcmp(ci->scheme, "hmac-sha256") != 0)
      snprintf(err, errlen, "%s: signature_scheme \"%s\" is not supported (hmac-sha256)", path, ci->scheme);
    else
      rc = 0;
  }
  json_decref(root);
  return rc;
}

/* ---- sockets -------------------------------------------------------------- */

static void *hb_sock;
static pthread_t hb_thread;
static int hb_running;

/* Echoes every heartbeat until the context is shut down, every frame of
 * it: a REP socket sends its reply only once the whole request was read,
 * so the frames are kept (up to HB_FRAMES; more are read and dropped) and
 * sent back in order, the last without ZMQ_SNDMORE. */
#define HB_FRAMES 16
static void *hb_main(void *arg) {
  (void)arg;
  zmq_msg_t f[HB_FRAMES];
  for (;;) {
    int n = 0, more = 1, stop = 0;
    while (more) {
      zmq_msg_t m;
      zmq_msg_init(&m);
      if (zmq_msg_recv(&m, hb_sock, 0) < 0) {
        zmq_msg_close(&m);
        if (errno == EINTR) continue;
        stop = 1;                         /* ETERM: shutting down */
        break;
      }
      more = zmq_msg_more(&m);
      if (n < HB_FRAMES) {
        zmq_msg_init(&f[n]);
        zmq_msg_move(&f[n++], &m);
      }
      zmq_msg_close(&m);
    }
    for (int i = 0; i < n; i++) {
      if (!stop)
        while (zmq_msg_send(&f[i], hb_sock, i + 1 < n ? ZMQ_SNDMORE : 0) < 0 && errno == EINTR) {}
      zmq_msg_close(&f[i]);
    }
    if (stop) break;
  }
  zmq_close(hb_sock);
  return NULL;
}

static void *bind_socket(void *ctx, int type, const gsK_conninfo *ci, int port, const char *name,
                         char *err, size_t errlen) {
  char addr[300];
  if (strcmp(ci->transport, "tcp") == 0) snprintf(addr, sizeof addr, "tcp://%s:%d", ci->ip, port);
  else snprintf(addr, sizeof addr, "ipc://%s-%d", ci->ip, port);
  void *s = zmq_socket(ctx, type);
  if (s == NULL) {
    snprintf(err, errlen, "cannot create the %s socket: %s", name, zmq_strerror(errno));
    return NULL;
  }
  int64_t maxsize = GSK_MAX_FRAME_BYTES;
  int linger = 1000;
  zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxsize, sizeof maxsize);
  zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
  /* Nothing reads these sockets while a cell runs: with ZeroMQ's default
   * of 1000 messages, any local process (no key needed to send) could park
   * gigabytes here. A few messages per peer are enough: a frontend's
   * further requests wait in its own queue (its send high-water mark). */
  if (type != ZMQ_PUB) {
    int hwm = GSK_RECV_HWM;
    zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
  }
  if (zmq_bind(s, addr) != 0) {
    snprintf(err, errlen, "cannot bind the %s socket to %s: %s", name, addr, zmq_strerror(errno));
    zmq_close(s);
    return NULL;
  }
  return s;
}

int gsK_open_sockets(const gsK_conninfo *ci, gsK_sockets *s, char *err, size_t errlen) {
  static const char inproc[] = "inproc://gshell-iopub";
  memset(s, 0, sizeof *s);
  s->ctx = zmq_ctx_new();
  if (s->ctx == NULL) {
    snprintf(err, errlen, "cannot create a ZeroMQ context: %s", zmq_strerror(errno));
    return -1;
  }
  void *pub;
  if (!(s->shell = bind_socket(s->ctx, ZMQ_ROUTER, ci, ci->shell_port, "shell", err, errlen)) ||
      !(s->control = bind_socket(s->ctx, ZMQ_ROUTER, ci, ci->control_port, "control", err, errlen)) ||
      !(s->stdin_sock = bind_socket(s->ctx, ZMQ_ROUTER, ci, ci->stdin_port, "stdin", err, errlen)) ||
      !(pub = bind_socket(s->ctx, ZMQ_PUB, ci, ci->iopub_port, "iopub", err, errlen)) ||
      !(hb_sock = bind_socket(s->ctx, ZMQ_REP, ci, ci->hb_port, "heartbeat", err, errlen)))
    return -1;
  s->iopub = pub;
  if (gsK_iopub_start(s->ctx, pub, inproc, err, errlen) != 0) return -1;
  s->iopub_in = zmq_socket(s->ctx, ZMQ_PAIR);
  if (s->iopub_in == NULL || zmq_connect(s->iopub_in, inproc) != 0) {
    snprintf(err, errlen, "cannot connect to the iopub thread: %s", zmq_strerror(errno));
    return -1;
  }
  if (pthread_create(&hb_thread, NULL, hb_main, NULL) != 0) {
    snprintf(err, errlen, "cannot start the heartbeat thread");
    return -1;
  }
  hb_running = 1;
  return 0;
}

void gsK_close_sockets(gsK_sockets *s) {
  if (s->ctx == NULL) return;
  if (s->iopub_in) {
    gsK_iopub_shutdown(s->iopub_in);
    zmq_close(s->iopub_in);
  }
  void *socks[] = {s->iopub, s->shell, s->control, s->stdin_sock};
  for (size_t i = 0; i < sizeof socks / sizeof socks[0]; i++)
    if (socks[i]) zmq_close(socks[i]);
  zmq_ctx_shutdown(s->ctx);             /* wakes the heartbeat thread with ETERM */
  if (hb_running) pthread_join(hb_thread, NULL);
  else if (hb_sock) zmq_close(hb_sock);
  hb_running = 0;
  hb_sock = NULL;
  zmq_ctx_term(s->ctx);
  memset(s, 0, sizeof *s);
}
