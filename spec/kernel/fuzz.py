"""Malformed messages at one `gshell --kernel`, for spec/kernel_spec.lua:
    python3 fuzz.py GSHELL OUT.lua
Every message is sent raw on the shell or control socket (a DEALER, as a
client is). Well-signed messages whose content is wrong must get an error
reply; anything else must be dropped. After every case the kernel must still
answer kernel_info, and at the end it must run a cell and shut down cleanly
(exit status 0: under the ASan build, no leak or error report)."""
import json
import os
import random
import sys

import zmq
from jupyter_client.session import Session

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_util as U  # noqa: E402


def frames_for(session, msg_type, content, header=None, parent=None, metadata=None):
    """The signed frames (after the delimiter) of a message, with any part
    replaced by raw bytes when given as bytes."""
    hdr = session.msg_header(msg_type) if header is None else header
    parts = []
    for p in (hdr, parent if parent is not None else {}, metadata if metadata is not None else {}, content):
        parts.append(p if isinstance(p, bytes) else json.dumps(p, default=str).encode())
    return [session.sign(parts)] + parts


def cases(session):
    """(name, channel, frames, expect) with expect 'reply' (an error reply)
    or 'drop'."""
    good = {"code": "1", "silent": False}
    c = []
    d = b"<IDS|MSG>"
    c.append(("no delimiter", "shell", [b"hello", b"world"], "drop"))
    c.append(("delimiter only", "shell", [d], "drop"))
    c.append(("too few frames", "shell", [d] + frames_for(session, "execute_request", good)[:3], "drop"))
    c.append(("empty frames", "shell", [d, b"", b"", b"", b"", b""], "drop"))
    c.append(("bad signature", "shell", [d, b"0" * 64] + frames_for(session, "execute_request", good)[1:], "drop"))
    c.append(("short signature", "shell", [d, b"abc"] + frames_for(session, "execute_request", good)[1:], "drop"))
    for i, name in enumerate(["header", "parent", "metadata", "content"]):
        parts = [session.msg_header("execute_request"), {}, {}, good]
        parts[i] = b"{not json"
        c.append(("bad JSON in " + name, "shell", [d] + frames_for(session, "execute_request", parts[3],
                                                                  parts[0], parts[1], parts[2]), "drop"))
        parts[i] = b"[1, 2, 3]"
        c.append((name + " not an object", "shell", [d] + frames_for(session, "execute_request", parts[3],
                                                                    parts[0], parts[1], parts[2]), "drop"))
    c.append(("invalid UTF-8 in JSON", "shell", [d] + frames_for(session, "execute_request", b'{"code": "\xff\xfe"}'),
              "drop"))
    hdr = session.msg_header("execute_request")
    del hdr["msg_type"]
    c.append(("header without msg_type", "shell", [d] + frames_for(session, "execute_request", good, hdr), "drop"))
    hdr = session.msg_header("execute_request")
    hdr["msg_type"] = 42
    c.append(("msg_type not a string", "shell", [d] + frames_for(session, "execute_request", good, hdr), "drop"))
    c.append(("unknown msg_type", "shell", [d] + frames_for(session, "frobnicate_request", {}), "drop"))
    for t, content in [("execute_request", {}), ("execute_request", {"code": 5}),
                       ("execute_request", {"code": "1", "silent": "yes"}),
                       ("execute_request", {"code": None}),
                       ("complete_request", {"code": "x", "cursor_pos": "end"}),
                       ("complete_request", {"cursor_pos": 1}),
                       ("inspect_request", {"code": ["x"], "cursor_pos": 0}),
                       ("is_complete_request", {"code": {}}),
                       ("history_request", {}),
                       ("history_request", {"hist_access_type": "tail", "n": "all"})]:
        c.append(("%s %s" % (t, json.dumps(content)), "shell", [d] + frames_for(session, t, content), "reply"))
    # odd but valid values: answered normally
    for t, content in [("complete_request", {"code": "torch.on", "cursor_pos": 10 ** 12}),
                       ("complete_request", {"code": "torch.on", "cursor_pos": -5}),
                       ("inspect_request", {"code": "", "cursor_pos": 99}),
                       ("execute_request", {"code": "\x00 nul", "silent": False}),
                       ("history_request", {"hist_access_type": "search", "pattern": "[%(*", "n": -3}),
                       ("history_request", {"hist_access_type": "range", "session": 7, "start": -1}),
                       ("shutdown_request", {"restart": "maybe"})]:
        c.append(("odd %s %s" % (t, json.dumps(content)), "control", [d] + frames_for(session, t, content),
                  "reply"))
    many = [b"id%d" % i for i in range(100)]
    c.append(("100 identity frames", "shell", many + [d] + frames_for(session, "kernel_info_request", {}), "drop"))
    c.append(("70 MiB frame (over the 64 MiB limit)", "shell",
              [d] + frames_for(session, "execute_request", {"code": "--" + "y" * (70 << 20)}), "drop"))
    big = "--" + "x" * (8 << 20)
    c.append(("8 MiB cell", "shell", [d] + frames_for(session, "execute_request", {"code": big}), "reply"))
    rng = random.Random(1234)
    for i in range(30):
        n = rng.randint(1, 9)
        junk = [bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 64))) for _ in range(n)]
        if rng.random() < 0.5:
            junk.insert(rng.randint(0, n), d)
        c.append(("random frames %d" % i, rng.choice(["shell", "control"]), junk, "drop"))
    return c


def fuzz(gshell, out):
    prefix, _ = U.install_kernelspec(gshell, sim_gpus="0")
    log_path = os.path.join(prefix, "kernel.log")
    km, kc, log = U.start(log_path)
    info = km.get_connection_info()
    session = Session(key=info["key"], signature_scheme=info["signature_scheme"])
    ctx = zmq.Context.instance()
    socks = {}
    for ch in ("shell", "control"):
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect("%s://%s:%d" % (info["transport"], info["ip"], info[ch + "_port"]))
        socks[ch] = s
    results = []
    try:
        for name, ch, frames, expect in cases(session):
            sock = socks[ch]
            sock.send_multipart(frames)
            # The kernel handles messages in order: once it has answered the
            # kernel_info sent after this one, any reply to this one is out.
            alive = kc.is_alive()
            answered = False
            if alive:
                kc.kernel_info()
                try:
                    answered = kc.get_shell_msg(timeout=60)["content"]["status"] == "ok"
                except Exception:
                    answered = False
            got = None
            if sock.poll(20000 if expect == "reply" else 30):
                parts = sock.recv_multipart()
                msg = session.deserialize(parts[parts.index(b"<IDS|MSG>") + 1:])
                got = {"msg_type": msg["msg_type"], "status": msg["content"].get("status"),
                       "evalue": msg["content"].get("evalue")}
            results.append({"name": name, "expect": expect, "got": got, "alive": alive, "answered": answered})
            if not answered:
                break
        r = {"cases": results}
        r["after"] = U.run(kc, "'still here'")
        proc = km.provisioner.process
        kc.shutdown()
        try:
            r["exit_status"] = proc.wait(timeout=60)
        except Exception:
            r["exit_status"] = "still running"
    finally:
        for s in socks.values():
            s.close()
        kc.stop_channels()
        if km.has_kernel:
            km.shutdown_kernel(now=True)
        log.close()
    with open(log_path) as f:
        r["log"] = f.read()
    U.write_lua(out, r)


if __name__ == "__main__":
    U.main_guard(fuzz)
