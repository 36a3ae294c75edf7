"""Helpers for the kernel specs: install the kernelspec of the gshell under
test into a private Jupyter path, start kernels as Jupyter does, and write
results as a Lua table that spec/kernel_spec.lua reads (the assertions are
busted's)."""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile


def install_kernelspec(gshell, sim_gpus="2"):
    """Runs `gshell --install-kernel --prefix TMP` (with GSHELL_SIM_GPUS set,
    so the spec's env carries it) and points JUPYTER_PATH there."""
    prefix = tempfile.mkdtemp(prefix="gshell-kernelspec-")
    atexit.register(shutil.rmtree, prefix, True)
    env = dict(os.environ, GSHELL_SIM_GPUS=sim_gpus)
    out = subprocess.run([gshell, "--install-kernel", "--prefix", prefix], env=env,
                         capture_output=True, text=True, check=True)
    os.environ["JUPYTER_PATH"] = os.path.join(prefix, "share", "jupyter")
    os.environ.pop("GSHELL_SIM_GPUS", None)
    return prefix, out.stdout


def start(log_path, **kw):
    """A started kernel manager and a ready blocking client; the kernel's
    own log (its stderr) goes to log_path."""
    from jupyter_client.manager import KernelManager
    km = KernelManager(kernel_name="gshell")
    log = open(log_path, "w")
    km.start_kernel(stderr=log, **kw)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc, log


def run(kc, code, timeout=30, **kw):
    """Executes code; returns {reply = the reply's content, iopub = [the
    iopub messages as {msg_type, content, t (arrival time)}]}."""
    import time
    msgs = []

    def hook(m):
        msgs.append({"msg_type": m["msg_type"], "content": m["content"], "t": time.time()})
    rep = kc.execute_interactive(code, output_hook=hook, timeout=timeout, **kw)
    return {"reply": rep["content"], "iopub": msgs}


def reply(kc, msg_id, timeout=30):
    """The content of the shell reply to request msg_id, already sent
    (others on the way are skipped)."""
    import time
    deadline = time.time() + timeout
    while True:
        m = kc.get_shell_msg(timeout=max(0.1, deadline - time.time()))
        if m["parent_header"].get("msg_id") == msg_id:
            return m["content"]


def collect(kc, msg_id, timeout=30):
    """The reply and iopub messages of a request already sent with
    kc.execute, as run() returns them."""
    import time
    deadline = time.time() + timeout
    content = reply(kc, msg_id, timeout)
    msgs = []
    while True:
        m = kc.get_iopub_msg(timeout=max(0.1, deadline - time.time()))
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        msgs.append({"msg_type": m["msg_type"], "content": m["content"], "t": time.time()})
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return {"reply": content, "iopub": msgs}


def to_lua(v, indent=""):
    if v is None:
        return "nil"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        out = []
        for b in v.encode("utf-8"):
            c = chr(b)
            if c == "\\" or c == '"':
                out.append("\\" + c)
            elif 32 <= b < 127:
                out.append(c)
            else:
                out.append("\\%03d" % b)
        return '"' + "".join(out) + '"'
    inner = indent + "  "
    if isinstance(v, (list, tuple)):
        return "{\n" + "".join(inner + to_lua(x, inner) + ",\n" for x in v) + indent + "}"
    if isinstance(v, dict):
        return "{\n" + "".join(inner + "[" + to_lua(str(k)) + "] = " + to_lua(x, inner) + ",\n"
                               for k, x in v.items()) + indent + "}"
    return to_lua(repr(v))


def write_lua(path, value):
    with open(path, "w") as f:
        f.write("return " + to_lua(value) + "\n")


def main_guard(fn):
    """Runs fn(gshell, out_path) from the command line; a failure still
    writes a result with the error, so the spec shows what went wrong."""
    gshell, out = sys.argv[1], sys.argv[2]
    try:
        fn(gshell, out)
    except Exception as e:  # the spec reports it
        import traceback
        write_lua(out, {"driver_error": traceback.format_exc()})
        raise
