"""Drives one `gshell --kernel` through jupyter_client as Jupyter does and
records what it answers, for spec/kernel_spec.lua:
    python3 protocol.py GSHELL OUT.lua"""
import os
import sys
import threading
import time

import zmq
from jupyter_client.session import Session

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_util as U  # noqa: E402


def shell_request(kc, method, *args, **kw):
    getattr(kc, method)(*args, **kw)
    return kc.get_shell_msg(timeout=30)["content"]


def raw_socket(km, channel):
    """A DEALER connected to the kernel's shell or control port."""
    info = km.get_connection_info()
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect("%s://%s:%d" % (info["transport"], info["ip"], info[channel + "_port"]))
    return sock


def protocol(gshell, out):
    r = {}
    prefix, installed = U.install_kernelspec(gshell)
    r["installed"] = installed
    with open(os.path.join(prefix, "share/jupyter/kernels/gshell/kernel.json")) as f:
        r["kernel_json"] = f.read()
    log_path = os.path.join(prefix, "kernel.log")
    km, kc, log = U.start(log_path)
    try:
        r["kernel_info"] = shell_request(kc, "kernel_info")
        r["exec_tensor"] = U.run(kc, "x = torch.ones(2)\nprint('hi')\nx")
        r["exec_local"] = U.run(kc, "local a = 5")
        r["exec_use_local"] = U.run(kc, "a * 2")
        r["exec_underscore"] = U.run(kc, "_ + 1")
        r["exec_silent_semicolon"] = U.run(kc, "a;")
        r["exec_error"] = U.run(kc, "local t = nil\nt.x = 1")
        r["exec_syntax"] = U.run(kc, "x = = 1")
        r["exec_hint"] = U.run(kc, "x.cuda(1)")
        # issue 22: Python spellings get their Lua one in a cell; %tb shows the last error
        r["exec_python"] = U.run(kc, "y = torch.ones(2, 3, device='cpu')")
        r["exec_fail"] = U.run(kc, "local function inner() error('deep failure') end\ninner()")
        r["exec_tb"] = U.run(kc, "%tb")
        r["exec_stderr"] = U.run(kc, "io.stderr:write('to stderr\\n')")
        # issue 22 item 1: a device error found by the cell's display is the
        # cell's error, and the value stays unreadable afterwards
        r["dev_error"] = U.run(kc, "logits = torch.tensor({{1.0, 2, 3}, {1, 2, 3}, {3, 2, 1}, {1, 1, 1}}, "
                                   "{device = 'cuda:0'})\nl = nn.CrossEntropyLoss()(logits, "
                                   "torch.tensor({0, 1, 2, 0}, {device = 'cuda:0'}))\nl")
        r["dev_error_again"] = U.run(kc, "l")
        r["dev_error_item"] = U.run(kc, "l:item()")
        # output is streamed while the cell runs, not at its end
        r["exec_streaming"] = U.run(
            kc, "print('first')\nlocal t0 = torch.clock()\nwhile torch.clock() - t0 < 0.4 do end\nprint('second')")
        r["exec_multi"] = U.run(kc, "1, 'two', nil")
        r["html_2d"] = U.run(kc, "torch.tensor({{1.5, -2}, {3, 4}})")
        r["html_3d"] = U.run(kc, "torch.ones(2, 2, 2)")
        r["html_number"] = U.run(kc, "7")
        r["exec_silent"] = U.run(kc, "silent_ran = 41 + 1", silent=True)
        r["after_silent"] = U.run(kc, "silent_ran")
        r["exec_user_expr"] = U.run(kc, "y = 3", user_expressions={"double": "y * 2", "bad": "nope.x"})
        r["magic_who"] = U.run(kc, "%who")
        r["magic_timeit"] = U.run(kc, "%timeit -n 10 -r 2 local s = 1 + 1")
        r["magic_devices"] = U.run(kc, "%devices")
        r["help_line"] = U.run(kc, "?torch.ones")
        r["sim_gpus"] = U.run(kc, "torch.cuda.device_count()")
        # io.read through the stdin socket
        prompts = []

        def answer(msg):
            prompts.append(msg["content"])
            kc.input("Ann")
        r["stdin_read"] = U.run(kc, "io.write('name? ')\nlocal n = io.read()\nprint('got ' .. n)\nn",
                                allow_stdin=True, stdin_hook=answer)
        r["stdin_prompts"] = prompts
        r["stdin_number"] = U.run(kc, "io.read('n') + 1", allow_stdin=True,
                                  stdin_hook=lambda m: kc.input("41"))
        r["stdin_refused"] = U.run(kc, "io.read()", allow_stdin=False)
        # complete, inspect, is_complete, history
        r["complete_global"] = shell_request(kc, "complete", "torch.on", 8)
        r["complete_method"] = shell_request(kc, "complete", "y = x:su", 8)
        r["complete_mid"] = shell_request(kc, "complete", "print(torch.ze)", 14)
        r["complete_unicode"] = shell_request(kc, "complete", "s = 'é' .. torch.on", 19)
        r["inspect_name"] = shell_request(kc, "inspect", "torch.ones", 3)
        r["inspect_call"] = shell_request(kc, "inspect", "torch.ones(2, ", 14)
        r["inspect_value"] = shell_request(kc, "inspect", "x", 1)
        r["inspect_unknown"] = shell_request(kc, "inspect", "no_such_thing", 5)
        for name, code in [("incomplete", "for i = 1, 3 do"), ("incomplete_expr", "x = "),
                           ("complete", "x = 1"), ("invalid", "x = )"), ("magic", "%timeit 1 + 1"),
                           ("string", "s = [[ open")]:
            r["is_complete_" + name] = shell_request(kc, "is_complete", code)
        r["history"] = shell_request(kc, "history", hist_access_type="tail", n=2, output=True)
        r["history_search"] = shell_request(kc, "history", hist_access_type="search", pattern="a *", n=5)
        r["comm_info"] = shell_request(kc, "comm_info")
        # (issue 23, Low) a reply sent before its request, and a reply to
        # another request, answer nothing: the cell reads the right one
        # (the early one arrives while the cell runs, before it asks)
        # (all from this thread: a ZeroMQ socket used by two threads at
        # once can abort libzmq)
        cell = kc.execute("local t0 = torch.clock() while torch.clock() - t0 < 0.8 do end\nio.read()",
                          allow_stdin=True)
        time.sleep(0.2)
        kc.input("stale")
        ask = kc.get_stdin_msg(timeout=10)
        assert ask["msg_type"] == "input_request", ask["msg_type"]
        wrong = kc.session.msg("input_reply", {"value": "wrong"}, parent={"msg_id": "another-request"})
        kc.stdin_channel.send(wrong)
        kc.input("right")
        r["stdin_stale"] = U.collect(kc, cell)
        # a heartbeat of several frames comes back whole
        hb = zmq.Context.instance().socket(zmq.REQ)
        hb.setsockopt(zmq.LINGER, 0)
        info = km.get_connection_info()
        hb.connect("%s://%s:%d" % (info["transport"], info["ip"], info["hb_port"]))
        hb.send_multipart([b"ping", b"two", b"three"])
        r["hb_frames"] = [f.decode() for f in hb.recv_multipart()] if hb.poll(3000) else None
        hb.close()

        # a message signed with another key is dropped, never run
        bad = Session(key=b"not-the-key")
        sock = raw_socket(km, "shell")
        bad.send(sock, "execute_request", {"code": "bad_signature_ran = true", "silent": False,
                                           "store_history": True, "user_expressions": {},
                                           "allow_stdin": False, "stop_on_error": True})
        r["bad_sig_reply"] = sock.poll(1500) != 0
        # a flood of badly signed messages: a bounded number of log lines
        for i in range(400):
            bad.send(sock, "kernel_info_request", {})
        time.sleep(1.0)
        r["flood_alive"] = U.run(kc, "1 + 1")
        sock.close()
        r["bad_sig_after"] = U.run(kc, "bad_signature_ran")

        # interrupt a running loop; the session lives on
        U.run(kc, "k = 0")
        timer = threading.Timer(0.5, km.interrupt_kernel)
        timer.start()
        t0 = time.time()
        r["interrupt_loop"] = U.run(kc, "while true do k = k + 1 end")
        r["interrupt_seconds"] = time.time() - t0
        r["after_interrupt"] = U.run(kc, "k > 0, x")
        timer = threading.Timer(0.5, km.interrupt_kernel)
        timer.start()
        r["interrupt_stdin"] = U.run(kc, "io.read()", allow_stdin=True, stdin_hook=lambda m: None)
        r["after_interrupt_stdin"] = U.run(kc, "1 + 1")
        # (issue 23 High 1) an interrupted wait for a device leaves the queued
        # work running: the tensors it fills are right in the next cell
        timer = threading.Timer(0.5, km.interrupt_kernel)
        timer.start()
        r["interrupt_sync"] = U.run(kc, "m = torch.full({512, 512}, 1/512, {device = 'cuda:1'})\n"
                                        "for i = 1, 300 do m:matmul(m) end\n"
                                        "z = torch.full({2000, 1000}, 3.0, {device = 'cuda:1'})\n"
                                        "torch.cuda.synchronize()\nprint('not reached')")
        r["after_interrupt_sync"] = U.run(kc, "z:sum():item()")

        # latency of a trivial cell, as a client sees it
        t0 = time.time()
        for _ in range(20):
            U.run(kc, "1")
        r["roundtrip_ms"] = (time.time() - t0) / 20 * 1000

        # restart: a fresh session with a new count
        km.restart_kernel(now=False)
        kc.wait_for_ready(timeout=60)
        r["after_restart"] = U.run(kc, "x")

        # shutdown: the process ends by itself, with status 0
        proc = km.provisioner.process
        kc.shutdown()
        r["shutdown_reply"] = kc.get_control_msg(timeout=30)["content"] if hasattr(kc, "get_control_msg") else None
        try:
            r["exit_status"] = proc.wait(timeout=30)
        except Exception:
            r["exit_status"] = "still running"
    finally:
        kc.stop_channels()
        if km.has_kernel:
            km.shutdown_kernel(now=True)
        log.close()
    with open(log_path) as f:
        r["log"] = f.read()
    U.write_lua(out, r)


if __name__ == "__main__":
    U.main_guard(protocol)
