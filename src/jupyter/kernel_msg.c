/* kernel_msg.c: the Jupyter wire format. A message is the multipart
 *   [identities..., "<IDS|MSG>", signature, header, parent_header,
 *    metadata, content, buffers...]
 * where the signature is the hex HMAC-SHA256 (OpenSSL) of the four JSON
 * frames under the connection file's key (no key: no signing). JSON is
 * jansson's. Anything that is not such a message, or whose signature does
 * not match, is dropped here and logged; it never reaches a handler. */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "jupyter/kernel.h"

int gsK_log_fd = 2;

void gsK_log(const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n > sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  char head[] = "gshell kernel: ";
  ssize_t w = write(gsK_log_fd, head, sizeof head - 1);
  w = write(gsK_log_fd, line, (size_t)n);
  (void)w;
}

static char *sign_key;
static size_t sign_key_len;
static char session_id[40];
static atomic_ulong msg_counter;

void gsK_msg_init(const char *key, const char *sid) {
  free(sign_key);
  sign_key = key ? strdup(key) : NULL;      /* NULL key: forget it (at exit) */
  sign_key_len = sign_key ? strlen(sign_key) : 0;
  snprintf(session_id, sizeof session_id, "%s", sid);
}

const char *gsK_session_id(void) { return session_id; }

/* Hex HMAC-SHA256 of the parts, one after the other. Returns 0 or -1. */
static int hmac_hex(const char *const *parts, const size_t *lens, int n, char out[65]) {
  int rc = -1;
  EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
  char digest_name[] = "SHA256";
  OSSL_PARAM params[] = {
    OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
    OSSL_PARAM_construct_end(),
  };
  unsigned char md[EVP_MAX_MD_SIZE];
  size_t mdlen = 0;
  if (ctx && EVP_MAC_init(ctx, (const unsigned char *)sign_key, sign_key_len, params)) {
    int ok = 1;
    for (int i = 0; ok && i < n; i++) ok = EVP_MAC_update(ctx, (const unsigned char *)parts[i], lens[i]);
    if (ok && EVP_MAC_final(ctx, md, &mdlen, sizeof md) && mdlen == 32) {
      static const char hex[] = "0123456789abcdef";
      for (size_t i = 0; i < mdlen; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
      }
      out[64] = '\0';
      rc = 0;
    }
  }
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  return rc;
}

/* Length of the valid UTF-8 sequence at s (n bytes left): 1-4; 0 when the
 * sequence is cut off by the end of the buffer (more may come); -1 when
 * it is invalid. */
static int utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  int len;
  unsigned lo = 0x80, hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return -1;
  }
  for (int i = 1; i < len; i++) {
    if ((size_t)i >= n) return 0;
    if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xBF)) return -1;
  }
  return len;
}

size_t gsK_utf8_clean(const unsigned char *in, size_t n, unsigned char *out, int final,
                      size_t *consumed) {
  size_t o = 0, i = 0;
  while (i < n) {
    int len = utf8_seq(in + i, n - i);
    if (len == 0 && !final) break;        /* cut off: the rest may follow */
    if (len <= 0) {
      memcpy(out + o, "\xEF\xBF\xBD", 3);
      o += 3;
      i++;
    } else {
      memcpy(out + o, in + i, (size_t)len);
      o += (size_t)len;
      i += (size_t)len;
    }
  }
  *consumed = i;
  return o;
}

json_t *gsK_json_text(const char *s, size_t n) {
  unsigned char *out = malloc(n * 3 + 1);
  if (out == NULL) return NULL;
  size_t used;
  size_t o = gsK_utf8_clean((const unsigned char *)s, n, out, 1, &used);
  json_t *j = json_stringn((const char *)out, o);
  free(out);
  return j;
}

/* ---- receiving ---------------------------------------------------------- */

static void free_frames(zmq_msg_t *f, int n) {
  for (int i = 0; i < n; i++) zmq_msg_close(&f[i]);
}

void gsK_msg_free(gsK_msg *m) {
  if (m->ids) {
    free_frames(m->ids, m->nids);
    free(m->ids);
  }
  json_decref(m->header);
  json_decref(m->parent);
  json_decref(m->metadata);
  json_decref(m->content);
  memset(m, 0, sizeof *m);
}

/* A JSON object from a frame, or NULL (with the reason in err). */
static json_t *parse_object(zmq_msg_t *f, const char *what, char *err, size_t errlen) {
  json_error_t je;
  json_t *j = json_loadb(zmq_msg_data(f), zmq_msg_size(f), JSON_ALLOW_NUL, &je);
  if (j == NULL) {
    snprintf(err, errlen, "%s is not JSON (%s)", what, je.text);
    return NULL;
  }
  if (!json_is_object(j)) {
    snprintf(err, errlen, "%s is not a JSON object", what);
    json_decref(j);
    return NULL;
  }
  return j;
}

static int frame_is(zmq_msg_t *f, const char *s) {
  size_t n = strlen(s);
  return zmq_msg_size(f) == n && memcmp(zmq_msg_data(f), s, n) == 0;
}

/* Checks the frames after the delimiter and fills m. Returns 0, or -1 with
 * the reason in err. */
static int parse_frames(zmq_msg_t *f, int nf, int delim, gsK_msg *m, char *err, size_t errlen) {
  if (nf - delim - 1 < 5) {
    snprintf(err, errlen, "%d frames after the delimiter, need at least 5 "
             "(signature, header, parent_header, metadata, content)", nf - delim - 1);
    return -1;
  }
  zmq_msg_t *sig = &f[delim + 1], *parts = &f[delim + 2];
  if (sign_key_len > 0) {
    const char *p[4];
    size_t l[4];
    for (int i = 0; i < 4; i++) {
      p[i] = zmq_msg_data(&parts[i]);
      l[i] = zmq_msg_size(&parts[i]);
    }
    char want[65];
    if (hmac_hex(p, l, 4, want) != 0) {
      snprintf(err, errlen, "cannot compute the HMAC");
      return -1;
    }
    if (zmq_msg_size(sig) != 64 || CRYPTO_memcmp(want, zmq_msg_data(sig), 64) != 0) {
      snprintf(err, errlen, "bad signature");
      return -1;
    }
  }
  static const char *const names[] = {"header", "parent_header", "metadata", "content"};
  json_t *j[4] = {NULL, NULL, NULL, NULL};
  for (int i = 0; i < 4; i++) {
    j[i] = parse_object(&parts[i], names[i], err, errlen);
    if (j[i] == NULL) {
      for (int k = 0; k < i; k++) json_decref(j[k]);
      return -1;
    }
  }
  const char *type = json_string_value(json_object_get(j[0], "msg_type"));
  if (type == NULL || *type == '\0') {
    snprintf(err, errlen, "header has no msg_type string");
    for (int k = 0; k < 4; k++) json_decref(j[k]);
    return -1;
  }
  m->header = j[0];
  m->parent = j[1];
  m->metadata = j[2];
  m->content = j[3];
  m->msg_type = type;
  return 0;
}

int gsK_recv(void *sock, gsK_msg *m, const char *channel) {
  memset(m, 0, sizeof *m);
  zmq_msg_t f[GSK_MAX_FRAMES];
  int nf = 0, more = 1, too_many = 0;
  while (more) {
    zmq_msg_t part;
    zmq_msg_init(&part);
    if (zmq_msg_recv(&part, sock, nf == 0 && !too_many ? ZMQ_DONTWAIT : 0) < 0) {
      int e = errno;
      zmq_msg_close(&part);
      if (e == EINTR) continue;
      free_frames(f, nf);
      if (e != EAGAIN) gsK_log("%s: receive failed: %s", channel, zmq_strerror(e));
      return -1;
    }
    more = zmq_msg_more(&part);
    if (nf < GSK_MAX_FRAMES) {
      f[nf++] = part;
    } else {
      too_many = 1;
      zmq_msg_close(&part);
    }
  }
  char err[200];
  int delim = -1;
  for (int i = 0; i < nf && delim < 0; i++)
    if (frame_is(&f[i], GSK_DELIM)) delim = i;
  if (too_many) {
    snprintf(err, sizeof err, "more than %d frames", GSK_MAX_FRAMES);
  } else if (delim < 0) {
    snprintf(err, sizeof err, "no <IDS|MSG> delimiter frame");
  } else if (parse_frames(f, nf, delim, m, err, sizeof err) == 0) {
    m->nids = delim;
    m->ids = calloc(delim ? (size_t)delim : 1, sizeof *m->ids);
    if (m->ids == NULL) {
      gsK_msg_free(m);
      free_frames(f, nf);
      gsK_log("%s: out of memory, message dropped", channel);
      return 0;
    }
    for (int i = 0; i < delim; i++) {
      zmq_msg_init(&m->ids[i]);
      zmq_msg_move(&m->ids[i], &f[i]);
    }
    free_frames(f, nf);
    return 1;
  }
  free_frames(f, nf);
  gsK_log("%s: message dropped: %s", channel, err);
  return 0;
}

/* ---- sending ------------------------------------------------------------ */

json_t *gsK_new_header(const char *type) {
  struct timespec ts;
  struct tm tm;
  char date[64], stamp[40], id[96];
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(date, sizeof date, "%s.%06ldZ", stamp, ts.tv_nsec / 1000);
  snprintf(id, sizeof id, "%s_%d_%lu", session_id, (int)getpid(), atomic_fetch_add(&msg_counter, 1) + 1);
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", id, "session", session_id,
                   "username", "gshell", "date", date, "msg_type", type,
                   "version", GSK_PROTOCOL_VERSION);
}

static int send_frame(void *sock, const void *data, size_t len, int more) {
  for (;;) {
    if (zmq_send(sock, data, len, more ? ZMQ_SNDMORE : 0) >= 0) return 0;
    if (errno != EINTR) return -1;
  }
}

/* Sends ids (or the one topic frame), then the signed message. */
static int send_message(void *sock, zmq_msg_t *ids, int nids, const char *topic, json_t *header,
                        const json_t *parent, json_t *content) {
  int rc = -1;
  json_t *empty = json_object();
  char *p[4] = {NULL, NULL, NULL, NULL};
  if (header == NULL || content == NULL || empty == NULL) goto out;
  p[0] = json_dumps(header, JSON_COMPACT);
  p[1] = json_dumps(parent ? parent : empty, JSON_COMPACT);
  p[2] = json_dumps(empty, JSON_COMPACT);
  p[3] = json_dumps(content, JSON_COMPACT);
  if (!p[0] || !p[1] || !p[2] || !p[3]) goto out;
  size_t l[4];
  for (int i = 0; i < 4; i++) l[i] = strlen(p[i]);
  char sig[65] = "";
  if (sign_key_len > 0 && hmac_hex((const char *const *)p, l, 4, sig) != 0) goto out;
  for (int i = 0; i < nids; i++)
    if (send_frame(sock, zmq_msg_data(&ids[i]), zmq_msg_size(&ids[i]), 1) != 0) goto out;
  if (topic && send_frame(sock, topic, strlen(topic), 1) != 0) goto out;
  if (send_frame(sock, GSK_DELIM, strlen(GSK_DELIM), 1) != 0) goto out;
  if (send_frame(sock, sig, strlen(sig), 1) != 0) goto out;
  for (int i = 0; i < 4; i++)
    if (send_frame(sock, p[i], l[i], i < 3) != 0) goto out;
  rc = 0;
out:
  if (rc != 0) gsK_log("cannot send a message: %s", zmq_strerror(errno));
  for (int i = 0; i < 4; i++) free(p[i]);
  json_decref(empty);
  json_decref(header);
  json_decref(content);
  return rc;
}

int gsK_send(void *sock, zmq_msg_t *ids, int nids, json_t *header, const json_t *parent,
             json_t *content) {
  return send_message(sock, ids, nids, NULL, header, parent, content);
}

int gsK_publish_on(void *sock, const char *type, const json_t *parent, json_t *content) {
  char topic[128];
  snprintf(topic, sizeof topic, "kernel.%s.%s", session_id, type);
  return send_message(sock, NULL, 0, topic, gsK_new_header(type), parent, content);
}
