"""Start-up to a first tensor: wall time of a whole process, median of runs.

    /usr/bin/python3 bench/py/startup.py gshell BUILD   ->  startup <ms> ms
    /usr/bin/python3 bench/py/startup.py pytorch        ->  startup <ms> ms

gshell: `BUILD/gshell -e 'torch.ones(1)'`, or, while that binary does not
exist yet, stock lua5.4 loading BUILD/torch.so.
pytorch: `/usr/bin/python3 -c "import torch; torch.ones(1)"`.
Both are timed the same way from here (fork + exec + wait), so the cost of
spawning a process (printed as a `#` note) is in both.
"""
import os
import statistics
import subprocess
import sys
import time

RUNS = 10


def wall_ms(argv, env=None, runs=RUNS):
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)  # warm the caches
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    side = sys.argv[1]
    env = None
    if side == "gshell":
        build = sys.argv[2] if len(sys.argv) > 2 else "build"
        gshell = os.path.join(build, "gshell")
        if os.access(gshell, os.X_OK):
            argv = [gshell, "-e", "torch.ones(1)"]
        else:
            argv = ["lua5.4", "-e", 'require("torch").ones(1)']
            env = dict(os.environ, LUA_CPATH=os.path.join(build, "?.so") + ";;")
        floor = wall_ms(["/bin/true"])
        print(f"# spawning a process at all (/bin/true) takes {floor:.2f} ms")
    else:
        argv = ["/usr/bin/python3", "-c", "import torch; torch.ones(1)"]
    print(f"# {side} start-up command: {' '.join(argv)}")
    try:
        ms = wall_ms(argv, env)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"# startup failed: {e}", file=sys.stderr)
        print("startup nan ms")
        return
    print(f"startup {ms:.6g} ms")


main()
