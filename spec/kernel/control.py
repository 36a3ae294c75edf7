"""Issue 23 Medium 6: the control channel is served while a cell runs.
An interrupt_request and a shutdown_request sent on control during
`while true do end` (and during an io.read waiting for input) are
answered at once, the interrupt stops the cell, and the shutdown ends the
kernel with status 0.
    python3 control.py GSHELL OUT.lua"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_util as U  # noqa: E402


def control(gshell, out):
    r = {}
    prefix, _ = U.install_kernelspec(gshell)
    log_path = os.path.join(prefix, "kernel.log")
    km, kc, log = U.start(log_path)
    try:
        # One thread drives every channel: a ZeroMQ socket must never be
        # used by two threads, nor closed under one that waits on it (a
        # helper thread left waiting on shell while stop_channels closed it
        # aborted libzmq with "Bad address (src/fq.cpp:87)").
        def busy(code, **kw):
            msg_id = kc.execute(code, **kw)
            time.sleep(0.8)
            return msg_id

        # interrupt_request on control during a pure Lua loop
        cell = busy("k = 0 while true do k = k + 1 end")
        t0 = time.time()
        kc.control_channel.send(kc.session.msg("interrupt_request", {}))
        rep = kc.get_control_msg(timeout=10)
        r["interrupt_reply_s"] = time.time() - t0
        r["interrupt_reply"] = rep["content"]
        res = U.reply(kc, cell, 30)
        r["interrupted_status"] = res.get("status")
        r["interrupted_ename"] = res.get("ename")
        r["after_interrupt"] = U.run(kc, "k > 0")
        # kernel_info on control while a cell runs: answered after it
        cell = busy("local t0 = torch.clock() while torch.clock() - t0 < 1.5 do end")
        kc.control_channel.send(kc.session.msg("kernel_info_request", {}))
        info = kc.get_control_msg(timeout=10)
        U.reply(kc, cell, 30)
        r["info_after_cell"] = info["msg_type"]
        # shutdown_request on control while io.read waits for input
        proc = km.provisioner.process
        busy("io.read()", allow_stdin=True)
        t0 = time.time()
        kc.control_channel.send(kc.session.msg("shutdown_request", {"restart": False}))
        rep = kc.get_control_msg(timeout=10)
        r["shutdown_reply_s"] = time.time() - t0
        r["shutdown_reply"] = rep["content"]
        try:
            r["exit_status"] = proc.wait(timeout=15)
        except Exception:
            r["exit_status"] = "still running"
        r["exit_s"] = time.time() - t0
    finally:
        kc.stop_channels()
        if km.has_kernel:
            km.shutdown_kernel(now=True)
        log.close()
    with open(log_path) as f:
        r["log"] = f.read()
    U.write_lua(out, r)


if __name__ == "__main__":
    U.main_guard(control)
