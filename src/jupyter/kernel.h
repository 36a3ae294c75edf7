/* kernel.h: `gshell --kernel CONNECTION_FILE`, a Jupyter kernel (messaging
 * protocol 5.3 over ZeroMQ) in front of the same Lua session as the prompt.
 *
 *   kernel_conn.c     the connection file, the sockets, the heartbeat thread
 *   kernel_msg.c      the wire format: HMAC-SHA256 signing and checking,
 *                     splitting and building multipart messages
 *   kernel_iopub.c    the iopub thread: owns the PUB socket, turns what the
 *                     cell writes to fd 1 and 2 into `stream` messages
 *   kernel_main.c     the request loop and its handlers (which call the Lua
 *                     module gshell.kernel for everything about the session)
 *   kernel_install.c  `gshell --install-kernel`: the kernelspec
 *
 * C speaks the protocol; what a cell means (running it, printing it,
 * completing, help, continuation) is the shell's Lua, shared with the
 * prompt. */
#ifndef KERNEL_H
#define KERNEL_H

#include <stddef.h>

#include <jansson.h>
#include <lua.h>
#include <zmq.h>

#define GSK_PROTOCOL_VERSION "5.3"
#define GSK_DELIM "<IDS|MSG>"
#define GSK_MAX_FRAMES 64           /* identities + delimiter + parts, at most */
#define GSK_MAX_FRAME_BYTES (64L << 20)

/* ---- kernel_msg.c: the kernel's own log lines go to the stderr it was
 * started with (gsK_log_fd: kernel_iopub.c points it there while fd 2 is
 * the cell's stderr stream) ---- */
extern int gsK_log_fd;
void gsK_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- kernel_conn.c ------------------------------------------------------ */

typedef struct {
  char transport[16], ip[256], key[512], scheme[32];
  int shell_port, iopub_port, stdin_port, control_port, hb_port;
} gsK_conninfo;

typedef struct {
  void *ctx;
  void *shell, *control, *stdin_sock;   /* ROUTER */
  void *iopub;                          /* PUB, used by the iopub thread only */
  void *iopub_in;                       /* PAIR to the iopub thread */
} gsK_sockets;

/* Reads and checks the connection file. On error returns -1 with a message
 * (naming the file and what is wrong) in err. */
int gsK_read_connection(const char *path, gsK_conninfo *ci, char *err, size_t errlen);

/* Creates the context, binds every socket, starts the heartbeat and the
 * iopub threads. Returns -1 with a message in err. */
int gsK_open_sockets(const gsK_conninfo *ci, gsK_sockets *s, char *err, size_t errlen);

/* Stops the threads and closes everything (pending output is sent first). */
void gsK_close_sockets(gsK_sockets *s);

/* ---- kernel_msg.c ------------------------------------------------------- */

typedef struct {
  zmq_msg_t *ids;      /* routing identities, as received */
  int nids;
  json_t *header, *parent, *metadata, *content;
  const char *msg_type;   /* inside header */
} gsK_msg;

/* The signing key and this kernel's session id; set once at start. */
void gsK_msg_init(const char *key, const char *session_id);
const char *gsK_session_id(void);

/* Receives one multipart message from `sock` (non-blocking: call after a
 * poll said it is readable). Returns 1 with *m filled, 0 when the message
 * was dropped (bad signature, malformed: logged), -1 when nothing could be
 * read. */
int gsK_recv(void *sock, gsK_msg *m, const char *channel);
void gsK_msg_free(gsK_msg *m);

/* A new header for a message of `type` (msg_id, session, date, ...). */
json_t *gsK_new_header(const char *type);

/* Signs and sends [ids..., <IDS|MSG>, sig, header, parent, metadata,
 * content]. Steals the references to header and content; parent may be
 * NULL (sent as {}). Returns 0, or -1 when the socket refused. */
int gsK_send(void *sock, zmq_msg_t *ids, int nids, json_t *header, const json_t *parent,
             json_t *content);

/* Writes the bytes in[0..n) to out (room for 3n bytes) as valid UTF-8:
 * invalid bytes become U+FFFD; a sequence cut off by the end is left
 * unconsumed unless `final`. Returns the bytes written; *consumed says how
 * many were read. */
size_t gsK_utf8_clean(const unsigned char *in, size_t n, unsigned char *out, int final,
                      size_t *consumed);

/* A JSON string from any bytes (JSON strings must be UTF-8). */
json_t *gsK_json_text(const char *s, size_t n);

/* For iopub: the topic frame "kernel.<session>.<type>" as the one id. */
int gsK_publish_on(void *sock, const char *type, const json_t *parent, json_t *content);

/* ---- kernel_iopub.c ----------------------------------------------------- */

/* Starts the iopub thread on PUB socket `pub` (bound) fed by the inproc
 * PAIR `addr`; fd 1 and 2 are replaced by pipes it reads (the originals
 * are kept for the kernel's log and restored by gsK_iopub_shutdown). */
int gsK_iopub_start(void *ctx, void *pub, const char *addr, char *err, size_t errlen);

/* Publishes what is pending, stops the thread (told through the main
 * thread's PAIR `iopub_in`) and puts fd 1 and 2 back. */
void gsK_iopub_shutdown(void *iopub_in);

/* The parent header of the `stream` messages made from fd 1 and 2 from now
 * on (NULL: none); output written before is published under the old one. */
int gsK_iopub_set_parent(void *iopub_in, const json_t *parent);

/* Publishes a message on iopub (steals header and content), after every
 * byte written to fd 1 and 2 so far has been published as `stream`. */
int gsK_publish(void *iopub_in, const char *type, const json_t *parent, json_t *content);

/* ---- kernel_main.c / kernel_install.c ----------------------------------- */

/* `gshell --kernel FILE`: runs until shutdown. Returns the exit status. */
int gsK_run(lua_State *L, const char *connection_file);

/* `gshell --install-kernel [--user | --prefix P]`; mode 'u', 'p' or 's'
 * (system). Returns the exit status. */
int gsK_install(const char *argv0, char mode, const char *prefix);

#endif
