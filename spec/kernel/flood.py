"""Issue 23 Medium 5: a local process, without the key, sends big unsigned
messages to the shell socket while a cell runs (when nothing reads it);
the kernel's memory must stay bounded. And a frontend that queues many
requests at once ("run all") still gets every reply.
    python3 flood.py GSHELL OUT.lua"""
import os
import sys
import threading
import time

import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_util as U  # noqa: E402


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return -1


def flood(gshell, out):
    r = {}
    prefix, _ = U.install_kernelspec(gshell)
    km, kc, log = U.start(os.path.join(prefix, "kernel.log"))
    try:
        pid = km.provisioner.process.pid
        U.run(kc, "1")
        r["rss_before"] = rss_mib(pid)
        info = km.get_connection_info()
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDTIMEO, 100)   # a full queue must not block the sender forever
        sock.connect("%s://%s:%d" % (info["transport"], info["ip"], info["shell_port"]))
        big = b"x" * (30 << 20)
        res = {}

        def cell():
            res["busy"] = U.run(kc, "local t0 = torch.clock() while torch.clock() - t0 < 6 do end", timeout=120)
        t = threading.Thread(target=cell)
        t.start()
        time.sleep(0.5)
        for _ in range(20):
            try:
                sock.send_multipart([b"<IDS|MSG>", b"0" * 64, big, b"{}", b"{}", b"{}"])
            except zmq.Again:
                pass
        peak = 0
        while t.is_alive():
            peak = max(peak, rss_mib(pid))
            time.sleep(0.2)
        sock.close()
        r["rss_peak"] = peak
        r["busy_status"] = res["busy"]["reply"]["status"]
        # "run all": 40 requests sent at once, every one answered in order
        ids = [kc.execute("n_%d = %d" % (i, i)) for i in range(40)]
        got = []
        while len(got) < len(ids):
            m = kc.get_shell_msg(timeout=60)
            got.append(m["parent_header"]["msg_id"])
        r["run_all_in_order"] = got == ids
        r["after"] = U.run(kc, "n_39")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        log.close()
    U.write_lua(out, r)


if __name__ == "__main__":
    U.main_guard(flood)
