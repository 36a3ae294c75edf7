/* kernel_iopub.c: the iopub thread. It alone owns the PUB socket. File
 * descriptors 1 and 2 are pipes it reads, so everything a cell writes
 * (Lua's print and io.write, C printf, `!cmd` children) is published as
 * `stream` messages while the cell runs. The main thread's own iopub
 * messages (status, execute_input, execute_result, error) come through an
 * inproc PAIR socket; before forwarding one, the thread drains both pipes,
 * so output written before a result is published before it. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jupyter/kernel.h"

/* One-frame messages from the main thread (real messages have 7+ frames). */
static const char STOP[] = "stop";
static const char PARENT[] = "parent:";   /* + the header JSON, or nothing */

static void *pub_sock, *pull_sock;
static pthread_t thread;
static int running;
static int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
static int saved_out = -1, saved_err = -1;
static json_t *stream_parent;   /* iopub thread only */

/* The parent of the stream messages changes through the PAIR, in order
 * with the rest: output written under the old parent is drained first.
 * The caller waits for the thread to answer, so that what it writes next
 * cannot be read under the old parent. */
int gsK_iopub_set_parent(void *iopub_in, const json_t *parent) {
  char *text = parent ? json_dumps(parent, JSON_COMPACT) : NULL;
  size_t n = text ? strlen(text) : 0;
  char *frame = malloc(sizeof PARENT - 1 + n + 1);
  int rc = -1;
  if (frame) {
    memcpy(frame, PARENT, sizeof PARENT - 1);
    if (n) memcpy(frame + sizeof PARENT - 1, text, n);
    fflush(stdout);
    fflush(stderr);
    while ((rc = zmq_send(iopub_in, frame, sizeof PARENT - 1 + n, 0)) < 0 && errno == EINTR) {}
    /* wait until it applies: the cell's output must not be read before */
    char ack[4];
    while (rc >= 0 && (rc = zmq_recv(iopub_in, ack, sizeof ack, 0)) < 0 && errno == EINTR) {}
  }
  free(frame);
  free(text);
  return rc < 0 ? -1 : 0;
}

/* ---- streams -------------------------------------------------------------- */

/* Output written close together goes out as one message: a source's bytes
 * are published when nothing more came for STREAM_WAIT_MS, when they have
 * waited STREAM_MAX_AGE_MS, when STREAM_CHUNK bytes are pending, and before
 * any message of the main thread. */
#define STREAM_CHUNK 65536
#define STREAM_WAIT_MS 5
#define STREAM_MAX_AGE_MS 50

typedef struct {
  int fd;
  const char *name;
  unsigned char acc[STREAM_CHUNK];   /* read, not yet published */
  size_t nacc;
  double since;                      /* when the oldest pending byte came */
} stream_src;

static stream_src srcs[2];

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Publishes the pending bytes as a stream message, as valid UTF-8 (invalid
 * bytes become U+FFFD); a sequence cut off at the end waits for the next
 * read unless `final`. */
static void flush_stream(stream_src *s, int final) {
  if (s->nacc == 0) return;
  unsigned char *out = malloc(s->nacc * 3 + 1);
  if (out == NULL) return;
  size_t used;
  size_t o = gsK_utf8_clean(s->acc, s->nacc, out, final, &used);
  if (o > 0) {
    json_t *content = json_pack("{s:s, s:s%}", "name", s->name, "text", (const char *)out, o);
    gsK_publish_on(pub_sock, "stream", stream_parent, content);
  }
  free(out);
  memmove(s->acc, s->acc + used, s->nacc - used);
  s->nacc -= used;
  s->since = s->nacc ? now_ms() : 0;
}

/* Reads everything the pipe holds now. */
static void read_stream(stream_src *s) {
  for (;;) {
    ssize_t r = read(s->fd, s->acc + s->nacc, sizeof s->acc - s->nacc);
    if (r > 0) {
      if (s->nacc == 0) s->since = now_ms();
      s->nacc += (size_t)r;
      if (s->nacc == sizeof s->acc) flush_stream(s, 0);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    return;
  }
}

/* Publishes everything written to fd 1 and 2 so far. */
static void drain_streams(int final) {
  for (int i = 0; i < 2; i++) {
    read_stream(&srcs[i]);
    flush_stream(&srcs[i], final);
  }
}

/* ---- the thread ------------------------------------------------------------ */

/* Forwards one multipart message from the PAIR to PUB. Returns 1 on STOP. */
static int forward(void) {
  zmq_msg_t parts[GSK_MAX_FRAMES];
  int n = 0, more = 1;
  while (more) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, pull_sock, 0) < 0) {
      zmq_msg_close(&m);
      if (errno == EINTR) continue;
      for (int i = 0; i < n; i++) zmq_msg_close(&parts[i]);
      return errno == ETERM;
    }
    more = zmq_msg_more(&m);
    if (n < GSK_MAX_FRAMES) parts[n++] = m;
    else zmq_msg_close(&m);
  }
  int stop = n == 1 && zmq_msg_size(&parts[0]) == sizeof STOP - 1 &&
             memcmp(zmq_msg_data(&parts[0]), STOP, sizeof STOP - 1) == 0;
  int parent = n == 1 && zmq_msg_size(&parts[0]) >= sizeof PARENT - 1 &&
               memcmp(zmq_msg_data(&parts[0]), PARENT, sizeof PARENT - 1) == 0;
  drain_streams(stop || parent);
  if (parent) {
    json_decref(stream_parent);
    stream_parent = NULL;
    size_t len = zmq_msg_size(&parts[0]) - (sizeof PARENT - 1);
    if (len) stream_parent = json_loadb((const char *)zmq_msg_data(&parts[0]) + sizeof PARENT - 1, len, 0, NULL);
    zmq_msg_close(&parts[0]);
    while (zmq_send(pull_sock, "ok", 2, 0) < 0 && errno == EINTR) {}
    return 0;
  }
  for (int i = 0; i < n; i++) {
    if (!stop) {
      while (zmq_msg_send(&parts[i], pub_sock, i + 1 < n ? ZMQ_SNDMORE : 0) < 0 && errno == EINTR) {}
    }
    zmq_msg_close(&parts[i]);
  }
  return stop;
}

static void *iopub_main(void *arg) {
  (void)arg;
  for (;;) {
    zmq_pollitem_t items[3] = {
      {pull_sock, 0, ZMQ_POLLIN, 0},
      {NULL, srcs[0].fd, ZMQ_POLLIN, 0},
      {NULL, srcs[1].fd, ZMQ_POLLIN, 0},
    };
    int pending = srcs[0].nacc || srcs[1].nacc;
    int r = zmq_poll(items, 3, pending ? STREAM_WAIT_MS : -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; i++) {
      stream_src *src = &srcs[i];
      if (items[1 + i].revents & (ZMQ_POLLIN | ZMQ_POLLERR)) read_stream(src);
      if (src->nacc && (r == 0 || now_ms() - src->since >= STREAM_MAX_AGE_MS)) flush_stream(src, 0);
    }
    if ((items[0].revents & ZMQ_POLLIN) && forward()) break;
  }
  return NULL;
}

/* fd `target` becomes the write end of a new pipe; the read end is
 * returned (non-blocking) in *rd and the old target kept in *saved. */
static int redirect(int target, int p[2], int *saved) {
  if (pipe(p) != 0) return -1;
  *saved = dup(target);
  if (*saved < 0 || dup2(p[1], target) < 0) return -1;
  close(p[1]);
  p[1] = -1;
  fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
  fcntl(p[0], F_SETFD, FD_CLOEXEC);
  fcntl(*saved, F_SETFD, FD_CLOEXEC);
  return 0;
}

int gsK_iopub_start(void *ctx, void *pub, const char *addr, char *err, size_t errlen) {
  pub_sock = pub;
  pull_sock = zmq_socket(ctx, ZMQ_PAIR);
  if (pull_sock == NULL || zmq_bind(pull_sock, addr) != 0) {
    snprintf(err, errlen, "cannot bind %s: %s", addr, zmq_strerror(errno));
    return -1;
  }
  fflush(stdout);
  fflush(stderr);
  if (redirect(1, out_pipe, &saved_out) != 0 || redirect(2, err_pipe, &saved_err) != 0) {
    snprintf(err, errlen, "cannot redirect stdout/stderr: %s", strerror(errno));
    return -1;
  }
  gsK_log_fd = saved_err; /* the log keeps going to the real stderr */
  /* a pipe makes stdout fully buffered: print whole lines as they come */
  setvbuf(stdout, NULL, _IOLBF, 0);
  srcs[0].fd = out_pipe[0];
  srcs[0].name = "stdout";
  srcs[1].fd = err_pipe[0];
  srcs[1].name = "stderr";
  if (pthread_create(&thread, NULL, iopub_main, NULL) != 0) {
    snprintf(err, errlen, "cannot start the iopub thread");
    return -1;
  }
  running = 1;
  return 0;
}

int gsK_publish(void *iopub_in, const char *type, const json_t *parent, json_t *content) {
  fflush(stdout);
  fflush(stderr);
  return gsK_publish_on(iopub_in, type, parent, content);
}

/* Sends STOP through `iopub_in` (what is pending is published first), joins
 * the thread and puts fd 1 and 2 back. */
static void stop_thread(void *iopub_in) {
  if (!running) return;
  fflush(stdout);
  fflush(stderr);
  while (zmq_send(iopub_in, STOP, sizeof STOP - 1, 0) < 0 && errno == EINTR) {}
  pthread_join(thread, NULL);
  running = 0;
}

void gsK_iopub_shutdown(void *iopub_in) {
  stop_thread(iopub_in);
  if (pull_sock) zmq_close(pull_sock);
  pull_sock = NULL;
  fflush(stdout);
  if (saved_out >= 0) { dup2(saved_out, 1); close(saved_out); saved_out = -1; }
  if (saved_err >= 0) { gsK_log_fd = 2; dup2(saved_err, 2); close(saved_err); saved_err = -1; }
  for (int i = 0; i < 2; i++) {
    if (out_pipe[i] >= 0) close(out_pipe[i]);
    if (err_pipe[i] >= 0) close(err_pipe[i]);
    out_pipe[i] = err_pipe[i] = -1;
  }
  json_decref(stream_parent);
  stream_parent = NULL;
}
