#!/usr/bin/env python3
"""Drives an interactive program through a pseudo-terminal, for specs.

Usage: pty_drive.py STEPS.json -- command [args...]

STEPS.json is a list of steps, run in order:
  {"expect": "regex"}        wait (up to "timeout" seconds, default 20)
                             until the output so far, after the previous
                             match, matches the regex
  {"send": "text"}           type text ("\\u0004" is Ctrl-D)
  {"sleep": seconds}         wait that long (e.g. to let a command get going)
At the end the program must exit (within 20 s). The whole transcript goes
to stdout; the exit status is 0 when every expect matched and the program
exited, 2 on a timeout (the step is named on stderr).
"""
import json
import os
import pty
import re
import select
import sys
import time


def main():
    sep = sys.argv.index("--")
    with open(sys.argv[1]) as f:
        steps = json.load(f)
    cmd = sys.argv[sep + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    out = b""
    seen = 0  # expects search after the previous match

    def read_some(deadline):
        nonlocal out
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        r, _, _ = select.select([fd], [], [], min(left, 0.5))
        if r:
            try:
                data = os.read(fd, 4096)
            except OSError:
                return None  # the program exited
            if not data:
                return None
            out += data
        return True

    status = 0
    for i, step in enumerate(steps):
        if "send" in step:
            os.write(fd, step["send"].encode())
            continue
        if "sleep" in step:
            time.sleep(step["sleep"])
            continue
        pat = re.compile(step["expect"].encode(), re.S)
        deadline = time.monotonic() + step.get("timeout", 20)
        while True:
            m = pat.search(out, seen)
            if m:
                seen = m.end()
                break
            r = read_some(deadline)
            if r is False or r is None:
                sys.stderr.write("step %d: no match for %r\n" % (i + 1, step["expect"]))
                status = 2
                break
        if status:
            break
    deadline = time.monotonic() + 20
    while status == 0:
        r = read_some(deadline)
        if r is None:
            break
        if r is False:
            sys.stderr.write("the program did not exit\n")
            status = 2
    if status:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    os.waitpid(pid, 0)
    sys.stdout.write(out.decode("utf-8", "replace"))
    sys.exit(status)


if __name__ == "__main__":
    main()
